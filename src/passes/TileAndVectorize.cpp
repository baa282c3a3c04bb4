//===- TileAndVectorize.cpp - linalg ops on buffers to vector loops -------===//
//
// kina-tile-and-vectorize (createTileAndVectorizePass). Every linalg op on
// buffers that MLIR's vectoriser can take (projected-permutation maps,
// parallel and reduction loops, integer or float elements of 8 to 64 bits,
// no `linalg.index` in its payload) becomes a loop nest of vector code,
// built with MLIR's own transforms only:
//
//  1. tiling (scf::tileUsingSCF): the "vector dim" (the loop that most
//     operands read or write contiguously, the innermost on a tie) in tiles
//     of one register (`vector-bits` / the widest element; a tuned
//     "cpu.vectorize" schedule of the op's Kina statement, kina/Tuning.h,
//     may give another width and several registers per tile), every other loop
//     in tiles of 1. So an elementwise chain (one fused linalg.generic) is
//     one loop nest over full rows of vectors (untuned, four registers per
//     tile, then one, so four independent vectors are in flight:
//     defaultVectors); a row reduction (softmax's
//     max and sum, layer_norm's mean and variance) walks its row one vector
//     at a time; a column reduction and a contraction (the matmuls that
//     kina-matmul-kernel does not take: integer, bf16, batched, broadcast)
//     accumulate a vector of the output over their reduction loops;
//  2. peeling (scf::peelForLoopAndSimplifyBounds) of the vector loop: its
//     full tiles have static shapes, the last partial tile stays a linalg op
//     (scalar loops from convert-linalg-to-loops later; a partial tile of
//     four registers is first tiled and peeled again at one);
//  3. vectorisation of each full tile (linalg::vectorize: transfer_read,
//     arith/math on vectors, vector.multi_reduction);
//  4. the subviews folded into the transfers (fold-memref-alias-ops) and
//     the output's read/write pair of each reduction hoisted out of its
//     loops (hoistTileAccumulators, src/passes/workarounds/: MLIR's
//     linalg::hoistRedundantVectorTransfers refuses these pairs once the
//     peeled partial tile uses the same buffer): the accumulator lives in
//     registers, not in memory at every step;
//  5. reduction accumulators widened (widenReductionAccumulators below): a
//     loop-carried `multi_reduction(x, acc)` becomes an elementwise
//     `vacc = combine(vacc, x)` on a vector accumulator and a single
//     multi_reduction after the loop, so the loop does one vector add (max,
//     ...) per step instead of a horizontal reduction; this reassociates
//     float sums (lane-wise partial sums), within docs/tolerances.md; a
//     one-register accumulator is then split in four over steps of four
//     vectors (splitReductionAccumulator), so the loop is not bound by the
//     latency of one add per step;
//  6. MLIR's vector lowering patterns (leading unit dims cast away,
//     multi_reduction to vector.reduction, contraction to outer products,
//     transfer permutations to broadcasts/transposes, 1-D transfers to
//     vector.load/store). n-D transfers left over go through
//     convert-vector-to-scf in the cpu pipeline;
//  0. (before the others) the loops over rows of kina-fuse-rows get
//     their scratch buffers at the top of the outermost one, which runs on
//     the thread pool (step 7); the ops inside are tiled and vectorised as
//     below, their own loops staying on the row loop's thread;
//  7. the outermost loop of each nest, when it is a parallel loop of the op
//     (never a reduction: a row's sum keeps its order whatever the thread
//     count), outlined for the runtime's thread pool (src/passes/
//     Parallel.cpp; kina-parallel-calls makes it a kina_rt_parallel_for
//     call), unless its work is a constant below kMinParallelCost.
//
// On the bufferized module after kina-matmul-kernel (whose f32/f64
// linalg.matmul are gone by then) and after kina-entry-points, so the
// kernel report of --emit=dot / --stats (src/driver/KernelAnalysis.cpp,
// taken after kina-entry-points) still sees one linalg op per kernel. At
// -O1 and above (CpuTarget.cpp); `vector-bits` comes from the processor
// (512 with AVX-512, 256 with AVX, 128 otherwise).
//
//===----------------------------------------------------------------------===//
#include "Parallel.h"
#include "kina/Passes.h"
#include "workarounds/HoistTileAccumulators.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/STLExtras.h"

