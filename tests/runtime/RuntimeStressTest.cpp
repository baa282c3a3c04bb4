//===- RuntimeStressTest.cpp - The registry under concurrent load ---------===//
//
// Stress tests of libkina_runtime.a's buffer registry (spec, ABI,
// "Ownership": the registry is thread-safe): 8 threads each allocate,
// write, check and free their own buffers 10^5 times (ranks 0..3, element
// sizes 1..8 bytes), mixing in frees of unknown pointers and double frees
// (status 1, the thread's own message), while a reader thread polls the
// registry counts. Every 1000th buffer is kept: the counts must then be
// exact, the kept buffers intact, and runtime_gpu_free_all must free them
// all, also when called by several threads at once, and be idempotent.
// These run in runtime_tests and in its ASan+UBSan and TSan builds
// (runtime_tests_asan, runtime_tests_tsan: leaks, double frees and data
// races fail the test). KINA_STRESS_ITERATIONS lowers the count for slow
// runs (valgrind).
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using kina::test::RuntimeTest;
using kina::test::TestMemRef;

class RuntimeStress : public RuntimeTest {};

constexpr int kThreads = 8;
constexpr int64_t kKeepEvery = 1000;

int64_t stressIterations() {
  if (const char *env = std::getenv("KINA_STRESS_ITERATIONS"))
    return std::max<int64_t>(1, std::atoll(env));
  return 100000;
}

/// A buffer a thread kept, with the byte pattern it wrote.
struct Kept {
  void *pointer;
  int64_t bytes;
  unsigned char pattern;
};

/// One allocation of rank R: fills `bytes`/`pointer`, or returns the status.
template <int R>
int32_t allocate(const std::array<int64_t, R> &sizes, int32_t elementSize,
                 void *&pointer, int64_t &bytes) {
  TestMemRef<R> ref(sizes);
  int32_t status =
      _mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, elementSize);
  pointer = ref.ranked.allocated;
  bytes = ref.elementCount() * elementSize;
  if (status == 0 && ref.ranked.aligned != ref.ranked.allocated)
    return -1;
  return status;
}

/// The work of one thread; returns the number of failed checks.
int64_t worker(int t, int64_t iterations, std::vector<Kept> &kept) {
  int64_t failures = 0;
  for (int64_t i = 0; i < iterations; ++i) {
    int32_t elementSize = int32_t(1) << (i % 4);
    int64_t a = 1 + (i + t) % 5, b = 1 + i % 3, c = 1 + (i / 3) % 4;
    void *pointer = nullptr;
    int64_t bytes = 0;
    int32_t status;
    switch ((i / 4) % 4) {
    case 0:
      status = allocate<0>({}, elementSize, pointer, bytes);
      break;
    case 1:
      status = allocate<1>({a * c}, elementSize, pointer, bytes);
      break;
    case 2:
      status = allocate<2>({a, b}, elementSize, pointer, bytes);
      break;
    default:
      status = allocate<3>({a, b, c}, elementSize, pointer, bytes);
      break;
    }
    if (status != 0 || !pointer) {
      ++failures;
      continue;
    }
    auto pattern = static_cast<unsigned char>(t * 31 + i);
    auto *data = static_cast<unsigned char *>(pointer);
    std::memset(data, pattern, static_cast<size_t>(bytes));
    for (int64_t k = 0; k < bytes; ++k)
      if (data[k] != pattern) {
        ++failures;
        break;
      }
    if (i % 97 == 0) {
      // Unknown pointer: status 1 and this thread's own message.
      int local = 0;
      if (runtime_free(&local) != 1 ||
          std::string(kina_last_error()).find("not a buffer recorded") ==
              std::string::npos)
        ++failures;
    }
    if (i % kKeepEvery == 0) {
      kept.push_back({pointer, bytes, pattern});
      continue;
    }
    if (runtime_free(pointer) != 0)
      ++failures;
    if (i % 101 == 0 && runtime_free(pointer) != 1) // double free
      ++failures;
  }
  return failures;
}

TEST_F(RuntimeStress, EightThreadsAllocateWriteCheckFree) {
  const int64_t iterations = stressIterations();
  std::vector<std::vector<Kept>> kept(kThreads);
  std::vector<int64_t> failures(kThreads, 0);
  std::atomic<bool> done{false};
  std::atomic<int64_t> badReads{0};
  // A reader polling the counts while the workers run.
  std::thread reader([&] {
    while (!done.load()) {
      if (runtime_live_buffer_count() < 0 || runtime_live_bytes() < 0)
        ++badReads;
      std::this_thread::yield();
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back(
        [&, t] { failures[t] = worker(t, iterations, kept[t]); });
  for (std::thread &thread : threads)
    thread.join();
  done = true;
  reader.join();
  EXPECT_EQ(badReads.load(), 0);

  int64_t keptCount = 0, keptBytes = 0;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    EXPECT_EQ(static_cast<int64_t>(kept[t].size()),
              (iterations + kKeepEvery - 1) / kKeepEvery)
        << "thread " << t;
    for (const Kept &k : kept[t]) {
      ++keptCount;
      keptBytes += k.bytes;
      // Nothing another thread did touched this buffer.
      const auto *data = static_cast<const unsigned char *>(k.pointer);
      for (int64_t i = 0; i < k.bytes; ++i)
        ASSERT_EQ(data[i], k.pattern) << "thread " << t << " byte " << i;
    }
  }
  EXPECT_EQ(runtime_live_buffer_count(), keptCount);
  EXPECT_EQ(runtime_live_bytes(), keptBytes);

  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(runtime_gpu_free_all(), 0); // idempotent
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  // The kept buffers are gone from the registry: freeing one is status 1.
  EXPECT_EQ(runtime_free(kept[0][0].pointer), 1);
}

TEST_F(RuntimeStress, ConcurrentFreeAllFreesEachBufferOnce) {
  constexpr int kBuffers = 10000;
  for (int i = 0; i < kBuffers; ++i) {
    TestMemRef<1> ref({i % 13});
    ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 4), 0);
  }
  ASSERT_EQ(runtime_live_buffer_count(), kBuffers);
  std::vector<std::thread> threads;
  std::vector<int32_t> statuses(kThreads, -1);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] { statuses[t] = runtime_gpu_free_all(); });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(statuses[t], 0) << "thread " << t;
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
}

TEST_F(RuntimeStress, ThreadsFreeEachOthersBuffers) {
  // Ownership may move between threads: buffers allocated by one thread
  // and freed by another, while both keep allocating.
  constexpr int kPerThread = 5000;
  std::vector<std::vector<void *>> allocated(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        TestMemRef<1> ref({1 + i % 9});
        if (_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 8) == 0)
          allocated[t].push_back(ref.ranked.allocated);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  threads.clear();
  std::vector<int64_t> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (void *p : allocated[(t + 1) % kThreads])
        failures[t] += runtime_free(p) != 0;
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(static_cast<int>(allocated[t].size()), kPerThread);
    EXPECT_EQ(failures[t], 0);
  }
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

} // namespace
