//===- GpuLaunchTest.cpp - mgpu* kernel launches and the GPU call frame ---===//
//
// Tests runtime/GpuLaunch.cpp: the mgpu* functions MLIR's gpu-to-llvm
// lowering calls and kina_rt_gpu_enter / kina_rt_gpu_check_argument /
// kina_rt_gpu_exit, used exactly as a --target=cuda object uses them (a
// binary registered by mgpuModuleLoad from a global constructor, kernels
// looked up per launch, a stream created, synchronised and destroyed around
// each launch, argument addresses in an array).
//   * GpuNoDriver (every machine, each test in a fresh child process with
//     KINA_CUDA_DRIVER naming a missing library): every function returns or
//     records status 3 with "CUDA driver not found" and nothing crashes,
//     including the registration at static-initialisation time and the
//     unload at exit.
//   * GpuLaunch (label gpu; skipped without a usable GPU): the embedded
//     fatbin (tests/runtime/kernels, built by nvcc) and its PTX load, run and
//     give the right numbers; modules load once per process and device and
//     streams are reused per thread; 8 threads launch concurrently; a
//     kernel with more than 48 KiB of dynamic shared memory runs; host
//     memory is rejected with status 1; launch errors come back from
//     kina_rt_gpu_exit with CUDA's error name; 10^4 alloc/launch/free
//     cycles leave the registry and cuMemGetInfo flat; the runtime's
//     strided-copy kernel (GpuStrided.h) gathers and scatters transposed,
//     negative-stride, broadcast and rank-0 to rank-4 layouts of every
//     element size on the call's stream.
//   * GpuStrided / GpuNoDriver.TensorDesc* (every machine): the strided
//     copy refuses bad ranks and sizes and runs only inside a call frame;
//     kina_rt_td_gpu_prepare checks descriptors before any GPU work (-8)
//     and takes strided views (no -9): without a driver they get -4.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"

#include "CudaDriver.h"
#include "GpuLaunch.h"
#include "GpuMemory.h"
#include "GpuStrided.h"
#include "kernels/TestKernels.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using kina::test::RuntimeTest;
using kina::test::TestMemRef;

/// Registered at static-initialisation time, before main, as a compiled
/// object's global constructor does (on a machine without a GPU too).
struct StaticModule {
  void *handle = nullptr;
  StaticModule() {
    kina::test::TestBinary binary = kina::test::testFatbin();
    // Without nvcc at build time, a few dummy bytes: registration must not
    // look at them.
    static const char dummy[16] = "not a fatbin";
    handle =
        mgpuModuleLoad(const_cast<char *>(binary.data ? binary.data : dummy),
                       binary.data ? binary.size : sizeof(dummy));
  }
  ~StaticModule() { mgpuModuleUnload(handle); } // As at a program's exit.
};
StaticModule staticModule;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

// --- Without a driver (fresh child processes) -------------------------------

