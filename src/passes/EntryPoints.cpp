//===- EntryPoints.cpp - The status entry `kina_<fn>` of each function ----===//
//
// For every exported Kina function `@f` (a public `func.func` carrying a Kina
// signature, kina/IRConventions.h) this pass adds
//
//   int32_t kina_f(KinaMemRefR *out0, ..., const KinaMemRefR *in0, ...)
//
// (spec, "ABI"): results first, then arguments, each a pointer to a ranked
// memref descriptor. It is built on the bufferized module as a `func.func`
// over `!llvm.ptr` values, so the ordinary lowering turns it into LLVM:
//
//   clear the thread's last error; copy the argument descriptors (a result
//   pointer may alias an argument's); check the result pointers are not
//   null and zero the result descriptors; on the first call in the process,
//   check the object's ABI version against the runtime's
//   (kina_rt_check_version: an object compiled for another ABI returns 1 on
//   every call); check the argument pointers are not null, load each
//   argument descriptor and check every dim against the Kina signature
//   (static sizes, symbolic dims equal wherever the name appears, no
//   negative size), that the data pointer is
//   not null when there are elements, that the element count fits in 64
//   bits and that the layout is row-major contiguous (unless there are no
//   elements; the offset is folded into the aligned pointer); call `@f`;
//   store the result descriptors, or return the runtime's status when `@f`
//   failed (null descriptors).
//
// Every failed check returns 1 (Validation Error) with a message naming the
// entry, the argument and the dim, recorded through the runtime's
// `kina_rt_shape_error`/`kina_rt_fail` (runtime.h). The object also keeps
// its version stamp, "kinac X, Kina ABI N", as the string global
// `__kina_version_stamp`, so `strings` on an object or program shows it.
//
//===----------------------------------------------------------------------===//
#include "Descriptors.h"
#include "kina/IRConventions.h"
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringMap.h"

#include <limits>

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_ENTRYPOINTSPASS
#include "kina/Passes.h.inc"

namespace {

class EntryPointsPass : public impl::EntryPointsPassBase<EntryPointsPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    stamp.abiVersion = abiVersion;
    stamp.compiler = compiler;
    // The functions first: the entries are added to the same module.
    SmallVector<func::FuncOp> exported;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (hasKinaSignature(fn) && fn.isPublic() && !fn.isExternal())
        exported.push_back(fn);
    for (func::FuncOp fn : exported) {
      FailureOr<KinaSignature> signature = readKinaSignature(fn);
      if (failed(signature) || failed(buildEntry(fn, *signature)))
        return signalPassFailure();
    }
  }

private:
  /// The options abi-version and compiler, read at the start of each run.
  VersionStamp stamp;
  unsigned messageCounter = 0;

  LogicalResult buildEntry(func::FuncOp callee, const KinaSignature &sig);
  /// The object's version globals: the flag set once the runtime accepted
  /// the ABI version, and the stamp string (created on first use).
  LLVM::GlobalOp versionFlag(OpBuilder &b, Location loc);
  LLVM::GlobalOp versionStamp(OpBuilder &b, Location loc);
};

/// Builder state for one entry function: the current block, and helpers that
/// branch to a failure block returning a status.
struct EntryBuilder {
  OpBuilder &b;
  func::FuncOp entry;
  ModuleOp module;
  Location loc;
  unsigned &messageCounter;

  Type i64() { return b.getI64Type(); }
  Type i32() { return b.getI32Type(); }
  Type ptr() { return LLVM::LLVMPointerType::get(b.getContext()); }

