//===- Parallel.cpp - The runtime's persistent thread pool ----------------===//
//
// kina_rt_parallel_for and its queries (kina/runtime.h). Code kinac compiles
// at -O1 and above for the cpu target calls kina_rt_parallel_for with an
// outlined loop body (src/passes/Parallel.cpp): the outermost parallel loop
// of each tiled elementwise, reduction or normalisation loop nest and the
// column slabs of each matmul kernel.
//
// One pool per process, made at the first loop that is worth splitting:
// kina_rt_num_threads() - 1 worker threads that, between loops, spin for
// up to 100 us (kSpinTime) and then sleep on a condition variable (never
// destroyed: they block until the process
// exits, so nothing joins them from a static destructor). A loop is split
// into p contiguous pieces, piece t = [n*t/p, n*(t+1)/p); the caller runs
// piece 0, workers 1..p-1 run the others, and the caller returns once every
// piece is done. The split depends only on n and p, and each piece runs the
// iterations in order, so a loop whose iterations are independent gives the
// same bits whatever the thread count.
//
// One loop at a time: the caller takes `busy` with try_lock; a caller that
// finds the pool busy (another thread's loop, or a loop body that itself
// calls kina_rt_parallel_for) runs its whole loop on its own thread, so
// concurrent callers never wait for each other's work and never deadlock.
//
// Small loops stay on the calling thread: p = min(threads, n, cost / grain)
// with a grain of 2^16 cost units (about one element of a streaming vector
// loop each: 2^16 f32 elements are 20 to 60 us of one core's work, against
// 5 to 20 us to wake a sleeping worker and wait for it on Linux).
//
//===----------------------------------------------------------------------===//
#include "kina/runtime.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

namespace {

/// Cost units each piece of a split loop gets at least (kina/runtime.h).
constexpr int64_t kGrain = int64_t(1) << 16;
/// How long an idle worker, and a caller waiting for the pieces, spin
/// before sleeping on a condition variable.
constexpr std::chrono::microseconds kSpinTime{100};
/// The most threads KINA_NUM_THREADS may ask for.
constexpr long kMaxThreads = 1024;

/// The CPUs this process may run on (1 if the affinity mask is unreadable).
int affinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return 1;
  return std::max(1, CPU_COUNT(&set));
}

/// $KINA_NUM_THREADS when it is a whole number in [1, kMaxThreads], else
/// affinityCpus() (a set but invalid value is reported on stderr).
int configuredThreads() {
  const char *text = std::getenv("KINA_NUM_THREADS");
  if (text && *text) {
    char *end = nullptr;
    long value = std::strtol(text, &end, 10);
    if (*end == '\0' && value >= 1 && value <= kMaxThreads)
      return static_cast<int>(value);
    std::fprintf(stderr,
                 "kina runtime: ignoring KINA_NUM_THREADS='%s' (expected a "
                 "whole number from 1 to %ld)\n",
                 text, kMaxThreads);
  }
  return affinityCpus();
}

int numThreads() {
  static const int threads = configuredThreads();
  return threads;
}

std::atomic<uint64_t> splitRegions{0};

/// The loop the pool is running.
struct Job {
  kina_rt_parallel_fn fn = nullptr;
  void *ctx = nullptr;
  int64_t n = 0;
  int64_t pieces = 0;
};

void runPiece(const Job &job, int64_t t) {
  int64_t lo = job.n * t / job.pieces, hi = job.n * (t + 1) / job.pieces;
  if (lo < hi)
    job.fn(job.ctx, lo, hi);
}

class Pool {
public:
  /// Runs `job` on job.pieces threads (the caller's included); false when
  /// the pool is busy or has too few workers, having run nothing.
  bool run(const Job &job) {
    std::unique_lock<std::mutex> owner(busy, std::try_to_lock);
    if (!owner.owns_lock())
      return false;
    if (!startWorkers(job.pieces - 1))
      return false;
    bool sleeping;
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = job;
      pending = job.pieces - 1;
      left.store(pending, std::memory_order_relaxed);
      ++generation;
      announced.store(generation, std::memory_order_release);
      sleeping = sleepers > 0;
    }
    if (sleeping)
      wake.notify_all();
    runPiece(job, 0);
    // The other pieces usually end about when the caller's does: spin a
    // little before sleeping on `done`.
    spinUntil([&] { return left.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, [&] { return pending == 0; });
    return true;
  }

private:
  /// Makes sure `count` workers exist (only the owner of `busy` calls it).
  bool startWorkers(int64_t count) {
    try {
      while (static_cast<int64_t>(workers.size()) < count) {
        int64_t index = static_cast<int64_t>(workers.size()) + 1;
        uint64_t seen;
        {
          std::lock_guard<std::mutex> lock(mutex);
          seen = generation;
        }
        workers.emplace_back([this, index, seen] { work(index, seen); });
        workers.back().detach();
      }
    } catch (...) {
      // No more threads (std::system_error): run the loop on fewer.
    }
    return static_cast<int64_t>(workers.size()) >= count;
  }

