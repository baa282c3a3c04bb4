//===- GpuLaunch.cpp - mgpu* kernel launches and the GPU call frame -------===//
//
// The kernel-launch half of the runtime's GPU path (the seed's "Phase 1 GPU
// Execution"), over the CUDA driver that CudaDriver.h loads with dlopen:
//   * the `mgpu*` functions MLIR 22's gpu-to-llvm lowering and gpu.binary
//     translation (SelectObjectAttr) call from a cuda object, with the C
//     signatures MLIR 22 emits (its CudaRuntimeWrappers.cpp is the model).
//     Unlike that file, nothing here aborts or prints: every CUDA result is
//     checked, and a failure becomes the calling thread's pending GPU error
//     (status 3, or 2 for CUDA_ERROR_OUT_OF_MEMORY, with the call and CUDA's
//     error name and text), also recorded as its last error;
//   * kina_rt_gpu_enter / kina_rt_gpu_check_argument / kina_rt_gpu_exit,
//     which a cuda object's status entry `kina_<fn>` calls around the
//     compiled code (contract: the project's GPU_RT_API notes, documented in
//     kina/runtime.h), and kina_rt_gpu_enter_stream, the frame of a
//     TensorDesc entry `kinatd_<fn>`: the caller's device and stream.
// Binaries are registered by mgpuModuleLoad (from a global constructor, so
// it touches neither the driver nor any other static object) and loaded
// lazily, once per process and device, under the binary's lock. Each thread
// gets one non-blocking stream per device, created on its first
// mgpuStreamCreate and destroyed when the thread exits; mgpuStreamDestroy
// leaves such streams alone. Every function makes the selected device's
// primary context current for its own duration when it is not already, and
// restores the caller's context afterwards; inside a kina_<fn> call, where
// kina_rt_gpu_enter made the call device's context current until
// kina_rt_gpu_exit, they take it without asking the driver. A steady-state
// call thus makes one cuCtxGetCurrent (at the enter; plus the switch and
// the restore when the caller had another context current), one
// cuPointerGetAttributes per argument the runtime did not allocate, its
// launches and one cuStreamSynchronize, and no heap allocation
// (tests/runtime/callcount checks it).
//
//===----------------------------------------------------------------------===//
#include "GpuLaunch.h"

#include "CudaDriver.h"
#include "GpuMemory.h"
#include "Guard.h"
#include "Registry.h"

#include "kina/runtime.h"

#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace kina::rt::gpu {

namespace {

using cuda::Driver;
using cuda::DriverApi;

/// Dynamic shared memory a kernel gets without cuFuncSetAttribute.
constexpr int64_t kDefaultSharedMemoryLimit = 48 * 1024;

std::atomic<int64_t> moduleLoads{0};
std::atomic<int64_t> liveStreams{0};

/// A GPU binary registered by mgpuModuleLoad (a fatbin or cubin) or
/// mgpuModuleLoadJIT (NUL-terminated PTX), loaded lazily per device. The
/// bytes belong to the object that registered them (a constant global of
/// compiled code) and are not copied.
struct GpuModule {
  const void *data = nullptr;
  size_t size = 0;
  bool ptx = false;
  int optLevel = 0;
  std::mutex mutex;
  /// What one device has loaded; `functions` keeps each kernel name the
  /// compiled code asked for (the pointer it passed, then the text).
  struct PerDevice {
    CUmodule module = nullptr;
    CUcontext context = nullptr;
    std::vector<std::pair<const char *, CUfunction>> functions;
  };
  std::vector<PerDevice> devices; ///< By device ordinal.
};

/// Every kernel the runtime resolved: its name (for messages) and the
/// largest dynamic shared memory size it was allowed so far.
struct FunctionInfo {
  std::string name;
  int64_t sharedLimit = kDefaultSharedMemoryLimit;
};
struct FunctionTable {
  std::mutex mutex;
  std::unordered_map<CUfunction, FunctionInfo> functions;
  std::unordered_set<CUstream> threadStreams; ///< Streams owned by threads.
};
FunctionTable &functionTable() {
  static FunctionTable *table = new FunctionTable(); // Never freed.
  return *table;
}

/// The calling thread's GPU state.
struct ThreadGpu {
  int32_t callDepth = 0;   ///< Nesting of kina_rt_gpu_enter calls.
  int32_t callDevice = -1; ///< Device of the current call.
  /// The primary context of callDevice, current on this thread from
  /// kina_rt_gpu_enter to kina_rt_gpu_exit (the runtime switches no context
  /// in between), so the mgpu* functions of the call need not ask the
  /// driver which context is current.
  CUcontext callContext = nullptr;
  const cuda::Driver *callDriver = nullptr; ///< The driver of the call.
  CUcontext callerContext = nullptr;
  bool switchedContext = false;
  int32_t defaultDevice = -1; ///< mgpuSetDefaultDevice's, -1 if none.
  int32_t pendingStatus = KINA_STATUS_SUCCESS;
  std::string pendingMessage;
  /// Set by kina_rt_gpu_enter_stream for its frame: the caller's stream
  /// (null: the default stream) replaces the thread's own on the call's
  /// device, for launches, copies and the synchronisation at the exit.
  bool useCallerStream = false;
  CUstream callerStream = nullptr;
  const DriverApi *api = nullptr;  ///< Set once the thread made a stream.
  std::vector<CUstream> streams;   ///< By device ordinal.
  std::vector<CUcontext> contexts; ///< Primary contexts, by ordinal.

