//===- SemaTest.cpp - Unit tests of Kina IR semantic analysis -------------===//
//
// Type and shape inference for every op family of the spec's table, over
// static, `?` and symbolic dims with NumPy broadcasting, and each class of
// semantic error: names, attributes, arities, element types, literals,
// annotations, calls, returns and function names. Error tests check the
// exact location and message.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

namespace kina::test {
namespace {

using SemaTest = FrontendTest;

// --- Elementwise ------------------------------------------------------------

TEST_F(SemaTest, UnaryOps) {
  EXPECT_EQ(typeOf("%x: f32[N, 4]", "%r = relu %x", "%r"), "f32[N, 4]");
  EXPECT_EQ(
      typeOf("%x: bf16[?]", "%r = gelu %x {approximate = \"tanh\"}", "%r"),
      "bf16[?]");
  EXPECT_EQ(typeOf("%x: i32[3]", "%r = neg %x", "%r"), "i32[3]");
  EXPECT_EQ(typeOf("%x: i8[3]", "%r = abs %x", "%r"), "i8[3]");
  EXPECT_EQ(typeOf("%x: i1[3]", "%r = not %x", "%r"), "i1[3]");
  EXPECT_EQ(typeOf("%x: i32[4]", "%r = exp %x", "%r"),
            "error: 'exp' expects a float tensor (f64, f32, f16, bf16), "
            "found i32[4]");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = not %x", "%r"),
            "error: 'not' expects an i1 tensor, found f32[4]");
  EXPECT_EQ(typeOf("%x: i1[4]", "%r = neg %x", "%r"),
            "error: 'neg' expects a float or integer tensor, found i1[4] (use "
            "'not' on i1)");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = gelu %x {approximate = \"fast\"}", "%r"),
            "error: 'gelu' approximate must be \"none\" or \"tanh\", found "
            "\"fast\"");
}

TEST_F(SemaTest, BroadcastingOfDims) {
  EXPECT_EQ(typeOf("%x: f32[N, 1], %y: f32[4]", "%r = add %x, %y", "%r"),
            "f32[N, 4]");
  EXPECT_EQ(typeOf("%x: f32[N], %y: f32[N]", "%r = sub %x, %y", "%r"),
            "f32[N]");
  EXPECT_EQ(typeOf("%x: f32[N], %y: f32[M]", "%r = mul %x, %y", "%r"),
            "f32[?]");
  EXPECT_EQ(typeOf("%x: f32[?], %y: f32[?]", "%r = div %x, %y", "%r"),
            "f32[?]");
  EXPECT_EQ(typeOf("%x: f32[3], %y: f32[?]", "%r = max %x, %y", "%r"),
            "f32[3]");
  EXPECT_EQ(typeOf("%x: f32[1], %y: f32[N]", "%r = min %x, %y", "%r"),
            "f32[N]");
  EXPECT_EQ(typeOf("%x: f32[N], %y: f32[0]", "%r = pow %x, %y", "%r"),
            "f32[0]");
  EXPECT_EQ(typeOf("%x: f32[], %y: f32[2, 3]", "%r = mod %x, %y", "%r"),
            "f32[2, 3]");
  EXPECT_EQ(typeOf("%x: f32[2, 1, 5], %y: f32[7, 1]", "%r = add %x, %y", "%r"),
            "f32[2, 7, 5]");
  EXPECT_EQ(typeOf("%x: f32[2, 3], %y: f32[3, 3]", "%r = add %x, %y", "%r"),
            "error: 'add' operands f32[2, 3] and f32[3, 3] do not broadcast "
            "(static sizes differ in result dim 0)");
}

TEST_F(SemaTest, BinaryElementTypes) {
  EXPECT_EQ(typeOf("%x: f32[4], %i: i32[4]", "%r = add %x, %i", "%r"),
            "error: 'add' operands must have the same element type, found "
            "f32[4] and i32[4] (use 'cast')");
  EXPECT_EQ(typeOf("%b: i1[4], %c: i1[4]", "%r = sub %b, %c", "%r"),
            "error: 'sub' does not take i1 operands, found i1[4] and i1[4] "
            "(on i1, add/max is or, mul/min is and; or 'cast')");
  EXPECT_EQ(typeOf("%b: i1[4], %c: i1[4]", "%r = pow %b, %c", "%r"),
            "error: 'pow' does not take i1 operands, found i1[4] and i1[4] "
            "(on i1, add/max is or, mul/min is and; or 'cast')");
  for (const char *op : {"add", "mul", "max", "min"})
    EXPECT_EQ(typeOf("%b: i1[4], %c: i1[4]",
                     std::string("%r = ") + op + " %b, %c", "%r"),
              "i1[4]")
        << op;
  EXPECT_EQ(typeOf("%i: i64[2]", "%r = div %i, %i", "%r"), "i64[2]");
}

