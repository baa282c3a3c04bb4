/* samples/make-project: calls the two compiled modules on a small batch and
 * checks them against plain C.
 *
 * normalize.kir's @forward (kina_normalize_forward) is a row-wise softmax,
 * stats.kir's @forward (kina_stats_forward) the column means and maxima.
 * Both headers are included here; each module's symbols carry its own
 * prefix. Prints the results and "make-project: ok" and exits 0 when every
 * value is within 1e-5 of the C reference; exits 1 otherwise. Built with
 * -DKINA_SAMPLE_CUDA=1 (make KINA_TARGET=cuda), it passes the input in CUDA
 * managed memory from the runtime, as --target=cuda entries require. */
#include "normalize.h"
#include "stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ROWS = 3, COLS = 4 };

static KinaMemRef2 matrix(float *data, int64_t rows, int64_t cols) {
  KinaMemRef2 m = {data, data, 0, {rows, cols}, {cols, 1}};
  return m;
}

static void check(const char *what, double got, double want, int *failures) {
  if (fabs(got - want) > 1e-5) {
    fprintf(stderr, "%s: got %.7f, expected %.7f\n", what, got, want);
    ++*failures;
  }
}

int main(void) {
  float x[ROWS][COLS] = {
      {1.0f, 2.0f, 3.0f, 4.0f},
      {-1.0f, 0.0f, 1.0f, 0.5f},
      {10.0f, 10.0f, 10.0f, 10.0f},
  };
  KinaMemRef2 in = matrix(&x[0][0], ROWS, COLS);
#if KINA_SAMPLE_CUDA
  KinaUnrankedMemRef managed = {2, &in};
  if (_mlir_ciface_runtime_gpu_alloc_unranked(&managed, sizeof(float)) != 0) {
    fprintf(stderr, "managed memory: %s\n", kina_last_error());
    return 1;
  }
  memcpy(in.aligned, &x[0][0], sizeof x);
#endif

  KinaMemRef2 probs;
  int32_t status = kina_normalize_forward(&probs, &in);
  if (status != 0) {
    fprintf(stderr, "kina_normalize_forward: %s: %s\n",
            kina_status_name(status), kina_last_error());
    return 1;
  }
  KinaMemRef1 mean, max;
  status = kina_stats_forward(&mean, &max, &in);
  if (status != 0) {
    fprintf(stderr, "kina_stats_forward: %s: %s\n", kina_status_name(status),
            kina_last_error());
    return 1;
  }

  int failures = 0;
  const float *p = (const float *)probs.aligned;
  for (int i = 0; i < ROWS; ++i) {
    double rowMax = x[i][0], sum = 0;
    for (int j = 1; j < COLS; ++j)
      rowMax = x[i][j] > rowMax ? x[i][j] : rowMax;
    for (int j = 0; j < COLS; ++j)
      sum += exp(x[i][j] - rowMax);
    for (int j = 0; j < COLS; ++j)
      check("softmax", p[i * COLS + j], exp(x[i][j] - rowMax) / sum,
            &failures);
    printf("softmax row %d: %.4f %.4f %.4f %.4f\n", i, p[i * COLS],
           p[i * COLS + 1], p[i * COLS + 2], p[i * COLS + 3]);
  }
  for (int j = 0; j < COLS; ++j) {
    double s = 0, m = x[0][j];
    for (int i = 0; i < ROWS; ++i) {
      s += x[i][j];
      m = x[i][j] > m ? x[i][j] : m;
    }
    check("mean", ((const float *)mean.aligned)[j], s / ROWS, &failures);
    check("max", ((const float *)max.aligned)[j], m, &failures);
  }
  printf("column means: %.4f %.4f %.4f %.4f\n", ((float *)mean.aligned)[0],
         ((float *)mean.aligned)[1], ((float *)mean.aligned)[2],
         ((float *)mean.aligned)[3]);

  runtime_free(probs.allocated);
  runtime_free(mean.allocated);
  runtime_free(max.allocated);
#if KINA_SAMPLE_CUDA
  runtime_free(in.allocated);
#endif
  if (failures) {
    printf("make-project: %d mismatches\n", failures);
    return 1;
  }
  printf("make-project: ok\n");
  return 0;
}
