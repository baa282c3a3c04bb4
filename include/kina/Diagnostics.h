//===- Diagnostics.h - How kinac reports and verifies diagnostics ---------===//
//
// The front end and the lowering emit every error through MLIR's diagnostic
// engine at FileLineColLoc locations; the driver decides how they reach the
// user. This header is that decision, in one place:
//  - text (the default): clang's form, `file:line:col: error: ...` with the
//    source line and a caret (MLIR's SourceMgrDiagnosticHandler);
//  - JSON (`--diagnostics-format=json`): one JSON object per line on stderr,
//    `{"file", "line", "col", "severity", "message", "notes": [...]}`, for
//    editors and CI annotations; errors with no place in a source have null
//    file, line and col;
//  - verify (`--verify-diagnostics`): nothing is printed unless the
//    diagnostics differ from the `expected-error@+1:8 {{...}}` annotations
//    in the source's comments (MLIR's -verify-diagnostics, with columns and
//    exact messages; docs/diagnostics.md).
// At most kMaxReportedErrors errors of one file are printed, then one line
// says the rest were dropped.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_DIAGNOSTICS_H
#define KINA_DIAGNOSTICS_H

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kina {

/// How diagnostics are printed (`--diagnostics-format=text|json`).
enum class DiagnosticFormat { Text, Json };

/// Errors of one compilation printed in text or JSON form before the rest
/// are dropped (verify mode has no limit).
inline constexpr unsigned kMaxReportedErrors = 50;

/// Parses a `--diagnostics-format` value; std::nullopt if unknown.
std::optional<DiagnosticFormat> parseDiagnosticFormat(llvm::StringRef name);

/// The process-wide format, set once by the driver before any diagnostic
/// (kinac is one thread). Default: text.
void setDiagnosticFormat(DiagnosticFormat format);
DiagnosticFormat getDiagnosticFormat();

/// Prints an error with no place in a source file (missing input, bad flag,
/// failing tool) to stderr: `kinac: error: MESSAGE`, or a JSON object with
/// null file, line and col.
void reportDriverError(const llvm::Twine &message);

/// Prints an internal compiler error (InternalError.h): text `kinac:
/// internal error: MESSAGE` then `kinac: note: NOTE` per note; JSON one
/// object, severity "error", message "internal error: MESSAGE", the notes
/// nested.
void reportInternalErrorText(const std::string &message,
                             const std::vector<std::string> &notes);

/// The same for a warning: `kinac: warning: MESSAGE`, or a JSON object with
/// severity "warning".
void reportDriverWarning(const llvm::Twine &message);

/// Prints the diagnostics of one compilation (the file registered in
/// `sourceMgr`) for as long as it lives, in `format`, to `os`. In verify
/// mode it collects them instead and compares them with the annotations of
/// the source when destroyed: mismatches are printed as errors and
/// `*verified` is set to whether everything matched.
class DiagnosticSession {
public:
  /// Print mode.
  DiagnosticSession(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &ctx,
                    DiagnosticFormat format, llvm::raw_ostream &os);
  /// Verify mode; `*verified` is written when the session ends.
  DiagnosticSession(llvm::SourceMgr &sourceMgr, mlir::MLIRContext &ctx,
                    llvm::raw_ostream &os, bool *verified);
  ~DiagnosticSession();
  DiagnosticSession(const DiagnosticSession &) = delete;
  DiagnosticSession &operator=(const DiagnosticSession &) = delete;

  /// Implementation, one per mode (Diagnostics.cpp).
  class Impl;

private:
  std::unique_ptr<Impl> impl;
};

} // namespace kina

#endif // KINA_DIAGNOSTICS_H
