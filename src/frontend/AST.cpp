//===- AST.cpp - Helpers of the Kina IR syntax tree -----------------------===//
//
// The small helpers declared in AST.h: spelling and parsing of element types,
// their sizes, the Kina IR spelling of a tensor type, and lookups of an
// attribute in a statement and of a function in a module. The spellings are
// the spec's "Types" section (docs/language.md).
//
//===----------------------------------------------------------------------===//
#include "kina/AST.h"

namespace kina {

const char *elementTypeName(ElementType t) {
  switch (t) {
  case ElementType::F64:
    return "f64";
  case ElementType::F32:
    return "f32";
  case ElementType::F16:
    return "f16";
  case ElementType::BF16:
    return "bf16";
  case ElementType::I64:
    return "i64";
  case ElementType::I32:
    return "i32";
  case ElementType::I8:
    return "i8";
  case ElementType::I1:
    return "i1";
  }
  return "<invalid>";
}

std::optional<ElementType> parseElementType(const std::string &s) {
  static const ElementType all[] = {
      ElementType::F64, ElementType::F32, ElementType::F16, ElementType::BF16,
      ElementType::I64, ElementType::I32, ElementType::I8,  ElementType::I1};
  for (ElementType t : all)
    if (s == elementTypeName(t))
      return t;
  return std::nullopt;
}

unsigned elementSizeInBytes(ElementType t) {
  switch (t) {
  case ElementType::F64:
  case ElementType::I64:
    return 8;
  case ElementType::F32:
  case ElementType::I32:
    return 4;
  case ElementType::F16:
  case ElementType::BF16:
    return 2;
  case ElementType::I8:
  case ElementType::I1:
    return 1;
  }
  return 0;
}

unsigned elementBitWidth(ElementType t) {
  return t == ElementType::I1 ? 1 : 8 * elementSizeInBytes(t);
}

std::string TensorType::str() const {
  std::string s = elementTypeName(elementType);
  s += '[';
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ", ";
    const Dim &d = dims[i];
    if (d.kind == Dim::Static)
      s += std::to_string(d.size);
    else if (d.kind == Dim::Dynamic)
      s += '?';
    else
      s += d.symbol;
  }
  s += ']';
  return s;
}

const Attribute *Statement::attr(const std::string &name) const {
  for (const Attribute &a : attrs)
    if (a.name == name)
      return &a;
  return nullptr;
}

const Function *Module::lookup(const std::string &fn) const {
  for (const Function &f : functions)
    if (f.name == fn)
      return &f;
  return nullptr;
}

} // namespace kina
