//===- InternalError.h - Reporting compiler bugs as internal errors -------===//
//
// A failure after MLIRGen (a pass that fails, IR that does not verify after
// a pass) or a crash of kinac is a bug in kinac, never the user's mistake:
// kinac reports it as `kinac: internal error: ...` naming the pass, asks for
// a report, keeps the IR that failed in a temporary file it names, and
// exits with kExitInternalError (70, EX_SOFTWARE of <sysexits.h>). The
// diagnostics the failure produced are shown inside that report, never as
// errors of the user's source.
//
// A hidden developer option forces each kind, for the tests:
//   --debug-force-internal-error=invalid-ir:PASS  before PASS (its first
//       run) the module gets an attribute without a dialect prefix, which
//       the pass manager's verifier then rejects after PASS;
//   --debug-force-internal-error=crash:PASS  kinac raises SIGSEGV when
//       PASS starts.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_INTERNALERROR_H
#define KINA_INTERNALERROR_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Operation.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace kina {

/// The exit code of an internal compiler error (a failing pass, IR that
/// does not verify, a crash, an LLVM fatal error).
inline constexpr int kExitInternalError = 70;

/// Installs the crash reporting of kinac: a crash (SIGSEGV, SIGBUS, SIGILL,
/// SIGFPE, SIGABRT, SIGQUIT) prints `kinac: internal error: kinac crashed
/// ...` with the pass running then, LLVM's stack dump and a request to
/// report it, removes the temporary and partial output files, and exits
/// with kExitInternalError; so does an LLVM fatal error. Call once in main,
/// after installInterruptHandler.
void installCrashReporting(const char *argv0);

/// Whether an internal error was reported in this process (the driver then
/// exits with kExitInternalError).
bool internalErrorReported();

/// A forced internal error (--debug-force-internal-error=KIND:PASS).
struct ForcedInternalError {
  enum Kind { None, InvalidIR, Crash } kind = None;
  std::string pass;
};

/// Parses the value of --debug-force-internal-error; an error names the
/// accepted forms.
llvm::Expected<ForcedInternalError> parseForcedInternalError(llvm::StringRef);

/// Watches one run of the pass pipeline: holds back every diagnostic
/// emitted while it lives (they belong in an internal-error report, not
/// among the user's errors), records the pass running (for crash reports),
/// and when a pass fails keeps the IR as it is then in a temporary file.
/// Create it before the pipeline, give `instrument` to the PassManager, and
/// call report() if the pipeline fails.
class PipelineWatch {
public:
  PipelineWatch(mlir::MLIRContext &ctx, ForcedInternalError forced);
  ~PipelineWatch();

  /// Adds the instrumentation to `pm` (PipelineOptions::instrument).
  void instrument(mlir::PassManager &pm);

  /// Prints the internal error of a failed pipeline run: the failing pass,
  /// whether its IR did not verify, the diagnostics, the kept IR file and
  /// the report request.
  void report();

  /// After a successful run: emits the held diagnostics (warnings, remarks)
  /// to the handlers below, in order.
  void replay();

  /// Whether the forced error's pass ran (false: no such pass).
  bool forcedPassRan() const;

  struct State;

private:
  std::shared_ptr<State> state;
  mlir::ScopedDiagnosticHandler handler;
};

/// Holds back the diagnostics of MLIRGen while it lives; finish() then
/// reports them as an internal error if one says "internal error" (MLIRGen's
/// own consistency checks, a module that does not verify), and otherwise
/// emits them again, in order, to the handlers below (the user's errors).
class MLIRGenWatch {
public:
  explicit MLIRGenWatch(mlir::MLIRContext &ctx);
  /// Returns true if an internal error was reported.
  bool finish();

private:
  mlir::MLIRContext &ctx;
  std::vector<mlir::Diagnostic> held;
  std::unique_ptr<mlir::ScopedDiagnosticHandler> handler;
};

} // namespace kina

#endif // KINA_INTERNALERROR_H
