/*===- abi.h - The Kina C ABI: status codes, descriptors, runtime API ------===*
 *
 * The one definition of the C interface shared by libkina_runtime.a, the
 * code kinac generates, and the headers `kinac --emit=header` writes (which
 * embed this file's text verbatim, so a generated header is
 * self-contained). Described in full in the "ABI" section of the language
 * reference, docs/language.md. C99 and C++ compatible. Every
 * block sits behind one shared include guard, so this header, kina/runtime.h
 * and any number of generated headers can be included together.
 *
 * Element data is addressed through `void *`; an element of type i1 occupies
 * one byte (0 or 1), bf16 and f16 two bytes (raw bits).
 *
 *===----------------------------------------------------------------------===*/
#ifndef KINA_ABI_H_
#define KINA_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status codes (`FfiErrorCode`, int32_t) returned by every runtime function
 *  and every generated `kina_<fn>` entry point (spec, ABI). */
typedef int32_t FfiErrorCode;
#define KINA_STATUS_SUCCESS 0
#define KINA_STATUS_VALIDATION_ERROR 1
#define KINA_STATUS_RESOURCE_ERROR 2
#define KINA_STATUS_GPU_ERROR 3
#define KINA_STATUS_UNIMPLEMENTED_ERROR 4
#define KINA_STATUS_INTERNAL_ERROR 5
#define KINA_STATUS_TYPE_ERROR 6

/** Version of this ABI (the contract between kinac-generated code and
 *  libkina_runtime.a: descriptors, status codes, the runtime functions the
 *  generated code calls). Raised on every incompatible change. Each object
 *  kinac writes records the value it was compiled for; its `kina_<fn>`
 *  entries compare it with the runtime's on their first call
 *  (kina_rt_check_version in kina/runtime.h) and return 1 when they differ. */
#define KINA_ABI_VERSION 1

/** Largest tensor rank kinac accepts; KinaMemRef0..KinaMemRef8 exist. */
#define KINA_MAX_RANK 8

/** Ranked memref descriptor of rank 0, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef0 {
  void *allocated; /* start of the allocation: pass this to runtime_free */
  void *aligned;   /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;  /* in elements, from `aligned` */
} KinaMemRef0;

/** Ranked memref descriptor of rank 1, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef1 {
  void *allocated;    /* start of the allocation: pass this to runtime_free */
  void *aligned;      /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;     /* in elements, from `aligned` */
  int64_t sizes[1];   /* elements along each dim */
  int64_t strides[1]; /* in elements, not bytes */
} KinaMemRef1;

/** Ranked memref descriptor of rank 2, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef2 {
  void *allocated;    /* start of the allocation: pass this to runtime_free */
  void *aligned;      /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;     /* in elements, from `aligned` */
  int64_t sizes[2];   /* elements along each dim */
  int64_t strides[2]; /* in elements, not bytes */
} KinaMemRef2;

/** Ranked memref descriptor of rank 3, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef3 {
  void *allocated;    /* start of the allocation: pass this to runtime_free */
  void *aligned;      /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;     /* in elements, from `aligned` */
  int64_t sizes[3];   /* elements along each dim */
  int64_t strides[3]; /* in elements, not bytes */
} KinaMemRef3;

/** Ranked memref descriptor of rank 4, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef4 {
  void *allocated;    /* start of the allocation: pass this to runtime_free */
  void *aligned;      /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;     /* in elements, from `aligned` */
  int64_t sizes[4];   /* elements along each dim */
  int64_t strides[4]; /* in elements, not bytes */
} KinaMemRef4;

/** Ranked memref descriptor of rank 5, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef5 {
  void *allocated;    /* start of the allocation: pass this to runtime_free */
  void *aligned;      /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;     /* in elements, from `aligned` */
  int64_t sizes[5];   /* elements along each dim */
  int64_t strides[5]; /* in elements, not bytes */
} KinaMemRef5;

/** Ranked memref descriptor of rank 6, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef6 {
  void *allocated;    /* start of the allocation: pass this to runtime_free */
  void *aligned;      /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;     /* in elements, from `aligned` */
  int64_t sizes[6];   /* elements along each dim */
  int64_t strides[6]; /* in elements, not bytes */
} KinaMemRef6;

/** Ranked memref descriptor of rank 7, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef7 {
  void *allocated;    /* start of the allocation: pass this to runtime_free */
  void *aligned;      /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;     /* in elements, from `aligned` */
  int64_t sizes[7];   /* elements along each dim */
  int64_t strides[7]; /* in elements, not bytes */
} KinaMemRef7;

/** Ranked memref descriptor of rank 8, laid out as MLIR's LLVM lowering
 *  of `memref<...>` with identity layout (spec, ABI). */
typedef struct KinaMemRef8 {
  void *allocated;    /* start of the allocation: pass this to runtime_free */
  void *aligned;      /* first element (aligned to 64 bytes for kina buffers) */
  int64_t offset;     /* in elements, from `aligned` */
  int64_t sizes[8];   /* elements along each dim */
  int64_t strides[8]; /* in elements, not bytes */
} KinaMemRef8;

