// kina-elementwise-fusion (src/passes/workarounds/ElementwiseFusion.cpp):
// MLIR's elementwise fusion, except that a producer whose payload reads its
// init is not fused into a consumer reading it through a broadcast (MLIR 22
// keeps the init as an output under that map: every iteration would update
// the one element). The pass cannot fail.
// RUN: %kina-opt %s --kina-elementwise-fusion | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<() -> ()>
#bcast = affine_map<(d0) -> ()>
#row = affine_map<(d0) -> (d0)>

// add then relu: one generic computing both.
// CHECK-LABEL: func.func @add_relu(
// CHECK: linalg.generic
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @add_relu(%x: tensor<?x4xf32>, %y: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x4xf32>
  %e0 = tensor.empty(%n) : tensor<?x4xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<?x4xf32>, tensor<?x4xf32>) outs(%e0 : tensor<?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %v = arith.addf %a, %b : f32
    linalg.yield %v : f32
  } -> tensor<?x4xf32>
  %e1 = tensor.empty(%n) : tensor<?x4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%s : tensor<?x4xf32>) outs(%e1 : tensor<?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %v = arith.maximumf %a, %zero : f32
    linalg.yield %v : f32
  } -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// A rank-0 accumulation (its payload reads its init) broadcast into a
// rank-1 add: two generics stay.
// CHECK-LABEL: func.func @init_reader_broadcast(
// CHECK: %[[ACC:.*]] = linalg.generic {{{.*}}iterator_types = []}
// CHECK: linalg.generic {{{.*}}iterator_types = ["parallel"]} ins(%[[ACC]], %{{.*}} : tensor<f32>, tensor<4xf32>)
func.func @init_reader_broadcast(%a: tensor<f32>, %init: tensor<f32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %acc = linalg.generic {indexing_maps = [#scalar, #scalar], iterator_types = []}
      ins(%a : tensor<f32>) outs(%init : tensor<f32>) {
  ^bb0(%in: f32, %out: f32):
    %v = arith.addf %in, %out : f32
    linalg.yield %v : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#bcast, #row, #row], iterator_types = ["parallel"]}
      ins(%acc, %b : tensor<f32>, tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %v = arith.addf %p, %q : f32
    linalg.yield %v : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
