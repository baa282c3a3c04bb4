//===- GpuHostSync.cpp - Wait for the GPU before the host reads a buffer --===//
//
// The pass `kina-gpu-host-sync` of the cuda target. Inside a `kina_<fn>`
// call the runtime does not wait after each kernel (docs/cuda.md, "The
// runtime's share of a call": the launches queue on the call's stream and
// kina_rt_gpu_exit synchronises once). The host code reads a buffer the
// kernels may write in a few places (the minimum and maximum of gather's
// indices for its range check, computed by a reduction kernel): before each
// such host-side `memref.load` this pass inserts a call of the runtime's
// `kina_rt_gpu_synchronize()` (kina/runtime.h), which waits for the call's
// stream. Loads from `memref.alloca` and `memref.get_global` buffers (host
// memory no kernel writes) are left alone, and loads with only loads and
// effect-free ops between them share one wait. Runs after the three kernel
// mappers, before kernel outlining. Cannot fail.
//
//===----------------------------------------------------------------------===//
#include "CudaPasses.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina::cuda {

#define GEN_PASS_DEF_GPUHOSTSYNCPASS
#include "kina/CudaPasses.h.inc"

namespace {

constexpr llvm::StringLiteral kSyncFunction = "kina_rt_gpu_synchronize";

/// Whether `buffer` (through views) is host memory no kernel writes.
bool isHostOnly(Value buffer) {
  while (Operation *def = buffer.getDefiningOp()) {
    if (isa<memref::AllocaOp, memref::GetGlobalOp>(def))
      return true;
    auto view = dyn_cast<ViewLikeOpInterface>(def);
    if (!view)
      return false;
    buffer = view.getViewSource();
  }
  return false;
}

class GpuHostSyncPass : public impl::GpuHostSyncPassBase<GpuHostSyncPass> {
public:
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<memref::LoadOp> loads;
    module.walk([&](memref::LoadOp load) {
      if (!load->getParentOfType<gpu::LaunchOp>() &&
          !load->getParentOfType<gpu::GPUModuleOp>() &&
          !isHostOnly(load.getMemRef()))
        loads.push_back(load);
    });
    if (loads.empty())
      return;
    auto callee = module.lookupSymbol<func::FuncOp>(kSyncFunction);
    if (!callee) {
      OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
      callee = func::FuncOp::create(b, module.getLoc(), kSyncFunction,
                                    b.getFunctionType({}, {}));
      callee.setPrivate();
    }
    for (memref::LoadOp load : loads) {
      // One wait serves the loads after it up to the next op with effects
      // (loads, deallocations and effect-free ops such as the range
      // check's comparisons queue no GPU work).
      Operation *previous = load->getPrevNode();
      while (previous && (isa<memref::LoadOp, memref::DeallocOp>(previous) ||
                          isMemoryEffectFree(previous)))
        previous = previous->getPrevNode();
      if (auto call = dyn_cast_or_null<func::CallOp>(previous))
        if (call.getCallee() == kSyncFunction)
          continue;
      OpBuilder b(load);
      func::CallOp::create(b, load.getLoc(), callee, ValueRange{});
    }
  }
};

} // namespace

} // namespace kina::cuda
