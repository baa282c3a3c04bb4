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
// time); here the whole run becomes ONE kernel, one thread per row (cf.
// tiny-cuda-nn's fully fused MLPs):
//
//   gpu.launch blocks(min(ceil(NP / 32), 65535)) threads(32)
//     private arrays, one per row buffer of the run (memref.alloca of the
//     buffer's static row shape, in the kernel's entry block)
//     scf.for row = bid * 32 + tid to NP step gridDim * 32
//       copy in: each row buffer the run reads before writing it all
//         (its row of memory -> its private array)
//       the run's ops, in order, each cloned onto the private arrays (the
//         loop P dropped from its indexing maps, `linalg.index 0` the row)
//         and the parameters (matmul weights, biases: read from memory)
//       copy out: each row buffer the run writes that is used after it
//
// The cloned ops and copies are lowered with linalg's loop lowering
// (linalgOpToLoops) and every loop is unrolled fully (scf's
// loopUnrollFull): all private accesses have constant indices, so LLVM's
// SROA keeps the arrays in registers (ptxas -v reports no local memory for
// the digits MLP). Each output element is computed in the order of the
// op's loops, the order of the cpu target (the matmul accumulates over k
// in order from its init, strict f32). Row buffers used only inside the
// run are no longer allocated (their null checks pass, their
// deallocations go).
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
//    the thread per row pays for the serial work of its row); and the
//    private arrays and unrolled iterations of the run fit
//    (kMaxPrivateElements, kMaxRunIterations).
// Since one thread owns a whole row of every row-indexed buffer, a row
// buffer read back through any map reads that thread's own values (the
// soundness problem of c710e9f, a buffer read in a kernel before the
// kernel stores it, cannot arise: reads go to the private copy). Anything
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

/// Threads per block. One warp per block spreads a small batch over the
/// most multiprocessors (the digits MLP's 1797 rows: 57 blocks).
constexpr int64_t kThreads = 32;
/// Elements of one row of a row-indexed buffer (registers per thread).
constexpr int64_t kMaxRowElements = 256;
/// Elements of a parameter (the matmul's K x M right-hand side).
constexpr int64_t kMaxParamElements = 4096;
/// Iterations of one op's loops other than P, and of the whole run (each
/// is unrolled: code size).
constexpr int64_t kMaxOpIterations = 4096;
constexpr int64_t kMaxRunIterations = 16384;
/// Private elements per thread over all row buffers of the run.
constexpr int64_t kMaxPrivateElements = 1024;

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
  Value privateArray; // in the kernel
};

/// Builds the kernel of a run before its last member, then removes the
/// members and the buffers only they used.
class RowChainBuilder {
public:
  explicit RowChainBuilder(Run &run) : run(run) {}

  /// False when the run's private arrays do not fit or nothing it
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
    int64_t privateElements = 0;
    bool anyOut = false;
    for (RowBuffer &rb : buffers) {
      rb.copyOut = rb.written && usedOutside(rb.memref);
      anyOut |= rb.copyOut;
      privateElements += elementsOf(rowShape(rb.memref));
    }
    return anyOut && privateElements <= kMaxPrivateElements;
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
    Value grid = gridSize(b, loc, np, kThreads, kMaxGridX);
    gpu::LaunchOp launch = createLaunch(b, loc, grid, one, one, kThreads, 1, 1);
    // Private arrays in the kernel's entry block (LLVM promotes only
    // static allocas there to registers).
    for (RowBuffer &rb : buffers) {
      auto type = cast<MemRefType>(rb.memref.getType());
      rb.privateArray = memref::AllocaOp::create(
          b, loc, MemRefType::get(rowShape(rb.memref), type.getElementType()));
    }
    Value threads = arith::ConstantIndexOp::create(b, loc, kThreads);
    Value first = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, threads),
        launch.getThreadIds().x);
    Value step = arith::MulIOp::create(b, loc, launch.getGridSize().x, threads);
    auto rows = scf::ForOp::create(b, loc, first, np, step);
    b.setInsertionPointToStart(rows.getBody());
    Value row = rows.getInductionVar();
    SmallVector<linalg::GenericOp> toLower;
    for (RowBuffer &rb : buffers)
      if (rb.copyIn)
        toLower.push_back(
            copyRow(b, rowView(b, rb.memref, row), rb.privateArray));
    for (Member &m : run.members)
      toLower.push_back(cloneOnRow(b, m, row));
    for (RowBuffer &rb : buffers)
      if (rb.copyOut)
        toLower.push_back(
            copyRow(b, rb.privateArray, rowView(b, rb.memref, row)));
    lowerAndUnroll(toLower, rows);
    cleanUp(guard);
  }

