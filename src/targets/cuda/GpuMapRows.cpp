//===- GpuMapRows.cpp - Row reductions and their consumers as one kernel --===//
//
// The pass `kina-gpu-map-rows` of the cuda target. `softmax`,
// `log_softmax`, `layer_norm`, `rms_norm` and a reduction with its
// elementwise producers (attention's scale and causal mask, a residual
// add, a bias) and consumers reach the bufferized module as a run
// of `linalg.generic`s over one "row space": P leading (parallel) loops
// and R trailing loops, the reductions reducing exactly the R loops into
// row buffers (memref<P...>), the elementwise ops over P x R reading those
// row buffers through projections (softmax: fill m; m = max(x); fill s;
// e = exp(x - m); s = sum(e); out = e / s). The other mappers give each its
// own kernel, each reading the row from memory again. This pass turns such
// a run (a "row group") into ONE kernel, one block per row:
//
//   gpu.launch blocks(min(NP, 65535)) threads(T)      grid-stride over rows
//     each thread owns C chunks of V lanes of the row: elements
//       (c*T + t)*V + j (c < C, j < V): 16-byte vector loads, coalesced;
//     the group's ops run in order on values held in registers:
//       - an elementwise op over P x R computes each owned element from
//         the current values of what it reads (a buffer the group wrote
//         earlier: the registers; any other: loaded once, then kept; a
//         parameter such as layer_norm's gain chunk by chunk where its
//         first use needs it, so that it does not hold registers through
//         the row's reductions);
//       - a reduction folds the owned elements' contributions with its
//         combiner (masked elements contribute its identity), combines the
//         threads' partials with `gpu.all_reduce` (warp shuffles and
//         workgroup memory after the upstream lowering) and the result with
//         the row's init;
//       - an op over P only (fills, mean = sum / count, the norms'
//         denominators) is evaluated by every thread on uniform scalars;
//     at the end, each buffer the group wrote that may be used after it
//     (the result; anything else used outside the group, except by ops
//     that run before it, such as the matmul that wrote the scores a
//     softmax overwrites) is stored once:
//     vectors per chunk, row values by thread 0 (after a barrier only
//     where it overwrites a row value the others loaded); a barrier before
//     the next row only where the block has one (workgroup memory reuse).
//
// So the row is read from memory once and the result written once; row
// buffers used only inside the group (m, s, the mean) and full-size
// intermediates (softmax's e where it is not the result) are never
// allocated: their allocations, null checks and deallocations are removed.
//
// A run is grouped only when this is sound and fits: the ops are
// consecutive along the path of execution (between them only pure ops,
// allocations with their null checks, which branch to an exit, and
// deallocations, which move after the kernel); each op after the first
// shares a buffer with an earlier one (so their row spaces are equal at
// run time); each memref operand is the identity over P x R (full), the
// projection to P (row) or to R (a parameter such as layer_norm's gain),
// or, in an op over P only, the identity; a buffer the group writes is
// read by the group, before or after the write, only as an operand with
// the role it is written with (full elements stay with their thread, row
// values with their block), never at indices of a body's own (a concat's
// or gather's memref.load: differential test seed 156) nor as a
// parameter (GroupAccesses; the run ends before the first op that would
// break this); the operand memrefs are allocations or function arguments
// (no views); R is static and at most 32 * T elements (registers: 32
// values per thread and buffer); every reduction's yield is `comb(acc,
// contribution)` with an associative, commutative arith op gpu.all_reduce
// knows. V is 16 bytes of the widest element type the kernel reads or writes in
// memory (4 for f32, 8 for bf16/f16: bf16 loads, f32 arithmetic as MLIRGen
// writes it; f32 intermediates that stay in registers do not count), T = R / 32
// rounded up to a multiple of 32, at most 512 (8192 f32 or bf16 = 256
// threads x 32). Elements narrower than 32 bits are loaded as 32-bit words
// and split. The host checks that every buffer the kernel accesses is
// 16-byte aligned and launches the vector kernel, else its scalar twin
// (scalar loads and stores); a row that is no multiple of V (softmax over
// 10 classes) gets only the scalar kernel (V = 1). Anything else is left to
// kina-gpu-map-reductions and kina-gpu-map-elementwise, which run after
// this pass. Cannot fail.
//
//===----------------------------------------------------------------------===//
#include "CudaPasses.h"
#include "GpuCodegen.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

using namespace mlir;

