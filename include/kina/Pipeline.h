//===- Pipeline.h - From MLIR on tensors to the LLVM dialect --------------===//
//
// The in-process pass pipeline of kinac (spec: "lower through MLIR"): fusion
// of elementwise linalg ops, one-shot bufferization with identity layouts at
// function boundaries, the ABI passes of Passes.h, loops, and one conversion
// to the LLVM dialect. Each step verifies the IR. `kinac --emit=mlir-llvm`
// prints the result.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_PIPELINE_H
#define KINA_PIPELINE_H

#include "kina/AST.h"
#include "kina/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <functional>
#include <string>

namespace mlir {
class PassManager;
} // namespace mlir

namespace kina {

struct PipelineOptions {
  /// 0 disables the fusion and cleanup passes (-O0); 1..3 enable them.
  unsigned optLevel = 2;
  /// `cpu` (host allocation) or `cuda` (GPU kernels, managed allocation:
  /// src/targets/cuda, docs/cuda.md).
  std::string target = "cpu";
  /// cuda: the SM the kernels are compiled for (--gpu-arch).
  std::string gpuArch = "sm_90";
  /// cuda: the CUDA Toolkit root (--cuda-path, CUDA_PATH, /usr/local/cuda;
  /// resolved by the driver).
  std::string cudaPath;
  /// cuda: --allow-tf32 (no effect yet, docs/cuda.md).
  bool allowTf32 = false;
  /// cuda: stop after the kernels are outlined (`mlir-gpu`) or compiled to
  /// PTX (`ptx`); empty: the whole pipeline.
  std::string gpuStopAfter;
  /// cuda: runs each stage of the pipeline (gpu-map, gpu-nvvm, gpu-ptxas,
  /// host-llvm) and records its time (--time-stages); may be empty.
  std::function<mlir::LogicalResult(llvm::StringRef,
                                    llvm::function_ref<mlir::LogicalResult()>)>
      timeStage;
  /// `--symbol-prefix`: MLIRGen already applied it to function names; the
  /// entry-point pass needs it to find them.
  std::string symbolPrefix;
  /// The compiler and ABI version recorded in the object and checked by its
  /// entries against the runtime's (Passes.h, VersionStamp).
  VersionStamp stamp;
  /// Called with the pass manager before it runs (the driver adds its
  /// instrumentation: internal-error reports, InternalError.h).
  std::function<void(mlir::PassManager &)> instrument;
};

/// Lowers `module` (MLIRGen's output for `kinaModule`) in place to the LLVM
/// dialect. Errors are emitted through the context's diagnostic handler.
mlir::LogicalResult lowerToLLVMDialect(mlir::ModuleOp module,
                                       const Module &kinaModule,
                                       const PipelineOptions &options);

} // namespace kina

#endif // KINA_PIPELINE_H
