//===- Allocation.cpp - Host and CUDA managed buffer allocation ----------===//
//
// The runtime's two allocation entry points, called by compiled code for every
// buffer it needs (spec, ABI, "Allocation"; the seed's
// runtime_gpu_alloc_unranked). Both read an unranked descriptor whose nested
// ranked descriptor carries the sizes, check them (rank 0..KINA_MAX_RANK,
// sizes >= 0, element_size > 0, no 64-bit overflow: status 1 before any
// allocation), allocate product(sizes) * element_size bytes (host: 64-byte
// aligned std::aligned_alloc, from 4 MiB on 2 MiB boundaries marked for
// transparent huge pages, Registry.cpp, and those large blocks reused from
// the cache runtime_free keeps, Registry.h; CUDA: a cached block of the size
// class, else cuMemAllocManaged on the selected device, GpuMemory.h and
// Registry.h), record the buffer in the registry and write allocated, aligned,
// offset 0 and row-major strides back into the ranked descriptor. On any
// failure the descriptor's pointers are null (when the descriptor is readable)
// and kina_last_error() says why.
//
//===----------------------------------------------------------------------===//
#include "GpuMemory.h"
#include "Guard.h"
#include "Registry.h"

#include "kina/runtime.h"

#include <cstddef>
#include <cstdlib>
#include <string>

