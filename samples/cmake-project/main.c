/* samples/cmake-project: standardises a batch of rows with one compiled
 * module and classifies them with another, then checks both against plain C.
 *
 * preprocess/model.kir and classifier/model.kir both define @forward; their
 * libraries export them as kina_pre_forward and kina_clf_forward, and their
 * generated headers, both named model.h, are included by library name.
 * Prints the classes and "cmake-project: ok", exit code 0, when every value
 * is within 1e-5 of the C reference and the classes agree; 1 otherwise. */
#include "classifier/model.h"
#include "preprocess/model.h"

#include <math.h>
#include <stdio.h>

enum { ROWS = 5, FEATURES = 4, CLASSES = 3 };

int main(void) {
  float x[ROWS][FEATURES] = {
      {5.1f, 3.5f, 1.4f, 0.2f}, {6.2f, 2.9f, 4.3f, 1.3f},
      {7.7f, 3.0f, 6.1f, 2.3f}, {5.0f, 3.4f, 1.5f, 0.2f},
      {6.0f, 2.2f, 5.0f, 1.5f},
  };
  float mean[FEATURES] = {5.84f, 3.06f, 3.76f, 1.20f};
  float invStd[FEATURES] = {1.21f, 2.30f, 0.57f, 1.31f};
  float w[FEATURES][CLASSES] = {
      {-1.0f, 0.3f, 0.8f},
      {1.2f, -0.6f, -0.5f},
      {-1.8f, 0.2f, 1.6f},
      {-1.7f, -0.4f, 2.1f},
  };
  float b[CLASSES] = {0.4f, 1.5f, -1.9f};

  KinaMemRef2 xd = {x, x, 0, {ROWS, FEATURES}, {FEATURES, 1}};
  KinaMemRef1 meanD = {mean, mean, 0, {FEATURES}, {1}};
  KinaMemRef1 invStdD = {invStd, invStd, 0, {FEATURES}, {1}};
  KinaMemRef2 wd = {w, w, 0, {FEATURES, CLASSES}, {CLASSES, 1}};
  KinaMemRef1 bd = {b, b, 0, {CLASSES}, {1}};

  KinaMemRef2 z;
  int32_t status = kina_pre_forward(&z, &xd, &meanD, &invStdD);
  if (status != 0) {
    fprintf(stderr, "kina_pre_forward: %s: %s\n", kina_status_name(status),
            kina_last_error());
    return 1;
  }
  KinaMemRef2 probs;
  KinaMemRef1 classes;
  status = kina_clf_forward(&probs, &classes, &z, &wd, &bd);
  if (status != 0) {
    fprintf(stderr, "kina_clf_forward: %s: %s\n", kina_status_name(status),
            kina_last_error());
    return 1;
  }

  int failures = 0;
  const float *zs = (const float *)z.aligned;
  const float *ps = (const float *)probs.aligned;
  const int64_t *cs = (const int64_t *)classes.aligned;
  for (int i = 0; i < ROWS; ++i) {
    double zr[FEATURES], logits[CLASSES], top = -INFINITY, sum = 0;
    int best = 0;
    for (int j = 0; j < FEATURES; ++j) {
      zr[j] = ((double)x[i][j] - mean[j]) * invStd[j];
      if (fabs(zs[i * FEATURES + j] - zr[j]) > 1e-5)
        ++failures;
    }
    for (int k = 0; k < CLASSES; ++k) {
      logits[k] = b[k];
      for (int j = 0; j < FEATURES; ++j)
        logits[k] += zr[j] * w[j][k];
      if (logits[k] > top) {
        top = logits[k];
        best = k;
      }
    }
    for (int k = 0; k < CLASSES; ++k)
      sum += exp(logits[k] - top);
    for (int k = 0; k < CLASSES; ++k)
      if (fabs(ps[i * CLASSES + k] - exp(logits[k] - top) / sum) > 1e-5)
        ++failures;
    if (cs[i] != best)
      ++failures;
    printf("row %d: class %lld (p = %.4f)\n", i, (long long)cs[i],
           ps[i * CLASSES + cs[i]]);
  }

  runtime_free(z.allocated);
  runtime_free(probs.allocated);
  runtime_free(classes.allocated);
  if (failures) {
    printf("cmake-project: %d mismatches\n", failures);
    return 1;
  }
  printf("cmake-project: ok\n");
  return 0;
}
