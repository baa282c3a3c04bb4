//===- Passes.h - kinac's own passes between MLIR's upstream ones ---------===//
//
// The passes that make compiled code follow the Kina ABI (spec, "ABI"):
//  - buffer ownership: after one-shot bufferization, every function returns
//    freshly allocated buffers the caller owns, temporaries are released after
//    their last use, each allocation, call result and run-time shape check is
//    followed by an early return (null result descriptors, temporaries freed)
//    on failure;
//  - entry points: the status entry `int32_t kina_<fn>(results..., args...)`
//    that validates the caller's descriptors against the Kina signature;
//  - lowering to the LLVM dialect, where every `memref.alloc` becomes a call
//    of the runtime's unranked allocation function and `memref.dealloc` a
//    call of `runtime_free`.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_PASSES_H
#define KINA_PASSES_H

#include "kina/AST.h"
#include "kina/abi.h"

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace kina {

/// Runs on a bufferized module (functions of memrefs, one block each, as
/// MLIRGen and one-shot bufferization produce). See the file comment above.
std::unique_ptr<mlir::Pass> createBufferOwnershipPass();

/// What an object records about the compiler that wrote it: the string
/// global `__kina_version_stamp` ("<compiler>, Kina ABI <abiVersion>", seen
/// by `strings`), and the ABI version each entry passes to the runtime's
/// `kina_rt_check_version` on its first call (kina/runtime.h).
struct VersionStamp {
  /// The KINA_ABI_VERSION (kina/abi.h) the object is compiled for.
  int32_t abiVersion = KINA_ABI_VERSION;
  /// The compiler and its version, e.g. "kinac 0.1.0".
  std::string compiler = "kinac";
};

/// Adds `func.func @kina_<prefix><fn>(!llvm.ptr..., !llvm.ptr...) -> i32`
/// for each exported function of `module` (the checked Kina AST gives the
/// parameter names and symbolic dims, which MLIR types do not carry). Runs
/// on the bufferized module, after the buffer-ownership pass. `module` must
/// outlive the pass. Each entry checks `stamp` against the runtime once per
/// process (an internal flag `__kina_version_checked` per object). With
/// `gpu` (the cuda target), the entry also calls `kina_rt_gpu_enter` before
/// the argument checks, `kina_rt_gpu_check_argument` for each argument's
/// data (null when it has no elements) and `kina_rt_gpu_exit` after the
/// call, returning their non-zero statuses (runtime.h; results freed).
std::unique_ptr<mlir::Pass> createEntryPointsPass(const Module *module,
                                                  std::string symbolPrefix,
                                                  VersionStamp stamp = {},
                                                  bool gpu = false);

/// Rewrites each `linalg.matmul` over row-major f32 or f64 memrefs into a
/// register-tiled, vectorised micro-kernel (scf loops, vector.load/fma/
/// store; src/lowering/MatmulKernel.cpp), with the columns left below one
/// vector as a smaller `linalg.matmul`. Runs on the bufferized module before
/// `linalg-to-loops`; same results as the scalar loops up to fused
/// multiply-adds.
std::unique_ptr<mlir::Pass> createMatmulKernelPass();

/// Rewrites each `memref.expand_shape` of a rank-1, unit-stride memref as
/// `memref.reinterpret_cast` of its base buffer with row-major strides, as
/// `expand-strided-metadata` would, which in MLIR 22 crashes when one
/// reassociation group holds several dynamic dims
/// (src/lowering/Workarounds.cpp). Runs before that pass.
std::unique_ptr<mlir::Pass> createExpandShapePass();

/// Replaces each `tensor.collapse_shape` and `tensor.expand_shape` whose
/// source has a static 0 dim by a `tensor.empty` of its result's sizes: MLIR
/// 22's bufferization turns a collapse of `?x0` into a memref op its own
/// verifier rejects (src/lowering/Workarounds.cpp). Runs just before
/// one-shot bufferization.
std::unique_ptr<mlir::Pass> createEmptyReshapePass();

/// MLIR's `linalg-fuse-elementwise-ops` with two fusions refused: a reshape
/// folded by expansion into an op of more than kMaxRank loops (the runtime
/// allocates at most rank 8), and a producer that reads its init fused
/// through a broadcasting map (src/lowering/Workarounds.cpp). Runs on
/// tensors, before bufferization, at -O1 and above.
std::unique_ptr<mlir::Pass> createElementwiseFusionPass();

/// MLIR's canonicalizer without the arith patterns that fold
/// `truncf(sitofp x)` into one `sitofp` (a single rounding where Kina's two
/// casts round twice; src/lowering/Workarounds.cpp). Use it for every
/// canonicalization of the pipeline.
std::unique_ptr<mlir::Pass> createCanonicalizerPass();

/// Lowers arith, math, cf, func, memref, vector, index and ub to the LLVM
/// dialect in one conversion, with allocations going to the runtime function
/// named `allocFunction` (`_mlir_ciface_runtime_host_alloc_unranked` for the
/// CPU target) and deallocations to `runtime_free`.
std::unique_ptr<mlir::Pass> createLowerToLLVMPass(std::string allocFunction);

/// Renames each Kina function's LLVM implementation `@f` to
/// `__kina_fn_<f>` with internal linkage, so only `kina_f` and
/// `_mlir_ciface_f` are exported. Runs on the LLVM-dialect module.
std::unique_ptr<mlir::Pass> createInternalizePass(const Module *module,
                                                  std::string symbolPrefix);

/// Name of the runtime's host (CPU target) allocation function.
inline constexpr const char *kHostAllocFunction =
    "_mlir_ciface_runtime_host_alloc_unranked";
/// Name of the runtime's CUDA-managed allocation function.
inline constexpr const char *kGpuAllocFunction =
    "_mlir_ciface_runtime_gpu_alloc_unranked";

} // namespace kina

#endif // KINA_PASSES_H
