//===- CublasLt.cpp - Matmuls through cuBLASLt, loaded at run time --------===//
//
// Implements CublasLt.h (the loader) and kina_rt_gpu_matmul (kina/runtime.h),
// the call the cuda target's `kina-gpu-map-matmul` emits for float matmuls:
// C[batch..., m, n] (+)= A[batch..., m, k] * B[batch..., k, n] with any
// element strides, queued with cublasLtMatmul on the calling thread's stream
// (the one the call's kernels run on; GpuLaunch.h, onThreadStream).
//
// Row-major C = A B is the column-major product C^T = B^T A^T, which is
// what cuBLASLt is given: each operand's strides choose its layout (unit
// stride on the rows of the column-major view: CUBLAS_OP_N; on the columns:
// CUBLAS_OP_T); an operand with neither unit stride, or a C without unit
// stride along n, is not expressible and the function returns 0, so the
// compiled code runs its own kernel instead. Batch dims of size 1 are
// dropped, adjacent ones merged where every operand's strides allow, and a
// batch that B broadcasts over a contiguous A and C is folded into m; the
// last batch dim left is cuBLASLt's strided batch (stride 0 broadcasts), any
// outer ones a loop of calls. Each thread keeps, per device, a cuBLASLt
// handle, a 32 MiB workspace (cuMemAlloc) and the plans it made (layouts,
// operation descriptor and the heuristic's algorithm, by problem), so a
// repeated shape costs one cublasLtMatmul. kina_rt_gpu_matmul_epilogue adds
// cuBLASLt's epilogue (bias, relu, gelu), alpha and a residual read as
// cuBLASLt's C (beta 1) while the result is its D (docs/cuda.md, "Matmul
// epilogues").
// The algorithm is the heuristic's first unless the flags name another
// index into its list (KINA_GPU_MATMUL_ALGO_SHIFT: the "cuda.matmul"
// schedule of docs/autotune.md; an index past the list's end takes its
// last).
//
//===----------------------------------------------------------------------===//
#include "CublasLt.h"

#include "CudaDriver.h"
#include "GpuLaunch.h"
#include "Guard.h"

#include "kina/runtime.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <dlfcn.h>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#if KINA_HAVE_CUDA_H && __has_include(<cublasLt.h>)
#include <cublasLt.h>
#define KINA_CHECK_CUBLASLT_H 1
#endif

