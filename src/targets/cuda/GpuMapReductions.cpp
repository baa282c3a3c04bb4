//===- GpuMapReductions.cpp - Reductions as block-per-output kernels ------===//
//
// The pass `kina-gpu-map-reductions` of the cuda target. It turns each
// host-side bufferized `linalg.generic` with reduction loops (reduce_*,
// the max/sum/mean/variance steps of softmax, log_softmax, layer_norm and
// rms_norm, argmax/argmin, and the K loop of matmuls the matmul mapper did
// not take) into a kernel where one block of 256 threads computes one
// output point (a grid-stride loop over the points, at most 65535 blocks):
//
//   for p = blockIdx.x; p < NP; p += gridDim.x      NP: parallel points
//     thread t folds the elements r = t, t+256, ... of the NR reduction
//       points (innermost reduction dim fastest: a row's consecutive
//       elements go to consecutive threads, coalesced);
//     its partial goes to shared memory; a tree of 8 halving steps, each
//       after a barrier, combines the partials of the first min(NR, 256)
//       threads; thread 0 combines the init with the total and stores it.
//
// A reduction whose innermost loop is parallel (over outer dims:
// reduce_sum over axis 0 of [R, C]) would read a column per block,
// uncoalesced; when each yield is `comb(acc, e)` with a combiner that has
// an identity (GpuCodegen.h, combinerOf) it gets the column kernel
// instead: blocks of 32 x 32 threads, x over 32 consecutive output points
// (a warp reads 32 consecutive elements of a row), y over slices of the
// reduced extent (4 loads in flight per thread and step, starting from the
// identity), a 5-step tree over y in workgroup memory, and thread (x, 0)
// storing comb(init, total). Row reductions with their producers and
// consumers (softmax, the norms) are usually taken before this pass by
// kina-gpu-map-rows.
//
// The region of a reduction generic folds one element into the
// accumulator, `acc' = yield(x, acc)`, which cannot combine two partials
// directly. Each yielded value must therefore have one of two forms:
//
//   yield_k = comb(acc_k, e_k) (or comb(e_k, acc_k)), comb one of the
//     associative, commutative arith ops (addf, mulf, maximumf, minimumf,
//     maxnumf, minnumf, addi, muli, max/min s/u, andi, ori, xori): e_k is
//     the element's contribution (e.g. `exp(x - max)` of a fused softmax
//     sum, `extf x` of an f16 sum);
//   yield_k = select(c, e_k, acc_k) for every k (argmax/argmin: value and
//     index, ties resolved by the index inside `c`, so any combination
//     order gives the same result).
//
// The contribution slice (the region ops e_k depends on, which must not
// read an accumulator) computes a thread's first partial; the yield slice
// with e_k replaced by a second partial (which must then read neither an
// input nor the iteration point) is the combiner. A reduction generic that
// has neither form is still mapped correctly, one thread folding each
// output point sequentially (no op MLIRGen writes takes that path; the
// FileCheck tests check it).
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

#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;

namespace kina::cuda {

#define GEN_PASS_DEF_GPUMAPREDUCTIONSPASS
#include "kina/CudaPasses.h.inc"

namespace {

constexpr int64_t kBlockSize = 256;

/// The contribution e_k of each output of `op` (see the file comment), or
/// failure when an output has neither form.
FailureOr<SmallVector<Value>> contributions(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  SmallVector<Value> result;
  bool anySelect = false, anyComb = false;
  for (auto [k, y] : llvm::enumerate(yield.getValues())) {
    Value acc = body.getArgument(op.getNumDpsInputs() + k);
    Operation *def = y.getDefiningOp();
    if (!def || def->getBlock() != &body)
      return failure();
    if (auto select = dyn_cast<arith::SelectOp>(def)) {
      if (select.getFalseValue() != acc || select.getTrueValue() == acc)
        return failure();
      result.push_back(select.getTrueValue());
      anySelect = true;
      continue;
    }
    if (!isa<arith::AddFOp, arith::MulFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp, arith::AddIOp, arith::MulIOp,
             arith::MaxSIOp, arith::MinSIOp, arith::MaxUIOp, arith::MinUIOp,
             arith::AndIOp, arith::OrIOp, arith::XOrIOp>(def))
      return failure();
    Value lhs = def->getOperand(0), rhs = def->getOperand(1);
    if (lhs == acc && rhs != acc)
      result.push_back(rhs);
    else if (rhs == acc && lhs != acc)
      result.push_back(lhs);
    else
      return failure();
    anyComb = true;
  }
  if (anySelect && anyComb)
    return failure();
  return result;
}

/// Builds the kernel; fails (leaving `op` untouched, nothing emitted that
/// matters) when a slice does not have the required independence.
struct ReductionKernel {
  linalg::GenericOp op;
  SmallVector<Value> contrib;
  SmallVector<Value> sizes, pSizes, rSizes;
  SmallVector<unsigned> pDims, rDims;
  /// Threads per block (a power of two: the tree halves it), the op's
  /// "cuda.reduction" schedule.
  int64_t blockSize = kBlockSize;

