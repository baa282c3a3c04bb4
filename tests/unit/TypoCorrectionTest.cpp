//===- TypoCorrectionTest.cpp - Unit tests of "did you mean ...?" ---------===//
//
// typoDistance (optimal string alignment: a swap of neighbours is one edit)
// and suggestName's closeness rule (at most max(1, len/3) edits and fewer
// than len, ties to the alphabetically first candidate), then each
// diagnostic that carries a suggestion: operations, attribute names and
// values, element types, %values, @functions and reshape dim names, and the
// cases that must get none.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

namespace kina::test {
namespace {

using TypoCorrectionTest = FrontendTest;

TEST(TypoDistance, CountsAdjacentSwapsAsOneEdit) {
  EXPECT_EQ(typoDistance("", ""), 0u);
  EXPECT_EQ(typoDistance("gelu", "gelu"), 0u);
  EXPECT_EQ(typoDistance("", "abc"), 3u);
  EXPECT_EQ(typoDistance("abc", ""), 3u);
  EXPECT_EQ(typoDistance("f23", "f32"), 1u);   // swap
  EXPECT_EQ(typoDistance("gleu", "gelu"), 1u); // swap
  EXPECT_EQ(typoDistance("axs", "axes"), 1u);  // insertion
  EXPECT_EQ(typoDistance("hh", "h"), 1u);      // deletion
  EXPECT_EQ(typoDistance("f33", "f32"), 1u);   // replacement
  EXPECT_EQ(typoDistance("kitten", "sitting"), 3u);
  // Optimal string alignment: no substring is edited twice.
  EXPECT_EQ(typoDistance("ca", "abc"), 3u);
  EXPECT_EQ(typoDistance("abc", "ca"), 3u);
}

TEST(SuggestName, OnlyCloseCandidates) {
  EXPECT_EQ(suggestName("gleu", {"exp", "gelu", "relu"}),
            std::optional<std::string>("gelu"));
  EXPECT_EQ(suggestName("fowrard", {"f", "forward", "main"}),
            std::optional<std::string>("forward"));
  EXPECT_EQ(suggestName("f23", elementTypeSpellings()),
            std::optional<std::string>("f32"));
  EXPECT_EQ(suggestName("bf61", elementTypeSpellings()),
            std::optional<std::string>("bf16"));
  // len 6: up to 2 edits; 3 is too far.
  EXPECT_EQ(suggestName("rduce_", {"reduce"}),
            std::optional<std::string>("reduce"));
  EXPECT_EQ(suggestName("rdc_e_", {"reduce"}), std::nullopt);
  EXPECT_EQ(suggestName("softmx", {"softmax"}),
            std::optional<std::string>("softmax"));
  EXPECT_EQ(suggestName("sotmx", {"softmax"}), std::nullopt);
  // One character replaced in a one-character name is no correction.
  EXPECT_EQ(suggestName("q", {"x", "y"}), std::nullopt);
  EXPECT_EQ(suggestName("M", {"N"}), std::nullopt);
  // The name itself and empty names are never suggested.
  EXPECT_EQ(suggestName("axis", {"axis"}), std::nullopt);
  EXPECT_EQ(suggestName("", {"a"}), std::nullopt);
  EXPECT_EQ(suggestName("ab", {}), std::nullopt);
}

TEST(SuggestName, TiesGoToTheAlphabeticallyFirst) {
  EXPECT_EQ(suggestName("f6", {"f64", "f16", "f32"}),
            std::optional<std::string>("f16"));
  EXPECT_EQ(suggestName("f6", {"f32", "f64", "f16"}),
            std::optional<std::string>("f16"));
  // A nearer candidate beats an alphabetically earlier one.
  EXPECT_EQ(suggestName("argmaxx", {"argma", "argmax"}),
            std::optional<std::string>("argmax"));
}

TEST_F(TypoCorrectionTest, Operations) {
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = gleu %x", "%r"),
            "error: unknown operation 'gleu'; did you mean 'gelu'?");
  EXPECT_EQ(typeOf("%x: f32[4, 4]", "%r = matmull %x, %x", "%r"),
            "error: unknown operation 'matmull'; did you mean 'matmul'?");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = reduce_smu %x", "%r"),
            "error: unknown operation 'reduce_smu'; did you mean "
            "'reduce_sum'?");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = frobnicate %x", "%r"),
            "error: unknown operation 'frobnicate'");
}

TEST_F(TypoCorrectionTest, AttributeNamesAndValues) {
  EXPECT_EQ(typeOf("%x: f32[4, 8]", "%r = reduce_sum %x {axs = [1]}", "%r"),
            "error: unknown attribute 'axs' for 'reduce_sum'; did you mean "
            "'axes'?");
  EXPECT_EQ(
      typeOf("%x: f32[4, 8]", "%r = reduce_sum %x {keepdim = true}", "%r"),
      "error: unknown attribute 'keepdim' for 'reduce_sum'; did you "
      "mean 'keepdims'?");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = gelu %x {approximate = \"tnh\"}", "%r"),
            "error: 'gelu' approximate must be \"none\" or \"tanh\", found "
            "\"tnh\"; did you mean \"tanh\"?");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = gelu %x {approximate = \"fast\"}", "%r"),
            "error: 'gelu' approximate must be \"none\" or \"tanh\", found "
            "\"fast\"");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = cast %x {to = f23}", "%r"),
            "error: attribute 'to' of 'cast' must be an element type, found "
            "the name 'f23'; did you mean 'f32'?");
  EXPECT_EQ(
      typeOf("%x: f32[B, 8]", "%r = reshape %x {shape = [Bb, 2, 4]}", "%r"),
      "error: 'reshape' shape uses 'Bb', which is not a symbolic dim of "
      "@f's parameters; did you mean 'B'?");
}

TEST_F(TypoCorrectionTest, ElementTypes) {
  EXPECT_FALSE(parse("func @f(%x: f23[4]) -> f32[4] {\n  return %x\n}\n"));
  EXPECT_EQ(allDiags(), "t.kir:1:13: error: unknown element type 'f23' in the "
                        "parameter type; did you mean 'f32'?\n");
  diags.clear();
  messages.clear();
  EXPECT_FALSE(parse("func @f(%x: f32[4]) -> int[4] {\n  return %x\n}\n"));
  EXPECT_EQ(allDiags(),
            "t.kir:1:24: error: expected an element type (f64, f32, f16, "
            "bf16, i64, i32, i8, i1) for the result type, found 'int'\n");
}

TEST_F(TypoCorrectionTest, ValuesAndFunctions) {
  EXPECT_FALSE(check(R"(private func @forward(%a: f32[4]) -> f32[4] {
  return %a
}
func @f(%x: f32[4]) -> f32[4] {
  %h = neg %x
  %y = add %x, %hh
  %z = call @fowrard(%h)
  %q = add %x, %w
  return %yy
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:6:16: error: use of undefined value %hh; did you mean "
            "'%h'?\n"
            "t.kir:7:8: error: call of undefined function @fowrard; did you "
            "mean '@forward'?\n"
            "t.kir:8:16: error: use of undefined value %w\n"
            "t.kir:9:10: error: use of undefined value %yy in 'return'; did "
            "you mean '%y'?\n");
}

} // namespace
} // namespace kina::test
