//===- MLIRGenScalar.cpp - Scalar semantics of Kina's elementwise ops -----===//
//
// The per-element computation of every elementwise Kina op, built with
// `arith`, `math` (and `scf.while` for integer pow) inside linalg.generic
// bodies. The rules are the spec's operation table (docs/language.md,
// "Operations") with NumPy as the reference: NaN-propagating max/min, float
// `mod` taking the divisor's sign, flooring integer division with `x div 0`
// = 0 and `INT_MIN div -1` wrapping, saturating float-to-int casts with
// NaN -> 0, `ne` true on NaN. No op is emitted whose result could be poison
// or trap on some input (divisors and fptosi inputs are made safe first).
// f16 and bf16 compute in f32 (extf, op, truncf). Also the identities and
// combining steps of the reductions.
//
//===----------------------------------------------------------------------===//
#include "MLIRGenImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace kina {
namespace detail {

Type toMLIRType(MLIRContext &ctx, ElementType t) {
  switch (t) {
  case ElementType::F64:
    return Float64Type::get(&ctx);
  case ElementType::F32:
    return Float32Type::get(&ctx);
  case ElementType::F16:
    return Float16Type::get(&ctx);
  case ElementType::BF16:
    return BFloat16Type::get(&ctx);
  case ElementType::I64:
    return IntegerType::get(&ctx, 64);
  case ElementType::I32:
    return IntegerType::get(&ctx, 32);
  case ElementType::I8:
    return IntegerType::get(&ctx, 8);
  case ElementType::I1:
    return IntegerType::get(&ctx, 1);
  }
  llvm_unreachable("unknown element type");
}

Type computeType(MLIRContext &ctx, ElementType t) {
  return computesInF32(t) ? Float32Type::get(&ctx) : toMLIRType(ctx, t);
}

Value constInt(OpBuilder &b, Location loc, Type type, int64_t value) {
  unsigned width = type.getIntOrFloatBitWidth();
  APInt v(width, static_cast<uint64_t>(value), /*isSigned=*/false,
          /*implicitTrunc=*/true);
  return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, v));
}

static Value constAPInt(OpBuilder &b, Location loc, Type type, const APInt &v) {
  return arith::ConstantOp::create(b, loc, IntegerAttr::get(type, v));
}

Value constFloat(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, FloatAttr::get(type, value));
}

TypedAttr scalarAttr(MLIRContext &ctx, ElementType t, int64_t intValue,
                     double floatValue) {
  Type type = toMLIRType(ctx, t);
  if (isFloat(t))
    return FloatAttr::get(type, floatValue);
  APInt v(type.getIntOrFloatBitWidth(), static_cast<uint64_t>(intValue),
          /*isSigned=*/false, /*implicitTrunc=*/true);
  return IntegerAttr::get(type, v);
}

Value constScalar(OpBuilder &b, Location loc, ElementType t, int64_t intValue,
                  double floatValue) {
  return arith::ConstantOp::create(
      b, loc, scalarAttr(*b.getContext(), t, intValue, floatValue));
}

Value widen(OpBuilder &b, Location loc, ElementType t, Value x) {
  if (!computesInF32(t))
    return x;
  return arith::ExtFOp::create(b, loc, b.getF32Type(), x);
}