TEST_F(SemaTest, LiteralOperands) {
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = mul %x, 0.5", "%r"), "f32[4]");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = mul 2, %x", "%r"), "f32[4]");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = mul %x, 0.1", "%r"), "f32[4]");
  EXPECT_EQ(typeOf("%i: i32[4]", "%r = add %i, 2.0", "%r"), "i32[4]");
  EXPECT_EQ(typeOf("%i: i32[4]", "%r = add %i, 0.5", "%r"),
            "error: literal 0.5 is not exactly representable in i32");
  EXPECT_EQ(typeOf("%i: i8[4]", "%r = add %i, 128", "%r"),
            "error: literal 128 is not exactly representable in i8");
  EXPECT_EQ(typeOf("%i: i8[4]", "%r = add %i, -128", "%r"), "i8[4]");
  EXPECT_EQ(typeOf("%h: f16[4]", "%r = add %h, 70000", "%r"),
            "error: literal 70000 is out of range for f16");
  EXPECT_EQ(typeOf("%h: f16[4]", "%r = max %h, -inf", "%r"), "f16[4]");
  EXPECT_EQ(typeOf("%b: i1[4]", "%r = eq %b, true", "%r"), "i1[4]");
  EXPECT_EQ(typeOf("%b: i1[4]", "%r = eq %b, 2", "%r"),
            "error: literal 2 is not exactly representable in i1");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = eq %x, true", "%r"),
            "error: literal true is a boolean and cannot be f32 (only i1)");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = add 1.0, 2.0", "%r"),
            "error: 'add' needs a %value operand to give its literal operands "
            "an element type (use 'constant' for a literal tensor)");
  // Operand::type of a literal is a rank-0 tensor of the partner's type.
  std::optional<Module> m = check(
      "func @f(%x: f16[4]) -> f16[4] {\n  %r = mul %x, 3\n  return %r\n}\n");
  ASSERT_TRUE(m) << allDiags();
  const Operand &lit = m->functions[0].body[0].operands[1];
  ASSERT_TRUE(lit.type);
  EXPECT_EQ(lit.type->str(), "f16[]");
  EXPECT_EQ(m->functions[0].body[0].operands[0].type->str(), "f16[4]");
}

TEST_F(SemaTest, CompareSelectCast) {
  EXPECT_EQ(typeOf("%x: f32[N, 1], %y: f32[3]", "%r = lt %x, %y", "%r"),
            "i1[N, 3]");
  EXPECT_EQ(typeOf("%c: i1[N, 1], %a: f32[4], %b: f32[1, 4]",
                   "%r = select %c, %a, %b", "%r"),
            "f32[N, 4]");
  EXPECT_EQ(typeOf("%c: i1[3], %a: f32[3]", "%r = select %c, %a, 0.0", "%r"),
            "f32[3]");
  EXPECT_EQ(typeOf("%c: f32[3], %a: f32[3]", "%r = select %c, %a, %a", "%r"),
            "error: the condition of 'select' must be i1, found f32[3]");
  EXPECT_EQ(typeOf("%c: i1[2], %a: f32[3]", "%r = select %c, %a, %a", "%r"),
            "error: 'select' operands i1[2], f32[3] and f32[3] do not "
            "broadcast (static sizes differ)");
  EXPECT_EQ(typeOf("%x: f32[N, 3]", "%r = cast %x {to = f16}", "%r"),
            "f16[N, 3]");
  EXPECT_EQ(typeOf("%x: f32[3]", "%r = cast %x", "%r"),
            "error: 'cast' needs the attribute 'to' (an element type)");
  EXPECT_EQ(typeOf("%x: f32[3]", "%r = cast %x {to = 3}", "%r"),
            "error: attribute 'to' of 'cast' must be an element type, found "
            "the integer 3");
}

// --- Constants and iota
// -------------------------------------------------------

TEST_F(SemaTest, Constants) {
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = constant 0.5 : f32", "%r"), "f32[]");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = constant 0.0 : f32[N, 4]", "%r"),
            "f32[N, 4]");
  EXPECT_EQ(typeOf("%x: f32[N]",
                   "%r = constant dense<[[1, 2], [3, 4]]> : i32[2, 2]", "%r"),
            "i32[2, 2]");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = constant dense<[]> : f32[0]", "%r"),
            "f32[0]");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = constant dense<1> : i8[3]", "%r"),
            "i8[3]");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = constant 1.5", "%r"),
            "error: 'constant' needs its type written after the value (e.g. "
            "'constant 0.5 : f32')");
  EXPECT_EQ(typeOf("%x: f32[N]",
                   "%r = constant dense<[[1, 2], [3]]> : i32[2, 2]", "%r"),
            "error: dense literal is not rectangular: expected 2 elements, "
            "found 1");
  EXPECT_EQ(
      typeOf("%x: f32[N]", "%r = constant dense<[1, 2, 3]> : i32[2]", "%r"),
      "error: dense literal has shape [3], but the type is i32[2]");
  EXPECT_EQ(
      typeOf("%x: f32[N]", "%r = constant dense<[1, 2.5]> : i32[2]", "%r"),
      "error: literal 2.5 is not exactly representable in i32");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = constant 0.0 : f32[?]", "%r"),
            "error: the type f32[?] of 'constant' must not have '?' dims");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = constant 0.0 : f32[K]", "%r"),
            "error: symbolic dim 'K' in the type of 'constant' is not a dim "
            "of @f's parameters, so its size is unknown");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = constant %x : f32[N]", "%r"),
            "error: 'constant' takes a literal or dense<...>, found %x");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = add %x, dense<[1.0]>", "%r"),
            "error: a dense<...> literal is only allowed as the operand of "
            "'constant'");
}

TEST_F(SemaTest, Iota) {
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = iota {axis = 0} : i64[8]", "%r"),
            "i64[8]");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = iota {axis = -1} : f32[N, 3]", "%r"),
            "f32[N, 3]");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = iota {axis = 2} : i64[8]", "%r"),
            "error: 'iota' axis 2 is out of range for rank 1 (expected -1 to "
            "0)");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = iota %x {axis = 0} : i64[8]", "%r"),
            "error: 'iota' expects 0 operands, found 1");
  EXPECT_EQ(typeOf("%x: f32[N]", "%r = iota : i1[8]", "%r"),
            "error: 'iota' needs an integer or float element type other than "
            "i1, found i1[8]");
}

// --- matmul
// -------------------------------------------------------------------

