//===- MLIRGen.cpp - Kina AST to MLIR on tensors --------------------------===//
//
// Entry points of the MLIR generator (MLIRGen.h) and the parts that are not
// op families: the module and its `func.func`s (symbol prefix, C-interface
// attribute, private visibility), the binding of symbolic dims at function
// entry, calls and returns (with run-time checks of the dims the callee's or
// the signature's types promise), `constant` and `iota`, the run-time check
// calls `@__kina_check`, and the dispatch of each statement to its family in
// MLIRGenElementwise.cpp / MLIRGenContract.cpp / MLIRGenLayout.cpp. A
// statement whose lowering fails marks its results failed, so later
// statements using them are skipped and every independent error is
// reported once. The finished module is verified; null on any failure.
//
//===----------------------------------------------------------------------===//
#include "kina/MLIRGen.h"

#include "MLIRGenImpl.h"
#include "kina/Shapes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "llvm/ADT/APFloat.h"

#include <cmath>

using namespace mlir;

namespace kina {

void registerKinaDialects(MLIRContext &ctx) {
  // Everything upstream (the pipeline's bufferization models and
  // convert-to-llvm interfaces live in the extensions), then load what the
  // generator creates.
  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadDialect<func::FuncDialect, linalg::LinalgDialect,
                  tensor::TensorDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect, cf::ControlFlowDialect>();
}

OwningOpRef<ModuleOp> mlirGen(MLIRContext &ctx, const Module &module,
                              const MLIRGenOptions &options) {
  return detail::Generator(ctx, module, options).run();
}

namespace detail {

std::string locationPrefix(Location loc) {
  if (auto flc = loc->findInstanceOf<FileLineColLoc>())
    return (flc.getFilename().getValue() + ":" + Twine(flc.getLine()) + ":" +
            Twine(flc.getColumn()))
        .str();
  return "<unknown>";
}

Generator::Generator(MLIRContext &ctx, const Module &module,
                     const MLIRGenOptions &options)
    : ctx(ctx), kmodule(module), options(options), builder(&ctx) {
  ctx.loadDialect<func::FuncDialect, linalg::LinalgDialect,
                  tensor::TensorDialect, arith::ArithDialect, math::MathDialect,
                  scf::SCFDialect>();
}

OwningOpRef<ModuleOp> Generator::run() {
  OwningOpRef<ModuleOp> owned =
      ModuleOp::create(kmodule.loc, StringRef(kmodule.name));
  module = *owned;
  bool ok = true;
  for (const Function &fn : kmodule.functions)
    if (failed(genFunction(fn)))
      ok = false;
  if (!ok)
    return nullptr;
  if (failed(verify(module))) {
    emitError(kmodule.loc)
        << "internal error: the generated MLIR module does not verify";
    return nullptr;
  }
  return owned;
}

//===----------------------------------------------------------------------===//
// Shared helpers
//===----------------------------------------------------------------------===//

RankedTensorType Generator::tensorType(const TensorType &t, Type elem) {
  SmallVector<int64_t> shape;
  for (const Dim &d : t.dims)
    shape.push_back(d.isStatic() ? d.size : ShapedType::kDynamic);
  return RankedTensorType::get(shape, elem);
}

RankedTensorType Generator::tensorType(const TensorType &t) {
  return tensorType(t, toMLIRType(ctx, t.elementType));
}

Value Generator::indexConst(Location loc, int64_t v) {
  Value &c = indexConsts[v];
  if (!c)
    c = arith::ConstantIndexOp::create(builder, loc, v);
  return c;
}

Value Generator::knownDim(Location loc, const Dim &d) {
  if (d.isStatic())
    return indexConst(loc, d.size);
  if (d.kind == Dim::Symbolic) {
    auto it = symbols.find(d.symbol);
    if (it != symbols.end())
      return it->second;
  }
  return nullptr;
}

Value Generator::dimOf(Location loc, const GenValue &v, int64_t i) {
  if (Value known = knownDim(loc, v.type.dims[i]))
    return known;
  auto type = cast<RankedTensorType>(v.value.getType());
  if (!type.isDynamicDim(i))
    return indexConst(loc, type.getDimSize(i));
  Value &d = dimCache[{v.value, i}];
  if (!d)
    d = tensor::DimOp::create(builder, loc, v.value, i);
  return d;
}

Value Generator::emptyTensor(Location loc, RankedTensorType type,
                             ArrayRef<Value> dims) {
  SmallVector<Value> dynamic;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dynamic.push_back(dims[i]);
  return tensor::EmptyOp::create(builder, loc, type.getShape(),
                                 type.getElementType(), dynamic);
}

Value Generator::filledTensor(Location loc, RankedTensorType type,
                              ArrayRef<Value> dims, Value scalar) {
  Value empty = emptyTensor(loc, type, dims);
  return linalg::FillOp::create(builder, loc, ValueRange{scalar},
                                ValueRange{empty})
      ->getResult(0);
}

void Generator::emitCheck(Location loc, Value ok, Value a, Value b,
                          const Twine &what) {
  if (!checkDeclared) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    auto type = builder.getFunctionType(
        {builder.getI1Type(), builder.getIndexType(), builder.getIndexType()},
        {});
    auto fn = func::FuncOp::create(builder, module.getLoc(),
                                   StringRef(kCheckFunctionName), type);
    fn.setPrivate();
    checkDeclared = true;
  }
  auto call = func::CallOp::create(builder, loc, StringRef(kCheckFunctionName),
                                   TypeRange{}, ValueRange{ok, a, b});
  call->setAttr(kCheckMessageAttr,
                builder.getStringAttr(locationPrefix(loc) + ": " + what.str()));
}

Value Generator::castTo(Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return tensor::CastOp::create(builder, loc, type, v);
}

/// The integer and float readings of a literal operand (Sema has checked
/// that the literal is exactly representable in its element type).
static void literalValues(const Operand &o, int64_t &intValue,
                          double &floatValue) {
  if (o.kind == Operand::FloatLiteral) {
    floatValue = o.floatValue;
    intValue = std::isfinite(o.floatValue) && std::fabs(o.floatValue) < 9.2e18
                   ? static_cast<int64_t>(o.floatValue)
                   : 0;
    return;
  }
  intValue = o.intValue;
  floatValue = static_cast<double>(o.intValue);
}

GenValue Generator::operandValue(const Operand &o) {
  if (o.kind == Operand::Value)
    return values.lookup(o.name);
  TensorType type =
      o.type ? *o.type : TensorType{ElementType::F32, std::vector<Dim>{}};
  int64_t iv;
  double fv;
  literalValues(o, iv, fv);
  TypedAttr attr = scalarAttr(ctx, type.elementType, iv, fv);
  auto rt = RankedTensorType::get({}, toMLIRType(ctx, type.elementType));
  Value t = arith::ConstantOp::create(builder, o.loc,
                                      DenseElementsAttr::get(rt, attr));
  return {t, TensorType{type.elementType, {}}};
}

EwOperand Generator::ewOperand(Location loc, const Operand &o) {
  if (o.kind == Operand::Value) {
    GenValue v = values.lookup(o.name);
    return {v.value, v.type, nullptr};
  }
  TensorType type =
      o.type ? *o.type : TensorType{ElementType::F32, std::vector<Dim>{}};
  type.dims.clear();
  int64_t iv;
  double fv;
  literalValues(o, iv, fv);
  return {nullptr, type, constScalar(builder, loc, type.elementType, iv, fv)};
}

void Generator::define(const Statement &s, size_t i, Value v) {
  Location loc = s.loc;
  const TensorType &want = s.resultTypes[i];
  // An annotation may refine an inferred `?` to a size or a symbol (Sema);
  // the refinement holds only if the run-time size agrees.
  if (i < s.inferredTypes.size()) {
    GenValue inferred{v, s.inferredTypes[i]};
    for (int64_t d = 0; d < want.rank(); ++d) {
      if (dimsProvablyEqual(want.dims[d], inferred.type.dims[d]))
        continue;
      Value expected = knownDim(loc, want.dims[d]);
      if (!expected)
        continue;
      Value actual = dimOf(loc, inferred, d);
      Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                       actual, expected);
      emitCheck(loc, ok, actual, expected,
                s.op + ": dim " + Twine(d) + " of result %" + s.results[i] +
                    " has size {0} but its annotation says " +
                    (want.dims[d].isStatic()
                         ? Twine("{1}")
                         : dimToString(want.dims[d]) + " = {1}"));
    }
  }
  values[s.results[i]] = {castTo(loc, v, tensorType(want)), want};
}

