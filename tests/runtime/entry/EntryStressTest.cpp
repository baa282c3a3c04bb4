//===- EntryStressTest.cpp - Compiled entry points under load and faults --===//
//
// Tests of kinac-generated `kina_<fn>` entry points linked with
// libkina_runtime.a (spec, ABI). The model, stress_model.kir, is compiled by
// the kinac of this build into an object and a header (CMake custom
// command). Checked here:
//  - 8 threads call kina_dense_softmax concurrently, each on its own inputs
//    with its own batch sizes, 2000 times each (KINA_STRESS_CALLS changes
//    it), comparing every result with a reference computed here in double,
//    freeing results with runtime_free, and mixing in calls that fail
//    validation (status 1, the thread's own message); at the end the
//    registry holds exactly the results kept, runtime_gpu_free_all frees
//    them and is idempotent;
//  - with the runtime's host allocator replaced (fault injection,
//    Registry.h) refusing the k-th allocation of a call, for every k, the
//    entry returns 2 with a null result and every temporary it had
//    allocated is released (allocations == releases + 1, registry empty);
//  - null result or argument descriptors, a static dim that differs, a
//    symbolic dim with two sizes, negative sizes, non-contiguous strides,
//    null data with elements, and sizes whose product overflows are all
//    status 1, a zeroed result and nothing allocated; null data with zero
//    elements and a non-zero offset are valid.
// A descriptor of another rank cannot be passed without a cast: the rank is
// part of the C type of each parameter (KinaMemRef<R>), as abi.h says.
// This runs normally, under ASan+UBSan and TSan runtimes (entry_stress_asan,
// entry_stress_tsan) and under valgrind (entry_stress_valgrind).
//
//===----------------------------------------------------------------------===//
#include "stress_model.h"

#include "Registry.h"
#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kIn = 16, kOut = 8;

int64_t stressCalls() {
  if (const char *env = std::getenv("KINA_STRESS_CALLS"))
    return std::max<int64_t>(1, std::atoll(env));
  return 2000;
}

/// A row-major f32 tensor owned by the test, with a descriptor onto it.
template <int R> struct Tensor;

template <> struct Tensor<2> {
  std::vector<float> data;
  KinaMemRef2 ref{};
  Tensor(int64_t rows, int64_t cols, uint32_t seed)
      : data(static_cast<size_t>(rows * cols)) {
    for (size_t i = 0; i < data.size(); ++i) {
      seed = seed * 1664525u + 1013904223u;
      data[i] = static_cast<float>(seed >> 8) / float(1 << 24) - 0.5f;
    }
    ref.allocated = ref.aligned = data.data();
    ref.offset = 0;
    ref.sizes[0] = rows;
    ref.sizes[1] = cols;
    ref.strides[0] = cols;
    ref.strides[1] = 1;
  }
  float at(int64_t i, int64_t j) const { return data[i * ref.sizes[1] + j]; }
};

template <> struct Tensor<1> {
  std::vector<float> data;
  KinaMemRef1 ref{};
  Tensor(int64_t n, uint32_t seed) : data(static_cast<size_t>(n)) {
    for (size_t i = 0; i < data.size(); ++i) {
      seed = seed * 22695477u + 1u;
      data[i] = static_cast<float>(seed >> 9) / float(1 << 23) - 0.5f;
    }
    ref.allocated = ref.aligned = data.data();
    ref.offset = 0;
    ref.sizes[0] = n;
    ref.strides[0] = 1;
  }
};

/// softmax(relu(x w + b)) by rows, in double.
std::vector<double> reference(const Tensor<2> &x, const Tensor<2> &w,
                              const Tensor<1> &b) {
  int64_t n = x.ref.sizes[0];
  std::vector<double> out(static_cast<size_t>(n * kOut));
  for (int64_t i = 0; i < n; ++i) {
    double row[kOut], maxv = 0;
    for (int64_t j = 0; j < kOut; ++j) {
      double s = b.data[j];
      for (int64_t k = 0; k < kIn; ++k)
        s += double(x.at(i, k)) * double(w.at(k, j));
      row[j] = s > 0 ? s : 0;
      maxv = j == 0 ? row[j] : std::max(maxv, row[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < kOut; ++j)
      sum += row[j] = std::exp(row[j] - maxv);
    for (int64_t j = 0; j < kOut; ++j)
      out[i * kOut + j] = row[j] / sum;
  }
  return out;
}

/// Number of elements of `result` differing from `want` by more than 1e-5,
/// or -1 if its shape or layout is wrong.
int64_t mismatches(const KinaMemRef2 &result, const std::vector<double> &want,
                   int64_t n) {
  if (!result.allocated || result.sizes[0] != n || result.sizes[1] != kOut ||
      result.strides[0] != kOut || result.strides[1] != 1)
    return -1;
  const float *p = static_cast<const float *>(result.aligned) + result.offset;
  int64_t bad = 0;
  for (int64_t i = 0; i < n * kOut; ++i)
    bad += std::fabs(double(p[i]) - want[i]) > 1e-5;
  return bad;
}

bool isZeroed(const KinaMemRef2 &r) {
  return !r.allocated && !r.aligned && r.offset == 0 && r.sizes[0] == 0 &&
         r.sizes[1] == 0;
}

/// Every test starts and ends with an empty registry.
class Entry : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(runtime_gpu_free_all(), 0);
    ASSERT_EQ(runtime_live_buffer_count(), 0);
  }
  void TearDown() override {
    EXPECT_EQ(runtime_gpu_free_all(), 0);
    EXPECT_EQ(runtime_live_buffer_count(), 0);
  }
};

