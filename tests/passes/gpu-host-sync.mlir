// kina-gpu-host-sync (src/targets/cuda/GpuHostSync.cpp): the host reads a
// buffer that a kernel wrote (gather's index range check reads the
// minimum and maximum a reduction kernel computed) only after a call of
// kina_rt_gpu_synchronize(), since the runtime does not wait after each
// launch of a call. Loads separated only by loads, deallocations and
// effect-free ops share one wait; loads from allocas and globals (host
// memory) and loads inside kernels get none. The pass cannot fail.
// RUN: %kina-opt %s --kina-gpu-host-sync | FileCheck %s

memref.global "private" constant @table : memref<2xi64> = dense<[1, 2]>

// CHECK-LABEL: func.func @range_check(
// CHECK: gpu.launch
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<16xi32>
// CHECK: gpu.terminator
// CHECK: call @kina_rt_gpu_synchronize() : () -> ()
// CHECK-NEXT: memref.load %[[MIN:.*]][] : memref<i64>
// CHECK-NEXT: memref.dealloc
// CHECK-NEXT: arith.constant
// CHECK-NEXT: memref.load %{{.*}}[] : memref<i64>
// CHECK-NOT: kina_rt_gpu_synchronize
// CHECK: memref.alloca
// CHECK-NOT: kina_rt_gpu_synchronize
// CHECK: return
func.func @range_check(%x: memref<16xi32>, %min: memref<i64>, %max: memref<i64>) -> i64 {
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
    %v = memref.load %x[%tx] : memref<16xi32>
    %w = arith.extsi %v : i32 to i64
    memref.store %w, %min[] : memref<i64>
    gpu.terminator
  }
  %a = memref.load %min[] : memref<i64>
  memref.dealloc %min : memref<i64>
  %c0 = arith.constant 0 : index
  %b = memref.load %max[] : memref<i64>
  %s = memref.alloca() : memref<i64>
  memref.store %a, %s[] : memref<i64>
  %t = memref.load %s[] : memref<i64>
  %g = memref.get_global @table : memref<2xi64>
  %u = memref.load %g[%c0] : memref<2xi64>
  %r = arith.addi %t, %b : i64
  %q = arith.addi %r, %u : i64
  return %q : i64
}

// No host load of a kernel-written buffer: no wait, no declaration.
// CHECK-LABEL: func.func @none(
// CHECK-NOT: kina_rt_gpu_synchronize
// CHECK: return
func.func @none(%s: memref<i64>) {
  return
}

// CHECK: func.func private @kina_rt_gpu_synchronize()
