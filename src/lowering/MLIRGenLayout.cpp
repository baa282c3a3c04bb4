//===- MLIRGenLayout.cpp - transpose, reshape, concat, slice, gather ------===//
//
// The layout ops of Kina IR (spec, "Operations", layout and gather rows):
//  - transpose {perm}: linalg.transpose into a tensor.empty of the permuted
//    shape (negative perm entries count from the end; default: reversed);
//    the identity permutation (and rank 0) is the operand itself;
//  - reshape {shape}: tensor.collapse_shape to 1-D, then
//    tensor.expand_shape with the sizes built from the static sizes, the
//    function's symbol values and the one `-1`, which is the element count
//    divided by the product of the other dims. When the element counts are
//    not provably equal, a run-time check compares them (with `-1`, checks
//    that the other dims divide the count and are not 0, as NumPy does);
//  - concat {axis}: one linalg.generic over the result reading each element
//    from the operand whose range holds it (nested scf.if, a binary search
//    over the offsets: no operand is read out of bounds); the other dims are checked equal where not
//    provable;
//  - slice {start, stop, step}: Python slicing per dim (Shapes.h's
//    normalizeSlice, folded for static dims, in `arith` for dynamic ones),
//    then a linalg.generic reading x[first + i * step];
//  - gather {axis}: indices are checked to lie in [-n, n) (through their
//    minimum and maximum, one run-time check), then a linalg.generic reads
//    table[a..., idx < 0 ? idx + n : idx, b...].
//
//===----------------------------------------------------------------------===//
#include "MLIRGenImpl.h"
#include "kina/Shapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"

