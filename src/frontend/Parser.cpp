//===- Parser.cpp - Kina IR text to the syntax tree -----------------------===//
//
// A recursive-descent parser for the grammar of docs/language.md
// ("Module and functions"), building the AST of AST.h with a FileLineColLoc
// on every node:
//
//   module    ::= ('module' @name)? function+
//   function  ::= 'private'? 'func' @name '(' (param (',' param)*)? ')'
//                 '->' (type | '(' type (',' type)* ')') '{' stmt* return '}'
//   param     ::= %name ':' type
//   type      ::= elemtype ('[' (dim (',' dim)*)? ']')?
//   dim       ::= integer | '?' | identifier
//   stmt      ::= %r (',' %r)* '=' op operands? attrs? (':' types)?
//   op        ::= identifier | 'call' @name '(' operands? ')'
//   operand   ::= %name | integer | float | 'true' | 'false' | dense
//   dense     ::= 'dense' '<' (number | list) '>'
//   attrs     ::= '{' (identifier '=' attrvalue (',' ...)*)? '}'
//   return    ::= 'return' %name (',' %name)*
//
// Statements are line based: a statement ends at a line break, except inside
// the parentheses of a call, the braces of attributes and a dense literal,
// which may span lines (so may a function signature). When a line break cuts
// a statement short, the error says "found end of line" and points just
// after its last token. On a syntax error the parser reports what it
// expected and what it found, skips to the next statement and goes on, so one
// run reports several independent errors (at most kMaxErrors).
//
// The limits of Frontend.h (`kina::limits`) are enforced here: the file size
// and line length before lexing, list lengths, statement and function counts
// and the nesting depth of dense<...> literals and attribute lists while
// parsing, so that no input can overflow the stack or run unbounded.
//
//===----------------------------------------------------------------------===//
#include "Lexer.h"

#include "kina/Frontend.h"
#include "kina/Shapes.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"

#include <functional>

namespace kina {

namespace {

/// Syntax errors after which parsing stops.
constexpr unsigned kMaxErrors = 20;

/// A file stem made into a valid module name: characters outside
/// `[A-Za-z0-9_.]` become '_', and a leading digit or '.' gets a '_' prefix.
std::string moduleNameFromFile(llvm::StringRef filename) {
  std::string stem = llvm::sys::path::stem(filename).str();
  std::string name;
  for (char c : stem) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '_' || c == '.';
    name += ok ? c : '_';
  }
  if (name.empty())
    return "module";
  if (!((name[0] >= 'a' && name[0] <= 'z') ||
        (name[0] >= 'A' && name[0] <= 'Z') || name[0] == '_'))
    name = "_" + name;
  return name;
}

class Parser {
public:
  Parser(llvm::StringRef source, llvm::StringRef filename,
         mlir::MLIRContext &ctx)
      : lex(source, filename, ctx), ctx(ctx),
        module(mlir::FileLineColLoc::get(&ctx, filename, 1, 1)) {
    module.filename = filename.str();
    module.name = moduleNameFromFile(filename);
  }

  mlir::FailureOr<Module> parse();

private:
  // --- Tokens ---------------------------------------------------------------
  void consume() {
    prevEndLine = tok.line;
    prevEndCol = tok.col + static_cast<unsigned>(tok.spelling.size());
    tok = lex.next();
  }
  /// Inside a line-based construct (a statement outside its call
  /// parentheses, attribute braces and dense literal), a token that starts
  /// a new line ends the statement.
  bool atLineBreak() const {
    return lineSensitive && tok.startsLine && !tok.is(TokenKind::Eof);
  }
  /// Sets `lineSensitive` for the lifetime of the guard.
  struct LineMode {
    Parser &p;
    bool saved;
    LineMode(Parser &p, bool on) : p(p), saved(p.lineSensitive) {
      p.lineSensitive = on;
    }
    ~LineMode() { p.lineSensitive = saved; }
  };
  bool stopping() const { return stopped || lex.gaveUp(); }
  mlir::Location loc(const Token &t) const { return lex.getLoc(t); }
  mlir::Location loc() const { return lex.getLoc(tok); }

  /// Reports "expected <what>, found <tok>" at the current token, unless the
  /// current token is a lexical error (already reported). Always returns
  /// false so callers can `return syntaxError(...)`.
  bool syntaxError(const llvm::Twine &expected);
  /// Reports `msg` at `at` (counts towards the error limit).
  mlir::InFlightDiagnostic errorAt(mlir::Location at);

