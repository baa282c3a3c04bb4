//===- CublasLtTest.cpp - The cuBLASLt loader and kina_rt_gpu_matmul ------===//
//
// Tests of runtime/CublasLt.* (the cuda target's matmul route, docs/cuda.md).
// Everywhere: the loader finds libcublasLt.so.13 where the CUDA Toolkit is
// installed (else skips, saying so) and names the path it tried when it is
// missing (also through $KINA_CUBLASLT, in a child process, with status 3);
// the normalisation of row-major strided, transposed and batched products
// into cuBLASLt's column-major layouts (describeProblem); and, without a
// driver, kina_rt_gpu_matmul takes the product and reports status 3 as a
// pending error (in a child process without a driver). On a GPU (suite
// GpuLaunchMatmul, run by gpu-check.sh):
// f32, f64 and bf16 products, transposed operands, broadcast and merged
// batches and accumulation, checked element by element against a double
// reference on the host.
//
//===----------------------------------------------------------------------===//
#include "CublasLt.h"
#include "GpuLaunch.h"
#include "GpuMemory.h"
#include "Registry.h"

#include "kina/runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using kina::rt::cublaslt::describeProblem;

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

const char *toolkitLibrary() {
  static const std::string path = [] {
    const char *cuda = std::getenv("CUDA_PATH");
    std::string root = cuda && *cuda ? cuda : "/usr/local/cuda";
    return root + "/lib64/libcublasLt.so.13";
  }();
  return path.c_str();
}

TEST(CublasLtLoader, LoadsTheToolkitsLibrary) {
  if (access(toolkitLibrary(), R_OK) != 0)
    GTEST_SKIP() << "no " << toolkitLibrary() << " (no CUDA Toolkit here)";
  kina::rt::cublaslt::Library library;
  std::string error;
  ASSERT_EQ(
      kina::rt::cublaslt::loadLibraryFrom(toolkitLibrary(), library, error), 0)
      << error;
  EXPECT_GE(library.version, 110000u);
  EXPECT_NE(library.api.cublasLtMatmul, nullptr);
  EXPECT_EQ(kina::rt::cublaslt::describeStatus(&library.api, 15),
            "CUBLAS_STATUS_NOT_SUPPORTED (the requested functionality is not "
            "supported)");
}

TEST(CublasLtLoader, MissingLibraryNamesThePath) {
  kina::rt::cublaslt::Library library;
  std::string error;
  EXPECT_EQ(kina::rt::cublaslt::loadLibraryFrom("/nonexistent/libcublasLt.so",
                                                library, error),
            3);
  EXPECT_TRUE(contains(error, "/nonexistent/libcublasLt.so: ")) << error;
  // A library without cuBLASLt's symbols: named with the first one missing.
  EXPECT_EQ(kina::rt::cublaslt::loadLibraryFrom("libc.so.6", library, error),
            3);
  EXPECT_EQ(error, "libc.so.6 lacks cublasLtCreate");
}

TEST(CublasLtLoader, KinaCublasLtMissingIsStatus3) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KINA_CUBLASLT", "/nonexistent/libcublasLt.so.13", 1);
        const kina::rt::cublaslt::Library *library = nullptr;
        int32_t status = kina::rt::cublaslt::loadLibrary("test", library);
        std::fprintf(stderr, "%d %s\n", status, kina_last_error());
        std::exit(status);
      },
      testing::ExitedWithCode(3),
      "3 test: cuBLASLt not found \\(/nonexistent/libcublasLt.so.13: .*\\); "
      "the cuda target's float matmuls need libcublasLt.so.13 of the CUDA "
      "Toolkit \\(set KINA_CUBLASLT to its path\\)");
}

/// dims of a 2-D row-major product A[m, k] B[k, n] = C[m, n].
std::vector<int64_t> plainDims(int64_t m, int64_t n, int64_t k) {
  return {m, n, k, k, 1, n, 1, n, 1};
}