Value narrow(OpBuilder &b, Location loc, ElementType t, Value x) {
  if (!computesInF32(t))
    return x;
  return arith::TruncFOp::create(b, loc, toMLIRType(*b.getContext(), t), x);
}

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// Float unary op on `x` of float type (f32 or f64 here).
static Value floatUnary(OpBuilder &b, Location loc, StringRef op, Value x,
                        bool geluTanh) {
  Type ft = x.getType();
  auto c = [&](double v) { return constFloat(b, loc, ft, v); };
  if (op == "neg")
    return arith::NegFOp::create(b, loc, x);
  if (op == "abs")
    return math::AbsFOp::create(b, loc, x);
  if (op == "exp")
    return math::ExpOp::create(b, loc, x);
  if (op == "log")
    return math::LogOp::create(b, loc, x);
  if (op == "sqrt")
    return math::SqrtOp::create(b, loc, x);
  if (op == "rsqrt")
    return arith::DivFOp::create(b, loc, c(1.0),
                                 math::SqrtOp::create(b, loc, x));
  if (op == "tanh")
    return math::TanhOp::create(b, loc, x);
  if (op == "sigmoid") {
    // 1 / (1 + exp(-x)): exp overflows to inf for very negative x, giving 0.
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, c(1.0),
                                 arith::AddFOp::create(b, loc, c(1.0), e));
  }
  if (op == "relu") // maximumf propagates NaN, like np.maximum(x, 0).
    return arith::MaximumFOp::create(b, loc, x, c(0.0));
  if (op == "gelu") {
    Value half = arith::MulFOp::create(b, loc, c(0.5), x);
    Value inner;
    if (geluTanh) {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      Value x3 =
          arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, x, x), x);
      Value poly = arith::AddFOp::create(
          b, loc, x, arith::MulFOp::create(b, loc, c(0.044715), x3));
      Value arg = arith::MulFOp::create(
          b, loc, c(0.7978845608028654 /* sqrt(2/pi) */), poly);
      inner = math::TanhOp::create(b, loc, arg);
    } else {
      // 0.5 x (1 + erf(x / sqrt(2)))
      Value arg = arith::MulFOp::create(b, loc, x,
                                        c(0.7071067811865476 /* 1/sqrt(2) */));
      inner = math::ErfOp::create(b, loc, arg);
    }
    return arith::MulFOp::create(b, loc, half,
                                 arith::AddFOp::create(b, loc, c(1.0), inner));
  }
  if (op == "erf")
    return math::ErfOp::create(b, loc, x);
  if (op == "sin")
    return math::SinOp::create(b, loc, x);
  if (op == "cos")
    return math::CosOp::create(b, loc, x);
  if (op == "floor")
    return math::FloorOp::create(b, loc, x);
  if (op == "ceil")
    return math::CeilOp::create(b, loc, x);
  return nullptr;
}

Value emitUnary(OpBuilder &b, Location loc, StringRef op, ElementType t,
                Value x, bool geluTanh) {
  if (isFloat(t)) {
    Value r = floatUnary(b, loc, op, widen(b, loc, t, x), geluTanh);
    return r ? narrow(b, loc, t, r) : nullptr;
  }
  Type it = x.getType();
  if (t == ElementType::I1) {
    if (op == "not")
      return arith::XOrIOp::create(b, loc, x, constInt(b, loc, it, 1));
    return nullptr;
  }
  Value zero = constInt(b, loc, it, 0);
  if (op == "neg") // 0 - x wraps: -INT_MIN == INT_MIN.
    return arith::SubIOp::create(b, loc, zero, x);
  if (op == "abs") {
    Value isNeg =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
    return arith::SelectOp::create(b, loc, isNeg,
                                   arith::SubIOp::create(b, loc, zero, x), x);
  }
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Binary
//===----------------------------------------------------------------------===//

/// NumPy's float mod (npy_divmod): r = fmod(a, b); a non-zero r whose sign
/// differs from b's gets b added; a zero r takes b's sign. b == 0 gives NaN.
static Value floatMod(OpBuilder &b, Location loc, Value x, Value y) {
  Type ft = x.getType();
  Value zero = constFloat(b, loc, ft, 0.0);
  Value r = arith::RemFOp::create(b, loc, x, y);
  Value nonZero =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, r, zero);
  Value rNeg =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, r, zero);
  Value yNeg =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, y, zero);
  Value adjust = arith::AndIOp::create(
      b, loc, nonZero, arith::XOrIOp::create(b, loc, rNeg, yNeg));
  Value adjusted = arith::SelectOp::create(
      b, loc, adjust, arith::AddFOp::create(b, loc, r, y), r);
  Value isZero =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, r, zero);
  // copysign(0, y): y is non-zero and not NaN whenever r == 0.
  Value signedZero =
      arith::SelectOp::create(b, loc, yNeg, constFloat(b, loc, ft, -0.0), zero);
  return arith::SelectOp::create(b, loc, isZero, signedZero, adjusted);
}

