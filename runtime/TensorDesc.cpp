//===- TensorDesc.cpp - The runtime half of the kinatd_<fn> entries -------===//
//
// The generated TensorDesc entry `kinatd_<fn>` (kina/abi.h,
// src/passes/TensorDescEntryPoints.cpp) is a thin frame around the status
// entry `kina_<fn>`: it calls kina_rt_td_prepare, which validates the
// caller's KinaTensorDesc descriptors against a table of element codes and
// ranks and builds one memref descriptor per input (the caller's memory
// when it is row-major contiguous and no output overlaps it, else a
// contiguous runtime copy of the view), then `kina_<fn>` on those
// descriptors, then kina_rt_td_finish, which maps the entry's status to the
// seed's codes, checks each result's shape against the caller's output
// descriptor, copies the result into it (any strides) and then releases
// every buffer the runtime allocated for the call (results, then argument
// copies: a result may be an argument's buffer when a function returns a
// parameter). Nothing the caller owns is freed. Since the results are
// complete before the first output is written and no result reads memory
// an output overlaps (such an input was copied), an output may alias any
// input.
//
// The cuda target's entries use kina_rt_td_gpu_prepare / _finish (below),
// the same steps on the caller's device and stream: views are gathered into
// runtime buffers and results scattered into strided outputs by the
// runtime's strided-copy kernel (GpuStrided.h), contiguous results copied
// with cuMemcpyAsync, all queued on that stream.
//
//===----------------------------------------------------------------------===//
#include "CudaDriver.h"
#include "GpuStrided.h"
#include "Guard.h"

#include "kina/runtime.h"

#include <cstring>
#include <string>
#include <vector>

