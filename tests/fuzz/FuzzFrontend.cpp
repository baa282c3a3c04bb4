//===- FuzzFrontend.cpp - libFuzzer target: lexer, parser, Sema, printer --===//
//
// Fuzz target over the whole front end (docs/reliability.md): any bytes go
// through parseModule and analyzeModule with a context whose diagnostics are
// dropped. Errors are fine; a crash, a sanitizer report, a hang or a leak is
// a finding. A module that checks must also round-trip: its canonical text
// (printModule) parses and checks again and prints to the same bytes (the
// spec's canonical-text rule), else the target traps.
//
// Built as a libFuzzer binary by the fuzz build (scripts/fuzz.sh, clang with
// -fsanitize=fuzzer,address,undefined) and, in every other build, linked
// with FuzzReplayMain.cpp into a program that replays the regression inputs
// (ctest fuzz.replay.frontend).
//
//===----------------------------------------------------------------------===//
#include "kina/Frontend.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

/// Parses and checks `source`; on success returns its canonical text.
bool checkModule(llvm::StringRef source, std::string &canonical) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler drop(
      &ctx, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::FailureOr<kina::Module> module =
      kina::parseModule(source, "fuzz.kir", ctx);
  if (mlir::failed(module) || mlir::failed(kina::analyzeModule(*module, ctx)))
    return false;
  for (const kina::Function &fn : module->functions)
    (void)kina::collidesWithRuntimeSymbol(fn.name);
  canonical = kina::printModule(*module);
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef source(reinterpret_cast<const char *>(data), size);
  std::string first;
  if (!checkModule(source, first))
    return 0;
  std::string second;
  if (!checkModule(first, second)) {
    std::fprintf(stderr, "canonical text does not check again:\n%s\n",
                 first.c_str());
    std::abort();
  }
  if (first != second) {
    std::fprintf(stderr,
                 "canonical text is not stable:\n--- first\n%s\n--- "
                 "second\n%s\n",
                 first.c_str(), second.c_str());
    std::abort();
  }
  return 0;
}
