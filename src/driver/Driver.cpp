//===- Driver.cpp - Option parsing and the compile/link flow of kinac -----===//
//
// The driver of Driver.h: CLI11 options into a `DriverOptions` struct, then
// for each `.kir` input the stages parse -> sema -> MLIRGen -> pipeline ->
// textual LLVM-dialect MLIR -> `mlir-translate --mlir-to-llvmir` -> `llc`,
// stopping at the requested `--emit` stage. Outputs are written to a
// temporary file beside the destination and renamed into place, so a failed
// run never leaves a partial file or clobbers an existing one. Temporary
// files are removed unless `--keep-temps` is given. `--time-stages` prints
// the wall time of each stage. Diagnostics go through a DiagnosticSession
// (Diagnostics.h): text, JSON (`--diagnostics-format=json`) or checked
// against the source's annotations (`--verify-diagnostics`).
//
//===----------------------------------------------------------------------===//
#include "kina/Driver.h"

#include "kina/Diagnostics.h"
#include "kina/Frontend.h"
#include "kina/HeaderEmitter.h"
#include "kina/InternalError.h"
#include "kina/MLIRGen.h"
#include "kina/Manifest.h"
#include "kina/Pipeline.h"
#include "kina/Target.h"
#include "kina/RuntimeConfig.h"
#include "kina/ToolRunner.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Support/raw_ostream.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#ifndef KINA_VERSION
#define KINA_VERSION "0.0.0"
#endif
#ifndef KINA_DEFAULT_LLVM_BIN
#define KINA_DEFAULT_LLVM_BIN ""
#endif
#ifndef KINA_DEFAULT_RUNTIME_LIB
#define KINA_DEFAULT_RUNTIME_LIB ""
#endif
#ifndef KINA_DEFAULT_INCLUDE_DIR
#define KINA_DEFAULT_INCLUDE_DIR ""
#endif

using namespace llvm;

namespace kina {
namespace {

struct DriverOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string emit = "obj";
  unsigned optLevel = 2;
  /// Whether -O was given (it then also overrides an -O in $CFLAGS).
  bool optExplicit = false;
  std::string target = "cpu";
  /// cuda: --gpu-arch (the SM), --cuda-path (resolved to the toolkit root
  /// before compiling: --cuda-path, CUDA_PATH, /usr/local/cuda),
  /// --allow-tf32.
  std::string gpuArch = "sm_90";
  std::string cudaPath;
  bool allowTf32 = false;
  /// --mcpu: the processor llc generates code for (llc's -mcpu); empty for
  /// llc's default, the generic processor of the host's architecture.
  std::string mcpu;
  std::string symbolPrefix;
  std::string mlirTranslate;
  std::string llc;
  std::string runtimeLib;
  bool verbose = false;
  bool keepTemps = false;
  bool timeStages = false;
  bool printDebugInfo = false;
  bool printLinkFlags = false;
  /// --diagnostics-format=text|json and --verify-diagnostics (Diagnostics.h).
  std::string diagnosticsFormat = "text";
  bool verifyDiagnostics = false;
  /// The ABI version objects record (hidden --abi-version-for-testing).
  int abiVersion = KINA_ABI_VERSION;
  /// -MD/-MMD, -MF FILE, -MT TARGET (repeatable), -MP: a Make dependency
  /// file, as a C compiler writes one (see dependencyFile).
  bool writeDeps = false;
  std::string depFile;
  std::vector<std::string> depTargets;
  bool depPhony = false;
  /// The C compiler driver's flags given to kinac for a one-step link
  /// (extractCompilerFlags), in command-line order: compile flags (-I -D -U
  /// -std= -f... -m... -g... -W... -Xcompiler ARG), link flags (-L -Wl,
  /// -Xlinker ARG) and libraries (-l), which go after every object.
  std::vector<std::string> cCompileFlags, cLinkFlags, cLibraries;
  /// Every C-driver flag as written, for the "unused" warning when kinac
  /// links nothing.
  std::vector<std::string> cFlagsAsWritten;
  /// --debug-force-internal-error=KIND:PASS (hidden, for tests).
  std::string forceInternalError;
  ForcedInternalError forced;
};

/// Prints a driver-level error the way clang does.
void driverError(const Twine &message) { reportDriverError(message); }

/// Wall-clock timing of the stages, printed by --time-stages.
class StageTimer {
public:
  explicit StageTimer(bool enabled) : enabled(enabled) {}
  template <typename F> auto time(StringRef stage, F &&f) {
    auto start = std::chrono::steady_clock::now();
    auto result = f();
    double ms = std::chrono::duration<double, std::milli>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    stages.emplace_back(stage.str(), ms);
    return result;
  }
  void print() const {
    if (!enabled)
      return;
    double total = 0;
    for (const auto &s : stages)
      total += s.second;
    errs() << "kinac: stage times (wall clock)\n";
    for (const auto &s : stages)
      errs() << format("  %-16s %9.2f ms\n", s.first.c_str(), s.second);
    errs() << format("  %-16s %9.2f ms\n", "total", total);
  }

private:
  bool enabled;
  std::vector<std::pair<std::string, double>> stages;
};

/// Temporary files of one run; removed on destruction unless kept.
class TempFiles {
public:
  explicit TempFiles(bool keep) : keep(keep) {}
  ~TempFiles() {
    if (keep) {
      for (const std::string &p : paths)
        errs() << "kinac: kept temporary file " << p << "\n";
      return;
    }
    // Files before the directories holding them (reverse order).
    for (auto it = paths.rbegin(); it != paths.rend(); ++it) {
      sys::fs::remove(*it);
      sys::DontRemoveFileOnSignal(*it);
      dontRemoveDirectoryOnSignal(*it);
    }
  }
  /// Creates and registers with no interrupt in between (InterruptBlocker):
  /// an interrupt finds every temporary file registered.
  Expected<std::string> create(StringRef prefix, StringRef suffix) {
    SmallString<128> path;
    InterruptBlocker blocked;
    if (std::error_code ec = sys::fs::createTemporaryFile(prefix, suffix, path))
      return createStringError(ec, "cannot create a temporary file: %s",
                               ec.message().c_str());
    remember(path);
    return std::string(path);
  }
  Expected<std::string> createDirectory(StringRef prefix) {
    SmallString<128> path;
    InterruptBlocker blocked;
    if (std::error_code ec = sys::fs::createUniqueDirectory(prefix, path))
      return createStringError(ec, "cannot create a temporary directory: %s",
                               ec.message().c_str());
    paths.push_back(std::string(path));
    if (!keep && !removeDirectoryOnSignal(path)) {
      sys::fs::remove(path);
      paths.pop_back();
      return createStringError(inconvertibleErrorCode(),
                               "cannot register the temporary directory '%s' "
                               "for removal",
                               path.c_str());
    }
    return std::string(path);
  }
  /// Registers a file created by someone else inside a temporary directory.
  void adopt(StringRef path) { remember(path); }

private:
  bool keep;
  std::vector<std::string> paths;