  SmallVector<Value> merge(OpBuilder &b, Location loc, ValueRange pivs,
                           ValueRange rivs) {
    SmallVector<Value> ivs(sizes.size());
    for (auto [d, v] : llvm::zip(pDims, pivs))
      ivs[d] = v;
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    for (unsigned i = 0; i < rDims.size(); ++i)
      ivs[rDims[i]] = rivs.empty() ? zero : rivs[i];
    return ivs;
  }

  /// The contributions of reduction point `r` (linear) at parallel point
  /// `pivs`.
  FailureOr<SmallVector<Value>> element(OpBuilder &b, Location loc,
                                        ValueRange pivs, Value r) {
    SmallVector<Value> rivs = delinearize(b, loc, r, rSizes);
    SmallVector<Value> ivs = merge(b, loc, pivs, rivs);
    IRMapping mapping;
    Block &body = op.getRegion().front();
    for (OpOperand *input : op.getDpsInputOperands())
      mapping.map(body.getArgument(input->getOperandNumber()),
                  loadOperand(b, loc, op, *input, ivs));
    return cloneSlice(b, op, contrib, mapping, ivs);
  }

  /// comb(a, c) for every output. Outputs that share their contribution
  /// (min and max of the same values) are combined one by one, each from
  /// its own yield slice; otherwise all together (argmax's value and index
  /// select on one shared condition).
  FailureOr<SmallVector<Value>> combine(OpBuilder &b, ValueRange a,
                                        ValueRange c) {
    Block &body = op.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    auto accMapping = [&] {
      IRMapping mapping;
      for (unsigned k = 0; k < a.size(); ++k)
        mapping.map(body.getArgument(op.getNumDpsInputs() + k), a[k]);
      return mapping;
    };
    llvm::SmallPtrSet<Value, 4> distinct(contrib.begin(), contrib.end());
    if (distinct.size() == contrib.size()) {
      IRMapping mapping = accMapping();
      for (unsigned k = 0; k < a.size(); ++k)
        mapping.map(contrib[k], c[k]);
      return cloneSlice(b, op, yield.getValues(), mapping, /*ivs=*/{});
    }
    SmallVector<Value> results;
    for (unsigned k = 0; k < a.size(); ++k) {
      IRMapping mapping = accMapping();
      mapping.map(contrib[k], c[k]);
      auto r = cloneSlice(b, op, yield.getValues()[k], mapping, /*ivs=*/{});
      if (failed(r))
        return failure();
      results.push_back((*r)[0]);
    }
    return results;
  }

  LogicalResult emit() {
    OpBuilder b(op);
    Location loc = op.getLoc();
    sizes = loopSizes(b, loc, op);
    for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
      if (it == utils::IteratorType::parallel) {
        pDims.push_back(d);
        pSizes.push_back(sizes[d]);
      } else {
        rDims.push_back(d);
        rSizes.push_back(sizes[d]);
      }
    }
    Value np = product(b, loc, pSizes);
    Value nr = product(b, loc, rSizes);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value nonEmpty =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, np, zero);
    auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    // A slice that cannot be cloned drops the whole kernel built so far.
    auto abandon = [&]() -> LogicalResult {
      guard.erase();
      return failure();
    };

