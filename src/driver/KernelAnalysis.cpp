//===- KernelAnalysis.cpp - The kernels of a pipeline run, from the IR ----===//
//
// Implements KernelProbe (Kernels.h): finds the kernels of each Kina
// function in the IR at the points the file comment of Kernels.h names,
// traces each to the Kina statements it computes through the locations its
// ops carry (MLIRGen gives every op its statement's FileLineColLoc; fusion
// keeps the producers' payload ops, with their locations, inside the fused
// op), and computes its roofline figures from the op's loop ranges, its
// payload and its operand buffers. Sizes of dynamic dims come from the IR
// itself (allocation sizes, `memref.dim` of arguments, index arithmetic)
// down to the function's arguments, whose symbolic dims --stats-shape binds.
//
//===----------------------------------------------------------------------===//
#include "Kernels.h"

#include "kina/IRConventions.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"

#include <tuple>

using namespace mlir;

namespace kina {
namespace driver {

llvm::Error parseShapeBindings(llvm::StringRef text, ShapeBindings &bindings,
                               llvm::StringRef option) {
  llvm::SmallVector<llvm::StringRef> items;
  text.split(items, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef item : items) {
    auto [name, value] = item.trim().split('=');
    int64_t size = 0;
    if (name.empty() || value.empty() || value.getAsInteger(10, size) ||
        size < 0 || !llvm::all_of(name, [](char c) {
          return llvm::isAlnum(c) || c == '_';
        }))
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          option.str() + ": '" + item.str() +
              "' is not NAME=SIZE (a symbolic dim and a non-negative "
              "integer)");
    bindings[name.str()] = size;
  }
  return llvm::Error::success();
}

namespace {

//===----------------------------------------------------------------------===//
// Locations
//===----------------------------------------------------------------------===//

/// Adds every FileLineColLoc inside `loc` (through fused, named and
/// call-site locations) that lies in `file` to `out`.
void collectPoints(Location loc, llvm::StringRef file,
                   std::set<SourcePoint> &out) {
  loc->walk([&](Location inner) {
    if (auto flc = dyn_cast<FileLineColLoc>(inner))
      if (flc.getFilename().getValue() == file)
        out.insert({flc.getLine(), flc.getColumn()});
    return WalkResult::advance();
  });
}

/// Whether `op` only computes sizes or addresses (every operand and result
/// an index or i1, or a constant): such ops are shared between kernels by
/// CSE and sunk into kernels by gpu-launch-sink-index-computations, so
/// their locations say nothing about which statement a kernel computes.
bool isBookkeeping(Operation *op) {
  if (op->hasTrait<OpTrait::ConstantLike>() || isa<memref::DimOp>(op))
    return true;
  auto indexLike = [](Type t) { return t.isIndex() || t.isInteger(1); };
  if (op->getNumResults() == 0)
    return false;
  return llvm::all_of(op->getOperandTypes(), indexLike) &&
         llvm::all_of(op->getResultTypes(), indexLike);
}

/// The statements a kernel computes: the op's location and those of every
/// op in its regions that is not bookkeeping.
std::set<SourcePoint> kernelSources(Operation *op, llvm::StringRef file) {
  std::set<SourcePoint> points;
  collectPoints(op->getLoc(), file, points);
  op->walk([&](Operation *inner) {
    if (inner != op && !isBookkeeping(inner))
      collectPoints(inner->getLoc(), file, points);
  });
  return points;
}

//===----------------------------------------------------------------------===//
// Sizes
//===----------------------------------------------------------------------===//

/// Evaluates index values and memref dims of a bufferized function from the
/// IR, given the sizes of its arguments' symbolic dims.
class SizeEvaluator {
public:
  SizeEvaluator(func::FuncOp fn, const ShapeBindings &shapes)
      : fn(fn), shapes(shapes) {}

