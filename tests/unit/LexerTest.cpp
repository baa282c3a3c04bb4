//===- LexerTest.cpp - Unit tests of the Kina IR lexer --------------------===//
//
// Token kinds, spellings, values and exact 1-based line/byte-column
// positions; comments; numbers (spec "Lexical"); and the located errors for
// bytes that are not UTF-8, control characters and malformed literals,
// including the cap on errors for binary input.
//
//===----------------------------------------------------------------------===//
#include "Lexer.h"
#include "FrontendTestUtil.h"

#include <cmath>

namespace kina::test {
namespace {

class LexerTest : public FrontendTest {
protected:
  std::vector<Token> lexAll(const std::string &src) {
    source = src;
    Lexer lex(source, "t.kir", ctx);
    std::vector<Token> toks;
    while (true) {
      toks.push_back(lex.next());
      if (toks.back().is(TokenKind::Eof))
        break;
    }
    return toks;
  }
  std::string source; // must outlive the tokens' lexer
};

TEST_F(LexerTest, StatementTokensAndColumns) {
  auto t = lexAll("  %h1 = add %h, %b1 {axis = -1} : f32[N, 10]");
  ASSERT_EQ(t.size(), 19u);
  EXPECT_TRUE(t[0].is(TokenKind::ValueName));
  EXPECT_EQ(t[0].value, "h1");
  EXPECT_EQ(t[0].spelling, "%h1");
  EXPECT_EQ(t[0].line, 1u);
  EXPECT_EQ(t[0].col, 3u);
  EXPECT_TRUE(t[0].startsLine);
  EXPECT_TRUE(t[1].is(TokenKind::Equal));
  EXPECT_EQ(t[1].col, 7u);
  EXPECT_FALSE(t[1].startsLine);
  EXPECT_TRUE(t[2].isKeyword("add"));
  EXPECT_EQ(t[2].col, 9u);
  EXPECT_TRUE(t[4].is(TokenKind::Comma));
  EXPECT_TRUE(t[6].is(TokenKind::LBrace));
  EXPECT_EQ(t[6].col, 21u);
  EXPECT_TRUE(t[9].is(TokenKind::Integer));
  EXPECT_EQ(t[9].intValue, -1);
  EXPECT_EQ(t[9].col, 29u);
  EXPECT_TRUE(t[10].is(TokenKind::RBrace));
  EXPECT_TRUE(t[11].is(TokenKind::Colon));
  EXPECT_TRUE(t[12].isKeyword("f32"));
  EXPECT_TRUE(t[13].is(TokenKind::LBracket));
  EXPECT_TRUE(t[14].isKeyword("N"));
  EXPECT_TRUE(t[16].is(TokenKind::Integer));
  EXPECT_EQ(t[16].intValue, 10);
  EXPECT_TRUE(t[17].is(TokenKind::RBracket));
  EXPECT_EQ(t[17].col, 44u);
  EXPECT_TRUE(t[18].is(TokenKind::Eof));
  EXPECT_EQ(errorCount(), 0u);
}

TEST_F(LexerTest, PunctuationAndNames) {
  auto t = lexAll("func @f.x_1(%0: f32[?]) -> (i64[]) ? < > dense");
  std::vector<TokenKind> kinds;
  for (auto &k : t)
    kinds.push_back(k.kind);
  std::vector<TokenKind> want = {
      TokenKind::Identifier, TokenKind::FunctionName, TokenKind::LParen,
      TokenKind::ValueName,  TokenKind::Colon,        TokenKind::Identifier,
      TokenKind::LBracket,   TokenKind::Question,     TokenKind::RBracket,
      TokenKind::RParen,     TokenKind::Arrow,        TokenKind::LParen,
      TokenKind::Identifier, TokenKind::LBracket,     TokenKind::RBracket,
      TokenKind::RParen,     TokenKind::Question,     TokenKind::Less,
      TokenKind::Greater,    TokenKind::Identifier,   TokenKind::Eof};
  EXPECT_EQ(kinds, want);
  EXPECT_EQ(t[1].value, "f.x_1");
  EXPECT_EQ(t[3].value, "0");
}

TEST_F(LexerTest, Numbers) {
  auto t = lexAll("42 -3 1.5 -2e-3 inf -inf nan 1e5 2. 0 -0.0 1E+2");
  ASSERT_EQ(t.size(), 13u);
  EXPECT_TRUE(t[0].is(TokenKind::Integer));
  EXPECT_EQ(t[0].intValue, 42);
  EXPECT_TRUE(t[1].is(TokenKind::Integer));
  EXPECT_EQ(t[1].intValue, -3);
  EXPECT_TRUE(t[2].is(TokenKind::Float));
  EXPECT_EQ(t[2].floatValue, 1.5);
  EXPECT_TRUE(t[3].is(TokenKind::Float));
  EXPECT_EQ(t[3].floatValue, -2e-3);
  EXPECT_TRUE(t[4].is(TokenKind::Float));
  EXPECT_TRUE(std::isinf(t[4].floatValue) && t[4].floatValue > 0);
  EXPECT_TRUE(t[5].is(TokenKind::Float));
  EXPECT_TRUE(std::isinf(t[5].floatValue) && t[5].floatValue < 0);
  EXPECT_EQ(t[5].col, 21u);
  EXPECT_TRUE(t[6].is(TokenKind::Float));
  EXPECT_TRUE(std::isnan(t[6].floatValue));
  EXPECT_EQ(t[7].floatValue, 1e5);
  EXPECT_TRUE(t[8].is(TokenKind::Float));
  EXPECT_EQ(t[8].floatValue, 2.0);
  EXPECT_TRUE(t[9].is(TokenKind::Integer));
  EXPECT_TRUE(t[10].is(TokenKind::Float));
  EXPECT_TRUE(std::signbit(t[10].floatValue));
  EXPECT_EQ(t[11].floatValue, 100.0);
  EXPECT_EQ(errorCount(), 0u);
}

TEST_F(LexerTest, CommentsAndLines) {
  auto t = lexAll("# comment é ü\n  %a // more\n\n\t%b # x\n//last");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].value, "a");
  EXPECT_EQ(t[0].line, 2u);
  EXPECT_EQ(t[0].col, 3u);
  EXPECT_TRUE(t[0].startsLine);
  EXPECT_EQ(t[1].value, "b");
  EXPECT_EQ(t[1].line, 4u);
  EXPECT_EQ(t[1].col, 2u); // a tab is one byte
  EXPECT_TRUE(t[1].startsLine);
  EXPECT_EQ(t[2].line, 5u);
  EXPECT_EQ(errorCount(), 0u);
}

