//===- SemaConstant.cpp - Inference of constant and iota ------------------===//
//
// Type inference of the ops whose result type is written on the statement
// (OpTable.h's ResultRule::Written; docs/language.md, "constant and iota"):
// `constant dense<...> : T` checks the literal against T (shape, element
// count, every value representable) and `iota {axis} : T` its axis; their
// symbolic dims must be dims of the function's parameters.
//
//===----------------------------------------------------------------------===//
#include "Format.h"
#include "SemaImpl.h"

#include "kina/Shapes.h"

#include <cmath>
#include <functional>

namespace kina {
namespace sema {

MaybeType Sema::inferConstant(Statement &st) {
  if (!st.annotation) {
    error(st.opLoc) << "'constant' needs its type written after the value "
                       "(e.g. 'constant 0.5 : f32')";
    return std::nullopt;
  }
  if (st.annotation->size() != 1) {
    error(st.annotationLoc) << "'constant' has one result, but the "
                               "annotation gives "
                            << pluralize(st.annotation->size(), "type");
    return std::nullopt;
  }
  const TensorType &type = st.annotation->front();
  Operand &o = st.operands[0];
  if (o.kind == Operand::Value) {
    error(o.loc) << "'constant' takes a literal or dense<...>, found %"
                 << o.name;
    return std::nullopt;
  }
  if (!checkStaticOrParamDims(st, type))
    return std::nullopt;
  ElementType et = type.elementType;
  if (isLiteral(o)) {
    if (!fitLiteral(o, et))
      return std::nullopt;
    return type;
  }
  // dense<...>: a single number is a splat; a list must have the type's
  // (static) shape.
  const DenseLiteral &lit = *o.dense;
  bool ok = true;
  std::function<void(const DenseLiteral &)> checkLeaves =
      [&](const DenseLiteral &e) {
        if (e.isList) {
          for (const DenseLiteral &c : e.elements)
            checkLeaves(c);
          return;
        }
        if (!literalFits(e.isBool, e.isInteger, e.intValue, e.floatValue, et)) {
          std::string spelled = e.isBool      ? (e.intValue ? "true" : "false")
                                : e.isInteger ? std::to_string(e.intValue)
                                              : formatFloat(e.floatValue);
          error(e.loc) << "literal " << spelled << " "
                       << doesNotFit(e.isBool, et);
          ok = false;
        }
      };
  if (lit.isList) {
    // The literal's shape, from its first elements; then every list at
    // depth k must have shape[k] elements.
    std::vector<int64_t> shape;
    for (const DenseLiteral *e = &lit; e->isList;
         e = e->elements.empty() ? nullptr : &e->elements.front()) {
      shape.push_back(static_cast<int64_t>(e->elements.size()));
      if (e->elements.empty())
        break;
    }
    std::function<bool(const DenseLiteral &, size_t)> rectangular =
        [&](const DenseLiteral &e, size_t depth) -> bool {
      bool wantList = depth < shape.size();
      if (e.isList != wantList) {
        error(e.loc) << "dense literal is not rectangular: expected "
                     << (wantList ? "a list" : "a number") << " at depth "
                     << depth;
        return false;
      }
      if (!wantList)
        return true;
      if (static_cast<int64_t>(e.elements.size()) != shape[depth]) {
        error(e.loc) << "dense literal is not rectangular: expected "
                     << shape[depth] << " elements, found "
                     << e.elements.size();
        return false;
      }
      for (const DenseLiteral &c : e.elements)
        if (!rectangular(c, depth + 1))
          return false;
      return true;
    };
    if (!rectangular(lit, 0))
      return std::nullopt;
    bool matches = type.rank() == static_cast<int64_t>(shape.size());
    for (size_t i = 0; matches && i < shape.size(); ++i)
      matches = type.dims[i].isStatic() && type.dims[i].size == shape[i];
    if (!matches) {
      error(o.loc) << "dense literal has shape " << listString(shape)
                   << ", but the type is " << type.str();
      return std::nullopt;
    }
  }
  checkLeaves(lit);
  if (!ok)
    return std::nullopt;
  o.type = type;
  return type;
}

MaybeType Sema::inferIota(Statement &st) {
  if (!st.annotation) {
    error(st.opLoc) << "'iota' needs its type written (e.g. 'iota {axis = 0} "
                       ": i64[8]')";
    return std::nullopt;
  }
  if (st.annotation->size() != 1) {
    error(st.annotationLoc) << "'iota' has one result, but the annotation "
                               "gives "
                            << pluralize(st.annotation->size(), "type");
    return std::nullopt;
  }
  const TensorType &type = st.annotation->front();
  if (!desc->allows(type.elementType)) {
    error(st.annotationLoc) << "'iota' needs an integer or float element "
                               "type other than i1, found "
                            << type.str();
    return std::nullopt;
  }
  if (!checkStaticOrParamDims(st, type))
    return std::nullopt;
  addDefault(st, "axis");
  if (!axisAttr(st, "axis", type.rank()))
    return std::nullopt;
  return type;
}

} // namespace sema
} // namespace kina
