//===- Passes.h - kinac's own passes between MLIR's upstream ones ---------===//
//
// The passes every target's pipeline shares (src/passes/, one file each;
// docs/architecture.md gives their order). They read what they need from
// the IR (kina/IRConventions.h), never from the front end's AST, so each
// runs alone in `kina-opt`. The passes that make compiled code follow the
// Kina ABI (spec, "ABI"):
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

#include "kina/abi.h"

#include "mlir/Pass/Pass.h"

#include <memory>
#include <string>

namespace kina {

/// `kina-read-only-arguments`: marks every argument of every function with a
/// body `bufferization.writable = false` (arguments are the caller's memory:
/// one-shot bufferization must copy rather than write them). Runs on
/// MLIRGen's module on tensors, before one-shot bufferization.
std::unique_ptr<mlir::Pass> createReadOnlyArgumentsPass();

/// `kina-buffer-ownership`: runs on a bufferized module (functions of
/// memrefs, one block each, as MLIRGen and one-shot bufferization produce).
/// See the file comment above.
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

/// `kina-entry-points`: adds `func.func @kina_<f>(!llvm.ptr..., !llvm.ptr...)
/// -> i32` for each exported function `@f` (public, with a body, carrying a
/// Kina signature: the parameter names and symbolic dims, which MLIR types
/// do not carry, come from its attributes, kina/IRConventions.h). Runs on
/// the bufferized module, after the buffer-ownership pass. Each entry
/// checks `stamp` against the runtime once per process (an internal flag
/// `__kina_version_checked` per object). Fails with an error at the
/// function when its signature attributes are malformed or `kina_<f>`
/// already exists. With `gpu` (the cuda target), after the descriptor
/// checks the entry calls `kina_rt_gpu_enter` (its non-zero status is
/// returned), `kina_rt_gpu_check_argument` for each argument's allocated
/// pointer (null when it has no elements; a non-zero status is returned
/// after `kina_rt_gpu_exit`), the function, and `kina_rt_gpu_exit`, whose
/// non-zero status is returned with the results freed (runtime.h).
std::unique_ptr<mlir::Pass> createEntryPointsPass(VersionStamp stamp = {},
                                                  bool gpu = false);

/// `kina-matmul-kernel`: rewrites each `linalg.matmul` over row-major f32
/// or f64 memrefs into a register-tiled, vectorised micro-kernel (scf loops,
/// vector.load/fma/store; src/passes/MatmulKernel.cpp): panels of two
/// vectors, then one vector, then one masked vector for the columns left
/// below one vector; the last rows below the 4-row tile one at a time. Runs
/// on the bufferized module before `linalg-to-loops`; same results as the
/// scalar loops up to fused multiply-adds.
std::unique_ptr<mlir::Pass> createMatmulKernelPass();

/// Rewrites each `memref.expand_shape` of a rank-1, unit-stride memref as
/// `memref.reinterpret_cast` of its base buffer with row-major strides, as
/// `expand-strided-metadata` would, which in MLIR 22 crashes when one
/// reassociation group holds several dynamic dims
/// (src/passes/Workarounds.cpp). Runs before that pass.
std::unique_ptr<mlir::Pass> createExpandShapePass();

/// Replaces each `tensor.collapse_shape` and `tensor.expand_shape` whose
/// source has a static 0 dim by a `tensor.empty` of its result's sizes: MLIR
/// 22's bufferization turns a collapse of `?x0` into a memref op its own
/// verifier rejects (src/passes/Workarounds.cpp). Runs just before
/// one-shot bufferization.
std::unique_ptr<mlir::Pass> createEmptyReshapePass();

/// MLIR's `linalg-fuse-elementwise-ops` with two fusions refused: a reshape
/// folded by expansion into an op of more than kMaxRank loops (the runtime
/// allocates at most rank 8), and a producer that reads its init fused
/// through a broadcasting map (src/passes/Workarounds.cpp). Runs on
/// tensors, before bufferization, at -O1 and above.
std::unique_ptr<mlir::Pass> createElementwiseFusionPass();

/// MLIR's canonicalizer without the arith patterns that fold
/// `truncf(sitofp x)` into one `sitofp` (a single rounding where Kina's two
/// casts round twice; src/passes/Workarounds.cpp). Use it for every
/// canonicalization of the pipeline.
std::unique_ptr<mlir::Pass> createCanonicalizerPass();

/// Lowers arith, math, cf, func, memref, vector, index and ub to the LLVM
/// dialect in one conversion, with allocations going to the runtime function
/// named `allocFunction` (`_mlir_ciface_runtime_host_alloc_unranked` for the
/// CPU target) and deallocations to `runtime_free`.
std::unique_ptr<mlir::Pass> createLowerToLLVMPass(std::string allocFunction);

/// `kina-internalize`: renames each Kina function's LLVM implementation
/// `@f` (an `llvm.func` carrying a Kina signature that is not the
/// C-interface wrapper `_mlir_ciface_<g>` of one) to `__kina_fn_<f>` with
/// internal linkage, so only `kina_f` and `_mlir_ciface_f` are exported, and
/// removes the signature attributes from every function. Runs on the
/// LLVM-dialect module, last.
std::unique_ptr<mlir::Pass> createInternalizePass();

/// Name of the runtime's host (CPU target) allocation function.
inline constexpr const char *kHostAllocFunction =
    "_mlir_ciface_runtime_host_alloc_unranked";
/// Name of the runtime's CUDA-managed allocation function.
inline constexpr const char *kGpuAllocFunction =
    "_mlir_ciface_runtime_gpu_alloc_unranked";

} // namespace kina

#endif // KINA_PASSES_H
