//===- GpuAllocTest.cpp - CUDA managed allocation (runtime_gpu_alloc) -----===//
//
// Tests _mlir_ciface_runtime_gpu_alloc_unranked (the seed's
// runtime_gpu_alloc_unranked; spec, ABI, "Allocation"). Validation errors
// (status 1) are checked everywhere: they come before any CUDA call. The
// other tests first probe with one allocation and check its exact status
// against an independent view of the machine: 4 when the runtime was built
// without CUDA, 3 when CUDA sees no device (then they skip), 0 when a device
// is there; on a CUDA machine they allocate ranks 0..4, touch the memory from
// the device (cudaMemset) and the host, check the registry and free it all.
//
//===----------------------------------------------------------------------===//
#include "RuntimeTestUtil.h"

#include "kina/RuntimeConfig.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>

#if KINA_RUNTIME_HAS_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {

using kina::test::RuntimeTest;
using kina::test::TestMemRef;

class GpuAlloc : public RuntimeTest {};

/// True if CUDA (asked directly, not through the runtime) sees a device.
bool cudaDeviceVisible() {
#if KINA_RUNTIME_HAS_CUDA
  int count = 0;
  bool visible = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  (void)cudaGetLastError();
  return visible;
#else
  return false;
#endif
}

/// Probes the GPU path with one small allocation, checks the exact status
/// this build and machine must give, and returns whether a GPU is usable.
bool probeGpu() {
  TestMemRef<1> ref({4});
  kina_rt_begin_call();
  int32_t status = _mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 4);
  std::string message = kina_last_error();
  if (!KINA_RUNTIME_HAS_CUDA) {
    EXPECT_EQ(status, KINA_STATUS_UNIMPLEMENTED_ERROR) << message;
    EXPECT_NE(message.find("runtime built without CUDA"), std::string::npos)
        << message;
  } else if (!cudaDeviceVisible()) {
    EXPECT_EQ(status, KINA_STATUS_GPU_ERROR) << message;
    EXPECT_NE(message.find("CUDA"), std::string::npos) << message;
  } else {
    EXPECT_EQ(status, KINA_STATUS_SUCCESS) << message;
  }
  if (status != KINA_STATUS_SUCCESS) {
    EXPECT_EQ(ref.ranked.allocated, nullptr);
    EXPECT_EQ(runtime_live_buffer_count(), 0);
    return false;
  }
  EXPECT_EQ(runtime_free(ref.ranked.allocated), 0);
  return true;
}

#define KINA_REQUIRE_GPU()                                                     \
  do {                                                                         \
    if (!probeGpu())                                                           \
      GTEST_SKIP() << "no usable CUDA GPU: " << kina_last_error();             \
  } while (0)

TEST_F(GpuAlloc, StatusMatchesBuildAndMachine) {
  KINA_REQUIRE_GPU();
  SUCCEED() << "CUDA device present and allocation succeeded";
}

/// Allocates a rank-R float buffer in managed memory, fills it from the
/// device with cudaMemset, checks it and rewrites/reads it from the host.
template <int R> void checkGpuRank(const std::array<int64_t, R> &sizes) {
  SCOPED_TRACE("rank " + std::to_string(R));
  TestMemRef<R> ref(sizes);
  int64_t countBefore = runtime_live_buffer_count();
  int64_t bytesBefore = runtime_live_bytes();
  ASSERT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 4), 0)
      << kina_last_error();
  ASSERT_NE(ref.ranked.allocated, nullptr);
  EXPECT_EQ(ref.ranked.aligned, ref.ranked.allocated);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ref.ranked.aligned) % 64, 0u);
  EXPECT_EQ(ref.ranked.offset, 0);
  std::array<int64_t, R> strides = ref.expectedStrides();
  if constexpr (R > 0)
    for (int i = 0; i < R; ++i) {
      EXPECT_EQ(ref.ranked.sizes[i], sizes[i]) << "dim " << i;
      EXPECT_EQ(ref.ranked.strides[i], strides[i]) << "dim " << i;
    }
  int64_t elements = ref.elementCount();
  EXPECT_EQ(runtime_live_buffer_count(), countBefore + 1);
  EXPECT_EQ(runtime_live_bytes(), bytesBefore + elements * 4);
