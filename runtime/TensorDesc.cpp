//===- TensorDesc.cpp - The runtime half of the kinatd_<fn> entries -------===//
//
// The generated TensorDesc entry `kinatd_<fn>` (kina/abi.h,
// src/passes/TensorDescEntryPoints.cpp) is a thin frame around the status
// entry `kina_<fn>`: it calls kina_rt_td_prepare, which validates the
// caller's KinaTensorDesc descriptors against a table of element codes and
// ranks and builds one memref descriptor per input (the caller's memory
// when it is row-major contiguous, else a contiguous runtime copy of the
// strided view), then `kina_<fn>` on those descriptors, then
// kina_rt_td_finish, which maps the entry's status to the seed's codes,
// checks each result's shape against the caller's output descriptor,
// copies the result into it (any strides) and then releases every buffer
// the runtime allocated for the call (results, then argument copies: a
// result may be an argument's buffer when a function returns a parameter). Nothing the caller owns is freed. Since
// the results are complete before the first output is written, an output
// may alias any input.
//
//===----------------------------------------------------------------------===//
#include "Guard.h"

#include "kina/runtime.h"

#include <cstring>
#include <string>

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

/// True when `d` is row-major contiguous (strides of size-1 dims ignored).
bool contiguous(const KinaTensorDesc *d, int64_t elements) {
  if (elements == 0)
    return true;
  int64_t expected = 1;
  for (int32_t i = d->ndim - 1; i >= 0; --i) {
    if (d->shape[i] != 1 && d->strides[i] != expected)
      return false;
    expected *= d->shape[i];
  }
  return true;
}

/// Copies a `rank`-dim array of `size`-byte elements between two strided
/// layouts (strides in elements, any sign).
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

/// The byte range [lo, hi) an output descriptor can touch.
void byteRange(const KinaTensorDesc *d, int64_t size, uint64_t &lo,
               uint64_t &hi) {
  int64_t first = 0, last = 0;
  for (int32_t i = 0; i < d->ndim; ++i) {
    int64_t span = (d->shape[i] - 1) * d->strides[i];
    (span < 0 ? first : last) += span;
  }
  lo = d->ptr + static_cast<uint64_t>(first * size);
  hi = d->ptr + static_cast<uint64_t>((last + 1) * size);
}

/// Frees the input copies prepare made (slots whose buffer is not the
/// caller's).
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

} // namespace

