// kina-buffer-ownership refuses what MLIRGen and one-shot bufferization
// never produce: a function of several blocks (Kina functions are straight
// line) and a body that does not end in func.return.
// RUN: %kina-opt %s --split-input-file --kina-buffer-ownership --verify-diagnostics

// expected-error @+1 {{internal error: expected a single-block function after bufferization}}
func.func @branches(%a: memref<4xf32>, %c: i1) -> memref<4xf32> {
  cf.cond_br %c, ^bb1, ^bb2
^bb1:
  return %a : memref<4xf32>
^bb2:
  return %a : memref<4xf32>
}

// -----

// expected-error @+1 {{internal error: function without func.return}}
func.func @no_return(%a: memref<4xf32>) -> memref<4xf32> {
  llvm.unreachable
}
