/* C tests of the TensorDesc entries kinatd_<fn> (include/kina/abi.h) on a
 * shared library from `kinac ops.kir --emit=shared`: the seed's return
 * codes for null and unsupported descriptors, kinac's codes for shape
 * mismatches and overlapping outputs, and NumPy's results for strided,
 * transposed, negative-stride and broadcast (stride 0) inputs, strided and
 * aliasing outputs; no runtime buffer outlives a call. Usage:
 * tensordesc_test <ops.so>; exit status 0 when every check passes. */
#include "kina/abi.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef int32_t (*Entry1)(const KinaTensorDesc *, const KinaTensorDesc *,
                          int32_t, uint64_t);
typedef int32_t (*Entry2)(const KinaTensorDesc *, const KinaTensorDesc *,
                          const KinaTensorDesc *, int32_t, uint64_t);
typedef int32_t (*Entry3)(const KinaTensorDesc *, const KinaTensorDesc *,
                          const KinaTensorDesc *, const KinaTensorDesc *,
                          int32_t, uint64_t);
typedef int32_t (*Entry22)(const KinaTensorDesc *, const KinaTensorDesc *,
                           const KinaTensorDesc *, const KinaTensorDesc *,
                           int32_t, uint64_t);

static void *lib;
static int failures;
static const char *(*lastError)(void);
static int64_t (*liveBuffers)(void);

static void *sym(const char *name) {
  void *p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "missing symbol %s\n", name);
    failures++;
  }
  return p;
}

#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "FAIL line %d: ", __LINE__);                             \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, " (last error: %s)\n", lastError());                     \
      failures++;                                                              \
    }                                                                          \
  } while (0)

/* A rank-2 descriptor over `p`. */
static KinaTensorDesc d2(void *p, int32_t dtype, int64_t s0, int64_t s1,
                         int64_t st0, int64_t st1) {
  KinaTensorDesc d;
  memset(&d, 0, sizeof d);
  d.ptr = (uint64_t)(uintptr_t)p;
  d.ndim = 2;
  d.shape[0] = s0;
  d.shape[1] = s1;
  d.strides[0] = st0;
  d.strides[1] = st1;
  d.dtype = dtype;
  return d;
}

static KinaTensorDesc d1(void *p, int32_t dtype, int64_t s0, int64_t st0) {
  KinaTensorDesc d = d2(p, dtype, s0, 0, st0, 0);
  d.ndim = 1;
  return d;
}

