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

/// Lowers `module` (MLIRGen's output) in place to the LLVM dialect with
/// `target`'s pipeline, verifying the IR after each pass. `instrument`, if
/// set, is called with the pass manager before it runs (the driver adds its
/// internal-error reports, InternalError.h). Errors are emitted through the
/// context's diagnostic handler.
mlir::LogicalResult lowerToLLVMDialect(
    mlir::ModuleOp module, const Target &target, const TargetOptions &options,
    const std::function<void(mlir::PassManager &)> &instrument = nullptr);

} // namespace kina

#endif // KINA_PIPELINE_H
