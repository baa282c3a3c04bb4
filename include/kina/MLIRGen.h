//===- MLIRGen.h - Kina AST to MLIR on tensors ----------------------------===//
//
// Builds the high-level MLIR module (`kinac --emit=mlir`) from a checked
// Kina module with the C++ builder API: `func`, `linalg`, `tensor`, `arith`,
// `math`. Every op carries the FileLineColLoc of the Kina statement it comes
// from. Conventions the later passes rely on (Pipeline.h):
//  - each function is a `func.func` named after the Kina function (with the
//    symbol prefix); exported ones carry `llvm.emit_c_interface`, private
//    ones private visibility; each carries its Kina signature as attributes
//    (kina/IRConventions.h);
//  - a run-time shape rule the compiler could not prove is a call
//    `func.call @__kina_check(%ok : i1, %a : index, %b : index)` with a
//    `kina.message` string attribute ("file:line:col: op: what"); the
//    buffer-ownership pass turns it into an early return with status 1.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_MLIRGEN_H
#define KINA_MLIRGEN_H

#include "kina/AST.h"
#include "kina/IRConventions.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace kina {

struct MLIRGenOptions {
  /// Prepended to every function name (`--symbol-prefix`).
  std::string symbolPrefix;
};

/// Loads the dialects MLIRGen and the pipeline need into `ctx`.
void registerKinaDialects(mlir::MLIRContext &ctx);

/// Lowers a checked module to MLIR on tensors and verifies it. Ops the
/// lowering does not cover yet get a located error. Returns null on failure
/// (errors were emitted through `ctx`).
mlir::OwningOpRef<mlir::ModuleOp> mlirGen(mlir::MLIRContext &ctx,
                                          const Module &module,
                                          const MLIRGenOptions &options = {});

} // namespace kina

#endif // KINA_MLIRGEN_H
