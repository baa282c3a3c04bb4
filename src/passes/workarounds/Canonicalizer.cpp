//===- Canonicalizer.cpp - canonicalize without truncf(sitofp) folding ----===//
//
// An MLIR 22 workaround (src/passes/workarounds/: every place where kinac
// steps around a bug of upstream MLIR 22 is a file here, each naming the bug
// it avoids and the test that shows it).
//
// The canonicalizer without `TruncFSIToFPToSIToFP` and
// `TruncFUIToFPToUIToFP` (createCanonicalizerPass). These patterns fold
// `truncf(sitofp x)` into one `sitofp`, which rounds once where the pair
// rounds twice: wrong when the first rounding is inexact (Kina's
// `cast i64 -> f64 -> f32` of 2^60 + 2^36 + 1, `i32 -> f32 -> bf16` of
// 2^30 + 2^22 + 1), and an integer-to-bf16 `sitofp` reaches LLVM, which
// lowers it with `__truncsfbf2`, a libcall Debian 12's libgcc lacks (e2e
// `cast_chain_*`, `cast_no_libcalls`).
//
// Not a pass of its own: MLIR's `canonicalize` with those two patterns
// disabled through its `disable-patterns` option (kina-opt prints it so in
// a pipeline). The bf16 expansion (`arith-expand{include-bf16}`) runs after
// the last canonicalization of a pipeline (src/targets/cpu/CpuTarget.cpp).
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"

#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/Passes.h"

#include <cassert>

using namespace mlir;

namespace kina {

std::unique_ptr<Pass> createCanonicalizerPass() {
  // The patterns' debug names, as MLIR 22 registers them (llvm::getTypeName
  // of the tablegen'd classes in an anonymous namespace), set through the
  // pass's own option so that its other options keep their defaults.
  std::unique_ptr<Pass> pass = mlir::createCanonicalizerPass();
  LogicalResult ok = pass->initializeOptions(
      "disable-patterns={(anonymous namespace)::TruncFSIToFPToSIToFP,"
      "(anonymous namespace)::TruncFUIToFPToUIToFP}",
      [](const Twine &) { return failure(); });
  assert(succeeded(ok) && "canonicalize's disable-patterns option");
  (void)ok;
  return pass;
}

} // namespace kina
