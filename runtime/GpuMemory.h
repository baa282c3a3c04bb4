//===- GpuMemory.h - CUDA device selection and managed memory -------------===//
//
// Internal to libkina_runtime.a (and its tests). The GPU half of the
// runtime's allocation, over the driver that CudaDriver.h loads: which device
// allocations go to (runtime_gpu_set_device, else $KINA_DEVICE, else 0), the
// primary context of each device (retained on first use and kept for the
// process, as the CUDA runtime does), and cuMemAllocManaged / cuMemFree under
// that context. The calling thread's current CUDA context is restored after
// every call, so a program's own CUDA work is not disturbed.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUNTIME_GPUMEMORY_H
#define KINA_RUNTIME_GPUMEMORY_H

#include "CudaDriver.h"

#include <cstdint>
#include <string>

namespace kina::rt::gpu {

/// The device ordinal allocations use: inside a `kina_<fn>` call of a cuda
/// object (between kina_rt_gpu_enter and kina_rt_gpu_exit on this thread)
/// the device that call runs on; otherwise the last runtime_gpu_set_device()
/// value, else $KINA_DEVICE (a decimal integer >= 0, read once), else 0.
/// Returns 0 and sets `device`; 1 (Validation Error, recorded with `where`)
/// when $KINA_DEVICE is set but not such a number. Needs no driver.
int32_t selectedDevice(const char *where, int32_t &device) noexcept;

/// Sets the device of the calling thread's current `kina_<fn>` call (from
/// kina_rt_gpu_enter; -1 when the call ends), which selectedDevice() gives
/// on this thread while it is set, so a call's buffers and kernels stay on
/// one device even if another thread selects another one meanwhile.
void setCallDevice(int32_t device) noexcept;

/// Allocates `bytes` (>= 0; at least 1 byte is asked for) of managed memory
/// with cuMemAllocManaged(..., CU_MEM_ATTACH_GLOBAL) on the selected device,
/// under its primary context. Returns 0 and sets `result` and `device` (the
/// ordinal used, for freeManaged); 1 for a bad $KINA_DEVICE; 2 (Resource
/// Error) when `bytes` exceeds the device's free memory (checked with
/// cuMemGetInfo first: over-asking managed memory can hang the GPU) or the
/// driver reports CUDA_ERROR_OUT_OF_MEMORY; 3 (GPU Error) when the driver is
/// missing, there is no such device, or any other CUDA call fails (the
/// message names the call and the CUDA error's name and text). `result` is
/// null on failure. Never throws.
int32_t allocateManaged(const std::string &where, int64_t bytes, void *&result,
                        int32_t &device) noexcept;

/// Frees managed memory from allocateManaged on `device` with cuMemFree under
/// the device's primary context. Returns 0, or 3 (recorded with `where`) if a
/// CUDA call failed. Never throws.
int32_t freeManaged(void *pointer, int32_t device, const char *where) noexcept;

/// Asks the driver to move the pages of managed block `pointer` (`bytes`)
/// to the GPU of the calling thread's current kina_<fn> call, queued on the
/// call's stream (cuMemPrefetchAsync, by its ABI name
/// cuMemPrefetchAsync_v2), so the kernels that write it next do not fault
/// page by page. Advice only: outside a call, with a driver without that
/// entry point, or when the driver refuses (a device without concurrent
/// managed access), nothing happens and no error is recorded. Never throws.
void prefetchToCallDevice(void *pointer, int64_t bytes) noexcept;

/// The primary context of `device` (retained on first use), for code and
/// tests that issue their own driver calls on runtime buffers. Returns 0; 3
/// (recorded with `where`) when the driver or the device is unavailable.
int32_t primaryContext(const char *where, int32_t device,
                       CUcontext &context) noexcept;

} // namespace kina::rt::gpu

#endif // KINA_RUNTIME_GPUMEMORY_H
