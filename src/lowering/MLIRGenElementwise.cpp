//===- MLIRGenElementwise.cpp - Broadcasting and elementwise Kina ops -----===//
//
// NumPy broadcasting (spec, "Operations": shapes aligned from the right, a
// dim of size 1 stretches, also a `?` or symbolic dim that is 1 at run time)
// and the ops built on it: unary, binary, compare, select, cast and
// broadcast_to, each one linalg.generic with parallel iterators writing a
// tensor.empty of the result shape. Per operand dim the generator decides:
//  - static 1 against a larger output: the indexing map reads index 0;
//  - provably the output dim (same static size, same symbol, or the output
//    dim was taken from it): identity;
//  - otherwise (a `?`/symbolic dim that may be 1 while the output is
//    larger): a run-time check `d == out || d == 1` through
//    `@__kina_check`, and the operand is first materialised at the output
//    size by a linalg.generic reading index 0 where its size is 1.
// `?` output dims are computed from the operands (out = d1 == 1 ? d0 : d1
// folded over the operands). Literal operands are scalar constants captured
// by the generic's body. The scalar semantics are in MLIRGenScalar.cpp.
//
//===----------------------------------------------------------------------===//
#include "MLIRGenImpl.h"
#include "kina/Shapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kina {
namespace detail {

void Generator::broadcast(Location loc, StringRef op, ArrayRef<Dim> outDims,
                          MutableArrayRef<BroadcastInput> inputs,
                          SmallVectorImpl<Value> &outVals) {
  int64_t rank = static_cast<int64_t>(outDims.size());
  outVals.assign(rank, Value());
  for (BroadcastInput &in : inputs)
    in.reads.assign(in.dims.size(), DimRead::Identity);
  struct Part {
    BroadcastInput *in;
    size_t pos;
    const Dim *dim;
  };
  for (int64_t j = 0; j < rank; ++j) {
    const Dim &out = outDims[j];
    bool outIsOne = out.isStatic() && out.size == 1;
    SmallVector<Part> pending;
    Part *identityPart = nullptr;
    SmallVector<Part> parts;
    for (BroadcastInput &in : inputs) {
      int64_t n = static_cast<int64_t>(in.dims.size());
      if (j < rank - n)
        continue;
      size_t pos = j - (rank - n);
      parts.push_back({&in, pos, &in.value->type.dims[in.dims[pos]]});
    }
    for (Part &p : parts) {
      const Dim &d = *p.dim;
      if (d.isStatic() && d.size == 1 && !outIsOne) {
        p.in->reads[p.pos] = DimRead::Zero;
      } else if (dimsProvablyEqual(d, out)) {
        p.in->reads[p.pos] = DimRead::Identity;
        identityPart = &p;
      } else {
        pending.push_back(p);
      }
    }
    auto sizeOf = [&](const Part &p) {
      return dimOf(loc, *p.in->value, p.in->dims[p.pos]);
    };
    Value size = knownDim(loc, out);
    if (!size && identityPart) {
      size = sizeOf(*identityPart);
    } else if (!size) {
      // `?` output: from the operands. A static candidate fixes the size;
      // a single candidate gives it; else the NumPy fold.
      const Part *taken = nullptr;
      for (const Part &p : pending)
        if (p.dim->isStatic()) {
          taken = &p;
          break;
        }
      if (!taken && pending.size() == 1)
        taken = &pending[0];
      if (pending.empty()) {
        size = indexConst(loc, 1);
      } else if (taken) {
        size = sizeOf(*taken);
        taken->in->reads[taken->pos] = DimRead::Identity;
        SmallVector<Part> rest;
        for (const Part &p : pending)
          if (&p != taken)
            rest.push_back(p);
        pending = std::move(rest);
      } else {
        size = sizeOf(pending[0]);
        Value one = indexConst(loc, 1);
        for (const Part &p : llvm::drop_begin(pending)) {
          Value d = sizeOf(p);
          Value isOne = arith::CmpIOp::create(builder, loc,
                                              arith::CmpIPredicate::eq, d, one);
          size = arith::SelectOp::create(builder, loc, isOne, size, d);
        }
      }
    }
    outVals[j] = size;
    for (const Part &p : pending) {
      Value d = sizeOf(p);
      Value one = indexConst(loc, 1);
      Value ok = arith::OrIOp::create(
          builder, loc,
          arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, d,
                                size),
          arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, d,
                                one));
      emitCheck(loc, ok, d, size,
                op + ": dim " + Twine(p.in->dims[p.pos]) + " of operand " +
                    Twine(p.in->operandNo) +
                    " has size {0} but the broadcast size is {1}");
      // A static dim (not 1) or a size-1 output: the check leaves no
      // stretching to do.
      p.in->reads[p.pos] = (p.dim->isStatic() || outIsOne) ? DimRead::Identity
                                                           : DimRead::Stretch;
    }
  }
}