TEST(CublasLtProblem, RowMajorIsTheTransposedColumnMajorProduct) {
  int32_t f32 = KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F32 << 8;
  auto dims = plainDims(4, 3, 8);
  EXPECT_EQ(describeProblem(f32, 0, 0, dims.data()),
            "D[N 3x4 ld 3] = X[N 3x8 ld 3] * Y[N 8x4 ld 8]");
  // B given transposed (B[k, n] at n * k + k: a [n, k] row-major buffer).
  std::vector<int64_t> bt = {4, 3, 8, 8, 1, 1, 8, 3, 1};
  EXPECT_EQ(describeProblem(f32, 0, 0, bt.data()),
            "D[N 3x4 ld 3] = X[T 8x3 ld 8] * Y[N 8x4 ld 8]");
  // A matrix-vector product: n = 1, B's n stride 0, C rank 1.
  std::vector<int64_t> mv = {4, 1, 8, 8, 1, 1, 0, 1, 0};
  EXPECT_EQ(describeProblem(f32, 0, 0, mv.data()),
            "D[N 1x4 ld 1] = X[N 1x8 ld 1] * Y[N 8x4 ld 8]");
  // No unit stride in A: the kernel of the compiled code must run.
  std::vector<int64_t> strided = {4, 3, 8, 16, 2, 3, 1, 3, 1};
  EXPECT_EQ(describeProblem(f32, 0, 0, strided.data()), "unsupported");
  // Integers and mixed types are not cuBLASLt's here.
  EXPECT_EQ(describeProblem(7 | 7 << 8, 0, 0, dims.data()), "unsupported");
  EXPECT_EQ(describeProblem(KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F16 << 8, 0,
                            0, dims.data()),
            "unsupported");
  EXPECT_NE(describeProblem(KINA_GPU_MATMUL_BF16 | KINA_GPU_MATMUL_F32 << 8, 0,
                            0, dims.data()),
            "unsupported");
}

TEST(CublasLtProblem, BatchesMergeBroadcastAndFold) {
  int32_t f32 = KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F32 << 8;
  // [8, 1024, 768] x [768, 2304]: B broadcast over a batch that continues
  // A's and C's rows: one product of 8192 rows.
  std::vector<int64_t> fold = {1024,        2304, 768, 8,
                               1024 * 768,  768,  1, // A
                               0,           2304, 1, // B
                               1024 * 2304, 2304, 1};
  EXPECT_EQ(describeProblem(f32, 0, 1, fold.data()),
            "D[N 2304x8192 ld 2304] = X[N 2304x768 ld 2304] * Y[N 768x8192 "
            "ld 768]");
  // [2, 12, 64, 32] x [2, 12, 32, 64]: two batch dims merge into 24.
  std::vector<int64_t> merge = {64,    64,   32, 2, 12, // m n k, batch sizes
                                24576, 2048, 32, 1,     // A
                                24576, 2048, 64, 1,     // B
                                49152, 4096, 64, 1};    // C
  EXPECT_EQ(describeProblem(f32, 0, 2, merge.data()),
            "D[N 64x64 ld 64] = X[N 64x32 ld 64] * Y[N 32x64 ld 32] batch 24 "
            "strides 2048/2048/4096");
  // [3, 5, 4, 8] x [5, 8, 2]: A's batch dims do not merge with B's
  // broadcast one; the inner dim is cuBLASLt's batch, the outer a loop.
  std::vector<int64_t> outer = {4,   2,  8, 3, 5, // m n k, batch sizes
                                160, 32, 8, 1,    // A
                                0,   16, 2, 1,    // B
                                40,  8,  2, 1};   // C
  EXPECT_EQ(describeProblem(f32, 0, 2, outer.data()),
            "D[N 2x4 ld 2] = X[N 2x8 ld 2] * Y[N 8x4 ld 8] batch 5 strides "
            "16/32/8 outer [3]");
}