  std::optional<int64_t> index(Value v, int depth = 0) {
    if (depth > 64)
      return std::nullopt;
    APInt constant;
    if (matchPattern(v, m_ConstantInt(&constant)))
      return constant.getSExtValue();
    Operation *def = v.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (auto dimOp = dyn_cast<memref::DimOp>(def)) {
      std::optional<int64_t> d = index(dimOp.getIndex(), depth + 1);
      if (!d)
        return std::nullopt;
      return dim(dimOp.getSource(), *d, depth + 1);
    }
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
      return index(def->getOperand(0), depth + 1);
    if (auto apply = dyn_cast<affine::AffineApplyOp>(def)) {
      llvm::SmallVector<std::optional<int64_t>> operands;
      for (Value operand : apply.getMapOperands())
        operands.push_back(index(operand, depth + 1));
      return affine(apply.getAffineMap().getResult(0), operands,
                    apply.getAffineMap().getNumDims());
    }
    if (def->getNumOperands() != 2)
      return std::nullopt;
    std::optional<int64_t> a = index(def->getOperand(0), depth + 1);
    std::optional<int64_t> b = index(def->getOperand(1), depth + 1);
    if (!a || !b)
      return std::nullopt;
    if (isa<arith::AddIOp>(def))
      return *a + *b;
    if (isa<arith::SubIOp>(def))
      return *a - *b;
    if (isa<arith::MulIOp>(def))
      return *a * *b;
    if (isa<arith::MaxSIOp, arith::MaxUIOp>(def))
      return std::max(*a, *b);
    if (isa<arith::MinSIOp, arith::MinUIOp>(def))
      return std::min(*a, *b);
    if (*b == 0)
      return std::nullopt;
    if (isa<arith::DivSIOp, arith::DivUIOp>(def))
      return *a / *b;
    if (isa<arith::CeilDivSIOp, arith::CeilDivUIOp>(def))
      return llvm::divideCeilSigned(*a, *b);
    if (isa<arith::FloorDivSIOp>(def))
      return llvm::divideFloorSigned(*a, *b);
    if (isa<arith::RemSIOp, arith::RemUIOp>(def))
      return *a % *b;
    return std::nullopt;
  }

