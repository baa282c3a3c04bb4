//===- TestKernels.h - The runtime tests' GPU binaries --------------------===//
//
// The kernels of test_kernels.cu (kina_test_saxpy, kina_test_reverse) as
// nvcc built them at build time: a fatbin (sm_90 machine code and compute_90
// PTX) for mgpuModuleLoad and NUL-terminated PTX for mgpuModuleLoadJIT,
// embedded in the test binary (TestKernels.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TESTS_RUNTIME_TESTKERNELS_H
#define KINA_TESTS_RUNTIME_TESTKERNELS_H

#include <cstddef>

namespace kina::test {

/// Bytes of an embedded binary; `data` is null (and `size` 0) when the build
/// had no nvcc.
struct TestBinary {
  const char *data;
  size_t size;
};

/// The fatbin of test_kernels.cu.
TestBinary testFatbin();
/// The PTX of test_kernels.cu, NUL included in `size`.
TestBinary testPtx();

} // namespace kina::test

#endif // KINA_TESTS_RUNTIME_TESTKERNELS_H
