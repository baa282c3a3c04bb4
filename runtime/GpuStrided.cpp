//===- GpuStrided.cpp - The runtime's strided-copy kernel -----------------===//
//
// Implements GpuStrided.h. The kernel `kina_strided_copy` is PTX (ISA 7.0,
// sm_52 and newer; the driver compiles it for the device it runs on) so the
// runtime needs no CUDA compiler at build time and still links no CUDA
// library. One thread per element, grid-stride loop: the linear row-major
// index i of the (padded to rank 4) shape is split into indices with 64-bit
// division, each layout's element offset is sum(index_k * stride_k)
// (two's-complement products: negative strides work), and one element of
// 1, 2, 4 or 8 bytes moves through generic addressing (device, managed and
// mapped host memory alike). Equivalent CUDA C:
//
//   for (u64 i = blockIdx.x * blockDim.x + threadIdx.x; i < count;
//        i += gridDim.x * blockDim.x) {
//     u64 i3 = i % shape3, r = i / shape3, i2 = r % shape2; r /= shape2;
//     u64 i1 = r % shape1, i0 = r / shape1;
//     copy size bytes from src + size * (i0*s0 + i1*s1 + i2*s2 + i3*s3)
//                     to   dst + size * (i0*d0 + i1*d1 + i2*d2 + i3*d3);
//   }
//
//===----------------------------------------------------------------------===//
#include "GpuStrided.h"

#include "GpuLaunch.h"
#include "Guard.h"

#include "kina/runtime.h"

#include <algorithm>
#include <string>

namespace kina::rt::gpu {

namespace {

/// The kernel; parameters (all 64-bit): destination, source, element
/// count, element size in bytes, shape[1..3] (shape[0] is implied by the
/// count), source strides[0..3], destination strides[0..3].
const char kStridedCopyPtx[] = R"PTX(
.version 7.0
.target sm_52
.address_size 64

.visible .entry kina_strided_copy(
    .param .u64 p_dst, .param .u64 p_src, .param .u64 p_count,
    .param .u64 p_size, .param .u64 p_shape1, .param .u64 p_shape2,
    .param .u64 p_shape3, .param .u64 p_src0, .param .u64 p_src1,
    .param .u64 p_src2, .param .u64 p_src3, .param .u64 p_dst0,
    .param .u64 p_dst1, .param .u64 p_dst2, .param .u64 p_dst3)
{
  .reg .pred %p<4>;
  .reg .b16 %h<2>;
  .reg .b32 %r<6>;
  .reg .b64 %d<40>;
  ld.param.u64 %d1, [p_dst];
  ld.param.u64 %d2, [p_src];
  ld.param.u64 %d3, [p_count];
  ld.param.u64 %d4, [p_size];
  ld.param.u64 %d5, [p_shape1];
  ld.param.u64 %d6, [p_shape2];
  ld.param.u64 %d7, [p_shape3];
  ld.param.u64 %d8, [p_src0];
  ld.param.u64 %d9, [p_src1];
  ld.param.u64 %d10, [p_src2];
  ld.param.u64 %d11, [p_src3];
  ld.param.u64 %d12, [p_dst0];
  ld.param.u64 %d13, [p_dst1];
  ld.param.u64 %d14, [p_dst2];
  ld.param.u64 %d15, [p_dst3];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %d16, %r1, %r2;
  cvt.u64.u32 %d17, %r3;
  add.u64 %d18, %d16, %d17;          // i: the linear (row-major) index
  mul.wide.u32 %d19, %r4, %r2;       // grid stride
LOOP:
  setp.ge.u64 %p1, %d18, %d3;
  @%p1 bra DONE;
  div.u64 %d20, %d18, %d7;           // i / shape3
  mul.lo.u64 %d21, %d20, %d7;
  sub.u64 %d22, %d18, %d21;          // index 3
  div.u64 %d23, %d20, %d6;
  mul.lo.u64 %d21, %d23, %d6;
  sub.u64 %d24, %d20, %d21;          // index 2
  div.u64 %d25, %d23, %d5;           // index 0
  mul.lo.u64 %d21, %d25, %d5;
  sub.u64 %d26, %d23, %d21;          // index 1
  mul.lo.u64 %d27, %d25, %d8;        // source element offset
  mad.lo.u64 %d27, %d26, %d9, %d27;
  mad.lo.u64 %d27, %d24, %d10, %d27;
  mad.lo.u64 %d27, %d22, %d11, %d27;
  mul.lo.u64 %d28, %d25, %d12;       // destination element offset
  mad.lo.u64 %d28, %d26, %d13, %d28;
  mad.lo.u64 %d28, %d24, %d14, %d28;
  mad.lo.u64 %d28, %d22, %d15, %d28;
  mad.lo.u64 %d29, %d27, %d4, %d2;   // source address
  mad.lo.u64 %d30, %d28, %d4, %d1;   // destination address
  setp.eq.u64 %p2, %d4, 8;
  @%p2 bra E8;
  setp.eq.u64 %p2, %d4, 4;
  @%p2 bra E4;
  setp.eq.u64 %p2, %d4, 2;
  @%p2 bra E2;
  ld.u8 %h1, [%d29];
  st.u8 [%d30], %h1;
  bra NEXT;
E2:
  ld.u16 %h1, [%d29];
  st.u16 [%d30], %h1;
  bra NEXT;
E4:
  ld.u32 %r5, [%d29];
  st.u32 [%d30], %r5;
  bra NEXT;
E8:
  ld.u64 %d31, [%d29];
  st.u64 [%d30], %d31;
NEXT:
  add.u64 %d18, %d18, %d19;
  bra LOOP;
DONE:
  ret;
}
)PTX";

constexpr const char *kKernelName = "kina_strided_copy";
constexpr int64_t kBlock = 256;
/// Enough blocks to fill an H200 several times over; more elements loop.
constexpr int64_t kMaxBlocks = 8192;

/// The registered module (mgpuModuleLoadJIT: loaded lazily per device, kept
/// for the process). Null only when registering ran out of memory.
void *stridedModule() {
  static void *const module =
      mgpuModuleLoadJIT(const_cast<char *>(kStridedCopyPtx), /*optLevel=*/4);
  return module;
}

/// The launch onThreadStream makes on the call's stream.
struct Launch {
  const char *where;
  CUfunction function;
  uint64_t values[15];
};

int32_t launch(void *state, const cuda::DriverApi &api, CUstream stream,
               int32_t device) {
  auto &request = *static_cast<Launch *>(state);
  void *params[15];
  for (int i = 0; i < 15; ++i)
    params[i] = &request.values[i];
  int64_t count = static_cast<int64_t>(request.values[2]);
  int64_t blocks = std::min((count + kBlock - 1) / kBlock, kMaxBlocks);
  CUresult result = api.cuLaunchKernel(
      request.function, static_cast<unsigned>(blocks), 1, 1,
      static_cast<unsigned>(kBlock), 1, 1, 0, stream, params, nullptr);
  if (result == CUDA_SUCCESS)
    return KINA_STATUS_SUCCESS;
  return pendCudaError(api, result, request.where,
                       std::string("cuLaunchKernel of the runtime's ") +
                           kKernelName + " on CUDA device " +
                           std::to_string(device) + " failed");
}

} // namespace