  /// Records `path` for removal at the end, and, unless kept, if kinac is
  /// interrupted (installInterruptHandler).
  void remember(StringRef path) {
    paths.push_back(path.str());
    if (!keep)
      sys::RemoveFileOnSignal(path);
  }
};

/// An output file being written: either a complete temporary file beside
/// the target, renamed over it by commitOutput (regular files, so an
/// existing one is replaced only by a complete file), or, for an existing
/// path that is not a regular file (`/dev/null`, a FIFO, a terminal), the
/// bytes to write into it directly, as C compilers do.
struct StagedOutput {
  std::string target; // the path written: `path`, or a symlink's target
  std::string tmp;    // the temporary file; empty: write `bytes` directly
  std::string bytes;
};

/// Where writing an output path puts the bytes.
struct OutputTarget {
  std::string path; // the path, or the file a symbolic link points to
  sys::fs::file_type type = sys::fs::file_type::file_not_found;
  /// An existing file that is neither regular nor a directory (`/dev/null`,
  /// a FIFO): written into, never replaced.
  bool special() const {
    return type != sys::fs::file_type::regular_file &&
           type != sys::fs::file_type::file_not_found &&
           type != sys::fs::file_type::directory_file;
  }
};

/// Resolves `path` for writing: a symbolic link is followed, so the file it
/// points to is replaced and the link kept.
OutputTarget resolveOutput(StringRef path) {
  OutputTarget target{path.str()};
  SmallString<256> real;
  if (sys::fs::is_symlink_file(path) && !sys::fs::real_path(path, real))
    target.path = std::string(real);
  sys::fs::file_status status;
  if (!sys::fs::status(target.path, status))
    target.type = status.type();
  return target;
}

/// Stages `bytes` for `path` (resolveOutput).
Expected<StagedOutput> stageOutput(StringRef path, StringRef bytes) {
  StagedOutput staged;
  OutputTarget target = resolveOutput(path);
  staged.target = target.path;
  if (target.type == sys::fs::file_type::directory_file)
    return createStringError(std::make_error_code(std::errc::is_a_directory),
                             "cannot write '%s': Is a directory",
                             path.str().c_str());
  if (target.special()) {
    staged.bytes = bytes.str();
    return staged;
  }
  SmallString<256> model(staged.target);
  model += ".tmp-%%%%%%%%";
  SmallString<256> tmp;
  int fd;
  {
    // Registered for removal before a byte is written, with no interrupt
    // between its creation and the registration.
    InterruptBlocker blocked;
    if (std::error_code ec = sys::fs::createUniqueFile(model, fd, tmp))
      return createStringError(ec, "cannot write '%s': %s",
                               path.str().c_str(), ec.message().c_str());
    sys::RemoveFileOnSignal(tmp);
  }
  raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << bytes;
  os.close();
  if (os.has_error()) {
    std::error_code ec = os.error();
    os.clear_error();
    sys::fs::remove(tmp);
    sys::DontRemoveFileOnSignal(tmp);
    return createStringError(ec, "cannot write '%s': %s", path.str().c_str(),
                             ec.message().c_str());
  }
  staged.tmp = std::string(tmp);
  return staged;
}

/// Puts the staged output in place: renames the temporary file over the
/// target (removing it on failure), or writes the bytes into the
/// non-regular file.
Error commitOutput(const StagedOutput &staged) {
  if (staged.tmp.empty()) {
    std::error_code ec;
    raw_fd_ostream os(staged.target, ec, sys::fs::OF_None);
    if (!ec) {
      os << staged.bytes;
      os.close();
      ec = os.error();
      os.clear_error();
    }
    if (ec)
      return createStringError(ec, "cannot write '%s': %s",
                               staged.target.c_str(), ec.message().c_str());
    return Error::success();
  }
  std::error_code ec = sys::fs::rename(staged.tmp, staged.target);
  if (ec)
    sys::fs::remove(staged.tmp);
  sys::DontRemoveFileOnSignal(staged.tmp);
  if (ec)
    return createStringError(ec, "cannot write '%s': %s",
                             staged.target.c_str(), ec.message().c_str());
  return Error::success();
}

/// Removes a staged output that will not be committed.
void discardOutput(const StagedOutput &staged) {
  if (!staged.tmp.empty()) {
    sys::fs::remove(staged.tmp);
    sys::DontRemoveFileOnSignal(staged.tmp);
  }
}

/// Writes `bytes` to `path` ("-" is standard output): an existing regular
/// file is replaced only by a complete one (stageOutput).
Error writeOutput(StringRef path, StringRef bytes) {
  if (path == "-") {
    outs() << bytes;
    outs().flush();
    if (outs().has_error()) {
      std::error_code ec = outs().error();
      outs().clear_error();
      return createStringError(ec, "cannot write to standard output: %s",
                               ec.message().c_str());
    }
    return Error::success();
  }
  Expected<StagedOutput> staged = stageOutput(path, bytes);
  if (!staged)
    return staged.takeError();
  return commitOutput(*staged);
}

Expected<std::string> readFile(StringRef path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buf)
    return createStringError(buf.getError(), "%s",
                             buf.getError().message().c_str());
  return (*buf)->getBuffer().str();
}

std::optional<EmitStage> parseStage(StringRef s) {
  return StringSwitch<std::optional<EmitStage>>(s)
      .Case("kir", EmitStage::Kir)
      .Case("mlir", EmitStage::Mlir)
      .Case("mlir-gpu", EmitStage::MlirGpu)
      .Case("ptx", EmitStage::Ptx)
      .Case("mlir-llvm", EmitStage::MlirLLVM)
      .Case("llvm", EmitStage::LLVM)
      .Case("asm", EmitStage::Asm)
      .Case("obj", EmitStage::Obj)
      .Case("header", EmitStage::Header)
      .Case("manifest", EmitStage::Manifest)
      .Case("shared", EmitStage::Shared)
      .Default(std::nullopt);
}

/// The directory of the running kinac, for paths relative to it.
std::string executableDir(const char *argv0) {
  static int anchor;
  std::string exe = sys::fs::getMainExecutable(argv0, &anchor);
  return sys::path::parent_path(exe).str();
}

/// libkina_runtime.a: --runtime-lib, else ../lib next to kinac (build and
/// install trees), else the path configured at build time.
std::string findRuntimeLib(const DriverOptions &opts, const char *argv0) {
  if (!opts.runtimeLib.empty())
    return opts.runtimeLib;
  SmallString<256> p(executableDir(argv0));
  sys::path::append(p, "..", "lib", "libkina_runtime.a");
  if (sys::fs::exists(p)) {
    SmallString<256> real;
    if (!sys::fs::real_path(p, real))
      return std::string(real);
    return std::string(p);
  }
  return KINA_DEFAULT_RUNTIME_LIB;
}

/// Where LLVM's tools were found at configure time; also tried relative to
/// kinac for relocated installs.
std::string configuredLLVMBin() { return KINA_DEFAULT_LLVM_BIN; }

