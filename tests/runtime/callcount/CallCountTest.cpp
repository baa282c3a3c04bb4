//===- CallCountTest.cpp - Driver calls of one steady-state cuda call -----===//
//
// The fixed cost of a `--target=cuda` call (issue 13): kinac-compiled
// entries -- `kina_e1` (one add, one kernel) of bench/gpu/probe/probe.kir
// and `kina_forward` of samples/digits/mlp.kir -- linked with
// libkina_runtime.a and run against the counting stand-in driver
// fake_cuda.c ($KINA_CUDA_DRIVER; ctest sets it, with two devices).
//   * CallCount.*: after warm-up, one call (the entry, then runtime_free of
//     its result, as bench/gpu/bench.py times a call) makes exactly: one
//     cuCtxGetCurrent (kina_rt_gpu_enter: the caller's context, restored at
//     the exit), one cuPointerGetAttributes per argument the runtime did
//     not allocate (none for its own live buffers), the kernel launches and
//     one cuStreamSynchronize -- and no heap allocation (operator new is
//     counted). A regression in any of these fails.
//   * CallCache.*: what the runtime caches is invalidated: a buffer given
//     back by runtime_gpu_free_all and an address the driver hands out
//     again (to another device) are asked about again (status 1), so is a
//     host buffer of the runtime (status 1), a context
//     the caller made current between calls is switched and restored, a
//     thread with another device's context current runs on the selected
//     device and gets its context back, and calls on two devices load the
//     module once per device and launch in that device's context (the
//     stand-in refuses a launch in another context).
//
//===----------------------------------------------------------------------===//
#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <new>
#include <string>
#include <thread>
#include <vector>

extern "C" {
// The entries kinac generates (their headers: kinac --emit=header).
int32_t kina_e1(KinaMemRef2 *result, const KinaMemRef2 *x);
int32_t kina_forward(KinaMemRef2 *result, const KinaMemRef2 *x,
                     const KinaMemRef2 *w1, const KinaMemRef1 *b1,
                     const KinaMemRef2 *w2, const KinaMemRef1 *b2);
}

// --- Counting operator new ---------------------------------------------------

namespace {
std::atomic<bool> countingNew{false};
std::atomic<long> newCalls{0};
} // namespace