int64_t Generator::intAttr(const Statement &s, StringRef name, int64_t dflt) {
  const Attribute *a = s.attr(name.str());
  if (!a)
    return dflt;
  switch (a->value.kind) {
  case AttrValue::Int:
    return a->value.intValue;
  case AttrValue::Bool:
    return a->value.boolValue;
  case AttrValue::Float:
    return static_cast<int64_t>(a->value.floatValue);
  default:
    return dflt;
  }
}

bool Generator::boolAttr(const Statement &s, StringRef name, bool dflt) {
  const Attribute *a = s.attr(name.str());
  if (!a)
    return dflt;
  if (a->value.kind == AttrValue::Bool)
    return a->value.boolValue;
  if (a->value.kind == AttrValue::Int)
    return a->value.intValue != 0;
  return dflt;
}

SmallVector<Value>
Generator::generic(Location loc, TypeRange resultTypes, ValueRange inputs,
                   ValueRange outputs, ArrayRef<AffineMap> maps,
                   unsigned numLoops, ArrayRef<unsigned> reductionLoops,
                   function_ref<void(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<utils::IteratorType> iterators(numLoops,
                                             utils::IteratorType::parallel);
  for (unsigned r : reductionLoops)
    iterators[r] = utils::IteratorType::reduction;
  auto op = linalg::GenericOp::create(builder, loc, resultTypes, inputs,
                                      outputs, maps, iterators, body);
  return SmallVector<Value>(op->getResults());
}

Value Generator::expandUnitDims(Location loc, Value reduced,
                                RankedTensorType resultType,
                                ArrayRef<int64_t> unitDims,
                                ArrayRef<Value> reducedDims) {
  int64_t rank = resultType.getRank();
  if (rank == 0 || unitDims.empty())
    return castTo(loc, reduced, resultType);
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices pending;
  SmallVector<OpFoldResult> shape;
  int64_t next = 0; // next dim of the reduced tensor
  for (int64_t r = 0; r < rank; ++r) {
    bool unit = llvm::is_contained(unitDims, r);
    if (unit) {
      shape.push_back(builder.getIndexAttr(1));
      if (groups.empty())
        pending.push_back(r);
      else
        groups.back().push_back(r);
      continue;
    }
    if (resultType.isDynamicDim(r))
      shape.push_back(reducedDims[next]);
    else
      shape.push_back(builder.getIndexAttr(resultType.getDimSize(r)));
    ++next;
    ReassociationIndices group = pending;
    group.push_back(r);
    pending.clear();
    groups.push_back(group);
  }
  // A reduced tensor of rank 0 has no groups: every result dim is a unit.
  return tensor::ExpandShapeOp::create(builder, loc, resultType, reduced,
                                       groups, shape);
}

//===----------------------------------------------------------------------===//
// Functions, calls, returns
//===----------------------------------------------------------------------===//

LogicalResult Generator::genFunction(const Function &fn) {
  values.clear();
  failedNames.clear();
  symbols.clear();
  indexConsts.clear();
  dimCache.clear();
  SmallVector<Type> argTypes, resultTypes;
  for (const Param &p : fn.params)
    argTypes.push_back(tensorType(p.type));
  for (const TensorType &t : fn.results)
    resultTypes.push_back(tensorType(t));
  builder.setInsertionPointToEnd(module.getBody());
  auto func =
      func::FuncOp::create(builder, fn.loc, options.symbolPrefix + fn.name,
                           builder.getFunctionType(argTypes, resultTypes));
  if (fn.isPrivate)
    func.setPrivate();
  else
    func->setAttr("llvm.emit_c_interface", builder.getUnitAttr());
  // The Kina signature, for the passes that validate arguments and name
  // them in messages (kina/IRConventions.h).
  KinaSignature signature;
  auto signatureDims = [](const TensorType &t) {
    std::vector<SignatureDim> dims;
    for (const Dim &d : t.dims) {
      SignatureDim dim;
      dim.size = d.size;
      dim.symbol = d.symbol;
      dim.kind = d.kind == Dim::Static    ? SignatureDim::Static
                 : d.kind == Dim::Dynamic ? SignatureDim::Dynamic
                                          : SignatureDim::Symbolic;
      dims.push_back(std::move(dim));
    }
    return dims;
  };
  for (const Param &p : fn.params) {
    signature.paramNames.push_back(p.name);
    signature.paramDims.push_back(signatureDims(p.type));
  }
  for (const TensorType &t : fn.results)
    signature.resultDims.push_back(signatureDims(t));
  setKinaSignature(func, signature);
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  for (auto [i, p] : llvm::enumerate(fn.params)) {
    BlockArgument arg = entry->getArgument(i);
    arg.setLoc(p.loc);
    values[p.name] = {arg, p.type};
    // Each symbol is the size of the first argument dim that names it; the
    // entry point checks that every other use agrees.
    for (auto [d, dim] : llvm::enumerate(p.type.dims))
      if (dim.kind == Dim::Symbolic && !symbols.count(dim.symbol))
        symbols[dim.symbol] = tensor::DimOp::create(builder, p.loc, arg, d);
  }
  bool ok = true;
  for (const Statement &s : fn.body)
    if (failed(genStatement(s)))
      ok = false;
  if (!ok || failed(genReturn(fn)))
    return failure();
  // Index constants and dims made for static sizes may be unused.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isa<arith::ConstantIndexOp, tensor::DimOp>(op) && op.use_empty())
      op.erase();
  return success();
}

LogicalResult Generator::genReturn(const Function &fn) {
  Location loc = fn.returnLoc;
  SmallVector<Value> results;
  for (auto [i, o] : llvm::enumerate(fn.returns)) {
    GenValue v = operandValue(o);
    const TensorType &want = fn.results[i];
    if (!v.value || v.type.rank() != want.rank()) {
      emitError(loc) << "internal error: return value " << i
                     << " does not match the signature";
      return failure();
    }
    for (int64_t d = 0; d < want.rank(); ++d) {
      if (dimsProvablyEqual(want.dims[d], v.type.dims[d]))
        continue;
      Value expected = knownDim(loc, want.dims[d]);
      if (!expected)
        continue; // `?` (or a symbol no argument binds): any size
      Value actual = dimOf(loc, v, d);
      Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                       actual, expected);
      emitCheck(loc, ok, actual, expected,
                "return: dim " + Twine(d) + " of result " + Twine(i) +
                    " has size {0} but the signature says " +
                    (want.dims[d].isStatic()
                         ? Twine("{1}")
                         : dimToString(want.dims[d]) + " = {1}"));
    }
    results.push_back(castTo(loc, v.value, tensorType(want)));
  }
  func::ReturnOp::create(builder, loc, results);
  return success();
}

