//===- ParallelTest.cpp - The runtime's thread pool
//------------------------===//
//
// kina_rt_parallel_for and its queries (runtime/Parallel.cpp): every
// iteration runs exactly once, in contiguous pieces that the workers take
// part in (any thread may run any piece: the caller runs those no worker
// has claimed),
// small loops stay on the caller, concurrent callers and a nested call each
// get their whole loop done, and KINA_NUM_THREADS sets the thread count
// (child processes, as the count is read once per process), and a child
// made by fork gets a pool of its own (skipped under ThreadSanitizer, which
// refuses threads started after a multi-threaded fork). The suite runs
// with KINA_NUM_THREADS=4 (set before the pool's first use) so it splits on
// any machine; the same tests run against the sanitized runtimes (TSAN:
// runtime.tsan).
//
//===----------------------------------------------------------------------===//
#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace {

constexpr int64_t kBig = int64_t(1) << 30; // cost: split as far as possible

/// Counts the runs of each iteration and records each piece's thread.
struct Coverage {
  explicit Coverage(int64_t n) : runs(n) {}
  std::vector<std::atomic<int>> runs;
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::vector<std::pair<int64_t, int64_t>> pieces;

  static void body(void *ctx, int64_t lo, int64_t hi) {
    auto *self = static_cast<Coverage *>(ctx);
    for (int64_t i = lo; i < hi; ++i)
      self->runs[i].fetch_add(1);
    std::lock_guard<std::mutex> lock(self->mutex);
    self->threads.insert(std::this_thread::get_id());
    self->pieces.emplace_back(lo, hi);
  }

  /// Like body, but each piece then waits (up to 60 s) until `want`
  /// distinct threads have run a piece: a thread in a piece claims no
  /// other, so the loop's pieces end up on `want` threads as long as that
  /// many take part, and the wait times out (and the count falls short)
  /// if the workers do not.
  static void rendezvous(void *ctx, int64_t lo, int64_t hi) {
    body(ctx, lo, hi);
    auto *self = static_cast<Coverage *>(ctx);
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < until) {
      {
        std::lock_guard<std::mutex> lock(self->mutex);
        if (self->threads.size() >= self->want)
          return;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  size_t want = 0;

  bool eachOnce() const {
    for (const auto &r : runs)
      if (r.load() != 1)
        return false;
    return true;
  }
};

class Parallel : public ::testing::Test {
protected:
  static void SetUpTestSuite() { setenv("KINA_NUM_THREADS", "4", 1); }
};

TEST_F(Parallel, ThreadCountFromEnvironment) {
  EXPECT_EQ(kina_rt_num_threads(), 4);
}

TEST_F(Parallel, SplitsIntoContiguousPiecesOnDistinctThreads) {
  uint64_t before = kina_rt_parallel_regions();
  Coverage cov(1000);
  cov.want = 4;
  kina_rt_parallel_for(1000, kBig, &Coverage::rendezvous, &cov);
  EXPECT_TRUE(cov.eachOnce());
  EXPECT_EQ(cov.threads.size(), 4u);
  std::set<std::pair<int64_t, int64_t>> pieces(cov.pieces.begin(),
                                               cov.pieces.end());
  std::set<std::pair<int64_t, int64_t>> expected = {
      {0, 250}, {250, 500}, {500, 750}, {750, 1000}};
  EXPECT_EQ(pieces, expected);
  EXPECT_EQ(kina_rt_parallel_regions(), before + 1);
}

TEST_F(Parallel, PiecesNeverExceedIterations) {
  Coverage cov(3);
  kina_rt_parallel_for(3, kBig, &Coverage::body, &cov);
  EXPECT_TRUE(cov.eachOnce());
  EXPECT_EQ(cov.pieces.size(), 3u);
  EXPECT_EQ(kina_rt_parallel_threads(3, kBig), 3);
}

TEST_F(Parallel, SmallWorkStaysOnTheCaller) {
  uint64_t before = kina_rt_parallel_regions();
  Coverage cov(100000);
  // 2^17 - 1 cost units: fewer than two grains of 2^16.
  kina_rt_parallel_for(100000, (int64_t(1) << 17) - 1, &Coverage::body, &cov);
  EXPECT_TRUE(cov.eachOnce());
  ASSERT_EQ(cov.pieces.size(), 1u);
  EXPECT_EQ(cov.pieces[0], std::make_pair(int64_t(0), int64_t(100000)));
  EXPECT_EQ(*cov.threads.begin(), std::this_thread::get_id());
  EXPECT_EQ(kina_rt_parallel_regions(), before);
}

TEST_F(Parallel, ThreadsFollowTheCost) {
  EXPECT_EQ(kina_rt_parallel_threads(1000, 0), 1);
  EXPECT_EQ(kina_rt_parallel_threads(1000, (int64_t(1) << 17) - 1), 1);
  EXPECT_EQ(kina_rt_parallel_threads(1000, int64_t(1) << 17), 2);
  EXPECT_EQ(kina_rt_parallel_threads(1000, 3 * (int64_t(1) << 16)), 3);
  EXPECT_EQ(kina_rt_parallel_threads(1000, kBig), 4);
  EXPECT_EQ(kina_rt_parallel_threads(1, kBig), 1);
}

TEST_F(Parallel, EmptyLoopRunsNothing) {
  Coverage cov(0);
  kina_rt_parallel_for(0, kBig, &Coverage::body, &cov);
  kina_rt_parallel_for(-5, kBig, &Coverage::body, &cov);
  EXPECT_TRUE(cov.pieces.empty());
}

TEST_F(Parallel, ConcurrentCallersEachGetTheirWholeLoop) {
  constexpr int kCallers = 4, kLoops = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < kCallers; ++c)
    callers.emplace_back([&, c] {
      for (int l = 0; l < kLoops; ++l) {
        int64_t n = 64 + 37 * c + l;
        Coverage cov(n);
        kina_rt_parallel_for(n, kBig, &Coverage::body, &cov);
        if (!cov.eachOnce())
          failures.fetch_add(1);
      }
    });
  for (std::thread &t : callers)
    t.join();
  EXPECT_EQ(failures.load(), 0);
}

/// A loop body that runs a whole parallel loop per iteration.
struct Nested {
  std::atomic<int> failures{0};
  static void body(void *ctx, int64_t lo, int64_t hi) {
    auto *self = static_cast<Nested *>(ctx);
    for (int64_t i = lo; i < hi; ++i) {
      Coverage cov(50 + i);
      kina_rt_parallel_for(50 + i, kBig, &Coverage::body, &cov);
      if (!cov.eachOnce() || cov.threads.size() != 1)
        self->failures.fetch_add(1);
    }
  }
};

TEST_F(Parallel, NestedCallRunsOnItsOwnThread) {
  Nested nested;
  kina_rt_parallel_for(8, kBig, &Nested::body, &nested);
  EXPECT_EQ(nested.failures.load(), 0);
}

TEST(ParallelEnv, InvalidThreadCountFallsBackToAffinity) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KINA_NUM_THREADS", "0x", 1);
        int32_t n = kina_rt_num_threads();
        std::exit(n >= 1 && n <= 1024 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "ignoring KINA_NUM_THREADS='0x'");
}

