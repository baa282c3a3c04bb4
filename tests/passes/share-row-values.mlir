// kina-share-row-values (src/passes/ShareRowValues.cpp): in a row loop of
// kina-fuse-rows, a value with a math op that both the row sum and the
// final op compute (softmax's exp(x - m)) is computed once, into the row
// of the result, and read there by both. bf16 results, which cannot hold
// the f32 value, and loops that are not row loops are left alone.
// RUN: %kina-opt %s --kina-share-row-values | FileCheck %s

#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>

// CHECK-LABEL: func.func @softmax(
// CHECK: scf.for %[[I:.*]] = %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}})
// CHECK: %[[ROW:.*]] = tensor.extract_slice %[[ACC]][%[[I]], 0] [1, 64] [1, 1]
// CHECK: %[[E:.*]] = linalg.generic {{.*}} outs(%[[ROW]] : tensor<1x64xf32>)
// CHECK: arith.subf
// CHECK: math.exp
// CHECK-NOT: arith.addf
// CHECK: linalg.yield
// CHECK: %[[S:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%[[E]] : tensor<1x64xf32>)
// CHECK-NOT: math.exp
// CHECK: arith.addf
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<1xf32>) outs(%[[E]] : tensor<1x64xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NOT: math.exp
// CHECK: %[[REC:.*]] = arith.divf %{{.*}}, %[[IN]] : f32
// CHECK: arith.mulf %[[OUT]], %[[REC]] : f32
// CHECK: tensor.insert_slice %[[R]] into %[[ACC]][%[[I]], 0]
// CHECK: kina.row_loop
func.func @softmax(%arg0: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %cst = arith.constant 1.000000e+00 : f32
  %c1 = arith.constant 1 : index
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x64xf32>
  %0 = tensor.empty(%dim) : tensor<?x64xf32>
  %1 = scf.for %arg1 = %c0 to %dim step %c1 iter_args(%arg2 = %0) -> (tensor<?x64xf32>) {
    %x = tensor.extract_slice %arg0[%arg1, 0] [1, 64] [1, 1] : tensor<?x64xf32> to tensor<1x64xf32>
    %2 = tensor.empty() : tensor<1xf32>
    %3 = linalg.fill ins(%cst_1 : f32) outs(%2 : tensor<1xf32>) -> tensor<1xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<1x64xf32>) outs(%3 : tensor<1xf32>) {
    ^bb0(%in: f32, %out: f32):
      %9 = arith.maximumf %out, %in : f32
      linalg.yield %9 : f32
    } -> tensor<1xf32>
    %5 = linalg.fill ins(%cst_0 : f32) outs(%2 : tensor<1xf32>) -> tensor<1xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%x, %4 : tensor<1x64xf32>, tensor<1xf32>) outs(%5 : tensor<1xf32>) {
    ^bb0(%in: f32, %in_2: f32, %out: f32):
      %9 = arith.subf %in, %in_2 : f32
      %10 = math.exp %9 : f32
      %11 = arith.addf %out, %10 : f32
      linalg.yield %11 : f32
    } -> tensor<1xf32>
    %7 = tensor.empty() : tensor<1x64xf32>
    %8 = linalg.generic {indexing_maps = [#map, #map1, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %4, %6 : tensor<1x64xf32>, tensor<1xf32>, tensor<1xf32>) outs(%7 : tensor<1x64xf32>) {
    ^bb0(%in: f32, %in_2: f32, %in_3: f32, %out: f32):
      %9 = arith.subf %in, %in_2 : f32
      %10 = math.exp %9 : f32
      %11 = arith.divf %cst, %in_3 : f32
      %12 = arith.mulf %10, %11 : f32
      linalg.yield %12 : f32
    } -> tensor<1x64xf32>
    %inserted = tensor.insert_slice %8 into %arg2[%arg1, 0] [1, 64] [1, 1] : tensor<1x64xf32> into tensor<?x64xf32>
    scf.yield %inserted : tensor<?x64xf32>
  } {kina.parallel_loop, kina.row_loop}
  return %1 : tensor<?x64xf32>
}