LogicalResult Generator::genCall(const Statement &s) {
  Location loc = s.loc;
  const Function *callee = kmodule.lookup(s.callee);
  if (!callee || callee->params.size() != s.operands.size() ||
      callee->results.size() != s.results.size()) {
    emitError(s.opLoc) << "internal error: call of unchecked function @"
                       << s.callee;
    return failure();
  }
  SmallVector<Value> args;
  // The callee's symbols, bound by the first argument dim that uses them.
  llvm::StringMap<std::pair<Dim, Value>> bound;
  for (auto [k, o] : llvm::enumerate(s.operands)) {
    GenValue a = operandValue(o);
    const Param &p = callee->params[k];
    if (a.type.rank() != p.type.rank()) {
      emitError(s.opLoc) << "internal error: argument " << k
                         << " of the call has the wrong rank";
      return failure();
    }
    for (int64_t d = 0; d < p.type.rank(); ++d) {
      const Dim &pd = p.type.dims[d];
      const Dim &ad = a.type.dims[d];
      if (pd.isStatic()) {
        if (ad.isStatic())
          continue; // equal: Sema checked
        Value actual = dimOf(loc, a, d);
        Value expected = indexConst(loc, pd.size);
        Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                         actual, expected);
        emitCheck(loc, ok, actual, expected,
                  "call @" + s.callee + ": dim " + Twine(d) + " of argument " +
                      Twine(k) + " has size {0} but @" + s.callee +
                      " expects {1}");
      } else if (pd.kind == Dim::Symbolic) {
        auto it = bound.find(pd.symbol);
        if (it == bound.end()) {
          bound[pd.symbol] = {ad, dimOf(loc, a, d)};
          continue;
        }
        if (dimsProvablyEqual(it->second.first, ad))
          continue;
        Value actual = dimOf(loc, a, d);
        Value ok = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq,
                                         actual, it->second.second);
        emitCheck(loc, ok, actual, it->second.second,
                  "call @" + s.callee + ": dim " + Twine(d) + " of argument " +
                      Twine(k) + " has size {0} but " + pd.symbol + " of @" +
                      s.callee + " is {1}");
      }
    }
    args.push_back(castTo(loc, a.value, tensorType(p.type)));
  }
  SmallVector<Type> resultTypes;
  for (const TensorType &t : callee->results)
    resultTypes.push_back(tensorType(t));
  auto call = func::CallOp::create(
      builder, loc, options.symbolPrefix + callee->name, resultTypes, args);
  for (size_t i = 0; i < s.results.size(); ++i)
    define(s, i, call.getResult(i));
  return success();
}