namespace {

using kina::rt::fail;

/// One scratch slot: a memref descriptor of rank <= KINA_TD_MAX_RANK, in
/// the packed layout of KinaMemRef<rank> (sizes[rank] then strides[rank]).
struct Slot {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t words[2 * KINA_TD_MAX_RANK];
};
static_assert(sizeof(Slot) == sizeof(KinaMemRef4), "slot of KinaMemRef4 size");

/// Bytes per element of a dtype code, or 0 for an unknown code.
int64_t elementSize(int32_t dtype) {
  switch (dtype) {
  case KINA_TD_DTYPE_F32:
  case KINA_TD_DTYPE_I32:
    return 4;
  case KINA_TD_DTYPE_F16:
  case KINA_TD_DTYPE_BF16:
    return 2;
  case KINA_TD_DTYPE_I64:
  case KINA_TD_DTYPE_F64:
    return 8;
  case KINA_TD_DTYPE_I8:
  case KINA_TD_DTYPE_I1:
    return 1;
  default:
    return 0;
  }
}

const char *dtypeName(int32_t dtype) {
  static const char *const names[] = {"f32", "f16", "bf16", "i32",
                                      "i64", "f64", "i8",   "i1"};
  return dtype >= 0 && dtype <= 7 ? names[dtype] : "?";
}

/// The table the pass emits: [numResults, numArgs, then (dtype, rank) for
/// each result, then for each argument].
struct Table {
  const int32_t *t;
  int32_t numResults() const { return t[0]; }
  int32_t numArgs() const { return t[1]; }
  int32_t dtype(int32_t tensor) const { return t[2 + 2 * tensor]; }
  int32_t rank(int32_t tensor) const { return t[3 + 2 * tensor]; }
};

/// "<entry>: output 0" or "<entry>: input 1".
std::string where(const char *entry, bool output, int32_t index) {
  return std::string(entry ? entry : "kinatd_?") +
         (output ? ": output " : ": input ") + std::to_string(index);
}

/// Checks one descriptor against its dtype code and rank. Returns 0 or a
/// KINA_TD_* code (recorded with a message).
int32_t checkDescriptor(const std::string &name, const KinaTensorDesc *d,
                        int32_t dtype, int32_t rank, int64_t &elements) {
  if (!d)
    return fail(KINA_TD_NULL_DESCRIPTOR, name + ": null KinaTensorDesc");
  if (elementSize(d->dtype) == 0)
    return fail(KINA_TD_UNSUPPORTED_DTYPE,
                name + ": unknown dtype code " + std::to_string(d->dtype));
  if (d->dtype != dtype)
    return fail(KINA_TD_UNSUPPORTED_DTYPE,
                name + " has dtype " + dtypeName(d->dtype) + ", expected " +
                    dtypeName(dtype));
  if (d->ndim < 0 || d->ndim > KINA_TD_MAX_RANK)
    return fail(KINA_TD_SHAPE_MISMATCH,
                name + ": ndim " + std::to_string(d->ndim) + " outside 0.." +
                    std::to_string(KINA_TD_MAX_RANK));
  if (d->ndim != rank)
    return fail(KINA_TD_SHAPE_MISMATCH,
                name + " has ndim " + std::to_string(d->ndim) + ", expected " +
                    std::to_string(rank));
  elements = 1;
  for (int32_t i = 0; i < rank; ++i) {
    if (d->shape[i] < 0)
      return fail(KINA_TD_SHAPE_MISMATCH, name + " dim " + std::to_string(i) +
                                              " has negative size " +
                                              std::to_string(d->shape[i]));
    if (__builtin_mul_overflow(elements, d->shape[i], &elements))
      return fail(KINA_TD_SHAPE_MISMATCH,
                  name + ": the element count overflows 64 bits");
  }
  if (elements > 0 && d->ptr == 0)
    return fail(KINA_TD_NULL_DESCRIPTOR, name + " has a null data pointer");
  return KINA_TD_OK;
}

/// True when a `rank`-dim layout of `shape` with `strides` (elements) is
/// row-major contiguous (strides of size-1 dims ignored; an empty array
/// always is).
bool rowMajor(int32_t rank, const int64_t *shape, const int64_t *strides) {
  int64_t expected = 1;
  for (int32_t i = rank - 1; i >= 0; --i) {
    if (shape[i] == 0)
      return true;
    if (shape[i] != 1 && strides[i] != expected)
      return false;
    expected *= shape[i];
  }
  return true;
}

bool contiguous(const KinaTensorDesc *d, int64_t elements) {
  return elements == 0 || rowMajor(d->ndim, d->shape, d->strides);
}

/// Copies a `rank`-dim array of `size`-byte elements between two strided
/// layouts (strides in elements, any sign), on the host.
void stridedCopy(char *dst, const int64_t *dstStrides, const char *src,
                 const int64_t *srcStrides, const int64_t *shape, int32_t rank,
                 int64_t size) {
  if (rank == 0) {
    std::memcpy(dst, src, static_cast<size_t>(size));
    return;
  }
  for (int64_t i = 0; i < shape[0]; ++i)
    stridedCopy(dst + i * dstStrides[0] * size, dstStrides + 1,
                src + i * srcStrides[0] * size, srcStrides + 1, shape + 1,
                rank - 1, size);
}

/// The byte range [lo, hi) a descriptor with elements can touch.
void byteRange(const KinaTensorDesc *d, uint64_t &lo, uint64_t &hi) {
  int64_t size = elementSize(d->dtype);
  int64_t first = 0, last = 0;
  for (int32_t i = 0; i < d->ndim; ++i) {
    int64_t span = (d->shape[i] - 1) * d->strides[i];
    (span < 0 ? first : last) += span;
  }
  lo = d->ptr + static_cast<uint64_t>(first * size);
  hi = d->ptr + static_cast<uint64_t>((last + 1) * size);
}

/// Whether the bytes of two descriptors with elements may overlap.
bool overlap(const KinaTensorDesc *a, const KinaTensorDesc *b) {
  uint64_t alo, ahi, blo, bhi;
  byteRange(a, alo, ahi);
  byteRange(b, blo, bhi);
  return alo < bhi && blo < ahi;
}

/// Checks every descriptor of a call against the table (checkDescriptor),
/// and that no output's elements overlap each other (a stride 0 on a dim of
/// size > 1) nor another output's memory. Sets `elements` to each tensor's
/// element count, results first. Returns 0 or a KINA_TD_* code (recorded
/// with a message); nothing is allocated.
int32_t checkTensors(const char *entry, Table table,
                     const KinaTensorDesc *const *outs,
                     const KinaTensorDesc *const *ins,
                     std::vector<int64_t> &elements) {
  int32_t results = table.numResults();
  elements.assign(results + table.numArgs(), 0);
  for (int32_t i = 0; i < results; ++i) {
    const KinaTensorDesc *d = outs[i];
    std::string name = where(entry, true, i);
    if (int32_t rc = checkDescriptor(name, d, table.dtype(i), table.rank(i),
                                     elements[i]))
      return rc;
    for (int32_t k = 0; k < d->ndim; ++k)
      if (d->shape[k] > 1 && d->strides[k] == 0)
        return fail(KINA_TD_OVERLAPPING_OUTPUT,
                    name + " dim " + std::to_string(k) +
                        " has stride 0: its elements overlap");
    for (int32_t j = 0; j < i && elements[i] > 0; ++j)
      if (elements[j] > 0 && overlap(d, outs[j]))
        return fail(KINA_TD_OVERLAPPING_OUTPUT,
                    name + " overlaps output " + std::to_string(j));
  }
  for (int32_t i = 0; i < table.numArgs(); ++i)
    if (int32_t rc = checkDescriptor(
            where(entry, false, i), ins[i], table.dtype(results + i),
            table.rank(results + i), elements[results + i]))
      return rc;
  return KINA_TD_OK;
}

/// Frees the input copies prepare made (slots whose buffer is not the
/// caller's); may be called again (a freed slot is cleared).
void releaseInputs(Table table, const KinaTensorDesc *const *ins, Slot *slots,
                   int32_t upTo) {
  for (int32_t i = 0; i < upTo; ++i) {
    Slot &slot = slots[table.numResults() + i];
    if (slot.allocated &&
        slot.allocated != reinterpret_cast<void *>(ins[i]->ptr))
      runtime_free(slot.allocated);
    slot.allocated = nullptr;
  }
}

/// Frees each result buffer of a finished call once (two results may share
/// one), never one that is an argument's: the caller's memory or an argument
/// copy, which releaseInputs releases.
void releaseResults(Table table, Slot *slots) {
  for (int32_t i = 0; i < table.numResults(); ++i) {
    void *allocated = slots[i].allocated;
    bool skip = allocated == nullptr;
    for (int32_t j = 0; j < i && !skip; ++j)
      skip = slots[j].allocated == allocated;
    for (int32_t j = 0; j < table.numArgs() && !skip; ++j)
      skip = slots[table.numResults() + j].allocated == allocated;
    if (!skip)
      runtime_free(allocated);
  }
  // Cleared only now: the loop above compares each result with the earlier
  // ones, which must still name their buffers.
  for (int32_t i = 0; i < table.numResults(); ++i)
    slots[i].allocated = nullptr;
}

/// A runtime status (1: validation, 2: out of memory, others: 3 GPU, 5
/// internal, ...) as a KINA_TD_* code; KINA_TD_* codes (<= 0) pass
/// unchanged.
int32_t tdCode(int32_t status) {
  if (status <= 0)
    return status;
  return status == KINA_STATUS_VALIDATION_ERROR ? KINA_TD_SHAPE_MISMATCH
         : status == KINA_STATUS_RESOURCE_ERROR ? KINA_TD_ALLOCATION_FAILED
                                                : KINA_TD_LAUNCH_ERROR;
}

/// Fills the argument slots after checkTensors: input i is used in place
/// when it is row-major contiguous and no output overlaps it; otherwise it
/// is copied into a contiguous runtime buffer (an output that aliases an
/// input then never changes what a result is read from, even when the
/// function returns that input). `gpu`: the buffer comes from the GPU of the
/// open call frame (runtime_gpu_alloc_unranked) and is filled by the
/// strided-copy kernel on the frame's stream; else host memory filled here.
/// Returns 0, or a KINA_TD_* code (-7: allocation, -3: the copy's launch)
/// with every copy made so far released.
int32_t fillArguments(const char *entry, Table table,
                      const KinaTensorDesc *const *outs,
                      const KinaTensorDesc *const *ins,
                      const std::vector<int64_t> &elements, Slot *slots,
                      bool gpu) {
  int32_t results = table.numResults();
  for (int32_t i = 0; i < table.numArgs(); ++i) {
    const KinaTensorDesc *d = ins[i];
    int32_t rank = table.rank(results + i);
    Slot &slot = slots[results + i];
    int64_t *strides = slot.words + rank;
    int64_t stride = 1;
    for (int32_t k = rank - 1; k >= 0; --k) {
      slot.words[k] = d->shape[k];
      strides[k] = stride;
      stride *= d->shape[k];
    }
    bool aliased = false;
    for (int32_t j = 0; j < results && elements[results + i] > 0; ++j)
      aliased = aliased || (elements[j] > 0 && overlap(d, outs[j]));
    if (!aliased && contiguous(d, elements[results + i])) {
      slot.allocated = slot.aligned = reinterpret_cast<void *>(d->ptr);
      continue;
    }
    // The allocators read the packed layout of KinaMemRef<rank>.
    Slot packed{};
    std::memcpy(packed.words, d->shape, sizeof(int64_t) * rank);
    KinaUnrankedMemRef unranked{rank, &packed};
    int64_t size = elementSize(d->dtype);
    int32_t status = gpu ? _mlir_ciface_runtime_gpu_alloc_unranked(
                               &unranked, static_cast<int32_t>(size))
                         : _mlir_ciface_runtime_host_alloc_unranked(
                               &unranked, static_cast<int32_t>(size));
    std::string name = where(entry, false, i);
    if (status != KINA_STATUS_SUCCESS) {
      std::string message = name + ": " + kina_last_error();
      releaseInputs(table, ins, slots, i);
      return fail(tdCode(status), message);
    }
    slot.allocated = packed.allocated;
    slot.aligned = packed.aligned;
    if (!gpu) {
      stridedCopy(static_cast<char *>(slot.aligned), strides,
                  reinterpret_cast<const char *>(d->ptr), d->strides, d->shape,
                  rank, size);
      continue;
    }
    status = kina::rt::gpu::stridedCopy(name.c_str(), slot.aligned, strides,
                                        reinterpret_cast<const void *>(d->ptr),
                                        d->strides, d->shape, rank, size);
    if (status != KINA_STATUS_SUCCESS) {
      std::string message = kina_last_error();
      releaseInputs(table, ins, slots, i + 1);
      return fail(tdCode(status), message);
    }
  }
  return KINA_TD_OK;
}

/// Checks output `i`'s shape against the result in `slot` (-6 naming the
/// first differing dim). Returns 0 or the recorded code.
int32_t checkResultShape(const char *entry, int32_t i, const KinaTensorDesc *d,
                         const Slot &slot, int32_t rank) {
  for (int32_t k = 0; k < rank; ++k)
    if (d->shape[k] != slot.words[k])
      return fail(KINA_TD_SHAPE_MISMATCH,
                  where(entry, true, i) + " dim " + std::to_string(k) +
                      " has size " + std::to_string(d->shape[k]) +
                      ", but the result's is " + std::to_string(slot.words[k]));
  return KINA_TD_OK;
}

/// The KINA_TD_* code of a failed `kina_<fn>` status, keeping its message.
int32_t entryFailure(int32_t status) {
  std::string message = kina_last_error();
  return fail(tdCode(status), message);
}

} // namespace

