//===- GpuCacheTest.cpp - The runtime's cache of managed blocks -----------===//
//
// Tests of the cache runtime_free keeps of managed memory (Registry.h, "The
// cache of managed blocks"; docs/cuda.md). Everywhere: the size classes. On
// a GPU (suite GpuAllocCache, run by gpu-check.sh): a freed block is reused
// for the next allocation of its class and is neither live nor freeable
// again; a block freed inside a kina_<fn> call is reused by that thread only
// until the call ends; runtime_gpu_free_all gives every cached block back
// to CUDA (cuMemGetInfo rises again); 10^3 cycles of mixed sizes keep the
// cache bounded.
//
//===----------------------------------------------------------------------===//
#include "CudaDriver.h"
#include "GpuMemory.h"
#include "Registry.h"

#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <thread>

namespace {

using kina::rt::cacheStats;
using kina::rt::managedCapacity;

TEST(GpuCacheClasses, CapacitiesRoundUpByAtMostAQuarter) {
  EXPECT_EQ(managedCapacity(0), 512);
  EXPECT_EQ(managedCapacity(1), 512);
  EXPECT_EQ(managedCapacity(513), 1024);
  EXPECT_EQ(managedCapacity(1 << 20), 1 << 20);
  EXPECT_EQ(managedCapacity((1 << 20) + 1), (1 << 20) + (1 << 18));
  EXPECT_EQ(managedCapacity(3 << 20), 3 << 20);
  EXPECT_EQ(managedCapacity(100'000'000), 96 << 20);
  for (int64_t bytes : {int64_t(1) << 21, int64_t(5) << 29, int64_t(3) << 33,
                        int64_t(123456789)}) {
    EXPECT_GE(managedCapacity(bytes), bytes);
    EXPECT_LE(managedCapacity(bytes), bytes + bytes / 4);
  }
}

/// A managed buffer of `bytes` from the runtime's allocator.
void *allocate(int64_t bytes) {
  KinaMemRef1 ranked{};
  ranked.sizes[0] = bytes;
  KinaUnrankedMemRef unranked{1, &ranked};
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&unranked, 1), 0)
      << kina_last_error();
  return ranked.allocated;
}

class GpuAllocCache : public testing::Test {
protected:
  void SetUp() override {
    const kina::rt::cuda::Driver *driver = nullptr;
    if (kina::rt::cuda::loadDriver("test", driver) != 0)
      GTEST_SKIP() << "no usable CUDA GPU: " << kina_last_error();
    api = &driver->api;
    ASSERT_EQ(runtime_gpu_free_all(), 0);
  }
  void TearDown() override { runtime_gpu_free_all(); }
  const kina::rt::cuda::DriverApi *api = nullptr;
};

TEST_F(GpuAllocCache, FreedBlocksAreReusedNotLive) {
  void *first = allocate(100000);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(runtime_free(first), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(cacheStats().blocks, 1);
  EXPECT_EQ(cacheStats().bytes, managedCapacity(100000));
  // Freed once: a second free is "already freed", as without the cache.
  EXPECT_EQ(runtime_free(first), 1);
  // The same class (within a quarter): the same block, live again.
  void *second = allocate(99000);
  EXPECT_EQ(second, first);
  EXPECT_EQ(runtime_live_buffer_count(), 1);
  EXPECT_EQ(runtime_live_bytes(), 99000);
  EXPECT_EQ(cacheStats().blocks, 0);
  static_cast<char *>(second)[98999] = 1; // Host-readable managed memory.
  // Another class: a new block.
  void *third = allocate(400000);
  EXPECT_NE(third, first);
  EXPECT_EQ(runtime_free(second), 0);
  EXPECT_EQ(runtime_free(third), 0);
  EXPECT_EQ(cacheStats().blocks, 2);
}

TEST_F(GpuAllocCache, BlocksFreedInACallWaitForItsEnd) {
  kina_rt_begin_call();
  ASSERT_EQ(kina_rt_gpu_enter(), 0) << kina_last_error();
  void *inner = allocate(8192);
  EXPECT_EQ(runtime_free(inner), 0);
  // Another thread may not take it while this call's stream may use it.
  void *other = nullptr;
  std::thread([&] { other = allocate(8192); }).join();
  EXPECT_NE(other, inner);
  // This thread may: its stream orders the uses.
  void *again = allocate(8192);
  EXPECT_EQ(again, inner);
  EXPECT_EQ(runtime_free(again), 0);
  EXPECT_EQ(kina_rt_gpu_exit(), 0) << kina_last_error();
  // After the call, any thread.
  void *after = nullptr;
  std::thread([&] { after = allocate(8192); }).join();
  EXPECT_EQ(after, inner);
  EXPECT_EQ(runtime_free(after), 0);
  EXPECT_EQ(runtime_free(other), 0);
}

TEST_F(GpuAllocCache, FreeAllGivesCachedBlocksBack) {
  CUcontext context = nullptr;
  ASSERT_EQ(kina::rt::gpu::primaryContext("test", 0, context), 0);
  ASSERT_EQ(api->cuCtxSetCurrent(context), CUDA_SUCCESS);
  size_t before = 0, cached = 0, after = 0, total = 0;
  ASSERT_EQ(api->cuMemGetInfo(&before, &total), CUDA_SUCCESS);
  const int64_t bytes = int64_t(256) << 20;
  void *block = allocate(bytes);
  ASSERT_NE(block, nullptr);
  EXPECT_EQ(runtime_free(block), 0);
  ASSERT_EQ(api->cuMemGetInfo(&cached, &total), CUDA_SUCCESS);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(cacheStats().blocks, 0);
  ASSERT_EQ(api->cuMemGetInfo(&after, &total), CUDA_SUCCESS);
  ASSERT_EQ(api->cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
  // Managed memory counts once its pages exist; either way the free-all
  // must not leave the block's memory taken.
  EXPECT_GE(static_cast<int64_t>(after) + (4 << 20),
            static_cast<int64_t>(before));
  EXPECT_GE(after, cached);
}

TEST_F(GpuAllocCache, MixedSizesKeepTheCacheBounded) {
  const int64_t sizes[] = {1000, 70000, 1 << 20, 3 << 20, 5000, 12 << 20};
  for (int round = 0; round < 1000; ++round) {
    void *blocks[3];
    for (int i = 0; i < 3; ++i)
      blocks[i] = allocate(sizes[(round + i * 2) % 6]);
    for (void *block : blocks)
      ASSERT_EQ(runtime_free(block), 0);
  }
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  // At most three blocks of each class were ever live at once.
  EXPECT_LE(cacheStats().blocks, 18);
}

} // namespace
