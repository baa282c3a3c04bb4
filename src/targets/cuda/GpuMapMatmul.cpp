//===- GpuMapMatmul.cpp - Contractions as shared-memory tiled kernels -----===//
//
// The pass `kina-gpu-map-matmul` of the cuda target. It turns each
// host-side bufferized contraction `linalg.generic` (what `linalg.matmul`
// generalizes to, and MLIRGen's batched, broadcast and rank-1 matmuls: two
// inputs, one output, exactly one reduction loop k, a region `acc + a*b`
// with any casts) into a kernel of 16x16 output tiles:
//
//   block (16, 16) threads, grid (ceil(N/16), ceil(M/16), batch), each
//   dimension grid-stride looped (at most 65535 blocks in y and z);
//   thread (tx, ty) owns C[row = 16*by + ty][col = 16*bx + tx];
//   for k0 = 0; k0 < K; k0 += 16:
//     As[ty][tx] = A(row_of_tile + ty, k0 + tx)   (0 outside the operand)
//     Bs[ty][tx] = B(k0 + ty, col_of_tile + tx)
//     barrier; acc = region(As[ty][kk], Bs[kk][tx], acc) for kk < 16;
//     barrier
//   C = acc (starting from C's init, the zero fill)
//
// m is the parallel loop only the first input reads, n the one only the
// second reads (either may be missing: a rank-1 operand), the other
// parallel loops are batch loops (broadcast batch dims are constant 0 in
// the maps, which the loads follow). The tiles are loaded with threadIdx.x
// on k for A and on n for B, coalesced for row-major operands. The k order
// is the CPU's (0 to K-1), so integer matmuls are exact and float ones
// accumulate in the same order.
//
// With the `cublaslt` option (the default) a float contraction (A and B of
// one type among f16, bf16, f32, f64; C of that type, or f32 for f16/bf16;
// region exactly `acc + ext(a) * ext(b)`; maps of loop dims and broadcast
// zeros) goes to the runtime first (docs/cuda.md, "Matmul"):
//
//   %handled = scf.if %nonEmpty {            // all of m, n, k, batch > 0
//     dims = alloca [m, n, k, batch sizes, strides of A, B and C per loop]
//     call @kina_rt_gpu_matmul(types, flags, batchRank, dims, &A, &B, &C)
//   } else { 0 }
//   scf.if %handled == 0 { zero fill of C; the kernel above }
//
// The strides are the memrefs' (memref.extract_strided_metadata) summed per
// loop, so any layout reaches the runtime, which returns 0 for the ones
// cuBLASLt cannot take. A zero fill of C right before the contraction moves
// into the fallback branch (the runtime then computes C = A B, else C +=
// A B).
//
// Epilogues (docs/cuda.md, "Matmul epilogues"): when such an f32 product,
// zero-filled, has one element-by-element consumer computing exactly
// act(alpha * c + residual + bias) in f32 (epilogueAfter says which), the
// call is kina_rt_gpu_matmul_epilogue and cuBLASLt writes the consumer's
// output; the fill, the kernel and the consumer form the fallback.
//
//===----------------------------------------------------------------------===//
#include "CudaPasses.h"
#include "GpuCodegen.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/SmallBitVector.h"

#include <cmath>
#include <optional>

using namespace mlir;

