/*===- runtime.h - libkina_runtime.a: introspection and codegen support ---===*
 *
 * The full C interface of libkina_runtime.a: everything in kina/abi.h (status
 * codes, descriptors, allocation and freeing) plus registry introspection for
 * users and tests checking for leaks, and the small support functions that
 * kinac-generated `kina_<fn>` entry points call to record and report errors.
 * Described in the "ABI" section of the language reference,
 * docs/language.md. C99 and C++ compatible; every function
 * is thread-safe and never lets a C++ exception or an abort cross the C
 * boundary (a guard turns them into status 5, a std::bad_alloc into 2).
 *
 * Every header `kinac --emit=header` writes embeds this file's text after
 * that of kina/abi.h, so a program built against a generated header alone
 * sees every function declared here.
 *
 * Linking: `libkina_runtime.a -lstdc++ -lm` (`kinac --print-link-flags`
 * gives the exact flags; KINA_RUNTIME_LINK_LIBS in kina/RuntimeConfig.h the
 * part after the archive). Nothing CUDA-specific, for CPU and GPU programs
 * alike (objects of `kinac --target=cuda` too): the runtime loads the CUDA
 * driver with dlopen the first time a GPU function needs it.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KINA_RUNTIME_H_
#define KINA_RUNTIME_H_

/* In a generated header, kina/abi.h's text comes first (KINA_ABI_H_ is
 * defined), so no file is included there. */
#ifndef KINA_ABI_H_
#include "kina/abi.h"
#endif
#include <stddef.h>
#include <stdint.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===--- Registry introspection
 * ---------------------------------------------===*/

/** Number of buffers currently recorded by the runtime (allocated through
 *  `_mlir_ciface_runtime_{host,gpu}_alloc_unranked`, by user code or by
 *  compiled functions, and not yet freed), host and CUDA managed together.
 *  0 after `runtime_gpu_free_all()`. Thread-safe; -1 only on an internal
 *  failure (the reason is in kina_last_error()). */
int64_t runtime_live_buffer_count(void);

/** Sum over the recorded buffers of their requested byte counts
 *  (`product(sizes) * element_size`; the real allocations may be padded,
 *  e.g. host buffers to a multiple of 64 bytes). Thread-safe; -1 only on an
 *  internal failure. */
int64_t runtime_live_bytes(void);

/*===--- CUDA device selection
 * ----------------------------------------------===*/

/** Selects the CUDA device (ordinal, as the driver numbers them) that later
 *  `_mlir_ciface_runtime_gpu_alloc_unranked` calls allocate on, for the
 *  whole process (all threads); it takes precedence over $KINA_DEVICE.
 *  Buffers allocated before stay on their device and are freed there. Loads
 *  the CUDA driver to check the ordinal. Returns 0; 1 (Validation Error) if
 *  `device` is negative; 3 (GPU Error) if the driver is missing ("CUDA
 *  driver not found (...)"), sees no device ("no CUDA device"), or `device`
 *  is not below the number of devices; the selection is then unchanged.
 *  Thread-safe. */
int32_t runtime_gpu_set_device(int32_t device);

/** Writes to `*device` the ordinal GPU allocations use now: the last
 *  runtime_gpu_set_device() value, else $KINA_DEVICE (read on the first GPU
 *  call of the process), else 0. Does not load the CUDA driver, so it does
 *  not say whether the device exists. Returns 0; 1 (Validation Error) if
 *  `device` is null or $KINA_DEVICE is not a decimal integer >= 0.
 *  Thread-safe. */
int32_t runtime_gpu_get_device(int32_t *device);

/*===--- Support for generated code
 * -----------------------------------------===*/

/** Called by generated code at the start of every `kina_<fn>` entry point:
 *  clears the calling thread's last status (to 0) and last error (to ""). */
void kina_rt_begin_call(void);

/** Called by generated code: the calling thread's last failure status
 *  recorded by the runtime (by an allocation, runtime_free, kina_rt_fail,
 *  kina_rt_shape_error, ...), or 0 if nothing failed since the last
 *  kina_rt_begin_call(). Successful runtime calls do not reset it. */
int32_t kina_rt_last_status(void);

/** Called by generated code: records `status` as the calling thread's last
 *  status and a copy of `message` as its last error (a null `message` is
 *  replaced by kina_status_name(status)), then returns `status`. */
