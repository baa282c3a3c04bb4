//===- GpuAllocTest.cpp - CUDA managed allocation (runtime_gpu_alloc) -----===//
//
// Tests _mlir_ciface_runtime_gpu_alloc_unranked (the seed's
// runtime_gpu_alloc_unranked; spec, ABI, "Allocation"), device selection and
// the CUDA driver loader (runtime/CudaDriver.h). Validation errors (status 1)
// are checked everywhere: they come before any CUDA call. The tests that
// need a GPU first probe with one allocation and check its exact status and
// message against an independent view of the machine (this file dlopens the
// driver itself): 3 with "CUDA driver not found (libcuda.so.1: ...)" without
// a driver, 3 with "no CUDA device" or the cuInit error without a device
// (then they skip), 0 with one. On a GPU they allocate ranks 0..4, write the
// memory from the device (cuMemsetD8) and the host, check the registry, the
// device of each buffer and the caller's CUDA context, and free it all.
// The GpuDriverEnv tests run in a fresh child process each (gtest death
// tests, "threadsafe" style: the driver is loaded once per process) with
// KINA_CUDA_DRIVER / KINA_DEVICE set, so they force "driver not found", the
// CUDA Toolkit's stub driver (cuInit gives CUDA_ERROR_STUB_LIBRARY) and bad
// device selections on any machine.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"

#include "CudaDriver.h"
#include "GpuMemory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/stat.h>

