// kina-lower-to-llvm (src/passes/LowerToLLVM.cpp): one conversion to the
// LLVM dialect in which memref.alloc calls the runtime's unranked
// allocation function (the host allocator by default, the alloc-function
// option otherwise), with a failed allocation giving null pointers, and
// memref.dealloc calls runtime_free.
// RUN: %kina-opt %s --kina-lower-to-llvm | FileCheck %s
// RUN: %kina-opt %s --kina-lower-to-llvm="alloc-function=_mlir_ciface_runtime_gpu_alloc_unranked" | FileCheck %s --check-prefix=GPU

// CHECK-DAG: llvm.func @_mlir_ciface_runtime_host_alloc_unranked(!llvm.ptr, i32) -> i32
// CHECK-DAG: llvm.func @runtime_free(!llvm.ptr) -> i32
// GPU: llvm.func @_mlir_ciface_runtime_gpu_alloc_unranked(!llvm.ptr, i32) -> i32
// GPU-NOT: runtime_host_alloc

// CHECK-LABEL: llvm.func @alloc_free(
// CHECK-SAME: %[[N:.*]]: i64) -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// The descriptor (sizes [N, 4], strides [4, 1]) goes to the runtime as an
// unranked memref {rank 2, pointer} with the element size, 4 bytes.
// CHECK: llvm.insertvalue %[[N]], %{{.*}}[3, 0]
// CHECK: %[[DESC:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[RANK:.*]] = llvm.mlir.constant(2 : i64) : i64
// CHECK: llvm.insertvalue %[[RANK]], %{{.*}}[0] : !llvm.struct<(i64, ptr)>
// CHECK: %[[UNRANKED:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, ptr)>
// CHECK: %[[SIZE:.*]] = llvm.mlir.constant(4 : i32) : i32
// CHECK: %[[STATUS:.*]] = llvm.call @_mlir_ciface_runtime_host_alloc_unranked(%[[UNRANKED]], %[[SIZE]]) : (!llvm.ptr, i32) -> i32
// CHECK: %[[FILLED:.*]] = llvm.load %[[DESC]]
// CHECK: %[[OK:.*]] = llvm.icmp "eq" %[[STATUS]], %{{.*}} : i32
// CHECK: %[[ALLOCATED:.*]] = llvm.extractvalue %[[FILLED]][0]
// CHECK: llvm.select %[[OK]], %[[ALLOCATED]], %{{.*}} : i1, !llvm.ptr
// CHECK: %[[FREED:.*]] = llvm.extractvalue %{{.*}}[0]
// CHECK: llvm.call @runtime_free(%[[FREED]]) : (!llvm.ptr) -> i32
// CHECK: llvm.call @_mlir_ciface_runtime_host_alloc_unranked(
// CHECK: llvm.return
func.func @alloc_free(%n: index) -> memref<?x4xf32> {
  %t = memref.alloc(%n) {alignment = 64 : i64} : memref<?x4xf32>
  memref.dealloc %t : memref<?x4xf32>
  %r = memref.alloc(%n) {alignment = 64 : i64} : memref<?x4xf32>
  return %r : memref<?x4xf32>
}
