//===- FuseRows.cpp - One loop over rows for normalisations on the CPU ----===//
//
// kina-fuse-rows (createFuseRowsPass). softmax, log_softmax, layer_norm and
// rms_norm reach the cpu pipeline as several linalg ops over the whole
// tensor (MLIRGen: a row reduction, elementwise ops on the reduced values,
// a second reduction, a final elementwise op that broadcasts them back), and
// each op was one pass over memory: layer_norm read its input three times,
// softmax wrote and re-read a full-size exp intermediate. This pass builds
// one loop nest over rows instead, with MLIR's own transform
// (scf::tileConsumerAndFuseProducersUsingSCF):
//
//  - a root is a linalg.generic with only parallel loops, at least two of
//    them, that reads (directly or through up to kMaxDepth elementwise ops)
//    the result of a row reduction: a linalg op with reduction loops that
//    is not a contraction;
//  - the root is tiled with tiles of 1 in every loop but the innermost, which
//    stays whole (one row per iteration), and its linalg producers are
//    fused into that loop where the slice they must compute is smaller
//    than their whole result (fusionControl): a row reduction per row, its
//    fill per row; a reduction along columns, whose every row tile would
//    need the whole result, stays outside, as do contractions (matmuls:
//    one row at a time would be matrix-vector products) and producers
//    that are not linalg ops;
//  - the loops are `scf.for` (an `scf.forall` would be the natural form,
//    but MLIR 22's canonicalization of its parallel_insert_slice breaks
//    when a dynamic row length folds to 0 after fusion: a tensor<1x0xf32>
//    source against a dynamic size, which fails verification; difftest
//    seed 1016), each marked kRowLoopAttr, the outermost kParallelLoopAttr
//    (src/passes/Parallel.h): its rows are independent, and
//    kina-tile-and-vectorize outlines it for the runtime's thread pool
//    instead of the loops of the ops inside it.
//
// An elementwise producer read by two fused ops (softmax's exp, read by the
// sum and by the division) is fused twice, once per slice; kina-elementwise-
// fusion, run again after this pass, then folds each copy into its one
// consumer, so no row of it is materialised at all: the exp is computed
// twice per element (cheap vector code) instead of written to and read back
// from memory. What remains per row are the reductions' rank-reduced
// results (one element for a row) which bufferization allocates; the cpu
// pipeline promotes those small static buffers to the stack
// (bufferization's promote-buffers-to-stack).
//
// On tensors, after kina-elementwise-fusion and before bufferization, at
// -O1 and above, cpu target only (the cuda target maps rows to blocks and
// warps in src/targets/cuda/GpuMapRows.cpp).
//
//===----------------------------------------------------------------------===//
#include "Parallel.h"
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/IR/LinalgInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/Transforms.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_FUSEROWSPASS
#include "kina/Passes.h.inc"

namespace {

/// How many elementwise ops may stand between a root and the row reduction
/// it reads (layer_norm: reduction, mean, ..., root).
constexpr int kMaxDepth = 4;

/// Marks, while the pass runs, a root whose tiling failed.
constexpr llvm::StringLiteral kFailedAttr = "kina.fuse_rows_failed";

/// Whether `op` is a linalg op the pass may compute one row tile of inside
/// the row loop: linalg.fill, or a linalg.generic that is not a contraction
/// and whose inputs that span reduction loops all read them through the
/// same map (a reduction along the row of one tensor and of values
/// broadcast from outside the row, as MLIRGen's normalisations are), so that
/// a tile of it is never a matrix-vector product.
bool isFusible(Operation *op) {
  if (isa<linalg::FillOp>(op))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.hasIndexSemantics() ||
      linalg::isaContractionOpInterface(
          cast<linalg::LinalgOp>(generic.getOperation())))
    return false;
  // Plain loads and stores only: no constant or broadcast-by-zero indices,
  // no gathers (tensor.extract) in the payload.
  if (!llvm::all_of(generic.getIndexingMapsArray(), [](AffineMap map) {
        return map.isProjectedPermutation(/*allowZeroInResults=*/false);
      }))
    return false;
  if (generic.getBody()
          ->walk([](tensor::ExtractOp) { return WalkResult::interrupt(); })
          .wasInterrupted())
    return false;
  std::optional<AffineMap> reductionMap;
  SmallVector<unsigned> reductionDims;
  generic.getReductionDims(reductionDims);
  for (OpOperand *input : generic.getDpsInputOperands()) {
    AffineMap map = generic.getMatchingIndexingMap(input);
    bool spansReduction = llvm::any_of(
        reductionDims, [&](unsigned dim) { return map.isFunctionOfDim(dim); });
    if (!spansReduction)
      continue;
    if (reductionMap && *reductionMap != map)
      return false;
    reductionMap = map;
  }
  return true;
}

