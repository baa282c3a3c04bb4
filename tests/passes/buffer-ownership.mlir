// kina-buffer-ownership (src/passes/BufferOwnership.cpp) on bufferized
// functions: a returned argument is copied into a fresh allocation, a
// temporary is released after its last use, every allocation's data pointer
// is checked (null: release what is live, return null descriptors), and a
// `@__kina_check` call becomes the same early return after
// kina_rt_shape_error with its message.
// RUN: %kina-opt %s --kina-buffer-ownership | FileCheck %s

#id = affine_map<(d0) -> (d0)>
func.func private @__kina_check(i1, index, index)

// CHECK: func.func private @kina_rt_shape_error(!llvm.ptr, i64, i64) -> i32
// CHECK: llvm.mlir.global internal constant @kina_msg_0("m.kir:3:3: add: dim 0 is {0} and {1}\00")
// CHECK-NOT: @__kina_check

// CHECK-LABEL: func.func @returns_arg(
// CHECK-SAME: %[[A:.*]]: memref<4xf32>) -> memref<4xf32>
// CHECK: %[[NEW:.*]] = memref.alloc() {alignment = 64 : i64} : memref<4xf32>
// CHECK: %[[P:.*]] = memref.extract_aligned_pointer_as_index %[[NEW]]
// CHECK: %[[OK:.*]] = arith.cmpi ne, %[[P]], %{{.*}} : index
// CHECK: cf.cond_br %[[OK]], ^[[COPY:.*]], ^[[FAIL:.*]]
// CHECK: ^[[COPY]]:
// CHECK: linalg.copy ins(%[[A]] : memref<4xf32>) outs(%[[NEW]] : memref<4xf32>)
// CHECK: return %[[NEW]] : memref<4xf32>
// CHECK: ^[[FAIL]]:
// CHECK: %[[Z:.*]] = llvm.mlir.zero : !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK: %[[NULL:.*]] = builtin.unrealized_conversion_cast %[[Z]] {{.*}} to memref<4xf32>
// CHECK: return %[[NULL]]
func.func @returns_arg(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}

// CHECK-LABEL: func.func @temp(
// CHECK: %[[T:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK: cf.cond_br %{{.*}}, ^[[B1:.*]], ^[[F1:.*]]
// CHECK: ^[[B1]]:
// CHECK: linalg.generic
// CHECK: %[[R:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xf32>
// CHECK: cf.cond_br %{{.*}}, ^[[B2:.*]], ^[[F2:.*]]
// CHECK: ^[[B2]]:
// CHECK: linalg.generic {{.*}} ins(%[[T]] : memref<?xf32>) outs(%[[R]] : memref<?xf32>)
// CHECK: memref.dealloc %[[T]] : memref<?xf32>
// CHECK-NEXT: return %[[R]] : memref<?xf32>
// CHECK: ^[[F1]]:
// CHECK-NOT: memref.dealloc
// CHECK: return
// CHECK: ^[[F2]]:
// CHECK-NEXT: memref.dealloc %[[T]] : memref<?xf32>
// CHECK: return
func.func @temp(%a: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  %t = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<?xf32>) outs(%t : memref<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = arith.addf %x, %x : f32
    linalg.yield %v : f32
  }
  %r = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%t : memref<?xf32>) outs(%r : memref<?xf32>) {
  ^bb0(%x: f32, %o: f32):
    %v = arith.mulf %x, %x : f32
    linalg.yield %v : f32
  }
  return %r : memref<?xf32>
}

// CHECK-LABEL: func.func @checked(
// CHECK: %[[N:.*]] = memref.dim
// CHECK: %[[M:.*]] = memref.dim
// CHECK: %[[OK:.*]] = arith.cmpi eq, %[[N]], %[[M]] : index
// CHECK: cf.cond_br %[[OK]], ^[[GO:.*]], ^[[BAD:.*]]
// CHECK: ^[[BAD]]:
// CHECK: %[[MSG:.*]] = llvm.mlir.addressof @kina_msg_0 : !llvm.ptr
// CHECK: %[[TEXT:.*]] = llvm.getelementptr %[[MSG]][0, 0]
// CHECK: %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[M64:.*]] = arith.index_cast %[[M]] : index to i64
// CHECK: call @kina_rt_shape_error(%[[TEXT]], %[[N64]], %[[M64]])
// CHECK: return
func.func @checked(%a: memref<?xf32>, %b: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  %m = memref.dim %b, %c0 : memref<?xf32>
  %ok = arith.cmpi eq, %n, %m : index
  call @__kina_check(%ok, %n, %m) {kina.message = "m.kir:3:3: add: dim 0 is {0} and {1}"} : (i1, index, index) -> ()
  %r = memref.alloc(%n) {alignment = 64 : i64} : memref<?xf32>
  return %r : memref<?xf32>
}
