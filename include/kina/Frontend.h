//===- Frontend.h - Lexing, parsing, semantic analysis, canonical text ----===//
//
// The front end of kinac: turns the text of a `.kir` file into a checked
// `kina::Module` (AST.h), following shared/spec/kina-ir.md version 0.
// Diagnostics are not printed here: they are emitted with `mlir::emitError`
// at `FileLineColLoc`s, so whichever handler the driver installs (clang-style
// text with the source line and a caret, or JSON) reports them. Several
// independent errors are reported in one run; a failure result means at
// least one error was emitted.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_FRONTEND_H
#define KINA_FRONTEND_H

#include "kina/AST.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace kina {

/// Parses the whole of `source` (the text of `filename`) into a Module.
/// Locations use `filename` as written. Lexical errors (bad bytes, invalid
/// UTF-8, bad numbers) and syntax errors are reported, with recovery at the
/// next statement, so one run reports several. Returns failure if any error
/// was emitted.
mlir::FailureOr<Module> parseModule(llvm::StringRef source,
                                    llvm::StringRef filename,
                                    mlir::MLIRContext &ctx);

/// Semantic analysis: resolves names, infers every result's type and shape
/// (static, `?`, symbolic; NumPy broadcasting), checks annotations,
/// attributes, arities, element types, calls and returns against the spec,
/// and gives literal operands their element type. Fills
/// `Statement::resultTypes` and `Operand::type`. Reports every independent
/// error; returns failure if any was emitted.
mlir::LogicalResult analyzeModule(Module &module, mlir::MLIRContext &ctx);

/// The canonical text of a checked module (`kinac --emit=kir`): module line,
/// functions separated by one blank line, two-space indentation, every
/// result annotated with its inferred type, attributes sorted, numbers
/// printed so they read back exactly. Printing the canonical text of
/// canonical text gives the same bytes.
std::string printModule(const Module &module);

/// Name of the C symbols the runtime exports; a function `@f` whose entry
/// symbols (`kina_f`, `_mlir_ciface_f`, `f`) would collide with one of them
/// is a compile error (spec, "Module and functions").
bool collidesWithRuntimeSymbol(llvm::StringRef exportedName);

} // namespace kina

#endif // KINA_FRONTEND_H