/// The flags a program linking compiled Kina objects needs after them.
std::vector<std::string> runtimeLinkFlags(const std::string &runtimeLib) {
  std::vector<std::string> flags = {runtimeLib};
  SmallVector<StringRef> extra;
  StringRef(KINA_RUNTIME_LINK_LIBS).split(extra, ' ', -1, false);
  for (StringRef f : extra)
    flags.push_back(f.str());
  flags.push_back("-lstdc++");
  flags.push_back("-lm");
  return flags;
}

/// One compilation of a `.kir` file up to a stage; returns the bytes of the
/// requested output.
class Compilation {
public:
  Compilation(const DriverOptions &opts, StageTimer &timer, TempFiles &temps,
              const ToolRunner &tools)
      : opts(opts), timer(timer), temps(temps), tools(tools) {}

  /// Compiles `input` to `stage`. On failure, diagnostics were printed.
  std::optional<std::string> run(const std::string &input, EmitStage stage);

  /// The runtime archive linked into shared libraries (EmitStage::Shared).
  std::string runtimeLib;

  /// With --verify-diagnostics: whether the last run() emitted exactly the
  /// diagnostics its source's annotations expect.
  bool diagnosticsVerified = false;

private:
  const DriverOptions &opts;
  StageTimer &timer;
  TempFiles &temps;
  const ToolRunner &tools;

  /// Parses `input` and compiles it in an MLIR context of its own: returns
  /// the output of `stage` up to `mlir-llvm`, header and manifest, and the
  /// LLVM-dialect text for the stages the tools make (llvm, asm, obj).
  std::optional<std::string> generate(const std::string &input,
                                      EmitStage stage);
  std::optional<std::string> runTools(const std::string &llvmDialectText,
                                      EmitStage stage);
  std::optional<std::string> buildShared(const std::string &input);
};

std::optional<std::string> Compilation::run(const std::string &input,
                                            EmitStage stage) {
  if (stage == EmitStage::Shared)
    return buildShared(input);
  // The MLIR context (and its thread pool) ends inside generate(): the
  // tools run with kinac single-threaded, so an interrupt is delivered to
  // the thread that blocks it around a spawn (InterruptBlocker).
  std::optional<std::string> text = generate(input, stage);
  if (!text || (stage != EmitStage::LLVM && stage != EmitStage::Asm &&
                stage != EmitStage::Obj))
    return text;
  return runTools(*text, stage);
}

