// kina-gpu-map-rows (src/targets/cuda/GpuMapRows.cpp): a run of row
// reductions and the elementwise ops around them over one row space
// becomes one kernel, one block per row: each thread loads its 16-byte
// chunks of the row once (vector.load where every memref is aligned,
// checked on the host, else a scalar twin of the kernel), the ops run in order on those values, the reductions
// combine the threads' partials with gpu.all_reduce, and only what is read
// after the run is stored; the row buffers only the run used are no longer
// allocated. A row that is no multiple of the lanes gets the scalar kernel
// alone; runs that do not fit (an argmax's select) are left to
// kina-gpu-map-reductions. Cannot fail.
// RUN: %kina-opt %s --kina-gpu-map-rows | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#fill_in = affine_map<(d0) -> ()>
#fill_out = affine_map<(d0) -> (d0)>
#param = affine_map<(d0, d1) -> (d1)>

// softmax as MLIRGen and bufferization leave it: fill m, m = max(x),
// fill s, out = exp(x - m), s = sum(out), out = out / s.
// CHECK-LABEL: func.func @softmax(
// CHECK-SAME: %[[X:.*]]: memref<?x64xf32>, %[[OUT:.*]]: memref<?x64xf32>)
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.generic
// The host checks both buffers' alignment: the vector kernel, else its
// scalar twin.
// CHECK: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: scf.if
// CHECK: gpu.launch {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c32{{.*}}, %{{.*}}, %{{.*}})
// CHECK: scf.for %[[ROW:.*]] = %{{.*}} to %[[NP:.*]] step %[[STEP:[^ ]*]]
// CHECK: vector.load %[[X]][%[[ROW]], %{{.*}}] {alignment = 16 : i64} : memref<?x64xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.maximumf
// CHECK: %[[M:.*]] = gpu.all_reduce  maximumf %{{.*}} uniform
// CHECK: %[[MAX:.*]] = arith.maximumf %cst{{.*}}, %[[M]]
// CHECK: arith.subf %{{.*}}, %[[MAX]]
// CHECK: math.exp
// CHECK: %[[S:.*]] = gpu.all_reduce  add %{{.*}} uniform
// CHECK: %[[SUM:.*]] = arith.addf %cst{{.*}}, %[[S]]
// CHECK: arith.divf %{{.*}}, %[[SUM]]
// No barrier before the stores: no row value is overwritten.
// CHECK-NOT: gpu.barrier
// CHECK: vector.store %{{.*}}, %[[OUT]][%[[ROW]], %{{.*}}] {alignment = 16 : i64} : memref<?x64xf32>, vector<4xf32>
// A barrier before the block's next row only where it has one.
// CHECK: %[[NEXT:.*]] = arith.addi %[[ROW]], %[[STEP]]
// CHECK: %[[MORE:.*]] = arith.cmpi ult, %[[NEXT]], %[[NP]]
// CHECK: scf.if %[[MORE]] {
// CHECK-NEXT: gpu.barrier
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: gpu.launch
// CHECK-NOT: vector.load
// CHECK: memref.load %[[X]]
// CHECK-NOT: vector.store
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK-NOT: memref.dealloc
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @softmax(%x: memref<?x64xf32>, %out: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  %m = memref.alloc(%n) : memref<?xf32>
  linalg.generic {indexing_maps = [#fill_in, #fill_out], iterator_types = ["parallel"]} ins(%ninf : f32) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x64xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %acc, %in : f32
    linalg.yield %r : f32
  }
  %s = memref.alloc(%n) : memref<?xf32>
  linalg.generic {indexing_maps = [#fill_in, #fill_out], iterator_types = ["parallel"]} ins(%zero : f32) outs(%s : memref<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<?x64xf32>, memref<?xf32>) outs(%out : memref<?x64xf32>) {
  ^bb0(%in: f32, %mx: f32, %o: f32):
    %d = arith.subf %in, %mx : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  }
  memref.dealloc %m : memref<?xf32>
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%out : memref<?x64xf32>) outs(%s : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%out, %s : memref<?x64xf32>, memref<?xf32>) outs(%out : memref<?x64xf32>) {
  ^bb0(%in: f32, %sum: f32, %o: f32):
    %q = arith.divf %in, %sum : f32
    linalg.yield %q : f32
  }
  memref.dealloc %s : memref<?xf32>
  return
}

// A row sum into a result: the fill and the reduction in one kernel, the
// result stored by thread 0 of each row's block; the layer_norm-style copy
// of a shared zero fill joins as an identity generic.
// CHECK-LABEL: func.func @row_sum(
// CHECK-SAME: %[[X:.*]]: memref<?x8xbf16>, %[[Y:.*]]: memref<?xf32>)
// CHECK-NOT: memref.copy
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch
// bf16 travels as 32-bit words: one 16-byte load, each word split into
// its two elements (low half first).
// CHECK: vector.load %[[X]]{{.*}} : memref<?x8xbf16>, vector<8xbf16>
// CHECK: vector.bitcast %{{.*}} : vector<8xbf16> to vector<4xi32>
// CHECK: %[[W:.*]] = vector.extract %{{.*}}[0] : i32 from vector<4xi32>
// CHECK: %[[LO:.*]] = arith.trunci %[[W]] : i32 to i16
// CHECK: arith.bitcast %[[LO]] : i16 to bf16
// CHECK: %[[SH:.*]] = arith.shrui %[[W]], %c16_i32 : i32
// CHECK: %[[HI:.*]] = arith.trunci %[[SH]] : i32 to i16
// CHECK: arith.bitcast %[[HI]] : i16 to bf16
// CHECK-COUNT-8: arith.extf
// CHECK: gpu.all_reduce  add
// CHECK: arith.cmpi eq, %{{.*}}, %c0
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @row_sum(%x: memref<?x8xbf16>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x8xbf16>
  %z = memref.alloc(%n) : memref<?xf32>
  linalg.generic {indexing_maps = [#fill_in, #fill_out], iterator_types = ["parallel"]} ins(%zero : f32) outs(%z : memref<?xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  memref.copy %z, %y : memref<?xf32> to memref<?xf32>
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x8xbf16>) outs(%y : memref<?xf32>) {
  ^bb0(%in: bf16, %acc: f32):
    %w = arith.extf %in : bf16 to f32
    %r = arith.addf %acc, %w : f32
    linalg.yield %r : f32
  }
  memref.dealloc %z : memref<?xf32>
  return
}

// A row of 7 is no multiple of the 4 lanes: the scalar kernel alone (no
// alignment check, no vector access, one element per chunk). Its result
// is also its init, which every thread reads, so thread 0 stores it after
// a barrier. argmax combines with a select: left to
// kina-gpu-map-reductions.
// CHECK-LABEL: func.func @odd_row_and_argmax(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x7xf32>, %[[Y:[^:]*]]: memref<?xf32>
// CHECK-NOT: memref.extract_aligned_pointer_as_index
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %c32
// CHECK-NOT: vector.load
// CHECK: memref.load %[[X]]
// CHECK: gpu.all_reduce  add
// CHECK: memref.load %[[Y]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[Y]]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @odd_row_and_argmax(%x: memref<?x7xf32>, %y: memref<?xf32>, %v: memref<?xf32>, %i: memref<?xi64>, %w: memref<?x8xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x7xf32>) outs(%y : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%w : memref<?x8xf32>) outs(%v, %i : memref<?xf32>, memref<?xi64>) {
  ^bb0(%in: f32, %bv: f32, %bi: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %gt = arith.cmpf ogt, %in, %bv : f32
    %nv = arith.select %gt, %in, %bv : f32
    %ni = arith.select %gt, %ji, %bi : i64
    linalg.yield %nv, %ni : f32, i64
  }
  return
}

// Differential test seed 156 (a concat over unit dims after a softmax):
// an op whose body loads, at indices of its own, a buffer the run wrote
// (%e, kept in registers and stored only at the kernel's end) does not
// join: the run's kernel stores %e, then the op reads it.
// CHECK-LABEL: func.func @loaded_after_written(
// CHECK-SAME: %[[X:[^:]*]]: memref<?x7xf32>, %[[M:[^:]*]]: memref<?xf32>, %[[OUT:[^:]*]]: memref<?x7xf32>
// CHECK: %[[E:.*]] = memref.alloc
// CHECK: gpu.launch
// CHECK: gpu.all_reduce  maximumf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[E]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: linalg.generic {{.*}} outs(%[[OUT]] : memref<?x7xf32>)
// CHECK: memref.load %[[E]]
// CHECK: memref.dealloc %[[E]]
func.func @loaded_after_written(%x: memref<?x7xf32>, %m: memref<?xf32>, %out: memref<?x7xf32>) {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x7xf32>
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<?x7xf32>) outs(%m : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.maximumf %acc, %in : f32
    linalg.yield %r : f32
  }
  %e = memref.alloc(%n) : memref<?x7xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %m : memref<?x7xf32>, memref<?xf32>) outs(%e : memref<?x7xf32>) {
  ^bb0(%in: f32, %mx: f32, %o: f32):
    %d = arith.subf %in, %mx : f32
    %v = math.exp %d : f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%e : memref<?x7xf32>) outs(%out : memref<?x7xf32>) {
  ^bb0(%in: f32, %o: f32):
    %v = arith.negf %in : f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel"]} outs(%out : memref<?x7xf32>) {
  ^bb0(%o: f32):
    %i = linalg.index 0 : index
    %v = memref.load %e[%i, %c0] : memref<?x7xf32>
    linalg.yield %v : f32
  }
  memref.dealloc %e : memref<?x7xf32>
  return
}

