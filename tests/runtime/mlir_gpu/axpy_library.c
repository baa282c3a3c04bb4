/*===- axpy_library.c - A hand-made --target=cuda shared library ----------===*
 *
 * A shared library shaped like one `kinac --target=cuda --emit=shared`
 * writes, without needing the CUDA target of kinac: a manifest with
 * "target": "cuda", and a status entry `kina_axpy(out, x, y)` computing
 * out = 2 * x + y over f32[N] through saxpy.mlir's MLIR-lowered GPU code,
 * framed as generated cuda entries are (kina_rt_begin_call,
 * kina_rt_gpu_enter, kina_rt_gpu_check_argument per argument, the result
 * from _mlir_ciface_runtime_gpu_alloc_unranked, kina_rt_gpu_exit, the
 * result freed on failure). Linked with the whole runtime, as kinac links
 * shared libraries. Used by runtime.kina_run_cuda (kina-run on this
 * library: its cuda path copies the inputs into managed memory) and by
 * scripts/gpu-check.sh.
 *
 *===----------------------------------------------------------------------===*/
#include "kina/runtime.h"

#include <string.h>

void _mlir_ciface_saxpy(float a, KinaMemRef1 *x, KinaMemRef1 *y);

const char *kina_module_manifest(void);
int32_t kina_axpy(KinaMemRef1 *out, const KinaMemRef1 *x, const KinaMemRef1 *y);

const char *kina_module_manifest(void) {
  return "{\n"
         "  \"format\": \"kina-manifest\",\n"
         "  \"version\": 1,\n"
         "  \"generator\": \"axpy_library.c\",\n"
         "  \"module\": \"axpy\",\n"
         "  \"symbol_prefix\": \"\",\n"
         "  \"target\": \"cuda\",\n"
         "  \"functions\": [\n"
         "    {\n"
         "      \"name\": \"axpy\",\n"
         "      \"symbols\": {\"entry\": \"kina_axpy\", \"c_interface\": "
         "\"_mlir_ciface_axpy\"},\n"
         "      \"arguments\": [\n"
         "        {\"name\": \"x\", \"element_type\": \"f32\", \"rank\": 1, "
         "\"dims\": [\"N\"]},\n"
         "        {\"name\": \"y\", \"element_type\": \"f32\", \"rank\": 1, "
         "\"dims\": [\"N\"]}\n"
         "      ],\n"
         "      \"results\": [\n"
         "        {\"name\": \"out\", \"element_type\": \"f32\", \"rank\": 1, "
         "\"dims\": [\"N\"]}\n"
         "      ]\n"
         "    }\n"
         "  ]\n"
         "}\n";
}

int32_t kina_axpy(KinaMemRef1 *out, const KinaMemRef1 *x,
                  const KinaMemRef1 *y) {
  KinaUnrankedMemRef unranked;
  KinaMemRef1 xv, outv;
  int32_t status;
  kina_rt_begin_call();
  memset(out, 0, sizeof *out);
  if (x->sizes[0] != y->sizes[0])
    return kina_rt_shape_error("axpy: N is {0} in x and {1} in y", x->sizes[0],
                               y->sizes[0]);
  if ((status = kina_rt_gpu_enter()) != 0)
    return status;
  if ((status = kina_rt_gpu_check_argument(x->allocated, "kina_axpy", "x")) ||
      (status = kina_rt_gpu_check_argument(y->allocated, "kina_axpy", "y"))) {
    kina_rt_gpu_exit();
    return status;
  }
  out->sizes[0] = x->sizes[0];
  unranked.rank = 1;
  unranked.descriptor = out;
  if ((status = _mlir_ciface_runtime_gpu_alloc_unranked(&unranked, 4)) != 0) {
    kina_rt_gpu_exit();
    memset(out, 0, sizeof *out);
    return status;
  }
  /* out = y, then out = 2 * x + out on the GPU. */
  memcpy(out->aligned, (const float *)y->aligned + y->offset,
         (size_t)y->sizes[0] * sizeof(float));
  xv = *x;
  outv = *out;
  _mlir_ciface_saxpy(2.0f, &xv, &outv);
  if ((status = kina_rt_gpu_exit()) != 0) {
    runtime_free(out->allocated);
    memset(out, 0, sizeof *out);
  }
  return status;
}
