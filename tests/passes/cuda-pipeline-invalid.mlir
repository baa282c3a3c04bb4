// kina-cuda-pipeline stops with the error of the pass that fails: here
// kina-gpu-map-elementwise, on a linalg op that no kernel mapper handles
// and linalg-generalize-named-ops leaves as it is (linalg.softmax; MLIRGen
// writes softmax as generics), so it would stay on the host; and, as on the
// cpu, kina-entry-points on a signature whose dims do not fit the function.
// No ptxas is needed: the pipeline fails in its first stage.
// RUN: %kina-opt %s --split-input-file --kina-cuda-pipeline --verify-diagnostics

func.func @sm(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {kina.param_dims = [["N", "4"]], kina.param_names = ["x"], kina.result_dims = [["N", "4"]], llvm.emit_c_interface} {
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x4xf32>
  %0 = tensor.empty(%dim) : tensor<?x4xf32>
  // expected-error @+1 {{cuda target: no GPU kernel mapping for this op}}
  %1 = linalg.softmax dimension(1) ins(%arg0 : tensor<?x4xf32>) outs(%0 : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// expected-error @+1 {{'kina.param_dims' entry 0 dim 1 is '5', but argument 0 has type 'memref<?x4xf32>'}}
func.func @bad(%arg0: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {kina.param_dims = [["N", "5"]], kina.param_names = ["x"], kina.result_dims = [["N", "4"]], llvm.emit_c_interface} {
  return %arg0 : tensor<?x4xf32>
}