#include <limits>

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_TILEANDVECTORIZEPASS
#include "kina/Passes.h.inc"

namespace {

/// Marks the full tiles to vectorise between tiling and vectorisation.
constexpr llvm::StringLiteral kFullTileAttr = "kina.full_tile";

/// Marks the loops splitReductionAccumulator made, so that a second
/// accumulator of the same loop, widened later, does not split them again.
constexpr llvm::StringLiteral kSplitAccumulatorAttr = "kina.split_accumulator";

/// Independent accumulator registers a row reduction's vector loop keeps
/// (splitReductionAccumulator).
constexpr unsigned kAccumulatorRegisters = 4;

/// The bit width of `type` when it is an integer or float of 8 to 64 bits
/// in whole bytes (what a vector load reads as memory holds it: i1 is a
/// byte per element in memory but a bit per lane in a vector), else 0.
unsigned vectorElementBits(Type type) {
  if (!type.isIntOrFloat())
    return 0;
  unsigned bits = type.getIntOrFloatBitWidth();
  return (bits % 8 == 0 && bits >= 8 && bits <= 64) ? bits : 0;
}

/// The widest element of `op`'s operands, or 0 when one of them cannot be
/// read as a vector.
unsigned widestElementBits(linalg::LinalgOp op) {
  unsigned widest = 0;
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned bits = vectorElementBits(getElementTypeOrSelf(operand.get()));
    if (!bits)
      return 0;
    widest = std::max(widest, bits);
  }
  return widest;
}

/// Whether `op` is one this pass tiles: buffers only, parallel and
/// reduction loops, projected-permutation maps (no convolution window), no
/// `linalg.index` (linalg::vectorize would need vector.step and gathers for
/// it; those ops stay scalar), vectorisable element types.
bool isCandidate(linalg::LinalgOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumLoops() == 0 ||
      op.getNumParallelLoops() + op.getNumReductionLoops() != op.getNumLoops())
    return false;
  if (!llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
        return map.isProjectedPermutation(/*allowZeroInResults=*/false);
      }))
    return false;
  if (op.hasIndexSemantics())
    return false;
  return widestElementBits(op) != 0;
}

/// The loop vectorised: the one most operands access contiguously (the
/// last result of their indexing map), the innermost on a tie; a loop of
/// static extent 1 only when every loop has it (a row of kina-fuse-rows,
/// [1, N], reads its reduced values [1] contiguously along the unit loop).
unsigned vectorDim(linalg::LinalgOp op) {
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  llvm::SmallVector<unsigned> contiguous(op.getNumLoops(), 0);
  for (AffineMap map : op.getIndexingMapsArray())
    if (map.getNumResults() > 0)
      ++contiguous[map.getDimPosition(map.getNumResults() - 1)];
  unsigned best = op.getNumLoops() - 1;
  for (unsigned d = op.getNumLoops(); d-- > 0;) {
    if (ranges[d] == 1)
      continue;
    if (ranges[best] == 1 || contiguous[d] > contiguous[best])
      best = d;
  }
  return best;
}

/// Registers per tile of an untuned op with no reduction loop whose every
/// operand is read or written contiguously along the vector dim or not at
/// all along it (an elementwise chain, a row broadcast): kElementwiseVectors.
/// One register per tile leaves a chain of dependent math (exp's and
/// tanh's polynomials: about 70 cycles a vector on a Zen 3) bound by the
/// latency of one vector at a time; four independent vectors per step keep
/// the FMA pipes busy (bench/cpu's chain row, 2^24 f32, 1 thread: 29-32 ->
/// 16-20 ms; 8 registers measured slower, 23 ms). Other ops (reductions,
/// whose accumulators splitReductionAccumulator splits instead, and
/// transposes) keep one register per tile.
constexpr unsigned kElementwiseVectors = 4;
unsigned defaultVectors(linalg::LinalgOp op, unsigned dim) {
  if (op.getNumReductionLoops() != 0)
    return 1;
  for (AffineMap map : op.getIndexingMapsArray()) {
    if (!map.isFunctionOfDim(dim))
      continue;
    if (map.getNumResults() == 0 ||
        map.getDimPosition(map.getNumResults() - 1) != dim)
      return 1;
  }
  return kElementwiseVectors;
}

