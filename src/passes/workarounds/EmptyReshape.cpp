//===- EmptyReshape.cpp - No reshapes of tensors without elements ---------===//
//
// An MLIR 22 workaround (src/passes/workarounds/: every place where kinac
// steps around a bug of upstream MLIR 22 is a file here, each naming the bug
// it avoids and the test that shows it).
//
// kina-empty-reshape (createEmptyReshapePass). One-shot bufferization
// gives `tensor.collapse_shape %t [[0, 1]] : tensor<?x0xf32> into
// tensor<?xf32>` the memref result type memref<0xf32> (a group holding a
// static 0 collapses to a static 0), which the memref.collapse_shape
// verifier then rejects ("collapsed dim (0) must be dynamic if and only
// if reassociation group is dynamic"): any reshape of a shape with a
// dynamic dim and a static 0 (conformance `reshape_*_dyn_zero*`). The
// pass, run just before bufferization, replaces every collapse_shape and
// expand_shape whose source has a static 0 dim (no elements: nothing to
// move) by a `tensor.empty` of the result's sizes.
//
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_EMPTYRESHAPEPASS
#include "kina/Passes.h.inc"

namespace {

/// Replaces `op` (a tensor.collapse_shape or tensor.expand_shape) by a
/// tensor.empty of its result sizes when its source has a static 0 dim.
template <typename ReshapeOp> void replaceEmptyReshape(ReshapeOp op) {
  if (!llvm::is_contained(op.getSrcType().getShape(), 0))
    return;
  OpBuilder b(op);
  ReifiedRankedShapedTypeDims sizes;
  if (failed(reifyResultShapes(b, op, sizes)))
    return;
  auto type = cast<RankedTensorType>(op.getResult().getType());
  SmallVector<Value> dynamic;
  for (auto [i, size] : llvm::enumerate(sizes[0]))
    if (type.isDynamicDim(i))
      dynamic.push_back(getValueOrCreateConstantIndexOp(b, op.getLoc(), size));
  auto empty = tensor::EmptyOp::create(b, op.getLoc(), type, dynamic);
  op.getResult().replaceAllUsesWith(empty.getResult());
  op.erase();
}

class EmptyReshapePass : public impl::EmptyReshapePassBase<EmptyReshapePass> {
public:
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
        replaceEmptyReshape(collapse);
      else
        replaceEmptyReshape(cast<tensor::ExpandShapeOp>(op));
    }
  }
};

} // namespace

} // namespace kina
