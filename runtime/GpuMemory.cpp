//===- GpuMemory.cpp - CUDA device selection and managed memory -----------===//
//
// Implements GpuMemory.h and the runtime's device selection functions of the
// C interface (runtime_gpu_set_device, runtime_gpu_get_device). Every CUDA
// result is checked; a failure becomes status 3 (2 for CUDA_ERROR_OUT_OF_
// MEMORY) with the call, the device and the CUDA error's name and text in
// kina_last_error(). Nothing aborts and no exception leaves this file.
//
//===----------------------------------------------------------------------===//
#include "GpuMemory.h"

#include "GpuLaunch.h"
#include "Guard.h"

#include "kina/runtime.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace kina::rt::gpu {

namespace {

using cuda::Driver;
using cuda::DriverApi;

/// runtime_gpu_set_device's choice; -1 until it is called.
std::atomic<int32_t> explicitDevice{-1};

/// The device of the calling thread's current kina_<fn> call; -1 outside.
thread_local int32_t callDevice = -1;

/// $KINA_DEVICE, parsed once: the ordinal, or an error message.
struct EnvironmentDevice {
  int32_t device = 0;
  std::string error;
};

const EnvironmentDevice &environmentDevice() {
  static const EnvironmentDevice parsed = [] {
    EnvironmentDevice result;
    const char *text = std::getenv("KINA_DEVICE");
    if (!text || !*text)
      return result;
    errno = 0;
    char *end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (errno || *end || end == text || value < 0 || value > INT32_MAX ||
        text[0] == '+' || text[0] == ' ')
      result.error = std::string("KINA_DEVICE='") + text +
                     "' is not a CUDA device ordinal (a decimal integer >= 0)";
    else
      result.device = static_cast<int32_t>(value);
    return result;
  }();
  return parsed;
}

/// Records "<where>: <what>: <CUDA error>" with status 3, or 2 for
/// CUDA_ERROR_OUT_OF_MEMORY.
int32_t failCuda(const DriverApi &api, CUresult result,
                 const std::string &where, const std::string &what) noexcept {
  try {
    return fail(result == CUDA_ERROR_OUT_OF_MEMORY ? KINA_STATUS_RESOURCE_ERROR
                                                   : KINA_STATUS_GPU_ERROR,
                where + ": " + what + ": " +
                    cuda::describeResult(&api, result));
  } catch (...) {
    return fail(KINA_STATUS_GPU_ERROR, what.c_str());
  }
}

/// The retained primary contexts, by device ordinal (null: not retained yet).
struct ContextTable {
  std::mutex mutex;
  std::vector<CUcontext> contexts;
};

ContextTable &contextTable() {
  static ContextTable *table = new ContextTable(); // Never freed.
  return *table;
}

/// Loads the driver and checks that `device` exists.
int32_t openDevice(const std::string &where, int32_t device,
                   const Driver *&driver) {
  int32_t status = cuda::loadDriver(where.c_str(), driver);
  if (status != KINA_STATUS_SUCCESS)
    return status;
  if (device < 0 || device >= driver->deviceCount)
    return fail(KINA_STATUS_GPU_ERROR,
                where + ": CUDA device " + std::to_string(device) +
                    " does not exist (the driver sees " +
                    std::to_string(driver->deviceCount) + " device" +
                    (driver->deviceCount == 1 ? "" : "s") + ")");
  return KINA_STATUS_SUCCESS;
}

int32_t retainPrimaryContext(const Driver &driver, const std::string &where,
                             int32_t device, CUcontext &context) {
  ContextTable &table = contextTable();
  std::lock_guard<std::mutex> lock(table.mutex);
  if (table.contexts.size() < static_cast<size_t>(driver.deviceCount))
    table.contexts.resize(driver.deviceCount, nullptr);
  if (!table.contexts[device]) {
    const DriverApi &api = driver.api;
    CUdevice handle = 0;
    CUresult result = api.cuDeviceGet(&handle, device);
    if (result != CUDA_SUCCESS)
      return failCuda(api, result, where,
                      "cuDeviceGet(" + std::to_string(device) + ") failed");
    CUcontext retained = nullptr;
    result = api.cuDevicePrimaryCtxRetain(&retained, handle);
    if (result != CUDA_SUCCESS)
      return failCuda(api, result, where,
                      "cuDevicePrimaryCtxRetain on CUDA device " +
                          std::to_string(device) + " failed");
    table.contexts[device] = retained;
  }
  context = table.contexts[device];
  return KINA_STATUS_SUCCESS;
}

/// Makes `context` current on the calling thread for the lifetime of the
/// object and restores the previous one in restore().
class ScopedContext {
public:
  ScopedContext(const DriverApi &api, const std::string &where)
      : api(api), where(where) {}

