//===- Parallel.cpp - Loops on the runtime's thread pool ------------------===//
//
// How kinac's cpu code uses every core (docs/architecture.md, "Threads"):
//
//  1. kina-tile-and-vectorize marks the outermost loop of each tiled op's
//     nest when that loop is parallel (linalg iterator type; never a
//     reduction, so each row's summation order stays as on one thread) and
//     outlines it at the end (outlineMarkedLoops); kina-matmul-kernel
//     outlines a loop over column slabs of C (one slab per thread that will
//     run, kina_rt_parallel_threads). Outlining (outlineParallelLoop) moves
//     the loop into a private `func.func` run over a range [lo, end) of its
//     iterations: MLIR's own helpers (getUsedValuesDefinedAbove, IRMapping,
//     Operation::clone) collect the captured values and copy the body, so
//     the outlined body is ordinary memref/vector/scf code that the rest of
//     the pipeline lowers with the module;
//  2. after the conversion to the LLVM dialect, kina-parallel-calls
//     (ParallelCallsPass) replaces each call of an outlined body by a call
//     of the runtime's kina_rt_parallel_for(n, cost, task, ctx), where
//     `ctx` is a stack struct of the captured values (memref descriptors
//     are structs of pointers and sizes by then) and `task` an internal
//     function that unpacks it and calls the body. Done in the LLVM dialect
//     because only there do all captured values have types a struct can
//     hold.
//
// The MLIR route (scf.parallel, convert-scf-to-openmp, libomp) would need
// libomp at link time and OpenMP's own thread count controls; the runtime
// pool keeps linking at `-lkina_runtime -lstdc++ -lm` and KINA_NUM_THREADS
// the only control (docs/architecture.md says more).
//
//===----------------------------------------------------------------------===//
#include "Parallel.h"
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_PARALLELCALLSPASS
#include "kina/Passes.h.inc"

namespace {

/// The runtime's loop runner (kina/runtime.h).
constexpr llvm::StringLiteral kParallelForFunction = "kina_rt_parallel_for";

bool isConstant(Value v) {
  Operation *def = v.getDefiningOp();
  return def && def->hasTrait<OpTrait::ConstantLike>();
}

/// `v` usable before `loop`: itself when defined outside it, else a clone
/// (recorded in `clones`) of its computation when that is side-effect free
/// and reads only values defined outside (constants, the bounds of a peeled
/// loop), else null.
Value hoistable(OpBuilder &b, scf::ForOp loop, Value v, IRMapping &clones) {
  if (!loop->isAncestor(v.getParentRegion()->getParentOp()))
    return v;
  if (Value known = clones.lookupOrNull(v))
    return known;
  Operation *def = v.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || !isMemoryEffectFree(def))
    return {};
  for (Value operand : def->getOperands()) {
    Value outside = hoistable(b, loop, operand, clones);
    if (!outside)
      return {};
    clones.map(operand, outside);
  }
  Operation *copy = b.clone(*def, clones);
  return copy->getResult(cast<OpResult>(v).getResultNumber());
}

/// Work estimate of `loop` (file comment of Parallel.h), built before
/// `outer`.
Value loopWork(OpBuilder &b, Location loc, scf::ForOp loop, scf::ForOp outer,
               IRMapping &clones) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value lb = hoistable(b, outer, loop.getLowerBound(), clones);
  Value ub = hoistable(b, outer, loop.getUpperBound(), clones);
  Value step = hoistable(b, outer, loop.getStep(), clones);
  if (!lb || !ub || !step)
    return one;
  Value extent = b.createOrFold<arith::SubIOp>(loc, ub, lb);
  extent = b.createOrFold<arith::MaxSIOp>(
      loc, extent, arith::ConstantIndexOp::create(b, loc, 0));
  Value inner;
  for (auto child : loop.getBody()->getOps<scf::ForOp>()) {
    Value work = loopWork(b, loc, child, outer, clones);
    inner = inner ? b.createOrFold<arith::AddIOp>(loc, inner, work) : work;
  }
  if (!inner)
    return extent;
  Value trips = b.createOrFold<arith::CeilDivSIOp>(loc, extent, step);
  return b.createOrFold<arith::MulIOp>(loc, trips, inner);
}

/// `base`, or `base_<k>` for the first k from 1 that no symbol of `module`
/// has.
std::string uniqueName(ModuleOp module, llvm::StringRef base) {
  std::string name = base.str();
  for (int k = 1; module.lookupSymbol(name); ++k)
    name = (base + "_" + llvm::Twine(k)).str();
  return name;
}

/// Moves each `memref.alloca` with static sizes at the top level of
/// `loop`'s body before `loop`.
void hoistAllocas(scf::ForOp loop) {
  for (auto alloca :
       llvm::make_early_inc_range(loop.getBody()->getOps<memref::AllocaOp>()))
    if (alloca->getNumOperands() == 0)
      alloca->moveBefore(loop);
}

} // namespace

