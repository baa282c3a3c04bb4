//===- Shared.cpp - Shared libraries (--emit=shared) ----------------------===//
//
// `kinac --emit=shared m.kir`: a dlopen-able library holding the module's
// object, its JSON manifest behind kina_module_manifest() and the whole
// runtime archive, linked by the system compiler driver (Link.cpp finds
// it); kina-run and docs/integration.md use these libraries.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "kina/Manifest.h"

using namespace llvm;

namespace kina {
namespace driver {

/// `--emit=shared`: the module's object, a C file defining
/// kina_module_manifest() (Manifest.h) and the whole runtime archive, linked
/// by the system compiler driver into a shared library in a temporary file;
/// returns its bytes, which the caller writes atomically like any output.
/// `-Wl,-Bsymbolic` binds the library's references to its own definitions,
/// so several such libraries in one process each use their own runtime even
/// when one of them was loaded RTLD_GLOBAL; `--no-undefined` turns a symbol
/// the runtime lacks into a link error rather than a dlopen failure.
std::optional<std::string> Compilation::buildShared(const std::string &input) {
  auto fail = [](Error err) -> std::optional<std::string> {
    driverError(toString(std::move(err)));
    return std::nullopt;
  };
  std::optional<std::string> manifest = run(input, EmitStage::Manifest);
  if (!manifest)
    return std::nullopt;
  std::optional<std::string> object = run(input, EmitStage::Obj);
  if (!object)
    return std::nullopt;
  Expected<std::string> objPath = temps.create(stem(input), "o");
  if (!objPath)
    return fail(objPath.takeError());
  if (Error err = writeOutput(*objPath, *object))
    return fail(std::move(err));
  Expected<std::string> manifestPath =
      temps.create(stem(input) + "-manifest", "c");
  if (!manifestPath)
    return fail(manifestPath.takeError());
  if (Error err = writeOutput(*manifestPath, manifestCSource(*manifest)))
    return fail(std::move(err));
  Expected<std::string> soPath = temps.create(stem(input), "so");
  if (!soPath)
    return fail(soPath.takeError());
  Expected<CompilerDriver> cc = findCompilerDriver();
  if (!cc)
    return fail(cc.takeError());

  // runtimeLinkFlags: the archive first, then what it needs.
  std::vector<std::string> flags = runtimeLinkFlags(runtimeLib);
  std::vector<std::string> args = cc->args;
  args.insert(args.end(),
              {"-shared", "-fPIC", "-Wl,-Bsymbolic", "-Wl,--no-undefined", "-o",
               *soPath, *manifestPath, *objPath, "-Wl,--whole-archive",
               flags.front(), "-Wl,--no-whole-archive"});
  args.insert(args.end(), flags.begin() + 1, flags.end());
  if (Error err = timer.time("link", [&] { return tools.run(cc->path, args); }))
    return fail(std::move(err));
  Expected<std::string> bytes = readFile(*soPath);
  if (!bytes)
    return fail(bytes.takeError());
  return *bytes;
}

} // namespace driver
} // namespace kina
