//===- MatmulKernel.cpp - Register-tiled, vectorised linalg.matmul --------===//
//
// `linalg-to-loops` turns a `linalg.matmul` into three scalar loops (i, j, k
// with the reduction innermost): about 0.5 GFLOP/s (bench/matmul.py). This
// pass, run on the bufferized module before `linalg-to-loops`, rewrites each
// `linalg.matmul` (the default indexing maps) and each batched matmul over
// memrefs with rows of contiguous elements (unit last stride), one element
// type, f32 or f64, into the register-tiled
// micro-kernel of BLIS and OpenBLAS (Goto and van de Geijn, "Anatomy of
// high-performance matrix multiplication", 2008), with the vector dialect:
//
//   for kLo in [0, K) step KC                       (K blocks)
//     for iLo in [0, M) step MC                     (blocks of rows of A)
//       for each panel j0 of nv*VL columns
//         packed[0:kHi-kLo, :] = B[kLo:kHi, j0 : j0+nv*VL]
//         for i0 in [iLo, iHi) step MR (then 1 for the last rows)
//           acc[r][v] = C[i0+r, j0+v*VL : +VL]      (MR*nv vector registers)
//           for k in [kLo, kHi)
//             acc[r][v] = fma(broadcast(A[i0+r, k]), packed[k-kLo, v], acc)
//           C[i0+r, j0+v*VL : +VL] = acc[r][v]
//
// VL is the elements of `vbits` bits (by default the pass's vector width,
// the processor's: 512 with AVX-512, 16 f32; 256 with AVX2 and in a
// multiversioned object's baseline and -v3 versions, 8 f32; LLVM splits
// or joins the vectors to the target's registers) and MR is 8 with 512-bit
// vectors, else 4. Panels are nv
// vectors wide (by default 3 with 256-bit vectors, else 2:
// MatmulSchedule::from), then, after panels of 3, panels of 2 (emitKernel),
// then one vector for the columns left, then
// one masked vector (masked loads and stores, not packed) for the last
// columns below VL. Every loop's trip count may be zero, so dynamic and
// symbolic sizes need nothing more. The packed panel (KC x nv*VL
// elements, 24 or 32 KiB of f32 by default) is a stack buffer of the
// function.
//
// Batches: MLIRGen's batched and broadcast-batch matmuls (a linalg.generic
// over loops (batch..., m, n, k), kina/Passes.h matchKernelMatmul) run the
// same nest per batch index on rank-reduced subviews of A, B and C (a
// broadcast operand's subview is the same for every index).
//
// Threads: one loop over (batch index, column slab, row slab) triples,
// slabs = ceil(kina_rt_parallel_threads(batches * panels * row tiles,
// cost) / batches) per batch, as column slabs of a whole number of panels
// (the last one takes the columns left, with its 1-vector and masked
// groups) and, when there are fewer panels than slabs (a narrow C such as
// [1797, 64] x [64, 32] with 32-column panels), row slabs of whole MR
// tiles too; each piece with its own packed panel; unless the work
// (batches*M*N*K/16 cost units) is a constant below kMinParallelCost
// (src/passes/Parallel.h), the loop is outlined and run by
// kina_rt_parallel_for: threads split the batches, and each batch's
// columns (then rows) when there are fewer batches than threads. A
// piece's elements are summed exactly as with one piece, so the result
// does not depend on the thread count.
//
// A zero `linalg.fill` of C right before the matmul (MLIRGen's init) is
// folded in: the first K block's accumulators start at zero instead of
// being loaded from C, one write pass over C less.
//
// The schedule (VL, MR, nv, MC, KC, the unroll of the k loop and the
// thread grain) is the space "cpu.matmul" of kina/Tuning.h: its defaults
// unless the pipeline's TuningParameters hold a schedule for the matmul's
// key (tuningKey(op, "matmul"), the Kina statement's line and column),
// which `kinac --autotune` measures and `--tuning-cache` replays
// (docs/autotune.md). The k loop is unrolled with MLIR's
// loopUnrollByFactor.
//
// Semantics are those of `linalg.matmul`, C += A * B, with each output
// element summed over k in increasing order, as the scalar loops do; the
// multiply-add is `vector.fma` (LLVM's `fmuladd`, fused where the target has
// FMA instructions, so results may differ from the scalar loops in the last
// bits; docs/tolerances.md).
//
//===----------------------------------------------------------------------===//
#include "Parallel.h"
#include "kina/Passes.h"
#include "kina/Tuning.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_MATMULKERNELPASS
#include "kina/Passes.h.inc"

