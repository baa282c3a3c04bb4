//===- CloneSharedFills.cpp - One fill per destination --------------------===//
//
// kina-clone-shared-fills (createCloneSharedFillsPass). MLIRGen gives each
// matmul and reduction its own `linalg.fill` of a `tensor.empty` as the
// destination (init) it accumulates into; `cse` then merges the fills of
// equal shape, type and value into one, read as the init of several ops.
// One-shot bufferization can write only one of those ops in place into the
// fill's buffer: the others get a fresh buffer and a copy of the filled
// one (GPT-2's output and MLP projections, both [8, 1024, 768] f32 before
// their rounding, became a fill, a 25 MB copy and the product, where one
// fill would do). This pass, run just before bufferization, gives each
// destination use of a shared fill its own clone of the fill (and of its
// `tensor.empty`), right before the op that uses it: each op then fills
// and writes its own buffer, and the targets' matmul mappers find the zero
// fill right before the product (kina-matmul-kernel folds it into the
// kernel, cuBLASLt takes beta = 0). Uses as an input (read only) keep the
// original.
//
// With `empties` (the cuda target), the rounding of a contraction's
// product (roundsContraction) whose destination is a `tensor.empty` that
// cse shared with other ops gets its own clone of it: bufferization would
// otherwise write the rounded product into the buffer of an earlier, dead
// op, and for GPT-2's attention that buffer was V's (V's transpose and the
// output's rounding, both [8, 12, 1024, 64] bf16): the attention kernel,
// which writes the rounded output itself (kina-gpu-map-attention), cannot
// overwrite a V that other blocks still read. Other shared empties stay
// shared (an elementwise consumer written in place into its product's
// buffer is what cuBLASLt's epilogues need).
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_CLONESHAREDFILLSPASS
#include "kina/Passes.h.inc"

namespace {

class CloneSharedFillsPass
    : public impl::CloneSharedFillsPassBase<CloneSharedFillsPass> {
public:
  using CloneSharedFillsPassBase::CloneSharedFillsPassBase;

  void runOnOperation() override {
    SmallVector<linalg::FillOp> fills;
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() && !fill->getResult(0).hasOneUse())
        fills.push_back(fill);
    });
    for (linalg::FillOp fill : fills) {
      // The destination uses, in order; the first keeps the original.
      SmallVector<OpOperand *> inits;
      for (OpOperand &use : fill->getResult(0).getUses()) {
        auto dps = dyn_cast<DestinationStyleOpInterface>(use.getOwner());
        if (dps && dps.isDpsInit(&use) &&
            use.getOwner()->getBlock() == fill->getBlock())
          inits.push_back(&use);
      }
      llvm::sort(inits, [](OpOperand *a, OpOperand *b) {
        return a->getOwner()->isBeforeInBlock(b->getOwner());
      });
      if (fill->getResult(0).getNumUses() == inits.size() && !inits.empty())
        inits.erase(inits.begin());
      auto empty = fill.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>();
      // The clones take the user's location: the kernel report (--stats,
      // --emit=dot) names the user's statement, not the first fill's.
      for (OpOperand *use : inits) {
        OpBuilder b(use->getOwner());
        Location loc = use->getOwner()->getLoc();
        IRMapping map;
        if (empty) {
          Operation *clone = b.clone(*empty);
          clone->setLoc(loc);
          map.map(empty.getResult(), clone->getResult(0));
        }
        Operation *clone = b.clone(*fill, map);
        clone->setLoc(loc);
        use->set(clone->getResult(0));
      }
    }
    if (!empties)
      return;
    SmallVector<linalg::GenericOp> roundings;
    getOperation().walk([&](linalg::GenericOp op) {
      auto empty = op.getDpsInits().empty()
                       ? tensor::EmptyOp()
                       : op.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>();
      if (empty && !empty->getResult(0).hasOneUse() && roundsContraction(op))
        roundings.push_back(op);
    });
    for (linalg::GenericOp op : roundings) {
      OpOperand &init = op.getDpsInitsMutable()[0];
      OpBuilder b(op);
      Operation *clone = b.clone(*init.get().getDefiningOp());
      clone->setLoc(op.getLoc());
      init.set(clone->getResult(0));
    }
  }
};

} // namespace

} // namespace kina