  bool expect(TokenKind k, const llvm::Twine &expected) {
    if (!tok.is(k) || atLineBreak())
      return syntaxError(expected);
    consume();
    return true;
  }
  /// Skips to the first token of the next line (or the end of the file).
  void skipToNextLine() {
    do
      consume();
    while (!tok.startsLine && !tok.is(TokenKind::Eof));
  }
  /// Skips to the next line that starts a statement, `return`, `}` or a
  /// function (error recovery inside a body).
  void skipToNextStatement() {
    do
      consume();
    while (!tok.is(TokenKind::Eof) &&
           !(tok.startsLine &&
             (tok.is(TokenKind::ValueName) || tok.isKeyword("return") ||
              tok.is(TokenKind::RBrace) || atFunctionStart())));
  }
  bool atFunctionStart() const {
    return tok.startsLine &&
           (tok.isKeyword("func") || tok.isKeyword("private"));
  }

  // --- Grammar --------------------------------------------------------------
  void parseFunction();
  bool parseSignature(Function &fn);
  void parseBody(Function &fn);
  bool parseType(TensorType &type, const char *context);
  bool parseDim(Dim &dim, const char *context);
  bool parseStatement(Function &fn);
  bool parseReturn(Function &fn);
  bool parseOperand(Operand &op, const char *context);
  bool parseDense(DenseLiteral &lit);
  bool parseAttributes(Statement &st);
  bool parseAttrValue(AttrValue &v, unsigned depth = 0);
  /// Reports a list longer than limits::kMaxListLength at the current token;
  /// returns false so callers can `return listTooLong(...)`.
  bool listTooLong(const char *what);
  /// Parses one result type (after '->' or an annotation's ':') and appends
  /// it to `types`; false after reporting a syntax error.
  bool parseResultType(std::vector<TensorType> &types);
  /// Parses `type (',' type)* ')'`, the rest of a parenthesised result-type
  /// list whose '(' is consumed, appending to `types`; `what` names the list
  /// in the too-long diagnostic. False after reporting an error.
  bool parseResultTypeList(std::vector<TensorType> &types,
                           const std::string &what);
  bool expectEndOfStatement();