/// Runs `check` ("" on success, else the problem) in a child process started
/// afresh (gtest's "threadsafe" death-test style re-executes the binary, so
/// static initialisation runs again there) with KINA_CUDA_DRIVER set to a
/// library that does not exist.
template <typename Check> void withoutDriver(Check check) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ASSERT_EQ(setenv("KINA_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1), 0);
  EXPECT_EXIT(
      {
        std::string problem = check();
        if (!problem.empty())
          std::fprintf(stderr, "CHECK FAILED: %s\n", problem.c_str());
        std::fflush(stderr);
        std::_Exit(problem.empty() ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  unsetenv("KINA_CUDA_DRIVER");
}

/// "" if the thread's last status is 3 and its last error names `where` and
/// the missing driver; else the discrepancy.
std::string expectNoDriver(const std::string &where) {
  std::string message = kina_last_error();
  if (kina_rt_last_status() != KINA_STATUS_GPU_ERROR)
    return where + ": last status " + std::to_string(kina_rt_last_status()) +
           " (" + message + ")";
  if (!contains(message, where + ": CUDA driver not found "
                                 "(/nonexistent/libcuda.so.1: "))
    return where + ": message '" + message + "'";
  return "";
}

TEST(GpuNoDriver, StaticRegistrationSucceedsLoadingFails) {
  withoutDriver([] {
    // Registered before main without touching the driver.
    if (!staticModule.handle)
      return std::string("mgpuModuleLoad at static init returned NULL: ") +
             kina_last_error();
    kina_rt_begin_call();
    if (mgpuModuleGetFunction(staticModule.handle, "kina_test_saxpy"))
      return std::string("mgpuModuleGetFunction gave a function");
    return expectNoDriver("mgpuModuleGetFunction");
  });
}

TEST(GpuNoDriver, EveryFunctionRecordsStatus3) {
  withoutDriver([] {
    std::string problem;
    auto expect = [&](const char *where) {
      if (problem.empty())
        problem = expectNoDriver(where);
    };
    kina_rt_begin_call();
    if (kina_rt_gpu_enter() != KINA_STATUS_GPU_ERROR)
      return std::string("kina_rt_gpu_enter did not return 3");
    expect("kina_rt_gpu_enter");
    int dummy = 0;
    kina_rt_begin_call();
    if (kina_rt_gpu_check_argument(&dummy, "kina_f", "x") !=
        KINA_STATUS_GPU_ERROR)
      return std::string("kina_rt_gpu_check_argument did not return 3");
    expect("kina_f");
    if (kina_rt_gpu_check_argument(nullptr, "kina_f", "x") != 0)
      return std::string("a NULL argument (empty array) is not accepted");

    kina_rt_begin_call();
    if (mgpuStreamCreate() != nullptr)
      return std::string("mgpuStreamCreate gave a stream");
    expect("mgpuStreamCreate");
    kina_rt_begin_call();
    if (mgpuEventCreate() != nullptr)
      return std::string("mgpuEventCreate gave an event");
    expect("mgpuEventCreate");
    kina_rt_begin_call();
    if (mgpuMemAlloc(64, nullptr, true) != nullptr)
      return std::string("mgpuMemAlloc gave memory");
    expect("mgpuMemAlloc");
    void *fake = &dummy;
    struct VoidCall {
      const char *where;
      void (*call)(void *);
    };
    const VoidCall calls[] = {
        {"mgpuStreamSynchronize", [](void *p) { mgpuStreamSynchronize(p); }},
        {"mgpuStreamDestroy", [](void *p) { mgpuStreamDestroy(p); }},
        {"mgpuStreamWaitEvent", [](void *p) { mgpuStreamWaitEvent(p, p); }},
        {"mgpuEventDestroy", [](void *p) { mgpuEventDestroy(p); }},
        {"mgpuEventSynchronize", [](void *p) { mgpuEventSynchronize(p); }},
        {"mgpuEventRecord", [](void *p) { mgpuEventRecord(p, p); }},
        {"mgpuMemFree", [](void *p) { mgpuMemFree(p, nullptr); }},
        {"mgpuMemcpy", [](void *p) { mgpuMemcpy(p, p, 4, nullptr); }},
        {"mgpuMemset32", [](void *p) { mgpuMemset32(p, 0, 1, nullptr); }},
        {"mgpuMemset16", [](void *p) { mgpuMemset16(p, 0, 1, nullptr); }},
        {"mgpuLaunchKernel",
         [](void *p) {
           mgpuLaunchKernel(p, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr,
                            0);
         }},
    };
    for (const VoidCall &c : calls) {
      kina_rt_begin_call();
      c.call(fake);
      expect(c.where);
    }
    // A NULL function (its load failed) is reported as such.
    kina_rt_begin_call();
    mgpuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr,
                     0);
    if (kina_rt_last_status() != 3 ||
        !contains(kina_last_error(), "mgpuLaunchKernel: no kernel to launch"))
      return std::string("launch of NULL: ") + kina_last_error();
    // A PTX registration works without a driver; its use fails.
    static char ptx[] = ".version 8.0\n";
    void *jit = mgpuModuleLoadJIT(ptx, 2);
    if (!jit)
      return std::string("mgpuModuleLoadJIT returned NULL");
    kina_rt_begin_call();
    if (mgpuModuleGetFunction(jit, "k"))
      return std::string("mgpuModuleGetFunction (JIT) gave a function");
    expect("mgpuModuleGetFunction");
    mgpuModuleUnload(jit); // Never loaded: no driver needed.
    mgpuSetDefaultDevice(0);
    // kina_rt_gpu_exit without a successful enter is an internal error.
    if (kina_rt_gpu_exit() != KINA_STATUS_INTERNAL_ERROR)
      return std::string("kina_rt_gpu_exit without enter: ") +
             kina_last_error();
    if (runtime_live_buffer_count() != 0)
      return std::string("buffers recorded");
    return problem;
  });
}

/// The table of a kinatd_ entry with one f32 rank-2 result and two f32
/// rank-2 arguments (kina/runtime.h: [results, args, (dtype, rank)...]).
const int32_t kAddTable[] = {1, 2, 0, 2, 0, 2, 0, 2};

/// A rank-2 f32 KinaTensorDesc over `p`.
KinaTensorDesc desc2(const void *p, int64_t s0, int64_t s1, int64_t st0,
                     int64_t st1) {
  KinaTensorDesc d{};
  d.ptr = reinterpret_cast<uint64_t>(p);
  d.ndim = 2;
  d.shape[0] = s0;
  d.shape[1] = s1;
  d.strides[0] = st0;
  d.strides[1] = st1;
  d.dtype = KINA_TD_DTYPE_F32;
  return d;
}

TEST(GpuStrided, RefusesBadSizesAndRunsOnlyInAFrame) {
  float a[4] = {0}, b[4] = {0};
  int64_t shape[2] = {2, 2}, strides[2] = {2, 1};
  kina_rt_begin_call();
  EXPECT_EQ(
      kina::rt::gpu::stridedCopy("t", a, strides, b, strides, shape, 2, 3),
      KINA_STATUS_VALIDATION_ERROR);
  EXPECT_EQ(
      kina::rt::gpu::stridedCopy("t", a, strides, b, strides, shape, 5, 4),
      KINA_STATUS_VALIDATION_ERROR);
  EXPECT_EQ(
      kina::rt::gpu::stridedCopy("t", a, strides, b, strides, shape, 2, 4),
      KINA_STATUS_INTERNAL_ERROR);
  EXPECT_TRUE(contains(kina_last_error(), "outside a GPU call frame"))
      << kina_last_error();
}

TEST(GpuStrided, TensorDescChecksComeBeforeTheGpu) {
  // No GPU work for these (a stride-0 output, overlapping outputs): -8 on
  // any machine, nothing allocated, no frame left open.
  float x[6] = {0}, y[6] = {0}, out[6] = {0};
  KinaMemRef4 scratch[3];
  KinaTensorDesc o = desc2(out, 2, 3, 0, 1), a = desc2(x, 2, 3, 3, 1),
                 b = desc2(y, 2, 3, 3, 1);
  const KinaTensorDesc *outs[] = {&o};
  const KinaTensorDesc *ins[] = {&a, &b};
  EXPECT_EQ(
      kina_rt_td_gpu_prepare("kinatd_add", kAddTable, outs, ins, scratch, 0, 0),
      KINA_TD_OVERLAPPING_OUTPUT);
  EXPECT_TRUE(contains(kina_last_error(), "kinatd_add: output 0 dim 0 has "
                                          "stride 0"))
      << kina_last_error();
  EXPECT_EQ(kina_rt_gpu_exit(), KINA_STATUS_INTERNAL_ERROR); // None open.
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST(GpuNoDriver, TensorDescStridedViewsReachTheDevice) {
  withoutDriver([] {
    // A transposed and a negative-stride input: no layout error (-9) any
    // more; the device setup is what fails here (-4), naming the driver.
    float x[6] = {0}, y[6] = {0}, out[6] = {0};
    KinaMemRef4 scratch[3];
    KinaTensorDesc o = desc2(out, 2, 3, 3, 1), a = desc2(x, 2, 3, 1, 2),
                   b = desc2(y + 5, 2, 3, -3, -1);
    const KinaTensorDesc *outs[] = {&o};
    const KinaTensorDesc *ins[] = {&a, &b};
    int32_t rc = kina_rt_td_gpu_prepare("kinatd_add", kAddTable, outs, ins,
                                        scratch, 1, 0);
    if (rc != KINA_TD_DEVICE_ERROR)
      return "kina_rt_td_gpu_prepare = " + std::to_string(rc) + ": " +
             kina_last_error();
    if (!contains(kina_last_error(), "CUDA driver not found"))
      return std::string("message: ") + kina_last_error();
    if (runtime_live_buffer_count() != 0)
      return std::string("buffers recorded");
    return std::string();
  });
}

// --- With a GPU -------------------------------------------------------------

class GpuLaunch : public RuntimeTest {
protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    if (!kina::test::testFatbin().data)
      GTEST_SKIP() << "no test kernels: nvcc was not found at build time";
    kina_rt_begin_call();
    if (kina_rt_gpu_enter() != KINA_STATUS_SUCCESS)
      GTEST_SKIP() << "no usable CUDA GPU: " << kina_last_error();
    ASSERT_EQ(kina_rt_gpu_exit(), 0) << kina_last_error();
    const kina::rt::cuda::Driver *driver = nullptr;
    ASSERT_EQ(kina::rt::cuda::loadDriver("test", driver), 0);
    api = &driver->api;
  }
  const kina::rt::cuda::DriverApi *api = nullptr;
};

/// A managed f32 vector of `n` elements from runtime_gpu_alloc_unranked.
struct ManagedVector {
  TestMemRef<1> ref;
  explicit ManagedVector(int64_t n) : ref({n}) {
    EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 4), 0)
        << kina_last_error();
  }
  float *data() const { return static_cast<float *>(ref.ranked.aligned); }
  void *allocated() const { return ref.ranked.allocated; }
};

/// One saxpy as a compiled entry runs it: enter, check the arguments,
/// allocate, look the kernel up, launch on the thread's stream, synchronise,
/// exit. Returns the entry's status; `y` ends as a * x + y.
int32_t runSaxpy(void *module, float a, ManagedVector &x, ManagedVector &y,
                 int n) {
  kina_rt_begin_call();
  int32_t status = kina_rt_gpu_enter();
  if (status)
    return status;
  if ((status = kina_rt_gpu_check_argument(x.allocated(), "kina_saxpy", "x")) ||
      (status = kina_rt_gpu_check_argument(y.allocated(), "kina_saxpy", "y"))) {
    kina_rt_gpu_exit();
    return status;
  }
  void *function = mgpuModuleGetFunction(module, "kina_test_saxpy");
  void *stream = mgpuStreamCreate();
  float *xData = x.data(), *yData = y.data();
  void *params[] = {&a, &xData, &yData, &n};
  mgpuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream,
                   params, nullptr, 4);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  return kina_rt_gpu_exit();
}