extern "C" int32_t kina_rt_td_prepare(const char *entry, const int32_t *t,
                                      const KinaTensorDesc *const *outs,
                                      const KinaTensorDesc *const *ins,
                                      void *scratch) {
  kina_rt_begin_call();
  Table table{t};
  auto *slots = static_cast<Slot *>(scratch);
  std::memset(slots, 0, sizeof(Slot) * (table.numResults() + table.numArgs()));
  int32_t rc = kina::rt::guardStatus(entry ? entry : "kinatd_?", [&] {
    std::vector<int64_t> elements;
    if (int32_t rc = checkTensors(entry, table, outs, ins, elements))
      return rc;
    return fillArguments(entry, table, outs, ins, elements, slots, false);
  });
  if (rc != KINA_TD_OK) { // Also after an exception: nothing stays.
    std::string message = kina_last_error();
    releaseInputs(table, ins, slots, table.numArgs());
    return fail(tdCode(rc), message);
  }
  return KINA_TD_OK;
}

extern "C" int32_t kina_rt_td_finish(const char *entry, const int32_t *t,
                                     const KinaTensorDesc *const *outs,
                                     const KinaTensorDesc *const *ins,
                                     void *scratch, int32_t status) {
  Table table{t};
  auto *slots = static_cast<Slot *>(scratch);
  if (status != KINA_STATUS_SUCCESS) {
    int32_t code = entryFailure(status);
    releaseInputs(table, ins, slots, table.numArgs());
    return code;
  }
  int32_t rc = KINA_TD_OK;
  for (int32_t i = 0; i < table.numResults() && rc == KINA_TD_OK; ++i) {
    const KinaTensorDesc *d = outs[i];
    const Slot &slot = slots[i];
    int32_t rank = table.rank(i);
    rc = checkResultShape(entry, i, d, slot, rank);
    if (rc != KINA_TD_OK)
      break;
    int64_t size = elementSize(d->dtype);
    stridedCopy(reinterpret_cast<char *>(d->ptr), d->strides,
                static_cast<const char *>(slot.aligned) + slot.offset * size,
                slot.words + rank, d->shape, rank, size);
  }
  releaseResults(table, slots);
  releaseInputs(table, ins, slots, table.numArgs());
  return rc;
}

