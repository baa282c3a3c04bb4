//===- CudaPasses.h - The cuda target's passes and pipeline ---------------===//
//
// The cuda target (`kinac --target=cuda`, docs/cuda.md) lowers MLIRGen's
// linalg-on-tensors module like the cpu target up to the bufferized,
// ABI-complete module, then maps every linalg op and copy to a `gpu.launch`
// with the three mappers below (contractions, reductions, everything
// parallel), outlines the kernels into `gpu.module`s, lowers them to NVVM,
// compiles them with the CUDA Toolkit's ptxas into a fatbin embedded in the
// object (`gpu.binary`), and lowers the host code with the runtime's GPU
// allocation function.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TARGETS_CUDA_CUDAPASSES_H
#define KINA_TARGETS_CUDA_CUDAPASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <string>

namespace mlir {
class PassManager;
} // namespace mlir

namespace kina {
struct Module;
struct VersionStamp;
} // namespace kina

namespace kina::cuda {

/// `kina-gpu-map-matmul` (GpuMapMatmul.cpp): contraction generics (matmul,
/// batched, broadcast, rank-1) to 16x16 shared-memory tiled kernels.
std::unique_ptr<mlir::Pass> createGpuMapMatmulPass();

/// `kina-gpu-map-reductions` (GpuMapReductions.cpp): generics with
/// reduction loops to block-per-output kernels with a shared-memory tree.
std::unique_ptr<mlir::Pass> createGpuMapReductionsPass();

/// `kina-gpu-map-elementwise` (GpuMapElementwise.cpp): all-parallel generics
/// and memref.copy to grid-stride kernels; fails when a linalg op or copy
/// remains on the host.
std::unique_ptr<mlir::Pass> createGpuMapElementwisePass();

/// Where the cuda pipeline stops (the driver's --emit stages).
enum class CudaStage {
  Outlined, ///< --emit=mlir-gpu: kernels outlined into gpu.modules
  Ptx,      ///< --emit=ptx: gpu.binary holding PTX text (format isa)
  Full,     ///< the LLVM dialect with an embedded fatbin
};

/// The options of the cuda pipeline (driver: --gpu-arch, --cuda-path,
/// --allow-tf32).
struct CudaOptions {
  /// The SM the kernels are compiled for (`sm_90`, `sm_90a`, ...).
  std::string gpuArch = "sm_90";
  /// The CUDA Toolkit root holding bin/ptxas and nvvm/libdevice.
  std::string cudaPath;
  /// Allows TF32 for f32 matmuls (no effect yet: the generated matmul
  /// kernel computes in f32 on the CUDA cores).
  bool allowTf32 = false;
  CudaStage stage = CudaStage::Full;
};

/// The PTX feature string for `gpuArch` (LLVM's default, PTX 6.0, cannot
/// target sm_90 and aborts the process).
std::string ptxFeatures(llvm::StringRef gpuArch);

/// Resolves the CUDA Toolkit: `explicitPath`, else $CUDA_PATH, else
/// /usr/local/cuda; fails naming what was looked for when bin/ptxas is
/// missing there. Returns the toolkit root.
llvm::Expected<std::string> findCudaToolkit(llvm::StringRef explicitPath);

/// Checks `gpuArch` is an `sm_XX`/`sm_XXa`/`sm_XXf` processor the NVPTX
/// back end of the installed LLVM knows.
llvm::Error checkGpuArch(llvm::StringRef gpuArch);

/// Runs `stage` of a pipeline and returns its result (the driver records its
/// wall-clock time for --time-stages).
using StageTimer = std::function<mlir::LogicalResult(
    llvm::StringRef, llvm::function_ref<mlir::LogicalResult()>)>;

/// Runs the cuda pipeline on `module` (MLIRGen's output for `kinaModule`)
/// in place up to `options.stage`, in four timed stages: gpu-map (to
/// outlined kernels), gpu-nvvm, gpu-ptxas, host-llvm. `optLevel` 0 disables
/// fusion and cleanups; `instrument` is called with each stage's pass
/// manager before it runs; `timeStage` (may be empty) runs each stage.
mlir::LogicalResult
runCudaPipeline(mlir::ModuleOp module, const Module &kinaModule,
                unsigned optLevel, const std::string &symbolPrefix,
                const VersionStamp &stamp, const CudaOptions &options,
                const std::function<void(mlir::PassManager &)> &instrument,
                const StageTimer &timeStage);

} // namespace kina::cuda

#endif // KINA_TARGETS_CUDA_CUDAPASSES_H
