//===- CudaTarget.cpp - The cuda target and its pass pipeline ------------===//
//
// The `cuda` target (`kinac --target=cuda`, docs/cuda.md): every op a GPU
// kernel, allocations through the runtime's managed allocator, kernels
// compiled by the CUDA Toolkit's ptxas into a fatbin embedded in the object.
// Its pipeline, in four stages (`--time-stages` times each; `kina-opt
// --kina-cuda-pipeline` runs them all):
//
//   gpu-map:   kina-read-only-arguments, canonicalize, kina-elementwise-
//              fusion, canonicalize, cse, kina-clone-shared-fills{empties}
//              (-O1 and up), kina-empty-reshape, one-shot-bufferize,
//              kina-constant-global-order,
//              kina-buffer-ownership, kina-entry-points (with the
//              kina_rt_gpu_* calls), kina-generalize-named-ops,
//              kina-gpu-map-attention (-O1 and up), kina-gpu-map-row-
//              chains, kina-gpu-map-matmul, kina-gpu-map-rows,
//              kina-gpu-map-reductions,
//              kina-gpu-map-elementwise, gpu-launch-sink-index-computations,
//              gpu-kernel-outlining, kina-gpu-align-workgroup
//                                            <- --emit=mlir-gpu stops here
//   gpu-nvvm:  kina-expand-shape, expand-strided-metadata, lower-affine,
//              convert-scf-to-cf, canonicalize + cse, arith-expand (bf16
//              too below sm_80),
//              nvvm-attach-target{chip=--gpu-arch, features=+ptxNN, O},
//              in each gpu.module: convert-gpu-to-nvvm, canonicalize, cse,
//              reconcile-unrealized-casts
//   gpu-ptxas: gpu-module-to-binary{toolkit=--cuda-path, format=fatbin
//              (isa for --emit=ptx)}         <- --emit=ptx stops here
//   host-llvm: convert-math-to-llvm, convert-math-to-libm,
//              kina-lower-to-llvm(_mlir_ciface_runtime_gpu_alloc_unranked;
//              gpu.launch_func legalized), reconcile-unrealized-casts,
//              kina-internalize
//
// The fatbin (SASS for the chip and its PTX) stays in the module as a
// `gpu.binary`, which mlir-translate turns into a global and the runtime's
// mgpuModuleLoad/GetFunction/LaunchKernel calls.
//
//===----------------------------------------------------------------------===//
#include "../Targets.h"
#include "CudaPasses.h"
#include "kina/Passes.h"
#include "kina/Target.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
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

#include "llvm/ADT/StringExtras.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/TargetParser/Triple.h"

extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTarget();
extern "C" void LLVMInitializeNVPTXTargetMC();

using namespace mlir;

namespace kina::cuda {

unsigned smVersion(llvm::StringRef gpuArch) {
  unsigned sm = 0;
  llvm::StringRef digits = gpuArch.drop_front(3).take_while(
      [](char c) { return c >= '0' && c <= '9'; });
  digits.getAsInteger(10, sm);
  return sm;
}

std::string ptxFeatures(llvm::StringRef gpuArch) {
  // PTX 8.0 introduced sm_90/sm_90a; the Blackwell SMs need 8.6 to 8.8.
  unsigned sm = smVersion(gpuArch);
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
        "--target=cuda needs the CUDA Toolkit's ptxas: '" + std::string(ptxas) +
        "' (from " + from +
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
  if (!gpuArch.starts_with("sm_") || !info || !info->isCPUStringValid(gpuArch))
    return llvm::createStringError(
        "unknown --gpu-arch '" + gpuArch.str() +
        "': expected an sm_XX or sm_XXa processor the NVPTX back end knows "
        "(e.g. sm_80, sm_90, sm_90a)");
  return llvm::Error::success();
}

llvm::Error checkPtxasArch(llvm::StringRef toolkitRoot,
                           llvm::StringRef gpuArch) {
  llvm::SmallString<256> ptxas(toolkitRoot);
  llvm::sys::path::append(ptxas, "bin", "ptxas");
  llvm::SmallString<128> helpFile;
  if (llvm::sys::fs::createTemporaryFile("kinac-ptxas-help", "txt", helpFile))
    return llvm::Error::success();
  llvm::FileRemover remover(helpFile);
  std::optional<llvm::StringRef> redirects[] = {
      std::nullopt, llvm::StringRef(helpFile), llvm::StringRef(helpFile)};
  llvm::StringRef args[] = {ptxas, "--help"};
  if (llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects,
                                /*SecondsToWait=*/30) != 0)
    return llvm::Error::success();
  auto text = llvm::MemoryBuffer::getFile(helpFile);
  if (!text)
    return llvm::Error::success();
  // The --gpu-name section: "Allowed values for this option:  'compute_75',
  // ..., 'sm_75','sm_80',..." up to the next option.
  llvm::StringRef help = (*text)->getBuffer();
  size_t at = help.find("--gpu-name");
  if (at == llvm::StringRef::npos)
    return llvm::Error::success();
  help = help.drop_front(at);
  size_t next = help.find("\n--", 1);
  help = help.take_front(next);
  at = help.find("Allowed values");
  if (at == llvm::StringRef::npos)
    return llvm::Error::success();
  help = help.drop_front(at);
  llvm::SmallVector<std::string> sms;
  bool found = false;
  while (true) {
    size_t open = help.find('\'');
    if (open == llvm::StringRef::npos)
      break;
    size_t close = help.find('\'', open + 1);
    if (close == llvm::StringRef::npos)
      break;
    llvm::StringRef value = help.slice(open + 1, close);
    help = help.drop_front(close + 1);
    if (value == gpuArch)
      found = true;
    if (value.starts_with("sm_") && !llvm::is_contained(sms, value))
      sms.push_back(value.str());
  }
  if (found || sms.empty())
    return llvm::Error::success();
  return llvm::createStringError(
      "--gpu-arch '" + gpuArch.str() +
      "' is not supported by the ptxas of "
      "the CUDA Toolkit at '" +
      toolkitRoot.str() + "', which compiles for " + llvm::join(sms, ", ") +
      "; pick one of those, or pass --cuda-path=<a toolkit that supports "
      "it>");
}

} // namespace kina::cuda