/// Whether `op` is nested in a loop marked kParallelLoopAttr (a row loop of
/// kina-fuse-rows): the loops of the ops inside it stay on its thread.
bool insideParallelLoop(Operation *op) {
  for (Operation *parent = op->getParentOp(); parent;
       parent = parent->getParentOp())
    if (parent->hasAttr(kParallelLoopAttr))
      return true;
  return false;
}

/// Step 0: the loop nests over rows of kina-fuse-rows (kRowLoopAttr; the
/// outermost one already marked kParallelLoopAttr): the static
/// `memref.alloca`s of their inner bodies (a row's reduced values, promoted
/// to the stack in the cpu pipeline) move to the top of the outermost body,
/// where outlining (Parallel.h) hoists them once per piece of work; the
/// outermost loop's grain is the "cpu.vectorize" schedule's (kina/Tuning.h)
/// of the statement of its first linalg op, when tuned.
void lowerRowLoops(RewriterBase &rewriter, ModuleOp module,
                   const TuningParameters *tuning) {
  llvm::SmallVector<scf::ForOp> outer;
  module.walk([&](scf::ForOp loop) {
    if (loop->hasAttr(kRowLoopAttr) && loop->hasAttr(kParallelLoopAttr))
      outer.push_back(loop);
  });
  for (scf::ForOp loop : outer) {
    loop.getBody()->walk([&](scf::ForOp inner) {
      if (!inner->hasAttr(kRowLoopAttr))
        return;
      for (auto alloca : llvm::make_early_inc_range(
               inner.getBody()->getOps<memref::AllocaOp>()))
        if (alloca->getNumOperands() == 0)
          alloca->moveBefore(&loop.getBody()->front());
      inner->removeAttr(kRowLoopAttr);
    });
    loop->removeAttr(kRowLoopAttr);
    loop.getBody()->walk([&](linalg::LinalgOp op) {
      if (const Schedule *s =
              tuning ? tuning->lookup(tuningKey(op, kVectorizeKeyKind))
                     : nullptr) {
        int64_t grain = s->get("grain", kRuntimeGrain);
        if (grain != kRuntimeGrain)
          loop->setAttr(kParallelGrainAttr, rewriter.getI64IntegerAttr(grain));
      }
      return WalkResult::interrupt();
    });
  }
}

/// Workaround: in the full-tile loop `loop` (step `lanes`) left by
/// scf::peelForLoopAndSimplifyBounds, each tile size min(size - iv, lanes)
/// that peeling did not simplify becomes `lanes`. Upstream MLIR 22's
/// rewritePeeledMinMaxOp proves min(ub - iv, step) == step only when the
/// tiled size is a symbol of its own; a size that is itself an affine
/// function of an enclosing loop's induction variable (the partial tile of
/// a wider tiling, tiled again: `min(s0 - d0 - d1, 8)`) stays a min, so the
/// tile's shape stays dynamic and linalg::vectorize skips it. Sound because
/// the loop runs only while iv + lanes <= ub. Checked by @chain_rest in
/// tests/passes/tile-and-vectorize.mlir.
void foldFullTileSizes(RewriterBase &rewriter, scf::ForOp loop,
                       unsigned lanes) {
  Value iv = loop.getInductionVar();
  llvm::SmallVector<affine::AffineMinOp> mins;
  loop.getBody()->walk([&](affine::AffineMinOp min) {
    if (!llvm::is_contained(min.getOperands(), iv))
      return;
    for (AffineExpr e : min.getAffineMap().getResults())
      if (auto c = dyn_cast<AffineConstantExpr>(e);
          c && c.getValue() == int64_t(lanes)) {
        mins.push_back(min);
        return;
      }
  });
  for (affine::AffineMinOp min : mins) {
    rewriter.setInsertionPoint(min);
    rewriter.replaceOp(min, arith::ConstantIndexOp::create(rewriter,
                                                           min.getLoc(), lanes)
                                .getResult());
  }
}