namespace {

using kina::test::RuntimeTest;
using kina::test::TestMemRef;

class GpuAlloc : public RuntimeTest {};

/// What this machine offers, found without the runtime: the library the
/// runtime will load, whether dlopen finds it, and the device count after
/// cuInit (-1 when cuInit fails).
struct MachineView {
  std::string library;
  bool loadable = false;
  int initResult = -1;
  int deviceCount = 0;
};

MachineView viewMachine() {
  MachineView view;
  const char *override = std::getenv("KINA_CUDA_DRIVER");
  view.library = override && *override ? override : "libcuda.so.1";
  void *handle = dlopen(view.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return view;
  view.loadable = true;
  auto init = reinterpret_cast<int (*)(unsigned)>(dlsym(handle, "cuInit"));
  auto count =
      reinterpret_cast<int (*)(int *)>(dlsym(handle, "cuDeviceGetCount"));
  if (init && count) {
    view.initResult = init(0);
    if (view.initResult == 0 && count(&view.deviceCount) != 0)
      view.deviceCount = 0;
  }
  return view; // The handle stays open, as the runtime's does.
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// Probes the GPU path with one small allocation, checks the exact status
/// and message this machine must give, and returns whether a GPU is usable.
bool probeGpu() {
  MachineView view = viewMachine();
  TestMemRef<1> ref({4});
  kina_rt_begin_call();
  int32_t status = _mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 4);
  std::string message = kina_last_error();
  if (!view.loadable) {
    EXPECT_EQ(status, KINA_STATUS_GPU_ERROR) << message;
    EXPECT_TRUE(contains(message, "runtime_gpu_alloc_unranked: CUDA driver "
                                  "not found (" +
                                      view.library + ": "))
        << message;
  } else if (view.initResult == 100 /* CUDA_ERROR_NO_DEVICE */ ||
             (view.initResult == 0 && view.deviceCount == 0)) {
    EXPECT_EQ(status, KINA_STATUS_GPU_ERROR) << message;
    EXPECT_TRUE(contains(message, "no CUDA device")) << message;
  } else if (view.initResult != 0) {
    EXPECT_EQ(status, KINA_STATUS_GPU_ERROR) << message;
    EXPECT_TRUE(contains(message, "cuInit failed: ")) << message;
  } else {
    EXPECT_EQ(status, KINA_STATUS_SUCCESS) << message;
  }
  if (status != KINA_STATUS_SUCCESS) {
    EXPECT_EQ(ref.ranked.allocated, nullptr);
    EXPECT_EQ(ref.ranked.aligned, nullptr);
    EXPECT_EQ(runtime_live_buffer_count(), 0);
    return false;
  }
  EXPECT_EQ(runtime_free(ref.ranked.allocated), 0);
  return true;
}

#define KINA_REQUIRE_GPU()                                                     \
  do {                                                                         \
    if (!probeGpu())                                                           \
      GTEST_SKIP() << "no usable CUDA GPU: " << kina_last_error();             \
  } while (0)

/// The loaded driver (only after KINA_REQUIRE_GPU).
const kina::rt::cuda::Driver &loadedDriver() {
  const kina::rt::cuda::Driver *driver = nullptr;
  EXPECT_EQ(kina::rt::cuda::loadDriver("test", driver), 0);
  return *driver;
}

TEST_F(GpuAlloc, StatusMatchesMachine) {
  KINA_REQUIRE_GPU();
  SUCCEED() << "CUDA device present and allocation succeeded";
}

/// Allocates a rank-R float buffer in managed memory on `device`, fills it
/// from the device with cuMemsetD8, checks it and rewrites/reads it from the
/// host; checks that the caller's current context is left as it was.
template <int R>
void checkGpuRank(const std::array<int64_t, R> &sizes, int32_t device = 0) {
  SCOPED_TRACE("rank " + std::to_string(R) + ", device " +
               std::to_string(device));
  const kina::rt::cuda::DriverApi &api = loadedDriver().api;
  CUcontext before = nullptr;
  ASSERT_EQ(api.cuCtxGetCurrent(&before), CUDA_SUCCESS);
  TestMemRef<R> ref(sizes);
  int64_t countBefore = runtime_live_buffer_count();
  int64_t bytesBefore = runtime_live_bytes();
  ASSERT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 4), 0)
      << kina_last_error();
  CUcontext after = nullptr;
  ASSERT_EQ(api.cuCtxGetCurrent(&after), CUDA_SUCCESS);
  EXPECT_EQ(after, before) << "the runtime changed the caller's context";
  ASSERT_NE(ref.ranked.allocated, nullptr);
  EXPECT_EQ(ref.ranked.aligned, ref.ranked.allocated);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ref.ranked.aligned) % 64, 0u);
  EXPECT_EQ(ref.ranked.offset, 0);
  std::array<int64_t, R> strides = ref.expectedStrides();
  if constexpr (R > 0)
    for (int i = 0; i < R; ++i) {
      EXPECT_EQ(ref.ranked.sizes[i], sizes[i]) << "dim " << i;
      EXPECT_EQ(ref.ranked.strides[i], strides[i]) << "dim " << i;
    }
  int64_t elements = ref.elementCount();
  EXPECT_EQ(runtime_live_buffer_count(), countBefore + 1);
  EXPECT_EQ(runtime_live_bytes(), bytesBefore + elements * 4);

  CUcontext context = nullptr;
  ASSERT_EQ(kina::rt::gpu::primaryContext("test", device, context), 0)
      << kina_last_error();
  ASSERT_EQ(api.cuCtxSetCurrent(context), CUDA_SUCCESS);
  auto address =
      static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ref.ranked.aligned));
  unsigned int managed = 0;
  ASSERT_EQ(api.cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                      address),
            CUDA_SUCCESS);
  EXPECT_EQ(managed, 1u);
  int ordinal = -1;
  ASSERT_EQ(api.cuPointerGetAttribute(
                &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, address),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, device);
  // Further entry points through the loader's extension hook.
  auto memset8 =
      reinterpret_cast<CUresult (*)(CUdeviceptr, unsigned char, size_t)>(
          kina::rt::cuda::driverSymbol("cuMemsetD8_v2"));
  auto synchronize = reinterpret_cast<CUresult (*)()>(
      kina::rt::cuda::driverSymbol("cuCtxSynchronize"));
  ASSERT_NE(memset8, nullptr);
  ASSERT_NE(synchronize, nullptr);
  ASSERT_EQ(memset8(address, 0x3f, static_cast<size_t>(elements) * 4),
            CUDA_SUCCESS);
  ASSERT_EQ(synchronize(), CUDA_SUCCESS);
  ASSERT_EQ(api.cuCtxSetCurrent(before), CUDA_SUCCESS);

  auto *data = static_cast<float *>(ref.ranked.aligned);
  for (int64_t i = 0; i < elements; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &data[i], 4);
    ASSERT_EQ(bits, 0x3f3f3f3fu) << "element " << i << " not set by device";
    data[i] = static_cast<float>(i) + 0.25f;
  }
  for (int64_t i = 0; i < elements; ++i)
    ASSERT_EQ(data[i], static_cast<float>(i) + 0.25f) << "element " << i;
}

TEST_F(GpuAlloc, Ranks0To4OnDevice) {
  KINA_REQUIRE_GPU();
  checkGpuRank<0>({});
  checkGpuRank<1>({1000});
  checkGpuRank<2>({3, 5});
  checkGpuRank<3>({2, 3, 4});
  checkGpuRank<4>({2, 1, 3, 5});
  EXPECT_EQ(runtime_live_buffer_count(), 5);
  EXPECT_EQ(runtime_live_bytes(), (1 + 1000 + 15 + 24 + 30) * 4);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
}

