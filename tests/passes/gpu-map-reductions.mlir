// kina-gpu-map-reductions (src/targets/cuda/GpuMapReductions.cpp): a
// bufferized generic with a reduction loop becomes one gpu.launch of 256
// threads per block, one block per output point: each thread folds a
// strided part of the row into a register, then 8 halving steps combine the
// partial results in workgroup memory (a barrier after each), and thread 0
// combines the total with the init. A region the pass cannot split into a
// combiner and a contribution is folded by one thread per output point, in
// order; a static empty iteration space erases the op (the init is the
// result). Parallel generics are left to kina-gpu-map-elementwise. The
// pass cannot fail.
// RUN: %kina-opt %s --kina-gpu-map-reductions | FileCheck %s

// CHECK-LABEL: func.func @row_sum(
// CHECK-SAME: %[[X:.*]]: memref<?x300xf32>, %[[Y:.*]]: memref<?xf32>)
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch blocks({{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256{{.*}}) workgroup(%[[SH:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[X]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[SH]][%[[T]]]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-8: gpu.barrier
// CHECK: memref.load %[[Y]]
// CHECK: memref.load %[[SH]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @row_sum(%x: memref<?x300xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x300xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// acc' = x + acc * acc is no combination of partial results: one thread per
// output point folds the row in order, without workgroup memory.
// CHECK-LABEL: func.func @sequential(
// CHECK-SAME: %[[X:.*]]: memref<?x7xf32>, %[[Y:.*]]: memref<?xf32>)
// CHECK: gpu.launch
// CHECK-NOT: workgroup
// CHECK-NOT: gpu.barrier
// CHECK: %[[INIT:.*]] = memref.load %[[Y]]
// CHECK: scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]])
// CHECK: memref.load %[[X]]
// CHECK: arith.mulf %[[ACC]], %[[ACC]]
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @sequential(%x: memref<?x7xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x7xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %h = arith.mulf %acc, %acc : f32
    %s = arith.addf %in, %h : f32
    linalg.yield %s : f32
  }
  return
}

// A static 0-sized reduced extent: nothing to compute, the op is erased.
// CHECK-LABEL: func.func @empty(
// CHECK-NOT: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @empty(%x: memref<4x0xf32>, %y: memref<4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x0xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @parallel(
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
// CHECK: return
func.func @parallel(%a: memref<8xf32>, %o: memref<8xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%a : memref<8xf32>) outs(%o : memref<8xf32>) {
  ^bb0(%x: f32, %out: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  return
}

// A reduction over the outer dim (reduce_sum over axis 0): the column
// kernel, 32 x 32 threads, x over consecutive output points (coalesced
// loads of a row), y over the reduced rows from the identity 0, four loads
// per step, a 5-step tree over y in workgroup memory, thread (x, 0) adding
// the init.
// CHECK-LABEL: func.func @col_sum(
// CHECK-SAME: %[[X:.*]]: memref<?x300xf32>, %[[Y:.*]]: memref<300xf32>)
// CHECK: gpu.launch {{.*}} threads(%[[TX:.*]], %[[TY:.*]], %{{.*}}) in (%{{.*}} = %c32{{.*}}, %{{.*}} = %c32{{.*}}, %{{.*}}) workgroup(%[[SH:.*]] : memref<32x32xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.load %[[X]]
// CHECK: memref.load %[[X]]
// CHECK: memref.load %[[X]]
// CHECK: memref.load %[[X]]
// CHECK-COUNT-4: arith.addf
// CHECK: scf.for {{.*}} iter_args
// CHECK: memref.store %{{.*}}, %[[SH]][%[[TY]], %[[TX]]]
// CHECK-NEXT: gpu.barrier
// CHECK-COUNT-5: gpu.barrier
// CHECK: memref.load %[[Y]]
// CHECK: memref.load %[[SH]][%c0{{.*}}, %[[TX]]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @col_sum(%x: memref<?x300xf32>, %y: memref<300xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>], iterator_types = ["reduction", "parallel"]} ins(%x : memref<?x300xf32>) outs(%y : memref<300xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}