/// "" if y[i] == a * x0[i] + y0[i] with x0[i] = i % 97, y0[i] = 1.
std::string checkSaxpy(const ManagedVector &y, float a, int n) {
  for (int i = 0; i < n; ++i) {
    float expected = a * static_cast<float>(i % 97) + 1.0f;
    if (y.data()[i] != expected)
      return "y[" + std::to_string(i) + "] = " + std::to_string(y.data()[i]) +
             ", expected " + std::to_string(expected);
  }
  return "";
}

void fillSaxpy(ManagedVector &x, ManagedVector &y, int n) {
  for (int i = 0; i < n; ++i) {
    x.data()[i] = static_cast<float>(i % 97);
    y.data()[i] = 1.0f;
  }
}

TEST_F(GpuLaunch, FatbinLoadsOnceAndRuns) {
  const int n = 1 << 20;
  CUcontext before = nullptr;
  ASSERT_EQ(api->cuCtxGetCurrent(&before), CUDA_SUCCESS);
  int64_t loadsBefore = kina::rt::gpu::moduleLoadCount();
  for (float a : {2.0f, -3.0f}) {
    ManagedVector x(n), y(n);
    fillSaxpy(x, y, n);
    ASSERT_EQ(runSaxpy(staticModule.handle, a, x, y, n), 0)
        << kina_last_error();
    EXPECT_EQ(checkSaxpy(y, a, n), "");
  }
  // Loaded once in this process (by the first test that ran a kernel).
  EXPECT_LE(kina::rt::gpu::moduleLoadCount() - loadsBefore, 1);
  EXPECT_GE(kina::rt::gpu::moduleLoadCount(), 1);
  // The caller's context is back.
  CUcontext after = nullptr;
  ASSERT_EQ(api->cuCtxGetCurrent(&after), CUDA_SUCCESS);
  EXPECT_EQ(after, before);
  // One stream per thread, reused.
  void *first = mgpuStreamCreate();
  mgpuStreamDestroy(first);
  int64_t streams = kina::rt::gpu::liveStreamCount();
  void *second = mgpuStreamCreate();
  EXPECT_NE(first, nullptr);
  EXPECT_EQ(first, second);
  EXPECT_EQ(kina::rt::gpu::liveStreamCount(), streams);
}