namespace {

/// The schedule of one matmul, from the space "cpu.matmul" (kina/Tuning.h):
/// its defaults are the measured constants of the untuned kernel. Block
/// sizes (BLIS's KC and MC): a packed panel of KC rows of B and nv*VL
/// columns (24 KiB of f32 by default at 256 bits) stays in the L1 cache
/// while the kernel walks MC rows of A, whose KC-wide block (256 KiB of
/// f32) stays in L2 (MC = 256 measured best of 64, 256 and 512 with
/// bench/matmul.py on a 512 KiB L2).
struct MatmulSchedule {
  int64_t vectorBits; // vbits: width of one vector, in bits
  int64_t rows;       // mr: rows of C per micro-kernel call
  int64_t panel;      // nv: vectors per full column panel
  int64_t blockM;     // mc: rows of A per block
  int64_t blockK;     // kc: reduction block
  int64_t unrollK;    // ku: unroll factor of the innermost k loop
  int64_t grain;      // grain: cost units per thread (0: one thread)

  /// `tuned`'s values, the space's defaults for what it lacks; a vector
  /// width of 0 is `vectorBits` (the processor's, the pass option), rows
  /// 0 are 8 with 512-bit vectors (16 accumulators of AVX-512's 32
  /// registers: 1.6-2x the 4 x 2 tile of 256-bit vectors on a Xeon with
  /// AVX-512, docs/performance.md), else 4 (8 of AVX2's 16 registers).
  /// Panels of 0 vectors are 3 with 256-bit vectors (a 4 x 3 tile: 12
  /// accumulators, 3 vectors of B and a broadcast fill AVX2's 16
  /// registers; matmul 1024 f32 on one Zen 5 core at x86-64-v3, 18.4 ->
  /// 16.9 ms, OpenBLAS's 256-bit kernel 17.0; docs/performance.md
  /// 2026-12-08), else 2 (at 512 bits 8 x 3 measured slower than 8 x 2,
  /// at 128 bits 4 x 3 spills: 49 -> 66 ms); emitKernel leaves the columns
  /// past the last panel of 3 to panels of 2 and 1.
  static MatmulSchedule from(const Schedule *tuned, int64_t vectorBits) {
    Schedule s = lookupSpace("cpu.matmul")->defaults();
    if (tuned)
      for (const auto &[name, value] : tuned->params)
        s.params[name] = value;
    int64_t bits = s.get("vbits", 0) > 0 ? s.get("vbits", 0) : vectorBits;
    int64_t rows = s.get("mr", 0) > 0 ? s.get("mr", 0) : bits >= 512 ? 8 : 4;
    return {bits,
            rows,
            s.get("nv", 0) > 0 ? s.get("nv", 0) : bits == 256 ? 3 : 2,
            s.get("mc", 256),
            s.get("kc", 256),
            s.get("ku", 1),
            s.get("grain", kRuntimeGrain)};
  }
};

/// The operands of one matmul and the sizes read from them.
struct Matmul {
  Value a, b, c;    // memref<MxK>, memref<KxN>, memref<MxN>
  Value m, n, k;    // index
  VectorType vecTy; // vector<VL x elem>
  Value packed;     // memref<KC x nv*VL x elem> on the stack: a packed panel
  MatmulSchedule schedule;
  bool zeroInit; // C holds zeros: the first K block starts from zero, not C
};

/// True for a memref the kernel can address with `vector.load` once its
/// leading (batch) dims are fixed: rank >= 2, element type `elem`, strided
/// with unit stride in its last dim (rows of contiguous elements, any
/// distance apart).
bool isRowMajor(Value v, Type elem) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || type.getRank() < 2 || type.getElementType() != elem)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// One group of columns: [colLo, colHi) in panels of nv vectors, or, with
/// `masked`, the last columns (fewer than one vector: one panel, lanes
/// beyond n masked off).
struct Columns {
  Value colLo, colHi;
  int64_t nv;
  bool masked;
};

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// x - x % step: the largest multiple of `step` not above x (x >= 0).
Value roundDown(OpBuilder &b, Location loc, Value x, int64_t step) {
  Value rem = arith::RemUIOp::create(b, loc, x, indexConst(b, loc, step));
  return arith::SubIOp::create(b, loc, x, rem);
}