namespace kina::cuda {

#define GEN_PASS_DEF_GPUMAPROWSPASS
#include "kina/CudaPasses.h.inc"

namespace {

constexpr int64_t kMaxThreads = 512;
constexpr int64_t kVectorBytes = 16;
/// Register budget and target: owned elements per thread and buffer. The
/// block has R / 32 threads (up to kMaxThreads), not the most threads the
/// row allows: on the H200 (bench/gpu, 2026-12-04) 256 threads x 32 f32
/// took layer_norm [8192, 8192] from 0.251 to 0.168 ms against 512 x 16
/// (81 registers, one block per multiprocessor), and 256 x 32 bf16 beat
/// 512 x 16 (0.111 against 0.119 ms); 128 x 64 was slower for both.
/// Tried and removed: loading a bf16/f16 block's next row while the
/// current one is reduced (4 rows a block, the row's words carried by the
/// row loop; b78157a): no gain on the H100 and 5-7% slower on the H200
/// (docs/performance.md, 2026-12-07 19:20 UTC).
constexpr int64_t kMaxPerThread = 32;

/// How an op of a group indexes a memref operand.
enum class Role { Full, Row, Param, Scalar };

/// One op of a row group.
struct Member {
  linalg::GenericOp op;
  bool full;               // over P x R (else over P only)
  bool reduction;          // reduces the R loops
  SmallVector<Role> roles; // per operand
  // The buffers (through views) the body loads from at indices of its own
  // (a concat's or a gather's memref.load): read from memory wherever the
  // kernel runs the body.
  SmallVector<Value> captured;
};

/// The buffer `v` views (through view-like ops such as memref.cast and
/// subview), or `v`.
Value rootBuffer(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      break;
    v = view.getViewSource();
  }
  return v;
}

/// The memory accesses of a group's members so far, for the one soundness
/// rule the kernel's register form needs: the kernel keeps what it writes
/// in registers and stores it only at its end, so a buffer the group
/// writes may be read by a member only as an operand with the role it is
/// written with (Full: the identity, the element of the same thread; Row:
/// the row's value), before or after the write; never through a body's
/// memref.load (any element, of any row: memory that this or another
/// block has not stored yet, or has already overwritten) and never with
/// another role (a parameter read of a full buffer reads other rows).
class GroupAccesses {
public:
  /// Records `m`'s accesses; false (nothing recorded) when they break the
  /// rule with the accesses recorded so far.
  bool add(Member &m) {
    SmallVector<std::pair<Value, Role>> reads, writes;
    for (OpOperand &operand : m.op->getOpOperands()) {
      if (!isa<MemRefType>(operand.get().getType()))
        continue;
      Role role = m.roles[operand.getOperandNumber()];
      (m.op.isDpsInit(&operand) ? writes : reads)
          .push_back({operand.get(), role});
    }
    // The member's own writes first: its reads (a body's load, an operand
    // with another role) must agree with them too.
    llvm::DenseMap<Value, Role> written = this->written;
    for (auto [v, role] : writes) {
      auto [it, inserted] = written.try_emplace(v, role);
      if (!inserted && it->second != role)
        return false;
      if (captured.contains(v) ||
          llvm::any_of(operandReads[v], [&](Role r) { return r != role; }))
        return false;
    }
    for (Value v : m.captured)
      if (written.contains(v))
        return false;
    for (auto [v, role] : reads) {
      auto it = written.find(v);
      if (it != written.end() && it->second != role)
        return false;
    }
    this->written = std::move(written);
    for (auto [v, role] : reads)
      operandReads[v].push_back(role);
    captured.insert(m.captured.begin(), m.captured.end());
    return true;
  }

private:
  llvm::DenseMap<Value, Role> written;
  llvm::DenseMap<Value, SmallVector<Role, 2>> operandReads;
  llvm::DenseSet<Value> captured;
};

/// Per output of a reduction member: the contribution e_k of
/// `yield comb(acc_k, e_k)` and its combiner; failure for any other form
/// (argmax's select, an accumulator read elsewhere).
FailureOr<SmallVector<std::pair<Value, Combiner>>>
reductionParts(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  SmallVector<std::pair<Value, Combiner>> parts;
  for (auto [k, y] : llvm::enumerate(yield.getValues())) {
    BlockArgument acc = body.getArgument(op.getNumDpsInputs() + k);
    Operation *def = y.getDefiningOp();
    if (!def || def->getBlock() != &body || def->getNumOperands() != 2)
      return failure();
    std::optional<Combiner> comb = combinerOf(def, y.getType());
    if (!comb)
      return failure();
    Value lhs = def->getOperand(0), rhs = def->getOperand(1);
    Value e = lhs == acc ? rhs : rhs == acc ? lhs : Value();
    // The accumulator may feed only the combiner.
    if (!e || e == acc || !acc.hasOneUse())
      return failure();
    parts.push_back({e, *comb});
  }
  return parts;
}

/// The role of an operand map in the row space (k P loops, r R loops).
std::optional<Role> roleOf(AffineMap map, unsigned k, unsigned r, bool fullOp) {
  unsigned rank = fullOp ? k + r : k;
  if (map.getNumDims() != rank || map.getNumSymbols() != 0)
    return std::nullopt;
  auto isRange = [&](unsigned from, unsigned count) {
    if (map.getNumResults() != count)
      return false;
    for (unsigned i = 0; i < count; ++i) {
      auto d = dyn_cast<AffineDimExpr>(map.getResult(i));
      if (!d || d.getPosition() != from + i)
        return false;
    }
    return true;
  };
  if (!fullOp)
    return isRange(0, k) ? std::optional<Role>(Role::Row) : std::nullopt;
  if (isRange(0, k + r))
    return Role::Full;
  if (isRange(0, k))
    return Role::Row;
  if (isRange(k, r))
    return Role::Param;
  return std::nullopt;
}

/// A memref the group may read or write: a function argument or an
/// allocation, identity layout.
bool plainMemref(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.getLayout().isIdentity() ||
      !type.getElementType().isIntOrFloat() ||
      type.getElementTypeBitWidth() % 8 != 0)
    return false;
  if (auto arg = dyn_cast<BlockArgument>(v))
    return isa<func::FuncOp>(arg.getOwner()->getParentOp());
  return isa_and_present<memref::AllocOp>(v.getDefiningOp());
}

/// Ops that may stand between two members of a group.
bool allowedBetween(Operation *op) {
  if (isa<memref::AllocOp, memref::DeallocOp>(op))
    return true;
  if (isa<linalg::LinalgOp, gpu::LaunchOp, memref::CopyOp>(op))
    return false;
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

/// True when `block` only frees buffers and returns (an allocation
/// check's exit).
bool isExitBlock(Block *block) {
  for (Operation &op : *block) {
    if (isa<func::ReturnOp>(op))
      return true;
    if (!isa<memref::DeallocOp>(op) &&
        !(op.getNumRegions() == 0 && isMemoryEffectFree(&op)))
      return false;
  }
  return false;
}

/// The row space and the members of a group, with everything the kernel
/// builder needs.
struct RowGroup {
  SmallVector<Member> members;
  unsigned k = 0, r = 0;
  SmallVector<int64_t> rSizes; // static
  int64_t rTotal = 0;
  linalg::GenericOp shapeOp; // a full member: the P sizes come from it
  SmallVector<memref::DeallocOp> movedDeallocs;
};

/// The ops from `from` (exclusive) up to `to` (exclusive) along the path
/// of execution, when only allowed ops, allocation checks and
/// deallocations stand between; the deallocations are appended to
/// `deallocs`.
bool pathBetween(Operation *from, Operation *to,
                 SmallVectorImpl<memref::DeallocOp> &deallocs) {
  Block *block = from->getBlock();
  Operation *op = from->getNextNode();
  for (int hops = 0; hops < 8;) {
    if (!op)
      return false;
    if (op == to)
      return true;
    if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
      deallocs.push_back(dealloc);
      op = op->getNextNode();
      continue;
    }
    if (op->hasTrait<OpTrait::IsTerminator>()) {
      // An allocation check: one successor continues (this block its only
      // predecessor), the others exit.
      Block *next = nullptr;
      for (Block *succ : op->getSuccessors()) {
        if (succ->getSinglePredecessor() == block && !isExitBlock(succ)) {
          if (next)
            return false;
          next = succ;
        } else if (!isExitBlock(succ)) {
          return false;
        }
      }
      if (!next || next->getNumArguments() != 0)
        return false;
      block = next;
      op = &next->front();
      ++hops;
      continue;
    }
    if (!allowedBetween(op))
      return false;
    op = op->getNextNode();
  }
  return false;
}

