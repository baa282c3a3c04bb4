//===- GpuMapMatmul.cpp - Contractions as shared-memory tiled kernels -----===//
//
// The pass `kina-gpu-map-matmul` of the cuda target. It turns each
// host-side bufferized contraction `linalg.generic` (what `linalg.matmul`
// generalizes to, and MLIRGen's batched, broadcast and rank-1 matmuls: two
// inputs, one output, exactly one reduction loop k, a region `acc + a*b`
// with any casts) into a kernel of 16x16 output tiles:
//
//   block (16, 16) threads, grid (ceil(N/16), ceil(M/16), batch), each
//   dimension grid-stride looped (at most 65535 blocks in y and z);
//   thread (tx, ty) owns C[row = 16*by + ty][col = 16*bx + tx];
//   for k0 = 0; k0 < K; k0 += 16:
//     As[ty][tx] = A(row_of_tile + ty, k0 + tx)   (0 outside the operand)
//     Bs[ty][tx] = B(k0 + ty, col_of_tile + tx)
//     barrier; acc = region(As[ty][kk], Bs[kk][tx], acc) for kk < 16;
//     barrier
//   C = acc (starting from C's init, the zero fill)
//
// m is the parallel loop only the first input reads, n the one only the
// second reads (either may be missing: a rank-1 operand), the other
// parallel loops are batch loops (broadcast batch dims are constant 0 in
// the maps, which the loads follow). The tiles are loaded with threadIdx.x
// on k for A and on n for B, coalesced for row-major operands. The k order
// is the CPU's (0 to K-1), so integer matmuls are exact and float ones
// accumulate in the same order. cuBLASLt or tensor-core kernels are the
// speed issue's (docs/cuda.md).
//
//===----------------------------------------------------------------------===//
#include "CudaPasses.h"
#include "GpuCodegen.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

#include <optional>

using namespace mlir;

namespace kina::cuda {
namespace {

constexpr int64_t kTile = 16;

/// The loops of a contraction generic, or nullopt when `op` is not one.
struct ContractionLoops {
  unsigned k;
  std::optional<unsigned> m, n;
  SmallVector<unsigned> batch;
};

std::optional<ContractionLoops> matchContraction(linalg::GenericOp op) {
  if (!isMappableGeneric(op) || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  for (Value in : op.getDpsInputs())
    if (!isa<MemRefType>(in.getType()))
      return std::nullopt;
  Block &body = op.getRegion().front();
  if (!body.getOps<linalg::IndexOp>().empty())
    return std::nullopt;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *add = yield.getValues()[0].getDefiningOp();
  if (!add || !isa<arith::AddFOp, arith::AddIOp>(add) ||
      !llvm::is_contained(add->getOperands(), body.getArgument(2)))
    return std::nullopt;

  AffineMap a = op.getIndexingMapsArray()[0];
  AffineMap bm = op.getIndexingMapsArray()[1];
  auto uses = [](AffineMap map, unsigned d) { return map.isFunctionOfDim(d); };
  ContractionLoops loops;
  bool haveK = false;
  for (auto [d, it] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (it == utils::IteratorType::reduction) {
      if (!uses(a, d) || !uses(bm, d))
        return std::nullopt;
      loops.k = d;
      haveK = true;
      continue;
    }
    bool inA = uses(a, d), inB = uses(bm, d);
    if (inA && !inB) {
      if (loops.m)
        return std::nullopt;
      loops.m = d;
    } else if (inB && !inA) {
      if (loops.n)
        return std::nullopt;
      loops.n = d;
    } else {
      loops.batch.push_back(d);
    }
  }
  if (!haveK)
    return std::nullopt;
  return loops;
}

void mapContraction(linalg::GenericOp op, const ContractionLoops &loops) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> sizes = loopSizes(b, loc, op);
  if (anyStaticZero(sizes))
    return op.erase(); // the init (zeros, or no element) is the result
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value tile = arith::ConstantIndexOp::create(b, loc, kTile);
  Value m = loops.m ? sizes[*loops.m] : one;
  Value n = loops.n ? sizes[*loops.n] : one;
  Value k = sizes[loops.k];
  SmallVector<Value> batchSizes;
  for (unsigned d : loops.batch)
    batchSizes.push_back(sizes[d]);
  Value batch = product(b, loc, batchSizes);

  // Nothing to do for an empty result or K = 0 (the init is the result).
  Value nonEmpty = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
  for (Value v : {m, n, k, batch})
    nonEmpty = arith::AndIOp::create(
        b, loc, nonEmpty,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, v, zero));
  auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  b.setInsertionPointToStart(&guard.getThenRegion().front());