TEST_F(SemaTest, Matmul) {
  EXPECT_EQ(
      typeOf("%a: f32[N, 64], %b: f32[64, 32]", "%r = matmul %a, %b", "%r"),
      "f32[N, 32]");
  EXPECT_EQ(typeOf("%a: f32[2, 1, 3, 4], %b: f32[5, 4, 6]",
                   "%r = matmul %a, %b", "%r"),
            "f32[2, 5, 3, 6]");
  EXPECT_EQ(typeOf("%a: f32[4], %b: f32[B, 4, 5]", "%r = matmul %a, %b", "%r"),
            "f32[B, 5]");
  EXPECT_EQ(typeOf("%a: f32[3, K], %b: f32[K]", "%r = matmul %a, %b", "%r"),
            "f32[3]");
  EXPECT_EQ(typeOf("%a: f32[4], %b: f32[?]", "%r = matmul %a, %b", "%r"),
            "f32[]");
  EXPECT_EQ(typeOf("%a: f32[2, 0], %b: f32[0, 3]", "%r = matmul %a, %b", "%r"),
            "f32[2, 3]");
  EXPECT_EQ(typeOf("%a: f32[2, 3], %b: f32[4, 5]", "%r = matmul %a, %b", "%r"),
            "error: 'matmul' contraction dims differ: f32[2, 3] x f32[4, 5] "
            "(3 vs 4)");
  EXPECT_EQ(
      typeOf("%a: f32[2, 1, 3], %b: f32[3, 3, 5]", "%r = matmul %a, %b", "%r"),
      "error: 'matmul' batch dims of f32[2, 1, 3] and f32[3, 3, 5] do "
      "not broadcast");
  EXPECT_EQ(typeOf("%a: f32[], %b: f32[3]", "%r = matmul %a, %b", "%r"),
            "error: 'matmul' operands must have rank >= 1, found f32[] and "
            "f32[3] (use 'mul')");
  EXPECT_EQ(typeOf("%a: f32[3, 3]", "%r = matmul %a, 2.0", "%r"),
            "error: operand 2 of 'matmul' must be a tensor %value, found the "
            "literal 2.0");
}

// --- Layout
// -------------------------------------------------------------------

TEST_F(SemaTest, Transpose) {
  EXPECT_EQ(
      typeOf("%x: f32[N, 3, 5]", "%r = transpose %x {perm = [2, 0, 1]}", "%r"),
      "f32[5, N, 3]");
  EXPECT_EQ(
      typeOf("%x: f32[N, 3]", "%r = transpose %x {perm = [-1, -2]}", "%r"),
      "f32[3, N]");
  EXPECT_EQ(typeOf("%x: f32[N, 3, 5]", "%r = transpose %x", "%r"),
            "f32[5, 3, N]");
  EXPECT_EQ(typeOf("%x: f32[N, 3]", "%r = transpose %x {perm = [0, 0]}", "%r"),
            "error: 'transpose' perm [0, 0] is not a permutation: axis 0 "
            "appears twice");
  EXPECT_EQ(
      typeOf("%x: f32[N, 3]", "%r = transpose %x {perm = [1, 0, 2]}", "%r"),
      "error: 'transpose' perm [1, 0, 2] has 3 entries, but the operand "
      "f32[N, 3] has rank 2");
}

TEST_F(SemaTest, Reshape) {
  EXPECT_EQ(
      typeOf("%x: f32[N, 64]", "%r = reshape %x {shape = [N, 8, 8]}", "%r"),
      "f32[N, 8, 8]");
  EXPECT_EQ(typeOf("%x: f32[N, 64]", "%r = reshape %x {shape = [N, -1]}", "%r"),
            "f32[N, 64]");
  EXPECT_EQ(typeOf("%x: f32[2, 3]", "%r = reshape %x {shape = [-1]}", "%r"),
            "f32[6]");
  EXPECT_EQ(typeOf("%x: f32[?, 4]", "%r = reshape %x {shape = [-1, 2]}", "%r"),
            "f32[?, 2]");
  EXPECT_EQ(typeOf("%x: f32[N, M]", "%r = reshape %x {shape = [-1]}", "%r"),
            "f32[?]");
  EXPECT_EQ(typeOf("%x: f32[2, 3]", "%r = reshape %x {shape = [4, 2]}", "%r"),
            "error: 'reshape' cannot turn f32[2, 3] into f32[4, 2]: the "
            "element counts differ");
  EXPECT_EQ(typeOf("%x: f32[2, 3]", "%r = reshape %x {shape = [-1, 4]}", "%r"),
            "error: 'reshape' cannot turn f32[2, 3] into shape f32[?, 4] with "
            "-1: the other sizes do not divide the element count");
  EXPECT_EQ(typeOf("%x: f32[2, 3]", "%r = reshape %x {shape = [-1, -1]}", "%r"),
            "error: 'reshape' shape may hold only one -1");
  EXPECT_EQ(typeOf("%x: f32[N, 3]", "%r = reshape %x {shape = [K, 3]}", "%r"),
            "error: 'reshape' shape uses 'K', which is not a symbolic dim of "
            "@f's parameters");
  EXPECT_EQ(typeOf("%x: f32[N, 3]", "%r = reshape %x {shape = [1.5]}", "%r"),
            "error: attribute 'shape' of 'reshape' must be a list of sizes and "
            "dim names, found a list holding the float 1.5");
  EXPECT_EQ(typeOf("%x: f32[2]",
                   "%r = reshape %x {shape = [1, 1, 1, 1, 1, 1, 1, 1, 2]}",
                   "%r"),
            "error: 'reshape' shape has 9 entries, above the maximum rank 8");
}

