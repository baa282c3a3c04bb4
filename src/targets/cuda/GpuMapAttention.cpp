//===- GpuMapAttention.cpp - Scaled dot-product attention as one kernel --===//
//
// The pass `kina-gpu-map-attention` of the cuda target. Attention written
// out in Kina IR (`s = matmul q, kt`; a scale, a mask or any other
// elementwise op over the scores; `p = softmax s`; `o = matmul p, v`)
// reaches the bufferized module, after elementwise fusion (-O1 and up), as
// this run of `linalg.generic`s along the path of execution, with batch
// loops b (any number), query rows m, keys n, head dims k and d:
//
//   S[b,m,n] = 0;  S[b,m,n] += ext(Q[b,m,k]) * ext(KT[b,k,n])       (mm1)
//   [S'[b,m,n] = trunc(S[b,m,n])]        the product's rounding (round)
//   X[b,m,n] = f(S'[b,m,n], b, m, n)     the scores' ops, fused (score)
//   mx[b,m] = -inf;  mx[b,m] = maximumf(mx[b,m], ext(X[b,m,n]))      (max)
//   E[b,m,n] = exp(ext(X[b,m,n]) - mx[b,m])                           (exp)
//   sm[b,m] = 0;  sm[b,m] += E[b,m,n]                                 (sum)
//   P[b,m,n] = trunc(E[b,m,n] / sm[b,m])                              (div)
//   O[b,m,d] = 0;  O[b,m,d] += ext(P[b,m,n]) * ext(V[b,n,d])         (mm2)
//   [R[b,m,d] = trunc(O[b,m,d])]         the output's rounding (roundOut)
//
// The roundings are separate ops on the cuda target (kina-elementwise-
// fusion keeps a contraction's rounding its own op); `round` becomes part
// of f (the f32 score rounded, then f), and with `roundOut` the kernel
// stores the rounded output into R (not Q's, KT's or V's buffer: other
// blocks still read those) and O is an intermediate.
//
// with Q, KT, P and V bf16 or f16 (f32 accumulation). The other mappers
// give this five kernels and two cuBLASLt calls, and the [b, m, n] scores
// go through memory four times (f32 S written and read, P written and
// read): for GPT-2 small at batch 8 and sequence 1024, 400 MB of f32
// scores. This pass replaces the run with ONE kernel that keeps the
// scores on chip, the flash-attention schedule (Dao et al., "FlashAttention-
// 2", 2023) on the warp-level tensor-core instruction `mma.sync.m16n8k16`
// (`nvvm.mma.sync`, bf16/f16 in, f32 accumulate):
//
//   gpu.launch blocks(M / 64, prod(b)) threads(128): 4 warps, 16 query
//     rows each; Q's fragments loaded once into registers;
//     for each block of 64 keys (causal: only up to the diagonal block):
//       KT's [k, 64] tile and V's [64, d] tile into workgroup memory
//       (16-byte vector loads where the host found the buffers aligned;
//       that kernel double-buffers the tiles where two stages fit in 48
//       KiB: the next step's tiles stored into the other stage, the one
//       after loaded into registers, one barrier a step);
//       S = Q KT (mma.sync, f32), f applied per element (its region is
//       cloned, linalg.index given the element's b, m, n; a causal f's
//       select only on the diagonal block);
//       the online softmax: a row's running max m' and sum l (a row is
//       spread over the 4 lanes of a quad: two shuffles),
//       e = exp2((x - m') log2 e) (ex2.approx.f32, 2 ulp: three
//       instructions where expf's range reduction takes ten),
//       the running output and sum rescaled by exp(m_old - m');
//       O += round(e) V (mma.sync; e rounded to P's type as the A operand);
//     O / l stored into mm2's output (f32).
//
// Results differ from the run's only by rounding: P is rounded after the
// division in the run, before it here (each a relative 2^-8 for bf16, the
// rounding the run already has), and the sums are taken in another order.
// Special values agree: a NaN or +inf score makes its row NaN, a row whose
// scores are all -inf gives 0 / 0 = NaN as exp(-inf - -inf) does (the
// running max is taken as 0 while it is -inf, so an all -inf block before
// a finite one does not poison the row). The causal skip: when f's result
// is `select(n <= m, x, -inf)` (cmpi on linalg.index of the key and query
// dims), blocks of keys wholly above the diagonal contribute exp(-inf) = 0
// to every row and are not visited.
//
// Matched only when sound and fitting: the run's ops are consecutive along
// the path (between them only pure ops, allocations with their null
// checks and deallocations, which move after the kernel); S, X, mx, E, sm
// and P are allocations the run alone uses (erased with their checks);
// Q, KT and V are not written by the run; all memrefs are static with the
// identity layout; M and N are multiples of 64, k and d multiples of 16 up
// to 128; the batch has at most 65535 elements. Anything else is left to
// the other mappers, which run after this pass. Cannot fail.
//
//===----------------------------------------------------------------------===//
#include "CudaPasses.h"
#include "GpuCodegen.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/SetVector.h"

#include <limits>

using namespace mlir;

