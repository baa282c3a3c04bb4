// kina-tensor-desc-entry-points needs the status entry kina_<f> (run
// kina-entry-points first) and refuses a function whose TensorDesc entry
// symbol is taken, each with an error at the function.
// RUN: %kina-opt %s --split-input-file --kina-tensor-desc-entry-points --verify-diagnostics

// expected-error @+1 {{no status entry 'kina_f' for @f (run kina-entry-points first)}}
func.func @f(%x: memref<4xf32>) -> memref<4xf32> attributes {kina.param_dims = [["4"]], kina.param_names = ["x"], kina.result_dims = [["4"]]} {
  return %x : memref<4xf32>
}

// -----

// expected-error @+1 {{function @h collides with the TensorDesc entry 'kinatd_h'}}
func.func @h(%x: memref<4xf32>) -> memref<4xf32> attributes {kina.param_dims = [["4"]], kina.param_names = ["x"], kina.result_dims = [["4"]]} {
  return %x : memref<4xf32>
}
func.func private @kina_h(!llvm.ptr, !llvm.ptr) -> i32
func.func private @kinatd_h(!llvm.ptr, !llvm.ptr) -> i32
