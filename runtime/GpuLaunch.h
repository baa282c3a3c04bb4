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

#include "CudaDriver.h"

#include <cstdint>
#include <string>

namespace kina::rt::gpu {

/// Work another part of the runtime (CublasLt.cpp) queues on the calling
/// thread's stream: called with `state`, the driver, the stream and the
/// device ordinal, with that device's primary context current; returns 0
/// or a status it made pending (pendError / pendCudaError).
using StreamBody = int32_t (*)(void *state, const cuda::DriverApi &api,
                               CUstream stream, int32_t device);

/// Runs `body` as the mgpu* functions run their driver calls: the device is
/// the current kina_<fn> call's (else mgpuSetDefaultDevice's, else the
/// selected one), its primary context is current for the duration (the
/// caller's is restored), and the stream is the thread's own on that device
/// (created on first use), the one the call's kernels run on. Returns
/// body's status, or the pending status of a failure to get there (no
/// driver, no device: 3). Never throws.
int32_t onThreadStream(const char *where, StreamBody body,
                       void *state) noexcept;

/// Makes `message` the calling thread's pending GPU error with `status`
/// (unless one is pending: the first is kept), which kina_rt_gpu_exit
/// returns, and its last error. Returns `status`.
int32_t pendError(int32_t status, const std::string &message) noexcept;

/// pendError with "<where>: <what>: <CUDA error name>: <text>" and status 2
/// for CUDA_ERROR_OUT_OF_MEMORY, else 3.
int32_t pendCudaError(const cuda::DriverApi &api, CUresult result,
                      const char *where, const std::string &what) noexcept;

/// Whether the calling thread is inside a kina_<fn> call of a cuda object
/// (between kina_rt_gpu_enter and kina_rt_gpu_exit).
bool inCall() noexcept;

/// What the driver says of a pointer a kina_<fn> call received
/// (kina_rt_gpu_check_argument): its CUmemorytype (0: unknown to the
/// driver, i.e. ordinary host memory), whether it is managed memory, and
/// the ordinal of the device that owns it (meaningful for device memory
/// that is not managed); `query` names the driver call that answered last.
struct PointerFacts {
  unsigned int memoryType = 0;
  unsigned int managed = 0;
  int ordinal = -1;
  const char *query = "";
};

/// Fills `facts` for `pointer` with one cuPointerGetAttributes call (with
/// cuPointerGetAttribute per attribute, stopping once the answer is known,
/// where the driver lacks it). Returns that call's CUresult; a pointer the
/// driver does not know gives CUDA_SUCCESS and memory type 0 (or
/// CUDA_ERROR_INVALID_VALUE from the per-attribute path). Never throws.
CUresult pointerFacts(const cuda::DriverApi &api, const void *pointer,
                      PointerFacts &facts) noexcept;

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
