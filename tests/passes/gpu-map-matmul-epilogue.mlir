// kina-gpu-map-matmul's cuBLASLt epilogues (docs/cuda.md, "Matmul
// epilogues"): when a zero-filled f32 product's only consumer is an
// element-by-element generic computing act(alpha * c + residual + bias)
// (bias along the last dim, act relu or MLIRGen's tanh gelu), the product
// calls kina_rt_gpu_matmul_epilogue with the epilogue bits (1 bias, 2 relu,
// 4 gelu tanh, 8 residual), alpha as f64, the bias and residual pointers,
// and the bias's stride and the residual's strides appended to the dims;
// the fill, the kernel and the consumer form the fallback. Anything not
// exactly Kina's f32 arithmetic is left as a separate consumer.
// RUN: %kina-opt %s --kina-gpu-map-matmul | FileCheck %s

#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#last = affine_map<(d0, d1) -> (d1)>
#first = affine_map<(d0, d1) -> (d0)>
#scalar = affine_map<(d0, d1) -> ()>

// Bias then relu, in place (the MLP's hidden layer): bits 3, a bias pointer,
// no residual (0); dims: m, n, k, 6 strides and the bias's stride.
// CHECK-LABEL: func.func @bias_relu(
// CHECK-SAME: %[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<8x3xf32>, %[[BIAS:.*]]: memref<3xf32>, %[[C:.*]]: memref<4x3xf32>)
// CHECK: %[[H:.*]] = scf.if %{{.*}} -> (i32) {
// CHECK: memref.extract_strided_metadata %[[BIAS]]
// CHECK: memref.alloca() : memref<10xi64>
// CHECK-COUNT-10: memref.store
// CHECK: %[[CALL:.*]] = func.call @kina_rt_gpu_matmul_epilogue(%c257_i32, %c0_i32{{.*}}, %c0_i32{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c3_i32, %{{.*}}, %{{.*}}, %c0_i64)
// CHECK: arith.cmpi eq, %[[H]], %c0_i32
// CHECK: scf.if
// CHECK-NEXT: linalg.generic {{.*}} ins(%cst : f32) outs(%[[C]] : memref<4x3xf32>)
// CHECK: gpu.launch
// CHECK: gpu.terminator
// CHECK: linalg.generic {{.*}} ins(%[[C]], %[[BIAS]] : memref<4x3xf32>, memref<3xf32>) outs(%[[C]] : memref<4x3xf32>)
// CHECK: arith.maximumf
// CHECK: return
func.func @bias_relu(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %bias: memref<3xf32>, %c: memref<4x3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<4x3xf32>, memref<3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %s = arith.addf %in, %bi : f32
    %r = arith.maximumf %s, %cst : f32
    linalg.yield %r : f32
  }
  return
}

// Bias then MLIRGen's tanh gelu into another buffer: bits 5; the product
// moves down to the consumer, past the allocation of its output, and C's
// deallocation stays after the fallback.
// CHECK-LABEL: func.func @bias_gelu_tanh(
// CHECK: %[[D:.*]] = memref.alloc() : memref<4x3xf32>
// CHECK: func.call @kina_rt_gpu_matmul_epilogue(%c257_i32, %c0_i32{{.*}}, %c0_i32{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c5_i32
// CHECK: scf.if
// CHECK: gpu.launch
// CHECK: math.tanh
// CHECK: memref.dealloc
// CHECK: return %[[D]]
func.func @bias_gelu_tanh(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %bias: memref<3xf32>) -> memref<4x3xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %one = arith.constant 1.000000e+00 : f32
  %k0 = arith.constant 4.471500e-02 : f32
  %k1 = arith.constant 0.797884583 : f32
  %c = memref.alloc() : memref<4x3xf32>
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %d = memref.alloc() : memref<4x3xf32>
  linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<4x3xf32>, memref<3xf32>) outs(%d : memref<4x3xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %x = arith.addf %in, %bi : f32
    %h = arith.mulf %x, %half : f32
    %x2 = arith.mulf %x, %x : f32
    %x3 = arith.mulf %x2, %x : f32
    %t = arith.mulf %x3, %k0 : f32
    %u = arith.addf %x, %t : f32
    %w = arith.mulf %u, %k1 : f32
    %th = math.tanh %w : f32
    %q = arith.addf %th, %one : f32
    %g = arith.mulf %h, %q : f32
    linalg.yield %g : f32
  }
  memref.dealloc %c : memref<4x3xf32>
  return %d : memref<4x3xf32>
}