    auto workgroup = gpu::AddressSpaceAttr::get(
        b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
    SmallVector<Type> bufferTypes;
    SmallVector<Type> accTypes;
    for (Value init : op.getDpsInits()) {
      Type t = getElementTypeOrSelf(init.getType());
      accTypes.push_back(t);
      bufferTypes.push_back(
          MemRefType::get({blockSize}, t, AffineMap(), workgroup));
    }
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value grid = gridSize(b, loc, np, 1, kMaxGridX);
    gpu::LaunchOp launch =
        createLaunch(b, loc, grid, one, one, blockSize, 1, 1, bufferTypes);
    ArrayRef<BlockArgument> buffers = launch.getWorkgroupAttributions();
    Value tid = launch.getThreadIds().x;
    Value block = arith::ConstantIndexOp::create(b, loc, blockSize);
    Value zeroK = arith::ConstantIndexOp::create(b, loc, 0);
    auto pLoop = scf::ForOp::create(b, loc, launch.getBlockIds().x, np,
                                    launch.getGridSize().x);
    b.setInsertionPointToStart(pLoop.getBody());
    SmallVector<Value> pivs =
        delinearize(b, loc, pLoop.getInductionVar(), pSizes);

    // The thread's first element, then the rest of its stride.
    Value has =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, nr);
    auto first = scf::IfOp::create(b, loc, accTypes, has, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&first.getThenRegion().front());
      auto e = element(b, loc, pivs, tid);
      if (failed(e))
        return abandon();
      scf::YieldOp::create(b, loc, *e);
      b.setInsertionPointToStart(&first.getElseRegion().front());
      SmallVector<Value> zeros;
      for (Type t : accTypes)
        zeros.push_back(arith::ConstantOp::create(
            b, loc, cast<TypedAttr>(b.getZeroAttr(t))));
      scf::YieldOp::create(b, loc, zeros);
    }
    Value rStart = arith::AddIOp::create(b, loc, tid, block);
    auto rLoop =
        scf::ForOp::create(b, loc, rStart, nr, block, first.getResults());
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(rLoop.getBody());
      auto e = element(b, loc, pivs, rLoop.getInductionVar());
      if (failed(e))
        return abandon();
      auto c = combine(b, rLoop.getRegionIterArgs(), *e);
      if (failed(c))
        return abandon();
      scf::YieldOp::create(b, loc, *c);
    }
    for (auto [buffer, partial] : llvm::zip(buffers, rLoop.getResults()))
      memref::StoreOp::create(b, loc, partial, buffer, tid);
    gpu::BarrierOp::create(b, loc);

    // Tree over the first min(NR, 256) partials.
    Value valid = arith::MinUIOp::create(b, loc, nr, block);
    for (int64_t s = blockSize / 2; s >= 1; s /= 2) {
      Value sv = arith::ConstantIndexOp::create(b, loc, s);
      Value other = arith::AddIOp::create(b, loc, tid, sv);
      Value active = arith::AndIOp::create(
          b, loc,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, tid, sv),
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, other,
                                valid));
      auto step = scf::IfOp::create(b, loc, active, /*withElse=*/false);
      {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPointToStart(&step.getThenRegion().front());
        SmallVector<Value> mine, theirs;
        for (Value buffer : buffers) {
          mine.push_back(memref::LoadOp::create(b, loc, buffer, tid));
          theirs.push_back(memref::LoadOp::create(b, loc, buffer, other));
        }
        auto c = combine(b, mine, theirs);
        if (failed(c))
          return abandon();
        for (auto [buffer, v] : llvm::zip(buffers, *c))
          memref::StoreOp::create(b, loc, v, buffer, tid);
      }
      gpu::BarrierOp::create(b, loc);
    }

    // Thread 0: out = comb(init, total), unless there was no element.
    Value leader = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid, zeroK),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, nr, zeroK));
    auto finish = scf::IfOp::create(b, loc, leader, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&finish.getThenRegion().front());
      SmallVector<Value> ivs = merge(b, loc, pivs, {});
      SmallVector<Value> inits, totals;
      for (auto [init, buffer] : llvm::zip(op.getDpsInitsMutable(), buffers)) {
        inits.push_back(loadOperand(b, loc, op, init, ivs));
        totals.push_back(memref::LoadOp::create(b, loc, buffer, zeroK));
      }
      auto c = combine(b, inits, totals);
      if (failed(c))
        return abandon();
      for (auto [init, v] : llvm::zip(op.getDpsInitsMutable(), *c))
        storeOperand(b, loc, op, init, v, ivs);
    }
    // The next output point reuses the shared buffers.
    gpu::BarrierOp::create(b, loc);
    return success();
  }
};