TEST(CublasLtNoDriver, WithoutADriverTheProductFailsWithStatus3) {
  // A child process with a driver path that does not exist (as the
  // GpuNoDriver tests), so this runs on every machine.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("KINA_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
        auto dims = plainDims(4, 3, 8);
        float a[32] = {};
        float b[24] = {};
        float c[12] = {};
        int32_t handled =
            kina_rt_gpu_matmul(KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F32 << 8,
                               0, 0, dims.data(), a, b, c);
        std::fprintf(stderr, "%d %s\n", handled, kina_last_error());
        std::exit(handled == 1 ? 3 : 1);
      },
      testing::ExitedWithCode(3),
      "1 kina_rt_gpu_matmul: .*(CUDA driver not found \\(/nonexistent/"
      "libcuda.so.1|cuBLASLt not found)");
}

// --- On a GPU
// -----------------------------------------------------------------

/// A managed buffer from the runtime's allocator (freed by the destructor).
struct Managed {
  KinaMemRef1 ranked{};
  explicit Managed(int64_t bytes) {
    ranked.sizes[0] = bytes;
    KinaUnrankedMemRef unranked{1, &ranked};
    EXPECT_EQ(_mlir_ciface_runtime_gpu_alloc_unranked(&unranked, 1), 0)
        << kina_last_error();
  }
  ~Managed() {
    if (ranked.allocated)
      runtime_free(ranked.allocated);
  }
  template <typename T> T *as() const {
    return static_cast<T *>(ranked.aligned);
  }
};

uint16_t toBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits += 0x7fff + ((bits >> 16) & 1); // Round to nearest even.
  return static_cast<uint16_t>(bits >> 16);
}