int32_t kina_rt_fail(int32_t status, const char *message);

/** Called by generated code for a run-time shape mismatch: copies
 *  `message_template`, replacing every literal `{0}` by the decimal value of
 *  `first` and every literal `{1}` by that of `second` (nothing else is
 *  interpreted: it is not a printf format, `%` is an ordinary character),
 *  records the result with status 1 (Validation Error) as by kina_rt_fail,
 *  and returns 1. A null template records a generic shape-mismatch message
 *  that still carries both values. */
int32_t kina_rt_shape_error(const char *message_template, int64_t first,
                            int64_t second);

/** Called by the `kina_<fn>` entries of generated code on their calls until
 *  it first returns 0 in the process (after kina_rt_begin_call and zeroing
 *  the results): compares `abi_version`, the KINA_ABI_VERSION the object was
 *  compiled for, with the runtime's own. Returns 0 when they are equal;
 *  only the ABI version decides, not the kinac versions. Otherwise records
 *  status 1 (Validation Error) with a message naming `entry` (the calling
 *  entry, e.g. "kina_forward"), `compiler` (the object's version stamp, e.g.
 *  "kinac 0.1.0, Kina ABI 1") and the runtime's kinac version and ABI, as
 *  by kina_rt_fail, and returns 1; the entry then returns 1 without running
 *  (the object must be recompiled with a kinac of the runtime's ABI). Null
 *  strings are replaced by "?". Thread-safe. */
int32_t kina_rt_check_version(const char *entry, int32_t abi_version,
                              const char *compiler);

/*===--- The frame of the TensorDesc entries kinatd_<fn> ----------------===*/

/* A `kinatd_<fn>` entry (kina/abi.h; src/passes/TensorDescEntryPoints.cpp)
 * calls kina_rt_td_prepare, then (when it returned 0) `kina_<fn>` on the
 * memref descriptors in `scratch`, then kina_rt_td_finish with its status.
 * `table` is [numResults, numArgs, (dtype code, rank) per result, then per
 * argument]; `scratch` holds numResults + numArgs slots of
 * sizeof(KinaMemRef4) bytes, results first, each a KinaMemRef<rank>. */

/** Clears the last error, checks every descriptor (null: -5, dtype: -2,
 *  ndim/shape: -6, overlapping outputs: -8), zeroes the result slots and
 *  fills each argument slot: the caller's memory when row-major contiguous
 *  and no output's bytes overlap it, else a contiguous host copy of the
 *  view (allocation failure: -7), so that writing the outputs never changes
 *  what a result is read from. Returns 0 or a KINA_TD_* code; on failure
 *  nothing stays allocated. `entry` names the entry in messages. */
int32_t kina_rt_td_prepare(const char *entry, const int32_t *table,
                           const KinaTensorDesc *const *outs,
                           const KinaTensorDesc *const *ins, void *scratch);

/** Maps a non-zero `status` of `kina_<fn>` to -6 (1), -7 (2) or -3
 *  (others), keeping its message; otherwise checks each result's sizes
 *  against the output descriptor (-6) and copies the result into it (any
 *  strides). Then frees every result buffer (once; not one that is an
 *  argument's) and the argument copies. Returns 0 or a KINA_TD_* code. */
int32_t kina_rt_td_finish(const char *entry, const int32_t *table,
                          const KinaTensorDesc *const *outs,
                          const KinaTensorDesc *const *ins, void *scratch,
                          int32_t status);

/** The cuda target's kina_rt_td_prepare: the same descriptor checks (no
 *  GPU needed), then opens the call's GPU frame with
 *  kina_rt_gpu_enter_stream(max(device_id, 0), raw_stream) (-4 when it
 *  fails: no driver, no such device; never device 0 in place of the one
 *  given), checks with kina_rt_gpu_check_argument that the GPU of that
 *  device can read every tensor (-4: host memory, another device's), and
 *  fills the argument slots as kina_rt_td_prepare does: the caller's memory
 *  when row-major contiguous and no output overlaps it, else a contiguous
 *  buffer of that device (runtime_gpu_alloc_unranked; -7) filled by the
 *  runtime's strided-copy kernel on `raw_stream` (any strides, 0 and
 *  negative included; its launch failing: -3). Nothing synchronises.
 *  Returns 0 with the frame open, or a KINA_TD_* code with it closed (the
 *  stream synchronised) and the buffers released. */