TEST_F(SemaTest, BroadcastTo) {
  EXPECT_EQ(typeOf("%x: f32[3], %n: f32[N]",
                   "%r = broadcast_to %x {shape = [N, 3]}", "%r"),
            "f32[N, 3]");
  EXPECT_EQ(typeOf("%x: f32[3]", "%r = broadcast_to %x {shape = [N, 3]}", "%r"),
            "error: 'broadcast_to' shape uses 'N', which is not a symbolic dim "
            "of @f's parameters");
  EXPECT_EQ(
      typeOf("%x: f32[1, ?]", "%r = broadcast_to %x {shape = [4, 5]}", "%r"),
      "f32[4, 5]");
  EXPECT_EQ(typeOf("%x: f32[2]", "%r = broadcast_to %x {shape = [4, 3]}", "%r"),
            "error: 'broadcast_to' cannot broadcast f32[2] to f32[4, 3] (dim "
            "0: 2 vs 3)");
  EXPECT_EQ(typeOf("%x: f32[2, 2]", "%r = broadcast_to %x {shape = [2]}", "%r"),
            "error: 'broadcast_to' cannot lower the rank: f32[2, 2] to f32[2]");
  EXPECT_EQ(
      typeOf("%x: f32[2]", "%r = broadcast_to %x {shape = [-1, 2]}", "%r"),
      "error: 'broadcast_to' shape entry -1 is negative");
}

TEST_F(SemaTest, Concat) {
  EXPECT_EQ(typeOf("%a: f32[2, N], %b: f32[3, N]",
                   "%r = concat %a, %b {axis = 0}", "%r"),
            "f32[5, N]");
  EXPECT_EQ(typeOf("%a: f32[?, 4], %b: f32[2, 4]",
                   "%r = concat %a, %b, %b {axis = -2}", "%r"),
            "f32[?, 4]");
  EXPECT_EQ(typeOf("%a: f32[2, ?], %b: f32[3, 4]", "%r = concat %a, %b", "%r"),
            "f32[5, 4]");
  EXPECT_EQ(typeOf("%a: f32[2, 4]", "%r = concat %a {axis = 1}", "%r"),
            "f32[2, 4]");
  EXPECT_EQ(typeOf("%a: f32[2, 4], %b: f32[2, 5]",
                   "%r = concat %a, %b {axis = 0}", "%r"),
            "error: 'concat' operands f32[2, 4] and f32[2, 5] differ in dim 1, "
            "which is not the concatenation axis 0");
  EXPECT_EQ(typeOf("%a: f32[2, 4], %b: f32[2]", "%r = concat %a, %b", "%r"),
            "error: 'concat' operands must have the same rank, found f32[2, "
            "4] and f32[2]");
  EXPECT_EQ(typeOf("%a: f32[2, 4]", "%r = concat {axis = 0}", "%r"),
            "error: 'concat' expects at least 1 operand, found 0");
}

TEST_F(SemaTest, Slice) {
  EXPECT_EQ(typeOf("%x: f32[10]",
                   "%r = slice %x {start = [1], stop = [-1], step = [2]}",
                   "%r"),
            "f32[4]");
  EXPECT_EQ(typeOf("%x: f32[10]",
                   "%r = slice %x {start = [-1], stop = "
                   "[-9223372036854775808], step = [-1]}",
                   "%r"),
            "f32[10]");
  EXPECT_EQ(typeOf("%x: f32[10, 4]",
                   "%r = slice %x {start = [20, 0], stop = [30, 100]}", "%r"),
            "f32[0, 4]");
  EXPECT_EQ(typeOf("%x: f32[N, 4]",
                   "%r = slice %x {start = [0, 1], stop = [5, 3]}", "%r"),
            "f32[?, 2]");
  EXPECT_EQ(typeOf("%x: f32[N, 4]",
                   "%r = slice %x {start = [0, 3], stop = "
                   "[9223372036854775807, 0], step = [1, -1]}",
                   "%r"),
            "f32[N, 3]");
  EXPECT_EQ(typeOf("%x: f32[10]",
                   "%r = slice %x {start = [0], stop = [5], step = [0]}", "%r"),
            "error: 'slice' step must not be 0 (dim 0)");
  EXPECT_EQ(typeOf("%x: f32[10]", "%r = slice %x {start = [0]}", "%r"),
            "error: 'slice' needs the attribute 'stop' (a list of integers)");
  EXPECT_EQ(
      typeOf("%x: f32[10]", "%r = slice %x {start = [0, 0], stop = [1]}", "%r"),
      "error: 'slice' start has 2 entries, but the operand f32[10] has "
      "rank 1");
}

TEST_F(SemaTest, Gather) {
  EXPECT_EQ(typeOf("%t: f32[V, D], %i: i64[B, S]", "%r = gather %t, %i", "%r"),
            "f32[B, S, D]");
  EXPECT_EQ(typeOf("%t: f32[V, D], %i: i32[B]",
                   "%r = gather %t, %i {axis = -1}", "%r"),
            "f32[V, B]");
  EXPECT_EQ(typeOf("%t: f32[5, D]", "%r = gather %t, -5", "%r"), "f32[D]");
  EXPECT_EQ(typeOf("%t: f32[5, D]", "%r = gather %t, 5", "%r"),
            "error: 'gather' index 5 is out of range for dim 0 of f32[5, D]");
  EXPECT_EQ(typeOf("%t: f32[V, D], %i: f32[B]", "%r = gather %t, %i", "%r"),
            "error: 'gather' indices must be i32 or i64, found f32[B]");
}

// --- Reductions and normalisation
// ---------------------------------------------