GenValue Generator::stretch(Location loc, BroadcastInput &in,
                            ArrayRef<Dim> outDims, ArrayRef<Value> outVals) {
  const GenValue &v = *in.value;
  int64_t rank = v.type.rank();
  int64_t n = static_cast<int64_t>(in.dims.size());
  int64_t offset = static_cast<int64_t>(outDims.size()) - n;
  TensorType type = v.type;
  SmallVector<Value> sizes(rank), isOne(rank);
  for (int64_t i = 0; i < rank; ++i)
    sizes[i] = dimOf(loc, v, i);
  for (int64_t pos = 0; pos < n; ++pos) {
    if (in.reads[pos] != DimRead::Stretch)
      continue;
    int64_t i = in.dims[pos];
    type.dims[i] = outDims[offset + pos];
    isOne[i] = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                     sizes[i], indexConst(loc, 1));
    sizes[i] = outVals[offset + pos];
    in.reads[pos] = DimRead::Identity;
  }
  RankedTensorType rt = tensorType(type);
  Value init = emptyTensor(loc, rt, sizes);
  Value source = v.value;
  Value r = generic(loc, rt, {}, init, {builder.getMultiDimIdentityMap(rank)},
                    rank, {}, [&](OpBuilder &b, Location l, ValueRange) {
                      SmallVector<Value> idx;
                      Value zero;
                      for (int64_t i = 0; i < rank; ++i) {
                        Value x = linalg::IndexOp::create(b, l, i);
                        if (isOne[i]) {
                          if (!zero)
                            zero = arith::ConstantIndexOp::create(b, l, 0);
                          x = arith::SelectOp::create(b, l, isOne[i], zero, x);
                        }
                        idx.push_back(x);
                      }
                      Value e = tensor::ExtractOp::create(b, l, source, idx);
                      linalg::YieldOp::create(b, l, e);
                    })[0];
  return {r, type};
}

AffineMap Generator::broadcastMap(const BroadcastInput &in, unsigned numLoops,
                                  unsigned firstLoop, unsigned alignedRank,
                                  ArrayRef<unsigned> extraLoops) {
  SmallVector<AffineExpr> exprs;
  unsigned n = in.dims.size();
  for (unsigned pos = 0; pos < n; ++pos) {
    if (in.reads[pos] == DimRead::Zero)
      exprs.push_back(builder.getAffineConstantExpr(0));
    else
      exprs.push_back(
          builder.getAffineDimExpr(firstLoop + alignedRank - n + pos));
  }
  for (unsigned l : extraLoops)
    exprs.push_back(builder.getAffineDimExpr(l));
  return AffineMap::get(numLoops, 0, exprs, &ctx);
}

Value Generator::genElementwise(const Statement &s, ArrayRef<EwOperand> ops,
                                const TensorType &outType, ScalarBody body) {
  Location loc = s.loc;
  int64_t rank = outType.rank();
  // Stable storage: inputs point into it, stretching appends to it.
  SmallVector<GenValue> storage;
  storage.reserve(2 * ops.size());
  SmallVector<BroadcastInput> inputs;
  for (auto [k, op] : llvm::enumerate(ops)) {
    if (!op.tensor)
      continue;
    storage.push_back({op.tensor, op.type});
    BroadcastInput in;
    in.value = &storage.back();
    for (int64_t i = 0; i < op.type.rank(); ++i)
      in.dims.push_back(i);
    in.operandNo = k;
    inputs.push_back(in);
  }
  SmallVector<Value> outVals;
  broadcast(loc, s.op, outType.dims, inputs, outVals);
  for (BroadcastInput &in : inputs)
    if (llvm::is_contained(in.reads, DimRead::Stretch)) {
      storage.push_back(stretch(loc, in, outType.dims, outVals));
      in.value = &storage.back();
    }
  SmallVector<AffineMap> maps;
  SmallVector<Value> tensors;
  for (BroadcastInput &in : inputs) {
    maps.push_back(broadcastMap(in, rank, 0, rank));
    tensors.push_back(in.value->value);
  }
  maps.push_back(builder.getMultiDimIdentityMap(rank));
  RankedTensorType rt = tensorType(outType);
  Value init = emptyTensor(loc, rt, outVals);
  return generic(loc, rt, tensors, init, maps, rank, {},
                 [&](OpBuilder &b, Location l, ValueRange args) {
                   SmallVector<Value> scalars;
                   unsigned next = 0;
                   for (const EwOperand &op : ops)
                     scalars.push_back(op.tensor ? args[next++] : op.scalar);
                   linalg::YieldOp::create(b, l, body(b, l, scalars));
                 })[0];
}

