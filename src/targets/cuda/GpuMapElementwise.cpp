//===- GpuMapElementwise.cpp - Parallel linalg ops as 1-D grid kernels ----===//
//
// The pass `kina-gpu-map-elementwise` of the cuda target. It runs on the
// bufferized module after the matmul and reduction mappers and turns every
// remaining host-side
//
//   - `linalg.generic` whose loops are all parallel (fused elementwise
//     chains, broadcasts, fills, transposes, casts, iota, gather, the
//     layout ops MLIRGen writes as generics), and
//   - `memref.copy` (what bufferization leaves for concat, slices and
//     copies into results),
//
// into GPU kernels, on the host:
//
//   if (n > 0)                            n = product of the loop sizes
//     if (vector kernel possible)         see below; checked on the host
//       gpu.launch blocks(min(ceil(n/(V*1024)), 65535)) threads(256)
//         grid-stride over groups of 4 vectors of V lanes per thread:
//         thread t of block b loads vectors (b*1024 + t + k*256), k < 4,
//         of every contiguous operand (all loads before the first use),
//         evaluates the region once per lane, stores one vector per output
//     else
//       gpu.launch blocks(min(ceil(n/256), 65535)) threads(256)
//         for i = blockIdx.x*256 + threadIdx.x; i < n; i += gridDim.x*256
//           (d0, ..., dr) = delinearize(i, sizes)      row-major
//           load the inputs through their indexing maps, evaluate the
//           region, store the results through theirs
//
// The vector kernel uses 16-byte accesses: V = 16 / (the widest element
// size) lanes (4 for f32, 8 for bf16/f16), `vector.load`/`vector.store`
// with that alignment (ld.global.v4 in the PTX). It applies when every
// output, and each input it loads as a vector, has the innermost loop as
// its innermost dim with unit stride (identity layout: "contiguous");
// inputs that do not depend on the innermost loop (row parameters,
// broadcasts) are loaded once per vector, other inputs (transposes,
// gathers) once per lane; element types must be byte-addressable (no i1).
// The innermost size must be a multiple of V (so that no vector crosses a
// row) and every contiguous memref 16-byte aligned: a static innermost size
// that is not a multiple means the scalar kernel only; otherwise the host
// checks the dynamic size and the aligned pointers and launches the scalar
// kernel when they do not hold (a caller's pointer into the middle of a
// tensor, say). The region is evaluated on scalars, lane by lane (NVPTX
// has no vector arithmetic for f32; any region, libdevice calls included,
// works unchanged).
//
// The linear index runs over the iteration space with the innermost loop
// fastest, so consecutive threads of a warp touch consecutive elements (or
// vectors) of every operand whose innermost dim is the innermost loop (the
// output of an elementwise op always): the accesses are coalesced. The
// grid-stride loops cover any size with a bounded grid, size 0 launches
// nothing, rank 0 is one thread. Afterwards, no linalg op and no
// `memref.copy` may remain outside a kernel (nothing of the computation
// runs on the host): the pass fails naming the op otherwise.
//
// Last, every `memref.get_global` (a constant tensor, bufferized) that a
// kernel of any mapper reads is cloned into that kernel's body: the host's
// global is host memory the GPU cannot read, and gpu-kernel-outlining then
// copies the `memref.global` into the kernel's `gpu.module`, so the
// constant is compiled into the fatbin as device memory.
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
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace kina::cuda {

#define GEN_PASS_DEF_GPUMAPELEMENTWISEPASS
#include "kina/CudaPasses.h.inc"

namespace {

// Threads per block: per kernel, the "cuda.elementwise" schedule of its
// op's key `elementwise@<line>:<col>` (kina/Tuning.h), else the class
// entry "cuda.elementwise", else the pass option block-size (default 256).
/// Vectors each thread of the vector kernel loads per iteration (all loads
/// issued before the first use: several 16-byte accesses in flight).
constexpr int64_t kVectorsPerThread = 4;
/// The width of the vector accesses, in bytes (ld.global.v4.f32 and the
/// like: the widest load the SM issues per thread).
constexpr int64_t kVectorBytes = 16;

/// One memref the kernel reads or writes through an indexing map.
struct Access {
  Value memref;
  AffineMap map;
};

/// What one elementwise kernel computes: `body` takes the inputs' values at
/// an iteration point (and that point) and returns the outputs' values.
struct ElementwiseSpec {
  Location loc;
  SmallVector<Value> sizes;  // loop sizes (host values)
  SmallVector<Value> inputs; // memrefs (loaded) or scalars (as they are)
  SmallVector<AffineMap> inputMaps;
  SmallVector<Access> outputs;
  std::function<SmallVector<Value>(OpBuilder &, ValueRange, ValueRange)> body;
  int64_t blockSize = 256; // threads per block (the pass's block-size)
};

/// Emits the guarded launch of the grid-stride loop over `n` points; `body`
/// is called inside the loop with the linear index.
void emitGridStrideKernel(OpBuilder &b, Location loc, Value n,
                          int64_t blockSize,
                          llvm::function_ref<void(OpBuilder &, Value)> body) {
  Value grid = gridSize(b, loc, n, blockSize, kMaxGridX);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  gpu::LaunchOp launch = createLaunch(b, loc, grid, one, one, blockSize, 1, 1);
  Value block = arith::ConstantIndexOp::create(b, loc, blockSize);
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, block),
      launch.getThreadIds().x);
  Value step = arith::MulIOp::create(b, loc, launch.getGridSize().x, block);
  auto loop = scf::ForOp::create(b, loc, first, n, step);
  b.setInsertionPointToStart(loop.getBody());
  body(b, loop.getInductionVar());
}

