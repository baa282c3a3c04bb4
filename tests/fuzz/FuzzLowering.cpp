//===- FuzzLowering.cpp - libFuzzer target: front end through MLIRGen -----===//
//
// Fuzz target from bytes to verified MLIR (docs/reliability.md): inputs that
// pass the front end are lowered by mlirGen (which runs the MLIR verifier)
// and verified again here; small modules then go through the cpu target's
// whole pass pipeline to the LLVM dialect at -O2 (lowerToLLVMDialect verifies after
// each pass). A located error is fine; a crash, a sanitizer report, a module
// that does not verify, or any diagnostic saying "internal error" is a
// finding, and the target traps.
//
// Built as a libFuzzer binary by the fuzz build (scripts/fuzz.sh) and, in
// every other build, with FuzzReplayMain.cpp as a replay program
// (ctest fuzz.replay.lowering).
//
//===----------------------------------------------------------------------===//
#include "kina/Frontend.h"
#include "kina/MLIRGen.h"
#include "kina/Pipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

/// Modules up to this many statements also run the pass pipeline (it costs
/// tens of milliseconds, so larger inputs would slow the search down).
constexpr size_t kPipelineMaxStatements = 12;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef source(reinterpret_cast<const char *>(data), size);
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  ctx.printOpOnDiagnostic(false);
  ctx.printStackTraceOnDiagnostic(false);
  kina::registerKinaDialects(ctx);
  std::string internal;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    std::string message = d.str();
    if (message.find("internal error") != std::string::npos && internal.empty())
      internal = message;
    return mlir::success();
  });
  mlir::FailureOr<kina::Module> module =
      kina::parseModule(source, "fuzz.kir", ctx);
  if (mlir::failed(module) || mlir::failed(kina::analyzeModule(*module, ctx)))
    return 0;
  mlir::OwningOpRef<mlir::ModuleOp> lowered = kina::mlirGen(ctx, *module);
  if (lowered && mlir::failed(mlir::verify(*lowered))) {
    std::fprintf(stderr, "mlirGen returned a module that does not verify\n");
    std::abort();
  }
  size_t statements = 0;
  for (const kina::Function &fn : module->functions)
    statements += fn.body.size();
  if (lowered && statements <= kPipelineMaxStatements) {
    kina::registerAllTargets();
    (void)kina::lowerToLLVMDialect(*lowered, *kina::lookupTarget("cpu"),
                                   kina::TargetOptions{});
  }
  if (!internal.empty()) {
    std::fprintf(stderr, "internal error diagnostic: %s\n", internal.c_str());
    std::abort();
  }
  return 0;
}
