//===- Internalize.cpp - Keep only the ABI's symbols exported -------------===//
//
// After the conversion to the LLVM dialect, each Kina function `@f` exists as
// `llvm.func @f` with MLIR's expanded-descriptor calling convention. The ABI
// exports only `kina_f` and `_mlir_ciface_f` (spec, "ABI"); a global `f`
// would collide with the user's program (a Kina `@main`) or with libm (a
// Kina `@sin` would capture the calls LLVM emits for `llvm.sin`). This pass
// renames every such implementation function to `__kina_fn_<f>` (a prefix
// Kina names cannot take: Sema reserves `__kina_`) with internal linkage and
// updates all its uses (the C-interface wrapper, the status entry, calls).
//
// The Kina functions are the `llvm.func`s that carry a Kina signature
// (kina/IRConventions.h; the conversion to the LLVM dialect copies a
// function's attributes to it and to its C-interface wrapper
// `_mlir_ciface_f`, which keeps its name). The signature attributes are
// consumed here: the pass removes them from every function, so the LLVM
// dialect it leaves carries no Kina attributes.
//
//===----------------------------------------------------------------------===//
#include "kina/IRConventions.h"
#include "kina/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace kina {
namespace {

class InternalizePass
    : public PassWrapper<InternalizePass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InternalizePass)
  StringRef getArgument() const override { return "kina-internalize"; }
  StringRef getDescription() const override {
    return "Give the implementation functions internal linkage";
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // One symbol table and one map of symbol uses for the whole module:
    // renaming then touches only each function's users, so a module of n
    // functions takes linear time (a walk of the module per function made
    // it quadratic: minutes for a few thousand functions).
    SymbolTableCollection tables;
    SymbolUserMap users(tables, module);
    SmallVector<LLVM::LLVMFuncOp> kinaFunctions;
    llvm::StringSet<> wrappers;
    for (auto fn : module.getOps<LLVM::LLVMFuncOp>()) {
      if (!hasKinaSignature(fn))
        continue;
      kinaFunctions.push_back(fn);
      if (fn->hasAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName()))
        wrappers.insert(("_mlir_ciface_" + fn.getSymName()).str());
    }
    for (LLVM::LLVMFuncOp fn : kinaFunctions) {
      removeKinaSignature(fn);
      if (fn.isExternal() || wrappers.contains(fn.getSymName()))
        continue;
      auto newName =
          StringAttr::get(&getContext(), "__kina_fn_" + fn.getSymName());
      users.replaceAllUsesWith(fn, newName);
      SymbolTable::setSymbolName(fn, newName);
      fn.setLinkage(LLVM::Linkage::Internal);
    }
  }
};

} // namespace

std::unique_ptr<Pass> createInternalizePass() {
  return std::make_unique<InternalizePass>();
}

} // namespace kina
