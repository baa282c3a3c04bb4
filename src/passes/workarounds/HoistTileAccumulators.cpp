//===- HoistTileAccumulators.cpp - Accumulators of vector tiles -----------===//
//
// An MLIR 22 workaround (src/passes/workarounds/: every place where kinac
// steps around a bug or limitation of upstream MLIR 22 is a file here).
//
// linalg::hoistRedundantVectorTransfers (mlir/Dialect/Linalg/Transforms/
// Hoisting.h) refuses to hoist a transfer pair on a buffer when any other
// op of the whole function uses that buffer before the read or after the
// write, and whenever the buffer comes from a view-like op (the aliasing
// check made conservative by llvm-project pull request #66930; the
// subview case is llvm-project pull request #205280, open). After
// kina-tile-and-vectorize peels a reduction's partial tile, that partial
// tile (a linalg op on a subview of the same output) is such a use, so
// the upstream function leaves every row reduction reading and writing its
// accumulator in memory at each vector step (tests/passes/
// tile-and-vectorize.mlir, @rowsum_peeled). hoistTileAccumulators applies
// the same rewrite with a check local to the loop: the loop's body touches
// memory only through vector transfers (it is one vectorised tile of one
// linalg op, whose output buffer does not alias its inputs) and no other
// op inside the loop uses the buffer.
//
//===----------------------------------------------------------------------===//
#include "HoistTileAccumulators.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;

namespace kina {
namespace {

/// Whether every op nested in `loop` is free of memory effects, a vector
/// transfer or a structured control-flow op holding such ops.
bool touchesMemoryOnlyByTransfers(scf::ForOp loop) {
  WalkResult result = loop.getBody()->walk([](Operation *op) {
    if (isa<vector::TransferReadOp, vector::TransferWriteOp, scf::ForOp,
            scf::YieldOp>(op) ||
        isMemoryEffectFree(op))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !result.wasInterrupted();
}

/// Hoists one pair out of `loop` (the file comment); returns whether it did.
bool hoistOnePair(RewriterBase &rewriter, scf::ForOp loop) {
  if (!touchesMemoryOnlyByTransfers(loop))
    return false;
  for (auto write : loop.getBody()->getOps<vector::TransferWriteOp>()) {
    Value base = write.getBase();
    if (!isa<MemRefType>(base.getType()) || write.getMask() ||
        !loop.isDefinedOutsideOfLoop(base) ||
        !llvm::all_of(write.getIndices(), [&](Value index) {
          return loop.isDefinedOutsideOfLoop(index);
        }))
      continue;
    vector::TransferReadOp pair;
    for (Operation *user : base.getUsers()) {
      if (!loop->isAncestor(user) || user == write)
        continue;
      auto candidate = dyn_cast<vector::TransferReadOp>(user);
      if (pair || !candidate || candidate->getBlock() != loop.getBody() ||
          candidate.getIndices() != write.getIndices() ||
          candidate.getVectorType() != write.getVectorType() ||
          candidate.getPermutationMap() != write.getPermutationMap() ||
          candidate.getMask() || !candidate->isBeforeInBlock(write)) {
        pair = {};
        break;
      }
      pair = candidate;
    }
    if (!pair)
      continue;
    // The read before the loop, its value carried through the loop, the
    // write after it.
    loop.moveOutOfLoop(pair);
    rewriter.setInsertionPoint(loop);
    auto yieldFn = [&](OpBuilder &, Location,
                       ArrayRef<BlockArgument>) -> SmallVector<Value> {
      return {write.getValueToStore()};
    };
    FailureOr<LoopLikeOpInterface> newLoop = loop.replaceWithAdditionalYields(
        rewriter, pair.getResult(), /*replaceInitOperandUsesInLoop=*/true,
        yieldFn);
    if (failed(newLoop))
      return false;
    auto forOp = cast<scf::ForOp>(newLoop->getOperation());
    rewriter.moveOpAfter(write, forOp);
    rewriter.modifyOpInPlace(write, [&] {
      write.getValueToStoreMutable().assign(forOp.getResults().back());
    });
    return true;
  }
  return false;
}

} // namespace

void hoistTileAccumulators(Operation *root) {
  IRRewriter rewriter(root->getContext());
  bool changed = true;
  while (changed) {
    changed = false;
    root->walk([&](scf::ForOp loop) {
      changed = hoistOnePair(rewriter, loop);
      return changed ? WalkResult::interrupt() : WalkResult::advance();
    });
  }
}

} // namespace kina
