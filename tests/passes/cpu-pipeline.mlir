// kina-cpu-pipeline (src/targets/cpu/CpuTarget.cpp) on MLIRGen's output for
//   func @addrelu(%x: f32[N, 8], %y: f32[N, 8]) -> f32[N, 8]
// gives the LLVM dialect: the internal implementation, the C-interface
// wrapper, the status entry with the version stamp of the pipeline's
// options, the add and the relu fused into one loop nest (-O2; its rows
// outlined for the runtime's thread pool, kina_rt_parallel_for) or not
// (opt-level=0), and no Kina attribute left.
// (check_pipeline_equivalence.py compares the pipeline with kinac's on
// whole modules.)
// RUN: %kina-opt %s --kina-cpu-pipeline | FileCheck %s
// RUN: %kina-opt %s --kina-cpu-pipeline="opt-level=0 compiler=kinac-test abi-version=9" | FileCheck %s --check-prefix=O0

// CHECK-NOT: kina.param
// CHECK: llvm.func @_mlir_ciface_runtime_host_alloc_unranked(!llvm.ptr, i32) -> i32
// CHECK: llvm.mlir.global internal constant @__kina_version_stamp("kinac {{[0-9.]+}}, Kina ABI {{[0-9]+}}\00")
// CHECK-LABEL: llvm.func internal @__kina_par_addrelu(
// CHECK: llvm.fadd
// CHECK-NEXT: llvm.fcmp "ugt"
// CHECK-LABEL: llvm.func internal @__kina_fn_addrelu(
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: llvm.call @_mlir_ciface_runtime_host_alloc_unranked(
// CHECK: llvm.call @kina_rt_parallel_for(
// CHECK-NOT: llvm.call @_mlir_ciface_runtime_host_alloc_unranked(
// CHECK-LABEL: llvm.func @_mlir_ciface_addrelu(
// CHECK: llvm.call @__kina_fn_addrelu(
// CHECK-LABEL: llvm.func @kina_addrelu(
// CHECK: llvm.call @kina_rt_check_version(
// CHECK: llvm.call @__kina_fn_addrelu(
// CHECK-NOT: kina.param

// O0: llvm.mlir.global internal constant @__kina_version_stamp("kinac-test, Kina ABI 9\00")
// O0-LABEL: llvm.func internal @__kina_fn_addrelu(
// O0: llvm.call @_mlir_ciface_runtime_host_alloc_unranked(
// O0: llvm.fadd
// O0: llvm.call @_mlir_ciface_runtime_host_alloc_unranked(
// O0: llvm.fcmp "ugt"
// O0: llvm.call @runtime_free(
// O0-LABEL: llvm.func @kina_addrelu(

#map = affine_map<(d0, d1) -> (d0, d1)>
module @small {
  func.func @addrelu(%arg0: tensor<?x8xf32>, %arg1: tensor<?x8xf32>) -> tensor<?x8xf32> attributes {kina.param_dims = [["N", "8"], ["N", "8"]], kina.param_names = ["x", "y"], kina.result_dims = [["N", "8"]], llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x8xf32>
    %0 = tensor.empty(%dim) : tensor<?x8xf32>
    %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<?x8xf32>) outs(%0 : tensor<?x8xf32>) {
    ^bb0(%in: f32, %in_0: f32, %out: f32):
      %4 = arith.addf %in, %in_0 : f32
      linalg.yield %4 : f32
    } -> tensor<?x8xf32>
    %2 = tensor.empty(%dim) : tensor<?x8xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<?x8xf32>) outs(%2 : tensor<?x8xf32>) {
    ^bb0(%in: f32, %out: f32):
      %cst = arith.constant 0.000000e+00 : f32
      %4 = arith.maximumf %in, %cst : f32
      linalg.yield %4 : f32
    } -> tensor<?x8xf32>
    return %3 : tensor<?x8xf32>
  }
}
