// kina-cpu-pipeline stops with the error of the pass that fails: here
// kina-entry-points, on a signature whose dims do not fit the function.
// RUN: %kina-opt %s --kina-cpu-pipeline --verify-diagnostics

// expected-error @+1 {{'kina.param_dims' entry 0 dim 1 is '5', but argument 0 has type 'memref<?x4xf32>'}}
func.func @bad(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {kina.param_dims = [["N", "5"]], kina.param_names = ["x"], kina.result_dims = [["N", "4"]], llvm.emit_c_interface} {
  return %arg0 : tensor<?x4xf32>
}
