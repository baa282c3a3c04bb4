//===- LowerToLLVM.cpp - One conversion to the LLVM dialect ---------------===//
//
// The last step before `mlir-translate`: arith, math, cf, func, memref,
// vector, index and ub become LLVM dialect in one full conversion (as MLIR's
// Toy tutorial, chapter 6, does), with two patterns of our own that outrank
// upstream's `memref.alloc`/`memref.dealloc` lowerings (spec, "ABI",
// Allocation), and, on the cuda target, upstream's `gpu.launch_func`
// legalization (operands to LLVM types; mlir-translate then emits the mgpu*
// runtime calls from it and the embedded `gpu.binary`, which stays):
//
//   memref.alloc(%d0, ...) : memref<?x...xT>
//     -> ranked descriptor on the stack {null, null, 0, sizes, strides}
//        unranked descriptor {rank, &ranked}
//        %status = call @<allocFunction>(&unranked, sizeof(T))
//        reload the ranked descriptor; pointers forced to null if %status
//   memref.dealloc %m  ->  call @runtime_free(%m.allocated)
//
// The buffer-ownership pass has already placed a null check after each
// allocation, so a refused allocation returns early. Functions carrying
// `llvm.emit_c_interface` get their `_mlir_ciface_` wrappers here.
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUCommon/GPUCommonPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/Dialect/Vector/Transforms/VectorRewritePatterns.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_LOWERTOLLVMPASS
#include "kina/Passes.h.inc"

namespace {

constexpr const char *kFreeFunction = "runtime_free";

/// memref.alloc -> the runtime's unranked allocation function.
struct RuntimeAllocLowering : public ConvertOpToLLVMPattern<memref::AllocOp> {
  RuntimeAllocLowering(const LLVMTypeConverter &converter, std::string fn)
      : ConvertOpToLLVMPattern<memref::AllocOp>(converter, /*benefit=*/10),
        allocFunction(std::move(fn)) {}

  LogicalResult
  matchAndRewrite(memref::AllocOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    MemRefType type = op.getType();
    if (!type.getLayout().isIdentity())
      return rewriter.notifyMatchFailure(op, "only identity layouts");
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Type ptrType = LLVM::LLVMPointerType::get(ctx);
    Type i64 = rewriter.getI64Type();
    Type i32 = rewriter.getI32Type();
    Type descType = getTypeConverter()->convertType(type);

    SmallVector<Value> sizes, strides;
    Value total;
    getMemRefDescriptorSizes(loc, type, adaptor.getDynamicSizes(), rewriter,
                             sizes, strides, total, /*sizeInBytes=*/false);

    Value null = LLVM::ZeroOp::create(rewriter, loc, ptrType);
    MemRefDescriptor desc = MemRefDescriptor::poison(rewriter, loc, descType);
    desc.setAllocatedPtr(rewriter, loc, null);
    desc.setAlignedPtr(rewriter, loc, null);
    desc.setOffset(rewriter, loc,
                   createIndexAttrConstant(rewriter, loc, getIndexType(), 0));
    for (int64_t i = 0; i < type.getRank(); ++i) {
      desc.setSize(rewriter, loc, i, sizes[i]);
      desc.setStride(rewriter, loc, i, strides[i]);
    }

    Value one = LLVM::ConstantOp::create(rewriter, loc, i64, 1);
    Value ranked =
        LLVM::AllocaOp::create(rewriter, loc, ptrType, descType, one, 8);
    LLVM::StoreOp::create(rewriter, loc, desc, ranked);
    Type unrankedType = LLVM::LLVMStructType::getLiteral(ctx, {i64, ptrType});
    Value unrankedValue = LLVM::PoisonOp::create(rewriter, loc, unrankedType);
    unrankedValue = LLVM::InsertValueOp::create(
        rewriter, loc, unrankedValue,
        LLVM::ConstantOp::create(rewriter, loc, i64, type.getRank()),
        ArrayRef<int64_t>{0});
    unrankedValue = LLVM::InsertValueOp::create(rewriter, loc, unrankedValue,
                                                ranked, ArrayRef<int64_t>{1});
    Value unranked =
        LLVM::AllocaOp::create(rewriter, loc, ptrType, unrankedType, one, 8);
    LLVM::StoreOp::create(rewriter, loc, unrankedValue, unranked);

    int64_t elementBytes =
        (static_cast<int64_t>(type.getElementTypeBitWidth()) + 7) / 8;
    Value elementSize =
        LLVM::ConstantOp::create(rewriter, loc, i32, elementBytes);
    Value status = LLVM::CallOp::create(rewriter, loc, TypeRange{i32},
                                        SymbolRefAttr::get(ctx, allocFunction),
                                        ValueRange{unranked, elementSize})
                       .getResult();

    MemRefDescriptor result(
        LLVM::LoadOp::create(rewriter, loc, descType, ranked));
    Value ok =
        LLVM::ICmpOp::create(rewriter, loc, LLVM::ICmpPredicate::eq, status,
                             LLVM::ConstantOp::create(rewriter, loc, i32, 0));
    Value allocated = LLVM::SelectOp::create(
        rewriter, loc, ok, result.allocatedPtr(rewriter, loc), null);
    Value aligned = LLVM::SelectOp::create(
        rewriter, loc, ok, result.alignedPtr(rewriter, loc), null);
    result.setAllocatedPtr(rewriter, loc, allocated);
    result.setAlignedPtr(rewriter, loc, aligned);
    rewriter.replaceOp(op, Value(result));
    return success();
  }

