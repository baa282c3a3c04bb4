//===- CudaDriver.cpp - Loading the CUDA driver with dlopen ---------------===//
//
// Implements CudaDriver.h: the one-time load of the CUDA driver library
// (dlopen, dlsym of every KINA_CUDA_DRIVER_API entry, cuInit(0),
// cuDriverGetVersion, cuDeviceGetCount), kept for the life of the process
// (the library is never closed, as the CUDA runtime never unloads the
// driver), and the names and texts of CUDA results. Every failure is kept as
// a message and becomes status 3 (GPU Error) on each GPU call.
//
//===----------------------------------------------------------------------===//
#include "CudaDriver.h"

#include "Guard.h"

#include "kina/abi.h"

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <mutex>
#include <string>

namespace kina::rt::cuda {

namespace {

#if KINA_HAVE_CUDA_H
// With cuda.h: every table entry has the signature cuda.h declares, and the
// symbol dlsym looks up is the one cuda.h's macros map the name to.
constexpr bool sameText(const char *a, const char *b) {
  return *a == *b && (*a == '\0' || sameText(a + 1, b + 1));
}
#define KINA_CUDA_STRINGIFY(x) #x
#define KINA_CUDA_EXPANDED_NAME(x) KINA_CUDA_STRINGIFY(x)
#define KINA_CUDA_CHECK_ENTRY(member, symbol, type)                            \
  static_assert(std::is_same_v<type, decltype(::member)>,                      \
                "signature of " symbol " differs from cuda.h");                \
  static_assert(sameText(symbol, KINA_CUDA_EXPANDED_NAME(member)),             \
                "cuda.h maps " #member " to another symbol than " symbol);
KINA_CUDA_DRIVER_API(KINA_CUDA_CHECK_ENTRY)
#undef KINA_CUDA_CHECK_ENTRY
#endif

/// Names of the CUDA results the runtime may meet while loading the driver
/// and managing memory; used when the driver cannot name them itself (a stub
/// library, or a failure before cuGetErrorName was resolved).
struct ResultName {
  int value;
  const char *name;
};
#define KINA_CUDA_RESULT(name, value) {value, #name},
constexpr ResultName kResultNames[] = {
    KINA_CUDA_RESULT(CUDA_SUCCESS, 0)                                //
    KINA_CUDA_RESULT(CUDA_ERROR_INVALID_VALUE, 1)                    //
    KINA_CUDA_RESULT(CUDA_ERROR_OUT_OF_MEMORY, 2)                    //
    KINA_CUDA_RESULT(CUDA_ERROR_NOT_INITIALIZED, 3)                  //
    KINA_CUDA_RESULT(CUDA_ERROR_DEINITIALIZED, 4)                    //
    KINA_CUDA_RESULT(CUDA_ERROR_STUB_LIBRARY, 34)                    //
    KINA_CUDA_RESULT(CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, 36)      //
    KINA_CUDA_RESULT(CUDA_ERROR_DEVICE_UNAVAILABLE, 46)              //
    KINA_CUDA_RESULT(CUDA_ERROR_NO_DEVICE, 100)                      //
    KINA_CUDA_RESULT(CUDA_ERROR_INVALID_DEVICE, 101)                 //
    KINA_CUDA_RESULT(CUDA_ERROR_DEVICE_NOT_LICENSED, 102)            //
    KINA_CUDA_RESULT(CUDA_ERROR_INVALID_CONTEXT, 201)                //
    KINA_CUDA_RESULT(CUDA_ERROR_OPERATING_SYSTEM, 304)               //
    KINA_CUDA_RESULT(CUDA_ERROR_INVALID_HANDLE, 400)                 //
    KINA_CUDA_RESULT(CUDA_ERROR_NOT_FOUND, 500)                      //
    KINA_CUDA_RESULT(CUDA_ERROR_ILLEGAL_ADDRESS, 700)                //
    KINA_CUDA_RESULT(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709)           //
    KINA_CUDA_RESULT(CUDA_ERROR_LAUNCH_FAILED, 719)                  //
    KINA_CUDA_RESULT(CUDA_ERROR_NOT_PERMITTED, 800)                  //
    KINA_CUDA_RESULT(CUDA_ERROR_NOT_SUPPORTED, 801)                  //
    KINA_CUDA_RESULT(CUDA_ERROR_SYSTEM_NOT_READY, 802)               //
    KINA_CUDA_RESULT(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)         //
    KINA_CUDA_RESULT(CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804) //
    KINA_CUDA_RESULT(CUDA_ERROR_UNKNOWN, 999)                        //
};
#undef KINA_CUDA_RESULT

#if KINA_HAVE_CUDA_H
constexpr bool resultTableMatchesCudaH() {
  // Spelled out so a wrong value names itself in the compiler's error.
  return CUDA_SUCCESS == 0 && CUDA_ERROR_INVALID_VALUE == 1 &&
         CUDA_ERROR_OUT_OF_MEMORY == 2 && CUDA_ERROR_NOT_INITIALIZED == 3 &&
         CUDA_ERROR_DEINITIALIZED == 4 && CUDA_ERROR_STUB_LIBRARY == 34 &&
         CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER == 36 &&
         CUDA_ERROR_DEVICE_UNAVAILABLE == 46 && CUDA_ERROR_NO_DEVICE == 100 &&
         CUDA_ERROR_INVALID_DEVICE == 101 &&
         CUDA_ERROR_DEVICE_NOT_LICENSED == 102 &&
         CUDA_ERROR_INVALID_CONTEXT == 201 &&
         CUDA_ERROR_OPERATING_SYSTEM == 304 &&
         CUDA_ERROR_INVALID_HANDLE == 400 && CUDA_ERROR_NOT_FOUND == 500 &&
         CUDA_ERROR_ILLEGAL_ADDRESS == 700 &&
         CUDA_ERROR_CONTEXT_IS_DESTROYED == 709 &&
         CUDA_ERROR_LAUNCH_FAILED == 719 && CUDA_ERROR_NOT_PERMITTED == 800 &&
         CUDA_ERROR_NOT_SUPPORTED == 801 &&
         CUDA_ERROR_SYSTEM_NOT_READY == 802 &&
         CUDA_ERROR_SYSTEM_DRIVER_MISMATCH == 803 &&
         CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE == 804 &&
         CUDA_ERROR_UNKNOWN == 999 && CU_MEM_ATTACH_GLOBAL == 1 &&
         CU_MEMORYTYPE_HOST == 1 && CU_MEMORYTYPE_DEVICE == 2 &&
         CU_MEMORYTYPE_UNIFIED == 4 &&
         CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES == 8 &&
         CU_JIT_ERROR_LOG_BUFFER == 5 &&
         CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES == 6 &&
         CU_JIT_OPTIMIZATION_LEVEL == 7 && CU_STREAM_NON_BLOCKING == 1 &&
         CU_EVENT_DISABLE_TIMING == 2 && CU_POINTER_ATTRIBUTE_IS_MANAGED == 8 &&
         CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL == 9 &&
         sizeof(CUdeviceptr) == sizeof(unsigned long long) &&
         sizeof(CUresult) == sizeof(int) && sizeof(CUdevice) == sizeof(int);
}
static_assert(resultTableMatchesCudaH(),
              "the runtime's CUDA result table differs from cuda.h");
#endif

/// The process's one load attempt: the driver when `status` is 0, otherwise
/// the reason it failed (without a `where` prefix).
struct LoadState {
  Driver driver;
  void *handle = nullptr;
  int32_t status = KINA_STATUS_GPU_ERROR;
  std::string reason;
};

std::once_flag loadOnce;
LoadState *loadState = nullptr; // Set once under loadOnce; never freed.

/// Resolves every table entry; on a missing one sets `reason` and returns
/// false.
bool resolveTable(void *handle, const std::string &library, DriverApi &api,
                  std::string &reason) {
#define KINA_CUDA_RESOLVE(member, symbol, type)                                \
  {                                                                            \
    dlerror();                                                                 \
    void *address = dlsym(handle, symbol);                                     \
    if (!address) {                                                            \
      const char *error = dlerror();                                           \
      reason = "CUDA driver " + library + " lacks " symbol " (" +              \
               (error ? error : "null symbol") + ")";                          \
      return false;                                                            \
    }                                                                          \
    api.member = reinterpret_cast<std::add_pointer_t<type>>(address);          \
  }
  KINA_CUDA_DRIVER_API(KINA_CUDA_RESOLVE)
#undef KINA_CUDA_RESOLVE
  return true;
}

/// The whole load, run once. Leaves the outcome in `state`.
void load(LoadState &state) {
  const char *override = std::getenv("KINA_CUDA_DRIVER");
  std::string library =
      override && *override ? std::string(override) : "libcuda.so.1";
  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *error = dlerror();
    state.reason = "CUDA driver not found (" + library + ": " +
                   (error ? error : "dlopen failed") + ")";
    return;
  }
  state.handle = handle;
  DriverApi &api = state.driver.api;
  if (!resolveTable(handle, library, api, state.reason))
    return;
  CUresult result = api.cuInit(0);
  if (result == CUDA_ERROR_NO_DEVICE) {
    state.reason = "no CUDA device (cuInit: " + describeResult(&api, result) +
                   "; driver " + library + ")";
    return;
  }
  if (result != CUDA_SUCCESS) {
    state.reason = "cuInit failed: " + describeResult(&api, result) +
                   " (driver " + library + ")";
    return;
  }
  result = api.cuDriverGetVersion(&state.driver.version);
  if (result != CUDA_SUCCESS) {
    state.reason = "cuDriverGetVersion failed: " + describeResult(&api, result);
    return;
  }
  result = api.cuDeviceGetCount(&state.driver.deviceCount);
  if (result != CUDA_SUCCESS) {
    state.reason = "cuDeviceGetCount failed: " + describeResult(&api, result);
    return;
  }
  if (state.driver.deviceCount <= 0) {
    state.reason = "no CUDA device (the driver " + library + " sees none)";
    return;
  }
  state.status = KINA_STATUS_SUCCESS;
}

} // namespace

const char *resultName(CUresult result) noexcept {
  for (const ResultName &entry : kResultNames)
    if (entry.value == static_cast<int>(result))
      return entry.name;
  return nullptr;
}

std::string describeResult(const DriverApi *api, CUresult result) noexcept {
  try {
    const char *name = nullptr;
    const char *text = nullptr;
    if (api && api->cuGetErrorName &&
        api->cuGetErrorName(result, &name) != CUDA_SUCCESS)
      name = nullptr;
    if (api && api->cuGetErrorString &&
        api->cuGetErrorString(result, &text) != CUDA_SUCCESS)
      text = nullptr;
    if (!name)
      name = resultName(result);
    std::string described =
        name ? std::string(name)
             : "CUresult " + std::to_string(static_cast<int>(result));
    described += ": ";
    described += text ? text
                 : result == CUDA_ERROR_STUB_LIBRARY
                     ? "the CUDA driver loaded is the CUDA Toolkit's stub "
                       "library, not a real driver"
                     : "no description (the driver gave none)";
    return described;
  } catch (...) {
    return std::string();
  }
}

int32_t loadDriver(const char *where, const Driver *&driver) noexcept {
  driver = nullptr;
  try {
    std::call_once(loadOnce, [] {
      auto state = std::make_unique<LoadState>();
      load(*state);
      loadState = state.release();
    });
  } catch (...) {
    // call_once rethrows a failure of the first attempt (e.g. bad_alloc) and
    // lets a later call try again.
    return failIn(KINA_STATUS_GPU_ERROR, where,
                  "cannot load the CUDA driver: out of memory");
  }
  if (loadState->status != KINA_STATUS_SUCCESS)
    return failIn(loadState->status, where, loadState->reason.c_str());
  driver = &loadState->driver;
  return KINA_STATUS_SUCCESS;
}

void *driverSymbol(const char *symbol) noexcept {
  // loadState is written inside call_once, which synchronises with every
  // later call_once on the same flag: take that path to read it safely.
  const Driver *driver = nullptr;
  if (!symbol || loadDriver("driverSymbol", driver) != KINA_STATUS_SUCCESS)
    return nullptr;
  return dlsym(loadState->handle, symbol);
}

} // namespace kina::rt::cuda