TEST_F(LexerTest, Strings) {
  auto t = lexAll(R"("tanh" "a\"b\\c\n" "é")");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_TRUE(t[0].is(TokenKind::String));
  EXPECT_EQ(t[0].value, "tanh");
  EXPECT_EQ(t[1].value, "a\"b\\c\n");
  EXPECT_EQ(t[2].value, "é");
  EXPECT_EQ(errorCount(), 0u);
}

TEST_F(LexerTest, UnterminatedString) {
  lexAll("x \"abc\ny");
  EXPECT_EQ(allDiags(), "t.kir:1:3: error: unterminated string\n");
}

TEST_F(LexerTest, InvalidUtf8IsLocated) {
  auto t = lexAll("%a\n  \xff\xfe %b");
  EXPECT_EQ(allDiags(), "t.kir:2:3: error: invalid UTF-8 (byte 0xFF)\n");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_TRUE(t[1].is(TokenKind::Error));
  EXPECT_EQ(t[2].value, "b"); // lexing goes on after the bad run
  EXPECT_EQ(t[2].col, 6u);
}

TEST_F(LexerTest, InvalidUtf8InCommentAndString) {
  lexAll("# bad \xc3\x28 here\n\"\xe2\x82\" # overlong: \xc0\xaf\n");
  EXPECT_EQ(allDiags(), "t.kir:1:7: error: invalid UTF-8 (byte 0xC3)\n"
                        "t.kir:2:2: error: invalid UTF-8 (byte 0xE2)\n"
                        "t.kir:2:18: error: invalid UTF-8 (byte 0xC0)\n");
}

TEST_F(LexerTest, ControlAndNonAsciiCharacters) {
  lexAll(std::string("%a \0 %b\n", 8) + "%c é $");
  EXPECT_EQ(allDiags(), "t.kir:1:4: error: unexpected character U+0000\n"
                        "t.kir:2:4: error: unexpected character U+00E9\n"
                        "t.kir:2:7: error: unexpected character '$'\n");
}

TEST_F(LexerTest, ByteOrderMarkAndCrLf) {
  auto t = lexAll("\xEF\xBB\xBF%a\r\n%b # c\r\n");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].value, "a");
  EXPECT_EQ(t[0].col, 4u);
  EXPECT_TRUE(t[0].startsLine);
  EXPECT_EQ(t[1].value, "b");
  EXPECT_EQ(t[1].line, 2u);
  EXPECT_EQ(errorCount(), 0u);
  lexAll("%a \xEF\xBB\xBF");
  EXPECT_EQ(allDiags(), "t.kir:1:4: error: unexpected character U+FEFF\n");
}

TEST_F(LexerTest, BinaryInputStopsAfterAFewErrors) {
  std::string bin;
  for (int i = 0; i < 4000; ++i)
    bin += static_cast<char>((i * 7919 + 13) % 256);
  auto t = lexAll(bin);
  EXPECT_EQ(errorCount(), Lexer::kMaxErrors);
  EXPECT_TRUE(t.back().is(TokenKind::Eof));
  EXPECT_NE(allDiags().find("note: too many errors"), std::string::npos)
      << allDiags();
}

TEST_F(LexerTest, MalformedLiterals) {
  lexAll("8x8 99999999999999999999 1e999 % @1 - /");
  EXPECT_EQ(allDiags(),
            "t.kir:1:1: error: invalid number literal '8x8'\n"
            "t.kir:1:5: error: integer literal '99999999999999999999' does "
            "not fit in 64 bits\n"
            "t.kir:1:26: error: float literal '1e999' is out of range (use "
            "inf or -inf for infinities)\n"
            "t.kir:1:32: error: expected a value name after '%'\n"
            "t.kir:1:34: error: expected a function name after '@'\n"
            "t.kir:1:34: note: too many errors in the input; the rest of the "
            "file is not read\n");
  // The lexer stopped after kMaxErrors (5) errors: '- /' was not read.
  EXPECT_EQ(errorCount(), 5u);
}

TEST_F(LexerTest, DescribeToken) {
  auto t = lexAll("foo \"s\"");
  EXPECT_EQ(describeToken(t[0]), "'foo'");
  EXPECT_EQ(describeToken(t[1]), "string \"s\"");
  EXPECT_EQ(describeToken(t[2]), "end of file");
}

} // namespace
} // namespace kina::test