/// Classifies `op` as a member of a row space with `k` P loops and `r` R
/// loops (static R sizes `rSizes`); nullopt when it cannot be one.
std::optional<Member> classify(linalg::GenericOp op, unsigned k, unsigned r,
                               ArrayRef<int64_t> rSizes) {
  if (!isMappableGeneric(op))
    return std::nullopt;
  Member m{op, false, false, {}, {}};
  unsigned rank = op.getNumLoops();
  if (rank == k + r && r > 0) {
    m.full = true;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    for (unsigned i = 0; i < r; ++i)
      if (ranges[k + i] != rSizes[i])
        return std::nullopt;
    auto iters = op.getIteratorTypesArray();
    bool allParallel = llvm::all_of(
        iters, [](auto it) { return it == utils::IteratorType::parallel; });
    bool rowReduction = true;
    for (unsigned i = 0; i < rank; ++i)
      rowReduction &= (iters[i] == utils::IteratorType::reduction) == (i >= k);
    if (!allParallel && !rowReduction)
      return std::nullopt;
    m.reduction = !allParallel;
    if (m.reduction && failed(reductionParts(op)))
      return std::nullopt;
  } else if (rank == k) {
    if (op.getNumReductionLoops() != 0)
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  // The body may load from buffers of its own (concat, gather) but write
  // nothing.
  bool writesMemory = false;
  op.getRegion().walk([&](Operation *inner) {
    writesMemory |= !isMemoryEffectFree(inner) && !isa<memref::LoadOp>(inner);
  });
  if (writesMemory)
    return std::nullopt;
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(op.getRegion(), above);
  for (Value v : above)
    if (isa<MemRefType>(v.getType()))
      m.captured.push_back(rootBuffer(v));
  for (OpOperand &operand : op->getOpOperands()) {
    if (!isa<MemRefType>(operand.get().getType())) {
      if (isa<ShapedType>(operand.get().getType()))
        return std::nullopt;
      m.roles.push_back(Role::Scalar);
      continue;
    }
    if (!plainMemref(operand.get()))
      return std::nullopt;
    std::optional<Role> role =
        roleOf(op.getMatchingIndexingMap(&operand), k, r, m.full);
    if (!role)
      return std::nullopt;
    bool init = op.isDpsInit(&operand);
    if (init && *role != (m.reduction || !m.full ? Role::Row : Role::Full))
      return std::nullopt;
    if (init && m.full && !m.reduction && *role != Role::Full)
      return std::nullopt;
    m.roles.push_back(*role);
  }
  return m;
}

/// Finds the row group that starts at the reduction `seed` or at the ops
/// over P just before it (its init's fill), extended forward over every
/// compatible op; nullopt when none (or it would be unsound).
std::optional<RowGroup> growGroup(linalg::GenericOp seed) {
  RowGroup g;
  g.r = seed.getNumReductionLoops();
  g.k = seed.getNumLoops() - g.r;
  if (g.k == 0 || g.r == 0)
    return std::nullopt;
  SmallVector<int64_t> ranges = seed.getStaticLoopRanges();
  g.rSizes.assign(ranges.begin() + g.k, ranges.end());
  g.rTotal = 1;
  for (int64_t s : g.rSizes) {
    if (ShapedType::isDynamic(s))
      return std::nullopt;
    g.rTotal *= s;
  }
  // An empty row (the init is the result) or an empty row space: left to
  // kina-gpu-map-reductions, which erases such ops.
  if (g.rTotal == 0 || llvm::any_of(ranges, [](int64_t s) { return s == 0; }))
    return std::nullopt;
  std::optional<Member> seedMember = classify(seed, g.k, g.r, g.rSizes);
  if (!seedMember || !seedMember->reduction)
    return std::nullopt;

  // Ops before the seed that write a buffer the group reads: over P, the
  // fills and copies of its init; over P x R, elementwise producers of the
  // row (attention's scale and causal mask before its softmax, fused
  // into the kernel's load of the scores). Walking back along the path of
  // execution (across allocation checks) up to the first op that does not
  // join.
  llvm::SetVector<Value> touched;
  for (OpOperand &operand : seed->getOpOperands())
    if (isa<MemRefType>(operand.get().getType()))
      touched.insert(operand.get());
  SmallVector<Member> fills;
  {
    Operation *op = seed->getPrevNode();
    Block *block = seed->getBlock();
    for (int hops = 0; hops < 8;) {
      if (!op) {
        Block *pred = block->getSinglePredecessor();
        if (!pred || !pred->mightHaveTerminator())
          break;
        Operation *term = pred->getTerminator();
        bool ok = true;
        for (Block *succ : term->getSuccessors())
          ok &= succ == block || isExitBlock(succ);
        if (!ok || block->getNumArguments() != 0)
          break;
        block = pred;
        op = term->getPrevNode();
        ++hops;
        continue;
      }
      auto generic = dyn_cast<linalg::GenericOp>(op);
      if (!generic) {
        if (!allowedBetween(op))
          break;
        op = op->getPrevNode();
        continue;
      }
      std::optional<Member> m = classify(generic, g.k, g.r, g.rSizes);
      if (!m || m->reduction ||
          !llvm::any_of(generic.getDpsInits(),
                        [&](Value v) { return touched.contains(v); }))
        break;
      for (OpOperand &operand : generic->getOpOperands())
        if (isa<MemRefType>(operand.get().getType()))
          touched.insert(operand.get());
      fills.push_back(*m);
      op = op->getPrevNode();
    }
  }
  std::reverse(fills.begin(), fills.end());
  // Check the path from the first fill to the seed.
  g.members = fills;
  g.members.push_back(*seedMember);
  // The earliest ops leave (and stay before the kernel) until the rest
  // keeps the accesses in order.
  GroupAccesses accesses;
  for (unsigned i = 0; i < g.members.size(); ++i) {
    if (accesses.add(g.members[i]))
      continue;
    if (i + 1 == g.members.size())
      return std::nullopt;
    g.members.erase(g.members.begin(), g.members.begin() + i + 1);
    accesses = GroupAccesses();
    i = -1u;
  }
  for (unsigned i = 0; i + 1 < g.members.size(); ++i)
    if (!pathBetween(g.members[i].op, g.members[i + 1].op, g.movedDeallocs))
      return std::nullopt;

  // Forward: the ops along the path of execution after the seed, up to
  // the first that may not stand between members.
  struct Step {
    linalg::GenericOp op;      // a candidate, or
    memref::DeallocOp dealloc; // a deallocation on the way
  };
  SmallVector<Step> path;
  {
    Block *block = seed->getBlock();
    Operation *op = seed->getNextNode();
    for (int hops = 0; op && hops < 8;) {
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        path.push_back({generic, {}});
      } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        path.push_back({{}, dealloc});
      } else if (op->hasTrait<OpTrait::IsTerminator>()) {
        Block *next = nullptr;
        bool ok = true;
        for (Block *succ : op->getSuccessors()) {
          if (succ->getSinglePredecessor() == block && !isExitBlock(succ)) {
            ok &= next == nullptr;
            next = succ;
          } else {
            ok &= isExitBlock(succ);
          }
        }
        if (!ok || !next || next->getNumArguments() != 0)
          break;
        block = next;
        op = &next->front();
        ++hops;
        continue;
      } else if (!allowedBetween(op)) {
        break;
      }
      op = op->getNextNode();
    }
  }
  // Members join in order: an op that shares a buffer (not as a parameter)
  // with the members so far; an op over P that shares none waits (a fill
  // of a later reduction's init) and joins (in program order, before that
  // member) when a later member uses its output; else it stays where it
  // is, before the kernel: it reads nothing a member wrote before it (it
  // would share that buffer) and writes nothing a member uses (that member
  // would take it in), so running the kernel after it keeps every
  // dependence. Any other op ends the group.
  SmallVector<Member> pending;
  SmallVector<memref::DeallocOp> deallocs;
  auto sharesWith = [&](Member &m, auto &&contains) {
    for (OpOperand &operand : m.op->getOpOperands())
      if (isa<MemRefType>(operand.get().getType()) &&
          m.roles[operand.getOperandNumber()] != Role::Param &&
          contains(operand.get()))
        return true;
    return false;
  };
  auto touch = [&](Member &m) {
    for (OpOperand &operand : m.op->getOpOperands())
      if (isa<MemRefType>(operand.get().getType()))
        touched.insert(operand.get());
  };
  for (Step &step : path) {
    if (step.dealloc) {
      deallocs.push_back(step.dealloc);
      continue;
    }
    std::optional<Member> m = classify(step.op, g.k, g.r, g.rSizes);
    if (!m)
      break;
    bool connected =
        sharesWith(*m, [&](Value v) { return touched.contains(v); });
    if (!connected) {
      if (m->full)
        break;
      pending.push_back(*m);
      continue;
    }
    // Pending ops whose outputs this member uses join first, in order.
    llvm::SetVector<Value> operands;
    for (Value v : m->op->getOperands())
      operands.insert(v);
    SmallVector<Member> joining, stillPending;
    for (Member &p : pending) {
      if (llvm::any_of(p.op.getDpsInits(),
                       [&](Value v) { return operands.contains(v); }))
        joining.push_back(p);
      else
        stillPending.push_back(p);
    }
    joining.push_back(*m);
    // A member whose accesses the kernel cannot keep in order (it reads
    // what the group writes through memory or another role, or writes
    // what the group read so) ends the group before it, with the pending
    // ops it would take in.
    GroupAccesses extended = accesses;
    if (!llvm::all_of(joining, [&](Member &j) { return extended.add(j); }))
      break;
    accesses = std::move(extended);
    pending = std::move(stillPending);
    for (Member &j : joining) {
      touch(j);
      g.members.push_back(j);
    }
    llvm::append_range(g.movedDeallocs, deallocs);
    deallocs.clear();
  }
  // A dealloc of a buffer the kernel uses (an operand, or loaded in a
  // body) moves after the kernel; one the kernel does not use stays where
  // it is.
  llvm::DenseSet<Value> loaded;
  for (Member &m : g.members)
    loaded.insert(m.captured.begin(), m.captured.end());
  llvm::erase_if(g.movedDeallocs, [&](memref::DeallocOp d) {
    return !touched.contains(d.getMemref()) &&
           !loaded.contains(rootBuffer(d.getMemref()));
  });
  for (Member &m : g.members)
    if (m.full)
      g.shapeOp = m.op;
  return g;
}

