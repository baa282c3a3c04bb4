//===- PrinterTest.cpp - Unit tests of the canonical Kina IR printer ------===//
//
// The canonical text (spec "Module and functions", `kinac --emit=kir`):
// exact golden output for the spec's example, attribute order, omitted
// defaults, literal spellings, multi-result functions and calls; and the
// fixed point print(parse(print(x))) == print(x) on several modules,
// including samples/digits/mlp.kir when it exists. Also the float spelling
// used by the printer, checked to read back exactly through the lexer.
//
//===----------------------------------------------------------------------===//
#include "Format.h"
#include "FrontendTestUtil.h"
#include "Lexer.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

namespace kina::test {
namespace {

using PrinterTest = FrontendTest;

const char *kSpecExample = R"(module @digits_mlp                      # optional

func @forward(%x: f32[N, 64], %w1: f32[64, 32], %b1: f32[32],
              %w2: f32[32, 10], %b2: f32[10]) -> f32[N, 10] {
  %h  = matmul %x, %w1                  # f32[N, 32]
  %h1 = add %h, %b1                     # NumPy broadcasting
  %a  = relu %h1
  %l  = matmul %a, %w2 : f32[N, 10]     # an annotation is checked
  %l1 = add %l, %b2
  %p  = softmax %l1 {axis = -1}
  return %p
}
)";

TEST_F(PrinterTest, SpecExampleGolden) {
  EXPECT_EQ(canonical(kSpecExample),
            "module @digits_mlp\n"
            "\n"
            "func @forward(%x: f32[N, 64], %w1: f32[64, 32], %b1: f32[32], "
            "%w2: f32[32, 10], %b2: f32[10]) -> f32[N, 10] {\n"
            "  %h = matmul %x, %w1 : f32[N, 32]\n"
            "  %h1 = add %h, %b1 : f32[N, 32]\n"
            "  %a = relu %h1 : f32[N, 32]\n"
            "  %l = matmul %a, %w2 : f32[N, 10]\n"
            "  %l1 = add %l, %b2 : f32[N, 10]\n"
            "  %p = softmax %l1 {axis = -1} : f32[N, 10]\n"
            "  return %p\n"
            "}\n")
      << allDiags();
}

TEST_F(PrinterTest, FormsAndOrder) {
  const char *src = R"(
private func @pair(%x: f32[N], %i: i64) -> (f32[N], i64[]) {
  return %x, %i
}
func @main(%x: f32[N], %i: i64[]) -> f32[N] {
  %y, %j = call @pair(%x, %i)
  %k, %l = call @pair(%x, 7)
  %c = constant dense<[[1.5, -2], [inf, nan]]> : f32[2, 2]
  %b = constant dense<[true, false]> : i1[2]
  %z = constant -0.0 : f32
  %s = reduce_sum %y {keepdims = false, axes = [0]}
  %g = gelu %y {approximate = "tanh"}
  %t = mul %y, 1e-5
  %u = cast %y {to = bf16}
  %r = reshape %y {shape = [N, 1]}
  return %y
}
)";
  EXPECT_EQ(canonical(src, "dir/pairs.kir"),
            "module @pairs\n"
            "\n"
            "private func @pair(%x: f32[N], %i: i64[]) -> (f32[N], i64[]) {\n"
            "  return %x, %i\n"
            "}\n"
            "\n"
            "func @main(%x: f32[N], %i: i64[]) -> f32[N] {\n"
            "  %y, %j = call @pair(%x, %i) : (f32[N], i64[])\n"
            "  %k, %l = call @pair(%x, 7) : (f32[N], i64[])\n"
            "  %c = constant dense<[[1.5, -2], [inf, nan]]> : f32[2, 2]\n"
            "  %b = constant dense<[true, false]> : i1[2]\n"
            "  %z = constant -0.0 : f32[]\n"
            "  %s = reduce_sum %y {axes = [0], keepdims = false} : f32[]\n"
            "  %g = gelu %y {approximate = \"tanh\"} : f32[N]\n"
            "  %t = mul %y, 1e-5 : f32[N]\n"
            "  %u = cast %y {to = bf16} : bf16[N]\n"
            "  %r = reshape %y {shape = [N, 1]} : f32[N, 1]\n"
            "  return %y\n"
            "}\n")
      << allDiags();
}

TEST_F(PrinterTest, DefaultsAreNotPrintedAndTypesAreRefined) {
  EXPECT_EQ(canonical("func @f(%x: f32[?, 4]) -> f32[?, 4] {\n"
                      "  %a = softmax %x\n"
                      "  %b = relu %a : f32[8, 4]\n"
                      "  return %b\n}\n",
                      "f.kir"),
            "module @f\n\nfunc @f(%x: f32[?, 4]) -> f32[?, 4] {\n"
            "  %a = softmax %x : f32[?, 4]\n"
            "  %b = relu %a : f32[8, 4]\n"
            "  return %b\n}\n")
      << allDiags();
}