TEST_F(SemaTest, Reductions) {
  EXPECT_EQ(typeOf("%x: f32[N, 4, 5]", "%r = reduce_sum %x {axes = [1]}", "%r"),
            "f32[N, 5]");
  EXPECT_EQ(typeOf("%x: f32[N, 4, 5]",
                   "%r = reduce_mean %x {axes = [1, -1], keepdims = true}",
                   "%r"),
            "f32[N, 1, 1]");
  EXPECT_EQ(typeOf("%x: f32[N, 4, 5]", "%r = reduce_max %x", "%r"), "f32[]");
  EXPECT_EQ(typeOf("%x: f32[N, 4]", "%r = reduce_prod %x {axes = []}", "%r"),
            "f32[]");
  EXPECT_EQ(typeOf("%x: i32[N, 4]", "%r = reduce_sum %x {axes = [0]}", "%r"),
            "i32[4]");
  EXPECT_EQ(typeOf("%x: i1[N, 4]", "%r = reduce_min %x {axes = [1]}", "%r"),
            "i1[N]");
  EXPECT_EQ(typeOf("%x: f32[3, 0]", "%r = reduce_sum %x {axes = [1]}", "%r"),
            "f32[3]");
  EXPECT_EQ(
      typeOf("%x: f32[N, 4]", "%r = reduce_sum %x {axes = [1, -1]}", "%r"),
      "error: 'reduce_sum' axes name axis 1 twice");
  EXPECT_EQ(typeOf("%x: f32[N, 4]", "%r = reduce_sum %x {axes = [2]}", "%r"),
            "error: 'reduce_sum' axis 2 is out of range for f32[N, 4]");
  EXPECT_EQ(typeOf("%x: i32[4]", "%r = reduce_mean %x", "%r"),
            "error: 'reduce_mean' expects a float tensor, found i32[4] (cast "
            "it to a float type first)");
  EXPECT_EQ(typeOf("%x: i1[4]", "%r = reduce_sum %x", "%r"),
            "error: 'reduce_sum' does not take i1, found i1[4] "
            "(reduce_max/reduce_min are any/all; or cast)");
  EXPECT_EQ(typeOf("%x: f32[3, 0]", "%r = reduce_max %x {axes = [1]}", "%r"),
            "error: 'reduce_max' over an empty extent: dim 1 of f32[3, 0] has "
            "size 0");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = reduce_sum %x {keepdims = 1}", "%r"),
            "error: attribute 'keepdims' of 'reduce_sum' must be a boolean "
            "(true or false), found the integer 1");
}

TEST_F(SemaTest, ArgReductions) {
  EXPECT_EQ(typeOf("%x: f32[N, 10]", "%r = argmax %x", "%r"), "i64[N]");
  EXPECT_EQ(typeOf("%x: f16[N, 10]",
                   "%r = argmin %x {axis = 0, keepdims = true}", "%r"),
            "i64[1, 10]");
  EXPECT_EQ(typeOf("%x: f32[N, 0]", "%r = argmax %x", "%r"),
            "error: 'argmax' over an empty extent: dim 1 of f32[N, 0] has size "
            "0");
  EXPECT_EQ(typeOf("%x: f32[]", "%r = argmax %x", "%r"),
            "error: 'argmax' axis -1 is out of range for rank 0");
}

TEST_F(SemaTest, SoftmaxAndNorms) {
  EXPECT_EQ(typeOf("%x: f32[N, 10]", "%r = softmax %x {axis = -1}", "%r"),
            "f32[N, 10]");
  EXPECT_EQ(typeOf("%x: bf16[N, 10]", "%r = log_softmax %x", "%r"),
            "bf16[N, 10]");
  EXPECT_EQ(typeOf("%x: i32[N, 10]", "%r = softmax %x", "%r"),
            "error: 'softmax' expects a float tensor (f64, f32, f16, bf16), "
            "found i32[N, 10]");
  EXPECT_EQ(typeOf("%x: f32[N, 10]", "%r = softmax %x {axis = 2}", "%r"),
            "error: 'softmax' axis 2 is out of range for rank 2 (expected -2 "
            "to 1)");
  EXPECT_EQ(typeOf("%x: f32[N, 4, 8], %g: f32[4, 8], %b: f32[4, ?]",
                   "%r = layer_norm %x, %g, %b {axis = 1, epsilon = 1e-5}",
                   "%r"),
            "f32[N, 4, 8]");
  EXPECT_EQ(typeOf("%x: f32[N, 8], %g: f32[8]", "%r = rms_norm %x, %g", "%r"),
            "f32[N, 8]");
  EXPECT_EQ(typeOf("%x: f32[N, 8], %g: f32[8], %b: f32[4]",
                   "%r = layer_norm %x, %g, %b", "%r"),
            "error: 'layer_norm' operand 3 %b (bias) must have the dims [8] of "
            "f32[N, 8] from axis 1, found f32[4]");
  EXPECT_EQ(typeOf("%x: f32[N, 4, 8], %g: f32[8]",
                   "%r = rms_norm %x, %g {axis = 1}", "%r"),
            "error: 'rms_norm' operand 2 %g (scale) must have the dims [4, 8] "
            "of f32[N, 4, 8] from axis 1, found f32[8]");
  EXPECT_EQ(typeOf("%x: f32[N, 8], %g: f32[8]",
                   "%r = rms_norm %x, %g {epsilon = -1.0}", "%r"),
            "error: 'rms_norm' epsilon must be a finite number >= 0, found "
            "-1.0");
  EXPECT_EQ(typeOf("%x: f32[N, 8], %g: f16[8]", "%r = rms_norm %x, %g", "%r"),
            "error: 'rms_norm' operands must have the same element type, found "
            "f32[N, 8] and f16[8] (use 'cast')");
}

