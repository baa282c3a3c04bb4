//===- MathApproximation.cpp - Vectorisable f32 math ----------------------===//
//
// kina-math-approximation (createMathApproximationPass). A libm call per
// element (`call expf`) keeps LLVM's loop vectoriser off every elementwise
// loop that computes a transcendental function. MLIR's polynomial
// approximations (mlir/Dialect/Math/Transforms/Passes.h,
// populateMathPolynomialApproximationPatterns) rewrite an f32 `math.exp`,
// `math.tanh`, ... into straight-line arith code (range reduction, a
// polynomial, bit manipulation of the exponent), which vectorises. Only the
// functions named in the option `functions` are rewritten; the default list
// (kDefaultFunctions) holds those whose approximation bench/cpu/math_ulp.py
// measured within the f32 tolerance of docs/tolerances.md over the whole f32
// range (denormals, infinities and NaN included); docs/tolerances.md gives
// the measured figures. f64 ops and functions outside the list keep their
// libm call (convert-math-to-libm) or LLVM intrinsic.
//
// The approximations use `math.fma` (exact: LLVM's `fma`) and `math.floor`,
// which LLVM turns into calls of `fmaf` and `floorf` on a processor without
// FMA and SSE4.1 (the generic x86-64), a call per element that makes the
// rewrite slower than libm's expf. The cpu target therefore adds this pass
// only for a processor with FMA (CpuTarget.cpp, processorHasFma); a
// contracted multiply-add instead of `fma` was measured and loses too much
// (gelu's tanh form near -3.4e38 misses the tolerance by 1e31).
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_MATHAPPROXIMATIONPASS
#include "kina/Passes.h.inc"

namespace {

/// The `math` mnemonics rewritten by default: measured within the f32
/// tolerance (1e-5 of max(1, |ref|), docs/tolerances.md) with NaN and
/// infinities where libm has them. Measured and left out (libm kept):
/// `log` (0.154 absolute at the smallest denormal: the approximation does
/// not scale denormal inputs), `sin` and `cos` (no range reduction for
/// large arguments: wrong beyond |x| ~ 1e5, NaN for some finite x).
/// `powf` is kina's PowFInF64, not an MLIR pattern.
constexpr llvm::StringLiteral kDefaultFunctions[] = {"exp", "tanh", "erf",
                                                     "powf"};

constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// `like`'s shape (a scalar or a vector type) with element type `element`.
Type withElementType(Type like, Type element) {
  if (auto vector = dyn_cast<VectorType>(like))
    return vector.clone(element);
  return element;
}

/// A constant of `type` (a scalar or vector type), every element
/// `element` (an attribute of `type`'s element type).
Value splatConstant(ImplicitLocOpBuilder &b, Type type, TypedAttr element) {
  if (auto vector = dyn_cast<VectorType>(type))
    element = DenseElementsAttr::get(vector, element);
  return arith::ConstantOp::create(b, element);
}

/// f32 `math.powf` (scalar or vector), IEEE 754 / C `powf` semantics
/// (NumPy's `power`): 2^(y log2|x|) evaluated in f64, rounded to f32 once.
///  - log2|x|: |x| in f64 (f32 denormals are normal there) is split on
///    its bits as z 2^k with z in
///    [sqrt(1/2), sqrt(2)) (musl's log split, with the exponent biased so
///    that a logical shift suffices: AVX2 has no 64-bit arithmetic shift);
///    k as f64 through the bits of 2^52 + k + 1023 (AVX2 has no i64 -> f64
///    conversion either); ln z = 2 atanh(s), s = (z - 1) / (z + 1),
///    |s| <= 0.1716, atanh(s) = s g(s^2) with g a degree-4 polynomial
///    (kLogCoefficients). log2 0 = -inf and log2 inf = inf are selected,
///    so t = y log2|x| gives C's pow(+-0, y) and pow(+-inf, y).
///  - t = y log2|x| in f64, clamped to [-200, 200] (beyond, the f32 result
///    is 0 or infinity either way); 2^t = 2^n 2^f with n = round(t) (the
///    1.5 * 2^52 shifter) and f in [-1/2, 1/2]; 2^f a degree-7 polynomial
///    (kExp2Coefficients); 2^n built in the exponent bits. The f64 error
///    reaching the result is below 1e-9 relative, so the f32 result is
///    within about 0.5 ulp (docs/tolerances.md has the measured figure).
///  - Special cases, as C's powf (selects, in f32): y = 0, x = 1, and
///    x = -1 with y = +-inf give 1 (even with a quiet NaN operand; a
///    signaling one gives NaN, as glibc's powf); a NaN x otherwise gives
///    NaN (a NaN y already does: t is NaN); a negative finite x with a
///    non-integer y gives NaN; x with its sign bit set and an odd integer y
///    negates the result (-0 and -inf included).
/// The polynomials are multiplies and adds flagged `contract` (fused on a
/// processor with FMA, separate on the generic x86-64: f64 has precision
/// to spare either way); no libm call remains on any processor.
struct PowFInF64 final : OpRewritePattern<math::PowFOp> {
  using OpRewritePattern::OpRewritePattern;