/// Tiles `op` (steps 1 and 2 of the file comment) and marks its full tiles
/// with kFullTileAttr: the vector dim in tiles of `vectors` registers of
/// `vectorBits` bits; its outermost loop, when parallel, runs on the thread
/// pool split at `grain` cost units per piece (Parallel.h). A vector dim
/// statically shorter than one tile gets the widest narrower tile it holds,
/// down to 128 bits (a row of 10 f32 with 512-bit vectors: tiles of 8,
/// as with 256-bit ones, not scalar loops); `op` is left alone when even
/// that does not fit. With `vectors` above 1 and `splitRest`, the partial
/// tile left after the full ones is tiled again in one-register tiles
/// (then scalar loops for the last elements), so a short row loses
/// nothing to the wider tile. `mayRunInParallel` false keeps every loop on
/// the caller's thread (the rest of a row).
LogicalResult tileAndPeel(RewriterBase &rewriter, linalg::LinalgOp op,
                          unsigned vectorBits, unsigned vectors,
                          int64_t grain, bool splitRest = false,
                          bool mayRunInParallel = true) {
  unsigned elementBits = widestElementBits(op);
  unsigned lanes =
      std::max(1u, vectorBits / elementBits) * std::max(1u, vectors);
  unsigned minLanes = std::max(1u, 128 / elementBits);
  unsigned dim = vectorDim(op);
  llvm::SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (!ShapedType::isDynamic(ranges[dim]))
    while (lanes > minLanes && ranges[dim] < int64_t(lanes))
      lanes /= 2;
  if (!ShapedType::isDynamic(ranges[dim]) && ranges[dim] < int64_t(lanes))
    return failure();
  llvm::SmallVector<OpFoldResult> sizes(op.getNumLoops(),
                                        rewriter.getIndexAttr(1));
  sizes[dim] = rewriter.getIndexAttr(lanes);
  scf::SCFTilingOptions options;
  options.setTileSizes(sizes);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return failure();
  // Read before the op is erased (its attributes go with it).
  bool outerParallel =
      op.getIteratorTypesArray()[0] == utils::IteratorType::parallel;
  rewriter.eraseOp(op);
  for (Operation *tile : tiled->tiledOps)
    tile->setAttr(kFullTileAttr, rewriter.getUnitAttr());
  // Every loop is tiled, so the loops are in loop-dim order. The outermost
  // one runs on the thread pool (step 7) when it is a parallel loop.
  if (mayRunInParallel && outerParallel &&
      !insideParallelLoop(tiled->loops[0])) {
    tiled->loops[0]->setAttr(kParallelLoopAttr, rewriter.getUnitAttr());
    if (grain != kRuntimeGrain)
      tiled->loops[0]->setAttr(kParallelGrainAttr,
                               rewriter.getI64IntegerAttr(grain));
  }
  auto loop = dyn_cast<scf::ForOp>(tiled->loops[dim].getOperation());
  scf::ForOp partial;
  if (loop &&
      succeeded(scf::peelForLoopAndSimplifyBounds(rewriter, loop, partial))) {
    partial.walk(
        [](linalg::LinalgOp tile) { tile->removeAttr(kFullTileAttr); });
    // Only the re-tiled rest (the one caller passing false) has tile sizes
    // that depend on an enclosing loop's induction variable.
    if (!mayRunInParallel)
      foldFullTileSizes(rewriter, loop, lanes);
    // A peeled outermost loop: only its full tiles run on the pool.
    partial->removeAttr(kParallelLoopAttr);
    if (splitRest && vectors > 1) {
      linalg::LinalgOp rest;
      partial.walk([&](linalg::LinalgOp tile) { rest = tile; });
      if (rest)
        (void)tileAndPeel(rewriter, rest, vectorBits, 1, grain,
                          /*splitRest=*/false, /*mayRunInParallel=*/false);
    }
  }
  return success();
}

