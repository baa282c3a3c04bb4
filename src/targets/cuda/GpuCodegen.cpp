//===- GpuCodegen.cpp - Helpers shared by the cuda target's kernel mappers ===//
//
// Implements GpuCodegen.h: host-side loop sizes and grid sizes, the
// `gpu.launch` builder, loads and stores through indexing maps, and the
// cloning of a generic's region (whole or a slice) inside a kernel.
//
//===----------------------------------------------------------------------===//
#include "GpuCodegen.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

#include <limits>

using namespace mlir;

namespace kina::cuda {

SmallVector<Value> loopSizes(OpBuilder &b, Location loc, linalg::LinalgOp op) {
  SmallVector<Value> sizes;
  for (Range range : op.createLoopRanges(b, loc))
    sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
  return sizes;
}

bool anyStaticZero(ValueRange sizes) {
  return llvm::any_of(sizes, [](Value v) {
    std::optional<int64_t> c = getConstantIntValue(v);
    return c && *c == 0;
  });
}

Value product(OpBuilder &b, Location loc, ValueRange values) {
  Value result = arith::ConstantIndexOp::create(b, loc, 1);
  for (Value v : values)
    result = arith::MulIOp::create(b, loc, result, v);
  return result;
}

Value gridSize(OpBuilder &b, Location loc, Value n, int64_t d, int64_t cap) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value blocks = arith::CeilDivUIOp::create(
      b, loc, n, arith::ConstantIndexOp::create(b, loc, d));
  blocks = arith::MinUIOp::create(b, loc, blocks,
                                  arith::ConstantIndexOp::create(b, loc, cap));
  return arith::MaxUIOp::create(b, loc, blocks, one);
}

gpu::LaunchOp createLaunch(OpBuilder &b, Location loc, Value gridX, Value gridY,
                           Value gridZ, int64_t blockX, int64_t blockY,
                           int64_t blockZ, TypeRange workgroupBuffers) {
  Value bx = arith::ConstantIndexOp::create(b, loc, blockX);
  Value by = arith::ConstantIndexOp::create(b, loc, blockY);
  Value bz = arith::ConstantIndexOp::create(b, loc, blockZ);
  auto launch =
      gpu::LaunchOp::create(b, loc, gridX, gridY, gridZ, bx, by, bz,
                            /*dynamicSharedMemorySize=*/nullptr,
                            /*asyncTokenType=*/nullptr,
                            /*asyncDependencies=*/{}, workgroupBuffers);
  Block &body = launch.getBody().front();
  b.setInsertionPointToEnd(&body);
  auto terminator = gpu::TerminatorOp::create(b, loc);
  b.setInsertionPoint(terminator);
  return launch;
}

SmallVector<Value> delinearize(OpBuilder &b, Location loc, Value linear,
                               ValueRange sizes) {
  if (sizes.empty())
    return {};
  if (sizes.size() == 1)
    return {linear};
  SmallVector<OpFoldResult> basis(sizes.begin(), sizes.end());
  auto op = affine::AffineDelinearizeIndexOp::create(b, loc, linear, basis,
                                                     /*hasOuterBound=*/true);
  return SmallVector<Value>(op.getResults());
}

SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      indices.push_back(ivs[dim.getPosition()]);
      continue;
    }
    if (auto cst = dyn_cast<AffineConstantExpr>(expr)) {
      indices.push_back(arith::ConstantIndexOp::create(b, loc, cst.getValue()));
      continue;
    }
    AffineMap single =
        AffineMap::get(map.getNumDims(), map.getNumSymbols(), expr);
    indices.push_back(affine::AffineApplyOp::create(b, loc, single, ivs));
  }
  return indices;
}

Value loadOperand(OpBuilder &b, Location loc, linalg::LinalgOp op,
                  OpOperand &operand, ValueRange ivs) {
  Value value = operand.get();
  if (!isa<MemRefType>(value.getType()))
    return value;
  SmallVector<Value> indices =
      applyMap(b, loc, op.getMatchingIndexingMap(&operand), ivs);
  return memref::LoadOp::create(b, loc, value, indices);
}

void storeOperand(OpBuilder &b, Location loc, linalg::LinalgOp op,
                  OpOperand &operand, Value value, ValueRange ivs) {
  SmallVector<Value> indices =
      applyMap(b, loc, op.getMatchingIndexingMap(&operand), ivs);
  memref::StoreOp::create(b, loc, value, operand.get(), indices);
}

SmallVector<Value> cloneRegion(OpBuilder &b, linalg::GenericOp op,
                               ValueRange blockArgs, ValueRange ivs) {
  Block &body = op.getRegion().front();
  IRMapping mapping;
  mapping.map(body.getArguments(), blockArgs);
  SmallVector<Value> yielded;
  for (Operation &inner : body) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    if (auto yield = dyn_cast<linalg::YieldOp>(inner)) {
      for (Value v : yield.getValues())
        yielded.push_back(mapping.lookupOrDefault(v));
      continue;
    }
    b.clone(inner, mapping);
  }
  return yielded;
}