#if KINA_RUNTIME_HAS_CUDA
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, ref.ranked.aligned),
            cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeManaged);
  ASSERT_EQ(cudaMemset(ref.ranked.aligned, 0x3f, elements * 4), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
#endif
  auto *data = static_cast<float *>(ref.ranked.aligned);
  for (int64_t i = 0; i < elements; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &data[i], 4);
    ASSERT_EQ(bits, 0x3f3f3f3fu) << "element " << i << " not set by device";
    data[i] = static_cast<float>(i) + 0.25f;
  }
  for (int64_t i = 0; i < elements; ++i)
    ASSERT_EQ(data[i], static_cast<float>(i) + 0.25f) << "element " << i;
}

TEST_F(GpuAlloc, Ranks0To4OnDevice) {
  KINA_REQUIRE_GPU();
  checkGpuRank<0>({});
  checkGpuRank<1>({1000});
  checkGpuRank<2>({3, 5});
  checkGpuRank<3>({2, 3, 4});
  checkGpuRank<4>({2, 1, 3, 5});
  EXPECT_EQ(runtime_live_buffer_count(), 5);
  EXPECT_EQ(runtime_live_bytes(), (1 + 1000 + 15 + 24 + 30) * 4);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  EXPECT_EQ(runtime_live_bytes(), 0);
  EXPECT_EQ(runtime_gpu_free_all(), 0);
}

TEST_F(GpuAlloc, ZeroSizeAndMixedFrees) {
  KINA_REQUIRE_GPU();
  TestMemRef<2> empty({0, 5});
  ASSERT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&empty.unranked, 4), 0)
      << kina_last_error();
  ASSERT_NE(empty.ranked.allocated, nullptr);
  EXPECT_EQ(empty.ranked.strides[0], 5);
  EXPECT_EQ(empty.ranked.strides[1], 1);
  TestMemRef<1> host({8});
  ASSERT_EQ(_mlir_ciface_runtime_host_alloc_unranked(&host.unranked, 4), 0);
  TestMemRef<1> managed({8});
  ASSERT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&managed.unranked, 8), 0);
  EXPECT_EQ(runtime_live_buffer_count(), 3);
  EXPECT_EQ(runtime_live_bytes(), 32 + 64);
  EXPECT_EQ(runtime_free(managed.ranked.allocated), 0);
  EXPECT_EQ(runtime_free(managed.ranked.allocated), 1);
  EXPECT_EQ(runtime_live_buffer_count(), 2);
  EXPECT_EQ(runtime_gpu_free_all(), 0); // Frees host and managed alike.
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

TEST_F(GpuAlloc, HugeAllocationIsResourceError) {
  KINA_REQUIRE_GPU();
  // 2^62 bytes: refused by the runtime's free-memory check, before any
  // cudaMallocManaged call (over-asking managed memory can hang the GPU).
  TestMemRef<1> ref({int64_t(1) << 59});
  kina_rt_begin_call();
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&ref.unranked, 8), 2)
      << kina_last_error();
  EXPECT_NE(std::string(kina_last_error()).find("bytes free"),
            std::string::npos)
      << kina_last_error();
  EXPECT_EQ(ref.ranked.allocated, nullptr);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
  // The failure leaves CUDA usable.
  TestMemRef<1> small({4});
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&small.unranked, 4), 0)
      << kina_last_error();
}

// Validation comes before any CUDA call, so these hold on every machine.
TEST_F(GpuAlloc, ValidationErrorsComeFirst) {
  kina_rt_begin_call();
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(nullptr, 4), 1);
  KinaUnrankedMemRef nullNested{1, nullptr};
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&nullNested, 4), 1);

  TestMemRef<2> overflow({int64_t(1) << 32, int64_t(1) << 32});
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&overflow.unranked, 4), 1);
  EXPECT_EQ(overflow.ranked.allocated, nullptr);
  EXPECT_NE(std::string(kina_last_error()).find("overflow"), std::string::npos)
      << kina_last_error();

  TestMemRef<1> negative({-3});
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&negative.unranked, 4), 1);
  EXPECT_EQ(negative.ranked.allocated, nullptr);

  TestMemRef<1> badRank({3});
  badRank.unranked.rank = 9;
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&badRank.unranked, 4), 1);
  EXPECT_EQ(badRank.ranked.allocated, nullptr);

  TestMemRef<1> badElement({3});
  EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&badElement.unranked, 0),
            1);
  EXPECT_EQ(kina_rt_last_status(), 1);
  EXPECT_EQ(runtime_live_buffer_count(), 0);
}

} // namespace