/// The neutral element of `kind` on `type` (an integer or float scalar
/// type): x combined with it is x. -0.0 for a float sum (-0 + -0 is -0).
TypedAttr neutralElement(vector::CombiningKind kind, Type type) {
  using Kind = vector::CombiningKind;
  if (auto floatType = dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    switch (kind) {
    case Kind::ADD:
      return FloatAttr::get(type, llvm::APFloat::getZero(sem, true));
    case Kind::MUL:
      return FloatAttr::get(type, llvm::APFloat::getOne(sem));
    case Kind::MINNUMF:
    case Kind::MINIMUMF:
      return FloatAttr::get(type, llvm::APFloat::getInf(sem, false));
    case Kind::MAXNUMF:
    case Kind::MAXIMUMF:
      return FloatAttr::get(type, llvm::APFloat::getInf(sem, true));
    default:
      return {};
    }
  }
  unsigned bits = type.getIntOrFloatBitWidth();
  llvm::APInt value;
  switch (kind) {
  case Kind::ADD:
  case Kind::OR:
  case Kind::XOR:
  case Kind::MAXUI:
    value = llvm::APInt::getZero(bits);
    break;
  case Kind::MUL:
    value = llvm::APInt(bits, 1);
    break;
  case Kind::AND:
  case Kind::MINUI:
    value = llvm::APInt::getAllOnes(bits);
    break;
  case Kind::MINSI:
    value = llvm::APInt::getSignedMaxValue(bits);
    break;
  case Kind::MAXSI:
    value = llvm::APInt::getSignedMinValue(bits);
    break;
  default:
    return {};
  }
  return IntegerAttr::get(type, value);
}

