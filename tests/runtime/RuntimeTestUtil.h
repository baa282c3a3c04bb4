//===- RuntimeTestUtil.h - Helpers shared by the runtime's GoogleTests ----===//
//
// Maps a rank to its KinaMemRef<R> struct, wraps a ranked descriptor in an
// unranked one as compiled code does, computes the expected row-major
// strides independently of the runtime, and provides a fixture that starts
// and ends every test with an empty registry and a clean thread error state.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TESTS_RUNTIME_TESTUTIL_H
#define KINA_TESTS_RUNTIME_TESTUTIL_H

#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>

namespace kina::test {

template <int R> struct MemRefOf;
template <> struct MemRefOf<0> { using type = KinaMemRef0; };
template <> struct MemRefOf<1> { using type = KinaMemRef1; };
template <> struct MemRefOf<2> { using type = KinaMemRef2; };
template <> struct MemRefOf<3> { using type = KinaMemRef3; };
template <> struct MemRefOf<4> { using type = KinaMemRef4; };
template <> struct MemRefOf<8> { using type = KinaMemRef8; };

/// A rank-R ranked descriptor with the given sizes, its pointers and strides
/// pre-set to garbage (so tests see that the runtime writes them), and the
/// unranked descriptor pointing at it.
template <int R> struct TestMemRef {
  typename MemRefOf<R>::type ranked{};
  KinaUnrankedMemRef unranked{R, &ranked};
  static int dummy;

  explicit TestMemRef(const std::array<int64_t, R> &sizes) {
    ranked.allocated = &dummy;
    ranked.aligned = &dummy;
    ranked.offset = 99;
    if constexpr (R > 0)
      for (int i = 0; i < R; ++i) {
        ranked.sizes[i] = sizes[i];
        ranked.strides[i] = -7;
      }
  }

  /// Expected row-major strides, in elements.
  std::array<int64_t, R> expectedStrides() const {
    std::array<int64_t, R> strides{};
    int64_t running = 1;
    if constexpr (R > 0)
      for (int i = R - 1; i >= 0; --i) {
        strides[i] = running;
        running *= ranked.sizes[i];
      }
    return strides;
  }

  int64_t elementCount() const {
    int64_t count = 1;
    if constexpr (R > 0)
      for (int i = 0; i < R; ++i)
        count *= ranked.sizes[i];
    return count;
  }
};
template <int R> int TestMemRef<R>::dummy = 0;

/// Every test starts and ends with an empty registry and no thread error.
class RuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(runtime_gpu_free_all(), KINA_STATUS_SUCCESS);
    ASSERT_EQ(runtime_live_buffer_count(), 0);
    kina_rt_begin_call();
  }
  void TearDown() override {
    EXPECT_EQ(runtime_gpu_free_all(), KINA_STATUS_SUCCESS);
    EXPECT_EQ(runtime_live_buffer_count(), 0);
    EXPECT_EQ(runtime_live_bytes(), 0);
  }
};

} // namespace kina::test

#endif // KINA_TESTS_RUNTIME_TESTUTIL_H
