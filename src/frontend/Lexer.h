//===- Lexer.h - Tokens of Kina IR ----------------------------------------===//
//
// The lexer of the front end (private to src/frontend; the unit tests use it
// too). It turns the bytes of a `.kir` file into tokens with exact 1-based
// line and byte columns, following the spec's "Lexical" section
// (docs/language.md): `#` and `//` comments, identifiers, `%values`,
// `@functions`, integers, floats (`1.5`, `-2e-3`, `inf`, `-inf`, `nan`),
// strings and punctuation. The file must be UTF-8: invalid UTF-8 anywhere,
// control characters (NUL, ...) and non-ASCII characters outside comments
// and strings are located errors. A run of bad bytes gives one error and one
// `Error` token; after `kMaxErrors` lexical errors the lexer gives up and
// returns `Eof` (so a binary file yields a few errors, not thousands).
//
//===----------------------------------------------------------------------===//
#ifndef KINA_FRONTEND_LEXER_H
#define KINA_FRONTEND_LEXER_H

#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace kina {

enum class TokenKind {
  Eof,
  Error,        ///< Bad input; the lexer already reported it.
  Identifier,   ///< `[A-Za-z_][A-Za-z0-9_.]*` (keywords included).
  ValueName,    ///< `%name`; `value` holds the name without '%'.
  FunctionName, ///< `@name`; `value` holds the name without '@'.
  Integer,      ///< `42`, `-3`: `intValue` (and `floatValue`).
  Float,        ///< `1.5`, `-2e-3`, `inf`, `-inf`, `nan`: `floatValue`.
  String,       ///< `"..."`; `value` holds the decoded contents.
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Equal,
  Arrow, ///< `->`
  Question,
  Less,
  Greater,
};

struct Token {
  TokenKind kind = TokenKind::Eof;
  std::string spelling; ///< The exact source text.
  std::string value;    ///< See TokenKind.
  int64_t intValue = 0;
  double floatValue = 0.0;
  unsigned line = 1; ///< 1-based.
  unsigned col = 1;  ///< 1-based, in bytes.
  /// First token of its line (or of the file): the parser ends statements
  /// at line breaks and recovers from errors at the next line.
  bool startsLine = false;

  bool is(TokenKind k) const { return kind == k; }
  bool isKeyword(llvm::StringRef kw) const {
    return kind == TokenKind::Identifier && spelling == kw;
  }
};

/// How a token reads in a message: `'foo'`, `string "x"`, `end of file`.
std::string describeToken(const Token &tok);

class Lexer {
public:
  /// Lexical errors after which the lexer stops reading the input.
  static constexpr unsigned kMaxErrors = 5;

  /// `source` must outlive the lexer; `filename` is used in locations.
  Lexer(llvm::StringRef source, llvm::StringRef filename,
        mlir::MLIRContext &ctx);

  /// The next token; `Eof` at the end (and forever after), or once the lexer
  /// gave up after too many errors.
  Token next();

  /// FileLineColLoc of a position in this file.
  mlir::Location getLoc(unsigned line, unsigned col) const;
  mlir::Location getLoc(const Token &tok) const {
    return getLoc(tok.line, tok.col);
  }
  unsigned getNumErrors() const { return numErrors; }
  /// True once the lexer stopped because of too many errors.
  bool gaveUp() const { return stopped; }

private:
  char peekChar(size_t ahead = 0) const {
    return pos + ahead < src.size() ? src[pos + ahead] : '\0';
  }
  bool atEnd() const { return pos >= src.size(); }
  void advance(size_t n = 1);
  /// Length of a valid UTF-8 sequence at `p` (1 for ASCII), 0 if invalid.
  size_t utf8Length(size_t p, uint32_t *codePoint = nullptr) const;
  /// Checks the byte at `pos` inside a comment or string: advances over a
  /// valid character, or reports a run of bad bytes. False if bad.
  bool consumeTextChar();
  /// Reports the run of bad bytes at `pos` and skips it.
  void reportBadRun();
  void error(unsigned line, unsigned col, const llvm::Twine &msg);
  void skipSpaceAndComments();
  Token lexNumber(Token tok);
  Token lexString(Token tok);

  llvm::StringRef src;
  std::string filename;
  mlir::MLIRContext &ctx;
  size_t pos = 0;
  unsigned line = 1;
  unsigned col = 1;
  bool sawNewline = true; // the first token starts a line
  unsigned numErrors = 0;
  bool stopped = false;
};

} // namespace kina

#endif // KINA_FRONTEND_LEXER_H
