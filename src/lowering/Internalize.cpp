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
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
namespace {

class InternalizePass
    : public PassWrapper<InternalizePass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InternalizePass)
  InternalizePass(const Module *module, std::string prefix)
      : kinaModule(module), prefix(std::move(prefix)) {}
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
    SymbolTable &symbols = tables.getSymbolTable(module);
    SymbolUserMap users(tables, module);
    for (const Function &fn : kinaModule->functions) {
      std::string name = prefix + fn.name;
      auto impl = symbols.lookup<LLVM::LLVMFuncOp>(name);
      if (!impl || impl.isExternal())
        continue;
      auto newName = StringAttr::get(&getContext(), "__kina_fn_" + name);
      users.replaceAllUsesWith(impl, newName);
      SymbolTable::setSymbolName(impl, newName);
      impl.setLinkage(LLVM::Linkage::Internal);
    }
  }

private:
  const Module *kinaModule;
  std::string prefix;
};

} // namespace

std::unique_ptr<Pass> createInternalizePass(const Module *module,
                                            std::string symbolPrefix) {
  return std::make_unique<InternalizePass>(module, std::move(symbolPrefix));
}

} // namespace kina