// A buffer read as a parameter (%g over R) and written later in the run
// as a row buffer (8 rows of 8): another block may store its row of %g
// before this block loads %g as a parameter, so the run ends before the
// write; the reduction into %g gets a kernel of its own.
// CHECK-LABEL: func.func @param_then_written(
// CHECK-SAME: %[[X:[^:]*]]: memref<8x8xf32>, %[[S:[^:]*]]: memref<8xf32>, %[[G:[^:]*]]: memref<8xf32>, %[[OUT:[^:]*]]: memref<8x8xf32>
// CHECK: gpu.launch
// CHECK: vector.load %[[G]]
// CHECK-NOT: memref.store %{{.*}}, %[[G]]
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK: gpu.launch
// CHECK: memref.load %[[G]]
// CHECK-NOT: memref.store %{{.*}}, %[[G]]
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.launch
// CHECK: gpu.all_reduce  add
// CHECK: memref.store %{{.*}}, %[[G]]
func.func @param_then_written(%x: memref<8x8xf32>, %s: memref<8xf32>, %g: memref<8xf32>, %out: memref<8x8xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x8xf32>) outs(%s : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #param, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s, %g : memref<8x8xf32>, memref<8xf32>, memref<8xf32>) outs(%out : memref<8x8xf32>) {
  ^bb0(%in: f32, %sum: f32, %gain: f32, %o: f32):
    %d = arith.divf %in, %sum : f32
    %v = arith.mulf %d, %gain : f32
    linalg.yield %v : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<8x8xf32>) outs(%g : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  return
}