namespace kina::cuda {

#define GEN_PASS_DEF_GPUMAPATTENTIONPASS
#define GEN_PASS_DEF_GPUALIGNWORKGROUPPASS
#include "kina/CudaPasses.h.inc"

namespace {

constexpr int64_t kTile = 64;    // query rows per block, keys per step
constexpr int64_t kThreads = 128; // 4 warps of 16 query rows
constexpr int64_t kMaxHeadDim = 128;
constexpr int64_t kPad = 8; // workgroup rows padded by 16 bytes: no conflicts
constexpr int64_t kMaxStaticWorkgroup = 48 * 1024; // bytes, without opt-in

/// A static memref with the identity layout: a function argument or an
/// allocation.
bool plainStatic(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.getLayout().isIdentity() || !type.hasStaticShape())
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return isa<func::FuncOp>(arg.getOwner()->getParentOp());
  return isa_and_present<memref::AllocOp>(v.getDefiningOp());
}

/// The map (d_0 .. d_{n-1}) -> (d_dims...).
AffineMap dimsMap(MLIRContext *ctx, unsigned n, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(getAffineDimExpr(d, ctx));
  return AffineMap::get(n, 0, exprs, ctx);
}

SmallVector<unsigned> batchThen(unsigned nb, ArrayRef<unsigned> tail) {
  SmallVector<unsigned> dims;
  for (unsigned i = 0; i < nb; ++i)
    dims.push_back(i);
  dims.append(tail.begin(), tail.end());
  return dims;
}

bool isHalfFloat(Type t) { return t.isBF16() || t.isF16(); }

/// `v` is `arith.extf(arg)` of the block argument `arg` (or `arg` itself
/// when it is already f32).
bool isExtOf(Value v, BlockArgument arg) {
  if (v == arg)
    return v.getType().isF32();
  auto ext = v.getDefiningOp<arith::ExtFOp>();
  return ext && ext.getIn() == arg && ext.getType().isF32();
}

Value yieldedValue(linalg::GenericOp op) {
  auto yield = cast<linalg::YieldOp>(op.getRegion().front().getTerminator());
  return yield.getNumOperands() == 1 ? yield.getOperand(0) : Value();
}

/// A contraction as MLIRGen writes a (batched) matmul: loops (b.., m, n, k),
/// A (b.., m, k) and B (b.., k, n) of a half type, C (b.., m, n) f32,
/// `c + ext(a) * ext(b)`. Returns the number of batch loops.
std::optional<unsigned> contraction(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  unsigned n = op.getNumLoops();
  if (n < 3)
    return std::nullopt;
  auto iters = op.getIteratorTypesArray();
  for (unsigned i = 0; i + 1 < n; ++i)
    if (iters[i] != utils::IteratorType::parallel)
      return std::nullopt;
  if (iters[n - 1] != utils::IteratorType::reduction)
    return std::nullopt;
  unsigned nb = n - 3;
  MLIRContext *ctx = op.getContext();
  auto maps = op.getIndexingMapsArray();
  if (maps[0] != dimsMap(ctx, n, batchThen(nb, {nb, nb + 2})) ||
      maps[1] != dimsMap(ctx, n, batchThen(nb, {nb + 2, nb + 1})) ||
      maps[2] != dimsMap(ctx, n, batchThen(nb, {nb, nb + 1})))
    return std::nullopt;
  for (Value v : op->getOperands())
    if (!plainStatic(v))
      return std::nullopt;
  auto elem = [&](unsigned i) {
    return cast<MemRefType>(op->getOperand(i).getType()).getElementType();
  };
  if (!isHalfFloat(elem(0)) || elem(1) != elem(0) || !elem(2).isF32())
    return std::nullopt;
  Block &body = op.getRegion().front();
  auto add = yieldedValue(op).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  Value prod = add.getLhs() == body.getArgument(2) ? add.getRhs()
               : add.getRhs() == body.getArgument(2) ? add.getLhs()
                                                     : Value();
  auto mul = prod ? prod.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul || !isExtOf(mul.getLhs(), body.getArgument(0)) ||
      !isExtOf(mul.getRhs(), body.getArgument(1)))
    return std::nullopt;
  return nb;
}

/// A fill: no memref inputs, yields its scalar input; its value.
std::optional<Value> fillValue(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 ||
      isa<MemRefType>(op.getDpsInputs()[0].getType()))
    return std::nullopt;
  if (yieldedValue(op) != op.getRegion().front().getArgument(0))
    return std::nullopt;
  return op.getDpsInputs()[0];
}

bool isConstantFloat(Value v, double expected) {
  FloatAttr attr;
  if (auto c = v.getDefiningOp<arith::ConstantOp>())
    attr = dyn_cast<FloatAttr>(c.getValue());
  return attr && attr.getValueAsDouble() == expected;
}

bool allParallel(linalg::GenericOp op) {
  return op.getNumReductionLoops() == 0;
}

/// The maps of an op over the row space (b.., m, n): identity, or the
/// projection to (b.., m).
bool isIdentity(AffineMap map) { return map.isIdentity(); }
bool isRowMap(AffineMap map, unsigned rank) {
  SmallVector<unsigned> dims;
  for (unsigned i = 0; i + 1 < rank; ++i)
    dims.push_back(i);
  return map == dimsMap(map.getContext(), rank, dims);
}

/// `op` reduces the last of `rank` loops of `input` (identity map) into a
/// row buffer (the projection to the other loops) that `filled` says was
/// filled with `init` before; returns the yield's `comb(acc, e)` parts as
/// (combiner, e), or nothing.
std::optional<std::pair<Operation *, Value>>
rowReduction(linalg::GenericOp op, unsigned rank, Value input, double init,
             const llvm::DenseMap<Value, Value> &filled) {
  auto maps = op.getIndexingMapsArray();
  if (op.getNumLoops() != rank || op.getNumReductionLoops() != 1 ||
      op.getNumDpsInputs() != 1 || op.getDpsInputs()[0] != input ||
      !maps[0].isIdentity() || !isRowMap(maps[1], rank))
    return std::nullopt;
  auto it = filled.find(op.getDpsInits()[0]);
  if (it == filled.end() || !isConstantFloat(it->second, init))
    return std::nullopt;
  Operation *comb = yieldedValue(op).getDefiningOp();
  Value acc = op.getRegion().front().getArgument(1);
  if (!comb || comb->getNumOperands() != 2)
    return std::nullopt;
  Value lhs = comb->getOperand(0), rhs = comb->getOperand(1);
  Value e = lhs == acc ? rhs : rhs == acc ? lhs : Value();
  if (!e)
    return std::nullopt;
  return std::make_pair(comb, e);
}

/// `op` is all parallel over `rank` loops and reads `full` (identity map)
/// and `row` (the projection to all loops but the last) into a full buffer.
bool fullAndRow(linalg::GenericOp op, unsigned rank, Value full, Value row) {
  auto maps = op.getIndexingMapsArray();
  return allParallel(op) && op.getNumLoops() == rank &&
         op.getNumDpsInputs() == 2 && op.getDpsInputs()[0] == full &&
         op.getDpsInputs()[1] == row && maps[0].isIdentity() &&
         isRowMap(maps[1], rank) && maps[2].isIdentity();
}

/// The run, matched.
struct Attention {
  linalg::GenericOp mm1, score, max, exp, sum, div, mm2;
  /// Optional: S rounded to Q's type before the score's ops (`round`), and
  /// O rounded after mm2 (`roundOut`, whose output the kernel then writes):
  /// kina-elementwise-fusion keeps a contraction's rounding its own op on
  /// the cuda target.
  linalg::GenericOp round, roundOut;
  unsigned nb = 0;
  SmallVector<int64_t> batch;
  int64_t m = 0, n = 0, dk = 0, dv = 0;
  Value q, kt, v, out;
  bool causal = false;
  SmallVector<Operation *> erase;          // the run's ops, fills included
  SmallVector<memref::DeallocOp> deallocs; // standing between: moved after
  llvm::SetVector<Value> internal;         // allocations only the run uses
};