std::optional<std::string> Compilation::generate(const std::string &input,
                                                 EmitStage stage) {
  Expected<std::string> source = readFile(input);
  if (!source) {
    driverError("cannot open '" + input + "': " + toString(source.takeError()));
    return std::nullopt;
  }

  mlir::MLIRContext ctx;
  ctx.printOpOnDiagnostic(false);
  ctx.printStackTraceOnDiagnostic(false);
  registerKinaDialects(ctx);
  // The diagnostics' copy of the source shows each non-ASCII byte as '?':
  // LLVM's SMDiagnostic prints no caret under a line holding non-ASCII text,
  // and invalid UTF-8 would reach the terminal raw. Columns count bytes, so
  // the caret stays under the byte the column names.
  std::string display = *source;
  for (char &c : display)
    if (static_cast<unsigned char>(c) >= 0x80)
      c = '?';
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(MemoryBuffer::getMemBufferCopy(display, input),
                               SMLoc());
  diagnosticsVerified = false;
  std::optional<DiagnosticSession> diagnostics;
  if (opts.verifyDiagnostics)
    diagnostics.emplace(sourceMgr, ctx, errs(), &diagnosticsVerified);
  else
    diagnostics.emplace(sourceMgr, ctx, getDiagnosticFormat(), errs());

  auto parsed =
      timer.time("parse", [&] { return parseModule(*source, input, ctx); });
  if (mlir::failed(parsed))
    return std::nullopt;
  Module &module = *parsed;
  if (mlir::failed(timer.time("sema", [&] {
        return analyzeModule(module, ctx, opts.symbolPrefix);
      })))
    return std::nullopt;
  if (stage == EmitStage::Kir)
    return printModule(module);
  if (stage == EmitStage::Header)
    return emitHeader(module, opts.symbolPrefix, opts.target);
  if (stage == EmitStage::Manifest) {
    return emitManifest(module, opts.symbolPrefix, "kinac " KINA_VERSION,
                        opts.target);
  }

  MLIRGenOptions genOptions;
  genOptions.symbolPrefix = opts.symbolPrefix;
  // MLIRGen's own consistency failures are internal errors; its other
  // errors are the user's (MLIRGenWatch).
  std::optional<MLIRGenWatch> genWatch;
  genWatch.emplace(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> mlirModule =
      timer.time("mlirgen", [&] { return mlirGen(ctx, module, genOptions); });
  if (genWatch->finish())
    return std::nullopt;
  genWatch.reset();
  if (!mlirModule)
    return std::nullopt;

  auto print = [&](mlir::ModuleOp m, bool debugInfo) {
    std::string text;
    raw_string_ostream os(text);
    mlir::OpPrintingFlags flags;
    if (debugInfo)
      flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    m.print(os, flags);
    os.flush();
    return text;
  };
  if (stage == EmitStage::Mlir)
    return print(*mlirModule, opts.printDebugInfo);
  if ((stage == EmitStage::MlirGpu || stage == EmitStage::Ptx) &&
      opts.target != "cuda") {
    driverError("--emit=" + opts.emit + " needs --target=cuda");
    return std::nullopt;
  }

  // --target was checked against the registry when the options were read.
  const Target *target = lookupTarget(opts.target);
  TargetOptions pipeline;
  pipeline.optLevel = opts.optLevel;
  pipeline.gpuArch = opts.gpuArch;
  pipeline.cudaPath = opts.cudaPath;
  pipeline.allowTf32 = opts.allowTf32;
  if (stage == EmitStage::MlirGpu)
    pipeline.stopAfter = "mlir-gpu";
  else if (stage == EmitStage::Ptx)
    pipeline.stopAfter = "ptx";
  pipeline.symbolPrefix = opts.symbolPrefix;
  pipeline.stamp.abiVersion = opts.abiVersion;
  pipeline.stamp.compiler = "kinac " KINA_VERSION;
  pipeline.mcpu = opts.mcpu;
  // Every failure from here on is kinac's bug: reported as an internal
  // error naming the pass, its diagnostics inside the report.
  {
    PipelineWatch watch(ctx, opts.forced);
    auto instrument = [&](mlir::PassManager &pm) { watch.instrument(pm); };
    // Each stage of the target's pipeline is timed (--time-stages): cpu has
    // one, cuda gpu-map, gpu-nvvm, gpu-ptxas and host-llvm.
    auto timeStage = [&](StringRef name,
                         function_ref<mlir::LogicalResult()> run) {
      return timer.time(name, run);
    };
    if (mlir::failed(lowerToLLVMDialect(*mlirModule, *target, pipeline,
                                        instrument, timeStage))) {
      watch.report();
      return std::nullopt;
    }
    watch.replay();
    if (opts.forced.kind != ForcedInternalError::None &&
        !watch.forcedPassRan()) {
      driverError("--debug-force-internal-error: no pass '" +
                  opts.forced.pass + "' ran in the pipeline");
      return std::nullopt;
    }
  }
  if (stage == EmitStage::Ptx) {
    // Each kernel module's PTX, as gpu-module-to-binary left it (format
    // isa).
    std::string ptx;
    mlirModule->walk([&](mlir::gpu::BinaryOp binary) {
      for (mlir::Attribute attr : binary.getObjects())
        if (auto object = dyn_cast<mlir::gpu::ObjectAttr>(attr))
          ptx += "// kernel module " + binary.getSymName().str() + "\n" +
                 object.getObject().getValue().str();
    });
    return ptx;
  }
  std::string llvmDialect = timer.time(
      "print-mlir", [&] { return print(*mlirModule, opts.printDebugInfo); });
  return llvmDialect;
}

std::optional<std::string>
Compilation::runTools(const std::string &llvmDialectText, EmitStage stage) {
  auto fail = [](Error err) -> std::optional<std::string> {
    driverError(toString(std::move(err)));
    return std::nullopt;
  };
  Expected<std::string> translate =
      tools.findTool("mlir-translate", opts.mlirTranslate, configuredLLVMBin());
  if (!translate)
    return fail(translate.takeError());
  Expected<std::string> mlirPath = temps.create("kinac", "mlir");
  if (!mlirPath)
    return fail(mlirPath.takeError());
  if (Error err = writeOutput(*mlirPath, llvmDialectText))
    return fail(std::move(err));
  Expected<std::string> llPath = temps.create("kinac", "ll");
  if (!llPath)
    return fail(llPath.takeError());
  if (Error err = timer.time("mlir-translate", [&] {
        return tools.run(*translate, {"mlir-translate", "--mlir-to-llvmir",
                                      *mlirPath, "-o", *llPath});
      }))
    return fail(std::move(err));
  if (stage == EmitStage::LLVM) {
    Expected<std::string> text = readFile(*llPath);
    if (!text)
      return fail(text.takeError());
    return *text;
  }

  Expected<std::string> llc =
      tools.findTool("llc", opts.llc, configuredLLVMBin());
  if (!llc)
    return fail(llc.takeError());
  bool object = stage == EmitStage::Obj;
  Expected<std::string> outPath = temps.create("kinac", object ? "o" : "s");
  if (!outPath)
    return fail(outPath.takeError());
  std::vector<std::string> args = {"llc",
                                   "-O" + std::to_string(opts.optLevel),
                                   object ? "-filetype=obj" : "-filetype=asm",
                                   "-relocation-model=pic",
                                   *llPath,
                                   "-o",
                                   *outPath};
  if (!opts.mcpu.empty())
    args.push_back("-mcpu=" + opts.mcpu);
  if (Error err = timer.time("llc", [&] { return tools.run(*llc, args); }))
    return fail(std::move(err));
  Expected<std::string> bytes = readFile(*outPath);
  if (!bytes)
    return fail(bytes.takeError());
  return *bytes;
}

/// Checks --mcpu against the processors LLVM knows for the default target
/// triple (the one llc generates code for: the module names none) and
/// replaces "native" with the name of the processor kinac runs on
/// (`llvm::sys::getHostCPUName`, as clang's -march=native does).
Error resolveProcessor(std::string &mcpu) {
  if (mcpu.empty())
    return Error::success();
  if (mcpu == "native") {
    mcpu = sys::getHostCPUName().str();
    return Error::success();
  }
  InitializeNativeTarget();
  std::string triple = sys::getDefaultTargetTriple(), error;
  const llvm::Target *target =
      TargetRegistry::lookupTarget(Triple(triple), error);
  if (!target)
    return createStringError(inconvertibleErrorCode(),
                             "no code generator for target '" + triple +
                                 "': " + error);
  std::unique_ptr<MCSubtargetInfo> info(
      target->createMCSubtargetInfo(Triple(triple), "", ""));
  if (info && !info->isCPUStringValid(mcpu))
    return createStringError(
        inconvertibleErrorCode(),
        "unknown processor '" + mcpu + "' in --mcpu for target '" + triple +
            "' ('llc -mcpu=help' lists them; 'native' is this machine's)");
  return Error::success();
}

bool isKir(StringRef path) { return sys::path::extension(path) == ".kir"; }

/// Takes the C-compiler-style dependency flags out of `args` (CLI11 cannot
/// parse multi-letter single-dash options): -MD or -MMD (the same: a module
/// has no includes), -MF FILE, -MT TARGET (repeatable), -MP, each with its
/// value attached or in the next argument. Scanning stops at `--`.
Error extractDependencyFlags(std::vector<char *> &args, DriverOptions &opts) {
  std::vector<char *> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef a(args[i]);
    if (a == "--") {
      kept.insert(kept.end(), args.begin() + i, args.end());
      break;
    }
    if (a == "-MD" || a == "-MMD") {
      opts.writeDeps = true;
    } else if (a == "-MP") {
      opts.depPhony = true;
    } else if (a.starts_with("-MF") || a.starts_with("-MT")) {
      std::string value = a.drop_front(3).str();
      if (value.empty()) {
        if (i + 1 == args.size())
          return createStringError(inconvertibleErrorCode(), "%s needs a value",
                                   a.str().c_str());
        value = args[++i];
      }
      if (a.starts_with("-MF"))
        opts.depFile = value;
      else
        opts.depTargets.push_back(value);
    } else {
      kept.push_back(args[i]);
    }
  }
  if (!opts.writeDeps &&
      (!opts.depFile.empty() || !opts.depTargets.empty() || opts.depPhony))
    return createStringError(inconvertibleErrorCode(),
                             "-MF, -MT and -MP need -MD");
  args = std::move(kept);
  return Error::success();
}