  int32_t enter(CUcontext context) {
    CUresult result = api.cuCtxGetCurrent(&previous);
    if (result != CUDA_SUCCESS)
      return failCuda(api, result, where, "cuCtxGetCurrent failed");
    if (previous == context)
      return KINA_STATUS_SUCCESS;
    result = api.cuCtxSetCurrent(context);
    if (result != CUDA_SUCCESS)
      return failCuda(api, result, where, "cuCtxSetCurrent failed");
    switched = true;
    return KINA_STATUS_SUCCESS;
  }

  /// Puts the previous context back; 0, or 3 if the driver refused.
  int32_t restore() {
    if (!switched)
      return KINA_STATUS_SUCCESS;
    switched = false;
    CUresult result = api.cuCtxSetCurrent(previous);
    if (result != CUDA_SUCCESS)
      return failCuda(api, result, where,
                      "cuCtxSetCurrent (restoring the caller's context) "
                      "failed");
    return KINA_STATUS_SUCCESS;
  }

  ~ScopedContext() {
    if (switched)
      (void)api.cuCtxSetCurrent(previous); // Only on an exception path.
  }

private:
  const DriverApi &api;
  const std::string &where;
  CUcontext previous = nullptr;
  bool switched = false;
};

std::string pointerText(void *pointer) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", pointer);
  return text;
}

} // namespace

void setCallDevice(int32_t device) noexcept { callDevice = device; }

int32_t selectedDevice(const char *where, int32_t &device) noexcept {
  if (callDevice >= 0) {
    device = callDevice;
    return KINA_STATUS_SUCCESS;
  }
  int32_t chosen = explicitDevice.load();
  if (chosen >= 0) {
    device = chosen;
    return KINA_STATUS_SUCCESS;
  }
  try {
    const EnvironmentDevice &environment = environmentDevice();
    if (!environment.error.empty())
      return failIn(KINA_STATUS_VALIDATION_ERROR, where,
                    environment.error.c_str());
    device = environment.device;
    return KINA_STATUS_SUCCESS;
  } catch (...) {
    return failIn(KINA_STATUS_RESOURCE_ERROR, where, "out of memory");
  }
}

int32_t primaryContext(const char *where, int32_t device,
                       CUcontext &context) noexcept {
  return guardStatus(where, [&] {
    std::string prefix = where;
    const Driver *driver = nullptr;
    int32_t status = openDevice(prefix, device, driver);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    return retainPrimaryContext(*driver, prefix, device, context);
  });
}

int32_t allocateManaged(const std::string &where, int64_t bytes, void *&result,
                        int32_t &device) noexcept {
  result = nullptr;
  return guardStatus(where.c_str(), [&] {
    int32_t status = selectedDevice(where.c_str(), device);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    const Driver *driver = nullptr;
    status = openDevice(where, device, driver);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    CUcontext context = nullptr;
    status = retainPrimaryContext(*driver, where, device, context);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    const DriverApi &api = driver->api;
    std::string on = " on CUDA device " + std::to_string(device);
    ScopedContext scope(api, where);
    status = scope.enter(context);
    if (status != KINA_STATUS_SUCCESS)
      return status;

    size_t freeBytes = 0, totalBytes = 0;
    CUresult cuResult = api.cuMemGetInfo(&freeBytes, &totalBytes);
    if (cuResult != CUDA_SUCCESS) {
      failCuda(api, cuResult, where, "cuMemGetInfo" + on + " failed");
      scope.restore();
      return KINA_STATUS_GPU_ERROR;
    }
    if (static_cast<uint64_t>(bytes) > freeBytes) {
      scope.restore();
      return fail(KINA_STATUS_RESOURCE_ERROR,
                  where + ": cannot allocate " + std::to_string(bytes) +
                      " bytes of managed memory" + on + ": it has " +
                      std::to_string(freeBytes) + " bytes free");
    }
    CUdeviceptr address = 0;
    cuResult = api.cuMemAllocManaged(&address,
                                     bytes > 0 ? static_cast<size_t>(bytes) : 1,
                                     CU_MEM_ATTACH_GLOBAL);
    if (cuResult != CUDA_SUCCESS) {
      status = failCuda(api, cuResult, where,
                        "cuMemAllocManaged of " + std::to_string(bytes) +
                            " bytes" + on + " failed");
      scope.restore();
      return status;
    }
    status = scope.restore();
    if (status != KINA_STATUS_SUCCESS) {
      (void)api.cuMemFree(address); // Give it back; the restore error stands.
      return status;
    }
    result = reinterpret_cast<void *>(static_cast<uintptr_t>(address));
    return KINA_STATUS_SUCCESS;
  });
}