  Value i64Const(int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i64(), v);
  }
  Value i32Const(int32_t v) {
    return arith::ConstantIntOp::create(b, loc, i32(), v);
  }
  Value message(StringRef text) {
    std::string name = "kina_entry_msg_" + std::to_string(messageCounter++);
    // The runtime reads a C string: the global carries the terminator.
    return LLVM::createGlobalString(loc, b, name, text.str() + '\0',
                                    LLVM::Linkage::Internal);
  }
  func::FuncOp declare(StringRef name, FunctionType type) {
    if (auto fn = module.lookupSymbol<func::FuncOp>(name))
      return fn;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto fn = func::FuncOp::create(b, loc, name, type);
    fn.setPrivate();
    return fn;
  }

  /// Continues in a new block when `ok` holds; otherwise runs `onFail` in a
  /// failure block, which must return a status value.
  void check(Value ok, llvm::function_ref<Value()> onFail) {
    Block *cont = new Block();
    Block *fail = new Block();
    entry.getBody().push_back(cont);
    entry.getBody().push_back(fail);
    cf::CondBranchOp::create(b, loc, ok, cont, fail);
    b.setInsertionPointToEnd(fail);
    Value status = onFail();
    func::ReturnOp::create(b, loc, status);
    b.setInsertionPointToEnd(cont);
  }
  /// `ok` or return 1 with the fixed message `text`.
  void require(Value ok, StringRef text) {
    check(ok, [&] {
      auto fn =
          declare("kina_rt_fail", b.getFunctionType({i32(), ptr()}, {i32()}));
      return func::CallOp::create(b, loc, fn,
                                  ValueRange{i32Const(1), message(text)})
          .getResult(0);
    });
  }
  /// `ok` or return 1 with `text`, whose `{0}`/`{1}` become `a`/`b`.
  void requireSizes(Value ok, StringRef text, Value a, Value c) {
    check(ok, [&] {
      auto fn = declare("kina_rt_shape_error",
                        b.getFunctionType({ptr(), i64(), i64()}, {i32()}));
      return func::CallOp::create(b, loc, fn, ValueRange{message(text), a, c})
          .getResult(0);
    });
  }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
};

constexpr const char *kVersionFlag = "__kina_version_checked";
constexpr const char *kVersionStamp = "__kina_version_stamp";

LLVM::GlobalOp EntryPointsPass::versionFlag(OpBuilder &b, Location loc) {
  ModuleOp module = getOperation();
  if (auto global = module.lookupSymbol<LLVM::GlobalOp>(kVersionFlag))
    return global;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  return LLVM::GlobalOp::create(b, loc, b.getI8Type(), /*isConstant=*/false,
                                LLVM::Linkage::Internal, kVersionFlag,
                                b.getI8IntegerAttr(0));
}

LLVM::GlobalOp EntryPointsPass::versionStamp(OpBuilder &b, Location loc) {
  ModuleOp module = getOperation();
  if (auto global = module.lookupSymbol<LLVM::GlobalOp>(kVersionStamp))
    return global;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  // A C string: the runtime copies it into its message.
  std::string text =
      stamp.compiler + ", Kina ABI " + std::to_string(stamp.abiVersion) + '\0';
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  return LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true,
                                LLVM::Linkage::Internal, kVersionStamp,
                                b.getStringAttr(text));
}