static void testCodes(void) {
  Entry2 add = (Entry2)sym("kinatd_add_f32");
  float a[6] = {0}, b[6] = {0}, c[6] = {0};
  KinaTensorDesc da = d2(a, KINA_TD_DTYPE_F32, 2, 3, 3, 1);
  KinaTensorDesc db = d2(b, KINA_TD_DTYPE_F32, 2, 3, 3, 1);
  KinaTensorDesc dc = d2(c, KINA_TD_DTYPE_F32, 2, 3, 3, 1);
  int32_t rc;
  rc = add(NULL, &da, &db, 0, 0);
  EXPECT(rc == -5, "null output: rc %d", rc);
  rc = add(&dc, &da, NULL, 0, 0);
  EXPECT(rc == -5, "null input: rc %d", rc);
  EXPECT(strstr(lastError(), "kinatd_add_f32: input 1") != NULL,
         "null input message");
  KinaTensorDesc bad = da;
  bad.dtype = 99;
  rc = add(&dc, &bad, &db, 0, 0);
  EXPECT(rc == -2, "unknown dtype: rc %d", rc);
  bad.dtype = KINA_TD_DTYPE_I32;
  rc = add(&dc, &bad, &db, 0, 0);
  EXPECT(rc == -2, "wrong dtype: rc %d", rc);
  EXPECT(strstr(lastError(), "has dtype i32, expected f32") != NULL,
         "dtype message");
  bad = dc;
  bad.dtype = KINA_TD_DTYPE_F16;
  rc = add(&bad, &da, &db, 0, 0);
  EXPECT(rc == -2, "wrong output dtype: rc %d", rc);
  bad = da;
  bad.ndim = 5;
  rc = add(&dc, &bad, &db, 0, 0);
  EXPECT(rc == -6, "ndim 5: rc %d", rc);
  bad.ndim = 1;
  rc = add(&dc, &bad, &db, 0, 0);
  EXPECT(rc == -6, "ndim 1: rc %d", rc);
  bad = d2(a, KINA_TD_DTYPE_F32, 1, 3, 3, 1);
  rc = add(&dc, &bad, &db, 0, 0);
  EXPECT(rc == -6, "symbolic M mismatch: rc %d", rc);
  EXPECT(strstr(lastError(), "(M)") != NULL, "symbolic message: %s",
         lastError());
  bad = d2(c, KINA_TD_DTYPE_F32, 3, 2, 2, 1);
  rc = add(&bad, &da, &db, 0, 0);
  EXPECT(rc == -6, "output shape: rc %d", rc);
  bad = d2(NULL, KINA_TD_DTYPE_F32, 2, 3, 3, 1);
  rc = add(&dc, &bad, &db, 0, 0);
  EXPECT(rc == -5, "null data: rc %d", rc);
  bad = d2(c, KINA_TD_DTYPE_F32, 2, 3, 0, 1);
  rc = add(&bad, &da, &db, 0, 0);
  EXPECT(rc == -8, "stride-0 output: rc %d", rc);
  rc = add(&dc, &da, &db, 0, 0);
  EXPECT(rc == 0, "valid call: rc %d", rc);
  EXPECT(lastError()[0] == '\0', "valid call leaves no error");
}

static void testStrided(void) {
  Entry2 add = (Entry2)sym("kinatd_add_f32");
  /* base: 4x6 row-major, values i*10+j. */
  float base[24], row[3] = {100, 200, 300}, out[2 * 8];
  for (int i = 0; i < 24; ++i)
    base[i] = (float)((i / 6) * 10 + i % 6);
  /* a = base.T[1:3, ::-2][:, :3]... simpler: a[i][j] = base[j][5 - 2i]? use
   * a = base[::2, ::-2] (shape 2x3, strides (12, -2), start at base[0][5]). */
  KinaTensorDesc da = d2(&base[5], KINA_TD_DTYPE_F32, 2, 3, 12, -2);
  /* b = broadcast of row over 2 rows (stride 0). */
  KinaTensorDesc db = d2(row, KINA_TD_DTYPE_F32, 2, 3, 0, 1);
  /* out: every other column of a 2x8 buffer. */
  for (int i = 0; i < 16; ++i)
    out[i] = -1;
  KinaTensorDesc dc = d2(out, KINA_TD_DTYPE_F32, 2, 3, 8, 2);
  int64_t before = liveBuffers();
  int32_t rc = add(&dc, &da, &db, 0, 0);
  EXPECT(rc == 0, "strided add: rc %d", rc);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) {
      float want = base[(2 * i) * 6 + 5 - 2 * j] + row[j];
      EXPECT(out[i * 8 + 2 * j] == want, "out[%d][%d] = %g, want %g", i, j,
             out[i * 8 + 2 * j], want);
      EXPECT(out[i * 8 + 2 * j + 1] == -1, "gap [%d][%d] written", i, j);
    }
  EXPECT(liveBuffers() == before, "buffers leaked: %lld -> %lld",
         (long long)before, (long long)liveBuffers());

  /* Transposed input, output aliasing the other input (out = b). */
  float t[6] = {1, 2, 3, 4, 5, 6}; /* 3x2 row-major; its transpose is 2x3 */
  float b[6] = {10, 20, 30, 40, 50, 60};
  KinaTensorDesc dt = d2(t, KINA_TD_DTYPE_F32, 2, 3, 1, 2);
  KinaTensorDesc dbb = d2(b, KINA_TD_DTYPE_F32, 2, 3, 3, 1);
  rc = add(&dbb, &dt, &dbb, 0, 0);
  EXPECT(rc == 0, "aliasing add: rc %d", rc);
  float want[6] = {11, 23, 35, 42, 54, 66};
  for (int i = 0; i < 6; ++i)
    EXPECT(b[i] == want[i], "alias b[%d] = %g, want %g", i, b[i], want[i]);
  EXPECT(liveBuffers() == before, "buffers leaked after aliasing call");
}