/// Emits, for rows [rowLo, rowHi) in steps of `mr` and the panel of
/// columns at j0 (nv vectors, under `mask` if set), the micro-kernel
/// C[rows, panel] += A[rows, kLo:kHi] * panel, summed over k in increasing
/// order. The panel is read from `mm.packed` (row kk = k - kLo) when
/// `packed`, else from B.
void emitRows(OpBuilder &b, Location loc, const Matmul &mm, Value rowLo,
              Value rowHi, int64_t mr, Value j0, int64_t nv, Value mask,
              bool packed, Value kLo, Value kHi) {
  int64_t vl = mm.vecTy.getNumElements();
  Value zeros;
  if (mask)
    zeros = arith::ConstantOp::create(
        b, loc, mm.vecTy,
        DenseElementsAttr::get(mm.vecTy,
                               b.getZeroAttr(mm.vecTy.getElementType())));
  auto load = [&](OpBuilder &b, Value base, Value i, Value j) -> Value {
    if (mask)
      return vector::MaskedLoadOp::create(b, loc, mm.vecTy, base,
                                          ValueRange{i, j}, mask, zeros);
    return vector::LoadOp::create(b, loc, mm.vecTy, base, ValueRange{i, j});
  };
  scf::ForOp::create(
      b, loc, rowLo, rowHi, indexConst(b, loc, mr), ValueRange{},
      [&](OpBuilder &b, Location loc, Value i0, ValueRange) {
        SmallVector<Value> rows, cols, packedCols;
        for (int64_t r = 0; r < mr; ++r)
          rows.push_back(r == 0 ? i0
                                : arith::AddIOp::create(b, loc, i0,
                                                        indexConst(b, loc, r)));
        for (int64_t v = 0; v < nv; ++v) {
          cols.push_back(v == 0 ? j0
                                : arith::AddIOp::create(
                                      b, loc, j0, indexConst(b, loc, v * vl)));
          packedCols.push_back(indexConst(b, loc, v * vl));
        }
        auto loadC = [&](OpBuilder &b) {
          SmallVector<Value> acc;
          for (int64_t r = 0; r < mr; ++r)
            for (int64_t v = 0; v < nv; ++v)
              acc.push_back(load(b, mm.c, rows[r], cols[v]));
          return acc;
        };
        SmallVector<Value> acc;
        if (mm.zeroInit) {
          // C is zero-filled: the first K block starts from zeros (the
          // same bits: 0 + x is x), the others from C.
          Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                              kLo, indexConst(b, loc, 0));
          auto init = scf::IfOp::create(
              b, loc, first,
              [&](OpBuilder &b, Location loc) {
                Value zero = arith::ConstantOp::create(
                    b, loc, mm.vecTy,
                    DenseElementsAttr::get(
                        mm.vecTy, b.getZeroAttr(mm.vecTy.getElementType())));
                scf::YieldOp::create(b, loc, SmallVector<Value>(mr * nv, zero));
              },
              [&](OpBuilder &b, Location loc) {
                scf::YieldOp::create(b, loc, loadC(b));
              });
          acc.append(init.getResults().begin(), init.getResults().end());
        } else {
          acc = loadC(b);
        }
        auto loop = scf::ForOp::create(
            b, loc, kLo, kHi, indexConst(b, loc, 1), acc,
            [&](OpBuilder &b, Location loc, Value k, ValueRange iter) {
              SmallVector<Value> bv;
              Value kk;
              if (packed)
                kk = arith::SubIOp::create(b, loc, k, kLo);
              for (int64_t v = 0; v < nv; ++v)
                bv.push_back(packed ? vector::LoadOp::create(
                                          b, loc, mm.vecTy, mm.packed,
                                          ValueRange{kk, packedCols[v]})
                                    : load(b, mm.b, k, cols[v]));
              SmallVector<Value> next;
              for (int64_t r = 0; r < mr; ++r) {
                Value a = memref::LoadOp::create(b, loc, mm.a,
                                                 ValueRange{rows[r], k});
                Value av = vector::BroadcastOp::create(b, loc, mm.vecTy, a);
                for (int64_t v = 0; v < nv; ++v)
                  next.push_back(vector::FMAOp::create(b, loc, av, bv[v],
                                                       iter[r * nv + v]));
              }
              scf::YieldOp::create(b, loc, next);
            });
        for (int64_t r = 0; r < mr; ++r)
          for (int64_t v = 0; v < nv; ++v) {
            Value sum = loop.getResult(r * nv + v);
            SmallVector<Value, 2> at{rows[r], cols[v]};
            if (mask)
              vector::MaskedStoreOp::create(b, loc, mm.c, at, mask, sum);
            else
              vector::StoreOp::create(b, loc, sum, mm.c, at);
          }
        // Unrolled once its results are used: for a trip count unknown
        // here the unroll adds an epilogue loop after `loop` and moves the
        // uses of its results to the epilogue's.
        if (mm.schedule.unrollK > 1)
          (void)loopUnrollByFactor(loop, mm.schedule.unrollK);
        scf::YieldOp::create(b, loc);
      });
}

