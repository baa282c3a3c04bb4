//===- StridedCopies.cpp - Strided memref.copy as linalg.copy -------------===//
//
// kina-strided-copies (createStridedCopiesPass). MLIR 22's memref-to-llvm
// lowers a `memref.copy` between two contiguous memrefs (identity layout,
// or a static shape laid out row-major without gaps) to `llvm.memcpy`, and
// any other copy to a call of `memrefCopy`, a function of MLIR's
// c_runner_utils library, which kinac's objects do not link: such a
// program failed to link ("undefined reference to `memrefCopy'"; found by
// the differential tests: a concat of a dynamic width written into a
// strided view, then layer_norm, f64; tests/difftest/regressions/
// concat-layer-norm-strided-copy). This pass rewrites each such copy into a
// `linalg.copy` of the same operands (element by element, in row-major
// order: the same values), which convert-linalg-to-loops lowers to loops;
// contiguous copies keep their memcpy. Runs on the cpu target after
// bufferization, before convert-linalg-to-loops (CpuTarget.cpp).
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_STRIDEDCOPIESPASS
#include "kina/Passes.h.inc"

namespace {

/// Whether memref-to-llvm lowers a copy from or to `type` with a memcpy:
/// its own test (MemRefCopyOpLowering's isContiguousMemrefType).
bool copiesWithMemcpy(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  return memref && (memref.getLayout().isIdentity() ||
                    memref::isStaticShapeAndContiguousRowMajor(memref));
}

class StridedCopiesPass
    : public impl::StridedCopiesPassBase<StridedCopiesPass> {
public:
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) {
      if (!copiesWithMemcpy(copy.getSource().getType()) ||
          !copiesWithMemcpy(copy.getTarget().getType()))
        copies.push_back(copy);
    });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};

} // namespace

} // namespace kina
