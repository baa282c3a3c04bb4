//===- IRConventions.cpp - The Kina signature attributes of a func.func ---===//
//
// Writes, reads and checks the `kina.param_names`, `kina.param_dims` and
// `kina.result_dims` attributes that MLIRGen puts on each function it
// generates and the entry-point and internalize passes read
// (include/kina/IRConventions.h, docs/architecture.md). Reading checks the
// attributes against the function type, so a hand-written `.mlir` input to
// `kina-opt` with a wrong signature gets a located error, not wrong code.
//
//===----------------------------------------------------------------------===//
#include "kina/IRConventions.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kina {

std::string SignatureDim::str() const {
  switch (kind) {
  case Static:
    return std::to_string(size);
  case Dynamic:
    return "?";
  case Symbolic:
    return symbol;
  }
  return "?";
}

bool hasKinaSignature(Operation *fn) { return fn->hasAttr(kParamNamesAttr); }

void setKinaSignature(Operation *fn, const KinaSignature &signature) {
  Builder b(fn->getContext());
  auto dimLists = [&](const std::vector<std::vector<SignatureDim>> &lists) {
    SmallVector<Attribute> out;
    for (const std::vector<SignatureDim> &dims : lists) {
      SmallVector<Attribute> spelled;
      for (const SignatureDim &d : dims)
        spelled.push_back(b.getStringAttr(d.str()));
      out.push_back(b.getArrayAttr(spelled));
    }
    return b.getArrayAttr(out);
  };
  SmallVector<Attribute> names;
  for (const std::string &name : signature.paramNames)
    names.push_back(b.getStringAttr(name));
  fn->setAttr(kParamNamesAttr, b.getArrayAttr(names));
  fn->setAttr(kParamDimsAttr, dimLists(signature.paramDims));
  fn->setAttr(kResultDimsAttr, dimLists(signature.resultDims));
}

void removeKinaSignature(Operation *fn) {
  fn->removeAttr(kParamNamesAttr);
  fn->removeAttr(kParamDimsAttr);
  fn->removeAttr(kResultDimsAttr);
}

namespace {

/// Parses one dim spelling; std::nullopt for an empty string or digits that
/// do not fit in int64_t.
std::optional<SignatureDim> parseDim(StringRef text) {
  SignatureDim dim;
  if (text.empty())
    return std::nullopt;
  if (text == "?") {
    dim.kind = SignatureDim::Dynamic;
    return dim;
  }
  if (llvm::all_of(text, [](char c) { return c >= '0' && c <= '9'; })) {
    if (text.getAsInteger(10, dim.size))
      return std::nullopt;
    dim.kind = SignatureDim::Static;
    return dim;
  }
  dim.kind = SignatureDim::Symbolic;
  dim.symbol = text.str();
  return dim;
}

/// Reads the dim lists of attribute `attrName` of `fn`, one per type of
/// `types`, each checked against that type's shape.
LogicalResult readDimLists(func::FuncOp fn, StringRef attrName, TypeRange types,
                           StringRef what,
                           std::vector<std::vector<SignatureDim>> &out) {
  auto lists = fn->getAttrOfType<ArrayAttr>(attrName);
  if (!lists)
    return fn.emitError() << "'" << attrName << "' is missing or not an array";
  if (lists.size() != types.size())
    return fn.emitError() << "'" << attrName << "' has " << lists.size()
                          << " entries for " << types.size() << " " << what
                          << "s";
  for (auto [i, entry, type] : llvm::enumerate(lists, types)) {
    auto dims = dyn_cast<ArrayAttr>(entry);
    auto shaped = dyn_cast<ShapedType>(type);
    if (!dims)
      return fn.emitError()
             << "'" << attrName << "' entry " << i << " is not an array";
    if (!shaped || !shaped.hasRank() ||
        shaped.getRank() != static_cast<int64_t>(dims.size()))
      return fn.emitError()
             << "'" << attrName << "' entry " << i << " has " << dims.size()
             << " dims, but " << what << " " << i << " has type " << type;
    std::vector<SignatureDim> parsed;
    for (auto [d, dimAttr] : llvm::enumerate(dims)) {
      auto text = dyn_cast<StringAttr>(dimAttr);
      std::optional<SignatureDim> dim =
          text ? parseDim(text.getValue()) : std::nullopt;
      if (!dim)
        return fn.emitError() << "'" << attrName << "' entry " << i << " dim "
                              << d << " is not a size, '?' or a name";
      int64_t typeDim = shaped.getDimSize(d);
      bool staticType = !ShapedType::isDynamic(typeDim);
      if ((dim->kind == SignatureDim::Static) != staticType ||
          (staticType && dim->size != typeDim))
        return fn.emitError() << "'" << attrName << "' entry " << i << " dim "
                              << d << " is '" << dim->str() << "', but " << what
                              << " " << i << " has type " << type;
      parsed.push_back(*dim);
    }
    out.push_back(std::move(parsed));
  }
  return success();
}

} // namespace

FailureOr<KinaSignature> readKinaSignature(func::FuncOp fn) {
  KinaSignature signature;
  FunctionType type = fn.getFunctionType();
  auto names = fn->getAttrOfType<ArrayAttr>(kParamNamesAttr);
  if (!names)
    return fn.emitError() << "'" << kParamNamesAttr
                          << "' is missing or not an array";
  if (names.size() != type.getNumInputs())
    return fn.emitError() << "'" << kParamNamesAttr << "' has " << names.size()
                          << " names for " << type.getNumInputs()
                          << " arguments";
  for (Attribute name : names) {
    auto text = dyn_cast<StringAttr>(name);
    if (!text || text.getValue().empty())
      return fn.emitError()
             << "'" << kParamNamesAttr << "' holds an entry that is not a name";
    signature.paramNames.push_back(text.str());
  }
  if (failed(readDimLists(fn, kParamDimsAttr, type.getInputs(), "argument",
                          signature.paramDims)) ||
      failed(readDimLists(fn, kResultDimsAttr, type.getResults(), "result",
                          signature.resultDims)))
    return failure();
  return signature;
}

} // namespace kina
