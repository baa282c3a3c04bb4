//===- HostAllocTest.cpp - Host allocation, registry, freeing, threads ----===//
//
// Tests _mlir_ciface_runtime_host_alloc_unranked (spec, ABI, "Allocation")
// and the registry behind runtime_free / runtime_gpu_free_all /
// runtime_live_*: ranks 0..4 with sizes, strides, offset and 64-byte
// alignment checked and every element written and read back; zero-size
// dims; every validation error (status 1, nothing allocated, pointers null);
// an unallocatable size (status 2); the cache of large blocks; and exact
// counts after 4 threads of concurrent allocation and freeing.
//
//===----------------------------------------------------------------------===//
#include "Registry.h"
#include "RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using kina::test::RuntimeTest;
using kina::test::TestMemRef;

class HostAlloc : public RuntimeTest {};

/// Allocates a rank-R float buffer, checks the descriptor and registry,
/// writes and reads every element through the strides, frees it.
template <int R> void checkHostRank(const std::array<int64_t, R> &sizes) {
  SCOPED_TRACE("rank " + std::to_string(R));
  TestMemRef<R> ref(sizes);
  int64_t countBefore = runtime_live_buffer_count();
  int64_t bytesBefore = runtime_live_bytes();
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 4), 0)
      << kina_last_error();
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

  auto *data = static_cast<float *>(ref.ranked.aligned);
  for (int64_t i = 0; i < elements; ++i)
    data[i] = static_cast<float>(i) * 0.5f + 1.0f;
  for (int64_t i = 0; i < elements; ++i)
    ASSERT_EQ(data[i], static_cast<float>(i) * 0.5f + 1.0f) << "element " << i;

  EXPECT_EQ(runtime_free(ref.ranked.allocated), 0);
  EXPECT_EQ(runtime_live_buffer_count(), countBefore);
  EXPECT_EQ(runtime_live_bytes(), bytesBefore);
}

TEST_F(HostAlloc, Ranks0To4) {
  checkHostRank<0>({});
  checkHostRank<1>({7});
  checkHostRank<2>({3, 5});
  checkHostRank<3>({2, 3, 4});
  checkHostRank<4>({2, 1, 3, 5});
}

TEST_F(HostAlloc, Rank8AndOtherElementSizes) {
  TestMemRef<8> ref({2, 1, 2, 1, 3, 1, 2, 2});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 1), 0);
  EXPECT_EQ(runtime_live_bytes(), 48);
  std::array<int64_t, 8> strides = ref.expectedStrides();
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(ref.ranked.strides[i], strides[i]) << "dim " << i;
  std::memset(ref.ranked.aligned, 1, 48);

  TestMemRef<2> wide({3, 3});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&wide.unranked, 8), 0);
  EXPECT_EQ(runtime_live_bytes(), 48 + 72);
  EXPECT_EQ(runtime_live_buffer_count(), 2);
}

TEST_F(HostAlloc, ZeroSizeDimsGiveValidPointers) {
  TestMemRef<3> ref({3, 0, 4});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 4), 0);
  ASSERT_NE(ref.ranked.allocated, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ref.ranked.aligned) % 64, 0u);
  EXPECT_EQ(ref.ranked.strides[0], 0);
  EXPECT_EQ(ref.ranked.strides[1], 4);
  EXPECT_EQ(ref.ranked.strides[2], 1);
  EXPECT_EQ(runtime_live_buffer_count(), 1);
  EXPECT_EQ(runtime_live_bytes(), 0);

  TestMemRef<1> empty({0});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&empty.unranked, 2), 0);
  ASSERT_NE(empty.ranked.allocated, nullptr);
  EXPECT_NE(empty.ranked.allocated, ref.ranked.allocated);
  EXPECT_EQ(runtime_live_buffer_count(), 2);
  EXPECT_EQ(runtime_free(ref.ranked.allocated), 0);
  EXPECT_EQ(runtime_free(empty.ranked.allocated), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

/// Expects `status` from a failed allocation of `ref`, with nothing
/// allocated, null pointers and a message containing `needle`.
template <int R>
void expectRejected(TestMemRef<R> &ref, int32_t elementSize, int32_t status,
                    const char *needle) {
  kina_rt_begin_call();
  EXPECT_EQ(
      _mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, elementSize),
      status);
  EXPECT_EQ(ref.ranked.allocated, nullptr);
  EXPECT_EQ(ref.ranked.aligned, nullptr);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(kina_rt_last_status(), status);
  std::string message = kina_last_error();
  EXPECT_NE(message.find("runtime_host_alloc_unranked"), std::string::npos)
      << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
}

