//===- MatmulKernel.cpp - Register-tiled, vectorised linalg.matmul --------===//
//
// `linalg-to-loops` turns a `linalg.matmul` into three scalar loops (i, j, k
// with the reduction innermost): about 0.5 GFLOP/s (bench/matmul.py). This
// pass, run on the bufferized module before `linalg-to-loops`, rewrites each
// `linalg.matmul` over plain memrefs (rank 2, identity layout, one element
// type, f32 or f64, the default indexing maps) into the register-tiled
// micro-kernel of BLIS and OpenBLAS (Goto and van de Geijn, "Anatomy of
// high-performance matrix multiplication", 2008), with the vector dialect:
//
//   for kLo in [0, K) step KC                       (K blocks)
//     for iLo in [0, M) step MC                     (blocks of rows of A)
//       for each panel j0 of nv*VL columns
//         packed[0:kHi-kLo, :] = B[kLo:kHi, j0 : j0+nv*VL]
//         for i0 in [iLo, iHi) step MR (4, then 1 for the last rows)
//           acc[r][v] = C[i0+r, j0+v*VL : +VL]      (MR*nv vector registers)
//           for k in [kLo, kHi)
//             acc[r][v] = fma(broadcast(A[i0+r, k]), packed[k-kLo, v], acc)
//           C[i0+r, j0+v*VL : +VL] = acc[r][v]
//
// VL is the elements of `vbits` bits (256 by default: 8 f32, 4 f64; LLVM
// splits or joins the vectors to the target's registers). Panels are nv
// vectors wide (2 by default), then one vector for the columns left, then
// one masked vector (masked loads and stores, not packed) for the last
// columns below VL. Every loop's trip count may be zero, so dynamic and
// symbolic sizes need nothing more. The packed panel (KC x nv*VL
// elements, 16 KiB by default) is a stack buffer of the function.
//
// Threads: unless the work (M*N*K/16 cost units) is a constant below
// kMinParallelCost (src/passes/Parallel.h), the nest above runs once per
// column slab of C, slabs = kina_rt_parallel_threads(panels, cost) (the
// threads the runtime will use), each slab a whole number of panels wide
// (the last one takes the columns left, with its 1-vector and masked
// groups), with its own packed panel; the loop over slabs is outlined and
// run by kina_rt_parallel_for, one slab per thread. A slab's columns are
// summed exactly as with one slab, so the result does not depend on the
// thread count.
//
// The schedule (VL, MR, nv, MC, KC and the unroll of the k loop) is the
// space "cpu.matmul" of kina/Tuning.h: its defaults unless the pipeline's
// TuningParameters hold a schedule for the matmul's key (tuningKey, the
// Kina statement's line and column), which `kinac --autotune` measures and
// `--tuning-cache` replays (docs/autotune.md). The k loop is unrolled with
// MLIR's loopUnrollByFactor.
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
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_MATMULKERNELPASS
#include "kina/Passes.h.inc"

namespace {

/// The schedule of one matmul, from the space "cpu.matmul" (kina/Tuning.h):
/// its defaults are the measured constants of the untuned kernel. Block
/// sizes (BLIS's KC and MC): a packed panel of KC rows of B and nv*VL
/// columns (16 KiB by default) stays in the L1 cache while the kernel walks
/// MC rows of A, whose KC-wide block (256 KiB of f32) stays in L2 (MC = 256
/// measured best of 64, 256 and 512 with bench/matmul.py on a 512 KiB L2).
struct MatmulSchedule {
  int64_t vectorBits; // vbits: width of one vector, in bits
  int64_t rows;       // mr: rows of C per micro-kernel call
  int64_t panel;      // nv: vectors per full column panel
  int64_t blockM;     // mc: rows of A per block
  int64_t blockK;     // kc: reduction block
  int64_t unrollK;    // ku: unroll factor of the innermost k loop