// A parameter (layer_norm's gain) is loaded chunk by chunk where the
// elementwise op first needs it, after the row's reduction: a row of 8192
// f32 is 8 chunks of 4 per thread (256 threads), and the gain's chunks
// alternate with the multiplications instead of all 32 values being held
// in registers through the reduction (layer_norm bf16 [8192, 8192]: 122 ->
// 79 registers, 0.142 -> 0.112 ms on an H100, docs/performance.md).
// CHECK-LABEL: func.func @param_by_chunk(
// CHECK-SAME: %[[X:[^:]*]]: memref<4x8192xf32>, %[[S:[^:]*]]: memref<4xf32>, %[[G:[^:]*]]: memref<8192xf32>, %[[OUT:[^:]*]]: memref<4x8192xf32>
// CHECK: gpu.launch
// CHECK-NOT: vector.load %[[G]]
// CHECK: gpu.all_reduce  add
// CHECK-NOT: gpu.all_reduce
// CHECK: vector.load %[[G]]
// CHECK: arith.mulf
// CHECK: vector.load %[[G]]
// CHECK: arith.mulf
// CHECK: vector.store %{{.*}}, %[[OUT]]
func.func @param_by_chunk(%x: memref<4x8192xf32>, %s: memref<4xf32>, %g: memref<8192xf32>, %out: memref<4x8192xf32>) {
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%x : memref<4x8192xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #param, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %s, %g : memref<4x8192xf32>, memref<4xf32>, memref<8192xf32>) outs(%out : memref<4x8192xf32>) {
  ^bb0(%in: f32, %sum: f32, %gain: f32, %o: f32):
    %d = arith.divf %in, %sum : f32
    %v = arith.mulf %d, %gain : f32
    linalg.yield %v : f32
  }
  return
}

