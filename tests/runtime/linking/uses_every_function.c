/*===- uses_every_function.c - Every public runtime function, declared ----===*
 *
 * Used by check_linking.py, which compiles this file with -Wall -Werror
 * -Wimplicit-function-declaration (C99) twice: with KINA_TEST_HEADER naming
 * a header kinac generated, on an include path holding only that header, and
 * naming "kina/runtime.h". Both must declare every C function that
 * libkina_runtime.a exports (check_linking.py also checks that this file
 * calls each one of them, from the archive's symbol table). Linked with the
 * runtime, it checks what each call returns on a machine without a usable
 * GPU path forced (KINA_CUDA_DRIVER=/nonexistent in check_linking.py).
 *
 *===----------------------------------------------------------------------===*/
#include KINA_TEST_HEADER

#include <stdio.h>
#include <string.h>

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      printf("line %d: %s failed (last error: %s)\n", __LINE__, #condition,   \
             kina_last_error());                                               \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/* A kina_rt_parallel_fn recording the (one) piece it ran. */
static void record_piece(void *ctx, int64_t lo, int64_t hi) {
  int64_t *covered = (int64_t *)ctx;
  covered[0] = lo;
  covered[1] = hi;
}

int main(void) {
  /* Status names, the thread's last error and status. */
  CHECK(strcmp(kina_status_name(KINA_STATUS_GPU_ERROR), "GPU Error") == 0);
  kina_rt_begin_call();
  CHECK(kina_rt_last_status() == 0 && strcmp(kina_last_error(), "") == 0);
  CHECK(kina_rt_fail(KINA_STATUS_TYPE_ERROR, "typed") == 6);
  CHECK(kina_rt_last_status() == 6 && strcmp(kina_last_error(), "typed") == 0);
  CHECK(kina_rt_shape_error("dim {0} vs {1}", 3, 4) == 1);
  CHECK(strcmp(kina_last_error(), "dim 3 vs 4") == 0);
  CHECK(kina_rt_check_version("kina_f", KINA_ABI_VERSION, "kinac") == 0);
  CHECK(kina_rt_check_version("kina_f", KINA_ABI_VERSION + 1, "kinac") == 1);
  CHECK(strlen(kina_runtime_version()) > 0);
  /* The host's x86-64 level: 1..4 on x86-64 (0 elsewhere), the same on
   * every call. */
  int32_t level = kina_rt_cpu_level();
  CHECK(level >= 0 && level <= 4 && kina_rt_cpu_level() == level);
#if defined(__x86_64__)
  CHECK(level >= 1);
#endif

  /* The thread pool: a loop of 10 iterations with little work runs on
   * the caller, in one piece, without counting as a split loop. */
  {
    int32_t threads = kina_rt_num_threads();
    CHECK(threads >= 1 && threads <= 1024);
    CHECK(kina_rt_parallel_threads(10, 0) == 1);
    uint64_t regions = kina_rt_parallel_regions();
    int64_t covered[2] = {0, 0};
    kina_rt_parallel_for(10, 0, record_piece, covered);
    CHECK(covered[0] == 0 && covered[1] == 10);
    CHECK(kina_rt_parallel_regions() == regions);
  }

  /* Host allocation, the registry, frees. */
  KinaMemRef2 host = {0, 0, 0, {2, 3}, {0, 0}};
  KinaUnrankedMemRef unranked = {2, &host};
  CHECK(_mlir_ciface_runtime_host_alloc_unranked(&unranked, 4) == 0);
  CHECK(host.strides[0] == 3 && host.strides[1] == 1);
  CHECK(runtime_live_buffer_count() == 1 && runtime_live_bytes() == 24);
  CHECK(runtime_free(host.allocated) == 0);
  CHECK(runtime_free(host.allocated) == 1);

  /* The TensorDesc frame: a null output, then a failed call's status. */
  {
    static const int32_t table[] = {1, 1, KINA_TD_DTYPE_F32, 1,
                                    KINA_TD_DTYPE_F32, 1};
    float data[2] = {1, 2};
    KinaTensorDesc in = {(uint64_t)(uintptr_t)data, 1, {2, 0, 0, 0},
                         {1, 0, 0, 0}, KINA_TD_DTYPE_F32};
    const KinaTensorDesc *outs[1] = {NULL};
    const KinaTensorDesc *ins[1] = {&in};
    KinaMemRef4 scratch[2];
    CHECK(kina_rt_td_prepare("kinatd_f", table, outs, ins, scratch) ==
          KINA_TD_NULL_DESCRIPTOR);
    outs[0] = &in;
    CHECK(kina_rt_td_prepare("kinatd_f", table, outs, ins, scratch) == 0);
    CHECK(kina_rt_td_finish("kinatd_f", table, outs, ins, scratch, 2) ==
          KINA_TD_ALLOCATION_FAILED);
  }

  /* The GPU path without a driver: status 3, the reason in the message. */
  int32_t device = -1;
  CHECK(runtime_gpu_get_device(&device) == 0 && device == 0);
  CHECK(runtime_gpu_set_device(-1) == 1);
  CHECK(runtime_gpu_set_device(0) == 3);
  CHECK(strstr(kina_last_error(), "CUDA driver not found") != NULL);
  KinaMemRef1 managed = {0, 0, 0, {8}, {0}};
  KinaUnrankedMemRef managedRef = {1, &managed};
  CHECK(_mlir_ciface_runtime_gpu_alloc_unranked(&managedRef, 4) == 3);
  CHECK(managed.allocated == NULL);
  CHECK(runtime_gpu_free_all() == 0 && runtime_live_buffer_count() == 0);

  /* The GPU call frame and the mgpu* launch functions without a driver:
   * status 3 recorded, NULL handles, no crash. */
  static char blob[16] = "not a fatbin";
  CHECK(kina_rt_gpu_enter() == 3);
  CHECK(strstr(kina_last_error(), "kina_rt_gpu_enter: CUDA driver not found"));
  CHECK(kina_rt_gpu_check_argument(NULL, "kina_f", "x") == 0);
  CHECK(kina_rt_gpu_check_argument(blob, "kina_f", "x") == 3);
  CHECK(kina_rt_gpu_exit() == 5);
  kina_rt_gpu_synchronize(); /* outside a call: nothing to wait for */
  {
    /* A matmul without a driver (or without cuBLASLt): taken, status 3. */
    int64_t dims[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    float a = 1.0f, b = 1.0f, c = 0.0f;
    CHECK(kina_rt_gpu_matmul(KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F32 << 8, 0,
                             0, dims, &a, &b, &c) == 1);
    CHECK(strstr(kina_last_error(), "kina_rt_gpu_matmul: "));
    /* With a bias epilogue (unit bias stride after the strides): taken,
     * status 3 as well; a non-unit bias stride is not taken (0). */
    int64_t biasDims[10] = {1, 2, 1, 1, 1, 1, 1, 1, 1, 1};
    float bias[2] = {0.0f, 0.0f}, c2[2] = {0.0f, 0.0f}, b2[2] = {1.0f, 1.0f};
    CHECK(kina_rt_gpu_matmul_epilogue(
              KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F32 << 8, 0, 0, biasDims,
              &a, b2, c2, KINA_GPU_EPILOGUE_BIAS, 1.0, bias, NULL) == 1);
    CHECK(strstr(kina_last_error(), "kina_rt_gpu_matmul: "));
    biasDims[9] = 2;
    CHECK(kina_rt_gpu_matmul_epilogue(
              KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F32 << 8, 0, 0, biasDims,
              &a, b2, c2, KINA_GPU_EPILOGUE_BIAS, 1.0, bias, NULL) == 0);
  }
  CHECK(kina_rt_gpu_enter_stream(-1, 0) == 1);
  CHECK(kina_rt_gpu_enter_stream(0, 0) == 3);
  CHECK(strstr(kina_last_error(), "CUDA driver not found"));
  CHECK(kina_rt_gpu_exit() == 5); /* No frame was opened. */
  /* The cuda TensorDesc frame: a stride-0 output is -8 before any GPU
   * work; a strided input passes the checks (no -9 any more) and, like a
   * contiguous call, cannot open its frame without a driver (-4). */
  {
    static const int32_t table[] = {1, 1, KINA_TD_DTYPE_F32, 2,
                                    KINA_TD_DTYPE_F32, 2};
    float data[4] = {1, 2, 3, 4};
    KinaTensorDesc plain = {(uint64_t)(uintptr_t)data, 2, {2, 2, 0, 0},
                            {2, 1, 0, 0}, KINA_TD_DTYPE_F32};
    KinaTensorDesc transposed = plain;
    transposed.strides[0] = 1;
    transposed.strides[1] = 2;
    const KinaTensorDesc *outs[1] = {&plain};
    const KinaTensorDesc *ins[1] = {&transposed};
    KinaMemRef4 scratch[2];
    KinaTensorDesc broadcast = plain;
    broadcast.strides[0] = 0;
    outs[0] = &broadcast;
    CHECK(kina_rt_td_gpu_prepare("kinatd_f", table, outs, ins, scratch, 0,
                                 0) == KINA_TD_OVERLAPPING_OUTPUT);
    outs[0] = &plain;
    CHECK(kina_rt_td_gpu_prepare("kinatd_f", table, outs, ins, scratch, 0,
                                 0) == KINA_TD_DEVICE_ERROR);
    CHECK(strstr(kina_last_error(), "CUDA driver not found"));
    ins[0] = &plain;
    CHECK(kina_rt_td_gpu_prepare("kinatd_f", table, outs, ins, scratch, 0,
                                 0) == KINA_TD_DEVICE_ERROR);
    CHECK(strstr(kina_last_error(), "CUDA driver not found"));
    /* finish after a failed kina_<fn> maps its status (1: -6); the frame
     * it closes was never opened, which kina_rt_gpu_exit reports apart. */
    CHECK(kina_rt_td_gpu_finish("kinatd_f", table, outs, ins, scratch, 1, 0,
                                0) == KINA_TD_SHAPE_MISMATCH);
  }
  void *module = mgpuModuleLoad(blob, sizeof(blob));
  void *jit = mgpuModuleLoadJIT(blob, 2);
  CHECK(module != NULL && jit != NULL);
  kina_rt_begin_call();
  CHECK(mgpuModuleGetFunction(module, "k") == NULL);
  CHECK(kina_rt_last_status() == 3);
  mgpuModuleUnload(jit);
  mgpuModuleUnload(module);
  mgpuSetDefaultDevice(0);
  CHECK(mgpuStreamCreate() == NULL && mgpuEventCreate() == NULL);
  CHECK(mgpuMemAlloc(16, NULL, true) == NULL);
  kina_rt_begin_call();
  mgpuLaunchKernel(blob, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL, 0);
  CHECK(kina_rt_last_status() == 3);
  kina_rt_begin_call();
  mgpuStreamSynchronize(blob);
  CHECK(kina_rt_last_status() == 3);
  mgpuStreamDestroy(blob);
  mgpuStreamWaitEvent(blob, blob);
  mgpuEventRecord(blob, blob);
  mgpuEventSynchronize(blob);
  mgpuEventDestroy(blob);
  mgpuMemcpy(blob, blob, 4, NULL);
  mgpuMemset32(blob, 0, 1, NULL);
  mgpuMemset16(blob, 0, 1, NULL);
  kina_rt_begin_call();
  mgpuMemFree(blob, NULL);
  CHECK(kina_rt_last_status() == 3);
  printf("ok\n");
  return 0;
}
