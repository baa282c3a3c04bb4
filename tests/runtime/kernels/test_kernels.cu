// test_kernels.cu - Kernels for the runtime's kernel-launch tests.
//
// Compiled at build time by the CUDA Toolkit's nvcc (tests only: the runtime
// and kinac never need it) into a fatbin (sm_90 code + compute_90 PTX) and
// into plain PTX, both embedded in runtime_tests by TestKernels.cpp.
// GpuLaunchTest.cpp registers them with mgpuModuleLoad / mgpuModuleLoadJIT
// and launches them with mgpuLaunchKernel, passing arguments as MLIR's
// gpu-to-llvm lowering does (an array of argument addresses).

// y[i] = a * x[i] + y[i] for i < n.
extern "C" __global__ void kina_test_saxpy(float a, const float *x, float *y,
                                           int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i] + y[i];
}

// Each block reverses its chunk of `chunk` floats of `in` into `out` through
// dynamic shared memory of chunk * 4 bytes (more than 48 KiB in the tests,
// so the launch needs cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)).
extern "C" __global__ void kina_test_reverse(const float *in, float *out,
                                             int chunk) {
  extern __shared__ float buffer[];
  const float *from = in + static_cast<long long>(blockIdx.x) * chunk;
  float *to = out + static_cast<long long>(blockIdx.x) * chunk;
  for (int i = threadIdx.x; i < chunk; i += blockDim.x)
    buffer[i] = from[i];
  __syncthreads();
  for (int i = threadIdx.x; i < chunk; i += blockDim.x)
    to[i] = buffer[chunk - 1 - i];
}
