//===- Targets.h - The registration function of each target folder --------===//
//
// One function per folder src/targets/<name>/, called by registerAllTargets()
// (Registry.cpp). Private to src/targets/.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TARGETS_TARGETS_H
#define KINA_TARGETS_TARGETS_H

namespace kina {

/// Registers the `cpu` target (src/targets/cpu/CpuTarget.cpp).
void registerCpuTarget();

/// Registers the `cuda` target (src/targets/cuda/CudaTarget.cpp).
void registerCudaTarget();

} // namespace kina

#endif // KINA_TARGETS_TARGETS_H