LogicalResult EntryPointsPass::buildEntry(func::FuncOp callee,
                                          const KinaSignature &sig) {
  ModuleOp module = getOperation();
  MLIRContext *ctx = module.getContext();
  StringRef name = callee.getSymName();
  FunctionType calleeType = callee.getFunctionType();
  std::string entryName = ("kina_" + name).str();
  if (module.lookupSymbol(entryName))
    return callee.emitError()
           << "function @" << name << " collides with the entry symbol '"
           << entryName << "'";

  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Location loc = callee.getLoc();
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  size_t numResults = calleeType.getNumResults();
  size_t numArgs = calleeType.getNumInputs();
  SmallVector<Type> argTypes(numResults + numArgs, ptr);
  auto entry = func::FuncOp::create(
      b, loc, entryName, b.getFunctionType(argTypes, {b.getI32Type()}));
  Block *body = entry.addEntryBlock();
  b.setInsertionPointToStart(body);
  EntryBuilder e{b, entry, module, loc, messageCounter};

  func::CallOp::create(
      b, loc, e.declare("kina_rt_begin_call", b.getFunctionType({}, {})),
      ValueRange{});

  Value nullPtr = LLVM::ZeroOp::create(b, loc, ptr);
  auto notNull = [&](Value p) {
    return LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::ne, p, nullPtr);
  };

  // Argument descriptors are copied first: the caller may pass one
  // descriptor as a result and as an argument (the arguments are const, so C
  // allows it), and zeroing the results must not erase the argument. A null
  // argument pointer reads a zero descriptor instead; its check fails below.
  SmallVector<Value> argDescs;
  for (size_t i = 0; i < numArgs; ++i) {
    auto type = cast<MemRefType>(calleeType.getInput(i));
    Type descType = memrefDescriptorType(ctx, type.getRank());
    Value in = body->getArgument(numResults + i);
    Value slot =
        LLVM::AllocaOp::create(b, loc, ptr, descType, e.i64Const(1), 8);
    LLVM::StoreOp::create(b, loc, LLVM::ZeroOp::create(b, loc, descType),
                          slot);
    Value from = LLVM::SelectOp::create(b, loc, notNull(in), in, slot);
    argDescs.push_back(LLVM::LoadOp::create(b, loc, descType, from));
  }

  // Result pointers: not null, then zeroed so a failure leaves null buffers.
  for (size_t i = 0; i < numResults; ++i) {
    Value out = body->getArgument(i);
    e.require(notNull(out), entryName + ": result " + std::to_string(i) +
                                " descriptor pointer is null");
  }
  for (size_t i = 0; i < numResults; ++i) {
    auto type = cast<MemRefType>(calleeType.getResult(i));
    Type desc = memrefDescriptorType(ctx, type.getRank());
    LLVM::StoreOp::create(b, loc, LLVM::ZeroOp::create(b, loc, desc),
                          body->getArgument(i));
  }

  // The ABI version, checked (after the results are zeroed, so a refused
  // call leaves null results like any failure) until the runtime accepts it
  // once: a load and a branch per call afterwards. Monotonic atomics: threads
  // racing on the first call may each check, which is harmless.
  {
    Value flagAddr = LLVM::AddressOfOp::create(b, loc, versionFlag(b, loc));
    Value flag = LLVM::LoadOp::create(b, loc, b.getI8Type(), flagAddr,
                                      /*alignment=*/1, /*isVolatile=*/false,
                                      /*isNonTemporal=*/false,
                                      /*isInvariant=*/false,
                                      /*isInvariantGroup=*/false,
                                      LLVM::AtomicOrdering::monotonic);
    Value checked = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ne, flag,
        arith::ConstantIntOp::create(b, loc, b.getI8Type(), 0));
    Block *checkBlock = new Block();
    Block *cont = new Block();
    entry.getBody().push_back(checkBlock);
    entry.getBody().push_back(cont);
    cf::CondBranchOp::create(b, loc, checked, cont, checkBlock);
    b.setInsertionPointToEnd(checkBlock);
    auto checkFn =
        e.declare("kina_rt_check_version",
                  b.getFunctionType({e.ptr(), e.i32(), e.ptr()}, {e.i32()}));
    Value stampAddr = LLVM::AddressOfOp::create(b, loc, versionStamp(b, loc));
    Value status = func::CallOp::create(b, loc, checkFn,
                                        ValueRange{e.message(entryName),
                                                   e.i32Const(stamp.abiVersion),
                                                   stampAddr})
                       .getResult(0);
    e.check(e.cmp(arith::CmpIPredicate::eq, status, e.i32Const(0)),
            [&] { return status; });
    LLVM::StoreOp::create(
        b, loc, arith::ConstantIntOp::create(b, loc, b.getI8Type(), 1),
        flagAddr, /*alignment=*/1, /*isVolatile=*/false,
        /*isNonTemporal=*/false, /*isInvariantGroup=*/false,
        LLVM::AtomicOrdering::monotonic);
    cf::BranchOp::create(b, loc, cont);
    b.setInsertionPointToEnd(cont);
  }

  auto returnUnlessZero = [&](Value status) {
    e.check(e.cmp(arith::CmpIPredicate::eq, status, e.i32Const(0)),
            [&] { return status; });
  };
  // cuda: each argument's allocated pointer (null without elements), checked
  // once the GPU call frame is entered, after the descriptor checks.
  SmallVector<Value> gpuArgPointers;

  // Arguments: load and validate against the Kina signature.
  struct Binding {
    Value size;
    std::string where;
  };
  llvm::StringMap<Binding> symbols;
  SmallVector<Value> callArgs;
  for (size_t i = 0; i < numArgs; ++i) {
    const std::string &paramName = sig.paramNames[i];
    auto type = cast<MemRefType>(calleeType.getInput(i));
    int64_t rank = type.getRank();
    Value in = body->getArgument(numResults + i);
    std::string argName = entryName + ": argument %" + paramName;
    e.require(notNull(in), argName + " descriptor pointer is null");
    Value desc = argDescs[i];

    SmallVector<Value> sizes;
    for (int64_t d = 0; d < rank; ++d) {
      Value size =
          LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{3, d});
      sizes.push_back(size);
      std::string place =
          "argument %" + paramName + " dim " + std::to_string(d);
      std::string where = entryName + ": " + place;
      const SignatureDim &dim = sig.paramDims[i][d];
      switch (dim.kind) {
      case SignatureDim::Static:
        e.requireSizes(
            e.cmp(arith::CmpIPredicate::eq, size, e.i64Const(dim.size)),
            where + " has size {1}, expected {0}", e.i64Const(dim.size), size);
        break;
      case SignatureDim::Symbolic: {
        auto it = symbols.find(dim.symbol);
        if (it == symbols.end()) {
          e.requireSizes(e.cmp(arith::CmpIPredicate::sge, size, e.i64Const(0)),
                         where + " (" + dim.symbol + ") has negative size {1}",
                         e.i64Const(0), size);
          symbols[dim.symbol] = {size, place};
        } else {
          e.requireSizes(e.cmp(arith::CmpIPredicate::eq, size, it->second.size),
                         where + " (" + dim.symbol + ") has size {1}, but " +
                             dim.symbol + " = {0} from " + it->second.where,
                         it->second.size, size);
        }
        break;
      }
      case SignatureDim::Dynamic:
        e.requireSizes(e.cmp(arith::CmpIPredicate::sge, size, e.i64Const(0)),
                       where + " has negative size {1}", e.i64Const(0), size);
        break;
      }
    }

    // Row-major contiguity (strides of size-1 dims do not matter, nor any
    // stride of an array without elements, as for NumPy) and the element
    // count, for the null-data check.
    Value empty = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    for (Value size : sizes)
      empty = arith::OrIOp::create(
          b, loc, empty, e.cmp(arith::CmpIPredicate::eq, size, e.i64Const(0)));
    Value expected = e.i64Const(1);
    for (int64_t d = rank - 1; d >= 0; --d) {
      Value stride =
          LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{4, d});
      Value fine = arith::OrIOp::create(
          b, loc, e.cmp(arith::CmpIPredicate::eq, stride, expected),
          arith::OrIOp::create(
              b, loc,
              e.cmp(arith::CmpIPredicate::sle, sizes[d], e.i64Const(1)),
              empty));
      e.requireSizes(fine,
                     argName + " is not row-major contiguous: dim " +
                         std::to_string(d) + " has stride {1}, expected {0}",
                     expected, stride);
      // The element count must fit in 64 bits: a larger one describes no
      // buffer, and a wrapped count would slip past the null-data check.
      Value divisor = arith::SelectOp::create(
          b, loc, e.cmp(arith::CmpIPredicate::sgt, sizes[d], e.i64Const(1)),
          sizes[d], e.i64Const(1));
      Value limit = arith::DivSIOp::create(
          b, loc, e.i64Const(std::numeric_limits<int64_t>::max()), divisor);
      e.requireSizes(arith::OrIOp::create(
                         b, loc,
                         e.cmp(arith::CmpIPredicate::sle, expected, limit),
                         empty),
                     argName + " has too many elements: with dim " +
                         std::to_string(d) +
                         " of size {1}, the element count overflows 64 bits",
                     expected, sizes[d]);
      expected = arith::MulIOp::create(b, loc, expected, sizes[d]);
    }
    Value elements =
        arith::SelectOp::create(b, loc, empty, e.i64Const(0), expected);
    Value aligned =
        LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{1});
    Value hasData = arith::OrIOp::create(
        b, loc, notNull(aligned),
        e.cmp(arith::CmpIPredicate::eq, elements, e.i64Const(0)));
    e.require(hasData, argName + " has a null data pointer");
    if (gpu)
      gpuArgPointers.push_back(LLVM::SelectOp::create(
          b, loc, e.cmp(arith::CmpIPredicate::eq, elements, e.i64Const(0)),
          nullPtr,
          LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{0})));

    // Fold the offset into the aligned pointer: the compiled function
    // assumes the identity layout with offset 0.
    Value offset =
        LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{2});
    Type elementType = type.getElementType();
    Value shifted = LLVM::GEPOp::create(b, loc, ptr, elementType, aligned,
                                        ValueRange{offset});
    desc = LLVM::InsertValueOp::create(b, loc, desc, shifted,
                                       ArrayRef<int64_t>{1});
    desc = LLVM::InsertValueOp::create(b, loc, desc, e.i64Const(0),
                                       ArrayRef<int64_t>{2});
    callArgs.push_back(
        UnrealizedConversionCastOp::create(b, loc, type, desc).getResult(0));
  }

  // cuda: the runtime loads the driver, selects the device and makes its
  // context current on this thread (3 without a device; then no exit); the
  // GPU must be able to read every argument (1 for host memory: the frame
  // is left with kina_rt_gpu_exit, whose status does not matter then).
  func::FuncOp gpuExit;
  if (gpu) {
    auto enter =
        e.declare("kina_rt_gpu_enter", b.getFunctionType({}, {e.i32()}));
    gpuExit = e.declare("kina_rt_gpu_exit", b.getFunctionType({}, {e.i32()}));
    returnUnlessZero(
        func::CallOp::create(b, loc, enter, ValueRange{}).getResult(0));
    auto checkArg =
        e.declare("kina_rt_gpu_check_argument",
                  b.getFunctionType({e.ptr(), e.ptr(), e.ptr()}, {e.i32()}));
    for (size_t i = 0; i < numArgs; ++i) {
      Value status = func::CallOp::create(
                         b, loc, checkArg,
                         ValueRange{gpuArgPointers[i], e.message(entryName),
                                    e.message(sig.paramNames[i])})
                         .getResult(0);
      e.check(e.cmp(arith::CmpIPredicate::eq, status, e.i32Const(0)), [&] {
        func::CallOp::create(b, loc, gpuExit, ValueRange{});
        return status;
      });
    }
  }

  auto call = func::CallOp::create(b, loc, callee, callArgs);
  // cuda: wait for the kernels; a failed launch or kernel is a status.
  Value gpuStatus;
  if (gpu)
    gpuStatus =
        func::CallOp::create(b, loc, gpuExit, ValueRange{}).getResult(0);

  // A null result means `@f` failed and the runtime recorded why.
  Value failed;
  SmallVector<Value> resultDescs;
  for (size_t i = 0; i < numResults; ++i) {
    auto type = cast<MemRefType>(calleeType.getResult(i));
    Value desc = UnrealizedConversionCastOp::create(
                     b, loc, memrefDescriptorType(ctx, type.getRank()),
                     call.getResult(i))
                     .getResult(0);
    resultDescs.push_back(desc);
    if (i == 0) {
      Value allocated =
          LLVM::ExtractValueOp::create(b, loc, desc, ArrayRef<int64_t>{0});
      failed = LLVM::ICmpOp::create(b, loc, LLVM::ICmpPredicate::eq, allocated,
                                    nullPtr);
    }
  }
  if (failed) {
    Value ok = arith::XOrIOp::create(
        b, loc, failed, arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1));
    e.check(ok, [&] {
      auto lastStatus =
          e.declare("kina_rt_last_status", b.getFunctionType({}, {e.i32()}));
      Value status =
          func::CallOp::create(b, loc, lastStatus, ValueRange{}).getResult(0);
      // A failure always records a non-zero status; 5 guards the invariant.
      Value isZero = e.cmp(arith::CmpIPredicate::eq, status, e.i32Const(0));
      return arith::SelectOp::create(b, loc, isZero, e.i32Const(5), status)
          .getResult();
    });
  }
  if (gpu) {
    // The results are complete only when the GPU succeeded: otherwise they
    // are freed and the runtime's status (2 or 3) returned.
    e.check(e.cmp(arith::CmpIPredicate::eq, gpuStatus, e.i32Const(0)), [&] {
      auto freeFn =
          e.declare("runtime_free", b.getFunctionType({e.ptr()}, {e.i32()}));
      for (Value desc : resultDescs)
        func::CallOp::create(b, loc, freeFn,
                             ValueRange{LLVM::ExtractValueOp::create(
                                 b, loc, desc, ArrayRef<int64_t>{0})});
      return gpuStatus;
    });
  }
  for (size_t i = 0; i < numResults; ++i)
    LLVM::StoreOp::create(b, loc, resultDescs[i], body->getArgument(i));
  func::ReturnOp::create(b, loc, e.i32Const(0));
  return success();
}

} // namespace

std::unique_ptr<Pass> createEntryPointsPass(const VersionStamp &stamp,
                                            bool gpu) {
  EntryPointsPassOptions options;
  options.abiVersion = stamp.abiVersion;
  options.compiler = stamp.compiler;
  options.gpu = gpu;
  return createEntryPointsPass(std::move(options));
}

} // namespace kina
