// kina-entry-points (src/passes/EntryPoints.cpp): the status entry kina_<f>
// of each exported function, built from the Kina signature attributes
// (kina/IRConventions.h): parameter names and symbolic dims in the
// messages, static dims and the symbol N checked, the version stamp from
// the pass options; no entry for a private function.
// RUN: %kina-opt %s --kina-entry-points="compiler=kinac-test abi-version=3" | FileCheck %s
// RUN: %kina-opt %s --kina-entry-points | FileCheck %s --check-prefix=DEFAULT

// DEFAULT: llvm.mlir.global internal constant @__kina_version_stamp("kinac, Kina ABI {{[0-9]+}}\00")

// CHECK-DAG: llvm.mlir.global internal constant @__kina_version_stamp("kinac-test, Kina ABI 3\00")
// CHECK-DAG: llvm.mlir.global internal @__kina_version_checked(0 : i8)
// CHECK-DAG: @[[NEG:kina_entry_msg_[0-9]+]]("kina_f: argument %x dim 0 (N) has negative size {1}\00")
// CHECK-DAG: @[[STATIC:kina_entry_msg_[0-9]+]]("kina_f: argument %x dim 1 has size {1}, expected {0}\00")
// CHECK-DAG: @[[SYM:kina_entry_msg_[0-9]+]]("kina_f: argument %y dim 0 (N) has size {1}, but N = {0} from argument %x dim 0\00")
// CHECK-DAG: @[[NULLY:kina_entry_msg_[0-9]+]]("kina_f: argument %y descriptor pointer is null\00")
// CHECK-NOT: kina_g

// CHECK-LABEL: func.func @f(
// CHECK-LABEL: func.func @kina_f(
// CHECK-SAME: %[[OUT:.*]]: !llvm.ptr, %[[X:.*]]: !llvm.ptr, %[[Y:.*]]: !llvm.ptr) -> i32
// CHECK: call @kina_rt_begin_call()
// CHECK: %[[XD:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[YD:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: call @kina_rt_check_version(%{{.*}}, %{{.*}}, %{{.*}})
// CHECK: %[[N:.*]] = llvm.extractvalue %[[XD]][3, 0]
// CHECK: llvm.mlir.addressof @[[NEG]]
// CHECK: llvm.mlir.addressof @[[STATIC]]
// CHECK: %[[YN:.*]] = llvm.extractvalue %[[YD]][3, 0]
// CHECK: arith.cmpi eq, %[[YN]], %[[N]] : i64
// CHECK: llvm.mlir.addressof @[[SYM]]
// CHECK: %{{.*}} = call @f(%{{.*}}, %{{.*}}) : (memref<?x4xf32>, memref<?x4xf32>) -> memref<?x4xf32>
// CHECK: llvm.store %{{.*}}, %[[OUT]]
// CHECK: return %{{.*}} : i32
// CHECK: call @kina_rt_last_status()
func.func @f(%x: memref<?x4xf32>, %y: memref<?x4xf32>) -> memref<?x4xf32> attributes {kina.param_dims = [["N", "4"], ["N", "4"]], kina.param_names = ["x", "y"], kina.result_dims = [["N", "4"]], llvm.emit_c_interface} {
  return %x : memref<?x4xf32>
}

func.func private @g(%x: memref<f32>) -> memref<f32> attributes {kina.param_dims = [[]], kina.param_names = ["x"], kina.result_dims = [[]]} {
  return %x : memref<f32>
}

// A function without a Kina signature (not from Kina source) gets no entry.
func.func @not_kina(%x: memref<f32>) -> memref<f32> {
  return %x : memref<f32>
}
// CHECK-NOT: @kina_not_kina
// CHECK-NOT: @kina_g