// --- The cuda target's entries ---------------------------------------------
//
// kina_rt_td_gpu_prepare / kina_rt_td_gpu_finish frame `kina_<fn>` of a cuda
// object the same way, on the caller's device and stream: the descriptors
// are checked first (no GPU needed), then the frame is opened on that
// device (its primary context current, the caller's restored at the end)
// and stream, every tensor must be memory that device reads, strided or
// aliased inputs are gathered into runtime buffers of that device by the
// strided-copy kernel, and each result is written into its output with
// cuMemcpyAsync (both contiguous) or the kernel (any strides), all queued on
// the caller's stream. kina_rt_gpu_exit then synchronises that stream only,
// and the runtime's buffers are released after it.

namespace {

/// Checks that the GPU of the frame's device can read a tensor of a cuda
/// entry (kina_rt_gpu_check_argument); `label` is "out0", "in1", ...
int32_t checkGpuTensor(const char *entry, const KinaTensorDesc *d,
                       int64_t elements, const std::string &label) {
  if (elements == 0)
    return KINA_TD_OK;
  if (kina_rt_gpu_check_argument(reinterpret_cast<const void *>(d->ptr), entry,
                                 label.c_str()) != KINA_STATUS_SUCCESS)
    return fail(KINA_TD_DEVICE_ERROR, kina_last_error());
  return KINA_TD_OK;
}

/// Writes every result of a successful cuda call into its output on
/// `stream` (the frame is open). Returns 0 or a KINA_TD_* code.
int32_t writeGpuResults(const char *entry, Table table,
                        const KinaTensorDesc *const *outs, const Slot *slots,
                        CUstream stream) {
  const kina::rt::cuda::Driver *driver = nullptr;
  if (kina::rt::cuda::loadDriver(entry ? entry : "kinatd_?", driver) !=
      KINA_STATUS_SUCCESS)
    return fail(KINA_TD_LAUNCH_ERROR, kina_last_error());
  for (int32_t i = 0; i < table.numResults(); ++i) {
    const KinaTensorDesc *d = outs[i];
    const Slot &slot = slots[i];
    int32_t rank = table.rank(i);
    if (int32_t rc = checkResultShape(entry, i, d, slot, rank))
      return rc;
    int64_t elements = 1;
    for (int32_t k = 0; k < rank; ++k)
      elements *= d->shape[k];
    if (elements == 0)
      continue;
    int64_t size = elementSize(d->dtype);
    const int64_t *strides = slot.words + rank;
    auto source = reinterpret_cast<uintptr_t>(slot.aligned) +
                  static_cast<uintptr_t>(slot.offset * size);
    std::string name = where(entry, true, i);
    if (contiguous(d, elements) && rowMajor(rank, d->shape, strides)) {
      CUresult result = driver->api.cuMemcpyAsync(
          static_cast<CUdeviceptr>(d->ptr), static_cast<CUdeviceptr>(source),
          static_cast<size_t>(elements * size), stream);
      if (result != CUDA_SUCCESS)
        return fail(KINA_TD_LAUNCH_ERROR,
                    name +
                        ": cuMemcpyAsync of the result on the caller's "
                        "stream failed: " +
                        kina::rt::cuda::describeResult(&driver->api, result));
      continue;
    }
    int32_t status = kina::rt::gpu::stridedCopy(
        name.c_str(), reinterpret_cast<void *>(d->ptr), d->strides,
        reinterpret_cast<const void *>(source), strides, d->shape, rank, size);
    if (status != KINA_STATUS_SUCCESS)
      return fail(tdCode(status), kina_last_error());
  }
  return KINA_TD_OK;
}

} // namespace

