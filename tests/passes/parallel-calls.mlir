// kina-parallel-calls (src/passes/Parallel.cpp): each call of an outlined
// body (kina.parallel_body) becomes kina_rt_parallel_for(n, cost, task,
// &values) with the captured values packed into a struct on the caller's
// frame. The struct's slot has no explicit alignment, so LLVM aligns it as
// its type: a captured vector (here vector<8xf32>, 32 bytes) is stored and
// loaded with its own alignment, which an alloca aligned to 8 broke
// (vmovaps on an unaligned slot: a segfault of the multiversioned -v3 code
// when a loop-invariant vector was captured).
// RUN: %kina-opt %s --kina-parallel-calls | FileCheck %s

// CHECK-LABEL: llvm.func internal @body(
// CHECK-LABEL: llvm.func internal @body_task(%arg0: !llvm.ptr, %arg1: i64, %arg2: i64) {
// CHECK: %[[CTX:.*]] = llvm.load %arg0 : !llvm.ptr -> !llvm.struct<(vector<8xf32>, ptr)>
// CHECK: llvm.call @body(%arg1, %arg2,
// CHECK-LABEL: llvm.func @caller(
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(vector<8xf32>, ptr)> : (i64) -> !llvm.ptr
// CHECK-NOT: alignment
// CHECK: llvm.store %{{.*}}, %[[SLOT]] : !llvm.struct<(vector<8xf32>, ptr)>, !llvm.ptr
// CHECK: llvm.call @kina_rt_parallel_for(%{{.*}}, %{{.*}}, %{{.*}}, %[[SLOT]])
module {
  llvm.func @body(%lo: i64, %end: i64, %cost: i64, %v: vector<8xf32>, %p: !llvm.ptr) attributes {kina.parallel_body} {
    llvm.store %v, %p : vector<8xf32>, !llvm.ptr
    llvm.return
  }
  llvm.func @caller(%v: vector<8xf32>, %p: !llvm.ptr) {
    %zero = llvm.mlir.constant(0 : i64) : i64
    %n = llvm.mlir.constant(64 : i64) : i64
    %cost = llvm.mlir.constant(1048576 : i64) : i64
    llvm.call @body(%zero, %n, %cost, %v, %p) : (i64, i64, i64, vector<8xf32>, !llvm.ptr) -> ()
    llvm.return
  }
}
