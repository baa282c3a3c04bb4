// kina-clone-shared-fills (src/passes/CloneSharedFills.cpp): a zero fill
// that cse shared between two matmuls (as their destination) is cloned,
// with its tensor.empty, right before the second, which then fills its own
// buffer: after one-shot bufferization, two allocations, two fills and no
// memref.copy (without the pass, the second matmul gets a copy of the
// first's filled buffer: the NOPASS run). A fill read as an input keeps
// the original for that use; a fill with one use is left alone.
// RUN: %kina-opt %s --kina-clone-shared-fills | FileCheck %s
// RUN: %kina-opt %s --kina-clone-shared-fills --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUF
// RUN: %kina-opt %s --one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=NOPASS
// RUN: %kina-opt %s --kina-clone-shared-fills="empties=true" | FileCheck %s --check-prefix=EMPTIES

// CHECK-LABEL: func.func @two_matmuls(
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x8xf32>)
// CHECK: %[[M1:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16x8xf32>) outs(%[[F1]] : tensor<4x8xf32>)
// CHECK: %[[E2:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[F2:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E2]] : tensor<4x8xf32>)
// CHECK: %[[M2:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16x8xf32>) outs(%[[F2]] : tensor<4x8xf32>)
// CHECK: return %[[M1]], %[[M2]]
// BUF-LABEL: func.func @two_matmuls(
// BUF-NOT: memref.copy
// BUF-COUNT-2: linalg.fill
// BUF-NOT: memref.copy
// BUF: return
// NOPASS-LABEL: func.func @two_matmuls(
// NOPASS: memref.copy
func.func @two_matmuls(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %c: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m2 = linalg.matmul ins(%a, %c : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %m1, %m2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// An input use: the fill read by an add keeps the original there; the
// matmul, its one destination use, gets its own clone (so its in-place
// product never overwrites what the add reads).
// CHECK-LABEL: func.func @read_and_written(
// CHECK: %[[F:.*]] = linalg.fill
// CHECK: linalg.add ins(%[[F]], %[[F]] :
// CHECK: %[[F2:.*]] = linalg.fill
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<4x16xf32>, tensor<16x8xf32>) outs(%[[F2]] : tensor<4x8xf32>)
func.func @read_and_written(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.add ins(%f, %f : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) -> tensor<4x8xf32>
  %m = linalg.matmul ins(%a, %b : tensor<4x16xf32>, tensor<16x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %m : tensor<4x8xf32>, tensor<4x8xf32>
}

// With empties (the cuda target): a bf16 product's rounding whose
// destination is a tensor.empty shared (by cse) with an earlier op gets its
// own; without the option, and for other ops, the empty stays shared.
// CHECK-LABEL: func.func @rounding_shares_empty(
// CHECK-COUNT-1: tensor.empty() : tensor<4x8xbf16>
// CHECK-NOT: tensor.empty() : tensor<4x8xbf16>
// EMPTIES-LABEL: func.func @rounding_shares_empty(
// EMPTIES: %[[E:.*]] = tensor.empty() : tensor<4x8xbf16>
// EMPTIES: linalg.generic {{.*}} outs(%[[E]] : tensor<4x8xbf16>)
// EMPTIES: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]
// EMPTIES: %[[E2:.*]] = tensor.empty() : tensor<4x8xbf16>
// EMPTIES: linalg.generic {{.*}} outs(%[[E2]] : tensor<4x8xbf16>)
// EMPTIES: arith.truncf
func.func @rounding_shares_empty(%x: tensor<4x8xbf16>, %a: tensor<4x16xbf16>, %b: tensor<16x8xbf16>) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xbf16>
  %neg = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xbf16>) outs(%e : tensor<4x8xbf16>) {
  ^bb0(%v: bf16, %o: bf16):
    %n = arith.negf %v : bf16
    linalg.yield %n : bf16
  } -> tensor<4x8xbf16>
  %ce = tensor.empty() : tensor<4x8xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ce : tensor<4x8xf32>) -> tensor<4x8xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x16xbf16>, tensor<16x8xbf16>) outs(%c : tensor<4x8xf32>) {
  ^bb0(%u: bf16, %w: bf16, %acc: f32):
    %ue = arith.extf %u : bf16 to f32
    %we = arith.extf %w : bf16 to f32
    %mul = arith.mulf %ue, %we : f32
    %s = arith.addf %acc, %mul : f32
    linalg.yield %s : f32
  } -> tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x8xf32>) outs(%e : tensor<4x8xbf16>) {
  ^bb0(%v: f32, %o: bf16):
    %t = arith.truncf %v : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x8xbf16>
  return %neg, %r : tensor<4x8xbf16>, tensor<4x8xbf16>
}
