//===- FuzzFrontend.cpp - libFuzzer target: lexer, parser, Sema, printer --===//
//
// Fuzz target over the whole front end (docs/reliability.md): any bytes go
// through parseModule and analyzeModule, their diagnostics through one of
// kinac's three diagnostic sessions (Diagnostics.h: text, JSON, or the
// verify mode, which also parses `expected-...` annotations out of the
// input), chosen by the input's length, printing to a null stream. Errors
// are fine; a crash, a sanitizer report, a hang or a leak is a finding. A
// module that checks must also round-trip: its canonical text
// (printModule) parses and checks again and prints to the same bytes (the
// spec's canonical-text rule), else the target traps.
//
// Built as a libFuzzer binary by the fuzz build (scripts/fuzz.sh, clang with
// -fsanitize=fuzzer,address,undefined) and, in every other build, linked
// with FuzzReplayMain.cpp into a program that replays the regression inputs
// (ctest fuzz.replay.frontend).
//
//===----------------------------------------------------------------------===//
#include "kina/Diagnostics.h"
#include "kina/Frontend.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace {

/// Parses and checks `source`, reporting through diagnostic session
/// `mode` (0 text, 1 JSON, 2 verify); on success returns its canonical text.
bool checkModule(llvm::StringRef source, std::string &canonical,
                 unsigned mode) {
  mlir::MLIRContext ctx(mlir::MLIRContext::Threading::DISABLED);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "fuzz.kir"), llvm::SMLoc());
  bool verified = false;
  std::optional<kina::DiagnosticSession> session;
  if (mode == 2)
    session.emplace(sourceMgr, ctx, llvm::nulls(), &verified);
  else
    session.emplace(sourceMgr, ctx,
                    mode == 1 ? kina::DiagnosticFormat::Json
                              : kina::DiagnosticFormat::Text,
                    llvm::nulls());
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
  if (!checkModule(source, first, size % 3))
    return 0;
  std::string second;
  if (!checkModule(first, second, 0)) {
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