// A scale alone (any constant: alpha 0.3), and a residual after a
// power-of-two scale (bits 8, alpha 0.125; the residual's 2 strides follow
// C's in the dims).
// CHECK-LABEL: func.func @scale_and_residual(
// CHECK-SAME: %[[R:[a-z0-9]*]]: memref<4x3xf32>, %[[C1:.*]]: memref<4x3xf32>, %[[C2:.*]]: memref<4x3xf32>, %[[D2:.*]]: memref<4x3xf32>)
// CHECK: %[[ALPHA1:.*]] = arith.constant 0.30000001192092896 : f64
// CHECK: func.call @kina_rt_gpu_matmul_epilogue(%c257_i32, %c0_i32{{.*}}, %c0_i32{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c0_i32{{.*}}, %[[ALPHA1]], %c0_i64{{.*}}, %c0_i64
// CHECK: memref.extract_strided_metadata %[[R]]
// CHECK: memref.alloca() : memref<11xi64>
// CHECK: func.call @kina_rt_gpu_matmul_epilogue(%c257_i32, %c0_i32{{.*}}, %c0_i32{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %c8_i32, %cst{{.*}}, %c0_i64{{.*}}, %{{.*}})
func.func @scale_and_residual(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %r: memref<4x3xf32>, %c1: memref<4x3xf32>, %c2: memref<4x3xf32>, %d2: memref<4x3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  %s1 = arith.constant 3.000000e-01 : f32
  %s2 = arith.constant 1.250000e-01 : f32
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c1 : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c1 : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%c1 : memref<4x3xf32>) outs(%c1 : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %s1 : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c2 : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c2 : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c2, %r : memref<4x3xf32>, memref<4x3xf32>) outs(%d2 : memref<4x3xf32>) {
  ^bb0(%in: f32, %res: f32, %out: f32):
    %m = arith.mulf %s2, %in : f32
    %t = arith.addf %res, %m : f32
    linalg.yield %t : f32
  }
  return
}

// Not fused (the plain call, the consumer left after the product):
// Another user of the product (C read again after a consumer that writes elsewhere).
// CHECK-LABEL: func.func @other_user(
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: func.call @kina_rt_gpu_matmul(%c257_i32, %c0_i32
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: return
func.func @other_user(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %bias: memref<3xf32>, %c: memref<4x3xf32>, %d: memref<4x3xf32>, %e: memref<4x3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<4x3xf32>, memref<3xf32>) outs(%d : memref<4x3xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %t = arith.addf %in, %bi : f32
    linalg.yield %t : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%c : memref<4x3xf32>) outs(%e : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %t = arith.mulf %in, %in : f32
    linalg.yield %t : f32
  }
  return
}

// The erf gelu (cuBLASLt's GELU is the tanh form).
// CHECK-LABEL: func.func @gelu_erf(
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: func.call @kina_rt_gpu_matmul(%c257_i32, %c0_i32
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: return
func.func @gelu_erf(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %bias: memref<3xf32>, %c: memref<4x3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %half = arith.constant 5.000000e-01 : f32
  %one = arith.constant 1.000000e+00 : f32
  %k = arith.constant 0.707106769 : f32
  linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<4x3xf32>, memref<3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %x = arith.addf %in, %bi : f32
    %h = arith.mulf %half, %x : f32
    %w = arith.mulf %x, %k : f32
    %er = math.erf %w : f32
    %q = arith.addf %one, %er : f32
    %g = arith.mulf %h, %q : f32
    linalg.yield %g : f32
  }
  return
}

// A bias along the rows (cuBLASLt's bias runs along n).
// CHECK-LABEL: func.func @bias_wrong_axis(
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: func.call @kina_rt_gpu_matmul(%c257_i32, %c0_i32
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: return
func.func @bias_wrong_axis(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %bias: memref<4xf32>, %c: memref<4x3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #first, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<4x3xf32>, memref<4xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %t = arith.addf %in, %bi : f32
    linalg.yield %t : f32
  }
  return
}

// A bias of another type (f16, widened in the region).
// CHECK-LABEL: func.func @bias_f16(
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: func.call @kina_rt_gpu_matmul(%c257_i32, %c0_i32
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: return
func.func @bias_f16(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %bias: memref<3xf16>, %c: memref<4x3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<4x3xf32>, memref<3xf16>) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %bi: f16, %out: f32):
    %w = arith.extf %bi : f16 to f32
    %t = arith.addf %in, %w : f32
    linalg.yield %t : f32
  }
  return
}

// Bias before residual ((c + bias) + r): cuBLASLt adds the residual (beta C) first, so the f32 sum would round differently.
// CHECK-LABEL: func.func @bias_then_residual(
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: func.call @kina_rt_gpu_matmul(%c257_i32, %c0_i32
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: return
func.func @bias_then_residual(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %bias: memref<3xf32>, %r: memref<4x3xf32>, %c: memref<4x3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #last, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %bias, %r : memref<4x3xf32>, memref<3xf32>, memref<4x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %bi: f32, %res: f32, %out: f32):
    %t = arith.addf %in, %bi : f32
    %u = arith.addf %res, %t : f32
    linalg.yield %u : f32
  }
  return
}

// A scale that is not a power of two before a bias (alpha c + bias could be one fused multiply-add).
// CHECK-LABEL: func.func @scale_then_bias(
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: func.call @kina_rt_gpu_matmul(%c257_i32, %c0_i32
// CHECK-NOT: kina_rt_gpu_matmul_epilogue
// CHECK: return
func.func @scale_then_bias(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %bias: memref<3xf32>, %c: memref<4x3xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [#scalar, #id], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %s = arith.constant 3.000000e-01 : f32
  linalg.generic {indexing_maps = [#id, #last, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %bias : memref<4x3xf32>, memref<3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %bi: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    %t = arith.addf %m, %bi : f32
    linalg.yield %t : f32
  }
  return
}
