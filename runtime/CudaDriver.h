//===- CudaDriver.h - The CUDA driver API, loaded at run time -------------===//
//
// Internal to libkina_runtime.a (and its tests). The runtime never links
// CUDA: on the first GPU call of a process it dlopen()s the CUDA driver
// (libcuda.so.1, or the path in $KINA_CUDA_DRIVER) and dlsym()s the driver API
// entry points it uses into one table of function pointers, then calls
// cuInit(0) and counts the devices (once, under std::call_once), as PyTorch
// and Triton load the driver. A program that never calls a GPU function never
// touches CUDA, and a CPU program links and starts on a machine without it.
//
// Types and enums come from the CUDA Toolkit's cuda.h when the runtime is
// built with it (KINA_HAVE_CUDA_H=1; only the header is used, no library),
// and from the few declarations below otherwise; either way the table and
// the GPU path are compiled in. With cuda.h, CudaDriver.cpp checks at compile
// time that every table entry has cuda.h's signature and ABI symbol name.
//
// The table also holds what the kernel-launch half of the runtime
// (GpuLaunch.cpp: the mgpu* functions MLIR's gpu-to-llvm lowering calls)
// needs: modules, functions, launches, streams, events, copies. Further entry
// points can be resolved with driverSymbol().
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUNTIME_CUDADRIVER_H
#define KINA_RUNTIME_CUDADRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#if KINA_HAVE_CUDA_H
#include <cuda.h>
#else
// The subset of cuda.h the runtime uses, ABI-identical to it (x86-64 and
// aarch64 Linux, CUDA 11+). CudaDriver.cpp checks them against cuda.h in
// builds that have it.
typedef enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_UNKNOWN = 999
} CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef unsigned long long CUdeviceptr;
typedef enum CUpointer_attribute_enum {
  CU_POINTER_ATTRIBUTE_CONTEXT = 1,
  CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2,
  CU_POINTER_ATTRIBUTE_IS_MANAGED = 8,
  CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
} CUpointer_attribute;
typedef enum CUmemAttach_flags_enum {
  CU_MEM_ATTACH_GLOBAL = 0x1,
  CU_MEM_ATTACH_HOST = 0x2
} CUmemAttach_flags;
typedef enum CUmemorytype_enum {
  CU_MEMORYTYPE_HOST = 0x01,
  CU_MEMORYTYPE_DEVICE = 0x02,
  CU_MEMORYTYPE_ARRAY = 0x03,
  CU_MEMORYTYPE_UNIFIED = 0x04
} CUmemorytype;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef enum CUfunction_attribute_enum {
  CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
} CUfunction_attribute;
typedef enum CUjit_option_enum {
  CU_JIT_ERROR_LOG_BUFFER = 5,
  CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
  CU_JIT_OPTIMIZATION_LEVEL = 7
} CUjit_option;
typedef enum CUstream_flags_enum {
  CU_STREAM_NON_BLOCKING = 0x1
} CUstream_flags;
typedef enum CUevent_flags_enum { CU_EVENT_DISABLE_TIMING = 0x2 } CUevent_flags;
#endif