// Attention's scale and causal mask before its softmax (GPT-2's block):
// the elementwise producer over P x R joins the run, so the kernel reads
// the matmul's f32 scores once and writes the bf16 probabilities once.
// The scores buffer, overwritten by exp inside the run and used after it
// by nothing but its deallocation, is not stored (its one other use, the
// matmul, runs before the kernel); the masked bf16 scores and the row
// buffers are no longer allocated.
// CHECK-LABEL: func.func @attention_row(
// CHECK-SAME: %[[Q:[^:]*]]: memref<4x8xf32>, %[[K:[^:]*]]: memref<8x8xf32>, %[[OUT:[^:]*]]: memref<4x8xbf16>
// CHECK: %[[S:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT: linalg.matmul
// CHECK-NOT: memref.alloc
// CHECK-NOT: linalg.generic
// CHECK: gpu.launch
// CHECK: vector.load %[[S]]
// CHECK: arith.mulf
// CHECK: arith.truncf
// CHECK: arith.cmpi ule
// CHECK: arith.select
// CHECK: gpu.all_reduce  maximumf
// CHECK: math.exp
// CHECK: gpu.all_reduce  add
// CHECK-NOT: vector.store %{{.*}}, %[[S]]
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK-NOT: linalg.generic
// CHECK: memref.dealloc %[[S]]
// CHECK-NEXT: return
func.func @attention_row(%q: memref<4x8xf32>, %k: memref<8x8xf32>, %out: memref<4x8xbf16>) {
  %scale = arith.constant 0.125 : f32
  %ninf = arith.constant 0xFF80 : bf16
  %ninf32 = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %s = memref.alloc() : memref<4x8xf32>
  linalg.matmul ins(%q, %k : memref<4x8xf32>, memref<8x8xf32>) outs(%s : memref<4x8xf32>)
  %p = memref.alloc() : memref<4x8xbf16>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%s : memref<4x8xf32>) outs(%p : memref<4x8xbf16>) {
  ^bb0(%in: f32, %o: bf16):
    %v = arith.mulf %in, %scale : f32
    %t = arith.truncf %v : f32 to bf16
    %i = linalg.index 0 : index
    %j = linalg.index 1 : index
    %le = arith.cmpi ule, %j, %i : index
    %r = arith.select %le, %t, %ninf : bf16
    linalg.yield %r : bf16
  }
  %m = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#fill_in, #fill_out], iterator_types = ["parallel"]} ins(%ninf32 : f32) outs(%m : memref<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%p : memref<4x8xbf16>) outs(%m : memref<4xf32>) {
  ^bb0(%in: bf16, %acc: f32):
    %x = arith.extf %in : bf16 to f32
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  }
  %sum = memref.alloc() : memref<4xf32>
  linalg.generic {indexing_maps = [#fill_in, #fill_out], iterator_types = ["parallel"]} ins(%zero : f32) outs(%sum : memref<4xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%p, %m : memref<4x8xbf16>, memref<4xf32>) outs(%s : memref<4x8xf32>) {
  ^bb0(%in: bf16, %mx: f32, %o: f32):
    %x = arith.extf %in : bf16 to f32
    %d = arith.subf %x, %mx : f32
    %e = math.exp %d : f32
    linalg.yield %e : f32
  }
  memref.dealloc %m : memref<4xf32>
  linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%s : memref<4x8xf32>) outs(%sum : memref<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %r = arith.addf %acc, %in : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%s, %sum : memref<4x8xf32>, memref<4xf32>) outs(%out : memref<4x8xbf16>) {
  ^bb0(%in: f32, %sm: f32, %o: bf16):
    %q2 = arith.divf %in, %sm : f32
    %t = arith.truncf %q2 : f32 to bf16
    linalg.yield %t : bf16
  }
  memref.dealloc %sum : memref<4xf32>
  memref.dealloc %p : memref<4x8xbf16>
  memref.dealloc %s : memref<4x8xf32>
  return
}
