//===- CudaPipeline.cpp - The cuda target's pass pipeline ----------------===//
//
// The sequence (docs/cuda.md):
//
//   canonicalize, kina-elementwise-fusion, canonicalize, cse  (-O1 and up)
//   kina-empty-reshape, one-shot-bufferize, kina-buffer-ownership,
//   kina-entry-points (with the kina_rt_gpu_* calls)    -- as the cpu target
//   linalg-generalize-named-ops
//   kina-gpu-map-matmul, kina-gpu-map-reductions, kina-gpu-map-elementwise
//   gpu-launch-sink-index-computations, gpu-kernel-outlining
//                                                 <- --emit=mlir-gpu stops
//   kina-expand-shape, expand-strided-metadata, lower-affine,
//   convert-scf-to-cf, canonicalize + cse, arith-expand{include-bf16}
//   nvvm-attach-target{chip=--gpu-arch, features=+ptxNN, O}
//   gpu.module: convert-gpu-to-nvvm, canonicalize, cse,
//               reconcile-unrealized-casts
//   gpu-module-to-binary{toolkit=--cuda-path, format=fatbin (isa for
//                        --emit=ptx)}           <- --emit=ptx stops
//   convert-math-to-llvm, convert-math-to-libm,
//   kina-lower-to-llvm(_mlir_ciface_runtime_gpu_alloc_unranked; lowers
//   gpu.launch_func too), reconcile-unrealized-casts, kina-internalize
//
// The fatbin (SASS for the chip plus its PTX) stays in the module as a
// `gpu.binary`, which mlir-translate turns into a global and the
// mgpuModuleLoad/GetFunction/LaunchKernel calls of the runtime.
//
//===----------------------------------------------------------------------===//
#include "CudaPasses.h"
#include "kina/Passes.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/TargetParser/Triple.h"

extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTarget();
extern "C" void LLVMInitializeNVPTXTargetMC();

using namespace mlir;

namespace kina::cuda {

std::string ptxFeatures(llvm::StringRef gpuArch) {
  // PTX 8.0 introduced sm_90/sm_90a; the Blackwell SMs need 8.6 to 8.8.
  unsigned sm = 0;
  llvm::StringRef digits = gpuArch.drop_front(3).take_while(
      [](char c) { return c >= '0' && c <= '9'; });
  digits.getAsInteger(10, sm);
  if (sm >= 100)
    return "+ptx88";
  return "+ptx80";
}

llvm::Expected<std::string> findCudaToolkit(llvm::StringRef explicitPath) {
  std::string root, from;
  if (!explicitPath.empty()) {
    root = explicitPath.str();
    from = "--cuda-path";
  } else if (auto env = llvm::sys::Process::GetEnv("CUDA_PATH");
             env && !env->empty()) {
    root = *env;
    from = "CUDA_PATH";
  } else {
    root = "/usr/local/cuda";
    from = "the default";
  }
  llvm::SmallString<256> ptxas(root);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  if (!llvm::sys::fs::can_execute(ptxas))
    return llvm::createStringError(
        "--target=cuda needs the CUDA Toolkit's ptxas: '" +
        std::string(ptxas) + "' (from " + from +
        ") is not an executable; install the CUDA Toolkit or pass "
        "--cuda-path=<toolkit root> (or set CUDA_PATH)");
  return root;
}

llvm::Error checkGpuArch(llvm::StringRef gpuArch) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no NVPTX code generator in this LLVM: " +
                                   error);
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, "", ""));
  if (!gpuArch.starts_with("sm_") || !info ||
      !info->isCPUStringValid(gpuArch))
    return llvm::createStringError(
        "unknown --gpu-arch '" + gpuArch.str() +
        "': expected an sm_XX or sm_XXa processor the NVPTX back end knows "
        "(e.g. sm_80, sm_90, sm_90a)");
  return llvm::Error::success();
}

