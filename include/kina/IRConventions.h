//===- IRConventions.h - What MLIRGen's output tells the later passes -----===//
//
// The contract between the MLIR generator (src/lowering/MLIRGen.cpp) and the
// passes after it (src/passes/, src/targets/), written into the IR itself so
// that every pass can run on a `.mlir` file alone (`kina-opt`) and no pass
// needs the front end's AST (docs/architecture.md, "Signatures in the IR"):
//  - the Kina signature of each function generated from Kina source, as
//    three attributes of its `func.func`: the parameter names
//    (`kina.param_names`), the dims of each parameter and of each result
//    (`kina.param_dims`, `kina.result_dims`), each dim a string: decimal
//    digits for a static size, `?` for a dynamic dim, else the name of a
//    symbolic dim (`N`). The element types are the MLIR types' own. Whether
//    the function is exported is its symbol visibility (public: exported;
//    private: a Kina `private` function);
//  - run-time shape checks as calls of `@__kina_check` with a message.
//
// Nothing here includes a front-end header.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_IRCONVENTIONS_H
#define KINA_IRCONVENTIONS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kina {

/// Name of the private function whose calls mark run-time shape checks:
/// `func.call @__kina_check(%ok : i1, %a : index, %b : index)`, failing
/// when `%ok` is false (the buffer-ownership pass turns each into an early
/// return with status 1).
inline constexpr const char *kCheckFunctionName = "__kina_check";
/// String attribute of a `@__kina_check` call: its message,
/// "file:line:col: op: what", where `{0}`/`{1}` stand for `%a`/`%b`.
inline constexpr const char *kCheckMessageAttr = "kina.message";

/// `func.func` attribute: array of strings, the Kina parameter names
/// (without `%`), one per argument.
inline constexpr const char *kParamNamesAttr = "kina.param_names";
/// `func.func` attribute: array (one per argument) of arrays of strings,
/// the dims of each parameter's Kina type (see SignatureDim).
inline constexpr const char *kParamDimsAttr = "kina.param_dims";
/// `func.func` attribute: array (one per result) of arrays of strings, the
/// dims of each result's Kina type (see SignatureDim).
inline constexpr const char *kResultDimsAttr = "kina.result_dims";

/// One dim of a Kina type as the signature attributes spell it: "64" (a
/// static size), "?" (dynamic) or "N" (symbolic: equal wherever the name
/// appears in one signature).
struct SignatureDim {
  enum Kind { Static, Dynamic, Symbolic };
  Kind kind = Static;
  int64_t size = 0;   ///< Static only.
  std::string symbol; ///< Symbolic only.

  /// The attribute spelling ("64", "?", "N").
  std::string str() const;
};

/// The Kina signature of one function: parameter names, and the dims of
/// each parameter and result type, in order.
struct KinaSignature {
  std::vector<std::string> paramNames;
  std::vector<std::vector<SignatureDim>> paramDims;
  std::vector<std::vector<SignatureDim>> resultDims;
};

/// True when `fn` carries a Kina signature (`kina.param_names`): it was
/// generated from a Kina function. Works on any op (func.func before the
/// conversion to the LLVM dialect, llvm.func after it: the conversion
/// copies the attributes).
bool hasKinaSignature(mlir::Operation *fn);

/// Records `signature` on `fn` as the three attributes above. The caller
/// keeps them consistent with the function type (MLIRGen does).
void setKinaSignature(mlir::Operation *fn, const KinaSignature &signature);

/// Reads the signature of `fn` and checks it against the function type:
/// one name and one dim list per argument, one dim list per result, each
/// of the ranked shaped type's rank, a static dim where the type's dim is
/// static (and of that size), a dynamic one where it is dynamic, names
/// that are not empty. Emits an error at `fn` and fails when the
/// attributes are missing or malformed.
mlir::FailureOr<KinaSignature> readKinaSignature(mlir::func::FuncOp fn);

/// Removes the three signature attributes from `fn` (no-op if absent).
void removeKinaSignature(mlir::Operation *fn);

} // namespace kina

#endif // KINA_IRCONVENTIONS_H
