// kina-gpu-map-row-chains (src/targets/cuda/GpuMapRowChains.cpp): a run of
// ops over one leading row loop P whose rows are small and static, with a
// matmul by a small parameter no op writes and another reduction (a second
// matmul, a softmax: an MLP's forward), becomes ONE kernel of 128 threads
// per block, one warp per row (4 rows a block, grid-stride): each row
// buffer of the run is a [4, row] workgroup buffer, a warp's row its
// slice; the rows the run reads are copied into the slices by the lanes
// (lane l: elements l, l + 32, ...), each op runs on them with its
// parallel iterations other than P spread over the lanes and its
// reduction loops in order inside the lane (unrolled when short), a warp
// barrier (nvvm.bar.warp.sync) after each step, and the rows used after
// the run are copied out by the lanes; the row buffers only the run used
// are no longer allocated. An op whose iterations cannot be spread runs
// on lane 0 alone. Runs it cannot take (one matmul alone, the right-hand
// side written in the function, a large right-hand side, a dynamic row, a
// view, no matmul) are left alone for the next mappers. Cannot fail.
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
// ceil(N / 4) blocks of 128 threads; workgroup buffers for h, x, out, m.
// CHECK: arith.ceildivui %[[N]], %c4
// CHECK: gpu.launch blocks(%[[BID:[^,]*]], {{.*}} threads(%[[TID:[^,]*]], {{.*}} in ({{.*}} = %c128{{.*}}, {{.*}}, {{.*}}) workgroup(%[[SH:[^ ]*]] : memref<4x8xf32, #gpu.address_space<workgroup>>, %[[SX:[^ ]*]] : memref<4x16xf32, #gpu.address_space<workgroup>>, %[[SOUT:[^ ]*]] : memref<4x8xf32, #gpu.address_space<workgroup>>, %[[SM:[^ ]*]] : memref<4xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: memref.alloca
// CHECK: %[[WARP:.*]] = arith.divui %[[TID]], %c32
// CHECK-NEXT: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: arith.muli %[[BID]], %c4
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %[[N]] step
// The row of x is copied in by lanes 0..15; nothing else is read from
// memory but the parameters.
// CHECK-NEXT: %[[IN16:.*]] = arith.cmpi ult, %[[LANE]], %c16
// CHECK-NEXT: scf.if %[[IN16]]
// CHECK-NEXT: %[[XV:.*]] = memref.load %[[X]][%[[ROW]], %[[LANE]]]
// CHECK-NEXT: memref.store %[[XV]], %[[SX]][%[[WARP]], %[[LANE]]]
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync %{{.*}} : i32
// The fill of h: lanes 0..7, one column each.
// CHECK-NEXT: %[[IN8:.*]] = arith.cmpi ult, %[[LANE]], %c8
// CHECK-NEXT: scf.if %[[IN8]]
// CHECK-NEXT: memref.store %{{.*}}, %[[SH]][%[[WARP]], %[[LANE]]]
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync
// The matmul: lane j computes column j of h, k = 0, 1, ..., 15 in order
// (unrolled) from its init: x[k] from the slice, w[k, j] from memory.
// CHECK-NEXT: arith.cmpi ult, %[[LANE]], %c8
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[H:.*]] = memref.load %[[SH]][%[[WARP]], %[[LANE]]]
// CHECK-NEXT: %[[X0:.*]] = memref.load %[[SX]][%[[WARP]], %c0{{(_[0-9]+)?}}]
// CHECK-NEXT: %[[W0:.*]] = memref.load %[[W]][%c0{{(_[0-9]+)?}}, %[[LANE]]]
// CHECK-NEXT: %[[P0:.*]] = arith.mulf %[[X0]], %[[W0]]
// CHECK-NEXT: %[[A0:.*]] = arith.addf %[[H]], %[[P0]]
// CHECK-NEXT: %[[X1:.*]] = memref.load %[[SX]][%[[WARP]], %c1{{(_[0-9]+)?}}]
// CHECK-NEXT: %[[W1:.*]] = memref.load %[[W]][%c1{{(_[0-9]+)?}}, %[[LANE]]]
// CHECK-NEXT: %[[P1:.*]] = arith.mulf %[[X1]], %[[W1]]
// CHECK-NEXT: %[[A1:.*]] = arith.addf %[[A0]], %[[P1]]
// CHECK-COUNT-13: arith.addf
// CHECK: %[[X15:.*]] = memref.load %[[SX]][%[[WARP]], %c15{{(_[0-9]+)?}}]
// CHECK-NEXT: %[[W15:.*]] = memref.load %[[W]][%c15{{(_[0-9]+)?}}, %[[LANE]]]
// CHECK-NEXT: %[[P15:.*]] = arith.mulf %[[X15]], %[[W15]]
// CHECK-NEXT: %[[A15:.*]] = arith.addf %{{.*}}, %[[P15]]
// CHECK-NEXT: memref.store %[[A15]], %[[SH]][%[[WARP]], %[[LANE]]]
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync
// Bias and relu, lane j column j.
// CHECK-NEXT: arith.cmpi ult, %[[LANE]], %c8
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.load %[[SH]][%[[WARP]], %[[LANE]]]
// CHECK-NEXT: memref.load %[[B]][%[[LANE]]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: arith.maximumf
// CHECK-NEXT: memref.store %{{.*}}, %[[SOUT]][%[[WARP]], %[[LANE]]]
// CHECK: nvvm.bar.warp.sync
// CHECK: nvvm.bar.warp.sync
// The row max: one parallel iteration, lane 0 runs the 8 steps in order.
// CHECK-NEXT: %[[IN1:.*]] = arith.cmpi ult, %[[LANE]], %c1
// CHECK-NEXT: scf.if %[[IN1]]
// CHECK-NEXT: %[[M0:.*]] = memref.load %[[SM]][%[[WARP]]]
// CHECK-NEXT: %[[O0:.*]] = memref.load %[[SOUT]][%[[WARP]], %c0{{(_[0-9]+)?}}]
// CHECK-NEXT: %[[M1:.*]] = arith.maximumf %[[M0]], %[[O0]]
// CHECK-NEXT: %[[O1:.*]] = memref.load %[[SOUT]][%[[WARP]], %c1{{(_[0-9]+)?}}]
// CHECK-NEXT: arith.maximumf %[[M1]], %[[O1]]
// CHECK-COUNT-6: arith.maximumf
// CHECK-NEXT: memref.store %{{.*}}, %[[SM]][%[[WARP]]]
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync
// Only out and m are copied out, by the lanes.
// CHECK-NEXT: arith.cmpi ult, %[[LANE]], %c8
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[OV:.*]] = memref.load %[[SOUT]][%[[WARP]], %[[LANE]]]
// CHECK-NEXT: memref.store %[[OV]], %[[OUT]][%[[ROW]], %[[LANE]]]
// CHECK-NEXT: }
// CHECK-NEXT: arith.cmpi ult, %[[LANE]], %c1
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[MV:.*]] = memref.load %[[SM]][%[[WARP]]]
// CHECK-NEXT: memref.store %[[MV]], %[[M]][%[[ROW]]]
// CHECK-NEXT: }
// CHECK-NEXT: nvvm.bar.warp.sync
// CHECK-NEXT: }
// CHECK-NEXT: gpu.terminator
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
// after them; x and the sums (read by the sum) are copied in too.
// CHECK-LABEL: func.func @accumulate(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x4xf32>, %[[W:[^:]*]]: memref<4x2xf32>, %[[OUT:[^:]*]]: memref<?x2xf32>, %[[S:[^:]*]]: memref<?xf32>)
// CHECK: gpu.launch {{.*}} workgroup(%[[SX:[^ ]*]] : memref<4x4xf32, {{.*}}>, %[[SO:[^ ]*]] : memref<4x2xf32, {{.*}}>, %[[SS:[^ ]*]] : memref<4xf32, {{.*}}>)
// CHECK: scf.for %[[ROW:.*]] =
// CHECK-DAG: memref.load %[[OUT]][%[[ROW]], %{{.*}}]
// CHECK-DAG: memref.load %[[X]][%[[ROW]], %{{.*}}]
// CHECK-DAG: memref.load %[[S]][%[[ROW]]]
// CHECK: nvvm.bar.warp.sync
// CHECK: memref.load %[[SO]]
// CHECK: arith.mulf
// CHECK: memref.store %{{.*}}, %[[SO]]
// CHECK: nvvm.bar.warp.sync
// CHECK: memref.store %{{.*}}, %[[SS]]
// CHECK: nvvm.bar.warp.sync
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[ROW]], %{{.*}}]
// CHECK: memref.store %{{.*}}, %[[S]][%[[ROW]]]
// CHECK: nvvm.bar.warp.sync
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

