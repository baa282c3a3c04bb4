// kina-matmul-kernel (src/passes/MatmulKernel.cpp): a linalg.matmul over
// row-major f32 or f64 memrefs becomes the register-tiled vector kernel (a
// packed panel of B on the stack, vector.fma on 256-bit vectors, a masked
// load and store for the last columns); other element types keep their
// linalg.matmul. The pass cannot fail.
// RUN: %kina-opt %s --kina-matmul-kernel | FileCheck %s

// CHECK-LABEL: func.func @mm_f32(
// CHECK-SAME: %[[A:.*]]: memref<?x?xf32>, %[[B:.*]]: memref<?x?xf32>, %[[C:.*]]: memref<?x?xf32>)
// CHECK: %[[PANEL:.*]] = memref.alloca() {alignment = 64 : i64} : memref<256x16xf32>
// CHECK: scf.for
// CHECK: vector.load %[[B]]
// CHECK: vector.store %{{.*}}, %[[PANEL]]
// CHECK: vector.load %[[C]]{{.*}} : memref<?x?xf32>, vector<8xf32>
// CHECK: vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: vector.fma %{{.*}} : vector<8xf32>
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK: vector.maskedload
// CHECK: vector.maskedstore %[[C]]
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @mm_f32(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

// CHECK-LABEL: func.func @mm_f64(
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<256x8xf64>
// CHECK: vector.fma %{{.*}} : vector<4xf64>
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @mm_f64(%a: memref<3x5xf64>, %b: memref<5x7xf64>, %c: memref<3x7xf64>) {
  linalg.matmul ins(%a, %b : memref<3x5xf64>, memref<5x7xf64>) outs(%c : memref<3x7xf64>)
  return
}

// CHECK-LABEL: func.func @mm_f16(
// CHECK-NOT: vector.
// CHECK: linalg.matmul ins(%{{.*}}, %{{.*}} : memref<4x8xf16>, memref<8x4xf16>) outs(%{{.*}} : memref<4x4xf16>)
// CHECK-NEXT: return
func.func @mm_f16(%a: memref<4x8xf16>, %b: memref<8x4xf16>, %c: memref<4x4xf16>) {
  linalg.matmul ins(%a, %b : memref<4x8xf16>, memref<8x4xf16>) outs(%c : memref<4x4xf16>)
  return
}