  std::optional<int64_t> dim(Value memref, int64_t d, int depth = 0) {
    auto type = dyn_cast<ShapedType>(memref.getType());
    if (!type || !type.hasRank() || d < 0 || d >= type.getRank() || depth > 64)
      return std::nullopt;
    if (!type.isDynamicDim(d))
      return type.getDimSize(d);
    if (auto arg = dyn_cast<BlockArgument>(memref)) {
      if (arg.getOwner() != &fn.getBody().front())
        return std::nullopt;
      auto dims = fn->getAttrOfType<ArrayAttr>(kParamDimsAttr);
      if (!dims || arg.getArgNumber() >= dims.size())
        return std::nullopt;
      auto argDims = dyn_cast<ArrayAttr>(dims[arg.getArgNumber()]);
      if (!argDims || d >= static_cast<int64_t>(argDims.size()))
        return std::nullopt;
      auto name = dyn_cast<StringAttr>(argDims[d]);
      if (!name)
        return std::nullopt;
      int64_t size;
      if (!name.getValue().getAsInteger(10, size))
        return size;
      auto it = shapes.find(name.getValue().str());
      if (it == shapes.end())
        return std::nullopt;
      return it->second;
    }
    Operation *def = memref.getDefiningOp();
    if (!def)
      return std::nullopt;
    if (isa<memref::AllocOp, memref::AllocaOp>(def)) {
      unsigned position = type.getDynamicDimIndex(d);
      ValueRange sizes = isa<memref::AllocOp>(def)
                             ? cast<memref::AllocOp>(def).getDynamicSizes()
                             : cast<memref::AllocaOp>(def).getDynamicSizes();
      if (position >= sizes.size())
        return std::nullopt;
      return index(sizes[position], depth + 1);
    }
    if (auto cast = dyn_cast<memref::CastOp>(def))
      return dim(cast.getSource(), d, depth + 1);
    auto mixed = [&](OpFoldResult size) -> std::optional<int64_t> {
      if (auto attr = dyn_cast<mlir::Attribute>(size))
        if (auto integer = dyn_cast<IntegerAttr>(attr))
          return integer.getInt();
      if (auto value = dyn_cast<Value>(size))
        return index(value, depth + 1);
      return std::nullopt;
    };
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(def))
      return mixed(expand.getMixedOutputShape()[d]);
    if (auto reinterpret = dyn_cast<memref::ReinterpretCastOp>(def))
      return mixed(reinterpret.getMixedSizes()[d]);
    if (auto subview = dyn_cast<memref::SubViewOp>(def))
      if (subview.getSourceType().getRank() == type.getRank())
        return mixed(subview.getMixedSizes()[d]);
    if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def)) {
      int64_t product = 1;
      for (int64_t srcDim : collapse.getReassociationIndices()[d]) {
        std::optional<int64_t> s = dim(collapse.getSrc(), srcDim, depth + 1);
        if (!s)
          return std::nullopt;
        product *= *s;
      }
      return product;
    }
    return std::nullopt;
  }

  /// The number of elements of `memref`.
  std::optional<int64_t> elements(Value memref) {
    auto type = dyn_cast<ShapedType>(memref.getType());
    if (!type || !type.hasRank())
      return std::nullopt;
    int64_t product = 1;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      std::optional<int64_t> s = dim(memref, d);
      if (!s)
        return std::nullopt;
      product *= *s;
    }
    return product;
  }

  /// Bytes of `memref`'s elements (i1 stored in one byte, index in eight).
  std::optional<int64_t> bytes(Value memref) {
    auto type = dyn_cast<ShapedType>(memref.getType());
    std::optional<int64_t> n = elements(memref);
    if (!type || !n)
      return std::nullopt;
    Type element = type.getElementType();
    int64_t size =
        element.isIndex() ? 8 : (element.getIntOrFloatBitWidth() + 7) / 8;
    return *n * size;
  }

  std::optional<int64_t> affine(AffineExpr expr,
                                llvm::ArrayRef<std::optional<int64_t>> operands,
                                unsigned numDims) {
    if (auto c = dyn_cast<AffineConstantExpr>(expr))
      return c.getValue();
    if (auto d = dyn_cast<AffineDimExpr>(expr))
      return d.getPosition() < operands.size() ? operands[d.getPosition()]
                                               : std::nullopt;
    if (auto s = dyn_cast<AffineSymbolExpr>(expr))
      return numDims + s.getPosition() < operands.size()
                 ? operands[numDims + s.getPosition()]
                 : std::nullopt;
    auto bin = cast<AffineBinaryOpExpr>(expr);
    std::optional<int64_t> a = affine(bin.getLHS(), operands, numDims);
    std::optional<int64_t> b = affine(bin.getRHS(), operands, numDims);
    if (!a || !b)
      return std::nullopt;
    switch (bin.getKind()) {
    case AffineExprKind::Add:
      return *a + *b;
    case AffineExprKind::Mul:
      return *a * *b;
    case AffineExprKind::Mod:
      return *b ? std::optional<int64_t>(llvm::mod(*a, *b)) : std::nullopt;
    case AffineExprKind::FloorDiv:
      return *b ? std::optional<int64_t>(llvm::divideFloorSigned(*a, *b))
                : std::nullopt;
    case AffineExprKind::CeilDiv:
      return *b ? std::optional<int64_t>(llvm::divideCeilSigned(*a, *b))
                : std::nullopt;
    default:
      return std::nullopt;
    }
  }

private:
  func::FuncOp fn;
  const ShapeBindings &shapes;
};

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

