// kina-constant-global-order (src/passes/workarounds/ConstantGlobalOrder.cpp):
// bufferization's constant globals, here in the scrambled order and names
// MLIR 22's one-shot-bufferize may give them (llvm/llvm-project#184722),
// are put in the order of their first memref.get_global and named again
// in that order (`__constant_4xf32`, then `__constant_4xf32_0`), every use
// renamed with them; other globals and symbols are left alone.
// RUN: %kina-opt %s --kina-constant-global-order | FileCheck %s

// CHECK: memref.global "private" @__constant_keep : memref<2xf32>
// CHECK-NEXT: memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<1.000000e+00>
// CHECK-NEXT: memref.global "private" constant @__constant_4xf32_0 : memref<4xf32> = dense<2.000000e+00>
// CHECK-NEXT: memref.global "private" constant @__constant_3xi8 : memref<3xi8> = dense<7>
// CHECK-NEXT: memref.global "private" constant @__constant_4xf32_1 : memref<4xf32> = dense<3.000000e+00>
// CHECK-NEXT: memref.global "private" constant @other : memref<4xf32> = dense<5.000000e+00>
// CHECK-LABEL: func.func @first(
// CHECK: memref.get_global @__constant_4xf32 : memref<4xf32>
// CHECK-LABEL: func.func @second(
// CHECK: memref.get_global @__constant_4xf32_0 : memref<4xf32>
// CHECK: memref.get_global @__constant_3xi8 : memref<3xi8>
// CHECK: memref.get_global @other : memref<4xf32>
// CHECK-LABEL: func.func @third(
// CHECK: memref.get_global @__constant_4xf32_1 : memref<4xf32>
// CHECK: memref.get_global @__constant_4xf32_0 : memref<4xf32>

module {
  memref.global "private" @__constant_keep : memref<2xf32>
  memref.global "private" constant @__constant_3xi8 : memref<3xi8> = dense<7>
  memref.global "private" constant @__constant_4xf32_1 : memref<4xf32> = dense<1.0>
  memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<3.0>
  memref.global "private" constant @__constant_4xf32_0 : memref<4xf32> = dense<2.0>
  memref.global "private" constant @other : memref<4xf32> = dense<5.0>
  func.func @first() -> memref<4xf32> {
    %0 = memref.get_global @__constant_4xf32_1 : memref<4xf32>
    return %0 : memref<4xf32>
  }
  func.func @second() -> (memref<4xf32>, memref<3xi8>, memref<4xf32>) {
    %0 = memref.get_global @__constant_4xf32_0 : memref<4xf32>
    %1 = memref.get_global @__constant_3xi8 : memref<3xi8>
    %2 = memref.get_global @other : memref<4xf32>
    return %0, %1, %2 : memref<4xf32>, memref<3xi8>, memref<4xf32>
  }
  func.func @third() -> (memref<4xf32>, memref<4xf32>) {
    %0 = memref.get_global @__constant_4xf32 : memref<4xf32>
    %1 = memref.get_global @__constant_4xf32_0 : memref<4xf32>
    return %0, %1 : memref<4xf32>, memref<4xf32>
  }
}
