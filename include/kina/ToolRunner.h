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

#include <csignal>
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
  /// exits non-zero or dies from a signal. With `output`, the tool's
  /// standard output goes to the same place as its standard error, and on
  /// success `*output` receives both (`ptxas -v`'s report).
  llvm::Error run(llvm::StringRef program, const std::vector<std::string> &args,
                  std::string *output = nullptr) const;

private:
  bool verbose;
};

/// The shell-quoted form of a command line, for messages and `-v`.
std::string quoteCommand(const std::vector<std::string> &args);

/// Makes an interrupted kinac (SIGINT, SIGTERM, SIGHUP, SIGUSR2) kill the
/// process group of the tool it is running and wait for it, remove every
/// file registered with llvm::sys::RemoveFileOnSignal (temporary and staged
/// output files) and every directory registered with
/// removeDirectoryOnSignal, and die of SIGINT. A fatal signal (a crash,
/// SIGQUIT) does the same cleanup before LLVM's crash handling goes on.
/// Call once, early in main.
void installInterruptHandler();

/// The cleanup of an interrupt, for a fatal error that ends kinac another
/// way (an internal error): kills the running tool's group, removes the
/// registered files and directories. Async-signal-safe.
void cleanUpAfterFatalError();

/// Blocks the interrupt signals in the calling thread for its lifetime, so
/// that creating a temporary file and registering it for removal, or
/// spawning a tool and recording its process id, cannot be split by an
/// interrupt (which is delivered when the blocker ends). kinac runs its
/// tools with no other thread alive, so the signal cannot go elsewhere.
class InterruptBlocker {
public:
  InterruptBlocker();
  ~InterruptBlocker();
  InterruptBlocker(const InterruptBlocker &) = delete;
  InterruptBlocker &operator=(const InterruptBlocker &) = delete;
  /// The signal mask from before the blocker (what a spawned tool gets).
  const sigset_t &previousMask() const { return saved; }

private:
  sigset_t saved;
};

/// Registers an (empty by then) directory for removal when kinac is
/// interrupted, after the files in it; false if the fixed table of eight is
/// full or the path too long. dontRemoveDirectoryOnSignal unregisters it.
bool removeDirectoryOnSignal(llvm::StringRef path);
void dontRemoveDirectoryOnSignal(llvm::StringRef path);

} // namespace kina

#endif // KINA_TOOLRUNNER_H
