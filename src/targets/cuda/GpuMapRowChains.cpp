//===- GpuMapRowChains.cpp - Small-row chains with matmuls as one kernel -===//
//
// The pass `kina-gpu-map-row-chains` of the cuda target. A small model
// such as samples/digits/mlp.kir (x[N, 64] @ w1[64, 32] + b1, relu,
// @ w2[32, 10] + b2, softmax) reaches the bufferized module as a run of
// `linalg.generic`s that all share one leading row loop P (dynamic N) and
// whose rows are small and static: fill, matmul with a small constant
// right-hand side, bias and relu, fill, matmul, bias, the softmax's six
// steps. The other mappers give each its own kernel or cuBLASLt call (ten
// launches for the digits MLP, each ~2 us of GPU time and ~5 us of call
// time); here the whole run becomes ONE kernel, one WARP per row (cf.
// tiny-cuda-nn's fully fused MLPs):
//
//   gpu.launch blocks(min(ceil(NP / 4), 65535)) threads(128)
//       workgroup(one [4, row shape] buffer per row buffer of the run)
//     warp = tid / 32, lane = tid % 32 (warp w's slice: row w of each)
//     scf.for row = bid * 4 + warp to NP step gridDim * 4 (warp-uniform)
//       copy in: each row buffer the run reads before writing it all,
//         lane l moving elements l, l + 32, ... (coalesced) of its row of
//         memory into the warp's slice; warp barrier
//       the run's ops, in order, each followed by a warp barrier: an op's
//         parallel iterations other than P (flattened) are spread over
//         the lanes (lane l takes l, l + 32, ...); for each, the lane
//         loads the inits from the slices, runs the op's reduction loops
//         serially in their order (nested, the inits carried; unrolled up
//         to kMaxUnrolledReduction iterations), the region cloned with
//         `linalg.index 0` the row, row-indexed operands read from the
//         slices and parameters (matmul weights, biases) from memory, and
//         stores the inits. A matmul's lane j computes output column j
//         over k in order, reading the row from the slice (a broadcast)
//         and w[k, j] from memory (coalesced over the lanes); a row
//         reduction (softmax's max and sum) has one parallel iteration:
//         lane 0 runs it;
//       copy out: each row buffer the run writes that is used after it,
//         cooperatively; warp barrier (the next row overwrites the slices)
//
// The warp barrier is `nvvm.bar.warp.sync -1` (__syncwarp: it orders the
// lanes' workgroup-memory accesses); a warp's lanes all own the same row,
// so every lane reaches every barrier. An op whose iterations cannot be
// spread (an init not indexed by exactly the parallel loops, two inits on
// one buffer, an input on an init's buffer through another map or in an
// op with reduction loops) runs on
// lane 0 alone, cloned onto the warp's slices without P and lowered with
// linalg's loop lowering. Each output element is thus computed in the
// order of the op's loops, the order of the cpu target (the matmul
// accumulates over k in order from its init, strict f32; no
// reassociation, no shuffle trees). Row buffers used only inside the run
// are no longer allocated (their null checks pass, their deallocations
// go).
//
// A run is grouped only when this is sound and fits:
//  - each op is a `linalg.generic` on memrefs whose first loop is parallel
//    (P) and whose other loops have static sizes (their product at most
//    kMaxOpIterations); each memref operand is either row-indexed (its
//    first index is exactly d0, no other index uses d0; its other dims
//    static, at most kMaxRowElements elements a row) or a parameter (no
//    index uses d0: a static buffer of at most kMaxParamElements
//    elements, a function argument, an allocation or a constant global,
//    that no op of the function writes); every init is row-indexed;
//  - the ops are consecutive along the path of execution (between them
//    only allocations, their null checks and deallocations, which move
//    after the kernel, and pure ops); the memrefs are plain (identity
//    layout, no views);
//  - each op after the first shares a row-indexed buffer with the ops so
//    far (so their P is the same at run time); an op that shares none
//    waits (the fill of a later matmul's init) and joins, in program order,
//    when a later op of the run shares a buffer with it, else stays before
//    the kernel: it then shares nothing with the run, so running the
//    kernel after it keeps every dependence;
//  - the run holds a contraction (a reduction loop and a parameter of rank
//    2 or more) and at least one more op with a reduction loop (a second
//    matmul, softmax's max and sum): chains of elementwise ops and row
//    reductions alone are left to kina-gpu-map-rows (block per row, vector
//    accesses), and one matmul with elementwise ops around it to cuBLASLt
//    (on the H200, 2026-12-04, x[1797, 64] @ w[64, 32] took 25.4 us a call
//    as this kernel against 21.0 with cuBLASLt, 25.5 against 24.2 with
//    bias and relu, while the digits forward went from 67.7 to 25.5 us:
//    the thread per row then paid for the serial work of its row); and the
//    workgroup buffers and iterations of the run fit (kMaxSharedBytes,
//    kMaxRunIterations).
// Since one warp owns a whole row of every row-indexed buffer, a row
// buffer read back through any map reads that warp's own values, stored
// before the last barrier (the soundness problem of c710e9f, a buffer
// read in a kernel before the kernel stores it, cannot arise: reads go to
// the warp's slice). Anything
// else is left to kina-gpu-map-matmul, kina-gpu-map-rows and the others,
// which run after this pass. Cannot fail.
//
//===----------------------------------------------------------------------===//
#include "CudaPasses.h"
#include "GpuCodegen.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kina::cuda {

