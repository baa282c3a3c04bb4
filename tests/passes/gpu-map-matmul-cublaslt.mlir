// kina-gpu-map-matmul's cuBLASLt route (the default; docs/cuda.md,
// "Matmul"): a float contraction calls the runtime's kina_rt_gpu_matmul
// with its types (A's code + 256 x C's: f32 1, f64 2, f16 3, bf16 4), its
// flags (1: TF32 allowed, 2: accumulate into C), the number of batch
// loops, an i64 array of m, n, k, the batch sizes and every operand's
// strides per loop (from memref.extract_strided_metadata), and the
// operands' element pointers; the 16x16 kernel runs only when the call
// returns 0. A zero fill of C right before the contraction moves into that
// fallback (flags without 2); without one, the runtime accumulates (2).
// Integer contractions keep only the kernel.
// RUN: %kina-opt %s --kina-gpu-map-matmul | FileCheck %s
// RUN: %kina-opt %s --kina-gpu-map-matmul="allow-tf32=true" | FileCheck %s --check-prefix=TF32

#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func @mm(
// CHECK-SAME: %[[A:.*]]: memref<?x64xf32>, %[[B:.*]]: memref<64x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK: %[[HANDLED:.*]] = scf.if %{{.*}} -> (i32) {
// CHECK: %[[BA:.*]], %[[OA:.*]], %{{.*}}:2, %[[SA:.*]]:2 = memref.extract_strided_metadata %[[A]]
// CHECK: memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: memref.extract_strided_metadata %[[B]]
// CHECK: memref.extract_strided_metadata %[[C]]
// CHECK: %[[DIMS:.*]] = memref.alloca() : memref<9xi64>
// CHECK-COUNT-9: memref.store %{{.*}}, %[[DIMS]][
// CHECK: %[[CALL:.*]] = func.call @kina_rt_gpu_matmul(%c257_i32, %c0_i32{{.*}}, %c0_i32{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, i32, i32, i64, i64, i64, i64) -> i32
// CHECK: scf.yield %[[CALL]] : i32
// CHECK: } else {
// CHECK: %[[NOT:.*]] = arith.cmpi eq, %[[HANDLED]], %c0_i32
// CHECK: scf.if %[[NOT]] {
// CHECK-NEXT: linalg.generic {{.*}} ins(%cst : f32) outs(%[[C]] : memref<?x?xf32>)
// CHECK: gpu.launch
// CHECK: return
// TF32-LABEL: func.func @mm(
// TF32: func.call @kina_rt_gpu_matmul(%c257_i32, %c1_i32
func.func @mm(%a: memref<?x64xf32>, %b: memref<64x?xf32>, %c: memref<?x?xf32>) {
  %cst = arith.constant 0.000000e+00 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<?x?xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<?x64xf32>, memref<64x?xf32>) outs(%c : memref<?x?xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// bf16 operands accumulated in an f32 C (types 4 + 256 * 1), a batch
// broadcast from B (stride 0 for B's missing batch dim), no fill before:
// accumulate (2); TF32 does not apply to bf16 but the flag passes through.
// CHECK-LABEL: func.func @bmm_bf16(
// CHECK: memref.alloca() : memref<13xi64>
// CHECK: func.call @kina_rt_gpu_matmul(%c260_i32, %c2_i32, %c1_i32
// CHECK: gpu.launch
func.func @bmm_bf16(%a: memref<3x4x8xbf16>, %b: memref<8x5xbf16>, %c: memref<3x4x5xf32>) {
  linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, affine_map<(b, m, n, k) -> (k, n)>, affine_map<(b, m, n, k) -> (b, m, n)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%a, %b : memref<3x4x8xbf16>, memref<8x5xbf16>) outs(%c : memref<3x4x5xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// A bf16 product accumulated in an f32 buffer that a truncf generic then
// rounds into the bf16 result (what MLIRGen writes): cuBLASLt writes the
// bf16 result itself (types 4 + 4 * 256, C's pointer and strides are the
// result's); the fill, the kernel and the rounding form the fallback.
// CHECK-LABEL: func.func @mm_round(
// CHECK-SAME: %{{.*}}: memref<4x8xbf16>, %{{.*}}: memref<8x3xbf16>, %[[D:.*]]: memref<4x3xbf16>)
// CHECK: %[[C:.*]] = memref.alloc() : memref<4x3xf32>
// CHECK: memref.extract_strided_metadata %[[D]]
// CHECK: func.call @kina_rt_gpu_matmul(%c1028_i32, %c0_i32
// CHECK: scf.if
// CHECK-NEXT: linalg.generic {{.*}} outs(%[[C]] : memref<4x3xf32>)
// CHECK: gpu.launch
// CHECK: arith.extf
// CHECK: gpu.terminator
// CHECK: linalg.generic {{.*}} ins(%[[C]] : memref<4x3xf32>) outs(%[[D]] : memref<4x3xbf16>)
// CHECK: arith.truncf
// CHECK: memref.dealloc %[[C]]
func.func @mm_round(%a: memref<4x8xbf16>, %b: memref<8x3xbf16>, %d: memref<4x3xbf16>) {
  %cst = arith.constant 0.000000e+00 : f32
  %c = memref.alloc() : memref<4x3xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> ()>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%cst : f32) outs(%c : memref<4x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xbf16>, memref<8x3xbf16>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: bf16, %y: bf16, %acc: f32):
    %xe = arith.extf %x : bf16 to f32
    %ye = arith.extf %y : bf16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%c : memref<4x3xf32>) outs(%d : memref<4x3xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  }
  memref.dealloc %c : memref<4x3xf32>
  return
}

// Integers: the kernel only.
// CHECK-LABEL: func.func @mm_i32(
// CHECK-NOT: kina_rt_gpu_matmul
// CHECK: gpu.launch
// CHECK-NOT: kina_rt_gpu_matmul
// CHECK: return
func.func @mm_i32(%a: memref<4x8xi32>, %b: memref<8x3xi32>, %c: memref<4x3xi32>) {
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xi32>, memref<8x3xi32>) outs(%c : memref<4x3xi32>) {
  ^bb0(%x: i32, %y: i32, %acc: i32):
    %p = arith.muli %x, %y : i32
    %s = arith.addi %acc, %p : i32
    linalg.yield %s : i32
  }
  return
}

// A region that is not exactly acc + a * b (here acc + a * b + 1): the
// kernel only.
// CHECK-LABEL: func.func @mm_extra(
// CHECK-NOT: kina_rt_gpu_matmul
// CHECK: gpu.launch
// CHECK: return
func.func @mm_extra(%a: memref<4x8xf32>, %b: memref<8x3xf32>, %c: memref<4x3xf32>) {
  %one = arith.constant 1.0 : f32
  linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<4x8xf32>, memref<8x3xf32>) outs(%c : memref<4x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %q = arith.addf %p, %one : f32
    %s = arith.addf %acc, %q : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK: func.func private @kina_rt_gpu_matmul(i32, i32, i32, i64, i64, i64, i64) -> i32
