//===- ElementwiseFusion.cpp - Elementwise fusion within Kina's limits ----===//
//
// An MLIR 22 workaround (src/passes/workarounds/: every place where kinac
// steps around a bug of upstream MLIR 22 is a file here, each naming the bug
// it avoids and the test that shows it).
//
// kina-elementwise-fusion (createElementwiseFusionPass): MLIR's
// `linalg-fuse-elementwise-ops` (the same patterns, in the same order)
// with a control function that refuses two fusions:
// - folding a reshape into a linalg op by expansion when the expanded op
//   would have more than KINA_MAX_RANK (8) loops. The pass bubbles the
//   expand_shape that re-inserts keepdims' unit dims up through the
//   reduction: reduce_sum {axes = [1, 4, 2, 0], keepdims = true} of a
//   transposed bf16[1, 5, 3, 3, 4] became 9-loop ops on rank-9 tensors,
//   which the runtime cannot allocate (status 1, "rank 9 outside
//   0..8"; difftest transpose-reduce-keepdims-rank9-alloc). MLIR has no
//   rank limit; Kina's ABI has;
// - fusing a producer whose payload reads its init (output) value into
//   a consumer that reads it through a map that is not a permutation
//   (a broadcast): the fused op keeps that init as an output under the
//   broadcast map, so every consumer iteration updates the same element
//   (a rank-0 sum accumulated once per element; difftest
//   select-scalar-reduce-sum-wrong-result; MLIRGenContract also emits
//   rank-0 reductions elementwise).
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"
#include "kina/abi.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_ELEMENTWISEFUSIONPASS
#include "kina/Passes.h.inc"

namespace {

/// True when fusing the producer of `fused` (a linalg op reading it) is
/// sound: MLIR's default (the producer has one use), unless the producer's
/// payload reads one of its inits and the consumer reads the result through
/// a map that is not a permutation (see the file comment).
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

/// True when the consumer of `fused` is a contraction (a matmul, named or
/// generic: linalg::isaContractionOpInterface).
bool intoContraction(OpOperand *fused) {
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  return consumer && linalg::isaContractionOpInterface(consumer);
}

/// True when the producer of `fused` rounds a contraction's product
/// (roundsContraction): with keep-contractions it stays its own op, so the
/// cuda target's matmul writes the rounded product itself (cuBLASLt's D of
/// the half type, kina-gpu-map-matmul's truncationAfter; the attention
/// kernel's output, kina-gpu-map-attention) and its consumer reads half the
/// bytes, instead of the f32 product going through memory.
bool producerRoundsContraction(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  return producer && roundsContraction(producer);
}

class ElementwiseFusionPass
    : public impl::ElementwiseFusionPassBase<ElementwiseFusionPass> {
public:
  using ElementwiseFusionPassBase::ElementwiseFusionPassBase;

  // The body of MLIR 22's LinalgElementwiseOpFusionPass with kinac's
  // control functions.
  void runOnOperation() override {
    MLIRContext *context = &getContext();
    RewritePatternSet patterns(context);
    bool keep = keepContractions;
    linalg::ControlFusionFn control = [keep](OpOperand *fused) {
      return fusionIsSound(fused) &&
             !(keep && (intoContraction(fused) ||
                        producerRoundsContraction(fused)));
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::ControlFusionFn reshapeControl = [keep](OpOperand *fused) {
      if (!expansionKeepsRank(fused))
        return false;
      if (!keep)
        return true;
      // A reshape folded into a contraction (either side) changes its loops.
      auto producer = fused->get().getDefiningOp<linalg::LinalgOp>();
      return !intoContraction(fused) &&
             !(producer && linalg::isaContractionOpInterface(producer));
    };
    linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, reshapeControl);
    tensor::populateBubbleUpExpandShapePatterns(patterns);
    affine::AffineApplyOp::getCanonicalizationPatterns(patterns, context);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, context);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, context);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, context);
    context->getLoadedDialect<linalg::LinalgDialect>()
        ->getCanonicalizationPatterns(patterns);
    linalg::populateConstantFoldLinalgOperations(patterns, control);
    (void)applyPatternsGreedily(
        getOperation(), std::move(patterns),
        GreedyRewriteConfig().setUseTopDownTraversal(true));
  }
};

} // namespace

bool roundsContraction(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      op.getNumReductionLoops() != 0 ||
      !llvm::all_of(op.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }))
    return false;
  auto source = op.getDpsInputs()[0].getDefiningOp<linalg::LinalgOp>();
  if (!source || !linalg::isaContractionOpInterface(source))
    return false;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto trunc = yield.getNumOperands() == 1
                   ? yield.getOperand(0).getDefiningOp<arith::TruncFOp>()
                   : arith::TruncFOp();
  return body.getOperations().size() == 2 && trunc &&
         trunc.getIn() == body.getArgument(0) &&
         trunc.getIn().getType().isF32() &&
         (trunc.getType().isBF16() || trunc.getType().isF16());
}

} // namespace kina
