//===- Target.h - Code-generation targets and their registry --------------===//
//
// A target is one folder `src/targets/<name>/` holding a Target object: its
// pass pipeline from MLIRGen's output (linalg on tensors, functions carrying
// their Kina signatures, kina/IRConventions.h) to the LLVM dialect, the
// runtime allocation function its code calls, and a check that the tools it
// needs are there. The driver looks a target up by `--target`; kina-opt
// registers each target's pipeline as `kina-<name>-pipeline` and each
// target's own passes (Target::registerPasses). Adding a
// target is adding its folder and one call in registerAllTargets()
// (src/targets/Registry.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TARGET_H
#define KINA_TARGET_H

#include "kina/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace kina {

/// Options every target's pipeline receives (from the driver, or from the
/// options of the `kina-<name>-pipeline` pass pipeline in kina-opt). A
/// target ignores the options that are not its own.
struct TargetOptions {
  /// -O0..-O3: 0 disables the fusion and cleanup passes, 1..3 enable them.
  unsigned optLevel = 2;
  /// `--symbol-prefix`. MLIRGen already applied it to the function names
  /// and the passes read names from the IR; kept for targets that name
  /// symbols of their own.
  std::string symbolPrefix;
  /// The compiler and ABI version recorded in the object and checked by its
  /// entries against the runtime's (Passes.h, VersionStamp).
  VersionStamp stamp;
  /// cpu: `--mcpu`, the LLVM processor name llc generates code for (empty:
  /// the generic processor). Used by the driver's opt and llc steps; the
  /// pipeline adds kina-math-approximation only for a processor with FMA.
  std::string mcpu;
  /// cpu: the object will hold a version of every function per x86-64
  /// level (cpuMultiversioned: no --mcpu, x86-64, -O1 and above;
  /// src/driver/Multiversion.cpp).
  /// The pipeline then generates for the levels that matter for speed
  /// (x86-64-v3 and -v4) rather than the generic processor: 256-bit vectors
  /// and kina-math-approximation (its `fma` is an instruction there; in the
  /// baseline x86-64 version, a libm call).
  bool multiversioned = false;
  /// cpu: the vector width in bits the pipeline generates for (128, 256 or
  /// 512); 0: the processor's (processorVectorBits of `mcpu`), or 256 when
  /// `multiversioned`. The driver sets 512 for the x86-64-v4 version of a
  /// multiversioned object, whose functions it builds with a pipeline of
  /// their own (src/driver/Multiversion.cpp).
  unsigned vectorBits = 0;
  /// cuda: `--gpu-arch`, the SM architecture.
  std::string gpuArch = "sm_90";
  /// cuda: `--cuda-path` (else CUDA_PATH, else /usr/local/cuda).
  std::string cudaPath;
  /// cuda: `--allow-tf32`, TF32 tensor-core math for f32 matmuls.
  bool allowTf32 = false;
  /// cuda: `--gpu-matmul`, the route of float matmuls: "cublaslt" (the
  /// runtime's cuBLASLt call, the kernel as fallback; the default) or
  /// "kernel" (the generated kernel only), docs/cuda.md.
  std::string gpuMatmul = "cublaslt";
  /// Tuned schedules (`--tuning-cache`, `--autotune`; kina/Tuning.h): cpu's
  /// kina-matmul-kernel reads the "cpu.matmul" schedule of each matmul,
  /// cuda's mappers the "cuda.*" schedules of each kernel (kina/Tuning.h).
  /// Null or empty: every pass uses its defaults.
  std::shared_ptr<const TuningParameters> tuning;
  /// cuda: when set, each mapper appends the keys it looked up (the
  /// module's tunable kernels, as mapped; kinac's --autotune and
  /// --tuning-cache read them). Null: nothing is recorded.
  std::shared_ptr<TuningSites> tuningSites;
  /// Where a target's pipeline may stop early for an `--emit` stage of its
  /// own (cuda: `mlir-gpu`, the outlined kernels; `ptx`, the kernels
  /// compiled to PTX, kept in `gpu.binary` ops); empty: the whole pipeline.
  std::string stopAfter;
};