TEST_F(GpuAlloc, ZeroSizeAndMixedFrees) {
  KINA_REQUIRE_GPU();
  TestMemRef<2> empty({0, 5});
  ASSERT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&empty.unranked, 4), 0)
      << kina_last_error();
  ASSERT_NE(empty.ranked.allocated, nullptr);
  EXPECT_EQ(empty.ranked.strides[0], 5);
  EXPECT_EQ(empty.ranked.strides[1], 1);
  TestMemRef<1> host({8});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&host.unranked, 4), 0);
  TestMemRef<1> managed({8});
  ASSERT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&managed.unranked, 8), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 3);
  EXPECT_EQ(runtime_live_bytes(), 32 + 64);
  EXPECT_EQ(runtime_free(managed.ranked.allocated), 0);
  EXPECT_EQ(runtime_free(managed.ranked.allocated), 1);
  EXPECT_EQ(runtime_live_buffer_count(), 2);
  EXPECT_EQ(runtime_gpu_free_all(), 0); // Frees host and managed alike.
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(GpuAlloc, HugeAllocationIsResourceError) {
  KINA_REQUIRE_GPU();
  // 2^62 bytes: refused by the runtime's free-memory check, before any
  // cuMemAllocManaged call (over-asking managed memory can hang the GPU).
  TestMemRef<1> ref({int64_t(1) << 59});
  kina_rt_begin_call();
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 8), 2)
      << kina_last_error();
  EXPECT_TRUE(contains(kina_last_error(), "bytes free")) << kina_last_error();
  EXPECT_EQ(ref.ranked.allocated, nullptr);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  // The failure leaves CUDA usable.
  TestMemRef<1> small({4});
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&small.unranked, 4), 0)
      << kina_last_error();
}

TEST_F(GpuAlloc, DeviceSelection) {
  int32_t device = -1;
  EXPECT_EQ(runtime_gpu_get_device(nullptr), 1);
  EXPECT_EQ(runtime_gpu_set_device(-1), 1);
  EXPECT_TRUE(contains(kina_last_error(), "device ordinal -1 is negative"))
      << kina_last_error();
  KINA_REQUIRE_GPU();
  int count = loadedDriver().deviceCount;
  ASSERT_GE(count, 1);
  kina_rt_begin_call();
  EXPECT_EQ(runtime_gpu_set_device(count), 3);
  EXPECT_TRUE(
      contains(kina_last_error(),
               "CUDA device " + std::to_string(count) + " does not exist"))
      << kina_last_error();
  ASSERT_EQ(runtime_gpu_get_device(&device), 0);
  int32_t initial = device; // $KINA_DEVICE or 0: unchanged by the failure.
  for (int32_t d = 0; d < count && d < 4; ++d) {
    ASSERT_EQ(runtime_gpu_set_device(d), 0) << kina_last_error();
    ASSERT_EQ(runtime_gpu_get_device(&device), 0);
    EXPECT_EQ(device, d);
    checkGpuRank<1>({16}, d);
  }
  EXPECT_EQ(runtime_gpu_free_all(), 0) << kina_last_error();
  ASSERT_EQ(runtime_gpu_set_device(initial), 0);
}