/// Floating-point operations of one op of a payload: arith and math ops on
/// floats count one (math.fma two); casts, constants, selects and bit
/// casts none.
unsigned flopsOf(Operation *op) {
  llvm::StringRef dialect =
      op->getDialect() ? op->getDialect()->getNamespace() : llvm::StringRef();
  if (dialect != "arith" && dialect != "math")
    return 0;
  if (isa<arith::ConstantOp, arith::SelectOp, arith::BitcastOp, arith::ExtFOp,
          arith::TruncFOp, arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp,
          arith::FPToUIOp>(op))
    return 0;
  auto isFloat = [](Type t) { return isa<FloatType>(getElementTypeOrSelf(t)); };
  if (!llvm::any_of(op->getOperandTypes(), isFloat) &&
      !llvm::any_of(op->getResultTypes(), isFloat))
    return 0;
  return isa<math::FmaOp>(op) ? 2 : 1;
}

/// The kernel of one linalg op, with its figures.
KernelInfo linalgKernel(linalg::LinalgOp op, SizeEvaluator &sizes,
                        llvm::StringRef file) {
  KernelInfo k;
  k.op = op->getName().getStringRef().str();
  k.sources = kernelSources(op, file);
  k.loops = op.getNumLoops();
  for (Operation &inner : op.getBlock()->without_terminator())
    k.flopsPerPoint += flopsOf(&inner);
  // The loop ranges from the operands' dims (linalg's shapes-to-loops map).
  llvm::SmallVector<std::optional<int64_t>> operandDims;
  for (OpOperand &operand : op->getOpOperands())
    if (auto shaped = dyn_cast<ShapedType>(operand.get().getType()))
      for (int64_t d = 0; d < shaped.getRank(); ++d)
        operandDims.push_back(sizes.dim(operand.get(), d));
  AffineMap shapesToLoops = op.getShapesToLoopsMap();
  if (shapesToLoops) {
    std::optional<int64_t> product = 1;
    for (AffineExpr e : shapesToLoops.getResults()) {
      std::optional<int64_t> range =
          sizes.affine(e, operandDims, shapesToLoops.getNumDims());
      if (!range || !product)
        product = std::nullopt;
      else
        *product *= *range;
    }
    k.iterations = product;
  }
  if (k.iterations)
    k.flops = *k.iterations * k.flopsPerPoint;
  else if (k.flopsPerPoint == 0)
    k.flops = 0; // a fill or a copy: no FLOPs whatever the sizes
  std::optional<int64_t> read = 0, written = 0;
  auto add = [](std::optional<int64_t> &sum, std::optional<int64_t> v) {
    sum = (sum && v) ? std::optional<int64_t>(*sum + *v) : std::nullopt;
  };
  for (OpOperand *input : op.getDpsInputOperands())
    if (isa<ShapedType>(input->get().getType()))
      add(read, sizes.bytes(input->get()));
  for (OpOperand &init : op.getDpsInitsMutable()) {
    add(written, sizes.bytes(init.get()));
    if (op.payloadUsesValueFromOperand(&init))
      add(read, sizes.bytes(init.get()));
  }
  // Buffers the payload loads from directly (slice, gather, concat read
  // their source by index): each load reads one element per iteration
  // point, and the whole buffer at most.
  llvm::MapVector<Value, int64_t> captured; // buffer -> loads per point
  op->walk([&](memref::LoadOp load) {
    Value buffer = load.getMemRef();
    Operation *owner = buffer.getParentBlock()->getParentOp();
    if (owner != op.getOperation() && !op->isProperAncestor(owner))
      ++captured[buffer];
  });
  for (auto &[buffer, loads] : captured) {
    std::optional<int64_t> whole = sizes.bytes(buffer);
    auto type = cast<MemRefType>(buffer.getType());
    Type element = type.getElementType();
    int64_t size =
        element.isIndex() ? 8 : (element.getIntOrFloatBitWidth() + 7) / 8;
    if (!whole || !k.iterations)
      read = std::nullopt;
    else
      add(read, std::min(*whole, *k.iterations * loads * size));
  }
  k.bytesRead = read;
  k.bytesWritten = written;
  return k;
}