/** Unranked memref descriptor, the seed's `UnrankedMemRefDescriptor`:
 *  `descriptor` points at a KinaMemRef<rank>. The runtime rejects a rank
 *  outside 0..KINA_MAX_RANK (status 1), but cannot see a rank that differs
 *  from the struct's: like the rank of each `kina_<fn>` parameter, which is
 *  part of its C type (KinaMemRef<R>), it is the caller's to get right. */
typedef struct KinaUnrankedMemRef {
  int64_t rank;
  void *descriptor;
} KinaUnrankedMemRef;

/** Name of a status code ("Success", "Validation Error", ...); "Unknown
 *  Status" for any other value. Never null; static storage. */
const char *kina_status_name(int32_t status);

/** The calling thread's last error message ("" if none yet). Like errno,
 *  runtime functions set it when they fail and leave it as it is when they
 *  succeed (so the frees an entry point makes while unwinding keep the
 *  message of the failure that stopped it); each generated entry point
 *  `kina_<fn>` clears it on entry. Thread-local storage owned by the
 *  runtime, valid until the thread's next runtime call or generated
 *  entry-point call. Never null. */
const char *kina_last_error(void);

/** Frees one buffer the runtime allocated (a result of a compiled function,
 *  or a runtime allocation) and forgets it. `allocated` is the descriptor's
 *  `allocated` field. Host buffers are released with free(), CUDA managed
 *  ones with cuMemFree under the primary context of the device they were
 *  allocated on. Returns 0; 1 (Validation Error) if the pointer is not a
 *  recorded buffer (null included); 3 (GPU Error) if cuMemFree failed (the
 *  buffer is forgotten anyway; kina_last_error() names the CUDA error).
 *  Thread-safe. */
int32_t runtime_free(void *allocated);

/** Frees every buffer still recorded (host and CUDA managed, as
 *  runtime_free does) and empties the registry. Idempotent: a second call
 *  frees nothing and returns 0. Returns 3 if a cuMemFree failed (the buffer
 *  is forgotten anyway). Thread-safe. */
int32_t runtime_gpu_free_all(void);

/** CUDA target allocation (seed: runtime_gpu_alloc_unranked). `out->descriptor`
 *  is a KinaMemRef<out->rank> whose sizes are read; allocates
 *  product(sizes) * element_size bytes of CUDA managed memory
 *  (cuMemAllocManaged with CU_MEM_ATTACH_GLOBAL, under the primary context
 *  of the selected device: runtime_gpu_set_device, else $KINA_DEVICE, else
 *  0), writes `allocated` and `aligned`, sets offset 0 and row-major strides,
 *  and records the buffer. The CUDA driver (libcuda.so.1, or the library
 *  $KINA_CUDA_DRIVER names) is loaded with dlopen on the first GPU call of
 *  the process; nothing CUDA is linked. Returns 0; 1 on a null/invalid
 *  descriptor, a rank outside 0..KINA_MAX_RANK, a negative size,
 *  element_size <= 0 or a byte count that overflows 64 bits (nothing
 *  allocated, no CUDA call made), or an invalid $KINA_DEVICE; 2 when memory
 *  is refused (a request larger than the device's free memory is refused
 *  before cuMemAllocManaged is called, since asking for it can hang the
 *  GPU); 3 (GPU Error) when the driver is missing ("CUDA driver not found
 *  (libcuda.so.1: <dlerror>)"), sees no device ("no CUDA device"), the
 *  selected device does not exist, or any CUDA call fails (the message
 *  gives the CUDA error's name and text). On failure the pointers are set
 *  to null and kina_last_error() says why. Thread-safe. */
int32_t _mlir_ciface_runtime_gpu_alloc_unranked(KinaUnrankedMemRef *out,
                                                int32_t element_size);

/** CPU target allocation: as `_mlir_ciface_runtime_gpu_alloc_unranked`, but
 *  64-byte aligned host memory (never null, also for zero elements). Returns
 *  0, 1 (invalid descriptor or size overflow) or 2 (memory refused). */
int32_t _mlir_ciface_runtime_host_alloc_unranked(KinaUnrankedMemRef *out,
                                                 int32_t element_size);

/*===- The TensorDesc entry points (docs/python.md) -----------------------===*
 *
 * Besides `kina_<fn>`, every exported function `@fn` has a destination-
 * passing entry (src/passes/TensorDescEntryPoints.cpp)
 *
 *   int32_t kinatd_<fn>(const KinaTensorDesc *out0, ...,
 *                       const KinaTensorDesc *in0, ...,
 *                       int32_t device_id, uint64_t raw_stream);
 *
 * after the host-boundary pattern of the seed ffi-bridge.txt: the caller
 * owns every buffer, results are written into the caller's `out` tensors.
 * The prefix is `kinatd_`, not `kina_td_`: every status entry is
 * `kina_<prefix><fn>`, so a Kina function named `td_f` would own
 * `kina_td_f`; no `kina_` symbol can start with `kinatd_`.
 * Inputs and outputs are any strided views (strides in elements, 0 and
 * negative allowed for inputs, negative for outputs; a stride 0 on an
 * output dim of size > 1 is -8), on both targets; an output may alias an
 * input (results are computed into runtime buffers, an input that an
 * output overlaps is first copied, then results are written out). Returns
 * 0 or one of the KINA_TD_* codes below; kina_last_error() says why.
 * The cpu target ignores `device_id` and `raw_stream`. The cuda target's
 * entries run on CUDA device max(device_id, 0) (that device's primary
 * context; the caller's current context is restored before returning) and
 * on the caller's stream `raw_stream` (a CUstream/cudaStream_t of that
 * device; 0 the default stream), take tensors in memory that device can
 * read (cudaMalloc, PyTorch's caching allocator, managed memory), gather
 * strided inputs and scatter into strided outputs with a kernel on that
 * stream, synchronise that stream before returning (the outputs are ready,
 * as the seed's sync_on) and never the whole device.
 *===----------------------------------------------------------------------===*/

