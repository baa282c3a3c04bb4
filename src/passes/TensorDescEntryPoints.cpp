//===- TensorDescEntryPoints.cpp - The TensorDesc entry kinatd_<fn> -------===//
//
// For every exported Kina function `@f` (public, with a body, carrying a
// Kina signature: kina/IRConventions.h) whose status entry `@kina_f`
// (kina-entry-points) exists, this pass adds the destination-passing entry
// of the seed ffi-bridge's host boundary (kina/abi.h, docs/python.md)
//
//   int32_t kinatd_f(const KinaTensorDesc *out0, ...,
//                    const KinaTensorDesc *in0, ...,
//                    int32_t device_id, uint64_t raw_stream)
//
// as a `func.func` over `!llvm.ptr`, `i32`, `i64`: it stores the descriptor
// pointers into two stack arrays, reserves one stack slot of
// sizeof(KinaMemRef4) per tensor, calls the runtime's kina_rt_td_prepare
// (validation against a constant table of dtype codes and ranks, one memref
// descriptor per argument: the caller's memory or a contiguous copy of a
// strided view), then `@kina_f` on the slots, then kina_rt_td_finish (copy
// into the caller's outputs, release of every runtime buffer, the seed's
// return codes). The name is `kinatd_f`, not `kina_td_f`, because the
// status entry of a Kina function `@td_f` is `kina_td_f`; no status entry
// begins with `kinatd_`.
//
// A function with a parameter or result of rank above KINA_TD_MAX_RANK gets
// an entry that returns -6 (the descriptor cannot carry it). With the
// option `supported=false` (a target without a TensorDesc path) every entry
// returns -4 (KINA_TD_DEVICE_ERROR) with a message saying so. With `gpu`
// (the cuda target) the frame is kina_rt_td_gpu_prepare/_finish, which
// also take `device_id` and `raw_stream` (the caller's device and stream);
// on the host they are unused.
//
//===----------------------------------------------------------------------===//
#include "kina/IRConventions.h"
#include "kina/Passes.h"
#include "kina/abi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_TENSORDESCENTRYPOINTSPASS
#include "kina/Passes.h.inc"

namespace {

/// The KINA_TD_DTYPE_* code of an element type, or -1.
int32_t dtypeCode(Type type) {
  if (type.isF32())
    return KINA_TD_DTYPE_F32;
  if (type.isF16())
    return KINA_TD_DTYPE_F16;
  if (type.isBF16())
    return KINA_TD_DTYPE_BF16;
  if (type.isF64())
    return KINA_TD_DTYPE_F64;
  if (type.isInteger(32))
    return KINA_TD_DTYPE_I32;
  if (type.isInteger(64))
    return KINA_TD_DTYPE_I64;
  if (type.isInteger(8))
    return KINA_TD_DTYPE_I8;
  if (type.isInteger(1))
    return KINA_TD_DTYPE_I1;
  return -1;
}

/// Words per scratch slot: a KinaMemRef4.
constexpr int64_t kSlotWords = sizeof(KinaMemRef4) / sizeof(int64_t);

class TensorDescEntryPointsPass
    : public impl::TensorDescEntryPointsPassBase<TensorDescEntryPointsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    SmallVector<func::FuncOp> exported;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (hasKinaSignature(fn) && fn.isPublic() && !fn.isExternal())
        exported.push_back(fn);
    for (func::FuncOp fn : exported)
      if (failed(buildEntry(fn)))
        return signalPassFailure();
  }

private:
  LogicalResult buildEntry(func::FuncOp callee);
  unsigned counter = 0;
};