/// Emits the panels of `cols` for rows [iLo, iHi) and reduction [kLo, kHi):
/// for each panel, full panels are first copied ("packed") into mm.packed,
/// so the kernel reads B's block contiguously (B's rows may be a power of
/// two apart, which maps every row of a panel to one cache set), then the
/// rows run MR at a time and the rest one at a time.
void emitPanels(OpBuilder &b, Location loc, const Matmul &mm,
                const Columns &cols, Value iLo, Value iHi, Value kLo,
                Value kHi) {
  int64_t vl = mm.vecTy.getNumElements();
  int64_t nv = cols.nv;
  Value i4 = arith::AddIOp::create(
      b, loc, iLo,
      roundDown(b, loc, arith::SubIOp::create(b, loc, iHi, iLo),
                mm.schedule.rows));
  scf::ForOp::create(
      b, loc, cols.colLo, cols.colHi, indexConst(b, loc, nv * vl), ValueRange{},
      [&](OpBuilder &b, Location loc, Value j0, ValueRange) {
        Value mask;
        if (cols.masked) {
          // lane < colHi - j0, as i64 compares (vector.create_mask would need
          // its own lowering patterns before the LLVM conversion).
          auto laneTy = VectorType::get({vl}, b.getI64Type());
          SmallVector<int64_t> lanes;
          for (int64_t l = 0; l < vl; ++l)
            lanes.push_back(l);
          Value laneIds = arith::ConstantOp::create(
              b, loc, laneTy,
              DenseElementsAttr::get(laneTy, ArrayRef<int64_t>(lanes)));
          Value left = arith::IndexCastOp::create(
              b, loc, b.getI64Type(),
              arith::SubIOp::create(b, loc, cols.colHi, j0));
          mask = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::slt, laneIds,
              vector::BroadcastOp::create(b, loc, laneTy, left));
        }
        bool packed = !cols.masked;
        if (packed) {
          scf::ForOp::create(
              b, loc, kLo, kHi, indexConst(b, loc, 1), ValueRange{},
              [&](OpBuilder &b, Location loc, Value k, ValueRange) {
                Value kk = arith::SubIOp::create(b, loc, k, kLo);
                for (int64_t v = 0; v < nv; ++v) {
                  Value col = arith::AddIOp::create(b, loc, j0,
                                                    indexConst(b, loc, v * vl));
                  Value row = vector::LoadOp::create(b, loc, mm.vecTy, mm.b,
                                                     ValueRange{k, col});
                  vector::StoreOp::create(
                      b, loc, row, mm.packed,
                      ValueRange{kk, indexConst(b, loc, v * vl)});
                }
                scf::YieldOp::create(b, loc);
              });
        }
        emitRows(b, loc, mm, iLo, i4, mm.schedule.rows, j0, nv, mask, packed,
                 kLo, kHi);
        emitRows(b, loc, mm, i4, iHi, 1, j0, nv, mask, packed, kLo, kHi);
        scf::YieldOp::create(b, loc);
      });
}

/// Emits the blocked kernel for the rows [rowLo, rowHi) and the columns
/// [colLo, colHi) of C (colLo a multiple of the panel width), packing into
/// mm.packed:
/// K blocks, then blocks of rows, then the panels of the column groups:
/// [colLo, nw) in panels of nv vectors, [nw, n2) of 2 (nv = 3 only),
/// [n2, n1) of 1 vector, [n1, colHi) the masked rest (one panel when not
/// empty). With nv = 3 the v whole vectors of the columns are v / 3
/// panels of 3 and one of 1 where v % 3 is 1 ... unless v >= 4: then
/// (v - 4) / 3 panels of 3 and two of 2, so that a 4 x 1 tile (4
/// accumulators, half the FMA pipes' throughput) is left only where v is
/// 1; v % 3 = 2 gives one panel of 2 (N = 32 f32: two panels of 2 rather
/// than a panel of 3 and a single vector).
void emitKernel(OpBuilder &b, Location loc, Matmul mm, Value rowLo,
                Value rowHi, Value colLo, Value colHi) {
  int64_t blockK = mm.schedule.blockK, blockM = mm.schedule.blockM;
  int64_t vl = mm.vecTy.getNumElements();
  int64_t nv = mm.schedule.panel;
  Value width = arith::SubIOp::create(b, loc, colHi, colLo);
  Value n1 = arith::AddIOp::create(b, loc, colLo, roundDown(b, loc, width, vl));
  Value nw, n2;
  if (nv == 3) {
    // Whole vectors v, and those left to the panels of 2 and 1: v % 3,
    // or 4 where v % 3 is 1 and v >= 4.
    Value v = arith::DivUIOp::create(b, loc, width, indexConst(b, loc, vl));
    Value rest = arith::RemUIOp::create(b, loc, v, indexConst(b, loc, 3));
    Value fourLeft = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rest,
                              indexConst(b, loc, 1)),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, v,
                              indexConst(b, loc, 4)));
    rest =
        arith::SelectOp::create(b, loc, fourLeft, indexConst(b, loc, 4), rest);
    auto columnsOf = [&](Value vectors) {
      return arith::MulIOp::create(b, loc, vectors, indexConst(b, loc, vl));
    };
    nw = arith::AddIOp::create(
        b, loc, colLo, columnsOf(arith::SubIOp::create(b, loc, v, rest)));
    n2 = arith::AddIOp::create(b, loc, nw,
                               columnsOf(roundDown(b, loc, rest, 2)));
  } else {
    nw = arith::AddIOp::create(b, loc, colLo,
                               roundDown(b, loc, width, nv * vl));
    n2 = nw;
  }
  Value zero = indexConst(b, loc, 0);
  Columns groups[] = {{colLo, nw, nv, false},
                      {nw, n2, 2, false},
                      {n2, n1, 1, false},
                      {n1, colHi, 1, true}};
  scf::ForOp::create(
      b, loc, zero, mm.k, indexConst(b, loc, blockK), ValueRange{},
      [&](OpBuilder &b, Location loc, Value kLo, ValueRange) {
        Value kHi = arith::MinSIOp::create(
            b, loc,
            arith::AddIOp::create(b, loc, kLo, indexConst(b, loc, blockK)),
            mm.k);
        scf::ForOp::create(
            b, loc, rowLo, rowHi, indexConst(b, loc, blockM), ValueRange{},
            [&](OpBuilder &b, Location loc, Value iLo, ValueRange) {
              Value iHi = arith::MinSIOp::create(
                  b, loc,
                  arith::AddIOp::create(b, loc, iLo,
                                        indexConst(b, loc, blockM)),
                  rowHi);
              for (const Columns &cols : groups)
                emitPanels(b, loc, mm, cols, iLo, iHi, kLo, kHi);
              scf::YieldOp::create(b, loc);
            });
        scf::YieldOp::create(b, loc);
      });
}

