//===- InternalError.cpp - Internal compiler errors and crashes -----------===//
//
// Implements InternalError.h. The pipeline's diagnostics are held back by a
// ScopedDiagnosticHandler (the newest handler sees them first); a
// PassInstrumentation records the running pass and, in runAfterPassFailed,
// checks whether the IR still verifies (with diagnostics silenced) and
// writes it, in generic form with locations, to a kept temporary file. A
// crash goes through LLVM's signal handling (sys::AddSignalHandler): the
// registered files are removed first, then the message, LLVM's stack dump
// (PrettyStackTrace, with the bug report request), and _exit(70).
//
//===----------------------------------------------------------------------===//
#include "kina/InternalError.h"

#include "kina/Diagnostics.h"
#include "kina/ToolRunner.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/PrettyStackTrace.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <csignal>
#include <cstring>

#include <unistd.h>

using namespace llvm;

namespace kina {

namespace {

std::atomic<bool> reported{false};

/// The argument of the pass running now ("" between passes), for the crash
/// handler: a fixed buffer, read without locks.
char currentPass[256];

void setCurrentPass(StringRef name) {
  size_t n = std::min(name.size(), sizeof(currentPass) - 1);
  std::memcpy(currentPass, name.data(), n);
  currentPass[n] = '\0';
}

const char kReportRequest[] =
    "this is a bug in kinac, not in your input; please report it to the "
    "kinac developers with the command line and the input file";

void writeStderr(const char *s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    ssize_t w = ::write(2, s, n);
    if (w <= 0)
      return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

/// First of kinac's crash callbacks: the message. Async-signal-safe.
void crashMessage(void *) {
  writeStderr("kinac: internal error: kinac crashed");
  if (currentPass[0]) {
    writeStderr(" while running the pass '");
    writeStderr(currentPass);
    writeStderr("'");
  }
  writeStderr("\nkinac: note: ");
  writeStderr(kReportRequest);
  writeStderr(", and the stack dump below\n");
}

/// Last of the crash callbacks: the exit code of an internal error instead
/// of death by the signal (the files are removed by then).
void crashExit(void *) { ::_exit(kExitInternalError); }

void fatalError(void *, const char *reason, bool) {
  cleanUpAfterFatalError();
  writeStderr("kinac: internal error: LLVM ERROR: ");
  writeStderr(reason);
  writeStderr("\nkinac: note: ");
  writeStderr(kReportRequest);
  writeStderr("\n");
  ::_exit(kExitInternalError);
}

/// `file:line:col: ` of a location, when it has one.
std::string placeOf(mlir::Location loc) {
  auto flc = mlir::dyn_cast<mlir::FileLineColLoc>(loc);
  if (!flc)
    flc = loc->findInstanceOf<mlir::FileLineColLoc>();
  if (!flc)
    return "";
  return (flc.getFilename().str() + ":" + std::to_string(flc.getLine()) + ":" +
          std::to_string(flc.getColumn()) + ": ");
}

/// One held diagnostic as a line of the report, its notes after it.
void describe(const mlir::Diagnostic &d, std::vector<std::string> &lines) {
  const char *severity =
      d.getSeverity() == mlir::DiagnosticSeverity::Error     ? "error"
      : d.getSeverity() == mlir::DiagnosticSeverity::Warning ? "warning"
      : d.getSeverity() == mlir::DiagnosticSeverity::Note    ? "note"
                                                             : "remark";
  lines.push_back(placeOf(d.getLocation()) + severity + ": " + d.str());
  for (const mlir::Diagnostic &n : d.getNotes())
    lines.push_back(placeOf(n.getLocation()) + "note: " + n.str());
}

} // namespace

void installCrashReporting(const char *argv0) {
  setBugReportMsg("PLEASE submit a bug report to the kinac developers with "
                  "the command line, the input file and this stack dump.\n");
  sys::AddSignalHandler(crashMessage, nullptr);
  sys::PrintStackTraceOnErrorSignal(argv0);
  EnablePrettyStackTrace();
  sys::AddSignalHandler(crashExit, nullptr);
  install_fatal_error_handler(fatalError, nullptr);
}

bool internalErrorReported() { return reported.load(); }

Expected<ForcedInternalError> parseForcedInternalError(StringRef value) {
  auto [kind, pass] = value.split(':');
  ForcedInternalError forced;
  forced.kind = kind == "invalid-ir" ? ForcedInternalError::InvalidIR
                : kind == "crash"    ? ForcedInternalError::Crash
                                     : ForcedInternalError::None;
  forced.pass = pass.str();
  if (forced.kind == ForcedInternalError::None || forced.pass.empty())
    return createStringError(inconvertibleErrorCode(),
                             "--debug-force-internal-error: '%s' is neither "
                             "invalid-ir:PASS nor crash:PASS",
                             value.str().c_str());
  return forced;
}

struct PipelineWatch::State {
  ForcedInternalError forced;
  bool forcedRan = false;
  /// Diagnostics go to `held` unless `silent` (the watch's own verify).
  bool silent = false;
  /// Diagnostics go on to the handlers below (replay()).
  bool passThrough = false;
  mlir::MLIRContext *ctx = nullptr;
  std::vector<mlir::Diagnostic> held;
  std::string failedPass;
  bool failedVerification = false;
  std::string irFile, irError;
};

namespace {

class Instrumentation : public mlir::PassInstrumentation {
public:
  explicit Instrumentation(std::shared_ptr<PipelineWatch::State> state)
      : state(std::move(state)) {}

