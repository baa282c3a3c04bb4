//===- Link.cpp - One-step links with the C compiler driver ---------------===//
//
// `kinac m.kir main.c -o app`: the modules are compiled to objects and C
// headers, then the system compiler driver ($CC, else cc) compiles and
// links the C sources with them and the runtime archive, with the C
// driver's flags from the command line and from $CPPFLAGS $CFLAGS $LDFLAGS
// $LDLIBS as make passes them. Also where the runtime archive and its
// headers are found.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "kina/RuntimeConfig.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"

#ifndef KINA_DEFAULT_RUNTIME_LIB
#define KINA_DEFAULT_RUNTIME_LIB ""
#endif
#ifndef KINA_DEFAULT_INCLUDE_DIR
#define KINA_DEFAULT_INCLUDE_DIR ""
#endif

#ifndef KINA_DEFAULT_KINA_RUN
#define KINA_DEFAULT_KINA_RUN ""
#endif

using namespace llvm;

namespace kina {
namespace driver {

namespace {

/// The directory of the running kinac, for paths relative to it.
std::string executableDir(const char *argv0) {
  static int anchor;
  std::string exe = sys::fs::getMainExecutable(argv0, &anchor);
  return sys::path::parent_path(exe).str();
}

/// The words of an environment variable holding flags (CFLAGS, LDFLAGS,
/// ...), split at white space as make's recipes split them (no quoting).
std::vector<std::string> flagsFromEnvironment(const char *name) {
  std::vector<std::string> words;
  std::optional<std::string> value = sys::Process::GetEnv(name);
  if (!value)
    return words;
  SmallVector<StringRef> parts;
  SplitString(*value, parts, " \t\n\r\f\v");
  for (StringRef w : parts)
    words.push_back(w.str());
  return words;
}

/// The folder holding kina/runtime.h and kina/abi.h for C sources linked in
/// one step: `../include` beside kinac (an install tree), else the source
/// tree's include folder (a build tree); plus the build's generated headers
/// (kina/RuntimeConfig.h) when those are not beside the others.
std::vector<std::string> runtimeIncludeDirs(const char *argv0) {
  SmallString<256> p(executableDir(argv0));
  sys::path::append(p, "..", "include");
  SmallString<256> probe(p);
  sys::path::append(probe, "kina", "runtime.h");
  if (sys::fs::exists(probe)) {
    SmallString<256> real;
    if (!sys::fs::real_path(p, real))
      return {std::string(real)};
    return {std::string(p)};
  }
  std::vector<std::string> dirs = {KINA_DEFAULT_INCLUDE_DIR};
  SmallString<256> config(p);
  sys::path::append(config, "kina", "RuntimeConfig.h");
  if (sys::fs::exists(config)) {
    SmallString<256> real;
    dirs.push_back(!sys::fs::real_path(p, real) ? std::string(real)
                                                : std::string(p));
  }
  return dirs;
}

} // namespace

/// libkina_runtime.a: --runtime-lib, else ../lib next to kinac (build and
/// install trees), else the path configured at build time.
std::string findRuntimeLib(const DriverOptions &opts, const char *argv0) {
  if (!opts.runtimeLib.empty())
    return opts.runtimeLib;
  SmallString<256> p(executableDir(argv0));
  sys::path::append(p, "..", "lib", "libkina_runtime.a");
  if (sys::fs::exists(p)) {
    SmallString<256> real;
    if (!sys::fs::real_path(p, real))
      return std::string(real);
    return std::string(p);
  }
  return KINA_DEFAULT_RUNTIME_LIB;
}

/// kina-run: beside kinac (build and install trees), else the one built
/// with this kinac (configured at build time), else "kina-run" for a PATH
/// search.
std::string findKinaRun(const char *argv0) {
  SmallString<256> p(executableDir(argv0));
  sys::path::append(p, "kina-run");
  if (sys::fs::can_execute(p))
    return std::string(p);
  if (sys::fs::can_execute(KINA_DEFAULT_KINA_RUN))
    return KINA_DEFAULT_KINA_RUN;
  return "kina-run";
}

/// The flags a program linking compiled Kina objects needs after them.
std::vector<std::string> runtimeLinkFlags(const std::string &runtimeLib) {
  std::vector<std::string> flags = {runtimeLib};
  SmallVector<StringRef> extra;
  StringRef(KINA_RUNTIME_LINK_LIBS).split(extra, ' ', -1, false);
  for (StringRef f : extra)
    flags.push_back(f.str());
  flags.push_back("-lstdc++");
  flags.push_back("-lm");
  return flags;
}

/// `$CC` if set, else `cc`, looked up on PATH. As make does, $CC may hold
/// words after the program (`gcc -m32`, `ccache gcc`), split at white space.
Expected<CompilerDriver> findCompilerDriver() {
  std::string cc = "cc";
  if (std::optional<std::string> env = sys::Process::GetEnv("CC"))
    if (!StringRef(*env).trim().empty())
      cc = *env;
  SmallVector<StringRef> words;
  StringRef(cc).split(words, ' ', -1, /*KeepEmpty=*/false);
  SmallVector<StringRef> fields;
  for (StringRef w : words) {
    SmallVector<StringRef> parts;
    w.split(parts, '\t', -1, /*KeepEmpty=*/false);
    fields.append(parts.begin(), parts.end());
  }
  ErrorOr<std::string> ccPath = sys::findProgramByName(fields.front());
  if (!ccPath)
    return createStringError(ccPath.getError(),
                             "cannot find the C compiler driver '%s' (set CC "
                             "to choose another)",
                             fields.front().str().c_str());
  CompilerDriver driver{*ccPath, {sys::path::filename(*ccPath).str()}};
  for (StringRef f : ArrayRef<StringRef>(fields).drop_front())
    driver.args.push_back(f.str());
  return driver;
}

/// `kinac a.kir [b.kir] main.c [x.o] -o app`: compile, write the headers
/// into a temporary include directory, link with the C compiler driver.
int linkExecutable(const DriverOptions &opts, const char *argv0,
                   StageTimer &timer, TempFiles &temps,
                   const ToolRunner &tools) {
  Compilation compilation(opts, timer, temps, tools);
  Expected<std::string> includeDir = temps.createDirectory("kinac-include");
  if (!includeDir) {
    driverError(toString(includeDir.takeError()));
    return ExitFailure;
  }
  std::vector<std::string> objects, others;
  for (const std::string &input : opts.inputs) {
    if (!isKir(input)) {
      others.push_back(input);
      continue;
    }
    std::optional<std::string> header =
        compilation.run(input, EmitStage::Header);
    if (!header)
      return ExitFailure;
    SmallString<256> headerPath(*includeDir);
    sys::path::append(headerPath, stem(input) + ".h");
    temps.adopt(headerPath);
    if (Error err = writeOutput(headerPath, *header)) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
    std::optional<std::string> object = compilation.run(input, EmitStage::Obj);
    if (!object)
      return ExitFailure;
    Expected<std::string> objPath = temps.create(stem(input), "o");
    if (!objPath) {
      driverError(toString(objPath.takeError()));
      return ExitFailure;
    }
    if (Error err = writeOutput(*objPath, *object)) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
    objects.push_back(*objPath);
  }

  std::string output = opts.output.empty() ? "a.out" : opts.output;
  if (output == "-") {
    driverError("cannot write an executable to standard output");
    return ExitFailure;
  }
  Expected<CompilerDriver> cc = findCompilerDriver();
  if (!cc) {
    driverError(toString(cc.takeError()));
    return ExitFailure;
  }
  // The executable is linked beside the output and renamed over it; into a
  // temporary file, then copied, when the output is special (`-o
  // /dev/null`); a symbolic link is followed (resolveOutput).
  OutputTarget resolved = resolveOutput(output);
  const std::string &target = resolved.path;
  bool special = resolved.special();
  SmallString<256> tmpOut;
  if (special) {
    Expected<std::string> linked = temps.create("kinac-link", "out");
    if (!linked) {
      driverError(toString(linked.takeError()));
      return ExitFailure;
    }
    tmpOut = *linked;
  } else {
    SmallString<256> model(target);
    model += ".tmp-%%%%%%%%";
    InterruptBlocker blocked;
    if (std::error_code ec = sys::fs::createUniqueFile(model, tmpOut)) {
      driverError("cannot write '" + output + "': " + ec.message());
      return ExitFailure;
    }
    sys::RemoveFileOnSignal(tmpOut);
  }
  auto removeTmp = [&] {
    if (!special) {
      sys::fs::remove(tmpOut);
      sys::DontRemoveFileOnSignal(tmpOut);
    }
  };
  // As make's rules and nvcc: $CPPFLAGS $CFLAGS, kinac's -O level (before
  // $CFLAGS unless given explicitly), the flags of the command line, the
  // generated headers and kina/runtime.h on the include path, $LDFLAGS and
  // the link flags, the inputs and objects, then the libraries (-l,
  // $LDLIBS) and the runtime.
  std::vector<std::string> args = cc->args;
  std::string optFlag = "-O" + std::to_string(opts.optLevel);
  if (!opts.optExplicit)
    args.push_back(optFlag);
  for (const char *var : {"CPPFLAGS", "CFLAGS"})
    for (std::string &f : flagsFromEnvironment(var))
      args.push_back(std::move(f));
  if (opts.optExplicit)
    args.push_back(optFlag);
  args.push_back("-I" + *includeDir);
  args.insert(args.end(), opts.cCompileFlags.begin(), opts.cCompileFlags.end());
  for (const std::string &dir : runtimeIncludeDirs(argv0))
    args.push_back("-I" + dir);
  for (std::string &f : flagsFromEnvironment("LDFLAGS"))
    args.push_back(std::move(f));
  args.insert(args.end(), opts.cLinkFlags.begin(), opts.cLinkFlags.end());
  for (const std::string &o : others)
    args.push_back(o);
  for (const std::string &o : objects)
    args.push_back(o);
  args.insert(args.end(), opts.cLibraries.begin(), opts.cLibraries.end());
  for (std::string &f : flagsFromEnvironment("LDLIBS"))
    args.push_back(std::move(f));
  for (const std::string &f : runtimeLinkFlags(findRuntimeLib(opts, argv0)))
    args.push_back(f);
  args.push_back("-o");
  args.push_back(std::string(tmpOut));
  if (Error err =
          timer.time("link", [&] { return tools.run(cc->path, args); })) {
    removeTmp();
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  if (special) {
    Expected<std::string> bytes = readFile(std::string(tmpOut));
    Error err = bytes ? commitOutput(StagedOutput{target, "", *bytes})
                      : bytes.takeError();
    if (err) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
    return ExitSuccess;
  }
  std::error_code ec = sys::fs::rename(tmpOut, target);
  if (ec) {
    removeTmp();
    driverError("cannot write '" + output + "': " + ec.message());
    return ExitFailure;
  }
  sys::DontRemoveFileOnSignal(tmpOut);
  return ExitSuccess;
}

} // namespace driver
} // namespace kina