/// Takes the C compiler driver's flags out of `args` for a one-step link,
/// as nvcc and clang accept them: -I -D -U -L -l (the value attached or in
/// the next argument), -Wl,... -Wa,... -Wp,... and other -W... warnings,
/// -std=..., -f..., -m... (kinac's own is --mcpu, with two dashes), -g...,
/// -pthread, and -Xcompiler ARG / -Xlinker ARG for anything else. -O stays
/// for the option parser: it sets kinac's level and the C compile's.
/// kinac's options that take a separate value keep it (`-o -lfoo.o` is an
/// output name). Scanning stops at `--`.
Error extractCompilerFlags(std::vector<char *> &args, DriverOptions &opts) {
  static const StringRef separateValue[] = {
      "-o",        "--emit",           "--target",
      "--mcpu",    "--symbol-prefix",  "--mlir-translate",
      "--llc",     "--runtime-lib",    "--diagnostics-format",
      "--abi-version-for-testing", "--debug-force-internal-error"};
  std::vector<char *> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef a(args[i]);
    if (i == 0) {
      kept.push_back(args[i]);
      continue;
    }
    if (a == "--") {
      kept.insert(kept.end(), args.begin() + i, args.end());
      break;
    }
    if (llvm::is_contained(separateValue, a)) {
      kept.push_back(args[i]);
      if (i + 1 < args.size())
        kept.push_back(args[++i]);
      continue;
    }
    // The flags with a value: attached (-Idir) or the next argument (-I dir).
    auto withValue = [&](StringRef flag,
                         std::vector<std::string> &into) -> Expected<bool> {
      if (!a.starts_with(flag))
        return false;
      std::string value = a.drop_front(flag.size()).str();
      opts.cFlagsAsWritten.push_back(a.str());
      if (value.empty()) {
        if (i + 1 == args.size())
          return createStringError(inconvertibleErrorCode(),
                                   "argument to '%s' is missing (expected 1 "
                                   "value)",
                                   flag.str().c_str());
        value = args[++i];
        opts.cFlagsAsWritten.back() += " " + value;
      }
      into.push_back(flag.str() + value);
      return true;
    };
    bool taken = false;
    for (auto [flag, list] :
         {std::pair<StringRef, std::vector<std::string> *>{"-I",
                                                           &opts.cCompileFlags},
          {"-D", &opts.cCompileFlags},
          {"-U", &opts.cCompileFlags},
          {"-L", &opts.cLinkFlags},
          {"-l", &opts.cLibraries}}) {
      Expected<bool> took = withValue(flag, *list);
      if (!took)
        return took.takeError();
      if ((taken = *took))
        break;
    }
    if (taken)
      continue;
    if (a == "-Xcompiler" || a == "-Xlinker") {
      if (i + 1 == args.size())
        return createStringError(inconvertibleErrorCode(),
                                 "argument to '%s' is missing (expected 1 "
                                 "value)",
                                 a.str().c_str());
      std::string value = args[++i];
      opts.cFlagsAsWritten.push_back(a.str() + " " + value);
      if (a == "-Xcompiler") {
        opts.cCompileFlags.push_back(value);
      } else {
        opts.cLinkFlags.push_back("-Xlinker");
        opts.cLinkFlags.push_back(value);
      }
      continue;
    }
    bool link = a.starts_with("-Wl,");
    bool compile = !link && ((a.starts_with("-W") && a.size() > 2) ||
                             a.starts_with("-std=") ||
                             (a.starts_with("-f") && a.size() > 2) ||
                             (a.starts_with("-m") && a.size() > 2) ||
                             a.starts_with("-g") || a == "-pthread");
    if (link || compile) {
      opts.cFlagsAsWritten.push_back(a.str());
      (link ? opts.cLinkFlags : opts.cCompileFlags).push_back(a.str());
      continue;
    }
    kept.push_back(args[i]);
  }
  args = std::move(kept);
  return Error::success();
}

/// The words of an environment variable holding flags (CFLAGS, LDFLAGS,
/// ...), split at white space as make's recipes split them (no quoting).
std::vector<std::string> flagsFromEnvironment(const char *name) {
  std::vector<std::string> words;
  std::optional<std::string> value = sys::Process::GetEnv(name);
  if (!value)
    return words;
  SmallVector<StringRef> parts;
  SplitString(*value, parts, " \t\n\r\f\v");
  for (StringRef w : parts)
    words.push_back(w.str());
  return words;
}

/// The folder holding kina/runtime.h and kina/abi.h for C sources linked in
/// one step: `../include` beside kinac (an install tree), else the source
/// tree's include folder (a build tree); plus the build's generated headers
/// (kina/RuntimeConfig.h) when those are not beside the others.
std::vector<std::string> runtimeIncludeDirs(const char *argv0) {
  SmallString<256> p(executableDir(argv0));
  sys::path::append(p, "..", "include");
  SmallString<256> probe(p);
  sys::path::append(probe, "kina", "runtime.h");
  if (sys::fs::exists(probe)) {
    SmallString<256> real;
    if (!sys::fs::real_path(p, real))
      return {std::string(real)};
    return {std::string(p)};
  }
  std::vector<std::string> dirs = {KINA_DEFAULT_INCLUDE_DIR};
  SmallString<256> config(p);
  sys::path::append(config, "kina", "RuntimeConfig.h");
  if (sys::fs::exists(config)) {
    SmallString<256> real;
    dirs.push_back(!sys::fs::real_path(p, real) ? std::string(real)
                                                 : std::string(p));
  }
  return dirs;
}

/// A path as a Make rule writes it: spaces and '#' escaped with a
/// backslash, '$' doubled (as GCC and Clang write dependency files).
std::string makeEscape(StringRef path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#')
      out += '\\';
    else if (c == '$')
      out += '$';
    out += c;
  }
  return out;
}

/// -MD: the dependency file's path (default: the output with its extension
/// replaced by `.d`) and text, `target: input kinac`, so Make rebuilds
/// `target` when the module or the compiler changes; with -MP also an empty
/// rule for kinac, so a removed compiler does not stop Make. The target
/// defaults to the output file. writeResult writes it.
Expected<std::pair<std::string, std::string>>
dependencyFile(const DriverOptions &opts, const std::string &input,
               const std::string &output, const char *argv0) {
  std::string depFile = opts.depFile;
  if (depFile.empty()) {
    if (output == "-")
      return createStringError(inconvertibleErrorCode(),
                               "-MD with output to standard output needs -MF");
    SmallString<256> p(output);
    sys::path::replace_extension(p, ".d");
    depFile = std::string(p);
  }
  std::vector<std::string> targets = opts.depTargets;
  if (targets.empty()) {
    if (output == "-")
      return createStringError(inconvertibleErrorCode(),
                               "-MD with output to standard output needs -MT");
    targets.push_back(output);
  }
  static int anchor;
  std::string kinac = sys::fs::getMainExecutable(argv0, &anchor);
  std::string text;
  for (size_t i = 0; i < targets.size(); ++i)
    text += (i ? " " : "") + makeEscape(targets[i]);
  text += ": " + makeEscape(input) + " \\\n  " + makeEscape(kinac) + "\n";
  if (opts.depPhony)
    text += "\n" + makeEscape(kinac) + ":\n";
  return std::make_pair(depFile, text);
}

/// Writes a compilation's output and, with -MD, its dependency file: the
/// dependency file is staged first, so if either cannot be written neither
/// existing file is replaced (a failed run must not leave a fresh-looking
/// output for make to trust).
Error writeResult(const DriverOptions &opts, const std::string &input,
                  const std::string &output, StringRef bytes,
                  const char *argv0) {
  if (!opts.writeDeps)
    return writeOutput(output, bytes);
  auto dep = dependencyFile(opts, input, output, argv0);
  if (!dep)
    return dep.takeError();
  Expected<StagedOutput> depStaged = stageOutput(dep->first, dep->second);
  if (!depStaged)
    return depStaged.takeError();
  if (Error err = writeOutput(output, bytes)) {
    discardOutput(*depStaged);
    return err;
  }
  return commitOutput(*depStaged);
}

