//===- Workarounds.cpp - kinac's workarounds for MLIR 22 bugs -------------===//
//
// Every place where kinac steps around a bug of upstream MLIR 22 is here,
// each with the bug it avoids (and the test that shows it):
//
//  1. kina-expand-shape (createExpandShapePass). A reshape lowers to
//     `tensor.collapse_shape` to 1-D, then `tensor.expand_shape` to the
//     result (MLIRGenLayout.cpp); after bufferization these are their memref
//     forms. `expand-strided-metadata` crashes (a null OpFoldResult reaches
//     `memref.reinterpret_cast`'s builder) on a `memref.expand_shape` whose
//     reassociation group holds two or more dynamic dims, e.g.
//
//       memref.expand_shape %m [[0, 1]] output_shape [%d0, %d1]
//           : memref<?xf32> into memref<?x?xf32>
//
//     (a Kina `reshape` to [N, M]; e2e `reshape_symbolic_dims`). The pass,
//     run just before `expand-strided-metadata`, rewrites every expand_shape
//     of a rank-1, unit-stride memref into what that pass would produce: the
//     source's base buffer and offset (`memref.extract_strided_metadata`)
//     reinterpreted with the output sizes and their row-major strides
//     (`memref.reinterpret_cast`). Each stride is static where the result
//     type's layout says so, and a product of the inner sizes otherwise.
//
//  2. kina-empty-reshape (createEmptyReshapePass). One-shot bufferization
//     gives `tensor.collapse_shape %t [[0, 1]] : tensor<?x0xf32> into
//     tensor<?xf32>` the memref result type memref<0xf32> (a group holding a
//     static 0 collapses to a static 0), which the memref.collapse_shape
//     verifier then rejects ("collapsed dim (0) must be dynamic if and only
//     if reassociation group is dynamic"): any reshape of a shape with a
//     dynamic dim and a static 0 (conformance `reshape_*_dyn_zero*`). The
//     pass, run just before bufferization, replaces every collapse_shape and
//     expand_shape whose source has a static 0 dim (no elements: nothing to
//     move) by a `tensor.empty` of the result's sizes.
//
//  3. The canonicalizer without `TruncFSIToFPToSIToFP` and
//     `TruncFUIToFPToUIToFP` (createCanonicalizerPass). These patterns fold
//     `truncf(sitofp x)` into one `sitofp`, which rounds once where the pair
//     rounds twice: wrong when the first rounding is inexact (Kina's
//     `cast i64 -> f64 -> f32` of 2^60 + 2^36 + 1, `i32 -> f32 -> bf16` of
//     2^30 + 2^22 + 1), and an integer-to-bf16 `sitofp` reaches LLVM, which
//     lowers it with `__truncsfbf2`, a libcall Debian 12's libgcc lacks (e2e
//     `cast_chain_*`, `cast_no_libcalls`). For the same reason the bf16
//     expansion (`arith-expand{include-bf16}`, Pipeline.cpp) runs after the
//     last canonicalization.
//
//  4. kina-elementwise-fusion (createElementwiseFusionPass): MLIR's
//     `linalg-fuse-elementwise-ops` (the same patterns, in the same order)
//     with a control function that refuses two fusions:
//     - folding a reshape into a linalg op by expansion when the expanded op
//       would have more than KINA_MAX_RANK (8) loops. The pass bubbles the
//       expand_shape that re-inserts keepdims' unit dims up through the
//       reduction: reduce_sum {axes = [1, 4, 2, 0], keepdims = true} of a
//       transposed bf16[1, 5, 3, 3, 4] became 9-loop ops on rank-9 tensors,
//       which the runtime cannot allocate (status 1, "rank 9 outside
//       0..8"; difftest transpose-reduce-keepdims-rank9-alloc). MLIR has no
//       rank limit; Kina's ABI has;
//     - fusing a producer whose payload reads its init (output) value into
//       a consumer that reads it through a map that is not a permutation
//       (a broadcast): the fused op keeps that init as an output under the
//       broadcast map, so every consumer iteration updates the same element
//       (a rank-0 sum accumulated once per element; difftest
//       select-scalar-reduce-sum-wrong-result; MLIRGenContract also emits
//       rank-0 reductions elementwise).
//
// (linalg.transpose also crashes MLIR 22's verifier at rank 0; MLIRGenLayout
// never builds one: an identity permutation is the operand itself.)
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"
#include "kina/abi.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kina {
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

