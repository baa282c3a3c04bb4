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
// into p contiguous pieces, piece t = [n*t/p, n*(t+1)/p). Every thread of
// the loop, the caller first, claims pieces from one counter until none
// is left (OpenMP's dynamic schedule over p chunks, or a work-stealing
// pool's shared queue), and the caller returns once every piece is done.
// So a worker that wakes late (waking a sleeping thread takes 5 to 20 us
// on Linux and up to several hundred on a loaded virtual machine) finds
// its piece done by the caller instead of holding the caller up: a split
// loop takes about its one-thread time at worst. Before, each worker ran
// a fixed piece, and on a 2-core virtual machine a [1797, 64] x [64, 32]
// matmul called back to back settled either at 0.06 ms or at 0.33 ms
// (the worker asleep at every call), 0.09 ms on one thread. The split
// depends only on n and p, and each piece runs the iterations in order,
// so a loop whose iterations are independent gives the same bits whatever
// the thread count and whichever thread runs a piece.
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
/// Bits of Pool::claims that count a loop's claimed pieces (a loop has at
/// most kMaxThreads pieces); the generation is above them.
constexpr unsigned kPieceBits = 16;
constexpr uint64_t kPieceMask = (uint64_t(1) << kPieceBits) - 1;
static_assert(kMaxThreads < (long(1) << kPieceBits));

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
    uint64_t loop;
    {
      std::lock_guard<std::mutex> lock(mutex);
      current = job;
      loop = ++generation;
      left.store(job.pieces, std::memory_order_relaxed);
      claims.store(loop << kPieceBits, std::memory_order_relaxed);
      announced.store(generation, std::memory_order_release);
      sleeping = sleepers > 0;
    }
    if (sleeping)
      wake.notify_all();
    runPieces(job, loop);
    // The pieces the workers claimed usually end about when the caller's
    // do: spin a little before sleeping on `done`.
    spinUntil([&] { return left.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock,
              [&] { return left.load(std::memory_order_acquire) == 0; });
    return true;
  }

private:
  /// Makes sure `count` workers exist (only the owner of `busy` calls it).
  bool startWorkers(int64_t count) {
    try {
      while (static_cast<int64_t>(workers.size()) < count) {
        uint64_t seen;
        {
          std::lock_guard<std::mutex> lock(mutex);
          seen = generation;
        }
        workers.emplace_back([this, seen] { work(seen); });
        workers.back().detach();
      }
    } catch (...) {
      // No more threads (std::system_error): run the loop on fewer.
    }
    return static_cast<int64_t>(workers.size()) >= count;
  }

  /// A worker: claims and runs pieces of every loop announced after
  /// generation `seen`.
  void work(uint64_t seen) {
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
      Job job = current;
      lock.unlock();
      runPieces(job, seen);
      lock.lock();
    }
  }

  /// Claims pieces of loop `loop` (its generation) and runs them until none
  /// is left. A claim is a compare-and-swap of `claims`, which holds the
  /// generation of the loop being run above kPieceBits and its next
  /// unclaimed piece below, so a thread holding an older loop's Job (a
  /// worker that woke after that loop ended) claims nothing of a newer one.
  void runPieces(const Job &job, uint64_t loop) {
    uint64_t state = claims.load(std::memory_order_acquire);
    for (;;) {
      if ((state >> kPieceBits) != loop)
        return;
      uint64_t piece = state & kPieceMask;
      if (piece >= static_cast<uint64_t>(job.pieces))
        return;
      if (!claims.compare_exchange_weak(state, state + 1,
                                        std::memory_order_acq_rel,
                                        std::memory_order_acquire))
        continue; // `state` now holds the current value
      runPiece(job, static_cast<int64_t>(piece));
      if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        // The loop's last piece: wake the caller if it sleeps on `done`
        // (it checks `left` under `mutex`, so this cannot be missed).
        std::lock_guard<std::mutex> lock(mutex);
        done.notify_one();
        return;
      }
      state = claims.load(std::memory_order_acquire);
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
  uint64_t generation = 0; // loops announced so far
  int64_t sleepers = 0;    // workers waiting on `wake`
  std::vector<std::thread> workers;
  // A copy of `generation` for spinning workers, written under `mutex`,
  // read without it.
  std::atomic<uint64_t> announced{0};
  // The current loop's generation << kPieceBits | its next unclaimed piece
  // (runPieces).
  std::atomic<uint64_t> claims{0};
  // Pieces of the current loop not finished yet.
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