/// Refuses an output (or -MF dependency file) that is one of the inputs,
/// which writing would destroy (as gcc: "input file is the same as output
/// file"). Paths that do not exist yet cannot be inputs.
Error checkNotAnInput(const DriverOptions &opts, const std::string &output) {
  std::vector<std::string> outputs = {output};
  if (opts.writeDeps && !opts.depFile.empty())
    outputs.push_back(opts.depFile);
  for (const std::string &out : outputs) {
    if (out == "-")
      continue;
    for (const std::string &input : opts.inputs) {
      bool same = false;
      if (!sys::fs::equivalent(input, out, same) && same)
        return createStringError(inconvertibleErrorCode(),
                                 "input file '" + input +
                                     "' is the same as output file '" + out +
                                     "'");
    }
  }
  return Error::success();
}

std::string stem(StringRef path) { return sys::path::stem(path).str(); }

/// The system compiler driver that links: its path and the arguments that
/// come with it.
struct CompilerDriver {
  std::string path;
  std::vector<std::string> args; // argv[0] (the name) and $CC's own words
};

/// `$CC` if set, else `cc`, looked up on PATH. As make does, $CC may hold
/// words after the program (`gcc -m32`, `ccache gcc`), split at white space.
Expected<CompilerDriver> findCompilerDriver() {
  std::string cc = "cc";
  if (std::optional<std::string> env = sys::Process::GetEnv("CC"))
    if (!StringRef(*env).trim().empty())
      cc = *env;
  SmallVector<StringRef> words;
  StringRef(cc).split(words, ' ', -1, /*KeepEmpty=*/false);
  SmallVector<StringRef> fields;
  for (StringRef w : words) {
    SmallVector<StringRef> parts;
    w.split(parts, '\t', -1, /*KeepEmpty=*/false);
    fields.append(parts.begin(), parts.end());
  }
  ErrorOr<std::string> ccPath = sys::findProgramByName(fields.front());
  if (!ccPath)
    return createStringError(ccPath.getError(),
                             "cannot find the C compiler driver '%s' (set CC "
                             "to choose another)",
                             fields.front().str().c_str());
  CompilerDriver driver{*ccPath, {sys::path::filename(*ccPath).str()}};
  for (StringRef f : ArrayRef<StringRef>(fields).drop_front())
    driver.args.push_back(f.str());
  return driver;
}

/// `kinac a.kir [b.kir] main.c [x.o] -o app`: compile, write the headers
/// into a temporary include directory, link with the C compiler driver.
int linkExecutable(const DriverOptions &opts, const char *argv0,
                   StageTimer &timer, TempFiles &temps,
                   const ToolRunner &tools) {
  Compilation compilation(opts, timer, temps, tools);
  Expected<std::string> includeDir = temps.createDirectory("kinac-include");
  if (!includeDir) {
    driverError(toString(includeDir.takeError()));
    return ExitFailure;
  }
  std::vector<std::string> objects, others;
  for (const std::string &input : opts.inputs) {
    if (!isKir(input)) {
      others.push_back(input);
      continue;
    }
    std::optional<std::string> header =
        compilation.run(input, EmitStage::Header);
    if (!header)
      return ExitFailure;
    SmallString<256> headerPath(*includeDir);
    sys::path::append(headerPath, stem(input) + ".h");
    temps.adopt(headerPath);
    if (Error err = writeOutput(headerPath, *header)) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
    std::optional<std::string> object = compilation.run(input, EmitStage::Obj);
    if (!object)
      return ExitFailure;
    Expected<std::string> objPath = temps.create(stem(input), "o");
    if (!objPath) {
      driverError(toString(objPath.takeError()));
      return ExitFailure;
    }
    if (Error err = writeOutput(*objPath, *object)) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
    objects.push_back(*objPath);
  }

  std::string output = opts.output.empty() ? "a.out" : opts.output;
  if (output == "-") {
    driverError("cannot write an executable to standard output");
    return ExitFailure;
  }
  Expected<CompilerDriver> cc = findCompilerDriver();
  if (!cc) {
    driverError(toString(cc.takeError()));
    return ExitFailure;
  }
  // The executable is linked beside the output and renamed over it; into a
  // temporary file, then copied, when the output is special (`-o
  // /dev/null`); a symbolic link is followed (resolveOutput).
  OutputTarget resolved = resolveOutput(output);
  const std::string &target = resolved.path;
  bool special = resolved.special();
  SmallString<256> tmpOut;
  if (special) {
    Expected<std::string> linked = temps.create("kinac-link", "out");
    if (!linked) {
      driverError(toString(linked.takeError()));
      return ExitFailure;
    }
    tmpOut = *linked;
  } else {
    SmallString<256> model(target);
    model += ".tmp-%%%%%%%%";
    InterruptBlocker blocked;
    if (std::error_code ec = sys::fs::createUniqueFile(model, tmpOut)) {
      driverError("cannot write '" + output + "': " + ec.message());
      return ExitFailure;
    }
    sys::RemoveFileOnSignal(tmpOut);
  }
  auto removeTmp = [&] {
    if (!special) {
      sys::fs::remove(tmpOut);
      sys::DontRemoveFileOnSignal(tmpOut);
    }
  };
  // As make's rules and nvcc: $CPPFLAGS $CFLAGS, kinac's -O level (before
  // $CFLAGS unless given explicitly), the flags of the command line, the
  // generated headers and kina/runtime.h on the include path, $LDFLAGS and
  // the link flags, the inputs and objects, then the libraries (-l,
  // $LDLIBS) and the runtime.
  std::vector<std::string> args = cc->args;
  std::string optFlag = "-O" + std::to_string(opts.optLevel);
  if (!opts.optExplicit)
    args.push_back(optFlag);
  for (const char *var : {"CPPFLAGS", "CFLAGS"})
    for (std::string &f : flagsFromEnvironment(var))
      args.push_back(std::move(f));
  if (opts.optExplicit)
    args.push_back(optFlag);
  args.push_back("-I" + *includeDir);
  args.insert(args.end(), opts.cCompileFlags.begin(), opts.cCompileFlags.end());
  for (const std::string &dir : runtimeIncludeDirs(argv0))
    args.push_back("-I" + dir);
  for (std::string &f : flagsFromEnvironment("LDFLAGS"))
    args.push_back(std::move(f));
  args.insert(args.end(), opts.cLinkFlags.begin(), opts.cLinkFlags.end());
  for (const std::string &o : others)
    args.push_back(o);
  for (const std::string &o : objects)
    args.push_back(o);
  args.insert(args.end(), opts.cLibraries.begin(), opts.cLibraries.end());
  for (std::string &f : flagsFromEnvironment("LDLIBS"))
    args.push_back(std::move(f));
  for (const std::string &f : runtimeLinkFlags(findRuntimeLib(opts, argv0)))
    args.push_back(f);
  args.push_back("-o");
  args.push_back(std::string(tmpOut));
  if (Error err =
          timer.time("link", [&] { return tools.run(cc->path, args); })) {
    removeTmp();
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  if (special) {
    Expected<std::string> bytes = readFile(std::string(tmpOut));
    Error err = bytes ? commitOutput(StagedOutput{target, "", *bytes})
                      : bytes.takeError();
    if (err) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
    return ExitSuccess;
  }
  std::error_code ec = sys::fs::rename(tmpOut, target);
  if (ec) {
    removeTmp();
    driverError("cannot write '" + output + "': " + ec.message());
    return ExitFailure;
  }
  sys::DontRemoveFileOnSignal(tmpOut);
  return ExitSuccess;
}

/// `--emit=shared`: the module's object, a C file defining
/// kina_module_manifest() (Manifest.h) and the whole runtime archive, linked
/// by the system compiler driver into a shared library in a temporary file;
/// returns its bytes, which the caller writes atomically like any output.
/// `-Wl,-Bsymbolic` binds the library's references to its own definitions,
/// so several such libraries in one process each use their own runtime even
/// when one of them was loaded RTLD_GLOBAL; `--no-undefined` turns a symbol
/// the runtime lacks into a link error rather than a dlopen failure.
std::optional<std::string> Compilation::buildShared(const std::string &input) {
  auto fail = [](Error err) -> std::optional<std::string> {
    driverError(toString(std::move(err)));
    return std::nullopt;
  };
  std::optional<std::string> manifest = run(input, EmitStage::Manifest);
  if (!manifest)
    return std::nullopt;
  std::optional<std::string> object = run(input, EmitStage::Obj);
  if (!object)
    return std::nullopt;
  Expected<std::string> objPath = temps.create(stem(input), "o");
  if (!objPath)
    return fail(objPath.takeError());
  if (Error err = writeOutput(*objPath, *object))
    return fail(std::move(err));
  Expected<std::string> manifestPath =
      temps.create(stem(input) + "-manifest", "c");
  if (!manifestPath)
    return fail(manifestPath.takeError());
  if (Error err = writeOutput(*manifestPath, manifestCSource(*manifest)))
    return fail(std::move(err));
  Expected<std::string> soPath = temps.create(stem(input), "so");
  if (!soPath)
    return fail(soPath.takeError());
  Expected<CompilerDriver> cc = findCompilerDriver();
  if (!cc)
    return fail(cc.takeError());

  // runtimeLinkFlags: the archive first, then what it needs.
  std::vector<std::string> flags = runtimeLinkFlags(runtimeLib);
  std::vector<std::string> args = cc->args;
  args.insert(args.end(), {"-shared",
                                   "-fPIC",
                                   "-Wl,-Bsymbolic",
                                   "-Wl,--no-undefined",
                                   "-o",
                                   *soPath,
                                   *manifestPath,
                                   *objPath,
                                   "-Wl,--whole-archive",
                                   flags.front(),
                                   "-Wl,--no-whole-archive"});
  args.insert(args.end(), flags.begin() + 1, flags.end());
  if (Error err = timer.time("link", [&] { return tools.run(cc->path, args); }))
    return fail(std::move(err));
  Expected<std::string> bytes = readFile(*soPath);
  if (!bytes)
    return fail(bytes.takeError());
  return *bytes;
}

} // namespace

