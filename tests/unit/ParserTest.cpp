//===- ParserTest.cpp - Unit tests of the Kina IR parser ------------------===//
//
// Every statement form of the grammar (spec "Module and functions") and the
// AST it builds, and the syntax errors: exact `file:line:col` and message,
// several independent errors in one run, and the empty-file rule.
//
//===----------------------------------------------------------------------===//
#include "FrontendTestUtil.h"

#include "mlir/IR/Location.h"

namespace kina::test {
namespace {

std::string locStr(mlir::Location loc) {
  auto f = llvm::cast<mlir::FileLineColLoc>(loc);
  return std::to_string(f.getLine()) + ":" + std::to_string(f.getColumn());
}

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

using ParserTest = FrontendTest;

TEST_F(ParserTest, SpecExample) {
  std::optional<Module> m = parse(kSpecExample);
  ASSERT_TRUE(m) << allDiags();
  EXPECT_EQ(m->name, "digits_mlp");
  EXPECT_TRUE(m->nameWasWritten);
  ASSERT_EQ(m->functions.size(), 1u);
  const Function &f = m->functions[0];
  EXPECT_EQ(f.name, "forward");
  EXPECT_FALSE(f.isPrivate);
  EXPECT_EQ(locStr(f.loc), "3:6");
  ASSERT_EQ(f.params.size(), 5u);
  EXPECT_EQ(f.params[0].name, "x");
  EXPECT_EQ(f.params[0].type.str(), "f32[N, 64]");
  EXPECT_EQ(f.params[0].type.dims[0].kind, Dim::Symbolic);
  EXPECT_EQ(locStr(f.params[3].loc), "4:15");
  ASSERT_EQ(f.results.size(), 1u);
  EXPECT_EQ(f.results[0].str(), "f32[N, 10]");
  ASSERT_EQ(f.body.size(), 6u);
  const Statement &mm = f.body[0];
  EXPECT_EQ(mm.results, std::vector<std::string>{"h"});
  EXPECT_EQ(mm.op, "matmul");
  EXPECT_EQ(locStr(mm.loc), "5:3");
  EXPECT_EQ(locStr(mm.opLoc), "5:9");
  ASSERT_EQ(mm.operands.size(), 2u);
  EXPECT_EQ(mm.operands[1].name, "w1");
  EXPECT_EQ(locStr(mm.operands[1].loc), "5:20");
  EXPECT_FALSE(mm.annotation);
  ASSERT_TRUE(f.body[3].annotation);
  EXPECT_EQ((*f.body[3].annotation)[0].str(), "f32[N, 10]");
  EXPECT_EQ(locStr(f.body[3].annotationLoc), "8:26");
  const Attribute *axis = f.body[5].attr("axis");
  ASSERT_TRUE(axis);
  EXPECT_EQ(axis->value.kind, AttrValue::Int);
  EXPECT_EQ(axis->value.intValue, -1);
  EXPECT_EQ(locStr(axis->loc), "10:22");
  ASSERT_EQ(f.returns.size(), 1u);
  EXPECT_EQ(f.returns[0].name, "p");
  EXPECT_EQ(locStr(f.returnLoc), "11:3");
}

TEST_F(ParserTest, DefaultModuleNameIsTheFileStem) {
  std::optional<Module> m =
      parse("func @f(%x: f32) -> f32 {\n  return %x\n}\n", "dir/my-model.kir");
  ASSERT_TRUE(m) << allDiags();
  EXPECT_EQ(m->name, "my_model");
  EXPECT_FALSE(m->nameWasWritten);
  EXPECT_EQ(m->filename, "dir/my-model.kir");
  std::optional<Module> m2 =
      parse("func @f(%x: f32) -> f32 {\n  return %x\n}\n", "3d.kir");
  ASSERT_TRUE(m2);
  EXPECT_EQ(m2->name, "_3d");
}

TEST_F(ParserTest, PrivateFunctionsCallsAndMultipleResults) {
  std::optional<Module> m = parse(R"(
private func @two(%a: f32[N], %b: i64[]) -> (f32[N], i64[]) {
  return %a, %b
}
func @main(%x: f32[N], %i: i64) -> f32[N] {
  %y, %j = call @two(%x,
                     %i) : (f32[N], i64[])
  %z = call @two(%x, 3)
  %e = call @none()
  return %y
}
)");
  ASSERT_TRUE(m) << allDiags();
  ASSERT_EQ(m->functions.size(), 2u);
  const Function &two = m->functions[0];
  EXPECT_TRUE(two.isPrivate);
  ASSERT_EQ(two.results.size(), 2u);
  EXPECT_EQ(two.results[1].str(), "i64[]");
  EXPECT_EQ(two.params[1].type.rank(), 0);
  EXPECT_EQ(two.returns.size(), 2u);
  const Function &main = m->functions[1];
  EXPECT_EQ(main.params[1].type.str(), "i64[]");
  const Statement &c = main.body[0];
  EXPECT_EQ(c.results, (std::vector<std::string>{"y", "j"}));
  EXPECT_EQ(c.op, "call");
  EXPECT_EQ(c.callee, "two");
  ASSERT_EQ(c.operands.size(), 2u);
  EXPECT_EQ(locStr(c.operands[1].loc), "7:22");
  ASSERT_TRUE(c.annotation);
  EXPECT_EQ(c.annotation->size(), 2u);
  EXPECT_EQ(main.body[1].operands[1].kind, Operand::IntLiteral);
  EXPECT_EQ(main.body[2].operands.size(), 0u);
}

TEST_F(ParserTest, ConstantsIotaAndLiterals) {
  std::optional<Module> m = parse(R"(
func @f(%x: f32[4]) -> f32[4] {
  %a = constant 0.5 : f32
  %b = constant 0.0 : f32[4, 4]
  %c = constant dense<[[1, 2], [3, 4]]> : i32[2, 2]
  %d = constant dense<[true, false]> : i1[2]
  %e = constant dense<-2e-3> : f64[3]
  %i = iota {axis = 0} : i64[8]
  %m = mul %x, -2
  %n = ge %x, -inf
  %s = select true, %x, nan
  return %x
}
)");
  ASSERT_TRUE(m) << allDiags();
  const auto &b = m->functions[0].body;
  EXPECT_EQ(b[0].operands[0].kind, Operand::FloatLiteral);
  EXPECT_EQ(b[0].operands[0].floatValue, 0.5);
  const Operand &dense = b[2].operands[0];
  ASSERT_EQ(dense.kind, Operand::Dense);
  ASSERT_TRUE(dense.dense);
  EXPECT_TRUE(dense.dense->isList);
  ASSERT_EQ(dense.dense->elements.size(), 2u);
  EXPECT_EQ(dense.dense->elements[1].elements[0].intValue, 3);
  EXPECT_TRUE(dense.dense->elements[1].elements[0].isInteger);
  EXPECT_TRUE(b[3].operands[0].dense->elements[0].isBool);
  EXPECT_FALSE(b[4].operands[0].dense->isList);
  EXPECT_EQ(b[4].operands[0].dense->floatValue, -2e-3);
  EXPECT_TRUE(b[5].operands.empty());
  EXPECT_EQ(b[5].attr("axis")->value.intValue, 0);
  EXPECT_EQ(b[6].operands[1].kind, Operand::IntLiteral);
  EXPECT_EQ(b[6].operands[1].intValue, -2);
  EXPECT_EQ(b[6].operands[1].floatValue, -2.0);
  EXPECT_EQ(b[8].operands[0].kind, Operand::BoolLiteral);
  EXPECT_EQ(b[8].operands[0].intValue, 1);
}

TEST_F(ParserTest, AttributeValueKinds) {
  std::optional<Module> m = parse(R"(
func @f(%x: f32[N, 4]) -> f32[N, 4] {
  %a = foo %x {i = 3, f = 1e-5, b = true, s = "tanh", t = bf16,
               sym = N, l = [N, 8, -1], n = [[1], []]}
  return %x
}
)");
  ASSERT_TRUE(m) << allDiags();
  const Statement &s = m->functions[0].body[0];
  EXPECT_EQ(s.attrs.size(), 8u);
  EXPECT_EQ(s.attr("i")->value.kind, AttrValue::Int);
  EXPECT_EQ(s.attr("i")->value.floatValue, 3.0);
  EXPECT_EQ(s.attr("f")->value.kind, AttrValue::Float);
  EXPECT_EQ(s.attr("f")->value.floatValue, 1e-5);
  EXPECT_EQ(s.attr("b")->value.kind, AttrValue::Bool);
  EXPECT_TRUE(s.attr("b")->value.boolValue);
  EXPECT_EQ(s.attr("s")->value.kind, AttrValue::String);
  EXPECT_EQ(s.attr("s")->value.stringValue, "tanh");
  EXPECT_EQ(s.attr("t")->value.kind, AttrValue::Type);
  EXPECT_EQ(s.attr("t")->value.typeValue, ElementType::BF16);
  EXPECT_EQ(s.attr("sym")->value.kind, AttrValue::Symbol);
  const AttrValue &l = s.attr("l")->value;
  ASSERT_EQ(l.kind, AttrValue::List);
  ASSERT_EQ(l.elements.size(), 3u);
  EXPECT_EQ(l.elements[0].kind, AttrValue::Symbol);
  EXPECT_EQ(l.elements[2].intValue, -1);
  EXPECT_EQ(s.attr("n")->value.elements[1].elements.size(), 0u);
  EXPECT_EQ(s.attr("zz"), nullptr);
}

TEST_F(ParserTest, NestedExpressionIsASyntaxError) {
  EXPECT_FALSE(parse(R"(func @f(%a: f32[2, 2], %b: f32[2, 2]) -> f32[2, 2] {
  %l = add (matmul %a, %b), %b
  return %l
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:2:12: error: expected an operand (a %value or a literal) "
            "for 'add', found '('; nested expressions are not allowed: bind "
            "the inner operation to a %value first\n");
}

TEST_F(ParserTest, TensorTypeError) {
  EXPECT_FALSE(parse("func @f(%x: f32[4 foo]) -> f32 {\n  return %x\n}\n"));
  EXPECT_EQ(allDiags(), "t.kir:1:19: error: expected ',' or ']' in tensor "
                        "type, found 'foo'\n");
}

TEST_F(ParserTest, SeveralIndependentErrorsInOneRun) {
  EXPECT_FALSE(parse(R"(func @f(%x: f32[4]) -> f32[4] {
  %a = add %x %x
  %b = relu %x : f32[4
  %c relu %x
  %d = exp %x {axis 1}
  return %x
}

func @g(%x: f33) -> f32 {
  %y = neg %x
  return %y,
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:2:15: error: expected end of line after the statement, "
            "found '%x'\n"
            "t.kir:3:23: error: expected ',' or ']' in tensor type, found "
            "end of line\n"
            "t.kir:4:6: error: expected '=' or ',' after the result names, "
            "found 'relu'\n"
            "t.kir:5:21: error: expected '=' after attribute 'axis', found "
            "'1'\n"
            "t.kir:9:13: error: unknown element type 'f33' in the parameter "
            "type; did you mean 'f32'?\n"
            "t.kir:11:13: error: expected a %value in 'return', found end of "
            "line\n");
}

TEST_F(ParserTest, LineBreaks) {
  // Calls, attributes and dense literals may span lines.
  std::optional<Module> m =
      parse(R"(func @f(%x: f32[4], %w: f32[4, 4]) -> f32[4] {
  %c = constant dense<[[1.0, 2.0],
                       [3.0, 4.0]]> : f32[2, 2]
  %s = slice %x {start = [0],
                 stop = [2]}
  %y = call @g(%x,
               %w)
  return %y
}
)");
  ASSERT_TRUE(m) << allDiags();
  EXPECT_EQ(m->functions[0].body.size(), 3u);
  // Elsewhere a line break ends the statement: the error points just after
  // the last token and says "found end of line".
  EXPECT_FALSE(parse(R"(func @f(%x: f32[4]) -> f32[4] {
  %m = relu %x,
  %n = add %x
    %x
  %t = relu %x : f32[
  %u =
    relu %x
  return %x
}
)"));
  EXPECT_EQ(allDiags(),
            "t.kir:2:16: error: expected an operand (a %value or a literal) "
            "after ',', found end of line\n"
            "t.kir:4:7: error: expected '=' or ',' after the result names, "
            "found end of line\n"
            "t.kir:5:22: error: expected a dim (a size, '?' or a name) in "
            "tensor type, found end of line\n"
            "t.kir:6:7: error: expected an operation name after '=', found "
            "end of line\n");
}

TEST_F(ParserTest, EmptyFileNeedsAFunction) {
  EXPECT_FALSE(parse(""));
  EXPECT_EQ(allDiags(), "t.kir:1:1: error: expected at least one function "
                        "('func @name(...) -> type { ... }')\n");
  diags.clear();
  EXPECT_FALSE(parse("# only a comment\nmodule @m\n"));
  EXPECT_EQ(allDiags(), "t.kir:1:1: error: expected at least one function "
                        "('func @name(...) -> type { ... }')\n");
}

TEST_F(ParserTest, MissingReturnAndBrace) {
  EXPECT_FALSE(parse("func @f(%x: f32) -> f32 {\n  %y = neg %x\n}\n"
                     "func @g(%x: f32) -> f32 {\n  return %x\n"));
  EXPECT_EQ(allDiags(),
            "t.kir:3:1: error: missing 'return' at the end of @f\n"
            "t.kir:6:1: error: expected '}' to end the body of @g, found end "
            "of file\n");
}

TEST_F(ParserTest, StatementAfterReturn) {
  EXPECT_FALSE(parse("func @f(%x: f32) -> f32 {\n  return %x\n  %y = neg "
                     "%x\n}\nfunc @g(%x: f32) -> f32 {\n  return %x\n}\n"));
  EXPECT_EQ(allDiags(),
            "t.kir:3:3: error: expected '}' after 'return' (it must be the "
            "last statement of @f), found '%y'\n");
}

TEST_F(ParserTest, DuplicateAttributeHasANote) {
  EXPECT_FALSE(parse("func @f(%x: f32[4]) -> f32[4] {\n  %y = softmax %x "
                     "{axis = 0, axis = -1}\n  return %y\n}\n"));
  EXPECT_EQ(allDiags(), "t.kir:2:30: error: duplicate attribute 'axis'\n"
                        "t.kir:2:20: note: previous value of 'axis' is here\n");
}

TEST_F(ParserTest, RankAboveTheMaximum) {
  EXPECT_FALSE(parse("func @f(%x: f32[1, 2, 3, 4, 5, 6, 7, 8, 9]) -> f32 {\n"
                     "  return %x\n}\n"));
  EXPECT_EQ(allDiags(), "t.kir:1:13: error: tensor type f32[1, 2, 3, 4, 5, 6, "
                        "7, 8, 9] has rank 9, above the maximum rank 8\n");
}

TEST_F(ParserTest, ReservedWordsAndNegativeDims) {
  EXPECT_FALSE(parse("func @f(%x: f32[i32], %y: f32[-2]) -> f32 {\n"
                     "  return %x\n}\n"));
  EXPECT_EQ(allDiags(),
            "t.kir:1:17: error: 'i32' is a reserved word and cannot name a "
            "dim\n");
}

TEST_F(ParserTest, ResultsAreRequired) {
  EXPECT_FALSE(parse("func @f(%x: f32) {\n  return %x\n}\n"
                     "func @g(%x: f32) -> () {\n  return %x\n}\n"));
  EXPECT_EQ(allDiags(),
            "t.kir:1:18: error: expected '->' and the result types, found "
            "'{'\n"
            "t.kir:4:22: error: expected at least one result type, found "
            "')'\n");
}

TEST_F(ParserTest, TopLevelGarbage) {
  EXPECT_FALSE(parse("module @m\nfoo bar\nfunc @f(%x: f32) -> f32 {\n"
                     "  return %x\n}\nmodule @n\n"));
  EXPECT_EQ(allDiags(),
            "t.kir:2:1: error: expected 'func' or 'private func', found "
            "'foo'\n"
            "t.kir:6:1: error: 'module' must be the first line of the file\n");
}

TEST_F(ParserTest, LexicalErrorIsNotReportedTwice) {
  EXPECT_FALSE(parse("func @f(%x: f32) -> f32 {\n  %y = neg \x01\n"
                     "  return %x\n}\n"));
  EXPECT_EQ(allDiags(), "t.kir:2:12: error: unexpected character U+0001\n");
}

TEST_F(ParserTest, ErrorCountIsCapped) {
  std::string src = "func @f(%x: f32) -> f32 {\n";
  for (int i = 0; i < 40; ++i)
    src += "  %y" + std::to_string(i) + " = neg %x %x\n";
  src += "  return %x\n}\n";
  EXPECT_FALSE(parse(src));
  EXPECT_EQ(errorCount(), 20u);
  EXPECT_NE(allDiags().find("note: too many errors; stopping here"),
            std::string::npos);
}

} // namespace
} // namespace kina::test