  ~ThreadGpu() {
    if (!api)
      return;
    for (CUstream stream : streams) {
      if (!stream)
        continue;
      try {
        FunctionTable &table = functionTable();
        std::lock_guard<std::mutex> lock(table.mutex);
        table.threadStreams.erase(stream);
      } catch (...) {
      }
      // At process exit the driver may be deinitialised already: any
      // result is accepted, the stream is gone either way.
      (void)api->cuStreamDestroy(stream);
      liveStreams.fetch_sub(1);
    }
  }
};

ThreadGpu &threadGpu() {
  thread_local ThreadGpu state;
  return state;
}

/// Keeps `status` and `message` as the thread's pending GPU error unless
/// one is pending already (the first error is the one reported), records
/// them as its last error, and returns `status`.
int32_t pend(int32_t status, const std::string &message) noexcept {
  ThreadGpu &thread = threadGpu();
  if (thread.pendingStatus == KINA_STATUS_SUCCESS) {
    thread.pendingStatus = status;
    try {
      thread.pendingMessage = message;
    } catch (...) {
      thread.pendingMessage.clear();
    }
  }
  return fail(status, message);
}

/// Makes the thread's last error (just recorded by a runtime function) its
/// pending GPU error too.
int32_t pendLast(int32_t status) noexcept {
  try {
    return pend(status, kina_last_error());
  } catch (...) {
    return status;
  }
}

/// "<where>: <what>: <CUDA name>: <text>" as a pending error; 2 for
/// CUDA_ERROR_OUT_OF_MEMORY, else 3.
int32_t pendCuda(const DriverApi &api, CUresult result, const char *where,
                 const std::string &what) noexcept {
  try {
    return pend(result == CUDA_ERROR_OUT_OF_MEMORY ? KINA_STATUS_RESOURCE_ERROR
                                                   : KINA_STATUS_GPU_ERROR,
                std::string(where) + ": " + what + ": " +
                    cuda::describeResult(&api, result));
  } catch (...) {
    return pend(KINA_STATUS_GPU_ERROR, where);
  }
}

std::string functionName(CUfunction function) {
  FunctionTable &table = functionTable();
  std::lock_guard<std::mutex> lock(table.mutex);
  auto it = table.functions.find(function);
  return it == table.functions.end() ? std::string("a kernel")
                                     : "kernel " + it->second.name;
}

/// The driver, the device and its primary context that a GPU function of
/// the calling thread works with, made current for the object's lifetime
/// (the caller's context is restored by the destructor).
class Active {
public:
  explicit Active(const char *where) : where(where) {}
  Active(const Active &) = delete;
  Active &operator=(const Active &) = delete;

  /// Loads the driver and makes the device's primary context current.
  /// Returns 0, else a status already made pending.
  int32_t open() {
    ThreadGpu &thread = threadGpu();
    int32_t status = KINA_STATUS_SUCCESS;
    if (thread.callDepth > 0 && thread.callContext && thread.callDriver) {
      // Inside a kina_<fn> call: kina_rt_gpu_enter made the call device's
      // context current for the whole call; no driver call is needed.
      device = thread.callDevice;
      context = thread.callContext;
      driver = thread.callDriver;
      return KINA_STATUS_SUCCESS;
    }
    if (thread.callDepth > 0)
      device = thread.callDevice;
    else if (thread.defaultDevice >= 0)
      device = thread.defaultDevice;
    else if ((status = selectedDevice(where, device)) != KINA_STATUS_SUCCESS)
      return pendLast(status);
    if (static_cast<size_t>(device) < thread.contexts.size() &&
        thread.contexts[device]) {
      context = thread.contexts[device];
      status = cuda::loadDriver(where, driver); // Loaded: a quick check.
    } else {
      status = primaryContext(where, device, context);
      if (status == KINA_STATUS_SUCCESS) {
        status = cuda::loadDriver(where, driver);
        if (thread.contexts.size() <= static_cast<size_t>(device))
          thread.contexts.resize(device + 1, nullptr);
        thread.contexts[device] = context;
      }
    }
    if (status != KINA_STATUS_SUCCESS)
      return pendLast(status);
    const DriverApi &api = driver->api;
    CUresult result = api.cuCtxGetCurrent(&previous);
    if (result != CUDA_SUCCESS)
      return pendCuda(api, result, where, "cuCtxGetCurrent failed");
    if (previous != context) {
      result = api.cuCtxSetCurrent(context);
      if (result != CUDA_SUCCESS)
        return pendCuda(api, result, where,
                        "cuCtxSetCurrent (CUDA device " +
                            std::to_string(device) + ") failed");
      switched = true;
    }
    return KINA_STATUS_SUCCESS;
  }

  ~Active() {
    if (!switched)
      return;
    const DriverApi &api = driver->api;
    CUresult result = api.cuCtxSetCurrent(previous);
    if (result != CUDA_SUCCESS)
      pendCuda(api, result, where,
               "cuCtxSetCurrent (restoring the caller's context) failed");
  }

  const DriverApi &api() const { return driver->api; }

  /// The calling thread's stream on this device, created on first use.
  /// Null (and a pending error) if it cannot be created.
  CUstream threadStream() {
    ThreadGpu &thread = threadGpu();
    if (thread.callDepth > 0 && thread.useCallerStream)
      return thread.callerStream; // kina_rt_gpu_enter_stream's frame.
    if (static_cast<size_t>(device) < thread.streams.size() &&
        thread.streams[device])
      return thread.streams[device];
    if (thread.streams.size() <= static_cast<size_t>(device))
      thread.streams.resize(device + 1, nullptr);
    CUstream stream = nullptr;
    CUresult result = api().cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
    if (result != CUDA_SUCCESS) {
      pendCuda(api(), result, where,
               "cuStreamCreate on CUDA device " + std::to_string(device) +
                   " failed");
      return nullptr;
    }
    try {
      FunctionTable &table = functionTable();
      std::lock_guard<std::mutex> lock(table.mutex);
      table.threadStreams.insert(stream);
    } catch (...) {
      (void)api().cuStreamDestroy(stream);
      pend(KINA_STATUS_RESOURCE_ERROR,
           std::string(where) + ": out of memory recording a stream");
      return nullptr;
    }
    thread.api = &api();
    thread.streams[device] = stream;
    liveStreams.fetch_add(1);
    return stream;
  }