//===----------------------------------------------------------------------===//
// constant, iota
//===----------------------------------------------------------------------===//

static void flattenDense(const DenseLiteral &lit,
                         std::vector<const DenseLiteral *> &leaves) {
  if (!lit.isList) {
    leaves.push_back(&lit);
    return;
  }
  for (const DenseLiteral &e : lit.elements)
    flattenDense(e, leaves);
}

LogicalResult Generator::genConstant(const Statement &s) {
  Location loc = s.loc;
  const TensorType &t = s.resultTypes[0];
  if (s.operands.size() != 1) {
    emitError(s.opLoc) << "internal error: constant takes one operand";
    return failure();
  }
  bool isStatic =
      llvm::all_of(t.dims, [](const Dim &d) { return d.isStatic(); });
  if (!isStatic) {
    // A splat over symbolic dims (Sema allows only the parameters' symbols):
    // fill a tensor of the run-time sizes.
    const Operand &o = s.operands[0];
    if (o.kind == Operand::Dense) {
      emitError(s.opLoc) << "a dense<...> list needs a static type, found "
                         << t.str();
      return failure();
    }
    SmallVector<Value> sizes;
    for (const Dim &d : t.dims) {
      if (d.isStatic())
        continue;
      Value size = knownDim(loc, d);
      if (!size) {
        emitError(s.opLoc) << "internal error: unbound dim in " << t.str();
        return failure();
      }
      sizes.push_back(size);
    }
    int64_t iv;
    double fv;
    literalValues(o, iv, fv);
    Value scalar = constScalar(builder, loc, t.elementType, iv, fv);
    Value empty = tensor::EmptyOp::create(builder, loc, tensorType(t), sizes);
    define(s, 0,
           linalg::FillOp::create(builder, loc, ValueRange{scalar},
                                  ValueRange{empty})
               .getResult(0));
    return success();
  }
  RankedTensorType type = tensorType(t);
  Type elem = type.getElementType();
  // Leaves as (int, double) pairs in row-major order.
  std::vector<std::pair<int64_t, double>> leaves;
  const Operand &o = s.operands[0];
  if (o.kind == Operand::Dense) {
    std::vector<const DenseLiteral *> lits;
    flattenDense(*o.dense, lits);
    for (const DenseLiteral *l : lits) {
      if (l->isBool || l->isInteger)
        leaves.push_back({l->intValue, static_cast<double>(l->intValue)});
      else
        leaves.push_back(
            {std::isfinite(l->floatValue) && std::fabs(l->floatValue) < 9.2e18
                 ? static_cast<int64_t>(l->floatValue)
                 : 0,
             l->floatValue});
    }
  } else {
    int64_t iv;
    double fv;
    literalValues(o, iv, fv);
    leaves.push_back({iv, fv});
  }
  int64_t count = type.getNumElements();
  if (leaves.size() != 1 && static_cast<int64_t>(leaves.size()) != count) {
    emitError(s.opLoc) << "the dense literal has " << leaves.size()
                       << " elements but " << t.str() << " has " << count;
    return failure();
  }
  DenseElementsAttr attr;
  if (auto ft = dyn_cast<FloatType>(elem)) {
    SmallVector<APFloat> vals;
    for (auto [iv, fv] : leaves) {
      (void)iv;
      APFloat f(fv);
      bool lost;
      f.convert(ft.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      vals.push_back(f);
    }
    attr = leaves.size() == 1
               ? DenseElementsAttr::get(
                     type, mlir::Attribute(FloatAttr::get(ft, vals[0])))
               : DenseElementsAttr::get(type, vals);
  } else {
    unsigned width = elem.getIntOrFloatBitWidth();
    SmallVector<APInt> vals;
    for (auto [iv, fv] : leaves) {
      (void)fv;
      vals.push_back(APInt(width, static_cast<uint64_t>(iv),
                           /*isSigned=*/false, /*implicitTrunc=*/true));
    }
    attr = leaves.size() == 1
               ? DenseElementsAttr::get(
                     type, mlir::Attribute(IntegerAttr::get(elem, vals[0])))
               : DenseElementsAttr::get(type, vals);
  }
  define(s, 0, arith::ConstantOp::create(builder, loc, attr));
  return success();
}

LogicalResult Generator::genIota(const Statement &s) {
  Location loc = s.loc;
  const TensorType &t = s.resultTypes[0];
  int64_t rank = t.rank();
  std::optional<int64_t> axis = normalizeAxis(intAttr(s, "axis", 0), rank);
  if (!axis) {
    emitError(s.opLoc) << "internal error: bad iota axis";
    return failure();
  }
  SmallVector<Value> dims;
  for (auto [i, d] : llvm::enumerate(t.dims)) {
    Value v = knownDim(loc, d);
    if (!v) {
      emitError(s.opLoc) << "iota needs static or symbolic dims, but dim " << i
                         << " of " << t.str() << " is " << dimToString(d);
      return failure();
    }
    dims.push_back(v);
  }
  RankedTensorType type = tensorType(t);
  Type elem = type.getElementType();
  Value init = emptyTensor(loc, type, dims);
  AffineMap id = builder.getMultiDimIdentityMap(rank);
  int64_t ax = *axis;
  Value r = generic(
      loc, type, {}, init, {id}, rank, {},
      [&](OpBuilder &b, Location l, ValueRange) {
        Value idx = linalg::IndexOp::create(b, l, ax);
        Value v;
        if (isa<FloatType>(elem)) // the cast's rounding (bf16 too)
          v = emitCast(b, l, ElementType::I64, t.elementType,
                       arith::IndexCastOp::create(b, l, b.getI64Type(), idx));
        else
          v = arith::IndexCastOp::create(b, l, elem, idx);
        linalg::YieldOp::create(b, l, v);
      })[0];
  define(s, 0, r);
  return success();
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult Generator::genStatement(const Statement &s) {
  auto markFailed = [&] {
    for (const std::string &r : s.results)
      failedNames.insert(r);
  };
  for (const Operand &o : s.operands)
    if (o.kind == Operand::Value &&
        (failedNames.contains(o.name) || !values.count(o.name))) {
      // Already reported at the statement that failed.
      markFailed();
      return success();
    }
  if (s.resultTypes.size() != s.results.size()) {
    emitError(s.opLoc) << "internal error: statement has no inferred type";
    markFailed();
    return failure();
  }
  StringRef op = s.op;
  LogicalResult result = failure();
  if (op == "call")
    result = genCall(s);
  else if (isUnaryOp(op))
    result = genUnary(s);
  else if (isBinaryOp(op))
    result = genBinary(s);
  else if (isCompareOp(op))
    result = genCompare(s);
  else if (op == "select")
    result = genSelect(s);
  else if (op == "cast")
    result = genCast(s);
  else if (op == "constant")
    result = genConstant(s);
  else if (op == "iota")
    result = genIota(s);
  else if (op == "matmul")
    result = genMatmul(s);
  else if (op == "broadcast_to")
    result = genBroadcastTo(s);
  else if (isReductionOp(op))
    result = genReduction(s);
  else if (op == "argmax" || op == "argmin")
    result = genArgReduction(s);
  else if (op == "softmax" || op == "log_softmax")
    result = genSoftmax(s);
  else if (op == "transpose")
    result = genTranspose(s);
  else if (op == "reshape")
    result = genReshape(s);
  else if (op == "concat")
    result = genConcat(s);
  else if (op == "slice")
    result = genSlice(s);
  else if (op == "gather")
    result = genGather(s);
  else if (op == "layer_norm" || op == "rms_norm")
    result = genNorm(s);
  else
    emitError(s.opLoc) << "lowering of '" << op << "' is not implemented yet";
  if (failed(result))
    markFailed();
  return result;
}

} // namespace detail
} // namespace kina