#define GEN_PASS_DEF_GPUMAPROWCHAINSPASS
#include "kina/CudaPasses.h.inc"

namespace {

/// Lanes of a warp: one warp a row.
constexpr int64_t kWarp = 32;
/// Warps (rows at a time) per block: blocks of 128 threads.
constexpr int64_t kWarpsPerBlock = 4;
/// Elements of one row of a row-indexed buffer.
constexpr int64_t kMaxRowElements = 256;
/// Elements of a parameter (the matmul's K x M right-hand side).
constexpr int64_t kMaxParamElements = 4096;
/// Iterations of one op's loops other than P, and of the whole run (the
/// work of one row: a warp's).
constexpr int64_t kMaxOpIterations = 4096;
constexpr int64_t kMaxRunIterations = 16384;
/// Bytes of workgroup memory per block over all row buffers of the run
/// (kWarpsPerBlock rows of each); 48 KiB is the static limit.
constexpr int64_t kMaxSharedBytes = 48 * 1024;
/// Rounds of 32 iterations emitted one after the other rather than looped.
constexpr int64_t kMaxUnrolledChunks = 8;
/// Iterations of a reduction nest (per output element) unrolled fully.
constexpr int64_t kMaxUnrolledReduction = 128;

/// A memref the run may access: a function argument, an allocation or a
/// constant global; identity layout, byte-sized int or float elements.
bool plainMemref(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.getLayout().isIdentity() ||
      !type.getElementType().isIntOrFloat() ||
      type.getElementTypeBitWidth() % 8 != 0)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return isa<func::FuncOp>(arg.getOwner()->getParentOp());
  if (auto get = v.getDefiningOp<memref::GetGlobalOp>()) {
    auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
        get, get.getNameAttr());
    return global && global.getConstant();
  }
  return isa_and_present<memref::AllocOp>(v.getDefiningOp());
}

/// True when no op of the function may write `v`: every user reads it
/// (as a linalg input, memref.load, memref.dim), frees it, checks its
/// pointer or returns it.
bool notWritten(Value v) {
  for (OpOperand &use : v.getUses()) {
    Operation *user = use.getOwner();
    if (auto linalgOp = dyn_cast<linalg::LinalgOp>(user)) {
      if (linalgOp.isDpsInit(&use))
        return false;
      continue;
    }
    if (!isa<memref::LoadOp, memref::DimOp, memref::DeallocOp,
             memref::ExtractAlignedPointerAsIndexOp, func::ReturnOp>(user))
      return false;
  }
  return true;
}