namespace kina::cuda {

#define GEN_PASS_DEF_GPUMAPMATMULPASS
#include "kina/CudaPasses.h.inc"

namespace {

constexpr int64_t kTile = 16;

/// The runtime function of the cuBLASLt route and its type codes
/// (kina/runtime.h: KINA_GPU_MATMUL_*).
constexpr llvm::StringLiteral kMatmulFunction = "kina_rt_gpu_matmul";
constexpr llvm::StringLiteral kMatmulEpilogueFunction =
    "kina_rt_gpu_matmul_epilogue";
constexpr int32_t kF32 = 1, kF64 = 2, kF16 = 3, kBF16 = 4;
constexpr int32_t kFlagTf32 = 1, kFlagAccumulate = 2;
/// KINA_GPU_MATMUL_ALGO_SHIFT: the heuristic algorithm's index in the flags.
constexpr int32_t kAlgoShift = 8;

/// The loops of a contraction generic, or nullopt when `op` is not one.
struct ContractionLoops {
  unsigned k;
  std::optional<unsigned> m, n;
  SmallVector<unsigned> batch;
};

std::optional<ContractionLoops> matchContraction(linalg::GenericOp op) {
  if (!isMappableGeneric(op) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  for (Value in : op.getDpsInputs())
    if (!isa<MemRefType>(in.getType()))
      return std::nullopt;
  Block &body = op.getRegion().front();
  if (!body.getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *add = yield.getValues()[0].getDefiningOp();
  if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) ||
      !llvm::is_contained(add->getOperands(), body.getArgument(2)))
    return std::nullopt;

  AffineMap a = op.getIndexingMapsArray()[0];
  AffineMap bm = op.getIndexingMapsArray()[1];
  auto uses = [](AffineMap map, unsigned d) { return map.isFunctionOfDim(d); };
  // Whether result `fromEnd` (1: the last) of `map` is exactly loop `d`.
  auto isAt = [](AffineMap map, unsigned d, unsigned fromEnd) {
    unsigned n = map.getNumResults();
    if (n < fromEnd)
      return false;
    auto dim = dyn_cast<AffineDimExpr>(map.getResult(n - fromEnd));
    return dim && dim.getPosition() == d;
  };
  ContractionLoops loops;
  bool haveK = false;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (it == utils::IteratorType::reduction) {
      if (!uses(a, d) || !uses(bm, d))
        return std::nullopt;
      loops.k = d;
      haveK = true;
      continue;
    }
    bool inA = uses(a, d), inB = uses(bm, d);
    // m is A's row loop (its second-to-last dim, before k), n B's column
    // loop (its last dim, after k); a loop only one operand reads
    // elsewhere is a batch loop the other broadcasts.
    if (inA && !inB && isAt(a, d, 2)) {
      if (loops.m)
        return std::nullopt;
      loops.m = d;
    } else if (inB && !inA && isAt(bm, d, 1)) {
      if (loops.n)
        return std::nullopt;
      loops.n = d;
    } else {
      loops.batch.push_back(d);
    }
  }
  if (!haveK)
    return std::nullopt;
  return loops;
}

/// KINA_GPU_MATMUL_* of a float type; 0 for any other type.
int32_t matmulTypeCode(Type t) {
  if (t.isF32())
    return kF32;
  if (t.isF64())
    return kF64;
  if (t.isF16())
    return kF16;
  if (t.isBF16())
    return kBF16;
  return 0;
}

/// `value` is block argument `arg`, possibly through one arith.extf.
bool isArgOrExt(Value value, BlockArgument arg) {
  if (value == arg)
    return true;
  auto ext = value.getDefiningOp<arith::ExtFOp>();
  return ext && ext.getIn() == arg;
}

/// The `types` argument of kina_rt_gpu_matmul for `op` when the cuBLASLt
/// route takes it (types and region as the file comment says), else 0.
int32_t libraryTypes(linalg::GenericOp op) {
  Type aType = getElementTypeOrSelf(op.getDpsInputs()[0].getType());
  Type bType = getElementTypeOrSelf(op.getDpsInputs()[1].getType());
  Type cType = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  int32_t a = matmulTypeCode(aType), c = matmulTypeCode(cType);
  if (!a || aType != bType ||
      !(aType == cType || ((a == kF16 || a == kBF16) && c == kF32)))
    return 0;
  Block &body = op.getRegion().front();
  // Exactly: [extf a], [extf b], mulf, addf(acc, product), yield.
  size_t expected = 3 + (aType != cType ? 2 : 0);
  if (body.getOperations().size() != expected)
    return 0;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add)
    return 0;
  Value acc = body.getArgument(2);
  Value product = add.getLhs() == acc ? add.getRhs() : add.getLhs();
  if ((add.getLhs() == acc) == (add.getRhs() == acc))
    return 0;
  auto mul = product.getDefiningOp<arith::MulFOp>();
  if (!mul)
    return 0;
  BlockArgument x = body.getArgument(0), y = body.getArgument(1);
  if (!((isArgOrExt(mul.getLhs(), x) && isArgOrExt(mul.getRhs(), y)) ||
        (isArgOrExt(mul.getLhs(), y) && isArgOrExt(mul.getRhs(), x))))
    return 0;
  // Every map result a loop dim (each at most once) or a broadcast 0.
  for (AffineMap map : op.getIndexingMapsArray()) {
    llvm::SmallBitVector seen(map.getNumDims());
    for (AffineExpr e : map.getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(e)) {
        if (seen.test(dim.getPosition()))
          return 0;
        seen.set(dim.getPosition());
      } else if (auto cst = dyn_cast<AffineConstantExpr>(e)) {
        if (cst.getValue() != 0)
          return 0;
      } else {
        return 0;
      }
    }
  }
  return a | c << 8;
}

/// The zero fill of `op`'s init right before it (a generalized
/// `linalg.fill` of constant 0), or null.
linalg::GenericOp zeroFillBefore(linalg::GenericOp op) {
  auto fill = dyn_cast_or_null<linalg::GenericOp>(op->getPrevNode());
  if (!fill || fill.getNumDpsInits() != 1 ||
      fill.getDpsInits()[0] != op.getDpsInits()[0] ||
      fill.getNumReductionLoops() != 0 || fill.getNumDpsInputs() > 1)
    return nullptr;
  auto yield = cast<linalg::YieldOp>(fill.getRegion().front().getTerminator());
  Value v = yield.getValues()[0];
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    if (arg.getOwner() != &fill.getRegion().front() ||
        arg.getArgNumber() != 0 || fill.getNumDpsInputs() != 1)
      return nullptr;
    v = fill.getDpsInputs()[0];
  }
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto value = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  if (!value || !value.getValue().isZero())
    return nullptr;
  return fill;
}

