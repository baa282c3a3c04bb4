//===- ShareRowValues.cpp - One computation of a value a row loop needs twice
//-===//
//
// kina-share-row-values (createShareRowValuesPass). After kina-fuse-rows and
// the elementwise fusion after it, softmax's row loop computes exp(x - m)
// twice per element: once in the payload of the row sum, s = sum(exp(x -
// m)), and again in the payload of the final op, exp(x - m) * (1 / s)
// (src/passes/FuseRows.cpp: each fused copy of the exp folded into its one
// consumer). Recomputing is the right trade for cheap values, but an `exp`
// is some fifteen vector instructions: on a Zen CPU, where a 256-bit
// operation takes two 128-bit halves, the two exps were about 80% of
// softmax's samples (docs/performance.md). This pass computes such a
// value once per element, into the row of the final op's destination, and
// lets both ops read it there (the row, 16 KiB for 4096 f32, stays in the
// L1 or L2 cache between the three steps):
//
//   e = generic ins(reduction's inputs) outs(row of the result) { v }
//   s = generic ins(e) outs(init)          { out + in }      (the reduction)
//   r = generic ins(final op's inputs) outs(e) { ... out ... } (v -> out)
//
// Matched, in a loop over rows of kina-fuse-rows (kRowLoopAttr): a
// reduction S (one reduction loop, the innermost; one init) whose payload
// yields `out + v` (either order), v computed from S's inputs and
// containing a `math` dialect op (a function worth not recomputing: exp,
// log, tanh, ...), read by a root R (all loops parallel, one init, a row of
// the loop's result through the identity map, payload not reading its
// init) whose payload computes the same v from the same inputs read
// through the same maps, with v of R's element type (an f32 or f64
// softmax; bf16 and f16 results, which cannot hold the f32 value, keep the
// recomputation). The sums are those of S, in the same order, and R's
// results the same bits: only where v is computed changes.
//
// On tensors, after the last elementwise fusion and CSE of the cpu
// pipeline (a later elementwise fusion's RemoveOutsDependency would give e
// a tensor.empty destination again), before bufferization, at -O1 and
// above, cpu target only.
//
//===----------------------------------------------------------------------===//
#include "Parallel.h"
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_SHAREROWVALUESPASS
#include "kina/Passes.h.inc"

namespace {

/// Whether `a`, in the payload of `opA`, and `b`, in that of `opB`, compute
/// the same value: input block arguments for the same tensor read through
/// the same indexing map, or ops of one name, attributes and result types
/// without regions on such operands (up to `depth` ops deep).
bool sameValue(linalg::GenericOp opA, Value a, linalg::GenericOp opB, Value b,
               int depth = 16) {
  auto argA = dyn_cast<BlockArgument>(a);
  auto argB = dyn_cast<BlockArgument>(b);
  if (argA || argB) {
    if (!argA || !argB || argA.getOwner() != opA.getBody() ||
        argB.getOwner() != opB.getBody() ||
        argA.getArgNumber() >= opA.getNumDpsInputs() ||
        argB.getArgNumber() >= opB.getNumDpsInputs())
      return false;
    OpOperand *inA = opA.getDpsInputOperand(argA.getArgNumber());
    OpOperand *inB = opB.getDpsInputOperand(argB.getArgNumber());
    return inA->get() == inB->get() &&
           opA.getMatchingIndexingMap(inA) == opB.getMatchingIndexingMap(inB);
  }
  Operation *x = a.getDefiningOp(), *y = b.getDefiningOp();
  if (!x || !y || depth == 0)
    return false;
  // A value defined outside both payloads (a constant hoisted by CSE).
  if (!opA->isProperAncestor(x) && !opB->isProperAncestor(y))
    return a == b;
  if (x->getName() != y->getName() || x->getNumRegions() != 0 ||
      y->getNumRegions() != 0 ||
      x->getAttrDictionary() != y->getAttrDictionary() ||
      x->getResultTypes() != y->getResultTypes() ||
      x->getNumOperands() != y->getNumOperands() ||
      cast<OpResult>(a).getResultNumber() !=
          cast<OpResult>(b).getResultNumber() ||
      !isMemoryEffectFree(x))
    return false;
  for (auto [p, q] : llvm::zip(x->getOperands(), y->getOperands()))
    if (!sameValue(opA, p, opB, q, depth - 1))
      return false;
  return true;
}

/// Whether the computation of `v` in its payload contains a `math` op.
bool hasMathOp(Value v, int depth = 16) {
  Operation *op = v.getDefiningOp();
  if (!op || depth == 0 || isa<BlockArgument>(v))
    return false;
  if (isa<math::MathDialect>(op->getDialect()))
    return true;
  return llvm::any_of(op->getOperands(),
                      [&](Value x) { return hasMathOp(x, depth - 1); });
}

/// A value of `root`'s payload computing what `v` computes in `reduce`'s.
Value findInPayload(linalg::GenericOp root, linalg::GenericOp reduce, Value v) {
  Value found;
  root.getBody()->walk([&](Operation *op) {
    for (Value result : op->getResults())
      if (!found && sameValue(reduce, v, root, result))
        found = result;
  });
  return found;
}

/// Erases the ops of `body` whose results are unused (a copied payload's
/// ops that only computed a value no longer needed), last first.
void eraseDeadOps(Block *body, RewriterBase &rewriter) {
  SmallVector<Operation *> ops;
  for (Operation &op : body->without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops))
    if (op->use_empty() && isMemoryEffectFree(op))
      rewriter.eraseOp(op);
}