// An op that reads the row it writes through another map (here each
// element plus its mirror image, in place): its iterations cannot be
// spread over the lanes (lane j would read what lane 1 - j writes), so
// lane 0 runs it alone, the op's loop in order on the warp's slice.
// CHECK-LABEL: func.func @one_lane(
// CHECK: gpu.launch {{.*}} workgroup(%[[SX:[^ ]*]] : memref<4x4xf32, {{.*}}>, %[[SO:[^ ]*]] : memref<4x2xf32, {{.*}}>, %[[SS:[^ ]*]] : memref<4xf32, {{.*}}>)
// CHECK: %[[WARP:.*]] = arith.divui
// CHECK-NEXT: %[[LANE:.*]] = arith.remui
// CHECK: arith.mulf
// CHECK: nvvm.bar.warp.sync
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK-NEXT: scf.if %[[FIRST]]
// CHECK-NEXT: %[[SLICE:.*]] = memref.subview %[[SO]][%[[WARP]], 0] [1, 2] [1, 1]
// CHECK: scf.for %[[J:[^ ]*]] =
// CHECK: memref.load %[[SLICE]]
// CHECK: memref.load %[[SLICE]]
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[SLICE]][%[[J]]]
// CHECK: nvvm.bar.warp.sync
// CHECK: gpu.terminator
#mirror = affine_map<(d0, d1) -> (d0, 1 - d1)>
func.func @one_lane(%x: memref<?x4xf32>, %w: memref<4x2xf32>, %out: memref<?x2xf32>, %sums: memref<?xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x4xf32>, memref<4x2xf32>) outs(%out : memref<?x2xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  }
  linalg.generic {indexing_maps = [#mirror, #id], iterator_types = ["parallel", "parallel"]} ins(%out : memref<?x2xf32>) outs(%out : memref<?x2xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.addf %o, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x2xf32>) outs(%sums : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// An op with a reduction loop that reads the row it accumulates into
// (out[j] += out[j], three times: each step reads the last one's value):
// a lane would carry the sum in a register and read the stale row, so
// lane 0 runs it alone, loads and stores in the op's loop order.
// CHECK-LABEL: func.func @one_lane_reduction(
// CHECK: gpu.launch {{.*}} workgroup(%[[SX:[^ ]*]] : memref<4x4xf32, {{.*}}>, %[[SO:[^ ]*]] : memref<4x2xf32, {{.*}}>, %[[SS:[^ ]*]] : memref<4xf32, {{.*}}>)
// CHECK: %[[LANE:.*]] = arith.remui
// CHECK: arith.mulf
// CHECK: nvvm.bar.warp.sync
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK-NEXT: scf.if %[[FIRST]]
// CHECK-NEXT: %[[SLICE:.*]] = memref.subview %[[SO]]
// CHECK: scf.for %[[J:[^ ]*]] =
// CHECK-NEXT: scf.for
// CHECK-NEXT: memref.load %[[SLICE]][%[[J]]]
// CHECK-NEXT: memref.load %[[SLICE]][%[[J]]]
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store %{{.*}}, %[[SLICE]][%[[J]]]
// CHECK: nvvm.bar.warp.sync
// CHECK: gpu.terminator
#twice_in = affine_map<(d0, d1, d2) -> (d0, d1)>
#steps = affine_map<(d0, d1, d2) -> (d2)>
func.func @one_lane_reduction(%x: memref<?x4xf32>, %w: memref<4x2xf32>, %out: memref<?x2xf32>, %sums: memref<?xf32>, %k: memref<3xf32>) {
  linalg.generic {indexing_maps = [#lhs, #rhs, #acc], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<?x4xf32>, memref<4x2xf32>) outs(%out : memref<?x2xf32>) {
  ^bb0(%a: f32, %bb: f32, %o: f32):
    %p = arith.mulf %a, %bb : f32
    %q = arith.addf %o, %p : f32
    linalg.yield %q : f32
  }
  linalg.generic {indexing_maps = [#twice_in, #steps, #twice_in], iterator_types = ["parallel", "parallel", "reduction"]} ins(%out, %k : memref<?x2xf32>, memref<3xf32>) outs(%out : memref<?x2xf32>) {
  ^bb0(%in: f32, %unused: f32, %o: f32):
    %r = arith.addf %o, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x2xf32>) outs(%sums : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// One matmul with its fill, bias and relu: left to cuBLASLt.
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