#include <algorithm>
#include <functional>
#include <limits>

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
  // The identity (also every rank-0 transpose, perm = []) moves nothing: the
  // result is the operand. linalg.transpose must not see it at rank 0: its
  // indexing maps are built from a null AffineMap there and MLIR 22's
  // verifier crashes on them.
  if (llvm::equal(perm, llvm::seq<int64_t>(0, rank))) {
    define(s, 0, x.value);
    return success();
  }
  SmallVector<Value> dims;
  for (int64_t p : perm)
    dims.push_back(dimOf(loc, x, p));
  RankedTensorType type = tensorType(inferredType(s, 0));
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
  const TensorType &outType = inferredType(s, 0);
  const Attribute *a = s.attr("shape");
  if (!a || a->value.kind != AttrValue::List ||
      static_cast<int64_t>(a->value.elements.size()) != outType.rank())
    return emitError(s.opLoc) << "internal error: bad reshape shape";

  // Element counts as a static product times dynamic factors, built only
  // where a check or the `-1` needs them.
  auto product = [&](int64_t fixed, ArrayRef<Value> factors) -> Value {
    Value p;
    for (Value f : factors)
      p = p ? arith::MulIOp::create(builder, loc, p, f).getResult() : f;
    if (!p)
      return indexConst(loc, fixed);
    if (fixed != 1)
      p = arith::MulIOp::create(builder, loc, p, indexConst(loc, fixed));
    return p;
  };
  int64_t inFixed = 1;
  SmallVector<Value> inFactors;
  for (int64_t i = 0; i < x.type.rank(); ++i) {
    if (x.type.dims[i].isStatic())
      inFixed *= x.type.dims[i].size;
    else
      inFactors.push_back(dimOf(loc, x, i));
  }

  // Sizes from the shape list; `-1` is filled in below.
  SmallVector<Value> sizes;
  int64_t inferred = -1;
  int64_t outFixed = 1;
  SmallVector<Value> outFactors;
  for (auto [i, e] : llvm::enumerate(a->value.elements)) {
    Value v;
    if (e.kind == AttrValue::Int && e.intValue == -1) {
      inferred = i;
    } else if (e.kind == AttrValue::Int) {
      v = indexConst(loc, e.intValue);
      outFixed *= e.intValue;
    } else if (e.kind == AttrValue::Symbol) {
      auto it = symbols.find(e.stringValue);
      if (it == symbols.end())
        return emitError(e.loc) << "symbolic dim '" << e.stringValue
                                << "' is not bound by an argument of the "
                                   "function";
      v = it->second;
      outFactors.push_back(v);
    } else {
      return emitError(e.loc) << "internal error: bad reshape dim";
    }
    sizes.push_back(v);
  }

  int64_t inProduct, outProduct;
  SmallVector<std::string> inNames, outNames;
  bool provable = inferred < 0 && shapeKey(x.type.dims, inProduct, inNames) &&
                  shapeKey(outType.dims, outProduct, outNames) &&
                  inProduct == outProduct && inNames == outNames;
  const char *divideMessage = "reshape: cannot reshape {0} elements into a "
                              "shape whose other dims hold {1}";
  if (inferred >= 0) {
    Value total, others;
    auto getTotal = [&] {
      if (!total)
        total = product(inFixed, inFactors);
      return total;
    };
    auto getOthers = [&] {
      if (!others)
        others = product(outFixed, outFactors);
      return others;
    };
    Value zero = indexConst(loc, 0);
    Value safe;
    if (!outFactors.empty() || outFixed == 0) {
      // NumPy: the other dims must not hold 0 elements ...
      Value nonZero = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::ne, getOthers(), zero);
      safe = arith::SelectOp::create(builder, loc, nonZero, others,
                                     indexConst(loc, 1));
      Value rem = arith::RemUIOp::create(builder, loc, getTotal(), safe);
      Value divides = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::eq, rem, zero);
      emitCheck(loc, arith::AndIOp::create(builder, loc, nonZero, divides),
                total, others, divideMessage);
    } else if (!inFactors.empty() && outFixed != 1) {
      // ... and must divide the element count (static: Sema checked it).
      safe = getOthers();
      Value rem = arith::RemUIOp::create(builder, loc, getTotal(), safe);
      emitCheck(loc,
                arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                      rem, zero),
                total, others, divideMessage);
    }
    if (outType.dims[inferred].isStatic())
      sizes[inferred] = indexConst(loc, outType.dims[inferred].size);
    else if (outType.rank() > 1) // a 1-D result needs no size
      sizes[inferred] = arith::DivUIOp::create(builder, loc, getTotal(),
                                               safe ? safe : getOthers());
  } else if (!provable) {
    Value total = product(inFixed, inFactors);
    Value others = product(outFixed, outFactors);
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
  auto flatType =
      RankedTensorType::get({srcType.hasStaticShape() ? srcType.getNumElements()
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
    // The 1-D form must be dynamic exactly when the result has dynamic dims
    // (expand_shape's rule), e.g. f64[0, 4] to [N, 0, 2].
    if (!flatType.hasStaticShape() && type.hasStaticShape())
      flat = castTo(loc, flat,
                    RankedTensorType::get({type.getNumElements()}, elem));
    else if (flatType.hasStaticShape() && !type.hasStaticShape())
      flat = castTo(loc, flat,
                    RankedTensorType::get({ShapedType::kDynamic}, elem));
    r = tensor::ExpandShapeOp::create(
        builder, loc, type, flat, ArrayRef<ReassociationIndices>{all}, shape);
  }
  define(s, 0, r);
  return success();
}

//===----------------------------------------------------------------------===//
// concat
//===----------------------------------------------------------------------===//

LogicalResult Generator::genConcat(const Statement &s) {
  Location loc = s.loc;
  SmallVector<GenValue> ins;
  for (const Operand &o : s.operands)
    ins.push_back(operandValue(o));
  const TensorType &outType = inferredType(s, 0);
  int64_t rank = outType.rank();
  std::optional<int64_t> axisOr = normalizeAxis(intAttr(s, "axis", 0), rank);
  if (!axisOr || ins.empty())
    return emitError(s.opLoc) << "internal error: bad concat";
  int64_t axis = *axisOr;

  // The other dims must agree (Sema unified them; what it could not prove
  // is checked against the result's size or operand 0's).
  SmallVector<Value> outDims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    if (d == axis)
      continue;
    Value want = knownDim(loc, outType.dims[d]);
    bool fromFirst = !want;
    if (fromFirst)
      want = dimOf(loc, ins[0], d);
    outDims[d] = want;
    for (auto [k, in] : llvm::enumerate(ins)) {
      if ((k == 0 && fromFirst) ||
          dimsProvablyEqual(in.type.dims[d], outType.dims[d]) ||
          (fromFirst &&
           dimsProvablyEqual(in.type.dims[d], ins[0].type.dims[d])))
        continue;
      Value have = dimOf(loc, in, d);
      Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                       have, want);
      emitCheck(loc, ok, have, want,
                "concat: dim " + Twine(d) + " of operand " + Twine(k) +
                    " has size {0} but the other operands have {1}");
    }
  }
  // Where each operand starts along the axis.
  SmallVector<Value> offsets;
  Value offset = indexConst(loc, 0);
  for (auto [k, in] : llvm::enumerate(ins)) {
    offsets.push_back(offset);
    Value size = dimOf(loc, in, axis);
    offset =
        k == 0 ? size
               : arith::AddIOp::create(builder, loc, offset, size).getResult();
  }
  outDims[axis] = knownDim(loc, outType.dims[axis]);
  if (!outDims[axis])
    outDims[axis] = offset;

  // One generic over the result: the element comes from the operand whose
  // range holds the axis index (nested scf.if, so that no operand is read
  // out of its bounds). bf16 elements travel through the chain as their i16
  // bits: the x86 backend turns a bf16 phi into an f32 round trip that
  // calls __truncsfbf2, which Debian 12's libgcc lacks.
  RankedTensorType type = tensorType(outType);
  Type elem = type.getElementType();
  Type carried = elem.isBF16() ? Type(builder.getI16Type()) : elem;
  Value init = emptyTensor(loc, type, outDims);
  Value r =
      generic(loc, type, {}, init, {builder.getMultiDimIdentityMap(rank)}, rank,
              {}, [&](OpBuilder &b, Location l, ValueRange) {
                SmallVector<Value> idx;
                for (int64_t d = 0; d < rank; ++d)
                  idx.push_back(linalg::IndexOp::create(b, l, d));
                auto read = [&](OpBuilder &b, size_t k) -> Value {
                  SmallVector<Value> at = idx;
                  at[axis] = arith::SubIOp::create(b, l, idx[axis], offsets[k]);
                  Value e = tensor::ExtractOp::create(b, l, ins[k].value, at);
                  if (carried != elem)
                    e = arith::BitcastOp::create(b, l, carried, e);
                  return e;
                };
                // Operands [lo, hi): a binary search on the offsets, so
                // the nesting (and an element's compares) grow as log2 of
                // the number of operands, and the IR linearly.
                std::function<Value(OpBuilder &, size_t, size_t)> pick =
                    [&](OpBuilder &b, size_t lo, size_t hi) -> Value {
                  if (hi - lo == 1)
                    return read(b, lo);
                  size_t mid = lo + (hi - lo) / 2;
                  Value below =
                      arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                            idx[axis], offsets[mid]);
                  auto ifOp = scf::IfOp::create(
                      b, l, below,
                      [&](OpBuilder &b, Location l) {
                        scf::YieldOp::create(b, l, pick(b, lo, mid));
                      },
                      [&](OpBuilder &b, Location l) {
                        scf::YieldOp::create(b, l, pick(b, mid, hi));
                      });
                  return ifOp.getResult(0);
                };
                Value e = pick(b, 0, ins.size());
                if (carried != elem)
                  e = arith::BitcastOp::create(b, l, elem, e);
                linalg::YieldOp::create(b, l, e);
              })[0];
  define(s, 0, r);
  return success();
}