// bf16: the root cannot hold the f32 exp; both exps stay.
// CHECK-LABEL: func.func @softmax_bf16(
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: math.exp
// CHECK: arith.truncf
// CHECK: kina.row_loop
func.func @softmax_bf16(%arg0: tensor<?x64xbf16>) -> tensor<?x64xbf16> {
  %cst = arith.constant 1.000000e+00 : f32
  %c1 = arith.constant 1 : index
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : index
  %dim = tensor.dim %arg0, %c0 : tensor<?x64xbf16>
  %0 = tensor.empty(%dim) : tensor<?x64xbf16>
  %1 = scf.for %arg1 = %c0 to %dim step %c1 iter_args(%arg2 = %0) -> (tensor<?x64xbf16>) {
    %x = tensor.extract_slice %arg0[%arg1, 0] [1, 64] [1, 1] : tensor<?x64xbf16> to tensor<1x64xbf16>
    %2 = tensor.empty() : tensor<1xf32>
    %3 = linalg.fill ins(%cst_1 : f32) outs(%2 : tensor<1xf32>) -> tensor<1xf32>
    %4 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%x : tensor<1x64xbf16>) outs(%3 : tensor<1xf32>) {
    ^bb0(%in: bf16, %out: f32):
      %9 = arith.extf %in : bf16 to f32
      %10 = arith.maximumf %out, %9 : f32
      linalg.yield %10 : f32
    } -> tensor<1xf32>
    %5 = linalg.fill ins(%cst_0 : f32) outs(%2 : tensor<1xf32>) -> tensor<1xf32>
    %6 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%x, %4 : tensor<1x64xbf16>, tensor<1xf32>) outs(%5 : tensor<1xf32>) {
    ^bb0(%in: bf16, %in_2: f32, %out: f32):
      %9 = arith.extf %in : bf16 to f32
      %10 = arith.subf %9, %in_2 : f32
      %11 = math.exp %10 : f32
      %12 = arith.addf %out, %11 : f32
      linalg.yield %12 : f32
    } -> tensor<1xf32>
    %7 = tensor.empty() : tensor<1x64xbf16>
    %8 = linalg.generic {indexing_maps = [#map, #map1, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %4, %6 : tensor<1x64xbf16>, tensor<1xf32>, tensor<1xf32>) outs(%7 : tensor<1x64xbf16>) {
    ^bb0(%in: bf16, %in_2: f32, %in_3: f32, %out: bf16):
      %9 = arith.extf %in : bf16 to f32
      %10 = arith.subf %9, %in_2 : f32
      %11 = math.exp %10 : f32
      %12 = arith.divf %cst, %in_3 : f32
      %13 = arith.mulf %11, %12 : f32
      %14 = arith.truncf %13 : f32 to bf16
      linalg.yield %14 : bf16
    } -> tensor<1x64xbf16>
    %inserted = tensor.insert_slice %8 into %arg2[%arg1, 0] [1, 64] [1, 1] : tensor<1x64xbf16> into tensor<?x64xbf16>
    scf.yield %inserted : tensor<?x64xbf16>
  } {kina.parallel_loop, kina.row_loop}
  return %1 : tensor<?x64xbf16>
}

// Not a row loop of kina-fuse-rows: the same ops, left alone.
// CHECK-LABEL: func.func @not_row_loop(
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: math.exp
// CHECK: arith.mulf
func.func @not_row_loop(%x: tensor<1x64xf32>, %m: tensor<1xf32>) -> tensor<1x64xf32> {
  %cst = arith.constant 1.000000e+00 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %2 = tensor.empty() : tensor<1xf32>
  %5 = linalg.fill ins(%cst_0 : f32) outs(%2 : tensor<1xf32>) -> tensor<1xf32>
  %6 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%x, %m : tensor<1x64xf32>, tensor<1xf32>) outs(%5 : tensor<1xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %9 = arith.subf %in, %in_2 : f32
    %10 = math.exp %9 : f32
    %11 = arith.addf %out, %10 : f32
    linalg.yield %11 : f32
  } -> tensor<1xf32>
  %7 = tensor.empty() : tensor<1x64xf32>
  %8 = linalg.generic {indexing_maps = [#map, #map1, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%x, %m, %6 : tensor<1x64xf32>, tensor<1xf32>, tensor<1xf32>) outs(%7 : tensor<1x64xf32>) {
  ^bb0(%in: f32, %in_2: f32, %in_3: f32, %out: f32):
    %9 = arith.subf %in, %in_2 : f32
    %10 = math.exp %9 : f32
    %11 = arith.divf %cst, %in_3 : f32
    %12 = arith.mulf %10, %11 : f32
    linalg.yield %12 : f32
  } -> tensor<1x64xf32>
  return %8 : tensor<1x64xf32>
}
