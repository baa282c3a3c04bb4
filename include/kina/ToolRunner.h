//===- ToolRunner.h - Running mlir-translate, llc and the C compiler ------===//
//
// kinac produces objects by calling LLVM's command-line tools (spec: write
// textual MLIR, call `mlir-translate` and `llc`) and links executables with
// the system compiler driver. This small class finds the tools, echoes the
// exact command under `-v`, captures stderr, and turns every failure (tool
// missing, non-zero exit, killed by a signal) into an llvm::Error that names
// the tool, its command line and its stderr.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TOOLRUNNER_H
#define KINA_TOOLRUNNER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace kina {

class ToolRunner {
public:
  /// `verbose` echoes each command to stderr before running it.
  explicit ToolRunner(bool verbose) : verbose(verbose) {}

  /// Finds a tool: `explicitPath` if non-empty (must exist), else
  /// `$KINA_LLVM_BIN/name`, else `configuredDir/name`, else `name` on PATH.
  /// Error (naming the places tried) if none is executable.
  llvm::Expected<std::string> findTool(llvm::StringRef name,
                                       llvm::StringRef explicitPath,
                                       llvm::StringRef configuredDir) const;

  /// Runs `program` with `args` (args[0] is the display name). Returns an
  /// error carrying the command and the tool's stderr when it cannot start,
  /// exits non-zero or dies from a signal.
  llvm::Error run(llvm::StringRef program,
                  const std::vector<std::string> &args) const;

private:
  bool verbose;
};

/// The shell-quoted form of a command line, for messages and `-v`.
std::string quoteCommand(const std::vector<std::string> &args);

/// Makes an interrupted kinac (SIGINT, SIGTERM, SIGHUP) kill and reap the
/// tool it is running, remove every file registered with
/// llvm::sys::RemoveFileOnSignal (temporary and staged output files), and
/// die of SIGINT. Call once, early in main.
void installInterruptHandler();

} // namespace kina

#endif // KINA_TOOLRUNNER_H