//===----------------------------------------------------------------------===//
// slice
//===----------------------------------------------------------------------===//

/// The integer list attribute `name` of `s` (empty if absent).
static SmallVector<int64_t> intList(const Statement &s, StringRef name) {
  SmallVector<int64_t> r;
  if (const Attribute *a = s.attr(name.str()))
    for (const AttrValue &e : a->value.elements)
      r.push_back(e.intValue);
  return r;
}

LogicalResult Generator::genSlice(const Statement &s) {
  Location loc = s.loc;
  GenValue x = operandValue(s.operands[0]);
  const TensorType &outType = inferredType(s, 0);
  int64_t rank = x.type.rank();
  SmallVector<int64_t> start = intList(s, "start"), stop = intList(s, "stop"),
                       step = intList(s, "step");
  if (step.empty())
    step.assign(rank, 1);
  if (static_cast<int64_t>(start.size()) != rank ||
      static_cast<int64_t>(stop.size()) != rank ||
      static_cast<int64_t>(step.size()) != rank || llvm::is_contained(step, 0))
    return emitError(s.opLoc) << "internal error: bad slice bounds";

  // Per dim: the first index, the step and the length, as Python's
  // slice(start, stop, step).indices(n) (Shapes.h: normalizeSlice); folded
  // at compile time for static dims.
  SmallVector<Value> firsts(rank), steps(rank), lengths(rank);
  for (int64_t d = 0; d < rank; ++d) {
    steps[d] = indexConst(loc, step[d]);
    const Dim &dim = x.type.dims[d];
    if (dim.isStatic()) {
      SliceBounds sb = normalizeSlice(start[d], stop[d], step[d], dim.size);
      firsts[d] = indexConst(loc, sb.start);
      lengths[d] = indexConst(loc, sb.length);
      continue;
    }
    Value n = dimOf(loc, x, d);
    bool backwards = step[d] < 0;
    auto bound = [&](int64_t v) -> Value {
      Value c = indexConst(loc, v);
      if (v < 0) {
        Value t = arith::AddIOp::create(builder, loc, c, n);
        Value below = arith::CmpIOp::create(
            builder, loc, arith::CmpIPredicate::slt, t, indexConst(loc, 0));
        return arith::SelectOp::create(builder, loc, below,
                                       indexConst(loc, backwards ? -1 : 0), t);
      }
      Value beyond =
          arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge, c, n);
      Value last =
          backwards ? arith::SubIOp::create(builder, loc, n, indexConst(loc, 1))
                          .getResult()
                    : n;
      return arith::SelectOp::create(builder, loc, beyond, last, c);
    };
    Value first = bound(start[d]), end = bound(stop[d]);
    firsts[d] = first;
    // length = (hi - lo - 1) / |step| + 1 if lo < hi, else 0.
    Value lo = backwards ? end : first, hi = backwards ? first : end;
    uint64_t magnitude = backwards ? 0 - static_cast<uint64_t>(step[d])
                                   : static_cast<uint64_t>(step[d]);
    Value nonEmpty =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, lo, hi);
    Value span = arith::SubIOp::create(
        builder, loc, arith::SubIOp::create(builder, loc, hi, lo),
        indexConst(loc, 1));
    Value safeSpan = arith::SelectOp::create(builder, loc, nonEmpty, span,
                                             indexConst(loc, 0));
    Value len = arith::AddIOp::create(
        builder, loc,
        arith::DivUIOp::create(
            builder, loc, safeSpan,
            indexConst(loc, static_cast<int64_t>(magnitude))),
        indexConst(loc, 1));
    lengths[d] = arith::SelectOp::create(builder, loc, nonEmpty, len,
                                         indexConst(loc, 0));
  }
  SmallVector<Value> outDims(rank);
  for (int64_t d = 0; d < rank; ++d) {
    outDims[d] = knownDim(loc, outType.dims[d]);
    if (!outDims[d])
      outDims[d] = lengths[d];
  }
  RankedTensorType type = tensorType(outType);
  Value init = emptyTensor(loc, type, outDims);
  Value r = generic(
      loc, type, {}, init, {builder.getMultiDimIdentityMap(rank)}, rank, {},
      [&](OpBuilder &b, Location l, ValueRange) {
        SmallVector<Value> at;
        for (int64_t d = 0; d < rank; ++d) {
          Value i = linalg::IndexOp::create(b, l, d);
          at.push_back(arith::AddIOp::create(
              b, l, firsts[d], arith::MulIOp::create(b, l, i, steps[d])));
        }
        linalg::YieldOp::create(
            b, l, Value(tensor::ExtractOp::create(b, l, x.value, at)));
      })[0];
  define(s, 0, r);
  return success();
}