/// Sets `f`'s intermediates: the buffers `fn` (a bufferized host function)
/// allocates and does not return, and their total size. An array that is
/// only stored into and passed on as a pointer (the sizes and strides the
/// cuBLASLt route hands kina_rt_gpu_matmul) holds no tensor: not counted.
void countIntermediates(func::FuncOp fn, SizeEvaluator &sizes,
                        FunctionKernels &f) {
  f.intermediateBuffers = 0;
  f.intermediateBytes = 0;
  llvm::DenseSet<Value> returned;
  fn.walk([&](func::ReturnOp ret) {
    for (Value v : ret.getOperands())
      returned.insert(v);
  });
  fn.walk([&](Operation *op) {
    if (!isa<memref::AllocOp, memref::AllocaOp>(op) ||
        returned.contains(op->getResult(0)))
      return;
    if (isa<memref::AllocaOp>(op) &&
        llvm::all_of(op->getResult(0).getUsers(), [](Operation *user) {
          return isa<memref::StoreOp, memref::ExtractAlignedPointerAsIndexOp>(
              user);
        }))
      return;
    ++f.intermediateBuffers;
    std::optional<int64_t> b = sizes.bytes(op->getResult(0));
    f.intermediateBytes =
        (f.intermediateBytes && b)
            ? std::optional<int64_t>(*f.intermediateBytes + *b)
            : std::nullopt;
  });
}

/// Bytes read and written by the kernel `launch` runs (a fused kernel that
/// replaced a run of ops): each memref operand the body reads counted once
/// as read (its whole size), each one it writes once as written;
/// workgroup and private buffers stay on chip and do not count. Both
/// std::nullopt when a size is unknown or an op of the body uses a memref
/// without saying how (no MemoryEffectOpInterface).
std::pair<std::optional<int64_t>, std::optional<int64_t>>
launchBytes(gpu::LaunchFuncOp launch, gpu::GPUFuncOp kernel,
            SizeEvaluator &sizes) {
  using Bytes = std::optional<int64_t>;
  Block &entry = kernel.getBody().front();
  unsigned arguments = kernel.getNumArguments();
  // The kernel argument a memref value is a view of, if any.
  auto argumentOf = [&](Value v) -> std::optional<unsigned> {
    for (int depth = 0; depth < 32 && v; ++depth) {
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() == &entry && arg.getArgNumber() < arguments)
          return arg.getArgNumber();
        return std::nullopt;
      }
      Operation *def = v.getDefiningOp();
      if (auto view = dyn_cast_or_null<ViewLikeOpInterface>(def))
        v = view.getViewSource();
      else if (auto cast = dyn_cast_or_null<memref::CastOp>(def))
        v = cast.getSource();
      else
        return std::nullopt;
    }
    return std::nullopt;
  };
  llvm::DenseSet<unsigned> read, written;
  bool unknown = false;
  kernel.walk([&](Operation *op) {
    auto iface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!iface) {
      if (!op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() &&
          llvm::any_of(op->getOperandTypes(),
                       [](Type t) { return isa<BaseMemRefType>(t); }))
        unknown = true;
      return;
    }
    llvm::SmallVector<MemoryEffects::EffectInstance> effects;
    iface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      Value value = effect.getValue();
      if (!value || !isa<BaseMemRefType>(value.getType()))
        continue;
      std::optional<unsigned> arg = argumentOf(value);
      if (!arg)
        continue;
      if (isa<MemoryEffects::Read>(effect.getEffect()))
        read.insert(*arg);
      else if (isa<MemoryEffects::Write>(effect.getEffect()))
        written.insert(*arg);
    }
  });
  if (unknown)
    return {std::nullopt, std::nullopt};
  Bytes bytesRead = 0, bytesWritten = 0;
  auto add = [](Bytes &sum, Bytes v) {
    sum = (sum && v) ? Bytes(*sum + *v) : std::nullopt;
  };
  for (auto [i, operand] : llvm::enumerate(launch.getKernelOperands())) {
    if (!isa<BaseMemRefType>(operand.getType()))
      continue;
    if (read.contains(i))
      add(bytesRead, sizes.bytes(operand));
    if (written.contains(i))
      add(bytesWritten, sizes.bytes(operand));
  }
  return {bytesRead, bytesWritten};
}