TEST_F(SemaTest, DefaultAttributesAreAddedAndMarked) {
  std::optional<Module> m = check(R"(func @f(%x: f32[N, 8]) -> f32[N, 8] {
  %a = softmax %x
  %b = reduce_sum %x {keepdims = true}
  %c = gelu %x
  %d = transpose %x
  %e = slice %x {start = [0, 0], stop = [2, 2]}
  return %a
}
)");
  ASSERT_TRUE(m) << allDiags();
  const auto &b = m->functions[0].body;
  ASSERT_TRUE(b[0].attr("axis"));
  EXPECT_TRUE(b[0].attr("axis")->isDefault);
  EXPECT_EQ(b[0].attr("axis")->value.intValue, -1);
  EXPECT_FALSE(b[1].attr("keepdims")->isDefault);
  EXPECT_TRUE(b[1].attr("axes")->isDefault);
  EXPECT_TRUE(b[1].attr("axes")->value.elements.empty());
  EXPECT_EQ(b[2].attr("approximate")->value.stringValue, "none");
  const AttrValue &perm = b[3].attr("perm")->value;
  ASSERT_EQ(perm.elements.size(), 2u);
  EXPECT_EQ(perm.elements[0].intValue, 1);
  EXPECT_EQ(perm.elements[1].intValue, 0);
  EXPECT_EQ(b[4].attr("step")->value.elements.size(), 2u);
  EXPECT_EQ(b[4].attr("step")->value.elements[1].intValue, 1);
}

// --- Attributes and operand counts
// ----------------------------------------------

TEST_F(SemaTest, AttributeErrors) {
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = relu %x {axis = 0}", "%r"),
            "error: unknown attribute 'axis' for 'relu' (it takes no "
            "attributes)");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = softmax %x {axes = 0}", "%r"),
            "error: unknown attribute 'axes' for 'softmax'; did you mean "
            "'axis'?");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = softmax %x {dim = 0}", "%r"),
            "error: unknown attribute 'dim' for 'softmax' (expected 'axis')");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = softmax %x {axis = \"last\"}", "%r"),
            "error: attribute 'axis' of 'softmax' must be an integer, found "
            "the string \"last\"");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = add %x", "%r"),
            "error: 'add' expects 2 operands, found 1");
  EXPECT_EQ(typeOf("%x: f32[4]", "%r = frobnicate %x", "%r"),
            "error: unknown operation 'frobnicate'");
}

// --- Names, annotations, no cascades
// --------------------------------------------

TEST_F(SemaTest, UndefinedUseBeforeDefinitionAndRedefinition) {
  EXPECT_FALSE(check(R"(func @f(%x: f32[4]) -> f32[4] {
  %a = add %x, %b
  %b = neg %q
  %x = neg %a
  %a = neg %x
  return %a
}
)"));
  EXPECT_EQ(allDiags(), "t.kir:2:16: error: use of %b before its definition\n"
                        "t.kir:3:3: note: %b is defined here\n"
                        "t.kir:3:12: error: use of undefined value %q\n"
                        "t.kir:4:3: error: redefinition of %x\n"
                        "t.kir:1:9: note: previous definition of %x is here\n"
                        "t.kir:5:3: error: redefinition of %a\n"
                        "t.kir:2:3: note: previous definition of %a is here\n");
}

TEST_F(SemaTest, ErrorsDoNotCascade) {
  EXPECT_FALSE(check(R"(func @f(%x: f32[4], %i: i32[4]) -> f32[4] {
  %a = add %x, %i
  %b = mul %a, %a
  %c = relu %b
  %d = exp %i
  return %c
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:2:8: error: 'add' operands must have the same element "
            "type, found f32[4] and i32[4] (use 'cast')\n"
            "t.kir:5:8: error: 'exp' expects a float tensor (f64, f32, f16, "
            "bf16), found i32[4]\n");
}

TEST_F(SemaTest, AnnotationSymbolMustBeAParameterDim) {
  // Only the parameters' symbols have a run-time size to check against.
  EXPECT_FALSE(check(R"(func @f(%x: f32[?]) -> f32[?] {
  %a = relu %x : f32[M]
  return %a
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:2:18: error: symbolic dim 'M' in the annotation of 'relu' "
            "is not a dim of @f's parameters, so its size is unknown\n");
}

TEST_F(SemaTest, Annotations) {
  // An annotation may refine `?`; inferredTypes keeps the type before it.
  std::optional<Module> m =
      check(R"(func @f(%x: f32[?, 4], %y: f32[N]) -> f32[N] {
  %a = relu %x : f32[8, 4]
  %b = relu %x : f32[N, ?]
  %c = relu %y : f32[?]
  return %c
}
)");
  ASSERT_TRUE(m) << allDiags();
  const auto &b = m->functions[0].body;
  EXPECT_EQ(b[0].resultTypes[0].str(), "f32[8, 4]");
  EXPECT_EQ(b[0].inferredTypes[0].str(), "f32[?, 4]");
  EXPECT_EQ(b[1].resultTypes[0].str(), "f32[N, 4]");
  EXPECT_EQ(b[2].resultTypes[0].str(), "f32[N]"); // written ? keeps N
  EXPECT_EQ(typeOf("%a: f32[N, 64], %w: f32[64, 32]",
                   "%l = matmul %a, %w : f32[N, 10]", "%l"),
            "error: 'matmul' result type f32[N, 32] does not match the "
            "annotation f32[N, 10]");
  EXPECT_EQ(typeOf("%a: f32[N]", "%l = relu %a : f16[N]", "%l"),
            "error: 'relu' result type f32[N] does not match the annotation "
            "f16[N]");
  EXPECT_EQ(typeOf("%a: f32[N]", "%l = relu %a : f32[4]", "%l"),
            "error: 'relu' result type f32[N] does not match the annotation "
            "f32[4]");
  EXPECT_EQ(typeOf("%a: f32[N]", "%l = relu %a : (f32[N], f32[N])", "%l"),
            "error: the annotation gives 2 types, but 'relu' has 1 result");
  EXPECT_EQ(typeOf("%a: f32[N]", "%l, %m = relu %a", "%l"),
            "error: 'relu' gives 1 result, but 2 names are bound");
}

TEST_F(SemaTest, Returns) {
  EXPECT_FALSE(check(R"(func @f(%x: f32[N]) -> f32[4] {
  return %x
}
func @g(%x: f32[N]) -> (f32[N], f32[N]) {
  return %x
}
func @h(%x: f32[?]) -> f32[4] {
  return %x
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:2:10: error: return value %x has type f32[N], but @f "
            "declares result 1 as f32[4]\n"
            "t.kir:1:9: note: %x defined here with type f32[N]\n"
            "t.kir:5:3: error: 'return' gives 1 value, but @g returns 2 "
            "values\n");
}

// --- Calls
// ----------------------------------------------------------------------

TEST_F(SemaTest, Calls) {
  const char *src =
      R"(private func @lin(%x: f32[B, K], %w: f32[K, O]) -> (f32[B, O], f32[R]) {
  %y = matmul %x, %w
  %r = reshape %y {shape = [-1]}
  return %y, %r
}
func @main(%x: f32[N, 64], %w: f32[64, 10]) -> f32[N, 10] {
  %y, %r = call @lin(%x, %w)
  return %y
}
)";
  std::optional<Module> m = check(src);
  ASSERT_TRUE(m) << allDiags();
  const Statement &c = m->functions[1].body[0];
  ASSERT_EQ(c.resultTypes.size(), 2u);
  EXPECT_EQ(c.resultTypes[0].str(), "f32[N, 10]");
  EXPECT_EQ(c.resultTypes[1].str(), "f32[?]"); // R is not bound by arguments
  EXPECT_EQ(c.operands[0].type->str(), "f32[N, 64]");
}