/// Whether `score`'s result is `select(n <= m, x, -inf)`, the indices
/// compared as `index` or as integers wide enough for M and N (an i8
/// `iota` wraps: no longer causal).
bool isCausal(linalg::GenericOp score, unsigned nb, int64_t m, int64_t n) {
  auto select = yieldedValue(score).getDefiningOp<arith::SelectOp>();
  if (!select)
    return false;
  auto cst = select.getFalseValue().getDefiningOp<arith::ConstantOp>();
  auto attr = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  if (!attr || !attr.getValue().isInfinity() || !attr.getValue().isNegative())
    return false;
  auto cmp = select.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!cmp)
    return false;
  auto dimOf = [&](Value v) -> std::optional<unsigned> {
    if (auto cast = v.getDefiningOp<arith::IndexCastOp>()) {
      // Indices 0 .. max(m, n) - 1 must survive the cast (signed).
      auto type = dyn_cast<IntegerType>(cast.getType());
      if (!type)
        return std::nullopt;
      unsigned width = type.getWidth();
      if (width < 63 && std::max(m, n) > (int64_t(1) << (width - 1)))
        return std::nullopt;
      v = cast.getIn();
    }
    if (auto index = v.getDefiningOp<linalg::IndexOp>())
      return index.getDim();
    return std::nullopt;
  };
  std::optional<unsigned> lhs = dimOf(cmp.getLhs()), rhs = dimOf(cmp.getRhs());
  if (!lhs || !rhs)
    return false;
  unsigned mDim = nb, nDim = nb + 1;
  switch (cmp.getPredicate()) {
  case arith::CmpIPredicate::sle:
  case arith::CmpIPredicate::ule:
    return *lhs == nDim && *rhs == mDim;
  case arith::CmpIPredicate::sge:
  case arith::CmpIPredicate::uge:
    return *lhs == mDim && *rhs == nDim;
  default:
    return false;
  }
}

/// `op` rounds `input` (f32) to a half type element by element over
/// `rank` loops: identity maps, the body `yield truncf(in)`.
bool isRounding(linalg::GenericOp op, Value input, unsigned rank) {
  if (!op || !allParallel(op) || op.getNumLoops() != rank ||
      op.getNumDpsInputs() != 1 || op.getDpsInputs()[0] != input ||
      op.getNumDpsInits() != 1 ||
      !llvm::all_of(op.getIndexingMapsArray(), isIdentity))
    return false;
  Block &body = op.getRegion().front();
  auto trunc = yieldedValue(op).getDefiningOp<arith::TruncFOp>();
  return body.getOperations().size() == 2 && trunc &&
         trunc.getIn() == body.getArgument(0) && isHalfFloat(trunc.getType());
}

/// Matches the run starting at `mm1`.
std::optional<Attention> match(linalg::GenericOp mm1) {
  Attention a;
  a.mm1 = mm1;
  std::optional<unsigned> nb = contraction(mm1);
  if (!nb)
    return std::nullopt;
  a.nb = *nb;
  unsigned rank = a.nb + 2; // the row space (b.., m, n)
  // The ops after mm1 along the path up to the next contraction.
  SmallVector<linalg::GenericOp> run;
  for (Operation *op = nextAlongPath(mm1); op; op = nextAlongPath(op)) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      a.deallocs.push_back(dealloc);
      continue;
    }
    if (mayStandBetween(op) || op->hasTrait<OpTrait::IsTerminator>())
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic || run.size() > 10)
      return std::nullopt;
    if (contraction(generic)) {
      a.mm2 = generic;
      break;
    }
    run.push_back(generic);
  }
  if (!a.mm2 || *contraction(a.mm2) != a.nb)
    return std::nullopt;
  // Classify the ops between: fills, then score, max, exp, sum, div in
  // this order.
  llvm::DenseMap<Value, Value> filled; // buffer -> fill value, so far
  SmallVector<linalg::GenericOp> stages;
  for (linalg::GenericOp op : run) {
    if (std::optional<Value> value = fillValue(op)) {
      filled[op.getDpsInits()[0]] = *value;
      a.erase.push_back(op);
      continue;
    }
    stages.push_back(op);
  }
  Value s = mm1.getDpsInits()[0];
  if (stages.size() == 6 && isRounding(stages[0], s, rank)) {
    a.round = stages[0];
    stages.erase(stages.begin());
  }
  if (stages.size() != 5)
    return std::nullopt;
  a.score = stages[0];
  a.max = stages[1];
  a.exp = stages[2];
  a.sum = stages[3];
  a.div = stages[4];
  // score: X = f(S) (or f(round(S))), all parallel over (b.., m, n), only
  // S read.
  {
    linalg::GenericOp op = a.score;
    Value in = a.round ? a.round.getDpsInits()[0] : s;
    if (!allParallel(op) || op.getNumLoops() != rank ||
        op.getNumDpsInputs() != 1 || op.getDpsInputs()[0] != in ||
        op.getNumDpsInits() != 1 ||
        !llvm::all_of(op.getIndexingMapsArray(), isIdentity))
      return std::nullopt;
    Block &body = op.getRegion().front();
    if (!body.getArgument(1).use_empty())
      return std::nullopt;
    for (Operation &inner : body.without_terminator())
      if (inner.getNumRegions() != 0 || !isMemoryEffectFree(&inner))
        return std::nullopt;
  }
  Value x = a.score.getDpsInits()[0];
  // max: mx = max(mx, ext(X)) over n, mx filled with -inf before.
  {
    auto parts = rowReduction(a.max, rank, x,
                              -std::numeric_limits<double>::infinity(), filled);
    if (!parts || !isa<arith::MaximumFOp>(parts->first) ||
        !isExtOf(parts->second, a.max.getRegion().front().getArgument(0)))
      return std::nullopt;
  }
  Value mx = a.max.getDpsInits()[0];
  // exp: E = exp(ext(X) - mx), E f32.
  {
    linalg::GenericOp op = a.exp;
    if (!fullAndRow(op, rank, x, mx))
      return std::nullopt;
    Block &body = op.getRegion().front();
    auto expOp = yieldedValue(op).getDefiningOp<math::ExpOp>();
    auto sub = expOp ? expOp.getOperand().getDefiningOp<arith::SubFOp>()
                     : arith::SubFOp();
    if (!sub || !isExtOf(sub.getLhs(), body.getArgument(0)) ||
        sub.getRhs() != body.getArgument(1) ||
        !cast<MemRefType>(op.getDpsInits()[0].getType())
             .getElementType()
             .isF32())
      return std::nullopt;
  }
  Value e = a.exp.getDpsInits()[0];
  // sum: sm += E over n, sm filled with 0 before.
  {
    auto parts = rowReduction(a.sum, rank, e, 0.0, filled);
    if (!parts || !isa<arith::AddFOp>(parts->first) ||
        parts->second != a.sum.getRegion().front().getArgument(0))
      return std::nullopt;
  }
  Value sm = a.sum.getDpsInits()[0];
  // div: P = trunc(E / sm), P of a half type.
  {
    linalg::GenericOp op = a.div;
    if (!fullAndRow(op, rank, e, sm))
      return std::nullopt;
    Block &body = op.getRegion().front();
    auto trunc = yieldedValue(op).getDefiningOp<arith::TruncFOp>();
    auto div = trunc ? trunc.getIn().getDefiningOp<arith::DivFOp>()
                     : arith::DivFOp();
    if (!div || div.getLhs() != body.getArgument(0) ||
        div.getRhs() != body.getArgument(1))
      return std::nullopt;
  }
  Value p = a.div.getDpsInits()[0];
  // mm2: O = P V, O filled with 0 before.
  if (a.mm2.getDpsInputs()[0] != p)
    return std::nullopt;
  a.out = a.mm2.getDpsInits()[0];
  {
    auto it = filled.find(a.out);
    if (it == filled.end() || !isConstantFloat(it->second, 0.0))
      return std::nullopt;
  }
  a.q = mm1.getDpsInputs()[0];
  a.kt = mm1.getDpsInputs()[1];
  a.v = a.mm2.getDpsInputs()[1];
  // Shapes.
  auto shape = [](Value v) { return cast<MemRefType>(v.getType()).getShape(); };
  ArrayRef<int64_t> qs = shape(a.q), ks = shape(a.kt), vs = shape(a.v),
                    os = shape(a.out);
  a.batch.assign(qs.begin(), qs.begin() + a.nb);
  a.m = qs[a.nb];
  a.dk = qs[a.nb + 1];
  a.n = ks[a.nb + 1];
  a.dv = vs[a.nb + 1];
  for (ArrayRef<int64_t> sh : {ks, vs, os})
    if (sh.take_front(a.nb) != ArrayRef<int64_t>(a.batch))
      return std::nullopt;
  if (vs[a.nb] != a.n || os[a.nb] != a.m || os[a.nb + 1] != a.dv)
    return std::nullopt;
  int64_t batchCount = 1;
  for (int64_t d : a.batch)
    batchCount *= d;
  if (a.m % kTile != 0 || a.n % kTile != 0 || a.m == 0 || a.n == 0 ||
      a.dk % 16 != 0 || a.dv % 16 != 0 || a.dk == 0 || a.dv == 0 ||
      a.dk > kMaxHeadDim || a.dv > kMaxHeadDim || batchCount == 0 ||
      batchCount > kMaxGridYZ || a.m / kTile > kMaxGridX)
    return std::nullopt;
  // The intermediates: allocations the run alone uses (their fills
  // included), never Q, KT, V or O.
  a.erase.push_back(mm1);
  if (a.round)
    a.erase.push_back(a.round);
  for (linalg::GenericOp op : stages)
    a.erase.push_back(op);
  a.erase.push_back(a.mm2);
  // O's rounding right after mm2 along the path (deallocations between
  // move after the kernel, which is then built at the rounding): the
  // kernel writes the rounded O, and the f32 O is an intermediate.
  {
    SmallVector<memref::DeallocOp> between;
    for (Operation *op = nextAlongPath(a.mm2); op; op = nextAlongPath(op)) {
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        between.push_back(dealloc);
        continue;
      }
      if (mayStandBetween(op) || op->hasTrait<OpTrait::IsTerminator>())
        continue;
      auto generic = dyn_cast<linalg::GenericOp>(op);
      // Not into Q, KT or V's buffer (bufferization reuses a dead one):
      // other blocks still read the rows this block would overwrite.
      if (generic && isRounding(generic, a.out, rank) &&
          plainStatic(generic.getDpsInits()[0]) &&
          !llvm::is_contained({a.q, a.kt, a.v}, generic.getDpsInits()[0]) &&
          isa_and_present<memref::AllocOp>(a.out.getDefiningOp())) {
        a.roundOut = generic;
        a.erase.push_back(generic);
        a.deallocs.append(between.begin(), between.end());
      }
      break;
    }
  }
  llvm::SetVector<Value> written;
  for (Operation *op : a.erase)
    for (Value init : cast<linalg::GenericOp>(op).getDpsInits())
      written.insert(init);
  // The fill of S belongs to the run too: the linalg op right before mm1
  // in its block (so that the run's ops are consecutive, as the kernel
  // report counts them).
  {
    Operation *prev = mm1->getPrevNode();
    while (prev && mayStandBetween(prev))
      prev = prev->getPrevNode();
    auto fill = dyn_cast_or_null<linalg::GenericOp>(prev);
    std::optional<Value> value = fill ? fillValue(fill) : std::nullopt;
    if (!value || fill.getDpsInits()[0] != s || !isConstantFloat(*value, 0.0))
      return std::nullopt;
    a.erase.insert(a.erase.begin(), fill);
  }
  for (Value buffer : written) {
    if (buffer == a.out && !a.roundOut)
      continue;
    if (a.roundOut && buffer == a.roundOut.getDpsInits()[0])
      continue;
    if (!isa_and_present<memref::AllocOp>(buffer.getDefiningOp()))
      return std::nullopt;
    for (Operation *user : buffer.getUsers())
      if (!isa<memref::DeallocOp, memref::ExtractAlignedPointerAsIndexOp>(
              user) &&
          !llvm::is_contained(a.erase, user))
        return std::nullopt;
    a.internal.insert(buffer);
  }
  for (Value in : {a.q, a.kt, a.v})
    if (written.contains(in))
      return std::nullopt;
  if (a.roundOut)
    a.out = a.roundOut.getDpsInits()[0];
  // The run's deallocations of its own intermediates go with them; the
  // others (Q's or KT's last use was mm1) move after the kernel.
  llvm::erase_if(a.deallocs, [&](memref::DeallocOp d) {
    return a.internal.contains(d.getMemref());
  });
  a.causal = isCausal(a.score, a.nb, a.m, a.n);
  return a;
}

