//===- MLIRGenLayout.cpp - transpose and reshape --------------------------===//
//
// The layout ops of Kina IR (spec, "Operations", layout row) that are
// lowered so far:
//  - transpose {perm}: linalg.transpose into a tensor.empty of the permuted
//    shape (negative perm entries count from the end);
//  - reshape {shape}: tensor.collapse_shape to 1-D, then
//    tensor.expand_shape with the sizes built from the static sizes, the
//    function's symbol values and the one `-1`, which is the element count
//    divided by the product of the other dims. When the
//    element counts are not provably equal, a run-time check compares them
//    (and, with `-1`, checks that the other dims divide the count, as
//    NumPy's reshape does: a size-0 product is an error there too).
// concat, slice and gather are not lowered yet (a located error).
//
//===----------------------------------------------------------------------===//
#include "MLIRGenImpl.h"
#include "kina/Shapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <algorithm>

using namespace mlir;

namespace kina {
namespace detail {

LogicalResult Generator::genTranspose(const Statement &s) {
  Location loc = s.loc;
  GenValue x = operandValue(s.operands[0]);
  int64_t rank = x.type.rank();
  SmallVector<int64_t> perm;
  const Attribute *a = s.attr("perm");
  if (a && a->value.kind == AttrValue::List) {
    for (const AttrValue &e : a->value.elements) {
      std::optional<int64_t> p = normalizeAxis(e.intValue, rank);
      if (!p)
        return emitError(s.opLoc) << "internal error: bad permutation";
      perm.push_back(*p);
    }
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) // NumPy's default: reverse
      perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitError(s.opLoc) << "internal error: bad permutation";
  SmallVector<Value> dims;
  for (int64_t p : perm)
    dims.push_back(dimOf(loc, x, p));
  RankedTensorType type = tensorType(s.resultTypes[0]);
  Value init = emptyTensor(loc, type, dims);
  Value r = linalg::TransposeOp::create(builder, loc, x.value, init, perm)
                ->getResult(0);
  define(s, 0, r);
  return success();
}

/// Static product and sorted symbol names of a shape; false if it has `?`.
static bool shapeKey(ArrayRef<Dim> dims, int64_t &product,
                     SmallVectorImpl<std::string> &names) {
  product = 1;
  for (const Dim &d : dims) {
    if (d.isStatic())
      product *= d.size;
    else if (d.kind == Dim::Symbolic)
      names.push_back(d.symbol);
    else
      return false;
  }
  llvm::sort(names);
  return true;
}

LogicalResult Generator::genReshape(const Statement &s) {
  Location loc = s.loc;
  GenValue x = operandValue(s.operands[0]);
  const TensorType &outType = s.resultTypes[0];
  const Attribute *a = s.attr("shape");
  if (!a || a->value.kind != AttrValue::List ||
      static_cast<int64_t>(a->value.elements.size()) != outType.rank())
    return emitError(s.opLoc) << "internal error: bad reshape shape";

  Value total = indexConst(loc, 1);
  for (int64_t i = 0; i < x.type.rank(); ++i)
    total = arith::MulIOp::create(builder, loc, total, dimOf(loc, x, i));

  // Sizes from the shape list; `-1` is filled in below.
  SmallVector<Value> sizes;
  int64_t inferred = -1;
  Value others = indexConst(loc, 1);
  for (auto [i, e] : llvm::enumerate(a->value.elements)) {
    Value v;
    if (e.kind == AttrValue::Int && e.intValue == -1) {
      inferred = i;
    } else if (e.kind == AttrValue::Int) {
      v = indexConst(loc, e.intValue);
    } else if (e.kind == AttrValue::Symbol) {
      auto it = symbols.find(e.stringValue);
      if (it == symbols.end())
        return emitError(e.loc) << "symbolic dim '" << e.stringValue
                                << "' is not bound by an argument of the "
                                   "function";
      v = it->second;
    } else {
      return emitError(e.loc) << "internal error: bad reshape dim";
    }
    sizes.push_back(v);
    if (v)
      others = arith::MulIOp::create(builder, loc, others, v);
  }

  int64_t inProduct, outProduct;
  SmallVector<std::string> inNames, outNames;
  bool provable = inferred < 0 && shapeKey(x.type.dims, inProduct, inNames) &&
                  shapeKey(outType.dims, outProduct, outNames) &&
                  inProduct == outProduct && inNames == outNames;
  Value zero = indexConst(loc, 0);
  if (inferred >= 0) {
    // NumPy: the other dims must divide the element count (and not be 0).
    Value nonZero = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::ne, others, zero);
    Value safe = arith::SelectOp::create(builder, loc, nonZero, others,
                                         indexConst(loc, 1));
    Value rem = arith::RemUIOp::create(builder, loc, total, safe);
    Value divides = arith::CmpIOp::create(builder, loc,
                                          arith::CmpIPredicate::eq, rem, zero);
    Value ok = arith::AndIOp::create(builder, loc, nonZero, divides);
    emitCheck(loc, ok, total, others,
              "reshape: cannot reshape {0} elements into a shape whose "
              "other dims hold {1}");
    sizes[inferred] = arith::DivUIOp::create(builder, loc, total, safe);
  } else if (!provable) {
    Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                     total, others);
    emitCheck(loc, ok, total, others,
              "reshape: the operand has {0} elements but the shape " +
                  outType.str() + " holds {1}");
  }
  // Through a 1-D tensor: collapse all dims, then expand to the new shape
  // with explicit output sizes (tensor.reshape's dynamic form has no LLVM
  // lowering).
  RankedTensorType type = tensorType(outType);
  auto srcType = cast<RankedTensorType>(x.value.getType());
  Type elem = type.getElementType();
  auto flatType = RankedTensorType::get(
      {srcType.hasStaticShape() ? srcType.getNumElements()
                                : ShapedType::kDynamic},
      elem);
  Value flat = x.value;
  if (srcType.getRank() == 0) {
    flat = tensor::ExpandShapeOp::create(
        builder, loc, RankedTensorType::get({1}, elem), x.value,
        ArrayRef<ReassociationIndices>{},
        ArrayRef<OpFoldResult>{builder.getIndexAttr(1)});
    flatType = cast<RankedTensorType>(flat.getType());
  } else if (srcType.getRank() > 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < srcType.getRank(); ++i)
      all.push_back(i);
    flat = tensor::CollapseShapeOp::create(builder, loc, flatType, x.value,
                                           ArrayRef<ReassociationIndices>{all});
  }
  Value r;
  if (type.getRank() == 0) {
    // One element (checked above): a static 1-D tensor, then collapse.
    Value one = castTo(loc, flat, RankedTensorType::get({1}, elem));
    r = tensor::CollapseShapeOp::create(builder, loc, type, one,
                                        ArrayRef<ReassociationIndices>{});
  } else if (type.getRank() == 1) {
    r = castTo(loc, flat, type);
  } else {
    ReassociationIndices all;
    SmallVector<OpFoldResult> shape;
    for (int64_t i = 0; i < type.getRank(); ++i) {
      all.push_back(i);
      if (type.isDynamicDim(i))
        shape.push_back(sizes[i]);
      else
        shape.push_back(builder.getIndexAttr(type.getDimSize(i)));
    }
    if (!flatType.hasStaticShape() && type.hasStaticShape())
      flat = castTo(loc, flat,
                    RankedTensorType::get({type.getNumElements()}, elem));
    r = tensor::ExpandShapeOp::create(builder, loc, type, flat,
                                      ArrayRef<ReassociationIndices>{all},
                                      shape);
  }
  define(s, 0, r);
  return success();
}

} // namespace detail
} // namespace kina