/// The scalar kernel: one element per thread and iteration.
void emitScalarKernel(OpBuilder &b, const ElementwiseSpec &spec, Value n) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = spec.loc;
  emitGridStrideKernel(
      b, loc, n, spec.blockSize, [&](OpBuilder &kb, Value linear) {
        SmallVector<Value> ivs = delinearize(kb, loc, linear, spec.sizes);
        SmallVector<Value> args;
        for (auto [value, map] : llvm::zip(spec.inputs, spec.inputMaps)) {
          if (!isa<MemRefType>(value.getType())) {
            args.push_back(value);
            continue;
          }
          args.push_back(memref::LoadOp::create(kb, loc, value,
                                                applyMap(kb, loc, map, ivs)));
        }
        SmallVector<Value> results = spec.body(kb, args, ivs);
        for (auto [out, value] : llvm::zip(spec.outputs, results))
          memref::StoreOp::create(kb, loc, value, out.memref,
                                  applyMap(kb, loc, out.map, ivs));
      });
}

/// How the vector kernel reads an operand along the innermost loop.
enum class Lanes {
  Contiguous, // the memref's innermost dim is the innermost loop: one vector
  Uniform,    // the innermost loop is not in the map: one scalar, all lanes
  Gather,     // anything else: one scalar load per lane
  Scalar,     // not a memref: the value itself
};

/// True when `type` is stored one element per byte-addressable slot (no
/// i1, whose vectors LLVM packs into bits; no index).
bool vectorizableElement(Type type) {
  if (isa<FloatType>(type))
    return true;
  auto integer = dyn_cast<IntegerType>(type);
  return integer && integer.getWidth() % 8 == 0;
}

Lanes classify(Value value, AffineMap map, unsigned innermost) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type)
    return Lanes::Scalar;
  if (map.getNumResults() == 0 ||
      !llvm::any_of(map.getResults(),
                    [&](AffineExpr e) { return e.isFunctionOfDim(innermost); }))
    return Lanes::Uniform;
  auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
  bool lastIsInnermost = last && last.getPosition() == innermost;
  bool elsewhere =
      llvm::any_of(map.getResults().drop_back(),
                   [&](AffineExpr e) { return e.isFunctionOfDim(innermost); });
  // A constant (memref.get_global) becomes a device global of the
  // kernel's module, aligned to its element only: loaded lane by lane.
  if (lastIsInnermost && !elsewhere && type.getLayout().isIdentity() &&
      !value.getDefiningOp<memref::GetGlobalOp>())
    return Lanes::Contiguous;
  return Lanes::Gather;
}