/// Whether `value` is the result of a fusible row reduction, directly or
/// through at most `depth` fusible elementwise generics.
bool readsReduction(Value value, int depth) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || !isFusible(generic))
    return false;
  if (generic.getNumReductionLoops() > 0)
    return true;
  if (depth == 0)
    return false;
  return llvm::any_of(generic.getDpsInputs(), [&](Value input) {
    return readsReduction(input, depth - 1);
  });
}

/// Whether `op` is a root (file comment): all loops parallel, at least two,
/// none of static extent 0, an input that a row reduction computes, read
/// through (d0, ..., dn-2) (the reduced values broadcast along the row).
bool isRoot(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumLoops() < 2 ||
      op.getNumParallelLoops() != op.getNumLoops() || !isFusible(op))
    return false;
  // An empty tensor has no rows to fuse (and MLIR 22's tiling crashes on
  // a static 0 extent).
  if (llvm::is_contained(op.getStaticLoopRanges(), 0))
    return false;
  // The row's reduced values: read as (d0, ..., dn-2) of the root's loops.
  AffineMap outer =
      AffineMap::getMultiDimIdentityMap(op.getNumLoops(), op.getContext())
          .getMajorSubMap(op.getNumLoops() - 1);
  for (OpOperand *input : op.getDpsInputOperands())
    if (op.getMatchingIndexingMap(input) == outer &&
        readsReduction(input->get(), kMaxDepth))
      return true;
  return false;
}

/// Whether every size of `slice` is the constant 1.
bool isUnitSlice(tensor::ExtractSliceOp slice) {
  return llvm::all_of(slice.getMixedSizes(), [](OpFoldResult size) {
    std::optional<int64_t> constant = getConstantIntValue(size);
    return constant && *constant == 1;
  });
}

/// Whether kina-elementwise-fusion folds a row tile of `op` into the one op
/// that reads it inside the row loop (src/passes/workarounds/
/// ElementwiseFusion.cpp): all loops parallel, each result written through
/// a permutation, no init read by the payload.
bool foldsIntoConsumer(linalg::GenericOp op) {
  if (op.getNumParallelLoops() != op.getNumLoops())
    return false;
  for (OpOperand &init : op.getDpsInitsMutable())
    if (!op.getMatchingIndexingMap(&init).isPermutation() ||
        op.payloadUsesValueFromOperand(&init))
      return false;
  return true;
}

/// The fusion control of the row loop (file comment): a fill; a row
/// reduction (one reduction loop, the innermost) when the row needs one
/// element of its result per iteration (a unit slice: no recomputation); an
/// elementwise op when the slice is a single element or a row tile that
/// kina-elementwise-fusion folds away. Anything else (contractions, column
/// reductions, ops whose row tile would be a buffer per row) stays outside.
std::optional<scf::SCFTileAndFuseOptions::ControlFnResult>
fusionControl(tensor::ExtractSliceOp slice, OpResult producer, bool) {
  Operation *op = producer.getOwner();
  bool fuse = false;
  if (isa<linalg::FillOp>(op)) {
    fuse = true;
  } else if (auto generic = dyn_cast<linalg::GenericOp>(op);
             generic && isFusible(generic)) {
    unsigned loops = generic.getNumLoops();
    if (generic.getNumReductionLoops() == 1)
      fuse = generic.getIteratorTypesArray()[loops - 1] ==
                 utils::IteratorType::reduction &&
             isUnitSlice(slice);
    else if (generic.getNumReductionLoops() == 0)
      fuse = isUnitSlice(slice) || foldsIntoConsumer(generic);
  }
  if (!fuse)
    return std::nullopt;
  return scf::SCFTileAndFuseOptions::ControlFnResult{};
}

/// Whether `value` is the result of a row reduction (one reduction loop) of
/// `input` alone, read through `inputMap`, whose payload yields
/// `CombineOp(out, in)` in either operand order, `in` the input's element
/// (or its arith.extf).
template <typename CombineOp>
bool isRowReductionOf(Value value, Value input, AffineMap inputMap) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 ||
      generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 1 ||
      generic.getDpsInputs()[0] != input ||
      generic.getMatchingIndexingMap(generic.getDpsInputOperand(0)) != inputMap)
    return false;
  Block *body = generic.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  auto combine = yield.getOperand(0).getDefiningOp<CombineOp>();
  if (!combine)
    return false;
  Value in = body->getArgument(0), out = body->getArgument(1);
  // MLIRGen widens a bf16/f16 input before its max (arith.extf).
  auto element = [&](Value v) {
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      v = ext.getIn();
    return v == in;
  };
  return (combine.getLhs() == out && element(combine.getRhs())) ||
         (combine.getRhs() == out && element(combine.getLhs()));
}