TEST_F(GpuLaunch, PtxLoadsThroughTheJit) {
  kina::test::TestBinary ptx = kina::test::testPtx();
  ASSERT_NE(ptx.data, nullptr);
  ASSERT_EQ(ptx.data[ptx.size - 1], '\0');
  void *module = mgpuModuleLoadJIT(const_cast<char *>(ptx.data), 2);
  ASSERT_NE(module, nullptr);
  const int n = 4099;
  ManagedVector x(n), y(n);
  fillSaxpy(x, y, n);
  int64_t loadsBefore = kina::rt::gpu::moduleLoadCount();
  ASSERT_EQ(runSaxpy(module, 0.5f, x, y, n), 0) << kina_last_error();
  EXPECT_EQ(checkSaxpy(y, 0.5f, n), "");
  EXPECT_EQ(kina::rt::gpu::moduleLoadCount(), loadsBefore + 1);
  kina_rt_begin_call();
  mgpuModuleUnload(module);
  EXPECT_EQ(kina_rt_last_status(), 0) << kina_last_error();
}

TEST_F(GpuLaunch, MoreThan48KiBOfSharedMemory) {
  for (int chunk : {12288, 24576, 49152}) { // 48, 96 and 192 KiB.
    SCOPED_TRACE("chunk of " + std::to_string(chunk) + " floats");
    const int blocks = 64, n = blocks * chunk;
    ManagedVector in(n), out(n);
    for (int i = 0; i < n; ++i) {
      in.data()[i] = static_cast<float>(i);
      out.data()[i] = -1.0f;
    }
    kina_rt_begin_call();
    ASSERT_EQ(kina_rt_gpu_enter(), 0) << kina_last_error();
    void *function =
        mgpuModuleGetFunction(staticModule.handle, "kina_test_reverse");
    void *stream = mgpuStreamCreate();
    float *inData = in.data(), *outData = out.data();
    void *params[] = {&inData, &outData, &chunk};
    mgpuLaunchKernel(function, blocks, 1, 1, 512, 1, 1,
                     chunk * static_cast<int32_t>(sizeof(float)), stream,
                     params, nullptr, 3);
    mgpuStreamSynchronize(stream);
    mgpuStreamDestroy(stream);
    ASSERT_EQ(kina_rt_gpu_exit(), 0) << kina_last_error();
    int wrong = 0;
    for (int b = 0; b < blocks; ++b)
      for (int i = 0; i < chunk; ++i)
        wrong += out.data()[b * chunk + i] !=
                 static_cast<float>(b * chunk + chunk - 1 - i);
    EXPECT_EQ(wrong, 0);
  }
}