int32_t kina_rt_td_gpu_prepare(const char *entry, const int32_t *table,
                               const KinaTensorDesc *const *outs,
                               const KinaTensorDesc *const *ins, void *scratch,
                               int32_t device_id, uint64_t raw_stream);

/** The cuda target's kina_rt_td_finish, after `kina_<fn>` ran inside the
 *  frame kina_rt_td_gpu_prepare opened: maps a non-zero `status` as
 *  kina_rt_td_finish does; otherwise checks each result's sizes against its
 *  output descriptor (-6) and writes the result into it on `raw_stream`:
 *  cuMemcpyAsync when both are row-major contiguous, else the runtime's
 *  strided-copy kernel (any strides; -3 if it cannot be launched). Then
 *  closes the frame (kina_rt_gpu_exit: the stream is synchronised, so the
 *  outputs are ready on return, as the seed's `sync_on(&stream)`; no
 *  device-wide synchronisation; its failure: -3) and frees every result
 *  buffer (once; not one that is an argument's) and prepare's argument
 *  copies. `device_id` and `raw_stream` are prepare's. Returns 0 or a
 *  KINA_TD_* code. */
int32_t kina_rt_td_gpu_finish(const char *entry, const int32_t *table,
                              const KinaTensorDesc *const *outs,
                              const KinaTensorDesc *const *ins, void *scratch,
                              int32_t status, int32_t device_id,
                              uint64_t raw_stream);

/*===--- The GPU call frame of --target=cuda entry points
 * ----------------===*/

/* A `kina_<fn>` entry of an object compiled with `kinac --target=cuda`
 * calls, after kina_rt_begin_call and the version check:
 *   kina_rt_gpu_enter(); then kina_rt_gpu_check_argument() for each
 *   argument's `allocated` pointer; the compiled code (which allocates with
 *   _mlir_ciface_runtime_gpu_alloc_unranked and launches kernels through
 *   the mgpu* functions below); kina_rt_gpu_exit().
 * A non-zero status from any of them is the entry's status; on one from
 * kina_rt_gpu_exit the entry frees the results it got. */

/** First GPU step of a cuda entry: loads the CUDA driver (once per
 *  process), selects the device (runtime_gpu_set_device(), else
 *  $KINA_DEVICE, else 0), makes its primary context current on the calling
 *  thread (the caller's context is put back by kina_rt_gpu_exit), and
 *  clears the thread's pending GPU error. Until the matching
 *  kina_rt_gpu_exit, the thread's allocations and launches use that device.
 *  Returns 0; 3 (GPU Error) with "kina_rt_gpu_enter: CUDA driver not found
 *  (<library>: <dlerror>)", "... no CUDA device ...", "CUDA device <n> does
 *  not exist ..." or the failing CUDA call's error name and text in
 *  kina_last_error(); 1 (Validation Error) when $KINA_DEVICE is not a
 *  device ordinal. After a non-zero status kina_rt_gpu_exit must not be
 *  called. Calls nest (an inner call keeps the outer device).
 *  Thread-safe. */
int32_t kina_rt_gpu_enter(void);

/** kina_rt_gpu_enter for a TensorDesc entry `kinatd_<fn>` of a cuda
 *  object (kina_rt_td_gpu_prepare): the call runs on CUDA device `device`
 *  (>= 0; not the runtime's selected device) and every kernel launch, copy
 *  and the synchronisation of the matching kina_rt_gpu_exit use the
 *  caller's `stream` (a CUstream; 0 is the default stream) instead of the
 *  thread's own; the runtime never destroys it. A `kina_<fn>` called inside
 *  the frame nests (its kina_rt_gpu_enter keeps device and stream).
 *  Returns 0; 1 for a negative `device`; 5 (Internal Error) inside another
 *  frame; else kina_rt_gpu_enter's statuses (3: no driver, no such
 *  device). After a non-zero status kina_rt_gpu_exit must not be called.
 *  Thread-safe. */
int32_t kina_rt_gpu_enter_stream(int32_t device, uint64_t stream);

