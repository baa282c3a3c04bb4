//===- OpTable.h - The one description of every Kina IR operation ---------===//
//
// Every operation of docs/language.md ("Operations", "Attributes") is one
// row of the table in src/frontend/OpTable.cpp: its name, its family (which
// inference in Sema*.cpp and which generator in MLIRGen*.cpp handle it), its
// operand count, its attributes with their kinds, defaults and whether they
// are required, the element types its first operand may have, and how its
// result type is formed. Sema (name lookup, operand counts, attribute
// checks, defaults, element types, the "expected ..." lists and the typo
// candidates of its diagnostics) and MLIRGen (the dispatch of statements,
// the element types each elementwise op is defined on) both read it, and
// the `docs` test tests/docs/OpTableDocTest.cpp checks that docs/language.md
// names exactly these operations.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_OPTABLE_H
#define KINA_OPTABLE_H

#include "kina/AST.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kina {

/// The families of operations: ops of one family share their operand
/// structure, their inference (Sema*.cpp) and their generator (MLIRGen*.cpp).
enum class OpFamily {
  UnaryFloat,   ///< exp log ... gelu: one float operand, same type out
  UnaryNumeric, ///< neg, abs: floats and integers, not i1
  Not,          ///< not: i1 only
  Binary,       ///< add sub mul div mod pow max min: broadcast
  Compare,      ///< eq ne lt le gt ge: broadcast, i1 result
  Select,       ///< select %cond, %a, %b: broadcast of three
  Cast,         ///< cast {to}
  Constant,     ///< constant dense<...> : type
  Iota,         ///< iota {axis} : type
  Matmul,       ///< matmul with batch broadcasting
  Transpose,    ///< transpose {perm}
  Reshape,      ///< reshape {shape}
  BroadcastTo,  ///< broadcast_to {shape}
  Concat,       ///< concat {axis}, one or more operands
  Slice,        ///< slice {start, stop, step}
  Gather,       ///< gather %x, %indices {axis}
  Reduce,       ///< reduce_* {axes, keepdims}
  ArgReduce,    ///< argmax, argmin {axis, keepdims}
  Softmax,      ///< softmax, log_softmax {axis}
  LayerNorm,    ///< layer_norm %x, %g, %b {axis, epsilon}
  RmsNorm,      ///< rms_norm %x, %g {axis, epsilon}
  Call,         ///< call @f(...)
};

/// What an attribute's value must be (Sema reports the description of the
/// kind when it is not).
enum class AttrKind { Int, Float, Bool, String, Type, IntList, ShapeList };

/// "an integer", "a list of integers", ... for diagnostics.
const char *describeAttrKind(AttrKind kind);

/// The value an attribute takes when the source omits it (spec,
/// "Attributes"). `Required`: omitting it is an error; `Computed`: the
/// default depends on the operand (transpose's reversed axes, slice's step
/// of 1 per dim) and Sema computes it; otherwise the constant below.
struct AttrDefault {
  enum Kind { Required, Computed, Int, Float, Bool, String, IntList };
  Kind kind = Required;
  int64_t intValue = 0;         ///< Int; Bool (0 or 1).
  double floatValue = 0.0;      ///< Float.
  const char *stringValue = ""; ///< String.
};

/// One attribute an op accepts.
struct AttrDesc {
  const char *name;
  AttrKind kind;
  AttrDefault dflt;
  bool required() const { return dflt.kind == AttrDefault::Required; }
};

/// A set of element types, one bit per `ElementType` (AST.h's order).
using ElementTypeSet = unsigned;
constexpr ElementTypeSet elementTypeBit(ElementType t) {
  return 1u << static_cast<unsigned>(t);
}
/// f64 f32 f16 bf16.
constexpr ElementTypeSet kFloatTypes =
    elementTypeBit(ElementType::F64) | elementTypeBit(ElementType::F32) |
    elementTypeBit(ElementType::F16) | elementTypeBit(ElementType::BF16);
/// i64 i32 i8 (not i1).
constexpr ElementTypeSet kIntTypes = elementTypeBit(ElementType::I64) |
                                     elementTypeBit(ElementType::I32) |
                                     elementTypeBit(ElementType::I8);
constexpr ElementTypeSet kBoolType = elementTypeBit(ElementType::I1);
constexpr ElementTypeSet kNumericTypes = kFloatTypes | kIntTypes;
constexpr ElementTypeSet kAllTypes = kNumericTypes | kBoolType;

/// How the result type is formed (the per-op details, axes and shapes, are
/// the family's inference in Sema*.cpp).
enum class ResultRule {
  SameAsOperand, ///< the first operand's type (unary ops, softmax, norms)
  Broadcast,     ///< the operands broadcast, their element type
  BroadcastBool, ///< the operands broadcast, i1 (comparisons)
  CastTo,        ///< the operand's dims, the element type `to`
  Written,       ///< the `: type` written on the statement (constant, iota)
  Index,         ///< i64 positions (argmax, argmin)
  Shaped,        ///< the operand's element type, dims from the op's rule
  Callee,        ///< the callee's declared result types
};

/// An unbounded operand count (concat, call).
inline constexpr size_t kVariadic = SIZE_MAX;

/// One operation of Kina IR.
struct OpDesc {
  const char *name; ///< As written in Kina IR (`reduce_sum`).
  OpFamily family;
  size_t minOperands;
  size_t maxOperands; ///< kVariadic: no upper bound.
  /// The element types the first operand may have (the other operands of
  /// the op's same-type group follow it), or, for iota, the result; Sema
  /// and MLIRGen reject the others. kAllTypes where the family has rules
  /// of its own (select's condition, gather's indices, constant's value).
  ElementTypeSet elementTypes;
  ResultRule result;
  llvm::ArrayRef<AttrDesc> attrs; ///< In the order diagnostics list them.

  bool allows(ElementType t) const {
    return (elementTypes & elementTypeBit(t)) != 0;
  }
  /// The attribute named `attr`, or nullptr.
  const AttrDesc *attr(llvm::StringRef attr) const;
};

/// Every operation, sorted by name.
llvm::ArrayRef<OpDesc> opTable();

/// The operation named `name`, or nullptr when there is none.
const OpDesc *lookupOp(llvm::StringRef name);

/// The names of all operations, sorted: the candidates of "unknown
/// operation ...; did you mean ...?".
std::vector<llvm::StringRef> opNames();

} // namespace kina

#endif // KINA_OPTABLE_H