/// The rewrite of the file comment for the root `root`, if it matches.
void shareRowValue(linalg::GenericOp root, RewriterBase &rewriter) {
  if (root.getNumDpsInits() != 1 ||
      root.getNumParallelLoops() != root.getNumLoops() ||
      root.payloadUsesValueFromOperand(root.getDpsInitOperand(0)) ||
      !root.getMatchingIndexingMap(root.getDpsInitOperand(0)).isIdentity())
    return;
  // The row of the result: the root's destination, a slice of the loop's
  // result, or (the elementwise fusion's RemoveOutsDependency gave it a
  // tensor.empty) the slice its one tensor.insert_slice writes.
  Value dest = root.getDpsInits()[0];
  auto destSlice = dest.getDefiningOp<tensor::ExtractSliceOp>();
  auto insert = root->hasOneUse()
                    ? dyn_cast<tensor::InsertSliceOp>(*root->getUsers().begin())
                    : tensor::InsertSliceOp();
  bool fromEmpty = dest.getDefiningOp<tensor::EmptyOp>() && insert &&
                   insert.getSource() == root.getResult(0);
  if (!(destSlice && destSlice->getBlock() == root->getBlock()) && !fromEmpty)
    return;
  // What the row's slice reads (the loop's result, the row index) must be
  // there before the reduction: block arguments or ops outside the block.
  Operation *sliceOp = destSlice ? destSlice.getOperation() : insert;
  auto definedBefore = [&](Operation *first) {
    return llvm::all_of(sliceOp->getOperands(), [&](Value x) {
      if (destSlice || x != insert.getSource()) {
        Operation *def = x.getDefiningOp();
        return !def || def->getBlock() != root->getBlock() ||
               def->isBeforeInBlock(first);
      }
      return true;
    });
  };
  Type elem = getElementTypeOrSelf(dest.getType());
  for (Value input : root.getDpsInputs()) {
    auto reduce = input.getDefiningOp<linalg::GenericOp>();
    if (!reduce || reduce->getBlock() != root->getBlock() ||
        reduce.getNumDpsInits() != 1 || reduce.getNumReductionLoops() != 1 ||
        reduce.getNumLoops() != root.getNumLoops() ||
        reduce.getIteratorTypesArray().back() !=
            utils::IteratorType::reduction ||
        !reduce->hasOneUse())
      continue;
    Block *body = reduce.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    auto add = yield.getOperand(0).getDefiningOp<arith::AddFOp>();
    Value out = body->getArgument(reduce.getNumDpsInputs());
    if (!add || add->getBlock() != body ||
        (add.getLhs() != out && add.getRhs() != out))
      continue;
    Value v = add.getLhs() == out ? add.getRhs() : add.getLhs();
    if (v.getType() != elem || !hasMathOp(v))
      continue;
    // v must use the reduction's init only through the add.
    if (llvm::any_of(out.getUsers(),
                     [&](Operation *user) { return user != add; }))
      continue;
    Value w = findInPayload(root, reduce, v);
    if (!w)
      continue;
    // The row of the result must exist before the reduction reads e.
    if (!definedBefore(reduce))
      continue;
    if (fromEmpty) {
      rewriter.setInsertionPoint(reduce);
      dest = tensor::ExtractSliceOp::create(
          rewriter, insert.getLoc(), cast<RankedTensorType>(dest.getType()),
          insert.getDest(), insert.getMixedOffsets(), insert.getMixedSizes(),
          insert.getMixedStrides());
    } else if (reduce->isBeforeInBlock(destSlice)) {
      rewriter.moveOpBefore(destSlice, reduce);
    }
    Location loc = reduce.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    unsigned loops = root.getNumLoops();
    AffineMap id = AffineMap::getMultiDimIdentityMap(loops, ctx);
    SmallVector<utils::IteratorType> parallel(loops,
                                              utils::IteratorType::parallel);
    SmallVector<AffineMap> eMaps;
    for (OpOperand *in : reduce.getDpsInputOperands())
      eMaps.push_back(reduce.getMatchingIndexingMap(in));
    eMaps.push_back(id);

    // e: v into the row of the result.
    rewriter.setInsertionPoint(reduce);
    auto e = linalg::GenericOp::create(
        rewriter, loc, TypeRange{dest.getType()}, reduce.getDpsInputs(),
        ValueRange{dest}, eMaps, parallel,
        [&](OpBuilder &b, Location l, ValueRange args) {
          IRMapping map;
          for (unsigned i = 0; i < reduce.getNumDpsInputs(); ++i)
            map.map(body->getArgument(i), args[i]);
          for (Operation &op : body->without_terminator()) {
            if (&op == add.getOperation())
              break;
            b.clone(op, map);
          }
          linalg::YieldOp::create(b, l, map.lookup(v));
        });

    // s: the same sums, of e.
    SmallVector<AffineMap> sMaps{
        id, reduce.getMatchingIndexingMap(reduce.getDpsInitOperand(0))};
    bool vFirst = add.getLhs() == v;
    auto sum = linalg::GenericOp::create(
        rewriter, loc, reduce.getResultTypes(), ValueRange{e.getResult(0)},
        reduce.getDpsInits(), sMaps, reduce.getIteratorTypesArray(),
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value r = vFirst ? arith::AddFOp::create(b, l, args[0], args[1])
                           : arith::AddFOp::create(b, l, args[1], args[0]);
          cast<arith::AddFOp>(r.getDefiningOp())
              .setFastmathAttr(add.getFastmathAttr());
          linalg::YieldOp::create(b, l, r);
        });
    rewriter.replaceOp(reduce, sum.getResults());

    // r: the root, reading e as its destination.
    rewriter.setInsertionPoint(root);
    Block *rootBody = root.getBody();
    auto shared = linalg::GenericOp::create(
        rewriter, root.getLoc(), root.getResultTypes(), root.getDpsInputs(),
        ValueRange{e.getResult(0)}, root.getIndexingMapsArray(),
        root.getIteratorTypesArray(),
        [&](OpBuilder &b, Location, ValueRange args) {
          IRMapping map;
          for (auto [from, to] : llvm::zip(rootBody->getArguments(), args))
            map.map(from, to);
          map.map(w, args.back());
          for (Operation &op : rootBody->getOperations()) {
            // Ops only w needed are dead in the clone and erased below.
            if (op.getNumResults() == 1 && op.getResult(0) == w)
              continue;
            b.clone(op, map);
          }
        });
    Operation *oldDest = root.getDpsInits()[0].getDefiningOp();
    rewriter.replaceOp(root, shared.getResults());
    if (oldDest && oldDest->use_empty() && isMemoryEffectFree(oldDest))
      rewriter.eraseOp(oldDest);
    eraseDeadOps(e.getBody(), rewriter);
    eraseDeadOps(shared.getBody(), rewriter);
    // The inputs only w read (x, the row max) are read no more.
    RewritePatternSet unused(rewriter.getContext());
    linalg::populateEraseUnusedOperandsAndResultsPatterns(unused);
    (void)applyOpPatternsGreedily(ArrayRef<Operation *>{shared},
                                  std::move(unused));
    return;
  }
}

class ShareRowValuesPass
    : public impl::ShareRowValuesPassBase<ShareRowValuesPass> {
public:
  using ShareRowValuesPassBase::ShareRowValuesPassBase;

  void runOnOperation() override {
    IRRewriter rewriter(&getContext());
    SmallVector<linalg::GenericOp> roots;
    getOperation().walk([&](linalg::GenericOp op) {
      auto loop = dyn_cast<scf::ForOp>(op->getParentOp());
      if (loop && loop->hasAttr(kRowLoopAttr) && op.hasPureTensorSemantics())
        roots.push_back(op);
    });
    for (linalg::GenericOp root : roots)
      shareRowValue(root, rewriter);
  }
};

} // namespace

} // namespace kina
