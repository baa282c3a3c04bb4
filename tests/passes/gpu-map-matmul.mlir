// kina-gpu-map-matmul (src/targets/cuda/GpuMapMatmul.cpp): a bufferized
// contraction generic (what linalg.matmul generalizes to) becomes one
// gpu.launch of 16x16 threads whose two 16x16 operand tiles are staged in
// workgroup memory per k step, with a barrier after the tile loads and one
// after the products, and the sum stored to C; the launch is guarded on
// the host by the extents being positive. Generics that are not
// contractions (a reduction, an elementwise op) are left to the other
// mappers. The pass cannot fail.
// The kernel alone (cublaslt=false); gpu-map-matmul-cublaslt.mlir checks
// the default route, the runtime call with this kernel as its fallback.
// RUN: %kina-opt %s --kina-gpu-map-matmul="cublaslt=false" | FileCheck %s

#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func @mm(
// CHECK-SAME: %[[A:.*]]: memref<?x64xf32>, %[[B:.*]]: memref<64x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK-NOT: linalg.generic
// CHECK: scf.if
// CHECK: gpu.launch blocks({{.*}}) threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in ({{.*}}) workgroup(%[[AS:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>>, %[[BS:.*]] : memref<16x16xf32, #gpu.address_space<workgroup>>)
// CHECK: memref.load %[[C]]
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[A]]
// CHECK: memref.store %{{.*}}, %[[AS]][%[[TY]], %[[TX]]]
// CHECK: memref.load %[[B]]
// CHECK: memref.store %{{.*}}, %[[BS]][%[[TY]], %[[TX]]]
// CHECK-NEXT: gpu.barrier
// CHECK: memref.load %[[AS]][%[[TY]], %{{.*}}]
// CHECK: memref.load %[[BS]][%{{.*}}, %[[TX]]]
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[C]]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @mm(%a: memref<?x64xf32>, %b: memref<64x?xf32>, %c: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<?x64xf32>, memref<64x?xf32>) outs(%c : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// An i32 batched matmul: the batch loop is the launch's third grid dim.
// CHECK-LABEL: func.func @bmm_i32(
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<16x16xi32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x16xi32, #gpu.address_space<workgroup>>)
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @bmm_i32(%a: memref<2x4x8xi32>, %b: memref<2x8x3xi32>, %c: memref<2x4x3xi32>) {
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : memref<2x4x8xi32>, memref<2x8x3xi32>) outs(%c : memref<2x4x3xi32>) {
  ^bb0(%x: i32, %y: i32, %acc: i32):
    %p = arith.muli %x, %y : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}

// A reduction is not a contraction: left for kina-gpu-map-reductions.
// CHECK-LABEL: func.func @row_sum(
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
// CHECK: return
func.func @row_sum(%x: memref<?x300xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x300xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}
