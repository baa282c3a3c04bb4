// kina-math-approximation: the default list (exp, tanh, erf) becomes MLIR's
// polynomial approximations on f32 scalars and vectors; log, sin, cos and
// every f64 op stay math ops (libm later); an explicit `functions` list
// replaces the default.
// RUN: %kina-opt %s --kina-math-approximation | FileCheck %s
// RUN: %kina-opt %s --kina-math-approximation=functions=log | FileCheck %s --check-prefix=LOG

// CHECK-LABEL: func.func @approximated
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK: arith.bitcast
// CHECK: return
// LOG-LABEL: func.func @approximated
// LOG: math.exp
// LOG: math.tanh
// LOG: math.erf
func.func @approximated(%x: f32, %v: vector<8xf32>) -> (f32, f32, vector<8xf32>) {
  %e = math.exp %x : f32
  %t = math.tanh %e : f32
  %r = math.erf %v : vector<8xf32>
  return %e, %t, %r : f32, f32, vector<8xf32>
}

// CHECK-LABEL: func.func @kept
// CHECK: math.log
// CHECK: math.sin
// CHECK: math.cos
// CHECK: math.exp {{.*}} : f64
// LOG-LABEL: func.func @kept
// LOG-NOT: math.log
// LOG: math.sin
func.func @kept(%x: f32, %d: f64) -> (f32, f32, f32, f64) {
  %l = math.log %x : f32
  %s = math.sin %x : f32
  %c = math.cos %x : f32
  %e = math.exp %d : f64
  return %l, %s, %c, %e : f32, f32, f32, f64
}
