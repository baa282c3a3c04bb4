//===- DriverImpl.h - The pieces of the kinac driver ----------------------===//
//
// Private to the kina_driver library (src/driver/): the options of one run
// and the steps runDriver (Driver.cpp) takes. Options.cpp turns the command
// line into DriverOptions; Compilation.cpp runs one `.kir` file through the
// front end, the pipeline and the LLVM tools to an --emit stage;
// Outputs.cpp writes outputs atomically and keeps temporary files;
// DependencyFile.cpp writes -MD's Make rules; Link.cpp links executables
// (`kinac m.kir main.c -o app`) with the C compiler driver; Shared.cpp
// builds `--emit=shared` libraries; Diagnostics.cpp prints errors;
// ToolRunner.cpp runs external tools. Nothing here calls exit().
//
//===----------------------------------------------------------------------===//
#ifndef KINA_DRIVER_DRIVERIMPL_H
#define KINA_DRIVER_DRIVERIMPL_H

#include "Kernels.h"

#include "kina/Diagnostics.h"
#include "kina/Driver.h"
#include "kina/InternalError.h"
#include "kina/ToolRunner.h"
#include "kina/Tuning.h"
#include "kina/abi.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kina {
namespace driver {

// A private header of the driver's sources, which are written against
// LLVM's support library throughout.
using namespace llvm;

//===----------------------------------------------------------------------===//
// Options (Options.cpp)
//===----------------------------------------------------------------------===//

/// Everything one run of kinac was asked to do: the command line's options,
/// with the defaults `kinac --help` shows.
struct DriverOptions {
  std::vector<std::string> inputs;
  std::string output;
  std::string emit = "obj";
  unsigned optLevel = 2;
  /// Whether -O was given (it then also overrides an -O in $CFLAGS).
  bool optExplicit = false;
  std::string target = "cpu";
  /// cuda: --gpu-arch (the SM), --cuda-path (else CUDA_PATH, else
  /// /usr/local/cuda), --allow-tf32 (docs/cuda.md).
  std::string gpuArch = "sm_90";
  std::string cudaPath;
  bool allowTf32 = false;
  /// cuda: --gpu-matmul, "cublaslt" (default) or "kernel" (docs/cuda.md).
  std::string gpuMatmul = "cublaslt";
  /// --mcpu: the processor llc generates code for (llc's -mcpu); empty for
  /// llc's default, the generic processor of the host's architecture.
  std::string mcpu;
  std::string symbolPrefix;
  std::string mlirTranslate;
  /// --opt: LLVM's `opt`, which runs LLVM's -O1/-O2/-O3 pipeline on the
  /// translated module before llc (not run at -O0).
  std::string opt;
  std::string llc;
  std::string runtimeLib;
  bool verbose = false;
  bool keepTemps = false;
  bool timeStages = false;
  /// --stats=text|json (empty: off), --stats-file (empty: stderr), and
  /// --stats-shape's symbolic dim sizes (docs/inspecting.md).
  std::string stats;
  std::string statsFile;
  std::string statsShape;
  ShapeBindings statsShapes;
  /// --autotune, --tuning-cache FILE, --tune-shape (symbolic dim sizes to
  /// measure at), --autotune-budget SECONDS (0: no bound), docs/autotune.md.
  bool autotune = false;
  std::string tuningCache;
  std::string tuneShape;
  ShapeBindings tuneShapes;
  double autotuneBudget = 0;
  /// cuda: --autotune-plan DIR (build the candidates and DIR/plan.json,
  /// measure nothing), --tuning-results FILE (import kina-run
  /// --tune-plan's results into --tuning-cache and build with them),
  /// --gpu-model NAME (the GPU cuda cache entries must have been measured
  /// on; empty: any of --gpu-arch). docs/autotune.md.
  std::string autotunePlan;
  std::string tuningResults;
  std::string gpuModel;
  /// Schedules that replace the cache's (--autotune's candidates and its
  /// result); null: the cache's, if any.
  std::shared_ptr<const TuningParameters> tuningOverride;
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

/// Parses kinac's command line into `opts`: takes out the C-compiler-style
/// flags CLI11 cannot parse (-MD..., and the C driver's -I -D -l ...),
/// spells the aliases (`-shared`, a bare `-O`) as the options they stand
/// for, runs CLI11, and checks the values (--mcpu, the forced internal
/// error). Returns the exit code when the run ends here (--help, --version:
/// 0, after printing; an error: 1, after reporting it), std::nullopt when
/// it goes on.
std::optional<int> parseCommandLine(int argc, char **argv, DriverOptions &opts);

/// The stage `--emit=NAME` names; std::nullopt for an unknown name.
std::optional<EmitStage> parseStage(StringRef s);

/// Whether `path` is a Kina IR module (by its `.kir` extension).
bool isKir(StringRef path);

/// The final component of `path` without its extension (`m` for `a/m.kir`).
std::string stem(StringRef path);

//===----------------------------------------------------------------------===//
// Diagnostics of the driver (Diagnostics.h)
//===----------------------------------------------------------------------===//

/// Prints a driver-level error the way clang does.
inline void driverError(const Twine &message) { reportDriverError(message); }

//===----------------------------------------------------------------------===//
// Stage times and temporary files
//===----------------------------------------------------------------------===//

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
  /// The stages timed so far: name and milliseconds, in order.
  const std::vector<std::pair<std::string, double>> &times() const {
    return stages;
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

//===----------------------------------------------------------------------===//
// Outputs (Outputs.cpp)
//===----------------------------------------------------------------------===//

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
OutputTarget resolveOutput(StringRef path);
/// Writes `bytes` to a temporary file beside `path` (resolveOutput), or
/// keeps them for a special file; nothing is replaced yet.
Expected<StagedOutput> stageOutput(StringRef path, StringRef bytes);
/// Puts the staged output in place: renames the temporary file over the
/// target (removing it on failure), or writes the bytes into the
/// non-regular file.
Error commitOutput(const StagedOutput &staged);
/// Removes a staged output that will not be committed.
void discardOutput(const StagedOutput &staged);
/// Writes `bytes` to `path` ("-" is standard output): an existing regular
/// file is replaced only by a complete one (stageOutput).
Error writeOutput(StringRef path, StringRef bytes);
/// The bytes of the file `path`.
Expected<std::string> readFile(StringRef path);
/// Refuses an output (or -MF dependency file) that is one of the inputs,
/// which writing would destroy (as gcc: "input file is the same as output
/// file"). Paths that do not exist yet cannot be inputs.
Error checkNotAnInput(const DriverOptions &opts, const std::string &output);

//===----------------------------------------------------------------------===//
// Dependency files (DependencyFile.cpp)
//===----------------------------------------------------------------------===//

/// Writes a compilation's output `bytes` to `output` and, with -MD, its
/// dependency file: the dependency file is staged first, so if either
/// cannot be written neither existing file is replaced (a failed run must
/// not leave a fresh-looking output for make to trust). `argv0` locates
/// kinac, which the rule names.
Error writeResult(const DriverOptions &opts, const std::string &input,
                  const std::string &output, StringRef bytes,
                  const char *argv0);

//===----------------------------------------------------------------------===//
// Tuning caches (TuningCache.cpp) and the search (Autotune.cpp)
//===----------------------------------------------------------------------===//

/// One tunable op (or, for cuda, kernel class) of a module, as a cache
/// entry describes it: its key (tuningKey, or the class's space name), its
/// schedule space, the exported function holding it (empty for a class),
/// its operands' MLIR types on tensors ("tensor<?x64xf32>, ..."), its
/// element type, and the symbolic dims of the function's arguments.
struct TunableOp {
  std::string key;
  std::string space;
  std::string function;
  bool exported = false;
  bool unnamedDims = false; // an argument of the function has a '?' dim
  std::string shapes;
  std::string dtype;
  std::vector<std::string> symbols;
};

/// What a cache entry must match besides its op: the target, the processor
/// (cpu: LLVM's host CPU name; cuda: the --gpu-arch the kernels are built
/// for), the host's vector features that matter (cpu: "+avx,+avx2,..."),
/// and --mcpu as resolved ("" for the generic processor).
struct TuningIdentity {
  std::string target, processor, features, mcpu;
  /// cuda: the GPU's name as the driver reports it ("NVIDIA H200"): where
  /// an entry was measured; in a build's identity, --gpu-model (empty:
  /// entries of any GPU of the processor apply).
  std::string gpu;
};

/// The tunable ops of `module` (MLIRGen's output, linalg on tensors) for
/// opts' target: cpu, each f32/f64 linalg.matmul of rank 2 (space
/// "cpu.matmul") and each Kina statement computing a reduction (its first
/// linalg.generic with a reduction loop; space "cpu.vectorize"); cuda, the
/// kernel class "cuda.elementwise" only (findCudaTunables finds the
/// kernels). `ast` gives
/// the functions' signatures (exported or not, symbolic dims).
std::vector<TunableOp> findTunables(mlir::ModuleOp module, const Module &ast,
                                    const DriverOptions &opts);

/// cuda: the tunable kernels of `module` as the mappers met them (one
/// run of the cuda target's gpu-map stage on a copy, recording the keys
/// looked up: TargetOptions::tuningSites), plus the kernel class
/// "cuda.elementwise"; `ast` gives the functions' signatures. Empty when
/// the stage fails (the build then reports it).
std::vector<TunableOp> findCudaTunables(mlir::ModuleOp module,
                                        const Module &ast,
                                        const DriverOptions &opts);

/// The located error of a JSON file `path` (contents `text`) that
/// nlohmann/json failed to parse at byte `byte` (1-based) with message
/// `what`: "PATH:LINE:COL: malformed KIND: <what after the position>".
Error jsonSyntaxError(const std::string &path, const std::string &text,
                      size_t byte, std::string what, const char *kind);

/// The identity of this build (opts' target, --mcpu, --gpu-arch, and this
/// machine's processor for cpu).
TuningIdentity currentIdentity(const DriverOptions &opts);

/// One entry of a tuning cache (docs/autotune.md for the JSON fields).
struct TuningCacheEntry {
  std::string module, key, space;
  int64_t spaceVersion = 0;
  std::string function, shapes, dtype;
  ShapeBindings bindings;
  TuningIdentity identity;
  Schedule schedule;
  double medianSeconds = 0, defaultSeconds = 0;
  std::string generator;
};

/// A tuning cache file: read (load), chosen from (select), updated and
/// written back atomically (save).
class TuningCache {
public:
  /// Reads `path`. A missing file is an empty cache when `mayBeMissing`
  /// (--autotune creates it), else an error; malformed JSON is an error at
  /// its line and column, a wrong field an error naming the entry and the
  /// field. A file of another format version is ignored with a warning
  /// (an error when `forWriting`: kinac would overwrite it).
  static Expected<TuningCache> load(const std::string &path, bool mayBeMissing,
                                    bool forWriting);

  /// The schedules of `ops` (module `module`) that this cache holds for
  /// `identity`; every entry for one of these ops that is stale (other
  /// shapes, dtype, bindings than `tuneShapes` gives, schedule version) or
  /// foreign (other processor, features or --mcpu) is ignored with a
  /// warning naming the file and the entry, when no entry matches the op.
  TuningParameters select(const std::string &module,
                          const std::vector<TunableOp> &ops,
                          const TuningIdentity &identity,
                          const ShapeBindings &tuneShapes) const;

  /// Adds `entry`, replacing an entry for the same op, identity, shapes,
  /// dtype and bindings.
  void put(TuningCacheEntry entry);

  /// Writes the cache to its path: a temporary file renamed over it.
  Error save() const;

  const std::string &path() const { return file; }
  const std::vector<TuningCacheEntry> &entries() const { return list; }

private:
  std::string file;
  std::vector<TuningCacheEntry> list;
};

/// `kinac m.kir --autotune`: measures candidate schedules of every tunable
/// op of `input` (compiled as shared libraries, each timed by a kina-run
/// process on random inputs at --tune-shape's sizes), writes the fastest
/// into --tuning-cache (if given) and returns them for the build. Errors
/// (no tunable op is not one) were reported; returns null then.
std::shared_ptr<const TuningParameters>
autotune(const DriverOptions &opts, const std::string &input, const char *argv0,
         TempFiles &temps, const ToolRunner &tools);

/// `kinac m.kir --target=cuda --autotune --autotune-plan DIR`: builds each
/// candidate schedule of each tunable kernel as a shared library in DIR
/// and writes DIR/plan.json naming function, shapes, key and schedule
/// (kina-run --tune-plan measures it; src/kina-run/TunePlan.h); false
/// (reported) on an error. Candidates whose library is byte-identical to
/// one of the same kernel's are left out (the schedule changed nothing).
bool buildTuningPlan(const DriverOptions &opts, const std::string &input,
                     const std::string &dir, const char *argv0,
                     TempFiles &temps, const ToolRunner &tools);

/// `--tuning-results FILE`: the fastest measured schedule of each kernel
/// of results.json (kina-run --tune-plan's), recorded in --tuning-cache
/// (if given) under the GPU the results name, and returned for the build.
/// Malformed results are errors naming the file and the field; results of
/// another module or --gpu-arch are errors; null (reported) on an error.
std::shared_ptr<const TuningParameters>
importTuningResults(const DriverOptions &opts, const std::string &input,
                    const std::string &resultsPath, TempFiles &temps,
                    const ToolRunner &tools);

//===----------------------------------------------------------------------===//
// Compilation of one module (Compilation.cpp, Shared.cpp)
//===----------------------------------------------------------------------===//

/// One compilation of a `.kir` file up to a stage; returns the bytes of the
/// requested output.
class Compilation {
public:
  Compilation(const DriverOptions &opts, StageTimer &timer, TempFiles &temps,
              const ToolRunner &tools)
      : opts(opts), timer(timer), temps(temps), tools(tools) {}

  /// Compiles `input` to `stage`. On failure, diagnostics were printed.
  std::optional<std::string> run(const std::string &input, EmitStage stage);

  /// `--emit=shared` of several modules: one library, one merged manifest
  /// (Shared.cpp). On failure, diagnostics were printed.
  std::optional<std::string>
  buildSharedLibrary(const std::vector<std::string> &inputs);

  /// The runtime archive linked into shared libraries (EmitStage::Shared).
  std::string runtimeLib;

  /// With --verify-diagnostics: whether the last run() emitted exactly the
  /// diagnostics its source's annotations expect.
  bool diagnosticsVerified = false;

  /// With --emit=dot or --stats: the kernels the pipeline produced (set by
  /// the last run() that ran the pipeline).
  std::optional<KernelReport> kernels;

  /// --tuning-cache, read once by the caller; null: none.
  const TuningCache *tuningCache = nullptr;
  /// The module name and tunable ops of the last run() past MLIRGen.
  std::string moduleName;
  std::vector<TunableOp> tunables;

private:
  /// A multiversioned object's x86-64-v4 version as LLVM-dialect text (the
  /// pipeline with 512-bit vectors), set by generate() for the stages the
  /// tools make; empty otherwise.
  std::string wideLlvmDialect;
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
  std::optional<std::string>
  mergeManifests(const std::vector<std::string> &inputs,
                 const std::vector<std::string> &manifests);
  /// cuda --stats: the PTX of each kernel module (gpu.module name, text) of
  /// `module` (gpu.binary ops of format isa) and ptxas -v's figures.
  bool addResourceUsage(mlir::ModuleOp module);
};

//===----------------------------------------------------------------------===//
// Processor levels (Multiversion.cpp)
//===----------------------------------------------------------------------===//

/// One x86-64 micro-architecture level an object carries a version for:
/// LLVM's processor name ("x86-64-v3") and the psABI level number (1..4)
/// that kina_rt_cpu_level() reports for a host able to run it.
struct CpuLevel {
  std::string name;
  int level;
};

/// The levels of a multiversioned object, ascending: x86-64 (1),
/// x86-64-v3 (3), x86-64-v4 (4).
const std::vector<CpuLevel> &multiversionLevels();

/// Whether this run multiversions: the cpu target at -O1 and above with no
/// --mcpu, generating code for x86-64 (the default target triple).
bool wantsMultiversioning(const DriverOptions &opts);

/// Rewrites `m` in place: each function definition gets one internal
/// version per level of `levels` (ascending, the first runnable anywhere)
/// and each exported definition becomes a dispatcher over its versions,
/// resolved on the first call with kina_rt_cpu_level() (see
/// Multiversion.cpp). A level's version is a clone of the definition, or,
/// where `own` holds a module for that level (same index as `levels`; in
/// `m`'s LLVMContext; the same source through a pipeline of its own), that
/// module's definition of the same name, linked in (own[l] is consumed).
/// An error only if the result does not verify or an own module lacks an
/// exported function (kinac's bug).
Error multiversionModule(llvm::Module &m, ArrayRef<CpuLevel> levels,
                         MutableArrayRef<std::unique_ptr<llvm::Module>> own = {});

/// multiversionModule on the LLVM IR file `inPath`, written to `outPath`;
/// ownPaths[l], when not empty, is the LLVM IR file of level l's own module.
Error multiversionFile(StringRef inPath, StringRef outPath,
                       ArrayRef<CpuLevel> levels,
                       ArrayRef<std::string> ownPaths = {});

//===----------------------------------------------------------------------===//
// LLVM IR files of the in-process rewrites (LlvmIrFiles.cpp)
//===----------------------------------------------------------------------===//

/// The module of the LLVM IR file `path` (a tool's output) in `ctx`; an
/// internal error naming `producer` ("mlir-translate", "opt") and the
/// parser's message when it does not parse (kinac's bug).
Expected<std::unique_ptr<llvm::Module>>
readLlvmIrFile(StringRef path, LLVMContext &ctx, StringRef producer);

/// Writes `m` as LLVM IR text to `path` (writeOutput); an error when the
/// file cannot be written.
Error writeLlvmIrFile(const llvm::Module &m, StringRef path);

//===----------------------------------------------------------------------===//
// Vector math through libmvec (VectorMath.cpp)
//===----------------------------------------------------------------------===//

/// Rewrites `m` in place: every call of `llvm.{sin,cos,exp,log,pow}` on a
/// vector of 2 or more f32 or f64 lanes becomes calls of glibc's libmvec
/// (`_ZGVdN8v_sinf`), the widest variant the calling function's processor
/// runs ("target-cpu"/"target-features", else `defaultCpu`, else
/// x86-64), the vector split to its width and padded with 1.0 lanes.
/// Returns the number of calls replaced. `-lm` links libmvec on glibc.
unsigned mapVectorMath(llvm::Module &m, StringRef defaultCpu);

/// Whether the LLVM IR text `llvmIr` may hold a call mapVectorMath
/// replaces (a cheap test that spares the parse when it has none).
bool mayNeedVectorMath(StringRef llvmIr);

/// mapVectorMath on the LLVM IR file `inPath`, written to `outPath`; an
/// error when the file does not parse or the result does not verify
/// (kinac's bug), or `outPath` cannot be written.
Error mapVectorMathFile(StringRef inPath, StringRef outPath,
                        StringRef defaultCpu);

/// Checks --mcpu against the processors LLVM knows for the default target
/// triple and replaces "native" with the name of this machine's processor.
Error resolveProcessor(std::string &mcpu);

//===----------------------------------------------------------------------===//
// Linking (Link.cpp)
//===----------------------------------------------------------------------===//

/// libkina_runtime.a: --runtime-lib, else ../lib next to kinac (build and
/// install trees), else the path configured at build time.
std::string findRuntimeLib(const DriverOptions &opts, const char *argv0);
/// kina-run, which --autotune measures candidates with: beside kinac, else
/// the one built with it, else "kina-run" (PATH).
std::string findKinaRun(const char *argv0);
/// The flags a program linking compiled Kina objects needs after them: the
/// runtime archive `runtimeLib`, then the libraries it needs.
std::vector<std::string> runtimeLinkFlags(const std::string &runtimeLib);
/// The system compiler driver that links: its path and the arguments that
/// come with it.
struct CompilerDriver {
  std::string path;
  std::vector<std::string> args; // argv[0] (the name) and $CC's own words
};

/// `$CC` if set, else `cc`, looked up on PATH. As make does, $CC may hold
/// words after the program (`gcc -m32`, `ccache gcc`), split at white space.
Expected<CompilerDriver> findCompilerDriver();
/// `kinac a.kir [b.kir] main.c [x.o] -o app`: compiles each module, writes
/// the headers into a temporary include directory and links with the C
/// compiler driver. Returns the exit code; errors were reported.
int linkExecutable(const DriverOptions &opts, const char *argv0,
                   StageTimer &timer, TempFiles &temps,
                   const ToolRunner &tools);

} // namespace driver
} // namespace kina

#endif // KINA_DRIVER_DRIVERIMPL_H