/// The lanes per vector of the vector kernel for `spec` (16 bytes of the
/// widest element type accessed as vectors), or 0 when the kernel cannot
/// use vectors: rank 0, a vector-accessed element type that is not
/// byte-addressable, an output that is not contiguous along the innermost
/// loop, or a static innermost size that is not a multiple of the lanes.
int64_t vectorLanes(const ElementwiseSpec &spec) {
  if (spec.sizes.empty())
    return 0;
  unsigned innermost = spec.sizes.size() - 1;
  int64_t widest = 0;
  auto account = [&](Value v) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type)
      return true;
    if (!vectorizableElement(type.getElementType()))
      return false;
    widest = std::max<int64_t>(
        widest, type.getElementType().getIntOrFloatBitWidth() / 8);
    return true;
  };
  // Only the operands accessed as vectors set the width: a row parameter
  // (uniform) or a gathered operand is loaded one scalar at a time.
  for (auto [value, map] : llvm::zip(spec.inputs, spec.inputMaps))
    if (classify(value, map, innermost) == Lanes::Contiguous && !account(value))
      return 0;
  for (const Access &out : spec.outputs) {
    if (!account(out.memref) ||
        classify(out.memref, out.map, innermost) != Lanes::Contiguous)
      return 0;
  }
  if (widest == 0 || widest > kVectorBytes)
    return 0;
  int64_t lanes = kVectorBytes / widest;
  if (lanes < 2)
    return 0;
  std::optional<int64_t> n = getConstantIntValue(spec.sizes.back());
  if (n && *n % lanes != 0)
    return 0;
  return lanes;
}

