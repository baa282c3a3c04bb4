//===- MatmulKernel.cpp - Register-tiled, vectorised linalg.matmul --------===//
//
// `linalg-to-loops` turns a `linalg.matmul` into three scalar loops (i, j, k
// with the reduction innermost): about 0.4 GFLOP/s on a 1024^3 f32 product
// (docs/toolchain-facts.md). This pass, run on the bufferized module before
// `linalg-to-loops`, rewrites each `linalg.matmul` over plain memrefs
// (rank 2, identity layout, one element type, f32 or f64, the default
// indexing maps) into the classic register-tiled micro-kernel of BLIS and
// OpenBLAS (Goto and van de Geijn, "Anatomy of high-performance matrix
// multiplication", 2008), written with the vector dialect:
//
//   for j0 in [colLo, colHi) step nv*VL        (a panel of B, kept in cache)
//     for i0 in [rowLo, rowHi) step MR
//       acc[r][v] = C[i0+r, j0+v*VL : +VL]     (MR*nv vector registers)
//       for k in [0, K)
//         b[v]   = B[k, j0+v*VL : +VL]
//         acc[r][v] = fma(broadcast(A[i0+r, k]), b[v], acc[r][v])
//       C[i0+r, j0+v*VL : +VL] = acc[r][v]
//
// with VL the elements of 256 bits (8 f32, 4 f64; LLVM splits or joins the
// vectors to the target's registers) and MR = 4 rows. The matrix is cut into
// the part whose rows are a multiple of MR and columns a multiple of 2*VL
// (2 vectors per row), then the leftover rows (MR = 1), the leftover full
// vectors of columns (nv = 1), and the columns left below VL, which stay a
// `linalg.matmul` on subviews for `linalg-to-loops`. Every part is a loop
// whose trip count may be zero, so dynamic and symbolic sizes need nothing
// more.
//
// Semantics are those of `linalg.matmul`, C += A * B, with each output
// element summed over k in increasing order, as the scalar loops do; the
// multiply-add is `vector.fma` (LLVM's `fmuladd`, fused where the target has
// FMA instructions, so results may differ from the scalar loops in the last
// bits; docs/tolerances.md).
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
namespace {

/// Rows of C per micro-kernel call.
constexpr int64_t kRows = 4;
/// Width of one vector, in bits.
constexpr int64_t kVectorBits = 256;
/// Block sizes (BLIS's KC and MC): a block of KC rows of B and nv*VL columns
/// (16 KiB of f32 for the widest panel) stays in the L1 cache while the
/// kernel walks MC rows of A, whose KC-wide block (64 KiB) stays in L2.
constexpr int64_t kBlockK = 256;
constexpr int64_t kBlockM = 64;

/// The operands of one matmul and the sizes read from them.
struct Matmul {
  Value a, b, c;    // memref<MxK>, memref<KxN>, memref<MxN>
  Value m, n, k;    // index
  VectorType vecTy; // vector<VL x elem>
};

/// True for a memref the kernel can address with `vector.load`: rank 2,
/// identity layout (row-major, contiguous rows), element type `elem`.
bool isPlainMatrix(Value v, Type elem) {
  auto type = dyn_cast<MemRefType>(v.getType());
  return type && type.getRank() == 2 && type.getLayout().isIdentity() &&
         type.getElementType() == elem;
}

/// A block of the iteration space: rows [rowLo, rowHi) (a multiple of `mr`
/// rows), columns [colLo, colHi) (a multiple of nv*VL columns, or, with
/// `masked`, one vector's worth or less: the last columns), reduction
/// [kLo, kHi).
struct Block {
  Value rowLo, rowHi;
  int64_t mr;
  Value colLo, colHi;
  int64_t nv;
  bool masked;
  Value kLo, kHi;
};

/// Emits the micro-kernel over `blk`: C[rows, cols] += A[rows, k] B[k, cols]
/// summed over k in increasing order.
void emitKernel(OpBuilder &b, Location loc, const Matmul &mm,
                const Block &blk) {
  int64_t vl = mm.vecTy.getNumElements();
  int64_t mr = blk.mr, nv = blk.nv;
  auto cst = [&](OpBuilder &b, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  scf::ForOp::create(
      b, loc, blk.colLo, blk.colHi, cst(b, nv * vl), ValueRange{},
      [&](OpBuilder &b, Location loc, Value j0, ValueRange) {
        // The last columns: lanes [0, n - j0) of one vector.
        Value mask, zeros;
        if (blk.masked) {
          // lane < n - j0, as i64 compares (vector.create_mask would need
          // its own lowering patterns before the LLVM conversion).
          auto laneTy = VectorType::get({vl}, b.getI64Type());
          SmallVector<int64_t> lanes;
          for (int64_t l = 0; l < vl; ++l)
            lanes.push_back(l);
          Value laneIds = arith::ConstantOp::create(
              b, loc, laneTy,
              DenseElementsAttr::get(laneTy, ArrayRef<int64_t>(lanes)));
          Value left = arith::IndexCastOp::create(
              b, loc, b.getI64Type(), arith::SubIOp::create(b, loc, mm.n, j0));
          mask = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::slt, laneIds,
              vector::BroadcastOp::create(b, loc, laneTy, left));
          zeros = arith::ConstantOp::create(
              b, loc, mm.vecTy,
              DenseElementsAttr::get(mm.vecTy,
                                     b.getZeroAttr(mm.vecTy.getElementType())));
        }
        auto load = [&](OpBuilder &b, Value base, Value i, Value j) -> Value {
          if (mask)
            return vector::MaskedLoadOp::create(b, loc, mm.vecTy, base,
                                                ValueRange{i, j}, mask, zeros);
          return vector::LoadOp::create(b, loc, mm.vecTy, base,
                                        ValueRange{i, j});
        };
        scf::ForOp::create(
            b, loc, blk.rowLo, blk.rowHi, cst(b, mr), ValueRange{},
            [&](OpBuilder &b, Location loc, Value i0, ValueRange) {
              SmallVector<Value> rows, cols;
              for (int64_t r = 0; r < mr; ++r)
                rows.push_back(r == 0 ? i0
                                      : arith::AddIOp::create(b, loc, i0,
                                                              cst(b, r)));
              for (int64_t v = 0; v < nv; ++v)
                cols.push_back(v == 0 ? j0
                                      : arith::AddIOp::create(b, loc, j0,
                                                              cst(b, v * vl)));
              SmallVector<Value> acc;
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t v = 0; v < nv; ++v)
                  acc.push_back(load(b, mm.c, rows[r], cols[v]));
              auto loop = scf::ForOp::create(
                  b, loc, blk.kLo, blk.kHi, cst(b, 1), acc,
                  [&](OpBuilder &b, Location loc, Value k, ValueRange iter) {
                    SmallVector<Value> bv;
                    for (int64_t v = 0; v < nv; ++v)
                      bv.push_back(load(b, mm.b, k, cols[v]));
                    SmallVector<Value> next;
                    for (int64_t r = 0; r < mr; ++r) {
                      Value a = memref::LoadOp::create(
                          b, loc, mm.a, ValueRange{rows[r], k});
                      Value av =
                          vector::BroadcastOp::create(b, loc, mm.vecTy, a);
                      for (int64_t v = 0; v < nv; ++v)
                        next.push_back(vector::FMAOp::create(
                            b, loc, av, bv[v], iter[r * nv + v]));
                    }
                    scf::YieldOp::create(b, loc, next);
                  });
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t v = 0; v < nv; ++v) {
                  Value sum = loop.getResult(r * nv + v);
                  ValueRange at{rows[r], cols[v]};
                  if (mask)
                    vector::MaskedStoreOp::create(b, loc, mm.c, at, mask, sum);
                  else
                    vector::StoreOp::create(b, loc, sum, mm.c, at);
                }
              scf::YieldOp::create(b, loc);
            });
        scf::YieldOp::create(b, loc);
      });
}