/// Builds the kernel of one matched run.
class Emitter {
public:
  Emitter(Attention &a) : a(a) {}

  void emit() {
    // At O's rounding when the kernel writes it (its buffer is allocated
    // after mm2), else at mm2.
    OpBuilder b(a.roundOut ? a.roundOut : a.mm2);
    // Every op the kernel replaces, fills included (the kernel report,
    // src/driver/KernelAnalysis.cpp, sums the FLOPs of that many
    // consecutive linalg ops).
    SmallVector<Location> locs;
    for (Operation *op : a.erase)
      locs.push_back(op->getLoc());
    loc = FusedLoc::get(b.getContext(), locs,
                        b.getArrayAttr({b.getStringAttr(
                                            "kina-gpu-map-attention"),
                                        b.getI64IntegerAttr(locs.size())}));
    // The vector kernel where Q, KT and V are 16-byte aligned (checked
    // here, on the host), else its scalar twin (see GpuMapRows.cpp: one
    // kernel per case, not a branch per access).
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value sixteen = arith::ConstantIndexOp::create(b, loc, 16);
    Value aligned = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    for (Value memref : {a.q, a.kt, a.v}) {
      Value pointer =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
      Value rem = arith::RemUIOp::create(b, loc, pointer, sixteen);
      aligned = arith::AndIOp::create(
          b, loc, aligned,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem, zero));
    }
    auto choice = scf::IfOp::create(b, loc, aligned, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      emitKernel(b, /*vectors=*/true);
      b.setInsertionPointToStart(&choice.getElseRegion().front());
      emitKernel(b, /*vectors=*/false);
    }
    for (memref::DeallocOp dealloc : a.deallocs)
      dealloc->moveAfter(choice);
    for (Operation *op : llvm::reverse(a.erase))
      op->erase();
    for (Value buffer : a.internal)
      eraseAllocation(buffer.getDefiningOp<memref::AllocOp>());
  }

