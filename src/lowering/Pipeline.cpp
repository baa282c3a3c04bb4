//===- Pipeline.cpp - The pass pipeline from tensors to the LLVM dialect --===//
//
// Builds and runs the pass manager described in Pipeline.h. The sequence:
//
//   canonicalize, kina-elementwise-fusion, cse          (-O1 and above;
//                       canonicalize without truncf(sitofp) folding,
//                       fusion within rank 8: Workarounds.cpp)
//   kina-empty-reshape                                  (Workarounds.cpp)
//   one-shot-bufferize (function boundaries, identity layouts; arguments
//                       marked non-writable: inputs belong to the caller)
//   kina-buffer-ownership, kina-entry-points            (Passes.h)
//   convert-linalg-to-loops, expand-strided-metadata, lower-affine,
//   convert-scf-to-cf, canonicalize + cse               (cleanup at -O1+)
//   arith-expand{include-bf16}                          (bf16 without libgcc)
//   convert-math-to-llvm, convert-math-to-libm          (erf & co. via libm)
//   kina-lower-to-llvm, reconcile-unrealized-casts, kina-internalize
//
// Passes are added to the module-anchored pass manager directly (see
// toolchain-facts.md: a nested "builtin.module(...)" silently matches
// nothing).
//
//===----------------------------------------------------------------------===//
#include "kina/Pipeline.h"
#include "kina/Passes.h"
#include "../targets/cuda/CudaPasses.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace kina {

LogicalResult lowerToLLVMDialect(ModuleOp module, const Module &kinaModule,
                                 const PipelineOptions &options) {
  MLIRContext *ctx = module.getContext();
  if (options.target == "cuda")
  {
    cuda::CudaOptions cudaOptions;
    cudaOptions.gpuArch = options.gpuArch;
    cudaOptions.cudaPath = options.cudaPath;
    cudaOptions.allowTf32 = options.allowTf32;
    cudaOptions.stage = options.gpuStopAfter == "mlir-gpu" ? cuda::CudaStage::Outlined
                        : options.gpuStopAfter == "ptx"    ? cuda::CudaStage::Ptx
                                                           : cuda::CudaStage::Full;
    return cuda::runCudaPipeline(module, kinaModule, options.optLevel,
                                 options.symbolPrefix, options.stamp,
                                 cudaOptions, options.instrument,
                                 options.timeStage);
  }
  if (options.target != "cpu")
    return emitError(module.getLoc())
           << "target '" << options.target << "' is not supported yet";

  // Inputs are the caller's memory: bufferization must never write them.
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        func.setArgAttr(i,
                        bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(ctx, false));

  PassManager pm(ctx);
  pm.enableVerifier(true);
  if (options.instrument)
    options.instrument(pm);
  bool optimize = options.optLevel > 0;
  if (optimize) {
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(createElementwiseFusionPass());
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(createCSEPass());
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
  pm.addPass(
      createEntryPointsPass(&kinaModule, options.symbolPrefix, options.stamp));

  if (optimize)
    pm.addPass(createMatmulKernelPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createExpandShapePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  if (optimize) {
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(createCSEPass());
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
  pm.addPass(createInternalizePass(&kinaModule, options.symbolPrefix));
  return pm.run(module);
}

} // namespace kina