/// The product of `shape` (static).
int64_t elementsOf(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

/// One op of a run: for each operand whether it is row-indexed.
struct Member {
  linalg::GenericOp op;
  SmallVector<bool> rowIndexed; // per operand (false: parameter or scalar)
  bool contraction = false;
  int64_t iterations = 1; // of the loops other than P
};

bool usesDim0(AffineExpr e) { return e.isFunctionOfDim(0); }

/// Classifies `op` as a member of a run; nullopt when it cannot be one.
std::optional<Member> classify(linalg::GenericOp op) {
  if (!isMappableGeneric(op) || op->getParentOfType<gpu::LaunchOp>())
    return std::nullopt;
  unsigned loops = op.getNumLoops();
  if (loops == 0 ||
      op.getIteratorTypesArray()[0] != utils::IteratorType::parallel)
    return std::nullopt;
  Member m{op, {}, false, 1};
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned i = 1; i < loops; ++i) {
    if (ShapedType::isDynamic(ranges[i]) || ranges[i] <= 0)
      return std::nullopt;
    m.iterations *= ranges[i];
    if (m.iterations > kMaxOpIterations)
      return std::nullopt;
  }
  bool hasParamMatrix = false, hasRowIndexed = false;
  for (OpOperand &operand : op->getOpOperands()) {
    Value v = operand.get();
    if (!isa<MemRefType>(v.getType())) {
      if (isa<ShapedType>(v.getType()))
        return std::nullopt;
      m.rowIndexed.push_back(false);
      continue;
    }
    if (!plainMemref(v))
      return std::nullopt;
    auto type = cast<MemRefType>(v.getType());
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (map.getNumSymbols() != 0)
      return std::nullopt;
    bool row = map.getNumResults() > 0 &&
               map.getResult(0) == getAffineDimExpr(0, op.getContext());
    for (unsigned i = row ? 1 : 0; i < map.getNumResults(); ++i)
      if (usesDim0(map.getResult(i)))
        return std::nullopt;
    ArrayRef<int64_t> rest = type.getShape().drop_front(row ? 1 : 0);
    if (ShapedType::isDynamicShape(rest))
      return std::nullopt;
    if (row) {
      if (elementsOf(rest) > kMaxRowElements)
        return std::nullopt;
      hasRowIndexed = true;
    } else {
      if (op.isDpsInit(&operand) || elementsOf(rest) > kMaxParamElements ||
          !notWritten(v))
        return std::nullopt;
      hasParamMatrix |= type.getRank() >= 2;
    }
    m.rowIndexed.push_back(row);
  }
  if (!hasRowIndexed || op.getNumDpsInits() == 0)
    return std::nullopt;
  m.contraction = op.getNumReductionLoops() > 0 && hasParamMatrix;
  return m;
}

/// The row-indexed memrefs `m` accesses.
llvm::SetVector<Value> rowBuffers(const Member &m) {
  llvm::SetVector<Value> buffers;
  for (OpOperand &operand : m.op->getOpOperands())
    if (m.rowIndexed[operand.getOperandNumber()])
      buffers.insert(operand.get());
  return buffers;
}

/// A run and where its deallocations go.
struct Run {
  SmallVector<Member> members;
  SmallVector<memref::DeallocOp> movedDeallocs;
};

/// The run that starts at `start`, extended along the path of execution
/// over every op that may join; nullopt when it does not qualify.
std::optional<Run> growRun(linalg::GenericOp start) {
  std::optional<Member> first = classify(start);
  if (!first)
    return std::nullopt;
  Run run;
  run.members.push_back(*first);
  llvm::SetVector<Value> touched = rowBuffers(*first);
  SmallVector<Member> pending;
  SmallVector<memref::DeallocOp> deallocs;
  for (Operation *op = nextAlongPath(start); op; op = nextAlongPath(op)) {
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      deallocs.push_back(dealloc);
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic) {
      if (op->hasTrait<OpTrait::IsTerminator>() || mayStandBetween(op))
        continue;
      break;
    }
    std::optional<Member> m = classify(generic);
    if (!m)
      break;
    llvm::SetVector<Value> buffers = rowBuffers(*m);
    if (!llvm::any_of(buffers, [&](Value v) { return touched.contains(v); })) {
      pending.push_back(*m);
      continue;
    }
    // The pending ops that share a buffer with `m` or with one joining
    // (transitively) join before it, in program order.
    llvm::SetVector<Value> joining = buffers;
    SmallVector<bool> joins(pending.size(), false);
    for (bool changed = true; changed;) {
      changed = false;
      for (auto [i, p] : llvm::enumerate(pending)) {
        if (joins[i])
          continue;
        llvm::SetVector<Value> own = rowBuffers(p);
        if (llvm::any_of(own, [&](Value v) { return joining.contains(v); })) {
          joins[i] = changed = true;
          joining.insert(own.begin(), own.end());
        }
      }
    }
    SmallVector<Member> stillPending;
    for (auto [i, p] : llvm::enumerate(pending))
      (joins[i] ? run.members : stillPending).push_back(p);
    pending = std::move(stillPending);
    run.members.push_back(*m);
    touched.insert(joining.begin(), joining.end());
    llvm::append_range(run.movedDeallocs, deallocs);
    deallocs.clear();
  }
  // A deallocation of a buffer the kernel uses moves after it; others stay.
  llvm::erase_if(run.movedDeallocs, [&](memref::DeallocOp d) {
    return !touched.contains(d.getMemref());
  });
  int64_t iterations = 0;
  for (Member &m : run.members)
    iterations += m.iterations;
  int64_t reductions = llvm::count_if(
      run.members, [](Member &m) { return m.op.getNumReductionLoops() > 0; });
  if (reductions < 2 || iterations > kMaxRunIterations ||
      llvm::none_of(run.members, [](Member &m) { return m.contraction; }))
    return std::nullopt;
  return run;
}

