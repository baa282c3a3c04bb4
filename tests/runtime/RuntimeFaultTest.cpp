//===- RuntimeFaultTest.cpp - The runtime under refused memory and bad input
//===//
//
// Fault tests of libkina_runtime.a with its host allocator replaced
// (Registry.h, setHostAllocatorForTesting) by one that counts calls and can
// refuse chosen allocations: a size whose byte count overflows is status 1
// before any allocation is attempted; an allocation the system refuses is
// status 2 with null pointers, nothing recorded and nothing leaked, and the
// runtime works normally afterwards; a null descriptor, a null nested
// descriptor, or a rank outside 0..KINA_MAX_RANK passed to the allocation
// functions is status 1 with no allocation; runtime_free of a pointer the
// runtime did not allocate is status 1 and leaves that memory alone. A rank
// that disagrees with the ranked struct the unranked descriptor points at
// cannot be seen through C (the struct carries no rank): abi.h documents
// that the caller's rank must match.
//
//===----------------------------------------------------------------------===//
#include "Registry.h"
#include "RuntimeTestUtil.h"

#include <gtest/gtest.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace {

using kina::test::RuntimeTest;
using kina::test::TestMemRef;

std::atomic<int64_t> allocateCalls{0};
std::atomic<int64_t> releaseCalls{0};
/// The allocate call (1-based) to refuse; 0 refuses none.
std::atomic<int64_t> refuseCall{0};

void *countingAllocate(size_t alignment, size_t bytes) {
  int64_t n = ++allocateCalls;
  if (n == refuseCall.load())
    return nullptr;
  return std::aligned_alloc(alignment, bytes);
}

void countingRelease(void *pointer) {
  ++releaseCalls;
  std::free(pointer);
}

/// Installs the counting allocator for one test.
class RuntimeFault : public RuntimeTest {
protected:
  void SetUp() override {
    RuntimeTest::SetUp();
    allocateCalls = 0;
    releaseCalls = 0;
    refuseCall = 0;
    kina::rt::HostAllocator counting{countingAllocate, countingRelease};
    kina::rt::setHostAllocatorForTesting(&counting);
  }
  void TearDown() override {
    RuntimeTest::TearDown();
    kina::rt::setHostAllocatorForTesting(nullptr);
  }
};

template <int R>
void expectRejectedBeforeAllocating(TestMemRef<R> &ref, int32_t elementSize,
                                    const char *needle) {
  kina_rt_begin_call();
  int64_t before = allocateCalls.load();
  EXPECT_EQ(
      _mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, elementSize), 1);
  EXPECT_EQ(allocateCalls.load(), before) << "an allocation was attempted";
  EXPECT_EQ(ref.ranked.allocated, nullptr);
  EXPECT_EQ(ref.ranked.aligned, nullptr);
  EXPECT_EQ(kina_rt_last_status(), 1);
  EXPECT_NE(std::string(kina_last_error()).find(needle), std::string::npos)
      << kina_last_error();
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(RuntimeFault, CountingAllocatorSeesEveryAllocation) {
  TestMemRef<2> ref({3, 4});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 4), 0);
  EXPECT_EQ(allocateCalls.load(), 1);
  EXPECT_EQ(runtime_free(ref.ranked.allocated), 0);
  EXPECT_EQ(releaseCalls.load(), 1);
}

TEST_F(RuntimeFault, OverflowingSizeIsStatus1BeforeAnyAllocation) {
  TestMemRef<2> elements({int64_t(1) << 32, int64_t(1) << 32});
  expectRejectedBeforeAllocating(elements, 1, "overflow");
  TestMemRef<1> bytes({int64_t(1) << 62});
  expectRejectedBeforeAllocating(bytes, 4, "overflow");
  TestMemRef<3> strides({0, int64_t(1) << 40, int64_t(1) << 40});
  expectRejectedBeforeAllocating(strides, 4, "overflow");
  TestMemRef<8> rank8({2, 2, 2, 2, 2, 2, INT64_MAX, 2});
  expectRejectedBeforeAllocating(rank8, 1, "overflow");
}