/// The rounding of an f16/bf16 product's f32 result that follows `op`, when
/// cuBLASLt can write the rounded result itself: a generic `truncf` with
/// identity maps from `op`'s init C into a buffer D of A's element type;
/// C used by nothing else than its null check, `fill` (the zero fill
/// before), `op`, the rounding and deallocations; `op`'s operands defined
/// before the rounding (so `op` can move there). Null otherwise.
linalg::GenericOp truncationAfter(linalg::GenericOp op,
                                  linalg::GenericOp fill) {
  Type aType = getElementTypeOrSelf(op.getDpsInputs()[0].getType());
  Value c = op.getDpsInits()[0];
  if (!(aType.isF16() || aType.isBF16()) ||
      !getElementTypeOrSelf(c.getType()).isF32())
    return nullptr;
  linalg::GenericOp trunc;
  for (Operation *user : c.getUsers()) {
    if (user == op.getOperation() || (fill && user == fill.getOperation()) ||
        isa<memref::DeallocOp, memref::ExtractAlignedPointerAsIndexOp>(user))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || trunc)
      return nullptr;
    trunc = generic;
  }
  if (!trunc || trunc.getNumDpsInputs() != 1 || trunc.getNumDpsInits() != 1 ||
      trunc.getDpsInputs()[0] != c || trunc.getNumReductionLoops() != 0 ||
      !llvm::all_of(trunc.getIndexingMapsArray(),
                    [](AffineMap m) { return m.isIdentity(); }) ||
      getElementTypeOrSelf(trunc.getDpsInits()[0].getType()) != aType ||
      trunc->getParentRegion() != op->getParentRegion())
    return nullptr;
  Block &body = trunc.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto truncf = yield.getValues()[0].getDefiningOp<arith::TruncFOp>();
  if (body.getOperations().size() != 2 || !truncf ||
      truncf.getIn() != body.getArgument(0))
    return nullptr;
  DominanceInfo dominance(op->getParentOp());
  if (!dominance.properlyDominates(op.getOperation(), trunc.getOperation()))
    return nullptr;
  for (Value v : op->getOperands())
    if (!dominance.properlyDominates(v, trunc.getOperation()))
      return nullptr;
  if (fill)
    for (Value v : fill->getOperands())
      if (!dominance.properlyDominates(v, trunc.getOperation()))
        return nullptr;
  return trunc;
}

/// A consumer of an f32 product that cuBLASLt's epilogue computes
/// (kina_rt_gpu_matmul_epilogue): `consumer` writes `output` = act(alpha *
/// C + residual + bias) element by element.
struct Epilogue {
  linalg::GenericOp consumer;
  int32_t bits = 0; ///< KINA_GPU_EPILOGUE_*
  double alpha = 1.0;
  Value bias, residual, output;
  /// Deallocations of `op`'s operands before the consumer, to move after it.
  SmallVector<memref::DeallocOp> deallocs;
};

constexpr int32_t kEpilogueBias = 1, kEpilogueRelu = 2, kEpilogueGeluTanh = 4,
                  kEpilogueResidual = 8;

/// The float constant `v` is (scalar arith.constant), if it is one.
std::optional<double> constantOf(Value v) {
  auto cst = v.getDefiningOp<arith::ConstantOp>();
  auto attr = cst ? dyn_cast<FloatAttr>(cst.getValue()) : FloatAttr();
  if (!attr)
    return std::nullopt;
  return attr.getValueAsDouble();
}

/// `v` is `OpTy(x, other)` in either operand order with `isOther(other)`:
/// sets `x` and `other`.
template <typename OpTy, typename Pred>
bool matchCommutative(Value v, Value &x, Value &other, Pred isOther) {
  auto op = v.getDefiningOp<OpTy>();
  if (!op)
    return false;
  for (auto [a, b] : {std::pair(op.getLhs(), op.getRhs()),
                      std::pair(op.getRhs(), op.getLhs())})
    if (isOther(b)) {
      x = a;
      other = b;
      return true;
    }
  return false;
}

/// `v` is the constant `value` (f32: to within f32 rounding).
bool isConstant(Value v, double value) {
  std::optional<double> c = constantOf(v);
  return c && std::abs(*c - value) <= 1e-7 * std::abs(value);
}

/// `y` is MLIRGen's gelu, tanh form (MLIRGenScalar.cpp): 0.5 x * (1 +
/// tanh(sqrt(2/pi) * (x + 0.044715 * (x * x * x)))); sets `x`. The erf form
/// (math.erf) does not match.
bool matchGeluTanh(Value y, Value &x) {
  Value half, sum, other;
  auto isHalfX = [&](Value v) {
    Value c;
    return matchCommutative<arith::MulFOp>(
        v, half, c, [](Value w) { return isConstant(w, 0.5); });
  };
  if (!matchCommutative<arith::MulFOp>(y, sum, other, isHalfX))
    return false;
  Value tanhValue, one;
  if (!matchCommutative<arith::AddFOp>(
          sum, tanhValue, one, [](Value w) { return isConstant(w, 1.0); }))
    return false;
  auto tanhOp = tanhValue.getDefiningOp<math::TanhOp>();
  Value poly, c;
  if (!tanhOp || !matchCommutative<arith::MulFOp>(
                     tanhOp.getOperand(), poly, c,
                     [](Value w) { return isConstant(w, 0.7978845608028654); }))
    return false;
  Value cubeTerm, scaled, x3;
  if (!matchCommutative<arith::AddFOp>(poly, cubeTerm, scaled, [&](Value w) {
        Value k;
        return matchCommutative<arith::MulFOp>(
            w, x3, k, [](Value u) { return isConstant(u, 0.044715); });
      }))
    return false;
  // poly = cubeTerm + 0.044715 * x3 with cubeTerm = x and x3 = (x * x) * x.
  auto cube = x3.getDefiningOp<arith::MulFOp>();
  if (!cube)
    return false;
  auto square = cube.getLhs().getDefiningOp<arith::MulFOp>();
  if (!square || cube.getRhs() != cubeTerm || square.getLhs() != cubeTerm ||
      square.getRhs() != cubeTerm || half != cubeTerm)
    return false;
  x = cubeTerm;
  return true;
}