/** Checks that the GPU can read an argument of a cuda entry: `allocated`
 *  (the descriptor's allocated pointer) must be CUDA managed memory
 *  (cudaMallocManaged, runtime_gpu_alloc_unranked), device memory of the
 *  call's device (cudaMalloc, PyTorch's CUDA allocator) or page-locked host
 *  memory (cudaMallocHost), as cuPointerGetAttributes reports it (a live
 *  buffer of the runtime's own is known to be managed from its registry,
 *  without a driver call; one it freed is asked about again). Returns 0
 *  for those and for NULL (an empty array); 1 (Validation Error) naming
 *  `function` and `argument` (e.g. "kina_forward: argument %x (0x...) is
 *  ordinary host memory, which the GPU cannot read: ...") for memory CUDA
 *  does not know (malloc, the stack, a NumPy array) or device memory of
 *  another device; 3 (GPU Error) if the driver is missing or another CUDA
 *  error occurs. `function` and `argument` (the Kina name without '%') may
 *  be null. Call after kina_rt_gpu_enter. Thread-safe. */
int32_t kina_rt_gpu_check_argument(const void *allocated, const char *function,
                                   const char *argument);

/** Last GPU step of a cuda entry, after the compiled code returned:
 *  synchronises the thread's stream, puts back the CUDA context that was
 *  current before kina_rt_gpu_enter, and reports the first GPU error any
 *  mgpu* function recorded on this thread since kina_rt_gpu_enter (a
 *  module that failed to load, a failed launch, a kernel fault seen at a
 *  synchronisation). Returns 0; 3 (GPU Error), or 2 (Resource Error) for
 *  CUDA_ERROR_OUT_OF_MEMORY, with that first error (the mgpu function, the
 *  CUDA call, and CUDA's error name and text) in kina_last_error(); 5
 *  (Internal Error) when called without kina_rt_gpu_enter. Thread-safe. */
int32_t kina_rt_gpu_exit(void);

/** Waits for the GPU work the calling thread's current kina_<fn> call has
 *  queued (its stream), for compiled host code that reads a buffer kernels
 *  wrote (gather's index range check; the cuda target's
 *  `kina-gpu-host-sync` pass emits the call). A failure becomes the
 *  thread's pending GPU error, which kina_rt_gpu_exit returns. Outside a
 *  call it does nothing. Thread-safe. */
void kina_rt_gpu_synchronize(void);

/* Element type codes of kina_rt_gpu_matmul: `types` is the code of A and B
 * (one type) plus 256 times the code of C. */
#define KINA_GPU_MATMUL_F32 1
#define KINA_GPU_MATMUL_F64 2
#define KINA_GPU_MATMUL_F16 3
#define KINA_GPU_MATMUL_BF16 4
/* Flags of kina_rt_gpu_matmul. */
#define KINA_GPU_MATMUL_TF32 1       /* f32: TF32 tensor cores allowed */
#define KINA_GPU_MATMUL_ACCUMULATE 2 /* C += A B (else C = A B) */
/* Bits 8..15 of the flags: which of cublasLtMatmulAlgoGetHeuristic's
 * algorithms to run (0: its first, the default; an index past the end of
 * its list: its last), the "cuda.matmul" schedule (docs/autotune.md). */
#define KINA_GPU_MATMUL_ALGO_SHIFT 8
#define KINA_GPU_MATMUL_ALGO_MASK 0xff

/** A matmul of a cuda entry through cuBLASLt (loaded at run time, see
 *  docs/cuda.md), queued on the thread's stream like the call's kernels:
 *  C[batch..., m, n] = (C +) sum_k A[batch..., m, k] * B[batch..., k, n],
 *  accumulated in f32 for f16/bf16/f32 (TF32 tensor cores for f32 only with
 *  KINA_GPU_MATMUL_TF32; f64 in f64), rounded once to C's type. A and B
 *  have one type (KINA_GPU_MATMUL_*), C the same or f32 for f16/bf16
 *  operands. `dims` holds m, n, k, the `batchRank` batch sizes, then the
 *  element strides of A (batch..., m, k), B (batch..., k, n) and C
 *  (batch..., m, n); a stride 0 broadcasts. `a`, `b`, `c` point at element
 *  0 (device or managed memory). Every size is > 0 (the compiled code skips
 *  empty products). Returns 1 when it took the product: queued, or a
 *  failure (cuBLASLt missing: "kina_rt_gpu_matmul: cuBLASLt not found
 *  (...)"; a CUDA or cuBLAS error) made the thread's pending GPU error,
 *  which kina_rt_gpu_exit returns as status 3 (2 when out of memory).
 *  Returns 0, having done nothing, when cuBLASLt cannot express it (an
 *  operand with no unit stride, C without unit stride along n, types it
 *  does not take, no algorithm offered): the compiled code then runs its
 *  own kernel. Thread-safe. */
