//===- BufferOwnership.cpp - Results owned by the caller, early returns ---===//
//
// Runs right after one-shot bufferization. Kina functions are straight-line
// (spec: no control flow in version 0), so each function body is one block
// and the lifetime of a buffer is simply "from its allocation to the last use
// of it or of a view of it". The pass makes the bufferized module follow the
// ABI's ownership rules (spec, "ABI", Allocation and Ownership):
//
//   1. every returned buffer is a fresh allocation of this function (or the
//      result of a call, which is one too): an argument, a global constant or
//      a second return of the same buffer is copied into a new allocation;
//   2. every other allocation (and every call result not returned) is
//      released with `memref.dealloc` right after its last use;
//   3. after each allocation and each call the data pointer is checked: a
//      null pointer means the runtime refused the allocation (it recorded the
//      status and message), and the function frees the buffers it holds and
//      returns null descriptors; a `func.call @__kina_check(%ok, %a, %b)`
//      (MLIRGen's run-time shape rule) becomes the same early return, after
//      calling `kina_rt_shape_error` with its message and the two sizes.
//
//   before:  %a = alloc  ...  %b = alloc  ... call @__kina_check(%ok, ...)
//   after:   %a = alloc; cond_br (ptr(%a) != 0) ^k1, ^fail1
//            ^k1: %b = alloc; cond_br (ptr(%b) != 0) ^k2, ^fail2  ...
//            ^failN: dealloc live buffers; return null descriptors
//
//===----------------------------------------------------------------------===//
#include "Descriptors.h"
#include "kina/IRConventions.h"
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kina {
namespace {

/// Name of the runtime function that records a shape error (runtime.h).
constexpr const char *kShapeErrorFunction = "kina_rt_shape_error";

/// The buffer a memref value is a view of (follows view-like ops).
Value getRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    break;
  }
  return v;
}

class BufferOwnershipPass
    : public PassWrapper<BufferOwnershipPass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BufferOwnershipPass)
  StringRef getArgument() const override { return "kina-buffer-ownership"; }
  StringRef getDescription() const override {
    return "Caller-owned results, releases, and early returns on failure";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<cf::ControlFlowDialect, LLVM::LLVMDialect,
                    memref::MemRefDialect, arith::ArithDialect,
                    linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (!func.isExternal() && failed(processFunction(func)))
        return signalPassFailure();
    if (auto check = module.lookupSymbol<func::FuncOp>(kCheckFunctionName))
      if (SymbolTable::symbolKnownUseEmpty(check, module))
        check.erase();
  }

private:
  unsigned messageCounter = 0;

  bool isCheckCall(Operation *op) const {
    auto call = dyn_cast<func::CallOp>(op);
    return call && call.getCallee() == kCheckFunctionName;
  }

  /// True for the ops whose memref results are buffers this function owns.
  bool definesOwnedBuffers(Operation *op) const {
    if (isa<memref::AllocOp>(op))
      return true;
    auto call = dyn_cast<func::CallOp>(op);
    return call && !isCheckCall(op) &&
           llvm::any_of(call.getResultTypes(), llvm::IsaPred<MemRefType>);
  }

  LogicalResult processFunction(func::FuncOp func);
  void copyReturnedBuffers(func::ReturnOp ret,
                           llvm::SmallPtrSetImpl<Value> &owned);
  void insertReleases(Block &block, func::ReturnOp ret,
                      ArrayRef<Value> ownedRoots);
  void insertEarlyReturns(func::FuncOp func);
  func::FuncOp getOrDeclareShapeError(ModuleOp module);
};

LogicalResult BufferOwnershipPass::processFunction(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitError("internal error: expected a single-block function "
                          "after bufferization");
  Block &block = func.getBody().front();
  auto ret = dyn_cast<func::ReturnOp>(block.getTerminator());
  if (!ret)
    return func.emitError("internal error: function without func.return");

  llvm::SmallPtrSet<Value, 16> owned;
  SmallVector<Value> ownedRoots;
  for (Operation &op : block)
    if (definesOwnedBuffers(&op))
      for (Value r : op.getResults())
        if (isa<MemRefType>(r.getType())) {
          owned.insert(r);
          ownedRoots.push_back(r);
        }

  copyReturnedBuffers(ret, owned);
  insertReleases(block, ret, ownedRoots);
  insertEarlyReturns(func);
  return success();
}

/// Rule 1: each returned value must be the whole of a buffer this function
/// owns, returned once, with the identity layout.
void BufferOwnershipPass::copyReturnedBuffers(
    func::ReturnOp ret, llvm::SmallPtrSetImpl<Value> &owned) {
  llvm::SmallPtrSet<Value, 8> claimed;
  OpBuilder b(ret);
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type)
      continue;
    Value root = getRoot(v);
    bool usable = owned.contains(root) && !claimed.contains(root) &&
                  type.getLayout().isIdentity();
    if (usable) {
      claimed.insert(root);
      continue;
    }
    Location loc = v.getLoc();
    SmallVector<Value> dynamicSizes;
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (type.isDynamicDim(i))
        dynamicSizes.push_back(memref::DimOp::create(b, loc, v, i));
    auto freshType = MemRefType::get(type.getShape(), type.getElementType());
    auto alloc = memref::AllocOp::create(b, loc, freshType, dynamicSizes,
                                         b.getI64IntegerAttr(64));
    // linalg.copy becomes loops for any layout (memref.copy of a strided
    // view would call MLIR's runner-utils library, which kinac never links).
    linalg::CopyOp::create(b, loc, ValueRange{v}, ValueRange{alloc});
    Value result = alloc;
    if (freshType != type)
      result = memref::CastOp::create(b, loc, type, alloc);
    operand.set(result);
    owned.insert(alloc);
    claimed.insert(alloc);
  }
}

