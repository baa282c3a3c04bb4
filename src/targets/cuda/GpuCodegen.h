//===- GpuCodegen.h - Helpers shared by the cuda target's kernel mappers --===//
//
// The three kernel-mapping passes of the cuda target (GpuMapElementwise,
// GpuMapReductions, GpuMapMatmul) each turn a bufferized `linalg.generic`
// (memref operands, one block) into a `gpu.launch` whose body evaluates the
// generic's region at iteration points the kernel chooses. What they share:
// the host-side loop sizes, a `gpu.launch` builder, loading and storing an
// operand through its indexing map at an iteration point, and cloning the
// generic's region (whole, or the slice that computes some of its values).
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TARGETS_CUDA_GPUCODEGEN_H
#define KINA_TARGETS_CUDA_GPUCODEGEN_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

#include <cstdint>
#include <optional>

namespace kina::cuda {

/// Upper bound of the 1-D grids the mappers launch; larger extents are
/// covered by grid-stride loops (gridDim.x may be up to 2^31-1, but more
/// blocks than a few per SM only add scheduling work).
inline constexpr int64_t kMaxGridX = 65535;
/// Upper bound of gridDim.y and gridDim.z (a CUDA limit).
inline constexpr int64_t kMaxGridYZ = 65535;

/// The iteration-space sizes of `op` (bufferized, memref operands), one
/// index value per loop, computed on the host before the launch.
llvm::SmallVector<mlir::Value> loopSizes(mlir::OpBuilder &b, mlir::Location loc,
                                         mlir::linalg::LinalgOp op);

/// True when one of `sizes` is the constant 0: the iteration space is
/// empty and the op has nothing to do (delinearizing over a static 0 would
/// not verify).
bool anyStaticZero(mlir::ValueRange sizes);

/// The product of `values` (index), 1 for none.
mlir::Value product(mlir::OpBuilder &b, mlir::Location loc,
                    mlir::ValueRange values);

/// min(ceil(n / d), cap) as an index, at least 1 (a launch needs a block).
mlir::Value gridSize(mlir::OpBuilder &b, mlir::Location loc, mlir::Value n,
                     int64_t d, int64_t cap);

/// `gpu.launch` with the given grid (index values) and static block size,
/// the given workgroup (shared-memory) buffers, and an empty body ending in
/// `gpu.terminator`; `b` is left before the terminator.
mlir::gpu::LaunchOp createLaunch(mlir::OpBuilder &b, mlir::Location loc,
                                 mlir::Value gridX, mlir::Value gridY,
                                 mlir::Value gridZ, int64_t blockX,
                                 int64_t blockY, int64_t blockZ,
                                 mlir::TypeRange workgroupBuffers = {});

/// The multi-index of the row-major linear index `linear` over `sizes`
/// (innermost fastest); empty for no sizes.
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder &b,
                                           mlir::Location loc,
                                           mlir::Value linear,
                                           mlir::ValueRange sizes);

/// The indices of `map` (an indexing map of a linalg op) at the iteration
/// point `ivs` (one index value per loop).
llvm::SmallVector<mlir::Value> applyMap(mlir::OpBuilder &b, mlir::Location loc,
                                        mlir::AffineMap map,
                                        mlir::ValueRange ivs);

/// The value of operand `operand` of `op` at the iteration point `ivs`: a
/// memref.load through its indexing map, or the scalar itself.
mlir::Value loadOperand(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::linalg::LinalgOp op, mlir::OpOperand &operand,
                        mlir::ValueRange ivs);

/// Stores `value` into the init (output) operand `operand` at `ivs`.
void storeOperand(mlir::OpBuilder &b, mlir::Location loc,
                  mlir::linalg::LinalgOp op, mlir::OpOperand &operand,
                  mlir::Value value, mlir::ValueRange ivs);

/// Clones the whole region of `op` at `b`: block arguments become
/// `blockArgs`, `linalg.index d` becomes `ivs[d]`; returns the yielded
/// values.
llvm::SmallVector<mlir::Value> cloneRegion(mlir::OpBuilder &b,
                                           mlir::linalg::GenericOp op,
                                           mlir::ValueRange blockArgs,
                                           mlir::ValueRange ivs);

/// Clones only the operations of `op`'s region that `roots` (values defined
/// in the region) depend on, with `mapping` already giving values for some
/// region values (block arguments, overridden results; the slice stops
/// there). `linalg.index d` becomes `ivs[d]` (`ivs` may be empty when the
/// slice must not use the iteration point). Fails without cloning when the
/// slice reaches a block argument or a `linalg.index` that has no value.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
cloneSlice(mlir::OpBuilder &b, mlir::linalg::GenericOp op,
           mlir::ValueRange roots, mlir::IRMapping mapping,
           mlir::ValueRange ivs);

/// The combiner of a reduction's yield `comb(acc, e)`: the arith op, the
/// `gpu.all_reduce` kind that performs it over a block, and its identity
/// (what an element outside the reduced extent contributes).
struct Combiner {
  mlir::Operation *op;
  mlir::gpu::AllReduceOperation kind;
  mlir::TypedAttr identity;
};

/// The combiner of `def` (an op of a reduction region yielding `type`):
/// addf, mulf, maximumf, minimumf, maxnumf, minnumf (identities 0, 1,
/// -inf, +inf, -inf, +inf) or, on integers, addi, muli, max/min s/u, andi,
/// ori, xori; nullopt for any other op.
std::optional<Combiner> combinerOf(mlir::Operation *def, mlir::Type type);

/// True when `op` is a `linalg.generic` on memrefs whose operands the
/// mappers can load and store (ranked memrefs or scalars).
bool isMappableGeneric(mlir::linalg::GenericOp op);

/// True when `block` only frees buffers (pure ops between) and returns: the
/// exit of an allocation's null check, as kina-buffer-ownership writes it.
bool isExitBlock(mlir::Block *block);

/// True when `op` may stand between two ops a mapper fuses into one
/// kernel: an allocation, a deallocation, or an op without regions and
/// memory effects (no linalg op, launch or copy).
bool mayStandBetween(mlir::Operation *op);

/// The op after `op` along the path of execution: the next op of its
/// block, or, after a terminator whose successors are one continuation
/// (this block its only predecessor, no arguments) and exits
/// (isExitBlock), the continuation's first op; null otherwise (the end of
/// the block, a loop, a join).
mlir::Operation *nextAlongPath(mlir::Operation *op);

/// Erases `alloc`, a buffer no kernel or host op uses any more: its
/// deallocations go, and its null check (`memref.extract_aligned_pointer_
/// as_index`, compared with 0 by kina-buffer-ownership) sees a non-null
/// constant. Every other user must be gone already.
void eraseAllocation(mlir::memref::AllocOp alloc);

} // namespace kina::cuda

#endif // KINA_TARGETS_CUDA_GPUCODEGEN_H
