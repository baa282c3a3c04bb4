//===- ConstantGlobalOrder.cpp - Bufferization's globals in a fixed order -===//
//
// An MLIR 22 workaround (src/passes/workarounds/: every place where kinac
// steps around upstream MLIR 22 is a file here, each naming what it avoids
// and the test that shows it).
//
// kina-constant-global-order (createConstantGlobalOrderPass), run right
// after one-shot-bufferize on both targets. MLIR 22's One-Shot Module
// Bufferize orders the functions it bufferizes through DenseMaps keyed by
// the functions (getFuncOpsOrderedByCalls), so functions that do not call
// each other are bufferized in an order that follows their addresses and
// changes from run to run; each tensor constant becomes a `memref.global`
// named `__constant_<type>` (`_0`, `_1`, ... when taken) in that order. So
// the globals' order and, for two constants of one type, their names
// differed between two runs of kinac on the same file: the object's bytes
// too, and `kina-opt --kina-cpu-pipeline` differed from kinac
// (passes.pipeline-equivalence on tests/filecheck/cuda_constant_result.kir,
// one constant in each of three functions). Fixed upstream by
// llvm/llvm-project#184722 ("Deterministic containers in
// OneShotModuleBufferize"), after MLIR 22.
//
// This pass puts those globals in the order of their first
// `memref.get_global` in the module (functions in their order, each body
// in order) and names them again in that order as bufferization does
// (`__constant_4xf32`, then `__constant_4xf32_0`, ...), so the result no
// longer depends on the bufferization's order. Checked by
// tests/passes/constant-global-order.mlir and passes.pipeline-equivalence.
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace kina {
#define GEN_PASS_DEF_CONSTANTGLOBALORDERPASS
#include "kina/Passes.h.inc"

namespace {

constexpr llvm::StringLiteral kPrefix = "__constant_";

/// The name bufferization gave a global before making it unique: `name`
/// less a trailing `_<digits>` (its types, e.g. `4xf32`, never end so).
StringRef baseName(StringRef name) {
  size_t underscore = name.rfind('_');
  if (underscore == StringRef::npos || underscore + 1 == name.size() ||
      underscore < kPrefix.size())
    return name;
  StringRef suffix = name.drop_front(underscore + 1);
  if (!llvm::all_of(suffix, llvm::isDigit))
    return name;
  return name.take_front(underscore);
}

struct ConstantGlobalOrderPass final
    : impl::ConstantGlobalOrderPassBase<ConstantGlobalOrderPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Bufferization's constant globals, by name.
    llvm::StringMap<memref::GlobalOp> globals;
    for (auto global : module.getOps<memref::GlobalOp>())
      if (global.getConstant() && global.isPrivate() &&
          global.getSymName().starts_with(kPrefix))
        globals[global.getSymName()] = global;
    if (globals.size() < 2)
      return;
    // Their order: first use, then (unused) their current order.
    llvm::SetVector<memref::GlobalOp> order;
    module.walk([&](memref::GetGlobalOp get) {
      auto it = globals.find(get.getName());
      if (it != globals.end())
        order.insert(it->second);
    });
    for (auto global : module.getOps<memref::GlobalOp>())
      if (globals.count(global.getSymName()))
        order.insert(global);

    // Names in that order (`base`, `base_0`, `base_1`, ...), given in two
    // steps so that no new name meets an old one still in use.
    SymbolTable symbols(module);
    llvm::StringMap<unsigned> taken;
    SmallVector<std::string> finalNames;
    for (memref::GlobalOp global : order) {
      std::string base = baseName(global.getSymName()).str();
      unsigned count = taken[base]++;
      finalNames.push_back(count == 0 ? base
                                      : base + "_" + std::to_string(count - 1));
    }
    for (auto [i, global] : llvm::enumerate(order)) {
      std::string temporary = "__kina_constant_global_" + std::to_string(i);
      if (failed(symbols.rename(global, temporary)))
        return signalPassFailure();
    }
    for (auto [i, global] : llvm::enumerate(order))
      if (failed(symbols.rename(global, finalNames[i])))
        return signalPassFailure();

    // And in that order in the module, where the first of them was.
    Operation *anchor = nullptr;
    for (Operation &op : module.getBody()->getOperations())
      if (auto global = dyn_cast<memref::GlobalOp>(&op);
          global && order.contains(global)) {
        anchor = &op;
        break;
      }
    Block *body = module.getBody();
    Block::iterator at = anchor->getIterator();
    for (memref::GlobalOp global : order) {
      if (global.getOperation() == &*at) {
        ++at;
        continue;
      }
      global->moveBefore(body, at);
    }
  }
};

} // namespace
} // namespace kina