TEST_F(GpuLaunch, EightThreadsLaunchConcurrently) {
  const int threads = 8, iterations = 200, n = 10000;
  int64_t loadsBefore = kina::rt::gpu::moduleLoadCount();
  int64_t streamsBefore = kina::rt::gpu::liveStreamCount();
  std::atomic<int> failures{0};
  std::vector<std::string> problems(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      void *myStream = nullptr;
      for (int i = 0; i < iterations; ++i) {
        float a = static_cast<float>(t + 1) + 0.25f * static_cast<float>(i % 4);
        ManagedVector x(n), y(n);
        fillSaxpy(x, y, n);
        int32_t status = runSaxpy(staticModule.handle, a, x, y, n);
        std::string problem = status ? "status " + std::to_string(status) +
                                           ": " + kina_last_error()
                                     : checkSaxpy(y, a, n);
        void *stream = mgpuStreamCreate();
        if (problem.empty() && myStream && stream != myStream)
          problem = "the thread's stream changed";
        myStream = stream;
        runtime_free(x.allocated());
        runtime_free(y.allocated());
        if (!problem.empty()) {
          problems[t] = "thread " + std::to_string(t) + ", iteration " +
                        std::to_string(i) + ": " + problem;
          failures.fetch_add(1);
          return;
        }
      }
    });
  for (std::thread &thread : pool)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
  for (const std::string &problem : problems)
    EXPECT_EQ(problem, "");
  // The module was loaded at most once more (if no earlier test ran it), and
  // every thread's stream went with its thread.
  EXPECT_LE(kina::rt::gpu::moduleLoadCount() - loadsBefore, 1);
  EXPECT_EQ(kina::rt::gpu::liveStreamCount(), streamsBefore);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(GpuLaunch, HostMemoryArgumentIsValidationError) {
  ASSERT_EQ(kina_rt_gpu_enter(), 0) << kina_last_error();
  std::vector<float> heap(64);
  float stack[4] = {0, 0, 0, 0};
  for (const void *host : {static_cast<const void *>(heap.data()),
                           static_cast<const void *>(stack)}) {
    kina_rt_begin_call();
    EXPECT_EQ(kina_rt_gpu_check_argument(host, "kina_forward", "x"), 1);
    std::string message = kina_last_error();
    EXPECT_TRUE(contains(message, "kina_forward: argument %x (0x")) << message;
    EXPECT_TRUE(contains(message, "is ordinary host memory, which the GPU "
                                  "cannot read"))
        << message;
  }
  ManagedVector managed(16);
  EXPECT_EQ(kina_rt_gpu_check_argument(managed.allocated(), "kina_f", "m"), 0)
      << kina_last_error();
  void *device = mgpuMemAlloc(256, nullptr, false);
  ASSERT_NE(device, nullptr) << kina_last_error();
  EXPECT_EQ(kina_rt_gpu_check_argument(device, "kina_f", "d"), 0)
      << kina_last_error();
  // Inside an allocation too (a view at an offset).
  EXPECT_EQ(kina_rt_gpu_check_argument(static_cast<char *>(device) + 128,
                                       "kina_f", "d"),
            0)
      << kina_last_error();
  mgpuMemFree(device, nullptr);
  EXPECT_EQ(kina_rt_gpu_check_argument(nullptr, "kina_f", "empty"), 0);
  EXPECT_EQ(kina_rt_gpu_exit(), 0) << kina_last_error();
}