LogicalResult runCudaPipeline(ModuleOp module, const Module &kinaModule,
                              unsigned optLevel,
                              const std::string &symbolPrefix,
                              const VersionStamp &stamp,
                              const CudaOptions &options,
                              const std::function<void(PassManager &)> &instrument,
                              const StageTimer &timeStage) {
  MLIRContext *ctx = module.getContext();
  {
    DialectRegistry registry;
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    registerAllGPUToLLVMIRTranslations(registry);
    ctx->appendDialectRegistry(registry);
    ctx->loadDialect<gpu::GPUDialect, NVVM::NVVMDialect>();
  }

  // Inputs are the caller's memory: bufferization must never write them.
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
        func.setArgAttr(i,
                        bufferization::BufferizationDialect::kWritableAttrName,
                        BoolAttr::get(ctx, false));

  // One pass manager per stage, so --time-stages shows each.
  auto runStage = [&](StringRef name,
                      llvm::function_ref<void(PassManager &)> build) {
    PassManager pm(ctx);
    pm.enableVerifier(true);
    if (instrument)
      instrument(pm);
    build(pm);
    auto run = [&] { return pm.run(module); };
    return timeStage ? timeStage(name, run) : run();
  };
  bool optimize = optLevel > 0;

  // Bufferized, ABI-complete module; every linalg op and copy a kernel.
  if (failed(runStage("gpu-map", [&](PassManager &pm) {
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
        pm.addPass(createEntryPointsPass(&kinaModule, symbolPrefix, stamp,
                                         /*gpu=*/true));
        pm.addPass(createLinalgGeneralizeNamedOpsPass());
        pm.addPass(createGpuMapMatmulPass());
        pm.addPass(createGpuMapReductionsPass());
        pm.addPass(createGpuMapElementwisePass());
        pm.addPass(createGpuLaunchSinkIndexComputationsPass());
        pm.addPass(createGpuKernelOutliningPass());
      })))
    return failure();
  if (options.stage == CudaStage::Outlined)
    return success();

  // Kernels (and host loops) to cf; kernels to NVVM.
  if (failed(runStage("gpu-nvvm", [&](PassManager &pm) {
        pm.addPass(createExpandShapePass());
        pm.addPass(memref::createExpandStridedMetadataPass());
        pm.addPass(createLowerAffinePass());
        pm.addPass(createSCFToControlFlowPass());
        if (optimize) {
          pm.addPass(kina::createCanonicalizerPass());
          pm.addPass(createCSEPass());
        }
        arith::ArithExpandOpsPassOptions expand;
        expand.includeBf16 = true;
        pm.addPass(arith::createArithExpandOpsPass(expand));
        GpuNVVMAttachTargetOptions attach;
        attach.chip = options.gpuArch;
        attach.features = ptxFeatures(options.gpuArch);
        attach.optLevel = optLevel;
        pm.addPass(createGpuNVVMAttachTarget(attach));
        OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
        kernels.addPass(createConvertGpuOpsToNVVMOps());
        kernels.addPass(kina::createCanonicalizerPass());
        kernels.addPass(createCSEPass());
        kernels.addPass(createReconcileUnrealizedCastsPass());
      })))
    return failure();

  // NVPTX code generation and ptxas: the fatbin (or the PTX).
  if (failed(runStage("gpu-ptxas", [&](PassManager &pm) {
        GpuModuleToBinaryPassOptions binary;
        binary.toolkitPath = options.cudaPath;
        binary.compilationTarget =
            options.stage == CudaStage::Ptx ? "isa" : "fatbin";
        pm.addPass(createGpuModuleToBinaryPass(binary));
      })))
    return failure();
  if (options.stage == CudaStage::Ptx)
    return success();

  // The host code with runtime allocation and the kernel launches.
  return runStage("host-llvm", [&](PassManager &pm) {
    pm.addPass(createConvertMathToLLVMPass());
    pm.addPass(createConvertMathToLibmPass());
    pm.addPass(createLowerToLLVMPass(kGpuAllocFunction));
    pm.addPass(createReconcileUnrealizedCastsPass());
    pm.addPass(createInternalizePass(&kinaModule, symbolPrefix));
  });
}

} // namespace kina::cuda