  const char *where;
  const Driver *driver = nullptr;
  int32_t device = 0;
  CUcontext context = nullptr;

private:
  CUcontext previous = nullptr;
  bool switched = false;
};

/// Runs `body` under the C-boundary guard; an exception becomes a pending
/// error as well (the guard has recorded it as the last error).
template <typename Body>
int32_t guarded(const char *where, Body &&body) noexcept {
  int32_t status = guardStatus(where, body);
  ThreadGpu &thread = threadGpu();
  if (status != KINA_STATUS_SUCCESS &&
      thread.pendingStatus == KINA_STATUS_SUCCESS)
    pendLast(status);
  return status;
}

/// The frame every mgpu* function shares: under the C-boundary guard, opens
/// the device (Active::open: the driver, the device's primary context made
/// current for the duration) and runs `body(active)`, which returns a
/// status (0, or one it made pending). Returns that status.
template <typename Body>
int32_t onDevice(const char *where, Body &&body) noexcept {
  return guarded(where, [&] {
    Active active(where);
    int32_t status = active.open();
    if (status != KINA_STATUS_SUCCESS)
      return status;
    return body(active);
  });
}

/// 0 when `result` is CUDA_SUCCESS; otherwise makes "<where>: <what>:
/// <CUDA error>" the thread's pending error and returns its status (2 for
/// CUDA_ERROR_OUT_OF_MEMORY, else 3).
int32_t checked(const Active &active, CUresult result, const char *what) {
  if (result == CUDA_SUCCESS)
    return KINA_STATUS_SUCCESS;
  return pendCuda(active.api(), result, active.where, what);
}

/// Loads `module` on the active device if needed (under its lock) and
/// returns the function `name`, or null with a pending error.
CUfunction moduleFunction(Active &active, GpuModule &module, const char *name) {
  const DriverApi &api = active.api();
  std::lock_guard<std::mutex> lock(module.mutex);
  if (module.devices.size() <= static_cast<size_t>(active.device))
    module.devices.resize(active.device + 1);
  GpuModule::PerDevice &loaded = module.devices[active.device];
  // Built on the error paths only (the steady state allocates nothing).
  auto on = [&] { return " on CUDA device " + std::to_string(active.device); };
  if (!loaded.module) {
    CUmodule handle = nullptr;
    CUresult result;
    char log[4096] = {0};
    if (module.ptx) {
      CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER,
                                CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                CU_JIT_OPTIMIZATION_LEVEL};
      void *values[] = {
          log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof(log))),
          reinterpret_cast<void *>(static_cast<uintptr_t>(module.optLevel))};
      result = api.cuModuleLoadDataEx(&handle, module.data, 3, options, values);
    } else {
      result = api.cuModuleLoadData(&handle, module.data);
    }
    if (result != CUDA_SUCCESS) {
      std::string what =
          std::string(module.ptx ? "cuModuleLoadDataEx of PTX"
                                 : "cuModuleLoadData of a GPU binary") +
          " (" + std::to_string(module.size) + " bytes)" + on() + " failed";
      log[sizeof(log) - 1] = '\0';
      if (log[0])
        what += std::string(" (JIT log: ") + log + ")";
      pendCuda(api, result, active.where, what);
      return nullptr;
    }
    loaded.module = handle;
    loaded.context = active.context;
    moduleLoads.fetch_add(1);
  }
  for (const auto &[known, function] : loaded.functions)
    if (known == name || std::strcmp(known, name) == 0)
      return function;
  CUfunction function = nullptr;
  CUresult result = api.cuModuleGetFunction(&function, loaded.module, name);
  if (result != CUDA_SUCCESS) {
    pendCuda(api, result, active.where,
             std::string("cuModuleGetFunction(\"") + name + "\")" + on() +
                 " failed");
    return nullptr;
  }
  loaded.functions.emplace_back(name, function);
  FunctionTable &table = functionTable();
  std::lock_guard<std::mutex> tableLock(table.mutex);
  table.functions[function].name = name;
  return function;
}

/// A size or count from compiled code as the unsigned int CUDA takes;
/// false if it does not fit.
bool fitsUnsigned(intptr_t value) {
  return value >= 0 && static_cast<uintmax_t>(value) <= UINT_MAX;
}

CUdeviceptr devicePointer(const void *pointer) {
  return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(pointer));
}

/// Whether `stream` is a thread's own stream (kept until its thread exits).
bool isThreadStream(CUstream stream) {
  for (CUstream own : threadGpu().streams) // The usual case: no lock.
    if (own && own == stream)
      return true;
  FunctionTable &table = functionTable();
  std::lock_guard<std::mutex> lock(table.mutex);
  return table.threadStreams.count(stream) > 0;
}

/// Whether `stream` is the calling thread's stream on the device of its
/// current kina_<fn> call (false outside a call).
bool isCallStream(CUstream stream) noexcept {
  ThreadGpu &thread = threadGpu();
  if (thread.callDepth > 0 && thread.useCallerStream)
    return stream == thread.callerStream; // May be null: the default stream.
  return stream && thread.callDepth > 0 && thread.callDevice >= 0 &&
         static_cast<size_t>(thread.callDevice) < thread.streams.size() &&
         thread.streams[thread.callDevice] == stream;
}

} // namespace