LogicalResult outlineParallelLoop(RewriterBase &rewriter, scf::ForOp loop,
                                  Value cost) {
  auto parent = loop->getParentOfType<func::FuncOp>();
  if (loop.getNumResults() != 0 || !parent)
    return failure();
  auto module = parent->getParentOfType<ModuleOp>();
  Location loc = loop.getLoc();
  MLIRContext *context = rewriter.getContext();

  // The values the loop uses from above: its bounds and those of its body.
  llvm::SetVector<Value> used;
  getUsedValuesDefinedAbove(loop.getRegion(), used);
  for (Value bound :
       {loop.getLowerBound(), loop.getUpperBound(), loop.getStep()})
    used.insert(bound);
  SmallVector<Value> captured;
  SmallVector<Value> constants;
  for (Value v : used)
    (isConstant(v) ? constants : captured).push_back(v);

  // The body function: (lo, end, cost, captured...).
  Type index = rewriter.getIndexType();
  SmallVector<Type> argTypes = {index, index, index};
  for (Value v : captured)
    argTypes.push_back(v.getType());
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPoint(parent);
  auto body = func::FuncOp::create(
      rewriter, loc,
      uniqueName(module, "__kina_par_" + parent.getSymName().str()),
      FunctionType::get(context, argTypes, {}));
  body.setPrivate();
  body->setAttr(kParallelBodyAttr, UnitAttr::get(context));
  Block *entry = body.addEntryBlock();
  rewriter.setInsertionPointToStart(entry);
  IRMapping map;
  for (auto [v, arg] : llvm::zip(captured, entry->getArguments().drop_front(3)))
    map.map(v, arg);
  for (Value v : constants)
    map.map(v, rewriter.clone(*v.getDefiningOp())->getResult(0));
  // Iterations [lo, end) of the trip count: ivs lb + lo*step up to
  // min(lb + end*step, ub).
  Value lb = map.lookup(loop.getLowerBound());
  Value ub = map.lookup(loop.getUpperBound());
  Value step = map.lookup(loop.getStep());
  auto ivOf = [&](Value iteration) {
    return rewriter.createOrFold<arith::AddIOp>(
        loc, lb, rewriter.createOrFold<arith::MulIOp>(loc, iteration, step));
  };
  Value first = ivOf(entry->getArgument(0));
  Value last = rewriter.createOrFold<arith::MinSIOp>(
      loc, ivOf(entry->getArgument(1)), ub);
  auto piece = cast<scf::ForOp>(rewriter.clone(*loop, map));
  piece->removeAttr(kParallelLoopAttr);
  piece.setLowerBound(first);
  piece.setUpperBound(last);
  hoistAllocas(piece);
  func::ReturnOp::create(rewriter, loc);

  // The call: iterations [0, trip count).
  rewriter.setInsertionPoint(loop);
  Value zero = arith::ConstantIndexOp::create(rewriter, loc, 0);
  Value trips = arith::CeilDivSIOp::create(
      rewriter, loc,
      arith::SubIOp::create(rewriter, loc, loop.getUpperBound(),
                            loop.getLowerBound()),
      loop.getStep());
  trips = arith::MaxSIOp::create(rewriter, loc, trips, zero);
  SmallVector<Value> operands = {zero, trips, cost};
  operands.append(captured);
  func::CallOp::create(rewriter, loc, body, operands);
  rewriter.eraseOp(loop);
  return success();
}

Value costAtGrain(OpBuilder &b, Location loc, Value cost, int64_t grain) {
  if (grain < kRuntimeGrain)
    return b.createOrFold<arith::MulIOp>(
        loc, cost,
        arith::ConstantIndexOp::create(b, loc, kRuntimeGrain / grain));
  if (grain > kRuntimeGrain)
    return b.createOrFold<arith::DivUIOp>(
        loc, cost,
        arith::ConstantIndexOp::create(b, loc, grain / kRuntimeGrain));
  return cost;
}

void outlineMarkedLoops(RewriterBase &rewriter, ModuleOp module) {
  SmallVector<scf::ForOp> marked;
  module.walk([&](scf::ForOp loop) {
    if (loop->hasAttr(kParallelLoopAttr))
      marked.push_back(loop);
  });
  for (scf::ForOp loop : marked) {
    loop->removeAttr(kParallelLoopAttr);
    int64_t grain = kRuntimeGrain;
    if (auto attr = loop->getAttrOfType<IntegerAttr>(kParallelGrainAttr))
      grain = attr.getInt();
    loop->removeAttr(kParallelGrainAttr);
    // A loop left on the calling thread still gets its scratch allocas
    // once, not one per iteration (a growing stack).
    if (grain <= 0) {
      hoistAllocas(loop);
      continue;
    }
    rewriter.setInsertionPoint(loop);
    IRMapping clones;
    Value cost = costAtGrain(
        rewriter, loop.getLoc(),
        loopWork(rewriter, loop.getLoc(), loop, loop, clones), grain);
    std::optional<int64_t> known = getConstantIntValue(cost);
    if (known && *known < kMinParallelCost) {
      hoistAllocas(loop);
      continue;
    }
    (void)outlineParallelLoop(rewriter, loop, cost);
  }
}

