//===- CpuTarget.cpp - The cpu target and its pass pipeline ---------------===//
//
// The `cpu` target (the default `--target`): host code, allocations through
// the runtime's host allocator. Its pipeline, from MLIRGen's module on
// tensors to the LLVM dialect (`kinac --emit=mlir-llvm`,
// `kina-opt --kina-cpu-pipeline`):
//
//   kina-read-only-arguments                            (arguments are
//                       the caller's: bufferization must not write them)
//   canonicalize, kina-elementwise-fusion, cse          (-O1 and above;
//                       canonicalize without truncf(sitofp) folding,
//                       fusion within rank 8: src/passes/workarounds/)
//   kina-fuse-rows, kina-elementwise-fusion,            (-O1 and above:
//   canonicalize, cse            normalisations as one loop over rows)
//   kina-empty-reshape                        (src/passes/workarounds/)
//   eliminate-empty-tensors                             (-O1 and above)
//   one-shot-bufferize (function boundaries, identity layouts),
//   kina-constant-global-order (its globals in a fixed order)
//   promote-buffers-to-stack, cse,  (-O1 and above: row scratch only;
//   canonicalize                     the row loops' iter_args dropped)
//   kina-buffer-ownership, kina-entry-points            (Passes.h)
//   kina-matmul-kernel, kina-tile-and-vectorize,        (-O1 and above;
//   convert-vector-to-scf                  vector-bits from the processor)
//   kina-strided-copies (non-contiguous memref.copy as linalg.copy)
//   convert-linalg-to-loops, kina-expand-shape, expand-strided-metadata,
//   lower-affine, convert-scf-to-cf, canonicalize + cse (cleanup at -O1+)
//   kina-math-approximation                             (-O1 and above,
//                       a --mcpu with FMA: f32 exp, tanh, erf as
//                       vectorisable polynomials)
//   arith-expand{include-bf16}                          (bf16 without libgcc)
//   convert-math-to-llvm, convert-math-to-libm          (erf & co. via libm)
//   kina-lower-to-llvm, reconcile-unrealized-casts, kina-internalize
//   kina-parallel-calls                                 (-O1 and above:
//                       outlined loops on the runtime's thread pool)
//
// docs/architecture.md describes each step.
//
//===----------------------------------------------------------------------===//
#include "../Targets.h"
#include "kina/Passes.h"
#include "kina/Target.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