int32_t onThreadStream(const char *where, StreamBody body,
                       void *state) noexcept {
  return onDevice(where, [&](Active &active) {
    CUstream stream = active.threadStream();
    // The caller's stream of kina_rt_gpu_enter_stream may be null (the
    // default stream); the thread's own never is.
    ThreadGpu &thread = threadGpu();
    bool callerStream = thread.callDepth > 0 && thread.useCallerStream;
    if (!stream && !callerStream)
      return KINA_STATUS_GPU_ERROR;
    return body(state, active.api(), stream, active.device);
  });
}

int32_t pendError(int32_t status, const std::string &message) noexcept {
  return pend(status, message);
}

int32_t pendCudaError(const cuda::DriverApi &api, CUresult result,
                      const char *where, const std::string &what) noexcept {
  return pendCuda(api, result, where, what);
}

bool inCall() noexcept { return threadGpu().callDepth > 0; }

int64_t moduleLoadCount() noexcept { return moduleLoads.load(); }

CUresult pointerFacts(const cuda::DriverApi &api, const void *pointer,
                      PointerFacts &facts) noexcept {
  // cuPointerGetAttributes (CUDA 7+) answers the three questions in one
  // driver call; a pointer the driver does not know gets memory type 0
  // and CUDA_SUCCESS. Looked up once; without it, one call per attribute.
  using GetAttributes =
      CUresult (*)(unsigned int, CUpointer_attribute *, void **, CUdeviceptr);
  static const auto getAttributes = reinterpret_cast<GetAttributes>(
      cuda::driverSymbol("cuPointerGetAttributes"));
  CUdeviceptr address = devicePointer(pointer);
  if (getAttributes) {
    CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    void *values[] = {&facts.memoryType, &facts.managed, &facts.ordinal};
    facts.query = "cuPointerGetAttributes(MEMORY_TYPE, IS_MANAGED, "
                  "DEVICE_ORDINAL)";
    return getAttributes(3, attributes, values, address);
  }
  facts.query = "cuPointerGetAttribute(MEMORY_TYPE)";
  CUresult result = api.cuPointerGetAttribute(
      &facts.memoryType, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address);
  if (result != CUDA_SUCCESS || facts.memoryType != CU_MEMORYTYPE_DEVICE)
    return result;
  facts.query = "cuPointerGetAttribute(IS_MANAGED)";
  result = api.cuPointerGetAttribute(&facts.managed,
                                     CU_POINTER_ATTRIBUTE_IS_MANAGED, address);
  if (result != CUDA_SUCCESS || facts.managed)
    return result;
  facts.query = "cuPointerGetAttribute(DEVICE_ORDINAL)";
  return api.cuPointerGetAttribute(
      &facts.ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address);
}
int64_t liveStreamCount() noexcept { return liveStreams.load(); }

} // namespace kina::rt::gpu

using kina::rt::gpu::Active;
using kina::rt::gpu::GpuModule;