/// Whether `value`, in the payload of `root`, is the same along the row
/// (the innermost loop): a constant, an input element read through a map
/// without the innermost loop (the row's reduced values, a parameter of
/// the outer dims), or an op of such values.
bool isRowInvariant(linalg::GenericOp root, Value value, int depth = 8) {
  if (matchPattern(value, m_Constant()))
    return true;
  unsigned inner = root.getNumLoops() - 1;
  if (auto arg = dyn_cast<BlockArgument>(value))
    return arg.getOwner() == root.getBody() &&
           arg.getArgNumber() < root.getNumDpsInputs() &&
           !root.getMatchingIndexingMap(
                    root.getDpsInputOperand(arg.getArgNumber()))
                .isFunctionOfDim(inner);
  Operation *op = value.getDefiningOp();
  if (!op || depth == 0 || op->getNumRegions() != 0 || !isPure(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value operand) {
    return isRowInvariant(root, operand, depth - 1);
  });
}

/// Whether `sArg`, an input of `root`, is softmax's row sum of the
/// dividend `eArg`: s = sum(e) over the row, e = exp(x - m), m = max(x)
/// over the row (MLIRGen's form, src/lowering/MLIRGenContract.cpp).
bool isSoftmaxSum(linalg::GenericOp root, Value eValue, Value sValue) {
  auto eArg = dyn_cast<BlockArgument>(eValue);
  auto sArg = dyn_cast<BlockArgument>(sValue);
  Block *body = root.getBody();
  if (!eArg || !sArg || eArg.getOwner() != body || sArg.getOwner() != body ||
      sArg.getArgNumber() >= root.getNumDpsInputs() ||
      eArg.getArgNumber() >= root.getNumDpsInputs())
    return false;
  OpOperand *eOperand = root.getDpsInputOperand(eArg.getArgNumber());
  OpOperand *sOperand = root.getDpsInputOperand(sArg.getArgNumber());
  AffineMap eMap = root.getMatchingIndexingMap(eOperand);
  Value e = eOperand->get(), s = sOperand->get();
  if (!eMap.isIdentity() || !isRowReductionOf<arith::AddFOp>(s, e, eMap))
    return false;
  auto exp = e.getDefiningOp<linalg::GenericOp>();
  if (!exp || exp.getNumDpsInits() != 1 || exp.getNumReductionLoops() != 0)
    return false;
  Block *expBody = exp.getBody();
  auto expOp = cast<linalg::YieldOp>(expBody->getTerminator())
                   .getOperand(0)
                   .getDefiningOp<math::ExpOp>();
  auto sub = expOp ? expOp.getOperand().getDefiningOp<arith::SubFOp>()
                   : arith::SubFOp();
  if (!sub)
    return false;
  Value minuend = sub.getLhs();
  if (auto ext = minuend.getDefiningOp<arith::ExtFOp>())
    minuend = ext.getIn();
  auto xArg = dyn_cast<BlockArgument>(minuend);
  auto mArg = dyn_cast<BlockArgument>(sub.getRhs());
  if (!xArg || !mArg || xArg.getOwner() != expBody ||
      mArg.getOwner() != expBody ||
      xArg.getArgNumber() >= exp.getNumDpsInputs() ||
      mArg.getArgNumber() >= exp.getNumDpsInputs())
    return false;
  OpOperand *xOperand = exp.getDpsInputOperand(xArg.getArgNumber());
  OpOperand *mOperand = exp.getDpsInputOperand(mArg.getArgNumber());
  return exp.getMatchingIndexingMap(mOperand) ==
             root.getMatchingIndexingMap(sOperand) &&
         isRowReductionOf<arith::MaximumFOp>(
             mOperand->get(), xOperand->get(),
             exp.getMatchingIndexingMap(xOperand));
}

/// A division of each element of the row by a value the same along it,
/// a / d, becomes a * (1 / d) in `root`'s payload, one division per row
/// instead of one per element once LLVM's loop-invariant code motion has
/// hoisted 1 / d out of the vector loop (a vdivps per vector was about 18%
/// of softmax's samples on a Zen CPU, docs/performance.md), as PyTorch's
/// CPU softmax and layer_norm do. One more rounding: within 1.5 ulp of
/// the quotient (docs/tolerances.md). Only where 1 / d is exact in range:
/// d a square root (layer_norm and rms_norm's sqrt(var + eps): the root
/// halves the exponent, so 1 / d neither overflows nor underflows), or
/// softmax's row sum (in [1, N]: the max element's exp is 1, every other
/// at most 1). For a general divisor 1 / d overflows below 2^-128 and
/// underflows above 2^126 where a / d does not.
void useReciprocalOfRowDivisor(linalg::GenericOp root, RewriterBase &rewriter) {
  SmallVector<arith::DivFOp> divisions;
  root.getBody()->walk([&](arith::DivFOp div) {
    Value d = div.getRhs();
    if (isRowInvariant(root, div.getLhs()) || !isRowInvariant(root, d))
      return;
    if (d.getDefiningOp<math::SqrtOp>() || isSoftmaxSum(root, div.getLhs(), d))
      divisions.push_back(div);
  });
  for (arith::DivFOp div : divisions) {
    rewriter.setInsertionPoint(div);
    Location loc = div.getLoc();
    Value one = arith::ConstantOp::create(
        rewriter, loc, rewriter.getFloatAttr(div.getType(), 1.0));
    Value reciprocal = arith::DivFOp::create(rewriter, loc, one, div.getRhs());
    rewriter.replaceOpWithNewOp<arith::MulFOp>(div, div.getLhs(), reciprocal);
  }
}

