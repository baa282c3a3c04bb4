//===- CudaPasses.h - The cuda target's passes and pipeline ---------------===//
//
// The passes and helpers of the cuda target (CudaTarget.cpp,
// `kinac --target=cuda`, docs/cuda.md). The target lowers MLIRGen's
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

#include "kina/Tuning.h"

#include "mlir/Pass/Pass.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace kina::cuda {

// The kernel mappers, declared in CudaPasses.td (TableGen writes
// their create functions here), in the order the pipeline runs them:
//  - `kina-gpu-map-attention` (GpuMapAttention.cpp, -O1 and up): attention
//    written out (matmul, the scores' elementwise ops, softmax, matmul;
//    bf16/f16) to one flash-attention kernel on mma.sync steps;
//  - `kina-gpu-map-row-chains` (GpuMapRowChains.cpp,
//    createGpuMapRowChainsPass()): a run of ops over small static rows
//    with at least one small matmul (an MLP's forward) to one
//    warp-per-row kernel, the rows in workgroup memory;
//  - `kina-gpu-map-matmul` (GpuMapMatmul.cpp, createGpuMapMatmulPass(),
//    options `allow-tf32` and `cublaslt`): float contraction generics to a
//    call of the runtime's cuBLASLt route with a kernel as fallback, the
//    others (matmul, batched, broadcast, rank-1) to 16x16 shared-memory
//    tiled kernels;
//  - `kina-gpu-map-rows` (GpuMapRows.cpp, createGpuMapRowsPass()): a run
//    of row reductions with their elementwise producers and consumers
//    (softmax, the norms) to one block-per-row kernel;
//  - `kina-gpu-map-reductions` (GpuMapReductions.cpp,
//    createGpuMapReductionsPass()): generics with reduction loops to
//    block-per-output kernels with a shared-memory tree;
//  - `kina-gpu-map-elementwise` (GpuMapElementwise.cpp,
//    createGpuMapElementwisePass()): all-parallel generics and memref.copy
//    to grid-stride kernels; fails when a linalg op or copy remains on the
//    host;
// and `kina-gpu-host-sync` (GpuHostSync.cpp, createGpuHostSyncPass()): a
// call of kina_rt_gpu_synchronize() before each host read of a buffer
// kernels may write.
#define GEN_PASS_DECL
#include "kina/CudaPasses.h.inc"

/// Registers the four passes with MLIR's pass registry
/// (registerKinaCudaPasses(), generated), so that mlir-opt-style tools
/// (kina-opt) run each alone; the cuda target's registerPasses() calls it.
#define GEN_PASS_REGISTRATION
#include "kina/CudaPasses.h.inc"

/// Tuned schedules for the mappers (kina/Tuning.h, spaces "cuda.*"): the
/// table (null: defaults) and where to record the keys looked up (null:
/// nothing recorded). Shared with the driver's TargetOptions.
struct CudaTuning {
  std::shared_ptr<const TuningParameters> params;
  std::shared_ptr<TuningSites> sites;
  /// schedule() of kina/Tuning.h with this table and record.
  Schedule of(mlir::Operation *op, llvm::StringRef kind, llvm::StringRef space,
              llvm::StringRef classKey = "") const {
    return schedule(params.get(), sites.get(), op, kind, space, classKey);
  }
};

/// The mappers with tuned schedules (the generated create functions above
/// use the defaults): `rows@` keys "cuda.rows", `reduction@` keys
/// "cuda.reduction", `elementwise@` keys (then the class key
/// "cuda.elementwise", then the block-size option) "cuda.elementwise",
/// `matmul@` keys of the cuBLASLt route "cuda.matmul".
std::unique_ptr<mlir::Pass>
createGpuMapMatmulPass(const GpuMapMatmulPassOptions &options,
                       CudaTuning tuning);
std::unique_ptr<mlir::Pass> createGpuMapRowsPass(CudaTuning tuning);
std::unique_ptr<mlir::Pass> createGpuMapReductionsPass(CudaTuning tuning);
std::unique_ptr<mlir::Pass>
createGpuMapElementwisePass(const GpuMapElementwisePassOptions &options,
                            CudaTuning tuning);

/// The SM number of `gpuArch` ("sm_90a" -> 90; 0 when it has none).
unsigned smVersion(llvm::StringRef gpuArch);

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

/// Checks that the ptxas of the CUDA Toolkit at `toolkitRoot` accepts
/// `gpuArch` as its --gpu-name: reads the allowed values that `ptxas
/// --help` lists (CUDA 13's ptxas, for one, no longer knows sm_50 to
/// sm_72, which LLVM's NVPTX back end still does). An error naming the
/// toolkit and the SMs it supports when it does not; success when it does
/// or when the list cannot be read (ptxas then reports for itself).
llvm::Error checkPtxasArch(llvm::StringRef toolkitRoot,
                           llvm::StringRef gpuArch);

} // namespace kina::cuda

#endif // KINA_TARGETS_CUDA_CUDAPASSES_H