namespace kina {
namespace {

class CpuTarget final : public Target {
public:
  llvm::StringRef name() const override { return "cpu"; }
  llvm::StringRef description() const override {
    return "Host code; allocations through the runtime's host allocator";
  }
  llvm::StringRef allocFunction() const override { return kHostAllocFunction; }
  void buildPipeline(OpPassManager &pm,
                     const TargetOptions &options) const override;
};

/// The subtarget of `mcpu` (an LLVM processor name for the default target
/// triple, "native" for the host's; empty: the generic processor), or null
/// when `mcpu` is empty or not a processor LLVM knows.
std::unique_ptr<llvm::MCSubtargetInfo> processorInfo(llvm::StringRef mcpu) {
  if (mcpu.empty())
    return nullptr;
  std::string cpu =
      mcpu == "native" ? llvm::sys::getHostCPUName().str() : mcpu.str();
  llvm::InitializeNativeTarget();
  std::string error;
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  std::unique_ptr<llvm::MCSubtargetInfo> info(
      target->createMCSubtargetInfo(triple, cpu, ""));
  if (!info || !info->isCPUStringValid(cpu))
    return nullptr;
  return info;
}

/// Whether `mcpu` (processorInfo) has fused multiply-add instructions.
/// MLIR's math approximations are written with `math.fma`, which becomes a
/// call of libm's `fmaf` per element on a processor without them
/// (src/passes/MathApproximation.cpp).
bool processorHasFma(llvm::StringRef mcpu) {
  std::unique_ptr<llvm::MCSubtargetInfo> info = processorInfo(mcpu);
  return info && info->checkFeatures("+fma");
}

/// The bits of one vector register of `mcpu` (processorInfo) for
/// kina-tile-and-vectorize: 512 with AVX-512 (avx512f), 256 with AVX, 128
/// otherwise (SSE2, the generic x86-64, and any other processor).
unsigned processorVectorBits(llvm::StringRef mcpu) {
  std::unique_ptr<llvm::MCSubtargetInfo> info = processorInfo(mcpu);
  if (info && info->checkFeatures("+avx512f"))
    return 512;
  if (info && info->checkFeatures("+avx"))
    return 256;
  return 128;
}

/// The promote-buffers-to-stack predicate of the cpu pipeline: an
/// allocation directly in a loop over rows of kina-fuse-rows (an `scf.for`
/// marked kina.row_loop, src/passes/Parallel.h) with a static shape of at
/// most kMaxRowScratchBytes.
bool isRowScratch(Value alloc) {
  constexpr int64_t kMaxRowScratchBytes = 4096;
  auto type = dyn_cast<MemRefType>(alloc.getType());
  Operation *op = alloc.getDefiningOp();
  Operation *parent = op ? op->getParentOp() : nullptr;
  if (!type || !parent || !isa<scf::ForOp>(parent) ||
      !parent->hasAttr("kina.row_loop") || !type.hasStaticShape() ||
      !type.getElementType().isIntOrFloat())
    return false;
  int64_t bits = type.getNumElements() *
                 int64_t(type.getElementType().getIntOrFloatBitWidth());
  return bits <= kMaxRowScratchBytes * 8;
}

void CpuTarget::buildPipeline(OpPassManager &pm,
                              const TargetOptions &options) const {
  bool optimize = options.optLevel > 0;
  pm.addPass(createReadOnlyArgumentsPass());
  if (optimize) {
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(createElementwiseFusionPass());
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
    // Normalisations as one loop over rows (src/passes/FuseRows.cpp); the
    // second elementwise fusion folds each fused copy of an elementwise
    // producer into its one consumer inside that loop.
    pm.addPass(createFuseRowsPass());
    pm.addPass(createElementwiseFusionPass());
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
    // softmax's exp once per element (src/passes/ShareRowValues.cpp).
    pm.addPass(createShareRowValuesPass());
  }

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  bufferize.unknownTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // Each matmul's zero fill its own (cse merged equal ones: one-shot
  // bufferization would copy the filled buffer for each later user).
  if (optimize)
    pm.addPass(createCloneSharedFillsPass());
  pm.addPass(createEmptyReshapePass());
  // The output row of each loop over rows written in place, not in a
  // per-row temporary copied out (a tensor.empty whose value is inserted
  // into the loop's shared output becomes a slice of that output).
  if (optimize)
    pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Its constant globals in an order that does not change from run to run
  // (src/passes/workarounds/ConstantGlobalOrder.cpp).
  pm.addPass(createConstantGlobalOrderPass());
  // A row's reduced values (kina-fuse-rows: small static buffers allocated
  // inside a loop over rows) on the stack: kina-buffer-ownership handles the
  // straight-line function body only.
  // CSE and canonicalization then drop such a loop's memref iter_args (the
  // result, written in place) so that it can be outlined.
  if (optimize) {
    pm.addNestedPass<func::FuncOp>(
        bufferization::createPromoteBuffersToStackPass(isRowScratch));
    pm.addPass(mlir::createCSEPass());
    pm.addPass(kina::createCanonicalizerPass());
  }
  pm.addPass(createBufferOwnershipPass());
  pm.addPass(createEntryPointsPass(options.stamp));
  pm.addPass(createTensorDescEntryPointsPass());

  if (optimize) {
    // Multiversioned: 256 bits, the AVX2 width of x86-64-v3, which the
    // baseline version splits into SSE halves; the driver builds the -v4
    // version with options.vectorBits = 512.
    unsigned vectorBits = options.vectorBits ? options.vectorBits
                          : options.multiversioned
                              ? 256
                              : processorVectorBits(options.mcpu);
    pm.addPass(createMatmulKernelPass(vectorBits, options.tuning));
    TileAndVectorizePassOptions vectorize;
    vectorize.vectorBits = vectorBits;
    pm.addPass(createTileAndVectorizePass(vectorize, options.tuning));
    pm.addPass(createConvertVectorToSCFPass());
  }
  // memref.copy ops memref-to-llvm would lower to a call of MLIR's
  // memrefCopy (not linked) as linalg.copy (src/passes/StridedCopies.cpp).
  pm.addPass(createStridedCopiesPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createExpandShapePass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  if (optimize) {
    pm.addPass(kina::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
  }
  // Multiversioned: the approximation too, for the -v3 and -v4 versions
  // (FMA); the baseline version pays a libm `fmaf` per element, the price of
  // one object running everywhere (docs/integration.md, "Processor levels").
  if (optimize && (options.multiversioned || processorHasFma(options.mcpu)))
    pm.addPass(createMathApproximationPass());
  // bf16 conversions as integer code: LLVM would call __truncsfbf2, which
  // Debian 12's libgcc lacks (round to nearest even, NaN kept).
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  addHostToLLVMPasses(pm, kHostAllocFunction);
  // Outlined parallel loops (kina-tile-and-vectorize, kina-matmul-kernel)
  // to kina_rt_parallel_for calls: src/passes/Parallel.cpp.
  if (optimize)
    pm.addPass(createParallelCallsPass());
}

} // namespace

void registerCpuTarget() { registerTarget(std::make_unique<CpuTarget>()); }

} // namespace kina
