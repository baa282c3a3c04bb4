//===- Registry.h - The runtime's record of every buffer it allocated -----===//
//
// Internal to libkina_runtime.a. Every buffer the runtime allocates (host or
// CUDA managed) is recorded here with its requested byte count and kind, so
// runtime_free() can reject pointers it does not own and runtime_gpu_free_all()
// can release everything (spec, ABI, "Ownership"). The registry is a
// mutex-protected hash map; releasing memory happens outside the lock.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUNTIME_REGISTRY_H
#define KINA_RUNTIME_REGISTRY_H

#include <cstddef>
#include <cstdint>

namespace kina::rt {

/// How a recorded buffer was allocated, hence how it is released.
enum class BufferKind {
  Host,   ///< std::aligned_alloc, released with std::free.
  Managed ///< cuMemAllocManaged, released with cuMemFree (GpuMemory.h).
};

/// Records `pointer` (the `allocated` pointer, non-null) with its requested
/// byte count, its kind and, for managed memory, the CUDA device ordinal it
/// was allocated on (ignored for host memory). Throws std::bad_alloc if the
/// map cannot grow; the caller then still owns the memory and must release
/// it.
void recordBuffer(void *pointer, int64_t bytes, BufferKind kind, int32_t device,
                  int64_t capacity = -1);

// --- The cache of managed blocks -------------------------------------------
// runtime_free does not give managed memory back to CUDA: the block stays
// recorded (runtime_gpu_free_all frees it; runtime_free of it again is
// still "already freed") and is kept per device and size class for the next
// allocation of that class (cuMemAllocManaged costs tens of microseconds and
// fresh managed pages fault on the GPU's first touch). A block freed inside
// a thread's kina_<fn> call (an intermediate: the call's kernels may still
// be queued on that thread's stream) is reused only by that thread until
// its call ends (publishDeferredBlocks); the stream orders those uses.
// $KINA_GPU_CACHE=0 turns the cache off (every free is a cuMemFree).

/// The capacity the runtime allocates for a managed block of `bytes`: at
/// least 512, rounded up to 512 bytes below 1 MiB, to a quarter of the
/// power of two at or below `bytes` above 1 MiB (so blocks of nearby sizes
/// share a class; at most 25% more than asked).
int64_t managedCapacity(int64_t bytes) noexcept;

// --- The cache of large host blocks -----------------------------------------
// A host buffer of at least kMinCachedHostBytes (4 MiB: the huge-page blocks
// of the default allocator, Registry.cpp) is allocated with the capacity
// hostCapacity gives, and runtime_free keeps it, recorded and cached, while
// the cached host blocks total at most $KINA_HOST_CACHE_MB MiB (default
// 1024; 0 turns this cache off). The next host allocation whose capacity is
// within a quarter above it takes it back (takeCachedBlock, device -1), with
// its pages still mapped: a program that calls kina_<fn> in a loop and
// frees each result does not pay, per call, the kernel's page faults and
// zeroing of a fresh result (7.5 ms of a 25 ms softmax over [4096, 4096] f32,
// docs/performance.md). Unlike managed blocks, any thread may reuse a host
// block at once. runtime_gpu_free_all and releaseCachedBlocks free them.

/// Host buffers from this many bytes on are cached.
inline constexpr int64_t kMinCachedHostBytes = int64_t(4) << 20;

/// The capacity of a host buffer of `bytes`: 0 below kMinCachedHostBytes
/// (not cached), else `bytes` rounded up to 2 MiB.
int64_t hostCapacity(int64_t bytes) noexcept;

/// Takes a cached block of `device` (-1: a host block) whose capacity is
/// between `capacity` and capacity + capacity / 4 and that the calling
/// thread may use, records it as live with `bytes` and returns it; null when there is
/// none. `hostTouched` says whether it was freed outside a kina_<fn> call
/// (a result the program may have read on the host: its pages may have
/// migrated there). Throws nothing.
void *takeCachedBlock(int32_t device, int64_t capacity, int64_t bytes,
                      bool &hostTouched) noexcept;

/// Frees (cuMemFree, or the host allocator's release) every cached block no
/// thread's running call holds; returns the bytes given back. For an
/// allocation the driver or the system refused.
int64_t releaseCachedBlocks() noexcept;

/// Makes the blocks the calling thread freed during its call available to
/// every thread (kina_rt_gpu_exit, after synchronising the call's stream).
void publishDeferredBlocks() noexcept;

/// Whether `pointer` is the `allocated` pointer of a live (recorded, not
/// freed or cached) managed buffer of the runtime. Such a buffer is CUDA
/// managed memory every device can read, so kina_rt_gpu_check_argument
/// accepts it without asking the driver; a pointer the runtime freed (or
/// runtime_gpu_free_all released) is no longer recorded, so memory another
/// allocator hands out at the same address later is asked about again.
/// Thread-safe; never throws.
bool isLiveManagedBuffer(const void *pointer) noexcept;

/// Number and total capacity of the cached (free, not yet reused) blocks.
struct CacheStats {
  int64_t blocks = 0;
  int64_t bytes = 0;
};
CacheStats cacheStats() noexcept;

/// Fault injection for the runtime's own tests (tests/runtime): the host
/// allocator and deallocator the runtime uses, std::aligned_alloc and
/// std::free by default. A test installs functions that count calls or
/// refuse the Nth allocation (so "the system refuses" is deterministic, and
/// "nothing was allocated" can be checked). Not part of the C ABI; not to be
/// changed while other threads allocate.
struct HostAllocator {
  void *(*allocate)(size_t alignment, size_t bytes);
  void (*release)(void *pointer);
};
/// Installs `allocator` (copied); null restores the defaults.
void setHostAllocatorForTesting(const HostAllocator *allocator);
/// The allocator in use.
HostAllocator hostAllocator();

/// Releases memory of the given kind (managed memory: on `device`) without
/// touching the registry. Returns 0, or 3 (recorded with a message naming
/// `where`) if cuMemFree failed. Never throws.
int32_t releaseMemory(void *pointer, BufferKind kind, int32_t device,
                      const char *where) noexcept;

} // namespace kina::rt

#endif // KINA_RUNTIME_REGISTRY_H
