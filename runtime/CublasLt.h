//===- CublasLt.h - cuBLASLt, loaded at run time, for GPU matmuls ---------===//
//
// Internal to libkina_runtime.a (and its tests). The cuda target routes
// floating-point matmuls to NVIDIA's cuBLASLt (tensor cores for f16, bf16
// and, with --allow-tf32, TF32), called by the compiled host code through
// kina_rt_gpu_matmul (kina/runtime.h) on the call's stream. As with the
// driver (CudaDriver.h), nothing is linked: the library is dlopen()ed on the
// first matmul of a process ($KINA_CUBLASLT when set and non-empty, else
// libcublasLt.so.13 by the loader's search and then under $CUDA_PATH/lib64
// and /usr/local/cuda/lib64) and the entry points it needs are dlsym()ed
// into one table. The declarations below are the subset of cublasLt.h the
// runtime uses (ABI-identical; CublasLt.cpp checks them against cublasLt.h
// when the build has it).
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUNTIME_CUBLASLT_H
#define KINA_RUNTIME_CUBLASLT_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace kina::rt::cublaslt {

using Status = int;                      ///< cublasStatus_t
using Handle = struct cublasLtContext *; ///< cublasLtHandle_t
using MatmulDesc = struct cublasLtMatmulDescOpaque *;
using MatrixLayout = struct cublasLtMatrixLayoutOpaque *;
using Preference = struct cublasLtMatmulPreferenceOpaque *;

/// cublasLtMatmulAlgo_t and cublasLtMatmulHeuristicResult_t.
struct MatmulAlgo {
  uint64_t data[8];
};
struct HeuristicResult {
  MatmulAlgo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

// Enumerators (cublas_api.h, library_types.h, cublasLt.h).
constexpr Status kSuccess = 0;
constexpr int kOpN = 0, kOpT = 1;
constexpr int kComputeF32 = 68, kComputeF32FastTf32 = 77, kComputeF64 = 70;
constexpr int kR32F = 0, kR64F = 1, kR16F = 2, kR16BF = 14;
constexpr int kDescTransA = 3, kDescTransB = 4;
constexpr int kLayoutBatchCount = 5, kLayoutBatchStride = 6;
constexpr int kDescEpilogue = 7, kDescBiasPointer = 8;
constexpr uint32_t kEpilogueDefault = 1, kEpilogueRelu = 2, kEpilogueBias = 4,
                   kEpilogueGelu = 32;
constexpr int kPrefMaxWorkspace = 1, kPrefAlignA = 5, kPrefAlignB = 6,
              kPrefAlignC = 7, kPrefAlignD = 8;

/// The entry points the runtime uses: X(member, symbol, type).
#define KINA_CUBLASLT_API(X)                                                   \
  X(cublasLtCreate, "cublasLtCreate", Status(Handle *))                        \
  X(cublasLtDestroy, "cublasLtDestroy", Status(Handle))                        \
  X(cublasLtGetVersion, "cublasLtGetVersion", size_t())                        \
  X(cublasLtGetStatusName, "cublasLtGetStatusName", const char *(Status))      \
  X(cublasLtGetStatusString, "cublasLtGetStatusString", const char *(Status))  \
  X(cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate",                      \
    Status(MatmulDesc *, int, int))                                            \
  X(cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy",                    \
    Status(MatmulDesc))                                                        \
  X(cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute",          \
    Status(MatmulDesc, int, const void *, size_t))                             \
  X(cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate",                  \
    Status(MatrixLayout *, int, uint64_t, uint64_t, int64_t))                  \
  X(cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy",                \
    Status(MatrixLayout))                                                      \
  X(cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute",      \
    Status(MatrixLayout, int, const void *, size_t))                           \
  X(cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate",          \
    Status(Preference *))                                                      \
  X(cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy",        \
    Status(Preference))                                                        \
  X(cublasLtMatmulPreferenceSetAttribute,                                      \
    "cublasLtMatmulPreferenceSetAttribute",                                    \
    Status(Preference, int, const void *, size_t))                             \
  X(cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic",          \
    Status(Handle, MatmulDesc, MatrixLayout, MatrixLayout, MatrixLayout,       \
           MatrixLayout, Preference, int, HeuristicResult *, int *))           \
  X(cublasLtMatmul, "cublasLtMatmul",                                          \
    Status(Handle, MatmulDesc, const void *, const void *, MatrixLayout,       \
           const void *, MatrixLayout, const void *, const void *,             \
           MatrixLayout, void *, MatrixLayout, const MatmulAlgo *, void *,     \
           size_t, void *))

/// One pointer per entry of KINA_CUBLASLT_API, all non-null once loaded.
struct Api {
#define KINA_CUBLASLT_MEMBER(member, symbol, type)                             \
  std::add_pointer_t<type> member = nullptr;
  KINA_CUBLASLT_API(KINA_CUBLASLT_MEMBER)
#undef KINA_CUBLASLT_MEMBER
};

/// A loaded cuBLASLt: its table, version (cublasLtGetVersion, e.g. 130000)
/// and the path it was loaded from.
struct Library {
  Api api;
  size_t version = 0;
  std::string path;
};

/// Loads cuBLASLt on the process's first call (thread-safe, once; the
/// outcome is kept). Returns 0 and sets `library`, or records status 3 with
/// "<where>: cuBLASLt not found (<each path tried>: <dlerror>); the cuda
/// target's f16/bf16/f32/f64 matmuls need libcublasLt.so.13 of the CUDA
/// Toolkit (set KINA_CUBLASLT to its path)" or "... lacks <symbol>" as the
/// thread's last error and returns 3. Never throws.
int32_t loadLibrary(const char *where, const Library *&library) noexcept;

/// Loads cuBLASLt from exactly `path` into `library` (not cached; for the
/// tests). Returns 0, or 3 with the reason in `error`.
int32_t loadLibraryFrom(const std::string &path, Library &library,
                        std::string &error) noexcept;

/// "<name> (<text>)" of a cuBLASLt status, through the library when it is
/// loaded (`api` may be null).
std::string describeStatus(const Api *api, Status status) noexcept;

/// How kina_rt_gpu_matmul would hand this product (its arguments, without
/// the pointers, which are taken as 256-byte aligned) to cuBLASLt, for the
/// tests: "unsupported", or "D[n x m ld L] = X(op rows x cols ld L) *
/// Y(...)" with "batch B strides X/Y/D" and "outer [sizes]" when batched.
std::string describeProblem(int32_t types, int32_t flags, int32_t batchRank,
                            const int64_t *dims);

} // namespace kina::rt::cublaslt

#endif // KINA_RUNTIME_CUBLASLT_H