  Value mTiles = arith::CeilDivUIOp::create(b, loc, m, tile);
  Value nTiles = arith::CeilDivUIOp::create(b, loc, n, tile);
  Value gridX = gridSize(b, loc, n, kTile, kMaxGridX);
  Value gridY = gridSize(b, loc, m, kTile, kMaxGridYZ);
  Value gridZ = gridSize(b, loc, batch, 1, kMaxGridYZ);
  auto workgroup = gpu::AddressSpaceAttr::get(
      b.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace());
  Type aType = getElementTypeOrSelf(op.getDpsInputs()[0].getType());
  Type bType = getElementTypeOrSelf(op.getDpsInputs()[1].getType());
  Type cType = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  SmallVector<Type> buffers = {
      MemRefType::get({kTile, kTile}, aType, AffineMap(), workgroup),
      MemRefType::get({kTile, kTile}, bType, AffineMap(), workgroup)};
  gpu::LaunchOp launch =
      createLaunch(b, loc, gridX, gridY, gridZ, kTile, kTile, 1, buffers);
  Value as = launch.getWorkgroupAttributions()[0];
  Value bs = launch.getWorkgroupAttributions()[1];
  Value tx = launch.getThreadIds().x, ty = launch.getThreadIds().y;
  Value kZero = arith::ConstantIndexOp::create(b, loc, 0);
  Value kTileV = arith::ConstantIndexOp::create(b, loc, kTile);
  auto zBatch = scf::ForOp::create(b, loc, launch.getBlockIds().z, batch,
                                   launch.getGridSize().z);
  b.setInsertionPointToStart(zBatch.getBody());
  SmallVector<Value> bivs =
      delinearize(b, loc, zBatch.getInductionVar(), batchSizes);
  auto yTiles = scf::ForOp::create(b, loc, launch.getBlockIds().y, mTiles,
                                   launch.getGridSize().y);
  b.setInsertionPointToStart(yTiles.getBody());
  auto xTiles = scf::ForOp::create(b, loc, launch.getBlockIds().x, nTiles,
                                   launch.getGridSize().x);
  b.setInsertionPointToStart(xTiles.getBody());
  Value rowBase =
      arith::MulIOp::create(b, loc, yTiles.getInductionVar(), kTileV);
  Value colBase =
      arith::MulIOp::create(b, loc, xTiles.getInductionVar(), kTileV);
  Value row = arith::AddIOp::create(b, loc, rowBase, ty);
  Value col = arith::AddIOp::create(b, loc, colBase, tx);
  auto lt = [&](Value x, Value y) {
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, x, y)
        .getResult();
  };
  auto ivsAt = [&](Value mi, Value ni, Value ki) {
    SmallVector<Value> ivs(sizes.size(), kZero);
    for (auto [d, v] : llvm::zip(loops.batch, bivs))
      ivs[d] = v;
    if (loops.m)
      ivs[*loops.m] = mi;
    if (loops.n)
      ivs[*loops.n] = ni;
    ivs[loops.k] = ki;
    return ivs;
  };
  auto zeroOf = [&](Type t) {
    return arith::ConstantOp::create(b, loc, cast<TypedAttr>(b.getZeroAttr(t)))
        .getResult();
  };
  // Loads `operand` at `ivs` when `ok`, else 0.
  auto guardedLoad = [&](OpOperand &operand, Value ok, ValueRange ivs, Type t) {
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{t}, ok, true);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b, loc, loadOperand(b, loc, op, operand, ivs));
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, loc, zeroOf(t));
    return ifOp.getResult(0);
  };

  Value inRange = arith::AndIOp::create(b, loc, lt(row, m), lt(col, n));
  OpOperand &init = op.getDpsInitsMutable()[0];
  Value acc0 = guardedLoad(init, inRange, ivsAt(row, col, kZero), cType);
  auto kLoop = scf::ForOp::create(b, loc, kZero, k, kTileV, ValueRange{acc0});
  {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(kLoop.getBody());
    Value k0 = kLoop.getInductionVar();
    Value ka = arith::AddIOp::create(b, loc, k0, tx);
    Value kb = arith::AddIOp::create(b, loc, k0, ty);
    Value a = guardedLoad(*op.getDpsInputOperand(0),
                          arith::AndIOp::create(b, loc, lt(row, m), lt(ka, k)),
                          ivsAt(row, kZero, ka), aType);
    memref::StoreOp::create(b, loc, a, as, ValueRange{ty, tx});
    Value bv = guardedLoad(*op.getDpsInputOperand(1),
                           arith::AndIOp::create(b, loc, lt(kb, k), lt(col, n)),
                           ivsAt(kZero, col, kb), bType);
    memref::StoreOp::create(b, loc, bv, bs, ValueRange{ty, tx});
    gpu::BarrierOp::create(b, loc);
    Value kCount = arith::MinUIOp::create(b, loc, kTileV,
                                          arith::SubIOp::create(b, loc, k, k0));
    Value oneK = arith::ConstantIndexOp::create(b, loc, 1);
    auto inner = scf::ForOp::create(b, loc, kZero, kCount, oneK,
                                    kLoop.getRegionIterArgs());
    {
      OpBuilder::InsertionGuard g2(b);
      b.setInsertionPointToStart(inner.getBody());
      Value kk = inner.getInductionVar();
      Value av = memref::LoadOp::create(b, loc, as, ValueRange{ty, kk});
      Value bw = memref::LoadOp::create(b, loc, bs, ValueRange{kk, tx});
      SmallVector<Value> r = cloneRegion(
          b, op, ValueRange{av, bw, inner.getRegionIterArgs()[0]}, {});
      scf::YieldOp::create(b, loc, r);
    }
    gpu::BarrierOp::create(b, loc);
    scf::YieldOp::create(b, loc, inner.getResults());
  }
  auto store = scf::IfOp::create(b, loc, inRange, /*withElse=*/false);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  storeOperand(b, loc, op, init, kLoop.getResult(0), ivsAt(row, col, kZero));
  op.erase();
}

class GpuMapMatmulPass
    : public PassWrapper<GpuMapMatmulPass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GpuMapMatmulPass)
  StringRef getArgument() const override { return "kina-gpu-map-matmul"; }
  StringRef getDescription() const override {
    return "Map contraction linalg.generic ops (matmul) to shared-memory "
           "tiled GPU kernels";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<affine::AffineDialect, arith::ArithDialect, gpu::GPUDialect,
                    memref::MemRefDialect, scf::SCFDialect>();
  }

  void runOnOperation() override {
    SmallVector<std::pair<linalg::GenericOp, ContractionLoops>> work;
    getOperation().walk([&](linalg::GenericOp op) {
      if (op->getParentOfType<gpu::LaunchOp>())
        return;
      if (auto loops = matchContraction(op))
        work.push_back({op, *loops});
    });
    for (auto &[op, loops] : work)
      mapContraction(op, loops);
  }
};

} // namespace

std::unique_ptr<Pass> createGpuMapMatmulPass() {
  return std::make_unique<GpuMapMatmulPass>();
}

} // namespace kina::cuda