static void testForward(void) {
  Entry3 fwd = (Entry3)sym("kinatd_forward");
  float x[5 * 4], w[4 * 3], b[3], y[5 * 3];
  for (int i = 0; i < 20; ++i)
    x[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 12; ++i)
    w[i] = 0.25f * (float)(i % 5);
  for (int i = 0; i < 3; ++i)
    b[i] = (float)i;
  KinaTensorDesc dx = d2(x, KINA_TD_DTYPE_F32, 5, 4, 4, 1);
  KinaTensorDesc dw = d2(w, KINA_TD_DTYPE_F32, 4, 3, 3, 1);
  KinaTensorDesc db = d1(b, KINA_TD_DTYPE_F32, 3, 1);
  KinaTensorDesc dy = d2(y, KINA_TD_DTYPE_F32, 5, 3, 3, 1);
  int32_t rc = fwd(&dy, &dx, &dw, &db, 0, 0);
  EXPECT(rc == 0, "forward: rc %d", rc);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) {
      float want = b[j];
      for (int k = 0; k < 4; ++k)
        want += x[i * 4 + k] * w[k * 3 + j];
      EXPECT(fabsf(y[i * 3 + j] - want) < 1e-5f, "y[%d][%d] = %g, want %g", i,
             j, y[i * 3 + j], want);
    }
  KinaTensorDesc wrong = d2(w, KINA_TD_DTYPE_F32, 3, 3, 3, 1);
  rc = fwd(&dy, &dx, &wrong, &db, 0, 0);
  EXPECT(rc == -6, "static dim mismatch: rc %d", rc);
}

static void testTwoResultsAndScalar(void) {
  Entry22 sd = (Entry22)sym("kinatd_sum_diff");
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, s[4], d[8];
  KinaTensorDesc da = d1(a, KINA_TD_DTYPE_F32, 4, 1);
  KinaTensorDesc db = d1(&b[3], KINA_TD_DTYPE_F32, 4, -1); /* reversed */
  KinaTensorDesc ds = d1(s, KINA_TD_DTYPE_F32, 4, 1);
  KinaTensorDesc dd = d1(d, KINA_TD_DTYPE_F32, 4, 2);
  int32_t rc = sd(&ds, &dd, &da, &db, 0, 0);
  EXPECT(rc == 0, "sum_diff: rc %d", rc);
  for (int i = 0; i < 4; ++i) {
    EXPECT(s[i] == a[i] + b[3 - i], "s[%d]", i);
    EXPECT(d[2 * i] == a[i] - b[3 - i], "d[%d]", i);
  }
  /* Two outputs over the same memory are refused. */
  KinaTensorDesc overlap = d1(&s[1], KINA_TD_DTYPE_F32, 2, 1);
  KinaTensorDesc ds2 = d1(s, KINA_TD_DTYPE_F32, 4, 1);
  overlap.shape[0] = 4;
  rc = sd(&ds2, &overlap, &da, &db, 0, 0);
  EXPECT(rc == -8, "overlapping outputs: rc %d", rc);

  Entry2 scale = (Entry2)sym("kinatd_scale");
  float k = 3, x[3] = {1, 2, 3}, y[3];
  KinaTensorDesc dk;
  memset(&dk, 0, sizeof dk);
  dk.ptr = (uint64_t)(uintptr_t)&k;
  dk.ndim = 0;
  dk.dtype = KINA_TD_DTYPE_F32;
  KinaTensorDesc dx = d1(x, KINA_TD_DTYPE_F32, 3, 1);
  KinaTensorDesc dy = d1(y, KINA_TD_DTYPE_F32, 3, 1);
  rc = scale(&dy, &dk, &dx, 0, 0);
  EXPECT(rc == 0 && y[0] == 3 && y[1] == 6 && y[2] == 9, "scale: rc %d", rc);
}