/// Threads of the column kernel: kColumnsX output points (consecutive in
/// the innermost loop: coalesced) by kColumnsY slices of the reduced
/// extent; each thread keeps kColumnUnroll loads in flight.
constexpr int64_t kColumnsX = 32;
constexpr int64_t kColumnsY = 32;
constexpr int64_t kColumnUnroll = 4;

/// True when `op` reduces outer loops only (its innermost loop is
/// parallel) and every output folds `comb(acc, e)` with a combiner that
/// has an identity: the column kernel applies.
bool isColumnReduction(linalg::GenericOp op) {
  auto iters = op.getIteratorTypesArray();
  if (iters.empty() || iters.back() != utils::IteratorType::parallel)
    return false;
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  for (auto [k, y] : llvm::enumerate(yield.getValues())) {
    Operation *def = y.getDefiningOp();
    if (!def || def->getBlock() != &body || isa<arith::SelectOp>(def) ||
        !combinerOf(def, y.getType()))
      return false;
  }
  return true;
}

/// The column kernel: a reduction over outer loops (reduce_sum over axis 0
/// of [R, C], say) as blocks of 32 x 32 threads. Thread (x, y) of block b
/// computes output point p = b*32 + x (grid-stride over the points; the
/// innermost loop is the fastest, so a warp reads 32 consecutive elements
/// of a row) over the reduction points y, y+32, ... (4 loads in flight per
/// step), starting from the combiner's identity; the 32 partials of a
/// column are combined in workgroup memory by a tree of 5 halving steps,
/// and thread (x, 0) stores comb(init, total).
LogicalResult emitColumn(ReductionKernel &k) {
  linalg::GenericOp op = k.op;
  OpBuilder b(op);
  Location loc = op.getLoc();
  k.sizes = loopSizes(b, loc, op);
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    bool parallel = it == utils::IteratorType::parallel;
    (parallel ? k.pDims : k.rDims).push_back(d);
    (parallel ? k.pSizes : k.rSizes).push_back(k.sizes[d]);
  }
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  SmallVector<Combiner> combs;
  SmallVector<Type> accTypes;
  for (Value y : yield.getValues()) {
    combs.push_back(*combinerOf(y.getDefiningOp(), y.getType()));
    accTypes.push_back(y.getType());
  }
  Value np = product(b, loc, k.pSizes);
  Value nr = product(b, loc, k.rSizes);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, np, zero);
  auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  auto abandon = [&]() -> LogicalResult {
    guard.erase();
    return failure();
  };
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  SmallVector<Type> bufferTypes;
  for (Type t : accTypes)
    bufferTypes.push_back(
        MemRefType::get({kColumnsY, kColumnsX}, t, AffineMap(), workgroup));
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value grid = gridSize(b, loc, np, kColumnsX, kMaxGridX);
  gpu::LaunchOp launch = createLaunch(b, loc, grid, one, one, kColumnsX,
                                      kColumnsY, 1, bufferTypes);
  ArrayRef<BlockArgument> buffers = launch.getWorkgroupAttributions();
  Value tx = launch.getThreadIds().x, ty = launch.getThreadIds().y;
  Value cx = arith::ConstantIndexOp::create(b, loc, kColumnsX);
  Value cy = arith::ConstantIndexOp::create(b, loc, kColumnsY);
  Value step = arith::MulIOp::create(b, loc, launch.getGridSize().x, cx);
  // Every thread of the block runs the same number of iterations (the
  // barriers): the loop runs over the block's first point.
  Value blockFirst = arith::MulIOp::create(b, loc, launch.getBlockIds().x, cx);
  auto pLoop = scf::ForOp::create(b, loc, blockFirst, np, step);
  b.setInsertionPointToStart(pLoop.getBody());
  Value p = arith::AddIOp::create(b, loc, pLoop.getInductionVar(), tx);
  Value pValid =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, p, np);
  // Out-of-range points compute at point 0 (in range, never stored).
  Value pSafe = arith::SelectOp::create(b, loc, pValid, p, zero);
  SmallVector<Value> pivs = delinearize(b, loc, pSafe, k.pSizes);

  SmallVector<Value> identities;
  for (const Combiner &c : combs)
    identities.push_back(arith::ConstantOp::create(b, loc, c.identity));
  auto fold = [&](OpBuilder &fb, ValueRange acc,
                  Value r) -> FailureOr<SmallVector<Value>> {
    auto e = k.element(fb, loc, pivs, r);
    if (failed(e))
      return failure();
    return k.combine(fb, acc, *e);
  };
  // The main loop: kColumnUnroll reduction points per step, all loaded
  // before they are combined.
  Value span =
      arith::ConstantIndexOp::create(b, loc, kColumnsY * kColumnUnroll);
  Value full = arith::MulIOp::create(
      b, loc, arith::DivUIOp::create(b, loc, nr, span), span);
  auto main = scf::ForOp::create(b, loc, ty, full, span, identities);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(main.getBody());
    SmallVector<SmallVector<Value>> es;
    for (int64_t u = 0; u < kColumnUnroll; ++u) {
      Value r = arith::AddIOp::create(
          b, loc, main.getInductionVar(),
          arith::ConstantIndexOp::create(b, loc, u * kColumnsY));
      auto e = k.element(b, loc, pivs, r);
      if (failed(e))
        return abandon();
      es.push_back(*e);
    }
    SmallVector<Value> acc(main.getRegionIterArgs());
    for (auto &e : es) {
      auto c = k.combine(b, acc, e);
      if (failed(c))
        return abandon();
      acc = *c;
    }
    scf::YieldOp::create(b, loc, acc);
  }
  Value tailStart = arith::AddIOp::create(b, loc, full, ty);
  auto tail = scf::ForOp::create(b, loc, tailStart, nr, cy, main.getResults());
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(tail.getBody());
    auto c = fold(b, tail.getRegionIterArgs(), tail.getInductionVar());
    if (failed(c))
      return abandon();
    scf::YieldOp::create(b, loc, *c);
  }
  for (auto [buffer, partial] : llvm::zip(buffers, tail.getResults()))
    memref::StoreOp::create(b, loc, partial, buffer, ValueRange{ty, tx});
  gpu::BarrierOp::create(b, loc);
  for (int64_t s = kColumnsY / 2; s >= 1; s /= 2) {
    Value sv = arith::ConstantIndexOp::create(b, loc, s);
    Value active =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ty, sv);
    auto stepIf = scf::IfOp::create(b, loc, active, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&stepIf.getThenRegion().front());
      Value other = arith::AddIOp::create(b, loc, ty, sv);
      SmallVector<Value> mine, theirs;
      for (Value buffer : buffers) {
        mine.push_back(
            memref::LoadOp::create(b, loc, buffer, ValueRange{ty, tx}));
        theirs.push_back(
            memref::LoadOp::create(b, loc, buffer, ValueRange{other, tx}));
      }
      auto c = k.combine(b, mine, theirs);
      if (failed(c))
        return abandon();
      for (auto [buffer, v] : llvm::zip(buffers, *c))
        memref::StoreOp::create(b, loc, v, buffer, ValueRange{ty, tx});
    }
    gpu::BarrierOp::create(b, loc);
  }
  Value leader = arith::AndIOp::create(
      b, loc, pValid,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, ty, zero));
  auto finish = scf::IfOp::create(b, loc, leader, /*withElse=*/false);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&finish.getThenRegion().front());
    SmallVector<Value> ivs = k.merge(b, loc, pivs, {});
    SmallVector<Value> inits, totals;
    for (auto [init, buffer] : llvm::zip(op.getDpsInitsMutable(), buffers)) {
      inits.push_back(loadOperand(b, loc, op, init, ivs));
      totals.push_back(
          memref::LoadOp::create(b, loc, buffer, ValueRange{zero, tx}));
    }
    auto c = k.combine(b, inits, totals);
    if (failed(c))
      return abandon();
    for (auto [init, v] : llvm::zip(op.getDpsInitsMutable(), *c))
      storeOperand(b, loc, op, init, v, ivs);
  }
  // The next points reuse the workgroup buffers.
  gpu::BarrierOp::create(b, loc);
  return success();
}

