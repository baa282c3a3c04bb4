/*===- mlir_gpu_test.c - MLIR-lowered GPU code against the runtime --------===*
 *
 * Runs saxpy.mlir, lowered by this build's MLIR into an object that calls
 * the runtime's mgpu* functions exactly as MLIR 22 emits them (module
 * registered by a global constructor before main, unloaded by a global
 * destructor after it), through the runtime's GPU call frame as a
 * --target=cuda entry does: kina_rt_gpu_enter, kina_rt_gpu_check_argument,
 * the compiled function, kina_rt_gpu_exit. With a GPU: three calls of
 * 100003 elements in managed memory, then 8 threads x 100 calls, each
 * result checked exactly (a * x + y with small integers is exact in f32);
 * host memory as an argument gives 1; the registry is empty at the end.
 * Without a usable GPU: kina_rt_gpu_enter gives 3 with the reason, a direct
 * call of the compiled function records 3 instead of crashing, and the
 * program prints "mlir-gpu: no GPU: ..." and exits 0, unless
 * KINA_REQUIRE_GPU=1 is set (scripts/gpu-check.sh), then 1. Prints
 * "mlir-gpu: ok" and exits 0 when everything held.
 *
 *===----------------------------------------------------------------------===*/
#include "kina/runtime.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MLIR's C interface of @saxpy (llvm.emit_c_interface). */
void _mlir_ciface_saxpy(float a, KinaMemRef1 *x, KinaMemRef1 *y);

#define CHECK(condition)                                                       \
  do {                                                                         \
    if (!(condition)) {                                                        \
      printf("mlir-gpu: line %d: %s failed (last error: %s)\n", __LINE__,      \
             #condition, kina_last_error());                                   \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/* A managed f32 vector of n elements from the runtime; 0 or its status. */
static int32_t managed(KinaMemRef1 *m, int64_t n) {
  KinaUnrankedMemRef u;
  memset(m, 0, sizeof *m);
  m->sizes[0] = n;
  u.rank = 1;
  u.descriptor = m;
  return _mlir_ciface_runtime_gpu_alloc_unranked(&u, 4);
}

/* One call as a cuda entry makes it: 0, or the first failing status. */
static int32_t call_saxpy(float a, KinaMemRef1 *x, KinaMemRef1 *y) {
  int32_t status;
  kina_rt_begin_call();
  if ((status = kina_rt_gpu_enter()) != 0)
    return status;
  if ((status = kina_rt_gpu_check_argument(x->allocated, "kina_saxpy", "x")) ||
      (status = kina_rt_gpu_check_argument(y->allocated, "kina_saxpy", "y"))) {
    kina_rt_gpu_exit();
    return status;
  }
  _mlir_ciface_saxpy(a, x, y);
  return kina_rt_gpu_exit();
}

/* 0 if n elements of x = i % 13 and y = 2 ran through saxpy(a) correctly,
 * else the status or -1 for a wrong value. */
static int run_once(float a, int64_t n) {
  KinaMemRef1 x, y;
  int64_t i;
  int32_t status;
  int result = 0;
  if ((status = managed(&x, n)) != 0)
    return status;
  if ((status = managed(&y, n)) != 0) {
    runtime_free(x.allocated);
    return status;
  }
  for (i = 0; i < n; ++i) {
    ((float *)x.aligned)[i] = (float)(i % 13);
    ((float *)y.aligned)[i] = 2.0f;
  }
  status = call_saxpy(a, &x, &y);
  if (status != 0)
    result = status;
  else
    for (i = 0; i < n; ++i)
      if (((float *)y.aligned)[i] != a * (float)(i % 13) + 2.0f) {
        printf("mlir-gpu: y[%lld] = %g, expected %g\n", (long long)i,
               ((float *)y.aligned)[i], a * (float)(i % 13) + 2.0f);
        result = -1;
        break;
      }
  runtime_free(x.allocated);
  runtime_free(y.allocated);
  return result;
}

static void *thread_main(void *arg) {
  int t = (int)(long)arg, i;
  for (i = 0; i < 100; ++i) {
    int r = run_once((float)(t + 1), 4096 + 17 * t);
    if (r != 0) {
      printf("mlir-gpu: thread %d call %d: %d (%s)\n", t, i, r,
             kina_last_error());
      return (void *)1;
    }
  }
  return NULL;
}

int main(void) {
  const char *require = getenv("KINA_REQUIRE_GPU");
  int32_t status;
  pthread_t threads[8];
  void *failed;
  int t, bad = 0;
  float host[4] = {0, 0, 0, 0};

  kina_rt_begin_call();
  status = kina_rt_gpu_enter();
  if (status != 0) {
    KinaMemRef1 x = {host, host, 0, {4}, {1}}, y = {host, host, 0, {4}, {1}};
    CHECK(status == 3);
    printf("mlir-gpu: no GPU: %s\n", kina_last_error());
    /* The compiled function called directly: status 3 recorded, no crash. */
    kina_rt_begin_call();
    _mlir_ciface_saxpy(1.0f, &x, &y);
    CHECK(kina_rt_last_status() == 3);
    CHECK(strstr(kina_last_error(), "mgpu") != NULL);
    return require && strcmp(require, "1") == 0 ? 1 : 0;
  }
  CHECK(kina_rt_gpu_exit() == 0);

  for (t = 0; t < 3; ++t)
    CHECK(run_once(0.5f * (float)(t + 1), 100003) == 0);
  CHECK(run_once(3.0f, 0) == 0); /* an empty grid */
  for (t = 0; t < 8; ++t)
    CHECK(pthread_create(&threads[t], NULL, thread_main, (void *)(long)t) == 0);
  for (t = 0; t < 8; ++t) {
    CHECK(pthread_join(threads[t], &failed) == 0);
    bad += failed != NULL;
  }
  CHECK(bad == 0);

  /* Host memory as an argument: status 1 naming it; nothing runs. */
  {
    KinaMemRef1 x = {host, host, 0, {4}, {1}}, y = {host, host, 0, {4}, {1}};
    CHECK(call_saxpy(1.0f, &x, &y) == 1);
    CHECK(strstr(kina_last_error(), "kina_saxpy: argument %x") != NULL);
  }
  CHECK(runtime_live_buffer_count() == 0);
  printf("mlir-gpu: ok\n");
  return 0;
}