// The replacements pair malloc with free; GCC sees free() of what `new`
// returned once they are inlined into a delete expression.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void *operator new(std::size_t bytes) {
  if (countingNew.load(std::memory_order_relaxed))
    newCalls.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(bytes ? bytes : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

namespace {

using CUdeviceptr = unsigned long long;

/// The stand-in driver's control functions and the driver calls the tests
/// make themselves (foreign memory, contexts), from the library the runtime
/// loads ($KINA_CUDA_DRIVER).
struct Fake {
  long (*count)(const char *) = nullptr;
  long (*total)() = nullptr;
  void (*reset)() = nullptr;
  void (*trace)(char *, size_t) = nullptr;
  void *(*currentContext)() = nullptr;
  int (*memAlloc)(CUdeviceptr *, size_t) = nullptr;
  int (*memFree)(CUdeviceptr) = nullptr;
  int (*ctxSetCurrent)(void *) = nullptr;
  int (*primaryCtxRetain)(void **, int) = nullptr;
  std::string error;

  Fake() {
    const char *path = std::getenv("KINA_CUDA_DRIVER");
    if (!path || !*path) {
      error = "KINA_CUDA_DRIVER is not set (ctest sets it to fake_cuda)";
      return;
    }
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      error = std::string("cannot load ") + path + ": " + dlerror();
      return;
    }
    count = reinterpret_cast<long (*)(const char *)>(
        dlsym(handle, "fake_cuda_count"));
    total = reinterpret_cast<long (*)()>(dlsym(handle, "fake_cuda_total"));
    reset = reinterpret_cast<void (*)()>(dlsym(handle, "fake_cuda_reset"));
    trace = reinterpret_cast<void (*)(char *, size_t)>(
        dlsym(handle, "fake_cuda_trace"));
    currentContext = reinterpret_cast<void *(*)()>(
        dlsym(handle, "fake_cuda_current_context"));
    memAlloc = reinterpret_cast<int (*)(CUdeviceptr *, size_t)>(
        dlsym(handle, "cuMemAlloc_v2"));
    memFree =
        reinterpret_cast<int (*)(CUdeviceptr)>(dlsym(handle, "cuMemFree_v2"));
    ctxSetCurrent =
        reinterpret_cast<int (*)(void *)>(dlsym(handle, "cuCtxSetCurrent"));
    primaryCtxRetain = reinterpret_cast<int (*)(void **, int)>(
        dlsym(handle, "cuDevicePrimaryCtxRetain"));
    if (!count || !total || !reset || !trace || !currentContext || !memAlloc ||
        !memFree || !ctxSetCurrent || !primaryCtxRetain)
      error = std::string(path) + " is not the stand-in driver fake_cuda";
  }

  void *context(int device) const {
    void *c = nullptr;
    return primaryCtxRetain(&c, device) == 0 ? c : nullptr;
  }

  std::string traceText() const {
    char text[4096];
    trace(text, sizeof(text));
    return text;
  }
};

const Fake &fake() {
  static const Fake *instance = new Fake();
  return *instance;
}

/// A rank-2 descriptor over `data` (row-major [rows, cols]).
KinaMemRef2 matrix(void *data, int64_t rows, int64_t cols) {
  KinaMemRef2 m{};
  m.allocated = m.aligned = data;
  m.sizes[0] = rows;
  m.sizes[1] = cols;
  m.strides[0] = cols;
  m.strides[1] = 1;
  return m;
}

KinaMemRef1 vector1(void *data, int64_t n) {
  KinaMemRef1 v{};
  v.allocated = v.aligned = data;
  v.sizes[0] = n;
  v.strides[0] = 1;
  return v;
}

/// Device memory of `device` as another allocator (PyTorch's) has it:
/// cuMemAlloc under that device's context, the caller's context put back.
void *foreignDeviceMemory(int device, size_t bytes) {
  const Fake &f = fake();
  void *previous = f.currentContext();
  CUdeviceptr address = 0;
  if (f.ctxSetCurrent(f.context(device)) != 0 ||
      f.memAlloc(&address, bytes) != 0)
    address = 0;
  f.ctxSetCurrent(previous);
  return reinterpret_cast<void *>(static_cast<uintptr_t>(address));
}

/// A buffer of the runtime (managed memory, in its registry).
void *runtimeBuffer(int64_t rows, int64_t cols) {
  KinaMemRef2 m{};
  m.sizes[0] = rows;
  m.sizes[1] = cols;
  KinaUnrankedMemRef unranked{2, &m};
  if (_mlir_ciface_runtime_gpu_alloc_unranked(&unranked, 4) != 0)
    return nullptr;
  return m.allocated;
}

constexpr int64_t kRows = 1797;

/// The driver calls and heap allocations of `calls` calls of `call`.
struct Counts {
  long total = 0;
  long newCalls = 0;
  std::string trace; ///< Of the whole run, in order.
  long of(const char *name) const { return fake().count(name); }
};

template <typename Call> Counts countCalls(int calls, Call &&call) {
  Counts counts;
  fake().reset();
  newCalls.store(0);
  countingNew.store(true);
  for (int i = 0; i < calls; ++i)
    call();
  countingNew.store(false);
  counts.total = fake().total();
  counts.newCalls = newCalls.load();
  counts.trace = fake().traceText();
  return counts;
}

class CallCount : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(fake().error, "");
    ASSERT_EQ(runtime_gpu_set_device(0), 0) << kina_last_error();
  }
  void TearDown() override { EXPECT_EQ(runtime_gpu_free_all(), 0); }
};

/// One call of kina_e1 as bench.py's Kernel.timed makes it: the entry and
/// runtime_free of the result. False (and a test failure) on an error.
bool callE1(const KinaMemRef2 &x) {
  KinaMemRef2 out{};
  int32_t status = kina_e1(&out, &x);
  bool ok = status == 0 && runtime_free(out.allocated) == 0;
  if (!ok)
    ADD_FAILURE() << "kina_e1: " << status << ": " << kina_last_error();
  return ok;
}

