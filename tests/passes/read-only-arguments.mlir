// kina-read-only-arguments (src/passes/ReadOnlyArguments.cpp): every
// argument of a function with a body is marked non-writable for one-shot
// bufferization; declarations are left alone. The pass cannot fail.
// RUN: %kina-opt %s --kina-read-only-arguments | FileCheck %s

// CHECK-LABEL: func.func @two_args(
// CHECK-SAME: %{{.*}}: tensor<?x4xf32> {bufferization.writable = false}, %{{.*}}: tensor<4xf32> {bufferization.writable = false}) -> tensor<?x4xf32>
func.func @two_args(%a: tensor<?x4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  return %a : tensor<?x4xf32>
}

// A private function with a body is marked too.
// CHECK-LABEL: func.func private @helper(
// CHECK-SAME: %{{.*}}: tensor<f32> {bufferization.writable = false}) -> tensor<f32>
func.func private @helper(%a: tensor<f32>) -> tensor<f32> {
  return %a : tensor<f32>
}

// CHECK-LABEL: func.func private @__kina_check(i1, index, index)
// CHECK-NOT: writable
func.func private @__kina_check(i1, index, index)