  Lexer lex;
  mlir::MLIRContext &ctx;
  Token tok;
  Module module;
  unsigned numErrors = 0;
  bool stopped = false;
  bool sawFunction = false;
  bool lineSensitive = false;
  unsigned prevEndLine = 1, prevEndCol = 1; // just after the last token
  size_t moduleStatements = 0; // statements started, all functions together
};

mlir::InFlightDiagnostic Parser::errorAt(mlir::Location at) {
  ++numErrors;
  mlir::InFlightDiagnostic diag = mlir::emitError(at);
  if (numErrors >= kMaxErrors) {
    diag.attachNote() << "too many errors; stopping here";
    stopped = true;
  }
  return diag;
}

bool Parser::parseResultType(std::vector<TensorType> &types) {
  TensorType t;
  if (!parseType(t, "result type"))
    return false;
  types.push_back(std::move(t));
  return true;
}

bool Parser::parseResultTypeList(std::vector<TensorType> &types,
                                 const std::string &what) {
  while (true) {
    if (types.size() >= limits::kMaxListLength)
      return listTooLong(what.c_str());
    if (!parseResultType(types))
      return false;
    if (tok.is(TokenKind::Comma)) {
      consume();
      continue;
    }
    return expect(TokenKind::RParen, "',' or ')' in the result types");
  }
}

bool Parser::listTooLong(const char *what) {
  if (!stopping())
    errorAt(loc()) << what << " has more than " << limits::kMaxListLength
                   << " entries, the maximum";
  return false;
}

bool Parser::syntaxError(const llvm::Twine &expected) {
  if (tok.is(TokenKind::Error) || stopping())
    return false; // the lexer reported it already
  if (atLineBreak()) {
    // Point just after the last token of the unfinished statement.
    errorAt(lex.getLoc(prevEndLine, prevEndCol))
        << "expected " << expected << ", found end of line";
    return false;
  }
  errorAt(loc()) << "expected " << expected << ", found " << describeToken(tok);
  return false;
}

mlir::FailureOr<Module> Parser::parse() {
  consume();
  if (tok.isKeyword("module")) {
    module.loc = loc();
    consume();
    if (tok.is(TokenKind::FunctionName)) {
      module.name = tok.value;
      module.nameWasWritten = true;
      consume();
      if (!tok.startsLine && !tok.is(TokenKind::Eof)) {
        syntaxError("end of line after the module name");
        skipToNextLine();
      }
    } else {
      syntaxError("a module name ('@name') after 'module'");
      skipToNextLine();
    }
  }
  while (!tok.is(TokenKind::Eof) && !stopping()) {
    if (tok.isKeyword("func") || tok.isKeyword("private")) {
      if (module.functions.size() >= limits::kMaxFunctionsPerModule) {
        errorAt(loc()) << "the module has more than "
                       << limits::kMaxFunctionsPerModule
                       << " functions, the maximum";
        stopped = true;
        break;
      }
      parseFunction();
      continue;
    }
    if (tok.isKeyword("module")) {
      errorAt(loc()) << "'module' must be the first line of the file";
    } else {
      syntaxError("'func' or 'private func'");
    }
    // Skip to the next function.
    do
      skipToNextLine();
    while (!tok.is(TokenKind::Eof) && !atFunctionStart());
  }
  if (!sawFunction && numErrors == 0 && lex.getNumErrors() == 0)
    errorAt(mlir::FileLineColLoc::get(&ctx, module.filename, 1, 1))
        << "expected at least one function ('func @name(...) -> type "
           "{ ... }')";
  if (numErrors || lex.getNumErrors())
    return mlir::failure();
  return std::move(module);
}

void Parser::parseFunction() {
  sawFunction = true;
  Function fn(loc());
  if (tok.isKeyword("private")) {
    fn.isPrivate = true;
    consume();
    if (!tok.isKeyword("func")) {
      syntaxError("'func' after 'private'");
      do
        skipToNextLine();
      while (!tok.is(TokenKind::Eof) && !atFunctionStart());
      return;
    }
  }
  consume(); // 'func'
  if (!parseSignature(fn)) {
    // Go on with the body if there is one, to report its errors too.
    while (!tok.is(TokenKind::LBrace) && !tok.is(TokenKind::Eof) &&
           !atFunctionStart() && !stopping())
      consume();
    if (!tok.is(TokenKind::LBrace))
      return;
  }
  if (!tok.is(TokenKind::LBrace)) {
    syntaxError("'{' to start the body of @" + fn.name);
    // Skip the body-less rest up to the next function, silently.
    while (!tok.is(TokenKind::Eof) && !stopping()) {
      skipToNextLine();
      if (atFunctionStart())
        break;
    }
    return;
  }
  consume();
  parseBody(fn);
  module.functions.push_back(std::move(fn));
}

bool Parser::parseSignature(Function &fn) {
  if (!tok.is(TokenKind::FunctionName))
    return syntaxError("a function name ('@name') after 'func'");
  fn.name = tok.value;
  fn.loc = loc();
  consume();
  if (!expect(TokenKind::LParen, "'(' after the function name"))
    return false;
  if (!tok.is(TokenKind::RParen)) {
    while (true) {
      if (!tok.is(TokenKind::ValueName))
        return syntaxError("a parameter ('%name: type')");
      if (fn.params.size() >= limits::kMaxListLength)
        return listTooLong(("the parameter list of @" + fn.name).c_str());
      Param p{tok.value, TensorType(), loc()};
      consume();
      if (!expect(TokenKind::Colon, "':' after parameter %" + p.name))
        return false;
      if (!parseType(p.type, "parameter type"))
        return false;
      fn.params.push_back(std::move(p));
      if (tok.is(TokenKind::Comma)) {
        consume();
        continue;
      }
      if (tok.is(TokenKind::RParen))
        break;
      return syntaxError("',' or ')' in the parameter list");
    }
  }
  consume(); // ')'
  if (!expect(TokenKind::Arrow, "'->' and the result types"))
    return false;
  if (tok.is(TokenKind::LParen)) {
    consume();
    if (tok.is(TokenKind::RParen))
      return syntaxError("at least one result type");
    return parseResultTypeList(fn.results, "the result types of @" + fn.name);
  }
  return parseResultType(fn.results);
}

void Parser::parseBody(Function &fn) {
  while (!stopping()) {
    if (tok.is(TokenKind::ValueName) &&
        fn.body.size() >= limits::kMaxStatementsPerFunction) {
      errorAt(loc()) << "@" << fn.name << " has more than "
                     << limits::kMaxStatementsPerFunction
                     << " statements, the maximum per function";
      stopped = true;
      return;
    }
    if (tok.is(TokenKind::ValueName) &&
        moduleStatements >= limits::kMaxStatementsPerModule) {
      errorAt(loc()) << "the module has more than "
                     << limits::kMaxStatementsPerModule
                     << " statements, the maximum per module";
      stopped = true;
      return;
    }
    if (tok.is(TokenKind::ValueName)) {
      ++moduleStatements;
      if (!parseStatement(fn) && !stopping()) {
        if (!(tok.startsLine &&
              (tok.is(TokenKind::ValueName) || tok.isKeyword("return") ||
               tok.is(TokenKind::RBrace) || atFunctionStart())))
          skipToNextStatement();
      }
      continue;
    }
    if (tok.isKeyword("return")) {
      if (!parseReturn(fn)) {
        if (!tok.startsLine)
          skipToNextLine();
      }
      if (tok.is(TokenKind::RBrace)) {
        consume();
        return;
      }
      if (stopping())
        return;
      if (tok.is(TokenKind::Eof) || atFunctionStart()) {
        syntaxError("'}' to end the body of @" + fn.name);
        return;
      }
      syntaxError("'}' after 'return' (it must be the last statement of @" +
                  fn.name + ")");
      while (!tok.is(TokenKind::RBrace) && !tok.is(TokenKind::Eof) &&
             !atFunctionStart() && !stopping())
        consume();
      if (tok.is(TokenKind::RBrace))
        consume();
      return;
    }
    if (tok.is(TokenKind::RBrace)) {
      errorAt(loc()) << "missing 'return' at the end of @" << fn.name;
      consume();
      return;
    }
    if (tok.is(TokenKind::Eof) || atFunctionStart()) {
      syntaxError("'}' to end the body of @" + fn.name);
      return;
    }
    syntaxError("a statement ('%name = op ...') or 'return'");
    skipToNextStatement();
  }
}

bool Parser::parseType(TensorType &type, const char *context) {
  mlir::Location typeLoc = loc();
  std::optional<ElementType> et;
  if (tok.is(TokenKind::Identifier) && !atLineBreak())
    et = parseElementType(tok.spelling);
  if (!et) {
    // A misspelt element type (`f23`) gets clang's typo correction.
    if (tok.is(TokenKind::Identifier) && !atLineBreak() && !stopping()) {
      if (std::optional<std::string> s =
              suggestName(tok.spelling, elementTypeSpellings())) {
        errorAt(typeLoc) << "unknown element type '" << tok.spelling
                         << "' in the " << context << "; did you mean '" << *s
                         << "'?";
        return false;
      }
    }
    return syntaxError(llvm::Twine("an element type (f64, f32, f16, bf16, "
                                   "i64, i32, i8, i1) for the ") +
                       context);
  }
  type.elementType = *et;
  type.dims.clear();
  consume();
  if (!tok.is(TokenKind::LBracket) || atLineBreak())
    return true;
  consume();
  if (tok.is(TokenKind::RBracket) && !atLineBreak()) {
    consume();
    return true;
  }
  while (true) {
    Dim d;
    if (!parseDim(d, "tensor type"))
      return false;
    type.dims.push_back(std::move(d));
    if (atLineBreak())
      return syntaxError("',' or ']' in tensor type");
    if (tok.is(TokenKind::Comma)) {
      consume();
      continue;
    }
    if (tok.is(TokenKind::RBracket))
      break;
    return syntaxError("',' or ']' in tensor type");
  }
  consume();
  if (type.rank() > kMaxRank) {
    errorAt(typeLoc) << "tensor type " << type.str() << " has rank "
                     << type.rank() << ", above the maximum rank " << kMaxRank;
    return false;
  }
  if (!staticByteSizeFits(type)) {
    errorAt(typeLoc) << "tensor type " << type.str()
                     << " is too large: its size in bytes does not fit in 64 "
                        "bits";
    return false;
  }
  return true;
}

bool Parser::parseDim(Dim &dim, const char *context) {
  if (atLineBreak())
    return syntaxError(llvm::Twine("a dim (a size, '?' or a name) in ") +
                       context);
  if (tok.is(TokenKind::Integer)) {
    if (tok.intValue < 0) {
      errorAt(loc()) << "dim size must not be negative, found " << tok.spelling;
      return false;
    }
    dim = Dim::fixed(tok.intValue);
    consume();
    return true;
  }
  if (tok.is(TokenKind::Question)) {
    dim = Dim::dynamic();
    consume();
    return true;
  }
  if (tok.is(TokenKind::Identifier)) {
    if (parseElementType(tok.spelling) || tok.spelling == "true" ||
        tok.spelling == "false") {
      errorAt(loc()) << "'" << tok.spelling
                     << "' is a reserved word and cannot name a dim";
      return false;
    }
    dim = Dim::named(tok.spelling);
    consume();
    return true;
  }
  return syntaxError(llvm::Twine("a dim (a size, '?' or a name) in ") +
                     context);
}

bool Parser::parseOperand(Operand &op, const char *context) {
  op.loc = loc();
  if (atLineBreak())
    return syntaxError(llvm::Twine("an operand (a %value or a literal) ") +
                       context);
  switch (tok.kind) {
  case TokenKind::ValueName:
    op.kind = Operand::Value;
    op.name = tok.value;
    consume();
    return true;
  case TokenKind::Integer:
    op.kind = Operand::IntLiteral;
    op.intValue = tok.intValue;
    op.floatValue = tok.floatValue;
    consume();
    return true;
  case TokenKind::Float:
    op.kind = Operand::FloatLiteral;
    op.floatValue = tok.floatValue;
    consume();
    return true;
  case TokenKind::LParen:
    if (stopping())
      return false;
    errorAt(loc()) << "expected an operand (a %value or a literal) " << context
                   << ", found '('; nested expressions are not allowed: bind "
                      "the inner operation to a %value first";
    return false;
  default:
    break;
  }
  if (tok.isKeyword("true") || tok.isKeyword("false")) {
    op.kind = Operand::BoolLiteral;
    op.intValue = tok.isKeyword("true") ? 1 : 0;
    op.floatValue = static_cast<double>(op.intValue);
    consume();
    return true;
  }
  if (tok.isKeyword("dense")) {
    op.kind = Operand::Dense;
    op.dense.emplace(loc());
    LineMode free(*this, false); // a dense literal may span lines
    return parseDense(*op.dense);
  }
  return syntaxError(llvm::Twine("an operand (a %value or a literal) ") +
                     context);
}

bool Parser::parseDense(DenseLiteral &lit) {
  consume(); // 'dense'
  if (!expect(TokenKind::Less, "'<' after 'dense'"))
    return false;
  // Recursion over nested lists, at most kMaxNestingDepth deep.
  std::function<bool(DenseLiteral &, unsigned)> parseElement =
      [&](DenseLiteral &e, unsigned depth) -> bool {
    e.loc = loc();
    if (tok.is(TokenKind::LBracket)) {
      if (depth >= limits::kMaxNestingDepth) {
        if (!stopping())
          errorAt(loc()) << "dense literal nested deeper than "
                         << limits::kMaxNestingDepth
                         << " lists (the maximum rank is " << kMaxRank << ")";
        return false;
      }
      e.isList = true;
      consume();
      if (tok.is(TokenKind::RBracket)) {
        consume();
        return true;
      }
      while (true) {
        e.elements.emplace_back(loc());
        if (!parseElement(e.elements.back(), depth + 1))
          return false;
        if (tok.is(TokenKind::Comma)) {
          consume();
          continue;
        }
        if (tok.is(TokenKind::RBracket)) {
          consume();
          return true;
        }
        return syntaxError("',' or ']' in dense literal");
      }
    }
    if (tok.is(TokenKind::Integer)) {
      e.isInteger = true;
      e.intValue = tok.intValue;
      e.floatValue = tok.floatValue;
    } else if (tok.is(TokenKind::Float)) {
      e.floatValue = tok.floatValue;
    } else if (tok.isKeyword("true") || tok.isKeyword("false")) {
      e.isBool = true;
      e.isInteger = true;
      e.intValue = tok.isKeyword("true") ? 1 : 0;
      e.floatValue = static_cast<double>(e.intValue);
    } else {
      return syntaxError("a number, a boolean or '[' in dense literal");
    }
    consume();
    return true;
  };
  if (!parseElement(lit, 0))
    return false;
  return expect(TokenKind::Greater, "'>' to end the dense literal");
}

bool Parser::parseAttrValue(AttrValue &v, unsigned depth) {
  v.loc = loc();
  switch (tok.kind) {
  case TokenKind::Integer:
    v.kind = AttrValue::Int;
    v.intValue = tok.intValue;
    v.floatValue = tok.floatValue;
    consume();
    return true;
  case TokenKind::Float:
    v.kind = AttrValue::Float;
    v.floatValue = tok.floatValue;
    consume();
    return true;
  case TokenKind::String:
    v.kind = AttrValue::String;
    v.stringValue = tok.value;
    consume();
    return true;
  case TokenKind::Identifier:
    if (tok.spelling == "true" || tok.spelling == "false") {
      v.kind = AttrValue::Bool;
      v.boolValue = tok.spelling == "true";
    } else if (std::optional<ElementType> et = parseElementType(tok.spelling)) {
      v.kind = AttrValue::Type;
      v.typeValue = *et;
    } else {
      v.kind = AttrValue::Symbol;
      v.stringValue = tok.spelling;
    }
    consume();
    return true;
  case TokenKind::LBracket:
    if (depth >= limits::kMaxNestingDepth) {
      if (!stopping())
        errorAt(loc()) << "attribute value nested deeper than "
                       << limits::kMaxNestingDepth << " lists";
      return false;
    }
    v.kind = AttrValue::List;
    consume();
    if (tok.is(TokenKind::RBracket)) {
      consume();
      return true;
    }
    while (true) {
      if (v.elements.size() >= limits::kMaxListLength)
        return listTooLong("an attribute list");
      v.elements.emplace_back(loc());
      if (!parseAttrValue(v.elements.back(), depth + 1))
        return false;
      if (tok.is(TokenKind::Comma)) {
        consume();
        continue;
      }
      if (tok.is(TokenKind::RBracket)) {
        consume();
        return true;
      }
      return syntaxError("',' or ']' in attribute list");
    }
  default:
    return syntaxError("an attribute value (a number, boolean, string, "
                       "element type, name or list)");
  }
}

bool Parser::parseAttributes(Statement &st) {
  LineMode free(*this, false); // attributes may span lines
  consume();                   // '{'
  if (tok.is(TokenKind::RBrace)) {
    consume();
    return true;
  }
  while (true) {
    if (!tok.is(TokenKind::Identifier))
      return syntaxError("an attribute name");
    Attribute a{tok.spelling, AttrValue(loc()), loc()};
    consume();
    if (!expect(TokenKind::Equal, "'=' after attribute '" + a.name + "'"))
      return false;
    if (!parseAttrValue(a.value))
      return false;
    if (const Attribute *prev = st.attr(a.name)) {
      mlir::InFlightDiagnostic diag = errorAt(a.loc);
      diag << "duplicate attribute '" << a.name << "'";
      diag.attachNote(prev->loc)
          << "previous value of '" << a.name << "' is here";
    } else {
      st.attrs.push_back(std::move(a));
    }
    if (tok.is(TokenKind::Comma)) {
      consume();
      continue;
    }
    return expect(TokenKind::RBrace, "',' or '}' in attributes");
  }
}

bool Parser::expectEndOfStatement() {
  if (tok.startsLine || tok.is(TokenKind::Eof) || tok.is(TokenKind::RBrace))
    return true;
  if (tok.is(TokenKind::Comma))
    return syntaxError("an operand after the last one, or end of line");
  return syntaxError("end of line after the statement");
}

bool Parser::parseStatement(Function &fn) {
  LineMode lines(*this, true);
  Statement st(loc());
  while (true) {
    if (st.results.size() >= limits::kMaxListLength)
      return listTooLong("the result names of a statement");
    st.results.push_back(tok.value);
    st.resultLocs.push_back(loc());
    consume();
    if (!tok.is(TokenKind::Comma) || atLineBreak())
      break;
    consume();
    if (!tok.is(TokenKind::ValueName) || atLineBreak())
      return syntaxError("a result name ('%name') after ','");
  }
  if (!expect(TokenKind::Equal, "'=' or ',' after the result names"))
    return false;
  if (!tok.is(TokenKind::Identifier) || atLineBreak())
    return syntaxError("an operation name after '='");
  st.op = tok.spelling;
  st.opLoc = loc();
  consume();
  if (st.op == "call") {
    if (!tok.is(TokenKind::FunctionName))
      return syntaxError("a function name ('@name') after 'call'");
    st.callee = tok.value;
    consume();
    if (!expect(TokenKind::LParen, "'(' after the callee @" + st.callee))
      return false;
    LineMode free(*this, false); // arguments may span lines
    if (!tok.is(TokenKind::RParen)) {
      while (true) {
        if (st.operands.size() >= limits::kMaxListLength)
          return listTooLong("the argument list of a call");
        st.operands.emplace_back(loc());
        if (!parseOperand(st.operands.back(), "in the call arguments"))
          return false;
        if (tok.is(TokenKind::Comma)) {
          consume();
          continue;
        }
        if (tok.is(TokenKind::RParen))
          break;
        return syntaxError("',' or ')' in the call arguments");
      }
    }
    consume(); // ')'
  } else if (!tok.startsLine && !tok.is(TokenKind::LBrace) &&
             !tok.is(TokenKind::Colon) && !tok.is(TokenKind::RBrace) &&
             !tok.is(TokenKind::Eof)) {
    std::string context = "for '" + st.op + "'";
    while (true) {
      if (st.operands.size() >= limits::kMaxListLength)
        return listTooLong(("the operand list of '" + st.op + "'").c_str());
      st.operands.emplace_back(loc());
      if (!parseOperand(st.operands.back(), context.c_str()))
        return false;
      if (!tok.is(TokenKind::Comma) || atLineBreak())
        break;
      consume();
      context = "after ','";
    }
  }
  if (tok.is(TokenKind::LBrace) && !tok.startsLine)
    if (!parseAttributes(st))
      return false;
  if (tok.is(TokenKind::Colon) && !tok.startsLine) {
    consume();
    st.annotationLoc = loc();
    std::vector<TensorType> types;
    if (tok.is(TokenKind::LParen) && !atLineBreak()) {
      consume();
      if (!parseResultTypeList(types, "the annotation"))
        return false;
    } else if (!parseResultType(types)) {
      return false;
    }
    st.annotation = std::move(types);
  }
  if (!expectEndOfStatement())
    return false;
  fn.body.push_back(std::move(st));
  return true;
}

bool Parser::parseReturn(Function &fn) {
  LineMode lines(*this, true);
  fn.returnLoc = loc();
  consume(); // 'return'
  if (tok.startsLine || tok.is(TokenKind::RBrace) || tok.is(TokenKind::Eof))
    return true;
  while (true) {
    if (!tok.is(TokenKind::ValueName) || atLineBreak())
      return syntaxError("a %value in 'return'");
    if (fn.returns.size() >= limits::kMaxListLength)
      return listTooLong("the 'return' list");
    Operand op(loc());
    op.kind = Operand::Value;
    op.name = tok.value;
    consume();
    fn.returns.push_back(std::move(op));
    if (!tok.is(TokenKind::Comma) || atLineBreak())
      break;
    consume();
  }
  return expectEndOfStatement();
}

} // namespace

mlir::FailureOr<Module> parseModule(llvm::StringRef source,
                                    llvm::StringRef filename,
                                    mlir::MLIRContext &ctx) {
  // Size limits first: nothing else reads an oversized input.
  if (source.size() > limits::kMaxSourceBytes) {
    mlir::emitError(mlir::FileLineColLoc::get(&ctx, filename, 1, 1))
        << "the file is " << source.size()
        << " bytes long, above the maximum of " << limits::kMaxSourceBytes
        << " bytes (16 MiB)";
    return mlir::failure();
  }
  unsigned line = 1;
  for (size_t start = 0; start <= source.size(); ++line) {
    size_t end = source.find('\n', start);
    if (end == llvm::StringRef::npos)
      end = source.size();
    if (end - start > limits::kMaxLineBytes) {
      mlir::emitError(mlir::FileLineColLoc::get(&ctx, filename, line,
                                                limits::kMaxLineBytes + 1))
          << "line " << line << " is " << end - start
          << " bytes long, above the maximum of " << limits::kMaxLineBytes
          << " bytes (a dense<...> literal may span lines)";
      return mlir::failure();
    }
    start = end + 1;
  }
  Parser parser(source, filename, ctx);
  return parser.parse();
}

} // namespace kina
