//===- SemaContract.cpp - Inference of contractions and reductions --------===//
//
// Type and shape inference of the ops that contract or reduce dims
// (docs/language.md, "matmul", "Reductions", "argmax and argmin",
// "Normalisation"): matmul with batch broadcasting, reduce_* over `axes`
// with `keepdims`, argmax/argmin, softmax/log_softmax, layer_norm and
// rms_norm. Reductions over a static empty extent that have no identity
// are errors here; dynamic ones are checked at run time (MLIRGenContract).
//
//===----------------------------------------------------------------------===//
#include "Format.h"
#include "SemaImpl.h"

#include "kina/Shapes.h"

#include <cmath>

namespace kina {
namespace sema {

MaybeType Sema::inferMatmul(Statement &st) {
  if (!requireValue(st, 0) || !requireValue(st, 1) ||
      !sameElementType(st, {0, 1}))
    return std::nullopt;
  const TensorType &ta = *st.operands[0].type;
  const TensorType &tb = *st.operands[1].type;
  if (!desc->allows(ta.elementType)) {
    error(st.opLoc) << "'matmul' does not take i1 operands, found " << ta.str()
                    << " and " << tb.str();
    return std::nullopt;
  }
  if (ta.rank() == 0 || tb.rank() == 0) {
    error(st.opLoc) << "'matmul' operands must have rank >= 1, found "
                    << ta.str() << " and " << tb.str() << " (use 'mul')";
    return std::nullopt;
  }
  // NumPy: a rank-1 left operand is a row [1, K], a rank-1 right operand a
  // column [K, 1]; the added dim is removed from the result.
  std::vector<Dim> a = ta.dims, b = tb.dims;
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec)
    a.insert(a.begin(), Dim::fixed(1));
  if (bVec)
    b.push_back(Dim::fixed(1));
  const Dim &ka = a[a.size() - 1], &kb = b[b.size() - 2];
  if (!unifyDim(ka, kb)) {
    error(st.opLoc) << "'matmul' contraction dims differ: " << ta.str() << " x "
                    << tb.str() << " (" << dimToString(ka) << " vs "
                    << dimToString(kb) << ")";
    return std::nullopt;
  }
  std::optional<std::vector<Dim>> batch = broadcastShapes(
      llvm::ArrayRef<Dim>(a).drop_back(2), llvm::ArrayRef<Dim>(b).drop_back(2));
  if (!batch) {
    error(st.opLoc) << "'matmul' batch dims of " << ta.str() << " and "
                    << tb.str() << " do not broadcast";
    return std::nullopt;
  }
  std::vector<Dim> dims = *batch;
  if (!aVec)
    dims.push_back(a[a.size() - 2]);
  if (!bVec)
    dims.push_back(b[b.size() - 1]);
  return TensorType{ta.elementType, dims};
}

MaybeType Sema::inferReduce(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  bool isMaxMin = st.op == "reduce_max" || st.op == "reduce_min";
  // The op table: reduce_mean takes floats, reduce_sum/reduce_prod floats
  // and integers, reduce_max/reduce_min i1 too.
  if (!desc->allows(x.elementType) && desc->elementTypes == kFloatTypes) {
    error(st.opLoc) << "'reduce_mean' expects a float tensor, found " << x.str()
                    << " (cast it to a float type first)";
    return std::nullopt;
  }
  if (!desc->allows(x.elementType)) {
    error(st.opLoc) << "'" << st.op << "' does not take i1, found " << x.str()
                    << " (reduce_max/reduce_min are any/all; or cast)";
    return std::nullopt;
  }
  addDefault(st, "axes");
  addDefault(st, "keepdims");
  const Attribute *axesAttr = st.attr("axes");
  std::vector<bool> reduced(x.rank(), false);
  if (axesAttr->value.elements.empty())
    reduced.assign(x.rank(), true);
  for (const AttrValue &e : axesAttr->value.elements) {
    std::optional<int64_t> ax = normalizeAxis(e.intValue, x.rank());
    if (!ax) {
      error(e.loc) << "'" << st.op << "' axis " << e.intValue
                   << " is out of range for " << x.str();
      return std::nullopt;
    }
    if (reduced[*ax]) {
      error(e.loc) << "'" << st.op << "' axes name axis " << *ax << " twice";
      return std::nullopt;
    }
    reduced[*ax] = true;
  }
  bool keepdims = st.attr("keepdims")->value.boolValue;
  TensorType r{x.elementType, {}};
  for (int64_t i = 0; i < x.rank(); ++i) {
    const Dim &d = x.dims[i];
    if (reduced[i] && isMaxMin && d.isStatic() && d.size == 0) {
      error(st.opLoc) << "'" << st.op << "' over an empty extent: dim " << i
                      << " of " << x.str() << " has size 0";
      return std::nullopt;
    }
    if (!reduced[i])
      r.dims.push_back(d);
    else if (keepdims)
      r.dims.push_back(Dim::fixed(1));
  }
  return r;
}

MaybeType Sema::inferArgReduce(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  addDefault(st, "axis");
  addDefault(st, "keepdims");
  std::optional<int64_t> axis = axisAttr(st, "axis", x.rank());
  if (!axis)
    return std::nullopt;
  const Dim &d = x.dims[*axis];
  if (d.isStatic() && d.size == 0) {
    error(st.opLoc) << "'" << st.op << "' over an empty extent: dim " << *axis
                    << " of " << x.str() << " has size 0";
    return std::nullopt;
  }
  bool keepdims = st.attr("keepdims")->value.boolValue;
  TensorType r{ElementType::I64, x.dims};
  if (keepdims)
    r.dims[*axis] = Dim::fixed(1);
  else
    r.dims.erase(r.dims.begin() + *axis);
  return r;
}

MaybeType Sema::inferSoftmax(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  if (!desc->allows(x.elementType)) {
    error(st.opLoc) << "'" << st.op
                    << "' expects a float tensor (f64, f32, f16, bf16), "
                       "found "
                    << x.str();
    return std::nullopt;
  }
  addDefault(st, "axis");
  if (!axisAttr(st, "axis", x.rank()))
    return std::nullopt;
  return x;
}

MaybeType Sema::inferNorm(Statement &st, bool layerNorm) {
  size_t n = layerNorm ? 3 : 2;
  std::vector<size_t> all;
  for (size_t i = 0; i < n; ++i) {
    if (!requireValue(st, i))
      return std::nullopt;
    all.push_back(i);
  }
  if (!sameElementType(st, all))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  if (!desc->allows(x.elementType)) {
    error(st.opLoc) << "'" << st.op
                    << "' expects float tensors (f64, f32, f16, bf16), "
                       "found "
                    << x.str();
    return std::nullopt;
  }
  addDefault(st, "axis");
  addDefault(st, "epsilon");
  const AttrValue &e = st.attr("epsilon")->value;
  if (!std::isfinite(e.floatValue) || e.floatValue < 0) {
    error(e.loc) << "'" << st.op
                 << "' epsilon must be a finite number >= 0, found "
                 << formatFloat(e.floatValue);
    return std::nullopt;
  }
  std::optional<int64_t> axis = axisAttr(st, "axis", x.rank());
  if (!axis)
    return std::nullopt;
  llvm::ArrayRef<Dim> trailing = llvm::ArrayRef<Dim>(x.dims).drop_front(*axis);
  const char *names[] = {"", "%g (scale)", "%b (bias)"};
  for (size_t i = 1; i < n; ++i) {
    const TensorType &p = *st.operands[i].type;
    bool ok = p.rank() == static_cast<int64_t>(trailing.size());
    for (size_t k = 0; ok && k < trailing.size(); ++k)
      ok = unifyDim(p.dims[k], trailing[k]).has_value();
    if (!ok) {
      error(st.opLoc) << "'" << st.op << "' operand " << i + 1 << " "
                      << names[i] << " must have the dims "
                      << shapeString(trailing) << " of " << x.str()
                      << " from axis " << *axis << ", found " << p.str();
      return std::nullopt;
    }
  }
  return x;
}

} // namespace sema
} // namespace kina
