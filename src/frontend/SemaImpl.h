//===- SemaImpl.h - Private state and helpers of semantic analysis --------===//
//
// The analysis behind `kina::analyzeModule` (Frontend.h), shared by the
// files of src/frontend/Sema*.cpp, which are split by op family as
// src/lowering/MLIRGen*.cpp is: Sema.cpp holds the module, functions,
// values, calls, the generic statement checks (operand counts, attributes,
// literals) and the dispatch on OpTable.h's families; SemaElementwise.cpp
// the unary, binary, comparison, select, cast and broadcast_to inference;
// SemaConstant.cpp constant and iota; SemaContract.cpp matmul, reductions,
// argmax/argmin, softmax and the norms; SemaLayout.cpp transpose, reshape,
// concat, slice and gather. Everything here is private to the front end.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_FRONTEND_SEMAIMPL_H
#define KINA_FRONTEND_SEMAIMPL_H

#include "kina/AST.h"
#include "kina/OpTable.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kina {
namespace sema {

//===----------------------------------------------------------------------===//
// Diagnostic text (Sema.cpp)
//===----------------------------------------------------------------------===//

/// `; did you mean 'PREFIX<name>'?` for the candidate nearest to `typo`
/// (suggestName), or "" when none is close. `quote` encloses the
/// suggestion (`'` for names, `"` for string values).
std::string didYouMean(llvm::StringRef typo,
                       llvm::ArrayRef<llvm::StringRef> candidates,
                       llvm::StringRef prefix = "", char quote = '\'');
/// How an attribute value is named in a diagnostic ("the integer 3").
std::string describeValue(const AttrValue &v);
/// Whether `v` is a value of kind `k` (an integer is also a Float).
bool valueHasKind(const AttrValue &v, AttrKind k);
/// `[2, N, ?]`.
std::string shapeString(llvm::ArrayRef<Dim> dims);
/// `[0, 1]`.
std::string listString(llvm::ArrayRef<int64_t> v);
/// "1 operand", "2 operands" (`plural` when not word + "s").
std::string pluralize(size_t n, const char *word, const char *plural = nullptr);

//===----------------------------------------------------------------------===//
// Literals (Sema.cpp)
//===----------------------------------------------------------------------===//

/// The APFloat semantics of a float element type (f32 for the others).
const llvm::fltSemantics &semanticsOf(ElementType t);
/// True when a literal is representable in `et` (Sema.cpp's file comment):
/// integer types need the exact value (integral, in range); float types
/// round to nearest like any decimal literal, but a finite literal must not
/// overflow to infinity.
bool literalFits(bool isBool, bool isInteger, int64_t iv, double fv,
                 ElementType et);
/// How a literal that does not fit `et` is described.
std::string doesNotFit(bool isBool, ElementType et);
/// The literal as written (`2`, `0.5`, `true`), or `%name`.
std::string literalSpelling(const Operand &o);
/// An int, float or bool literal operand.
bool isLiteral(const Operand &o);

//===----------------------------------------------------------------------===//
// The analysis
//===----------------------------------------------------------------------===//

using Types = std::vector<TensorType>;
using MaybeType = std::optional<TensorType>;

class Sema {
public:
  Sema(Module &m, std::string symbolPrefix)
      : module(m), symbolPrefix(std::move(symbolPrefix)) {}
  mlir::LogicalResult run();

private:
  mlir::InFlightDiagnostic error(mlir::Location l) {
    failed = true;
    return mlir::emitError(l);
  }

  // Module level.
  void checkFunctionNames();
  void checkRecursion();

  // Function level.
  void analyzeFunction(Function &fn);
  void analyzeStatement(Statement &st);
  void checkReturn();
  void define(const std::string &name, mlir::Location loc, MaybeType type);
  bool resolveValues(Statement &st);
  std::string suggestValue(llvm::StringRef name) const;

  // Statement level (st is the current statement).
  std::optional<Types> infer(Statement &st, const OpDesc &desc);
  bool checkAttributes(Statement &st, const OpDesc &desc);
  bool checkOperandCount(Statement &st, size_t lo, size_t hi);
  bool checkNoDense(Statement &st);
  bool requireValue(Statement &st, size_t i);
  bool typeLiteralGroup(Statement &st, llvm::ArrayRef<size_t> group);
  bool fitLiteral(Operand &o, ElementType et);
  bool sameElementType(Statement &st, llvm::ArrayRef<size_t> group);
  bool checkStaticOrParamDims(Statement &st, const TensorType &t);
  std::optional<int64_t> axisAttr(Statement &st, const char *name,
                                  int64_t rank);
  bool compatible(const TensorType &inferred, const TensorType &written,
                  TensorType &merged) const;
  /// Adds the default of attribute `name` (OpTable.h) when `st` omits it;
  /// `value` is the default of a `Computed` one.
  void addDefault(Statement &st, const char *name,
                  std::optional<AttrValue> value = std::nullopt);
  AttrValue intValue(int64_t v, mlir::Location l) const {
    AttrValue a(l);
    a.kind = AttrValue::Int;
    a.intValue = v;
    a.floatValue = static_cast<double>(v);
    return a;
  }
  AttrValue listValue(llvm::ArrayRef<int64_t> v, mlir::Location l) const {
    AttrValue a(l);
    a.kind = AttrValue::List;
    for (int64_t x : v)
      a.elements.push_back(intValue(x, l));
    return a;
  }
  std::vector<int64_t> intList(const Statement &st, const char *name) const {
    std::vector<int64_t> v;
    for (const AttrValue &e : st.attr(name)->value.elements)
      v.push_back(e.intValue);
    return v;
  }

  MaybeType inferUnary(Statement &st);
  MaybeType inferBinary(Statement &st);
  MaybeType inferSelect(Statement &st);
  MaybeType inferCast(Statement &st);
  MaybeType inferConstant(Statement &st);
  MaybeType inferIota(Statement &st);
  MaybeType inferMatmul(Statement &st);
  MaybeType inferTranspose(Statement &st);
  MaybeType inferReshape(Statement &st);
  MaybeType inferBroadcastTo(Statement &st);
  MaybeType inferConcat(Statement &st);
  MaybeType inferSlice(Statement &st);
  MaybeType inferGather(Statement &st);
  MaybeType inferReduce(Statement &st);
  MaybeType inferArgReduce(Statement &st);
  MaybeType inferSoftmax(Statement &st);
  MaybeType inferNorm(Statement &st, bool layerNorm);
  std::optional<Types> inferCall(Statement &st);
  bool checkShapeList(Statement &st, bool allowMinusOne);

  Module &module;
  /// `--symbol-prefix`: exported symbols are kina_<prefix><name>, ...
  std::string symbolPrefix;
  bool failed = false;
  /// The table row of the statement being analysed (infer()).
  const OpDesc *desc = nullptr;

  // Per function.
  Function *fn = nullptr;
  struct ValueInfo {
    MaybeType type;
    mlir::Location loc;
  };
  llvm::StringMap<ValueInfo> values;
  llvm::StringMap<mlir::Location> laterDefs;
  llvm::StringSet<> paramSymbols;
};

} // namespace sema
} // namespace kina

#endif // KINA_FRONTEND_SEMAIMPL_H
