//===- Lexer.cpp - Tokens of Kina IR --------------------------------------===//
//
// Implements Lexer.h: a hand-written scanner over the bytes of a `.kir` file
// (spec "Lexical"). Columns count bytes, so a multi-byte UTF-8 character in a
// comment advances the column by its length, as clang does. Every lexical
// error goes through `mlir::emitError` at a FileLineColLoc.
//
//===----------------------------------------------------------------------===//
#include "Lexer.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace kina {

namespace {
bool isIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c) || c == '.'; }
bool isControl(unsigned char c) {
  return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f;
}
} // namespace

std::string describeToken(const Token &tok) {
  switch (tok.kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::Error:
    return "invalid input";
  case TokenKind::String:
    return "string " + tok.spelling;
  default:
    return "'" + tok.spelling + "'";
  }
}

Lexer::Lexer(llvm::StringRef source, llvm::StringRef filename,
             mlir::MLIRContext &ctx)
    : src(source), filename(filename.str()), ctx(ctx) {
  // A UTF-8 byte order mark is not part of the text (columns still count
  // its bytes, as they count every byte).
  if (src.starts_with("\xEF\xBB\xBF"))
    advance(3);
}

mlir::Location Lexer::getLoc(unsigned l, unsigned c) const {
  return mlir::FileLineColLoc::get(&ctx, filename, l, c);
}

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && pos < src.size(); ++i, ++pos) {
    if (src[pos] == '\n') {
      ++line;
      col = 1;
      sawNewline = true;
    } else {
      ++col;
    }
  }
}