extern "C" int32_t kina_rt_td_gpu_prepare(const char *entry, const int32_t *t,
                                          const KinaTensorDesc *const *outs,
                                          const KinaTensorDesc *const *ins,
                                          void *scratch, int32_t device_id,
                                          uint64_t raw_stream) {
  kina_rt_begin_call();
  Table table{t};
  auto *slots = static_cast<Slot *>(scratch);
  std::memset(slots, 0, sizeof(Slot) * (table.numResults() + table.numArgs()));
  bool entered = false;
  int32_t rc = kina::rt::guardStatus(entry ? entry : "kinatd_?", [&] {
    // Descriptors first (no GPU needed), as on the cpu.
    std::vector<int64_t> elements;
    if (int32_t rc = checkTensors(entry, table, outs, ins, elements))
      return rc;
    // The caller's device and stream, then what that device can read.
    int32_t device = device_id > 0 ? device_id : 0;
    if (kina_rt_gpu_enter_stream(device, raw_stream) != KINA_STATUS_SUCCESS)
      return fail(KINA_TD_DEVICE_ERROR, kina_last_error());
    entered = true;
    int32_t total = table.numResults() + table.numArgs();
    for (int32_t i = 0; i < total; ++i) {
      bool output = i < table.numResults();
      int32_t index = output ? i : i - table.numResults();
      const KinaTensorDesc *d = output ? outs[index] : ins[index];
      std::string label = (output ? "out" : "in") + std::to_string(index);
      if (int32_t rc = checkGpuTensor(entry, d, elements[i], label))
        return rc;
    }
    return fillArguments(entry, table, outs, ins, elements, slots, true);
  });
  if (rc == KINA_TD_OK)
    return KINA_TD_OK;
  // Close the frame (its stream synchronised: no copy still reads or
  // writes a buffer), then release; the first error stands.
  std::string message = kina_last_error();
  if (entered)
    (void)kina_rt_gpu_exit();
  releaseInputs(table, ins, slots, table.numArgs());
  return fail(tdCode(rc), message);
}