/// print(parse(print(x))) == print(x), and the reprinted module checks.
void expectFixedPoint(FrontendTest &t, const std::string &src,
                      const std::string &file) {
  std::string once = t.canonical(src, file);
  ASSERT_FALSE(once.empty()) << t.allDiags();
  std::string twice = t.canonical(once, file);
  EXPECT_EQ(once, twice);
}

TEST_F(PrinterTest, RoundTripSpecExample) {
  expectFixedPoint(*this, kSpecExample, "t.kir");
}

TEST_F(PrinterTest, RoundTripManyOps) {
  expectFixedPoint(*this, R"(module @ops
func @f(%x: f32[B, S, D], %g: f32[D], %b: f32[D], %ids: i32[B, S],
        %table: f16[V, 16], %m: i1[B, S, 1]) -> (f32[B, S, D], f16[B, S, 16]) {
  %n = layer_norm %x, %g, %b {epsilon = 1e-5, axis = -1}
  %r = rms_norm %x, %g {epsilon = 0.000001}
  %e = gather %table, %ids
  %t = transpose %x {perm = [0, 2, 1]}
  %q = matmul %x, %t
  %s = slice %q {start = [0, 0, -1], stop = [1, 9223372036854775807,
                 -9223372036854775808], step = [1, 1, -1]}
  %c = concat %x, %x {axis = 1}
  %z = select %m, %x, 0.25
  %a = argmax %n {keepdims = true}
  %lsm = log_softmax %r {axis = 2}
  %bb = broadcast_to %g {shape = [B, 1, D]}
  %i = iota {axis = 1} : i32[B, S]
  %cmp = ne %ids, %i
  %nn = not %cmp
  %p = pow %x, 2
  %big = mul %x, 3.4028234663852886e38
  return %z, %e
}
)",
                   "ops.kir");
}

TEST_F(PrinterTest, RoundTripDigitsSample) {
  std::ifstream in(KINA_SOURCE_DIR "/samples/digits/mlp.kir");
  if (!in)
    GTEST_SKIP() << "samples/digits/mlp.kir is not there";
  std::stringstream ss;
  ss << in.rdbuf();
  std::string once = canonical(ss.str(), "samples/digits/mlp.kir");
  ASSERT_FALSE(once.empty()) << allDiags();
  EXPECT_EQ(once.substr(0, once.find('\n')), "module @digits_mlp");
  EXPECT_EQ(canonical(once, "samples/digits/mlp.kir"), once);
}

TEST_F(PrinterTest, FloatSpellings) {
  EXPECT_EQ(formatFloat(0.5), "0.5");
  EXPECT_EQ(formatFloat(1.0), "1.0");
  EXPECT_EQ(formatFloat(-3.0), "-3.0");
  EXPECT_EQ(formatFloat(0.1), "0.1");
  EXPECT_EQ(formatFloat(1e-5), "1e-5");
  EXPECT_EQ(formatFloat(1e20), "1e20");
  EXPECT_EQ(formatFloat(123456789.0), "123456789.0");
  EXPECT_EQ(formatFloat(-0.0), "-0.0");
  EXPECT_EQ(formatFloat(HUGE_VAL), "inf");
  EXPECT_EQ(formatFloat(-HUGE_VAL), "-inf");
  EXPECT_EQ(formatFloat(std::nan("")), "nan");
  EXPECT_EQ(formatFloat(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(quoteString("a\"b\\c\n\t"), "\"a\\\"b\\\\c\\n\\t\"");
}

TEST_F(PrinterTest, FloatSpellingsReadBackExactly) {
  std::mt19937_64 rng(42);
  std::vector<double> values = {5e-324,
                                2.2250738585072014e-308,
                                1.7976931348623157e308,
                                3.4028234663852886e38,
                                6.103515625e-05,
                                65504.0,
                                1.0 / 3.0};
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, sizeof d);
    if (std::isfinite(d))
      values.push_back(d);
  }
  for (double v : values) {
    std::string s = formatFloat(v);
    Lexer lex(s, "f.kir", ctx);
    Token t = lex.next();
    ASSERT_TRUE(t.is(TokenKind::Float)) << s;
    EXPECT_EQ(t.floatValue, v) << s;
    EXPECT_EQ(std::signbit(t.floatValue), std::signbit(v)) << s;
    EXPECT_TRUE(lex.next().is(TokenKind::Eof)) << s;
  }
  EXPECT_EQ(errorCount(), 0u);
}

} // namespace
} // namespace kina::test