/// Rewrites `op` into blocked kernel loops; leaves matmuls the kernel does
/// not cover untouched.
void rewriteMatmul(linalg::MatmulOp op) {
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
  auto cst = [&](OpBuilder &b, int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  int64_t vl = kVectorBits / elem.getIntOrFloatBitWidth();
  Matmul mm{a,
            bm,
            c,
            memref::DimOp::create(b, loc, a, 0),
            memref::DimOp::create(b, loc, bm, 1),
            memref::DimOp::create(b, loc, a, 1),
            VectorType::get({vl}, elem)};
  auto roundDown = [&](OpBuilder &b, Value x, int64_t step) -> Value {
    Value rem = arith::RemUIOp::create(b, loc, x, cst(b, step));
    return arith::SubIOp::create(b, loc, x, rem);
  };
  // Column parts: [0, n2) in steps of 2 vectors, [n2, n1) of 1 vector,
  // [n1, n) the masked rest (one step when not empty).
  Value n2 = roundDown(b, mm.n, 2 * vl);
  Value n1 = roundDown(b, mm.n, vl);
  scf::ForOp::create(
      b, loc, cst(b, 0), mm.k, cst(b, kBlockK), ValueRange{},
      [&](OpBuilder &b, Location loc, Value kLo, ValueRange) {
        Value kHi = arith::MinSIOp::create(
            b, loc, arith::AddIOp::create(b, loc, kLo, cst(b, kBlockK)), mm.k);
        scf::ForOp::create(
            b, loc, cst(b, 0), mm.m, cst(b, kBlockM), ValueRange{},
            [&](OpBuilder &b, Location loc, Value iLo, ValueRange) {
              Value iHi = arith::MinSIOp::create(
                  b, loc, arith::AddIOp::create(b, loc, iLo, cst(b, kBlockM)),
                  mm.m);
              // Rows [iLo, i4) in steps of 4, then one at a time.
              Value i4 = arith::AddIOp::create(
                  b, loc, iLo,
                  roundDown(b, arith::SubIOp::create(b, loc, iHi, iLo),
                            kRows));
              struct Cols {
                Value lo, hi;
                int64_t nv;
                bool masked;
              };
              for (Cols cols : {Cols{cst(b, 0), n2, 2, false},
                                Cols{n2, n1, 1, false},
                                Cols{n1, mm.n, 1, true}}) {
                emitKernel(b, loc, mm,
                           {iLo, i4, kRows, cols.lo, cols.hi, cols.nv,
                            cols.masked, kLo, kHi});
                emitKernel(b, loc, mm,
                           {i4, iHi, 1, cols.lo, cols.hi, cols.nv,
                            cols.masked, kLo, kHi});
              }
              scf::YieldOp::create(b, loc);
            });
        scf::YieldOp::create(b, loc);
      });
  op.erase();
}

class MatmulKernelPass
    : public PassWrapper<MatmulKernelPass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MatmulKernelPass)
  StringRef getArgument() const override { return "kina-matmul-kernel"; }
  StringRef getDescription() const override {
    return "Rewrite linalg.matmul on memrefs into a register-tiled, "
           "vectorised kernel";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, memref::MemRefDialect,
                    scf::SCFDialect, vector::VectorDialect,
                    linalg::LinalgDialect>();
  }

  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp op) { matmuls.push_back(op); });
    for (linalg::MatmulOp op : matmuls)
      rewriteMatmul(op);
  }
};

} // namespace

std::unique_ptr<Pass> createMatmulKernelPass() {
  return std::make_unique<MatmulKernelPass>();
}

} // namespace kina
