//===- MLIRGenContract.cpp - matmul, reductions, softmax, norms -----------===//
//
// The Kina ops that contract or reduce dims (spec, "Operations"):
//  - matmul: 2-D x 2-D is linalg.matmul on a zero-filled init (K = 0 gives
//    zeros); batched and rank-1 operands (NumPy matmul: a 1-D operand gets
//    a unit dim prepended/appended that is then dropped) are one
//    linalg.generic with a reduction iterator, batch dims broadcast like
//    elementwise operands. A K that is not provably equal on both sides is
//    a run-time check;
//  - reduce_sum/mean/max/min/prod: linalg.generic with reduction iterators
//    on a linalg.fill'ed init (the reduction's identity; of a rank-0
//    operand, an elementwise generic: identity op x), mean divides by
//    the element count (0/0 = NaN over an empty extent, like NumPy),
//    max/min over a dynamic extent check that it is not empty, keepdims
//    re-inserts unit dims with tensor.expand_shape;
//  - argmax/argmin: one generic with two outputs (best value, i64 index),
//    first index on ties, the first NaN wins;
//  - softmax/log_softmax: the stable form written out (row max, exp of the
//    difference, row sum), not linalg.softmax;
//  - layer_norm/rms_norm over the dims from `axis` to the last (ONNX's
//    LayerNormalization): the mean, then the variance around it, then
//    (x - mean) / sqrt(var + eps) * g + b; rms_norm x / sqrt(mean(x^2) +
//    eps) * g. %g and %b must have exactly the normalised dims (checked at
//    run time where not provable).
// f16 and bf16 accumulate in f32 and are truncated once at the end.
//
//===----------------------------------------------------------------------===//
#include "MLIRGenImpl.h"
#include "kina/Shapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cstring>
#include <limits>

using namespace mlir;

namespace kina {
namespace detail {

/// Map from `rank` loops to the loops not in `dropped` (sorted).
static AffineMap keptMap(OpBuilder &b, int64_t rank,
                         ArrayRef<int64_t> dropped) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(dropped, i))
      exprs.push_back(b.getAffineDimExpr(i));
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

/// The Kina type of `t` without the dims in `dropped`.
static TensorType dropDims(const TensorType &t, ArrayRef<int64_t> dropped) {
  TensorType r{t.elementType, {}};
  for (int64_t i = 0; i < t.rank(); ++i)
    if (!llvm::is_contained(dropped, i))
      r.dims.push_back(t.dims[i]);
  return r;
}

static SmallVector<unsigned> toUnsigned(ArrayRef<int64_t> v) {
  return SmallVector<unsigned>(v.begin(), v.end());
}

LogicalResult Generator::checkNonEmpty(const Statement &s, const GenValue &v,
                                       ArrayRef<int64_t> dims) {
  Location loc = s.loc;
  for (int64_t d : dims) {
    const Dim &dim = v.type.dims[d];
    if (dim.isStatic()) {
      if (dim.size == 0)
        return emitError(s.opLoc)
               << "'" << s.op << "' over an empty dimension (dim " << d
               << " of " << v.type.str() << " has size 0)";
      continue;
    }
    Value n = dimOf(loc, v, d);
    Value zero = indexConst(loc, 0);
    Value ok =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::sgt, n, zero);
    emitCheck(loc, ok, n, zero,
              s.op + ": reduction over an empty dimension (dim " + Twine(d) +
                  " has size {0})");
  }
  return success();
}

/// A parallel generic applying `fn` to one tensor, into a fresh tensor of
/// element type `elem` (used to truncate f32 accumulators and finish means).
static Value mapTensor(Generator &g, Location loc, Value in,
                       const TensorType &kinaType, Type elem,
                       ArrayRef<Value> dims,
                       function_ref<Value(OpBuilder &, Location, Value)> fn) {
  int64_t rank = kinaType.rank();
  RankedTensorType rt = g.tensorType(kinaType, elem);
  Value init = g.emptyTensor(loc, rt, dims);
  AffineMap id = g.builder.getMultiDimIdentityMap(rank);
  return g.generic(loc, rt, in, init, {id, id}, rank, {},
                   [&](OpBuilder &b, Location l, ValueRange args) {
                     linalg::YieldOp::create(b, l, fn(b, l, args[0]));
                   })[0];
}

//===----------------------------------------------------------------------===//
// matmul
//===----------------------------------------------------------------------===//

