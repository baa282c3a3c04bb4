//===- DependencyFile.cpp - Make dependency files (-MD) -------------------===//
//
// `-MD`, `-MF FILE`, `-MT TARGET`, `-MP`: the Make rule a C compiler
// writes beside its object (`OUTPUT: INPUT KINAC`), escaped as GCC and
// Clang escape paths, written together with the output so that neither is
// replaced when the other cannot be written.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

using namespace llvm;

namespace kina {
namespace driver {

/// A path as a Make rule writes it: spaces and '#' escaped with a
/// backslash, '$' doubled (as GCC and Clang write dependency files).
std::string makeEscape(StringRef path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#')
      out += '\\';
    else if (c == '$')
      out += '$';
    out += c;
  }
  return out;
}

/// -MD: the dependency file's path (default: the output with its extension
/// replaced by `.d`) and text, `target: input kinac`, so Make rebuilds
/// `target` when the module or the compiler changes; with -MP also an empty
/// rule for kinac, so a removed compiler does not stop Make. The target
/// defaults to the output file. writeResult writes it.
Expected<std::pair<std::string, std::string>>
dependencyFile(const DriverOptions &opts, const std::string &input,
               const std::string &output, const char *argv0) {
  std::string depFile = opts.depFile;
  if (depFile.empty()) {
    if (output == "-")
      return createStringError(inconvertibleErrorCode(),
                               "-MD with output to standard output needs -MF");
    SmallString<256> p(output);
    sys::path::replace_extension(p, ".d");
    depFile = std::string(p);
  }
  std::vector<std::string> targets = opts.depTargets;
  if (targets.empty()) {
    if (output == "-")
      return createStringError(inconvertibleErrorCode(),
                               "-MD with output to standard output needs -MT");
    targets.push_back(output);
  }
  static int anchor;
  std::string kinac = sys::fs::getMainExecutable(argv0, &anchor);
  std::string text;
  for (size_t i = 0; i < targets.size(); ++i)
    text += (i ? " " : "") + makeEscape(targets[i]);
  text += ": " + makeEscape(input) + " \\\n  " + makeEscape(kinac) + "\n";
  if (opts.depPhony)
    text += "\n" + makeEscape(kinac) + ":\n";
  return std::make_pair(depFile, text);
}

/// Writes a compilation's output and, with -MD, its dependency file: the
/// dependency file is staged first, so if either cannot be written neither
/// existing file is replaced (a failed run must not leave a fresh-looking
/// output for make to trust).
Error writeResult(const DriverOptions &opts, const std::string &input,
                  const std::string &output, StringRef bytes,
                  const char *argv0) {
  if (!opts.writeDeps)
    return writeOutput(output, bytes);
  auto dep = dependencyFile(opts, input, output, argv0);
  if (!dep)
    return dep.takeError();
  Expected<StagedOutput> depStaged = stageOutput(dep->first, dep->second);
  if (!depStaged)
    return depStaged.takeError();
  if (Error err = writeOutput(output, bytes)) {
    discardOutput(*depStaged);
    return err;
  }
  return commitOutput(*depStaged);
}

} // namespace driver
} // namespace kina