TEST_F(GpuLaunch, LaunchErrorsComeBackFromExit) {
  const int n = 256;
  ManagedVector x(n), y(n);
  fillSaxpy(x, y, n);
  float a = 1.0f;
  float *xData = x.data(), *yData = y.data();
  int count = n;
  void *params[] = {&a, &xData, &yData, &count};

  // 4096 threads per block: CUDA_ERROR_INVALID_VALUE, not sticky.
  kina_rt_begin_call();
  ASSERT_EQ(kina_rt_gpu_enter(), 0) << kina_last_error();
  void *function =
      mgpuModuleGetFunction(staticModule.handle, "kina_test_saxpy");
  ASSERT_NE(function, nullptr) << kina_last_error();
  void *stream = mgpuStreamCreate();
  mgpuLaunchKernel(function, 1, 1, 1, 4096, 1, 1, 0, stream, params, nullptr,
                   4);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  EXPECT_EQ(kina_rt_gpu_exit(), 3);
  std::string message = kina_last_error();
  EXPECT_TRUE(contains(message, "mgpuLaunchKernel: cuLaunchKernel of kernel "
                                "kina_test_saxpy (grid 1 x 1 x 1, block 4096 "
                                "x 1 x 1, 0 bytes of shared memory) failed: "
                                "CUDA_ERROR_INVALID_VALUE: "))
      << message;

  // An unknown kernel: the first error (the lookup) is the one reported.
  kina_rt_begin_call();
  ASSERT_EQ(kina_rt_gpu_enter(), 0) << kina_last_error();
  void *missing = mgpuModuleGetFunction(staticModule.handle, "no_such_kernel");
  EXPECT_EQ(missing, nullptr);
  mgpuLaunchKernel(missing, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr, 4);
  EXPECT_EQ(kina_rt_gpu_exit(), 3);
  message = kina_last_error();
  EXPECT_TRUE(contains(message, "mgpuModuleGetFunction: "
                                "cuModuleGetFunction(\"no_such_kernel\") on "
                                "CUDA device "))
      << message;
  EXPECT_TRUE(contains(message, "CUDA_ERROR_NOT_FOUND")) << message;

  // An empty grid launches nothing and is no error; the device still works.
  kina_rt_begin_call();
  ASSERT_EQ(kina_rt_gpu_enter(), 0) << kina_last_error();
  mgpuLaunchKernel(function, 0, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr,
                   4);
  EXPECT_EQ(kina_rt_gpu_exit(), 0) << kina_last_error();
  ASSERT_EQ(runSaxpy(staticModule.handle, 2.0f, x, y, n), 0)
      << kina_last_error();
  EXPECT_EQ(checkSaxpy(y, 2.0f, n), "");
}