/// The runtime function of the cuda target's cuBLASLt route
/// (GpuMapMatmul.cpp), which returns 0 when it declines a contraction.
constexpr llvm::StringLiteral kLibraryMatmul = "kina_rt_gpu_matmul";

/// Whether `op` is, or contains, a call of the cuBLASLt route.
bool callsLibrary(Operation *op) {
  bool found = false;
  op->walk(
      [&](func::CallOp call) { found |= call.getCallee() == kLibraryMatmul; });
  return found;
}

/// Whether `launch` runs only when a library call declined: an enclosing
/// scf.if's condition compares a result of that call (or of the scf.if
/// around it) with a constant.
bool isLibraryFallback(gpu::LaunchFuncOp launch) {
  for (auto ifOp = launch->getParentOfType<scf::IfOp>(); ifOp;
       ifOp = ifOp->getParentOfType<scf::IfOp>()) {
    auto cmp = ifOp.getCondition().getDefiningOp<arith::CmpIOp>();
    if (!cmp)
      continue;
    for (Value side : {cmp.getLhs(), cmp.getRhs()})
      if (Operation *def = side.getDefiningOp())
        if (isa<func::CallOp, scf::IfOp>(def) && callsLibrary(def))
          return true;
  }
  return false;
}

/// How many times the body of the loops over rows around `op` runs
/// (kina-fuse-rows' `scf.for` nests, cpu, marked kina.row_loop): the
/// product of their trip counts, 1 outside any; std::nullopt where a bound
/// is not known.
std::optional<int64_t> enclosingTrips(Operation *op, SizeEvaluator &sizes) {
  int64_t trips = 1;
  for (auto loop = op->getParentOfType<scf::ForOp>(); loop;
       loop = loop->getParentOfType<scf::ForOp>()) {
    if (!loop->hasAttr("kina.row_loop"))
      continue;
    std::optional<int64_t> l = sizes.index(loop.getLowerBound()),
                           h = sizes.index(loop.getUpperBound()),
                           st = sizes.index(loop.getStep());
    if (!l || !h || !st || *st <= 0)
      return std::nullopt;
    trips *= std::max<int64_t>(0, (*h - *l + *st - 1) / *st);
  }
  return trips;
}

/// `k`'s figures for one run of its loop body times `trips` runs.
void scaleKernel(KernelInfo &k, std::optional<int64_t> trips) {
  auto scale = [&](std::optional<int64_t> &v) {
    v = (v && trips) ? std::optional<int64_t>(*v * *trips) : std::nullopt;
  };
  scale(k.iterations);
  scale(k.flops);
  scale(k.bytesRead);
  scale(k.bytesWritten);
}

/// The kernels and intermediates of every Kina function of `module`, at the
/// linalg level (each linalg op and memref.copy one kernel; one inside a
/// loop over rows counted for all its rows).
std::vector<FunctionKernels> collectLinalgKernels(ModuleOp module,
                                                  llvm::StringRef file,
                                                  const ShapeBindings &shapes) {
  std::vector<FunctionKernels> functions;
  module.walk([&](func::FuncOp fn) {
    if (!fn->hasAttr(kParamNamesAttr) || fn.isExternal())
      return;
    FunctionKernels f;
    f.name = fn.getSymName().str();
    SizeEvaluator sizes(fn, shapes);
    fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (auto linalgOp = dyn_cast<linalg::LinalgOp>(op)) {
        f.kernels.push_back(linalgKernel(linalgOp, sizes, file));
        if (op->getParentOfType<scf::ForOp>())
          scaleKernel(f.kernels.back(), enclosingTrips(op, sizes));
        return WalkResult::skip();
      }
      if (auto copy = dyn_cast<memref::CopyOp>(op)) {
        KernelInfo k;
        k.op = "memref.copy";
        k.sources = kernelSources(op, file);
        k.iterations = sizes.elements(copy.getSource());
        k.loops = cast<MemRefType>(copy.getSource().getType()).getRank();
        k.flops = 0;
        k.bytesRead = sizes.bytes(copy.getSource());
        k.bytesWritten = sizes.bytes(copy.getTarget());
        f.kernels.push_back(std::move(k));
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
    countIntermediates(fn, sizes, f);
    functions.push_back(std::move(f));
  });
  return functions;
}

/// The anchor of a kernel for matching a launch to its linalg op: the first
/// source point of the op's own location.
std::optional<SourcePoint> anchorOf(Location loc, llvm::StringRef file) {
  std::set<SourcePoint> points;
  collectPoints(loc, file, points);
  if (points.empty())
    return std::nullopt;
  return *points.begin();
}

} // namespace