/// kina_rt_parallel_threads(n, cost) (kina/runtime.h) as an index, its
/// declaration added to `module` when missing.
Value threadsFor(OpBuilder &b, Location loc, ModuleOp module, Value n,
                 Value cost) {
  constexpr llvm::StringLiteral name = "kina_rt_parallel_threads";
  Type i64 = b.getI64Type();
  auto fn = module.lookupSymbol<func::FuncOp>(name);
  if (!fn) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(module.getBody());
    fn = func::FuncOp::create(b, loc, name,
                              b.getFunctionType({i64, i64}, {i64}));
    fn.setPrivate();
  }
  auto toI64 = [&](Value v) {
    return arith::IndexCastOp::create(b, loc, i64, v);
  };
  Value threads =
      func::CallOp::create(b, loc, fn, ValueRange{toI64(n), toI64(cost)})
          .getResult(0);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), threads);
}

/// A packed panel of `schedule` for vectors `vecTy`: memref<KC x nv*VL x
/// elem> on the stack (24 KiB of f32 by default at 256 bits, 32 at
/// 512), 64-byte aligned.
Value allocPanel(OpBuilder &b, Location loc, const MatmulSchedule &schedule,
                 VectorType vecTy) {
  auto type = MemRefType::get(
      {schedule.blockK, schedule.panel * vecTy.getNumElements()},
      vecTy.getElementType());
  return memref::AllocaOp::create(b, loc, type, b.getI64IntegerAttr(64));
}

/// The `linalg.fill` of +0.0 into `c` right before `op`, or null.
linalg::FillOp zeroFillBefore(Operation *op, Value c) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || !fill.hasPureBufferSemantics() || fill.getDpsInits()[0] != c ||
      !matchPattern(fill.getDpsInputs()[0], m_PosZeroFloat()))
    return {};
  return fill;
}

/// The matrix of `x` (rank >= 2) at the batch index `index` (one index
/// per batch loop): `x` itself without leading dims, else the rank-reduced
/// subview x[i..., :, :], i the index of the batch loop each leading dim
/// follows (`dims`, KernelMatmul::batchDims) or 0 for a broadcast unit dim.
Value matrixAt(OpBuilder &b, Location loc, Value x, ArrayRef<int64_t> dims,
               ArrayRef<Value> index) {
  if (dims.empty())
    return x;
  auto type = cast<MemRefType>(x.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets, sizes;
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  for (int64_t d : dims) {
    offsets.push_back(d < 0 ? OpFoldResult(b.getIndexAttr(0))
                            : OpFoldResult(index[d]));
    sizes.push_back(b.getIndexAttr(1));
  }
  for (int64_t i = rank - 2; i < rank; ++i) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(memref::getMixedSize(b, loc, x, i));
  }
  MemRefType matrixTy = memref::SubViewOp::inferRankReducedResultType(
      type.getShape().take_back(2), type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, matrixTy, x, offsets, sizes,
                                   strides);
}

