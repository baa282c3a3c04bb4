/*===- main.c - Runs the compiled digits MLP and checks it against sklearn -===*
 *
 * The digits sample's host program (C99). It calls `kina_forward`, the status
 * entry point kinac generates from mlp.kir (declared in mlp.h, which
 * `kinac mlp.kir --emit=header -o mlp.h` writes and which embeds
 * include/kina/abi.h), on all 1797 images of sklearn's digits set, in batches
 * of different sizes so that the symbolic dim N takes many run-time values.
 * It reads the raw little-endian files train.py writes into the data
 * directory (see data/manifest.txt), compares every output row with sklearn's
 * predict_proba (max abs diff) and the true labels (accuracy), frees every
 * result with runtime_free, and checks that a call with a wrongly shaped
 * weight returns Validation Error (1). Usage: digits DATA_DIR. The last line
 * printed is `digits: N=1797 accuracy=A max_abs_diff=D`; the exit code is 0
 * only if D <= 1e-5, the argmax equals sklearn's on every image, and every
 * status is as expected. Assumes a little-endian host, as the data files are.
 * Built with -DKINA_DIGITS_CUDA=1 (scripts/digits.sh --target=cuda) for an
 * object compiled with `kinac --target=cuda`, it keeps the data in CUDA
 * managed memory allocated through the runtime, as such entries require.
 *
 *===----------------------------------------------------------------------===*/
#include "mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NUM_IMAGES 1797
#define NUM_PIXELS 64
#define NUM_HIDDEN 32
#define NUM_CLASSES 10
#define MAX_ABS_DIFF 1e-5

/* A buffer for input data: host memory (malloc) for a CPU object; for a
 * --target=cuda object (KINA_DIGITS_CUDA) CUDA managed memory from
 * _mlir_ciface_runtime_gpu_alloc_unranked, which the GPU can read. NULL
 * (after printing why) on failure. Release with free_input. */
static void *alloc_input(size_t bytes) {
#if KINA_DIGITS_CUDA
  KinaMemRef1 m;
  KinaUnrankedMemRef u;
  memset(&m, 0, sizeof m);
  m.sizes[0] = (int64_t)bytes;
  u.rank = 1;
  u.descriptor = &m;
  if (_mlir_ciface_runtime_gpu_alloc_unranked(&u, 1) != KINA_STATUS_SUCCESS) {
    fprintf(stderr, "digits: cannot allocate %zu bytes of managed memory: %s\n",
            bytes, kina_last_error());
    return NULL;
  }
  return m.allocated;
#else
  void *data = malloc(bytes);
  if (!data)
    fprintf(stderr, "digits: cannot allocate %zu bytes\n", bytes);
  return data;
#endif
}

static void free_input(void *data) {
#if KINA_DIGITS_CUDA
  if (data)
    runtime_free(data);
#else
  free(data);
#endif
}

/* Reads DIR/NAME, which must hold exactly `bytes` bytes, into a buffer from
 * alloc_input that the caller releases with free_input. Returns NULL (after
 * printing why) on failure. */
static void *read_file(const char *dir, const char *name, size_t bytes) {
  char path[4096];
  FILE *f;
  long size;
  void *data;
  if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) {
    fprintf(stderr, "digits: path too long: %s/%s\n", dir, name);
    return NULL;
  }
  f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "digits: cannot open %s\n", path);
    return NULL;
  }
  if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
      fseek(f, 0, SEEK_SET) != 0) {
    fprintf(stderr, "digits: cannot size %s\n", path);
    fclose(f);
    return NULL;
  }
  if ((size_t)size != bytes) {
    fprintf(stderr, "digits: %s has %ld bytes, expected %zu\n", path, size,
            bytes);
    fclose(f);
    return NULL;
  }
  data = alloc_input(bytes);
  if (!data || fread(data, 1, bytes, f) != bytes) {
    fprintf(stderr, "digits: cannot read %s\n", path);
    free_input(data);
    fclose(f);
    return NULL;
  }
  fclose(f);
  return data;
}

