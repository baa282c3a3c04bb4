//===- Targets.h - The registration function of each target folder --------===//
//
// One function per folder src/targets/<name>/, called by registerAllTargets()
// (Registry.cpp). Private to src/targets/.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TARGETS_TARGETS_H
#define KINA_TARGETS_TARGETS_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class OpPassManager;
} // namespace mlir

namespace kina {

/// Appends the last passes every target's host code takes to the LLVM
/// dialect: math to LLVM intrinsics and libm calls, kina-lower-to-llvm with
/// `allocFunction` as the runtime allocation function (kHostAllocFunction or
/// kGpuAllocFunction), reconcile-unrealized-casts and kina-internalize
/// (src/targets/Pipeline.cpp).
void addHostToLLVMPasses(mlir::OpPassManager &pm,
                         llvm::StringRef allocFunction);

/// Registers the `cpu` target (src/targets/cpu/CpuTarget.cpp).
void registerCpuTarget();

/// Registers the `cuda` target (src/targets/cuda/CudaTarget.cpp).
void registerCudaTarget();

} // namespace kina

#endif // KINA_TARGETS_TARGETS_H
