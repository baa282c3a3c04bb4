// kina-tile-and-vectorize (src/passes/TileAndVectorize.cpp): linalg ops on
// buffers become loops of vector code: the contiguous loop in tiles of one
// register (16 f32 or i32 at vector-bits=512), the partial tile peeled and
// left a linalg op; an elementwise op (@chain) in tiles of four registers,
// then its partial tile in tiles of one (the tile sizes of that second
// peeling folded by foldFullTileSizes, the workaround of an MLIR 22 peeling
// limit), then scalar; row reductions keep a vector accumulator in the loop
// and reduce it once per row, even with the peeled tile using the same
// output (@rowsum, the hoisting workaround of
// src/passes/workarounds/HoistTileAccumulators.cpp), in four independent
// registers over steps of four vectors, then one (splitReductionAccumulator,
// @rowsum at 512 bits: 100 = 64 + 2 x 16 + 4 scalar); contractions that
// kina-matmul-kernel leaves accumulate a vector of C over k; ops with
// linalg.index and i1 buffers stay as they are. The outermost loop of a
// nest, when parallel and not known to be small, moves into an outlined
// body `__kina_par_<fn>` over a range [lo, end) of its iterations, which the
// function calls (src/passes/Parallel.cpp); a reduction over the outermost
// dim (@colsum) and a small static nest (@rowsum) stay in place.
// RUN: %kina-opt %s --kina-tile-and-vectorize=vector-bits=512 | FileCheck %s
// RUN: %kina-opt %s --kina-tile-and-vectorize=vector-bits=128 | FileCheck %s --check-prefix=SSE

// CHECK-LABEL: func.func private @__kina_par_chain(
// CHECK-SAME: %[[LO:[^:]*]]: index, %[[END:[^:]*]]: index, %{{[^:]*}}: index,
// CHECK-SAME: attributes {kina.parallel_body}
// CHECK: scf.for %{{.*}} = %[[LO]] to
// CHECK: scf.for
// CHECK: vector.load %{{.*}} : memref<?x?xf32>, vector<64xf32>
// CHECK: math.exp %{{.*}} : vector<64xf32>
// CHECK: vector.store %{{.*}} : memref<?x?xf32>, vector<64xf32>
// CHECK: scf.for
// CHECK-NOT: affine.min
// CHECK: scf.for
// CHECK-NOT: affine.min
// CHECK: vector.load %{{.*}} : memref<?x?xf32>, vector<16xf32>
// CHECK: math.exp %{{.*}} : vector<16xf32>
// CHECK: vector.store %{{.*}} : memref<?x?xf32>, vector<16xf32>
// CHECK: scf.for
// CHECK: affine.min
// CHECK: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @chain(
// CHECK-NOT: vector.
// CHECK: call @__kina_par_chain(
// SSE-LABEL: func.func private @__kina_par_chain(
// SSE: math.exp %{{.*}} : vector<16xf32>
// SSE: math.exp %{{.*}} : vector<4xf32>

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>
func.func @chain(%x: memref<?x?xf32>, %y: memref<?x?xf32>, %out: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<?x?xf32>, memref<?x?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %e = math.exp %m : f32
    %n = arith.negf %e : f32
    linalg.yield %n : f32
  }
  return
}

