//===- ReadOnlyArguments.cpp - Inputs are the caller's memory -------------===//
//
// The first step of bufferization's set-up: marks every argument of every
// function with a body `bufferization.writable = false`, so one-shot
// bufferization with function boundaries never writes into an argument's
// buffer (spec, "ABI": arguments are the caller's, read-only; an op that
// would update its input in place gets a copy instead). Runs on MLIRGen's
// module on tensors, before `one-shot-bufferize`.
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"

using namespace mlir;

namespace kina {
namespace {

class ReadOnlyArgumentsPass
    : public PassWrapper<ReadOnlyArgumentsPass, OperationPass<ModuleOp>> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ReadOnlyArgumentsPass)
  StringRef getArgument() const override { return "kina-read-only-arguments"; }
  StringRef getDescription() const override {
    return "Mark function arguments non-writable for one-shot bufferization";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<bufferization::BufferizationDialect>();
  }

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i)
          func.setArgAttr(
              i, bufferization::BufferizationDialect::kWritableAttrName,
              BoolAttr::get(ctx, false));
  }
};

} // namespace

std::unique_ptr<Pass> createReadOnlyArgumentsPass() {
  return std::make_unique<ReadOnlyArgumentsPass>();
}

} // namespace kina
