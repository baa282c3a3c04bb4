// kina-lower-to-llvm is a full conversion: anything left that is not
// arith, math, cf, func, memref, vector, index or ub on memrefs (here a
// function on tensors) is an error, not a partly lowered module.
// RUN: %kina-opt %s --kina-lower-to-llvm --verify-diagnostics

// expected-error @+1 {{failed to legalize operation 'func.func'}}
func.func @on_tensors(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  return %e : tensor<4xf32>
}