  /// Worker `index` (1-based: piece 0 is the caller's) runs its piece of
  /// every loop announced after generation `seen` that has one.
  void work(int64_t index, uint64_t seen) {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      if (generation == seen) {
        // Spin for the next loop first (a caller's loops often come back
        // to back: a matmul's fill and kernel, a function's ops), then
        // sleep until one is announced.
        lock.unlock();
        spinUntil([&] {
          return announced.load(std::memory_order_acquire) != seen;
        });
        lock.lock();
        ++sleepers;
        wake.wait(lock, [&] { return generation != seen; });
        --sleepers;
      }
      seen = generation;
      if (index >= current.pieces)
        continue;
      Job job = current;
      lock.unlock();
      runPiece(job, index);
      lock.lock();
      left.store(--pending, std::memory_order_release);
      if (pending == 0)
        done.notify_one();
    }
  }

  /// Spins until `ready()` or kSpinTime has passed (the time checked every
  /// 64 pauses): waking a sleeping thread costs 5 to 20 us on Linux, and up
  /// to several hundred on a loaded virtual machine (a [256, 256] matmul
  /// of 0.19 ms took 0.59 ms on 2 threads, median, without the spin).
  template <typename Ready> static void spinUntil(Ready ready) {
    auto start = std::chrono::steady_clock::now();
    for (unsigned i = 1;; ++i) {
      if (ready())
        return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
      if (i % 64 == 0 && std::chrono::steady_clock::now() - start > kSpinTime)
        return;
    }
  }

  std::mutex busy;  // held by the caller whose loop the pool runs
  std::mutex mutex; // guards what follows
  std::condition_variable wake, done;
  Job current;
  int64_t pending = 0;     // pieces of `current` not yet finished by workers
  uint64_t generation = 0; // loops announced so far
  int64_t sleepers = 0;    // workers waiting on `wake`
  std::vector<std::thread> workers;
  // Copies of `generation` and `pending` for spinning threads, written
  // under `mutex`, read without it.
  std::atomic<uint64_t> announced{0};
  std::atomic<int64_t> left{0};
};

/// The process's pool, made on first use and never destroyed (its workers
/// sleep until the process exits). A child made by fork has none of the
/// parent's workers: it starts a fresh pool (the parent's, whose mutexes
/// another thread may have held at the fork, is abandoned).
std::atomic<Pool *> instance{nullptr};

void forgetPoolInChild() { instance.store(nullptr); }

Pool &pool() {
  static const bool registered = [] {
    pthread_atfork(nullptr, nullptr, forgetPoolInChild);
    return true;
  }();
  (void)registered;
  Pool *current = instance.load(std::memory_order_acquire);
  if (!current) {
    Pool *fresh = new Pool();
    if (instance.compare_exchange_strong(current, fresh,
                                         std::memory_order_acq_rel))
      current = fresh;
    else
      delete fresh; // another thread made it first
  }
  return *current;
}

} // namespace

extern "C" {

int32_t kina_rt_num_threads(void) { return numThreads(); }

int64_t kina_rt_parallel_threads(int64_t n, int64_t cost) {
  int64_t pieces = std::min<int64_t>(numThreads(), cost / kGrain);
  pieces = std::min(pieces, n);
  return std::max<int64_t>(pieces, 1);
}

void kina_rt_parallel_for(int64_t n, int64_t cost, kina_rt_parallel_fn fn,
                          void *ctx) {
  if (n <= 0)
    return;
  Job job{fn, ctx, n, kina_rt_parallel_threads(n, cost)};
  if (job.pieces > 1 && pool().run(job)) {
    splitRegions.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  fn(ctx, 0, n);
}

uint64_t kina_rt_parallel_regions(void) {
  return splitRegions.load(std::memory_order_relaxed);
}

} // extern "C"