// CHECK-LABEL: func.func @rowsum(
// CHECK: %[[Z:.*]] = arith.constant dense<-0.000000e+00> : vector<1x16xf32>
// CHECK: scf.for %[[ROW:.*]] =
// CHECK: %[[INIT:.*]] = vector.load %{{.*}}[%[[ROW]]] : memref<64xf32>, vector<1xf32>
// CHECK: %[[MAIN:.*]]:5 = scf.for {{.*}} iter_args(%{{.*}} = %[[INIT]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]], %{{.*}} = %[[Z]]) -> (vector<1xf32>, vector<1x16xf32>, vector<1x16xf32>, vector<1x16xf32>, vector<1x16xf32>)
// CHECK-COUNT-4: arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: } {kina.split_accumulator}
// CHECK-COUNT-3: arith.addf %{{.*}}, %{{.*}} : vector<16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[MAIN]]#0, %{{.*}}) -> (vector<1xf32>, vector<1x16xf32>)
// CHECK-NOT: memref<64xf32>
// CHECK: arith.addf %{{.*}} : vector<16xf32>
// CHECK: scf.yield
// CHECK: vector.reduction <add>, %{{.*}} : vector<16xf32> into f32
// CHECK: vector.store %{{.*}}[%[[ROW]]] : memref<64xf32>, vector<1xf32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : memref<1x4xf32
// CHECK: return
func.func @rowsum(%x: memref<64x100xf32>, %out: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x100xf32>) outs(%out : memref<64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %o : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func private @__kina_par_rowmax(
// CHECK: arith.maximumf %{{.*}} : vector<16xf32>
// CHECK: vector.reduction <maximumf>, %{{.*}} : vector<16xf32> into f32
func.func @rowmax(%x: memref<?x?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %a, %o : f32
    linalg.yield %s : f32
  }
  return
}

// CHECK-LABEL: func.func @rowmax(
// CHECK: call @__kina_par_rowmax(
// CHECK-NOT: __kina_par_colsum
// CHECK-LABEL: func.func @colsum(
// CHECK: vector.load %{{.*}} : memref<?xi32>, vector<16xi32>
// CHECK: arith.addi %{{.*}} : vector<16xi32>
// CHECK: vector.store %{{.*}} : memref<?xi32>, vector<16xi32>
func.func @colsum(%x: memref<?x?xi32>, %out: memref<?xi32>) {
  linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]}
      ins(%x : memref<?x?xi32>) outs(%out : memref<?xi32>) {
  ^bb0(%a: i32, %o: i32):
    %s = arith.addi %a, %o : i32
    linalg.yield %s : i32
  }
  return
}

// CHECK-LABEL: func.func private @__kina_par_transpose(
// CHECK: vector.transfer_read %{{.*}} permutation_map = {{.*}} : memref<?x?xf32>, vector<16xf32>
// CHECK: vector.store %{{.*}} : memref<?x?xf32>, vector<16xf32>
func.func @transpose(%x: memref<?x?xf32>, %out: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x?xf32>) outs(%out : memref<?x?xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %a : f32
  }
  return
}

// CHECK-LABEL: func.func private @__kina_par_matmul_i32(
// CHECK: vector.load %{{.*}} : memref<?x?xi32>, vector<16xi32>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (vector<1x16xi32>)
// CHECK: vector.broadcast %{{.*}} : i32 to vector<16xi32>
// CHECK: arith.muli
// CHECK: arith.addi
// CHECK: scf.yield
// CHECK: vector.store %{{.*}} : memref<?x?xi32>, vector<16xi32>
// CHECK: linalg.matmul ins(%{{.*}} : memref<1x1xi32
func.func @matmul_i32(%a: memref<?x?xi32>, %b: memref<?x?xi32>, %c: memref<?x?xi32>) {
  linalg.matmul ins(%a, %b : memref<?x?xi32>, memref<?x?xi32>) outs(%c : memref<?x?xi32>)
  return
}

// CHECK-LABEL: func.func @indexed(
// CHECK-NOT: vector.
// CHECK-NOT: scf.for
// CHECK: linalg.index 1
func.func @indexed(%out: memref<?x?xf32>) {
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]}
      outs(%out : memref<?x?xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 1 : index
    %c = arith.index_cast %i : index to i32
    %f = arith.sitofp %c : i32 to f32
    linalg.yield %f : f32
  }
  return
}

// CHECK-LABEL: func.func @bools(
// CHECK-NOT: vector.
// CHECK: linalg.generic
func.func @bools(%x: memref<?xi1>, %out: memref<?xi1>) {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : memref<?xi1>) outs(%out : memref<?xi1>) {
  ^bb0(%a: i1, %o: i1):
    linalg.yield %a : i1
  }
  return
}
