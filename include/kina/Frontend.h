//===- Frontend.h - Lexing, parsing, semantic analysis, canonical text ----===//
//
// The front end of kinac: turns the text of a `.kir` file into a checked
// `kina::Module` (AST.h), following docs/language.md (version 0).
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
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kina {

/// Documented limits of the front end (docs/reliability.md). Input beyond any of
/// them is a located error, never a crash, a stack overflow or an unbounded
/// run; they are far above what a real model needs. The maximum rank, 8
/// (abi.h's KINA_MAX_RANK), is `kMaxRank` in Shapes.h; a tensor type whose
/// size in bytes (product of its static dims times the element size) does
/// not fit in a signed 64-bit integer is an error too.
namespace limits {
/// Largest source file, in bytes (16 MiB).
inline constexpr uint64_t kMaxSourceBytes = 16u << 20;
/// Longest line, in bytes, newline excluded (64 KiB; a long dense<...>
/// literal may span lines).
inline constexpr uint64_t kMaxLineBytes = 64u << 10;
/// Deepest nesting of `[...]` lists inside a dense<...> literal (a literal
/// nested deeper could not match a type of rank <= 8 anyway) and inside an
/// attribute value.
inline constexpr unsigned kMaxNestingDepth = 8;
/// Most statements in one function body. The lowering's compile time grows
/// with the square of a function's size (MLIR's one-shot bufferization
/// analysis): 10000 statements can take a minute (docs/reliability.md).
inline constexpr size_t kMaxStatementsPerFunction = 10000;
/// Most statements in one module, all functions together.
inline constexpr size_t kMaxStatementsPerModule = 100000;
/// Most functions in one module.
inline constexpr size_t kMaxFunctionsPerModule = 1000;
/// Most entries of one list: parameters or results of a function, result
/// names or operands of a statement, values of a `return`.
inline constexpr size_t kMaxListLength = 4096;
} // namespace limits

/// The optimal string alignment distance between `a` and `b`: the fewest
/// insertions, deletions, replacements and swaps of two adjacent characters
/// that turn one into the other (`f23` -> `f32` is 1, `gleu` -> `gelu` 1).
size_t typoDistance(llvm::StringRef a, llvm::StringRef b);

/// Typo correction for a diagnostic's "did you mean ...?": the candidate
/// nearest to `typo` by typoDistance, if it is close enough to be what was
/// meant: at most max(1, len/3) edits for a `typo` of len characters, and
/// fewer than len (so `q` is not corrected to `x`). Ties go to the
/// alphabetically first candidate, so the suggestion is deterministic. A
/// candidate equal to `typo` is skipped. std::nullopt when none is close.
std::optional<std::string>
suggestName(llvm::StringRef typo, llvm::ArrayRef<llvm::StringRef> candidates);

/// The spellings of all element types (`f64` ... `i1`, AST.h's order), the
/// candidates for correcting a misspelt one.
llvm::ArrayRef<llvm::StringRef> elementTypeSpellings();

/// Parses the whole of `source` (the text of `filename`) into a Module.
/// Locations use `filename` as written. Lexical errors (bad bytes, invalid
/// UTF-8, bad numbers) and syntax errors are reported, with recovery at the
/// next statement, so one run reports several. Input beyond `limits` (file
/// size, line length, nesting, counts) is an error. Returns failure if any
/// error was emitted.
mlir::FailureOr<Module> parseModule(llvm::StringRef source,
                                    llvm::StringRef filename,
                                    mlir::MLIRContext &ctx);

/// Semantic analysis: resolves names, infers every result's type and shape
/// (static, `?`, symbolic; NumPy broadcasting), checks annotations,
/// attributes, arities, element types, calls and returns against the spec,
/// and gives literal operands their element type. Fills
/// `Statement::resultTypes` and `Operand::type`. Reports every independent
/// error; returns failure if any was emitted.
/// `symbolPrefix` (`--symbol-prefix`) is prepended to exported functions'
/// C symbols when checking them against the runtime's.
mlir::LogicalResult analyzeModule(Module &module, mlir::MLIRContext &ctx,
                                  llvm::StringRef symbolPrefix = {});

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