/// Rewrites `op` (matched by matchKernelMatmul as `km`) into blocked kernel
/// loops; leaves it untouched unless its operands are buffers the kernel
/// addresses (isRowMajor).
///
/// Batches and threads: one loop over (batch index, column slab, row slab)
/// triples, batch-major, slabs = ceil(threads / batches) per batch, threads
/// = kina_rt_parallel_threads(batches * panels * row tiles, cost): with at
/// least as many batches as threads each batch is one slab and the threads
/// split the batches, with fewer (a 2-D matmul is one batch) the threads
/// split each batch's columns into min(slabs, panels) slabs of whole panels
/// and, when that is fewer than slabs, its rows into slabs of whole MR
/// tiles. The loop is outlined onto the thread pool
/// (src/passes/Parallel.cpp) unless the schedule's grain is 0 or the work
/// is a constant below kMinParallelCost (then a 2-D matmul is the kernel
/// alone). Each piece runs
/// the blocked kernel on the batch's matrices (rank-reduced subviews) with
/// its own packed panel, so every element of C is summed over k in
/// increasing order by one thread whatever the thread count.
///
/// A zero `linalg.fill` of C right before the matmul is folded into the
/// kernel (its first K block starts from zeros rather than loading C: one
/// pass over C less); it stays, under `K == 0`, where K is not a constant.
void rewriteMatmul(linalg::LinalgOp op, const KernelMatmul &km,
                   const TuningParameters *tuning, int64_t vectorBits) {
  if (!op.hasPureBufferSemantics())
    return;
  Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1];
  Value c = op.getDpsInits()[0];
  Type elem = cast<MemRefType>(c.getType()).getElementType();
  if (!isRowMajor(a, elem) || !isRowMajor(bm, elem) || !isRowMajor(c, elem))
    return;

  // Before any op is built in front of `op`.
  linalg::FillOp fill = zeroFillBefore(op, c);
  OpBuilder b(op);
  Location loc = op.getLoc();
  MatmulSchedule schedule = MatmulSchedule::from(
      tuning ? tuning->lookup(tuningKey(op, "matmul")) : nullptr, vectorBits);
  int64_t vl = schedule.vectorBits / elem.getIntOrFloatBitWidth();
  int64_t w = schedule.panel * vl;
  VectorType vecTy = VectorType::get({vl}, elem);
  int64_t rankA = cast<MemRefType>(a.getType()).getRank();
  auto dim = [&](Value x, int64_t i) {
    return b.createOrFold<memref::DimOp>(loc, x, i);
  };
  Value m = dim(c, km.numBatch), n = dim(c, km.numBatch + 1);
  Value k = dim(a, rankA - 1);
  SmallVector<Value> batchSizes;
  Value batches = indexConst(b, loc, 1);
  for (int64_t i = 0; i < km.numBatch; ++i) {
    batchSizes.push_back(dim(c, i));
    batches = b.createOrFold<arith::MulIOp>(loc, batches, batchSizes.back());
  }
  // The work, batches*M*N*K/16 cost units (kina_rt_parallel_for: a
  // multiply-add of a vector lane costs about a sixteenth of an element of
  // a streaming loop), scaled to the schedule's grain (Parallel.h).
  Value cost = b.createOrFold<arith::DivUIOp>(
      loc,
      b.createOrFold<arith::MulIOp>(
          loc,
          b.createOrFold<arith::MulIOp>(
              loc, batches, b.createOrFold<arith::MulIOp>(loc, m, n)),
          k),
      indexConst(b, loc, 16));
  if (schedule.grain > 0)
    cost = costAtGrain(b, loc, cost, schedule.grain);
  std::optional<int64_t> knownCost = getConstantIntValue(cost);
  bool small =
      schedule.grain <= 0 || (knownCost && *knownCost < kMinParallelCost);

  bool zeroInit = false;
  if (fill) {
    zeroInit = true;
    std::optional<int64_t> knownK = getConstantIntValue(k);
    if (knownK && *knownK > 0) {
      fill.erase();
    } else {
      // With K = 0 the kernel writes nothing: C keeps the fill's zeros.
      Value empty = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, k,
                                          indexConst(b, loc, 0));
      auto ifEmpty = scf::IfOp::create(b, loc, empty, /*withElse=*/false);
      fill->moveBefore(ifEmpty.thenBlock()->getTerminator());
    }
  }
  Matmul whole{a, bm, c, m, n, k, vecTy, Value(), schedule, zeroInit};
  if (km.numBatch == 0 && small) {
    whole.packed = allocPanel(b, loc, schedule, vecTy);
    emitKernel(b, loc, whole, indexConst(b, loc, 0), m, indexConst(b, loc, 0),
               n);
    op->erase();
    return;
  }

  Value one = indexConst(b, loc, 1);
  int64_t mr = schedule.rows;
  // Whole panels (at least 1): the columns past the last one go with the
  // last column slab (N = 32 f32 with panels of 24 is one slab of rows
  // split in two, not a slab of 24 columns beside one of 8).
  Value panels = b.createOrFold<arith::MaxUIOp>(
      loc, b.createOrFold<arith::DivUIOp>(loc, n, indexConst(b, loc, w)), one);
  Value rowTiles =
      b.createOrFold<arith::CeilDivUIOp>(loc, m, indexConst(b, loc, mr));
  // Pieces: whole batches, else column slabs of whole panels, else (fewer
  // panels than threads: a narrow C) row slabs of whole MR tiles too.
  Value threads =
      small ? one
            : threadsFor(b, loc, op->getParentOfType<ModuleOp>(),
                         b.createOrFold<arith::MulIOp>(
                             loc, batches,
                             b.createOrFold<arith::MulIOp>(loc, panels,
                                                           rowTiles)),
                         cost);
  Value slabs = b.createOrFold<arith::CeilDivUIOp>(
      loc, threads, b.createOrFold<arith::MaxUIOp>(loc, batches, one));
  Value colSlabs = b.createOrFold<arith::MaxUIOp>(
      loc, b.createOrFold<arith::MinUIOp>(loc, slabs, panels), one);
  Value rowSlabs = b.createOrFold<arith::CeilDivUIOp>(loc, slabs, colSlabs);
  Value slabWidth = b.createOrFold<arith::MulIOp>(
      loc, b.createOrFold<arith::CeilDivUIOp>(loc, panels, colSlabs),
      indexConst(b, loc, w));
  Value slabHeight = b.createOrFold<arith::MulIOp>(
      loc, b.createOrFold<arith::CeilDivUIOp>(loc, rowTiles, rowSlabs),
      indexConst(b, loc, mr));
  Value perBatch = b.createOrFold<arith::MulIOp>(loc, colSlabs, rowSlabs);
  Value trips = b.createOrFold<arith::MulIOp>(loc, batches, perBatch);
  auto loop = scf::ForOp::create(
      b, loc, indexConst(b, loc, 0), trips, indexConst(b, loc, 1), ValueRange{},
      [&](OpBuilder &b, Location loc, Value t, ValueRange) {
        // First in the body: outlining hoists it out of the loop
        // (Parallel.h), once per piece.
        Matmul mm = whole;
        mm.packed = allocPanel(b, loc, schedule, vecTy);
        Value batch = b.createOrFold<arith::DivUIOp>(loc, t, perBatch);
        Value piece = b.createOrFold<arith::RemUIOp>(loc, t, perBatch);
        Value slab = b.createOrFold<arith::RemUIOp>(loc, piece, colSlabs);
        Value rowSlab = b.createOrFold<arith::DivUIOp>(loc, piece, colSlabs);
        // The batch loops' indices, the last one fastest.
        SmallVector<Value> index(km.numBatch);
        for (int64_t i = km.numBatch - 1; i >= 0; --i) {
          if (i == 0) {
            index[i] = batch;
            break;
          }
          index[i] = arith::RemUIOp::create(b, loc, batch, batchSizes[i]);
          batch = arith::DivUIOp::create(b, loc, batch, batchSizes[i]);
        }
        mm.a = matrixAt(b, loc, a, km.batchDims[0], index);
        mm.b = matrixAt(b, loc, bm, km.batchDims[1], index);
        mm.c = matrixAt(b, loc, c, km.batchDims[2], index);
        Value colLo = arith::MinUIOp::create(
            b, loc, b.createOrFold<arith::MulIOp>(loc, slab, slabWidth), n);
        Value last = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, slab,
            b.createOrFold<arith::SubIOp>(loc, colSlabs, one));
        Value colHi = arith::SelectOp::create(
            b, loc, last, n,
            arith::MinUIOp::create(
                b, loc, arith::AddIOp::create(b, loc, colLo, slabWidth), n));
        Value rowLo = arith::MinUIOp::create(
            b, loc, b.createOrFold<arith::MulIOp>(loc, rowSlab, slabHeight), m);
        Value rowHi = arith::MinUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, rowLo, slabHeight), m);
        emitKernel(b, loc, mm, rowLo, rowHi, colLo, colHi);
        scf::YieldOp::create(b, loc);
      });
  IRRewriter rewriter(b);
  if (small || failed(outlineParallelLoop(rewriter, loop, cost))) {
    // Sequential: the panel once, before the loop.
    for (auto alloca :
         llvm::make_early_inc_range(loop.getBody()->getOps<memref::AllocaOp>()))
      alloca->moveBefore(loop);
  }
  op->erase();
}

