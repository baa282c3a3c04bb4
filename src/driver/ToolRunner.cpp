//===- ToolRunner.cpp - Running external tools with captured stderr -------===//
//
// Implementation of ToolRunner.h. A tool is started with posix_spawn in a
// process group of its own (so that killing the group also kills what it
// started: cc's cc1, as and ld, a shell script's children) and with kinac's
// signal mask from before the spawn; stderr goes to a temporary file that is
// read back into the error message and removed. llvm::sys::ExecuteNoWait
// offers neither the process group nor the mask, which is why the spawn is
// done here.
//
// Interrupts (SIGINT, SIGTERM, SIGHUP, SIGUSR2, SIGQUIT) are blocked from
// just before the spawn until the tool's process id is recorded, and from
// the tool's end until it is cleared, so the interrupt handler always knows
// the tool that runs; the tool is reaped only after its id was cleared, so
// the handler never signals a process id the system may have reused. The
// handler kills the tool's group and waits for it before the temporary
// files are removed, so no tool writes its output after that.
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
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <optional>

#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace llvm;

namespace kina {

namespace {

/// The process id (and process group id) of the tool running now; 0: none.
std::atomic<pid_t> runningTool{0};

/// Directories to remove when kinac is interrupted (after the files in them,
/// which llvm::sys::RemoveFileOnSignal removes): fixed slots, so that the
/// signal handler reads them without locks or allocation.
constexpr int kMaxSignalDirs = 8;
constexpr size_t kMaxDirPath = 4096;
char signalDirs[kMaxSignalDirs][kMaxDirPath];
std::atomic<bool> signalDirUsed[kMaxSignalDirs];

/// The signals that make kinac clean up and die (LLVM's interrupt signals
/// and SIGQUIT).
sigset_t interruptSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGUSR2, SIGQUIT})
    sigaddset(&set, sig);
  return set;
}

/// Kills the running tool's process group and waits until the tool is
/// reaped and (for at most two seconds) the rest of its group is gone.
/// Async-signal-safe.
void killToolGroup() {
  pid_t pid = runningTool.exchange(0);
  if (pid <= 0)
    return;
  ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL); // in case it left its group
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  struct timespec pause = {0, 5 * 1000 * 1000};
  for (int i = 0; i < 400 && ::kill(-pid, 0) == 0; ++i)
    ::nanosleep(&pause, nullptr);
}

/// Removes the directories registered with removeDirectoryOnSignal (empty by
/// then). Async-signal-safe.
void removeSignalDirs() {
  for (int i = 0; i < kMaxSignalDirs; ++i)
    if (signalDirUsed[i].load())
      ::rmdir(signalDirs[i]);
}

/// LLVM's interrupt function (sys::SetInterruptFunction), called from its
/// signal handler after it removed the files registered with
/// sys::RemoveFileOnSignal: kills the running tool's group and waits for it,
/// removes the files again (the tool may have written one meanwhile) and the
/// registered directories, then dies of SIGINT, as an interrupted compiler
/// does. Async-signal-safe calls only.
void onInterrupt() {
  killToolGroup();
  sys::RunInterruptHandlers();
  removeSignalDirs();
  ::signal(SIGINT, SIG_DFL);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGINT);
  ::pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
  ::raise(SIGINT);
}

/// The same cleanup for fatal signals (a crash of kinac, SIGQUIT): LLVM
/// runs it among its signal handlers (sys::AddSignalHandler), after it
/// removed the registered files.
void onFatalSignal(void *) {
  killToolGroup();
  sys::RunInterruptHandlers();
  removeSignalDirs();
}

} // namespace

void installInterruptHandler() {
  sys::SetInterruptFunction(onInterrupt);
  sys::AddSignalHandler(onFatalSignal, nullptr);
}

void cleanUpAfterFatalError() {
  killToolGroup();
  sys::RunInterruptHandlers();
  removeSignalDirs();
}

