// kina-matmul-kernel (src/passes/MatmulKernel.cpp): a linalg.matmul over
// row-major f32 or f64 memrefs becomes the register-tiled vector kernel (a
// packed panel of B on the stack, vector.fma on 256-bit vectors, a masked
// load and store for the last columns); other element types keep their
// linalg.matmul. A matmul with a small constant amount of work (mm_f64)
// stays in its function, the others are outlined for the thread pool. The
// pass cannot fail.
// RUN: %kina-opt %s --kina-matmul-kernel | FileCheck %s
// RUN: %kina-opt %s --kina-matmul-kernel --canonicalize | FileCheck %s --check-prefix=GROUPS

// A matmul whose work is not known to be small runs over column slabs of
// C: the kernel moves into the body @__kina_par_mm_f32 (iterations [lo,
// end) of the slab loop, its own packed panel before that loop), called
// with kina_rt_parallel_threads(panels, cost) slabs (src/passes/Parallel.h).
// CHECK-LABEL: func.func private @__kina_par_mm_f32(
// CHECK-SAME: %[[LO:[^:]*]]: index, %[[END:[^:]*]]: index,
// CHECK-SAME: %[[B:[^:]*]]: memref<?x?xf32>, %[[C:[^:]*]]: memref<?x?xf32>, %[[A:[^:]*]]: memref<?x?xf32>
// CHECK-SAME: attributes {kina.parallel_body}
// CHECK: %[[PANEL:.*]] = memref.alloca() {alignment = 64 : i64} : memref<256x24xf32>
// CHECK: scf.for %{{.*}} = %[[LO]] to
// CHECK: vector.load %[[B]]
// CHECK: vector.store %{{.*}}, %[[PANEL]]
// CHECK: vector.load %[[C]]{{.*}} : memref<?x?xf32>, vector<8xf32>
// CHECK: vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK: vector.fma %{{.*}} : vector<8xf32>
// CHECK: vector.store %{{.*}}, %[[C]]
// CHECK: vector.maskedload
// CHECK: vector.maskedstore %[[C]]
// CHECK: return
// CHECK-LABEL: func.func @mm_f32(
// CHECK-SAME: %[[AM:[^:]*]]: memref<?x?xf32>, %[[BM:[^:]*]]: memref<?x?xf32>, %[[CM:[^:]*]]: memref<?x?xf32>)
// CHECK-NOT: memref.alloca
// CHECK: call @kina_rt_parallel_threads(
// CHECK: call @__kina_par_mm_f32({{.*}}%[[BM]], %[[CM]], %[[AM]]
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @mm_f32(%a: memref<?x?xf32>, %b: memref<?x?xf32>, %c: memref<?x?xf32>) {
  linalg.matmul ins(%a, %b : memref<?x?xf32>, memref<?x?xf32>) outs(%c : memref<?x?xf32>)
  return
}

// CHECK-LABEL: func.func @mm_f64(
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<256x12xf64>
// CHECK: vector.fma %{{.*}} : vector<4xf64>
// CHECK-NOT: linalg.matmul
// CHECK: return
func.func @mm_f64(%a: memref<3x5xf64>, %b: memref<5x7xf64>, %c: memref<3x7xf64>) {
  linalg.matmul ins(%a, %b : memref<3x5xf64>, memref<5x7xf64>) outs(%c : memref<3x7xf64>)
  return
}

// Panels of 3 vectors (24 f32 columns at 256 bits) by default; the whole
// vectors past the last panel of 3 go to panels of 2, a single vector (a
// 4 x 1 tile: 4 accumulators) only where one is left. N = 40 is a panel
// of 3 (12 accumulators) and one of 2 (8); N = 32 is two panels of 2, not
// a panel of 3 and a single vector. (Canonicalized: the empty groups'
// loops fold away.)
// GROUPS-LABEL: func.func @mm_n40(
// GROUPS: memref.alloca() {alignment = 64 : i64} : memref<256x24xf32>
// GROUPS: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// GROUPS: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// GROUPS-NOT: -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// GROUPS: return
func.func @mm_n40(%a: memref<4x8xf32>, %b: memref<8x40xf32>, %c: memref<4x40xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x40xf32>) outs(%c : memref<4x40xf32>)
  return
}

// GROUPS-LABEL: func.func @mm_n32(
// GROUPS: memref.alloca() {alignment = 64 : i64} : memref<256x24xf32>
// GROUPS-NOT: -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// GROUPS: scf.for %{{.*}} = %c0 to %c32 step %c16
// GROUPS: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// GROUPS-NOT: -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// GROUPS: return
func.func @mm_n32(%a: memref<4x8xf32>, %b: memref<8x32xf32>, %c: memref<4x32xf32>) {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x32xf32>) outs(%c : memref<4x32xf32>)
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