/// Emits the kernel of a group before its last member, then removes the
/// members, moves the deallocations after the kernel and removes the
/// buffers nothing outside the kernel uses.
class RowKernelBuilder {
public:
  RowKernelBuilder(RowGroup &g) : g(g) {}

  /// False when the sizes do not fit (nothing emitted). At most
  /// `maxThreads` threads and `maxPerThread` owned elements per thread and
  /// buffer (kMaxThreads and kMaxPerThread, or the "cuda.rows" schedule).
  bool plan(int64_t maxThreads, int64_t maxPerThread) {
    // V comes from the buffers the kernel reads or writes in memory: a
    // full buffer written and read only inside the group (the f32
    // intermediates of a bf16 softmax) lives in registers and does not
    // narrow the bf16 accesses to 8 bytes.
    int64_t widest = 0;
    for (Value memref : memoryOperands())
      widest = std::max<int64_t>(
          widest,
          cast<MemRefType>(memref.getType()).getElementTypeBitWidth() / 8);
    if (widest == 0 || widest > kVectorBytes)
      return false;
    lanes = kVectorBytes / widest;
    // A row that is no multiple of V (softmax over 10 classes) gets only
    // the scalar kernel, one element per chunk: still one pass and one
    // launch instead of a kernel per op.
    vectorKernel = g.rTotal % lanes == 0;
    if (!vectorKernel)
      lanes = 1;
    int64_t vectors = g.rTotal / lanes;
    // kMaxPerThread elements per thread where the row is long enough (a
    // multiple of the warp, at most kMaxThreads threads): fewer threads per
    // row, more rows per multiprocessor.
    int64_t vectorsPerThread = std::max<int64_t>(1, maxPerThread / lanes);
    int64_t wanted = (vectors + vectorsPerThread - 1) / vectorsPerThread;
    threads = std::min<int64_t>(maxThreads, (wanted + 31) / 32 * 32);
    chunks = (vectors + threads - 1) / threads;
    return chunks * lanes <= maxPerThread;
  }