float fromBf16(uint16_t h) {
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

class GpuLaunchMatmul : public testing::Test {
protected:
  void SetUp() override {
    const kina::rt::cuda::Driver *driver = nullptr;
    if (kina::rt::cuda::loadDriver("test", driver) != 0)
      GTEST_SKIP() << "no usable CUDA GPU: " << kina_last_error();
  }

  /// Runs one product as a compiled entry would (enter, matmul, exit) and
  /// returns the exit status; `handled` gets the call's result.
  int32_t run(int32_t types, int32_t flags, int32_t batchRank,
              const std::vector<int64_t> &dims, const void *a, const void *b,
              void *c, int32_t &handled) {
    kina_rt_begin_call();
    int32_t status = kina_rt_gpu_enter();
    if (status)
      return status;
    handled = kina_rt_gpu_matmul(types, flags, batchRank, dims.data(), a, b, c);
    return kina_rt_gpu_exit();
  }
};

/// Element (batch, i, j) offset: sum of index * stride.
struct View {
  std::vector<int64_t> batchStrides;
  int64_t rowStride, colStride;
  int64_t at(const std::vector<int64_t> &index, int64_t i, int64_t j) const {
    int64_t offset = i * rowStride + j * colStride;
    for (size_t d = 0; d < index.size(); ++d)
      offset += index[d] * batchStrides[d];
    return offset;
  }
};

/// Checks C against the double reference of A B (+ C0) over every batch
/// index; returns the number of elements off by more than `tolerance`
/// relative to the row's magnitude.
template <typename LoadA, typename LoadB, typename LoadC>
int64_t countWrong(const std::vector<int64_t> &batch, int64_t m, int64_t n,
                   int64_t k, const View &va, const View &vb, const View &vc,
                   LoadA loadA, LoadB loadB, LoadC loadC,
                   const std::vector<double> &c0, double tolerance) {
  int64_t wrong = 0, total = 1;
  for (int64_t s : batch)
    total *= s;
  std::vector<int64_t> index(batch.size(), 0);
  for (int64_t t = 0; t < total; ++t) {
    int64_t rest = t;
    for (size_t d = batch.size(); d-- > 0;) {
      index[d] = rest % batch[d];
      rest /= batch[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = c0.empty() ? 0.0 : c0[vc.at(index, i, j)], mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = loadA(va.at(index, i, p)), y = loadB(vb.at(index, p, j));
          sum += x * y;
          mag += std::fabs(x * y);
        }
        double got = loadC(vc.at(index, i, j));
        if (!(std::fabs(got - sum) <= tolerance * (mag + 1e-30)))
          ++wrong;
      }
  }
  return wrong;
}

TEST_F(GpuLaunchMatmul, F32RowMajorTransposedAndAccumulate) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const int64_t m = 37, n = 29, k = 53;
  Managed a(m * k * 4), b(k * n * 4), c(m * n * 4);
  for (int64_t i = 0; i < m * k; ++i)
    a.as<float>()[i] = normal(rng);
  for (int64_t i = 0; i < k * n; ++i)
    b.as<float>()[i] = normal(rng);
  auto loadA = [&](int64_t o) { return double(a.as<float>()[o]); };
  auto loadB = [&](int64_t o) { return double(b.as<float>()[o]); };
  auto loadC = [&](int64_t o) { return double(c.as<float>()[o]); };
  int32_t f32 = KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F32 << 8, handled = 0;
  std::fill(c.as<float>(), c.as<float>() + m * n, NAN); // Poison.
  ASSERT_EQ(run(f32, 0, 0, plainDims(m, n, k), a.as<float>(), b.as<float>(),
                c.as<float>(), handled),
            0)
      << kina_last_error();
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(countWrong({}, m, n, k, {{}, k, 1}, {{}, n, 1}, {{}, n, 1}, loadA,
                       loadB, loadC, {}, 1e-5),
            0);
  // B read transposed (strides 1, k: B[p, j] at j * k + p), C += A B.
  std::vector<double> c0(c.as<float>(), c.as<float>() + m * n);
  std::vector<int64_t> dims = {m, n, k, k, 1, 1, k, n, 1};
  ASSERT_EQ(run(f32, KINA_GPU_MATMUL_ACCUMULATE, 0, dims, a.as<float>(),
                b.as<float>(), c.as<float>(), handled),
            0)
      << kina_last_error();
  EXPECT_EQ(handled, 1);
  EXPECT_EQ(countWrong({}, m, n, k, {{}, k, 1}, {{}, 1, k}, {{}, n, 1}, loadA,
                       loadB, loadC, c0, 1e-5),
            0);
  // C without unit stride along n: not taken, C untouched.
  std::vector<int64_t> columnC = {m, n, k, k, 1, n, 1, 1, m};
  std::vector<float> before(c.as<float>(), c.as<float>() + m * n);
  ASSERT_EQ(run(f32, 0, 0, columnC, a.as<float>(), b.as<float>(), c.as<float>(),
                handled),
            0);
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(std::memcmp(before.data(), c.as<float>(), m * n * 4), 0);
}

