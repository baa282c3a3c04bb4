//===- TestKernels.cpp - The test kernels, embedded in runtime_tests ------===//
//
// Embeds the fatbin and the PTX that nvcc built from test_kernels.cu at build
// time (paths in KINA_TEST_FATBIN and KINA_TEST_PTX, set by
// tests/runtime/CMakeLists.txt) with the assembler's .incbin, so
// runtime_tests needs no file beside it on the GPU machine. The PTX gets a
// terminating NUL, as mgpuModuleLoadJIT expects. Without nvcc at build time
// (KINA_TEST_HAVE_KERNELS=0) the arrays are empty and the tests that launch
// kernels skip.
//
//===----------------------------------------------------------------------===//
#include "TestKernels.h"

#if KINA_TEST_HAVE_KERNELS
// 16-byte alignment: cuModuleLoadData reads the fatbin header in place.
__asm__(".section .rodata\n"
        ".balign 16\n"
        ".global kina_test_fatbin_start\n"
        "kina_test_fatbin_start:\n"
        ".incbin \"" KINA_TEST_FATBIN "\"\n"
        ".global kina_test_fatbin_end\n"
        "kina_test_fatbin_end:\n"
        ".balign 16\n"
        ".global kina_test_ptx_start\n"
        "kina_test_ptx_start:\n"
        ".incbin \"" KINA_TEST_PTX "\"\n"
        ".byte 0\n"
        ".global kina_test_ptx_end\n"
        "kina_test_ptx_end:\n"
        ".previous\n");
extern "C" const char kina_test_fatbin_start[], kina_test_fatbin_end[];
extern "C" const char kina_test_ptx_start[], kina_test_ptx_end[];

namespace kina::test {
TestBinary testFatbin() {
  return {kina_test_fatbin_start,
          static_cast<size_t>(kina_test_fatbin_end - kina_test_fatbin_start)};
}
TestBinary testPtx() {
  return {kina_test_ptx_start,
          static_cast<size_t>(kina_test_ptx_end - kina_test_ptx_start)};
}
} // namespace kina::test
#else
namespace kina::test {
TestBinary testFatbin() { return {nullptr, 0}; }
TestBinary testPtx() { return {nullptr, 0}; }
} // namespace kina::test
#endif
