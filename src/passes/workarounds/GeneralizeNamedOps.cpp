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
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
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
  }
};

} // namespace

} // namespace kina