/// Flooring integer division and mod (NumPy floor_divide / mod) with
/// x div 0 = x mod 0 = 0 and INT_MIN div -1 = INT_MIN (wraps). The divisor
/// is replaced by 1 where arith.divsi/remsi would be undefined.
static Value intDivMod(OpBuilder &b, Location loc, bool wantMod, Value x,
                       Value y) {
  Type it = x.getType();
  unsigned width = it.getIntOrFloatBitWidth();
  Value zero = constInt(b, loc, it, 0);
  Value one = constInt(b, loc, it, 1);
  Value minusOne = constInt(b, loc, it, -1);
  Value intMin = constAPInt(b, loc, it, APInt::getSignedMinValue(width));
  Value yZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero);
  Value overflow = arith::AndIOp::create(
      b, loc,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, x, intMin),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, minusOne));
  Value unsafe = arith::OrIOp::create(b, loc, yZero, overflow);
  Value safeY = arith::SelectOp::create(b, loc, unsafe, one, y);
  Value q = arith::DivSIOp::create(b, loc, x, safeY);
  Value r = arith::RemSIOp::create(b, loc, x, safeY);
  // Truncated to floored: when r != 0 and sign(r) != sign(y), q -= 1 and
  // r += y.
  Value rNonZero =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, r, zero);
  Value rNeg =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
  Value yNeg =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, safeY, zero);
  Value adjust = arith::AndIOp::create(
      b, loc, rNonZero, arith::XOrIOp::create(b, loc, rNeg, yNeg));
  Value result;
  if (wantMod)
    result = arith::SelectOp::create(
        b, loc, adjust, arith::AddIOp::create(b, loc, r, safeY), r);
  else
    result = arith::SelectOp::create(b, loc, adjust,
                                     arith::SubIOp::create(b, loc, q, one), q);
  return arith::SelectOp::create(b, loc, yZero, zero, result);
}

/// Integer pow by repeated squaring (wrapping multiplications). A negative
/// exponent gives 0, except base 1 -> 1 and base -1 -> +-1 by parity.
static Value intPow(OpBuilder &b, Location loc, Value base, Value exp) {
  Type it = base.getType();
  Value zero = constInt(b, loc, it, 0);
  Value one = constInt(b, loc, it, 1);
  Value minusOne = constInt(b, loc, it, -1);
  Value negExp =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, exp, zero);
  Value e0 = arith::SelectOp::create(b, loc, negExp, zero, exp);
  auto loop = scf::WhileOp::create(
      b, loc, TypeRange{it, it, it}, ValueRange{one, base, e0},
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                           args[2], zero);
        scf::ConditionOp::create(b, loc, more, args);
      },
      [&](OpBuilder &b, Location loc, ValueRange args) {
        Value acc = args[0], sq = args[1], e = args[2];
        Value bit =
            arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                                  arith::AndIOp::create(b, loc, e, one), zero);
        Value acc2 = arith::SelectOp::create(
            b, loc, bit, arith::MulIOp::create(b, loc, acc, sq), acc);
        Value sq2 = arith::MulIOp::create(b, loc, sq, sq);
        Value e2 = arith::ShRUIOp::create(b, loc, e, one);
        scf::YieldOp::create(b, loc, ValueRange{acc2, sq2, e2});
      });
  Value positive = loop.getResult(0);
  Value odd =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne,
                            arith::AndIOp::create(b, loc, exp, one), zero);
  Value baseOne =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, base, one);
  Value baseMinusOne =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, base, minusOne);
  Value negResult = arith::SelectOp::create(
      b, loc, baseOne, one,
      arith::SelectOp::create(
          b, loc, baseMinusOne,
          arith::SelectOp::create(b, loc, odd, minusOne, one), zero));
  return arith::SelectOp::create(b, loc, negExp, negResult, positive);
}

