//===- Pipeline.h - Running a target's pipeline in kinac ------------------===//
//
// How kinac runs the pass pipeline of a target (kina/Target.h) on MLIRGen's
// module: one pass manager anchored on the module, the verifier after each
// pass, the driver's instrumentation. `kinac --emit=mlir-llvm` prints the
// result; `kina-opt --kina-<target>-pipeline` runs the same passes.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_PIPELINE_H
#define KINA_PIPELINE_H

#include "kina/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <functional>

namespace mlir {
class PassManager;
} // namespace mlir

namespace kina {

/// Runs one named stage of a pipeline and returns its result (the driver
/// records its wall-clock time for --time-stages).
using StageRunner = std::function<mlir::LogicalResult(
    llvm::StringRef, llvm::function_ref<mlir::LogicalResult()>)>;

/// Lowers `module` (MLIRGen's output) in place to the LLVM dialect with
/// `target`'s pipeline, verifying the IR after each pass, one pass manager
/// per stage of the target (Target::stageNames; up to `options.stopAfter`).
/// `instrument`, if set, is called with each pass manager before it runs
/// (the driver adds its internal-error reports, InternalError.h);
/// `runStage`, if set, runs each stage (the driver times it). Errors are
/// emitted through the context's diagnostic handler.
mlir::LogicalResult lowerToLLVMDialect(
    mlir::ModuleOp module, const Target &target, const TargetOptions &options,
    const std::function<void(mlir::PassManager &)> &instrument = nullptr,
    const StageRunner &runStage = nullptr);

} // namespace kina

#endif // KINA_PIPELINE_H