/// Step 5's second half: `loop` (for iv = lb to ub step s) carries at
/// iter_arg `index` a vector accumulator updated once per iteration,
/// `acc = combine(acc, x)`, a chain of dependent adds (or max, ...): one
/// per step at the add's latency (a row of 4096 f32 with one 256-bit
/// accumulator is 512 dependent vaddps, about 1500 cycles on a Zen 3,
/// where their throughput allows 256). The loop becomes two:
///
///   main: for iv = lb to lb + ((ub - lb) / (F s)) F s step F s
///         the body F times (iv, iv + s, ...), copy k combining into its
///         own accumulator (copy 0 into acc, the others into F - 1 new
///         ones starting at the neutral element); other iter_args chained
///         through the copies in order
///   rest: `loop` itself from there to ub, starting from
///         (acc + acc1) + (acc2 + acc3)
///
/// F = kAccumulatorRegisters / (registers of the accumulator at
/// `vectorBits`), nothing when below 2 (a tuned schedule of several
/// registers per tile already has independent registers). Sums are
/// reassociated once more (lane-wise partial sums already were, step 5),
/// the same way for every thread count; docs/tolerances.md.
void splitReductionAccumulator(RewriterBase &rewriter, scf::ForOp loop,
                               unsigned index, vector::CombiningKind kind,
                               TypedAttr neutral, unsigned vectorBits) {
  auto accType = cast<VectorType>(loop.getRegionIterArgs()[index].getType());
  unsigned bits = accType.getNumElements() *
                  accType.getElementType().getIntOrFloatBitWidth();
  unsigned registers = std::max(1u, bits / std::max(1u, vectorBits));
  unsigned factor = kAccumulatorRegisters / registers;
  if (factor < 2 || loop->hasAttr(kSplitAccumulatorAttr) ||
      !loop.getLowerBound().getType().isIndex())
    return;
  Location loc = loop.getLoc();
  rewriter.setInsertionPoint(loop);
  Value lb = loop.getLowerBound(), ub = loop.getUpperBound();
  Value step = loop.getStep();
  Value span = arith::MulIOp::create(
      rewriter, loc, step, arith::ConstantIndexOp::create(rewriter, loc, factor));
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value length = arith::MaxSIOp::create(
      rewriter, loc, arith::SubIOp::create(rewriter, loc, ub, lb), zero);
  Value mainEnd = arith::AddIOp::create(
      rewriter, loc, lb,
      arith::MulIOp::create(
          rewriter, loc, arith::DivUIOp::create(rewriter, loc, length, span),
          span));
  Value neutralVector = arith::ConstantOp::create(
      rewriter, loc, DenseElementsAttr::get(accType, neutral));
  SmallVector<Value> inits(loop.getInitArgs());
  for (unsigned k = 1; k < factor; ++k)
    inits.push_back(neutralVector);
  unsigned n = loop.getNumRegionIterArgs();
  Block *body = loop.getBody();
  auto yield = cast<scf::YieldOp>(body->getTerminator());
  auto main = scf::ForOp::create(
      rewriter, loc, lb, mainEnd, span, inits,
      [&](OpBuilder &b, Location l, Value iv, ValueRange args) {
        SmallVector<Value> current(args.take_front(n));
        SmallVector<Value> extra(args.drop_front(n));
        for (unsigned k = 0; k < factor; ++k) {
          IRMapping map;
          Value offset = k == 0 ? iv
                                : arith::AddIOp::create(
                                      b, l, iv,
                                      arith::MulIOp::create(
                                          b, l, step,
                                          arith::ConstantIndexOp::create(
                                              b, l, k)))
                                      .getResult();
          map.map(loop.getInductionVar(), offset);
          for (unsigned i = 0; i < n; ++i)
            map.map(loop.getRegionIterArgs()[i],
                    i == index && k > 0 ? extra[k - 1] : current[i]);
          for (Operation &op : body->without_terminator())
            b.clone(op, map);
          for (unsigned i = 0; i < n; ++i) {
            Value next = map.lookupOrDefault(yield.getOperand(i));
            if (i == index && k > 0)
              extra[k - 1] = next;
            else
              current[i] = next;
          }
        }
        SmallVector<Value> results(current);
        results.append(extra);
        scf::YieldOp::create(b, l, results);
      });
  main->setAttr(kSplitAccumulatorAttr, rewriter.getUnitAttr());
  // The rest starts where the main loop stopped, from the accumulators
  // combined pairwise (between the two loops: `main` was built before it).
  rewriter.setInsertionPointAfter(main);
  SmallVector<Value> partial{main.getResult(index)};
  for (unsigned k = 1; k < factor; ++k)
    partial.push_back(main.getResult(n + k - 1));
  while (partial.size() > 1) {
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < partial.size(); i += 2)
      next.push_back(vector::makeArithReduction(rewriter, loc, kind,
                                                partial[i + 1], partial[i]));
    if (partial.size() % 2)
      next.push_back(partial.back());
    partial = std::move(next);
  }
  rewriter.modifyOpInPlace(loop, [&] {
    loop.getLowerBoundMutable().assign(mainEnd);
    for (unsigned i = 0; i < n; ++i)
      loop.getInitArgsMutable()[i].assign(i == index ? partial.front()
                                                     : main.getResult(i));
    loop->setAttr(kSplitAccumulatorAttr, rewriter.getUnitAttr());
  });
}