Value emitBinary(OpBuilder &b, Location loc, StringRef op, ElementType t,
                 Value x, Value y) {
  if (isFloat(t)) {
    Value a = widen(b, loc, t, x), c = widen(b, loc, t, y);
    Value r;
    if (op == "add")
      r = arith::AddFOp::create(b, loc, a, c);
    else if (op == "sub")
      r = arith::SubFOp::create(b, loc, a, c);
    else if (op == "mul")
      r = arith::MulFOp::create(b, loc, a, c);
    else if (op == "div")
      r = arith::DivFOp::create(b, loc, a, c);
    else if (op == "mod")
      r = floatMod(b, loc, a, c);
    else if (op == "pow")
      r = math::PowFOp::create(b, loc, a, c);
    else if (op == "max")
      r = arith::MaximumFOp::create(b, loc, a, c);
    else if (op == "min")
      r = arith::MinimumFOp::create(b, loc, a, c);
    return r ? narrow(b, loc, t, r) : nullptr;
  }
  if (t == ElementType::I1) {
    // NumPy's bool arithmetic: add is or, mul is and, max/min are or/and.
    if (op == "add" || op == "max")
      return arith::OrIOp::create(b, loc, x, y);
    if (op == "mul" || op == "min")
      return arith::AndIOp::create(b, loc, x, y);
    return nullptr;
  }
  if (op == "add")
    return arith::AddIOp::create(b, loc, x, y);
  if (op == "sub")
    return arith::SubIOp::create(b, loc, x, y);
  if (op == "mul")
    return arith::MulIOp::create(b, loc, x, y);
  if (op == "div")
    return intDivMod(b, loc, /*wantMod=*/false, x, y);
  if (op == "mod")
    return intDivMod(b, loc, /*wantMod=*/true, x, y);
  if (op == "pow")
    return intPow(b, loc, x, y);
  if (op == "max")
    return arith::MaxSIOp::create(b, loc, x, y);
  if (op == "min")
    return arith::MinSIOp::create(b, loc, x, y);
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Compare
//===----------------------------------------------------------------------===//

Value emitCompare(OpBuilder &b, Location loc, StringRef op, ElementType t,
                  Value x, Value y) {
  if (isFloat(t)) {
    // Ordered predicates (false on NaN), except ne: NaN != x is true.
    auto pred = llvm::StringSwitch<arith::CmpFPredicate>(op)
                    .Case("eq", arith::CmpFPredicate::OEQ)
                    .Case("ne", arith::CmpFPredicate::UNE)
                    .Case("lt", arith::CmpFPredicate::OLT)
                    .Case("le", arith::CmpFPredicate::OLE)
                    .Case("gt", arith::CmpFPredicate::OGT)
                    .Default(arith::CmpFPredicate::OGE);
    return arith::CmpFOp::create(b, loc, pred, widen(b, loc, t, x),
                                 widen(b, loc, t, y));
  }
  bool u = t == ElementType::I1; // false < true
  auto pred =
      llvm::StringSwitch<arith::CmpIPredicate>(op)
          .Case("eq", arith::CmpIPredicate::eq)
          .Case("ne", arith::CmpIPredicate::ne)
          .Case("lt", u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt)
          .Case("le", u ? arith::CmpIPredicate::ule : arith::CmpIPredicate::sle)
          .Case("gt", u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
          .Default(u ? arith::CmpIPredicate::uge : arith::CmpIPredicate::sge);
  return arith::CmpIOp::create(b, loc, pred, x, y);
}

//===----------------------------------------------------------------------===//
// Cast
//===----------------------------------------------------------------------===//

/// Float to a signed integer type of `width` bits: truncation toward zero,
/// saturating at the type's bounds, NaN -> 0. fptosi only sees values
/// inside the range (it is poison outside).
static Value floatToInt(OpBuilder &b, Location loc, Value v, Type it) {
  Type ft = v.getType();
  unsigned width = it.getIntOrFloatBitWidth();
  double bound = std::ldexp(1.0, static_cast<int>(width) - 1); // exact
  Value hi = constFloat(b, loc, ft, bound);
  Value lo = constFloat(b, loc, ft, -bound);
  Value isNan = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, v, v);
  Value tooHigh =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, v, hi);
  Value tooLow =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, v, lo);
  Value bad = arith::OrIOp::create(
      b, loc, isNan, arith::OrIOp::create(b, loc, tooHigh, tooLow));
  Value safe =
      arith::SelectOp::create(b, loc, bad, constFloat(b, loc, ft, 0.0), v);
  Value r = arith::FPToSIOp::create(b, loc, it, safe);
  r = arith::SelectOp::create(
      b, loc, tooHigh, constAPInt(b, loc, it, APInt::getSignedMaxValue(width)),
      r);
  r = arith::SelectOp::create(
      b, loc, tooLow, constAPInt(b, loc, it, APInt::getSignedMinValue(width)),
      r);
  return r; // NaN: safe = 0 gives 0.
}