TEST_F(GpuLaunch, TenThousandCallsLeakNothing) {
  const int n = 4096;
  int64_t calls = 10000;
  if (const char *text = std::getenv("KINA_LEAK_CALLS"))
    calls = std::atoll(text);
  auto cycle = [&](int64_t i) {
    ManagedVector x(n), y(n);
    fillSaxpy(x, y, n);
    float a = static_cast<float>(i % 7);
    int32_t status = runSaxpy(staticModule.handle, a, x, y, n);
    bool ok = status == 0 &&
              y.data()[n - 1] == a * static_cast<float>((n - 1) % 97) + 1.0f;
    EXPECT_EQ(runtime_free(x.allocated()), 0);
    EXPECT_EQ(runtime_free(y.allocated()), 0);
    return ok;
  };
  for (int64_t i = 0; i < 100; ++i) // Warm-up: module, stream, pools.
    ASSERT_TRUE(cycle(i)) << kina_last_error();
  CUcontext context = nullptr;
  ASSERT_EQ(kina::rt::gpu::primaryContext("test", 0, context), 0);
  ASSERT_EQ(api->cuCtxSetCurrent(context), CUDA_SUCCESS);
  size_t freeBefore = 0, freeAfter = 0, total = 0;
  ASSERT_EQ(api->cuMemGetInfo(&freeBefore, &total), CUDA_SUCCESS);
  int64_t streams = kina::rt::gpu::liveStreamCount();
  int64_t loads = kina::rt::gpu::moduleLoadCount();
  int64_t failed = 0;
  for (int64_t i = 0; i < calls; ++i)
    failed += !cycle(i);
  EXPECT_EQ(failed, 0) << kina_last_error();
  ASSERT_EQ(api->cuMemGetInfo(&freeAfter, &total), CUDA_SUCCESS);
  ASSERT_EQ(api->cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  std::printf("leak check: %lld calls, free device memory %zu -> %zu bytes, "
              "%lld live buffers\n",
              static_cast<long long>(calls), freeBefore, freeAfter,
              static_cast<long long>(runtime_live_buffer_count()));
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(kina::rt::gpu::liveStreamCount(), streams);
  EXPECT_EQ(kina::rt::gpu::moduleLoadCount(), loads);
  // Flat: the driver may keep a page or two of its own, never one per call
  // (10^4 calls of 2 x 16 KiB would be 320 MB).
  int64_t lost =
      static_cast<int64_t>(freeBefore) - static_cast<int64_t>(freeAfter);
  EXPECT_LE(lost, 4 << 20) << "device memory lost over " << calls << " calls";
}

/// A managed buffer of `bytes` from runtime_gpu_alloc_unranked.
struct ManagedBytes {
  TestMemRef<1> ref;
  explicit ManagedBytes(int64_t bytes) : ref({bytes}) {
    EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 1), 0)
        << kina_last_error();
  }
  ~ManagedBytes() { runtime_free(ref.ranked.allocated); }
  char *data() const { return static_cast<char *>(ref.ranked.aligned); }
};