/// Whether `v` is an exact power of two (scaling by it commutes with
/// rounding, barring overflow and underflow).
bool isPowerOfTwo(double v) {
  int exponent = 0;
  return v != 0 && std::isfinite(v) &&
         std::frexp(std::abs(v), &exponent) == 0.5;
}

/// The element-by-element consumer of `op`'s f32 result that cuBLASLt can
/// apply as its epilogue, with exactly Kina's f32 arithmetic (docs/cuda.md,
/// "Matmul epilogues"), or nullopt. Requires: C f32 and zero-filled just
/// before (`fill`), n the last dim of C; `consumer` the first generic to use
/// C after `op`, all its loops parallel, C read through the identity map, its
/// output `output` (C itself or another f32 buffer, identity map, old value
/// unread), its other inputs f32 biases (map: the last loop) or residuals
/// (identity map); its region exactly act(alpha * c + residual + bias), each
/// term optional, in that order, act relu (maximumf(x, 0)) or MLIRGen's tanh
/// gelu, alpha a constant that must be a power of two when a bias or
/// residual follows; C used by nothing else but its null check and
/// deallocations (or, when the consumer writes C in place, ops after it);
/// nothing between `op` and the consumer but allocations, checks, views and
/// deallocations of other buffers (so `op` can move down to it).
std::optional<Epilogue> epilogueAfter(linalg::GenericOp op,
                                      const ContractionLoops &loops,
                                      linalg::GenericOp fill) {
  Value c = op.getDpsInits()[0];
  auto cType = cast<MemRefType>(c.getType());
  AffineMap cMap = op.getMatchingIndexingMap(&op.getDpsInitsMutable()[0]);
  if (!fill || !cType.getElementType().isF32() || !loops.n ||
      cMap.getNumResults() == 0 ||
      cMap.getResults().back() != getAffineDimExpr(*loops.n, op.getContext()))
    return std::nullopt;
  DominanceInfo dominance(op->getParentOp());
  // The consumer: the generic user of C that op dominates and that
  // dominates every other user.
  linalg::GenericOp consumer;
  for (Operation *user : c.getUsers()) {
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || generic == op || generic == fill ||
        !dominance.properlyDominates(op.getOperation(), generic))
      continue;
    if (!consumer || dominance.properlyDominates(generic.getOperation(),
                                                 consumer.getOperation()))
      consumer = generic;
  }
  if (!consumer || consumer->getParentRegion() != op->getParentRegion() ||
      consumer.getNumDpsInits() != 1 || consumer.getNumReductionLoops() != 0 ||
      !consumer.getRegion().front().getOps<linalg::IndexOp>().empty() ||
      consumer.getNumLoops() != static_cast<unsigned>(cType.getRank()))
    return std::nullopt;
  Epilogue e;
  e.consumer = consumer;
  e.output = consumer.getDpsInits()[0];
  OpOperand &out = consumer.getDpsInitsMutable()[0];
  Block &body = consumer.getRegion().front();
  if (!getElementTypeOrSelf(e.output.getType()).isF32() ||
      !consumer.getMatchingIndexingMap(&out).isIdentity() ||
      !consumer.getMatchingBlockArgument(&out).use_empty())
    return std::nullopt;
  bool inPlace = e.output == c;
  for (Operation *user : c.getUsers()) {
    if (user == op.getOperation() || user == fill.getOperation() ||
        user == consumer.getOperation() ||
        isa<memref::DeallocOp, memref::ExtractAlignedPointerAsIndexOp>(user) ||
        (inPlace && dominance.properlyDominates(consumer.getOperation(), user)))
      continue;
    return std::nullopt;
  }
  // Inputs: C once (identity), biases and residuals.
  unsigned rank = cType.getRank();
  AffineMap lastLoop =
      AffineMap::get(rank, 0, getAffineDimExpr(rank - 1, op.getContext()));
  Value cArg;
  SmallVector<std::pair<BlockArgument, Value>> biases, residuals;
  for (OpOperand *in : consumer.getDpsInputOperands()) {
    AffineMap map = consumer.getMatchingIndexingMap(in);
    BlockArgument arg = consumer.getMatchingBlockArgument(in);
    if (!isa<MemRefType>(in->get().getType()) ||
        !getElementTypeOrSelf(in->get().getType()).isF32())
      return std::nullopt;
    if (in->get() == c && map.isIdentity() && !cArg)
      cArg = arg;
    else if (in->get() != c && map.isIdentity())
      residuals.push_back({arg, in->get()});
    else if (in->get() != c && map == lastLoop)
      biases.push_back({arg, in->get()});
    else
      return std::nullopt;
  }
  if (!cArg)
    return std::nullopt;
  auto argIn = [](ArrayRef<std::pair<BlockArgument, Value>> list, Value v,
                  Value &buffer) {
    for (auto [arg, value] : list)
      if (v == arg) {
        buffer = value;
        return true;
      }
    return false;
  };
  // The region, from the yield back to C: act, bias, residual, alpha.
  Value y = cast<linalg::YieldOp>(body.getTerminator()).getValues()[0];
  Value x, other;
  unsigned matched = 0;
  if (matchGeluTanh(y, x)) {
    e.bits |= kEpilogueGeluTanh;
    y = x;
    matched += 9;
  } else if (matchCommutative<arith::MaximumFOp>(y, x, other, [](Value w) {
               std::optional<double> v = constantOf(w);
               return v && *v == 0.0 && !std::signbit(*v);
             })) {
    e.bits |= kEpilogueRelu;
    y = x;
    ++matched;
  }
  if (matchCommutative<arith::AddFOp>(
          y, x, other, [&](Value w) { return argIn(biases, w, e.bias); })) {
    e.bits |= kEpilogueBias;
    y = x;
    ++matched;
  }
  if (matchCommutative<arith::AddFOp>(y, x, other, [&](Value w) {
        return argIn(residuals, w, e.residual);
      })) {
    e.bits |= kEpilogueResidual;
    y = x;
    ++matched;
  }
  if (matchCommutative<arith::MulFOp>(
          y, x, other, [](Value w) { return constantOf(w).has_value(); })) {
    e.alpha = *constantOf(other);
    y = x;
    ++matched;
  }
  // Every non-constant op of the region matched, every input used.
  unsigned ops = 0;
  for (Operation &o : body.without_terminator())
    if (!isa<arith::ConstantOp>(o))
      ++ops;
  if (y != cArg || ops != matched ||
      biases.size() != (e.bits & kEpilogueBias ? 1u : 0u) ||
      residuals.size() != (e.bits & kEpilogueResidual ? 1u : 0u) ||
      (e.bits == 0 && e.alpha == 1.0))
    return std::nullopt;
  if ((e.bits & (kEpilogueBias | kEpilogueResidual)) && !isPowerOfTwo(e.alpha))
    return std::nullopt;
  // `op` (and its fill) move down to the consumer: what they read must be
  // defined there and nothing on the way may touch memory.
  for (Operation *o : {op.getOperation(), fill.getOperation()})
    for (Value v : o->getOperands())
      if (!dominance.properlyDominates(v, consumer.getOperation()))
        return std::nullopt;
  // A deallocation of an operand of `op` on the way moves after the
  // consumer (in its block: nothing else there reads the buffer).
  bool between = false, clean = true;
  op->getParentRegion()->walk<WalkOrder::PreOrder>([&](Operation *o) {
    if (o == consumer.getOperation())
      between = false;
    if (between && o->getParentRegion() == op->getParentRegion() &&
        !isa<memref::AllocOp, memref::ExtractAlignedPointerAsIndexOp,
             memref::DimOp, memref::CollapseShapeOp, memref::ExpandShapeOp,
             arith::ConstantOp, arith::CmpIOp, cf::CondBranchOp, cf::BranchOp>(
            o)) {
      auto dealloc = dyn_cast<memref::DeallocOp>(o);
      if (!dealloc)
        clean = false;
      else if (llvm::is_contained(op->getOperands(), dealloc.getMemref())) {
        if (o->getBlock() == consumer->getBlock())
          e.deallocs.push_back(dealloc);
        else
          clean = false;
      }
    }
    if (o == op.getOperation())
      between = true;
  });
  if (!clean)
    return std::nullopt;
  return e;
}

