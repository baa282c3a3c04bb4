// kina-gpu-map-elementwise fails when a linalg op or memref.copy is left on
// the host after it: here a reduction generic (kina-gpu-map-reductions runs
// before it in the cuda pipeline) and a named linalg.matmul (not
// generalized: linalg-generalize-named-ops runs before the mappers). The
// walk stops at the first such op, so each is in a module of its own.
// RUN: %kina-opt %s --split-input-file --kina-gpu-map-elementwise --verify-diagnostics

func.func @row_sum(%x: memref<?x4xf32>, %y: memref<?xf32>) {
  // expected-error @+1 {{cuda target: no GPU kernel mapping for this op}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x4xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

func.func @mm(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32>) {
  // expected-error @+1 {{cuda target: no GPU kernel mapping for this op}}
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>)
  return
}