/// What the kernel does with one row buffer.
struct RowBuffer {
  Value memref;
  bool copyIn = false;  // read by the run before it writes all of it
  bool copyOut = false; // written by the run and used after it
  bool written = false;
  Value shared; // in the kernel: its [kWarpsPerBlock, row] workgroup buffer
};

/// Builds the kernel of a run before its last member, then removes the
/// members and the buffers only they used.
class RowChainBuilder {
public:
  explicit RowChainBuilder(Run &run) : run(run) {}

  /// False when the run's workgroup buffers do not fit or nothing it
  /// computes is used after it (nothing emitted).
  bool plan() {
    llvm::DenseMap<Value, unsigned> index;
    for (Member &m : run.members) {
      for (OpOperand &operand : m.op->getOpOperands()) {
        if (!m.rowIndexed[operand.getOperandNumber()])
          continue;
        Value v = operand.get();
        auto [it, inserted] = index.try_emplace(v, buffers.size());
        if (inserted) {
          buffers.push_back(RowBuffer{v, false, false, false, Value()});
          // The first access (the op's first operand that is `v` decides,
          // inputs before inits): a write that reads nothing of the row
          // and covers all of it needs no copy in.
          bool read = llvm::any_of(m.op->getOpOperands(), [&](OpOperand &o) {
            return o.get() == v && (!m.op.isDpsInit(&o) ||
                                    m.op.payloadUsesValueFromOperand(&o));
          });
          AffineMap map = dropRow(m.op.getMatchingIndexingMap(&operand));
          buffers.back().copyIn = read || !map.isPermutation();
        }
        if (m.op.isDpsInit(&operand))
          buffers[it->second].written = true;
      }
    }
    int64_t sharedBytes = 0;
    bool anyOut = false;
    for (RowBuffer &rb : buffers) {
      rb.copyOut = rb.written && usedOutside(rb.memref);
      anyOut |= rb.copyOut;
      sharedBytes += kWarpsPerBlock * rowBytes(rb.memref);
    }
    return anyOut && sharedBytes <= kMaxSharedBytes;
  }

  void emit() {
    Operation *lastOp = run.members.back().op;
    OpBuilder b(lastOp);
    SmallVector<Location> memberLocs;
    for (Member &m : run.members)
      memberLocs.push_back(m.op.getLoc());
    // The kernel's location: every member's, with the run's length (the
    // kernel report, src/driver/KernelAnalysis.cpp, reads it).
    loc = FusedLoc::get(
        b.getContext(), memberLocs,
        b.getArrayAttr({b.getStringAttr("kina-gpu-map-row-chains"),
                        b.getI64IntegerAttr(run.members.size())}));
    // The row count from a buffer that stays (copied in or out).
    Value sizeSource;
    for (RowBuffer &rb : buffers)
      if (!sizeSource && (rb.copyIn || rb.copyOut || !isInternal(rb)))
        sizeSource = rb.memref;
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value np = memref::DimOp::create(b, loc, sizeSource, zero);
    Value nonEmpty =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, np, zero);
    auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value grid = gridSize(b, loc, np, kWarpsPerBlock, kMaxGridX);
    // One workgroup buffer per row buffer: a [kWarpsPerBlock, row shape]
    // array, each warp's row its slice.
    auto workgroup = gpu::AddressSpaceAttr::get(
        b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
    SmallVector<Type> sharedTypes;
    for (RowBuffer &rb : buffers)
      sharedTypes.push_back(MemRefType::get(
          sharedShape(rb.memref),
          cast<MemRefType>(rb.memref.getType()).getElementType(), AffineMap(),
          workgroup));
    gpu::LaunchOp launch = createLaunch(
        b, loc, grid, one, one, kWarpsPerBlock * kWarp, 1, 1, sharedTypes);
    for (auto [rb, shared] :
         llvm::zip(buffers, launch.getWorkgroupAttributions()))
      rb.shared = shared;
    Value warpSize = arith::ConstantIndexOp::create(b, loc, kWarp);
    Value tid = launch.getThreadIds().x;
    warp = arith::DivUIOp::create(b, loc, tid, warpSize);
    lane = arith::RemUIOp::create(b, loc, tid, warpSize);
    Value warps = arith::ConstantIndexOp::create(b, loc, kWarpsPerBlock);
    Value first = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, warps),
        warp);
    Value step = arith::MulIOp::create(b, loc, launch.getGridSize().x, warps);
    // The loop is uniform over a warp (all its lanes own the same row), so
    // every lane reaches each warp barrier.
    auto rows = scf::ForOp::create(b, loc, first, np, step);
    b.setInsertionPointToStart(rows.getBody());
    Value row = rows.getInductionVar();
    bool copied = false;
    for (RowBuffer &rb : buffers)
      if (rb.copyIn) {
        copyRow(b, rb, row, /*in=*/true);
        copied = true;
      }
    if (copied)
      warpBarrier(b);
    for (Member &m : run.members) {
      if (distributable(m))
        emitDistributed(b, m, row);
      else
        emitOnOneLane(b, m, row);
      warpBarrier(b);
    }
    for (RowBuffer &rb : buffers)
      if (rb.copyOut)
        copyRow(b, rb, row, /*in=*/false);
    // The next row's copy in overwrites the slices this row's copy out
    // reads.
    warpBarrier(b);
    // Fold the unrolled index arithmetic (constants): no patterns, only
    // folding and dead-op removal, so the module stays small for the later
    // passes.
    (void)applyPatternsGreedily(rows.getRegion(), FrozenRewritePatternSet());
    cleanUp(guard);
  }

