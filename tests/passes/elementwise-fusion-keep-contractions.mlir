// kina-elementwise-fusion with keep-contractions (the cuda target's
// setting): an elementwise producer of a matmul's operand and a reshape of
// its operand stay outside the (generic) matmul, which remains a plain contraction
// for cuBLASLt; without the option (the cpu target) both are folded in.
// RUN: %kina-opt %s --kina-elementwise-fusion="keep-contractions=true" | FileCheck %s --check-prefix=KEEP
// RUN: %kina-opt %s --kina-elementwise-fusion | FileCheck %s --check-prefix=FUSE

// KEEP-LABEL: func.func @relu_then_matmul(
// KEEP: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// KEEP: arith.maximumf
// KEEP: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<8x3xf32>)
// FUSE-LABEL: func.func @relu_then_matmul(
// FUSE: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// FUSE: arith.maximumf
// FUSE: arith.mulf
func.func @relu_then_matmul(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.maximumf %x, %zero : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  %ce = tensor.empty() : tensor<4x3xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ce : tensor<4x3xf32>) -> tensor<4x3xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%r, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%c : tensor<4x3xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %mul = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %mul : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  return %p : tensor<4x3xf32>
}

// A [2, 3, 4] operand collapsed to [6, 4] for a matmul: with the option
// the collapse stays (one k loop); without it, it is folded by expansion.
// KEEP-LABEL: func.func @collapse_then_matmul(
// KEEP: tensor.collapse_shape
// KEEP: iterator_types = ["parallel", "parallel", "reduction"]
// FUSE-LABEL: func.func @collapse_then_matmul(
// FUSE-NOT: tensor.collapse_shape
// FUSE: iterator_types = ["parallel", "parallel", "parallel", "reduction"]
func.func @collapse_then_matmul(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<6x5xf32> {
  %zero = arith.constant 0.0 : f32
  %x = tensor.collapse_shape %a [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %ce = tensor.empty() : tensor<6x5xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ce : tensor<6x5xf32>) -> tensor<6x5xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %b : tensor<6x4xf32>, tensor<4x5xf32>) outs(%c : tensor<6x5xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<6x5xf32>
  return %p : tensor<6x5xf32>
}

// A bf16 product's rounding (MLIRGen's truncf after the f32 contraction)
// stays its own op with keep-contractions, so cuBLASLt writes the rounded
// product and the bias add reads bf16; without the option it is fused into
// the add, which then reads the f32 product.
// KEEP-LABEL: func.func @bf16_product_then_bias(
// KEEP: %[[P:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// KEEP: %[[R:.*]] = linalg.generic {{.*}}ins(%[[P]] : tensor<4x3xf32>) outs(%{{.*}} : tensor<4x3xbf16>)
// KEEP-NEXT: ^bb0
// KEEP-NEXT: arith.truncf
// KEEP-NEXT: linalg.yield
// KEEP: linalg.generic {{.*}}ins(%[[R]], %{{.*}} : tensor<4x3xbf16>, tensor<3xbf16>)
// FUSE-LABEL: func.func @bf16_product_then_bias(
// FUSE: %[[P:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// FUSE: linalg.generic {{.*}}ins(%[[P]], %{{.*}} : tensor<4x3xf32>, tensor<3xbf16>)
// FUSE: arith.truncf
// FUSE: arith.extf
// FUSE: arith.addf
func.func @bf16_product_then_bias(%a: tensor<4x8xbf16>, %b: tensor<8x3xbf16>, %bias: tensor<3xbf16>) -> tensor<4x3xbf16> {
  %zero = arith.constant 0.0 : f32
  %ce = tensor.empty() : tensor<4x3xf32>
  %c = linalg.fill ins(%zero : f32) outs(%ce : tensor<4x3xf32>) -> tensor<4x3xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : tensor<4x8xbf16>, tensor<8x3xbf16>) outs(%c : tensor<4x3xf32>) {
  ^bb0(%u: bf16, %v: bf16, %acc: f32):
    %ue = arith.extf %u : bf16 to f32
    %ve = arith.extf %v : bf16 to f32
    %mul = arith.mulf %ue, %ve : f32
    %s = arith.addf %acc, %mul : f32
    linalg.yield %s : f32
  } -> tensor<4x3xf32>
  %re = tensor.empty() : tensor<4x3xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%p : tensor<4x3xf32>) outs(%re : tensor<4x3xbf16>) {
  ^bb0(%x: f32, %o: bf16):
    %t = arith.truncf %x : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x3xbf16>
  %oe = tensor.empty() : tensor<4x3xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r, %bias : tensor<4x3xbf16>, tensor<3xbf16>) outs(%oe : tensor<4x3xbf16>) {
  ^bb0(%x: bf16, %bb: bf16, %o: bf16):
    %xe = arith.extf %x : bf16 to f32
    %be = arith.extf %bb : bf16 to f32
    %s = arith.addf %xe, %be : f32
    %t = arith.truncf %s : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<4x3xbf16>
  return %y : tensor<4x3xbf16>
}
