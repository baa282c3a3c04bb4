/*===- cpu_main.c - A CPU program linked with kinac --print-link-flags ----===*
 *
 * Used by check_linking.py: calls the compiled @scale (scale.kir) and checks
 * its result, then asks the runtime for CUDA managed memory, which must fail
 * cleanly in a program that links nothing CUDA: status 3 and a message that
 * the program prints on its last line (`gpu: <status> <message>`) so the
 * test can check it against the machine.
 *
 *===----------------------------------------------------------------------===*/
#include "scale.h"

#include <stdio.h>

int main(void) {
  float x[4] = {1.0f, -2.0f, 0.5f, 0.0f};
  KinaMemRef1 in = {x, x, 0, {4}, {1}};
  KinaMemRef1 out;
  int32_t status = kina_scale(&out, &in);
  if (status != 0) {
    printf("kina_scale: status %d: %s\n", status, kina_last_error());
    return 1;
  }
  const float *y = (const float *)out.aligned;
  for (int i = 0; i < 4; ++i)
    if (y[i] != x[i] * 3.0f + 1.0f) {
      printf("element %d: %g\n", i, y[i]);
      return 1;
    }
  if (runtime_free(out.allocated) != 0 || runtime_live_buffer_count() != 0) {
    printf("runtime_free: %s\n", kina_last_error());
    return 1;
  }
  printf("cpu: ok\n");

  KinaMemRef1 managed = {0, 0, 0, {16}, {1}};
  KinaUnrankedMemRef unranked = {1, &managed};
  status = _mlir_ciface_runtime_gpu_alloc_unranked(&unranked, 4);
  if (status == 0 && runtime_free(managed.allocated) != 0)
    return 1;
  printf("gpu: %d %s\n", status, status ? kina_last_error() : "allocated");
  return 0;
}