namespace kina::rt::cublaslt {

#if KINA_CHECK_CUBLASLT_H
static_assert(sizeof(MatmulAlgo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(sizeof(HeuristicResult) ==
              sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(HeuristicResult, workspaceSize) ==
              offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize));
static_assert(offsetof(HeuristicResult, state) ==
              offsetof(cublasLtMatmulHeuristicResult_t, state));
static_assert(kOpN == CUBLAS_OP_N && kOpT == CUBLAS_OP_T);
static_assert(kComputeF32 == CUBLAS_COMPUTE_32F &&
              kComputeF32FastTf32 == CUBLAS_COMPUTE_32F_FAST_TF32 &&
              kComputeF64 == CUBLAS_COMPUTE_64F);
static_assert(kR32F == CUDA_R_32F && kR64F == CUDA_R_64F &&
              kR16F == CUDA_R_16F && kR16BF == CUDA_R_16BF);
static_assert(kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
              kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB);
static_assert(kLayoutBatchCount == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT &&
              kLayoutBatchStride ==
                  CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET);
static_assert(kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
              kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER);
static_assert(kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
              kEpilogueRelu == CUBLASLT_EPILOGUE_RELU &&
              kEpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
              kEpilogueGelu == CUBLASLT_EPILOGUE_GELU);
static_assert(kPrefMaxWorkspace == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES &&
              kPrefAlignA == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
              kPrefAlignD == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
#endif

int32_t loadLibraryFrom(const std::string &path, Library &library,
                        std::string &error) noexcept {
  try {
    dlerror();
    void *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      error = path + ": " + (why ? why : "dlopen failed");
      return KINA_STATUS_GPU_ERROR;
    }
    Library loaded;
#define KINA_CUBLASLT_RESOLVE(member, symbol, type)                            \
  loaded.api.member =                                                          \
      reinterpret_cast<std::add_pointer_t<type>>(dlsym(handle, symbol));       \
  if (!loaded.api.member) {                                                    \
    error = path + " lacks " symbol;                                           \
    dlclose(handle);                                                           \
    return KINA_STATUS_GPU_ERROR;                                              \
  }
    KINA_CUBLASLT_API(KINA_CUBLASLT_RESOLVE)
#undef KINA_CUBLASLT_RESOLVE
    loaded.version = loaded.api.cublasLtGetVersion();
    loaded.path = path;
    library = std::move(loaded);
    return KINA_STATUS_SUCCESS; // The handle stays open for the process.
  } catch (...) {
    error = "out of memory";
    return KINA_STATUS_GPU_ERROR;
  }
}

int32_t loadLibrary(const char *where, const Library *&library) noexcept {
  struct Loaded {
    Library library;
    int32_t status = KINA_STATUS_GPU_ERROR;
    std::string error;
  };
  static Loaded *loaded = nullptr; // Never freed: used until exit.
  static std::once_flag once;
  try {
    std::call_once(once, [] {
      auto *result = new Loaded();
      std::vector<std::string> paths;
      const char *explicitPath = std::getenv("KINA_CUBLASLT");
      if (explicitPath && *explicitPath) {
        paths.push_back(explicitPath);
      } else {
        paths.push_back("libcublasLt.so.13");
        if (const char *cudaPath = std::getenv("CUDA_PATH");
            cudaPath && *cudaPath)
          paths.push_back(std::string(cudaPath) + "/lib64/libcublasLt.so.13");
        paths.push_back("/usr/local/cuda/lib64/libcublasLt.so.13");
      }
      for (const std::string &path : paths) {
        std::string error;
        result->status = loadLibraryFrom(path, result->library, error);
        if (result->status == KINA_STATUS_SUCCESS)
          break;
        result->error += (result->error.empty() ? "" : "; ") + error;
      }
      loaded = result;
    });
  } catch (...) {
    return failIn(KINA_STATUS_RESOURCE_ERROR, where, "out of memory");
  }
  if (!loaded)
    return failIn(KINA_STATUS_GPU_ERROR, where, "cuBLASLt could not be loaded");
  if (loaded->status != KINA_STATUS_SUCCESS)
    return fail(KINA_STATUS_GPU_ERROR,
                std::string(where) + ": cuBLASLt not found (" + loaded->error +
                    "); the cuda target's float matmuls need libcublasLt.so.13 "
                    "of the CUDA Toolkit (set KINA_CUBLASLT to its path)");
  library = &loaded->library;
  return KINA_STATUS_SUCCESS;
}

std::string describeStatus(const Api *api, Status status) noexcept {
  try {
    std::string text = "cuBLAS status " + std::to_string(status);
    if (api && api->cublasLtGetStatusName) {
      const char *name = api->cublasLtGetStatusName(status);
      const char *what = api->cublasLtGetStatusString(status);
      if (name)
        text = std::string(name) + (what ? std::string(" (") + what + ")" : "");
    }
    return text;
  } catch (...) {
    return std::string();
  }
}

namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;
constexpr size_t kMaxPlans = 256;

/// One operand of the column-major problem: layout and batch stride.
struct Operand {
  int op = kOpN;
  int64_t rows = 0, cols = 0, ld = 0;
  int64_t batchStride = 0; ///< In elements.
  int alignment = 256;     ///< Bytes: of the pointer of every batch.
};

/// The column-major view of a row-major-indexed matrix X[r, c] whose
/// element (i, j) is at i * si + j * sj: CUBLAS_OP_N with ld = sj when rows
/// are unit stride, CUBLAS_OP_T (the stored matrix is [c, r]) when columns
/// are; false when neither is.
bool layoutOf(int64_t r, int64_t c, int64_t si, int64_t sj, Operand &out) {
  if ((r == 1 || si == 1) && (c == 1 || sj >= r)) {
    out.op = kOpN;
    out.rows = r;
    out.cols = c;
    out.ld = c == 1 ? r : sj;
  } else if ((c == 1 || sj == 1) && (r == 1 || si >= c)) {
    out.op = kOpT;
    out.rows = c;
    out.cols = r;
    out.ld = r == 1 ? c : si;
  } else {
    return false;
  }
  out.ld = std::max<int64_t>(out.ld, 1);
  return true;
}

int dataType(int code) {
  switch (code) {
  case KINA_GPU_MATMUL_F32:
    return kR32F;
  case KINA_GPU_MATMUL_F64:
    return kR64F;
  case KINA_GPU_MATMUL_F16:
    return kR16F;
  case KINA_GPU_MATMUL_BF16:
    return kR16BF;
  default:
    return -1;
  }
}

int64_t elementSize(int code) {
  return code == KINA_GPU_MATMUL_F64 ? 8 : code == KINA_GPU_MATMUL_F32 ? 4 : 2;
}

/// The largest power of two (at most 256) dividing `value`.
int alignmentOf(uint64_t value) {
  int alignment = 256;
  while (alignment > 1 && value % alignment)
    alignment /= 2;
  return alignment;
}

/// A normalised problem: D[n, m] = X[n, k] Y[k, m] column-major (X is B^T,
/// Y is A^T, D is C^T), `batch` strided, `outer` looped.
struct Problem {
  int aType = 0, cType = 0;
  bool tf32 = false, accumulate = false;
  /// Index into the heuristic's list (KINA_GPU_MATMUL_ALGO_SHIFT).
  int32_t algo = 0;
  Operand x, y, d;
  int64_t batch = 1;
  std::vector<int64_t> outerSizes;
  std::vector<std::array<int64_t, 3>> outerStrides; ///< A, B, C.
  const char *a = nullptr, *b = nullptr;
  char *c = nullptr;
  /// kina_rt_gpu_matmul_epilogue: KINA_GPU_EPILOGUE_* bits, alpha, the
  /// bias (f32[n], unit stride) and the residual (laid out as C; read as
  /// cuBLASLt's C, beta 1, while `c` is its D).
  int32_t epilogue = 0;
  double alpha = 1.0;
  const char *bias = nullptr, *residual = nullptr;
  int biasAlignment = 256;
};

/// Builds the problem from kina_rt_gpu_matmul's arguments; false when
/// cuBLASLt cannot express it (the caller's kernel then runs).
bool normalise(int32_t types, int32_t flags, int32_t batchRank,
               const int64_t *dims, const void *a, const void *b, void *c,
               Problem &p) {
  p.aType = types & 0xff;
  p.cType = (types >> 8) & 0xff;
  p.tf32 = flags & KINA_GPU_MATMUL_TF32;
  p.algo = (flags >> KINA_GPU_MATMUL_ALGO_SHIFT) & KINA_GPU_MATMUL_ALGO_MASK;
  p.accumulate = flags & KINA_GPU_MATMUL_ACCUMULATE;
  if (dataType(p.aType) < 0 || dataType(p.cType) < 0 || batchRank < 0 ||
      batchRank > KINA_MAX_RANK)
    return false;
  bool halfIn =
      p.aType == KINA_GPU_MATMUL_F16 || p.aType == KINA_GPU_MATMUL_BF16;
  if (p.aType != p.cType && !(halfIn && p.cType == KINA_GPU_MATMUL_F32))
    return false;
  int64_t m = dims[0], n = dims[1], k = dims[2];
  const int64_t *sizes = dims + 3;
  const int64_t *sa = sizes + batchRank, *sb = sa + batchRank + 2,
                *sc = sb + batchRank + 2;
  // Batch dims: drop size 1, merge neighbours every operand allows.
  struct Dim {
    int64_t size, a, b, c;
  };
  std::vector<Dim> batch;
  for (int32_t i = 0; i < batchRank; ++i) {
    if (sizes[i] == 1)
      continue;
    Dim dim{sizes[i], sa[i], sb[i], sc[i]};
    if (!batch.empty()) {
      Dim &outer = batch.back();
      if (outer.a == dim.a * dim.size && outer.b == dim.b * dim.size &&
          outer.c == dim.c * dim.size) {
        outer = Dim{outer.size * dim.size, dim.a, dim.b, dim.c};
        continue;
      }
    }
    batch.push_back(dim);
  }
  int64_t sam = sa[batchRank], sak = sa[batchRank + 1];
  int64_t sbk = sb[batchRank], sbn = sb[batchRank + 1];
  int64_t scm = sc[batchRank], scn = sc[batchRank + 1];
  // A batch B broadcasts, over A and C rows that continue it: more rows.
  if (batch.size() == 1 && batch[0].b == 0 && batch[0].a == m * sam &&
      batch[0].c == m * scm && (m == 1 || sam != 0)) {
    if (m == 1) {
      sam = batch[0].a;
      scm = batch[0].c;
    }
    m *= batch[0].size;
    batch.clear();
  }
  if (!layoutOf(n, k, sbn, sbk, p.x) || !layoutOf(k, m, sak, sam, p.y) ||
      !layoutOf(n, m, scn, scm, p.d) || p.d.op != kOpN)
    return false;
  if (!batch.empty()) {
    p.batch = batch.back().size;
    p.x.batchStride = batch.back().b;
    p.y.batchStride = batch.back().a;
    p.d.batchStride = batch.back().c;
    batch.pop_back();
    if (p.batch > INT32_MAX)
      return false;
  }
  for (const Dim &dim : batch) {
    p.outerSizes.push_back(dim.size);
    p.outerStrides.push_back({dim.a, dim.b, dim.c});
  }
  p.a = static_cast<const char *>(a);
  p.b = static_cast<const char *>(b);
  p.c = static_cast<char *>(c);
  int64_t ae = elementSize(p.aType), ce = elementSize(p.cType);
  p.x.alignment = alignmentOf(reinterpret_cast<uintptr_t>(b));
  p.y.alignment = alignmentOf(reinterpret_cast<uintptr_t>(a));
  p.d.alignment = alignmentOf(reinterpret_cast<uintptr_t>(c));
  auto narrow = [](Operand &o, int64_t stride, int64_t size) {
    if (stride)
      o.alignment = std::min(o.alignment, alignmentOf(stride * size));
  };
  narrow(p.x, p.x.batchStride, ae);
  narrow(p.y, p.y.batchStride, ae);
  narrow(p.d, p.d.batchStride, ce);
  for (const auto &s : p.outerStrides) {
    narrow(p.y, s[0], ae);
    narrow(p.x, s[1], ae);
    narrow(p.d, s[2], ce);
  }
  return true;
}

/// CUBLASLT_EPILOGUE_* of KINA_GPU_EPILOGUE_* bits (the residual is beta).
uint32_t epilogueOf(int32_t bits) {
  uint32_t e = 0;
  if (bits & KINA_GPU_EPILOGUE_BIAS)
    e |= kEpilogueBias;
  if (bits & KINA_GPU_EPILOGUE_RELU)
    e |= kEpilogueRelu;
  if (bits & KINA_GPU_EPILOGUE_GELU_TANH)
    e |= kEpilogueGelu;
  return e ? e : kEpilogueDefault;
}

/// What cuBLASLt needs for one problem shape, made once per thread.
struct Plan {
  Api const *api = nullptr;
  MatmulDesc desc = nullptr;
  MatrixLayout x = nullptr, y = nullptr, d = nullptr;
  MatmulAlgo algo{};
  size_t workspace = 0;
  bool found = false;
  ~Plan() {
    if (!api)
      return;
    if (desc)
      api->cublasLtMatmulDescDestroy(desc);
    for (MatrixLayout layout : {x, y, d})
      if (layout)
        api->cublasLtMatrixLayoutDestroy(layout);
  }
};

using PlanKey = std::array<int64_t, 20>;

PlanKey keyOf(const Problem &p) {
  return {p.aType | p.cType << 8 | int64_t(p.tf32) << 16 |
              int64_t(p.algo) << 17,
          p.x.op | p.y.op << 1,
          p.x.rows,
          p.x.cols,
          p.x.ld,
          p.y.rows,
          p.y.cols,
          p.y.ld,
          p.d.rows,
          p.d.cols,
          p.d.ld,
          p.batch,
          p.x.batchStride,
          p.y.batchStride,
          p.d.batchStride,
          p.x.alignment,
          p.y.alignment,
          p.d.alignment,
          p.epilogue,
          p.biasAlignment};
}

/// A thread's cuBLASLt state on one device.
struct DeviceState {
  const Library *library = nullptr;
  const cuda::DriverApi *driver = nullptr;
  Handle handle = nullptr;
  CUdeviceptr workspace = 0;
  /// The device's primary context, current when the state was made: the
  /// workspace is freed under it, whatever is current when the thread exits.
  CUcontext context = nullptr;
  std::map<PlanKey, std::unique_ptr<Plan>> plans;
  ~DeviceState() {
    plans.clear();
    // At process exit the driver may be deinitialised: results ignored.
    CUcontext previous = nullptr;
    bool switched = driver && context &&
                    driver->cuCtxGetCurrent(&previous) == CUDA_SUCCESS &&
                    previous != context &&
                    driver->cuCtxSetCurrent(context) == CUDA_SUCCESS;
    if (workspace && driver)
      (void)driver->cuMemFree(workspace);
    if (handle && library)
      (void)library->api.cublasLtDestroy(handle);
    if (switched)
      (void)driver->cuCtxSetCurrent(previous);
  }
};

std::vector<std::unique_ptr<DeviceState>> &threadStates() {
  thread_local std::vector<std::unique_ptr<DeviceState>> states;
  return states;
}

/// The request kina_rt_gpu_matmul hands to onThreadStream.
struct Request {
  const Library *library;
  Problem *problem;
  bool unsupported = false;
};

constexpr const char *kWhere = "kina_rt_gpu_matmul";

int32_t pendCublas(const Api &api, Status status, const std::string &what) {
  return gpu::pendError(KINA_STATUS_GPU_ERROR,
                        std::string(kWhere) + ": " + what +
                            " failed: " + describeStatus(&api, status));
}

/// Makes the plan of `p` on `state`; returns 0 (plan.found false when the
/// heuristic offers no algorithm) or a pending status.
int32_t makePlan(DeviceState &state, const Problem &p, Plan &plan) {
  const Api &api = state.library->api;
  plan.api = &api;
  int compute = p.aType == KINA_GPU_MATMUL_F64 ? kComputeF64
                : (p.aType == KINA_GPU_MATMUL_F32 && p.tf32)
                    ? kComputeF32FastTf32
                    : kComputeF32;
  int scale = p.aType == KINA_GPU_MATMUL_F64 ? kR64F : kR32F;
  Status s = api.cublasLtMatmulDescCreate(&plan.desc, compute, scale);
  if (s != kSuccess)
    return pendCublas(api, s, "cublasLtMatmulDescCreate");
  int32_t opX = p.x.op, opY = p.y.op;
  if ((s = api.cublasLtMatmulDescSetAttribute(plan.desc, kDescTransA, &opX,
                                              sizeof(opX))) != kSuccess ||
      (s = api.cublasLtMatmulDescSetAttribute(plan.desc, kDescTransB, &opY,
                                              sizeof(opY))) != kSuccess)
    return pendCublas(api, s, "cublasLtMatmulDescSetAttribute");
  if (uint32_t epilogue = epilogueOf(p.epilogue);
      epilogue != kEpilogueDefault) {
    // The bias pointer is set again before each call; the heuristic reads
    // its alignment from this one.
    if ((s = api.cublasLtMatmulDescSetAttribute(plan.desc, kDescEpilogue,
                                                &epilogue, sizeof(epilogue))) !=
            kSuccess ||
        (p.bias && (s = api.cublasLtMatmulDescSetAttribute(
                        plan.desc, kDescBiasPointer, &p.bias,
                        sizeof(p.bias))) != kSuccess))
      return pendCublas(api, s, "cublasLtMatmulDescSetAttribute");
  }
  auto layout = [&](MatrixLayout &out, const Operand &o, int type) {
    Status r = api.cublasLtMatrixLayoutCreate(&out, type, o.rows, o.cols, o.ld);
    if (r != kSuccess)
      return pendCublas(api, r, "cublasLtMatrixLayoutCreate");
    if (p.batch > 1) {
      int32_t count = static_cast<int32_t>(p.batch);
      int64_t stride = o.batchStride;
      if ((r = api.cublasLtMatrixLayoutSetAttribute(
               out, kLayoutBatchCount, &count, sizeof(count))) != kSuccess ||
          (r = api.cublasLtMatrixLayoutSetAttribute(
               out, kLayoutBatchStride, &stride, sizeof(stride))) != kSuccess)
        return pendCublas(api, r, "cublasLtMatrixLayoutSetAttribute");
    }
    return int32_t(KINA_STATUS_SUCCESS);
  };
  int32_t status;
  if ((status = layout(plan.x, p.x, dataType(p.aType))) ||
      (status = layout(plan.y, p.y, dataType(p.aType))) ||
      (status = layout(plan.d, p.d, dataType(p.cType))))
    return status;
  Preference preference = nullptr;
  if ((s = api.cublasLtMatmulPreferenceCreate(&preference)) != kSuccess)
    return pendCublas(api, s, "cublasLtMatmulPreferenceCreate");
  uint64_t workspace = kWorkspaceBytes;
  uint32_t alignX = p.x.alignment, alignY = p.y.alignment,
           alignD = p.d.alignment;
  // The first p.algo + 1 algorithms, best first; the tuned index (or the
  // last offered) runs.
  std::vector<HeuristicResult> results(p.algo + 1);
  int returned = 0;
  if ((s = api.cublasLtMatmulPreferenceSetAttribute(
           preference, kPrefMaxWorkspace, &workspace, sizeof(workspace))) ==
          kSuccess &&
      (s = api.cublasLtMatmulPreferenceSetAttribute(
           preference, kPrefAlignA, &alignX, sizeof(alignX))) == kSuccess &&
      (s = api.cublasLtMatmulPreferenceSetAttribute(
           preference, kPrefAlignB, &alignY, sizeof(alignY))) == kSuccess &&
      (s = api.cublasLtMatmulPreferenceSetAttribute(
           preference, kPrefAlignC, &alignD, sizeof(alignD))) == kSuccess &&
      (s = api.cublasLtMatmulPreferenceSetAttribute(
           preference, kPrefAlignD, &alignD, sizeof(alignD))) == kSuccess)
    s = api.cublasLtMatmulAlgoGetHeuristic(
        state.handle, plan.desc, plan.x, plan.y, plan.d, plan.d, preference,
        static_cast<int>(results.size()), results.data(), &returned);
  api.cublasLtMatmulPreferenceDestroy(preference);
  // No algorithm for this problem: the kernel of the compiled code runs.
  if (s == 15 /* CUBLAS_STATUS_NOT_SUPPORTED */ || returned == 0)
    return KINA_STATUS_SUCCESS;
  if (s != kSuccess)
    return pendCublas(api, s, "cublasLtMatmulAlgoGetHeuristic");
  const HeuristicResult &result = results[std::min<int>(p.algo, returned - 1)];
  plan.algo = result.algo;
  plan.workspace = result.workspaceSize;
  plan.found = true;
  return KINA_STATUS_SUCCESS;
}

int32_t run(void *opaque, const cuda::DriverApi &driver, CUstream stream,
            int32_t device) {
  auto &request = *static_cast<Request *>(opaque);
  Problem &p = *request.problem;
  auto &states = threadStates();
  if (states.size() <= static_cast<size_t>(device))
    states.resize(device + 1);
  if (!states[device]) {
    auto state = std::make_unique<DeviceState>();
    state->library = request.library;
    state->driver = &driver;
    // onThreadStream made the device's primary context current.
    if (driver.cuCtxGetCurrent(&state->context) != CUDA_SUCCESS)
      state->context = nullptr;
    Status s = request.library->api.cublasLtCreate(&state->handle);
    if (s != kSuccess)
      return pendCublas(request.library->api, s, "cublasLtCreate");
    CUresult r = driver.cuMemAlloc(&state->workspace, kWorkspaceBytes);
    if (r != CUDA_SUCCESS)
      return gpu::pendCudaError(driver, r, kWhere,
                                "cuMemAlloc of the cuBLASLt workspace (" +
                                    std::to_string(kWorkspaceBytes) +
                                    " bytes) failed");
    states[device] = std::move(state);
  }
  DeviceState &state = *states[device];
  const Api &api = state.library->api;
  PlanKey key = keyOf(p);
  auto found = state.plans.find(key);
  if (found == state.plans.end()) {
    if (state.plans.size() >= kMaxPlans)
      state.plans.clear();
    auto plan = std::make_unique<Plan>();
    if (int32_t status = makePlan(state, p, *plan))
      return status;
    found = state.plans.emplace(key, std::move(plan)).first;
  }
  Plan &plan = *found->second;
  if (!plan.found) {
    request.unsupported = true;
    return KINA_STATUS_SUCCESS;
  }
  if (p.bias) {
    Status s = api.cublasLtMatmulDescSetAttribute(plan.desc, kDescBiasPointer,
                                                  &p.bias, sizeof(p.bias));
    if (s != kSuccess)
      return pendCublas(api, s, "cublasLtMatmulDescSetAttribute");
  }
  bool addC = p.accumulate || p.residual;
  float alpha32 = static_cast<float>(p.alpha), beta32 = addC ? 1.0f : 0.0f;
  double alpha64 = p.alpha, beta64 = addC ? 1.0 : 0.0;
  bool f64 = p.aType == KINA_GPU_MATMUL_F64;
  const void *alpha = f64 ? static_cast<const void *>(&alpha64) : &alpha32;
  const void *beta = f64 ? static_cast<const void *>(&beta64) : &beta32;
  int64_t ae = elementSize(p.aType), ce = elementSize(p.cType);
  // The outer batch dims, looped row-major.
  std::vector<int64_t> index(p.outerSizes.size(), 0);
  for (;;) {
    int64_t offA = 0, offB = 0, offC = 0;
    for (size_t i = 0; i < index.size(); ++i) {
      offA += index[i] * p.outerStrides[i][0];
      offB += index[i] * p.outerStrides[i][1];
      offC += index[i] * p.outerStrides[i][2];
    }
    char *c = p.c + offC * ce;
    const char *cIn = p.residual ? p.residual + offC * ce : c;
    Status s = api.cublasLtMatmul(
        state.handle, plan.desc, alpha, p.b + offB * ae, plan.x,
        p.a + offA * ae, plan.y, beta, cIn, plan.d, c, plan.d, &plan.algo,
        reinterpret_cast<void *>(static_cast<uintptr_t>(state.workspace)),
        kWorkspaceBytes, stream);
    if (s != kSuccess)
      return pendCublas(api, s, "cublasLtMatmul");
    size_t i = index.size();
    while (i > 0 && ++index[i - 1] == p.outerSizes[i - 1])
      index[--i] = 0;
    if (i == 0)
      break;
  }
  return KINA_STATUS_SUCCESS;
}

/// Adds kina_rt_gpu_matmul_epilogue's epilogue to the normalised `p`;
/// false when cuBLASLt cannot apply it as asked (the caller's unfused code
/// then runs): C not f32, an accumulating product, unknown bits, relu and
/// gelu together, a pointer missing for its bit, a bias without unit stride
/// (along n > 1), a residual whose strides differ from C's.
bool applyEpilogue(const int64_t *dims, int32_t batchRank, int32_t epilogue,
                   double alpha, const void *bias, const void *residual,
                   Problem &p) {
  constexpr int32_t all = KINA_GPU_EPILOGUE_BIAS | KINA_GPU_EPILOGUE_RELU |
                          KINA_GPU_EPILOGUE_GELU_TANH |
                          KINA_GPU_EPILOGUE_RESIDUAL;
  bool wantBias = epilogue & KINA_GPU_EPILOGUE_BIAS;
  bool wantResidual = epilogue & KINA_GPU_EPILOGUE_RESIDUAL;
  if (p.cType != KINA_GPU_MATMUL_F32 || p.accumulate || (epilogue & ~all) ||
      ((epilogue & KINA_GPU_EPILOGUE_RELU) &&
       (epilogue & KINA_GPU_EPILOGUE_GELU_TANH)) ||
      wantBias != (bias != nullptr) || wantResidual != (residual != nullptr))
    return false;
  int64_t n = dims[1];
  // After m, n, k, the batch sizes and A's, B's and C's strides.
  const int64_t *cStrides = dims + 3 + batchRank + 2 * (batchRank + 2);
  const int64_t *extra = cStrides + batchRank + 2;
  if (wantBias) {
    if (n > 1 && *extra != 1)
      return false;
    ++extra;
    p.bias = static_cast<const char *>(bias);
    p.biasAlignment = alignmentOf(reinterpret_cast<uintptr_t>(bias));
  }
  if (wantResidual) {
    for (int32_t i = 0; i < batchRank + 2; ++i)
      if (extra[i] != cStrides[i])
        return false;
    p.residual = static_cast<const char *>(residual);
    p.d.alignment = std::min(
        p.d.alignment, alignmentOf(reinterpret_cast<uintptr_t>(residual)));
  }
  p.epilogue = epilogue;
  p.alpha = alpha;
  return true;
}

} // namespace

std::string describeProblem(int32_t types, int32_t flags, int32_t batchRank,
                            const int64_t *dims) {
  Problem p;
  static const char base[256] alignas(256) = {};
  if (!normalise(types, flags, batchRank, dims, base, base,
                 const_cast<char *>(base), p))
    return "unsupported";
  auto text = [](const Operand &o) {
    return std::string(o.op == kOpN ? "N " : "T ") + std::to_string(o.rows) +
           "x" + std::to_string(o.cols) + " ld " + std::to_string(o.ld);
  };
  std::string out =
      "D[" + text(p.d) + "] = X[" + text(p.x) + "] * Y[" + text(p.y) + "]";
  if (p.batch > 1)
    out += " batch " + std::to_string(p.batch) + " strides " +
           std::to_string(p.x.batchStride) + "/" +
           std::to_string(p.y.batchStride) + "/" +
           std::to_string(p.d.batchStride);
  if (!p.outerSizes.empty()) {
    out += " outer [";
    for (size_t i = 0; i < p.outerSizes.size(); ++i)
      out += (i ? ", " : "") + std::to_string(p.outerSizes[i]);
    out += "]";
  }
  return out;
}

} // namespace kina::rt::cublaslt