  void emit() {
    Operation *lastOp = g.members.back().op;
    OpBuilder b(lastOp);
    // The kernel's location: every member's, with the run's length (the
    // kernel report, src/driver/KernelAnalysis.cpp, reads it).
    SmallVector<Location> memberLocs;
    for (Member &m : g.members)
      memberLocs.push_back(m.op.getLoc());
    loc =
        FusedLoc::get(b.getContext(), memberLocs,
                      b.getArrayAttr({b.getStringAttr("kina-gpu-map-rows"),
                                      b.getI64IntegerAttr(g.members.size())}));
    SmallVector<Value> sizes = loopSizes(b, loc, g.shapeOp);
    pSizes.assign(sizes.begin(), sizes.begin() + g.k);
    Value np = product(b, loc, pSizes);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value nonEmpty =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, np, zero);
    auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
    kernelRoot = guard;
    b.setInsertionPointToStart(&guard.getThenRegion().front());
    if (!vectorKernel) {
      emitKernel(b, np, /*vectors=*/false);
      cleanUp(guard);
      return;
    }
    // The vector kernel where every buffer it accesses in memory is
    // 16-byte aligned (checked here, on the host), else the scalar kernel.
    // One kernel per case rather than a branch per access: LLVM merges the
    // two arms of an in-kernel branch into one load of the lower alignment
    // (a vector of 8 bf16 at align 2, split into 2-byte loads).
    Value aligned = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    Value sixteen = arith::ConstantIndexOp::create(b, loc, kVectorBytes);
    for (Value memref : memoryOperands()) {
      Value pointer =
          memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
      Value rem = arith::RemUIOp::create(b, loc, pointer, sixteen);
      Value ok =
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem, zero);
      aligned = arith::AndIOp::create(b, loc, aligned, ok);
    }
    auto choice = scf::IfOp::create(b, loc, aligned, /*withElse=*/true);
    {
      OpBuilder::InsertionGuard ig(b);
      b.setInsertionPointToStart(&choice.getThenRegion().front());
      emitKernel(b, np, /*vectors=*/true);
      b.setInsertionPointToStart(&choice.getElseRegion().front());
      emitKernel(b, np, /*vectors=*/false);
    }
    cleanUp(guard);
  }

  /// One kernel over the `np` rows: 16-byte vector accesses when
  /// `vectors`, scalar ones otherwise.
  void emitKernel(OpBuilder &b, Value np, bool vectors) {
    vectorAccess = vectors;
    fullValues.clear();
    paramValues.clear();
    rowValues.clear();
    writtenFull.clear();
    writtenRow.clear();
    readFromMemory.clear();
    rIndex.clear();
    valid.clear();
    chunkStart.clear();
    chunkValid.clear();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value grid = gridSize(b, loc, np, 1, kMaxGridX);
    gpu::LaunchOp launch = createLaunch(b, loc, grid, one, one, threads, 1, 1);
    tid = launch.getThreadIds().x;
    auto rows = scf::ForOp::create(b, loc, launch.getBlockIds().x, np,
                                   launch.getGridSize().x);
    b.setInsertionPointToStart(rows.getBody());
    pivs = delinearize(b, loc, rows.getInductionVar(), pSizes);
    setUpElements(b);
    for (Member &m : g.members) {
      if (!m.full)
        emitRowOp(b, m);
      else if (m.reduction)
        emitReduction(b, m);
      else
        emitElementwise(b, m);
    }
    emitStores(b, rows);
  }