TEST_F(Entry, EightThreadsCallConcurrently) {
  constexpr int kThreads = 8;
  constexpr int64_t kKeepEvery = 500;
  const int64_t calls = stressCalls();
  std::vector<int64_t> failures(kThreads, 0), keptCounts(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Tensor<2> w(kIn, kOut, 7u + t);
      Tensor<1> b(kOut, 11u + t);
      for (int64_t i = 0; i < calls; ++i) {
        int64_t n = 1 + (i + t) % 7;
        Tensor<2> x(n, kIn, static_cast<uint32_t>(i * 8 + t));
        KinaMemRef2 out{};
        int32_t status = kina_dense_softmax(&out, &x.ref, &w.ref, &b.ref);
        if (status != 0 || mismatches(out, reference(x, w, b), n) != 0) {
          ++failures[t];
          continue;
        }
        if (i % 50 == 0) {
          // A call that fails validation, in the middle of the others.
          Tensor<1> a1(3, 1), a2(4, 2);
          KinaMemRef1 sum{};
          if (kina_add_pair(&sum, &a1.ref, &a2.ref) != 1 || sum.allocated ||
              std::string(kina_last_error()).find("kina_add_pair") ==
                  std::string::npos)
            ++failures[t];
        }
        if (i % kKeepEvery == 0) {
          ++keptCounts[t];
          continue;
        }
        if (runtime_free(out.allocated) != 0)
          ++failures[t];
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  int64_t kept = 0;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(failures[t], 0) << "thread " << t;
    kept += keptCounts[t];
  }
  EXPECT_EQ(kept, kThreads * ((calls + kKeepEvery - 1) / kKeepEvery));
  EXPECT_EQ(runtime_live_buffer_count(), kept);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
}

std::atomic<int64_t> allocateCalls{0}, releaseCalls{0}, refuseCall{0};

void *countingAllocate(size_t alignment, size_t bytes) {
  if (++allocateCalls == refuseCall.load())
    return nullptr;
  return std::aligned_alloc(alignment, bytes);
}
void countingRelease(void *pointer) {
  ++releaseCalls;
  std::free(pointer);
}

TEST_F(Entry, RefusedAllocationInsideACallLosesNothing) {
  kina::rt::HostAllocator counting{countingAllocate, countingRelease};
  kina::rt::setHostAllocatorForTesting(&counting);
  Tensor<2> x(5, kIn, 1), w(kIn, kOut, 2);
  Tensor<1> b(kOut, 3);
  std::vector<double> want = reference(x, w, b);

  // How many allocations one call makes (temporaries and the result).
  allocateCalls = releaseCalls = refuseCall = 0;
  KinaMemRef2 out{};
  ASSERT_EQ(kina_dense_softmax(&out, &x.ref, &w.ref, &b.ref), 0)
      << kina_last_error();
  int64_t perCall = allocateCalls.load();
  EXPECT_GE(perCall, 1);
  EXPECT_EQ(releaseCalls.load(), perCall - 1); // all but the result
  EXPECT_EQ(runtime_free(out.allocated), 0);

  for (int64_t k = 1; k <= perCall; ++k) {
    SCOPED_TRACE("refusing allocation " + std::to_string(k) + " of " +
                 std::to_string(perCall));
    allocateCalls = releaseCalls = 0;
    refuseCall = k;
    KinaMemRef2 failed{};
    failed.allocated = &failed; // must be overwritten
    EXPECT_EQ(kina_dense_softmax(&failed, &x.ref, &w.ref, &b.ref), 2);
    EXPECT_TRUE(isZeroed(failed));
    EXPECT_NE(std::string(kina_last_error()).find("cannot allocate"),
              std::string::npos)
        << kina_last_error();
    EXPECT_EQ(allocateCalls.load(), k);
    EXPECT_EQ(releaseCalls.load(), k - 1) << "a temporary was not released";
    EXPECT_EQ(runtime_live_buffer_count(), 0);
  }
  // Refusing nothing: the call works again.
  allocateCalls = releaseCalls = 0;
  refuseCall = 0;
  KinaMemRef2 again{};
  EXPECT_EQ(kina_dense_softmax(&again, &x.ref, &w.ref, &b.ref), 0);
  EXPECT_EQ(mismatches(again, want, 5), 0);
  EXPECT_EQ(runtime_free(again.allocated), 0);
  kina::rt::setHostAllocatorForTesting(nullptr);
}

/// Calls kina_dense_softmax expecting status 1, a zeroed result, nothing
/// allocated and a message containing `needle`.
void expectInvalid(const KinaMemRef2 *x, const KinaMemRef2 *w,
                   const KinaMemRef1 *b, const char *needle) {
  KinaMemRef2 out;
  std::memset(&out, 0x5a, sizeof out);
  EXPECT_EQ(kina_dense_softmax(&out, x, w, b), 1);
  EXPECT_TRUE(isZeroed(out));
  EXPECT_EQ(kina_rt_last_status(), 1);
  std::string message = kina_last_error();
  EXPECT_NE(message.find("kina_dense_softmax"), std::string::npos) << message;
  EXPECT_NE(message.find(needle), std::string::npos) << message;
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(Entry, NullDescriptorsAreStatus1) {
  Tensor<2> x(2, kIn, 1), w(kIn, kOut, 2);
  Tensor<1> b(kOut, 3);
  EXPECT_EQ(kina_dense_softmax(nullptr, &x.ref, &w.ref, &b.ref), 1);
  EXPECT_NE(std::string(kina_last_error()).find("result 0"), std::string::npos);
  expectInvalid(nullptr, &w.ref, &b.ref, "argument %x descriptor pointer");
  expectInvalid(&x.ref, nullptr, &b.ref, "argument %w descriptor pointer");
  expectInvalid(&x.ref, &w.ref, nullptr, "argument %b descriptor pointer");
}

TEST_F(Entry, ShapeErrorsAreStatus1) {
  Tensor<2> x(2, kIn, 1), w(kIn - 1, kOut, 2);
  Tensor<1> b(kOut, 3);
  expectInvalid(&x.ref, &w.ref, &b.ref, "argument %w dim 0 has size 15");
  Tensor<2> negative(2, kIn, 1), w16(kIn, kOut, 2);
  negative.ref.sizes[0] = -2;
  expectInvalid(&negative.ref, &w16.ref, &b.ref, "negative size -2");
  // The symbolic dim N with two sizes.
  Tensor<1> a1(3, 1), a2(4, 2);
  KinaMemRef1 sum{};
  EXPECT_EQ(kina_add_pair(&sum, &a1.ref, &a2.ref), 1);
  EXPECT_EQ(sum.allocated, nullptr);
  EXPECT_NE(std::string(kina_last_error()).find("(N) has size 4"),
            std::string::npos)
      << kina_last_error();
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(Entry, LayoutErrorsAreStatus1) {
  Tensor<2> x(2, kIn, 1), w(kIn, kOut, 2);
  Tensor<1> b(kOut, 3);
  Tensor<2> strided(2, kIn, 1);
  strided.ref.strides[1] = 2;
  expectInvalid(&strided.ref, &w.ref, &b.ref, "not row-major contiguous");
  Tensor<2> nullData(2, kIn, 1);
  nullData.ref.allocated = nullData.ref.aligned = nullptr;
  expectInvalid(&nullData.ref, &w.ref, &b.ref, "null data pointer");
  // Sizes whose element count overflows 64 bits (it would wrap to 0 and
  // pass as "no elements"): status 1, with data or without.
  Tensor<2> huge(2, kIn, 1);
  huge.ref.sizes[0] = int64_t(1) << 62;
  huge.ref.strides[0] = kIn;
  expectInvalid(&huge.ref, &w.ref, &b.ref,
                "argument %x has too many elements: with dim 0 of size "
                "4611686018427387904, the element count overflows 64 bits");
  huge.ref.allocated = huge.ref.aligned = nullptr;
  expectInvalid(&huge.ref, &w.ref, &b.ref, "overflows 64 bits");
  // INT64_MAX elements fit the count, but not the result's bytes: the
  // runtime refuses the allocation with 1 before the data is read.
  Tensor<1> a1(3, 1), a2(3, 2);
  a1.ref.sizes[0] = a2.ref.sizes[0] = INT64_MAX;
  KinaMemRef1 sum{};
  EXPECT_EQ(kina_add_pair(&sum, &a1.ref, &a2.ref), 1);
  EXPECT_EQ(sum.allocated, nullptr);
  EXPECT_NE(std::string(kina_last_error()).find("overflows 64 bits"),
            std::string::npos)
      << kina_last_error();
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(Entry, ResultMayAliasAnArgument) {
  // One descriptor passed as the result and as an argument (legal C: the
  // arguments are const): the entry reads the argument before it zeroes the
  // result, then overwrites the descriptor with the new result.
  Tensor<1> a(5, 1), b(5, 2);
  std::vector<float> original = a.data;
  KinaMemRef1 shared = a.ref;
  ASSERT_EQ(kina_add_pair(&shared, &shared, &b.ref), 0) << kina_last_error();
  ASSERT_NE(shared.allocated, a.ref.allocated);
  ASSERT_EQ(shared.sizes[0], 5);
  const float *p = static_cast<const float *>(shared.aligned) + shared.offset;
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(p[i], original[i] + b.data[i]) << i;
  EXPECT_EQ(a.data, original);
  EXPECT_EQ(runtime_free(shared.allocated), 0);
  // All three the same descriptor.
  KinaMemRef1 all = a.ref;
  ASSERT_EQ(kina_add_pair(&all, &all, &all), 0) << kina_last_error();
  p = static_cast<const float *>(all.aligned) + all.offset;
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(p[i], original[i] + original[i]) << i;
  EXPECT_EQ(runtime_free(all.allocated), 0);
}

TEST_F(Entry, EmptyArraysMayHaveAnyStrides) {
  // NumPy's x[:0] of a larger array keeps its strides; with no elements
  // nothing is read, so the layout does not matter.
  Tensor<2> w(kIn, kOut, 2);
  Tensor<1> b(kOut, 3);
  Tensor<2> empty(1, kIn, 1);
  empty.ref.sizes[0] = 0;
  empty.ref.strides[0] = 3 * kIn;
  empty.ref.strides[1] = 2;
  KinaMemRef2 out{};
  ASSERT_EQ(kina_dense_softmax(&out, &empty.ref, &w.ref, &b.ref), 0)
      << kina_last_error();
  EXPECT_EQ(out.sizes[0], 0);
  EXPECT_EQ(runtime_free(out.allocated), 0);
  Tensor<1> v(3, 1);
  v.ref.sizes[0] = 0;
  v.ref.strides[0] = 7;
  KinaMemRef1 sum{};
  ASSERT_EQ(kina_add_pair(&sum, &v.ref, &v.ref), 0) << kina_last_error();
  EXPECT_EQ(sum.sizes[0], 0);
  EXPECT_EQ(runtime_free(sum.allocated), 0);
}

TEST_F(Entry, EmptyBatchAndOffsetsAreValid) {
  Tensor<2> w(kIn, kOut, 2);
  Tensor<1> b(kOut, 3);
  // Zero rows and a null data pointer: valid, an empty result.
  Tensor<2> empty(1, kIn, 1);
  empty.ref.sizes[0] = 0;
  empty.ref.allocated = empty.ref.aligned = nullptr;
  KinaMemRef2 out{};
  ASSERT_EQ(kina_dense_softmax(&out, &empty.ref, &w.ref, &b.ref), 0)
      << kina_last_error();
  EXPECT_NE(out.allocated, nullptr);
  EXPECT_EQ(out.sizes[0], 0);
  EXPECT_EQ(runtime_free(out.allocated), 0);
  // The descriptor's offset selects the rows from the second on.
  Tensor<2> whole(4, kIn, 9);
  Tensor<2> tail(3, kIn, 0);
  for (int64_t i = 0; i < 3 * kIn; ++i)
    tail.data[i] = whole.data[kIn + i];
  KinaMemRef2 view = whole.ref;
  view.offset = kIn;
  view.sizes[0] = 3;
  ASSERT_EQ(kina_dense_softmax(&out, &view, &w.ref, &b.ref), 0);
  EXPECT_EQ(mismatches(out, reference(tail, w, b), 3), 0);
  EXPECT_EQ(runtime_free(out.allocated), 0);
}

} // namespace
