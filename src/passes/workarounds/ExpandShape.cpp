//===- ExpandShape.cpp - memref.expand_shape without the MLIR 22 crash ----===//
//
// An MLIR 22 workaround (src/passes/workarounds/: every place where kinac
// steps around a bug of upstream MLIR 22 is a file here, each naming the bug
// it avoids and the test that shows it).
//
// kina-expand-shape (createExpandShapePass). A reshape lowers to
// `tensor.collapse_shape` to 1-D, then `tensor.expand_shape` to the
// result (MLIRGenLayout.cpp); after bufferization these are their memref
// forms. `expand-strided-metadata` crashes (a null OpFoldResult reaches
// `memref.reinterpret_cast`'s builder) on a `memref.expand_shape` whose
// reassociation group holds two or more dynamic dims, e.g.
//
//   memref.expand_shape %m [[0, 1]] output_shape [%d0, %d1]
//       : memref<?xf32> into memref<?x?xf32>
//
// (a Kina `reshape` to [N, M]; e2e `reshape_symbolic_dims`). The pass,
// run just before `expand-strided-metadata`, rewrites every expand_shape
// of a rank-1, unit-stride memref into what that pass would produce: the
// source's base buffer and offset (`memref.extract_strided_metadata`)
// reinterpreted with the output sizes and their row-major strides
// (`memref.reinterpret_cast`). Each stride is static where the result
// type's layout says so, and a product of the inner sizes otherwise.
//
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_EXPANDSHAPEPASS
#include "kina/Passes.h.inc"

namespace {

/// Rewrites `op` if its source is rank 1 with stride 1; else leaves it.
void rewriteExpandShape(memref::ExpandShapeOp op) {
  MemRefType source = op.getSrcType();
  MemRefType result = op.getResultType();
  SmallVector<int64_t> sourceStrides, resultStrides;
  int64_t sourceOffset, resultOffset;
  if (source.getRank() != 1 ||
      failed(source.getStridesAndOffset(sourceStrides, sourceOffset)) ||
      sourceStrides[0] != 1 ||
      failed(result.getStridesAndOffset(resultStrides, resultOffset)))
    return;

  OpBuilder b(op);
  Location loc = op.getLoc();
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, op.getSrc());
  OpFoldResult offset = ShapedType::isDynamic(resultOffset)
                            ? OpFoldResult(meta.getOffset())
                            : OpFoldResult(b.getIndexAttr(resultOffset));
  SmallVector<OpFoldResult> sizes = op.getMixedOutputShape();
  int64_t rank = result.getRank();
  SmallVector<OpFoldResult> strides(rank);
  Value running = arith::ConstantIndexOp::create(b, loc, 1);
  for (int64_t i = rank - 1; i >= 0; --i) {
    strides[i] = ShapedType::isDynamic(resultStrides[i])
                     ? OpFoldResult(running)
                     : OpFoldResult(b.getIndexAttr(resultStrides[i]));
    if (i > 0)
      running = arith::MulIOp::create(
          b, loc, running, getValueOrCreateConstantIndexOp(b, loc, sizes[i]));
  }
  auto cast = memref::ReinterpretCastOp::create(
      b, loc, result, meta.getBaseBuffer(), offset, sizes, strides);
  op.getResult().replaceAllUsesWith(cast.getResult());
  op.erase();
}

class ExpandShapePass : public impl::ExpandShapePassBase<ExpandShapePass> {
public:
  void runOnOperation() override {
    SmallVector<memref::ExpandShapeOp> ops;
    getOperation().walk([&](memref::ExpandShapeOp op) { ops.push_back(op); });
    for (memref::ExpandShapeOp op : ops)
      rewriteExpandShape(op);
  }
};

} // namespace

} // namespace kina