extern "C" int32_t kina_rt_td_gpu_finish(const char *entry, const int32_t *t,
                                         const KinaTensorDesc *const *outs,
                                         const KinaTensorDesc *const *ins,
                                         void *scratch, int32_t status,
                                         int32_t /*device_id*/,
                                         uint64_t raw_stream) {
  Table table{t};
  auto *slots = static_cast<Slot *>(scratch);
  int32_t rc = KINA_TD_OK;
  if (status != KINA_STATUS_SUCCESS) {
    // kina_<fn> freed its results; keep its error.
    rc = entryFailure(status);
  } else {
    auto stream =
        reinterpret_cast<CUstream>(static_cast<uintptr_t>(raw_stream));
    rc = kina::rt::guardStatus(entry ? entry : "kinatd_?", [&] {
      return writeGpuResults(entry, table, outs, slots, stream);
    });
  }
  // Close the frame (synchronises the caller's stream only), then free.
  std::string message = rc != KINA_TD_OK ? kina_last_error() : "";
  if (kina_rt_gpu_exit() != KINA_STATUS_SUCCESS && rc == KINA_TD_OK) {
    rc = KINA_TD_LAUNCH_ERROR;
    message = kina_last_error();
  }
  if (status == KINA_STATUS_SUCCESS)
    releaseResults(table, slots);
  releaseInputs(table, ins, slots, table.numArgs());
  return rc == KINA_TD_OK ? KINA_TD_OK : fail(tdCode(rc), message);
}