  /// g(z) = atanh(sqrt z) / sqrt z on [0, 0.02944] (s^2 for z in
  /// [sqrt(1/2), sqrt(2))), lowest degree first: a near-minimax fit
  /// (Lawson's iteratively reweighted least squares on 4 * 10^5 points),
  /// relative error 4.2e-12.
  static constexpr double kLogCoefficients[] = {
      1.0000000000042193, 0.333333326197478, 0.2000019300892292,
      0.14267488879159265, 0.11808805378872214};
  /// 2^f on [-1/2, 1/2], lowest degree first, fitted the same way:
  /// relative error 4.0e-11.
  static constexpr double kExp2Coefficients[] = {
      0.9999999999616906,    0.6931471807284236,    0.2402265119807867,
      0.0555041035348414,    0.009618027264238382,  0.0013333922567208105,
      0.00015469287752065304, 1.5201913382617213e-05};

  LogicalResult matchAndRewrite(math::PowFOp op,
                                PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type f64 = withElementType(type, b.getF64Type());
    Type i32 = withElementType(type, b.getI32Type());
    Type i64 = withElementType(type, b.getI64Type());
    auto c32 = [&](double v) {
      return splatConstant(b, type, b.getF32FloatAttr(v));
    };
    auto c64 = [&](double v) {
      return splatConstant(b, f64, b.getF64FloatAttr(v));
    };
    // Integer bit patterns (two's complement: 0xfff0... is negative).
    auto ci32 = [&](int64_t v) {
      return splatConstant(b, i32, b.getI32IntegerAttr(v));
    };
    auto ci64 = [&](uint64_t v) {
      return splatConstant(b, i64,
                           b.getI64IntegerAttr(static_cast<int64_t>(v)));
    };
    auto contract = arith::FastMathFlags::contract;
    // Horner's rule, each step a * v + c fused where the processor has FMA.
    auto horner = [&](llvm::ArrayRef<double> coefficients, Value v) {
      Value acc = c64(coefficients.back());
      for (double c : llvm::reverse(coefficients.drop_back())) {
        Value product = arith::MulFOp::create(b, acc, v, contract);
        acc = arith::AddFOp::create(b, product, c64(c), contract);
      }
      return acc;
    };
    auto cmpf = [&](arith::CmpFPredicate p, Value l, Value r) {
      return arith::CmpFOp::create(b, p, l, r).getResult();
    };
    auto select = [&](Value c, Value t, Value f) {
      return arith::SelectOp::create(b, c, t, f).getResult();
    };
    auto and_ = [&](Value l, Value r) {
      return arith::AndIOp::create(b, l, r).getResult();
    };
    auto or_ = [&](Value l, Value r) {
      return arith::OrIOp::create(b, l, r).getResult();
    };
    Value x = op.getLhs(), y = op.getRhs();
    Value ax = math::AbsFOp::create(b, x);

    // |x| = z 2^k, z in [sqrt(1/2), sqrt(2)).
    Value ax64 = arith::ExtFOp::create(b, f64, ax);
    Value ix = arith::BitcastOp::create(b, i64, ax64);
    // tmp's exponent field is k + 1023: the bits of sqrt(1/2) less those
    // of 1.0 taken from ix.
    Value tmp = arith::AddIOp::create(
        b, ix, ci64(0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull));
    Value iz = arith::AddIOp::create(
        b,
        arith::SubIOp::create(b, ix, and_(tmp, ci64(0xfff0000000000000ull))),
        ci64(0x3ff0000000000000ull));
    Value z = arith::BitcastOp::create(b, f64, iz);
    Value kBiased = arith::ShRUIOp::create(b, tmp, ci64(52));
    // 2^52 + k + 1023 exactly, less 2^52 + 1023.
    Value k = arith::SubFOp::create(
        b,
        arith::BitcastOp::create(
            b, f64, or_(kBiased, ci64(0x4330000000000000ull))),
        c64(0x1p52 + 1023));

    // log2|x| = k + 2 atanh(s) / ln 2.
    Value one = c64(1.0);
    Value s = arith::DivFOp::create(b, arith::SubFOp::create(b, z, one),
                                    arith::AddFOp::create(b, z, one));
    Value atanh = arith::MulFOp::create(
        b, s, horner(kLogCoefficients, arith::MulFOp::create(b, s, s)));
    Value log2x = arith::AddFOp::create(
        b, arith::MulFOp::create(b, atanh, c64(2.0 / llvm::numbers::ln2),
                                 contract),
        k, contract);
    // log2 0 = -inf, log2 inf = inf (the split gives finite values there),
    // so that t = y log2|x| is +-inf, or NaN for a NaN y.
    log2x = select(cmpf(arith::CmpFPredicate::OEQ, ax64, c64(0.0)),
                   c64(-kInfinity), log2x);
    log2x = select(cmpf(arith::CmpFPredicate::OEQ, ax64, c64(kInfinity)),
                   c64(kInfinity), log2x);

    // 2^t, t = y log2|x| (a NaN t stays NaN through every step).
    Value t =
        arith::MulFOp::create(b, arith::ExtFOp::create(b, f64, y), log2x);
    t = select(cmpf(arith::CmpFPredicate::OGT, t, c64(200.0)), c64(200.0),
               t);
    t = select(cmpf(arith::CmpFPredicate::OLT, t, c64(-200.0)), c64(-200.0),
               t);
    Value shifter = c64(0x1.8p52);
    Value shifted = arith::AddFOp::create(b, t, shifter);
    Value n = arith::SubFOp::create(b, shifted, shifter);
    Value exp2f =
        horner(kExp2Coefficients, arith::SubFOp::create(b, t, n));
    // 2^n: n + 1023 in the exponent field (the shifter's low bits hold n).
    Value scaleBits = arith::ShLIOp::create(
        b,
        arith::AddIOp::create(b, arith::BitcastOp::create(b, i64, shifted),
                              ci64(1023)),
        ci64(52));
    Value r64 = arith::MulFOp::create(
        b, exp2f, arith::BitcastOp::create(b, f64, scaleBits));
    Value r = arith::TruncFOp::create(b, type, r64);

    // y's integrality and parity (|y| >= 2^24 is an even integer, or
    // infinite, or NaN).
    Value ay = math::AbsFOp::create(b, y);
    Value small = cmpf(arith::CmpFPredicate::OLT, ay, c32(0x1p24));
    Value yi = arith::FPToSIOp::create(b, i32, select(small, y, c32(0.0)));
    Value exact = cmpf(arith::CmpFPredicate::OEQ,
                       arith::SIToFPOp::create(b, type, yi), y);
    // x's sign bit where y is an odd integer (yi's low bit moved to the
    // sign), flipping the result's sign.
    Value flip = select(
        exact,
        and_(arith::BitcastOp::create(b, i32, x),
             arith::ShLIOp::create(b, yi, ci32(31))),
        ci32(0));
    r = arith::BitcastOp::create(
        b, type,
        arith::XOrIOp::create(b, arith::BitcastOp::create(b, i32, r), flip));
    Value trueMask = arith::ConstantOp::create(
        b, cast<TypedAttr>(b.getOneAttr(withElementType(type, b.getI1Type()))));
    auto not_ = [&](Value v) {
      return arith::XOrIOp::create(b, v, trueMask).getResult();
    };
    Value kInf32 = c32(kInfinity);
    Value negativeFinite = and_(cmpf(arith::CmpFPredicate::OLT, x, c32(0.0)),
                                cmpf(arith::CmpFPredicate::ONE, x,
                                     c32(-kInfinity)));
    r = select(and_(negativeFinite, and_(small, not_(exact))),
               c32(std::numeric_limits<double>::quiet_NaN()), r);
    r = select(cmpf(arith::CmpFPredicate::UNO, x, x),
               arith::AddFOp::create(b, x, y), r);
    // A signaling NaN operand gives NaN even where C's pow(x, 0) = 1 and
    // pow(1, y) = 1 hold for a quiet one (IEEE 754 7.2, glibc's powf).
    auto notSignaling = [&](Value v) {
      Value quietBit = and_(arith::BitcastOp::create(b, i32, v),
                            ci32(0x00400000));
      return not_(and_(cmpf(arith::CmpFPredicate::UNO, v, v),
                       arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                             quietBit, ci32(0))));
    };
    Value one32 = c32(1.0);
    Value isOne =
        or_(or_(and_(cmpf(arith::CmpFPredicate::OEQ, y, c32(0.0)),
                     notSignaling(x)),
                and_(cmpf(arith::CmpFPredicate::OEQ, x, one32),
                     notSignaling(y))),
            and_(cmpf(arith::CmpFPredicate::OEQ, x, c32(-1.0)),
                 cmpf(arith::CmpFPredicate::OEQ, ay, kInf32)));
    r = select(isOne, one32, r);
    rewriter.replaceOp(op, r);
    return success();
  }
};

struct MathApproximationPass final
    : impl::MathApproximationPassBase<MathApproximationPass> {
  using MathApproximationPassBase::MathApproximationPassBase;

  void runOnOperation() override {
    llvm::SmallVector<std::string> selected(functions.begin(), functions.end());
    if (selected.empty())
      for (llvm::StringRef name : kDefaultFunctions)
        selected.push_back(name.str());
    // The predicate sees the op's full name ("math.exp").
    auto isSelected = [&](llvm::StringRef name) {
      name.consume_front("math.");
      return llvm::is_contained(selected, name);
    };
    // Only the selected ops and what their rewrites create: no folding or
    // simplification of the rest of the module.
    llvm::SmallVector<Operation *> ops;
    getOperation()->walk([&](Operation *op) {
      if (isa<math::MathDialect>(op->getDialect()) &&
          isSelected(op->getName().getStringRef()))
        ops.push_back(op);
    });
    if (ops.empty())
      return;
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isSelected);
    if (isSelected("math.powf"))
      patterns.add<PowFInF64>(&getContext());
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    config.enableFolding(false);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
} // namespace kina