/// Element (linear index `i`) of a value of `size` (<= 8) bytes: distinct
/// bytes.
void putElement(char *p, int64_t size, int64_t i) {
  for (int64_t k = 0; k < size && k < 8; ++k)
    p[k] = static_cast<char>((i * 7 + k * 31 + 1) & 0x7f);
}

TEST_F(GpuLaunch, StridedCopyGathersAndScatters) {
  struct Case {
    const char *name;
    int32_t rank;
    int64_t shape[4];
    int64_t from[4]; // Source strides (elements), relative to `origin`.
    int64_t origin;  // Source element offset of element [0, ...].
  };
  // Source: a dense row-major array of 4096 elements; each case reads a
  // view of it and writes it contiguously, then scatters it back into a
  // reversed (negative-stride) destination.
  const Case cases[] = {
      {"rank 0", 0, {}, {}, 5},
      {"contiguous", 1, {300}, {1}, 0},
      {"transposed", 2, {16, 24}, {1, 16}, 0},
      {"negative", 2, {7, 9}, {-9, -1}, 62},
      {"broadcast", 3, {4, 5, 6}, {0, 6, 1}, 0},
      {"rank 4", 4, {3, 2, 5, 7}, {1, 3, 6, 30}, 0},
      {"sliced", 2, {5, 3}, {40, 2}, 11},
  };
  for (int64_t size : {1, 2, 4, 8}) {
    ManagedBytes source(4096 * size);
    for (int64_t i = 0; i < 4096; ++i)
      putElement(source.data() + i * size, size, i);
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(c.name) + ", " + std::to_string(size) +
                   "-byte elements");
      int64_t count = 1;
      for (int32_t k = 0; k < c.rank; ++k)
        count *= c.shape[k];
      int64_t dense[4] = {0, 0, 0, 0}, reversed[4] = {0, 0, 0, 0};
      int64_t stride = 1;
      for (int32_t k = c.rank - 1; k >= 0; --k) {
        dense[k] = stride;
        reversed[k] = -stride;
        stride *= c.shape[k];
      }
      ManagedBytes gathered(count * size), scattered(count * size);
      std::memset(scattered.data(), 0, count * size);
      kina_rt_begin_call();
      ASSERT_EQ(kina_rt_gpu_enter(), 0) << kina_last_error();
      EXPECT_EQ(kina::rt::gpu::stridedCopy("test", gathered.data(), dense,
                                           source.data() + c.origin * size,
                                           c.from, c.shape, c.rank, size),
                0)
          << kina_last_error();
      // Scatter into the destination reversed in every dim: element
      // [0, ...] is the last one in memory.
      EXPECT_EQ(kina::rt::gpu::stridedCopy(
                    "test", scattered.data() + (count - 1) * size, reversed,
                    gathered.data(), dense, c.shape, c.rank, size),
                0)
          << kina_last_error();
      ASSERT_EQ(kina_rt_gpu_exit(), 0) << kina_last_error();
      for (int64_t i = 0; i < count; ++i) {
        int64_t rest = i, offset = c.origin;
        for (int32_t k = c.rank - 1; k >= 0; --k) {
          offset += (rest % c.shape[k]) * c.from[k];
          rest /= c.shape[k];
        }
        char want[8];
        putElement(want, size, offset);
        ASSERT_EQ(std::memcmp(gathered.data() + i * size, want, size), 0)
            << "gathered element " << i;
        ASSERT_EQ(
            std::memcmp(scattered.data() + (count - 1 - i) * size, want, size),
            0)
            << "scattered element " << i;
      }
    }
  }
}

} // namespace