int32_t stridedCopy(const char *where, void *destination,
                    const int64_t *destinationStrides, const void *source,
                    const int64_t *sourceStrides, const int64_t *shape,
                    int32_t rank, int64_t elementSize) noexcept {
  return guardStatus(where, [&] {
    if (rank < 0 || rank > kStridedCopyMaxRank ||
        (elementSize != 1 && elementSize != 2 && elementSize != 4 &&
         elementSize != 8))
      return failIn(KINA_STATUS_VALIDATION_ERROR, where,
                    "strided copy of an unsupported rank or element size");
    if (!inCall())
      return failIn(KINA_STATUS_INTERNAL_ERROR, where,
                    "strided copy outside a GPU call frame");
    // Padded to rank 4 at the front: size 1, stride 0.
    int64_t sizes[4] = {1, 1, 1, 1}, from[4] = {0, 0, 0, 0},
            to[4] = {0, 0, 0, 0};
    int64_t count = 1;
    for (int32_t k = 0; k < rank; ++k) {
      int32_t at = 4 - rank + k;
      sizes[at] = shape[k];
      from[at] = sourceStrides[k];
      to[at] = destinationStrides[k];
      count *= shape[k];
    }
    if (count == 0)
      return KINA_STATUS_SUCCESS;
    void *module = stridedModule();
    if (!module)
      return pendError(KINA_STATUS_RESOURCE_ERROR,
                       std::string(where) +
                           ": out of memory registering the strided-copy "
                           "kernel");
    // On the call's device: loads the PTX there on first use.
    auto function =
        static_cast<CUfunction>(mgpuModuleGetFunction(module, kKernelName));
    if (!function)
      return KINA_STATUS_GPU_ERROR; // Pending, with the load's message.
    Launch request{where, function, {}};
    uint64_t values[15] = {reinterpret_cast<uintptr_t>(destination),
                           reinterpret_cast<uintptr_t>(source),
                           static_cast<uint64_t>(count),
                           static_cast<uint64_t>(elementSize),
                           static_cast<uint64_t>(sizes[1]),
                           static_cast<uint64_t>(sizes[2]),
                           static_cast<uint64_t>(sizes[3]),
                           static_cast<uint64_t>(from[0]),
                           static_cast<uint64_t>(from[1]),
                           static_cast<uint64_t>(from[2]),
                           static_cast<uint64_t>(from[3]),
                           static_cast<uint64_t>(to[0]),
                           static_cast<uint64_t>(to[1]),
                           static_cast<uint64_t>(to[2]),
                           static_cast<uint64_t>(to[3])};
    std::copy(values, values + 15, request.values);
    return onThreadStream(where, launch, &request);
  });
}

} // namespace kina::rt::gpu
