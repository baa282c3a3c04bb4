//===- Passes.h - kinac's own passes between MLIR's upstream ones ---------===//
//
// The passes every target's pipeline shares (src/passes/, one file each;
// src/passes/workarounds/ for those that step around MLIR 22 bugs). They are
// declared in Passes.td; this header includes what TableGen generates from
// it: for each pass `XPass`, the options struct `XPassOptions` and
// `createXPass()` / `createXPass(XPassOptions)`, and
// `registerKinaPasses()`, which registers them all (kina-opt calls it). They
// read what they need from the IR (kina/IRConventions.h), never from the
// front end's AST, so each runs alone in `kina-opt`; docs/architecture.md
// gives the order the targets' pipelines run them in. The passes:
//
//  - kina-read-only-arguments: every argument of every function with a body
//    gets `bufferization.writable = false` (arguments are the caller's
//    memory: one-shot bufferization must copy rather than write them). On
//    MLIRGen's module on tensors, before one-shot bufferization.
//  - kina-elementwise-fusion: MLIR's `linalg-fuse-elementwise-ops` with two
//    fusions refused: a reshape folded by expansion into an op of more than
//    KINA_MAX_RANK loops (the runtime allocates at most rank 8), and a
//    producer that reads its init fused through a broadcasting map
//    (src/passes/workarounds/ElementwiseFusion.cpp). On tensors, before
//    bufferization, at -O1 and above.
//  - kina-fuse-rows: each all-parallel linalg.generic reading a row
//    reduction's result broadcast along its rows becomes one loop over rows
//    with its row reductions and the elementwise ops between fused in
//    (scf::tileConsumerAndFuseProducersUsingSCF), marked for the thread pool
//    (src/passes/FuseRows.cpp). On tensors, cpu target, at -O1 and above.
//  - kina-share-row-values: in such a loop, a value with a math op that the
//    row's sum and its final op both compute (softmax's exp(x - m)) is
//    computed once, into the row of the result, and read there by both
//    (src/passes/ShareRowValues.cpp). After the last elementwise fusion,
//    cpu target, at -O1 and above.
//  - kina-clone-shared-fills: a `linalg.fill` on tensors read as the
//    destination of several ops (cse merges equal fills) is cloned, with
//    its `tensor.empty`, before each of them but the first, so one-shot
//    bufferization fills each op's own buffer instead of copying a filled
//    one (src/passes/CloneSharedFills.cpp). Just before bufferization, at
//    -O1 and above.
//  - kina-empty-reshape: each `tensor.collapse_shape` and
//    `tensor.expand_shape` whose source has a static 0 dim becomes a
//    `tensor.empty` of its result's sizes: MLIR 22's bufferization turns a
//    collapse of `?x0` into a memref op its own verifier rejects
//    (src/passes/workarounds/EmptyReshape.cpp). Just before one-shot
//    bufferization.
//  - kina-strided-copies: each `memref.copy` that memref-to-llvm would
//    lower to a call of MLIR's `memrefCopy` (a source or target that is
//    not contiguous) becomes a `linalg.copy`, lowered to loops
//    (src/passes/StridedCopies.cpp). cpu, before convert-linalg-to-loops.
//  - kina-buffer-ownership: on the bufferized module (functions of memrefs,
//    one block each), every function returns freshly allocated buffers the
//    caller owns, temporaries are released after their last use, each
//    allocation, call result and run-time shape check (`@__kina_check`) is
//    followed by an early return (null result descriptors, temporaries
//    freed) on failure.
//  - kina-entry-points (options abi-version, compiler): adds `func.func
//    @kina_<f>(!llvm.ptr..., !llvm.ptr...) -> i32` for each exported function
//    `@f` (public, with a body, carrying a Kina signature: the parameter
//    names and symbolic dims, which MLIR types do not carry, come from its
//    attributes): the status entry `int32_t kina_<f>(results..., args...)`
//    that validates the caller's descriptors against the Kina signature.
//    Each entry checks the ABI version against the runtime once per process
//    (an internal flag `__kina_version_checked` per object). After
//    kina-buffer-ownership. Fails with an error at the function when its
//    signature attributes are malformed or `kina_<f>` already exists.
//  - kina-matmul-kernel: each `linalg.matmul` over row-major f32 or f64
//    memrefs becomes a register-tiled, vectorised micro-kernel (scf loops,
//    vector.load/fma/store; src/passes/MatmulKernel.cpp): panels of two
//    vectors, then one vector, then one masked vector for the columns left
//    below one vector; rows in tiles of 4, then one at a time. On the
//    bufferized module before `convert-linalg-to-loops`, at -O1 and above;
//    same results as the scalar loops up to fused multiply-adds.
//  - kina-tile-and-vectorize (option vector-bits): each remaining linalg op
//    on buffers (elementwise, reductions, normalisations, transposes,
//    broadcasts, contractions) is tiled with the loop most operands access
//    contiguously in tiles of one vector register and the others in tiles
//    of 1 (scf::tileUsingSCF), its partial tile peeled, its full tiles
//    vectorised (linalg::vectorize), reduction accumulators kept in vector
//    registers, and the vector ops lowered with MLIR's patterns
//    (src/passes/TileAndVectorize.cpp). After kina-matmul-kernel, at -O1
//    and above; float sums reassociate lane-wise.
//  - kina-expand-shape: each `memref.expand_shape` of a rank-1, unit-stride
//    memref becomes `memref.reinterpret_cast` of its base buffer with
//    row-major strides, as `expand-strided-metadata` would, which in MLIR 22
//    crashes when one reassociation group holds several dynamic dims
//    (src/passes/workarounds/ExpandShape.cpp). Just before that pass.
//  - kina-math-approximation (option functions): each f32 `math` op among
//    `functions` (default: those measured within docs/tolerances.md:
//    src/passes/MathApproximation.cpp) becomes MLIR's polynomial
//    approximation (f32 `powf`: kina's f64 evaluation), straight-line code
//    LLVM vectorises, instead of a libm call. Before the math lowering, at -O1 and above.
//  - kina-lower-to-llvm (option alloc-function): arith, math, cf, func,
//    memref, vector, index and ub to the LLVM dialect in one conversion,
//    every `memref.alloc` a call of the runtime's unranked allocation
//    function `alloc-function` (kHostAllocFunction, the default, for the cpu
//    target) and every `memref.dealloc` a call of `runtime_free`.
//  - kina-internalize: renames each Kina function's LLVM implementation `@f`
//    (an `llvm.func` carrying a Kina signature that is not the C-interface
//    wrapper `_mlir_ciface_<g>` of one) to `__kina_fn_<f>` with internal
//    linkage, so only `kina_f` and `_mlir_ciface_f` are exported, and
//    removes the signature attributes from every function. On the
//    LLVM-dialect module, last.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_PASSES_H
#define KINA_PASSES_H