private:
  Attention &a;
  Location loc = UnknownLoc();
  Value tid, lane, quad, pairCol; // thread, lane, lane / 4, (lane % 4) * 2
  Value ldRow, ldCol;        // ldmatrix: (l / 8 % 2) * 8 + l % 8, l / 16 * 8

  Value idx(OpBuilder &b, int64_t v) {
    return arith::ConstantIndexOp::create(b, loc, v);
  }
  Value add(OpBuilder &b, Value x, int64_t c) {
    return c == 0 ? x : arith::AddIOp::create(b, loc, x, idx(b, c)).getResult();
  }
  Value f32c(OpBuilder &b, float v) {
    return arith::ConstantFloatOp::create(b, loc, b.getF32Type(),
                                          llvm::APFloat(v));
  }

  SmallVector<Value> with(ArrayRef<Value> batch, Value i, Value j) {
    SmallVector<Value> r(batch.begin(), batch.end());
    r.push_back(i);
    r.push_back(j);
    return r;
  }

  /// Two half-precision values as one 32-bit register (lo in bits 0-15),
  /// as nvvm.mma.sync takes them: vector<2xf16> for f16, i32 for bf16.
  Value pack(OpBuilder &b, Value lo, Value hi) {
    auto vec2 = VectorType::get({2}, lo.getType());
    Value v = vector::FromElementsOp::create(b, loc, vec2, ValueRange{lo, hi});
    if (lo.getType().isF16())
      return v;
    Value w = vector::BitCastOp::create(
        b, loc, VectorType::get({1}, b.getI32Type()), v);
    return vector::ExtractOp::create(b, loc, w, ArrayRef<int64_t>{0});
  }

  Value loadPair(OpBuilder &b, Value memref, ArrayRef<Value> base, Value row,
                 Value col, bool rowPair) {
    // rowPair: the elements (row, col), (row + 1, col); else (row, col),
    // (row, col + 1).
    SmallVector<Value> i0 = with(base, row, col);
    SmallVector<Value> i1 = rowPair ? with(base, add(b, row, 1), col)
                                    : with(base, row, add(b, col, 1));
    Value lo = memref::LoadOp::create(b, loc, memref, i0);
    Value hi = memref::LoadOp::create(b, loc, memref, i1);
    return pack(b, lo, hi);
  }

  /// D = A B + C, one m16n8k16 tensor-core step of the warp.
  SmallVector<Value> mma(OpBuilder &b, ArrayRef<Value> fragA,
                         ArrayRef<Value> fragB, ArrayRef<Value> acc,
                         Type elem) {
    Type f32 = b.getF32Type();
    auto result = LLVM::LLVMStructType::getLiteral(b.getContext(),
                                                   {f32, f32, f32, f32});
    NVVM::MMATypes type =
        elem.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    auto op = NVVM::MmaOp::create(
        b, loc, result, fragA, fragB, acc, ArrayRef<int64_t>{16, 8, 16},
        std::nullopt, std::nullopt,
        std::array<NVVM::MMATypes, 2>{type, type},
        std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                       NVVM::MMALayout::col});
    SmallVector<Value> d;
    for (int64_t i = 0; i < 4; ++i)
      d.push_back(LLVM::ExtractValueOp::create(b, loc, op, i));
    return d;
  }

  /// The B fragments of two adjacent n8 tiles (k16 x n16 at (row0, col0)
  /// of the row-major [k, n] workgroup tile `tile`, `rowBytes` a row) in
  /// one `ldmatrix.sync.x4.trans`: {b0, b1} of the first tile, then of the
  /// second. Lane l gives the address of row l % 8 of matrix l / 8
  /// (matrices: k 0-7 | 8-15 of n 0-7, then of n 8-15).
  SmallVector<Value> loadBPair(OpBuilder &b, Value tileBase, int64_t rowBytes,
                               int64_t row0, int64_t col0, Type elem) {
    Value rowOff = arith::AddIOp::create(
        b, loc, ldRow, arith::ConstantIntOp::create(b, loc, b.getI64Type(), row0));
    Value colOff = arith::AddIOp::create(
        b, loc, ldCol, arith::ConstantIntOp::create(b, loc, b.getI64Type(), col0));
    Value bytes = arith::AddIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, rowOff,
            arith::ConstantIntOp::create(b, loc, b.getI64Type(), rowBytes)),
        arith::MulIOp::create(
            b, loc, colOff,
            arith::ConstantIntOp::create(b, loc, b.getI64Type(), 2)));
    Value address = arith::AddIOp::create(b, loc, tileBase, bytes);
    auto ptrType = LLVM::LLVMPointerType::get(b.getContext(), 3);
    Value ptr = LLVM::IntToPtrOp::create(b, loc, ptrType, address);
    Type i32 = b.getI32Type();
    auto result =
        LLVM::LLVMStructType::getLiteral(b.getContext(), {i32, i32, i32, i32});
    Value regs = NVVM::LdMatrixOp::create(
        b, loc, result, ptr, /*num=*/4, NVVM::MMALayout::col,
        NVVM::LdStMatrixShapeAttr::get(b.getContext(), 8, 8),
        NVVM::LdStMatrixEltType::B16);
    SmallVector<Value> out;
    for (int64_t i = 0; i < 4; ++i) {
      Value r = LLVM::ExtractValueOp::create(b, loc, regs, i);
      if (elem.isF16())
        r = LLVM::BitcastOp::create(b, loc, VectorType::get({2}, elem), r);
      out.push_back(r);
    }
    return out;
  }

  /// The shared-space address of a workgroup buffer, as i64.
  Value workgroupBase(OpBuilder &b, Value memref) {
    Value p = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), p);
  }

  /// The scores' op f on one element: its region cloned with `in` as the
  /// score and `ivs` as its indices. Unmasked (a causal f, a key block
  /// wholly at or below the diagonal): the value the final select keeps
  /// where n <= m, without the comparison.
  Value cloneScore(OpBuilder &b, Value in, ArrayRef<Value> ivs, bool masked) {
    Block &body = a.score.getRegion().front();
    Type outElem = body.getArgument(1).getType();
    Value dummy =
        arith::ConstantOp::create(b, loc, outElem, b.getZeroAttr(outElem));
    if (masked)
      return cloneRegion(b, a.score, {in, dummy}, ivs)[0];
    auto select = yieldedValue(a.score).getDefiningOp<arith::SelectOp>();
    IRMapping mapping;
    mapping.map(body.getArguments(), ValueRange{in, dummy});
    for (Operation &inner : body) {
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        mapping.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      if (isa<linalg::YieldOp>(inner) || &inner == select.getOperation())
        continue;
      b.clone(inner, mapping);
    }
    return mapping.lookupOrDefault(select.getTrueValue());
  }

  /// exp(x) as exp2(x * log2(e)).
  Value exp(OpBuilder &b, Value x) {
    Value scaled = arith::MulFOp::create(b, loc, x, f32c(b, 1.4426950408889634f));
    return math::Exp2Op::create(b, loc, scaled);
  }

  Value shuffleXor(OpBuilder &b, Value v, int32_t offset) {
    return gpu::ShuffleOp::create(b, loc, v, offset, 32, gpu::ShuffleMode::XOR)
        .getShuffleResult();
  }

  /// The [rows, cols] tile of `src` at (row0, col0) (batch `base`) as
  /// this thread's share: 16-byte vectors (`vectors`) or elements, thread
  /// t taking the t-th, (t + 128)-th, ... of the tile's row-major chunks.
  SmallVector<Value> loadTile(OpBuilder &b, Value src, ArrayRef<Value> base,
                              Value row0, Value col0, int64_t rows,
                              int64_t cols, bool vectors) {
    int64_t lanes = vectors ? 8 : 1;
    Type elem = cast<MemRefType>(src.getType()).getElementType();
    auto vecType = VectorType::get({lanes}, elem);
    SmallVector<Value> values;
    forEachChunk(b, rows, cols, lanes, [&](Value r, Value c) {
      SmallVector<Value> from =
          with(base, arith::AddIOp::create(b, loc, row0, r),
               arith::AddIOp::create(b, loc, col0, c));
      values.push_back(
          vectors ? Value(vector::LoadOp::create(b, loc, vecType, src, from,
                                                 /*nontemporal=*/false,
                                                 llvm::MaybeAlign(16)))
                  : Value(memref::LoadOp::create(b, loc, src, from)));
    });
    return values;
  }

  /// Stores loadTile's values into stage `stage` of the workgroup tiles
  /// `dst` ([stages, rows, cols + kPad]).
  void storeTile(OpBuilder &b, ArrayRef<Value> values, Value dst, Value stage,
                 int64_t rows, int64_t cols, bool vectors) {
    int64_t lanes = vectors ? 8 : 1;
    size_t i = 0;
    forEachChunk(b, rows, cols, lanes, [&](Value r, Value c) {
      Value v = values[i++];
      if (vectors)
        // 16-byte stores: kina-gpu-align-workgroup gives the workgroup
        // buffers 16-byte alignment ((cols + kPad) * 2-byte rows keep it).
        vector::StoreOp::create(b, loc, v, dst, ValueRange{stage, r, c},
                                /*nontemporal=*/false, llvm::MaybeAlign(16));
      else
        memref::StoreOp::create(b, loc, v, dst, ValueRange{stage, r, c});
    });
  }

  void forEachChunk(OpBuilder &b, int64_t rows, int64_t cols, int64_t lanes,
                    llvm::function_ref<void(Value, Value)> fn) {
    int64_t perRow = cols / lanes;
    int64_t count = rows * perRow / kThreads;
    for (int64_t it = 0; it < count; ++it) {
      Value linear = add(b, tid, it * kThreads);
      Value r = arith::DivUIOp::create(b, loc, linear, idx(b, perRow));
      Value c = arith::MulIOp::create(
          b, loc, arith::RemUIOp::create(b, loc, linear, idx(b, perRow)),
          idx(b, lanes));
      fn(r, c);
    }
  }

  void emitKernel(OpBuilder &b, bool vectors) {
    MLIRContext *ctx = b.getContext();
    Type qElem = cast<MemRefType>(a.q.getType()).getElementType();
    Type pElem = cast<MemRefType>(a.v.getType()).getElementType();
    Type f32 = b.getF32Type();
    auto workgroup = gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
    // The vector kernel double-buffers the tiles where two stages fit in
    // the 48 KiB of static workgroup memory (head dims up to 64 + 64 or
    // 96 + 32; not 128 + 128): one barrier a step instead of two, the
    // stores of step i + 1 no longer between two barriers of step i.
    int64_t kStageBytes = a.dk * (kTile + kPad) * 2;
    int64_t vStageBytes = kTile * (a.dv + kPad) * 2;
    int64_t stages =
        vectors && 2 * (kStageBytes + vStageBytes) <= kMaxStaticWorkgroup ? 2
                                                                           : 1;
    auto kType = MemRefType::get({stages, a.dk, kTile + kPad}, qElem,
                                 MemRefLayoutAttrInterface(), workgroup);
    auto vType = MemRefType::get({stages, kTile, a.dv + kPad}, pElem,
                                 MemRefLayoutAttrInterface(), workgroup);
    int64_t batchCount = 1;
    for (int64_t d : a.batch)
      batchCount *= d;
    Value one = idx(b, 1);
    gpu::LaunchOp launch =
        createLaunch(b, loc, idx(b, a.m / kTile), idx(b, batchCount), one,
                     kThreads, 1, 1, TypeRange{kType, vType});
    Value ks = launch.getWorkgroupAttributions()[0];
    Value vs = launch.getWorkgroupAttributions()[1];
    tid = launch.getThreadIds().x;
    Value warp = arith::DivUIOp::create(b, loc, tid, idx(b, 32));
    lane = arith::RemUIOp::create(b, loc, tid, idx(b, 32));
    quad = arith::DivUIOp::create(b, loc, lane, idx(b, 4));
    pairCol = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, lane, idx(b, 4)), idx(b, 2));
    {
      Type i64 = b.getI64Type();
      Value l64 = arith::IndexCastOp::create(b, loc, i64, lane);
      auto c64 = [&](int64_t v) {
        return arith::ConstantIntOp::create(b, loc, i64, v);
      };
      Value matrix = arith::DivUIOp::create(b, loc, l64, c64(8));
      ldRow = arith::AddIOp::create(
          b, loc,
          arith::MulIOp::create(
              b, loc, arith::RemUIOp::create(b, loc, matrix, c64(2)), c64(8)),
          arith::RemUIOp::create(b, loc, l64, c64(8)));
      ldCol = arith::MulIOp::create(
          b, loc, arith::DivUIOp::create(b, loc, l64, c64(16)), c64(8));
    }
    Value ksBase = workgroupBase(b, ks), vsBase = workgroupBase(b, vs);
    SmallVector<Value> batchSizes;
    for (int64_t d : a.batch)
      batchSizes.push_back(idx(b, d));
    SmallVector<Value> base =
        delinearize(b, loc, launch.getBlockIds().y, batchSizes);
    Value mTile = launch.getBlockIds().x;
    Value row0 = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, mTile, idx(b, kTile)),
        arith::MulIOp::create(b, loc, warp, idx(b, 16)));
    Value rowA = arith::AddIOp::create(b, loc, row0, quad);
    Value rowB = add(b, rowA, 8);
    // Q's A fragments, once.
    SmallVector<SmallVector<Value>> qFrag;
    for (int64_t k = 0; k < a.dk / 16; ++k) {
      Value c0 = add(b, pairCol, k * 16), c1 = add(b, pairCol, k * 16 + 8);
      qFrag.push_back({loadPair(b, a.q, base, rowA, c0, false),
                       loadPair(b, a.q, base, rowB, c0, false),
                       loadPair(b, a.q, base, rowA, c1, false),
                       loadPair(b, a.q, base, rowB, c1, false)});
    }
    int64_t dTiles = a.dv / 8;
    Value negInf = f32c(b, -std::numeric_limits<float>::infinity());
    Value zeroF = f32c(b, 0.0f);
    SmallVector<Value> inits{negInf, negInf, zeroF, zeroF};
    for (int64_t i = 0; i < dTiles * 4; ++i)
      inits.push_back(zeroF);
    Value steps = idx(b, a.n / kTile);
    if (a.causal)
      steps = arith::MinUIOp::create(b, loc, steps, add(b, mTile, 1));
    // The vector kernel loads the next step's tiles into registers while
    // it computes on this step's (software pipelining): they ride in the
    // loop's carried values.
    size_t numCarried = inits.size();
    auto loadStep = [&](OpBuilder &b, Value n0) {
      SmallVector<Value> t = loadTile(b, a.kt, base, idx(b, 0), n0, a.dk,
                                      kTile, vectors);
      SmallVector<Value> u = loadTile(b, a.v, base, n0, idx(b, 0), kTile,
                                      a.dv, vectors);
      t.append(u.begin(), u.end());
      return t;
    };
    size_t kChunks = a.dk * kTile / (vectors ? 8 : 1) / kThreads;
    Value zeroIdx = idx(b, 0);
    auto prefetch = [&](OpBuilder &b, Value step, ValueRange otherwise) {
      // Step `step`'s tiles where it exists, else `otherwise` (unused).
      Value exists =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, step, steps);
      auto pre = scf::IfOp::create(b, loc, otherwise.getTypes(), exists,
                                   /*withElse=*/true);
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(&pre.getThenRegion().front());
      scf::YieldOp::create(
          b, loc,
          loadStep(b, arith::MulIOp::create(b, loc, step, idx(b, kTile))));
      b.setInsertionPointToStart(&pre.getElseRegion().front());
      scf::YieldOp::create(b, loc, otherwise);
      return SmallVector<Value>(pre.getResults());
    };
    if (stages == 2) {
      // Step 0 into stage 0; step 1 into registers (carried).
      SmallVector<Value> first = loadStep(b, zeroIdx);
      storeTile(b, ArrayRef<Value>(first).take_front(kChunks), ks, zeroIdx,
                a.dk, kTile, vectors);
      storeTile(b, ArrayRef<Value>(first).drop_front(kChunks), vs, zeroIdx,
                kTile, a.dv, vectors);
      gpu::BarrierOp::create(b, loc);
      SmallVector<Value> second = prefetch(b, one, first);
      inits.append(second.begin(), second.end());
    } else if (vectors) {
      SmallVector<Value> first = loadStep(b, zeroIdx);
      inits.append(first.begin(), first.end());
    }
    auto loop = scf::ForOp::create(b, loc, idx(b, 0), steps, one, inits);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value nb = loop.getInductionVar();
      ValueRange it = loop.getRegionIterArgs();
      Value mOld[2] = {it[0], it[1]}, l[2] = {it[2], it[3]};
      SmallVector<Value> o(it.begin() + 4, it.begin() + numCarried);
      Value n0 = arith::MulIOp::create(b, loc, nb, idx(b, kTile));
      SmallVector<Value> tiles, next;
      Value stage = zeroIdx;
      if (stages == 2) {
        // This step computes on stage nb % 2. The carried tiles (step
        // nb + 1) go to the other stage: every warp read it last in step
        // nb - 1, before that step's closing barrier. Then step nb + 2's
        // loads are issued, to land while this step computes.
        tiles.assign(it.begin() + numCarried, it.end());
        stage = arith::RemUIOp::create(b, loc, nb, idx(b, 2));
        Value other = arith::SubIOp::create(b, loc, one, stage);
        Value nextStep = add(b, nb, 1);
        Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           nextStep, steps);
        auto store = scf::IfOp::create(b, loc, more, /*withElse=*/false);
        {
          OpBuilder::InsertionGuard g2(b);
          b.setInsertionPointToStart(&store.getThenRegion().front());
          storeTile(b, ArrayRef<Value>(tiles).take_front(kChunks), ks, other,
                    a.dk, kTile, vectors);
          storeTile(b, ArrayRef<Value>(tiles).drop_front(kChunks), vs, other,
                    kTile, a.dv, vectors);
        }
        next = prefetch(b, add(b, nb, 2), tiles);
      } else {
        if (vectors)
          tiles.assign(it.begin() + numCarried, it.end());
        else
          tiles = loadStep(b, n0);
        gpu::BarrierOp::create(b, loc);
        storeTile(b, ArrayRef<Value>(tiles).take_front(kChunks), ks, stage,
                  a.dk, kTile, vectors);
        storeTile(b, ArrayRef<Value>(tiles).drop_front(kChunks), vs, stage,
                  kTile, a.dv, vectors);
        gpu::BarrierOp::create(b, loc);
        // The next step's tiles (this step's again after the last: unused).
        if (vectors)
          next = prefetch(b, add(b, nb, 1), tiles);
      }
      Value stage64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), stage);
      auto stageBase = [&](Value base, int64_t bytes) {
        return arith::AddIOp::create(
                   b, loc, base,
                   arith::MulIOp::create(
                       b, loc, stage64,
                       arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                                    bytes)))
            .getResult();
      };
      Value kBase = stageBase(ksBase, kStageBytes);
      Value vBase = stageBase(vsBase, vStageBytes);
      // S = Q KT, 8 tiles of n8; then f per element.
      SmallVector<SmallVector<Value>> sv(kTile / 8);
      Value zero4[4] = {zeroF, zeroF, zeroF, zeroF};
      SmallVector<SmallVector<Value>> sAcc(kTile / 8,
                                           SmallVector<Value>(zero4, zero4 + 4));
      for (int64_t k = 0; k < a.dk / 16; ++k)
        for (int64_t t = 0; t < kTile / 8; t += 2) {
          SmallVector<Value> frags = loadBPair(
              b, kBase, (kTile + kPad) * 2, k * 16, t * 8, qElem);
          sAcc[t] = mma(b, qFrag[k], {frags[0], frags[1]}, sAcc[t], qElem);
          sAcc[t + 1] =
              mma(b, qFrag[k], {frags[2], frags[3]}, sAcc[t + 1], qElem);
        }
      auto scores = [&](OpBuilder &b, bool masked) {
        SmallVector<Value> flat;
        for (int64_t t = 0; t < kTile / 8; ++t) {
          for (int64_t c = 0; c < 4; ++c) {
            Value row = c < 2 ? rowA : rowB;
            Value key = arith::AddIOp::create(
                b, loc, n0, add(b, pairCol, t * 8 + c % 2));
            SmallVector<Value> ivs = with(base, row, key);
            Value in = sAcc[t][c];
            if (a.round) {
              Type roundElem =
                  a.round.getRegion().front().getArgument(1).getType();
              Value roundDummy = arith::ConstantOp::create(
                  b, loc, roundElem, b.getZeroAttr(roundElem));
              in = cloneRegion(b, a.round, {in, roundDummy}, ivs)[0];
            }
            Value s = cloneScore(b, in, ivs, masked);
            if (!s.getType().isF32())
              s = arith::ExtFOp::create(b, loc, f32, s);
            flat.push_back(s);
          }
        }
        return flat;
      };
      SmallVector<Value> flat;
      if (a.causal) {
        // Only the last step (the diagonal block) has keys above the
        // diagonal; the others take the mask's unmasked value.
        Value diagonal = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, nb, mTile);
        SmallVector<Type> types(kTile / 2, f32);
        auto choose = scf::IfOp::create(b, loc, types, diagonal,
                                        /*withElse=*/true);
        OpBuilder::InsertionGuard g2(b);
        b.setInsertionPointToStart(&choose.getThenRegion().front());
        scf::YieldOp::create(b, loc, scores(b, /*masked=*/true));
        b.setInsertionPointToStart(&choose.getElseRegion().front());
        scf::YieldOp::create(b, loc, scores(b, /*masked=*/false));
        flat.assign(choose.getResults().begin(), choose.getResults().end());
      } else {
        flat = scores(b, /*masked=*/true);
      }
      for (int64_t t = 0; t < kTile / 8; ++t)
        sv[t].assign(flat.begin() + t * 4, flat.begin() + t * 4 + 4);
      // The online softmax, per row of the thread (A: c0, c1; B: c2, c3).
      Value mSafe[2], alpha[2], mNew[2];
      for (int r = 0; r < 2; ++r) {
        Value mx = mOld[r];
        for (auto &tile : sv)
          for (int c = 2 * r; c < 2 * r + 2; ++c)
            mx = arith::MaximumFOp::create(b, loc, mx, tile[c]);
        mx = arith::MaximumFOp::create(b, loc, mx, shuffleXor(b, mx, 1));
        mx = arith::MaximumFOp::create(b, loc, mx, shuffleXor(b, mx, 2));
        mNew[r] = mx;
        Value isNegInf = arith::CmpFOp::create(
            b, loc, arith::CmpFPredicate::OEQ, mx, negInf);
        mSafe[r] = arith::SelectOp::create(b, loc, isNegInf, zeroF, mx);
        alpha[r] = exp(b, arith::SubFOp::create(b, loc, mOld[r], mSafe[r]));
      }
      Value lNew[2] = {arith::MulFOp::create(b, loc, l[0], alpha[0]),
                       arith::MulFOp::create(b, loc, l[1], alpha[1])};
      SmallVector<SmallVector<Value>> ev(kTile / 8);
      for (int64_t t = 0; t < kTile / 8; ++t)
        for (int c = 0; c < 4; ++c) {
          Value e =
              exp(b, arith::SubFOp::create(b, loc, sv[t][c], mSafe[c / 2]));
          lNew[c / 2] = arith::AddFOp::create(b, loc, lNew[c / 2], e);
          ev[t].push_back(arith::TruncFOp::create(b, loc, pElem, e));
        }
      for (int64_t d = 0; d < dTiles; ++d)
        for (int c = 0; c < 4; ++c)
          o[d * 4 + c] =
              arith::MulFOp::create(b, loc, o[d * 4 + c], alpha[c / 2]);
      // O += P V: P's A fragments are two S tiles' accumulators.
      for (int64_t k = 0; k < kTile / 16; ++k) {
        SmallVector<Value> pFrag{pack(b, ev[2 * k][0], ev[2 * k][1]),
                                 pack(b, ev[2 * k][2], ev[2 * k][3]),
                                 pack(b, ev[2 * k + 1][0], ev[2 * k + 1][1]),
                                 pack(b, ev[2 * k + 1][2], ev[2 * k + 1][3])};
        for (int64_t d = 0; d < dTiles; d += 2) {
          SmallVector<Value> frags = loadBPair(
              b, vBase, (a.dv + kPad) * 2, k * 16, d * 8, pElem);
          for (int64_t h = 0; h < 2; ++h) {
            SmallVector<Value> acc(o.begin() + (d + h) * 4,
                                   o.begin() + (d + h) * 4 + 4);
            acc = mma(b, pFrag, {frags[2 * h], frags[2 * h + 1]}, acc, pElem);
            std::copy(acc.begin(), acc.end(), o.begin() + (d + h) * 4);
          }
        }
      }
      if (stages == 2) // stage nb % 2 read; stage (nb + 1) % 2 written
        gpu::BarrierOp::create(b, loc);
      SmallVector<Value> yield{mNew[0], mNew[1], lNew[0], lNew[1]};
      yield.append(o.begin(), o.end());
      yield.append(next.begin(), next.end());
      scf::YieldOp::create(b, loc, yield);
    }
    ValueRange res = loop.getResults();
    Value l[2];
    for (int r = 0; r < 2; ++r) {
      l[r] = res[2 + r];
      l[r] = arith::AddFOp::create(b, loc, l[r], shuffleXor(b, l[r], 1));
      l[r] = arith::AddFOp::create(b, loc, l[r], shuffleXor(b, l[r], 2));
    }
    for (int64_t d = 0; d < dTiles; ++d)
      for (int c = 0; c < 4; ++c) {
        Value value =
            arith::DivFOp::create(b, loc, res[4 + d * 4 + c], l[c / 2]);
        Type outElem = cast<MemRefType>(a.out.getType()).getElementType();
        if (value.getType() != outElem) // roundOut: O rounded, as it did
          value = arith::TruncFOp::create(b, loc, outElem, value);
        Value col = add(b, pairCol, d * 8 + c % 2);
        memref::StoreOp::create(b, loc, value, a.out,
                                with(base, c < 2 ? rowA : rowB, col));
      }
  }
};