  /// `tuned`'s values, the space's defaults for what it lacks.
  static MatmulSchedule from(const Schedule *tuned) {
    Schedule s = lookupSpace("cpu.matmul")->defaults();
    if (tuned)
      for (const auto &[name, value] : tuned->params)
        s.params[name] = value;
    return {s.get("vbits", 256), s.get("mr", 4),   s.get("nv", 2),
            s.get("mc", 256),    s.get("kc", 256), s.get("ku", 1)};
  }
};

/// The operands of one matmul and the sizes read from them.
struct Matmul {
  Value a, b, c;    // memref<MxK>, memref<KxN>, memref<MxN>
  Value m, n, k;    // index
  VectorType vecTy; // vector<VL x elem>
  Value packed;     // memref<KC x nv*VL x elem> on the stack: a packed panel
  MatmulSchedule schedule;
};

/// True for a memref the kernel can address with `vector.load`: rank 2,
/// identity layout (row-major, contiguous rows), element type `elem`.
bool isPlainMatrix(Value v, Type elem) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getRank() == 2 && type.getLayout().isIdentity() &&
         type.getElementType() == elem;
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
        SmallVector<Value> acc;
        for (int64_t r = 0; r < mr; ++r)
          for (int64_t v = 0; v < nv; ++v)
            acc.push_back(load(b, mm.c, rows[r], cols[v]));
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

/// Emits the blocked kernel for the columns [colLo, colHi) of C (colLo a
/// multiple of the panel width), with its own packed panel:
/// K blocks, then blocks of rows, then the panels of the column groups:
/// [colLo, nw) in panels of nv vectors, [nw, n1) of 1 vector, [n1, colHi)
/// the masked rest (one panel when not empty).
void emitKernel(OpBuilder &b, Location loc, Matmul mm, Value colLo,
                Value colHi) {
  int64_t blockK = mm.schedule.blockK, blockM = mm.schedule.blockM;
  int64_t vl = mm.vecTy.getNumElements();
  int64_t nv = mm.schedule.panel;
  // The packed panel lives on the stack, once per call (Kina has no loops;
  // an outlined slab loop hoists it out of its loop: Parallel.h).
  auto packedTy = MemRefType::get({blockK, nv * vl}, mm.vecTy.getElementType());
  mm.packed =
      memref::AllocaOp::create(b, loc, packedTy, b.getI64IntegerAttr(64));
  Value width = arith::SubIOp::create(b, loc, colHi, colLo);
  Value nw =
      arith::AddIOp::create(b, loc, colLo, roundDown(b, loc, width, nv * vl));
  Value n1 = arith::AddIOp::create(b, loc, colLo, roundDown(b, loc, width, vl));
  Value zero = indexConst(b, loc, 0);
  Columns groups[] = {
      {colLo, nw, nv, false}, {nw, n1, 1, false}, {n1, colHi, 1, true}};
  scf::ForOp::create(
      b, loc, zero, mm.k, indexConst(b, loc, blockK), ValueRange{},
      [&](OpBuilder &b, Location loc, Value kLo, ValueRange) {
        Value kHi = arith::MinSIOp::create(
            b, loc,
            arith::AddIOp::create(b, loc, kLo, indexConst(b, loc, blockK)),
            mm.k);
        scf::ForOp::create(
            b, loc, zero, mm.m, indexConst(b, loc, blockM), ValueRange{},
            [&](OpBuilder &b, Location loc, Value iLo, ValueRange) {
              Value iHi = arith::MinSIOp::create(
                  b, loc,
                  arith::AddIOp::create(b, loc, iLo,
                                        indexConst(b, loc, blockM)),
                  mm.m);
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

/// Rewrites `op` into blocked kernel loops; leaves matmuls the kernel does
/// not cover untouched.
void rewriteMatmul(linalg::MatmulOp op, const TuningParameters *tuning) {
  if (!op.hasPureBufferSemantics() || op.hasUserDefinedMaps() ||
      op.getDpsInputs().size() != 2 || op.getDpsInits().size() != 1)
    return;
  Value a = op.getDpsInputs()[0], bm = op.getDpsInputs()[1];
  Value c = op.getDpsInits()[0];
  Type elem = cast<MemRefType>(c.getType()).getElementType();
  if (!elem.isF32() && !elem.isF64())
    return;
  if (!isPlainMatrix(a, elem) || !isPlainMatrix(bm, elem) ||
      !isPlainMatrix(c, elem))
    return;

  OpBuilder b(op);
  Location loc = op.getLoc();
  MatmulSchedule schedule =
      MatmulSchedule::from(tuning ? tuning->lookup(op) : nullptr);
  int64_t vl = schedule.vectorBits / elem.getIntOrFloatBitWidth();
  int64_t w = schedule.panel * vl;
  Matmul mm{a,
            bm,
            c,
            b.createOrFold<memref::DimOp>(loc, a, 0),
            b.createOrFold<memref::DimOp>(loc, bm, 1),
            b.createOrFold<memref::DimOp>(loc, a, 1),
            VectorType::get({vl}, elem),
            Value(),
            schedule};
  // The work, M*N*K/16 cost units (kina_rt_parallel_for: a multiply-add
  // of a vector lane costs about a sixteenth of an element of a streaming
  // loop). A constant below kMinParallelCost: one slab, no runtime call.
  Value cost = b.createOrFold<arith::DivUIOp>(
      loc,
      b.createOrFold<arith::MulIOp>(
          loc, b.createOrFold<arith::MulIOp>(loc, mm.m, mm.n), mm.k),
      indexConst(b, loc, 16));
  std::optional<int64_t> knownCost = getConstantIntValue(cost);
  if (knownCost && *knownCost < kMinParallelCost) {
    emitKernel(b, loc, mm, indexConst(b, loc, 0), mm.n);
    op.erase();
    return;
  }
  // Column slabs of whole panels, one per thread that will run
  // (kina_rt_parallel_threads), each with its own packed panel; the slab
  // loop runs on the thread pool (src/passes/Parallel.cpp). Each element
  // of C is still summed over k in increasing order by one thread.
  Value panels =
      b.createOrFold<arith::CeilDivUIOp>(loc, mm.n, indexConst(b, loc, w));
  Value slabs =
      threadsFor(b, loc, op->getParentOfType<ModuleOp>(), panels, cost);
  Value slabWidth = arith::MulIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, panels, slabs),
      indexConst(b, loc, w));
  auto slabLoop = scf::ForOp::create(
      b, loc, indexConst(b, loc, 0), slabs, indexConst(b, loc, 1), ValueRange{},
      [&](OpBuilder &b, Location loc, Value s, ValueRange) {
        Value colLo = arith::MulIOp::create(b, loc, s, slabWidth);
        Value colHi = arith::MinUIOp::create(
            b, loc, arith::AddIOp::create(b, loc, colLo, slabWidth), mm.n);
        emitKernel(b, loc, mm, colLo, colHi);
        scf::YieldOp::create(b, loc);
      });
  // Left a sequential loop (still correct) if outlining fails.
  IRRewriter rewriter(b);
  (void)outlineParallelLoop(rewriter, slabLoop, cost);
  op.erase();
}

class MatmulKernelPass : public impl::MatmulKernelPassBase<MatmulKernelPass> {
public:
  MatmulKernelPass() = default;
  explicit MatmulKernelPass(std::shared_ptr<const TuningParameters> tuning)
      : tuning(std::move(tuning)) {}

  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp op : matmuls)
      rewriteMatmul(op, tuning.get());
  }

private:
  std::shared_ptr<const TuningParameters> tuning;
};

} // namespace

std::unique_ptr<Pass>
createMatmulKernelPass(std::shared_ptr<const TuningParameters> tuning) {
  return std::make_unique<MatmulKernelPass>(std::move(tuning));
}

} // namespace kina
