//===- GpuLaunch.h - Kernel launches: test hooks of GpuLaunch.cpp ---------===//
//
// Internal to libkina_runtime.a (and its tests). GpuLaunch.cpp implements the
// `mgpu*` functions that MLIR's gpu-to-llvm lowering calls (declared with
// their C signatures in kina/runtime.h) and the kina_rt_gpu_enter /
// kina_rt_gpu_check_argument / kina_rt_gpu_exit calls of a cuda object's
// status entries. This header exposes the counters its tests read to check
// that modules load once per process and device and that streams are reused
// per thread, not created per launch.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUNTIME_GPULAUNCH_H
#define KINA_RUNTIME_GPULAUNCH_H

#include <cstdint>

namespace kina::rt::gpu {

/// Number of successful cuModuleLoadData / cuModuleLoadDataEx calls the
/// runtime made since the process started (one per registered binary and
/// device that ran a kernel). Thread-safe.
int64_t moduleLoadCount() noexcept;

/// Number of streams the runtime created (one per thread and device that
/// called mgpuStreamCreate) and has not destroyed yet (a thread's streams are
/// destroyed when it exits). Thread-safe.
int64_t liveStreamCount() noexcept;

} // namespace kina::rt::gpu

#endif // KINA_RUNTIME_GPULAUNCH_H
