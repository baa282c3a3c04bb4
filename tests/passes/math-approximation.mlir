// kina-math-approximation: the default list (exp, tanh, erf) becomes MLIR's
// polynomial approximations on f32 scalars and vectors, f32 powf kina's
// f64 evaluation (PowFInF64: no fma or floor call, the result truncated
// to f32 once); log, sin, cos and every f64 op
// stay math ops (libm later); an explicit `functions` list replaces the
// default.
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

// f32 pow: |x| split on its f64 bits (logical shift, no i64 -> f64
// conversion), atanh's division, both polynomials as contract-flagged
// multiply-adds, the 1.5 * 2^52 shifter, one truncation to f32; the
// special cases are selects. f64 pow is left to libm/libmvec.
// CHECK-LABEL: func.func @power
// CHECK-NOT: math.powf {{.*}} : vector<8xf32>
// CHECK: arith.extf {{.*}} : vector<8xf32> to vector<8xf64>
// CHECK: arith.shrui {{.*}} : vector<8xi64>
// CHECK: arith.divf {{.*}} : vector<8xf64>
// CHECK: arith.mulf {{.*}} fastmath<contract> : vector<8xf64>
// CHECK: arith.addf {{.*}} fastmath<contract> : vector<8xf64>
// CHECK: arith.constant dense<0x4338000000000000> : vector<8xf64>
// CHECK: arith.shli {{.*}} : vector<8xi64>
// CHECK: arith.truncf {{.*}} : vector<8xf64> to vector<8xf32>
// CHECK: arith.select
// CHECK-NOT: math.fma
// CHECK-NOT: math.floor
// CHECK: math.powf {{.*}} : f64
// CHECK: return
// LOG-LABEL: func.func @power
// LOG: math.powf {{.*}} : vector<8xf32>
func.func @power(%x: vector<8xf32>, %y: vector<8xf32>, %d: f64) -> (vector<8xf32>, f64) {
  %p = math.powf %x, %y : vector<8xf32>
  %q = math.powf %d, %d : f64
  return %p, %q : vector<8xf32>, f64
}