  void runBeforePass(mlir::Pass *pass, mlir::Operation *op) override {
    setCurrentPass(pass->getArgument());
    const ForcedInternalError &forced = state->forced;
    if (forced.kind == ForcedInternalError::None || state->forcedRan ||
        pass->getArgument() != forced.pass)
      return;
    state->forcedRan = true;
    if (forced.kind == ForcedInternalError::Crash)
      std::raise(SIGSEGV);
    // The builtin module verifier accepts only dialect-prefixed attributes;
    // no pass reads this one.
    if (auto module = mlir::dyn_cast<mlir::ModuleOp>(op))
      module->setAttr("kina_debug_invalid_ir",
                      mlir::UnitAttr::get(op->getContext()));
  }

  void runAfterPass(mlir::Pass *, mlir::Operation *) override {
    setCurrentPass("");
  }

  void runAfterPassFailed(mlir::Pass *pass, mlir::Operation *op) override {
    setCurrentPass("");
    if (!state->failedPass.empty())
      return;
    state->failedPass = pass->getArgument().str();
    if (state->failedPass.empty())
      state->failedPass = pass->getName().str();
    state->silent = true;
    state->failedVerification = mlir::failed(mlir::verify(op));
    state->silent = false;
    SmallString<128> path;
    if (std::error_code ec = sys::fs::createTemporaryFile(
            "kinac-internal-error", "mlir", path)) {
      state->irError = ec.message();
      return;
    }
    std::error_code ec;
    raw_fd_ostream os(path, ec);
    if (!ec) {
      mlir::OpPrintingFlags flags;
      flags.printGenericOpForm().assumeVerified().enableDebugInfo(
          /*enable=*/true, /*prettyForm=*/false);
      op->print(os, flags);
      os << "\n";
      os.close();
      ec = os.error();
      os.clear_error();
    }
    if (ec)
      state->irError = ec.message();
    else
      state->irFile = std::string(path);
  }

private:
  std::shared_ptr<PipelineWatch::State> state;
};

} // namespace

PipelineWatch::PipelineWatch(mlir::MLIRContext &ctx, ForcedInternalError forced)
    : state(std::make_shared<State>()),
      handler(&ctx, [s = state](mlir::Diagnostic &d) {
        if (s->passThrough)
          return mlir::failure();
        if (!s->silent)
          s->held.push_back(std::move(d));
        return mlir::success();
      }) {
  state->forced = std::move(forced);
  state->ctx = &ctx;
}

void PipelineWatch::replay() {
  state->passThrough = true;
  for (mlir::Diagnostic &d : state->held)
    state->ctx->getDiagEngine().emit(std::move(d));
  state->held.clear();
  state->passThrough = false;
}

PipelineWatch::~PipelineWatch() { setCurrentPass(""); }

void PipelineWatch::instrument(mlir::PassManager &pm) {
  pm.addInstrumentation(std::make_unique<Instrumentation>(state));
}

bool PipelineWatch::forcedPassRan() const { return state->forcedRan; }

void PipelineWatch::report() {
  std::string message;
  if (state->failedPass.empty())
    message = "the pass pipeline failed";
  else if (state->failedVerification)
    message =
        "the pass '" + state->failedPass + "' produced IR that does not verify";
  else
    message = "the pass '" + state->failedPass + "' failed";
  std::vector<std::string> notes;
  for (const mlir::Diagnostic &d : state->held)
    describe(d, notes);
  if (!state->irFile.empty())
    notes.push_back("the IR after the failing pass is kept in " +
                    state->irFile);
  else if (!state->irError.empty())
    notes.push_back("the IR could not be kept: " + state->irError);
  notes.push_back(std::string(kReportRequest) +
                  (state->irFile.empty() ? "" : ", and that IR file"));
  reportInternalErrorText(message, notes);
  reported.store(true);
}

MLIRGenWatch::MLIRGenWatch(mlir::MLIRContext &ctx) : ctx(ctx) {
  handler = std::make_unique<mlir::ScopedDiagnosticHandler>(
      &ctx, [this](mlir::Diagnostic &d) {
        held.push_back(std::move(d));
        return mlir::success();
      });
}

bool MLIRGenWatch::finish() {
  handler.reset();
  bool internal = false;
  for (const mlir::Diagnostic &d : held)
    if (StringRef(d.str()).starts_with("internal error"))
      internal = true;
  if (!internal) {
    for (mlir::Diagnostic &d : held)
      ctx.getDiagEngine().emit(std::move(d));
    held.clear();
    return false;
  }
  std::vector<std::string> notes;
  for (const mlir::Diagnostic &d : held)
    describe(d, notes);
  notes.push_back(kReportRequest);
  reportInternalErrorText("MLIRGen failed", notes);
  reported.store(true);
  held.clear();
  return true;
}

} // namespace kina