#include "kina/Tuning.h"
#include "kina/abi.h"

#include "mlir/Pass/Pass.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <optional>
#include <string>

namespace mlir::linalg {
class GenericOp;
} // namespace mlir::linalg

namespace kina {

#define GEN_PASS_DECL
#include "kina/Passes.h.inc"

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

/// kina-entry-points with the options abi-version and compiler taken from
/// `stamp`, and gpu (the cuda target's GPU call frame, Passes.td).
std::unique_ptr<mlir::Pass> createEntryPointsPass(const VersionStamp &stamp,
                                                  bool gpu = false);

/// kina-lower-to-llvm with allocations calling the runtime function named
/// `allocFunction` (kHostAllocFunction, kGpuAllocFunction).
std::unique_ptr<mlir::Pass> createLowerToLLVMPass(std::string allocFunction);

/// MLIR's `canonicalize` without the arith patterns that fold
/// `truncf(sitofp x)` into one `sitofp` (a single rounding where Kina's two
/// casts round twice; src/passes/workarounds/Canonicalizer.cpp). Use it for
/// every canonicalization of a pipeline. Not a registered pass of its own:
/// upstream `canonicalize` with its `disable-patterns` option set.
std::unique_ptr<mlir::Pass> createCanonicalizerPass();

/// The batch structure of a matmul kina-matmul-kernel computes with its
/// kernel (matchKernelMatmul): C[batch] += A[batch] * B[batch] per batch
/// index, each a row-major product of an MxK and a KxN matrix.
struct KernelMatmul {
  /// For A, B and C (in that order): per leading dim of the operand (the
  /// dims before its last two), the batch loop it follows (0 for C's first
  /// dim ...), or -1 for a unit dim read at index 0 (a broadcast batch).
  /// C's leading dims are the batch loops, in order.
  llvm::SmallVector<int64_t, 4> batchDims[3];
  /// The batch loops: C's rank - 2.
  int64_t numBatch = 0;
};

/// The batch structure of `op` when kina-matmul-kernel computes it with its
/// kernel (on tensors or buffers): a `linalg.matmul` with the default
/// indexing maps, or a `linalg.generic` over loops (batch..., m, n, k) with
/// C indexed (batch..., m, n), A (batch' ..., m, k), B (batch'' ..., k, n)
/// (batch', batch'': batch loops or the constant 0) and the body
/// `out + a * b` (MLIRGen's batched and broadcast-batch matmul,
/// src/lowering/MLIRGenContract.cpp); A, B and C of one element type, f32
/// or f64. Otherwise std::nullopt. `--autotune` tunes such an op in the
/// space "cpu.matmul" under tuningKey(op, "matmul").
std::optional<KernelMatmul> matchKernelMatmul(mlir::Operation *op);

/// True when `op` rounds a contraction's f32 result to f16 or bf16 and
/// nothing more (on tensors): one input, produced by a contraction
/// (linalg::isaContractionOpInterface), identity maps, all loops parallel,
/// the body `yield truncf(in)`. On the cuda target such an op stays its own
/// (kina-elementwise-fusion with keep-contractions) and gets its own
/// destination (kina-clone-shared-fills with empties): the product is then
/// written rounded, by cuBLASLt or the attention kernel.
bool roundsContraction(mlir::linalg::GenericOp op);

/// kina-matmul-kernel with each matmul's schedule from `tuning` (by its
/// tuningKey(op, "matmul"); kina/Tuning.h, space "cpu.matmul"), the
/// defaults for a matmul it lacks or when it is null; `vectorBits` (128,
/// 256 or 512: the processor's vector width) is the width, and sets the
/// register tile, of a schedule whose `vbits` or `mr` is 0 (the defaults).
/// The pass shares ownership of `tuning`.
std::unique_ptr<mlir::Pass>
createMatmulKernelPass(unsigned vectorBits,
                       std::shared_ptr<const TuningParameters> tuning);

/// kina-tile-and-vectorize with `options` and each op's schedule from
/// `tuning` (by its tuningKey; kina/Tuning.h, space "cpu.vectorize"): its
/// `vbits` (0: options.vectorBits) and `vectors` (vectors per tile); the
/// option alone for an op it lacks or when it is null. Shares ownership.
std::unique_ptr<mlir::Pass>
createTileAndVectorizePass(const TileAndVectorizePassOptions &options,
                           std::shared_ptr<const TuningParameters> tuning);

/// Name of the runtime's host (CPU target) allocation function.
inline constexpr const char *kHostAllocFunction =
    "_mlir_ciface_runtime_host_alloc_unranked";
/// Name of the runtime's CUDA-managed allocation function.
inline constexpr const char *kGpuAllocFunction =
    "_mlir_ciface_runtime_gpu_alloc_unranked";

#define GEN_PASS_REGISTRATION
#include "kina/Passes.h.inc"

} // namespace kina

#endif // KINA_PASSES_H