class GpuMapAttentionPass
    : public impl::GpuMapAttentionPassBase<GpuMapAttentionPass> {
public:
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> candidates;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>() && contraction(op))
        candidates.push_back(op);
    });
    llvm::DenseSet<Operation *> erased;
    for (linalg::GenericOp op : candidates) {
      if (erased.contains(op))
        continue;
      std::optional<Attention> a = match(op);
      if (!a)
        continue;
      for (Operation *e : a->erase)
        erased.insert(e);
      Emitter(*a).emit();
    }
  }
};

/// MLIR 22 emits a workgroup attribution without `llvm.align` as a
/// global of its element's alignment (2 bytes for bf16), while LLVM
/// vectorises accesses into it by offsets alone (16-byte `st.shared.v4`
/// into a `.align 2` buffer). Every kernel's workgroup buffers get 16.
class GpuAlignWorkgroupPass
    : public impl::GpuAlignWorkgroupPassBase<GpuAlignWorkgroupPass> {
public:
  void runOnOperation() override {
    getOperation().walk([](gpu::GPUFuncOp func) {
      for (unsigned i = 0, e = func.getNumWorkgroupAttributions(); i < e;
           ++i) {
        if (func.getWorkgroupAttributionAttr(
                i, LLVM::LLVMDialect::getAlignAttrName()))
          continue;
        func.setWorkgroupAttributionAttr(
            i, LLVM::LLVMDialect::getAlignAttrName(),
            IntegerAttr::get(IntegerType::get(func.getContext(), 64), 16));
      }
    });
  }
};

} // namespace

} // namespace kina::cuda