/// Step 5 of the file comment on one loop: each iter_arg used only as the
/// accumulator of one vector.multi_reduction whose result is yielded back
/// into it is replaced by a vector accumulator of the reduction's source
/// type. Returns whether the loop changed.
bool widenReductionAccumulators(RewriterBase &rewriter, scf::ForOp loop,
                                unsigned vectorBits) {
  auto yield = cast<scf::YieldOp>(loop.getBody()->getTerminator());
  for (auto [index, arg] : llvm::enumerate(loop.getRegionIterArgs())) {
    if (!arg.hasOneUse())
      continue;
    auto reduction =
        dyn_cast<vector::MultiDimReductionOp>(*arg.getUsers().begin());
    if (!reduction || reduction.getAcc() != arg ||
        !reduction.getResult().hasOneUse() ||
        yield.getOperand(index) != reduction.getResult())
      continue;
    auto sourceType = cast<VectorType>(reduction.getSourceVectorType());
    TypedAttr neutral =
        neutralElement(reduction.getKind(), sourceType.getElementType());
    if (!neutral)
      continue;
    Location loc = reduction.getLoc();
    // The new loop: the old iter_args plus the vector accumulator.
    rewriter.setInsertionPoint(loop);
    Value init = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(sourceType, neutral));
    Value accInit = loop.getInitArgs()[index];
    auto yieldNew = [&](OpBuilder &b, Location,
                        ArrayRef<BlockArgument> args) -> SmallVector<Value> {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(reduction);
      return {vector::makeArithReduction(b, loc, reduction.getKind(),
                                         reduction.getSource(), args[0])};
    };
    FailureOr<LoopLikeOpInterface> widened =
        loop.replaceWithAdditionalYields(rewriter, init, true, yieldNew);
    if (failed(widened))
      return false;
    auto newLoop = cast<scf::ForOp>(widened->getOperation());
    // The old accumulator now only passes through: the reduction returns it
    // unchanged, and the vector accumulator is reduced once after the loop.
    // Read before the reduction is replaced (erased).
    vector::CombiningKind kind = reduction.getKind();
    SmallVector<int64_t> reductionDims(reduction.getReductionDims());
    rewriter.replaceOp(reduction, newLoop.getRegionIterArgs()[index]);
    splitReductionAccumulator(rewriter, newLoop,
                              newLoop.getNumRegionIterArgs() - 1, kind,
                              neutral, vectorBits);
    rewriter.setInsertionPointAfter(newLoop);
    Value vacc = newLoop.getResults().back();
    Value result = vector::MultiDimReductionOp::create(
        rewriter, loc, accInit.getType(), kind, vacc, accInit, reductionDims);
    rewriter.replaceAllUsesWith(newLoop.getResult(index), result);
    return true;
  }
  return false;
}

/// Step 6 of the file comment: MLIR's vector lowering patterns, in stages
/// as upstream's transform-dialect lowering applies them (some stages'
/// patterns undo each other's forms when mixed in one greedy run).
LogicalResult lowerVectors(Operation *root) {
  MLIRContext *context = root->getContext();
  using Populate = llvm::function_ref<void(RewritePatternSet &)>;
  auto stage = [&](Populate populate) {
    RewritePatternSet patterns(context);
    populate(patterns);
    return applyPatternsGreedily(root, std::move(patterns));
  };
  Populate stages[] = {
      [](RewritePatternSet &patterns) {
        vector::populateCastAwayVectorLeadingOneDimPatterns(patterns);
        // The vector ops' canonicalizations (a multi_reduction over unit
        // dims becomes elementwise, broadcasts and shape_casts fold).
        MLIRContext *context = patterns.getContext();
        for (RegisteredOperationName op : context->getRegisteredOperations())
          if (op.getDialectNamespace() ==
              vector::VectorDialect::getDialectNamespace())
            op.getCanonicalizationPatterns(patterns, context);
      },
      [](RewritePatternSet &patterns) {
        vector::populateVectorContractLoweringPatterns(
            patterns, vector::VectorContractLowering::OuterProduct);
        vector::populateVectorOuterProductLoweringPatterns(patterns);
        vector::populateVectorMultiReductionLoweringPatterns(
            patterns, vector::VectorMultiReductionLowering::InnerReduction);
      },
      [](RewritePatternSet &patterns) {
        vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
        vector::populateVectorBroadcastLoweringPatterns(patterns);
        vector::populateVectorTransposeLoweringPatterns(
            patterns, vector::VectorTransposeLowering::EltWise);
      },
      [](RewritePatternSet &patterns) {
        vector::populateVectorTransferLoweringPatterns(patterns,
                                                       /*maxTransferRank=*/1);
        vector::populateVectorBroadcastLoweringPatterns(patterns);
        vector::populateVectorShapeCastLoweringPatterns(patterns);
      },
  };
  for (auto [index, populate] : llvm::enumerate(stages))
    if (failed(stage(populate)))
      return root->emitError() << "kina-tile-and-vectorize: vector lowering "
                                  "stage "
                               << index << " did not converge";
  return success();
}