private:
  RowGroup &g;
  Location loc = UnknownLoc();
  int64_t lanes = 0, threads = 0, chunks = 0;
  Value tid;
  SmallVector<Value> pSizes, pivs;
  // Per owned element e = c * lanes + j: its linear index in the row and
  // whether it is in the row.
  SmallVector<Value> rIndex, valid;
  SmallVector<Value> chunkStart, chunkValid; // per chunk
  // Current values: a full buffer's per owned element, a row buffer's
  // scalar.
  llvm::DenseMap<Value, SmallVector<Value>> fullValues, paramValues;
  llvm::DenseMap<Value, Value> rowValues;
  llvm::SetVector<Value> writtenFull, writtenRow;
  bool vectorKernel = true;        // R is a multiple of V: a vector kernel too
  bool vectorAccess = true;        // the kernel being built: vector accesses
  Operation *kernelRoot = nullptr; // the host branch holding the kernels
  std::optional<DominanceInfo> dominanceInfo;
  llvm::DenseSet<Value> readFromMemory; // row buffers the kernel loads

  int64_t perThread() const { return chunks * lanes; }

  void setUpElements(OpBuilder &b) {
    Value lanesV = arith::ConstantIndexOp::create(b, loc, lanes);
    Value rTotal = arith::ConstantIndexOp::create(b, loc, g.rTotal);
    for (int64_t c = 0; c < chunks; ++c) {
      Value vec = arith::AddIOp::create(
          b, loc, tid, arith::ConstantIndexOp::create(b, loc, c * threads));
      Value start = arith::MulIOp::create(b, loc, vec, lanesV);
      chunkStart.push_back(start);
      chunkValid.push_back(arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ult, start, rTotal));
      for (int64_t j = 0; j < lanes; ++j) {
        rIndex.push_back(arith::AddIOp::create(
            b, loc, start, arith::ConstantIndexOp::create(b, loc, j)));
        valid.push_back(chunkValid.back());
      }
    }
  }

  /// The indices into a full (or param) memref of the chunk starting at
  /// row element `start`.
  SmallVector<Value> indicesOf(OpBuilder &b, Role role, Value start) {
    SmallVector<Value> rivs = delinearize(b, loc, start, rSizesValues(b));
    SmallVector<Value> indices;
    if (role == Role::Full)
      indices.append(pivs.begin(), pivs.end());
    indices.append(rivs.begin(), rivs.end());
    return indices;
  }

  SmallVector<Value> rSizesValues(OpBuilder &b) {
    SmallVector<Value> v;
    for (int64_t s : g.rSizes)
      v.push_back(arith::ConstantIndexOp::create(b, loc, s));
    return v;
  }

  /// The owned elements of a full or param memref, loaded (vectors where
  /// aligned), masked elements zero.
  SmallVector<Value> loadRow(OpBuilder &b, Value memref, Role role) {
    SmallVector<Value> values;
    for (int64_t c = 0; c < chunks; ++c)
      llvm::append_range(values, loadChunk(b, memref, role, c));
    return values;
  }

  /// The `lanes` owned elements of chunk `c` of a full or param memref,
  /// loaded (a vector where aligned), zero when the chunk is masked.
  SmallVector<Value> loadChunk(OpBuilder &b, Value memref, Role role,
                               int64_t c) {
    auto type = cast<MemRefType>(memref.getType());
    Type elem = type.getElementType();
    unsigned bits = type.getElementTypeBitWidth();
    auto vecType = VectorType::get({lanes}, elem);
    // Elements narrower than 32 bits travel as 32-bit words (bf16 pairs):
    // LLVM splits a vector of bf16 whose elements are extracted one by one
    // into 2-byte loads, but keeps a 16-byte load of i32 words.
    bool packed = vectorAccess && bits < 32 && (lanes * bits) % 32 == 0;
    int64_t perWord = 32 / bits;
    Type carried =
        packed ? Type(VectorType::get({lanes / perWord}, b.getI32Type()))
               : Type(vecType);
    auto pack = [&](Value vec) {
      return packed ? Value(vector::BitCastOp::create(b, loc, carried, vec))
                    : vec;
    };
    SmallVector<Value> values;
    auto inRange = scf::IfOp::create(b, loc, carried, chunkValid[c],
                                     /*withElse=*/true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&inRange.getThenRegion().front());
      Value chunk;
      if (vectorAccess) {
        chunk = vector::LoadOp::create(
            b, loc, vecType, memref, indicesOf(b, role, chunkStart[c]),
            /*nontemporal=*/false, llvm::MaybeAlign(lanes * bits / 8));
      } else {
        SmallVector<Value> scalars;
        for (int64_t j = 0; j < lanes; ++j) {
          Value start = arith::AddIOp::create(
              b, loc, chunkStart[c], arith::ConstantIndexOp::create(b, loc, j));
          scalars.push_back(memref::LoadOp::create(b, loc, memref,
                                                   indicesOf(b, role, start)));
        }
        chunk = vector::FromElementsOp::create(b, loc, vecType, scalars);
      }
      scf::YieldOp::create(b, loc, pack(chunk));
      b.setInsertionPointToStart(&inRange.getElseRegion().front());
      scf::YieldOp::create(
          b, loc,
          Value(arith::ConstantOp::create(
              b, loc, cast<TypedAttr>(b.getZeroAttr(carried)))));
    }
    Value loaded = inRange.getResult(0);
    if (!packed) {
      for (int64_t j = 0; j < lanes; ++j)
        values.push_back(
            vector::ExtractOp::create(b, loc, loaded, ArrayRef<int64_t>{j}));
      return values;
    }
    // Element j is bits [(j % perWord) * bits, ...) of word j / perWord
    // (little-endian, as the GPU stores it).
    Type narrow = b.getIntegerType(bits);
    for (int64_t w = 0; w < lanes / perWord; ++w) {
      Value word =
          vector::ExtractOp::create(b, loc, loaded, ArrayRef<int64_t>{w});
      for (int64_t p = 0; p < perWord; ++p) {
        Value part = word;
        if (p)
          part = arith::ShRUIOp::create(
              b, loc, word,
              arith::ConstantIntOp::create(b, loc, b.getI32Type(), p * bits));
        part = arith::TruncIOp::create(b, loc, narrow, part);
        if (part.getType() != elem)
          part = arith::BitcastOp::create(b, loc, elem, part);
        values.push_back(part);
      }
    }
    return values;
  }

  /// The value of operand `operand` of `m` at owned element `e` (-1: the
  /// row scalar).
  Value valueOf(OpBuilder &b, Member &m, OpOperand &operand, int64_t e) {
    Value v = operand.get();
    switch (m.roles[operand.getOperandNumber()]) {
    case Role::Scalar:
      return v;
    case Role::Row: {
      auto it = rowValues.find(v);
      if (it == rowValues.end()) {
        OpBuilder::InsertionGuard guard(b);
        Value loaded = memref::LoadOp::create(b, loc, v, pivs);
        readFromMemory.insert(v);
        it = rowValues.try_emplace(v, loaded).first;
      }
      return it->second;
    }
    case Role::Full: {
      auto it = fullValues.find(v);
      if (it == fullValues.end())
        it = fullValues.try_emplace(v, loadRow(b, v, Role::Full)).first;
      return it->second[e];
    }
    case Role::Param: {
      // A parameter (layer_norm's gain and bias) chunk by chunk, at the
      // first use of each chunk, from L1 again for each row: loaded whole,
      // each stayed in registers beside the row through the reductions
      // (layer_norm bf16 [8192, 8192]: 122 registers, two blocks of 256
      // threads a multiprocessor).
      SmallVector<Value> &values = paramValues[v];
      if (values.empty())
        values.resize(perThread());
      int64_t c = e / lanes;
      if (!values[e]) {
        SmallVector<Value> chunk = loadChunk(b, v, Role::Param, c);
        for (int64_t j = 0; j < lanes; ++j)
          values[c * lanes + j] = chunk[j];
      }
      return values[e];
    }
    }
    llvm_unreachable("role");
  }

  /// The iteration point of owned element `e` (for linalg.index).
  SmallVector<Value> ivsOf(OpBuilder &b, Member &m, int64_t e) {
    bool usesIndex = false;
    m.op.getRegion().walk([&](linalg::IndexOp) { usesIndex = true; });
    if (!usesIndex)
      return {};
    SmallVector<Value> ivs(pivs);
    if (m.full)
      llvm::append_range(ivs, delinearize(b, loc, rIndex[e], rSizesValues(b)));
    return ivs;
  }

  /// The region's block arguments at element `e` (-1 for an op over P).
  SmallVector<Value> argsOf(OpBuilder &b, Member &m, int64_t e) {
    SmallVector<Value> args;
    for (OpOperand &operand : m.op->getOpOperands()) {
      if (m.op.isDpsInit(&operand) &&
          !m.op.payloadUsesValueFromOperand(&operand)) {
        args.push_back(arith::ConstantOp::create(
            b, loc,
            cast<TypedAttr>(
                b.getZeroAttr(getElementTypeOrSelf(operand.get().getType())))));
        continue;
      }
      args.push_back(valueOf(b, m, operand, e));
    }
    return args;
  }

  void emitRowOp(OpBuilder &b, Member &m) {
    SmallVector<Value> results =
        cloneRegion(b, m.op, argsOf(b, m, -1), ivsOf(b, m, -1));
    for (auto [init, v] : llvm::zip(m.op.getDpsInits(), results)) {
      rowValues[init] = v;
      writtenRow.insert(init);
    }
  }

  void emitElementwise(OpBuilder &b, Member &m) {
    SmallVector<SmallVector<Value>> perOutput(m.op.getNumDpsInits());
    for (int64_t e = 0; e < perThread(); ++e) {
      SmallVector<Value> results =
          cloneRegion(b, m.op, argsOf(b, m, e), ivsOf(b, m, e));
      for (auto [o, v] : llvm::enumerate(results))
        perOutput[o].push_back(v);
    }
    for (auto [init, values] : llvm::zip(m.op.getDpsInits(), perOutput)) {
      fullValues[init] = values;
      writtenFull.insert(init);
    }
  }

  void emitReduction(OpBuilder &b, Member &m) {
    auto parts = *reductionParts(m.op);
    Block &body = m.op.getRegion().front();
    SmallVector<Value> contributions;
    for (auto &part : parts)
      contributions.push_back(part.first);
    // The thread's partials: its elements' contributions, folded; masked
    // elements give the identity.
    SmallVector<Value> partial;
    for (auto &part : parts)
      partial.push_back(
          arith::ConstantOp::create(b, loc, part.second.identity));
    for (int64_t e = 0; e < perThread(); ++e) {
      IRMapping mapping;
      for (OpOperand *input : m.op.getDpsInputOperands())
        mapping.map(body.getArgument(input->getOperandNumber()),
                    valueOf(b, m, *input, e));
      FailureOr<SmallVector<Value>> es =
          cloneSlice(b, m.op, contributions, mapping, ivsOf(b, m, e));
      assert(succeeded(es) && "checked by reductionParts");
      for (auto [k, part] : llvm::enumerate(parts)) {
        Value c = arith::SelectOp::create(
            b, loc, valid[e], (*es)[k],
            arith::ConstantOp::create(b, loc, part.second.identity));
        partial[k] = combine(b, part.second, partial[k], c);
      }
    }
    // The block's total, then the row's init combined with it.
    for (auto [k, part] : llvm::enumerate(parts)) {
      Value total = gpu::AllReduceOp::create(
          b, loc, partial[k],
          gpu::AllReduceOperationAttr::get(b.getContext(), part.second.kind),
          /*uniform=*/true);
      OpOperand &init = m.op.getDpsInitsMutable()[k];
      Value initValue = valueOf(b, m, init, -1);
      Value result = combine(b, part.second, initValue, total);
      rowValues[init.get()] = result;
      writtenRow.insert(init.get());
    }
  }

  /// comb(a, c) with the combiner's own op (its flags kept).
  Value combine(OpBuilder &b, const Combiner &comb, Value a, Value c) {
    Operation *op = b.clone(*comb.op);
    op->setOperands({a, c});
    return op->getResult(0);
  }

  /// The full and parameter buffers the kernel accesses in memory: those
  /// read before the group writes them, and those it writes that are used
  /// after it.
  llvm::SetVector<Value> memoryOperands() {
    llvm::SetVector<Value> accessed;
    llvm::SetVector<Value> written; // in program order: the checks too
    for (Member &m : g.members)
      for (OpOperand &operand : m.op->getOpOperands()) {
        Role role = m.roles[operand.getOperandNumber()];
        if (role != Role::Full && role != Role::Param)
          continue;
        Value v = operand.get();
        bool read = !m.op.isDpsInit(&operand) ||
                    m.op.payloadUsesValueFromOperand(&operand);
        if (read && !written.contains(v))
          accessed.insert(v);
        if (m.op.isDpsInit(&operand))
          written.insert(v);
      }
    for (Value v : written)
      if (usedAfter(v))
        accessed.insert(v);
    return accessed;
  }

  /// True when `memref` may be used after the group runs: by an op that
  /// is neither a member, nor a deallocation, nor a null check (a
  /// pointer extraction only compared), nor inside the kernel being
  /// built, nor one that runs before the group's first member (it properly
  /// dominates the member in a region without cycles: the matmul writing
  /// the scores a softmax run reads and overwrites); a view's uses count
  /// wherever the view is made. Any function argument counts. The kernel
  /// stores only such buffers.
  bool usedAfter(Value memref) {
    if (isa<BlockArgument>(memref))
      return true;
    Operation *first = g.members.front().op;
    Region *region = first->getParentRegion();
    for (Operation *user : memref.getUsers()) {
      if (isa<memref::DeallocOp>(user))
        continue;
      if (auto pointer = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(user))
        if (llvm::all_of(pointer->getUsers(),
                         [](Operation *u) { return isa<arith::CmpIOp>(u); }))
          continue;
      if (llvm::any_of(g.members,
                       [&](Member &m) { return m.op.getOperation() == user; }))
        continue;
      if (kernelRoot && kernelRoot->isAncestor(user))
        continue;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user))
        if (view.getViewSource() == memref) {
          if (llvm::any_of(user->getResults(),
                           [&](Value r) { return usedAfter(r); }))
            return true;
          continue;
        }
      Operation *ancestor = region->findAncestorOpInRegion(*user);
      if (!ancestor || !acyclic(*region) ||
          !dominance(first).properlyDominates(ancestor, first))
        return true;
    }
    return false;
  }

  /// True when no block of `region` branches to itself or an earlier one
  /// (MLIRGen's straight-line code with its allocation checks' exits).
  static bool acyclic(Region &region) {
    llvm::DenseMap<Block *, unsigned> order;
    for (Block &block : region)
      order[&block] = order.size();
    for (Block &block : region)
      for (Block *succ : block.getSuccessors())
        if (order.lookup(succ) <= order.lookup(&block))
          return false;
    return true;
  }

  DominanceInfo &dominance(Operation *op) {
    if (!dominanceInfo)
      dominanceInfo.emplace(op->getParentOfType<func::FuncOp>());
    return *dominanceInfo;
  }

  /// True when `memref` is used outside the group (other than by its
  /// allocation's null check and deallocations).
  bool usedOutside(Value memref) {
    for (Operation *user : memref.getUsers()) {
      if (isa<memref::DeallocOp, memref::ExtractAlignedPointerAsIndexOp>(user))
        continue;
      if (llvm::any_of(g.members,
                       [&](Member &m) { return m.op.getOperation() == user; }))
        continue;
      if (isa<BlockArgument>(memref))
        return true;
      return true;
    }
    // A function argument is always observable.
    return isa<BlockArgument>(memref);
  }

  void emitStores(OpBuilder &b, scf::ForOp rows) {
    // A row value thread 0 stores may be one every thread has read from
    // the same buffer: they must have read it first. (Full elements are
    // loaded and stored by the thread that owns them.)
    if (llvm::any_of(writtenRow, [&](Value v) {
          return usedAfter(v) && readFromMemory.contains(v);
        }))
      gpu::BarrierOp::create(b, loc);
    for (Value memref : writtenFull) {
      if (!usedAfter(memref))
        continue;
      auto type = cast<MemRefType>(memref.getType());
      auto vecType = VectorType::get({lanes}, type.getElementType());
      const SmallVector<Value> &values = fullValues[memref];
      for (int64_t c = 0; c < chunks; ++c) {
        auto inRange =
            scf::IfOp::create(b, loc, chunkValid[c], /*withElse=*/false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(&inRange.getThenRegion().front());
        SmallVector<Value> elements(values.begin() + c * lanes,
                                    values.begin() + (c + 1) * lanes);
        if (vectorAccess) {
          Value vec = vector::FromElementsOp::create(b, loc, vecType, elements);
          vector::StoreOp::create(
              b, loc, vec, memref, indicesOf(b, Role::Full, chunkStart[c]),
              /*nontemporal=*/false,
              llvm::MaybeAlign(lanes * type.getElementTypeBitWidth() / 8));
          continue;
        }
        for (int64_t j = 0; j < lanes; ++j) {
          Value start = arith::AddIOp::create(
              b, loc, chunkStart[c], arith::ConstantIndexOp::create(b, loc, j));
          memref::StoreOp::create(b, loc, elements[j], memref,
                                  indicesOf(b, Role::Full, start));
        }
      }
    }
    Value leader =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tid,
                              arith::ConstantIndexOp::create(b, loc, 0));
    auto first = scf::IfOp::create(b, loc, leader, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&first.getThenRegion().front());
      for (Value memref : writtenRow)
        if (usedAfter(memref))
          memref::StoreOp::create(b, loc, rowValues[memref], memref, pivs);
    }
    // A next row of this block reuses the all_reduce's workgroup memory
    // (and may read what thread 0 stored): wait for every thread, but only
    // where there is one (the condition is uniform over the block).
    Value next =
        arith::AddIOp::create(b, loc, rows.getInductionVar(), rows.getStep());
    Value more = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, next,
                                       rows.getUpperBound());
    auto again = scf::IfOp::create(b, loc, more, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&again.getThenRegion().front());
    gpu::BarrierOp::create(b, loc);
  }

  /// Removes the members, moves the deallocations after the kernel and
  /// erases the allocations only the kernel used.
  void cleanUp(scf::IfOp kernel) {
    for (memref::DeallocOp dealloc : g.movedDeallocs)
      dealloc->moveAfter(kernel);
    llvm::SetVector<Value> internal;
    for (Value v : writtenFull)
      if (!usedOutside(v))
        internal.insert(v);
    for (Value v : writtenRow)
      if (!usedOutside(v))
        internal.insert(v);
    for (Member &m : llvm::reverse(g.members))
      m.op.erase();
    for (Value v : internal) {
      auto alloc = v.getDefiningOp<memref::AllocOp>();
      if (!alloc)
        continue;
      for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
        if (isa<memref::DeallocOp>(user)) {
          user->erase();
          continue;
        }
        auto pointer = cast<memref::ExtractAlignedPointerAsIndexOp>(user);
        // The null check of an allocation that no longer exists passes.
        OpBuilder b(pointer);
        Value nonNull =
            arith::ConstantIndexOp::create(b, pointer.getLoc(), kVectorBytes);
        pointer.getResult().replaceAllUsesWith(nonNull);
        pointer.erase();
      }
      alloc.erase();
    }
  }
};