int32_t kina_rt_gpu_matmul(int32_t types, int32_t flags, int32_t batchRank,
                           const int64_t *dims, const void *a, const void *b,
                           void *c);

/* Epilogue bits of kina_rt_gpu_matmul_epilogue (cuBLASLt's epilogues). */
#define KINA_GPU_EPILOGUE_BIAS 1      /* + bias[n] (CUBLASLT_EPILOGUE_BIAS) */
#define KINA_GPU_EPILOGUE_RELU 2      /* then max(x, 0) */
#define KINA_GPU_EPILOGUE_GELU_TANH 4 /* then gelu, tanh form */
#define KINA_GPU_EPILOGUE_RESIDUAL 8  /* + residual (beta = 1) */

/** kina_rt_gpu_matmul with an epilogue applied by cuBLASLt before the one
 *  rounding to C's type (f32 C only, no KINA_GPU_MATMUL_ACCUMULATE):
 *  C[b..., m, n] = act(alpha * sum_k A B + residual[b..., m, n] + bias[n]),
 *  where the residual term is there with KINA_GPU_EPILOGUE_RESIDUAL, the
 *  bias term with KINA_GPU_EPILOGUE_BIAS and act is RELU (max(x, 0)),
 *  GELU_TANH (0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) or the
 *  identity. `dims` is kina_rt_gpu_matmul's followed, with BIAS, by the
 *  bias's element stride and, with RESIDUAL, by the residual's element
 *  strides (batch..., m, n). `bias` and `residual` point at element 0 of f32
 *  buffers (null when their bit is clear); C may be the residual's buffer.
 *  Returns as kina_rt_gpu_matmul; also 0 (nothing done, the compiled code
 *  runs its unfused kernels) when the epilogue is not expressible: another
 *  C type, a bias stride other than 1, a residual laid out unlike C, an
 *  epilogue cuBLASLt offers no algorithm for. Thread-safe. */
int32_t kina_rt_gpu_matmul_epilogue(int32_t types, int32_t flags,
                                    int32_t batchRank, const int64_t *dims,
                                    const void *a, const void *b, void *c,
                                    int32_t epilogue, double alpha,
                                    const void *bias, const void *residual);

/*===--- Kernel launch support (MLIR's gpu-to-llvm ABI)
 * ---------------------===*/

/* The functions MLIR 22's gpu-to-llvm lowering and gpu.binary translation
 * call from a --target=cuda object, with the C signatures MLIR emits (as
 * MLIR's own CudaRuntimeWrappers.cpp defines them), over the CUDA driver API
 * loaded at run time. CUDA handles (CUmodule, CUfunction, CUstream,
 * CUevent) travel as `void *`. None of them aborts or prints: a failure is
 * recorded as the calling thread's last error (kina_last_error(), status 3,
 * or 2 for CUDA_ERROR_OUT_OF_MEMORY, with CUDA's error name and text) and
 * as its pending GPU error, which kina_rt_gpu_exit reports; a function that
 * returns a handle then returns NULL. Each makes the device's primary
 * context current for its own duration when it is not already (the device
 * of the current kina_<fn> call, else the thread's mgpuSetDefaultDevice
 * choice, else the one runtime_gpu_set_device / $KINA_DEVICE select).
 * All are thread-safe. */

/** Registers the GPU binary `data` (a fatbin or cubin, `gpuBlobSize`
 *  bytes; static storage of the calling object, not copied) and returns its
 *  handle. Called from a global constructor at program start, so it touches
 *  no driver (there may be none): the binary is loaded with cuModuleLoadData
 *  lazily, by mgpuModuleGetFunction, once per process and device. NULL only
 *  for a null `data` (status 3) or out of memory (status 2). */