TEST_F(GpuLaunchMatmul, BatchedBroadcastF64AndBf16) {
  std::mt19937 rng(11);
  std::normal_distribution<double> normal;
  // [3, 5, 4, 8] x [5, 8, 6] f64: an outer loop and a strided batch.
  const int64_t m = 4, n = 6, k = 8;
  Managed a(3 * 5 * m * k * 8), b(5 * k * n * 8), c(3 * 5 * m * n * 8);
  for (int64_t i = 0; i < 3 * 5 * m * k; ++i)
    a.as<double>()[i] = normal(rng);
  for (int64_t i = 0; i < 5 * k * n; ++i)
    b.as<double>()[i] = normal(rng);
  std::vector<int64_t> dims = {m,         n,     k, 3, 5, //
                               5 * m * k, m * k, k, 1,    // A
                               0,         k * n, n, 1,    // B
                               5 * m * n, m * n, n, 1};   // C
  int32_t handled = 0;
  ASSERT_EQ(run(KINA_GPU_MATMUL_F64 | KINA_GPU_MATMUL_F64 << 8, 0, 2, dims,
                a.as<double>(), b.as<double>(), c.as<double>(), handled),
            0)
      << kina_last_error();
  EXPECT_EQ(handled, 1);
  auto loadA = [&](int64_t o) { return a.as<double>()[o]; };
  auto loadB = [&](int64_t o) { return b.as<double>()[o]; };
  auto loadC = [&](int64_t o) { return c.as<double>()[o]; };
  EXPECT_EQ(countWrong({3, 5}, m, n, k, {{5 * m * k, m * k}, k, 1},
                       {{0, k * n}, n, 1}, {{5 * m * n, m * n}, n, 1}, loadA,
                       loadB, loadC, {}, 1e-12),
            0);

  // bf16 x bf16 -> bf16, 8 x [64, 96] x [96, 80] with B broadcast: folded.
  const int64_t bm = 64, bn = 80, bk = 96, batch = 8;
  Managed ha(batch * bm * bk * 2), hb(bk * bn * 2), hc(batch * bm * bn * 2);
  for (int64_t i = 0; i < batch * bm * bk; ++i)
    ha.as<uint16_t>()[i] = toBf16(static_cast<float>(normal(rng)));
  for (int64_t i = 0; i < bk * bn; ++i)
    hb.as<uint16_t>()[i] = toBf16(static_cast<float>(normal(rng)));
  std::vector<int64_t> bdims = {bm, bn, bk, batch,   bm * bk, bk, 1,
                                0,  bn, 1,  bm * bn, bn,      1};
  ASSERT_EQ(run(KINA_GPU_MATMUL_BF16 | KINA_GPU_MATMUL_BF16 << 8, 0, 1, bdims,
                ha.as<uint16_t>(), hb.as<uint16_t>(), hc.as<uint16_t>(),
                handled),
            0)
      << kina_last_error();
  EXPECT_EQ(handled, 1);
  auto loadHA = [&](int64_t o) {
    return double(fromBf16(ha.as<uint16_t>()[o]));
  };
  auto loadHB = [&](int64_t o) {
    return double(fromBf16(hb.as<uint16_t>()[o]));
  };
  auto loadHC = [&](int64_t o) {
    return double(fromBf16(hc.as<uint16_t>()[o]));
  };
  // f32 accumulation, one rounding to bf16: within 2^-8 of the magnitude.
  EXPECT_EQ(countWrong({batch}, bm, bn, bk, {{bm * bk}, bk, 1}, {{0}, bn, 1},
                       {{bm * bn}, bn, 1}, loadHA, loadHB, loadHC, {},
                       1.0 / 128),
            0);
}

} // namespace

