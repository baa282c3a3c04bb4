//===- GeneralizeNamedOps.cpp - Named linalg ops as generics, blocks kept -===//
//
// An MLIR 22 workaround (src/passes/workarounds/: every place where kinac
// steps around upstream MLIR 22 is a file here, each naming what it avoids
// and the test that shows it).
//
// kina-generalize-named-ops (createGeneralizeNamedOpsPass). The cuda
// target's mappers read every linalg op as a `linalg.generic`; MLIR's
// `linalg-generalize-named-ops` does the rewrite with the greedy pattern
// driver, whose default (aggressive) region simplification also merges
// identical blocks. On the bufferized module that merges the early-return
// blocks kina-buffer-ownership puts after each allocation's null check
// (each frees the live temporaries and returns) wherever they differ only
// in one buffer of the same type: the block then takes the buffer as an
// argument, and the buffer gains a branch as a use. kina-gpu-map-attention
// erases the attention's intermediate buffers only when their uses are its
// own ops, deallocations and null checks, so GPT-2's attention (several
// [8, 12, 1024, 1024] bf16 intermediates) was no longer one kernel. This
// pass calls linalg::generalizeNamedOp on each named op, one at a time,
// and leaves the blocks alone. Checked by tests/filecheck/
// cuda_attention.kir (@causal: with MLIR's pass its bf16 [2, 128, 128]
// intermediates' early returns merge and the attention is not one kernel).
//
// What the greedy driver's folding did and the mappers rely on is kept:
// each linalg op's `memref.cast` operands are folded into it (LinalgOp's
// folder, memref::foldMemRefCast), so an op reading a constant reads its
// `memref.get_global` directly, which kina-gpu-map-elementwise moves into
// the kernel's module as a device global. Without the fold, a constant
// result (`return` of a `constant`, copied into the result buffer through
// a cast) was read by the kernel at its host address: an illegal address
// on the GPU (differential test seeds 10, 19, 32 and 245; checked by
// tests/filecheck/cuda_constant_result.kir).
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_GENERALIZENAMEDOPSPASS
#include "kina/Passes.h.inc"

namespace {

class GeneralizeNamedOpsPass
    : public impl::GeneralizeNamedOpsPassBase<GeneralizeNamedOpsPass> {
public:
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> named;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp>(op.getOperation()))
        named.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      // Ops without a generic form (none that MLIRGen or bufferization
      // make) stay as they are; the mappers then report them.
      (void)linalg::generalizeNamedOp(rewriter, op);
    }
    // Casts to a less static type folded into their linalg users.
    getOperation().walk(
        [&](linalg::LinalgOp op) { (void)memref::foldMemRefCast(op); });
  }
};

} // namespace

} // namespace kina
