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
  /// `cpu` (host allocation) -- the only target lowered in this version.
  std::string target = "cpu";
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