namespace {

/// kina-parallel-calls (Passes.td).
struct ParallelCallsPass final
    : impl::ParallelCallsPassBase<ParallelCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    OpBuilder b(context);
    SmallVector<LLVM::LLVMFuncOp> bodies;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>())
      if (fn->hasAttr(kParallelBodyAttr) && !fn.isExternal())
        bodies.push_back(fn);
    if (bodies.empty())
      return;

    auto ptr = LLVM::LLVMPointerType::get(context);
    auto i64 = b.getI64Type();
    auto voidTy = LLVM::LLVMVoidType::get(context);
    auto runnerTy = LLVM::LLVMFunctionType::get(voidTy, {i64, i64, ptr, ptr});
    auto runner = module.lookupSymbol<LLVM::LLVMFuncOp>(kParallelForFunction);
    if (!runner) {
      b.setInsertionPointToEnd(module.getBody());
      runner = LLVM::LLVMFuncOp::create(b, module.getLoc(),
                                        kParallelForFunction, runnerTy);
    }

    for (LLVM::LLVMFuncOp fn : bodies) {
      fn->removeAttr(kParallelBodyAttr);
      fn.setLinkage(LLVM::Linkage::Internal);
      Location loc = fn.getLoc();
      ArrayRef<Type> params = fn.getFunctionType().getParams();
      if (params.size() < 3) {
        fn.emitError("kina-parallel-calls: an outlined body takes (lo, end, "
                     "cost, ...)");
        return signalPassFailure();
      }
      auto ctxTy =
          LLVM::LLVMStructType::getLiteral(context, params.drop_front(3));

      // The calls body(0, n, cost, values...), before the task adds its own.
      SmallVector<LLVM::CallOp> calls;
      module.walk([&](LLVM::CallOp call) {
        if (call.getCallee() == fn.getSymName())
          calls.push_back(call);
      });

      // task(ctx, lo, hi): unpack the struct, call the body.
      b.setInsertionPointAfter(fn);
      auto task = LLVM::LLVMFuncOp::create(
          b, loc, uniqueName(module, (fn.getSymName() + "_task").str()),
          LLVM::LLVMFunctionType::get(voidTy, {ptr, i64, i64}),
          LLVM::Linkage::Internal);
      Block *entry = task.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      Value ctx = LLVM::LoadOp::create(b, loc, ctxTy, entry->getArgument(0));
      SmallVector<Value> args = {entry->getArgument(1), entry->getArgument(2),
                                 LLVM::ConstantOp::create(b, loc, i64, 0)};
      for (int64_t i = 0, e = params.size() - 3; i < e; ++i)
        args.push_back(LLVM::ExtractValueOp::create(b, loc, ctx, i));
      LLVM::CallOp::create(b, loc, fn, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});

      // Each call -> kina_rt_parallel_for(n, cost, task, &values).
      for (LLVM::CallOp call : calls) {
        Location at = call.getLoc();
        auto caller = call->getParentOfType<LLVM::LLVMFuncOp>();
        // The struct on the caller's frame, allocated once in its entry,
        // aligned as its type (no explicit alignment: LLVM's ABI alignment
        // of the struct, which the store below and the task's load assume;
        // a captured vector<32xf32> needs 32 bytes or more, and an alloca
        // aligned to 8 made them fault, vmovaps on an unaligned slot).
        b.setInsertionPointToStart(&caller.getBody().front());
        Value slot = LLVM::AllocaOp::create(
            b, at, ptr, ctxTy, LLVM::ConstantOp::create(b, at, i64, 1),
            /*alignment=*/0);
        b.setInsertionPoint(call);
        Value packed = LLVM::UndefOp::create(b, at, ctxTy);
        for (auto [i, v] : llvm::enumerate(call.getArgOperands().drop_front(3)))
          packed = LLVM::InsertValueOp::create(b, at, packed, v, i);
        LLVM::StoreOp::create(b, at, packed, slot);
        Value taskAddr = LLVM::AddressOfOp::create(b, at, task);
        LLVM::CallOp::create(b, at, runner,
                             ValueRange{call.getArgOperands()[1],
                                        call.getArgOperands()[2], taskAddr,
                                        slot});
        call.erase();
      }
    }
  }
};

} // namespace
} // namespace kina
