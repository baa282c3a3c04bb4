//===- Parallel.h - Outlining loops for the runtime's thread pool ---------===//
//
// Shared by kina-tile-and-vectorize and kina-matmul-kernel: a loop whose
// iterations are independent becomes a call of an outlined body function
// over a range of its iterations, which kina-parallel-calls (after the
// conversion to the LLVM dialect) turns into a kina_rt_parallel_for call
// (kina/runtime.h, runtime/Parallel.cpp). src/passes/Parallel.cpp has the
// details.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_PASSES_PARALLEL_H
#define KINA_PASSES_PARALLEL_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"

namespace kina {

/// Unit attribute on an outlined body `func.func` (and, after the
/// conversion, its `llvm.func`): arguments (lo: index, end: index,
/// cost: index, captured values...); it runs iterations [lo, end) of the
/// loop it came from. `cost` only carries the work estimate to
/// kina-parallel-calls; the body does not read it.
inline constexpr llvm::StringLiteral kParallelBodyAttr = "kina.parallel_body";

/// Unit attribute on an `scf.for` whose iterations are independent (each
/// writes only its own part of the outputs) that outlineMarkedLoops may
/// outline.
inline constexpr llvm::StringLiteral kParallelLoopAttr = "kina.parallel_loop";

/// Unit attribute on each `scf.for` of a loop nest over rows that
/// kina-fuse-rows builds on tensors (the outermost one also carries
/// kParallelLoopAttr): bufferization keeps it, the cpu pipeline promotes the
/// small static buffers allocated inside such a loop to the stack, and
/// kina-tile-and-vectorize moves them to the top of the outermost loop's
/// body (then removes this attribute).
inline constexpr llvm::StringLiteral kRowLoopAttr = "kina.row_loop";

/// Loops whose estimated work is a constant below this many cost units
/// are not outlined: the runtime would run them on the caller anyway (two
/// grains of runtime/Parallel.cpp, kina_rt_parallel_threads).
inline constexpr int64_t kMinParallelCost = int64_t(2) << 16;

/// The runtime's grain (runtime/Parallel.cpp): each piece of a split loop
/// gets at least this many cost units. The default of the tuned parameter
/// `grain` (kina/Tuning.h, spaces cpu.matmul and cpu.vectorize).
inline constexpr int64_t kRuntimeGrain = int64_t(1) << 16;

/// I64 attribute on an `scf.for` marked kParallelLoopAttr: the grain its
/// work is split with (cost units per piece, a power of two; 0: the loop
/// stays on the calling thread). Absent: kRuntimeGrain.
inline constexpr llvm::StringLiteral kParallelGrainAttr = "kina.parallel_grain";

/// `cost` (index, cost units) scaled so that the runtime, which splits at
/// kRuntimeGrain units per piece, splits it at `grain` units per piece
/// (a power of two > 0): cost * kRuntimeGrain / grain, folded where
/// constant.
mlir::Value costAtGrain(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value cost, int64_t grain);

/// Replaces `loop` (no results) by a call of a new private function
/// `__kina_par_<enclosing function>[_<k>]` marked kParallelBodyAttr whose
/// body is the loop restricted to iterations [lo, end) of its trip count
/// (constants are cloned into it, every other value defined above the loop
/// becomes an argument; static `memref.alloca`s at the top of the loop's
/// body move before the loop, once per call rather than per iteration).
/// The call passes 0, the trip count, `cost` (index) and the captured
/// values. Fails, changing nothing, when the loop has results or is not in
/// a func.func.
mlir::LogicalResult outlineParallelLoop(mlir::RewriterBase &rewriter,
                                        mlir::scf::ForOp loop,
                                        mlir::Value cost);

/// Outlines every loop of `module` marked kParallelLoopAttr (removing the
/// mark and kParallelGrainAttr) whose work estimate, built before it and
/// scaled to its grain (costAtGrain), is not a constant below
/// kMinParallelCost; a loop of grain 0 stays. The estimate counts elements: a
/// loop's trip count times the sum of its nested loops' estimates, an innermost
/// loop's extent (ub - lb); a bound computed inside the loop from values
/// defined outside it is recomputed before it, one that depends on an induction
/// variable counts as 1. It never over-counts: an innermost loop whose
/// body is straight-line vector code over a whole short row (a static row
/// of one vector or two) counts one per row.
void outlineMarkedLoops(mlir::RewriterBase &rewriter, mlir::ModuleOp module);

} // namespace kina

#endif // KINA_PASSES_PARALLEL_H
