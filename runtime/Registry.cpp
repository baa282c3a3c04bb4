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
// allocator is replaceable for fault-injection tests (Registry.h). Managed
// blocks and large host blocks that runtime_free releases stay recorded,
// marked cached, in free lists per device (-1: host) and capacity for reuse
// (Registry.h, "The cache of managed blocks", "The cache of large host
// blocks"); runtime_gpu_free_all frees them with the live ones.
//
//===----------------------------------------------------------------------===//
#include "Registry.h"
#include "GpuLaunch.h"
#include "GpuMemory.h"
#include "Guard.h"

#include "kina/runtime.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

using kina::rt::BufferKind;

struct BufferInfo {
  int64_t bytes;
  BufferKind kind;
  int32_t device;      ///< CUDA device ordinal of managed memory; -1 for host.
  int64_t capacity;    ///< Bytes allocated (>= bytes: the size class).
  bool cached = false; ///< Freed, kept for reuse.
  bool hostTouched = false; ///< Cached after a free outside a call.
  uintptr_t owner = 0;      ///< Thread token while its call holds it; 0: any.
};

/// A free list key: device ordinal and capacity.
using CacheKey = std::pair<int32_t, int64_t>;

struct Registry {
  std::mutex mutex;
  std::unordered_map<void *, BufferInfo> buffers;
  int64_t liveBytes = 0;
  int64_t cachedCount = 0; ///< Entries of `buffers` that are cached.
  int64_t cachedBytes = 0;
  int64_t cachedHostBytes = 0; ///< The part of cachedBytes that is host.
  std::map<CacheKey, std::vector<void *>> freeLists;
  /// Blocks a thread freed during its running call, by thread token.
  std::unordered_map<uintptr_t, std::vector<void *>> deferred;
};

/// A value unique to the calling thread while it lives.
uintptr_t threadToken() {
  thread_local char token;
  return reinterpret_cast<uintptr_t>(&token);
}

/// $KINA_GPU_CACHE: "0" turns the cache of managed blocks off.
bool cacheEnabled() {
  static const bool enabled = [] {
    const char *text = std::getenv("KINA_GPU_CACHE");
    return !(text && std::strcmp(text, "0") == 0);
  }();
  return enabled;
}

/// The most bytes of freed host blocks the cache keeps (Registry.h):
/// $KINA_HOST_CACHE_MB MiB (a decimal integer; 0 turns the host cache off),
/// else kDefaultHostCacheMiB. Read once.
int64_t hostCacheLimit() {
  constexpr int64_t kDefaultHostCacheMiB = 1024;
  static const int64_t limit = [] {
    const char *text = std::getenv("KINA_HOST_CACHE_MB");
    if (!text || !*text)
      return kDefaultHostCacheMiB << 20;
    char *end = nullptr;
    long long mib = std::strtoll(text, &end, 10);
    if (*end || mib < 0 || mib > (int64_t(1) << 40))
      return kDefaultHostCacheMiB << 20;
    return int64_t(mib) << 20;
  }();
  return limit;
}

/// Whether the cache of `device`'s blocks is on (-1: host).
bool cacheEnabled(int32_t device) {
  return device < 0 ? hostCacheLimit() > 0 : cacheEnabled();
}

Registry &registry() {
  static Registry *instance = new Registry(); // Intentionally never freed.
  return *instance;
}

} // namespace