class ExpandShapePass
    : public PassWrapper<ExpandShapePass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandShapePass)
  StringRef getArgument() const override { return "kina-expand-shape"; }
  StringRef getDescription() const override {
    return "Rewrite memref.expand_shape of 1-D memrefs as reinterpret_cast";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, memref::MemRefDialect>();
  }
  void runOnOperation() override {
    SmallVector<memref::ExpandShapeOp> ops;
    getOperation().walk([&](memref::ExpandShapeOp op) { ops.push_back(op); });
    for (memref::ExpandShapeOp op : ops)
      rewriteExpandShape(op);
  }
};

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

class EmptyReshapePass
    : public PassWrapper<EmptyReshapePass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(EmptyReshapePass)
  StringRef getArgument() const override { return "kina-empty-reshape"; }
  StringRef getDescription() const override {
    return "Replace reshapes of tensors with a static 0 dim by tensor.empty";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, tensor::TensorDialect>();
  }
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

/// True when fusing the producer of `fused` (a linalg op reading it) is
/// sound: MLIR's default (the producer has one use), unless the producer's
/// payload reads one of its inits and the consumer reads the result through
/// a map that is not a permutation (see item 4 above).
bool fusionIsSound(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  auto producerOp = dyn_cast<linalg::LinalgOp>(producer);
  auto consumerOp = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!producerOp || !consumerOp)
    return true;
  bool readsInit =
      llvm::any_of(producerOp.getDpsInitsMutable(), [&](OpOperand &init) {
        return producerOp.payloadUsesValueFromOperand(&init);
      });
  return !readsInit || consumerOp.getMatchingIndexingMap(fused).isPermutation();
}

/// True when folding the reshape next to `fused` into its linalg op by
/// expansion keeps that op within KINA_MAX_RANK loops. `fused` is either a
/// linalg op's operand produced by a collapse_shape, or an expand_shape's
/// source produced by a linalg op.
bool expansionKeepsRank(OpOperand *fused) {
  Operation *producer = fused->get().getDefiningOp();
  if (!producer || !producer->hasOneUse())
    return false;
  int64_t loops = 0, added = 0;
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(producer)) {
    auto op = dyn_cast<linalg::LinalgOp>(fused->getOwner());
    if (!op)
      return true;
    loops = op.getNumLoops();
    added =
        collapse.getSrcType().getRank() - collapse.getResultType().getRank();
  } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(fused->getOwner())) {
    auto op = dyn_cast<linalg::LinalgOp>(producer);
    if (!op)
      return true;
    loops = op.getNumLoops();
    added = expand.getResultType().getRank() - expand.getSrcType().getRank();
  }
  return loops + added <= KINA_MAX_RANK;
}

class ElementwiseFusionPass
    : public PassWrapper<ElementwiseFusionPass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ElementwiseFusionPass)
  StringRef getArgument() const override { return "kina-elementwise-fusion"; }
  StringRef getDescription() const override {
    return "linalg-fuse-elementwise-ops within Kina's rank limit, without "
           "fusing broadcast reads of a producer that reads its init";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, linalg::LinalgDialect,
                    tensor::TensorDialect>();
  }
  // The body of MLIR 22's LinalgElementwiseOpFusionPass with kinac's
  // control functions.
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    linalg::populateElementwiseOpsFusionPatterns(patterns, fusionIsSound);
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns,
                                                      expansionKeepsRank);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, fusionIsSound);
    (void)applyPatternsGreedily(
        getOperation(), std::move(patterns),
        GreedyRewriteConfig().setUseTopDownTraversal(true));
  }
};

} // namespace

std::unique_ptr<Pass> createExpandShapePass() {
  return std::make_unique<ExpandShapePass>();
}

std::unique_ptr<Pass> createEmptyReshapePass() {
  return std::make_unique<EmptyReshapePass>();
}

std::unique_ptr<Pass> createCanonicalizerPass() {
  // The patterns' debug names, as MLIR 22 registers them (llvm::getTypeName
  // of the tablegen'd classes in an anonymous namespace), set through the
  // pass's own option so that its other options keep their defaults.
  std::unique_ptr<Pass> pass = mlir::createCanonicalizerPass();
  LogicalResult ok = pass->initializeOptions(
      "disable-patterns={(anonymous namespace)::TruncFSIToFPToSIToFP,"
      "(anonymous namespace)::TruncFUIToFPToUIToFP}",
      [](const Twine &) { return failure(); });
  assert(succeeded(ok) && "canonicalize's disable-patterns option");
  (void)ok;
  return pass;
}

std::unique_ptr<Pass> createElementwiseFusionPass() {
  return std::make_unique<ElementwiseFusionPass>();
}

} // namespace kina
