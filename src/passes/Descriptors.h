//===- Descriptors.h - The LLVM struct of a ranked memref descriptor ------===//
//
// Shared by the passes that build descriptors by hand before the conversion
// to the LLVM dialect (buffer ownership's null results, the entry points'
// loads and stores): the struct MLIR's LLVM lowering uses for a ranked
// memref of rank R, `{ptr allocated, ptr aligned, i64 offset,
// [R x i64] sizes, [R x i64] strides}` (no arrays for rank 0), which is
// also KinaMemRef<R> of include/kina/abi.h.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_LOWERING_DESCRIPTORS_H
#define KINA_LOWERING_DESCRIPTORS_H

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace kina {

/// The LLVM struct type of a ranked memref descriptor of rank `rank`.
inline mlir::Type memrefDescriptorType(mlir::MLIRContext *ctx, int64_t rank) {
  mlir::Type ptr = mlir::LLVM::LLVMPointerType::get(ctx);
  mlir::Type i64 = mlir::IntegerType::get(ctx, 64);
  llvm::SmallVector<mlir::Type, 5> fields = {ptr, ptr, i64};
  if (rank > 0) {
    fields.push_back(mlir::LLVM::LLVMArrayType::get(i64, rank));
    fields.push_back(mlir::LLVM::LLVMArrayType::get(i64, rank));
  }
  return mlir::LLVM::LLVMStructType::getLiteral(ctx, fields);
}

} // namespace kina

#endif // KINA_LOWERING_DESCRIPTORS_H