/// f64 to bf16 rounded once to nearest-even: f64 -> f32 rounded to odd,
/// then f32 -> bf16 to nearest-even (f32 keeps more than 2 x 8 + 2 bits, so
/// the pair rounds like one step). A plain truncf f64 -> bf16 is lowered by
/// LLVM through f32 with two nearest-even roundings, which can differ.
static Value f64ToBF16(OpBuilder &b, Location loc, Value x) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  Value t = arith::TruncFOp::create(b, loc, f32, x);
  Value back = arith::ExtFOp::create(b, loc, b.getF64Type(), t);
  // Exact, NaN or overflow: t is already right for the next step.
  Value inexact =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE, back, x);
  Value bits = arith::BitcastOp::create(b, loc, i32, t);
  Value one = constInt(b, loc, i32, 1);
  Value even = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                     arith::AndIOp::create(b, loc, bits, one),
                                     constInt(b, loc, i32, 0));
  // The other neighbour of x: one step toward x in magnitude.
  Value tooBig = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                       math::AbsFOp::create(b, loc, back),
                                       math::AbsFOp::create(b, loc, x));
  Value other = arith::SelectOp::create(
      b, loc, tooBig, arith::SubIOp::create(b, loc, bits, one),
      arith::AddIOp::create(b, loc, bits, one));
  Value fix = arith::AndIOp::create(b, loc, inexact, even);
  Value odd = arith::BitcastOp::create(
      b, loc, f32, arith::SelectOp::create(b, loc, fix, other, bits));
  return arith::TruncFOp::create(b, loc, b.getBF16Type(), odd);
}

/// i32/i64 to bf16 rounded once to nearest-even: the magnitude is first
/// rounded to odd at 24 significant bits (the bits shifted out are OR-ed
/// into a sticky last bit), which f32 holds exactly, then f32 -> bf16
/// rounds to nearest-even. LLVM lowers sitofp to bf16 through an f32
/// rounded to nearest-even, a double rounding that can differ.
static Value intToBF16(OpBuilder &b, Location loc, Value x) {
  Type it = x.getType();
  unsigned width = it.getIntOrFloatBitWidth();
  Value zero = constInt(b, loc, it, 0);
  Value one = constInt(b, loc, it, 1);
  Value neg = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
  // |x| as an unsigned number (INT_MIN's magnitude is 2^(w-1)).
  Value mag = arith::SelectOp::create(
      b, loc, neg, arith::SubIOp::create(b, loc, zero, x), x);
  // Bit length of |x|, read from the exponent of |x| as an f32: it may be
  // one too large where the conversion rounds up to a power of two, which
  // only rounds to odd at 23 bits instead of 24 (still >= 8 + 2 bits).
  // (math.ctlz would be exact, but convert-math-to-libm rejects it.) The
  // conversion reads |x| | 1, of the same bit length: converting |x| itself
  // let the CUDA target's code (LLVM's abs, then ptxas) convert INT_MIN's
  // magnitude as a signed number, -2^31, and the cast gave -0.0 on an H200.
  Value asFloat = arith::UIToFPOp::create(
      b, loc, b.getF32Type(), arith::OrIOp::create(b, loc, mag, one));
  Value exponent = arith::ShRUIOp::create(
      b, loc, arith::BitcastOp::create(b, loc, b.getI32Type(), asFloat),
      constInt(b, loc, b.getI32Type(), 23));
  if (width > 32)
    exponent = arith::ExtUIOp::create(b, loc, it, exponent);
  Value bitsUsed =
      arith::SubIOp::create(b, loc, exponent, constInt(b, loc, it, 126));
  Value shift = arith::MaxSIOp::create(
      b, loc, arith::SubIOp::create(b, loc, bitsUsed, constInt(b, loc, it, 24)),
      zero);
  Value mask = arith::SubIOp::create(
      b, loc, arith::ShLIOp::create(b, loc, one, shift), one);
  Value low = arith::AndIOp::create(b, loc, mag, mask);
  Value sticky = arith::ExtUIOp::create(
      b, loc, it,
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, low, zero));
  Value kept = arith::OrIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, mag, shift), sticky);
  Value rounded = arith::ShLIOp::create(b, loc, kept, shift);
  Value f = arith::UIToFPOp::create(b, loc, b.getF32Type(), rounded); // exact
  f = arith::SelectOp::create(b, loc, neg, arith::NegFOp::create(b, loc, f), f);
  return arith::TruncFOp::create(b, loc, b.getBF16Type(), f);
}