size_t Lexer::utf8Length(size_t p, uint32_t *codePoint) const {
  auto byte = [&](size_t i) -> unsigned char {
    return p + i < src.size() ? static_cast<unsigned char>(src[p + i]) : 0;
  };
  unsigned char b0 = byte(0);
  size_t len;
  uint32_t cp;
  if (b0 < 0x80) {
    len = 1;
    cp = b0;
  } else if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0; // continuation byte, overlong lead (C0, C1) or F5..FF
  }
  if (p + len > src.size())
    return 0;
  for (size_t i = 1; i < len; ++i) {
    unsigned char b = byte(i);
    if ((b & 0xC0) != 0x80)
      return 0;
    cp = (cp << 6) | (b & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and code points above U+10FFFF.
  if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
      (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
    return 0;
  if (codePoint)
    *codePoint = cp;
  return len;
}

void Lexer::error(unsigned l, unsigned c, const llvm::Twine &msg) {
  if (stopped)
    return;
  ++numErrors;
  mlir::InFlightDiagnostic diag = mlir::emitError(getLoc(l, c)) << msg;
  if (numErrors >= kMaxErrors) {
    diag.attachNote() << "too many errors in the input; the rest of the file "
                         "is not read";
    stopped = true;
  }
}

void Lexer::reportBadRun() {
  unsigned l = line, c = col;
  unsigned char b = static_cast<unsigned char>(src[pos]);
  uint32_t cp = 0;
  size_t len = utf8Length(pos, &cp);
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (len == 0)
    os << "invalid UTF-8 (byte " << llvm::format("0x%02X", b) << ")";
  else if (len == 1 && !isControl(b))
    os << "unexpected character '" << static_cast<char>(b) << "'";
  else
    os << "unexpected character U+" << llvm::format("%04X", cp);
  // Skip the whole run of undecodable bytes and control characters, so that
  // binary data gives one error per run, not one per byte.
  advance(len ? len : 1);
  while (!atEnd()) {
    unsigned char n = static_cast<unsigned char>(src[pos]);
    if (isControl(n)) {
      advance(1);
      continue;
    }
    if (n >= 0x80 && utf8Length(pos) == 0) {
      advance(1);
      continue;
    }
    break;
  }
  error(l, c, os.str());
}

bool Lexer::consumeTextChar() {
  unsigned char c = static_cast<unsigned char>(src[pos]);
  if (!isControl(c) && c < 0x80) {
    advance(1);
    return true;
  }
  if (c >= 0x80) {
    if (size_t len = utf8Length(pos)) {
      advance(len);
      return true;
    }
  }
  reportBadRun();
  return false;
}

void Lexer::skipSpaceAndComments() {
  while (!atEnd() && !stopped) {
    char c = peekChar();
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      advance(1);
      continue;
    }
    if (c == '#' || (c == '/' && peekChar(1) == '/')) {
      advance(c == '#' ? 1 : 2);
      while (!atEnd() && !stopped && peekChar() != '\n')
        consumeTextChar();
      continue;
    }
    return;
  }
}

Token Lexer::next() {
  if (!stopped)
    skipSpaceAndComments();
  Token tok;
  tok.line = line;
  tok.col = col;
  tok.startsLine = sawNewline;
  if (stopped || atEnd()) {
    tok.kind = TokenKind::Eof;
    return tok;
  }
  sawNewline = false;
  size_t start = pos;
  char c = peekChar();
  auto punct = [&](TokenKind k, size_t n) {
    tok.kind = k;
    advance(n);
    tok.spelling = src.slice(start, pos).str();
    return tok;
  };

  if (isIdentStart(c)) {
    while (!atEnd() && isIdentChar(peekChar()))
      advance(1);
    tok.spelling = src.slice(start, pos).str();
    if (tok.spelling == "inf" || tok.spelling == "nan") {
      tok.kind = TokenKind::Float;
      tok.floatValue = tok.spelling == "inf" ? HUGE_VAL : std::nan("");
      return tok;
    }
    tok.kind = TokenKind::Identifier;
    tok.value = tok.spelling;
    return tok;
  }
  if (c == '%' || c == '@') {
    advance(1);
    size_t nameStart = pos;
    if (c == '%') {
      while (!atEnd() && isIdentChar(peekChar()))
        advance(1);
    } else if (isIdentStart(peekChar())) {
      while (!atEnd() && isIdentChar(peekChar()))
        advance(1);
    }
    tok.spelling = src.slice(start, pos).str();
    if (pos == nameStart) {
      error(tok.line, tok.col,
            c == '%' ? "expected a value name after '%'"
                     : "expected a function name after '@'");
      tok.kind = TokenKind::Error;
      return tok;
    }
    tok.kind = c == '%' ? TokenKind::ValueName : TokenKind::FunctionName;
    tok.value = src.slice(nameStart, pos).str();
    return tok;
  }
  if (isDigit(c) || (c == '-' && isDigit(peekChar(1))))
    return lexNumber(tok);
  if (c == '-') {
    if (peekChar(1) == '>')
      return punct(TokenKind::Arrow, 2);
    if (src.substr(pos + 1).starts_with("inf") && !isIdentChar(peekChar(4))) {
      advance(4);
      tok.kind = TokenKind::Float;
      tok.spelling = "-inf";
      tok.floatValue = -HUGE_VAL;
      return tok;
    }
  }
  if (c == '"')
    return lexString(tok);
  switch (c) {
  case '(':
    return punct(TokenKind::LParen, 1);
  case ')':
    return punct(TokenKind::RParen, 1);
  case '[':
    return punct(TokenKind::LBracket, 1);
  case ']':
    return punct(TokenKind::RBracket, 1);
  case '{':
    return punct(TokenKind::LBrace, 1);
  case '}':
    return punct(TokenKind::RBrace, 1);
  case ',':
    return punct(TokenKind::Comma, 1);
  case ':':
    return punct(TokenKind::Colon, 1);
  case '=':
    return punct(TokenKind::Equal, 1);
  case '?':
    return punct(TokenKind::Question, 1);
  case '<':
    return punct(TokenKind::Less, 1);
  case '>':
    return punct(TokenKind::Greater, 1);
  default:
    break;
  }
  reportBadRun();
  tok.kind = TokenKind::Error;
  tok.spelling = src.slice(start, pos).str();
  return tok;
}

Token Lexer::lexNumber(Token tok) {
  size_t start = pos;
  bool isFloat = false;
  if (peekChar() == '-')
    advance(1);
  while (isDigit(peekChar()))
    advance(1);
  if (peekChar() == '.') {
    isFloat = true;
    advance(1);
    while (isDigit(peekChar()))
      advance(1);
  }
  if ((peekChar() == 'e' || peekChar() == 'E') &&
      (isDigit(peekChar(1)) ||
       ((peekChar(1) == '+' || peekChar(1) == '-') && isDigit(peekChar(2))))) {
    isFloat = true;
    advance(2);
    while (isDigit(peekChar()))
      advance(1);
  }
  bool malformed = false;
  while (!atEnd() && isIdentChar(peekChar())) {
    malformed = true;
    advance(1);
  }
  tok.spelling = src.slice(start, pos).str();
  if (malformed) {
    error(tok.line, tok.col, "invalid number literal '" + tok.spelling + "'");
    tok.kind = TokenKind::Error;
    return tok;
  }
  if (!isFloat) {
    if (llvm::StringRef(tok.spelling).getAsInteger(10, tok.intValue)) {
      error(tok.line, tok.col,
            "integer literal '" + tok.spelling + "' does not fit in 64 bits");
      tok.kind = TokenKind::Error;
      return tok;
    }
    tok.kind = TokenKind::Integer;
    tok.floatValue = static_cast<double>(tok.intValue);
    return tok;
  }
  errno = 0;
  tok.floatValue = std::strtod(tok.spelling.c_str(), nullptr);
  if (std::isinf(tok.floatValue)) {
    error(tok.line, tok.col,
          "float literal '" + tok.spelling +
              "' is out of range (use inf or -inf for infinities)");
    tok.kind = TokenKind::Error;
    return tok;
  }
  tok.kind = TokenKind::Float;
  return tok;
}

Token Lexer::lexString(Token tok) {
  size_t start = pos;
  advance(1); // opening quote
  bool bad = false;
  while (true) {
    if (atEnd() || peekChar() == '\n' || stopped) {
      error(tok.line, tok.col, "unterminated string");
      tok.kind = TokenKind::Error;
      tok.spelling = src.slice(start, pos).str();
      return tok;
    }
    char c = peekChar();
    if (c == '"') {
      advance(1);
      break;
    }
    if (c == '\\') {
      char e = peekChar(1);
      unsigned l = line, cl = col;
      if (e == '\\' || e == '"') {
        tok.value += e;
        advance(2);
      } else if (e == 'n') {
        tok.value += '\n';
        advance(2);
      } else if (e == 't') {
        tok.value += '\t';
        advance(2);
      } else {
        advance(1);
        bad = true;
        error(l, cl,
              "unknown escape sequence in string (allowed: \\\\ \\\" \\n "
              "\\t)");
      }
      continue;
    }
    size_t before = pos;
    if (consumeTextChar())
      tok.value += src.slice(before, pos).str();
    else
      bad = true;
  }
  tok.spelling = src.slice(start, pos).str();
  tok.kind = bad ? TokenKind::Error : TokenKind::String;
  return tok;
}

} // namespace kina