FailureOr<SmallVector<Value>> cloneSlice(OpBuilder &b, linalg::GenericOp op,
                                         ValueRange roots, IRMapping mapping,
                                         ValueRange ivs) {
  Block &body = op.getRegion().front();
  llvm::SetVector<Operation *> needed;
  SmallVector<Value> worklist(roots.begin(), roots.end());
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    if (mapping.contains(v))
      continue;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg.getOwner() == &body)
        return failure(); // a block argument the slice may not read
      continue;           // defined outside the generic: usable as is
    }
    Operation *def = v.getDefiningOp();
    if (def->getBlock() != &body)
      continue; // defined above the generic
    if (isa<linalg::IndexOp>(def) && ivs.empty())
      return failure();
    if (!needed.insert(def))
      continue;
    def->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        worklist.push_back(operand);
    });
  }
  for (Operation &inner : body) {
    if (!needed.contains(&inner))
      continue;
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, mapping);
  }
  SmallVector<Value> results;
  for (Value root : roots)
    results.push_back(mapping.lookupOrDefault(root));
  return results;
}

std::optional<Combiner> combinerOf(Operation *def, Type type) {
  Builder b(def->getContext());
  auto fl = [&](double v) -> TypedAttr { return b.getFloatAttr(type, v); };
  auto in = [&](APInt v) -> TypedAttr { return b.getIntegerAttr(type, v); };
  unsigned w = type.isIntOrFloat() ? type.getIntOrFloatBitWidth() : 0;
  double inf = std::numeric_limits<double>::infinity();
  using K = gpu::AllReduceOperation;
  if (isa<arith::AddFOp>(def))
    return Combiner{def, K::ADD, fl(0.0)};
  if (isa<arith::MulFOp>(def))
    return Combiner{def, K::MUL, fl(1.0)};
  if (isa<arith::MaximumFOp>(def))
    return Combiner{def, K::MAXIMUMF, fl(-inf)};
  if (isa<arith::MinimumFOp>(def))
    return Combiner{def, K::MINIMUMF, fl(inf)};
  if (isa<arith::MaxNumFOp>(def))
    return Combiner{def, K::MAXNUMF, fl(-inf)};
  if (isa<arith::MinNumFOp>(def))
    return Combiner{def, K::MINNUMF, fl(inf)};
  if (!isa<IntegerType>(type))
    return std::nullopt;
  if (isa<arith::AddIOp>(def))
    return Combiner{def, K::ADD, in(APInt::getZero(w))};
  if (isa<arith::MulIOp>(def))
    return Combiner{def, K::MUL, in(APInt(w, 1))};
  if (isa<arith::MaxSIOp>(def))
    return Combiner{def, K::MAXSI, in(APInt::getSignedMinValue(w))};
  if (isa<arith::MinSIOp>(def))
    return Combiner{def, K::MINSI, in(APInt::getSignedMaxValue(w))};
  if (isa<arith::MaxUIOp>(def))
    return Combiner{def, K::MAXUI, in(APInt::getZero(w))};
  if (isa<arith::MinUIOp>(def))
    return Combiner{def, K::MINUI, in(APInt::getMaxValue(w))};
  if (isa<arith::AndIOp>(def))
    return Combiner{def, K::AND, in(APInt::getAllOnes(w))};
  if (isa<arith::OrIOp>(def))
    return Combiner{def, K::OR, in(APInt::getZero(w))};
  if (isa<arith::XOrIOp>(def))
    return Combiner{def, K::XOR, in(APInt::getZero(w))};
  return std::nullopt;
}

bool isMappableGeneric(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getRegion().getBlocks().size() != 1)
    return false;
  for (Value v : op->getOperands()) {
    Type t = v.getType();
    if (isa<ShapedType>(t) && !isa<MemRefType>(t))
      return false;
  }
  return true;
}

bool isExitBlock(Block *block) {
  for (Operation &op : *block) {
    if (isa<func::ReturnOp>(op))
      return true;
    if (!isa<memref::DeallocOp>(op) &&
        !(op.getNumRegions() == 0 && isMemoryEffectFree(&op)))
      return false;
  }
  return false;
}

bool mayStandBetween(Operation *op) {
  if (isa<memref::AllocOp, memref::DeallocOp>(op))
    return true;
  if (isa<linalg::LinalgOp, gpu::LaunchOp, memref::CopyOp>(op))
    return false;
  return op->getNumRegions() == 0 && isMemoryEffectFree(op);
}

Operation *nextAlongPath(Operation *op) {
  if (!op->hasTrait<OpTrait::IsTerminator>())
    return op->getNextNode();
  Block *block = op->getBlock();
  Block *next = nullptr;
  for (Block *succ : op->getSuccessors()) {
    if (succ->getSinglePredecessor() == block && !isExitBlock(succ)) {
      if (next)
        return nullptr;
      next = succ;
    } else if (!isExitBlock(succ)) {
      return nullptr;
    }
  }
  if (!next || next->getNumArguments() != 0 || next->empty())
    return nullptr;
  return &next->front();
}

void eraseAllocation(memref::AllocOp alloc) {
  Value v = alloc.getResult();
  for (Operation *user : llvm::make_early_inc_range(v.getUsers())) {
    if (isa<memref::DeallocOp>(user)) {
      user->erase();
      continue;
    }
    auto pointer = cast<memref::ExtractAlignedPointerAsIndexOp>(user);
    // The null check of an allocation that no longer exists passes.
    OpBuilder b(pointer);
    Value nonNull = arith::ConstantIndexOp::create(
        b, pointer.getLoc(), alloc.getAlignment().value_or(16));
    pointer.getResult().replaceAllUsesWith(nonNull);
    pointer.erase();
  }
  alloc.erase();
}

} // namespace kina::cuda