/// The vector kernel: each thread loads kVectorsPerThread vectors of
/// `lanes` elements of every contiguous operand (consecutive threads on
/// consecutive vectors, all loads before the first use), evaluates the body
/// once per lane and stores one vector per output. The caller guarantees
/// that the innermost size is a multiple of `lanes` and that the
/// contiguous memrefs are 16-byte aligned.
void emitVectorKernel(OpBuilder &b, const ElementwiseSpec &spec, Value n,
                      int64_t lanes) {
  OpBuilder::InsertionGuard guard(b);
  Location loc = spec.loc;
  unsigned innermost = spec.sizes.size() - 1;
  Value lanesV = arith::ConstantIndexOp::create(b, loc, lanes);
  Value vectors = arith::DivUIOp::create(b, loc, n, lanesV);
  int64_t blockSize = spec.blockSize;
  int64_t perBlock = blockSize * kVectorsPerThread;
  Value grid = gridSize(b, loc, vectors, perBlock, kMaxGridX);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  gpu::LaunchOp launch = createLaunch(b, loc, grid, one, one, blockSize, 1, 1);
  Value perBlockV = arith::ConstantIndexOp::create(b, loc, perBlock);
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, perBlockV),
      launch.getThreadIds().x);
  Value step = arith::MulIOp::create(b, loc, launch.getGridSize().x, perBlockV);
  auto loop = scf::ForOp::create(b, loc, first, vectors, step);
  b.setInsertionPointToStart(loop.getBody());

  SmallVector<Lanes> kinds;
  for (auto [value, map] : llvm::zip(spec.inputs, spec.inputMaps))
    kinds.push_back(classify(value, map, innermost));
  auto vectorType = [&](Value memref) {
    return VectorType::get({lanes},
                           cast<MemRefType>(memref.getType()).getElementType());
  };
  auto alignment = [&](Value memref) {
    return llvm::MaybeAlign(
        lanes * cast<MemRefType>(memref.getType()).getElementTypeBitWidth() /
        8);
  };

  // The iteration point of each of the thread's vectors (its first lane),
  // and whether it is in range.
  SmallVector<SmallVector<Value>> ivsOf;
  SmallVector<Value> inRange;
  for (int64_t k = 0; k < kVectorsPerThread; ++k) {
    Value v = arith::AddIOp::create(
        b, loc, loop.getInductionVar(),
        arith::ConstantIndexOp::create(b, loc, k * blockSize));
    inRange.push_back(
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, v, vectors));
    Value linear = arith::MulIOp::create(b, loc, v, lanesV);
    ivsOf.push_back(delinearize(b, loc, linear, spec.sizes));
  }
  auto laneIvs = [&](OpBuilder &kb, ArrayRef<Value> ivs, int64_t j) {
    SmallVector<Value> lane(ivs);
    if (j != 0)
      lane[innermost] = arith::AddIOp::create(
          kb, loc, lane[innermost], arith::ConstantIndexOp::create(kb, loc, j));
    return lane;
  };

  // All loads first: per vector, the values of every input, per lane.
  SmallVector<SmallVector<SmallVector<Value>>> laneArgs; // [k][lane][input]
  for (int64_t k = 0; k < kVectorsPerThread; ++k) {
    SmallVector<Type> loadedTypes;
    for (auto [value, kind] : llvm::zip(spec.inputs, kinds)) {
      if (kind == Lanes::Contiguous)
        loadedTypes.push_back(vectorType(value));
      else if (kind == Lanes::Uniform)
        loadedTypes.push_back(
            cast<MemRefType>(value.getType()).getElementType());
    }
    SmallVector<Value> loaded;
    if (!loadedTypes.empty()) {
      auto ifOp =
          scf::IfOp::create(b, loc, loadedTypes, inRange[k], /*withElse=*/true);
      OpBuilder::InsertionGuard g(b);
      b.setInsertionPointToStart(&ifOp.getThenRegion().front());
      SmallVector<Value> values;
      for (auto [value, map, kind] :
           llvm::zip(spec.inputs, spec.inputMaps, kinds)) {
        if (kind != Lanes::Contiguous && kind != Lanes::Uniform)
          continue;
        SmallVector<Value> indices = applyMap(b, loc, map, ivsOf[k]);
        if (kind == Lanes::Contiguous)
          values.push_back(
              vector::LoadOp::create(b, loc, vectorType(value), value, indices,
                                     /*nontemporal=*/false, alignment(value)));
        else
          values.push_back(memref::LoadOp::create(b, loc, value, indices));
      }
      scf::YieldOp::create(b, loc, values);
      b.setInsertionPointToStart(&ifOp.getElseRegion().front());
      SmallVector<Value> zeros;
      for (Type t : loadedTypes)
        zeros.push_back(arith::ConstantOp::create(
            b, loc, cast<TypedAttr>(b.getZeroAttr(t))));
      scf::YieldOp::create(b, loc, zeros);
      loaded.assign(ifOp.getResults().begin(), ifOp.getResults().end());
    }
    laneArgs.emplace_back();
    for (int64_t j = 0; j < lanes; ++j) {
      SmallVector<Value> args;
      unsigned next = 0;
      for (auto [value, kind] : llvm::zip(spec.inputs, kinds)) {
        switch (kind) {
        case Lanes::Scalar:
          args.push_back(value);
          break;
        case Lanes::Uniform:
          args.push_back(loaded[next++]);
          break;
        case Lanes::Contiguous:
          args.push_back(vector::ExtractOp::create(b, loc, loaded[next++],
                                                   ArrayRef<int64_t>{j}));
          break;
        case Lanes::Gather:
          args.push_back(nullptr); // loaded under the range check below
          break;
        }
      }
      laneArgs.back().push_back(args);
    }
  }

  // Then per vector: the body per lane, one vector store per output.
  for (int64_t k = 0; k < kVectorsPerThread; ++k) {
    auto ifOp = scf::IfOp::create(b, loc, inRange[k], /*withElse=*/false);
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    SmallVector<SmallVector<Value>> results; // [lane][output]
    for (int64_t j = 0; j < lanes; ++j) {
      SmallVector<Value> ivs = laneIvs(b, ivsOf[k], j);
      SmallVector<Value> args = laneArgs[k][j];
      for (auto [i, kind] : llvm::enumerate(kinds))
        if (kind == Lanes::Gather)
          args[i] = memref::LoadOp::create(
              b, loc, spec.inputs[i], applyMap(b, loc, spec.inputMaps[i], ivs));
      results.push_back(spec.body(b, args, ivs));
    }
    for (auto [o, out] : llvm::enumerate(spec.outputs)) {
      SmallVector<Value> elements;
      for (int64_t j = 0; j < lanes; ++j)
        elements.push_back(results[j][o]);
      Value vec = vector::FromElementsOp::create(b, loc, vectorType(out.memref),
                                                 elements);
      vector::StoreOp::create(b, loc, vec, out.memref,
                              applyMap(b, loc, out.map, ivsOf[k]),
                              /*nontemporal=*/false, alignment(out.memref));
    }
  }
}

/// The host's condition for the vector kernel: the innermost size a
/// multiple of `lanes` (when not known statically) and every contiguous
/// memref 16-byte aligned.
Value vectorCondition(OpBuilder &b, const ElementwiseSpec &spec,
                      int64_t lanes) {
  Location loc = spec.loc;
  unsigned innermost = spec.sizes.size() - 1;
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value ok = arith::ConstantIntOp::create(b, loc, 1, 1);
  auto isMultiple = [&](Value v, int64_t m) {
    Value rem = arith::RemUIOp::create(
        b, loc, v, arith::ConstantIndexOp::create(b, loc, m));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem, zero);
  };
  if (!getConstantIntValue(spec.sizes.back()))
    ok =
        arith::AndIOp::create(b, loc, ok, isMultiple(spec.sizes.back(), lanes));
  llvm::SetVector<Value> contiguous;
  for (auto [value, map] : llvm::zip(spec.inputs, spec.inputMaps))
    if (classify(value, map, innermost) == Lanes::Contiguous)
      contiguous.insert(value);
  for (const Access &out : spec.outputs)
    contiguous.insert(out.memref);
  for (Value memref : contiguous) {
    Value pointer =
        memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
    ok = arith::AndIOp::create(b, loc, ok, isMultiple(pointer, kVectorBytes));
  }
  return ok;
}