LogicalResult TensorDescEntryPointsPass::buildEntry(func::FuncOp callee) {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  StringRef name = callee.getSymName();
  std::string statusName = ("kina_" + name).str();
  std::string entryName = ("kinatd_" + name).str();
  auto status = module.lookupSymbol<func::FuncOp>(statusName);
  if (!status)
    return callee.emitError() << "no status entry '" << statusName << "' for @"
                              << name << " (run kina-entry-points first)";
  if (module.lookupSymbol(entryName))
    return callee.emitError()
           << "function @" << name << " collides with the TensorDesc entry '"
           << entryName << "'";

  FunctionType type = callee.getFunctionType();
  size_t numResults = type.getNumResults();
  size_t numArgs = type.getNumInputs();
  SmallVector<int32_t> table = {static_cast<int32_t>(numResults),
                                static_cast<int32_t>(numArgs)};
  bool representable = true;
  auto addTensor = [&](Type t) -> LogicalResult {
    auto memref = dyn_cast<MemRefType>(t);
    if (!memref)
      return callee.emitError() << "TensorDesc entry of @" << name
                                << ": expected memref types, got " << t;
    int32_t code = dtypeCode(memref.getElementType());
    if (code < 0)
      return callee.emitError()
             << "TensorDesc entry of @" << name << ": element type "
             << memref.getElementType() << " has no dtype code";
    representable &= memref.getRank() <= KINA_TD_MAX_RANK;
    table.push_back(code);
    table.push_back(static_cast<int32_t>(memref.getRank()));
    return success();
  };
  for (Type t : type.getResults())
    if (failed(addTensor(t)))
      return failure();
  for (Type t : type.getInputs())
    if (failed(addTensor(t)))
      return failure();

  OpBuilder b(ctx);
  Location loc = callee.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i32 = b.getI32Type();
  Type i64 = b.getI64Type();
  auto declare = [&](StringRef fnName, FunctionType fnType) {
    if (auto fn = module.lookupSymbol<func::FuncOp>(fnName))
      return fn;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto fn = func::FuncOp::create(b, loc, fnName, fnType);
    fn.setPrivate();
    return fn;
  };
  auto cString = [&](StringRef text) {
    std::string global = "kinatd_msg_" + std::to_string(counter++);
    return LLVM::createGlobalString(loc, b, global, text.str() + '\0',
                                    LLVM::Linkage::Internal);
  };
  auto i32Const = [&](int32_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v).getResult();
  };
  auto i64Const = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64, v).getResult();
  };

  b.setInsertionPointToEnd(module.getBody());
  SmallVector<Type> argTypes(numResults + numArgs, ptr);
  argTypes.push_back(i32);
  argTypes.push_back(i64);
  auto entry = func::FuncOp::create(b, loc, entryName,
                                    b.getFunctionType(argTypes, {i32}));
  Block *body = entry.addEntryBlock();
  b.setInsertionPointToStart(body);

  if (!supported || !representable) {
    int32_t code = supported ? KINA_TD_SHAPE_MISMATCH : KINA_TD_DEVICE_ERROR;
    std::string text =
        supported ? entryName + ": a parameter or result has rank above " +
                        std::to_string(KINA_TD_MAX_RANK) +
                        ", which a KinaTensorDesc cannot carry"
                  : entryName +
                        ": TensorDesc entries are not implemented "
                        "yet for this target (use " +
                        statusName + ")";
    auto begin = declare("kina_rt_begin_call", b.getFunctionType({}, {}));
    func::CallOp::create(b, loc, begin, ValueRange{});
    auto failFn = declare("kina_rt_fail", b.getFunctionType({i32, ptr}, {i32}));
    Value rc = func::CallOp::create(b, loc, failFn,
                                    ValueRange{i32Const(code), cString(text)})
                   .getResult(0);
    func::ReturnOp::create(b, loc, rc);
    return success();
  }

  // The table of dtype codes and ranks, a constant global.
  std::string tableName = "kinatd_table_" + name.str();
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto arrayType = LLVM::LLVMArrayType::get(i32, table.size());
    auto value = DenseIntElementsAttr::get(
        RankedTensorType::get({static_cast<int64_t>(table.size())}, i32),
        ArrayRef<int32_t>(table));
    LLVM::GlobalOp::create(b, loc, arrayType, /*isConstant=*/true,
                           LLVM::Linkage::Internal, tableName, value);
  }
  Value tableAddr = LLVM::AddressOfOp::create(b, loc, ptr, tableName);
  Value nameAddr = cString(entryName);

  // Pointer arrays (at least one element, so the alloca is well formed).
  auto pointerArray = [&](size_t first, size_t count) {
    Value array = LLVM::AllocaOp::create(
        b, loc, ptr, ptr, i64Const(std::max<size_t>(count, 1)), 8);
    for (size_t i = 0; i < count; ++i) {
      Value slot =
          LLVM::GEPOp::create(b, loc, ptr, ptr, array,
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      LLVM::StoreOp::create(b, loc, body->getArgument(first + i), slot);
    }
    return array;
  };
  Value outs = pointerArray(0, numResults);
  Value ins = pointerArray(numResults, numArgs);
  auto slotType = LLVM::LLVMArrayType::get(i64, kSlotWords);
  Value scratch = LLVM::AllocaOp::create(
      b, loc, ptr, slotType,
      i64Const(static_cast<int64_t>(std::max<size_t>(numResults + numArgs, 1))),
      8);

  // The cuda frame also takes the caller's device and stream.
  Value deviceId = body->getArgument(numResults + numArgs);
  Value rawStream = body->getArgument(numResults + numArgs + 1);
  SmallVector<Type> prepareTypes = {ptr, ptr, ptr, ptr, ptr};
  SmallVector<Value> prepareArgs = {nameAddr, tableAddr, outs, ins, scratch};
  if (gpu) {
    prepareTypes.append({i32, i64});
    prepareArgs.append({deviceId, rawStream});
  }
  auto prepare = declare(gpu ? "kina_rt_td_gpu_prepare" : "kina_rt_td_prepare",
                         b.getFunctionType(prepareTypes, {i32}));
  Value prepared =
      func::CallOp::create(b, loc, prepare, prepareArgs).getResult(0);
  Block *run = new Block();
  Block *fail = new Block();
  entry.getBody().push_back(run);
  entry.getBody().push_back(fail);
  Value ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, prepared,
                                   i32Const(0));
  cf::CondBranchOp::create(b, loc, ok, run, fail);
  b.setInsertionPointToEnd(fail);
  func::ReturnOp::create(b, loc, prepared);

  b.setInsertionPointToEnd(run);
  SmallVector<Value> slots;
  for (size_t i = 0; i < numResults + numArgs; ++i)
    slots.push_back(
        LLVM::GEPOp::create(b, loc, ptr, slotType, scratch,
                            ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)}));
  Value called = func::CallOp::create(b, loc, status, slots).getResult(0);
  SmallVector<Type> finishTypes = {ptr, ptr, ptr, ptr, ptr, i32};
  SmallVector<Value> finishArgs = {nameAddr, tableAddr, outs,
                                   ins,      scratch,   called};
  if (gpu) {
    finishTypes.append({i32, i64});
    finishArgs.append({deviceId, rawStream});
  }
  auto finish = declare(gpu ? "kina_rt_td_gpu_finish" : "kina_rt_td_finish",
                        b.getFunctionType(finishTypes, {i32}));
  Value rc = func::CallOp::create(b, loc, finish, finishArgs).getResult(0);
  func::ReturnOp::create(b, loc, rc);
  return success();
}

} // namespace

} // namespace kina