struct TileAndVectorizePass final
    : impl::TileAndVectorizePassBase<TileAndVectorizePass> {
  using TileAndVectorizePassBase::TileAndVectorizePassBase;
  TileAndVectorizePass(const TileAndVectorizePassOptions &options,
                       std::shared_ptr<const TuningParameters> tuning)
      : TileAndVectorizePassBase(options), tuning(std::move(tuning)) {}

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    IRRewriter rewriter(context);

    // Step 0: kina-fuse-rows' loops over rows.
    lowerRowLoops(rewriter, module, tuning.get());

    // Steps 1-2.
    llvm::SmallVector<linalg::LinalgOp> candidates;
    module.walk([&](linalg::LinalgOp op) {
      if (isCandidate(op))
        candidates.push_back(op);
    });
    if (candidates.empty())
      return;
    for (linalg::LinalgOp op : candidates) {
      // The op's "cpu.vectorize" schedule (kina/Tuning.h), if tuned.
      // Keyed by the Kina statement: all its ops share the schedule.
      const Schedule *s =
          tuning ? tuning->lookup(tuningKey(op, kVectorizeKeyKind)) : nullptr;
      int64_t bits = s ? s->get("vbits", 0) : 0;
      (void)tileAndPeel(rewriter, op, bits > 0 ? unsigned(bits) : vectorBits,
                        s ? unsigned(s->get("vectors", 1))
                          : defaultVectors(op, vectorDim(op)),
                        s ? s->get("grain", kRuntimeGrain) : kRuntimeGrain,
                        /*splitRest=*/!s);
    }

    // Static shapes for the full tiles: constant subview sizes become
    // static types, the casts fold into the linalg ops.
    OpPassManager cleanup("builtin.module");
    cleanup.addPass(createCanonicalizerPass());
    if (failed(runPipeline(cleanup, module)))
      return signalPassFailure();

    // Step 3.
    llvm::SmallVector<linalg::LinalgOp> tiles;
    module.walk([&](linalg::LinalgOp op) {
      if (op->hasAttr(kFullTileAttr))
        tiles.push_back(op);
    });
    for (linalg::LinalgOp op : tiles) {
      op->removeAttr(kFullTileAttr);
      if (!op.hasPureBufferSemantics() ||
          !llvm::all_of(op->getOperandTypes(),
                        [](Type t) {
                          auto shaped = dyn_cast<ShapedType>(t);
                          return !shaped || shaped.hasStaticShape();
                        }) ||
          failed(linalg::vectorizeOpPrecondition(op)))
        continue;
      rewriter.setInsertionPoint(op);
      // Contractions as vector.contract (lowered to outer products below)
      // rather than broadcasts and a multi_reduction over the unit k tile.
      bool contraction = linalg::isaContractionOpInterface(op);
      if (succeeded(linalg::vectorize(rewriter, op, /*inputVectorSizes=*/{},
                                      /*inputScalableVecDims=*/{},
                                      /*vectorizeNDExtract=*/false,
                                      /*flatten1DDepthwiseConv=*/false,
                                      /*assumeDynamicDimsMatchVecSizes=*/false,
                                      /*createNamedContraction=*/contraction)))
        rewriter.eraseOp(op);
    }

    // Step 4.
    OpPassManager fold("builtin.module");
    fold.addPass(memref::createFoldMemRefAliasOpsPass());
    fold.addPass(createCanonicalizerPass());
    if (failed(runPipeline(fold, module)))
      return signalPassFailure();
    hoistTileAccumulators(module);

    // Step 5, innermost loops first; each change replaces the loop, so walk
    // again until nothing changes.
    bool changed = true;
    while (changed) {
      changed = false;
      module.walk([&](scf::ForOp loop) {
        if (changed)
          return WalkResult::interrupt();
        changed = widenReductionAccumulators(rewriter, loop, vectorBits);
        return changed ? WalkResult::interrupt() : WalkResult::advance();
      });
    }

    // Step 6.
    if (failed(lowerVectors(module)))
      return signalPassFailure();

    // Step 7.
    outlineMarkedLoops(rewriter, module);
  }

private:
  std::shared_ptr<const TuningParameters> tuning;
};

} // namespace

std::unique_ptr<Pass>
createTileAndVectorizePass(const TileAndVectorizePassOptions &options,
                           std::shared_ptr<const TuningParameters> tuning) {
  return std::make_unique<TileAndVectorizePass>(options, std::move(tuning));
}

} // namespace kina
