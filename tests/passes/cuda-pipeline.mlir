// kina-cuda-pipeline (src/targets/cuda/CudaTarget.cpp) on MLIRGen's output
// for
//   func @addrelu(%x: f32[N, 4], %y: f32[N, 4]) -> f32[N, 4]  (add, relu)
//   func @mm(%a: f32[?, 8], %b: f32[8, 3]) -> f32[?, 3]       (matmul)
//   func @rsum(%x: f32[?, 16]) -> f32[?]                      (reduce_sum)
// stopped after its gpu-map stage (stop-after=mlir-gpu, what
// `kinac --target=cuda --emit=mlir-gpu` prints): the bufferized host code
// launches one outlined kernel per op (the add and the relu fused at -O2,
// two at opt-level=0; each elementwise op a 16-byte vector kernel and its
// scalar fallback, chosen on the host; the fill and the row sum one
// block-per-row kernel), no linalg op stays on the host, each result
// comes from the runtime's allocation, and the status entry makes the
// kina_rt_gpu_* calls. The whole pipeline: cuda-pipeline-binary.mlir;
// check_pipeline_equivalence.py --target=cuda compares this stage with
// kinac's on whole modules. No ptxas is needed to stop here.
// RUN: %kina-opt %s --kina-cuda-pipeline="stop-after=mlir-gpu" | FileCheck %s
// RUN: %kina-opt %s --kina-cuda-pipeline="stop-after=mlir-gpu opt-level=0" | FileCheck %s --check-prefix=O0

// CHECK-LABEL: func.func @addrelu(
// CHECK-SAME: memref<?x4xf32>
// CHECK-NOT: linalg.
// CHECK: memref.alloc
// CHECK: memref.extract_aligned_pointer_as_index
// CHECK: scf.if
// CHECK: gpu.launch_func  @[[K:addrelu_kernel]]::@addrelu_kernel blocks in ({{.*}}) threads in (%c256
// CHECK: } else {
// CHECK: gpu.launch_func  @[[S:addrelu_kernel_0]]::@addrelu_kernel blocks in ({{.*}}) threads in (%c256
// CHECK-NOT: gpu.launch_func
// CHECK: return
// CHECK: gpu.module @[[K]] {
// CHECK: gpu.func @addrelu_kernel({{.*}}) kernel
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : memref<?x4xf32>, vector<4xf32>
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : memref<?x4xf32>, vector<4xf32>
// CHECK: gpu.return
// CHECK: gpu.module @[[S]] {
// CHECK: gpu.func @addrelu_kernel({{.*}}) kernel
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: gpu.return

// The fill of the [?, 3] result: 3 is no multiple of 4 lanes, scalar only.
// CHECK-LABEL: func.func @mm(
// CHECK-NOT: linalg.
// CHECK: gpu.launch_func  @mm_kernel::@mm_kernel
// CHECK: gpu.launch_func  @[[MM:mm_kernel_[0-9]+]]::@mm_kernel {{.*}} threads in (%c16{{.*}}, %c16
// CHECK: return
// CHECK: gpu.module @[[MM]] {
// CHECK: gpu.func @mm_kernel({{.*}}) workgroup({{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, {{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}) kernel
// CHECK: gpu.barrier

// The fill and the row sum: one block-per-row kernel (kina-gpu-map-rows),
// the vector kernel where x is 16-byte aligned, else its scalar twin.
// CHECK-LABEL: func.func @rsum(
// CHECK-NOT: linalg.
// CHECK: memref.extract_aligned_pointer_as_index %arg0
// CHECK: gpu.launch_func  @rsum_kernel::@rsum_kernel {{.*}} threads in (%c32
// CHECK: } else {
// CHECK: gpu.launch_func  @[[RSUM:rsum_kernel_[0-9]+]]::@rsum_kernel {{.*}} threads in (%c32
// CHECK-NOT: gpu.launch_func
// CHECK: gpu.module @rsum_kernel {
// CHECK: gpu.func @rsum_kernel(
// CHECK: vector.load
// CHECK: gpu.all_reduce  add
// CHECK: gpu.module @[[RSUM]] {
// CHECK-NOT: vector.load
// CHECK: gpu.all_reduce  add

// CHECK-LABEL: func.func @kina_addrelu(
// CHECK: call @kina_rt_gpu_enter()
// CHECK: call @kina_rt_gpu_check_argument(
// CHECK: call @addrelu(
// CHECK: call @kina_rt_gpu_exit()
// CHECK-NOT: linalg.

// O0-LABEL: func.func @addrelu(
// O0: gpu.launch_func  @addrelu_kernel::@addrelu_kernel
// O0: gpu.launch_func  @addrelu_kernel_0::@addrelu_kernel
// O0: gpu.launch_func  @addrelu_kernel_1::@addrelu_kernel
// O0: gpu.launch_func  @addrelu_kernel_2::@addrelu_kernel
// O0-LABEL: func.func @mm(

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
  func.func @mm(%arg0: tensor<?x8xf32>, %arg1: tensor<8x3xf32>) -> tensor<?x3xf32> attributes {kina.param_dims = [["?", "8"], ["8", "3"]], kina.param_names = ["a", "b"], kina.result_dims = [["?", "3"]], llvm.emit_c_interface} {
    %cst = arith.constant 0.000000e+00 : f32
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x8xf32>
    %0 = tensor.empty(%dim) : tensor<?x3xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?x3xf32>) -> tensor<?x3xf32>
    %2 = linalg.matmul ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<8x3xf32>) outs(%1 : tensor<?x3xf32>) -> tensor<?x3xf32>
    return %2 : tensor<?x3xf32>
  }
  func.func @rsum(%arg0: tensor<?x16xf32>) -> tensor<?xf32> attributes {kina.param_dims = [["?", "16"]], kina.param_names = ["x"], kina.result_dims = [["?"]], llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x16xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %0 = tensor.empty(%dim) : tensor<?xf32>
    %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x16xf32>) outs(%1 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %3 = arith.addf %out, %in : f32
      linalg.yield %3 : f32
    } -> tensor<?xf32>
    return %2 : tensor<?xf32>
  }
}
