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
 * alike: the runtime loads the CUDA driver with dlopen the first time a GPU
 * function needs it.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KINA_RUNTIME_H_
#define KINA_RUNTIME_H_

/* In a generated header, kina/abi.h's text comes first (KINA_ABI_H_ is
 * defined), so no file is included there. */
#ifndef KINA_ABI_H_
#include "kina/abi.h"
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

/** The version of kinac this runtime was built with ("0.1.0"): the same
 *  string as `kinac --version` prints. Static storage; never null. */
const char *kina_runtime_version(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KINA_RUNTIME_H_ */