/// Emits the kernels of `spec` at `b`: nothing for an empty iteration
/// space; else, on the host, `if (n > 0)`, then the vector kernel where the
/// shapes and the pointers allow it (checked on the host when not known
/// statically) and the scalar kernel otherwise.
void emitElementwise(OpBuilder &b, const ElementwiseSpec &spec) {
  Location loc = spec.loc;
  Value n = product(b, loc, spec.sizes);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value nonEmpty =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, n, zero);
  auto guard = scf::IfOp::create(b, loc, nonEmpty, /*withElse=*/false);
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPointToStart(&guard.getThenRegion().front());
  int64_t lanes = vectorLanes(spec);
  if (lanes == 0)
    return emitScalarKernel(b, spec, n);
  Value ok = vectorCondition(b, spec, lanes);
  auto choice = scf::IfOp::create(b, loc, ok, /*withElse=*/true);
  b.setInsertionPointToStart(&choice.getThenRegion().front());
  emitVectorKernel(b, spec, n, lanes);
  b.setInsertionPointToStart(&choice.getElseRegion().front());
  emitScalarKernel(b, spec, n);
}

/// A zero of `type` standing for an init value the region never reads.
Value unusedValue(OpBuilder &b, Location loc, Type type) {
  return arith::ConstantOp::create(b, loc,
                                   cast<TypedAttr>(b.getZeroAttr(type)));
}

void mapGeneric(linalg::GenericOp op, int64_t blockSize) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  ElementwiseSpec spec{loc, loopSizes(b, loc, op), {}, {}, {}, {}, blockSize};
  if (anyStaticZero(spec.sizes))
    return op.erase(); // no element to compute
  // The inputs, then the inits whose values the region reads.
  SmallVector<int> argSlot; // per operand: its input index, or -1 (unused)
  for (OpOperand &operand : op->getOpOperands()) {
    if (op.isDpsInit(&operand) && !op.payloadUsesValueFromOperand(&operand)) {
      argSlot.push_back(-1);
      continue;
    }
    argSlot.push_back(spec.inputs.size());
    spec.inputs.push_back(operand.get());
    spec.inputMaps.push_back(op.getMatchingIndexingMap(&operand));
  }
  for (OpOperand &init : op.getDpsInitsMutable())
    spec.outputs.push_back({init.get(), op.getMatchingIndexingMap(&init)});
  spec.body = [&](OpBuilder &kb, ValueRange inputs, ValueRange ivs) {
    SmallVector<Value> args;
    for (auto [operand, slot] : llvm::zip(op->getOpOperands(), argSlot))
      args.push_back(
          slot < 0 ? unusedValue(kb, loc,
                                 getElementTypeOrSelf(operand.get().getType()))
                   : inputs[slot]);
    return cloneRegion(kb, op, args, ivs);
  };
  emitElementwise(b, spec);
  op.erase();
}

void mapCopy(memref::CopyOp op, int64_t blockSize) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Value source = op.getSource(), target = op.getTarget();
  auto type = cast<MemRefType>(target.getType());
  ElementwiseSpec spec{loc, {}, {source}, {}, {}, {}, blockSize};
  for (int64_t d = 0; d < type.getRank(); ++d)
    spec.sizes.push_back(
        type.isDynamicDim(d)
            ? memref::DimOp::create(b, loc, target, d).getResult()
            : arith::ConstantIndexOp::create(b, loc, type.getDimSize(d))
                  .getResult());
  if (anyStaticZero(spec.sizes))
    return op.erase();
  AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
  spec.inputMaps.push_back(identity);
  spec.outputs.push_back({target, identity});
  spec.body = [](OpBuilder &, ValueRange inputs, ValueRange) {
    return SmallVector<Value>(inputs);
  };
  emitElementwise(b, spec);
  op.erase();
}