extern "C" {

// --- Modules and functions ------------------------------------------------

void *mgpuModuleLoad(void *data, size_t gpuBlobSize) {
  // From a global constructor, possibly before any other static object of
  // the runtime is initialised: only `new` and the thread's error state.
  if (!data) {
    kina::rt::gpu::pend(KINA_STATUS_GPU_ERROR,
                        "mgpuModuleLoad: null GPU binary");
    return nullptr;
  }
  auto *module = new (std::nothrow) GpuModule();
  if (!module) {
    kina::rt::gpu::pend(KINA_STATUS_RESOURCE_ERROR,
                        "mgpuModuleLoad: out of memory");
    return nullptr;
  }
  module->data = data;
  module->size = gpuBlobSize;
  return module;
}

void *mgpuModuleLoadJIT(void *data, int optLevel) {
  void *handle = mgpuModuleLoad(
      data, data ? std::strlen(static_cast<const char *>(data)) + 1 : 0);
  if (handle) {
    static_cast<GpuModule *>(handle)->ptx = true;
    static_cast<GpuModule *>(handle)->optLevel = optLevel;
  }
  return handle;
}

void mgpuModuleUnload(void *module) {
  auto *gpuModule = static_cast<GpuModule *>(module);
  if (!gpuModule)
    return;
  kina::rt::guardStatus("mgpuModuleUnload", [&] {
    std::vector<GpuModule::PerDevice> devices;
    {
      std::lock_guard<std::mutex> lock(gpuModule->mutex);
      devices.swap(gpuModule->devices);
    }
    const kina::rt::cuda::Driver *driver = nullptr;
    bool anyLoaded = false;
    for (const GpuModule::PerDevice &loaded : devices)
      anyLoaded = anyLoaded || loaded.module;
    // A binary that never ran needs no driver (there may be none).
    if (anyLoaded && kina::rt::cuda::loadDriver("mgpuModuleUnload", driver) ==
                         KINA_STATUS_SUCCESS) {
      const kina::rt::cuda::DriverApi &api = driver->api;
      kina::rt::gpu::FunctionTable &table = kina::rt::gpu::functionTable();
      for (const GpuModule::PerDevice &loaded : devices) {
        if (!loaded.module)
          continue;
        {
          std::lock_guard<std::mutex> lock(table.mutex);
          for (const auto &entry : loaded.functions)
            table.functions.erase(entry.second);
        }
        // At exit the driver may answer CUDA_ERROR_DEINITIALIZED: the module
        // is gone with it. Other failures are recorded, never fatal.
        CUcontext previous = nullptr;
        bool switched = api.cuCtxGetCurrent(&previous) == CUDA_SUCCESS &&
                        previous != loaded.context &&
                        api.cuCtxSetCurrent(loaded.context) == CUDA_SUCCESS;
        CUresult result = api.cuModuleUnload(loaded.module);
        if (switched)
          (void)api.cuCtxSetCurrent(previous);
        if (result != CUDA_SUCCESS && result != CUDA_ERROR_DEINITIALIZED)
          kina::rt::fail(KINA_STATUS_GPU_ERROR,
                         "mgpuModuleUnload: cuModuleUnload failed: " +
                             kina::rt::cuda::describeResult(&api, result));
      }
    }
    delete gpuModule;
    return KINA_STATUS_SUCCESS;
  });
}

void *mgpuModuleGetFunction(void *module, const char *name) {
  const char *where = "mgpuModuleGetFunction";
  CUfunction function = nullptr;
  kina::rt::gpu::guarded(where, [&] {
    if (!module)
      return kina::rt::gpu::pend(
          KINA_STATUS_GPU_ERROR,
          std::string(where) + ": no GPU module for kernel " +
              (name ? name : "?") + " (its mgpuModuleLoad failed)");
    if (!name)
      return kina::rt::gpu::pend(KINA_STATUS_GPU_ERROR,
                                 std::string(where) + ": null kernel name");
    Active active(where);
    int32_t status = active.open();
    if (status != KINA_STATUS_SUCCESS)
      return status;
    function = kina::rt::gpu::moduleFunction(
        active, *static_cast<GpuModule *>(module), name);
    return function ? KINA_STATUS_SUCCESS : KINA_STATUS_GPU_ERROR;
  });
  return function;
}

// --- Launches -------------------------------------------------------------

void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t /*paramsCount*/) {
  const char *where = "mgpuLaunchKernel";
  kina::rt::gpu::guarded(where, [&] {
    auto *kernel = static_cast<CUfunction>(function);
    if (!kernel)
      return kina::rt::gpu::pend(
          KINA_STATUS_GPU_ERROR,
          std::string(where) +
              ": no kernel to launch (loading its module or function failed)");
    intptr_t dims[] = {gridX, gridY, gridZ, blockX, blockY, blockZ};
    for (intptr_t dim : dims)
      if (!kina::rt::gpu::fitsUnsigned(dim) || smem < 0) {
        char text[256];
        std::snprintf(
            text, sizeof(text),
            "%s: launch configuration out of range (grid %jd x %jd "
            "x %jd, block %jd x %jd x %jd, %d bytes of shared "
            "memory)",
            where, static_cast<intmax_t>(gridX), static_cast<intmax_t>(gridY),
            static_cast<intmax_t>(gridZ), static_cast<intmax_t>(blockX),
            static_cast<intmax_t>(blockY), static_cast<intmax_t>(blockZ), smem);
        return kina::rt::gpu::pend(KINA_STATUS_GPU_ERROR, text);
      }
    // An empty grid (a size-0 tensor) has nothing to run.
    for (intptr_t dim : dims)
      if (dim == 0)
        return KINA_STATUS_SUCCESS;
    Active active(where);
    int32_t status = active.open();
    if (status != KINA_STATUS_SUCCESS)
      return status;
    const kina::rt::cuda::DriverApi &api = active.api();
    if (smem > kina::rt::gpu::kDefaultSharedMemoryLimit) {
      kina::rt::gpu::FunctionTable &table = kina::rt::gpu::functionTable();
      std::lock_guard<std::mutex> lock(table.mutex);
      kina::rt::gpu::FunctionInfo &info = table.functions[kernel];
      if (info.sharedLimit < smem) {
        CUresult result = api.cuFuncSetAttribute(
            kernel, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem);
        if (result != CUDA_SUCCESS)
          return kina::rt::gpu::pendCuda(
              api, result, where,
              "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, " +
                  std::to_string(smem) + ") of " +
                  (info.name.empty() ? std::string("a kernel")
                                     : "kernel " + info.name) +
                  " failed");
        info.sharedLimit = smem;
      }
    }
    CUresult result = api.cuLaunchKernel(
        kernel, static_cast<unsigned>(gridX), static_cast<unsigned>(gridY),
        static_cast<unsigned>(gridZ), static_cast<unsigned>(blockX),
        static_cast<unsigned>(blockY), static_cast<unsigned>(blockZ),
        static_cast<unsigned>(smem), static_cast<CUstream>(stream), params,
        extra);
    if (result != CUDA_SUCCESS) {
      char config[160];
      std::snprintf(config, sizeof(config),
                    " (grid %jd x %jd x %jd, block %jd x %jd x %jd, %d bytes "
                    "of shared memory)",
                    static_cast<intmax_t>(gridX), static_cast<intmax_t>(gridY),
                    static_cast<intmax_t>(gridZ), static_cast<intmax_t>(blockX),
                    static_cast<intmax_t>(blockY),
                    static_cast<intmax_t>(blockZ), smem);
      return kina::rt::gpu::pendCuda(api, result, where,
                                     "cuLaunchKernel of " +
                                         kina::rt::gpu::functionName(kernel) +
                                         config + " failed");
    }
    return KINA_STATUS_SUCCESS;
  });
}

// --- Streams and events ---------------------------------------------------

void *mgpuStreamCreate(void) {
  CUstream stream = nullptr;
  kina::rt::gpu::onDevice("mgpuStreamCreate", [&](Active &active) {
    stream = active.threadStream();
    // The caller's stream of kina_rt_gpu_enter_stream may be null (the
    // default stream); the thread's own never is.
    bool callerStream = kina::rt::gpu::threadGpu().useCallerStream &&
                        kina::rt::gpu::threadGpu().callDepth > 0;
    return stream || callerStream ? KINA_STATUS_SUCCESS : KINA_STATUS_GPU_ERROR;
  });
  return stream;
}

