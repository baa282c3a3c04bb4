// kina-fuse-rows (src/passes/FuseRows.cpp) divides by a row-invariant
// divisor once per row: where the root's payload divides by softmax's row
// sum of exp(x - m) or by a math.sqrt of row values (layer_norm, rms_norm),
// a / d becomes a * (1 / d), and LLVM hoists 1 / d out of the loop over the
// row (docs/tolerances.md, "Row divisors as reciprocals"). A division by any
// other row value stays a division.
// RUN: %kina-opt %s --kina-fuse-rows | FileCheck %s

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @softmax(
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: scf.for
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: ^bb0(%[[E:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[R:.*]] = arith.divf %[[ONE]], %[[S]] : f32
// CHECK-NEXT: arith.mulf %[[E]], %[[R]] : f32
// CHECK: kina.row_loop
module {
  func.func @softmax(%arg0: tensor<?x64xf32>) -> tensor<?x64xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
    %0 = tensor.empty(%dim) : tensor<?xf32>
    %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x64xf32>) outs(%1 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.maximumf %out, %in : f32
      linalg.yield %8 : f32
    } -> tensor<?xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
    %4 = tensor.empty(%dim) : tensor<?x64xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<?x64xf32>, tensor<?xf32>) outs(%4 : tensor<?x64xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %8 = arith.subf %in, %in_1 : f32
      %9 = math.exp %8 : f32
      linalg.yield %9 : f32
    } -> tensor<?x64xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%5 : tensor<?x64xf32>) outs(%3 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.addf %out, %in : f32
      linalg.yield %8 : f32
    } -> tensor<?xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %6 : tensor<?x64xf32>, tensor<?xf32>) outs(%4 : tensor<?x64xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %8 = arith.divf %in, %in_1 : f32
      linalg.yield %8 : f32
    } -> tensor<?x64xf32>
    return %7 : tensor<?x64xf32>
  }

// CHECK-LABEL: func.func @rms(
// CHECK: scf.for
// CHECK: %[[SQ:.*]] = math.sqrt
// CHECK: %[[R:.*]] = arith.divf %{{.*}}, %[[SQ]] : f32
// CHECK: arith.mulf %{{.*}}, %[[R]] : f32
// CHECK: kina.row_loop
  func.func @rms(%arg0: tensor<?x64xf32>, %arg1: tensor<64xf32>) -> tensor<?x64xf32> {
    %cst = arith.constant 6.400000e+01 : f32
    %cst_0 = arith.constant 0.000000e+00 : f32
    %cst_1 = arith.constant 9.99999997E-7 : f32
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
    %0 = tensor.empty(%dim) : tensor<?x64xf32>
    %1 = tensor.empty(%dim) : tensor<?xf32>
    %2 = linalg.fill ins(%cst_0 : f32) outs(%1 : tensor<?xf32>) -> tensor<?xf32>
    %3 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x64xf32>) outs(%2 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %5 = arith.mulf %in, %in : f32
      %6 = arith.addf %out, %5 : f32
      linalg.yield %6 : f32
    } -> tensor<?xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %3, %arg1 : tensor<?x64xf32>, tensor<?xf32>, tensor<64xf32>) outs(%0 : tensor<?x64xf32>) {
    ^bb0(%in: f32, %in_2: f32, %in_3: f32, %out: f32):
      %5 = arith.divf %in_2, %cst : f32
      %6 = arith.addf %5, %cst_1 : f32
      %7 = math.sqrt %6 : f32
      %8 = arith.divf %in, %7 : f32
      %9 = arith.mulf %8, %in_3 : f32
      linalg.yield %9 : f32
    } -> tensor<?x64xf32>
    return %4 : tensor<?x64xf32>
  }

// The row sum of x itself: the division stays.
// CHECK-LABEL: func.func @divide_by_plain_sum(
// CHECK: scf.for
// CHECK: math.exp
// CHECK: ^bb0(%[[E:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.divf %[[E]], %[[S]] : f32
// CHECK-NOT: arith.mulf
// CHECK: kina.row_loop
  func.func @divide_by_plain_sum(%arg0: tensor<?x64xf32>) -> tensor<?x64xf32> {
    %cst = arith.constant 0.000000e+00 : f32
    %cst_0 = arith.constant 0xFF800000 : f32
    %c0 = arith.constant 0 : index
    %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
    %0 = tensor.empty(%dim) : tensor<?xf32>
    %1 = linalg.fill ins(%cst_0 : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x64xf32>) outs(%1 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.maximumf %out, %in : f32
      linalg.yield %8 : f32
    } -> tensor<?xf32>
    %3 = linalg.fill ins(%cst : f32) outs(%0 : tensor<?xf32>) -> tensor<?xf32>
    %4 = tensor.empty(%dim) : tensor<?x64xf32>
    %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %2 : tensor<?x64xf32>, tensor<?xf32>) outs(%4 : tensor<?x64xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %8 = arith.subf %in, %in_1 : f32
      %9 = math.exp %8 : f32
      linalg.yield %9 : f32
    } -> tensor<?x64xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<?x64xf32>) outs(%3 : tensor<?xf32>) {
    ^bb0(%in: f32, %out: f32):
      %8 = arith.addf %out, %in : f32
      linalg.yield %8 : f32
    } -> tensor<?xf32>
    %7 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %6 : tensor<?x64xf32>, tensor<?xf32>) outs(%4 : tensor<?x64xf32>) {
    ^bb0(%in: f32, %in_1: f32, %out: f32):
      %8 = arith.divf %in, %in_1 : f32
      linalg.yield %8 : f32
    } -> tensor<?x64xf32>
    return %7 : tensor<?x64xf32>
  }
}
