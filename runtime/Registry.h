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
void recordBuffer(void *pointer, int64_t bytes, BufferKind kind,
                  int32_t device);

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
