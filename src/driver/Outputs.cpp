//===- Outputs.cpp - Atomic outputs of kinac ------------------------------===//
//
// How kinac writes what it produces: to a temporary file beside the
// destination, renamed into place only when complete, so a failed run
// never leaves a partial file or clobbers an existing one; special files
// (`/dev/null`, FIFOs) are written into directly, symbolic links followed.
// Also reading inputs and refusing an output that is one of the inputs.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "llvm/Support/MemoryBuffer.h"

using namespace llvm;

namespace kina {
namespace driver {

/// Resolves `path` for writing: a symbolic link is followed, so the file it
/// points to is replaced and the link kept.
OutputTarget resolveOutput(StringRef path) {
  OutputTarget target{path.str()};
  SmallString<256> real;
  if (sys::fs::is_symlink_file(path) && !sys::fs::real_path(path, real))
    target.path = std::string(real);
  sys::fs::file_status status;
  if (!sys::fs::status(target.path, status))
    target.type = status.type();
  return target;
}

/// Stages `bytes` for `path` (resolveOutput).
Expected<StagedOutput> stageOutput(StringRef path, StringRef bytes) {
  StagedOutput staged;
  OutputTarget target = resolveOutput(path);
  staged.target = target.path;
  if (target.type == sys::fs::file_type::directory_file)
    return createStringError(std::make_error_code(std::errc::is_a_directory),
                             "cannot write '%s': Is a directory",
                             path.str().c_str());
  if (target.special()) {
    staged.bytes = bytes.str();
    return staged;
  }
  SmallString<256> model(staged.target);
  model += ".tmp-%%%%%%%%";
  SmallString<256> tmp;
  int fd;
  {
    // Registered for removal before a byte is written, with no interrupt
    // between its creation and the registration.
    InterruptBlocker blocked;
    if (std::error_code ec = sys::fs::createUniqueFile(model, fd, tmp))
      return createStringError(ec, "cannot write '%s': %s", path.str().c_str(),
                               ec.message().c_str());
    sys::RemoveFileOnSignal(tmp);
  }
  raw_fd_ostream os(fd, /*shouldClose=*/true);
  os << bytes;
  os.close();
  if (os.has_error()) {
    std::error_code ec = os.error();
    os.clear_error();
    sys::fs::remove(tmp);
    sys::DontRemoveFileOnSignal(tmp);
    return createStringError(ec, "cannot write '%s': %s", path.str().c_str(),
                             ec.message().c_str());
  }
  staged.tmp = std::string(tmp);
  return staged;
}

/// Puts the staged output in place: renames the temporary file over the
/// target (removing it on failure), or writes the bytes into the
/// non-regular file.
Error commitOutput(const StagedOutput &staged) {
  if (staged.tmp.empty()) {
    std::error_code ec;
    raw_fd_ostream os(staged.target, ec, sys::fs::OF_None);
    if (!ec) {
      os << staged.bytes;
      os.close();
      ec = os.error();
      os.clear_error();
    }
    if (ec)
      return createStringError(ec, "cannot write '%s': %s",
                               staged.target.c_str(), ec.message().c_str());
    return Error::success();
  }
  std::error_code ec = sys::fs::rename(staged.tmp, staged.target);
  if (ec)
    sys::fs::remove(staged.tmp);
  sys::DontRemoveFileOnSignal(staged.tmp);
  if (ec)
    return createStringError(ec, "cannot write '%s': %s", staged.target.c_str(),
                             ec.message().c_str());
  return Error::success();
}

/// Removes a staged output that will not be committed.
void discardOutput(const StagedOutput &staged) {
  if (!staged.tmp.empty()) {
    sys::fs::remove(staged.tmp);
    sys::DontRemoveFileOnSignal(staged.tmp);
  }
}

/// Writes `bytes` to `path` ("-" is standard output): an existing regular
/// file is replaced only by a complete one (stageOutput).
Error writeOutput(StringRef path, StringRef bytes) {
  if (path == "-") {
    outs() << bytes;
    outs().flush();
    if (outs().has_error()) {
      std::error_code ec = outs().error();
      outs().clear_error();
      return createStringError(ec, "cannot write to standard output: %s",
                               ec.message().c_str());
    }
    return Error::success();
  }
  Expected<StagedOutput> staged = stageOutput(path, bytes);
  if (!staged)
    return staged.takeError();
  return commitOutput(*staged);
}

Expected<std::string> readFile(StringRef path) {
  auto buf = MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buf)
    return createStringError(buf.getError(), "%s",
                             buf.getError().message().c_str());
  return (*buf)->getBuffer().str();
}

/// Refuses an output (or -MF dependency file) that is one of the inputs,
/// which writing would destroy (as gcc: "input file is the same as output
/// file"). Paths that do not exist yet cannot be inputs.
Error checkNotAnInput(const DriverOptions &opts, const std::string &output) {
  std::vector<std::string> outputs = {output};
  if (opts.writeDeps && !opts.depFile.empty())
    outputs.push_back(opts.depFile);
  for (const std::string &out : outputs) {
    if (out == "-")
      continue;
    for (const std::string &input : opts.inputs) {
      bool same = false;
      if (!sys::fs::equivalent(input, out, same) && same)
        return createStringError(inconvertibleErrorCode(),
                                 "input file '" + input +
                                     "' is the same as output file '" + out +
                                     "'");
    }
  }
  return Error::success();
}

std::string stem(StringRef path) { return sys::path::stem(path).str(); }

} // namespace driver
} // namespace kina
