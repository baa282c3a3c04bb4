/* Timing harness of bench/matmul.py: one f32 matrix product C = A * B of
 * M x K by K x N (row-major), computed by
 *   - kinac's code at -O2 (`kina_mm`, the register-tiled kernel),
 *   - kinac's code at -O0 (`kina_o0_mm`, the scalar loops of linalg-to-loops),
 *   - OpenBLAS's cblas_sgemm on 1 thread (the peer a user would call).
 * Each is timed as the best of several repetitions of at least 0.2 s;
 * results are checked against OpenBLAS (max difference over max |C|).
 * Prints one line: M N K and GFLOP/s of each, then the max differences.
 *
 * Usage: matmul_bench M N K            (built and run by bench/matmul.py) */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mm_o2.h"
#include "mm_o0.h"

extern void openblas_set_num_threads(int);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static KinaMemRef2 view(float *data, int64_t rows, int64_t cols) {
  KinaMemRef2 d = {data, data, 0, {rows, cols}, {cols, 1}};
  return d;
}

typedef int (*Product)(const KinaMemRef2 *, const KinaMemRef2 *, float *,
                       int64_t, int64_t, int64_t);

/* kinac's entry allocates the result; the copy-out is not timed apart. */
static int runO2(const KinaMemRef2 *a, const KinaMemRef2 *b, float *c,
                 int64_t m, int64_t n, int64_t k) {
  KinaMemRef2 out;
  (void)m; (void)n; (void)k; (void)c;
  if (kina_mm(&out, a, b) != 0) return 1;
  runtime_free(out.allocated);
  return 0;
}
static int runO0(const KinaMemRef2 *a, const KinaMemRef2 *b, float *c,
                 int64_t m, int64_t n, int64_t k) {
  KinaMemRef2 out;
  (void)m; (void)n; (void)k; (void)c;
  if (kina_o0_mm(&out, a, b) != 0) return 1;
  runtime_free(out.allocated);
  return 0;
}
static int runBlas(const KinaMemRef2 *a, const KinaMemRef2 *b, float *c,
                   int64_t m, int64_t n, int64_t k) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n,
              (int)k, 1.0f, (const float *)a->aligned, (int)k,
              (const float *)b->aligned, (int)n, 0.0f, c, (int)n);
  return 0;
}

/* Best GFLOP/s over 5 rounds of at least 0.2 s each; -1 on failure. */
static double gflops(Product f, const KinaMemRef2 *a, const KinaMemRef2 *b,
                     float *c, int64_t m, int64_t n, int64_t k) {
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    int reps = 0;
    double start = now(), t;
    do {
      if (f(a, b, c, m, n, k) != 0) return -1;
      ++reps;
      t = now() - start;
    } while (t < 0.2);
    double rate = 2.0 * m * n * k * reps / t * 1e-9;
    if (rate > best) best = rate;
  }
  return best;
}

/* max |r - ref| / max |ref|: a difference relative to the result's scale
 * (elements near zero come from cancellation, where summation order alone
 * changes every digit). */
static double maxRelDiff(const KinaMemRef2 *r, const float *ref, int64_t n) {
  const float *p = (const float *)r->aligned + r->offset;
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < n; ++i) {
    double d = fabs((double)p[i] - ref[i]);
    if (d > worst) worst = d;
    if (fabs(ref[i]) > scale) scale = fabs(ref[i]);
  }
  return scale > 0 ? worst / scale : worst;
}

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s M N K\n", argv[0]);
    return 2;
  }
  int64_t m = atoll(argv[1]), n = atoll(argv[2]), k = atoll(argv[3]);
  float *a = malloc(sizeof(float) * m * k), *b = malloc(sizeof(float) * k * n);
  float *c = malloc(sizeof(float) * m * n);
  if (!a || !b || !c) return 2;
  srand(1);
  for (int64_t i = 0; i < m * k; ++i) a[i] = (float)rand() / RAND_MAX - 0.5f;
  for (int64_t i = 0; i < k * n; ++i) b[i] = (float)rand() / RAND_MAX - 0.5f;
  KinaMemRef2 da = view(a, m, k), db = view(b, k, n);
  openblas_set_num_threads(1);

  runBlas(&da, &db, c, m, n, k);
  KinaMemRef2 r2, r0;
  if (kina_mm(&r2, &da, &db) != 0 || kina_o0_mm(&r0, &da, &db) != 0) {
    fprintf(stderr, "kina entry failed: %s\n", kina_last_error());
    return 1;
  }
  double d2 = maxRelDiff(&r2, c, m * n), d0 = maxRelDiff(&r0, c, m * n);
  runtime_free(r2.allocated);
  runtime_free(r0.allocated);

  double g2 = gflops(runO2, &da, &db, c, m, n, k);
  /* The scalar loops are slow: time them only below 2^28 multiply-adds. */
  double g0 = (double)m * n * k <= (double)(1 << 28)
                  ? gflops(runO0, &da, &db, c, m, n, k) : 0.0;
  double gb = gflops(runBlas, &da, &db, c, m, n, k);
  printf("%lld %lld %lld %.3f %.3f %.3f %.3g %.3g\n", (long long)m,
         (long long)n, (long long)k, g2, g0, gb, d2, d0);
  free(a);
  free(b);
  free(c);
  return g2 < 0 || gb < 0 ? 1 : 0;
}