TEST_F(HostAlloc, NegativeSizeIsValidationError) {
  TestMemRef<2> ref({2, -1});
  expectRejected(ref, 4, 1, "negative");
}

TEST_F(HostAlloc, OverflowingSizeIsValidationError) {
  TestMemRef<2> elements({int64_t(1) << 32, int64_t(1) << 32});
  expectRejected(elements, 1, 1, "overflow");
  TestMemRef<1> bytes({int64_t(1) << 61});
  expectRejected(bytes, 8, 1, "overflow");
  TestMemRef<1> justBytes({INT64_MAX});
  expectRejected(justBytes, 2, 1, "overflow");
  // Zero elements, but the stride of dim 0 (2^80) is not representable.
  TestMemRef<3> strides({0, int64_t(1) << 40, int64_t(1) << 40});
  expectRejected(strides, 4, 1, "overflow");
}

TEST_F(HostAlloc, BadRankIsValidationError) {
  TestMemRef<1> ref({4});
  ref.unranked.rank = -1;
  expectRejected(ref, 4, 1, "rank");
  ref.unranked.rank = KINA_MAX_RANK + 1;
  expectRejected(ref, 4, 1, "rank");
}

TEST_F(HostAlloc, NonPositiveElementSizeIsValidationError) {
  TestMemRef<1> ref({4});
  expectRejected(ref, 0, 1, "element size");
  expectRejected(ref, -4, 1, "element size");
}

TEST_F(HostAlloc, NullDescriptorsAreValidationErrors) {
  kina_rt_begin_call();
  EXPECT_EQ(_mlir_ciface_runtime_host_alloc_unranked(nullptr, 4), 1);
  EXPECT_EQ(kina_rt_last_status(), 1);
  EXPECT_NE(std::string(kina_last_error()).find("null"), std::string::npos);
  KinaUnrankedMemRef unranked{1, nullptr};
  EXPECT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&unranked, 4), 1);
  EXPECT_NE(std::string(kina_last_error()).find("null ranked"),
            std::string::npos);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(HostAlloc, HugeAllocationIsResourceError) {
  TestMemRef<1> ref({int64_t(1) << 59}); // 2^62 bytes: valid, unallocatable.
  expectRejected(ref, 8, 2, "cannot allocate");
}

TEST_F(HostAlloc, FreeRejectsUnknownPointers) {
  kina_rt_begin_call();
  EXPECT_EQ(runtime_free(nullptr), 1);
  EXPECT_EQ(kina_rt_last_status(), 1);
  int local = 0;
  EXPECT_EQ(runtime_free(&local), 1);
  EXPECT_NE(std::string(kina_last_error()).find("not a buffer recorded"),
            std::string::npos)
      << kina_last_error();

  TestMemRef<1> ref({16});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 4), 0);
  // An interior pointer is not a recorded buffer, and nothing is freed.
  EXPECT_EQ(runtime_free(static_cast<char *>(ref.ranked.allocated) + 4), 1);
  EXPECT_EQ(runtime_live_buffer_count(), 1);
  EXPECT_EQ(runtime_free(ref.ranked.allocated), 0);
  EXPECT_EQ(runtime_free(ref.ranked.allocated), 1); // Double free.
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(HostAlloc, FreeAllIsIdempotent) {
  std::vector<void *> pointers;
  for (int64_t n : {1, 10, 100}) {
    TestMemRef<1> ref({n});
    ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 4), 0);
    pointers.push_back(ref.ranked.allocated);
  }
  EXPECT_EQ(runtime_live_buffer_count(), 3);
  EXPECT_EQ(runtime_live_bytes(), 444);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  for (void *pointer : pointers)
    EXPECT_EQ(runtime_free(pointer), 1);
}

