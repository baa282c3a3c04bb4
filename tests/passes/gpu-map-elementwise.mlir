// kina-gpu-map-elementwise (src/targets/cuda/GpuMapElementwise.cpp): each
// bufferized all-parallel generic and each memref.copy becomes a
// gpu.launch of 256 threads per block with a grid-stride loop over the
// linear index of the iteration space, delinearized row-major, loading the
// operands through their indexing maps (a broadcast operand by the inner
// index only); the launch is guarded on the host by the element count being
// positive, and a static empty space launches nothing. Where the innermost
// size can be a multiple of the 16-byte vector's lanes, the host checks it
// (when dynamic) and the contiguous memrefs' alignment and launches a
// vector kernel (4 vectors per thread, vector.load/vector.store with
// alignment 16), else the scalar kernel. A constant the
// kernel reads (memref.get_global) is cloned into the kernel. Failure:
// gpu-map-elementwise-invalid.mlir.
// RUN: %kina-opt %s --kina-gpu-map-elementwise | FileCheck %s

memref.global "private" constant @cst : memref<8xf32> = dense<2.0>

// CHECK-LABEL: func.func @chain(
// CHECK-SAME: %[[A:.*]]: memref<?x8xf32>, %[[B:.*]]: memref<8xf32>, %[[O:.*]]: memref<?x8xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[N:.*]] = memref.dim %[[A]]
// CHECK: scf.if
// CHECK: %[[PA:.*]] = memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: arith.remui %[[PA]], %c16
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: memref.extract_aligned_pointer_as_index %[[O]]
// CHECK: scf.if
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}}, %{{.*}}, %{{.*}})
// CHECK: scf.for
// CHECK-COUNT-4: affine.delinearize_index %{{.*}} into (%[[N]], %c8)
// CHECK: vector.load %[[A]]{{.*}} {alignment = 16 : i64} : memref<?x8xf32>, vector<4xf32>
// CHECK: vector.load %[[B]]{{.*}} {alignment = 16 : i64} : memref<8xf32>, vector<4xf32>
// CHECK-COUNT-4: math.exp
// CHECK: vector.from_elements
// CHECK: vector.store {{.*}}, %[[O]]{{.*}} {alignment = 16 : i64} : memref<?x8xf32>, vector<4xf32>
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%[[GX:.*]] = %{{.*}}, %{{.*}}, %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}}, %{{.*}}, %{{.*}})
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[IJ:.*]]:2 = affine.delinearize_index %[[I]] into (%[[N]], %c8) : index, index
// CHECK: %[[X:.*]] = memref.load %[[A]][%[[IJ]]#0, %[[IJ]]#1]
// CHECK: %[[Y:.*]] = memref.load %[[B]][%[[IJ]]#1]
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[Y]]
// CHECK: %[[E:.*]] = math.exp %[[S]]
// CHECK: memref.store %[[E]], %[[O]][%[[IJ]]#0, %[[IJ]]#1]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @chain(%a: memref<?x8xf32>, %b: memref<8xf32>, %o: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a, %b : memref<?x8xf32>, memref<8xf32>) outs(%o : memref<?x8xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    %e = math.exp %s : f32
    linalg.yield %e : f32
  }
  return
}

// The innermost size 3 is no multiple of 4 lanes: the scalar kernel only.
// CHECK-LABEL: func.func @copy(
// CHECK-SAME: %[[A:.*]]: memref<4x3xi32>, %[[O:.*]]: memref<4x3xi32>)
// CHECK-NOT: memref.copy
// CHECK-NOT: vector.load
// CHECK: gpu.launch
// CHECK: %[[IJ:.*]]:2 = affine.delinearize_index %{{.*}} into (%c4{{.*}}, %c3{{.*}})
// CHECK: %[[V:.*]] = memref.load %[[A]][%[[IJ]]#0, %[[IJ]]#1]
// CHECK: memref.store %[[V]], %[[O]][%[[IJ]]#0, %[[IJ]]#1]
// CHECK-NOT: memref.copy
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @copy(%a: memref<4x3xi32>, %o: memref<4x3xi32>) {
  memref.copy %a, %o : memref<4x3xi32> to memref<4x3xi32>
  return
}

// The constant becomes a device global aligned to its element only: the
// vector kernel loads it lane by lane.
// CHECK-LABEL: func.func @scale(
// CHECK-SAME: %[[A:.*]]: memref<8xf32>, %[[O:.*]]: memref<8xf32>)
// CHECK: gpu.launch
// CHECK-NEXT: %[[C:.*]] = memref.get_global @cst : memref<8xf32>
// CHECK: vector.load %[[A]]
// CHECK-COUNT-4: memref.load %[[C]]
// CHECK: arith.mulf
// CHECK: vector.store
// CHECK: gpu.launch
// CHECK-NEXT: %[[C2:.*]] = memref.get_global @cst : memref<8xf32>
// CHECK: scf.for %[[I:.*]] =
// CHECK: %[[X:.*]] = memref.load %[[A]][%[[I]]]
// CHECK: %[[Y:.*]] = memref.load %[[C2]][%[[I]]]
// CHECK: arith.mulf %[[X]], %[[Y]]
// CHECK: return
func.func @scale(%a: memref<8xf32>, %o: memref<8xf32>) {
  %c = memref.get_global @cst : memref<8xf32>
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a, %c : memref<8xf32>, memref<8xf32>) outs(%o : memref<8xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %m = arith.mulf %x, %y : f32
    linalg.yield %m : f32
  }
  return
}

// A static 0 dim: no elements, no launch.
// CHECK-LABEL: func.func @empty(
// CHECK-NOT: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @empty(%a: memref<0x4xf32>, %o: memref<0x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : memref<0x4xf32>) outs(%o : memref<0x4xf32>) {
  ^bb0(%x: f32, %out: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  }
  return
}