InterruptBlocker::InterruptBlocker() {
  sigset_t set = interruptSignals();
  ::pthread_sigmask(SIG_BLOCK, &set, &saved);
}

InterruptBlocker::~InterruptBlocker() {
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
}

bool removeDirectoryOnSignal(StringRef path) {
  if (path.size() >= kMaxDirPath)
    return false;
  InterruptBlocker blocked;
  for (int i = 0; i < kMaxSignalDirs; ++i) {
    if (signalDirUsed[i].load())
      continue;
    std::memcpy(signalDirs[i], path.data(), path.size());
    signalDirs[i][path.size()] = '\0';
    signalDirUsed[i].store(true);
    return true;
  }
  return false;
}

void dontRemoveDirectoryOnSignal(StringRef path) {
  InterruptBlocker blocked;
  for (int i = 0; i < kMaxSignalDirs; ++i)
    if (signalDirUsed[i].load() && path == signalDirs[i])
      signalDirUsed[i].store(false);
}

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

Error ToolRunner::run(StringRef program, const std::vector<std::string> &args,
                      std::string *output) const {
  std::vector<std::string> shown = args;
  if (!shown.empty())
    shown[0] = program.str();
  std::string command = quoteCommand(shown);
  if (verbose)
    errs() << command << "\n";

  SmallString<128> errPath;
  {
    // Created and registered for removal with no interrupt in between.
    InterruptBlocker blocked;
    if (std::error_code ec =
            sys::fs::createTemporaryFile("kinac-tool", "stderr", errPath))
      return createStringError(ec, "cannot create a temporary file: %s",
                               ec.message().c_str());
    sys::RemoveFileOnSignal(errPath);
  }

  // argv and environment for posix_spawn, as NUL-terminated arrays.
  std::vector<char *> argv;
  for (const std::string &a : args)
    argv.push_back(const_cast<char *>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, errPath.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (output)
    posix_spawn_file_actions_adddup2(&actions, 2, 1);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  pid_t pid = 0;
  int spawnError;
  std::string execError;
  bool failedToStart = false;
  int rc = -1;
  {
    // The tool gets the mask kinac had before blocking (its own signals
    // work as usual) and a process group of its own (pgid = its pid).
    InterruptBlocker blocked;
    posix_spawnattr_setsigmask(&attr, &blocked.previousMask());
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
    std::string programPath = program.str();
    spawnError = ::posix_spawn(&pid, programPath.c_str(), &actions, &attr,
                               argv.data(), environ);
    if (spawnError == 0)
      runningTool.store(pid);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawnError != 0) {
    failedToStart = true;
    execError = std::strerror(spawnError);
  } else {
    // Wait for the end without reaping (the zombie keeps the process id
    // from being reused while the interrupt handler may still signal it),
    // then clear the id with interrupts blocked, then reap.
    siginfo_t info;
    int waited;
    do {
      info.si_pid = 0;
      waited = ::waitid(P_PID, pid, &info, WEXITED | WNOWAIT);
    } while (waited < 0 && errno == EINTR);
    int status = 0;
    bool reaped;
    {
      InterruptBlocker blocked;
      reaped =
          runningTool.exchange(0) == pid && ::waitpid(pid, &status, 0) == pid;
    }
    if (!reaped) {
      execError = "lost track of the process";
    } else if (WIFEXITED(status)) {
      rc = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      execError = ::strsignal(WTERMSIG(status));
      if (WCOREDUMP(status))
        execError += " (core dumped)";
    }
  }
  std::string stderrText;
  if (auto buf = MemoryBuffer::getFile(errPath))
    stderrText = (*buf)->getBuffer().str();
  sys::fs::remove(errPath);
  sys::DontRemoveFileOnSignal(errPath);
  if (failedToStart)
    return createStringError(
        inconvertibleErrorCode(), "cannot run '%s': %s\n  command: %s",
        program.str().c_str(), execError.c_str(), command.c_str());
  if (rc == 0) {
    if (output)
      *output = std::move(stderrText);
    return Error::success();
  }
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
