//===- Registry.cpp - Buffer registry, runtime_free, runtime_gpu_free_all -===//
//
// The runtime's record of every buffer it allocated (spec, ABI, "Ownership";
// the seed's runtime_gpu_free_all, which "iterates over all pointers
// dynamically registered by the allocations"). A mutex-protected map from the
// `allocated` pointer to its byte count and kind; runtime_free releases one
// recorded buffer, runtime_gpu_free_all all of them, and the introspection
// functions of kina/runtime.h count them. Memory is released outside the lock.
// The registry object is created on first use and never destroyed, so frees
// from other static destructors or late threads stay valid. The host
// allocator is replaceable for fault-injection tests (Registry.h).
//
//===----------------------------------------------------------------------===//
#include "Registry.h"
#include "GpuMemory.h"
#include "Guard.h"

#include "kina/runtime.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace {

using kina::rt::BufferKind;

struct BufferInfo {
  int64_t bytes;
  BufferKind kind;
  int32_t device; ///< CUDA device ordinal of managed memory; -1 for host.
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<void *, BufferInfo> buffers;
  int64_t liveBytes = 0;
};

Registry &registry() {
  static Registry *instance = new Registry(); // Intentionally never freed.
  return *instance;
}

} // namespace

namespace kina::rt {

namespace {
void *defaultAllocate(size_t alignment, size_t bytes) {
  return std::aligned_alloc(alignment, bytes);
}
void defaultRelease(void *pointer) { std::free(pointer); }
std::atomic<void *(*)(size_t, size_t)> allocateHook{defaultAllocate};
std::atomic<void (*)(void *)> releaseHook{defaultRelease};
} // namespace

void setHostAllocatorForTesting(const HostAllocator *allocator) {
  allocateHook.store(allocator ? allocator->allocate : defaultAllocate);
  releaseHook.store(allocator ? allocator->release : defaultRelease);
}

HostAllocator hostAllocator() {
  return HostAllocator{allocateHook.load(), releaseHook.load()};
}

void recordBuffer(void *pointer, int64_t bytes, BufferKind kind,
                  int32_t device) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.buffers.emplace(
      pointer, BufferInfo{bytes, kind, kind == BufferKind::Host ? -1 : device});
  r.liveBytes += bytes;
}

int32_t releaseMemory(void *pointer, BufferKind kind, int32_t device,
                      const char *where) noexcept {
  if (kind == BufferKind::Host) {
    releaseHook.load()(pointer);
    return KINA_STATUS_SUCCESS;
  }
  return gpu::freeManaged(pointer, device, where);
}

} // namespace kina::rt

extern "C" {

int32_t runtime_free(void *allocated) {
  return kina::rt::guardStatus("runtime_free", [&] {
    if (!allocated)
      return kina::rt::fail(KINA_STATUS_VALIDATION_ERROR,
                            "runtime_free: null pointer");
    Registry &r = registry();
    BufferInfo info;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      auto it = r.buffers.find(allocated);
      if (it == r.buffers.end()) {
        char message[160];
        std::snprintf(message, sizeof(message),
                      "runtime_free: %p is not a buffer recorded by the "
                      "runtime (never allocated by it, or already freed)",
                      allocated);
        return kina::rt::fail(KINA_STATUS_VALIDATION_ERROR, message);
      }
      info = it->second;
      r.liveBytes -= info.bytes;
      r.buffers.erase(it);
    }
    return kina::rt::releaseMemory(allocated, info.kind, info.device,
                                   "runtime_free");
  });
}

int32_t runtime_gpu_free_all(void) {
  return kina::rt::guardStatus("runtime_gpu_free_all", [&] {
    Registry &r = registry();
    std::unordered_map<void *, BufferInfo> buffers;
    {
      std::lock_guard<std::mutex> lock(r.mutex);
      buffers.swap(r.buffers);
      r.liveBytes = 0;
    }
    int32_t status = KINA_STATUS_SUCCESS;
    for (const auto &[pointer, info] : buffers)
      if (kina::rt::releaseMemory(pointer, info.kind, info.device,
                                  "runtime_gpu_free_all"))
        status = KINA_STATUS_GPU_ERROR;
    return status;
  });
}

int64_t runtime_live_buffer_count(void) {
  int64_t count = -1;
  kina::rt::guardStatus("runtime_live_buffer_count", [&] {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    count = static_cast<int64_t>(r.buffers.size());
    return KINA_STATUS_SUCCESS;
  });
  return count;
}

int64_t runtime_live_bytes(void) {
  int64_t bytes = -1;
  kina::rt::guardStatus("runtime_live_bytes", [&] {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    bytes = r.liveBytes;
    return KINA_STATUS_SUCCESS;
  });
  return bytes;
}

} // extern "C"