//===----------------------------------------------------------------------===//
// The ops
//===----------------------------------------------------------------------===//

/// Element type of an elementwise op's operands: the first tensor's (a
/// literal's type comes from its partner).
static ElementType operandElementType(ArrayRef<EwOperand> ops) {
  for (const EwOperand &o : ops)
    if (o.tensor)
      return o.type.elementType;
  return ops.front().type.elementType;
}

/// Whether elementwise op `op` is defined on element type `t`: its row of
/// the op table (OpTable.h) lists the types.
static bool definedOn(StringRef op, ElementType t) {
  const OpDesc *desc = lookupOp(op);
  return desc && desc->allows(t);
}

static LogicalResult notDefined(const Statement &s, ElementType t) {
  return emitError(s.opLoc)
         << "'" << s.op << "' is not defined on " << elementTypeName(t);
}

LogicalResult Generator::genUnary(const Statement &s) {
  EwOperand x = ewOperand(s.loc, s.operands[0]);
  ElementType t = x.type.elementType;
  if (!definedOn(s.op, t))
    return notDefined(s, t);
  bool geluTanh = false;
  if (const Attribute *a = s.attr("approximate"))
    geluTanh =
        a->value.kind == AttrValue::String && a->value.stringValue == "tanh";
  Value r = genElementwise(s, {x}, inferredType(s, 0),
                           [&](OpBuilder &b, Location l, ArrayRef<Value> v) {
                             return emitUnary(b, l, s.op, t, v[0], geluTanh);
                           });
  define(s, 0, r);
  return success();
}

LogicalResult Generator::genBinary(const Statement &s) {
  SmallVector<EwOperand> ops = {ewOperand(s.loc, s.operands[0]),
                                ewOperand(s.loc, s.operands[1])};
  ElementType t = operandElementType(ops);
  if (!definedOn(s.op, t))
    return notDefined(s, t);
  Value r = genElementwise(s, ops, inferredType(s, 0),
                           [&](OpBuilder &b, Location l, ArrayRef<Value> v) {
                             return emitBinary(b, l, s.op, t, v[0], v[1]);
                           });
  define(s, 0, r);
  return success();
}

LogicalResult Generator::genCompare(const Statement &s) {
  SmallVector<EwOperand> ops = {ewOperand(s.loc, s.operands[0]),
                                ewOperand(s.loc, s.operands[1])};
  ElementType t = operandElementType(ops);
  Value r = genElementwise(s, ops, inferredType(s, 0),
                           [&](OpBuilder &b, Location l, ArrayRef<Value> v) {
                             return emitCompare(b, l, s.op, t, v[0], v[1]);
                           });
  define(s, 0, r);
  return success();
}

LogicalResult Generator::genSelect(const Statement &s) {
  SmallVector<EwOperand> ops = {ewOperand(s.loc, s.operands[0]),
                                ewOperand(s.loc, s.operands[1]),
                                ewOperand(s.loc, s.operands[2])};
  Value r =
      genElementwise(s, ops, inferredType(s, 0),
                     [&](OpBuilder &b, Location l, ArrayRef<Value> v) -> Value {
                       return arith::SelectOp::create(b, l, v[0], v[1], v[2]);
                     });
  define(s, 0, r);
  return success();
}

LogicalResult Generator::genCast(const Statement &s) {
  EwOperand x = ewOperand(s.loc, s.operands[0]);
  ElementType from = x.type.elementType;
  ElementType to = inferredType(s, 0).elementType;
  Value r = genElementwise(s, {x}, inferredType(s, 0),
                           [&](OpBuilder &b, Location l, ArrayRef<Value> v) {
                             return emitCast(b, l, from, to, v[0]);
                           });
  define(s, 0, r);
  return success();
}

LogicalResult Generator::genBroadcastTo(const Statement &s) {
  EwOperand x = ewOperand(s.loc, s.operands[0]);
  const TensorType &out = inferredType(s, 0);
  if (x.type.rank() > out.rank())
    return emitError(s.opLoc) << "internal error: broadcast_to of "
                              << x.type.str() << " to " << out.str();
  Value r = genElementwise(
      s, {x}, out,
      [&](OpBuilder &, Location, ArrayRef<Value> v) { return v[0]; });
  define(s, 0, r);
  return success();
}

} // namespace detail
} // namespace kina