namespace kina::rt::cuda {

/// The driver entry points the runtime uses: X(member, ABI symbol, type).
/// The member is the name cuda.h gives the function (where cuda.h maps it to
/// a versioned symbol, e.g. cuMemFree -> cuMemFree_v2, the symbol column
/// gives that versioned name, which is what dlsym needs).
#define KINA_CUDA_DRIVER_API(X)                                                \
  X(cuInit, "cuInit", CUresult(unsigned int))                                  \
  X(cuDriverGetVersion, "cuDriverGetVersion", CUresult(int *))                 \
  X(cuDeviceGetCount, "cuDeviceGetCount", CUresult(int *))                     \
  X(cuDeviceGet, "cuDeviceGet", CUresult(CUdevice *, int))                     \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",                      \
    CUresult(CUcontext *, CUdevice))                                           \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2",                 \
    CUresult(CUdevice))                                                        \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult(CUcontext))                   \
  X(cuCtxGetCurrent, "cuCtxGetCurrent", CUresult(CUcontext *))                 \
  X(cuMemGetInfo, "cuMemGetInfo_v2", CUresult(size_t *, size_t *))             \
  X(cuMemAllocManaged, "cuMemAllocManaged",                                    \
    CUresult(CUdeviceptr *, size_t, unsigned int))                             \
  X(cuMemFree, "cuMemFree_v2", CUresult(CUdeviceptr))                          \
  X(cuPointerGetAttribute, "cuPointerGetAttribute",                            \
    CUresult(void *, CUpointer_attribute, CUdeviceptr))                        \
  X(cuGetErrorName, "cuGetErrorName", CUresult(CUresult, const char **))       \
  X(cuGetErrorString, "cuGetErrorString", CUresult(CUresult, const char **))   \
  /* Modules, kernels, streams and events (GpuLaunch.cpp, the mgpu* */         \
  /* functions of MLIR's gpu-to-llvm lowering). */                             \
  X(cuModuleLoadData, "cuModuleLoadData", CUresult(CUmodule *, const void *))  \
  X(cuModuleLoadDataEx, "cuModuleLoadDataEx",                                  \
    CUresult(CUmodule *, const void *, unsigned int, CUjit_option *, void **)) \
  X(cuModuleUnload, "cuModuleUnload", CUresult(CUmodule))                      \
  X(cuModuleGetFunction, "cuModuleGetFunction",                                \
    CUresult(CUfunction *, CUmodule, const char *))                            \
  X(cuFuncSetAttribute, "cuFuncSetAttribute",                                  \
    CUresult(CUfunction, CUfunction_attribute, int))                           \
  X(cuLaunchKernel, "cuLaunchKernel",                                          \
    CUresult(CUfunction, unsigned int, unsigned int, unsigned int,             \
             unsigned int, unsigned int, unsigned int, unsigned int, CUstream, \
             void **, void **))                                                \
  X(cuStreamCreate, "cuStreamCreate", CUresult(CUstream *, unsigned int))      \
  X(cuStreamDestroy, "cuStreamDestroy_v2", CUresult(CUstream))                 \
  X(cuStreamSynchronize, "cuStreamSynchronize", CUresult(CUstream))            \
  X(cuStreamWaitEvent, "cuStreamWaitEvent",                                    \
    CUresult(CUstream, CUevent, unsigned int))                                 \
  X(cuEventCreate, "cuEventCreate", CUresult(CUevent *, unsigned int))         \
  X(cuEventDestroy, "cuEventDestroy_v2", CUresult(CUevent))                    \
  X(cuEventRecord, "cuEventRecord", CUresult(CUevent, CUstream))               \
  X(cuEventSynchronize, "cuEventSynchronize", CUresult(CUevent))               \
  X(cuMemAlloc, "cuMemAlloc_v2", CUresult(CUdeviceptr *, size_t))              \
  X(cuMemcpyAsync, "cuMemcpyAsync",                                            \
    CUresult(CUdeviceptr, CUdeviceptr, size_t, CUstream))                      \
  X(cuMemsetD32Async, "cuMemsetD32Async",                                      \
    CUresult(CUdeviceptr, unsigned int, size_t, CUstream))                     \
  X(cuMemsetD16Async, "cuMemsetD16Async",                                      \
    CUresult(CUdeviceptr, unsigned short, size_t, CUstream))

/// One pointer per entry of KINA_CUDA_DRIVER_API, all non-null once loaded.
struct DriverApi {
#define KINA_CUDA_DRIVER_MEMBER(member, symbol, type)                          \
  std::add_pointer_t<type> member = nullptr;
  KINA_CUDA_DRIVER_API(KINA_CUDA_DRIVER_MEMBER)
#undef KINA_CUDA_DRIVER_MEMBER
};

/// The loaded driver: its API table, the driver version
/// (cuDriverGetVersion, e.g. 13000) and the number of devices it sees
/// (>= 1).
struct Driver {
  DriverApi api;
  int version = 0;
  int deviceCount = 0;
};

/// Loads the driver on the process's first call (thread-safe, once; the
/// outcome is kept for the life of the process), and on success sets
/// `driver` and returns 0. Otherwise records status 3 (GPU Error) with
/// "<where>: <reason>" as the thread's last error and returns 3; `reason` is
/// "CUDA driver not found (<library>: <dlerror>)", "CUDA driver <library>
/// lacks <symbol> (...)", "cuInit failed: <CUDA error name>: <text>", or "no
/// CUDA device". The library is $KINA_CUDA_DRIVER when set and non-empty,
/// else libcuda.so.1. Never throws.
int32_t loadDriver(const char *where, const Driver *&driver) noexcept;

/// A further driver entry point of the loaded driver by its ABI symbol name
/// (e.g. "cuMemsetD8_v2"), or null when the driver cannot be loaded (the
/// load is loadDriver's, which records why) or lacks the symbol. For code that
/// extends the runtime (and its tests) beyond KINA_CUDA_DRIVER_API.
/// Thread-safe.
void *driverSymbol(const char *symbol) noexcept;

/// "<name>: <text>" of a CUDA result, through cuGetErrorName and
/// cuGetErrorString when the driver gives them, otherwise from the
/// runtime's own table of names ("CUDA_ERROR_STUB_LIBRARY"; "CUresult <n>"
/// for a value it does not know). `api` may be null. Never throws (an empty
/// string if memory runs out).
std::string describeResult(const DriverApi *api, CUresult result) noexcept;

/// The name of a CUDA result from the runtime's own table (independent of
/// the driver), or null when it is not in the table.
const char *resultName(CUresult result) noexcept;

} // namespace kina::rt::cuda

#endif // KINA_RUNTIME_CUDADRIVER_H