/// Declares `kina_rt_gpu_matmul(i32, i32, i32, i64, i64, i64, i64) -> i32`
/// (kina/runtime.h; pointers as i64) in `module` once.
func::FuncOp matmulFunction(ModuleOp module) {
  if (auto f = module.lookupSymbol<func::FuncOp>(kMatmulFunction))
    return f;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto f = func::FuncOp::create(
      b, module.getLoc(), kMatmulFunction,
      b.getFunctionType({i32, i32, i32, i64, i64, i64, i64}, {i32}));
  f.setPrivate();
  return f;
}

/// Declares `kina_rt_gpu_matmul_epilogue(i32, i32, i32, i64, i64, i64, i64,
/// i32, f64, i64, i64) -> i32` (kina/runtime.h; pointers as i64) once.
func::FuncOp matmulEpilogueFunction(ModuleOp module) {
  if (auto f = module.lookupSymbol<func::FuncOp>(kMatmulEpilogueFunction))
    return f;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto f =
      func::FuncOp::create(b, module.getLoc(), kMatmulEpilogueFunction,
                           b.getFunctionType({i32, i32, i32, i64, i64, i64, i64,
                                              i32, b.getF64Type(), i64, i64},
                                             {i32}));
  f.setPrivate();
  return f;
}

/// Emits the runtime call of the cuBLASLt route before `op` (see the file
/// comment; kina_rt_gpu_matmul_epilogue with `epilogue`) and returns the
/// i1 "not handled": the kernel must run.
Value emitLibraryCall(OpBuilder &b, Location loc, linalg::GenericOp op,
                      const ContractionLoops &loops, ArrayRef<Value> sizes,
                      Value nonEmpty, int32_t types, int32_t flags,
                      Value output, const Epilogue *epilogue) {
  Type i32 = b.getI32Type(), i64 = b.getI64Type();
  auto toI64 = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, i64, v).getResult();
  };
  auto ifOp = scf::IfOp::create(b, loc, TypeRange{i32}, nonEmpty, true);
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // Per operand: element pointer and the stride of each loop dim.
    SmallVector<Value> pointers;
    SmallVector<SmallVector<Value>> strides; // [operand][loop]
    // The element pointer of `buffer` and its stride per loop of `op`
    // (`map`: loops to its dims); its metadata in `meta`.
    auto describe = [&](Value buffer, AffineMap map) {
      auto type = cast<MemRefType>(buffer.getType());
      auto meta = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
      Value base =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
      Value elementBytes = arith::ConstantIndexOp::create(
          b, loc, type.getElementTypeBitWidth() / 8);
      Value offsetBytes =
          arith::MulIOp::create(b, loc, meta.getOffset(), elementBytes);
      pointers.push_back(
          toI64(arith::AddIOp::create(b, loc, base, offsetBytes)));
      SmallVector<Value> perLoop(sizes.size(), zero);
      for (auto [i, e] : llvm::enumerate(map.getResults()))
        if (auto dim = dyn_cast<AffineDimExpr>(e))
          perLoop[dim.getPosition()] = meta.getStrides()[i];
      strides.push_back(perLoop);
      return meta;
    };
    for (OpOperand &operand : op->getOpOperands()) {
      // C is `output` (the rounded or epilogue result's buffer: same shape
      // and map).
      Value buffer = operand.getOperandNumber() == 2 ? output : operand.get();
      describe(buffer, op.getMatchingIndexingMap(&operand));
    }
    AffineMap cMap = op.getMatchingIndexingMap(&op.getDpsInitsMutable()[0]);
    SmallVector<Value> dims;
    dims.push_back(loops.m ? sizes[*loops.m] : one);
    dims.push_back(loops.n ? sizes[*loops.n] : one);
    dims.push_back(sizes[loops.k]);
    for (unsigned d : loops.batch)
      dims.push_back(sizes[d]);
    auto strideOf = [&](unsigned operand, std::optional<unsigned> loop) {
      return loop ? strides[operand][*loop] : zero;
    };
    // A: batch, m, k; B: batch, k, n; C: batch, m, n.
    for (unsigned d : loops.batch)
      dims.push_back(strides[0][d]);
    dims.push_back(strideOf(0, loops.m));
    dims.push_back(strideOf(0, loops.k));
    for (unsigned d : loops.batch)
      dims.push_back(strides[1][d]);
    dims.push_back(strideOf(1, loops.k));
    dims.push_back(strideOf(1, loops.n));
    for (unsigned d : loops.batch)
      dims.push_back(strides[2][d]);
    dims.push_back(strideOf(2, loops.m));
    dims.push_back(strideOf(2, loops.n));
    // kina_rt_gpu_matmul_epilogue: the bias's stride, the residual's
    // strides (as C's: batch, m, n).
    if (epilogue && epilogue->bias) {
      auto meta = describe(epilogue->bias,
                           AffineMap::get(sizes.size(), 0, b.getContext()));
      dims.push_back(meta.getStrides()[0]);
    }
    if (epilogue && epilogue->residual) {
      describe(epilogue->residual, cMap);
      unsigned r = strides.size() - 1;
      for (unsigned d : loops.batch)
        dims.push_back(strides[r][d]);
      dims.push_back(strideOf(r, loops.m));
      dims.push_back(strideOf(r, loops.n));
    }
    auto arrayType = MemRefType::get({static_cast<int64_t>(dims.size())}, i64);
    Value array = memref::AllocaOp::create(b, loc, arrayType);
    for (auto [i, v] : llvm::enumerate(dims))
      memref::StoreOp::create(
          b, loc, toI64(v), array,
          ValueRange{arith::ConstantIndexOp::create(b, loc, i)});
    Value arrayPointer =
        toI64(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, array));
    auto constant = [&](int32_t v) {
      return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
    };
    SmallVector<Value> arguments = {
        constant(types),
        constant(flags),
        constant(static_cast<int32_t>(loops.batch.size())),
        arrayPointer,
        pointers[0],
        pointers[1],
        pointers[2]};
    auto module = op->getParentOfType<ModuleOp>();
    func::FuncOp callee = matmulFunction(module);
    if (epilogue) {
      callee = matmulEpilogueFunction(module);
      Value null = arith::ConstantIntOp::create(b, loc, i64, 0);
      unsigned next = 3;
      arguments.push_back(constant(epilogue->bits));
      arguments.push_back(arith::ConstantOp::create(
          b, loc, b.getF64FloatAttr(epilogue->alpha)));
      arguments.push_back(epilogue->bias ? pointers[next++] : null);
      arguments.push_back(epilogue->residual ? pointers[next] : null);
    }
    auto call = func::CallOp::create(b, loc, callee, arguments);
    scf::YieldOp::create(b, loc, call.getResult(0));
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, constant(0));
  }
  Value zero32 = arith::ConstantIntOp::create(b, loc, i32, 0);
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                               ifOp.getResult(0), zero32);
}