class MatmulKernelPass : public impl::MatmulKernelPassBase<MatmulKernelPass> {
public:
  MatmulKernelPass() = default;
  MatmulKernelPass(unsigned vectorBits,
                   std::shared_ptr<const TuningParameters> tuning)
      : vectorBits(vectorBits), tuning(std::move(tuning)) {}

  void runOnOperation() override {
    SmallVector<std::pair<linalg::LinalgOp, KernelMatmul>> matmuls;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (std::optional<KernelMatmul> km = matchKernelMatmul(op))
        matmuls.push_back({op, *km});
    });
    for (auto &[op, km] : matmuls)
      rewriteMatmul(op, km, tuning.get(), vectorBits);
  }

private:
  unsigned vectorBits = 256;
  std::shared_ptr<const TuningParameters> tuning;
};

} // namespace

std::optional<KernelMatmul> matchKernelMatmul(Operation *op) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumDpsInputs() != 2 ||
      linalgOp.getNumDpsInits() != 1)
    return std::nullopt;
  auto typeOf = [&](Value v) { return dyn_cast<ShapedType>(v.getType()); };
  ShapedType ta = typeOf(linalgOp.getDpsInputs()[0]);
  ShapedType tb = typeOf(linalgOp.getDpsInputs()[1]);
  ShapedType tc = typeOf(linalgOp.getDpsInits()[0]);
  if (!ta || !tb || !tc || !ta.hasRank() || !tb.hasRank() || !tc.hasRank())
    return std::nullopt;
  Type elem = tc.getElementType();
  if (!(elem.isF32() || elem.isF64()) || ta.getElementType() != elem ||
      tb.getElementType() != elem)
    return std::nullopt;
  if (auto matmul = dyn_cast<linalg::MatmulOp>(op)) {
    if (matmul.hasUserDefinedMaps() || ta.getRank() != 2 || tb.getRank() != 2 ||
        tc.getRank() != 2)
      return std::nullopt;
    return KernelMatmul{};
  }
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic)
    return std::nullopt;
  // Loops (batch..., m, n, k): r = C's rank, k = loop r.
  int64_t loops = generic.getNumLoops(), r = loops - 1;
  if (r < 2 || tc.getRank() != r)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  for (int64_t i = 0; i < loops; ++i)
    if (iterators[i] != (i == r ? utils::IteratorType::reduction
                                : utils::IteratorType::parallel))
      return std::nullopt;
  auto isDim = [](AffineExpr e, int64_t pos) {
    auto d = dyn_cast<AffineDimExpr>(e);
    return d && d.getPosition() == pos;
  };
  KernelMatmul km;
  km.numBatch = r - 2;
  // An operand's map: (leading..., row, col), each leading result a batch
  // loop or the constant 0.
  auto matrixMap = [&](AffineMap map, int64_t row, int64_t col,
                       SmallVector<int64_t, 4> &leading) {
    int64_t results = map.getNumResults();
    if (results < 2 || !isDim(map.getResult(results - 2), row) ||
        !isDim(map.getResult(results - 1), col))
      return false;
    for (int64_t j = 0; j < results - 2; ++j) {
      AffineExpr e = map.getResult(j);
      if (auto d = dyn_cast<AffineDimExpr>(e); d && d.getPosition() < r - 2)
        leading.push_back(d.getPosition());
      else if (auto cst = dyn_cast<AffineConstantExpr>(e);
               cst && cst.getValue() == 0)
        leading.push_back(-1);
      else
        return false;
    }
    return true;
  };
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!matrixMap(maps[0], r - 2, r, km.batchDims[0]) ||
      !matrixMap(maps[1], r, r - 1, km.batchDims[1]) ||
      !matrixMap(maps[2], r - 2, r - 1, km.batchDims[2]))
    return std::nullopt;
  for (int64_t i = 0; i < km.numBatch; ++i)
    if (km.batchDims[2][i] != i)
      return std::nullopt;
  // The body: yield(out + x * y), either operand order.
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 3)
    return std::nullopt;
  Value x = body.getArgument(0), y = body.getArgument(1);
  Value out = body.getArgument(2);
  auto add = body.getTerminator()->getOperand(0).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  Value product = add.getLhs() == out   ? add.getRhs()
                  : add.getRhs() == out ? add.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul || !((mul.getLhs() == x && mul.getRhs() == y) ||
                (mul.getLhs() == y && mul.getRhs() == x)))
    return std::nullopt;
  return km;
}

std::unique_ptr<Pass>
createMatmulKernelPass(unsigned vectorBits,
                       std::shared_ptr<const TuningParameters> tuning) {
  return std::make_unique<MatmulKernelPass>(vectorBits, std::move(tuning));
}

} // namespace kina