namespace kina::rt {

namespace {
/// Host buffers of at least kHugeBytes are allocated on 2 MiB boundaries,
/// their size rounded up to 2 MiB, and marked for transparent huge pages
/// (madvise MADV_HUGEPAGE; a no-op where the kernel's THP setting is
/// `never`), as NumPy does from 4 MiB: a fresh buffer is otherwise filled
/// one 4 KiB page fault at a time (a [12, 1024, 1024] f32 matmul result:
/// 12288 faults, 23.6 ms of system time per call against the 17.1 ms of
/// the matmul itself, measured on a 2-core EPYC; docs/performance.md).
constexpr size_t kHugeBytes = size_t(4) << 20;
constexpr size_t kHugePage = size_t(2) << 20;
static_assert(kHugeBytes == size_t(kMinCachedHostBytes),
              "the host cache keeps the huge-page blocks");

void *defaultAllocate(size_t alignment, size_t bytes) {
  if (bytes >= kHugeBytes && alignment <= kHugePage) {
    size_t rounded = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    if (void *pointer = std::aligned_alloc(kHugePage, rounded)) {
      (void)madvise(pointer, rounded, MADV_HUGEPAGE);
      return pointer;
    }
  }
  return std::aligned_alloc(alignment, bytes);
}
void defaultRelease(void *pointer) { std::free(pointer); }
std::atomic<void *(*)(size_t, size_t)> allocateHook{defaultAllocate};
std::atomic<void (*)(void *)> releaseHook{defaultRelease};
} // namespace

int64_t hostCapacity(int64_t bytes) noexcept {
  if (bytes < kMinCachedHostBytes)
    return 0;
  constexpr int64_t kPage = int64_t(kHugePage);
  if (bytes > INT64_MAX - kPage)
    return 0;
  return (bytes + kPage - 1) / kPage * kPage;
}

void setHostAllocatorForTesting(const HostAllocator *allocator) {
  // Cached host blocks go back to the allocator that made them.
  (void)releaseCachedBlocks();
  allocateHook.store(allocator ? allocator->allocate : defaultAllocate);
  releaseHook.store(allocator ? allocator->release : defaultRelease);
}

HostAllocator hostAllocator() {
  return HostAllocator{allocateHook.load(), releaseHook.load()};
}

void recordBuffer(void *pointer, int64_t bytes, BufferKind kind, int32_t device,
                  int64_t capacity) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.buffers.emplace(pointer, BufferInfo{bytes, kind,
                                        kind == BufferKind::Host ? -1 : device,
                                        capacity < bytes ? bytes : capacity});
  r.liveBytes += bytes;
}

int64_t managedCapacity(int64_t bytes) noexcept {
  constexpr int64_t kSmall = 512, kLarge = int64_t(1) << 20;
  if (bytes <= kLarge)
    return bytes <= kSmall ? kSmall : (bytes + kSmall - 1) / kSmall * kSmall;
  int64_t power = int64_t(1) << (63 - __builtin_clzll(bytes));
  int64_t step = power / 4;
  if (bytes > INT64_MAX - step)
    return bytes;
  return (bytes + step - 1) / step * step;
}

void *takeCachedBlock(int32_t device, int64_t capacity, int64_t bytes,
                      bool &hostTouched) noexcept {
  hostTouched = false;
  if (!cacheEnabled(device))
    return nullptr;
  Registry &r = registry();
  uintptr_t self = threadToken();
  std::lock_guard<std::mutex> lock(r.mutex);
  int64_t limit = capacity + capacity / 4;
  for (auto list = r.freeLists.lower_bound({device, capacity});
       list != r.freeLists.end() && list->first.first == device &&
       list->first.second <= limit;
       ++list) {
    std::vector<void *> &blocks = list->second;
    for (size_t i = blocks.size(); i-- > 0;) {
      auto it = r.buffers.find(blocks[i]);
      if (it == r.buffers.end() || !it->second.cached)
        continue; // Not reachable: lists and records change together.
      BufferInfo &info = it->second;
      if (info.owner != 0 && info.owner != self)
        continue;
      void *pointer = blocks[i];
      blocks[i] = blocks.back();
      blocks.pop_back();
      // An empty list stays (with its capacity): the block's next
      // runtime_free pushes it back without allocating.
      hostTouched = info.hostTouched;
      info.cached = false;
      info.hostTouched = false;
      info.owner = 0;
      info.bytes = bytes;
      --r.cachedCount;
      r.cachedBytes -= info.capacity;
      if (device < 0)
        r.cachedHostBytes -= info.capacity;
      r.liveBytes += bytes;
      return pointer;
    }
  }
  return nullptr;
}