int32_t freeManaged(void *pointer, int32_t device, const char *where) noexcept {
  return guardStatus(where, [&] {
    std::string prefix = where;
    const Driver *driver = nullptr;
    int32_t status = openDevice(prefix, device, driver);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    CUcontext context = nullptr;
    status = retainPrimaryContext(*driver, prefix, device, context);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    const DriverApi &api = driver->api;
    ScopedContext scope(api, prefix);
    status = scope.enter(context);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    CUresult result = api.cuMemFree(
        static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer)));
    if (result != CUDA_SUCCESS) {
      failCuda(api, result, prefix,
               "cuMemFree of " + pointerText(pointer) + " on CUDA device " +
                   std::to_string(device) + " failed");
      scope.restore();
      return KINA_STATUS_GPU_ERROR;
    }
    return scope.restore();
  });
}

namespace {
/// cuMemPrefetchAsync_v2's CUmemLocation (cuda.h: {CUmemLocationType type;
/// int id;}, CU_MEM_LOCATION_TYPE_DEVICE = 1).
struct PrefetchLocation {
  int type;
  int id;
};
using PrefetchFunction = CUresult (*)(CUdeviceptr, size_t, PrefetchLocation,
                                      unsigned int, CUstream);
struct PrefetchRequest {
  void *pointer;
  int64_t bytes;
  PrefetchFunction prefetch;
};
} // namespace

void prefetchToCallDevice(void *pointer, int64_t bytes) noexcept {
  if (!pointer || bytes <= 0 || !inCall())
    return;
  static const PrefetchFunction prefetch = reinterpret_cast<PrefetchFunction>(
      cuda::driverSymbol("cuMemPrefetchAsync_v2"));
  if (!prefetch)
    return;
  PrefetchRequest request{pointer, bytes, prefetch};
  onThreadStream(
      "runtime_gpu_alloc_unranked",
      [](void *state, const cuda::DriverApi &, CUstream stream,
         int32_t device) {
        auto *r = static_cast<PrefetchRequest *>(state);
        (void)r->prefetch(
            static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(r->pointer)),
            static_cast<size_t>(r->bytes), PrefetchLocation{1, device}, 0,
            stream);
        return KINA_STATUS_SUCCESS; // Advice: a refusal changes nothing.
      },
      &request);
}

} // namespace kina::rt::gpu

extern "C" {

int32_t runtime_gpu_set_device(int32_t device) {
  const char *where = "runtime_gpu_set_device";
  return kina::rt::guardStatus(where, [&] {
    if (device < 0)
      return kina::rt::fail(KINA_STATUS_VALIDATION_ERROR,
                            std::string(where) + ": device ordinal " +
                                std::to_string(device) + " is negative");
    const kina::rt::cuda::Driver *driver = nullptr;
    int32_t status = kina::rt::gpu::openDevice(where, device, driver);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    kina::rt::gpu::explicitDevice.store(device);
    return KINA_STATUS_SUCCESS;
  });
}

int32_t runtime_gpu_get_device(int32_t *device) {
  const char *where = "runtime_gpu_get_device";
  return kina::rt::guardStatus(where, [&] {
    if (!device)
      return kina::rt::failIn(KINA_STATUS_VALIDATION_ERROR, where,
                              "null pointer");
    int32_t chosen = 0;
    int32_t status = kina::rt::gpu::selectedDevice(where, chosen);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    *device = chosen;
    return KINA_STATUS_SUCCESS;
  });
}

} // extern "C"