class FuseRowsPass : public impl::FuseRowsPassBase<FuseRowsPass> {
public:
  using FuseRowsPassBase::FuseRowsPassBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    // One root at a time, consumers first: a root fused as a producer into
    // a later root's loop (softmax's exp, which reads the row max, into the
    // division's) is dead by the time its turn comes. The roots are found
    // again each time (the cleanup below may erase dead ops); one whose
    // tiling failed carries kFailedAttr until the end.
    while (true) {
      // With dynamic sizes, the fused loops read the sizes of the ops they
      // replaced (tensor.dim): those become the sizes of their inputs, so
      // that an op fused into an earlier loop is dead (and erased) here.
      RewritePatternSet dims(&getContext());
      memref::populateResolveRankedShapedTypeResultDimsPatterns(dims);
      if (failed(applyPatternsGreedily(getOperation(), std::move(dims))))
        return signalPassFailure();
      linalg::GenericOp root;
      getOperation().walk([&](linalg::GenericOp op) {
        if (!op->hasAttr(kFailedAttr) && isRoot(op) &&
            !op->getParentOfType<scf::ForOp>())
          root = op;
      });
      if (!root)
        break;
      if (root->use_empty()) {
        rewriter.eraseOp(root);
        continue;
      }
      useReciprocalOfRowDivisor(root, rewriter);
      SmallVector<OpFoldResult> sizes(root.getNumLoops(),
                                      rewriter.getIndexAttr(1));
      sizes.back() = rewriter.getIndexAttr(0);
      scf::SCFTilingOptions tiling;
      tiling.setTileSizes(sizes);
      tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForOp);
      scf::SCFTileAndFuseOptions options;
      options.setTilingOptions(tiling);
      options.setFusionControlFn(fusionControl);
      rewriter.setInsertionPoint(root);
      FailureOr<scf::SCFTileAndFuseResult> fused =
          scf::tileConsumerAndFuseProducersUsingSCF(
              rewriter, cast<TilingInterface>(root.getOperation()), options);
      if (failed(fused) || fused->loops.empty()) {
        root->setAttr(kFailedAttr, rewriter.getUnitAttr());
        continue;
      }
      for (OpResult result : root->getResults())
        rewriter.replaceAllUsesWith(result, fused->replacements[result]);
      rewriter.eraseOp(root);
      // Rows are independent: the outermost loop may be split across
      // threads (the loops are in loop-dim order, every one tiled by 1).
      fused->loops.front()->setAttr(kParallelLoopAttr, rewriter.getUnitAttr());
      for (LoopLikeOpInterface loop : fused->loops)
        loop->setAttr(kRowLoopAttr, rewriter.getUnitAttr());
      // The producers fused in, now without uses, go too (consumers first,
      // as the fusion met them).
      for (Operation *producer : llvm::reverse(fused->fusedProducers))
        if (producer->use_empty())
          rewriter.eraseOp(producer);
    }
    getOperation().walk(
        [](linalg::GenericOp op) { op->removeAttr(kFailedAttr); });
    // A fused fill's destination is a slice of a whole-tensor tensor.empty:
    // a tensor.empty of the slice's size instead, so that each row's
    // reduced values are a small buffer of their own.
    RewritePatternSet patterns(&getContext());
    tensor::populateFoldTensorEmptyPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    // A fused fill, and the tensor.empty it fills, keep the location of the
    // whole-tensor ops they were sliced from, which CSE may have shared with
    // another statement's (the zero-filled accumulators of two layer_norms
    // of the same shape): in a row loop they take their user's, so each
    // kernel (--emit=dot, --stats) names its own statement.
    getOperation().walk([](scf::ForOp loop) {
      if (!loop->hasAttr(kRowLoopAttr))
        return;
      loop.getBody()->walk([](linalg::FillOp fill) {
        if (!fill->use_empty())
          fill->setLoc((*fill->getUsers().begin())->getLoc());
      });
      loop.getBody()->walk([](tensor::EmptyOp empty) {
        if (!empty->use_empty())
          empty->setLoc((*empty->getUsers().begin())->getLoc());
      });
    });
  }
};

} // namespace

} // namespace kina