void KernelProbe::runBeforePass(Pass *pass, Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  // Before the first kernel mapper: kina-gpu-map-attention (-O1 and up)
  // or kina-gpu-map-row-chains.
  if (!module || linalgLevelTaken ||
      (pass->getArgument() != "kina-gpu-map-attention" &&
       pass->getArgument() != "kina-gpu-map-row-chains"))
    return;
  linalgLevelTaken = true;
  linalgLevel = collectLinalgKernels(module, file, shapes);
  // The location of each op, which its launch must carry (runAfterPass).
  anchors.clear();
  module.walk([&](func::FuncOp fn) {
    if (!fn->hasAttr(kParamNamesAttr) || fn.isExternal())
      return;
    std::vector<std::optional<SourcePoint>> list;
    fn.walk<WalkOrder::PreOrder>([&](Operation *inner) {
      if (isa<linalg::LinalgOp, memref::CopyOp>(inner)) {
        list.push_back(anchorOf(inner->getLoc(), file));
        return WalkResult::skip();
      }
      return WalkResult::advance();
    });
    anchors.push_back(std::move(list));
  });
}

void KernelProbe::runAfterPass(Pass *pass, Operation *op) {
  auto module = dyn_cast<ModuleOp>(op);
  if (!module)
    return;
  if (pass->getArgument() == "kina-entry-points" && report.target != "cuda") {
    report.functions = collectLinalgKernels(module, file, shapes);
    report.complete = true;
    return;
  }
  if (pass->getArgument() != "gpu-kernel-outlining")
    return;
  report.functions.clear();
  size_t fnIndex = 0;
  module.walk([&](func::FuncOp fn) {
    if (!fn->hasAttr(kParamNamesAttr) || fn.isExternal())
      return;
    FunctionKernels f;
    f.name = fn.getSymName().str();
    std::vector<std::optional<SourcePoint>> launchAnchors;
    std::vector<gpu::LaunchFuncOp> launches;
    std::vector<gpu::GPUFuncOp> kernels;
    fn.walk([&](gpu::LaunchFuncOp launch) {
      launches.push_back(launch);
      KernelInfo k;
      k.name = "@" + launch.getKernelModuleName().str() + "::@" +
               launch.getKernelName().str();
      k.op = "gpu.launch_func";
      collectPoints(launch.getLoc(), file, k.sources);
      auto kernel = SymbolTable::lookupNearestSymbolFrom<gpu::GPUFuncOp>(
          launch, launch.getKernel());
      if (kernel) {
        std::set<SourcePoint> body = kernelSources(kernel, file);
        k.sources.insert(body.begin(), body.end());
      }
      kernels.push_back(kernel);
      launchAnchors.push_back(anchorOf(launch.getLoc(), file));
      k.libraryFallback = isLibraryFallback(launch);
      f.kernels.push_back(std::move(k));
    });
    fn.walk([&](func::CallOp call) {
      if (call.getCallee() == kLibraryMatmul)
        ++f.libraryCalls;
    });
    // The figures of the linalg ops each launch comes from. The mappers
    // replace each op by one launch in place, so the order is the same,
    // with two exceptions of the cuda target's mappers: a scalar twin (a
    // launch in the else branch of an scf.if whose then branch launches
    // the vector kernel: the same ops, so the same figures; marked as the
    // other's alternative), and a fused kernel whose one launch replaces a
    // run of N ops (its location is a FusedLoc with the metadata
    // ["kina-gpu-map-<mapper>", N], e.g. kina-gpu-map-rows): FLOPs are
    // summed and iterations maximised over the run, and the bytes come
    // from the launch (launchBytes: what the kernel reads and writes, not
    // what its ops did). The ops' and the launches' locations must agree
    // where one launch is one op. The intermediates are counted here, on
    // the mapped function: a fused kernel's intermediates are gone.
    SizeEvaluator sizes(fn, shapes);
    countIntermediates(fn, sizes, f);
    if (fnIndex < linalgLevel.size() && linalgLevel[fnIndex].name == f.name) {
      const FunctionKernels &level = linalgLevel[fnIndex];
      std::vector<std::pair<size_t, size_t>> spans; // first op, op count
      size_t next = 0;
      bool matched = true;
      for (size_t i = 0; i < launches.size(); ++i) {
        gpu::LaunchFuncOp launch = launches[i];
        auto ifOp = dyn_cast<scf::IfOp>(launch->getParentOp());
        bool fallback =
            i > 0 && ifOp &&
            launch->getParentRegion() == &ifOp.getElseRegion() &&
            !ifOp.getThenRegion().getOps<gpu::LaunchFuncOp>().empty();
        if (fallback) {
          gpu::LaunchFuncOp primary =
              *ifOp.getThenRegion().getOps<gpu::LaunchFuncOp>().begin();
          for (size_t j = 0; j < i; ++j)
            if (launches[j] == primary)
              f.kernels[i].alternativeOf = j;
          spans.push_back(spans.back());
          continue;
        }
        size_t count = 1;
        if (auto fused = dyn_cast<FusedLoc>(launch.getLoc()))
          if (auto meta = dyn_cast_or_null<ArrayAttr>(fused.getMetadata()))
            if (meta.size() == 2 && isa<StringAttr>(meta[0]) &&
                cast<StringAttr>(meta[0]).getValue().starts_with(
                    "kina-gpu-map-"))
              if (auto n = dyn_cast<IntegerAttr>(meta[1]))
                count = n.getInt();
        if (count == 1 && (next >= anchors[fnIndex].size() ||
                           anchors[fnIndex][next] != launchAnchors[i]))
          matched = false;
        spans.push_back({next, count});
        next += count;
      }
      matched &= next == level.kernels.size();
      if (matched)
        for (size_t i = 0; i < f.kernels.size(); ++i) {
          auto [first, count] = spans[i];
          KernelInfo &to = f.kernels[i];
          const KernelInfo &from = level.kernels[first + count - 1];
          to.op = from.op;
          to.loops = from.loops;
          to.flopsPerPoint = from.flopsPerPoint;
          to.iterations = from.iterations;
          to.flops = from.flops;
          to.bytesRead = from.bytesRead;
          to.bytesWritten = from.bytesWritten;
          if (count == 1)
            continue;
          to.bytesRead = to.bytesWritten = std::nullopt;
          if (kernels[i])
            std::tie(to.bytesRead, to.bytesWritten) =
                launchBytes(launches[i], kernels[i], sizes);
          to.flopsPerPoint = 0;
          std::optional<int64_t> flops = 0;
          for (size_t j = first; j < first + count; ++j) {
            const KernelInfo &op = level.kernels[j];
            to.loops = std::max(to.loops, op.loops);
            if (op.iterations && to.iterations)
              to.iterations = std::max(*to.iterations, *op.iterations);
            flops = flops && op.flops
                        ? std::optional<int64_t>(*flops + *op.flops)
                        : std::nullopt;
          }
          to.flops = flops;
        }
    }
    ++fnIndex;
    report.functions.push_back(std::move(f));
  });
  report.complete = true;
}

} // namespace driver
} // namespace kina