TEST(ParallelEnv, OneThreadNeverSplits) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KINA_NUM_THREADS", "1", 1);
        Coverage cov(1000);
        kina_rt_parallel_for(1000, kBig, &Coverage::body, &cov);
        bool ok = kina_rt_num_threads() == 1 && cov.eachOnce() &&
                  cov.pieces.size() == 1 && kina_rt_parallel_regions() == 0;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

#if defined(__SANITIZE_THREAD__)
#define KINA_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KINA_TEST_TSAN 1
#endif
#endif

TEST(ParallelEnv, ForkedChildGetsItsOwnPool) {
#ifdef KINA_TEST_TSAN
  GTEST_SKIP() << "ThreadSanitizer does not support starting threads after "
                  "a multi-threaded fork (die_after_fork)";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KINA_NUM_THREADS", "3", 1);
        // The parent's workers take part in a loop first, so that none is
        // still starting (inside the allocator, under AddressSanitizer,
        // whose allocator lock a fork would copy held) when it forks.
        Coverage first(300);
        first.want = 3;
        kina_rt_parallel_for(300, kBig, &Coverage::rendezvous, &first);
        pid_t child = fork();
        if (child == 0) {
          Coverage cov(300);
          cov.want = 3;
          kina_rt_parallel_for(300, kBig, &Coverage::rendezvous, &cov);
          _exit(cov.eachOnce() && cov.threads.size() == 3 ? 0 : 1);
        }
        int status = 0;
        waitpid(child, &status, 0);
        bool ok =
            first.eachOnce() && WIFEXITED(status) && WEXITSTATUS(status) == 0;
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

} // namespace