static void testIdentity(void) {
  /* The result is the argument's buffer: a strided argument's copy must
   * outlive the copy-out and be freed once. */
  Entry1 ident = (Entry1)sym("kinatd_ident");
  float x[6] = {1, 2, 3, 4, 5, 6}, y[3];
  KinaTensorDesc dx = d1(&x[5], KINA_TD_DTYPE_F32, 3, -2);
  KinaTensorDesc dy = d1(y, KINA_TD_DTYPE_F32, 3, 1);
  int64_t before = liveBuffers();
  int32_t rc = ident(&dy, &dx, 0, 0);
  EXPECT(rc == 0 && y[0] == 6 && y[1] == 4 && y[2] == 2,
         "ident strided: rc %d, %g %g %g", rc, y[0], y[1], y[2]);
  EXPECT(liveBuffers() == before, "ident leaked");
  dx = d1(x, KINA_TD_DTYPE_F32, 3, 1);
  rc = ident(&dy, &dx, 0, 0);
  EXPECT(rc == 0 && y[0] == 1 && y[2] == 3 && x[0] == 1, "ident: rc %d", rc);
  EXPECT(liveBuffers() == before, "ident leaked");
}

static void testOtherDtypes(void) {
  Entry2 i8 = (Entry2)sym("kinatd_add_i8");
  int8_t a[4] = {1, -2, 100, 5}, b[4] = {1, 2, 100, -5}, c[4];
  KinaTensorDesc da = d2(a, KINA_TD_DTYPE_I8, 2, 2, 2, 1);
  KinaTensorDesc db = d2(b, KINA_TD_DTYPE_I8, 2, 2, 1, 2); /* transposed */
  KinaTensorDesc dc = d2(c, KINA_TD_DTYPE_I8, 2, 2, 2, 1);
  int32_t rc = i8(&dc, &da, &db, 0, 0);
  EXPECT(rc == 0 && c[0] == 2 && c[1] == 98 && c[2] == 102 && c[3] == 0,
         "i8 add: rc %d, %d %d %d %d", rc, c[0], c[1], c[2], c[3]);
  Entry2 i64 = (Entry2)sym("kinatd_add_i64");
  int64_t p[2] = {1LL << 40, 7}, q[2] = {5, 8}, r[2];
  KinaTensorDesc dp = d2(p, KINA_TD_DTYPE_I64, 1, 2, 2, 1);
  KinaTensorDesc dq = d2(q, KINA_TD_DTYPE_I64, 1, 2, 2, 1);
  KinaTensorDesc dr = d2(r, KINA_TD_DTYPE_I64, 1, 2, 2, 1);
  rc = i64(&dr, &dp, &dq, 0, 0);
  EXPECT(rc == 0 && r[0] == (1LL << 40) + 5 && r[1] == 15, "i64 add: rc %d",
         rc);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: tensordesc_test <ops.so>\n");
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 2;
  }
  lastError = (const char *(*)(void))sym("kina_last_error");
  liveBuffers = (int64_t(*)(void))sym("runtime_live_buffer_count");
  if (failures)
    return 1;
  testCodes();
  testStrided();
  testForward();
  testTwoResultsAndScalar();
  testOtherDtypes();
  testIdentity();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("tensordesc_test: all checks passed\n");
  return 0;
}