void mgpuStreamDestroy(void *stream) {
  const char *where = "mgpuStreamDestroy";
  if (!stream)
    return;
  auto *handle = static_cast<CUstream>(stream);
  if (kina::rt::gpu::isThreadStream(handle))
    return; // A thread's stream: kept for reuse.
  kina::rt::gpu::ThreadGpu &thread = kina::rt::gpu::threadGpu();
  if (thread.useCallerStream && handle == thread.callerStream)
    return; // The caller's: never ours to destroy.
  kina::rt::gpu::onDevice(where, [&](Active &active) {
    return kina::rt::gpu::checked(active, active.api().cuStreamDestroy(handle),
                                  "cuStreamDestroy failed");
  });
}

void mgpuStreamSynchronize(void *stream) {
  // Inside a kina_<fn> call the compiled code synchronises after every
  // launch (MLIR's non-async gpu.launch_func lowering). Its own stream is
  // in order and kina_rt_gpu_exit synchronises it before the call returns,
  // so that wait is left out: the launches of a call queue back to back.
  if (kina::rt::gpu::isCallStream(static_cast<CUstream>(stream)))
    return;
  kina::rt::gpu::onDevice("mgpuStreamSynchronize", [&](Active &active) {
    return kina::rt::gpu::checked(
        active, active.api().cuStreamSynchronize(static_cast<CUstream>(stream)),
        "cuStreamSynchronize failed (a kernel before it failed)");
  });
}

void mgpuStreamWaitEvent(void *stream, void *event) {
  kina::rt::gpu::onDevice("mgpuStreamWaitEvent", [&](Active &active) {
    return kina::rt::gpu::checked(
        active,
        active.api().cuStreamWaitEvent(static_cast<CUstream>(stream),
                                       static_cast<CUevent>(event), 0),
        "cuStreamWaitEvent failed");
  });
}

void *mgpuEventCreate(void) {
  CUevent event = nullptr;
  kina::rt::gpu::onDevice("mgpuEventCreate", [&](Active &active) {
    int32_t status = kina::rt::gpu::checked(
        active, active.api().cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
        "cuEventCreate failed");
    if (status != KINA_STATUS_SUCCESS)
      event = nullptr;
    return status;
  });
  return event;
}

void mgpuEventDestroy(void *event) {
  if (!event)
    return;
  kina::rt::gpu::onDevice("mgpuEventDestroy", [&](Active &active) {
    return kina::rt::gpu::checked(
        active, active.api().cuEventDestroy(static_cast<CUevent>(event)),
        "cuEventDestroy failed");
  });
}

void mgpuEventSynchronize(void *event) {
  kina::rt::gpu::onDevice("mgpuEventSynchronize", [&](Active &active) {
    return kina::rt::gpu::checked(
        active, active.api().cuEventSynchronize(static_cast<CUevent>(event)),
        "cuEventSynchronize failed");
  });
}

void mgpuEventRecord(void *event, void *stream) {
  kina::rt::gpu::onDevice("mgpuEventRecord", [&](Active &active) {
    return kina::rt::gpu::checked(
        active,
        active.api().cuEventRecord(static_cast<CUevent>(event),
                                   static_cast<CUstream>(stream)),
        "cuEventRecord failed");
  });
}

// --- Memory ---------------------------------------------------------------

void *mgpuMemAlloc(uint64_t sizeBytes, void * /*stream*/, bool isHostShared) {
  CUdeviceptr address = 0;
  kina::rt::gpu::onDevice("mgpuMemAlloc", [&](Active &active) {
    size_t bytes = sizeBytes ? static_cast<size_t>(sizeBytes) : 1;
    CUresult result = isHostShared ? active.api().cuMemAllocManaged(
                                         &address, bytes, CU_MEM_ATTACH_GLOBAL)
                                   : active.api().cuMemAlloc(&address, bytes);
    if (result == CUDA_SUCCESS)
      return KINA_STATUS_SUCCESS;
    address = 0;
    return kina::rt::gpu::pendCuda(
        active.api(), result, active.where,
        std::string(isHostShared ? "cuMemAllocManaged" : "cuMemAlloc") +
            " of " + std::to_string(sizeBytes) + " bytes failed");
  });
  return reinterpret_cast<void *>(static_cast<uintptr_t>(address));
}

void mgpuMemFree(void *pointer, void * /*stream*/) {
  if (!pointer)
    return;
  kina::rt::gpu::onDevice("mgpuMemFree", [&](Active &active) {
    return kina::rt::gpu::checked(
        active, active.api().cuMemFree(kina::rt::gpu::devicePointer(pointer)),
        "cuMemFree failed");
  });
}

void mgpuMemcpy(void *destination, void *source, size_t sizeBytes,
                void *stream) {
  if (sizeBytes == 0)
    return;
  kina::rt::gpu::onDevice("mgpuMemcpy", [&](Active &active) {
    CUresult result =
        active.api().cuMemcpyAsync(kina::rt::gpu::devicePointer(destination),
                                   kina::rt::gpu::devicePointer(source),
                                   sizeBytes, static_cast<CUstream>(stream));
    if (result == CUDA_SUCCESS)
      return KINA_STATUS_SUCCESS;
    return kina::rt::gpu::pendCuda(
        active.api(), result, active.where,
        "cuMemcpyAsync of " + std::to_string(sizeBytes) + " bytes failed");
  });
}

