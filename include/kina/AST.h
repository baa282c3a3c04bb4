//===- AST.h - The syntax tree of a Kina IR module ------------------------===//
//
// The in-memory form of a `.kir` file (docs/language.md). The
// parser (Frontend.h's parseModule, src/frontend/Parser.cpp) builds it;
// semantic analysis (Frontend.h's analyzeModule, src/frontend/Sema*.cpp)
// fills in every statement's inferred result types and the element type of
// every literal operand; the canonical printer (Frontend.h's printModule)
// and the MLIR generator (MLIRGen.h) read it. Which ops exist, and their
// attributes, is OpTable.h's table. Every node carries an `mlir::Location` (a
// FileLineColLoc) so that all diagnostics go through MLIR's one path.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_AST_H
#define KINA_AST_H

#include "mlir/IR/Location.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kina {

/// The element types of the spec's "Types" section.
enum class ElementType { F64, F32, F16, BF16, I64, I32, I8, I1 };

/// Spelling of an element type as written in Kina IR (`f32`, `bf16`, ...).
const char *elementTypeName(ElementType t);
/// Parses an element type keyword; std::nullopt if `s` is not one.
std::optional<ElementType> parseElementType(const std::string &s);
inline bool isFloat(ElementType t) {
  return t == ElementType::F64 || t == ElementType::F32 ||
         t == ElementType::F16 || t == ElementType::BF16;
}
inline bool isInteger(ElementType t) { return !isFloat(t); } // i1 included
/// Storage size in bytes of one element (i1 is one byte).
unsigned elementSizeInBytes(ElementType t);
/// Width in bits (i1 is 1).
unsigned elementBitWidth(ElementType t);

/// One dimension of a tensor type: a static size, `?`, or a symbolic name.
struct Dim {
  enum Kind { Static, Dynamic, Symbolic };
  Kind kind = Static;
  int64_t size = 0;   ///< Static only.
  std::string symbol; ///< Symbolic only: the name as written (`N`).

  static Dim fixed(int64_t n) { return Dim{Static, n, {}}; }
  static Dim dynamic() { return Dim{Dynamic, 0, {}}; }
  static Dim named(std::string s) { return Dim{Symbolic, 0, std::move(s)}; }
  bool isStatic() const { return kind == Static; }
  bool operator==(const Dim &o) const {
    return kind == o.kind && (kind != Static || size == o.size) &&
           (kind != Symbolic || symbol == o.symbol);
  }
  bool operator!=(const Dim &o) const { return !(*this == o); }
};

/// A tensor type `DT[d0, d1, ...]`; rank 0 (`DT` or `DT[]`) is a scalar.
struct TensorType {
  ElementType elementType = ElementType::F32;
  std::vector<Dim> dims;

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  bool operator==(const TensorType &o) const {
    return elementType == o.elementType && dims == o.dims;
  }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
  /// Kina IR spelling, e.g. `f32[N, ?, 10]` (rank 0 prints as `f32[]`).
  std::string str() const;
};

/// A `dense<...>` literal: a nested list of numbers (or a single number).
struct DenseLiteral {
  bool isList = false;
  double floatValue = 0.0;   ///< Leaf: the number as a double ...
  int64_t intValue = 0;      ///< ... and as an integer when `isInteger`.
  bool isInteger = false;    ///< Leaf was written without '.', 'e', inf, nan.
  bool isBool = false;       ///< Leaf was `true`/`false` (intValue is 0/1).
  std::vector<DenseLiteral> elements; ///< List only.
  mlir::Location loc;
  explicit DenseLiteral(mlir::Location l) : loc(l) {}
};

/// An attribute value: integer, float, boolean, string, element type, a
/// symbolic dim name (only inside shape lists), or a list of these.
struct AttrValue {
  enum Kind { Int, Float, Bool, String, Type, Symbol, List };
  Kind kind = Int;
  int64_t intValue = 0;
  double floatValue = 0.0;
  bool boolValue = false;
  std::string stringValue; ///< String contents, or the Symbol's name.
  ElementType typeValue = ElementType::F32;
  std::vector<AttrValue> elements; ///< List only.
  mlir::Location loc;
  explicit AttrValue(mlir::Location l) : loc(l) {}
};

/// A named attribute `name = value` inside `{...}`.
struct Attribute {
  std::string name;
  AttrValue value;
  mlir::Location loc; ///< Location of the name.
  /// Set by Sema on attributes it added because the source omitted them
  /// (the op's documented default, e.g. `keepdims = false`); the canonical
  /// printer skips these, so the text keeps only what was written.
  bool isDefault = false;
};

/// An operand: a `%value` reference or a number/boolean literal, or (for
/// `constant` only) a dense literal.
struct Operand {
  enum Kind { Value, IntLiteral, FloatLiteral, BoolLiteral, Dense };
  Kind kind = Value;
  std::string name;        ///< Value: the name without '%'.
  int64_t intValue = 0;    ///< IntLiteral / BoolLiteral (0 or 1).
  double floatValue = 0.0; ///< FloatLiteral (also set for IntLiteral).
  std::optional<DenseLiteral> dense; ///< Dense only.
  mlir::Location loc;
  /// Filled by Sema: the type of the operand (for literals, a rank-0 tensor
  /// of the element type taken from the other operand).
  std::optional<TensorType> type;
  explicit Operand(mlir::Location l) : loc(l) {}
};

/// `%r0, %r1 = op operands {attrs} : type` (or `call @f(...)`).
struct Statement {
  std::vector<std::string> results;   ///< Names without '%'.
  std::vector<mlir::Location> resultLocs;
  std::string op;                     ///< Op name as written (`matmul`).
  mlir::Location opLoc;
  std::string callee;                 ///< `call` only, without '@'.
  std::vector<Operand> operands;
  std::vector<Attribute> attrs;       ///< In source order.
  /// The `: type` annotation (one type, or a parenthesised list).
  std::optional<std::vector<TensorType>> annotation;
  mlir::Location annotationLoc;
  mlir::Location loc;                 ///< Start of the statement.
  /// Filled by Sema: one inferred type per result.
  std::vector<TensorType> resultTypes;
  /// Filled by Sema: the types inference gave before the annotation was
  /// applied. They differ from `resultTypes` only where the annotation
  /// refined a `?` into a static size or a symbol: a run-time check.
  std::vector<TensorType> inferredTypes;

  explicit Statement(mlir::Location l)
      : opLoc(l), annotationLoc(l), loc(l) {}
  /// The attribute named `name`, or nullptr.
  const Attribute *attr(const std::string &name) const;
};

struct Param {
  std::string name; ///< Without '%'.
  TensorType type;
  mlir::Location loc;
};

struct Function {
  std::string name; ///< Without '@'.
  bool isPrivate = false;
  std::vector<Param> params;
  std::vector<TensorType> results;
  std::vector<Statement> body;
  std::vector<Operand> returns; ///< Operands of `return` (Values only).
  mlir::Location loc;
  mlir::Location returnLoc;
  explicit Function(mlir::Location l) : loc(l), returnLoc(l) {}
};

struct Module {
  std::string name;         ///< `module @name`, or the file's stem.
  bool nameWasWritten = false;
  std::string filename;     ///< As given on the command line.
  std::vector<Function> functions;
  mlir::Location loc;
  explicit Module(mlir::Location l) : loc(l) {}
  const Function *lookup(const std::string &fn) const;
};

} // namespace kina

#endif // KINA_AST_H