private:
  Run &run;
  SmallVector<RowBuffer> buffers;
  Location loc = UnknownLoc();

  static SmallVector<int64_t> rowShape(Value memref) {
    return llvm::to_vector(
        cast<MemRefType>(memref.getType()).getShape().drop_front());
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

  /// The row `row` of `memref`: a subview without the leading dim.
  Value rowView(OpBuilder &b, Value memref, Value row) {
    auto type = cast<MemRefType>(memref.getType());
    SmallVector<int64_t> shape = rowShape(memref);
    SmallVector<OpFoldResult> offsets{row}, sizes{b.getIndexAttr(1)},
        strides(type.getRank(), b.getIndexAttr(1));
    for (int64_t s : shape) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(s));
    }
    auto viewType = memref::SubViewOp::inferRankReducedResultType(
        shape, type, offsets, sizes, strides);
    return memref::SubViewOp::create(b, loc, viewType, memref, offsets, sizes,
                                     strides);
  }

  /// An identity generic copying `from` into `to` (same shape).
  linalg::GenericOp copyRow(OpBuilder &b, Value from, Value to) {
    unsigned rank = cast<MemRefType>(to.getType()).getRank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
    return linalg::GenericOp::create(
        b, loc, ValueRange{from}, ValueRange{to}, ArrayRef<AffineMap>{id, id},
        iters, [](OpBuilder &nb, Location l, ValueRange args) {
          linalg::YieldOp::create(nb, l, args[0]);
        });
  }

  /// `m`'s op on one row: its row-indexed operands replaced by their
  /// private arrays, the loop P dropped, `linalg.index 0` the row.
  linalg::GenericOp cloneOnRow(OpBuilder &b, Member &m, Value row) {
    IRMapping mapping;
    for (RowBuffer &rb : buffers)
      mapping.map(rb.memref, rb.privateArray);
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
    return clone;
  }

  /// Lowers `ops` to scf.for nests and unrolls every loop inside `rows`.
  void lowerAndUnroll(ArrayRef<linalg::GenericOp> ops, scf::ForOp rows) {
    IRRewriter rewriter(rows.getContext());
    for (linalg::GenericOp op : ops) {
      rewriter.setInsertionPoint(op);
      FailureOr<linalg::LinalgLoops> loops =
          linalg::linalgOpToLoops(rewriter, op);
      assert(succeeded(loops) && "static loops on memrefs lower");
      (void)loops;
      rewriter.eraseOp(op);
    }
    SmallVector<scf::ForOp> inner;
    rows.getBody()->walk([&](scf::ForOp loop) { inner.push_back(loop); });
    // Post-order: innermost first, so each outer body is straight-line.
    for (scf::ForOp loop : inner) {
      LogicalResult unrolled = loopUnrollFull(loop);
      assert(succeeded(unrolled) && "static trip counts unroll");
      (void)unrolled;
    }
    // Fold the unrolled index arithmetic (affine.apply of constants): no
    // patterns, only folding and dead-op removal, so the module stays a
    // third of the size for the later passes.
    (void)applyPatternsGreedily(rows.getRegion(), FrozenRewritePatternSet());
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