TEST_F(RuntimeFault, InvalidDescriptorsAreStatus1BeforeAnyAllocation) {
  kina_rt_begin_call();
  EXPECT_EQ(_mlir_ciface_runtime_host_alloc_unranked(nullptr, 4), 1);
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(nullptr, 4), 1);
  KinaUnrankedMemRef nullNested{2, nullptr};
  EXPECT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&nullNested, 4), 1);
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&nullNested, 4), 1);
  for (int64_t rank :
       {int64_t(-1), int64_t(KINA_MAX_RANK + 1), INT64_MIN, INT64_MAX}) {
    TestMemRef<1> ref({4});
    ref.unranked.rank = rank;
    expectRejectedBeforeAllocating(ref, 4, "rank");
    ref.unranked.rank = rank;
    EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 4), 1);
  }
  TestMemRef<1> negative({-1});
  expectRejectedBeforeAllocating(negative, 4, "negative");
  TestMemRef<1> element({4});
  expectRejectedBeforeAllocating(element, 0, "element size");
  expectRejectedBeforeAllocating(element, INT32_MIN, "element size");
  EXPECT_EQ(allocateCalls.load(), 0);
}

TEST_F(RuntimeFault, RefusedAllocationIsStatus2AndLeavesNothing) {
  refuseCall = 1;
  TestMemRef<2> ref({8, 8});
  kina_rt_begin_call();
  EXPECT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 4), 2);
  EXPECT_EQ(kina_rt_last_status(), 2);
  EXPECT_NE(std::string(kina_last_error()).find("cannot allocate 256 bytes"),
            std::string::npos)
      << kina_last_error();
  EXPECT_EQ(ref.ranked.allocated, nullptr);
  EXPECT_EQ(ref.ranked.aligned, nullptr);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(allocateCalls.load(), 1);
  EXPECT_EQ(releaseCalls.load(), 0);
  // The runtime keeps working.
  TestMemRef<2> again({8, 8});
  EXPECT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&again.unranked, 4), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 1);
  EXPECT_EQ(runtime_free(again.ranked.allocated), 0);
}

TEST_F(RuntimeFault, EveryNthRefusalKeepsCountsExact) {
  // Refuse call k of 20 for each k: the 19 others succeed and are freed.
  for (int64_t k = 1; k <= 20; ++k) {
    allocateCalls = 0;
    refuseCall = k;
    int64_t ok = 0, refused = 0;
    for (int i = 0; i < 20; ++i) {
      TestMemRef<1> ref({i + 1});
      int32_t status =
          _mlir_ciface_runtime_host_alloc_unranked(&ref.unranked, 2);
      if (status == 0) {
        ++ok;
        EXPECT_EQ(runtime_free(ref.ranked.allocated), 0);
      } else {
        EXPECT_EQ(status, 2);
        EXPECT_EQ(ref.ranked.allocated, nullptr);
        ++refused;
      }
    }
    EXPECT_EQ(ok, 19) << "k = " << k;
    EXPECT_EQ(refused, 1) << "k = " << k;
    EXPECT_EQ(runtime_live_buffer_count(), 0);
  }
}

TEST_F(RuntimeFault, UnknownPointersAreStatus1AndNotFreed) {
  kina_rt_begin_call();
  EXPECT_EQ(runtime_free(nullptr), 1);
  void *foreign = std::malloc(64);
  ASSERT_NE(foreign, nullptr);
  EXPECT_EQ(runtime_free(foreign), 1);
  EXPECT_EQ(kina_rt_last_status(), 1);
  EXPECT_EQ(releaseCalls.load(), 0);
  // Still ours to use and free (ASan would report a double free or a use
  // after free if the runtime had released it).
  static_cast<char *>(foreign)[63] = 1;
  std::free(foreign);
}

} // namespace
