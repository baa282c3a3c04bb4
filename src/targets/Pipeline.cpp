//===- Pipeline.cpp - Running a target's pipeline in kinac ----------------===//
//
// Implements Pipeline.h: the pass manager kinac runs a target's pipeline
// with (module-anchored, verifier on, the driver's instrumentation), after
// loading the dialects the target depends on.
//
//===----------------------------------------------------------------------===//
#include "kina/Pipeline.h"
#include "Targets.h"
#include "kina/Passes.h"

#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

using namespace mlir;

namespace kina {

LogicalResult
lowerToLLVMDialect(ModuleOp module, const Target &target,
                   const TargetOptions &options,
                   const std::function<void(PassManager &)> &instrument,
                   const StageRunner &runStage) {
  MLIRContext *ctx = module.getContext();
  DialectRegistry registry;
  target.getDependentDialects(registry);
  ctx->appendDialectRegistry(registry);

  // Passes are added to the module-anchored pass manager directly (see
  // toolchain-facts.md: a nested "builtin.module(...)" silently matches
  // nothing).
  for (const std::string &stage : target.stageNames(options)) {
    PassManager pm(ctx);
    pm.enableVerifier(true);
    if (instrument)
      instrument(pm);
    target.buildStage(pm, options, stage);
    auto run = [&] { return pm.run(module); };
    if (failed(runStage ? runStage(stage, run) : run()))
      return failure();
  }
  return success();
}

void addHostToLLVMPasses(mlir::OpPassManager &pm,
                         llvm::StringRef allocFunction) {
  pm.addPass(mlir::createConvertMathToLLVMPass());
  pm.addPass(mlir::createConvertMathToLibmPass());
  pm.addPass(createLowerToLLVMPass(allocFunction.str()));
  pm.addPass(mlir::createReconcileUnrealizedCastsPass());
  pm.addPass(createInternalizePass());
}

} // namespace kina