extern "C" int32_t kina_rt_td_prepare(const char *entry, const int32_t *t,
                                      const KinaTensorDesc *const *outs,
                                      const KinaTensorDesc *const *ins,
                                      void *scratch) {
  kina_rt_begin_call();
  Table table{t};
  auto *slots = static_cast<Slot *>(scratch);
  std::memset(slots, 0, sizeof(Slot) * (table.numResults() + table.numArgs()));
  // Outputs: descriptors, self-overlap, overlap with each other.
  for (int32_t i = 0; i < table.numResults(); ++i) {
    const KinaTensorDesc *d = outs[i];
    int64_t elements = 0;
    std::string name = where(entry, true, i);
    if (int32_t rc =
            checkDescriptor(name, d, table.dtype(i), table.rank(i), elements))
      return rc;
    for (int32_t k = 0; k < d->ndim; ++k)
      if (d->shape[k] > 1 && d->strides[k] == 0)
        return fail(KINA_TD_OVERLAPPING_OUTPUT,
                    name + " dim " + std::to_string(k) +
                        " has stride 0: its elements overlap");
    if (elements == 0)
      continue;
    uint64_t lo, hi;
    byteRange(d, elementSize(d->dtype), lo, hi);
    for (int32_t j = 0; j < i; ++j) {
      const KinaTensorDesc *o = outs[j];
      int64_t n = 1;
      for (int32_t k = 0; k < o->ndim; ++k)
        n *= o->shape[k];
      if (n == 0)
        continue;
      uint64_t olo, ohi;
      byteRange(o, elementSize(o->dtype), olo, ohi);
      if (lo < ohi && olo < hi)
        return fail(KINA_TD_OVERLAPPING_OUTPUT,
                    name + " overlaps output " + std::to_string(j));
    }
  }
  // Inputs: the caller's memory when contiguous, else a contiguous copy.
  for (int32_t i = 0; i < table.numArgs(); ++i) {
    const KinaTensorDesc *d = ins[i];
    int32_t rank = table.rank(table.numResults() + i);
    int64_t elements = 0;
    std::string name = where(entry, false, i);
    int32_t rc = checkDescriptor(name, d, table.dtype(table.numResults() + i),
                                 rank, elements);
    if (rc) {
      releaseInputs(table, ins, slots, i);
      return rc;
    }
    Slot &slot = slots[table.numResults() + i];
    int64_t *sizes = slot.words;
    int64_t *strides = slot.words + rank;
    int64_t stride = 1;
    for (int32_t k = rank - 1; k >= 0; --k) {
      sizes[k] = d->shape[k];
      strides[k] = stride;
      stride *= d->shape[k];
    }
    if (contiguous(d, elements)) {
      slot.allocated = slot.aligned = reinterpret_cast<void *>(d->ptr);
      continue;
    }
    // The allocator reads the packed layout of KinaMemRef<rank>.
    Slot packed{};
    std::memcpy(packed.words, d->shape, sizeof(int64_t) * rank);
    KinaUnrankedMemRef unranked{rank, &packed};
    int64_t size = elementSize(d->dtype);
    if (_mlir_ciface_runtime_host_alloc_unranked(
            &unranked, static_cast<int32_t>(size)) != KINA_STATUS_SUCCESS) {
      releaseInputs(table, ins, slots, i);
      return fail(KINA_TD_ALLOCATION_FAILED,
                  name + ": " + std::string(kina_last_error()));
    }
    slot.allocated = packed.allocated;
    slot.aligned = packed.aligned;
    stridedCopy(static_cast<char *>(slot.aligned), strides,
                reinterpret_cast<const char *>(d->ptr), d->strides, d->shape,
                rank, size);
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
    releaseInputs(table, ins, slots, table.numArgs());
    std::string message = kina_last_error();
    int32_t code =
        status == KINA_STATUS_VALIDATION_ERROR ? KINA_TD_SHAPE_MISMATCH
        : status == KINA_STATUS_RESOURCE_ERROR ? KINA_TD_ALLOCATION_FAILED
                                               : KINA_TD_LAUNCH_ERROR;
    return fail(code, message);
  }
  int32_t rc = KINA_TD_OK;
  for (int32_t i = 0; i < table.numResults() && rc == KINA_TD_OK; ++i) {
    const KinaTensorDesc *d = outs[i];
    const Slot &slot = slots[i];
    int32_t rank = table.rank(i);
    const int64_t *sizes = slot.words;
    const int64_t *strides = slot.words + rank;
    for (int32_t k = 0; k < rank; ++k)
      if (d->shape[k] != sizes[k]) {
        rc = fail(KINA_TD_SHAPE_MISMATCH,
                  where(entry, true, i) + " dim " + std::to_string(k) +
                      " has size " + std::to_string(d->shape[k]) +
                      ", but the result's is " + std::to_string(sizes[k]));
        break;
      }
    if (rc != KINA_TD_OK)
      break;
    int64_t size = elementSize(d->dtype);
    stridedCopy(reinterpret_cast<char *>(d->ptr), d->strides,
                static_cast<const char *>(slot.aligned) + slot.offset * size,
                strides, d->shape, rank, size);
  }
  // Release every result buffer once (two results may share one); a
  // result that is an argument's buffer (a function returning its
  // parameter) is the caller's or an argument copy, released below.
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
  releaseInputs(table, ins, slots, table.numArgs());
  return rc;
}