class GpuMapRowsPass : public impl::GpuMapRowsPassBase<GpuMapRowsPass> {
public:
  GpuMapRowsPass() = default;
  explicit GpuMapRowsPass(CudaTuning tuning) : tuning(std::move(tuning)) {}

  void runOnOperation() override {
    // Copies between plain memrefs become identity generics, so that a
    // group may take them in (layer_norm copies a shared zero fill into
    // its second reduction's init); kina-gpu-map-elementwise maps the rest
    // as it maps copies.
    getOperation().walk([&](memref::CopyOp copy) {
      if (copy->getParentOfType<gpu::LaunchOp>())
        return;
      Value source = copy.getSource(), target = copy.getTarget();
      if (!plainMemref(source) || !plainMemref(target) ||
          source.getType() != target.getType())
        return;
      OpBuilder b(copy);
      unsigned rank = cast<MemRefType>(target.getType()).getRank();
      AffineMap id = b.getMultiDimIdentityMap(rank);
      SmallVector<utils::IteratorType> iters(rank,
                                             utils::IteratorType::parallel);
      linalg::GenericOp::create(b, copy.getLoc(), ValueRange{source},
                                ValueRange{target}, ArrayRef<AffineMap>{id, id},
                                iters,
                                [](OpBuilder &nb, Location l, ValueRange args) {
                                  linalg::YieldOp::create(nb, l, args[0]);
                                });
      copy.erase();
    });
    SmallVector<linalg::GenericOp> seeds;
    getOperation().walk([&](linalg::GenericOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>() &&
          op.getNumReductionLoops() > 0)
        seeds.push_back(op);
    });
    llvm::DenseSet<Operation *> done;
    for (linalg::GenericOp seed : seeds) {
      if (done.contains(seed))
        continue;
      std::optional<RowGroup> group = growGroup(seed);
      if (!group)
        continue;
      RowKernelBuilder builder(*group);
      // The kernel's schedule: its first reduction's `rows@` key.
      Schedule tuned = tuning.of(seed, "rows", "cuda.rows");
      if (!builder.plan(tuned.get("threads", kMaxThreads),
                        tuned.get("per_thread", kMaxPerThread)))
        continue;
      for (Member &m : group->members)
        done.insert(m.op);
      builder.emit();
    }
  }

private:
  CudaTuning tuning;
};

} // namespace

std::unique_ptr<Pass> createGpuMapRowsPass(CudaTuning tuning) {
  return std::make_unique<GpuMapRowsPass>(std::move(tuning));
}

} // namespace kina::cuda