/// A code-generation target: one folder src/targets/<name>/ that registers
/// one of these at start-up (registerAllTargets()).
class Target {
public:
  virtual ~Target();
  /// The `--target` name: "cpu", "cuda".
  virtual llvm::StringRef name() const = 0;
  /// One line for --help and the registry's listings.
  virtual llvm::StringRef description() const = 0;
  /// Dialects the pipeline needs loaded (gpu, nvvm, ...).
  virtual void getDependentDialects(mlir::DialectRegistry &) const {}
  /// Registers the target's own passes (those it declares in its folder's
  /// TableGen file, e.g. src/targets/cuda/CudaPasses.td) with MLIR's pass
  /// registry, so that mlir-opt-style tools (kina-opt) run each alone. The
  /// shared passes (kina/Passes.h) are registered by registerKinaPasses().
  virtual void registerPasses() const {}
  /// Appends the whole pipeline from MLIRGen's output (linalg on tensors,
  /// functions carrying their Kina signatures as attributes) to the LLVM
  /// dialect, ready for mlir-translate, to `pm` (anchored on
  /// `builtin.module`). The same function is registered as the named
  /// pipeline `kina-<name>-pipeline` for kina-opt.
  virtual void buildPipeline(mlir::OpPassManager &pm,
                             const TargetOptions &options) const = 0;
  /// The pipeline cut into named stages that kinac runs (and times, for
  /// --time-stages) one after the other; together they are buildPipeline's
  /// passes. Default: one stage, "pipeline". `options.stopAfter` may end
  /// the list early.
  virtual llvm::SmallVector<std::string>
  stageNames(const TargetOptions &options) const {
    (void)options;
    return {"pipeline"};
  }
  /// Appends the passes of the stage `stage` (one of stageNames()) to `pm`.
  virtual void buildStage(mlir::OpPassManager &pm, const TargetOptions &options,
                          llvm::StringRef stage) const {
    (void)stage;
    buildPipeline(pm, options);
  }
  /// Name of the runtime allocation function the target's allocations call
  /// (kHostAllocFunction / kGpuAllocFunction).
  virtual llvm::StringRef allocFunction() const = 0;
  /// Checks that the target can be used at all (cuda: the CUDA Toolkit's
  /// ptxas is found); failure is a `kinac: error:` for the user.
  virtual llvm::Error checkAvailable(const TargetOptions &) const {
    return llvm::Error::success();
  }
};

/// The registered target named `name`, or nullptr if there is none.
/// Whether a cpu build at `optLevel` for `mcpu` (empty: none given) is
/// multiversioned, one version per x86-64 level with a dispatcher per
/// exported symbol (src/driver/Multiversion.cpp): at -O1 and above, without
/// --mcpu, when the default target triple (the host's) is x86-64. kinac and
/// `kina-opt --kina-cpu-pipeline` both decide with this.
bool cpuMultiversioned(unsigned optLevel, llvm::StringRef mcpu);

const Target *lookupTarget(llvm::StringRef name);

/// Every registered target, in registration order (cpu first).
llvm::ArrayRef<const Target *> allTargets();

/// The registered targets' names, comma-separated ("cpu, cuda"), for
/// messages listing the known targets.
std::string knownTargetNames();

/// Adds `target` to the registry (the registry owns it). A second target of
/// the same name is an error of the program (assertion).
void registerTarget(std::unique_ptr<Target> target);

/// Registers every target of this build (src/targets/*/). Idempotent;
/// kinac and kina-opt call it before looking a target up.
void registerAllTargets();

/// Registers, for every registered target, the pass pipeline
/// `kina-<name>-pipeline` with the options of TargetOptions (opt-level,
/// symbol-prefix, abi-version, compiler, mcpu, gpu-arch, cuda-path,
/// allow-tf32), for mlir-opt-style tools (kina-opt). Call after
/// registerAllTargets(); idempotent.
void registerTargetPipelines();

/// Registers every registered target's own passes (Target::registerPasses:
/// cuda's kina-gpu-map-matmul, kina-gpu-map-reductions,
/// kina-gpu-map-elementwise) for mlir-opt-style tools (kina-opt). Call
/// after registerAllTargets(); idempotent.
void registerTargetPasses();

} // namespace kina

#endif // KINA_TARGET_H