namespace {

using kina::rt::BufferKind;
using kina::rt::fail;

// Every ranked descriptor starts with KinaMemRef0's fields; sizes and strides
// (rank of each) follow at the same offset for every rank.
constexpr size_t kSizesOffset = offsetof(KinaMemRef1, sizes);
static_assert(kSizesOffset == sizeof(KinaMemRef0),
              "ranked descriptors must share KinaMemRef0's layout");
static_assert(offsetof(KinaMemRef8, strides) == kSizesOffset + 8 * 8,
              "strides must follow sizes");

constexpr size_t kHostAlignment = 64;

int64_t *sizesOf(KinaMemRef0 *descriptor) {
  return reinterpret_cast<int64_t *>(reinterpret_cast<char *>(descriptor) +
                                     kSizesOffset);
}

/// Allocates `bytes` of 64-byte aligned host memory (at least 64 bytes, so
/// zero-element buffers get a valid non-null pointer). Returns 0 or 2.
int32_t allocateHost(const std::string &where, int64_t bytes, void *&result) {
  size_t rounded = (static_cast<size_t>(bytes) + kHostAlignment - 1) /
                   kHostAlignment * kHostAlignment;
  if (rounded == 0)
    rounded = kHostAlignment;
  result = kina::rt::hostAllocator().allocate(kHostAlignment, rounded);
  if (!result)
    return fail(KINA_STATUS_RESOURCE_ERROR, where + ": cannot allocate " +
                                                std::to_string(bytes) +
                                                " bytes of host memory");
  return KINA_STATUS_SUCCESS;
}

/// $KINA_GPU_PREFETCH: "1" also prefetches reused blocks that were freed
/// outside a call (read once; new blocks are always prefetched). Off by
/// default: on the H200 the prefetch of an already resident 256 MiB block
/// cost about 0.3 ms per call (bench/gpu, docs/performance.md), more than
/// a block the host never touched gains; a program that reads every
/// result on the host before freeing it may gain from it.
bool prefetchReused() {
  static const bool enabled = [] {
    const char *text = std::getenv("KINA_GPU_PREFETCH");
    return text && text[0] == '1' && !text[1];
  }();
  return enabled;
}

/// Managed memory for `bytes` on the selected device: a cached block of the
/// size class (Registry.h) when there is one, else a new one of the class's
/// capacity (after giving the cache back to CUDA if the driver refuses).
/// Either way recorded as live, and its pages asked onto the GPU when it is
/// new or the host may have touched it. Returns 0, or the allocation's
/// status (GpuMemory.h, allocateManaged).
/// `where` names the caller in messages; no string is built on the path of
/// a cached block (a steady-state call allocates nothing on the heap here).
int32_t allocateGpu(const char *where, int64_t bytes, void *&memory) {
  int32_t device = -1;
  int32_t status = kina::rt::gpu::selectedDevice(where, device);
  if (status != KINA_STATUS_SUCCESS)
    return status;
  int64_t capacity = kina::rt::managedCapacity(bytes);
  bool hostTouched = false;
  memory = kina::rt::takeCachedBlock(device, capacity, bytes, hostTouched);
  if (memory) {
    if (hostTouched && prefetchReused())
      kina::rt::gpu::prefetchToCallDevice(memory, bytes);
    return KINA_STATUS_SUCCESS;
  }
  std::string prefix = where;
  status = kina::rt::gpu::allocateManaged(prefix, capacity, memory, device);
  if (status == KINA_STATUS_RESOURCE_ERROR &&
      kina::rt::releaseCachedBlocks() > 0)
    status = kina::rt::gpu::allocateManaged(prefix, capacity, memory, device);
  if (status != KINA_STATUS_SUCCESS)
    return status;
  try {
    kina::rt::recordBuffer(memory, bytes, BufferKind::Managed, device,
                           capacity);
  } catch (...) {
    kina::rt::releaseMemory(memory, BufferKind::Managed, device, "allocate");
    memory = nullptr;
    throw; // The guard reports it (std::bad_alloc: status 2).
  }
  kina::rt::gpu::prefetchToCallDevice(memory, bytes);
  return KINA_STATUS_SUCCESS;
}

/// Writes `memory` (allocated and aligned), offset 0 and `strides` into a
/// ranked descriptor of `rank` whose `sizes` are already there. Returns 0.
int32_t fillDescriptor(KinaMemRef0 *descriptor, void *memory, int64_t *sizes,
                       const int64_t *strides, int64_t rank) {
  descriptor->allocated = memory;
  descriptor->aligned = memory;
  descriptor->offset = 0;
  for (int64_t dim = 0; dim < rank; ++dim)
    sizes[rank + dim] = strides[dim];
  return KINA_STATUS_SUCCESS;
}

/// The shared body of both allocation entry points.
int32_t allocate(const char *where, KinaUnrankedMemRef *out,
                 int32_t elementSize, BufferKind kind) {
  if (!out)
    return kina::rt::failIn(KINA_STATUS_VALIDATION_ERROR, where,
                            "null unranked descriptor");
  auto *descriptor = static_cast<KinaMemRef0 *>(out->descriptor);
  if (!descriptor)
    return kina::rt::failIn(KINA_STATUS_VALIDATION_ERROR, where,
                            "null ranked descriptor in the unranked one");
  descriptor->allocated = nullptr;
  descriptor->aligned = nullptr;
  // Built on the error paths only: a string is a heap allocation.
  auto prefix = [where] { return std::string(where); };
  int64_t rank = out->rank;
  if (rank < 0 || rank > KINA_MAX_RANK)
    return fail(KINA_STATUS_VALIDATION_ERROR,
                prefix() + ": rank " + std::to_string(rank) + " outside 0.." +
                    std::to_string(KINA_MAX_RANK));
  if (elementSize <= 0)
    return fail(KINA_STATUS_VALIDATION_ERROR, prefix() + ": element size " +
                                                  std::to_string(elementSize) +
                                                  " is not positive");

  // Row-major strides from the innermost dim out; `elements` ends as the
  // product of all sizes. Any overflow (also of a stride when an outer size
  // is 0) is rejected before allocating.
  int64_t *sizes = sizesOf(descriptor);
  int64_t strides[KINA_MAX_RANK];
  int64_t elements = 1;
  for (int64_t dim = rank - 1; dim >= 0; --dim) {
    if (sizes[dim] < 0)
      return fail(KINA_STATUS_VALIDATION_ERROR,
                  prefix() + ": size " + std::to_string(sizes[dim]) +
                      " of dim " + std::to_string(dim) + " is negative");
    strides[dim] = elements;
    if (__builtin_mul_overflow(elements, sizes[dim], &elements))
      return fail(KINA_STATUS_VALIDATION_ERROR,
                  prefix() + ": element count overflows 64 bits at dim " +
                      std::to_string(dim));
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(elements, static_cast<int64_t>(elementSize),
                             &bytes))
    return fail(KINA_STATUS_VALIDATION_ERROR,
                prefix() + ": byte count " + std::to_string(elements) + " x " +
                    std::to_string(elementSize) + " overflows 64 bits");

  void *memory = nullptr;
  int32_t device = -1;
  int32_t status = KINA_STATUS_SUCCESS;
  if (kind == BufferKind::Host) {
    // A large block: a cached one of its capacity when there is one
    // (Registry.h, "The cache of large host blocks"), already recorded.
    int64_t capacity = kina::rt::hostCapacity(bytes);
    bool hostTouched = false;
    if (capacity > 0 &&
        (memory = kina::rt::takeCachedBlock(-1, capacity, bytes, hostTouched)))
      return fillDescriptor(descriptor, memory, sizes, strides, rank);
    int64_t request = capacity > 0 ? capacity : bytes;
    status = allocateHost(prefix(), request, memory);
    if (status == KINA_STATUS_RESOURCE_ERROR &&
        kina::rt::releaseCachedBlocks() > 0)
      status = allocateHost(prefix(), request, memory);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    try {
      kina::rt::recordBuffer(memory, bytes, kind, device, capacity);
    } catch (...) {
      kina::rt::releaseMemory(memory, kind, device, where);
      throw; // The guard reports it (std::bad_alloc: status 2).
    }
  } else {
    status = allocateGpu(where, bytes, memory);
    if (status != KINA_STATUS_SUCCESS)
      return status;
  }
  return fillDescriptor(descriptor, memory, sizes, strides, rank);
}

} // namespace

extern "C" {

int32_t _mlir_ciface_runtime_gpu_alloc_unranked(KinaUnrankedMemRef *out,
                                                int32_t element_size) {
  const char *where = "runtime_gpu_alloc_unranked";
  return kina::rt::guardStatus(where, [&] {
    return allocate(where, out, element_size, BufferKind::Managed);
  });
}

int32_t _mlir_ciface_runtime_host_alloc_unranked(KinaUnrankedMemRef *out,
                                                 int32_t element_size) {
  const char *where = "runtime_host_alloc_unranked";
  return kina::rt::guardStatus(where, [&] {
    return allocate(where, out, element_size, BufferKind::Host);
  });
}

} // extern "C"