/// The cache of large host blocks (runtime/Registry.h): a freed buffer of 4
/// MiB or more is kept (not live, still "already freed" to runtime_free)
/// and handed to the next allocation of its capacity or up to a quarter
/// less; smaller buffers are released; runtime_gpu_free_all frees the kept.
TEST_F(HostAlloc, LargeBuffersAreKeptForReuse) {
  using kina::rt::cacheStats;
  ASSERT_EQ(cacheStats().blocks, 0);
  TestMemRef<2> big({5, int64_t(1) << 20}); // 20 MiB of f32
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&big.unranked, 4), 0)
      << kina_last_error();
  void *first = big.ranked.allocated;
  static_cast<float *>(big.ranked.aligned)[(5 << 20) - 1] = 1.0f;
  ASSERT_EQ(runtime_free(first), 0);
  EXPECT_EQ(cacheStats().blocks, 1);
  EXPECT_EQ(cacheStats().bytes, int64_t(20) << 20);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(runtime_free(first), KINA_STATUS_VALIDATION_ERROR)
      << "a kept block is still freed to its owner";

  // 17 MiB (capacity 18 MiB: the 20 MiB block is within a quarter above).
  TestMemRef<1> near({int64_t(17) << 18});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&near.unranked, 4), 0);
  EXPECT_EQ(near.ranked.allocated, first);
  EXPECT_EQ(cacheStats().blocks, 0);
  EXPECT_EQ(runtime_live_bytes(), int64_t(17) << 20);
  // 8 MiB while it is live: a new block.
  TestMemRef<1> other({int64_t(2) << 20});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&other.unranked, 4), 0);
  EXPECT_NE(other.ranked.allocated, first);
  // 1 MiB: below the threshold, released at once.
  TestMemRef<1> small({int64_t(1) << 18});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&small.unranked, 4), 0);
  ASSERT_EQ(runtime_free(small.ranked.allocated), 0);
  EXPECT_EQ(cacheStats().blocks, 0);
  ASSERT_EQ(runtime_free(near.ranked.allocated), 0);
  ASSERT_EQ(runtime_free(other.ranked.allocated), 0);
  EXPECT_EQ(cacheStats().blocks, 2);
  // 64 MiB: no kept block is large enough (8 and 20 MiB).
  TestMemRef<1> huge({int64_t(16) << 20});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&huge.unranked, 4), 0);
  EXPECT_EQ(cacheStats().blocks, 2);
  ASSERT_EQ(runtime_free(huge.ranked.allocated), 0);
  EXPECT_EQ(cacheStats().blocks, 3);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(cacheStats().blocks, 0);
  EXPECT_EQ(cacheStats().bytes, 0);
}

TEST_F(HostAlloc, ConcurrentAllocAndFreeKeepExactCounts) {
  constexpr int kThreads = 4, kIterations = 1000, kKeepEvery = 10;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < kIterations; ++i) {
        TestMemRef<2> ref({t + 1, i % 7 + 1});
        if (_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 8) != 0) {
          ++failures[t];
          continue;
        }
        auto *data = static_cast<int64_t *>(ref.ranked.aligned);
        int64_t elements = ref.elementCount();
        for (int64_t e = 0; e < elements; ++e)
          data[e] = t * 1000000 + i;
        for (int64_t e = 0; e < elements; ++e)
          if (data[e] != t * 1000000 + i)
            ++failures[t];
        // Keep every 10th buffer: 100 per thread stay recorded.
        if (i % kKeepEvery != 0 && runtime_free(ref.ranked.allocated) != 0)
          ++failures[t];
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], 0) << "thread " << t;

  int64_t expectedBytes = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kIterations; i += kKeepEvery)
      expectedBytes += int64_t(t + 1) * (i % 7 + 1) * 8;
  EXPECT_EQ(runtime_live_buffer_count(), kThreads * kIterations / kKeepEvery);
  EXPECT_EQ(runtime_live_bytes(), expectedBytes);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
}

} // namespace
