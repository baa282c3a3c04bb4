//===- host_cost.cpp - The runtime's host work per cuda call --------------===//
//
// Times one call of the probe's `kina_e1` and of the digits MLP's
// `kina_forward` (the entry, then runtime_free of its result, as
// bench/gpu/bench.py times a call) against the counting stand-in driver of
// tests/runtime/callcount (whose driver calls return at once and run no
// kernel): what is left is the runtime's own host work per call (argument
// checks, context bookkeeping, the cached result, the free). Prints the
// median and 10th percentile of 199000 calls after 1000 warm-up ones.
// Build and run on the development machine, after `ctest -R
// runtime.call_count` (which compiles the two objects and the stand-in):
//   B=build; O=$B/tests/runtime/callcount
//   c++ -O2 -Iinclude -I$B/include bench/gpu/probe/host_cost.cpp \
//     $O/probe.o $O/mlp.o $B/lib/libkina_runtime.a -ldl -lpthread -o host_cost
//   KINA_CUDA_DRIVER=$O/libfake_cuda.so ./host_cost
//
//===----------------------------------------------------------------------===//
#include "kina/runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <vector>

extern "C" int32_t kina_e1(KinaMemRef2 *, const KinaMemRef2 *);
extern "C" int32_t kina_forward(KinaMemRef2 *, const KinaMemRef2 *,
                                const KinaMemRef2 *, const KinaMemRef1 *,
                                const KinaMemRef2 *, const KinaMemRef1 *);

namespace {
using Alloc = int (*)(unsigned long long *, size_t);

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
} // namespace

int main() {
  const char *path = std::getenv("KINA_CUDA_DRIVER");
  void *driver = path ? dlopen(path, RTLD_NOW) : nullptr;
  if (!driver || !dlsym(driver, "fake_cuda_count")) {
    std::fprintf(stderr, "host_cost: set KINA_CUDA_DRIVER to the stand-in "
                         "libfake_cuda.so\n");
    return 2;
  }
  // Device memory of device 0 as PyTorch has it, its context current.
  reinterpret_cast<int (*)(unsigned)>(dlsym(driver, "cuInit"))(0);
  void *context = nullptr;
  reinterpret_cast<int (*)(void **, int)>(
      dlsym(driver, "cuDevicePrimaryCtxRetain"))(&context, 0);
  reinterpret_cast<int (*)(void *)>(dlsym(driver, "cuCtxSetCurrent"))(context);
  auto alloc = reinterpret_cast<Alloc>(dlsym(driver, "cuMemAlloc_v2"));
  auto memory = [&](size_t bytes) {
    unsigned long long address = 0;
    alloc(&address, bytes);
    return reinterpret_cast<void *>(address);
  };
  const int64_t n = 1797;
  KinaMemRef2 x10 = matrix(memory(n * 10 * 4), n, 10);
  KinaMemRef2 x = matrix(memory(n * 64 * 4), n, 64);
  KinaMemRef2 w1 = matrix(memory(64 * 32 * 4), 64, 32);
  KinaMemRef2 w2 = matrix(memory(32 * 10 * 4), 32, 10);
  KinaMemRef1 b1 = vector1(memory(32 * 4), 32), b2 = vector1(memory(40), 10);
  for (int which = 0; which < 2; ++which) {
    std::vector<double> times;
    for (int i = 0; i < 200000; ++i) {
      auto start = std::chrono::steady_clock::now();
      KinaMemRef2 out{};
      int32_t status = which == 0 ? kina_e1(&out, &x10)
                                  : kina_forward(&out, &x, &w1, &b1, &w2, &b2);
      runtime_free(out.allocated);
      auto end = std::chrono::steady_clock::now();
      if (status != 0) {
        std::printf("status %d: %s\n", status, kina_last_error());
        return 1;
      }
      if (i >= 1000)
        times.push_back(
            std::chrono::duration<double, std::nano>(end - start).count());
    }
    std::sort(times.begin(), times.end());
    std::printf("%-8s median %.0f ns, p10 %.0f ns\n",
                which == 0 ? "e1" : "forward", times[times.size() / 2],
                times[times.size() / 10]);
  }
  return 0;
}