namespace kina {
namespace {

class CudaTarget final : public Target {
public:
  llvm::StringRef name() const override { return "cuda"; }
  llvm::StringRef description() const override {
    return "NVIDIA GPUs: every op a kernel, managed allocations, fatbin "
           "embedded (docs/cuda.md)";
  }
  llvm::StringRef allocFunction() const override { return kGpuAllocFunction; }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<gpu::GPUDialect, NVVM::NVVMDialect>();
    // The kernels' vector loads and stores: convert-gpu-to-nvvm lowers
    // every dialect with a ConvertToLLVM interface.
    vector::registerConvertVectorToLLVMInterface(registry);
    NVVM::registerNVVMTargetInterfaceExternalModels(registry);
    registerAllGPUToLLVMIRTranslations(registry);
  }
  void registerPasses() const override { cuda::registerKinaCudaPasses(); }
  llvm::Error checkAvailable(const TargetOptions &options) const override {
    if (llvm::Error err = cuda::checkGpuArch(options.gpuArch))
      return err;
    llvm::Expected<std::string> root = cuda::findCudaToolkit(options.cudaPath);
    if (!root)
      return root.takeError();
    return cuda::checkPtxasArch(*root, options.gpuArch);
  }
  llvm::SmallVector<std::string>
  stageNames(const TargetOptions &options) const override {
    if (options.stopAfter == "mlir-gpu")
      return {"gpu-map"};
    if (options.stopAfter == "ptx")
      return {"gpu-map", "gpu-nvvm", "gpu-ptxas"};
    return {"gpu-map", "gpu-nvvm", "gpu-ptxas", "host-llvm"};
  }
  void buildStage(OpPassManager &pm, const TargetOptions &options,
                  llvm::StringRef stage) const override;
  void buildPipeline(OpPassManager &pm,
                     const TargetOptions &options) const override {
    for (const std::string &stage : stageNames(options))
      buildStage(pm, options, stage);
  }
};

void CudaTarget::buildStage(OpPassManager &pm, const TargetOptions &options,
                            llvm::StringRef stage) const {
  bool optimize = options.optLevel > 0;
  if (stage == "gpu-map") {
    // The bufferized, ABI-complete module; every linalg op and copy a
    // kernel.
    pm.addPass(createReadOnlyArgumentsPass());
    if (optimize) {
      pm.addPass(kina::createCanonicalizerPass());
      // Contractions stay plain for cuBLASLt and the matmul kernel.
      ElementwiseFusionPassOptions fusion;
      fusion.keepContractions = true;
      pm.addPass(createElementwiseFusionPass(fusion));
      pm.addPass(kina::createCanonicalizerPass());
      pm.addPass(createCSEPass());
    }
    bufferization::OneShotBufferizePassOptions bufferize;
    bufferize.bufferizeFunctionBoundaries = true;
    bufferize.functionBoundaryTypeConversion =
        bufferization::LayoutMapOption::IdentityLayoutMap;
    bufferize.unknownTypeConversion =
        bufferization::LayoutMapOption::IdentityLayoutMap;
    // Each matmul's zero fill its own (cse merged equal ones: one-shot
    // bufferization would copy the filled buffer for each later user).
    if (optimize) {
      // And each rounded product its own tensor.empty: not written into a
      // dead op's buffer (the attention kernel's output into its V).
      CloneSharedFillsPassOptions clone;
      clone.empties = true;
      pm.addPass(createCloneSharedFillsPass(clone));
    }
    pm.addPass(createEmptyReshapePass());
    pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
    // Its constant globals in an order that does not change from run to
    // run (src/passes/workarounds/ConstantGlobalOrder.cpp).
    pm.addPass(createConstantGlobalOrderPass());
    pm.addPass(createBufferOwnershipPass());
    pm.addPass(createEntryPointsPass(options.stamp, /*gpu=*/true));
    // The TensorDesc entries kinatd_<f>, on the caller's device and stream
    // (kina_rt_td_gpu_prepare/_finish; kina/abi.h).
    TensorDescEntryPointsPassOptions tensorDesc;
    tensorDesc.gpu = true;
    pm.addPass(createTensorDescEntryPointsPass(tensorDesc));
    // Named ops as generics, the blocks left as they are
    // (src/passes/workarounds/GeneralizeNamedOps.cpp).
    pm.addPass(createGeneralizeNamedOpsPass());
    // Runs over small static rows with small matmuls (an MLP) first: one
    // warp-per-row kernel for the whole run.
    // Attention written out (matmul, softmax, matmul) as one
    // flash-attention kernel: its matmuls must still be generics.
    if (optimize)
      pm.addPass(cuda::createGpuMapAttentionPass());
    pm.addPass(cuda::createGpuMapRowChainsPass());
    cuda::GpuMapMatmulPassOptions matmul;
    matmul.allowTf32 = options.allowTf32;
    matmul.cublasLt = options.gpuMatmul != "kernel";
    // Each mapper reads the tuned schedule of each kernel it makes and
    // records the keys it looked up (kina/Tuning.h, docs/autotune.md).
    cuda::CudaTuning tuning{options.tuning, options.tuningSites};
    pm.addPass(cuda::createGpuMapMatmulPass(matmul, tuning));
    pm.addPass(cuda::createGpuMapRowsPass(tuning));
    pm.addPass(cuda::createGpuMapReductionsPass(tuning));
    pm.addPass(cuda::createGpuMapElementwisePass({}, tuning));
    pm.addPass(cuda::createGpuHostSyncPass());
    pm.addPass(createGpuLaunchSinkIndexComputationsPass());
    pm.addPass(createGpuKernelOutliningPass());
    pm.addPass(cuda::createGpuAlignWorkgroupPass());
  } else if (stage == "gpu-nvvm") {
    // Kernels (and host loops) to cf; kernels to NVVM.
    pm.addPass(createExpandShapePass());
    pm.addPass(memref::createExpandStridedMetadataPass());
    pm.addPass(createLowerAffinePass());
    pm.addPass(createSCFToControlFlowPass());
    if (optimize) {
      pm.addPass(kina::createCanonicalizerPass());
      pm.addPass(createCSEPass());
    }
    // bf16 conversions as integer code only below sm_80: from sm_80 on,
    // NVPTX has cvt.rn.bf16.f32 (one instruction where the expansion takes
    // about ten; flash attention rounds three times per score).
    arith::ArithExpandOpsPassOptions expand;
    expand.includeBf16 = cuda::smVersion(options.gpuArch) < 80;
    pm.addPass(arith::createArithExpandOpsPass(expand));
    GpuNVVMAttachTargetOptions attach;
    attach.chip = options.gpuArch;
    attach.features = cuda::ptxFeatures(options.gpuArch);
    attach.optLevel = options.optLevel;
    pm.addPass(createGpuNVVMAttachTarget(attach));
    OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
    kernels.addPass(createConvertGpuOpsToNVVMOps());
    kernels.addPass(kina::createCanonicalizerPass());
    kernels.addPass(createCSEPass());
    kernels.addPass(createReconcileUnrealizedCastsPass());
  } else if (stage == "gpu-ptxas") {
    // NVPTX code generation and ptxas: the fatbin (or the PTX).
    GpuModuleToBinaryPassOptions binary;
    llvm::Expected<std::string> toolkit =
        cuda::findCudaToolkit(options.cudaPath);
    if (toolkit)
      binary.toolkitPath = *toolkit;
    else // checkAvailable reports it; the pass then fails on its own
      llvm::consumeError(toolkit.takeError());
    binary.compilationTarget = options.stopAfter == "ptx" ? "isa" : "fatbin";
    pm.addPass(createGpuModuleToBinaryPass(binary));
  } else if (stage == "host-llvm") {
    // The host code with runtime allocation and the kernel launches.
    addHostToLLVMPasses(pm, kGpuAllocFunction);
  }
}

} // namespace

void registerCudaTarget() { registerTarget(std::make_unique<CudaTarget>()); }

} // namespace kina
