//===- CpuTarget.cpp - The cpu target and its pass pipeline ---------------===//
//
// The `cpu` target (the default `--target`): host code, allocations through
// the runtime's host allocator. Its pipeline, from MLIRGen's module on
// tensors to the LLVM dialect (`kinac --emit=mlir-llvm`,
// `kina-opt --kina-cpu-pipeline`):
//
//   kina-read-only-arguments                            (arguments are
//                       the caller's: bufferization must not write them)
//   canonicalize, kina-elementwise-fusion, cse          (-O1 and above;
//                       canonicalize without truncf(sitofp) folding,
//                       fusion within rank 8: src/passes/workarounds/)
//   kina-empty-reshape                        (src/passes/workarounds/)
//   one-shot-bufferize (function boundaries, identity layouts)
//   kina-buffer-ownership, kina-entry-points            (Passes.h)
//   kina-matmul-kernel                                  (-O1 and above)
//   convert-linalg-to-loops, kina-expand-shape, expand-strided-metadata,
//   lower-affine, convert-scf-to-cf, canonicalize + cse (cleanup at -O1+)
//   arith-expand{include-bf16}                          (bf16 without libgcc)
//   convert-math-to-llvm, convert-math-to-libm          (erf & co. via libm)
//   kina-lower-to-llvm, reconcile-unrealized-casts, kina-internalize
//
// docs/architecture.md describes each step.
//
//===----------------------------------------------------------------------===//
#include "../Targets.h"
#include "kina/Passes.h"
#include "kina/Target.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kina {
namespace {

class CpuTarget final : public Target {
public:
  llvm::StringRef name() const override { return "cpu"; }
  llvm::StringRef description() const override {
    return "Host code; allocations through the runtime's host allocator";
  }
  llvm::StringRef allocFunction() const override { return kHostAllocFunction; }
  void buildPipeline(OpPassManager &pm,
                     const TargetOptions &options) const override;
};

void CpuTarget::buildPipeline(OpPassManager &pm,
                              const TargetOptions &options) const {
  bool optimize = options.optLevel > 0;
  pm.addPass(createReadOnlyArgumentsPass());
  if (optimize) {
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(createElementwiseFusionPass());
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.unknownTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(createEmptyReshapePass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createBufferOwnershipPass());
  pm.addPass(createEntryPointsPass(options.stamp));
  pm.addPass(createTensorDescEntryPointsPass());

  if (optimize)
    pm.addPass(createMatmulKernelPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createExpandShapePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  if (optimize) {
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  // bf16 conversions as integer code: LLVM would call __truncsfbf2, which
  // Debian 12's libgcc lacks (round to nearest even, NaN kept).
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createLowerToLLVMPass(kHostAllocFunction));
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createInternalizePass());
}

} // namespace

void registerCpuTarget() { registerTarget(std::make_unique<CpuTarget>()); }

} // namespace kina