void *mgpuModuleLoad(void *data, size_t gpuBlobSize);

/** As mgpuModuleLoad for NUL-terminated PTX text (MLIR's `format=isa`),
 *  compiled by the driver (cuModuleLoadDataEx, JIT optimisation level
 *  `optLevel`) when first used on a device; a compilation failure's log is
 *  in the message. */
void *mgpuModuleLoadJIT(void *data, int optLevel);

/** Unloads a handle from mgpuModuleLoad(JIT) on every device it was loaded
 *  on and frees it (a global destructor at exit calls it). Never loads the
 *  driver for a binary that never ran; CUDA_ERROR_DEINITIALIZED (the driver
 *  shut down first at exit) is accepted silently, other failures are
 *  recorded as the last error. NULL is ignored. */
void mgpuModuleUnload(void *module);

/** The kernel `name` (a NUL-terminated entry name) of a module handle on
 *  the current device (a CUfunction), loading the module there first if it
 *  is not loaded (under the module's lock) and caching the function.
 *  NULL, with status 3 recorded, when the handle is NULL, the driver or
 *  device is missing, or the load or lookup fails. */
void *mgpuModuleGetFunction(void *module, const char *name);

/** Launches `function` on a grid of gridX x gridY x gridZ blocks of blockX
 *  x blockY x blockZ threads with `smem` bytes of dynamic shared memory on
 *  `stream` (NULL: the legacy default stream); `params` points to the
 *  kernel's `paramsCount` argument addresses (cuLaunchKernel's
 *  kernelParams), `extra` is passed through. Kernels asking for more than
 *  48 KiB of dynamic shared memory get cuFuncSetAttribute(
 *  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) first (once per size).
 *  A grid or block with a zero dimension launches nothing (an empty
 *  tensor). A NULL `function` (its load failed), a dimension or `smem` out
 *  of range, or a failing CUDA call records status 3 and launches
 *  nothing. Asynchronous: faults show at the next synchronisation. */
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);

/** The calling thread's stream on the current device (a non-blocking
 *  CUstream), created on the thread's first call and reused by every later
 *  one; destroyed when the thread exits. NULL with status 3 recorded if it
 *  cannot be created. */
void *mgpuStreamCreate(void);

/** Destroys `stream`, except a thread's stream from mgpuStreamCreate,
 *  which is kept for reuse (then this is a no-op). NULL is ignored. */
void mgpuStreamDestroy(void *stream);

/** Waits until all work queued on `stream` has finished; a failed kernel
 *  (e.g. CUDA_ERROR_ILLEGAL_ADDRESS) is recorded with status 3. */
void mgpuStreamSynchronize(void *stream);

/** Makes later work on `stream` wait for `event` (cuStreamWaitEvent). */
void mgpuStreamWaitEvent(void *stream, void *event);

/** A new event without timing (cuEventCreate(CU_EVENT_DISABLE_TIMING));
 *  NULL with status 3 recorded on failure. Free with mgpuEventDestroy. */
void *mgpuEventCreate(void);

/** Destroys an event from mgpuEventCreate; NULL is ignored. */
void mgpuEventDestroy(void *event);

/** Waits until `event` has completed. */
void mgpuEventSynchronize(void *event);

/** Records `event` on `stream`. */
void mgpuEventRecord(void *event, void *stream);

/** Allocates `sizeBytes` bytes (at least 1) of device memory
 *  (cuMemAlloc), or of managed memory when `isHostShared`
 *  (cuMemAllocManaged, attached globally); `stream` is unused. Not recorded
 *  in the runtime's registry: free with mgpuMemFree. NULL with status 2
 *  (out of memory) or 3 recorded on failure. Compiled cuda code allocates
 *  through _mlir_ciface_runtime_gpu_alloc_unranked instead. */
void *mgpuMemAlloc(uint64_t sizeBytes, void *stream, bool isHostShared);

/** Frees memory from mgpuMemAlloc (cuMemFree); NULL is ignored. */
void mgpuMemFree(void *pointer, void *stream);

/** Copies `sizeBytes` bytes from `source` to `destination` on `stream`
 *  (cuMemcpyAsync, unified addressing: any direction). */
