//===- SemaElementwise.cpp - Inference of the elementwise ops -------------===//
//
// Type and shape inference of the elementwise ops (docs/language.md,
// "Unary float ops" to "cast", and `broadcast_to`): the unary ops, the
// binary ops and comparisons with NumPy broadcasting (Shapes.h), select,
// cast and broadcast_to. The element types each op takes come from its row
// of the op table (OpTable.h); the messages name them.
//
//===----------------------------------------------------------------------===//
#include "Format.h"
#include "SemaImpl.h"

#include "kina/Shapes.h"

namespace kina {
namespace sema {

MaybeType Sema::inferUnary(Statement &st) {
  if (!typeLiteralGroup(st, {0}))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  // The element types come from the op table; the message from the family.
  OpFamily family = desc->family;
  bool allowed = desc->allows(x.elementType);
  if (family == OpFamily::UnaryFloat && !allowed) {
    error(st.opLoc) << "'" << st.op
                    << "' expects a float tensor (f64, f32, f16, bf16), "
                       "found "
                    << x.str();
    return std::nullopt;
  }
  if (family == OpFamily::UnaryNumeric && !allowed) {
    error(st.opLoc) << "'" << st.op
                    << "' expects a float or integer tensor, found " << x.str()
                    << " (use 'not' on i1)";
    return std::nullopt;
  }
  if (family == OpFamily::Not && !allowed) {
    error(st.opLoc) << "'not' expects an i1 tensor, found " << x.str();
    return std::nullopt;
  }
  if (st.op == "gelu") {
    if (const Attribute *a = st.attr("approximate")) {
      if (a->value.stringValue != "none" && a->value.stringValue != "tanh") {
        error(a->value.loc)
            << "'gelu' approximate must be \"none\" or "
               "\"tanh\", found "
            << quoteString(a->value.stringValue)
            << didYouMean(a->value.stringValue, {"none", "tanh"}, "", '"');
        return std::nullopt;
      }
    } else {
      addDefault(st, "approximate");
    }
  }
  return x;
}

MaybeType Sema::inferBinary(Statement &st) {
  OpFamily family = desc->family;
  if (!typeLiteralGroup(st, {0, 1}) || !sameElementType(st, {0, 1}))
    return std::nullopt;
  const TensorType &a = *st.operands[0].type;
  const TensorType &b = *st.operands[1].type;
  // On i1, NumPy's add and maximum are `or`, multiply and minimum `and`.
  if (!desc->allows(a.elementType)) {
    error(st.opLoc) << "'" << st.op << "' does not take i1 operands, found "
                    << a.str() << " and " << b.str()
                    << " (on i1, add/max is or, mul/min is and; or 'cast')";
    return std::nullopt;
  }
  int64_t bad = 0;
  std::optional<std::vector<Dim>> dims = broadcastShapes(a.dims, b.dims, &bad);
  if (!dims) {
    error(st.opLoc) << "'" << st.op << "' operands " << a.str() << " and "
                    << b.str()
                    << " do not broadcast (static sizes differ in result "
                       "dim "
                    << bad << ")";
    return std::nullopt;
  }
  return TensorType{
      family == OpFamily::Compare ? ElementType::I1 : a.elementType, *dims};
}

MaybeType Sema::inferSelect(Statement &st) {
  Operand &c = st.operands[0];
  if (c.kind == Operand::BoolLiteral) {
    c.type = TensorType{ElementType::I1, {}};
  } else if (c.kind != Operand::Value) {
    error(c.loc) << "the condition of 'select' must be i1 (a %value, true "
                    "or false), found the literal "
                 << literalSpelling(c);
    return std::nullopt;
  } else if (c.type->elementType != ElementType::I1) {
    error(st.opLoc) << "the condition of 'select' must be i1, found "
                    << c.type->str();
    return std::nullopt;
  }
  if (!typeLiteralGroup(st, {1, 2}) || !sameElementType(st, {1, 2}))
    return std::nullopt;
  const TensorType &a = *st.operands[1].type;
  const TensorType &b = *st.operands[2].type;
  std::optional<std::vector<Dim>> dims = broadcastShapes(c.type->dims, a.dims);
  if (dims)
    dims = broadcastShapes(*dims, b.dims);
  if (!dims) {
    error(st.opLoc) << "'select' operands " << c.type->str() << ", " << a.str()
                    << " and " << b.str()
                    << " do not broadcast (static sizes differ)";
    return std::nullopt;
  }
  return TensorType{a.elementType, *dims};
}

MaybeType Sema::inferCast(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  TensorType t = *st.operands[0].type;
  t.elementType = st.attr("to")->value.typeValue;
  return t;
}

MaybeType Sema::inferBroadcastTo(Statement &st) {
  if (!requireValue(st, 0) || !checkShapeList(st, /*allowMinusOne=*/false))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  TensorType r{x.elementType, {}};
  for (const AttrValue &e : st.attr("shape")->value.elements)
    r.dims.push_back(e.kind == AttrValue::Symbol ? Dim::named(e.stringValue)
                                                 : Dim::fixed(e.intValue));
  if (x.rank() > r.rank()) {
    error(st.opLoc) << "'broadcast_to' cannot lower the rank: " << x.str()
                    << " to " << r.str();
    return std::nullopt;
  }
  int64_t off = r.rank() - x.rank();
  for (int64_t i = 0; i < x.rank(); ++i) {
    const Dim &d = x.dims[i], &t = r.dims[off + i];
    if (d.isStatic() && d.size == 1)
      continue;
    if (!unifyDim(d, t)) {
      error(st.opLoc) << "'broadcast_to' cannot broadcast " << x.str() << " to "
                      << r.str() << " (dim " << i << ": " << dimToString(d)
                      << " vs " << dimToString(t) << ")";
      return std::nullopt;
    }
  }
  return r;
}

} // namespace sema
} // namespace kina