Value emitCast(OpBuilder &b, Location loc, ElementType from, ElementType to,
               Value x) {
  MLIRContext &ctx = *b.getContext();
  Type toType = toMLIRType(ctx, to);
  if (from == to)
    return x;
  if (isFloat(from)) {
    if (isFloat(to)) {
      unsigned fw = elementBitWidth(from), tw = elementBitWidth(to);
      if (fw == tw) // f16 <-> bf16 through f32 (exact widening first)
        return arith::TruncFOp::create(
            b, loc, toType, arith::ExtFOp::create(b, loc, b.getF32Type(), x));
      if (tw > fw)
        return arith::ExtFOp::create(b, loc, toType, x);
      if (from == ElementType::F64 && to == ElementType::BF16)
        return f64ToBF16(b, loc, x);
      return arith::TruncFOp::create(b, loc, toType, x);
    }
    if (to == ElementType::I1) // != 0, NaN gives true
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, x,
                                   constFloat(b, loc, x.getType(), 0.0));
    return floatToInt(b, loc, widen(b, loc, from, x), toType);
  }
  // No integer-to-bf16 conversion reaches LLVM: it lowers one with
  // __truncsfbf2, which Debian 12's libgcc lacks (and the canonicalizer
  // folds truncf(sitofp) of a narrow integer back into one), so i1 selects
  // a constant and i8 takes the i32 path, whose truncf arith-expand turns
  // into integer code.
  if (from == ElementType::I1) {
    if (to == ElementType::BF16)
      return arith::SelectOp::create(b, loc, x, constFloat(b, loc, toType, 1.0),
                                     constFloat(b, loc, toType, 0.0));
    if (isFloat(to))
      return arith::UIToFPOp::create(b, loc, toType, x);
    return arith::ExtUIOp::create(b, loc, toType, x);
  }
  if (to == ElementType::BF16 && elementBitWidth(from) < 32)
    return intToBF16(b, loc, arith::ExtSIOp::create(b, loc, b.getI32Type(), x));
  if (to == ElementType::BF16)
    return intToBF16(b, loc, x);
  if (isFloat(to)) // exact or correctly rounded once (f16: |x| < 2^24)
    return arith::SIToFPOp::create(b, loc, toType, x);
  if (to == ElementType::I1)
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, x,
                                 constInt(b, loc, x.getType(), 0));
  if (elementBitWidth(to) < elementBitWidth(from))
    return arith::TruncIOp::create(b, loc, toType, x); // wraps
  return arith::ExtSIOp::create(b, loc, toType, x);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

Value emitCombine(OpBuilder &b, Location loc, StringRef kind, ElementType t,
                  Value acc, Value x) {
  if (isFloat(t)) {
    if (kind == "sum")
      return arith::AddFOp::create(b, loc, acc, x);
    if (kind == "prod")
      return arith::MulFOp::create(b, loc, acc, x);
    if (kind == "max")
      return arith::MaximumFOp::create(b, loc, acc, x);
    return arith::MinimumFOp::create(b, loc, acc, x);
  }
  if (t == ElementType::I1) {
    if (kind == "max")
      return arith::OrIOp::create(b, loc, acc, x);
    if (kind == "min")
      return arith::AndIOp::create(b, loc, acc, x);
    if (kind == "sum") // NumPy's bool add (or); Sema rejects it.
      return arith::OrIOp::create(b, loc, acc, x);
    return arith::AndIOp::create(b, loc, acc, x);
  }
  if (kind == "sum")
    return arith::AddIOp::create(b, loc, acc, x);
  if (kind == "prod")
    return arith::MulIOp::create(b, loc, acc, x);
  if (kind == "max")
    return arith::MaxSIOp::create(b, loc, acc, x);
  return arith::MinSIOp::create(b, loc, acc, x);
}

Value emitReductionInit(OpBuilder &b, Location loc, StringRef kind,
                        ElementType t) {
  Type type = computeType(*b.getContext(), t);
  if (isFloat(t)) {
    double inf = std::numeric_limits<double>::infinity();
    double v = kind == "sum"    ? 0.0
               : kind == "prod" ? 1.0
               : kind == "max"  ? -inf
                                : inf;
    return constFloat(b, loc, type, v);
  }
  unsigned width = type.getIntOrFloatBitWidth();
  if (t == ElementType::I1)
    return constInt(b, loc, type, (kind == "min" || kind == "prod") ? 1 : 0);
  if (kind == "sum")
    return constInt(b, loc, type, 0);
  if (kind == "prod")
    return constInt(b, loc, type, 1);
  if (kind == "max")
    return constAPInt(b, loc, type, APInt::getSignedMinValue(width));
  return constAPInt(b, loc, type, APInt::getSignedMaxValue(width));
}

} // namespace detail
} // namespace kina
