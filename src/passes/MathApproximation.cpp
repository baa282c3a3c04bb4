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
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/STLExtras.h"

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
constexpr llvm::StringLiteral kDefaultFunctions[] = {"exp", "tanh", "erf"};

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
    GreedyRewriteConfig config;
    config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps);
    config.enableFolding(false);
    if (failed(applyOpPatternsGreedily(ops, std::move(patterns), config)))
      signalPassFailure();
  }
};

} // namespace
} // namespace kina