namespace {

/// Queues `problem` (built by normalise) through cuBLASLt: what both entry
/// points return (1 taken or failed with a pending error, 0 not taken).
int32_t submit(kina::rt::cublaslt::Problem &problem) {
  using namespace kina::rt::cublaslt;
  int32_t handled = 1;
  int32_t guarded = kina::rt::guardStatus(kWhere, [&] {
    const Library *library = nullptr;
    int32_t status = loadLibrary(kWhere, library);
    if (status != KINA_STATUS_SUCCESS)
      return kina::rt::gpu::pendError(status, kina_last_error());
    Request request{library, &problem};
    status = kina::rt::gpu::onThreadStream(kWhere, run, &request);
    if (status == KINA_STATUS_SUCCESS && request.unsupported)
      handled = 0;
    return status;
  });
  if (guarded != KINA_STATUS_SUCCESS) // An exception: pending as well.
    kina::rt::gpu::pendError(guarded, kina_last_error());
  return handled;
}

} // namespace

extern "C" int32_t kina_rt_gpu_matmul(int32_t types, int32_t flags,
                                      int32_t batchRank, const int64_t *dims,
                                      const void *a, const void *b, void *c) {
  kina::rt::cublaslt::Problem problem;
  if (!dims || !kina::rt::cublaslt::normalise(types, flags, batchRank, dims, a,
                                              b, c, problem))
    return 0;
  return submit(problem);
}

extern "C" int32_t
kina_rt_gpu_matmul_epilogue(int32_t types, int32_t flags, int32_t batchRank,
                            const int64_t *dims, const void *a, const void *b,
                            void *c, int32_t epilogue, double alpha,
                            const void *bias, const void *residual) {
  using namespace kina::rt::cublaslt;
  Problem problem;
  if (!dims || !normalise(types, flags, batchRank, dims, a, b, c, problem) ||
      !applyEpilogue(dims, batchRank, epilogue, alpha, bias, residual, problem))
    return 0;
  return submit(problem);
}