TEST_F(CallCount, E1OnForeignMemory) {
  // The probe's `e1` on a PyTorch-like tensor (device memory the runtime
  // did not allocate), the caller's context current (as PyTorch has it).
  ASSERT_EQ(fake().ctxSetCurrent(fake().context(0)), 0);
  void *data = foreignDeviceMemory(0, kRows * 10 * 4);
  ASSERT_NE(data, nullptr);
  KinaMemRef2 x = matrix(data, kRows, 10);
  for (int i = 0; i < 3; ++i) // Warm-up: module, stream, cached block.
    ASSERT_TRUE(callE1(x));
  constexpr int kCalls = 10;
  Counts c = countCalls(kCalls, [&] { callE1(x); });
  std::printf("e1, one steady-state call (foreign argument): %ld driver "
              "calls: %s\n",
              c.total / kCalls,
              c.trace.substr(0, c.trace.size() / kCalls).c_str());
  EXPECT_EQ(c.of("cuCtxGetCurrent"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.of("cuPointerGetAttributes"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.of("cuLaunchKernel"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.of("cuStreamSynchronize"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.total, 4 * kCalls) << c.trace;
  EXPECT_EQ(c.newCalls, 0) << "heap allocations in " << kCalls << " calls";
  EXPECT_EQ(fake().currentContext(), fake().context(0));
  fake().ctxSetCurrent(nullptr);
}

TEST_F(CallCount, E1OnRuntimeBufferWithoutContext) {
  // A C program's call: no context current (the runtime makes device 0's
  // current and puts "none" back), the argument a buffer of the runtime's
  // (no pointer query).
  ASSERT_EQ(fake().ctxSetCurrent(nullptr), 0);
  void *data = runtimeBuffer(kRows, 10);
  ASSERT_NE(data, nullptr) << kina_last_error();
  KinaMemRef2 x = matrix(data, kRows, 10);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(callE1(x));
  constexpr int kCalls = 10;
  Counts c = countCalls(kCalls, [&] { callE1(x); });
  std::printf("e1, one steady-state call (runtime buffer, no context "
              "current): %ld driver calls: %s\n",
              c.total / kCalls,
              c.trace.substr(0, c.trace.size() / kCalls).c_str());
  EXPECT_EQ(c.of("cuCtxGetCurrent"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.of("cuCtxSetCurrent"), 2 * kCalls) << c.trace; // In and out.
  EXPECT_EQ(c.of("cuPointerGetAttributes"), 0) << c.trace;
  EXPECT_EQ(c.of("cuLaunchKernel"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.of("cuStreamSynchronize"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.total, 5 * kCalls) << c.trace;
  EXPECT_EQ(c.newCalls, 0) << "heap allocations in " << kCalls << " calls";
  EXPECT_EQ(fake().currentContext(), nullptr);
}

TEST_F(CallCount, ForwardOnForeignMemory) {
  // The digits MLP as the probe calls it: five PyTorch-like tensors.
  ASSERT_EQ(fake().ctxSetCurrent(fake().context(0)), 0);
  void *x = foreignDeviceMemory(0, kRows * 64 * 4);
  void *w1 = foreignDeviceMemory(0, 64 * 32 * 4);
  void *b1 = foreignDeviceMemory(0, 32 * 4);
  void *w2 = foreignDeviceMemory(0, 32 * 10 * 4);
  void *b2 = foreignDeviceMemory(0, 10 * 4);
  ASSERT_TRUE(x && w1 && b1 && w2 && b2);
  KinaMemRef2 mx = matrix(x, kRows, 64), mw1 = matrix(w1, 64, 32),
              mw2 = matrix(w2, 32, 10);
  KinaMemRef1 vb1 = vector1(b1, 32), vb2 = vector1(b2, 10);
  auto call = [&] {
    KinaMemRef2 out{};
    int32_t status = kina_forward(&out, &mx, &mw1, &vb1, &mw2, &vb2);
    if (status != 0 || runtime_free(out.allocated) != 0)
      ADD_FAILURE() << "kina_forward: " << status << ": " << kina_last_error();
  };
  for (int i = 0; i < 3; ++i)
    call();
  constexpr int kCalls = 10;
  Counts c = countCalls(kCalls, call);
  long launches = c.of("cuLaunchKernel");
  std::printf("forward, one steady-state call: %ld driver calls (%ld "
              "launches): %s\n",
              c.total / kCalls, launches / kCalls,
              c.trace.substr(0, c.trace.size() / kCalls).c_str());
  // The kernels are GpuMapRowChains' business: at least one per call; the
  // rest is the call's fixed cost.
  EXPECT_GE(launches, 1 * kCalls);
  EXPECT_EQ(launches % kCalls, 0);
  EXPECT_EQ(c.of("cuCtxGetCurrent"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.of("cuPointerGetAttributes"), 5 * kCalls) << c.trace;
  EXPECT_EQ(c.of("cuStreamSynchronize"), 1 * kCalls) << c.trace;
  EXPECT_EQ(c.total - launches, 7 * kCalls) << c.trace;
  EXPECT_EQ(c.newCalls, 0) << "heap allocations in " << kCalls << " calls";
  fake().ctxSetCurrent(nullptr);
}

// --- Invalidation ------------------------------------------------------------

using CallCache = CallCount;

TEST_F(CallCache, FreedBuffersAreAskedAboutAgain) {
  ASSERT_EQ(fake().ctxSetCurrent(nullptr), 0);
  void *data = runtimeBuffer(kRows, 10);
  ASSERT_NE(data, nullptr) << kina_last_error();
  KinaMemRef2 x = matrix(data, kRows, 10);
  ASSERT_TRUE(callE1(x));
  // runtime_gpu_free_all gives it back to the driver: the registry forgets
  // it, the driver does too, so it is "ordinary host memory" now.
  ASSERT_EQ(runtime_gpu_free_all(), 0);
  KinaMemRef2 out{};
  EXPECT_EQ(kina_e1(&out, &x), 1);
  EXPECT_NE(std::string(kina_last_error()).find("ordinary host memory"),
            std::string::npos)
      << kina_last_error();
  EXPECT_EQ(out.allocated, nullptr);

  // The driver hands the same address out again, as device 1's memory
  // (another allocator's): a call on device 0 must refuse it.
  void *again = runtimeBuffer(kRows, 10); // The same size class again...
  ASSERT_NE(again, nullptr);
  ASSERT_EQ(runtime_gpu_free_all(), 0); // ...freed to the driver.
  void *foreign = foreignDeviceMemory(1, 1797 * 10 * 4 / 512 * 512 + 512);
  ASSERT_EQ(foreign, again) << "the stand-in reuses a freed block";
  KinaMemRef2 y = matrix(foreign, kRows, 10);
  EXPECT_EQ(kina_e1(&out, &y), 1);
  EXPECT_NE(
      std::string(kina_last_error()).find("device memory of CUDA device 1"),
      std::string::npos)
      << kina_last_error();
  // runtime_free of a pointer the registry forgot is still refused.
  EXPECT_EQ(runtime_free(again), 1);
  ASSERT_EQ(fake().ctxSetCurrent(fake().context(1)), 0);
  EXPECT_EQ(fake().memFree(reinterpret_cast<uintptr_t>(foreign)), 0);
  ASSERT_EQ(fake().ctxSetCurrent(nullptr), 0);
}

TEST_F(CallCache, HostBufferOfTheRuntimeIsRefused) {
  // The registry knows host buffers too: only its managed ones skip the
  // driver's answer.
  KinaMemRef2 m{};
  m.sizes[0] = kRows;
  m.sizes[1] = 10;
  KinaUnrankedMemRef unranked{2, &m};
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&unranked, 4), 0);
  KinaMemRef2 x = matrix(m.allocated, kRows, 10), out{};
  Counts c = countCalls(1, [&] { EXPECT_EQ(kina_e1(&out, &x), 1); });
  EXPECT_EQ(c.of("cuPointerGetAttributes"), 1) << c.trace;
  EXPECT_NE(std::string(kina_last_error()).find("ordinary host memory"),
            std::string::npos)
      << kina_last_error();
  EXPECT_EQ(runtime_free(m.allocated), 0);
}

TEST_F(CallCache, ContextChangedBetweenCallsIsSwitchedAndRestored) {
  void *data = foreignDeviceMemory(0, kRows * 10 * 4);
  KinaMemRef2 x = matrix(data, kRows, 10);
  // Device 0's context current: no switch.
  ASSERT_EQ(fake().ctxSetCurrent(fake().context(0)), 0);
  ASSERT_TRUE(callE1(x));
  EXPECT_EQ(fake().currentContext(), fake().context(0));
  // The caller makes device 1's current between two calls: the next call
  // still runs in device 0's context (the stand-in refuses a launch in
  // another one) and puts device 1's back.
  ASSERT_EQ(fake().ctxSetCurrent(fake().context(1)), 0);
  Counts c = countCalls(1, [&] { callE1(x); });
  EXPECT_EQ(c.of("cuCtxSetCurrent"), 2) << c.trace;
  EXPECT_EQ(fake().currentContext(), fake().context(1));
  ASSERT_EQ(fake().ctxSetCurrent(nullptr), 0);
  ASSERT_TRUE(callE1(x));
  EXPECT_EQ(fake().currentContext(), nullptr);
}

TEST_F(CallCache, AnotherThreadWithAnotherContext) {
  void *data = foreignDeviceMemory(0, kRows * 10 * 4);
  KinaMemRef2 x = matrix(data, kRows, 10);
  ASSERT_EQ(fake().ctxSetCurrent(fake().context(0)), 0);
  ASSERT_TRUE(callE1(x)); // This thread's caches are warm.
  void *seen = nullptr;
  bool ok = false;
  std::thread other([&] {
    // A fresh thread: its own stream and caches; device 1's context
    // current, the call on the selected device 0.
    if (fake().ctxSetCurrent(fake().context(1)) != 0)
      return;
    ok = callE1(x) && callE1(x);
    seen = fake().currentContext();
  });
  other.join();
  EXPECT_TRUE(ok);
  EXPECT_EQ(seen, fake().context(1));
  EXPECT_EQ(fake().currentContext(), fake().context(0));
  ASSERT_TRUE(callE1(x));
  fake().ctxSetCurrent(nullptr);
}

TEST_F(CallCache, TwoDevices) {
  ASSERT_EQ(fake().ctxSetCurrent(nullptr), 0);
  void *data0 = foreignDeviceMemory(0, kRows * 10 * 4);
  void *data1 = foreignDeviceMemory(1, kRows * 10 * 4);
  KinaMemRef2 x0 = matrix(data0, kRows, 10), x1 = matrix(data1, kRows, 10);
  ASSERT_TRUE(callE1(x0));
  // Device 1: its module is loaded once, in its context, and its launches
  // run there; device 0's memory is refused on it.
  ASSERT_EQ(runtime_gpu_set_device(1), 0);
  Counts first = countCalls(1, [&] { callE1(x1); });
  EXPECT_EQ(first.of("cuModuleLoadData") + first.of("cuModuleLoadDataEx"), 1)
      << first.trace;
  Counts second = countCalls(1, [&] { callE1(x1); });
  EXPECT_EQ(second.of("cuModuleLoadData") + second.of("cuModuleLoadDataEx"), 0)
      << second.trace;
  EXPECT_EQ(second.of("cuLaunchKernel"), 1) << second.trace;
  KinaMemRef2 out{};
  EXPECT_EQ(kina_e1(&out, &x0), 1);
  EXPECT_NE(
      std::string(kina_last_error()).find("device memory of CUDA device 0"),
      std::string::npos)
      << kina_last_error();
  // A result of device 1 (the runtime's) is accepted on device 0: managed.
  KinaMemRef2 r1{};
  ASSERT_EQ(kina_e1(&r1, &x1), 0) << kina_last_error();
  ASSERT_EQ(runtime_gpu_set_device(0), 0);
  Counts back = countCalls(1, [&] { callE1(r1); });
  EXPECT_EQ(back.of("cuModuleLoadData") + back.of("cuModuleLoadDataEx"), 0)
      << back.trace;
  EXPECT_EQ(back.of("cuPointerGetAttributes"), 0) << back.trace;
  EXPECT_EQ(runtime_free(r1.allocated), 0);
  EXPECT_EQ(fake().currentContext(), nullptr);
}

} // namespace