// Validation comes before any CUDA call, so these hold on every machine.
TEST_F(GpuAlloc, ValidationErrorsComeFirst) {
  kina_rt_begin_call();
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(nullptr, 4), 1);
  KinaUnrankedMemRef nullNested{1, nullptr};
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&nullNested, 4), 1);

  TestMemRef<2> overflow({int64_t(1) << 32, int64_t(1) << 32});
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&overflow.unranked, 4), 1);
  EXPECT_EQ(overflow.ranked.allocated, nullptr);
  EXPECT_TRUE(contains(kina_last_error(), "overflow")) << kina_last_error();

  TestMemRef<1> negative({-3});
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&negative.unranked, 4), 1);
  EXPECT_EQ(negative.ranked.allocated, nullptr);

  TestMemRef<1> badRank({3});
  badRank.unranked.rank = 9;
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&badRank.unranked, 4), 1);
  EXPECT_EQ(badRank.ranked.allocated, nullptr);

  TestMemRef<1> badElement({3});
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&badElement.unranked, 0),
            1);
  EXPECT_EQ(kina_rt_last_status(), 1);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST(CudaDriverNames, OwnTableNamesResults) {
  EXPECT_STREQ(kina::rt::cuda::resultName(CUDA_ERROR_STUB_LIBRARY),
               "CUDA_ERROR_STUB_LIBRARY");
  EXPECT_STREQ(kina::rt::cuda::resultName(CUDA_ERROR_OUT_OF_MEMORY),
               "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(kina::rt::cuda::resultName(static_cast<CUresult>(12345)), nullptr);
  EXPECT_EQ(
      kina::rt::cuda::describeResult(nullptr, static_cast<CUresult>(12345)),
      "CUresult 12345: no description (the driver gave none)");
}

// --- In a child process with the environment set ---------------------------

/// Runs `check` (returning "" on success, else what went wrong) in a child
/// process started afresh with `name`=`value` in its environment.
template <typename Check>
void inFreshProcess(const char *name, const char *value, Check check) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_EQ(setenv(name, value, 1), 0);
  EXPECT_EXIT(
      {
        std::string problem = check();
        if (!problem.empty())
          std::fprintf(stderr, "CHECK FAILED: %s\n", problem.c_str());
        std::fflush(stderr);
        std::_Exit(problem.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  unsetenv(name);
}

/// One managed allocation: "" if it returns `status` with a message that
/// contains `part` and leaves null pointers, else the discrepancy.
std::string expectAllocation(int32_t status, const std::string &part) {
  TestMemRef<2> ref({2, 3});
  kina_rt_begin_call();
  int32_t got = _mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 4);
  std::string message = kina_last_error();
  if (got != status)
    return "status " + std::to_string(got) + " (expected " +
           std::to_string(status) + "): " + message;
  if (!contains(message, part))
    return "message '" + message + "' lacks '" + part + "'";
  if (ref.ranked.allocated || ref.ranked.aligned)
    return "pointers not nulled";
  if (kina_rt_last_status() != status)
    return "kina_rt_last_status " + std::to_string(kina_rt_last_status());
  if (runtime_live_buffer_count() != 0)
    return "a buffer was recorded";
  return "";
}

TEST(GpuDriverEnv, MissingDriverIsGpuError) {
  inFreshProcess("KINA_CUDA_DRIVER", "/nonexistent/libcuda.so.1", [] {
    std::string expected = "runtime_gpu_alloc_unranked: CUDA driver not found "
                           "(/nonexistent/libcuda.so.1: /nonexistent/"
                           "libcuda.so.1: cannot open shared object file";
    std::string problem = expectAllocation(3, expected);
    if (!problem.empty())
      return problem;
    // Every later GPU call gives the same answer; the CPU path is intact.
    problem = expectAllocation(3, "CUDA driver not found");
    if (!problem.empty())
      return "second call: " + problem;
    if (runtime_gpu_set_device(0) != 3 ||
        !contains(kina_last_error(),
                  "runtime_gpu_set_device: CUDA driver not found"))
      return std::string("runtime_gpu_set_device: ") + kina_last_error();
    TestMemRef<1> host({4});
    if (_mlir_ciface_runtime_host_alloc_unranked(&host.unranked, 4) != 0 ||
        runtime_free(host.ranked.allocated) != 0)
      return std::string("host path: ") + kina_last_error();
    if (runtime_gpu_free_all() != 0)
      return std::string("free_all: ") + kina_last_error();
    return std::string();
  });
}

TEST(GpuDriverEnv, StubDriverIsGpuErrorWithCudaName) {
  const char *stubEnv = std::getenv("KINA_TEST_CUDA_STUB");
  std::string stub =
      stubEnv && *stubEnv ? stubEnv : "/usr/local/cuda/lib64/stubs/libcuda.so";
  struct stat info;
  if (stat(stub.c_str(), &info) != 0)
    GTEST_SKIP() << "no CUDA Toolkit stub driver at " << stub;
  inFreshProcess("KINA_CUDA_DRIVER", stub.c_str(), [stub] {
    return expectAllocation(3, "runtime_gpu_alloc_unranked: cuInit failed: "
                               "CUDA_ERROR_STUB_LIBRARY: ");
  });
}

TEST(GpuDriverEnv, InvalidKinaDeviceIsValidationError) {
  inFreshProcess("KINA_DEVICE", "gpu1", [] {
    std::string problem = expectAllocation(
        1, "runtime_gpu_alloc_unranked: KINA_DEVICE='gpu1' is not a CUDA "
           "device ordinal");
    if (!problem.empty())
      return problem;
    int32_t device = -1;
    if (runtime_gpu_get_device(&device) != 1 || device != -1)
      return std::string("get_device: ") + kina_last_error();
    return std::string();
  });
}

TEST(GpuDriverEnv, KinaDeviceSelectsTheDevice) {
  inFreshProcess("KINA_DEVICE", "4096", [] {
    int32_t device = -1;
    if (runtime_gpu_get_device(&device) != 0 || device != 4096)
      return "get_device gave " + std::to_string(device) + ": " +
             kina_last_error();
    // Without a driver the load fails first; with one, device 4096 does
    // not exist. Either way status 3, never an allocation on device 0.
    MachineView view = viewMachine();
    bool usable = view.loadable && view.initResult == 0 && view.deviceCount > 0;
    return expectAllocation(3, usable ? "CUDA device 4096 does not exist"
                                      : "runtime_gpu_alloc_unranked: ");
  });
}

} // namespace