// kina_rt_gpu_matmul_epilogue (docs/cuda.md, "Matmul epilogues"): each
// epilogue against a double reference of act(alpha A B + residual + bias);
// relu keeps a NaN row NaN (as Kina's maximumf); a bias stride other than 1
// and a residual laid out unlike C are declined (0, C untouched).
TEST_F(GpuLaunchMatmul, EpiloguesBiasReluGeluResidual) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal;
  const int64_t m = 19, n = 24, k = 33;
  Managed a(m * k * 4), b(k * n * 4), c(m * n * 4), bias(n * 4),
      residual(m * n * 4);
  for (int64_t i = 0; i < m * k; ++i)
    a.as<float>()[i] = normal(rng);
  a.as<float>()[2 * k + 5] = NAN; // Row 2 of the product is NaN.
  for (int64_t i = 0; i < k * n; ++i)
    b.as<float>()[i] = normal(rng);
  for (int64_t i = 0; i < n; ++i)
    bias.as<float>()[i] = normal(rng);
  for (int64_t i = 0; i < m * n; ++i)
    residual.as<float>()[i] = normal(rng);
  int32_t f32 = KINA_GPU_MATMUL_F32 | KINA_GPU_MATMUL_F32 << 8;
  // m, n, k, A's, B's and C's strides, the bias's, the residual's.
  std::vector<int64_t> dims = {m, n, k, k, 1, n, 1, n, 1};
  auto call = [&](int32_t bits, double alpha, std::vector<int64_t> extra,
                  int32_t &handled) {
    std::vector<int64_t> all = dims;
    all.insert(all.end(), extra.begin(), extra.end());
    kina_rt_begin_call();
    int32_t status = kina_rt_gpu_enter();
    if (status)
      return status;
    handled = kina_rt_gpu_matmul_epilogue(
        f32, 0, 0, all.data(), a.as<float>(), b.as<float>(), c.as<float>(),
        bits, alpha, bits & KINA_GPU_EPILOGUE_BIAS ? bias.as<float>() : nullptr,
        bits & KINA_GPU_EPILOGUE_RESIDUAL ? residual.as<float>() : nullptr);
    return kina_rt_gpu_exit();
  };
  auto product = [&](int64_t i, int64_t j) {
    double sum = 0;
    for (int64_t p = 0; p < k; ++p)
      sum += double(a.as<float>()[i * k + p]) * b.as<float>()[p * n + j];
    return sum;
  };
  auto gelu = [](double x) {
    return 0.5 * x *
           (1 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
  };
  struct Form {
    int32_t bits;
    double alpha;
    std::vector<int64_t> extra;
  };
  for (const Form &form :
       {Form{KINA_GPU_EPILOGUE_BIAS | KINA_GPU_EPILOGUE_RELU, 1.0, {1}},
        Form{KINA_GPU_EPILOGUE_BIAS | KINA_GPU_EPILOGUE_GELU_TANH, 1.0, {1}},
        Form{KINA_GPU_EPILOGUE_RESIDUAL | KINA_GPU_EPILOGUE_BIAS,
             0.25,
             {1, n, 1}},
        Form{0, 0.3, {}}}) {
    SCOPED_TRACE(form.bits);
    std::fill(c.as<float>(), c.as<float>() + m * n, 12345.0f); // Poison.
    int32_t handled = 0;
    ASSERT_EQ(call(form.bits, form.alpha, form.extra, handled), 0)
        << kina_last_error();
    EXPECT_EQ(handled, 1);
    int64_t wrong = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double x = form.alpha * product(i, j);
        if (form.bits & KINA_GPU_EPILOGUE_RESIDUAL)
          x += residual.as<float>()[i * n + j];
        if (form.bits & KINA_GPU_EPILOGUE_BIAS)
          x += bias.as<float>()[j];
        if (form.bits & KINA_GPU_EPILOGUE_RELU)
          x = std::isnan(x) ? x : std::max(x, 0.0);
        if (form.bits & KINA_GPU_EPILOGUE_GELU_TANH)
          x = gelu(x);
        double got = c.as<float>()[i * n + j];
        if (std::isnan(x)
                ? !std::isnan(got)
                : !(std::fabs(got - x) <= 1e-5 * std::max(1.0, std::fabs(x))))
          ++wrong;
      }
    EXPECT_EQ(wrong, 0);
  }
  // Declined: a bias with stride 2; a residual with other strides.
  std::vector<float> before(c.as<float>(), c.as<float>() + m * n);
  int32_t handled = 1;
  ASSERT_EQ(call(KINA_GPU_EPILOGUE_BIAS, 1.0, {2}, handled), 0);
  EXPECT_EQ(handled, 0);
  ASSERT_EQ(call(KINA_GPU_EPILOGUE_RESIDUAL, 1.0, {1, m}, handled), 0);
  EXPECT_EQ(handled, 0);
  EXPECT_EQ(std::memcmp(before.data(), c.as<float>(), m * n * 4), 0);
}