  std::string allocFunction;
};

/// memref.dealloc -> runtime_free(allocated).
struct RuntimeDeallocLowering
    : public ConvertOpToLLVMPattern<memref::DeallocOp> {
  explicit RuntimeDeallocLowering(const LLVMTypeConverter &converter)
      : ConvertOpToLLVMPattern<memref::DeallocOp>(converter, /*benefit=*/10) {}

  LogicalResult
  matchAndRewrite(memref::DeallocOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!isa<MemRefType>(op.getMemref().getType()))
      return rewriter.notifyMatchFailure(op, "unranked dealloc");
    Location loc = op.getLoc();
    MemRefDescriptor desc(adaptor.getMemref());
    LLVM::CallOp::create(
        rewriter, loc, TypeRange{rewriter.getI32Type()},
        SymbolRefAttr::get(rewriter.getContext(), kFreeFunction),
        ValueRange{desc.allocatedPtr(rewriter, loc)});
    rewriter.eraseOp(op);
    return success();
  }
};

class LowerToLLVMPass : public impl::LowerToLLVMPassBase<LowerToLLVMPass> {
public:
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    declareRuntimeFunctions(module);

    // Permuted transfers, n-D vector broadcasts and shape casts (left by the
    // canonicalizations after kina-tile-and-vectorize) as 1-D ops first, as
    // MLIR's convert-vector-to-llvm does before its conversion.
    {
      RewritePatternSet lowering(ctx);
      vector::populateVectorTransferPermutationMapLoweringPatterns(lowering);
      vector::populateVectorTransferLoweringPatterns(lowering,
                                                     /*maxTransferRank=*/1);
      vector::populateVectorBroadcastLoweringPatterns(lowering);
      vector::populateVectorShapeCastLoweringPatterns(lowering);
      vector::populateVectorFromElementsUnrollPatterns(lowering);
      if (failed(applyPatternsGreedily(module, std::move(lowering))))
        return signalPassFailure();
    }

    LLVMTypeConverter converter(ctx);
    RewritePatternSet patterns(ctx);
    arith::populateArithToLLVMConversionPatterns(converter, patterns);
    cf::populateControlFlowToLLVMConversionPatterns(converter, patterns);
    populateFuncToLLVMConversionPatterns(converter, patterns);
    populateFinalizeMemRefToLLVMConversionPatterns(converter, patterns);
    populateMathToLLVMConversionPatterns(converter, patterns);
    index::populateIndexToLLVMConversionPatterns(converter, patterns);
    ub::populateUBToLLVMConversionPatterns(converter, patterns);
    populateVectorToLLVMConversionPatterns(converter, patterns);
    patterns.add<RuntimeAllocLowering>(converter, allocFunction);
    patterns.add<RuntimeDeallocLowering>(converter);

    LLVMConversionTarget target(*ctx);
    target.addLegalOp<ModuleOp>();
    // cuda: kernel launches keep their op with LLVM-typed operands.
    target.addLegalOp<gpu::BinaryOp>();
    target.addDynamicallyLegalOp<gpu::LaunchFuncOp>([&](gpu::LaunchFuncOp op) {
      return converter.isLegal(op->getOperandTypes());
    });
    populateGpuToLLVMConversionPatterns(converter, patterns);
    if (failed(applyFullConversion(module, target, std::move(patterns))))
      signalPassFailure();
  }

private:
  void declareRuntimeFunctions(ModuleOp module) {
    MLIRContext *ctx = module.getContext();
    OpBuilder b(ctx);
    b.setInsertionPointToStart(module.getBody());
    Type ptr = LLVM::LLVMPointerType::get(ctx);
    Type i32 = b.getI32Type();
    auto declare = [&](StringRef name, ArrayRef<Type> params) {
      if (module.lookupSymbol(name))
        return;
      LLVM::LLVMFuncOp::create(b, module.getLoc(), name,
                               LLVM::LLVMFunctionType::get(i32, params));
    };
    declare(allocFunction, {ptr, i32});
    declare(kFreeFunction, {ptr});
  }
};

} // namespace

std::unique_ptr<Pass> createLowerToLLVMPass(std::string allocFunction) {
  LowerToLLVMPassOptions options;
  options.allocFunction = std::move(allocFunction);
  return createLowerToLLVMPass(std::move(options));
}

} // namespace kina