/* A row-major rank-1 descriptor over caller-owned memory. */
static KinaMemRef1 memref1(void *data, int64_t n) {
  KinaMemRef1 m;
  m.allocated = data;
  m.aligned = data;
  m.offset = 0;
  m.sizes[0] = n;
  m.strides[0] = 1;
  return m;
}

/* A row-major rank-2 descriptor over caller-owned memory; `first` is the
 * first element (`aligned`), `base` the start of the allocation. */
static KinaMemRef2 memref2(void *base, void *first, int64_t rows,
                           int64_t cols) {
  KinaMemRef2 m;
  m.allocated = base;
  m.aligned = first;
  m.offset = 0;
  m.sizes[0] = rows;
  m.sizes[1] = cols;
  m.strides[0] = cols;
  m.strides[1] = 1;
  return m;
}

/* Index of the largest of n floats (first one on ties). */
static int argmax_row(const float *row, int64_t stride, int n) {
  int best = 0, j;
  for (j = 1; j < n; ++j)
    if (row[j * stride] > row[best * stride])
      best = j;
  return best;
}

int main(int argc, char **argv) {
  static const int64_t batch_sizes[] = {1, 7, 64, 100, 256, 3, 512, 33, 128};
  const int num_batch_sizes = (int)(sizeof batch_sizes / sizeof *batch_sizes);
  const char *dir;
  float *images, *w1, *b1, *w2, *b2, *proba;
  int64_t *labels;
  KinaMemRef2 w1_ref, w2_ref, bad_w1_ref;
  KinaMemRef1 b1_ref, b2_ref;
  int64_t start = 0;
  int batch_index = 0, num_batches = 0;
  long correct = 0, argmax_mismatches = 0;
  double max_abs_diff = 0.0;
  int ok = 1;
  int32_t status;

  if (argc != 2) {
    fprintf(stderr,
            "usage: %s DATA_DIR\n"
            "  DATA_DIR holds the files samples/digits/train.py "
            "writes (images.bin, labels.bin, w1.bin, ...)\n",
            argc > 0 ? argv[0] : "digits");
    return 2;
  }
  dir = argv[1];
  images =
      read_file(dir, "images.bin", sizeof(float) * NUM_IMAGES * NUM_PIXELS);
  labels = read_file(dir, "labels.bin", sizeof(int64_t) * NUM_IMAGES);
  w1 = read_file(dir, "w1.bin", sizeof(float) * NUM_PIXELS * NUM_HIDDEN);
  b1 = read_file(dir, "b1.bin", sizeof(float) * NUM_HIDDEN);
  w2 = read_file(dir, "w2.bin", sizeof(float) * NUM_HIDDEN * NUM_CLASSES);
  b2 = read_file(dir, "b2.bin", sizeof(float) * NUM_CLASSES);
  proba = read_file(dir, "proba.bin", sizeof(float) * NUM_IMAGES * NUM_CLASSES);
  if (!images || !labels || !w1 || !b1 || !w2 || !b2 || !proba)
    return 1;

  w1_ref = memref2(w1, w1, NUM_PIXELS, NUM_HIDDEN);
  b1_ref = memref1(b1, NUM_HIDDEN);
  w2_ref = memref2(w2, w2, NUM_HIDDEN, NUM_CLASSES);
  b2_ref = memref1(b2, NUM_CLASSES);

  /* All images, in batches whose sizes cycle through batch_sizes; x's
   * `aligned` points at the batch's first row of the one images buffer. */
  while (start < NUM_IMAGES) {
    int64_t n = batch_sizes[batch_index++ % num_batch_sizes];
    KinaMemRef2 x_ref, out;
    int64_t i;
    if (n > NUM_IMAGES - start)
      n = NUM_IMAGES - start;
    x_ref = memref2(images, images + start * NUM_PIXELS, n, NUM_PIXELS);
    memset(&out, 0, sizeof out);
    status = kina_forward(&out, &x_ref, &w1_ref, &b1_ref, &w2_ref, &b2_ref);
    if (status != KINA_STATUS_SUCCESS) {
      fprintf(stderr, "digits: kina_forward(N=%lld) failed: %s: %s\n",
              (long long)n, kina_status_name(status), kina_last_error());
      return 1;
    }
    if (!out.aligned || out.sizes[0] != n || out.sizes[1] != NUM_CLASSES) {
      fprintf(stderr,
              "digits: kina_forward(N=%lld) returned a [%lld, %lld] "
              "result at %p, expected [%lld, %d]\n",
              (long long)n, (long long)out.sizes[0], (long long)out.sizes[1],
              out.aligned, (long long)n, NUM_CLASSES);
      return 1;
    }
    for (i = 0; i < n; ++i) {
      const float *row =
          (const float *)out.aligned + out.offset + i * out.strides[0];
      const float *ref = proba + (start + i) * NUM_CLASSES;
      int ours = argmax_row(row, out.strides[1], NUM_CLASSES);
      int j;
      for (j = 0; j < NUM_CLASSES; ++j) {
        double d = fabs((double)row[j * out.strides[1]] - (double)ref[j]);
        if (!(d <= max_abs_diff)) /* also catches NaN */
          max_abs_diff = d == d ? d : INFINITY;
      }
      if (ours == labels[start + i])
        ++correct;
      if (ours != argmax_row(ref, 1, NUM_CLASSES))
        ++argmax_mismatches;
    }
    status = runtime_free(out.allocated);
    if (status != KINA_STATUS_SUCCESS) {
      fprintf(stderr, "digits: runtime_free failed: %s: %s\n",
              kina_status_name(status), kina_last_error());
      ok = 0;
    }
    start += n;
    ++num_batches;
  }
  printf("batches: %d (sizes cycling through 1, 7, 64, 100, 256, 3, 512, 33, "
         "128)\n",
         num_batches);

  /* A weight with the wrong static shape must be a Validation Error. */
  {
    KinaMemRef2 x_ref = memref2(images, images, 5, NUM_PIXELS);
    KinaMemRef2 out;
    bad_w1_ref = memref2(w1, w1, NUM_PIXELS - 1, NUM_HIDDEN);
    memset(&out, 0, sizeof out);
    status = kina_forward(&out, &x_ref, &bad_w1_ref, &b1_ref, &w2_ref, &b2_ref);
    printf("wrong shape (w1 is [63, 32]): status %d (%s): %s\n", (int)status,
           kina_status_name(status), kina_last_error());
    if (status != KINA_STATUS_VALIDATION_ERROR) {
      fprintf(stderr, "digits: expected status 1 for a [63, 32] w1\n");
      ok = 0;
      if (status == KINA_STATUS_SUCCESS)
        runtime_free(out.allocated);
    }
  }

  free_input(images);
  free_input(labels);
  free_input(w1);
  free_input(b1);
  free_input(w2);
  free_input(b2);
  free_input(proba);
  status = runtime_gpu_free_all();
  if (status != KINA_STATUS_SUCCESS) {
    fprintf(stderr, "digits: runtime_gpu_free_all failed: %s: %s\n",
            kina_status_name(status), kina_last_error());
    ok = 0;
  }

  printf("argmax mismatches vs sklearn: %ld of %d\n", argmax_mismatches,
         NUM_IMAGES);
  printf("digits: N=%d accuracy=%.4f max_abs_diff=%.2e\n", NUM_IMAGES,
         (double)correct / NUM_IMAGES, max_abs_diff);
  return ok && max_abs_diff <= MAX_ABS_DIFF && argmax_mismatches == 0 ? 0 : 1;
}
