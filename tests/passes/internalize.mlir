// kina-internalize (src/passes/Internalize.cpp) on the LLVM dialect: each
// Kina function (an llvm.func carrying a Kina signature) becomes the
// internal __kina_fn_<f>, with every use renamed; its C-interface wrapper
// _mlir_ciface_<f> (which the conversion gave the same attributes) and the
// status entry kina_<f> keep their names; no function keeps the signature
// attributes. The pass cannot fail.
// RUN: %kina-opt %s --kina-internalize | FileCheck %s

// CHECK-NOT: kina.param
// CHECK-LABEL: llvm.func internal @__kina_fn_p_helper(
// CHECK-LABEL: llvm.func internal @__kina_fn_p_f(
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: llvm.call @__kina_fn_p_helper(
// CHECK-LABEL: llvm.func @_mlir_ciface_p_f(
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: llvm.call @__kina_fn_p_f(
// CHECK-LABEL: llvm.func @kina_p_f(
// CHECK: llvm.call @__kina_fn_p_f(
// CHECK-LABEL: llvm.func @not_kina(
// CHECK-LABEL: llvm.func @kina_rt_begin_call()
// CHECK-NOT: kina.param
llvm.func @p_helper(%x: f32) -> f32 attributes {kina.param_dims = [[]], kina.param_names = ["x"], kina.result_dims = [[]], sym_visibility = "private"} {
  llvm.return %x : f32
}
llvm.func @p_f(%x: f32) -> f32 attributes {kina.param_dims = [[]], kina.param_names = ["x"], kina.result_dims = [[]], llvm.emit_c_interface} {
  %r = llvm.call @p_helper(%x) : (f32) -> f32
  llvm.return %r : f32
}
llvm.func @_mlir_ciface_p_f(%x: f32) -> f32 attributes {kina.param_dims = [[]], kina.param_names = ["x"], kina.result_dims = [[]], llvm.emit_c_interface} {
  %r = llvm.call @p_f(%x) : (f32) -> f32
  llvm.return %r : f32
}
llvm.func @kina_p_f(%x: f32) -> f32 {
  %r = llvm.call @p_f(%x) : (f32) -> f32
  llvm.return %r : f32
}
llvm.func @not_kina(%x: f32) -> f32 {
  llvm.return %x : f32
}
llvm.func @kina_rt_begin_call()
