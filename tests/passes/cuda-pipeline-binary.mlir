// kina-cuda-pipeline (src/targets/cuda/CudaTarget.cpp), all four stages, on
// MLIRGen's output for
//   func @addrelu(%x: f32[N, 4], %y: f32[N, 4]) -> f32[N, 4]  (add, relu)
// gives the LLVM dialect: no gpu.module left but a gpu.binary (the fatbin
// ptxas wrote for gpu-arch, PTX 8.0 for sm_90 and sm_80), the kernel launched
// with gpu.launch_func from the internal implementation, allocations through
// the runtime's GPU allocator, and the status entry's kina_rt_gpu_* calls.
// The gpu-map stage alone: cuda-pipeline.mlir.
// REQUIRES: ptxas
// RUN: %kina-opt %s --kina-cuda-pipeline | FileCheck %s
// RUN: %kina-opt %s --kina-cuda-pipeline="gpu-arch=sm_80" | FileCheck %s --check-prefix=SM80

// CHECK-NOT: gpu.module
// CHECK-NOT: kina.param
// CHECK: llvm.func @_mlir_ciface_runtime_gpu_alloc_unranked(
// CHECK-LABEL: llvm.func internal @__kina_fn_addrelu(
// CHECK: llvm.call @_mlir_ciface_runtime_gpu_alloc_unranked(
// CHECK: gpu.launch_func  @addrelu_kernel::@addrelu_kernel
// CHECK: gpu.binary @addrelu_kernel  [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
// CHECK-LABEL: llvm.func @kina_addrelu(
// CHECK: llvm.call @kina_rt_gpu_enter()
// CHECK: llvm.call @kina_rt_gpu_check_argument(
// CHECK: llvm.call @__kina_fn_addrelu(
// CHECK: llvm.call @kina_rt_gpu_exit()
// CHECK-NOT: gpu.module

// SM80: gpu.binary @addrelu_kernel  [#gpu.object<#nvvm.target<chip = "sm_80", features = "+ptx80">

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
module @m {
  func.func @addrelu(%arg0: tensor<?x4xf32>, %arg1: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {kina.param_dims = [["N", "4"], ["N", "4"]], kina.param_names = ["x", "y"], kina.result_dims = [["N", "4"]], llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
    %0 = tensor.empty(%dim) : tensor<?x4xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<?x4xf32>, tensor<?x4xf32>) outs(%0 : tensor<?x4xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %4 = arith.addf %in, %in_0 : f32
      linalg.yield %4 : f32
    } -> tensor<?x4xf32>
    %2 = tensor.empty(%dim) : tensor<?x4xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<?x4xf32>) outs(%2 : tensor<?x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst = arith.constant 0.000000e+00 : f32
      %4 = arith.maximumf %in, %cst : f32
      linalg.yield %4 : f32
    } -> tensor<?x4xf32>
    return %3 : tensor<?x4xf32>
  }
}