/// Clones each `memref.get_global` defined outside `launch` and used inside
/// it into the start of its body.
void sinkGlobals(gpu::LaunchOp launch) {
  llvm::SetVector<Operation *> globals;
  launch.getBody().walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (auto get = v.getDefiningOp<memref::GetGlobalOp>())
        if (!launch->isAncestor(get))
          globals.insert(get);
  });
  OpBuilder b(launch.getContext());
  b.setInsertionPointToStart(&launch.getBody().front());
  for (Operation *get : globals) {
    Operation *inside = b.clone(*get);
    get->getResult(0).replaceUsesWithIf(
        inside->getResult(0),
        [&](OpOperand &use) { return launch->isAncestor(use.getOwner()); });
  }
}

class GpuMapElementwisePass
    : public impl::GpuMapElementwisePassBase<GpuMapElementwisePass> {
public:
  using GpuMapElementwisePassBase::GpuMapElementwisePassBase;
  GpuMapElementwisePass(const GpuMapElementwisePassOptions &options,
                        CudaTuning tuning)
      : GpuMapElementwisePassBase(options), tuning(std::move(tuning)) {}

  /// Threads per block of `op`'s kernel: its `elementwise@` entry, else
  /// the class entry "cuda.elementwise", else the block-size option. A
  /// fill (no buffer read) has no entry of its own: its store-only kernel
  /// is not worth a search.
  int64_t blockOf(Operation *op) const {
    const TuningParameters *t = tuning.params.get();
    bool fill =
        llvm::none_of(op->getOperands(),
                      [](Value v) { return isa<MemRefType>(v.getType()); }) ||
        (isa<linalg::GenericOp>(op) &&
         llvm::none_of(cast<linalg::GenericOp>(op).getDpsInputs(),
                       [](Value v) { return isa<MemRefType>(v.getType()); }));
    if (fill)
      return t && t->lookup("cuda.elementwise")
                 ? t->lookup("cuda.elementwise")->get("block", blockSize)
                 : blockSize;
    Schedule s =
        tuning.of(op, "elementwise", "cuda.elementwise", "cuda.elementwise");
    bool tuned = t && (t->lookup(tuningKey(op, "elementwise")) ||
                       t->lookup("cuda.elementwise"));
    return tuned ? s.get("block", blockSize) : blockSize;
  }

  void runOnOperation() override {
    if (blockSize < 32 || blockSize > 1024 || blockSize % 32 != 0) {
      getOperation().emitError("kina-gpu-map-elementwise: block-size ")
          << blockSize.getValue() << " is not a multiple of 32 in [32, 1024]";
      return signalPassFailure();
    }
    SmallVector<Operation *> work;
    getOperation().walk([&](Operation *op) {
      if (op->getParentOfType<gpu::LaunchOp>() ||
          op->getParentOfType<gpu::GPUModuleOp>())
        return;
      if (auto generic = dyn_cast<linalg::GenericOp>(op)) {
        if (isMappableGeneric(generic) && generic.getNumReductionLoops() == 0)
          work.push_back(op);
      } else if (isa<memref::CopyOp>(op)) {
        work.push_back(op);
      }
    });
    for (Operation *op : work) {
      if (auto generic = dyn_cast<linalg::GenericOp>(op))
        mapGeneric(generic, blockOf(op));
      else
        mapCopy(cast<memref::CopyOp>(op), blockOf(op));
    }
    // Constants the kernels read become the kernels' own globals.
    getOperation().walk([](gpu::LaunchOp launch) { sinkGlobals(launch); });
    // Nothing of the computation may stay on the host: no op of the linalg
    // dialect (structured ops, and the others such as linalg.softmax that
    // linalg-generalize-named-ops leaves) and no copy. Pre-order, so the
    // outermost op is reported, not its linalg.yield.
    WalkResult left =
        getOperation()->walk<WalkOrder::PreOrder>([&](Operation *op) {
          if (isa<gpu::LaunchOp, gpu::GPUModuleOp>(op))
            return WalkResult::skip();
          if (isa<memref::CopyOp>(op) ||
              isa_and_present<linalg::LinalgDialect>(op->getDialect())) {
            op->emitError("cuda target: no GPU kernel mapping for this op");
            return WalkResult::interrupt();
          }
          return WalkResult::advance();
        });
    if (left.wasInterrupted())
      signalPassFailure();
  }

private:
  CudaTuning tuning;
};

} // namespace

std::unique_ptr<Pass>
createGpuMapElementwisePass(const GpuMapElementwisePassOptions &options,
                            CudaTuning tuning) {
  return std::make_unique<GpuMapElementwisePass>(options, std::move(tuning));
}

} // namespace kina::cuda