void mgpuMemset32(void *destination, unsigned int value, size_t count,
                  void *stream) {
  if (count == 0)
    return;
  kina::rt::gpu::onDevice("mgpuMemset32", [&](Active &active) {
    return kina::rt::gpu::checked(
        active,
        active.api().cuMemsetD32Async(kina::rt::gpu::devicePointer(destination),
                                      value, count,
                                      static_cast<CUstream>(stream)),
        "cuMemsetD32Async failed");
  });
}

void mgpuMemset16(void *destination, unsigned short value, size_t count,
                  void *stream) {
  if (count == 0)
    return;
  kina::rt::gpu::onDevice("mgpuMemset16", [&](Active &active) {
    return kina::rt::gpu::checked(
        active,
        active.api().cuMemsetD16Async(kina::rt::gpu::devicePointer(destination),
                                      value, count,
                                      static_cast<CUstream>(stream)),
        "cuMemsetD16Async failed");
  });
}

void mgpuSetDefaultDevice(int32_t device) {
  kina::rt::gpu::threadGpu().defaultDevice = device >= 0 ? device : -1;
}

// --- The status entry's frame ---------------------------------------------

int32_t kina_rt_gpu_enter(void) {
  const char *where = "kina_rt_gpu_enter";
  return kina::rt::guardStatus(where, [&] {
    kina::rt::gpu::ThreadGpu &thread = kina::rt::gpu::threadGpu();
    thread.pendingStatus = KINA_STATUS_SUCCESS;
    thread.pendingMessage.clear();
    if (thread.callDepth > 0) { // A nested call runs on the outer device.
      ++thread.callDepth;
      return KINA_STATUS_SUCCESS;
    }
    int32_t device = 0;
    int32_t status = kina::rt::gpu::selectedDevice(where, device);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    // The primary context (retained for the process, never released) as
    // this thread last looked it up; the first call per thread and device
    // asks GpuMemory's table, which checks that the device exists.
    CUcontext context = nullptr;
    if (static_cast<size_t>(device) < thread.contexts.size())
      context = thread.contexts[device];
    if (!context) {
      status = kina::rt::gpu::primaryContext(where, device, context);
      if (status != KINA_STATUS_SUCCESS)
        return status;
      if (thread.contexts.size() <= static_cast<size_t>(device))
        thread.contexts.resize(device + 1, nullptr);
      thread.contexts[device] = context;
    }
    const kina::rt::cuda::Driver *driver = nullptr;
    status = kina::rt::cuda::loadDriver(where, driver);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    const kina::rt::cuda::DriverApi &api = driver->api;
    CUcontext previous = nullptr;
    CUresult result = api.cuCtxGetCurrent(&previous);
    if (result != CUDA_SUCCESS)
      return kina::rt::fail(KINA_STATUS_GPU_ERROR,
                            std::string(where) + ": cuCtxGetCurrent failed: " +
                                kina::rt::cuda::describeResult(&api, result));
    bool switched = false;
    if (previous != context) {
      result = api.cuCtxSetCurrent(context);
      if (result != CUDA_SUCCESS)
        return kina::rt::fail(
            KINA_STATUS_GPU_ERROR,
            std::string(where) + ": cuCtxSetCurrent (CUDA device " +
                std::to_string(device) +
                ") failed: " + kina::rt::cuda::describeResult(&api, result));
      switched = true;
    }
    thread.callDepth = 1;
    thread.callDevice = device;
    thread.callContext = context;
    thread.callDriver = driver;
    thread.callerContext = previous;
    thread.switchedContext = switched;
    kina::rt::gpu::setCallDevice(device);
    return KINA_STATUS_SUCCESS;
  });
}

void kina_rt_gpu_synchronize(void) {
  kina::rt::gpu::ThreadGpu &thread = kina::rt::gpu::threadGpu();
  CUstream stream = nullptr;
  if (thread.callDepth > 0 && thread.useCallerStream) {
    stream = thread.callerStream; // kina_rt_gpu_enter_stream's frame.
  } else {
    if (thread.callDepth <= 0 || thread.callDevice < 0 ||
        static_cast<size_t>(thread.callDevice) >= thread.streams.size() ||
        !thread.streams[thread.callDevice])
      return; // Outside a call, or nothing launched yet.
    stream = thread.streams[thread.callDevice];
  }
  kina::rt::gpu::onDevice("kina_rt_gpu_synchronize", [&](Active &active) {
    return kina::rt::gpu::checked(
        active, active.api().cuStreamSynchronize(stream),
        "cuStreamSynchronize failed (a kernel of the call failed)");
  });
}

int32_t kina_rt_gpu_enter_stream(int32_t device, uint64_t stream) {
  const char *where = "kina_rt_gpu_enter_stream";
  return kina::rt::guardStatus(where, [&] {
    kina::rt::gpu::ThreadGpu &thread = kina::rt::gpu::threadGpu();
    if (thread.callDepth > 0)
      return kina::rt::failIn(KINA_STATUS_INTERNAL_ERROR, where,
                              "called inside another GPU call frame");
    if (device < 0)
      return kina::rt::fail(KINA_STATUS_VALIDATION_ERROR,
                            std::string(where) + ": device ordinal " +
                                std::to_string(device) + " is negative");
    // kina_rt_gpu_enter selects the call device when one is set.
    kina::rt::gpu::setCallDevice(device);
    int32_t status = kina_rt_gpu_enter();
    if (status != KINA_STATUS_SUCCESS) {
      kina::rt::gpu::setCallDevice(-1);
      return status;
    }
    thread.useCallerStream = true;
    thread.callerStream =
        reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream));
    return KINA_STATUS_SUCCESS;
  });
}

