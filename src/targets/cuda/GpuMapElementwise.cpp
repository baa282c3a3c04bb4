//===- GpuMapElementwise.cpp - Parallel linalg ops as 1-D grid kernels ----===//
//
// The pass `kina-gpu-map-elementwise` of the cuda target. It runs on the
// bufferized module after the matmul and reduction mappers and turns every
// remaining host-side
//
//   - `linalg.generic` whose loops are all parallel (fused elementwise
//     chains, broadcasts, fills, transposes, casts, iota, gather, the
//     layout ops MLIRGen writes as generics), and
//   - `memref.copy` (what bufferization leaves for concat, slices and
//     copies into results),
//
// into one `gpu.launch`:
//
//   if (n > 0)                       n = product of the loop sizes (host)
//     gpu.launch blocks(min(ceil(n/256), 65535)) threads(256)
//       for i = blockIdx.x*256 + threadIdx.x; i < n; i += gridDim.x*256
//         (d0, ..., dr) = delinearize(i, sizes)      row-major
//         load the inputs through their indexing maps, evaluate the
//         region, store the results through theirs
//
// The linear index runs over the iteration space with the innermost loop
// fastest, so consecutive threads of a warp touch consecutive elements of
// every operand whose innermost dim is the innermost loop (the output of an
// elementwise op always): the accesses are coalesced. The grid-stride loop
// covers any size with a bounded grid, size 0 launches nothing, rank 0 is
// one thread. Afterwards, no linalg op and no `memref.copy` may remain
// outside a kernel (nothing of the computation runs on the host): the pass
// fails naming the op otherwise.
//
// Last, every `memref.get_global` (a constant tensor, bufferized) that a
// kernel of any mapper reads is cloned into that kernel's body: the host's
// global is host memory the GPU cannot read, and gpu-kernel-outlining then
// copies the `memref.global` into the kernel's `gpu.module`, so the
// constant is compiled into the fatbin as device memory.
//
//===----------------------------------------------------------------------===//
#include "CudaPasses.h"
#include "GpuCodegen.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kina::cuda {
namespace {

constexpr int64_t kBlockSize = 256;

/// Emits the guarded launch of the grid-stride loop over `n` points; `body`
/// is called inside the loop with the linear index.
void emitGridStrideKernel(OpBuilder &b, Location loc, Value n,
                          llvm::function_ref<void(OpBuilder &, Value)> body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, n, zero);
  auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  Value grid = gridSize(b, loc, n, kBlockSize, kMaxGridX);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  gpu::LaunchOp launch = createLaunch(b, loc, grid, one, one, kBlockSize, 1, 1);
  Value block = arith::ConstantIndexOp::create(b, loc, kBlockSize);
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, block),
      launch.getThreadIds().x);
  Value step = arith::MulIOp::create(b, loc, launch.getGridSize().x, block);
  auto loop = scf::ForOp::create(b, loc, first, n, step);
  b.setInsertionPointToStart(loop.getBody());
  body(b, loop.getInductionVar());
}

/// A zero of `type` standing for an init value the region never reads.
Value unusedValue(OpBuilder &b, Location loc, Type type) {
  return arith::ConstantOp::create(b, loc,
                                   cast<TypedAttr>(b.getZeroAttr(type)));
}

void mapGeneric(linalg::GenericOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> sizes = loopSizes(b, loc, op);
  if (anyStaticZero(sizes))
    return op.erase(); // no element to compute
  Value n = product(b, loc, sizes);
  emitGridStrideKernel(b, loc, n, [&](OpBuilder &kb, Value linear) {
    SmallVector<Value> ivs = delinearize(kb, loc, linear, sizes);
    SmallVector<Value> args;
    for (OpOperand &operand : op->getOpOperands()) {
      if (op.isDpsInit(&operand) && !op.payloadUsesValueFromOperand(&operand))
        args.push_back(unusedValue(
            kb, loc, getElementTypeOrSelf(operand.get().getType())));
      else
        args.push_back(loadOperand(kb, loc, op, operand, ivs));
    }
    SmallVector<Value> results = cloneRegion(kb, op, args, ivs);
    for (auto [init, value] : llvm::zip(op.getDpsInitsMutable(), results))
      storeOperand(kb, loc, op, init, value, ivs);
  });
  op.erase();
}

void mapCopy(memref::CopyOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value source = op.getSource(), target = op.getTarget();
  auto type = cast<MemRefType>(target.getType());
  SmallVector<Value> sizes;
  for (int64_t d = 0; d < type.getRank(); ++d)
    sizes.push_back(
        type.isDynamicDim(d)
            ? memref::DimOp::create(b, loc, target, d).getResult()
            : arith::ConstantIndexOp::create(b, loc, type.getDimSize(d))
                  .getResult());
  if (anyStaticZero(sizes))
    return op.erase();
  Value n = product(b, loc, sizes);
  emitGridStrideKernel(b, loc, n, [&](OpBuilder &kb, Value linear) {
    SmallVector<Value> ivs = delinearize(kb, loc, linear, sizes);
    Value v = memref::LoadOp::create(kb, loc, source, ivs);
    memref::StoreOp::create(kb, loc, v, target, ivs);
  });
  op.erase();
}

/// Clones each `memref.get_global` defined outside `launch` and used inside
/// it into the start of its body.
void sinkGlobals(gpu::LaunchOp launch) {
  llvm::SetVector<Operation *> globals;
  launch.getBody().walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (auto get = v.getDefiningOp<memref::GetGlobalOp>())
        if (!launch->isAncestor(get))
          globals.insert(get);
  });
  OpBuilder b(launch.getContext());
  b.setInsertionPointToStart(&launch.getBody().front());
  for (Operation *get : globals) {
    Operation *inside = b.clone(*get);
    get->getResult(0).replaceUsesWithIf(
        inside->getResult(0),
        [&](OpOperand &use) { return launch->isAncestor(use.getOwner()); });
  }
}

class GpuMapElementwisePass
    : public PassWrapper<GpuMapElementwisePass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuMapElementwisePass)
  StringRef getArgument() const override { return "kina-gpu-map-elementwise"; }
  StringRef getDescription() const override {
    return "Map parallel linalg.generic ops and memref.copy to grid-stride "
           "GPU kernels";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect, gpu::GPUDialect,
                    memref::MemRefDialect, scf::SCFDialect>();
  }

  void runOnOperation() override {
    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (op->getParentOfType<gpu::LaunchOp>() ||
          op->getParentOfType<gpu::GPUModuleOp>())
        return;
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        if (isMappableGeneric(generic) && generic.getNumReductionLoops() == 0)
          work.push_back(op);
      } else if (isa<memref::CopyOp>(op)) {
        work.push_back(op);
      }
    });
    for (Operation *op : work) {
      if (auto generic = dyn_cast<linalg::GenericOp>(op))
        mapGeneric(generic);
      else
        mapCopy(cast<memref::CopyOp>(op));
    }
    // Constants the kernels read become the kernels' own globals.
    getOperation().walk([](gpu::LaunchOp launch) { sinkGlobals(launch); });
    // Nothing of the computation may stay on the host.
    WalkResult left = getOperation().walk([&](Operation *op) {
      if (op->getParentOfType<gpu::LaunchOp>() ||
          op->getParentOfType<gpu::GPUModuleOp>())
        return WalkResult::advance();
      if (isa<linalg::LinalgOp, memref::CopyOp>(op)) {
        op->emitError("cuda target: no GPU kernel mapping for this op");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (left.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

std::unique_ptr<Pass> createGpuMapElementwisePass() {
  return std::make_unique<GpuMapElementwisePass>();
}

} // namespace kina::cuda
