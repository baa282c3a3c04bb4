//===- CudaPasses.td - The cuda target's passes, declared for TableGen ----===//
//
// The declarations of the cuda target's own passes (src/targets/cuda/, one
// file each): the three kernel mappers that turn the bufferized module's
// linalg ops and copies into `gpu.launch` ops (docs/cuda.md, "Kernel
// mapping"). They live beside the target rather than in
// include/kina/Passes.td because they belong to kina_targets, not to the
// shared kina_passes library. `mlir-tblgen -gen-pass-decls -name KinaCuda`
// turns them into <build>/include/kina/CudaPasses.h.inc: the base classes
// (GEN_PASS_DEF_<NAME>, in each pass's file), the create functions
// (GEN_PASS_DECL, CudaPasses.h) and registerKinaCudaPasses()
// (GEN_PASS_REGISTRATION), which the cuda target's registerPasses() calls
// for kina-opt. CudaTarget.cpp runs them in the order below.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_CUDA_PASSES_TD
#define KINA_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def GpuMapRowChainsPass : Pass<"kina-gpu-map-row-chains", "mlir::ModuleOp"> {
  let summary = "Map a run of ops over small static rows with small matmuls "
                "(an MLP's forward) to one warp-per-row kernel";
  let description = [{
    Finds runs of bufferized `linalg.generic`s that share one leading
    parallel loop P (dynamic allowed) and whose other loops are static and
    small: matmuls [P, K] x [K, M] whose right-hand side is a small static
    parameter no op of the function writes (a function argument, an
    allocation or a constant global), elementwise ops over [P, c] with
    broadcast parameters, row values and scalars, reductions over the row
    into [P] buffers, ops over P only; consecutive along the path of
    execution (allocation checks and deallocations may stand between),
    each sharing a row-indexed buffer with the run so far. A run of two or
    more ops with at least one contraction and another reduction becomes
    one `gpu.launch` of 128 threads per block, one warp per row
    (grid-stride, 4 rows a block): each row buffer is a [4, row] workgroup
    buffer, a warp's row its slice; the lanes copy the rows the run reads
    into the slices, each op runs with its parallel iterations other than
    P spread over the lanes and its reduction loops in order inside a lane
    (the op's own numerics), a warp barrier (nvvm.bar.warp.sync) after each
    step, and the lanes copy out the rows used after the run; row buffers
    only the run used are no longer allocated. Row buffers of at most 256
    elements a row, parameters of at most 4096 elements, at most 4096
    iterations an op and 16384 a run, at most 48 KiB of workgroup memory.
    Runs first of the mappers, after `linalg-generalize-named-ops`. The
    kernel's location is a FusedLoc of the ops' locations with metadata
    ["kina-gpu-map-row-chains", N]. Cannot fail.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::NVVM::NVVMDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuMapMatmulPass : Pass<"kina-gpu-map-matmul", "mlir::ModuleOp"> {
  let summary = "Map contraction linalg.generic ops (matmul) to cuBLASLt "
                "calls and shared-memory tiled GPU kernels";
  let description = [{
    Turns each host-side bufferized contraction `linalg.generic` (two
    inputs, one output, exactly one reduction loop, a region `acc + a*b`
    with any casts: what `linalg.matmul` and MLIRGen's batched, broadcast
    and rank-1 matmuls generalize to) into a `gpu.launch` of 16x16 output
    tiles per block, both operand tiles staged in workgroup memory per
    16-wide k step, grid-stride over tiles and batch; k is accumulated in
    the cpu target's order. With `cublaslt` (the default), a float
    contraction (f16, bf16 with an f16/bf16/f32 result, f32, f64; region
    exactly `acc + ext(a) * ext(b)`) first calls the runtime's
    `kina_rt_gpu_matmul` (cuBLASLt on the call's stream) with the operands'
    pointers, sizes and strides, and the kernel runs only when that call
    returns 0 (a layout cuBLASLt cannot express); a zero fill of the result
    just before is moved into that fallback (cuBLASLt writes C = A B).
    An f32 product whose only consumer is an element-by-element generic
    computing act(alpha * c + residual + bias) exactly as Kina's f32 ops
    (bias along the last dim, act relu or the tanh gelu) calls
    `kina_rt_gpu_matmul_epilogue` instead, cuBLASLt's epilogue writing the
    consumer's output; the consumer joins the fallback.
    `allow-tf32` lets f32 products use TF32 tensor cores. Other generics
    are left alone. Runs after `linalg-generalize-named-ops`, first of the
    three mappers. Cannot fail.
  }];
  let options = [
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "f32 products may use TF32 tensor cores (cuBLASLt)">,
    Option<"cublasLt", "cublaslt", "bool", /*default=*/"true",
           "route float contractions to the runtime's cuBLASLt call, with "
           "the kernel as fallback">
  ];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuMapAttentionPass : Pass<"kina-gpu-map-attention", "mlir::ModuleOp"> {
  let summary = "Map attention written out (matmul, the scores' elementwise "
                "ops, softmax, matmul; bf16/f16) to one flash-attention "
                "kernel on mma.sync tensor-core steps";
  let description = [{
    Finds the bufferized run `S = Q KT; X = f(S); P = softmax(X); O = P V`
    (Q, KT, V and P bf16 or f16, f32 accumulation, any batch loops; f the
    scores' fused elementwise ops: a scale, a mask) and replaces it with
    one kernel: 64 query rows a block of 4 warps, keys in steps of 64
    through workgroup memory, the scores kept in registers, the online
    softmax (FlashAttention-2), `nvvm.mma.sync` m16n8k16 for both
    products, key blocks above the diagonal skipped when f ends in a
    causal `select(n <= m, x, -inf)`. The intermediates are no longer
    allocated. Needs static shapes, M and N multiples of 64, head dims
    multiples of 16 up to 128 (GpuMapAttention.cpp says what else). Runs
    first among the mappers. Cannot fail.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::math::MathDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::NVVM::NVVMDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def GpuAlignWorkgroupPass : Pass<"kina-gpu-align-workgroup", "mlir::ModuleOp"> {
  let summary = "Give every outlined kernel's workgroup buffers 16-byte "
                "alignment (llvm.align)";
  let description = [{
    MLIR 22 lowers a workgroup attribution without `llvm.align` to a
    global aligned to its element type only (2 bytes for bf16), while
    LLVM's NVPTX back end merges accesses at 16-byte offsets into 16-byte
    `st.shared.v4` ones. Sets `llvm.align = 16` on every `gpu.func`
    workgroup attribution that has none. Runs after gpu-kernel-outlining.
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def GpuMapRowsPass : Pass<"kina-gpu-map-rows", "mlir::ModuleOp"> {
  let summary = "Map a run of row reductions and their elementwise "
                "producers and consumers (softmax, the norms) to one "
                "block-per-row kernel holding the row in registers";
  let description = [{
    Finds runs of bufferized `linalg.generic`s over one row space (P
    leading loops, R trailing loops): reductions of exactly the R loops
    (`comb(acc, e)` regions) into row buffers, elementwise ops over P x R
    that read those row buffers through projections, and ops over P only
    (fills, mean, denominators), consecutive along the path of execution
    (allocation checks and deallocations may stand between). Each run
    becomes one `gpu.launch`, one block per row (grid-stride over rows):
    each thread holds its 16-byte chunks of the row in registers, the ops
    run in order on those values, reductions combine the threads' partials
    with `gpu.all_reduce`, and the buffers read after the run are stored
    once; buffers only the run used are no longer allocated. Needs a static
    R that is a multiple of the vector lanes and fits in registers (at most
    32 elements per thread, 512 threads); other runs are left to the next
    mappers. Runs after kina-gpu-map-matmul, before
    kina-gpu-map-reductions. Cannot fail.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def GpuMapReductionsPass : Pass<"kina-gpu-map-reductions", "mlir::ModuleOp"> {
  let summary = "Map reduction linalg.generic ops to block-per-output GPU "
                "kernels with a shared-memory tree reduction";
  let description = [{
    Turns each host-side bufferized `linalg.generic` with reduction loops
    into a `gpu.launch` with one block of 256 threads per output point
    (grid-stride over the points): each thread folds a strided part of the
    reduced extent, then a tree of 8 halving steps over workgroup memory
    combines the partial results, and thread 0 combines them with the init.
    A reduction whose innermost loop is parallel (over outer dims) with
    `comb(acc, e)` yields gets a coalesced column kernel instead: 32 x 32
    threads, x over consecutive output points, y over slices of the
    reduced extent (4 loads in flight), a tree over y in workgroup memory.
    Regions it cannot split into a combiner and a contribution
    (`comb(acc, e)` with an associative, commutative arith op, or
    `select(c, e, acc)` for argmax/argmin) are folded by one thread per
    output point in order. A static empty iteration space erases the op.
    Runs after kina-gpu-map-matmul. Cannot fail.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def GpuMapElementwisePass
    : Pass<"kina-gpu-map-elementwise", "mlir::ModuleOp"> {
  let summary = "Map parallel linalg.generic ops and memref.copy to "
                "grid-stride GPU kernels";
  let description = [{
    Turns each host-side all-parallel bufferized `linalg.generic` and each
    `memref.copy` into GPU kernels: a vector kernel (16-byte
    `vector.load`/`vector.store` of the operands contiguous along the
    innermost loop, 4 vectors per thread, 256 threads per block) where the
    innermost size is a multiple of the lanes and the pointers are 16-byte
    aligned (checked on the host when not static), and a scalar grid-stride
    kernel of 256 threads per block (at most 65535 blocks) over the linear
    index of the iteration space, delinearized row-major, otherwise;
    `memref.get_global`s a kernel reads are cloned into it (device globals
    after outlining). Runs last of the mappers. Fails, naming the op, when
    any linalg op or
    `memref.copy` remains on the host afterwards. The block size is the
    option block-size (kinac sets it from a tuning cache's
    "cuda.elementwise" entry, docs/autotune.md).
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "Threads per block of the elementwise kernels (a multiple of 32 "
           "in [32, 1024])">
  ];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect",
                           "mlir::vector::VectorDialect"];
}

def GpuHostSyncPass : Pass<"kina-gpu-host-sync", "mlir::ModuleOp"> {
  let summary = "Wait for the call's kernels before the host reads a buffer";
  let description = [{
    Inserts a call of the runtime's `kina_rt_gpu_synchronize()` before each
    host-side `memref.load` from a buffer that kernels may write (not a
    `memref.alloca` or `memref.get_global`, through views); consecutive
    loads share one call. The runtime does not wait after each launch of a
    `kina_<fn>` call, so such a read (gather's index range check) must wait
    for the kernels queued before it. Runs after the three kernel mappers.
    Cannot fail.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
}

#endif // KINA_CUDA_PASSES_TD