int32_t kina_rt_gpu_check_argument(const void *allocated, const char *function,
                                   const char *argument) {
  const char *where = function ? function : "kina_rt_gpu_check_argument";
  return kina::rt::guardStatus(where, [&] {
    if (!allocated)
      return KINA_STATUS_SUCCESS; // An empty array: nothing to read.
    // A live buffer of the runtime's own is managed memory, which every
    // device can read: the registry knows that without a driver call. Any
    // other pointer (also one the runtime freed: no longer recorded) is
    // asked about.
    if (kina::rt::isLiveManagedBuffer(allocated))
      return KINA_STATUS_SUCCESS;
    const kina::rt::cuda::Driver *driver = nullptr;
    int32_t status = kina::rt::cuda::loadDriver(where, driver);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    const kina::rt::cuda::DriverApi &api = driver->api;
    kina::rt::gpu::PointerFacts facts;
    CUresult result = kina::rt::gpu::pointerFacts(api, allocated, facts);
    auto name = [&] {
      char address[32];
      std::snprintf(address, sizeof(address), "%p", allocated);
      return std::string("argument %") + (argument ? argument : "?") + " (" +
             address + ")";
    };
    if (result == CUDA_SUCCESS && facts.memoryType == 0)
      result = CUDA_ERROR_INVALID_VALUE; // Unknown to the driver: host memory.
    if (result == CUDA_ERROR_INVALID_VALUE)
      return kina::rt::fail(
          KINA_STATUS_VALIDATION_ERROR,
          std::string(where) + ": " + name() +
              " is ordinary host memory, which the GPU cannot read: a "
              "--target=cuda function takes CUDA managed or device memory "
              "(cudaMallocManaged, cudaMalloc, a PyTorch CUDA tensor, or "
              "runtime_gpu_alloc_unranked)");
    if (result != CUDA_SUCCESS)
      return kina::rt::fail(
          KINA_STATUS_GPU_ERROR,
          std::string(where) + ": " + facts.query + " of " + name() +
              " failed: " + kina::rt::cuda::describeResult(&api, result));
    if (facts.memoryType != CU_MEMORYTYPE_DEVICE)
      return KINA_STATUS_SUCCESS; // Page-locked host memory: mapped.
    if (facts.managed)
      return KINA_STATUS_SUCCESS; // Any device can read managed memory.
    int ordinal = facts.ordinal;
    int32_t device = 0;
    status = kina::rt::gpu::selectedDevice(where, device);
    if (status != KINA_STATUS_SUCCESS)
      return status;
    if (ordinal != device)
      return kina::rt::fail(
          KINA_STATUS_VALIDATION_ERROR,
          std::string(where) + ": " + name() +
              " is device memory of CUDA device " + std::to_string(ordinal) +
              ", but the call runs on CUDA device " + std::to_string(device));
    return KINA_STATUS_SUCCESS;
  });
}

int32_t kina_rt_gpu_exit(void) {
  const char *where = "kina_rt_gpu_exit";
  return kina::rt::guardStatus(where, [&] {
    kina::rt::gpu::ThreadGpu &thread = kina::rt::gpu::threadGpu();
    if (thread.callDepth <= 0)
      return kina::rt::failIn(KINA_STATUS_INTERNAL_ERROR, where,
                              "called without kina_rt_gpu_enter");
    const kina::rt::cuda::Driver *driver = nullptr;
    if (kina::rt::cuda::loadDriver(where, driver) == KINA_STATUS_SUCCESS) {
      const kina::rt::cuda::DriverApi &api = driver->api;
      int32_t device = thread.callDevice;
      if (thread.useCallerStream) {
        // kina_rt_gpu_enter_stream's frame: the caller's stream only.
        CUresult result = api.cuStreamSynchronize(thread.callerStream);
        if (result != CUDA_SUCCESS)
          kina::rt::gpu::pendCuda(api, result, where,
                                  "cuStreamSynchronize of the caller's "
                                  "stream failed (a kernel of the call "
                                  "failed)");
      } else if (static_cast<size_t>(device) < thread.streams.size() &&
                 thread.streams[device]) {
        CUresult result = api.cuStreamSynchronize(thread.streams[device]);
        if (result != CUDA_SUCCESS)
          kina::rt::gpu::pendCuda(api, result, where,
                                  "cuStreamSynchronize failed (a kernel of "
                                  "the call failed)");
      }
      if (--thread.callDepth == 0) {
        // The stream is idle now: blocks the call freed may go to any
        // thread's next allocation.
        kina::rt::publishDeferredBlocks();
        if (thread.switchedContext) {
          CUresult result = api.cuCtxSetCurrent(thread.callerContext);
          if (result != CUDA_SUCCESS)
            kina::rt::gpu::pendCuda(api, result, where,
                                    "cuCtxSetCurrent (restoring the "
                                    "caller's context) failed");
        }
        thread.switchedContext = false;
        thread.callerContext = nullptr;
        thread.callDevice = -1;
        thread.callContext = nullptr;
        thread.callDriver = nullptr;
        thread.useCallerStream = false;
        thread.callerStream = nullptr;
        kina::rt::gpu::setCallDevice(-1);
      }
    } else {
      --thread.callDepth; // Unreachable after a successful enter.
    }
    int32_t status = thread.pendingStatus;
    if (status == KINA_STATUS_SUCCESS)
      return KINA_STATUS_SUCCESS;
    thread.pendingStatus = KINA_STATUS_SUCCESS;
    std::string message = std::move(thread.pendingMessage);
    thread.pendingMessage.clear();
    return kina::rt::fail(status, message);
  });
}

} // extern "C"