void mapContraction(linalg::GenericOp op, const ContractionLoops &loops,
                    bool cublasLt, bool allowTf32, const CudaTuning &tuning) {
  // Before anything is inserted in front of `op`.
  int32_t types = cublasLt ? libraryTypes(op) : 0;
  linalg::GenericOp fill = types ? zeroFillBefore(op) : nullptr;
  linalg::GenericOp trunc = types ? truncationAfter(op, fill) : nullptr;
  if (trunc) {
    // cuBLASLt writes the f16/bf16 result itself; the f32 buffer, its fill
    // and the rounding are the fallback's. The product moves next to the
    // rounding (the result's buffer is allocated just before it).
    if (fill)
      fill->moveBefore(trunc);
    op->moveBefore(trunc);
    types = (types & 0xff) | (types & 0xff) << 8;
  }
  std::optional<Epilogue> epilogue =
      types && !trunc ? epilogueAfter(op, loops, fill) : std::nullopt;
  if (epilogue) {
    // cuBLASLt computes the consumer too; the fill, the kernel and the
    // consumer form the fallback, moved to where the consumer was.
    fill->moveBefore(epilogue->consumer);
    op->moveBefore(epilogue->consumer);
    for (memref::DeallocOp dealloc : llvm::reverse(epilogue->deallocs))
      dealloc->moveAfter(epilogue->consumer);
  }
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> sizes = loopSizes(b, loc, op);
  if (anyStaticZero(sizes))
    return op.erase(); // the init (zeros, or no element) is the result
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value tile = arith::ConstantIndexOp::create(b, loc, kTile);
  Value m = loops.m ? sizes[*loops.m] : one;
  Value n = loops.n ? sizes[*loops.n] : one;
  Value k = sizes[loops.k];
  SmallVector<Value> batchSizes;
  for (unsigned d : loops.batch)
    batchSizes.push_back(sizes[d]);
  Value batch = product(b, loc, batchSizes);

  // Nothing to do for an empty result or K = 0 (the init is the result).
  Value nonEmpty = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  for (Value v : {m, n, k, batch})
    nonEmpty = arith::AndIOp::create(
        b, loc, nonEmpty,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, v, zero));
  Block *fallbackBlock = nullptr;
  if (types) {
    // Which of cuBLASLt's heuristic algorithms: the op's "cuda.matmul"
    // schedule (kina/Tuning.h), in the flags' algorithm field.
    int64_t algo = tuning.of(op, "matmul", "cuda.matmul").get("algo", 0);
    int32_t flags = (allowTf32 ? kFlagTf32 : 0) | (fill ? 0 : kFlagAccumulate) |
                    static_cast<int32_t>(algo << kAlgoShift);
    Value fallback =
        emitLibraryCall(b, loc, op, loops, sizes, nonEmpty, types, flags,
                        trunc      ? trunc.getDpsInits()[0]
                        : epilogue ? epilogue->output
                                   : op.getDpsInits()[0],
                        epilogue ? &*epilogue : nullptr);
    auto kernel = scf::IfOp::create(b, loc, fallback, /*withElse=*/false);
    b.setInsertionPointToStart(&kernel.getThenRegion().front());
    if (fill)
      fill->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    fallbackBlock = &kernel.getThenRegion().front();
  }
  auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  b.setInsertionPointToStart(&guard.getThenRegion().front());

  Value mTiles = arith::CeilDivUIOp::create(b, loc, m, tile);
  Value nTiles = arith::CeilDivUIOp::create(b, loc, n, tile);
  Value gridX = gridSize(b, loc, n, kTile, kMaxGridX);
  Value gridY = gridSize(b, loc, m, kTile, kMaxGridYZ);
  Value gridZ = gridSize(b, loc, batch, 1, kMaxGridYZ);
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  Type aType = getElementTypeOrSelf(op.getDpsInputs()[0].getType());
  Type bType = getElementTypeOrSelf(op.getDpsInputs()[1].getType());
  Type cType = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  SmallVector<Type> buffers = {
      MemRefType::get({kTile, kTile}, aType, AffineMap(), workgroup),
      MemRefType::get({kTile, kTile}, bType, AffineMap(), workgroup)};
  gpu::LaunchOp launch =
      createLaunch(b, loc, gridX, gridY, gridZ, kTile, kTile, 1, buffers);
  Value as = launch.getWorkgroupAttributions()[0];
  Value bs = launch.getWorkgroupAttributions()[1];
  Value tx = launch.getThreadIds().x, ty = launch.getThreadIds().y;
  Value kZero = arith::ConstantIndexOp::create(b, loc, 0);
  Value kTileV = arith::ConstantIndexOp::create(b, loc, kTile);
  auto zBatch = scf::ForOp::create(b, loc, launch.getBlockIds().z, batch,
                                   launch.getGridSize().z);
  b.setInsertionPointToStart(zBatch.getBody());
  SmallVector<Value> bivs =
      delinearize(b, loc, zBatch.getInductionVar(), batchSizes);
  auto yTiles = scf::ForOp::create(b, loc, launch.getBlockIds().y, mTiles,
                                   launch.getGridSize().y);
  b.setInsertionPointToStart(yTiles.getBody());
  auto xTiles = scf::ForOp::create(b, loc, launch.getBlockIds().x, nTiles,
                                   launch.getGridSize().x);
  b.setInsertionPointToStart(xTiles.getBody());
  Value rowBase =
      arith::MulIOp::create(b, loc, yTiles.getInductionVar(), kTileV);
  Value colBase =
      arith::MulIOp::create(b, loc, xTiles.getInductionVar(), kTileV);
  Value row = arith::AddIOp::create(b, loc, rowBase, ty);
  Value col = arith::AddIOp::create(b, loc, colBase, tx);
  auto lt = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y)
        .getResult();
  };
  auto ivsAt = [&](Value mi, Value ni, Value ki) {
    SmallVector<Value> ivs(sizes.size(), kZero);
    for (auto [d, v] : llvm::zip(loops.batch, bivs))
      ivs[d] = v;
    if (loops.m)
      ivs[*loops.m] = mi;
    if (loops.n)
      ivs[*loops.n] = ni;
    ivs[loops.k] = ki;
    return ivs;
  };
  auto zeroOf = [&](Type t) {
    return arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(t)))
        .getResult();
  };
  // Loads `operand` at `ivs` when `ok`, else 0.
  auto guardedLoad = [&](OpOperand &operand, Value ok, ValueRange ivs, Type t) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{t}, ok, true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b, loc, loadOperand(b, loc, op, operand, ivs));
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, zeroOf(t));
    return ifOp.getResult(0);
  };

  Value inRange = arith::AndIOp::create(b, loc, lt(row, m), lt(col, n));
  OpOperand &init = op.getDpsInitsMutable()[0];
  Value acc0 = guardedLoad(init, inRange, ivsAt(row, col, kZero), cType);
  auto kLoop = scf::ForOp::create(b, loc, kZero, k, kTileV, ValueRange{acc0});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    Value ka = arith::AddIOp::create(b, loc, k0, tx);
    Value kb = arith::AddIOp::create(b, loc, k0, ty);
    Value a = guardedLoad(*op.getDpsInputOperand(0),
                          arith::AndIOp::create(b, loc, lt(row, m), lt(ka, k)),
                          ivsAt(row, kZero, ka), aType);
    memref::StoreOp::create(b, loc, a, as, ValueRange{ty, tx});
    Value bv = guardedLoad(*op.getDpsInputOperand(1),
                           arith::AndIOp::create(b, loc, lt(kb, k), lt(col, n)),
                           ivsAt(kZero, col, kb), bType);
    memref::StoreOp::create(b, loc, bv, bs, ValueRange{ty, tx});
    gpu::BarrierOp::create(b, loc);
    Value kCount = arith::MinUIOp::create(b, loc, kTileV,
                                          arith::SubIOp::create(b, loc, k, k0));
    Value oneK = arith::ConstantIndexOp::create(b, loc, 1);
    auto inner = scf::ForOp::create(b, loc, kZero, kCount, oneK,
                                    kLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(inner.getBody());
      Value kk = inner.getInductionVar();
      Value av = memref::LoadOp::create(b, loc, as, ValueRange{ty, kk});
      Value bw = memref::LoadOp::create(b, loc, bs, ValueRange{kk, tx});
      SmallVector<Value> r = cloneRegion(
          b, op, ValueRange{av, bw, inner.getRegionIterArgs()[0]}, {});
      scf::YieldOp::create(b, loc, r);
    }
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, inner.getResults());
  }
  auto store = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  storeOperand(b, loc, op, init, kLoop.getResult(0), ivsAt(row, col, kZero));
  if (trunc) // The fallback rounds after its kernel.
    trunc->moveBefore(fallbackBlock->getTerminator());
  if (epilogue) // ... or runs the consumer.
    epilogue->consumer->moveBefore(fallbackBlock->getTerminator());
  op.erase();
}

class GpuMapMatmulPass : public impl::GpuMapMatmulPassBase<GpuMapMatmulPass> {
public:
  using GpuMapMatmulPassBase::GpuMapMatmulPassBase;
  GpuMapMatmulPass(const GpuMapMatmulPassOptions &options, CudaTuning tuning)
      : GpuMapMatmulPassBase(options), tuning(std::move(tuning)) {}

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, ContractionLoops>> work;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<gpu::LaunchOp>())
        return;
      if (auto loops = matchContraction(op))
        work.push_back({op, *loops});
    });
    for (auto &[op, loops] : work)
      mapContraction(op, loops, cublasLt, allowTf32, tuning);
  }

private:
  CudaTuning tuning;
};

} // namespace

std::unique_ptr<Pass>
createGpuMapMatmulPass(const GpuMapMatmulPassOptions &options,
                       CudaTuning tuning) {
  return std::make_unique<GpuMapMatmulPass>(options, std::move(tuning));
}

} // namespace kina::cuda