void mgpuMemcpy(void *destination, void *source, size_t sizeBytes,
                void *stream);

/** Sets `count` 32-bit words at `destination` to `value` on `stream`. */
void mgpuMemset32(void *destination, unsigned int value, size_t count,
                  void *stream);

/** Sets `count` 16-bit words at `destination` to `value` on `stream`. */
void mgpuMemset16(void *destination, unsigned short value, size_t count,
                  void *stream);

/** Makes `device` the device the calling thread's mgpu* calls use outside
 *  a kina_<fn> call (a negative value clears it); it does not change where
 *  runtime_gpu_alloc_unranked allocates. Not checked until the next call
 *  needs the device. */
void mgpuSetDefaultDevice(int32_t device);

/** The x86-64 psABI micro-architecture level of the processor this program
 *  runs on: 1 (x86-64), 2 (x86-64-v2), 3 (x86-64-v3: AVX2, FMA, BMI2 ...)
 *  or 4 (x86-64-v4: AVX-512 F/BW/CD/DQ/VL), from cpuid and xgetbv (the
 *  operating system must save the YMM / ZMM state); 0 on a processor that
 *  is not x86. $KINA_CPU_LEVEL ("x86-64", "x86-64-v2", "x86-64-v3",
 *  "x86-64-v4") lowers it; a higher or unknown value is ignored with a
 *  warning on stderr. Computed once per process; thread-safe. The
 *  dispatchers of objects kinac compiled without --mcpu call it on their
 *  first call to pick the version to run (docs/integration.md). */
int32_t kina_rt_cpu_level(void);

/** A piece of a parallel loop: runs iterations [lo, hi) of the loop whose
 *  state `ctx` points to (0 <= lo < hi <= n of kina_rt_parallel_for). */
typedef void (*kina_rt_parallel_fn)(void *ctx, int64_t lo, int64_t hi);

/** Runs iterations [0, n) of a loop whose iterations are independent, split
 *  into contiguous pieces [n*t/p, n*(t+1)/p), t = 0..p-1, run by the
 *  calling thread and the runtime's persistent pool: each thread claims
 *  pieces until none is left (so the caller runs the pieces no worker has
 *  claimed, and a worker that wakes late never holds the call up), and the
 *  call returns when every piece is done; which thread runs a piece does
 *  not change its result. p = kina_rt_parallel_threads(n, cost). `cost` is
 *  the loop's estimated work in units of about one element of a streaming
 *  vector loop (kinac passes the elements for elementwise, reduction and
 *  normalisation loops, M*N*K/16 for a matmul); p = 1 (fn(ctx, 0, n) on
 *  the calling thread, no other thread woken) when the work is below two
 *  grains (docs/integration.md, "Threads"). Thread-safe: the pool runs one
 *  loop at a time, a call made while it is busy (a second caller thread, or
 *  fn itself calling this) runs its whole loop on its own thread. n <= 0
 *  does nothing. Code kinac compiles at -O1 and above calls it; it is not
 *  meant for user code but may be called (fn must not throw). */
void kina_rt_parallel_for(int64_t n, int64_t cost, kina_rt_parallel_fn fn,
                          void *ctx);

/** The pieces kina_rt_parallel_for(n, cost, ...) splits into when the pool
 *  is free: min(kina_rt_num_threads(), n, cost / grain), at least 1, with
 *  a grain of 65536 cost units. kinac's matmul asks it to cut the columns
 *  into as many slabs as threads will run them. */
int64_t kina_rt_parallel_threads(int64_t n, int64_t cost);

/** The threads the pool uses at most: $KINA_NUM_THREADS when it is a whole
 *  number from 1 to 1024, else (unset, empty, or invalid: ignored with a
 *  warning on stderr) the CPUs this process may run on (sched_getaffinity),
 *  read once, at the first call of any kina_rt_parallel_* function. */
int32_t kina_rt_num_threads(void);

/** How many kina_rt_parallel_for calls since the process started ran on
 *  more than one thread (tests and tools checking that work was split). */
uint64_t kina_rt_parallel_regions(void);

/** The version of kinac this runtime was built with ("0.1.0"): the same
 *  string as `kinac --version` prints. Static storage; never null. */
const char *kina_runtime_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KINA_RUNTIME_H_ */