/// Rule 2: release every owned buffer that is not returned after the last
/// use of it or of any view of it.
void BufferOwnershipPass::insertReleases(Block &block, func::ReturnOp ret,
                                         ArrayRef<Value> ownedRoots) {
  llvm::SmallPtrSet<Value, 8> returnedRoots;
  for (Value v : ret.getOperands())
    if (isa<MemRefType>(v.getType()))
      returnedRoots.insert(getRoot(v));

  for (Value root : ownedRoots) {
    if (returnedRoots.contains(root))
      continue;
    Operation *last = root.getDefiningOp();
    SmallVector<Value> worklist = {root};
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (Operation *user : v.getUsers()) {
        Operation *top = block.findAncestorOpInBlock(*user);
        if (!top)
          continue;
        if (last->isBeforeInBlock(top))
          last = top;
        if (auto view = dyn_cast<ViewLikeOpInterface>(user))
          if (view.getViewSource() == v)
            for (Value r : user->getResults())
              worklist.push_back(r);
      }
    }
    assert(last != ret.getOperation() && "returned buffer scheduled for free");
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(last);
    memref::DeallocOp::create(b, root.getLoc(), root);
  }
}

func::FuncOp BufferOwnershipPass::getOrDeclareShapeError(ModuleOp module) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(kShapeErrorFunction))
    return fn;
  MLIRContext *ctx = module.getContext();
  OpBuilder b(ctx);
  b.setInsertionPointToStart(module.getBody());
  Type ptr = LLVM::LLVMPointerType::get(ctx);
  Type i64 = b.getI64Type();
  auto fn = func::FuncOp::create(
      b, module.getLoc(), kShapeErrorFunction,
      b.getFunctionType({ptr, i64, i64}, {b.getI32Type()}));
  fn.setPrivate();
  return fn;
}

/// Rule 3: a failure branch after every allocation, call and shape check.
void BufferOwnershipPass::insertEarlyReturns(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  ModuleOp module = func->getParentOfType<ModuleOp>();
  Block &entry = func.getBody().front();

  // Walk the block once, recording for every failure site the buffers that
  // are live there (allocated before it and not yet released).
  struct Site {
    Operation *op;
    SmallVector<Value> live;
  };
  SmallVector<Site> sites;
  llvm::SetVector<Value> live;
  for (Operation &op : entry) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op))
      live.remove(dealloc.getMemref());
    if (isCheckCall(&op) || definesOwnedBuffers(&op))
      sites.push_back({&op, SmallVector<Value>(live.begin(), live.end())});
    if (definesOwnedBuffers(&op))
      for (Value r : op.getResults())
        if (isa<MemRefType>(r.getType()))
          live.insert(r);
  }

  TypeRange resultTypes = func.getFunctionType().getResults();
  for (Site &site : sites) {
    Operation *op = site.op;
    Location loc = op->getLoc();
    Block *current = op->getBlock();
    OpBuilder b(ctx);

    // The condition under which execution continues.
    Value ok, first, second;
    StringRef message;
    if (isCheckCall(op)) {
      ok = op->getOperand(0);
      first = op->getOperand(1);
      second = op->getOperand(2);
      if (auto attr = op->getAttrOfType<StringAttr>(kCheckMessageAttr))
        message = attr.getValue();
    } else {
      b.setInsertionPointAfter(op);
      Value buffer = *llvm::find_if(op->getResults(), [](Value r) {
        return isa<MemRefType>(r.getType());
      });
      Value pointer =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      ok = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, pointer,
                                 zero);
    }
    Operation *splitAfter =
        ok.getDefiningOp() && !isCheckCall(op) ? ok.getDefiningOp() : op;
    Block *continuation =
        current->splitBlock(std::next(splitAfter->getIterator()));

    Block *fail = new Block();
    func.getBody().push_back(fail);
    b.setInsertionPointToEnd(fail);
    if (isCheckCall(op)) {
      std::string name = "kina_msg_" + std::to_string(messageCounter++);
      // The runtime reads a C string: the global carries the terminator.
      Value text = LLVM::createGlobalString(loc, b, name, message.str() + '\0',
                                            LLVM::Linkage::Internal);
      Value a = arith::IndexCastOp::create(b, loc, b.getI64Type(), first);
      Value c = arith::IndexCastOp::create(b, loc, b.getI64Type(), second);
      func::CallOp::create(b, loc, getOrDeclareShapeError(module),
                           ValueRange{text, a, c});
    }
    for (Value buffer : site.live)
      memref::DeallocOp::create(b, loc, buffer);
    SmallVector<Value> nulls;
    for (Type t : resultTypes) {
      auto memrefType = cast<MemRefType>(t);
      Value zero = LLVM::ZeroOp::create(
          b, loc, memrefDescriptorType(ctx, memrefType.getRank()));
      nulls.push_back(
          UnrealizedConversionCastOp::create(b, loc, memrefType, zero)
              .getResult(0));
    }
    func::ReturnOp::create(b, loc, nulls);

    b.setInsertionPointToEnd(current);
    cf::CondBranchOp::create(b, loc, ok, continuation, fail);
    if (isCheckCall(op))
      op->erase();
  }
}

} // namespace

std::unique_ptr<Pass> createBufferOwnershipPass() {
  return std::make_unique<BufferOwnershipPass>();
}

} // namespace kina