/// The fallback: one thread folds each output point sequentially.
void emitSequential(linalg::GenericOp op, int64_t blockSize) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> sizes = loopSizes(b, loc, op);
  SmallVector<unsigned> pDims, rDims;
  SmallVector<Value> pSizes, rSizes;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    bool parallel = it == utils::IteratorType::parallel;
    (parallel ? pDims : rDims).push_back(d);
    (parallel ? pSizes : rSizes).push_back(sizes[d]);
  }
  Value np = product(b, loc, pSizes);
  Value nr = product(b, loc, rSizes);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, np, zero);
  auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value grid = gridSize(b, loc, np, blockSize, kMaxGridX);
  gpu::LaunchOp launch = createLaunch(b, loc, grid, one, one, blockSize, 1, 1);
  Value block = arith::ConstantIndexOp::create(b, loc, blockSize);
  Value start = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, block),
      launch.getThreadIds().x);
  Value stride = arith::MulIOp::create(b, loc, launch.getGridSize().x, block);
  auto pLoop = scf::ForOp::create(b, loc, start, np, stride);
  b.setInsertionPointToStart(pLoop.getBody());
  SmallVector<Value> pivs =
      delinearize(b, loc, pLoop.getInductionVar(), pSizes);
  auto ivsAt = [&](ValueRange rivs) {
    SmallVector<Value> ivs(sizes.size());
    for (auto [d, v] : llvm::zip(pDims, pivs))
      ivs[d] = v;
    for (unsigned i = 0; i < rDims.size(); ++i)
      ivs[rDims[i]] = rivs.empty() ? zero : rivs[i];
    return ivs;
  };
  SmallVector<Value> outIvs = ivsAt({});
  SmallVector<Value> inits;
  for (OpOperand &init : op.getDpsInitsMutable())
    inits.push_back(loadOperand(b, loc, op, init, outIvs));
  Value zeroK = arith::ConstantIndexOp::create(b, loc, 0);
  auto rLoop = scf::ForOp::create(b, loc, zeroK, nr, one, inits);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(rLoop.getBody());
    SmallVector<Value> ivs =
        ivsAt(delinearize(b, loc, rLoop.getInductionVar(), rSizes));
    SmallVector<Value> args;
    for (OpOperand *input : op.getDpsInputOperands())
      args.push_back(loadOperand(b, loc, op, *input, ivs));
    llvm::append_range(args, rLoop.getRegionIterArgs());
    scf::YieldOp::create(b, loc, cloneRegion(b, op, args, ivs));
  }
  for (auto [init, v] : llvm::zip(op.getDpsInitsMutable(), rLoop.getResults()))
    storeOperand(b, loc, op, init, v, outIvs);
}