/** Largest rank a KinaTensorDesc carries (the seed's shape[4]). */
#define KINA_TD_MAX_RANK 4

/** One tensor crossing the TensorDesc boundary, layout-compatible with the
 *  seed's `#[repr(C)] TensorDesc` (offsets checked below). Borrowed: the
 *  entry never frees or keeps `ptr`. */
typedef struct KinaTensorDesc {
  uint64_t ptr;                       /* address of element [0,0,..] */
  int32_t ndim;                       /* 0..KINA_TD_MAX_RANK */
  int64_t shape[KINA_TD_MAX_RANK];    /* elements along each dim, first ndim */
  int64_t strides[KINA_TD_MAX_RANK];  /* in ELEMENTS, not bytes; any sign */
  int32_t dtype;                      /* a KINA_TD_DTYPE_* code */
} KinaTensorDesc;

/* The seed's dtype codes (0..3), then kinac's extensions (4..7). */
#define KINA_TD_DTYPE_F32 0
#define KINA_TD_DTYPE_F16 1
#define KINA_TD_DTYPE_BF16 2
#define KINA_TD_DTYPE_I32 3
#define KINA_TD_DTYPE_I64 4
#define KINA_TD_DTYPE_F64 5
#define KINA_TD_DTYPE_I8 6
#define KINA_TD_DTYPE_I1 7 /* one byte per element, 0 or 1 */

/* Return codes of kinatd_<fn>: the seed's 0, -2..-5, then kinac's. */
#define KINA_TD_OK 0
/** The seed's -2: a dtype code that is unknown or not the parameter's. */
#define KINA_TD_UNSUPPORTED_DTYPE (-2)
/** The seed's -3: the compiled function failed while running (status 3..6
 *  of kina_<fn>: GPU, unimplemented, internal, type errors). */
#define KINA_TD_LAUNCH_ERROR (-3)
/** The seed's -4: device/stream setup failed (no CUDA driver or device,
 *  an invalid stream), or a tensor of a --target=cuda entry that the GPU of
 *  the call's device cannot read (host memory, another device's). */
#define KINA_TD_DEVICE_ERROR (-4)
/** The seed's -5: a null KinaTensorDesc pointer, or a null `ptr` in a
 *  tensor with elements. */
#define KINA_TD_NULL_DESCRIPTOR (-5)
/** A shape that does not match the signature: ndim, a static dim, a
 *  symbolic dim differing between tensors, an output's shape that is not
 *  the result's, a run-time shape check of the function (status 1), or an
 *  ndim outside 0..KINA_TD_MAX_RANK. */
#define KINA_TD_SHAPE_MISMATCH (-6)
/** The runtime could not allocate a buffer (status 2). */
#define KINA_TD_ALLOCATION_FAILED (-7)
/** An output whose elements overlap each other (a stride 0 on a dim of
 *  size > 1) or whose memory overlaps another output's: refused before
 *  anything is computed. */
#define KINA_TD_OVERLAPPING_OUTPUT (-8)
/** A layout an entry cannot take. Reserved: no entry returns it since the
 *  cuda entries take strided views (they returned it for a view that was
 *  not row-major contiguous before); kept so that the code keeps its
 *  meaning. */
#define KINA_TD_UNSUPPORTED_LAYOUT (-9)

#if defined(__cplusplus)
#define KINA_TD_ASSERT(c, m) static_assert(c, m)
#else
#define KINA_TD_ASSERT(c, m) _Static_assert(c, m)
#endif
KINA_TD_ASSERT(offsetof(KinaTensorDesc, ptr) == 0, "TensorDesc.ptr");
KINA_TD_ASSERT(offsetof(KinaTensorDesc, ndim) == 8, "TensorDesc.ndim");
KINA_TD_ASSERT(offsetof(KinaTensorDesc, shape) == 16, "TensorDesc.shape");
KINA_TD_ASSERT(offsetof(KinaTensorDesc, strides) == 48, "TensorDesc.strides");
KINA_TD_ASSERT(offsetof(KinaTensorDesc, dtype) == 80, "TensorDesc.dtype");
KINA_TD_ASSERT(sizeof(KinaTensorDesc) == 88, "TensorDesc size");
#undef KINA_TD_ASSERT


#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KINA_ABI_H_ */