LogicalResult Generator::genMatmul(const Statement &s) {
  Location loc = s.loc;
  GenValue a = operandValue(s.operands[0]);
  GenValue bm = operandValue(s.operands[1]);
  const TensorType &outType = inferredType(s, 0);
  ElementType t = a.type.elementType;
  int64_t ra = a.type.rank(), rb = bm.type.rank();
  if (ra == 0 || rb == 0)
    return emitError(s.opLoc) << "internal error: matmul of a scalar";
  bool hasM = ra >= 2, hasN = rb >= 2;
  int64_t nb = outType.rank() - hasM - hasN; // batch dims of the result
  if (nb < 0)
    return emitError(s.opLoc)
           << "internal error: bad matmul result type " << outType.str();

  // K = a[-1] must equal b[-2] (b[0] when b is 1-D).
  int64_t ka = ra - 1, kb = hasN ? rb - 2 : 0;
  if (!dimsProvablyEqual(a.type.dims[ka], bm.type.dims[kb])) {
    Value da = dimOf(loc, a, ka), db = dimOf(loc, bm, kb);
    Value ok =
        arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, da, db);
    emitCheck(loc, ok, da, db,
              "matmul: contraction dim " + Twine(ka) +
                  " of operand 0 has size {0} but dim " + Twine(kb) +
                  " of operand 1 has size {1}");
  }

  Type acc = computeType(ctx, t);
  Value zero = emitReductionInit(builder, loc, "sum", t);
  RankedTensorType accType = tensorType(outType, acc);
  Value result;
  SmallVector<Value> outDims;

  if (ra == 2 && rb == 2 && t != ElementType::I1) {
    outDims = {dimOf(loc, a, 0), dimOf(loc, bm, 1)};
    Value init = filledTensor(loc, accType, outDims, zero);
    result = linalg::MatmulOp::create(builder, loc, TypeRange{accType},
                                      ValueRange{a.value, bm.value},
                                      ValueRange{init})
                 ->getResult(0);
  } else {
    SmallVector<GenValue> storage;
    storage.reserve(4);
    storage.push_back(a);
    storage.push_back(bm);
    SmallVector<BroadcastInput> ins(2);
    ins[0].value = &storage[0];
    ins[0].operandNo = 0;
    for (int64_t i = 0; i < (hasM ? ra - 2 : 0); ++i)
      ins[0].dims.push_back(i);
    ins[1].value = &storage[1];
    ins[1].operandNo = 1;
    for (int64_t i = 0; i < (hasN ? rb - 2 : 0); ++i)
      ins[1].dims.push_back(i);
    ArrayRef<Dim> batchDims(outType.dims.data(), nb);
    broadcast(loc, "matmul", batchDims, ins, outDims);
    for (BroadcastInput &in : ins)
      if (llvm::is_contained(in.reads, DimRead::Stretch)) {
        storage.push_back(stretch(loc, in, batchDims, outDims));
        in.value = &storage.back();
      }
    unsigned numLoops = nb + hasM + hasN + 1;
    unsigned mLoop = nb, nLoop = nb + hasM, kLoop = numLoops - 1;
    SmallVector<unsigned> aExtra, bExtra;
    if (hasM)
      aExtra.push_back(mLoop);
    aExtra.push_back(kLoop);
    bExtra.push_back(kLoop);
    if (hasN)
      bExtra.push_back(nLoop);
    SmallVector<AffineExpr> outExprs;
    for (unsigned i = 0; i < nb; ++i)
      outExprs.push_back(builder.getAffineDimExpr(i));
    if (hasM) {
      outExprs.push_back(builder.getAffineDimExpr(mLoop));
      outDims.push_back(dimOf(loc, a, ra - 2));
    }
    if (hasN) {
      outExprs.push_back(builder.getAffineDimExpr(nLoop));
      outDims.push_back(dimOf(loc, bm, rb - 1));
    }
    SmallVector<AffineMap> maps = {
        broadcastMap(ins[0], numLoops, 0, nb, aExtra),
        broadcastMap(ins[1], numLoops, 0, nb, bExtra),
        AffineMap::get(numLoops, 0, outExprs, &ctx)};
    Value init = filledTensor(loc, accType, outDims, zero);
    result = generic(
        loc, accType, ValueRange{ins[0].value->value, ins[1].value->value},
        init, maps, numLoops, {kLoop},
        [&](OpBuilder &b, Location l, ValueRange args) {
          Value x = widen(b, l, t, args[0]);
          Value y = widen(b, l, t, args[1]);
          Value r;
          if (isFloat(t))
            r = arith::AddFOp::create(b, l, args[2],
                                      arith::MulFOp::create(b, l, x, y));
          else if (t == ElementType::I1) // any(a and b)
            r = arith::OrIOp::create(b, l, args[2],
                                     arith::AndIOp::create(b, l, x, y));
          else
            r = arith::AddIOp::create(b, l, args[2],
                                      arith::MulIOp::create(b, l, x, y));
          linalg::YieldOp::create(b, l, r);
        })[0];
  }
  if (computesInF32(t))
    result = mapTensor(
        *this, loc, result, outType, toMLIRType(ctx, t), outDims,
        [&](OpBuilder &b, Location l, Value v) { return narrow(b, l, t, v); });
  define(s, 0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

/// The reduced axes of `s` (attribute `axes`, normalised, sorted, unique;
/// absent or empty = all dims of a rank-`rank` operand).
static FailureOr<SmallVector<int64_t>> reducedAxes(const Statement &s,
                                                   int64_t rank) {
  SmallVector<int64_t> axes;
  const Attribute *a = s.attr("axes");
  if (a && a->value.kind == AttrValue::List) {
    for (const AttrValue &e : a->value.elements) {
      std::optional<int64_t> ax = normalizeAxis(e.intValue, rank);
      if (!ax)
        return emitError(s.opLoc)
               << "internal error: axis " << e.intValue << " out of range";
      if (!llvm::is_contained(axes, *ax))
        axes.push_back(*ax);
    }
  } else if (a && a->value.kind == AttrValue::Int) {
    std::optional<int64_t> ax = normalizeAxis(a->value.intValue, rank);
    if (!ax)
      return emitError(s.opLoc) << "internal error: axis out of range";
    axes.push_back(*ax);
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  llvm::sort(axes);
  return axes;
}

LogicalResult Generator::genReduction(const Statement &s) {
  Location loc = s.loc;
  GenValue x = operandValue(s.operands[0]);
  ElementType t = x.type.elementType;
  StringRef kind = StringRef(s.op).drop_front(strlen("reduce_"));
  int64_t rank = x.type.rank();
  FailureOr<SmallVector<int64_t>> axesOr = reducedAxes(s, rank);
  if (failed(axesOr))
    return failure();
  SmallVector<int64_t> axes = *axesOr;
  bool keepDims = boolAttr(s, "keepdims", false);
  bool mean = kind == "mean";
  if (mean && !isFloat(t))
    return emitError(s.opLoc)
           << "'reduce_mean' is not defined on " << elementTypeName(t);
  if ((kind == "max" || kind == "min") && failed(checkNonEmpty(s, x, axes)))
    return failure();
  StringRef combine = mean ? "sum" : kind;

  TensorType reducedType = dropDims(x.type, axes);
  SmallVector<Value> reducedDims;
  for (int64_t i = 0; i < rank; ++i)
    if (!llvm::is_contained(axes, i))
      reducedDims.push_back(dimOf(loc, x, i));
  Type acc = computeType(ctx, t);
  Value identity = emitReductionInit(builder, loc, combine, t);
  Value result;
  if (axes.empty()) {
    // A rank-0 operand: one element, no loop to reduce, so the result is
    // identity (op) x, computed elementwise. A reduction generic here would
    // have only parallel loops and read its init, and MLIR 22's elementwise
    // fusion fuses such a producer into a consumer that broadcasts it
    // keeping the init as an output under a non-injective map: the sum was
    // accumulated once per element of the consumer (3.75 gave 7.5, 11.25...).
    result = mapTensor(*this, loc, x.value, reducedType, acc, {},
                       [&](OpBuilder &b, Location l, Value v) {
                         return emitCombine(b, l, combine, t, identity,
                                            widen(b, l, t, v));
                       });
  } else {
    Value init =
        filledTensor(loc, tensorType(reducedType, acc), reducedDims, identity);
    SmallVector<AffineMap> maps = {builder.getMultiDimIdentityMap(rank),
                                   keptMap(builder, rank, axes)};
    result = generic(loc, init.getType(), x.value, init, maps, rank,
                     toUnsigned(axes),
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value v = widen(b, l, t, args[0]);
                       linalg::YieldOp::create(
                           b, l, emitCombine(b, l, combine, t, args[1], v));
                     })[0];
  }

  if (mean || computesInF32(t)) {
    Value count;
    if (mean) {
      // The element count as a float: 0 over an empty extent (0/0 = NaN).
      int64_t staticCount = 1;
      Value n;
      for (int64_t ax : axes) {
        const Dim &d = x.type.dims[ax];
        if (d.isStatic()) {
          staticCount *= d.size;
          continue;
        }
        Value size = dimOf(loc, x, ax);
        n = n ? arith::MulIOp::create(builder, loc, n, size).getResult() : size;
      }
      if (!n)
        n = indexConst(loc, staticCount);
      else if (staticCount != 1)
        n = arith::MulIOp::create(builder, loc, n,
                                  indexConst(loc, staticCount));
      count = arith::SIToFPOp::create(
          builder, loc, acc,
          arith::IndexCastOp::create(builder, loc, builder.getI64Type(), n));
    }
    result = mapTensor(*this, loc, result, reducedType, toMLIRType(ctx, t),
                       reducedDims, [&](OpBuilder &b, Location l, Value v) {
                         if (count)
                           v = arith::DivFOp::create(b, l, v, count);
                         return narrow(b, l, t, v);
                       });
  }
  if (keepDims)
    result = expandUnitDims(loc, result, tensorType(inferredType(s, 0)), axes,
                            reducedDims);
  define(s, 0, result);
  return success();
}

LogicalResult Generator::genArgReduction(const Statement &s) {
  Location loc = s.loc;
  GenValue x = operandValue(s.operands[0]);
  ElementType t = x.type.elementType;
  bool isMax = s.op == "argmax";
  int64_t rank = x.type.rank();
  if (rank == 0)
    return emitError(s.opLoc) << "internal error: '" << s.op << "' of a scalar";
  std::optional<int64_t> axisOr = normalizeAxis(intAttr(s, "axis", -1), rank);
  if (!axisOr)
    return emitError(s.opLoc) << "internal error: axis out of range";
  int64_t axis = *axisOr;
  bool keepDims = boolAttr(s, "keepdims", false);
  if (failed(checkNonEmpty(s, x, {axis})))
    return failure();

  TensorType reducedType = dropDims(x.type, {axis});
  SmallVector<Value> reducedDims;
  for (int64_t i = 0; i < rank; ++i)
    if (i != axis)
      reducedDims.push_back(dimOf(loc, x, i));
  Type acc = computeType(ctx, t);
  Type i64 = builder.getI64Type();
  Value bestInit =
      filledTensor(loc, tensorType(reducedType, acc), reducedDims,
                   emitReductionInit(builder, loc, isMax ? "max" : "min", t));
  Value indexInit = filledTensor(loc, tensorType(reducedType, i64), reducedDims,
                                 constInt(builder, loc, i64, 0));
  AffineMap kept = keptMap(builder, rank, {axis});
  SmallVector<AffineMap> maps = {builder.getMultiDimIdentityMap(rank), kept,
                                 kept};
  auto results = generic(
      loc, TypeRange{bestInit.getType(), indexInit.getType()}, x.value,
      ValueRange{bestInit, indexInit}, maps, rank, {unsigned(axis)},
      [&](OpBuilder &b, Location l, ValueRange args) {
        Value v = widen(b, l, t, args[0]);
        Value best = args[1], bestIndex = args[2];
        Value i = arith::IndexCastOp::create(
            b, l, i64, linalg::IndexOp::create(b, l, axis));
        // Ties keep the smaller index whatever the visiting order.
        Value earlier = arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt,
                                              i, bestIndex);
        Value take;
        if (isFloat(t)) {
          Value better = arith::CmpFOp::create(
              b, l,
              isMax ? arith::CmpFPredicate::OGT : arith::CmpFPredicate::OLT, v,
              best);
          Value vNan =
              arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO, v, v);
          Value bestNan = arith::CmpFOp::create(b, l, arith::CmpFPredicate::UNO,
                                                best, best);
          Value notBestNan = arith::XOrIOp::create(
              b, l, bestNan, constInt(b, l, b.getI1Type(), 1));
          // NaN is the extreme value: it replaces any non-NaN best.
          Value nanWins = arith::AndIOp::create(b, l, vNan, notBestNan);
          Value same = arith::OrIOp::create(
              b, l,
              arith::CmpFOp::create(b, l, arith::CmpFPredicate::OEQ, v, best),
              arith::AndIOp::create(b, l, vNan, bestNan));
          take = arith::OrIOp::create(
              b, l, arith::OrIOp::create(b, l, better, nanWins),
              arith::AndIOp::create(b, l, same, earlier));
        } else {
          bool u = t == ElementType::I1;
          auto pred =
              isMax
                  ? (u ? arith::CmpIPredicate::ugt : arith::CmpIPredicate::sgt)
                  : (u ? arith::CmpIPredicate::ult : arith::CmpIPredicate::slt);
          Value better = arith::CmpIOp::create(b, l, pred, v, best);
          Value same =
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::eq, v, best);
          take = arith::OrIOp::create(
              b, l, better, arith::AndIOp::create(b, l, same, earlier));
        }
        linalg::YieldOp::create(
            b, l,
            ValueRange{arith::SelectOp::create(b, l, take, v, best),
                       arith::SelectOp::create(b, l, take, i, bestIndex)});
      });
  Value result = results[1];
  if (keepDims)
    result = expandUnitDims(loc, result, tensorType(inferredType(s, 0)), {axis},
                            reducedDims);
  define(s, 0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// softmax, log_softmax
//===----------------------------------------------------------------------===//

LogicalResult Generator::genSoftmax(const Statement &s) {
  Location loc = s.loc;
  GenValue x = operandValue(s.operands[0]);
  ElementType t = x.type.elementType;
  if (!isFloat(t))
    return emitError(s.opLoc)
           << "'" << s.op << "' is not defined on " << elementTypeName(t);
  int64_t rank = x.type.rank();
  std::optional<int64_t> axisOr = normalizeAxis(intAttr(s, "axis", -1), rank);
  if (!axisOr)
    return emitError(s.opLoc) << "internal error: axis out of range";
  int64_t axis = *axisOr;
  bool logForm = s.op == "log_softmax";

  Type acc = computeType(ctx, t);
  TensorType rowType = dropDims(x.type, {axis});
  SmallVector<Value> rowDims, fullDims;
  for (int64_t i = 0; i < rank; ++i) {
    fullDims.push_back(dimOf(loc, x, i));
    if (i != axis)
      rowDims.push_back(fullDims.back());
  }
  AffineMap id = builder.getMultiDimIdentityMap(rank);
  AffineMap row = keptMap(builder, rank, {axis});
  RankedTensorType rowAcc = tensorType(rowType, acc);
  RankedTensorType fullAcc = tensorType(x.type, acc);
  unsigned ax = axis;

  // m = max over the axis (NaN propagates).
  Value mInit = filledTensor(loc, rowAcc, rowDims,
                             emitReductionInit(builder, loc, "max", t));
  Value m =
      generic(loc, rowAcc, x.value, mInit, {id, row}, rank, {ax},
              [&](OpBuilder &b, Location l, ValueRange args) {
                Value v = widen(b, l, t, args[0]);
                linalg::YieldOp::create(
                    b, l, Value(arith::MaximumFOp::create(b, l, args[1], v)));
              })[0];
  Value sInit = filledTensor(loc, rowAcc, rowDims,
                             emitReductionInit(builder, loc, "sum", t));
  RankedTensorType outType = tensorType(x.type);
  Value out = emptyTensor(loc, outType, fullDims);
  Value result;
  if (!logForm) {
    // e = exp(x - m); s = sum(e); out = e / s.
    Value e = generic(loc, fullAcc, ValueRange{x.value, m},
                      emptyTensor(loc, fullAcc, fullDims), {id, row, id}, rank,
                      {}, [&](OpBuilder &b, Location l, ValueRange args) {
                        Value v = widen(b, l, t, args[0]);
                        Value d = arith::SubFOp::create(b, l, v, args[1]);
                        linalg::YieldOp::create(
                            b, l, Value(math::ExpOp::create(b, l, d)));
                      })[0];
    Value sum = generic(
        loc, rowAcc, e, sInit, {id, row}, rank, {ax},
        [&](OpBuilder &b, Location l, ValueRange args) {
          linalg::YieldOp::create(
              b, l, Value(arith::AddFOp::create(b, l, args[1], args[0])));
        })[0];
    result = generic(loc, outType, ValueRange{e, sum}, out, {id, row, id}, rank,
                     {}, [&](OpBuilder &b, Location l, ValueRange args) {
                       Value q = arith::DivFOp::create(b, l, args[0], args[1]);
                       linalg::YieldOp::create(b, l, narrow(b, l, t, q));
                     })[0];
  } else {
    // s = sum(exp(x - m)); out = (x - m) - log(s).
    Value sum =
        generic(loc, rowAcc, ValueRange{x.value, m}, sInit, {id, row, row},
                rank, {ax}, [&](OpBuilder &b, Location l, ValueRange args) {
                  Value v = widen(b, l, t, args[0]);
                  Value d = arith::SubFOp::create(b, l, v, args[1]);
                  Value e = math::ExpOp::create(b, l, d);
                  linalg::YieldOp::create(
                      b, l, Value(arith::AddFOp::create(b, l, args[2], e)));
                })[0];
    result = generic(loc, outType, ValueRange{x.value, m, sum}, out,
                     {id, row, row, id}, rank, {},
                     [&](OpBuilder &b, Location l, ValueRange args) {
                       Value v = widen(b, l, t, args[0]);
                       Value d = arith::SubFOp::create(b, l, v, args[1]);
                       Value r = arith::SubFOp::create(
                           b, l, d, math::LogOp::create(b, l, args[2]));
                       linalg::YieldOp::create(b, l, narrow(b, l, t, r));
                     })[0];
  }
  define(s, 0, result);
  return success();
}

//===----------------------------------------------------------------------===//
// layer_norm, rms_norm
//===----------------------------------------------------------------------===//

LogicalResult Generator::genNorm(const Statement &s) {
  Location loc = s.loc;
  bool layer = s.op == "layer_norm";
  GenValue x = operandValue(s.operands[0]);
  SmallVector<GenValue> params; // %g, then %b for layer_norm
  for (size_t i = 1; i < s.operands.size(); ++i)
    params.push_back(operandValue(s.operands[i]));
  ElementType t = x.type.elementType;
  if (!isFloat(t))
    return emitError(s.opLoc)
           << "'" << s.op << "' is not defined on " << elementTypeName(t);
  int64_t rank = x.type.rank();
  std::optional<int64_t> axisOr = normalizeAxis(intAttr(s, "axis", -1), rank);
  if (!axisOr || params.size() != (layer ? 2u : 1u))
    return emitError(s.opLoc) << "internal error: bad '" << s.op << "'";
  int64_t axis = *axisOr;
  double epsilon = layer ? 1e-5 : 1e-6;
  if (const Attribute *a = s.attr("epsilon"))
    epsilon = a->value.kind == AttrValue::Int
                  ? static_cast<double>(a->value.intValue)
                  : a->value.floatValue;

  // %g and %b have exactly the normalised dims of %x (no broadcasting).
  SmallVector<int64_t> normDims;
  for (int64_t d = axis; d < rank; ++d)
    normDims.push_back(d);
  for (auto [k, p] : llvm::enumerate(params)) {
    if (p.type.rank() != rank - axis)
      return emitError(s.opLoc)
             << "internal error: bad '" << s.op << "' operand " << k + 1;
    for (int64_t j = 0; j < p.type.rank(); ++j) {
      if (dimsProvablyEqual(p.type.dims[j], x.type.dims[axis + j]))
        continue;
      Value have = dimOf(loc, p, j), want = dimOf(loc, x, axis + j);
      Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                       have, want);
      emitCheck(loc, ok, have, want,
                s.op + ": dim " + Twine(j) + " of operand " + Twine(k + 1) +
                    " has size {0} but dim " + Twine(axis + j) +
                    " of operand 0 has size {1}");
    }
  }

  Type acc = computeType(ctx, t);
  TensorType rowType = dropDims(x.type, normDims);
  SmallVector<Value> rowDims, fullDims;
  for (int64_t i = 0; i < rank; ++i) {
    fullDims.push_back(dimOf(loc, x, i));
    if (i < axis)
      rowDims.push_back(fullDims.back());
  }
  // The element count of one normalised slice, as a float.
  int64_t staticCount = 1;
  Value n;
  for (int64_t d : normDims) {
    if (x.type.dims[d].isStatic()) {
      staticCount *= x.type.dims[d].size;
      continue;
    }
    n = n ? arith::MulIOp::create(builder, loc, n, fullDims[d]).getResult()
          : fullDims[d];
  }
  if (!n)
    n = indexConst(loc, staticCount);
  else if (staticCount != 1)
    n = arith::MulIOp::create(builder, loc, n, indexConst(loc, staticCount));
  Value count = arith::SIToFPOp::create(
      builder, loc, acc,
      arith::IndexCastOp::create(builder, loc, builder.getI64Type(), n));
  Value eps = constFloat(builder, loc, acc, epsilon);

  AffineMap id = builder.getMultiDimIdentityMap(rank);
  AffineMap row = keptMap(builder, rank, normDims);
  SmallVector<int64_t> leading;
  for (int64_t i = 0; i < axis; ++i)
    leading.push_back(i);
  AffineMap param = keptMap(builder, rank, leading);
  RankedTensorType rowAcc = tensorType(rowType, acc);
  SmallVector<unsigned> reduce = toUnsigned(normDims);
  auto zeroInit = [&] {
    return filledTensor(loc, rowAcc, rowDims,
                        emitReductionInit(builder, loc, "sum", t));
  };
  // sqrt(sum / count + eps), per row.
  auto denominator = [&](Value sum) {
    return mapTensor(*this, loc, sum, rowType, acc, rowDims,
                     [&](OpBuilder &b, Location l, Value v) -> Value {
                       Value var = arith::DivFOp::create(b, l, v, count);
                       return math::SqrtOp::create(
                           b, l, arith::AddFOp::create(b, l, var, eps));
                     });
  };
  RankedTensorType outType = tensorType(x.type);
  Value out = emptyTensor(loc, outType, fullDims);
  Value result;
  if (layer) {
    // mean, then the variance around it (not E[x^2] - E[x]^2).
    Value sum =
        generic(loc, rowAcc, x.value, zeroInit(), {id, row}, rank, reduce,
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value v = widen(b, l, t, a[0]);
                  linalg::YieldOp::create(
                      b, l, Value(arith::AddFOp::create(b, l, a[1], v)));
                })[0];
    Value mean = mapTensor(*this, loc, sum, rowType, acc, rowDims,
                           [&](OpBuilder &b, Location l, Value v) -> Value {
                             return arith::DivFOp::create(b, l, v, count);
                           });
    Value sq = generic(
        loc, rowAcc, ValueRange{x.value, mean}, zeroInit(), {id, row, row},
        rank, reduce, [&](OpBuilder &b, Location l, ValueRange a) {
          Value v = widen(b, l, t, a[0]);
          Value d = arith::SubFOp::create(b, l, v, a[1]);
          Value d2 = arith::MulFOp::create(b, l, d, d);
          linalg::YieldOp::create(b, l,
                                  Value(arith::AddFOp::create(b, l, a[2], d2)));
        })[0];
    Value den = denominator(sq);
    result = generic(
        loc, outType,
        ValueRange{x.value, mean, den, params[0].value, params[1].value}, out,
        {id, row, row, param, param, id}, rank, {},
        [&](OpBuilder &b, Location l, ValueRange a) {
          Value v = widen(b, l, t, a[0]);
          Value norm = arith::DivFOp::create(
              b, l, arith::SubFOp::create(b, l, v, a[1]), a[2]);
          Value scaled =
              arith::MulFOp::create(b, l, norm, widen(b, l, t, a[3]));
          Value r = arith::AddFOp::create(b, l, scaled, widen(b, l, t, a[4]));
          linalg::YieldOp::create(b, l, narrow(b, l, t, r));
        })[0];
  } else {
    // x / sqrt(mean(x^2) + eps) * g
    Value sq =
        generic(loc, rowAcc, x.value, zeroInit(), {id, row}, rank, reduce,
                [&](OpBuilder &b, Location l, ValueRange a) {
                  Value v = widen(b, l, t, a[0]);
                  Value v2 = arith::MulFOp::create(b, l, v, v);
                  linalg::YieldOp::create(
                      b, l, Value(arith::AddFOp::create(b, l, a[1], v2)));
                })[0];
    Value den = denominator(sq);
    result = generic(loc, outType, ValueRange{x.value, den, params[0].value},
                     out, {id, row, param, id}, rank, {},
                     [&](OpBuilder &b, Location l, ValueRange a) {
                       Value v = widen(b, l, t, a[0]);
                       Value norm = arith::DivFOp::create(b, l, v, a[1]);
                       Value r = arith::MulFOp::create(b, l, norm,
                                                       widen(b, l, t, a[2]));
                       linalg::YieldOp::create(b, l, narrow(b, l, t, r));
                     })[0];
  }
  define(s, 0, result);
  return success();
}

} // namespace detail
} // namespace kina