class GpuMapReductionsPass
    : public impl::GpuMapReductionsPassBase<GpuMapReductionsPass> {
public:
  GpuMapReductionsPass() = default;
  explicit GpuMapReductionsPass(CudaTuning tuning)
      : tuning(std::move(tuning)) {}

  void runOnOperation() override {
    SmallVector<linalg::GenericOp> work;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>() && isMappableGeneric(op) &&
          op.getNumReductionLoops() > 0)
        work.push_back(op);
    });
    for (linalg::GenericOp op : work) {
      // An empty iteration space leaves the init (an empty reduction) as
      // the result, or has no output element at all.
      {
        OpBuilder b(op);
        if (anyStaticZero(loopSizes(b, op.getLoc(), op))) {
          op.erase();
          continue;
        }
      }
      auto contrib = contributions(op);
      bool mapped = false;
      if (succeeded(contrib) && isColumnReduction(op)) {
        ReductionKernel kernel{op, *contrib, {}, {}, {}, {}, {}};
        mapped = succeeded(emitColumn(kernel));
      }
      // The tree and sequential kernels' block: the op's schedule.
      int64_t block =
          tuning.of(op, "reduction", "cuda.reduction").get("block", kBlockSize);
      if (succeeded(contrib) && !mapped) {
        ReductionKernel kernel{op, *contrib, {}, {}, {}, {}, {}, block};
        mapped = succeeded(kernel.emit());
      }
      if (!mapped)
        emitSequential(op, block);
      op.erase();
    }
  }

private:
  CudaTuning tuning;
};

} // namespace

std::unique_ptr<Pass> createGpuMapReductionsPass(CudaTuning tuning) {
  return std::make_unique<GpuMapReductionsPass>(std::move(tuning));
}

} // namespace kina::cuda
