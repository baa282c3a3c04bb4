// kina-empty-reshape (src/passes/workarounds/EmptyReshape.cpp): a
// tensor.collapse_shape or tensor.expand_shape whose source has a static 0
// dim becomes a tensor.empty of its result's sizes (MLIR 22's bufferization
// made an invalid memref.collapse_shape of it); other reshapes stay. The
// pass cannot fail.
// RUN: %kina-opt %s --kina-empty-reshape | FileCheck %s

// CHECK-LABEL: func.func @collapse_empty(
// CHECK-SAME: %[[T:.*]]: tensor<?x0xf32>
// CHECK: %[[SIZE:.*]] = affine.apply #{{.*}}()[%{{.*}}]
// CHECK: %[[E:.*]] = tensor.empty(%[[SIZE]]) : tensor<?xf32>
// CHECK-NOT: tensor.collapse_shape
// CHECK: return %[[E]]
func.func @collapse_empty(%t: tensor<?x0xf32>) -> tensor<?xf32> {
  %r = tensor.collapse_shape %t [[0, 1]] : tensor<?x0xf32> into tensor<?xf32>
  return %r : tensor<?xf32>
}

// CHECK-LABEL: func.func @expand_empty(
// CHECK-SAME: %{{.*}}: tensor<?x0xf32>, %[[N:.*]]: index
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x0x1xf32>
// CHECK-NOT: tensor.expand_shape
// CHECK: return %[[E]]
func.func @expand_empty(%t: tensor<?x0xf32>, %n: index) -> tensor<?x0x1xf32> {
  %r = tensor.expand_shape %t [[0], [1, 2]] output_shape [%n, 0, 1] : tensor<?x0xf32> into tensor<?x0x1xf32>
  return %r : tensor<?x0x1xf32>
}

// CHECK-LABEL: func.func @collapse_full(
// CHECK: tensor.collapse_shape
// CHECK-NOT: tensor.empty
func.func @collapse_full(%t: tensor<?x3xf32>) -> tensor<?xf32> {
  %r = tensor.collapse_shape %t [[0, 1]] : tensor<?x3xf32> into tensor<?xf32>
  return %r : tensor<?xf32>
}
