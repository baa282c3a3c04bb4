//===- ToolRunner.cpp - Running external tools with captured stderr -------===//
//
// Implementation of ToolRunner.h on llvm::sys::ExecuteNoWait and Wait. stderr
// goes to a temporary file that is read back into the error message and
// removed. If kinac is interrupted (SIGINT, SIGTERM, SIGHUP) while a tool
// runs, the tool is killed and waited for before kinac dies, so it cannot
// write its output after kinac's temporary files were removed.
//
//===----------------------------------------------------------------------===//
#include "kina/ToolRunner.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <csignal>
#include <optional>

#include <sys/types.h>
#include <sys/wait.h>

using namespace llvm;

namespace kina {

namespace {

/// The process id of the tool running now (0: none), for onInterrupt.
std::atomic<long> runningTool{0};

/// LLVM's interrupt function (sys::SetInterruptFunction), called from its
/// signal handler after it removed the files registered with
/// sys::RemoveFileOnSignal: kills the running tool and waits for it, removes
/// the files again (the tool may have written one meanwhile), then dies of
/// SIGINT, as an interrupted compiler does. Async-signal-safe calls only.
void onInterrupt() {
  long pid = runningTool.load();
  if (pid > 0) {
    ::kill(static_cast<pid_t>(pid), SIGKILL);
    ::waitpid(static_cast<pid_t>(pid), nullptr, 0);
  }
  sys::RunInterruptHandlers();
  ::signal(SIGINT, SIG_DFL);
  ::raise(SIGINT);
}

} // namespace

void installInterruptHandler() { sys::SetInterruptFunction(onInterrupt); }

std::string quoteCommand(const std::vector<std::string> &args) {
  std::string out;
  for (const std::string &a : args) {
    if (!out.empty())
      out += ' ';
    bool plain = !a.empty() &&
                 a.find_first_of(" \t\n'\"\\$`*?;&|<>()") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) {
      if (c == '\'')
        out += "'\\''";
      else
        out += c;
    }
    out += '\'';
  }
  return out;
}

Expected<std::string> ToolRunner::findTool(StringRef name,
                                           StringRef explicitPath,
                                           StringRef configuredDir) const {
  if (!explicitPath.empty()) {
    if (sys::fs::can_execute(explicitPath))
      return explicitPath.str();
    return createStringError(inconvertibleErrorCode(),
                             "cannot run '%s': '%s' is not an executable file",
                             name.str().c_str(), explicitPath.str().c_str());
  }
  std::vector<std::string> tried;
  if (std::optional<std::string> env = sys::Process::GetEnv("KINA_LLVM_BIN")) {
    SmallString<256> p(*env);
    sys::path::append(p, name);
    if (sys::fs::can_execute(p))
      return std::string(p);
    tried.push_back(std::string(p) + " (from KINA_LLVM_BIN)");
  }
  if (!configuredDir.empty()) {
    SmallString<256> p(configuredDir);
    sys::path::append(p, name);
    if (sys::fs::can_execute(p))
      return std::string(p);
    tried.push_back(std::string(p));
  }
  if (ErrorOr<std::string> onPath = sys::findProgramByName(name))
    return *onPath;
  tried.push_back("PATH");
  std::string list;
  for (const std::string &t : tried)
    list += (list.empty() ? "" : ", ") + t;
  return createStringError(inconvertibleErrorCode(),
                           "cannot find '%s' (tried %s); pass --%s=PATH or "
                           "set KINA_LLVM_BIN",
                           name.str().c_str(), list.c_str(),
                           name.str().c_str());
}

Error ToolRunner::run(StringRef program,
                      const std::vector<std::string> &args) const {
  std::vector<std::string> shown = args;
  if (!shown.empty())
    shown[0] = program.str();
  std::string command = quoteCommand(shown);
  if (verbose)
    errs() << command << "\n";

  SmallString<128> errPath;
  if (std::error_code ec =
          sys::fs::createTemporaryFile("kinac-tool", "stderr", errPath))
    return createStringError(ec, "cannot create a temporary file: %s",
                             ec.message().c_str());
  FileRemover removeErr(errPath);
  sys::RemoveFileOnSignal(errPath);

  SmallVector<StringRef> argv;
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<StringRef> redirects[] = {std::nullopt, std::nullopt,
                                          StringRef(errPath)};
  std::string execError;
  bool failedToStart = false;
  sys::ProcessInfo started =
      sys::ExecuteNoWait(program, argv, /*Env=*/std::nullopt, redirects,
                         /*MemoryLimit=*/0, &execError, &failedToStart);
  int rc = -1;
  if (started.Pid != sys::ProcessInfo::InvalidPid) {
    runningTool.store(started.Pid);
    rc = sys::Wait(started, /*SecondsToWait=*/std::nullopt, &execError)
             .ReturnCode;
    runningTool.store(0);
  } else {
    failedToStart = true;
  }
  sys::DontRemoveFileOnSignal(errPath);
  std::string stderrText;
  if (auto buf = MemoryBuffer::getFile(errPath))
    stderrText = (*buf)->getBuffer().str();
  if (failedToStart)
    return createStringError(
        inconvertibleErrorCode(), "cannot run '%s': %s\n  command: %s",
        program.str().c_str(), execError.c_str(), command.c_str());
  if (rc == 0)
    return Error::success();
  std::string what = rc < 0 ? "crashed or was killed (" + execError + ")"
                            : "failed with exit code " + std::to_string(rc);
  // Name the tool by its role (args[0]: "llc"), the command shows its path.
  std::string name = !args.empty() && !args[0].empty()
                         ? sys::path::filename(args[0]).str()
                         : sys::path::filename(program).str();
  StringRef stderrShown = StringRef(stderrText).rtrim("\r\n");
  return createStringError(
      inconvertibleErrorCode(), "'%s' %s\n  command: %s%s%s", name.c_str(),
      what.c_str(), command.c_str(), stderrShown.empty() ? "" : "\n",
      stderrShown.str().c_str());
}

} // namespace kina
