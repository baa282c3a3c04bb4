//===- GpuStrided.h - Strided copies on the GPU of a call -----------------===//
//
// Internal to libkina_runtime.a. The one kernel of the runtime itself: a
// copy between two strided layouts of the same shape, which the cuda
// TensorDesc entries (TensorDesc.cpp) use to gather strided input views
// into runtime buffers and to scatter results into strided outputs, on the
// caller's stream (issue 15). The kernel is PTX text in GpuStrided.cpp,
// registered with mgpuModuleLoadJIT and so compiled by the driver once per
// process and device, like the PTX of compiled objects (GpuLaunch.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUNTIME_GPUSTRIDED_H
#define KINA_RUNTIME_GPUSTRIDED_H

#include <cstdint>

namespace kina::rt::gpu {

/// Largest rank stridedCopy takes (KINA_TD_MAX_RANK).
constexpr int32_t kStridedCopyMaxRank = 4;

/// Queues on the stream of the calling thread's current GPU call (the
/// caller's stream inside kina_rt_gpu_enter_stream's frame) a copy of the
/// `rank`-dim array of shape `shape` (0 <= rank <= 4, sizes >= 0) of
/// `elementSize`-byte elements (1, 2, 4 or 8) from `source` to
/// `destination`; `sourceStrides` and `destinationStrides` are in elements
/// and may be 0 or negative (the pointers address element [0, ...]). Both
/// must be memory the call's device can read and write (device memory of
/// that device, managed or mapped page-locked memory); the two layouts must
/// not overlap unless they are identical. Asynchronous: faults show at the
/// frame's synchronisation. Must be called inside a GPU call frame
/// (kina_rt_gpu_enter / kina_rt_gpu_enter_stream). Returns 0 (an empty
/// array queues nothing); 1 for a rank or element size out of range; else
/// the status of a failure made the thread's pending GPU error (3: loading
/// the kernel, the launch; 2: out of memory), its message in
/// kina_last_error(), naming `where`. Never throws.
int32_t stridedCopy(const char *where, void *destination,
                    const int64_t *destinationStrides, const void *source,
                    const int64_t *sourceStrides, const int64_t *shape,
                    int32_t rank, int64_t elementSize) noexcept;

} // namespace kina::rt::gpu

#endif // KINA_RUNTIME_GPUSTRIDED_H
