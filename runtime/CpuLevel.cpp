//===- CpuLevel.cpp - The host's x86-64 micro-architecture level ----------===//
//
// kina_rt_cpu_level: the x86-64 psABI level (1..4) of the processor the
// program runs on, read with cpuid and xgetbv (the operating system must
// save the AVX / AVX-512 registers for levels 3 and 4), as GCC's and
// LLVM's compiler runtimes define the levels. The dispatchers of objects
// kinac compiled without --mcpu call it on their first call to choose the
// version to run (src/driver/Multiversion.cpp, docs/integration.md).
// $KINA_CPU_LEVEL lowers it (tests, comparisons, working around a bad
// version); it never raises it above what the host can run.
//
//===----------------------------------------------------------------------===//
#include "kina/runtime.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace {

#if defined(__x86_64__) || defined(__i386__)
bool bit(unsigned reg, int n) { return (reg >> n) & 1u; }

/// XCR0, the register states the operating system saves (xgetbv 0).
unsigned long long xcr0() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<unsigned long long>(edx) << 32) | eax;
}

/// The highest level whose features cpuid reports (and whose registers the
/// operating system saves).
int detectLevel() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
    return 1;
  unsigned ecx1 = ecx;
  unsigned ecxExt = 0;
  if (__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx))
    ecxExt = ecx;
  unsigned ebx7 = 0;
  if (__get_cpuid_max(0, nullptr) >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    ebx7 = ebx;
  }
  // x86-64-v2: CMPXCHG16B, LAHF/SAHF, POPCNT, SSE3, SSE4.1, SSE4.2, SSSE3.
  bool v2 = bit(ecx1, 13) && bit(ecxExt, 0) && bit(ecx1, 23) && bit(ecx1, 0) &&
            bit(ecx1, 19) && bit(ecx1, 20) && bit(ecx1, 9);
  if (!v2)
    return 1;
  // x86-64-v3: AVX, AVX2, BMI1, BMI2, F16C, FMA, LZCNT, MOVBE, OSXSAVE
  // and the OS saving the XMM and YMM state.
  bool osxsave = bit(ecx1, 27);
  bool ymm = osxsave && (xcr0() & 0x6) == 0x6;
  bool v3 = ymm && bit(ecx1, 28) && bit(ebx7, 5) && bit(ebx7, 3) &&
            bit(ebx7, 8) && bit(ecx1, 29) && bit(ecx1, 12) && bit(ecxExt, 5) &&
            bit(ecx1, 22);
  if (!v3)
    return 2;
  // x86-64-v4: AVX512F, AVX512BW, AVX512CD, AVX512DQ, AVX512VL and the OS
  // saving the opmask and ZMM state.
  bool zmm = (xcr0() & 0xe6) == 0xe6;
  bool v4 = zmm && bit(ebx7, 16) && bit(ebx7, 30) && bit(ebx7, 28) &&
            bit(ebx7, 17) && bit(ebx7, 31);
  return v4 ? 4 : 3;
}
#else
int detectLevel() { return 0; }
#endif

/// The level $KINA_CPU_LEVEL names: "x86-64", "x86-64-v2", "x86-64-v3",
/// "x86-64-v4"; 0 when unset or empty, -1 when not one of those.
int requestedLevel() {
  const char *text = std::getenv("KINA_CPU_LEVEL");
  if (!text || !*text)
    return 0;
  static const char *const names[] = {"x86-64", "x86-64-v2", "x86-64-v3",
                                      "x86-64-v4"};
  for (int i = 0; i < 4; ++i)
    if (std::strcmp(text, names[i]) == 0)
      return i + 1;
  return -1;
}

int computeLevel() {
  int host = detectLevel();
  int requested = requestedLevel();
  if (requested < 0) {
    std::fprintf(stderr,
                 "kina: warning: KINA_CPU_LEVEL='%s' is not x86-64, "
                 "x86-64-v2, x86-64-v3 or x86-64-v4; ignored\n",
                 std::getenv("KINA_CPU_LEVEL"));
    return host;
  }
  if (requested > host) {
    std::fprintf(stderr,
                 "kina: warning: KINA_CPU_LEVEL='%s' is above this "
                 "processor's level (%d); using level %d\n",
                 std::getenv("KINA_CPU_LEVEL"), host, host);
    return host;
  }
  return requested ? requested : host;
}

} // namespace

extern "C" int32_t kina_rt_cpu_level(void) {
  // Computed once per process (a thread-safe static): every dispatcher of
  // every object sees the same level, and the warning prints once.
  static const int level = computeLevel();
  return level;
}
