// kina-gpu-map-row-chains (src/targets/cuda/GpuMapRowChains.cpp): a run of
// ops over one leading row loop P whose rows are small and static, with a
// matmul by a small parameter no op writes and another reduction (a second
// matmul, a softmax: an MLP's forward),
// becomes ONE kernel of 32 threads per block, one thread per row: the rows
// the run reads are copied into private arrays (memref.alloca in the
// kernel's entry block), the ops run on them cloned without P, lowered to
// loops and fully unrolled, and the rows used after the run are copied
// out; the row buffers only the run used are no longer allocated. Runs it
// cannot take (one matmul alone, the right-hand side written in the
// function, a large right-hand side, a dynamic row, a view, no matmul) are
// left alone for the
// next mappers. Cannot fail.
// RUN: %kina-opt %s --kina-gpu-map-row-chains | FileCheck %s
// RUN: %kina-opt %s --kina-gpu-map-row-chains --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

#id = affine_map<(d0, d1) -> (d0, d1)>
#bias = affine_map<(d0, d1) -> (d1)>
#row = affine_map<(d0, d1) -> (d0)>
#fill = affine_map<(d0, d1) -> ()>
#fill_row_in = affine_map<(d0) -> ()>
#fill_row_out = affine_map<(d0) -> (d0)>
#lhs = affine_map<(d0, d1, d2) -> (d0, d2)>
#rhs = affine_map<(d0, d1, d2) -> (d2, d1)>
#acc = affine_map<(d0, d1, d2) -> (d0, d1)>