private:
  Run &run;
  SmallVector<RowBuffer> buffers;
  Location loc = UnknownLoc();
  Value warp, lane; // in the kernel: tid / 32, tid % 32

  static SmallVector<int64_t> rowShape(Value memref) {
    return llvm::to_vector(
        cast<MemRefType>(memref.getType()).getShape().drop_front());
  }

  /// The shape of the workgroup buffer of `memref`'s rows: one row a warp.
  static SmallVector<int64_t> sharedShape(Value memref) {
    SmallVector<int64_t> shape{kWarpsPerBlock};
    llvm::append_range(shape, rowShape(memref));
    return shape;
  }

  /// Bytes of one row of `memref` (static row shape).
  static int64_t rowBytes(Value memref) {
    auto type = cast<MemRefType>(memref.getType());
    return elementsOf(rowShape(memref)) * type.getElementTypeBitWidth() / 8;
  }

  /// `map` without the loop P: its row index (d0) dropped when it is the
  /// first result, the other dims renumbered.
  static AffineMap dropRow(AffineMap map) {
    MLIRContext *ctx = map.getContext();
    unsigned dims = map.getNumDims();
    SmallVector<AffineExpr> results;
    for (auto [i, e] : llvm::enumerate(map.getResults()))
      if (!(i == 0 && e == getAffineDimExpr(0, ctx)))
        results.push_back(e);
    SmallVector<AffineExpr> replacement{getAffineConstantExpr(0, ctx)};
    for (unsigned d = 1; d < dims; ++d)
      replacement.push_back(getAffineDimExpr(d - 1, ctx));
    AffineMap dropped = AffineMap::get(dims, 0, results, ctx);
    return dropped.replaceDimsAndSymbols(replacement, {}, dims - 1, 0);
  }

  /// True when `memref` is used outside the run (other than by its
  /// allocation's null check and deallocations); a function argument or
  /// global always is.
  bool usedOutside(Value memref) {
    if (!memref.getDefiningOp<memref::AllocOp>())
      return true;
    for (Operation *user : memref.getUsers()) {
      if (isa<memref::DeallocOp, memref::ExtractAlignedPointerAsIndexOp>(user))
        continue;
      if (llvm::none_of(run.members,
                        [&](Member &m) { return m.op.getOperation() == user; }))
        return true;
    }
    return false;
  }

  /// True when only the run uses `rb` (an allocation it need not keep).
  bool isInternal(RowBuffer &rb) {
    return !rb.copyIn && !rb.copyOut && !usedOutside(rb.memref);
  }

  /// The row buffer of `memref` (one of the run's).
  RowBuffer &bufferOf(Value memref) {
    return *llvm::find_if(buffers,
                          [&](RowBuffer &rb) { return rb.memref == memref; });
  }

  /// `nvvm.bar.warp.sync -1`: the warp's lanes wait for each other, and
  /// what each stored to its warp's slices before it is visible to the
  /// others after it (CUDA's __syncwarp()).
  void warpBarrier(OpBuilder &b) {
    Value all = arith::ConstantIntOp::create(b, loc, b.getI32Type(), -1);
    NVVM::SyncWarpOp::create(b, loc, all);
  }

  /// Calls `body(it)` for the iterations it < `count` of the lane: lane l
  /// takes l, l + 32, ... (a guard where `count` is no multiple of 32).
  /// Up to kMaxUnrolledChunks rounds are emitted one after the other (no
  /// loop), more as an scf.for over the rounds.
  void forLaneIterations(OpBuilder &b, int64_t count,
                         llvm::function_ref<void(OpBuilder &, Value)> body) {
    int64_t rounds = (count + kWarp - 1) / kWarp;
    auto emitRound = [&](OpBuilder &rb, Value it) {
      if (count % kWarp == 0) {
        body(rb, it);
        return;
      }
      Value bound = arith::ConstantIndexOp::create(rb, loc, count);
      Value in =
          arith::CmpIOp::create(rb, loc, arith::CmpIPredicate::ult, it, bound);
      auto ifOp = scf::IfOp::create(rb, loc, in, /*withElse=*/false);
      OpBuilder::InsertionGuard g(rb);
      rb.setInsertionPointToStart(&ifOp.getThenRegion().front());
      body(rb, it);
    };
    if (rounds <= kMaxUnrolledChunks) {
      for (int64_t r = 0; r < rounds; ++r) {
        Value it = lane;
        if (r > 0)
          it = arith::AddIOp::create(
              b, loc, lane, arith::ConstantIndexOp::create(b, loc, r * kWarp));
        emitRound(b, it);
      }
      return;
    }
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value end = arith::ConstantIndexOp::create(b, loc, rounds * kWarp);
    Value step = arith::ConstantIndexOp::create(b, loc, kWarp);
    auto loop = scf::ForOp::create(b, loc, zero, end, step);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(loop.getBody());
    emitRound(b, arith::AddIOp::create(b, loc, loop.getInductionVar(), lane));
  }

  /// The multi-index of the row-major linear `it` over static `shape`.
  SmallVector<Value> indexIn(OpBuilder &b, Value it, ArrayRef<int64_t> shape) {
    SmallVector<Value> sizes;
    for (int64_t s : shape)
      sizes.push_back(arith::ConstantIndexOp::create(b, loc, s));
    return delinearize(b, loc, it, sizes);
  }

  /// Copies the row `row` of `rb`'s memref into the warp's slice (`in`) or
  /// the slice out to the row: lane l moves elements l, l + 32, ... (in
  /// row-major order, so a warp's accesses to memory are contiguous).
  void copyRow(OpBuilder &b, RowBuffer &rb, Value row, bool in) {
    SmallVector<int64_t> shape = rowShape(rb.memref);
    forLaneIterations(b, elementsOf(shape), [&](OpBuilder &nb, Value it) {
      SmallVector<Value> idx = indexIn(nb, it, shape);
      SmallVector<Value> memIdx{row}, sharedIdx{warp};
      llvm::append_range(memIdx, idx);
      llvm::append_range(sharedIdx, idx);
      if (in) {
        Value v = memref::LoadOp::create(nb, loc, rb.memref, memIdx);
        memref::StoreOp::create(nb, loc, v, rb.shared, sharedIdx);
      } else {
        Value v = memref::LoadOp::create(nb, loc, rb.shared, sharedIdx);
        memref::StoreOp::create(nb, loc, v, rb.memref, memIdx);
      }
    });
  }

  /// True when `m`'s iterations may be spread over the lanes by its
  /// parallel loops other than P: each init is indexed by exactly those
  /// loops (each output element belongs to one parallel iteration, whose
  /// reduction loops one lane runs in order), the inits are distinct
  /// buffers, and an input that is also an init is read through the same
  /// map in an op without reduction loops (each iteration reads only its
  /// own output element, before writing it; over reduction loops the inits
  /// are carried in registers, so a read of an init's buffer there would
  /// miss the iterations before it).
  bool distributable(Member &m) {
    linalg::GenericOp op = m.op;
    SmallVector<unsigned> parallel;
    op.getParallelDims(parallel);
    llvm::SmallDenseSet<unsigned> parallelSet(parallel.begin(), parallel.end());
    parallelSet.erase(0);
    llvm::SmallDenseSet<Value> inits;
    for (OpOperand &init : op.getDpsInitsMutable()) {
      if (!inits.insert(init.get()).second)
        return false;
      AffineMap map = op.getMatchingIndexingMap(&init);
      llvm::SmallDenseSet<unsigned> seen;
      for (AffineExpr e : map.getResults().drop_front()) {
        auto dim = dyn_cast<AffineDimExpr>(e);
        if (!dim || !parallelSet.contains(dim.getPosition()) ||
            !seen.insert(dim.getPosition()).second)
          return false;
      }
      if (seen.size() != parallelSet.size())
        return false;
    }
    for (OpOperand *input : op.getDpsInputOperands())
      for (OpOperand &init : op.getDpsInitsMutable())
        if (input->get() == init.get() &&
            (op.getMatchingIndexingMap(input) !=
                 op.getMatchingIndexingMap(&init) ||
             op.getNumReductionLoops() > 0))
          return false;
    return true;
  }

  /// The value of `m`'s operand `operand` at the iteration point `ivs`
  /// (ivs[0] the row): a row-indexed operand from the warp's slice, a
  /// parameter from memory, a scalar itself.
  Value loadAt(OpBuilder &b, Member &m, OpOperand &operand, ValueRange ivs) {
    if (!isa<MemRefType>(operand.get().getType()))
      return operand.get();
    SmallVector<Value> idx =
        applyMap(b, loc, m.op.getMatchingIndexingMap(&operand), ivs);
    if (!m.rowIndexed[operand.getOperandNumber()])
      return memref::LoadOp::create(b, loc, operand.get(), idx);
    idx[0] = warp;
    return memref::LoadOp::create(b, loc, bufferOf(operand.get()).shared, idx);
  }

  /// `m` on the warp's row, its parallel loops other than P spread over the
  /// lanes (flattened row-major; lane l takes l, l + 32, ...); for each of
  /// its parallel iterations the lane loads the inits, runs the reduction
  /// loops in order (nested in loop order, the inits carried), and stores
  /// the inits: each output element is computed as the op's loop nest
  /// computes it. Reduction nests of at most kMaxUnrolledReduction
  /// iterations are unrolled (the loads of a matmul's weights issue ahead
  /// of its chain of adds).
  void emitDistributed(OpBuilder &b, Member &m, Value row) {
    linalg::GenericOp op = m.op;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
    SmallVector<unsigned> parallel, reduction;
    SmallVector<int64_t> parallelShape;
    int64_t reductionTrips = 1;
    for (unsigned d = 1; d < ranges.size(); ++d) {
      if (iters[d] == utils::IteratorType::parallel) {
        parallel.push_back(d);
        parallelShape.push_back(ranges[d]);
      } else {
        reduction.push_back(d);
        reductionTrips *= ranges[d];
      }
    }
    forLaneIterations(
        b, elementsOf(parallelShape), [&](OpBuilder &nb, Value it) {
          Value zero = arith::ConstantIndexOp::create(nb, loc, 0);
          SmallVector<Value> ivs(ranges.size(), zero);
          ivs[0] = row;
          for (auto [d, v] :
               llvm::zip(parallel, indexIn(nb, it, parallelShape)))
            ivs[d] = v;
          SmallVector<Value> accs;
          for (OpOperand &init : op.getDpsInitsMutable())
            accs.push_back(loadAt(nb, m, init, ivs));
          SmallVector<scf::ForOp> nest;
          for (unsigned d : reduction) {
            Value lb = arith::ConstantIndexOp::create(nb, loc, 0);
            Value ub = arith::ConstantIndexOp::create(nb, loc, ranges[d]);
            Value st = arith::ConstantIndexOp::create(nb, loc, 1);
            auto loop = scf::ForOp::create(nb, loc, lb, ub, st, accs);
            nb.setInsertionPointToStart(loop.getBody());
            ivs[d] = loop.getInductionVar();
            accs = SmallVector<Value>(loop.getRegionIterArgs());
            nest.push_back(loop);
          }
          SmallVector<Value> args;
          for (OpOperand *input : op.getDpsInputOperands())
            args.push_back(loadAt(nb, m, *input, ivs));
          llvm::append_range(args, accs);
          SmallVector<Value> results = cloneRegion(nb, op, args, ivs);
          for (auto [i, loop] : llvm::enumerate(llvm::reverse(nest))) {
            scf::YieldOp::create(nb, loc, results);
            nb.setInsertionPointAfter(loop);
            results = SmallVector<Value>(loop.getResults());
          }
          for (auto [init, value] :
               llvm::zip(op.getDpsInitsMutable(), results)) {
            SmallVector<Value> idx =
                applyMap(nb, loc, op.getMatchingIndexingMap(&init), ivs);
            idx[0] = warp;
            memref::StoreOp::create(nb, loc, value, bufferOf(init.get()).shared,
                                    idx);
          }
          if (!nest.empty() && reductionTrips <= kMaxUnrolledReduction) {
            // Innermost first, so each outer body is straight-line.
            for (scf::ForOp loop : llvm::reverse(nest)) {
              LogicalResult unrolled = loopUnrollFull(loop);
              assert(succeeded(unrolled) && "static trip counts unroll");
              (void)unrolled;
            }
          }
        });
  }

  /// `m` on the warp's row by lane 0 alone (an op whose iterations may not
  /// be spread): cloned onto the warp's slices without the loop P and
  /// lowered with linalg's loop lowering, the op's own loop order.
  void emitOnOneLane(OpBuilder &b, Member &m, Value row) {
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value first =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, zero);
    auto ifOp = scf::IfOp::create(b, loc, first, /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    IRMapping mapping;
    for (RowBuffer &rb : buffers)
      mapping.map(rb.memref, warpSlice(b, rb));
    auto clone = cast<linalg::GenericOp>(b.clone(*m.op, mapping));
    SmallVector<AffineMap> maps;
    for (AffineMap map : m.op.getIndexingMapsArray())
      maps.push_back(dropRow(map));
    clone.setIndexingMapsAttr(b.getAffineMapArrayAttr(maps));
    SmallVector<Attribute> iters;
    for (utils::IteratorType it :
         llvm::drop_begin(m.op.getIteratorTypesArray()))
      iters.push_back(linalg::IteratorTypeAttr::get(b.getContext(), it));
    clone.setIteratorTypesAttr(b.getArrayAttr(iters));
    clone.getRegion().walk([&](linalg::IndexOp index) {
      if (index.getDim() == 0) {
        index.getResult().replaceAllUsesWith(row);
        index.erase();
      } else {
        index.setDim(index.getDim() - 1);
      }
    });
    IRRewriter rewriter(b.getContext());
    rewriter.setInsertionPoint(clone);
    FailureOr<linalg::LinalgLoops> loops =
        linalg::linalgOpToLoops(rewriter, clone);
    assert(succeeded(loops) && "static loops on memrefs lower");
    (void)loops;
    rewriter.eraseOp(clone);
  }

  /// The warp's slice of `rb`'s workgroup buffer (a rank-reduced subview).
  Value warpSlice(OpBuilder &b, RowBuffer &rb) {
    auto type = cast<MemRefType>(rb.shared.getType());
    SmallVector<int64_t> shape = rowShape(rb.memref);
    SmallVector<OpFoldResult> offsets{warp}, sizes{b.getIndexAttr(1)},
        strides(type.getRank(), b.getIndexAttr(1));
    for (int64_t s : shape) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(s));
    }
    auto viewType = memref::SubViewOp::inferRankReducedResultType(
        shape, type, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, cast<MemRefType>(viewType),
                                     rb.shared, offsets, sizes, strides);
  }

  /// Removes the members, moves the deallocations after the kernel and
  /// erases the allocations only the kernel used.
  void cleanUp(scf::IfOp kernel) {
    for (memref::DeallocOp dealloc : run.movedDeallocs)
      dealloc->moveAfter(kernel);
    SmallVector<memref::AllocOp> internal;
    for (RowBuffer &rb : buffers)
      if (isInternal(rb))
        if (auto alloc = rb.memref.getDefiningOp<memref::AllocOp>())
          internal.push_back(alloc);
    for (Member &m : llvm::reverse(run.members))
      m.op.erase();
    for (memref::AllocOp alloc : internal)
      eraseAllocation(alloc);
  }
};

class GpuMapRowChainsPass
    : public impl::GpuMapRowChainsPassBase<GpuMapRowChainsPass> {
public:
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> starts;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>())
        starts.push_back(op);
    });
    llvm::DenseSet<Operation *> done;
    for (linalg::GenericOp start : starts) {
      if (done.contains(start))
        continue;
      std::optional<Run> run = growRun(start);
      if (!run)
        continue;
      RowChainBuilder builder(*run);
      if (!builder.plan())
        continue;
      for (Member &m : run->members)
        done.insert(m.op);
      builder.emit();
    }
  }
};

} // namespace

} // namespace kina::cuda
