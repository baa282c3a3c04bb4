// kina-tensor-desc-entry-points (src/passes/TensorDescEntryPoints.cpp): the
// destination-passing entry kinatd_<f> of each exported function, a frame
// around the status entry kina_<f>: the table of dtype codes and ranks
// (results first), kina_rt_td_prepare, kina_<f> on the scratch slots,
// kina_rt_td_finish; no entry for a private function; a rank above 4 and
// the option supported=false give entries that only record an error; with
// gpu=true (the cuda target) the frame is kina_rt_td_gpu_prepare/_finish,
// which also get the caller's device and stream.
// RUN: %kina-opt %s --kina-entry-points --kina-tensor-desc-entry-points | FileCheck %s
// RUN: %kina-opt %s --kina-entry-points --kina-tensor-desc-entry-points=supported=false | FileCheck %s --check-prefix=OFF
// RUN: %kina-opt %s --kina-entry-points --kina-tensor-desc-entry-points=gpu=true | FileCheck %s --check-prefix=GPU

// CHECK-DAG: llvm.mlir.global internal constant @kinatd_table_f(dense<[1, 2, 0, 2, 0, 2, 3, 0]> : tensor<8xi32>)
// CHECK-DAG: @[[NAME:kinatd_msg_[0-9]+]]("kinatd_f\00")
// CHECK-DAG: ("kinatd_big: a parameter or result has rank above 4, which a KinaTensorDesc cannot carry\00")
// CHECK-NOT: kinatd_table_g

// CHECK-LABEL: func.func @kinatd_f(
// CHECK-SAME: %[[OUT:[^:]*]]: !llvm.ptr, %[[X:[^:]*]]: !llvm.ptr, %[[N:[^:]*]]: !llvm.ptr, %{{.*}}: i32, %{{.*}}: i64) -> i32
// CHECK: %[[TABLE:.*]] = llvm.mlir.addressof @kinatd_table_f
// CHECK: %[[OUTS:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: llvm.store %[[OUT]]
// CHECK: %[[INS:.*]] = llvm.alloca %{{.*}} x !llvm.ptr
// CHECK: llvm.store %[[X]]
// CHECK: llvm.store %[[N]]
// CHECK: %[[SCRATCH:.*]] = llvm.alloca %{{.*}} x !llvm.array<11 x i64>
// CHECK: %[[PREP:.*]] = call @kina_rt_td_prepare(%{{.*}}, %[[TABLE]], %[[OUTS]], %[[INS]], %[[SCRATCH]])
// CHECK: cf.cond_br
// CHECK: %[[S0:.*]] = llvm.getelementptr %[[SCRATCH]][0]
// CHECK: %[[S1:.*]] = llvm.getelementptr %[[SCRATCH]][1]
// CHECK: %[[S2:.*]] = llvm.getelementptr %[[SCRATCH]][2]
// CHECK: %[[ST:.*]] = call @kina_f(%[[S0]], %[[S1]], %[[S2]])
// CHECK: %[[RC:.*]] = call @kina_rt_td_finish(%{{.*}}, %[[TABLE]], %[[OUTS]], %[[INS]], %[[SCRATCH]], %[[ST]])
// CHECK: return %[[RC]] : i32
// CHECK: return %[[PREP]] : i32
func.func @f(%x: memref<?x4xf32>, %n: memref<i32>) -> memref<?x4xf32> attributes {kina.param_dims = [["N", "4"], []], kina.param_names = ["x", "n"], kina.result_dims = [["N", "4"]], llvm.emit_c_interface} {
  return %x : memref<?x4xf32>
}

// CHECK-LABEL: func.func @kinatd_big(
// CHECK: call @kina_rt_fail(%{{.*}}, %{{.*}})
func.func @big(%x: memref<1x1x1x1x2xi8>) -> memref<1x1x1x1x2xi8> attributes {kina.param_dims = [["1", "1", "1", "1", "2"]], kina.param_names = ["x"], kina.result_dims = [["1", "1", "1", "1", "2"]], llvm.emit_c_interface} {
  return %x : memref<1x1x1x1x2xi8>
}

func.func private @g(%x: memref<f32>) -> memref<f32> attributes {kina.param_dims = [[]], kina.param_names = ["x"], kina.result_dims = [[]]} {
  return %x : memref<f32>
}
// CHECK-NOT: @kinatd_g

// OFF-LABEL: func.func @kinatd_f(
// OFF: %[[C:.*]] = arith.constant -4 : i32
// OFF: call @kina_rt_fail(%[[C]], %{{.*}})
// OFF-NOT: kina_rt_td_prepare

// GPU-LABEL: func.func @kinatd_f(
// GPU-SAME: %[[OUT:[^:]*]]: !llvm.ptr, %[[X:[^:]*]]: !llvm.ptr, %[[N:[^:]*]]: !llvm.ptr, %[[DEV:[^:]*]]: i32, %[[STREAM:[^:]*]]: i64) -> i32
// GPU: %[[PREP:.*]] = call @kina_rt_td_gpu_prepare(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[DEV]], %[[STREAM]])
// GPU: %[[ST:.*]] = call @kina_f(
// GPU: call @kina_rt_td_gpu_finish(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ST]], %[[DEV]], %[[STREAM]])
// GPU-NOT: kina_rt_td_prepare