//===----------------------------------------------------------------------===//
// gather
//===----------------------------------------------------------------------===//

LogicalResult Generator::genGather(const Statement &s) {
  Location loc = s.loc;
  GenValue table = operandValue(s.operands[0]);
  const Operand &io = s.operands[1];
  const TensorType &outType = inferredType(s, 0);
  int64_t rank = table.type.rank();
  std::optional<int64_t> axisOr = normalizeAxis(intAttr(s, "axis", 0), rank);
  if (!axisOr)
    return emitError(s.opLoc) << "internal error: bad gather axis";
  int64_t axis = *axisOr;
  Type i64 = builder.getI64Type();
  Value n = dimOf(loc, table, axis);
  Value n64 = arith::IndexCastOp::create(builder, loc, i64, n);
  std::string message = "gather: index {0} is out of range for dim " +
                        std::to_string(axis) + " of size {1}";

  // Indices in [-n, n) or Validation Error: a literal is checked directly,
  // a tensor through its minimum and maximum.
  GenValue idx;
  bool literal = io.kind != Operand::Value;
  if (literal) {
    Value c = constInt(builder, loc, i64, io.intValue);
    Value ok =
        io.intValue < 0
            ? arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge,
                                    arith::AddIOp::create(builder, loc, c, n64),
                                    constInt(builder, loc, i64, 0))
            : arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::slt, c,
                                    n64);
    if (!table.type.dims[axis].isStatic())
      emitCheck(loc, ok, indexConst(loc, io.intValue), n, message);
    idx = {c, TensorType{ElementType::I64, {}}};
  } else {
    idx = values.lookup(io.name);
    int64_t ir = idx.type.rank();
    ElementType it = idx.type.elementType;
    SmallVector<Value> idxDims;
    auto scalarType = RankedTensorType::get({}, i64);
    Value minInit = filledTensor(
        loc, scalarType, {},
        constInt(builder, loc, i64, std::numeric_limits<int64_t>::max()));
    Value maxInit = filledTensor(
        loc, scalarType, {},
        constInt(builder, loc, i64, std::numeric_limits<int64_t>::min()));
    AffineMap all = AffineMap::get(ir, 0, {}, &ctx);
    SmallVector<unsigned> loops;
    for (int64_t i = 0; i < ir; ++i)
      loops.push_back(i);
    auto mm =
        generic(loc, TypeRange{scalarType, scalarType}, idx.value,
                ValueRange{minInit, maxInit},
                {builder.getMultiDimIdentityMap(ir), all, all}, ir, loops,
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value v =
                      it == ElementType::I64
                          ? a[0]
                          : arith::ExtSIOp::create(b, l, i64, a[0]).getResult();
                  linalg::YieldOp::create(
                      b, l,
                      ValueRange{arith::MinSIOp::create(b, l, a[1], v),
                                 arith::MaxSIOp::create(b, l, a[2], v)});
                });
    Value lowest = tensor::ExtractOp::create(builder, loc, mm[0], ValueRange{});
    Value highest =
        tensor::ExtractOp::create(builder, loc, mm[1], ValueRange{});
    Value negN = arith::SubIOp::create(builder, loc,
                                       constInt(builder, loc, i64, 0), n64);
    Value lowOk = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sge,
                                        lowest, negN);
    Value highOk = arith::CmpIOp::create(
        builder, loc, arith::CmpIPredicate::slt, highest, n64);
    Value bad = arith::SelectOp::create(builder, loc, lowOk, highest, lowest);
    emitCheck(
        loc, arith::AndIOp::create(builder, loc, lowOk, highOk),
        arith::IndexCastOp::create(builder, loc, builder.getIndexType(), bad),
        n, message);
  }

  // result[a..., i..., b...] = table[a..., wrap(idx[i...]), b...]
  int64_t ir = idx.type.rank();
  int64_t outRank = outType.rank();
  SmallVector<Value> outDims;
  for (int64_t d = 0; d < axis; ++d)
    outDims.push_back(dimOf(loc, table, d));
  for (int64_t d = 0; d < ir; ++d)
    outDims.push_back(dimOf(loc, idx, d));
  for (int64_t d = axis + 1; d < rank; ++d)
    outDims.push_back(dimOf(loc, table, d));
  RankedTensorType type = tensorType(outType);
  Value init = emptyTensor(loc, type, outDims);
  SmallVector<AffineExpr> idxExprs;
  for (int64_t d = 0; d < ir; ++d)
    idxExprs.push_back(builder.getAffineDimExpr(axis + d));
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (!literal) {
    inputs.push_back(idx.value);
    maps.push_back(AffineMap::get(outRank, 0, idxExprs, &ctx));
  }
  maps.push_back(builder.getMultiDimIdentityMap(outRank));
  ElementType it = idx.type.elementType;
  Value literalIndex = literal ? idx.value : Value();
  Value r = generic(
      loc, type, inputs, init, maps, outRank, {},
      [&](OpBuilder &b, Location l, ValueRange a) {
        Value v = literal ? literalIndex : a[0];
        if (!literal && it != ElementType::I64)
          v = arith::ExtSIOp::create(b, l, i64, v);
        Value negative = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                               v, constInt(b, l, i64, 0));
        v = arith::SelectOp::create(b, l, negative,
                                    arith::AddIOp::create(b, l, v, n64), v);
        SmallVector<Value> at;
        for (int64_t d = 0; d < axis; ++d)
          at.push_back(linalg::IndexOp::create(b, l, d));
        at.push_back(arith::IndexCastOp::create(b, l, b.getIndexType(), v));
        for (int64_t d = axis + 1; d < rank; ++d)
          at.push_back(linalg::IndexOp::create(b, l, d - 1 + ir));
        linalg::YieldOp::create(
            b, l, Value(tensor::ExtractOp::create(b, l, table.value, at)));
      })[0];
  define(s, 0, r);
  return success();
}

} // namespace detail
} // namespace kina