int runDriver(int argc, char **argv) {
  installInterruptHandler();
  installCrashReporting(argv[0]);
  registerAllTargets();
  DriverOptions opts;
  CLI::App app{
      "kinac: ahead-of-time compiler for Kina IR (version " KINA_VERSION ")",
      "kinac"};
  app.add_option("inputs", opts.inputs,
                 "Input files: .kir modules; with .c/.cc/.cpp/.o/.a files "
                 "too, kinac links an executable");
  app.add_option("-o", opts.output,
                 "Output file ('-' for standard output). Defaults: obj "
                 "<stem>.o, header <stem>.h, manifest <stem>.json, shared "
                 "<stem>.so, text stages standard output, link a.out");
  app.add_option("--emit", opts.emit,
                 "What to produce: kir|mlir|mlir-gpu (cuda: outlined "
                 "kernels)|ptx (cuda: the kernels' PTX)|mlir-llvm|llvm|asm|"
                 "obj|header|manifest (JSON signatures)|shared (a "
                 "dlopen-able library with the runtime; also -shared)")
      ->check(
          CLI::IsMember({"kir", "mlir", "mlir-gpu", "ptx", "mlir-llvm", "llvm",
                         "asm", "obj", "header", "manifest", "shared"}));
  app.add_option("-O", opts.optLevel, "Optimisation level 0..3 (default 2)")
      ->check(CLI::Range(0, 3));
  std::vector<std::string> targetNames;
  for (const Target *target : allTargets())
    targetNames.push_back(target->name().str());
  app.add_option("--target", opts.target,
                 "Code generation target: " + knownTargetNames())
      ->check(CLI::IsMember(targetNames));
  app.add_option("--gpu-arch", opts.gpuArch,
                 "cuda: the SM to compile kernels for, sm_XX or sm_XXa as "
                 "LLVM's NVPTX back end names it (default sm_90)");
  app.add_option("--cuda-path", opts.cudaPath,
                 "cuda: the CUDA Toolkit root holding bin/ptxas (default: "
                 "$CUDA_PATH, else /usr/local/cuda)");
  app.add_flag("--allow-tf32", opts.allowTf32,
               "cuda: allow TF32 in f32 matmuls (no effect yet: the "
               "generated matmul kernel computes in f32)");
  app.add_option("--mcpu", opts.mcpu,
                 "Processor to generate code for, as llc names it (e.g. "
                 "x86-64-v3, znver3, skylake-avx512), or 'native' for this "
                 "machine's (default: the generic processor, which runs "
                 "everywhere)");
  app.add_option("--symbol-prefix", opts.symbolPrefix,
                 "Prefix every exported symbol of the module");
  app.add_option("--mlir-translate", opts.mlirTranslate,
                 "Path of mlir-translate (else $KINA_LLVM_BIN, else the one "
                 "found at build time)");
  app.add_option("--llc", opts.llc,
                 "Path of llc (else $KINA_LLVM_BIN, else the one found at "
                 "build time)");
  app.add_option("--runtime-lib", opts.runtimeLib,
                 "libkina_runtime.a to link executables with");
  app.add_flag("-v,--verbose", opts.verbose,
               "Print each external command before running it");
  app.add_flag("--keep-temps", opts.keepTemps,
               "Keep temporary files and print where they are");
  app.add_flag("--time-stages", opts.timeStages,
               "Print the wall time of each compilation stage");
  app.add_flag("--mlir-print-debuginfo", opts.printDebugInfo,
               "Print source locations in emitted MLIR");
  app.add_flag("--print-link-flags", opts.printLinkFlags,
               "Print what a link of compiled objects needs, then exit");
  app.add_option("--diagnostics-format", opts.diagnosticsFormat,
                 "How errors are printed: text (clang style) or json (one "
                 "object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--verify-diagnostics", opts.verifyDiagnostics,
               "Check the diagnostics against the source's "
               "'expected-error@+1:COL {{...}}' comments; write no output");
  // The format applies to errors of the command line itself too.
  for (int i = 1; i < argc; ++i)
    if (StringRef(argv[i]) == "--diagnostics-format=json" ||
        (StringRef(argv[i]) == "--diagnostics-format" && i + 1 < argc &&
         StringRef(argv[i + 1]) == "json"))
      setDiagnosticFormat(DiagnosticFormat::Json);
  app.add_option("--abi-version-for-testing", opts.abiVersion,
                 "Record this ABI version in objects (tests only)")
      ->group("");
  app.add_option("--debug-force-internal-error", opts.forceInternalError,
                 "invalid-ir:PASS or crash:PASS (developers' tests only)")
      ->group("");
  app.footer("Make dependency files, as a C compiler writes them: -MD (or "
             "-MMD) writes\n  'OUTPUT: INPUT KINAC' to OUTPUT with .d "
             "for its extension; -MF FILE names\n  that file, -MT TARGET "
             "the rule's target (repeatable), -MP adds an empty\n  rule "
             "for kinac.\n\nC compiler flags for a one-step link (kinac "
             "m.kir main.c -o app), passed to\n  $CC: -I -D -U -L -l -Wl,... "
             "-W... -std=... -f... -m... -g... -pthread,\n  -Xcompiler ARG, "
             "-Xlinker ARG; $CPPFLAGS $CFLAGS $LDFLAGS $LDLIBS are used too,\n"
             "  and -O sets the level of both kinac and the C compile.\n\n"
             "Exit status: 0 success, 1 error, 70 internal compiler error.");
  app.set_version_flag("--version", "kinac version " KINA_VERSION);
  std::vector<char *> cliArgs(argv, argv + argc);
  if (Error err = extractDependencyFlags(cliArgs, opts)) {
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  if (Error err = extractCompilerFlags(cliArgs, opts)) {
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  // `-shared`, as C compilers spell it, is --emit=shared,
  // and a bare `-O` is -O1, as for gcc and clang.
  static char emitShared[] = "--emit=shared";
  static char optOne[] = "-O1";
  for (char *&arg : cliArgs) {
    if (StringRef(arg) == "--")
      break;
    if (StringRef(arg) == "-shared")
      arg = emitShared;
    else if (StringRef(arg) == "-O")
      arg = optOne;
  }
  try {
    app.parse(static_cast<int>(cliArgs.size()), cliArgs.data());
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    driverError(e.what());
    if (getDiagnosticFormat() == DiagnosticFormat::Text)
      errs() << "Run with --help for more information.\n";
    return ExitFailure;
  }
  setDiagnosticFormat(*parseDiagnosticFormat(opts.diagnosticsFormat));
  opts.optExplicit = app.count("-O") > 0;
  if (!opts.forceInternalError.empty()) {
    Expected<ForcedInternalError> forced =
        parseForcedInternalError(opts.forceInternalError);
    if (!forced) {
      driverError(toString(forced.takeError()));
      return ExitFailure;
    }
    opts.forced = *forced;
  }
  if (Error err = resolveProcessor(opts.mcpu)) {
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  {
    TargetOptions targetOptions;
    targetOptions.mcpu = opts.mcpu;
    targetOptions.gpuArch = opts.gpuArch;
    targetOptions.cudaPath = opts.cudaPath;
    if (Error err = lookupTarget(opts.target)->checkAvailable(targetOptions)) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
  }

  if (opts.printLinkFlags) {
    std::vector<std::string> flags =
        runtimeLinkFlags(findRuntimeLib(opts, argv[0]));
    outs() << quoteCommand(flags) << "\n";
    return ExitSuccess;
  }
  if (opts.inputs.empty()) {
    driverError("no input files");
    return ExitFailure;
  }
  // Exported symbols are kina_<prefix><fn> and _mlir_ciface_<prefix><fn>,
  // and the header's results struct <prefix><fn>_results: the prefix must
  // keep them all C identifiers.
  if (!llvm::all_of(opts.symbolPrefix,
                    [](char c) { return llvm::isAlnum(c) || c == '_'; }) ||
      (!opts.symbolPrefix.empty() && llvm::isDigit(opts.symbolPrefix[0]))) {
    driverError("--symbol-prefix '" + opts.symbolPrefix +
                "' would make invalid C names: use letters, digits and '_', "
                "not starting with a digit");
    return ExitFailure;
  }

  StageTimer timer(opts.timeStages);
  TempFiles temps(opts.keepTemps);
  ToolRunner tools(opts.verbose);
  std::vector<std::string> kirInputs;
  bool link = false;
  for (const std::string &input : opts.inputs) {
    if (isKir(input))
      kirInputs.push_back(input);
    else
      link = true;
  }
  if (kirInputs.empty()) {
    driverError("no .kir input file");
    return ExitFailure;
  }
  // The C compiler's flags need a C compile or link, as clang says.
  if (!link)
    for (const std::string &f : opts.cFlagsAsWritten)
      reportDriverWarning("argument unused during compilation: '" + f +
                          "' (C compiler flags apply when kinac links an "
                          "executable)");

  int rc;
  if (opts.writeDeps && (link || kirInputs.size() > 1)) {
    driverError("-MD applies to the compilation of one .kir file");
    return ExitFailure;
  }
  if (opts.verifyDiagnostics && (link || kirInputs.size() > 1)) {
    driverError("--verify-diagnostics checks one .kir file at a time");
    return ExitFailure;
  }
  if (link) {
    if (opts.emit != "obj") {
      driverError("--emit=" + opts.emit +
                  " cannot be combined with C sources or objects to link");
      return ExitFailure;
    }
    if (Error err = checkNotAnInput(
            opts, opts.output.empty() ? "a.out" : opts.output)) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
    rc = linkExecutable(opts, argv[0], timer, temps, tools);
  } else if (kirInputs.size() > 1) {
    driverError("one .kir input at a time (or add C sources to link an "
                "executable)");
    return ExitFailure;
  } else {
    EmitStage stage = *parseStage(opts.emit);
    const std::string &input = kirInputs.front();
    std::string output = opts.output;
    if (output.empty()) {
      if (stage == EmitStage::Obj)
        output = stem(input) + ".o";
      else if (stage == EmitStage::Header)
        output = stem(input) + ".h";
      else if (stage == EmitStage::Manifest)
        output = stem(input) + ".json";
      else if (stage == EmitStage::Shared)
        output = stem(input) + ".so";
      else
        output = "-";
    }
    if (Error err = checkNotAnInput(opts, output)) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
    Compilation compilation(opts, timer, temps, tools);
    compilation.runtimeLib = findRuntimeLib(opts, argv[0]);
    std::optional<std::string> result = compilation.run(input, stage);
    rc = ExitFailure;
    if (opts.verifyDiagnostics) {
      // Verification only: the output is not written.
      rc = compilation.diagnosticsVerified ? ExitSuccess : ExitFailure;
    } else if (result) {
      if (Error err = writeResult(opts, input, output, *result, argv[0]))
        driverError(toString(std::move(err)));
      else
        rc = ExitSuccess;
    }
  }
  timer.print();
  if (rc != ExitSuccess && internalErrorReported())
    rc = kExitInternalError;
  return rc;
}

} // namespace kina