// fill h; h += x @ w; out = relu(h + b); m = max over the row of out, kept
// in a row buffer: h and m are used only by the run.
// CHECK-LABEL: func.func @mlp(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x16xf32>, %[[W:[^:]*]]: memref<16x8xf32>, %[[B:[^:]*]]: memref<8xf32>, %[[OUT:[^:]*]]: memref<?x8xf32>, %[[M:[^:]*]]: memref<?xf32>)
// CHECK-NOT: memref.alloc(
// CHECK-NOT: linalg.generic
// No kernel for no rows.
// CHECK: %[[SOME:.*]] = arith.cmpi ugt, %[[N:.*]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[SOME]]
// CHECK: gpu.launch blocks(%[[BID:[^,]*]], {{.*}} threads(%[[TID:[^,]*]], {{.*}} in ({{.*}} = %c32{{.*}}, {{.*}}, {{.*}})
// CHECK-DAG: %[[PH:.*]] = memref.alloca() : memref<8xf32>
// CHECK-DAG: %[[PX:.*]] = memref.alloca() : memref<16xf32>
// CHECK-DAG: %[[POUT:.*]] = memref.alloca() : memref<8xf32>
// CHECK-DAG: %[[PM:.*]] = memref.alloca() : memref<f32>
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %[[N]] step
// The row of x is copied in (16 loads), nothing else is read from memory
// but the parameters.
// CHECK: %[[XROW:.*]] = memref.subview %[[X]][%[[ROW]], 0] [1, 16] [1, 1]
// CHECK-COUNT-16: memref.load %[[XROW]]
// CHECK-NOT: memref.subview
// The matmul, fully unrolled: 16 x 8 products, each weight loaded once.
// CHECK-COUNT-128: arith.mulf
// CHECK-NOT: scf.for
// CHECK: memref.load %[[B]]
// CHECK: arith.maximumf
// CHECK: memref.store %{{.*}}, %[[PM]][]
// Only out and m are copied out.
// CHECK: %[[OROW:.*]] = memref.subview %[[OUT]][%[[ROW]], 0] [1, 8] [1, 1]
// CHECK-COUNT-8: memref.store %{{.*}}, %[[OROW]]
// CHECK: %[[MROW:.*]] = memref.subview %[[M]][%[[ROW]]] [1] [1]
// CHECK: memref.store %{{.*}}, %[[MROW]][]
// CHECK: gpu.terminator
// CHECK-NOT: memref.dealloc
// CHECK: return
// The kernel's location names the pass and the run's 5 ops.
// LOC: loc(fused<["kina-gpu-map-row-chains", 5]>
func.func @mlp(%x: memref<?x16xf32>, %w: memref<16x8xf32>, %b: memref<8xf32>,
               %out: memref<?x8xf32>, %m: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %n = memref.dim %x, %c0 : memref<?x16xf32>
  %h = memref.alloc(%n) : memref<?x8xf32>
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%h : memref<?x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x16xf32>, memref<16x8xf32>) outs(%h : memref<?x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]} ins(%h, %b : memref<?x8xf32>, memref<8xf32>) outs(%out : memref<?x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  memref.dealloc %h : memref<?x8xf32>
  linalg.generic {indexing_maps = [#fill_row_in, #fill_row_out], iterator_types = ["parallel"]} ins(%ninf : f32) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x8xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// The matmul accumulates into a row the function already holds (no fill),
// then its row sum: that row is copied in before the products and out
// after them.
// CHECK-LABEL: func.func @accumulate(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x4xf32>, %[[W:[^:]*]]: memref<4x2xf32>, %[[OUT:[^:]*]]: memref<?x2xf32>, %[[S:[^:]*]]: memref<?xf32>)
// CHECK: gpu.launch
// CHECK: scf.for %[[ROW:.*]] =
// CHECK-DAG: memref.subview %[[OUT]][%[[ROW]], 0] [1, 2] [1, 1]
// CHECK-DAG: memref.subview %[[X]][%[[ROW]], 0] [1, 4] [1, 1]
// CHECK-DAG: memref.subview %[[S]][%[[ROW]]] [1] [1]
// CHECK: arith.mulf
// CHECK: memref.subview %[[OUT]][%[[ROW]], 0] [1, 2] [1, 1]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @accumulate(%x: memref<?x4xf32>, %w: memref<4x2xf32>, %out: memref<?x2xf32>, %sums: memref<?xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x4xf32>, memref<4x2xf32>) outs(%out : memref<?x2xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x2xf32>) outs(%sums : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// One matmul with its fill, bias and relu: left to cuBLASLt (the thread
// per row is slower there).
// CHECK-LABEL: func.func @one_matmul(
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @one_matmul(%x: memref<?x16xf32>, %w: memref<16x8xf32>, %b: memref<8xf32>, %out: memref<?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%out : memref<?x8xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x16xf32>, memref<16x8xf32>) outs(%out : memref<?x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #bias, #id], iterator_types = ["parallel", "parallel"]} ins(%out, %b : memref<?x8xf32>, memref<8xf32>) outs(%out : memref<?x8xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %s = arith.addf %a, %bb : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}

// The right-hand side is written in the function (here by a fill before
// the matmul): left alone. (Each run below would be grouped but for the
// one thing it tests: a matmul and a row sum of its result.)
// CHECK-LABEL: func.func @rhs_written(
// CHECK-NOT: gpu.launch
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @rhs_written(%x: memref<?x4xf32>, %w: memref<4x2xf32>, %out: memref<?x2xf32>, %sums: memref<?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%w : memref<4x2xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%out : memref<?x2xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x4xf32>, memref<4x2xf32>) outs(%out : memref<?x2xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x2xf32>) outs(%sums : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// A right-hand side of 128 x 64 = 8192 elements (more than 4096): left to
// kina-gpu-map-matmul.
// CHECK-LABEL: func.func @big_rhs(
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @big_rhs(%x: memref<?x128xf32>, %w: memref<128x64xf32>, %out: memref<?x64xf32>, %sums: memref<?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%out : memref<?x64xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x128xf32>, memref<128x64xf32>) outs(%out : memref<?x64xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x64xf32>) outs(%sums : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// A row whose size is not static (x: ?x?): left alone.
// CHECK-LABEL: func.func @dynamic_row(
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @dynamic_row(%x: memref<?x?xf32>, %w: memref<4x2xf32>, %out: memref<?x2xf32>, %sums: memref<?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%out : memref<?x2xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x?xf32>, memref<4x2xf32>) outs(%out : memref<?x2xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x2xf32>) outs(%sums : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// The left-hand side is a view (a column slice of a wider buffer): left
// alone.
// CHECK-LABEL: func.func @view(
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @view(%y: memref<?x8xf32>, %w: memref<4x2xf32>, %out: memref<?x2xf32>, %sums: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %y, %c0 : memref<?x8xf32>
  %x = memref.subview %y[0, 0] [%n, 4] [1, 1] : memref<?x8xf32> to memref<?x4xf32, strided<[8, 1]>>
  linalg.generic {indexing_maps = [#fill, #id], iterator_types = ["parallel", "parallel"]} ins(%zero : f32) outs(%out : memref<?x2xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x4xf32, strided<[8, 1]>>, memref<4x2xf32>) outs(%out : memref<?x2xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %s = arith.addf %o, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x2xf32>) outs(%sums : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// No matmul (a row reduction and its consumer): left to kina-gpu-map-rows.
// CHECK-LABEL: func.func @no_matmul(
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @no_matmul(%x: memref<?x8xf32>, %s: memref<?xf32>, %out: memref<?x8xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.generic {indexing_maps = [#fill_row_in, #fill_row_out], iterator_types = ["parallel"]} ins(%zero : f32) outs(%s : memref<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x8xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s : memref<?x8xf32>, memref<?xf32>) outs(%out : memref<?x8xf32>) {
  ^bb0(%a: f32, %d: f32, %o: f32):
    %q = arith.divf %a, %d : f32
    linalg.yield %q : f32
  }
  return
}