int64_t releaseCachedBlocks() noexcept {
  std::vector<std::pair<void *, BufferInfo>> released;
  Registry &r = registry();
  try {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (auto list = r.freeLists.begin(); list != r.freeLists.end();) {
      std::vector<void *> &blocks = list->second;
      for (size_t i = blocks.size(); i-- > 0;) {
        auto it = r.buffers.find(blocks[i]);
        if (it == r.buffers.end() || it->second.owner != 0)
          continue;
        released.emplace_back(it->first, it->second);
        --r.cachedCount;
        r.cachedBytes -= it->second.capacity;
        if (it->second.kind == BufferKind::Host)
          r.cachedHostBytes -= it->second.capacity;
        r.buffers.erase(it);
        blocks[i] = blocks.back();
        blocks.pop_back();
      }
      list = blocks.empty() ? r.freeLists.erase(list) : std::next(list);
    }
  } catch (...) {
    // Out of memory for the list: what was collected is released below.
  }
  int64_t bytes = 0;
  for (const auto &[pointer, info] : released) {
    releaseMemory(pointer, info.kind, info.device, "runtime cache trim");
    bytes += info.capacity;
  }
  return bytes;
}

void publishDeferredBlocks() noexcept {
  Registry &r = registry();
  uintptr_t self = threadToken();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.deferred.find(self);
  if (it == r.deferred.end())
    return;
  for (void *pointer : it->second) {
    auto record = r.buffers.find(pointer);
    if (record != r.buffers.end() && record->second.owner == self)
      record->second.owner = 0;
  }
  // Emptied, not erased: the thread's next call defers into the same
  // vector without allocating (a dead thread's entry is a few bytes, and
  // its token goes to a later thread).
  it->second.clear();
}

bool isLiveManagedBuffer(const void *pointer) noexcept {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.buffers.find(const_cast<void *>(pointer));
  return it != r.buffers.end() && it->second.kind == BufferKind::Managed &&
         !it->second.cached;
}

CacheStats cacheStats() noexcept {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  return CacheStats{r.cachedCount, r.cachedBytes};
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
      if (it->second.cached) {
        char message[160];
        std::snprintf(message, sizeof(message),
                      "runtime_free: %p is not a buffer recorded by the "
                      "runtime (never allocated by it, or already freed)",
                      allocated);
        return kina::rt::fail(KINA_STATUS_VALIDATION_ERROR, message);
      }
      info = it->second;
      r.liveBytes -= info.bytes;
      if (info.kind == BufferKind::Managed && cacheEnabled()) {
        // Kept for reuse (Registry.h); inside a call only this thread may
        // reuse it until the call's stream is synchronised.
        bool inCall = kina::rt::gpu::inCall();
        BufferInfo &kept = it->second;
        kept.cached = true;
        kept.hostTouched = !inCall;
        kept.owner = inCall ? threadToken() : 0;
        r.freeLists[{kept.device, kept.capacity}].push_back(allocated);
        if (inCall)
          r.deferred[kept.owner].push_back(allocated);
        ++r.cachedCount;
        r.cachedBytes += kept.capacity;
        return KINA_STATUS_SUCCESS;
      }
      if (info.kind == BufferKind::Host &&
          info.capacity >= kina::rt::kMinCachedHostBytes &&
          r.cachedHostBytes + info.capacity <= hostCacheLimit()) {
        // A large host block kept for reuse (Registry.h): its pages stay
        // mapped, so the next result of its size is not faulted in and
        // zeroed by the kernel again. Any thread may take it at once.
        BufferInfo &kept = it->second;
        kept.cached = true;
        kept.owner = 0;
        r.freeLists[{-1, kept.capacity}].push_back(allocated);
        ++r.cachedCount;
        r.cachedBytes += kept.capacity;
        r.cachedHostBytes += kept.capacity;
        return KINA_STATUS_SUCCESS;
      }
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
      r.cachedCount = 0;
      r.cachedBytes = 0;
      r.cachedHostBytes = 0;
      r.freeLists.clear();
      r.deferred.clear();
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
    count = static_cast<int64_t>(r.buffers.size()) - r.cachedCount;
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