TEST_F(SemaTest, CallErrors) {
  EXPECT_FALSE(check(R"(func @g(%x: f32[K], %y: f32[K]) -> f32[K] {
  return %x
}
func @f(%a: f32[3], %b: f32[4], %i: i32[3]) -> f32[3] {
  %r = call @g(%a)
  %s = call @g(%a, %b)
  %t = call @g(%a, %i)
  %u = call @nope(%a)
  %v = call @g(%a, %a) {axis = 0}
  %w = call @g(%a, %a) : f32[4]
  return %a
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:5:8: error: call of @g with 1 argument, but @g takes 2 "
            "parameters\n"
            "t.kir:6:20: error: argument 2 of the call of @g has type f32[4], "
            "but the parameter %y has type f32[K] (symbolic dim K would be "
            "both 3 and 4)\n"
            "t.kir:1:21: note: parameter %y of @g declared here with type "
            "f32[K]\n"
            "t.kir:7:20: error: argument 2 of the call of @g has type i32[3], "
            "but the parameter %y has type f32[K]\n"
            "t.kir:1:21: note: parameter %y of @g declared here with type "
            "f32[K]\n"
            "t.kir:8:8: error: call of undefined function @nope\n"
            "t.kir:9:25: error: unknown attribute 'axis' for 'call' (it takes "
            "no attributes)\n"
            "t.kir:10:26: error: 'call' result type f32[3] does not match the "
            "annotation f32[4]\n");
}

TEST_F(SemaTest, RecursionIsAnError) {
  EXPECT_FALSE(check(R"(func @a(%x: f32) -> f32 {
  %y = call @b(%x)
  return %y
}
func @b(%x: f32) -> f32 {
  %y = call @a(%x)
  return %y
}
func @c(%x: f32) -> f32 {
  %y = call @c(%x)
  return %y
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:2:8: error: recursive call: @b calls @a back; recursion is "
            "not allowed (version 0 has no control flow, so it could not "
            "end)\n"
            "t.kir:6:8: error: recursive call: @a calls @b back; recursion is "
            "not allowed (version 0 has no control flow, so it could not "
            "end)\n"
            "t.kir:10:8: error: @c calls itself; recursion is not allowed "
            "(version 0 has no control flow, so it could not end)\n");
}

// --- Functions
// --------------------------------------------------------------------

TEST_F(SemaTest, FunctionNamesAndRuntimeCollisions) {
  EXPECT_FALSE(check(R"(func @f(%x: f32) -> f32 {
  return %x
}
func @f(%x: f32) -> f32 {
  return %x
}
func @status_name(%x: f32) -> f32 {
  return %x
}
func @runtime_free(%x: f32) -> f32 {
  return %x
}
func @runtime_gpu_alloc_unranked(%x: f32) -> f32 {
  return %x
}
func @rt_helper(%x: f32) -> f32 {
  return %x
}
private func @last_error(%x: f32) -> f32 {
  return %x
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:4:6: error: redefinition of function @f\n"
            "t.kir:1:6: note: previous definition of @f is here\n"
            "t.kir:7:6: error: function name @status_name collides with the "
            "runtime: its symbol 'kina_status_name' is a runtime C symbol or "
            "uses a reserved prefix (kina_rt_, runtime_, __kina_)\n"
            "t.kir:10:6: error: function name @runtime_free collides with the "
            "runtime: its symbol 'runtime_free' is a runtime C symbol or uses "
            "a reserved prefix (kina_rt_, runtime_, __kina_)\n"
            "t.kir:13:6: error: function name @runtime_gpu_alloc_unranked "
            "collides with the runtime: its symbol "
            "'runtime_gpu_alloc_unranked' is a runtime C symbol or uses a "
            "reserved prefix (kina_rt_, runtime_, __kina_)\n"
            "t.kir:16:6: error: function name @rt_helper collides with the "
            "runtime: its symbol 'kina_rt_helper' is a runtime C symbol or "
            "uses a reserved prefix (kina_rt_, runtime_, __kina_)\n");
  EXPECT_TRUE(collidesWithRuntimeSymbol("last_error"));
  EXPECT_TRUE(collidesWithRuntimeSymbol("runtime_live_bytes"));
  EXPECT_TRUE(collidesWithRuntimeSymbol("kina_rt_x"));
  EXPECT_TRUE(collidesWithRuntimeSymbol("runtime_host_alloc_unranked"));
  EXPECT_FALSE(collidesWithRuntimeSymbol("forward"));
  EXPECT_FALSE(collidesWithRuntimeSymbol("my_runtime_free"));
}

TEST_F(SemaTest, EntrySymbolsOfTwoFunctionsCollide) {
  EXPECT_FALSE(check(R"(func @f(%x: f32) -> f32 {
  return %x
}
func @kina_f(%x: f32) -> f32 {
  return %x
}
private func @_mlir_ciface_g(%x: f32) -> f32 {
  return %x
}
func @g(%x: f32) -> f32 {
  return %x
}
private func @kina_h(%x: f32) -> f32 {
  return %x
}
private func @h(%x: f32) -> f32 {
  return %x
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:4:6: error: function @kina_f and function @f would both "
            "define the C symbol 'kina_f'\n"
            "t.kir:1:6: note: @f is here\n"
            "t.kir:10:6: error: function @g and function @_mlir_ciface_g would "
            "both define the C symbol '_mlir_ciface_g'\n"
            "t.kir:7:14: note: @_mlir_ciface_g is here\n");
}

TEST_F(SemaTest, EveryOperandAndResultIsTyped) {
  std::optional<Module> m = check(R"(
private func @two(%x: f32[N], %s: f32) -> (f32[N], f32[]) {
  return %x, %s
}
func @f(%x: f32[N, 4], %i: i64[3], %c: i1[N, 4]) -> f32[N, 4] {
  %a = add %x, 1
  %b = select %c, 0.0, %a
  %d = select true, %a, %b
  %e = gather %x, -1 {axis = 1}
  %g = gather %x, %i
  %k = constant 2 : f16[3]
  %l = constant dense<[1, 2, 3]> : i8[3]
  %y, %z = call @two(%e, 0.5)
  %n = concat %x, %x {axis = 1}
  return %b
}
)");
  ASSERT_TRUE(m) << allDiags();
  for (const Function &f : m->functions) {
    for (const Statement &st : f.body) {
      EXPECT_EQ(st.resultTypes.size(), st.results.size()) << st.op;
      EXPECT_EQ(st.inferredTypes.size(), st.results.size()) << st.op;
      for (const Operand &o : st.operands)
        EXPECT_TRUE(o.type.has_value()) << st.op;
    }
    for (const Operand &o : f.returns)
      EXPECT_TRUE(o.type.has_value());
  }
  const auto &b = m->functions[1].body;
  EXPECT_EQ(b[1].operands[1].type->str(), "f32[]");
  EXPECT_EQ(b[2].operands[0].type->str(), "i1[]");
  EXPECT_EQ(b[3].operands[1].type->str(), "i64[]");
  EXPECT_EQ(b[3].resultTypes[0].str(), "f32[N]");
  EXPECT_EQ(b[4].resultTypes[0].str(), "f32[3, 4]");
  EXPECT_EQ(b[5].operands[0].type->str(), "f16[]");
  EXPECT_EQ(b[6].operands[0].type->str(), "i8[3]");
  EXPECT_EQ(b[7].operands[1].type->str(), "f32[]");
  EXPECT_EQ(b[7].resultTypes[0].str(), "f32[N]");
}

TEST_F(SemaTest, ExportedNamesAreCIdentifiers) {
  EXPECT_FALSE(check(R"(private func @helper.v2(%x: f32) -> f32 {
  return %x
}
func @my.fn(%x: f32) -> f32 {
  %y = call @helper.v2(%x)
  return %y
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:4:6: error: exported function @my.fn needs a name that is "
            "a C identifier (letters, digits and '_'), since its entry point "
            "is 'kina_my.fn'; make it private or rename it\n");
}

TEST_F(SemaTest, RankAboveMaximumFromInference) {
  EXPECT_EQ(typeOf("%t: f32[2, 2, 2, 2, 2, 2, 2, 2], %i: i64[3, 3]",
                   "%r = gather %t, %i", "%r"),
            "error: 'gather' result f32[3, 3, 2, 2, 2, 2, 2, 2, 2] has rank 9, "
            "above the maximum rank 8");
}

TEST_F(SemaTest, DigitsSampleChecks) {
  std::optional<Module> m = check(R"(module @digits_mlp
func @forward(%x: f32[N, 64], %w1: f32[64, 32], %b1: f32[32],
              %w2: f32[32, 10], %b2: f32[10]) -> f32[N, 10] {
  %h  = matmul %x, %w1
  %h1 = add %h, %b1
  %a  = relu %h1
  %l  = matmul %a, %w2 : f32[N, 10]
  %l1 = add %l, %b2
  %p  = softmax %l1 {axis = -1}
  return %p
}
)");
  ASSERT_TRUE(m) << allDiags();
  std::vector<std::string> types;
  for (const Statement &st : m->functions[0].body)
    types.push_back(st.resultTypes[0].str());
  EXPECT_EQ(types, (std::vector<std::string>{"f32[N, 32]", "f32[N, 32]",
                                             "f32[N, 32]", "f32[N, 10]",
                                             "f32[N, 10]", "f32[N, 10]"}));
  EXPECT_EQ(m->functions[0].returns[0].type->str(), "f32[N, 10]");
}

} // namespace
} // namespace kina::test
