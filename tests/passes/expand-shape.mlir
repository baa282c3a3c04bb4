// kina-expand-shape (src/passes/workarounds/ExpandShape.cpp): a
// memref.expand_shape of a rank-1, unit-stride memref becomes a
// reinterpret_cast of its base buffer with row-major strides (MLIR 22's
// expand-strided-metadata crashes on a group of several dynamic dims);
// other expand_shapes stay. The pass cannot fail.
// RUN: %kina-opt %s --kina-expand-shape | FileCheck %s

// CHECK-LABEL: func.func @two_dynamic(
// CHECK-SAME: %[[M:.*]]: memref<?xf32>, %[[N:.*]]: index, %[[K:.*]]: index)
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}, %{{.*}} = memref.extract_strided_metadata %[[M]]
// CHECK: %[[ONE:.*]] = arith.constant 1 : index
// CHECK: %[[S0:.*]] = arith.muli %[[ONE]], %[[K]] : index
// CHECK: %[[R:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[N]], %[[K]]], strides: [%[[S0]], 1] : memref<f32> to memref<?x?xf32>
// CHECK-NOT: memref.expand_shape
// CHECK: return %[[R]]
func.func @two_dynamic(%m: memref<?xf32>, %n: index, %k: index) -> memref<?x?xf32> {
  %r = memref.expand_shape %m [[0, 1]] output_shape [%n, %k] : memref<?xf32> into memref<?x?xf32>
  return %r : memref<?x?xf32>
}

// A rank-2 source is left to expand-strided-metadata.
// CHECK-LABEL: func.func @rank2_source(
// CHECK: memref.expand_shape
// CHECK-NOT: memref.reinterpret_cast
func.func @rank2_source(%m: memref<?x4xf32>, %n: index) -> memref<?x2x4xf32> {
  %r = memref.expand_shape %m [[0, 1], [2]] output_shape [%n, 2, 4] : memref<?x4xf32> into memref<?x2x4xf32>
  return %r : memref<?x2x4xf32>
}
