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

def GpuMapReductionsPass : Pass<"kina-gpu-map-reductions", "mlir::ModuleOp"> {
  let summary = "Map reduction linalg.generic ops to block-per-output GPU "
                "kernels with a shared-memory tree reduction";
  let description = [{
    Turns each host-side bufferized `linalg.generic` with reduction loops
    into a `gpu.launch` with one block of 256 threads per output point
    (grid-stride over the points): each thread folds a strided part of the
    reduced extent, then a tree of 8 halving steps over workgroup memory
    combines the partial results, and thread 0 combines them with the init.
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
    `memref.copy` into a `gpu.launch` of 256 threads per block (at most
    65535 blocks) with a grid-stride loop over the linear index of the
    iteration space, delinearized row-major; `memref.get_global`s a kernel
    reads are cloned into it (device globals after outlining). Runs last of
    the three mappers. Fails, naming the op, when any linalg op or
    `memref.copy` remains on the host afterwards.
  }];
  let dependentDialects = ["mlir::affine::AffineDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::gpu::GPUDialect",
                           "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
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
