//===- Shared.cpp - Shared libraries (--emit=shared) ----------------------===//
//
// `kinac --emit=shared m.kir`: a dlopen-able library holding the module's
// object, its JSON manifest behind kina_module_manifest() and the whole
// runtime archive, linked by the system compiler driver (Link.cpp finds
// it); kina-run and docs/integration.md use these libraries. Several
// modules (`kinac a.kir b.kir --emit=shared`) make one library with one
// merged manifest, the seed ffi-bridge's single aggregated library; a
// function name defined in two modules is an error located at both.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "kina/Frontend.h"
#include "kina/Manifest.h"

#include "mlir/IR/MLIRContext.h"

#include <nlohmann/json.hpp>

#include <map>

using namespace llvm;

namespace kina {
namespace driver {

/// `--emit=shared` of one module.
std::optional<std::string> Compilation::buildShared(const std::string &input) {
  return buildSharedLibrary({input});
}

/// "file:line:col" of a function's location ("file" if it has none).
static std::string placeOf(mlir::Location loc, const std::string &file) {
  auto flc = dyn_cast<mlir::FileLineColLoc>(loc);
  if (!flc)
    flc = loc->findInstanceOf<mlir::FileLineColLoc>();
  if (!flc)
    return file;
  return (flc.getFilename().str() + ":" + Twine(flc.getLine()) + ":" +
          Twine(flc.getColumn()))
      .str();
}

/// The manifests of several modules as one: every module's functions in
/// input order, "module" the module names joined by '+'. Fails (with a
/// driver error located at both definitions) when two modules export the
/// same function name.
std::optional<std::string>
Compilation::mergeManifests(const std::vector<std::string> &inputs,
                            const std::vector<std::string> &manifests) {
  using Json = nlohmann::ordered_json;
  Json merged;
  std::map<std::string, std::string> defined; // name -> "file:line:col"
  std::string moduleNames;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Json m = Json::parse(manifests[i]);
    // Locations of the exported functions, from the front end's AST (the
    // module parsed already, for its manifest).
    std::map<std::string, std::string> places;
    {
      Expected<std::string> source = readFile(inputs[i]);
      mlir::MLIRContext ctx;
      ctx.getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
      if (source) {
        auto parsed = parseModule(*source, inputs[i], ctx);
        if (mlir::succeeded(parsed))
          for (const Function &fn : parsed->functions)
            places[fn.name] = placeOf(fn.loc, inputs[i]);
      } else {
        consumeError(source.takeError());
      }
    }
    if (i == 0) {
      merged = m;
      merged["functions"] = Json::array();
    }
    moduleNames += (i ? "+" : "") + m["module"].get<std::string>();
    for (Json &fn : m["functions"]) {
      std::string name = fn["name"].get<std::string>();
      std::string place = places.count(name) ? places[name] : inputs[i];
      auto [it, inserted] = defined.emplace(name, place);
      if (!inserted) {
        driverError(place + ": function @" + name + " is already defined at " +
                    it->second + "; one library cannot export both");
        return std::nullopt;
      }
      merged["functions"].push_back(std::move(fn));
    }
  }
  merged["module"] = moduleNames;
  return merged.dump(2) + "\n";
}

/// `--emit=shared`: each module's object, a C file defining
/// kina_module_manifest() (Manifest.h; the merged manifest for several
/// modules) and the whole runtime archive, linked by the system compiler
/// driver into a shared library in a temporary file; returns its bytes,
/// which the caller writes atomically like any output.
/// `-Wl,-Bsymbolic` binds the library's references to its own definitions,
/// so several such libraries in one process each use their own runtime even
/// when one of them was loaded RTLD_GLOBAL; `--no-undefined` turns a symbol
/// the runtime lacks into a link error rather than a dlopen failure.
std::optional<std::string>
Compilation::buildSharedLibrary(const std::vector<std::string> &inputs) {
  auto fail = [](Error err) -> std::optional<std::string> {
    driverError(toString(std::move(err)));
    return std::nullopt;
  };
  std::vector<std::string> manifests;
  for (const std::string &input : inputs) {
    std::optional<std::string> manifest = run(input, EmitStage::Manifest);
    if (!manifest)
      return std::nullopt;
    manifests.push_back(*manifest);
  }
  std::optional<std::string> manifest = manifests.front();
  if (inputs.size() > 1) {
    manifest = mergeManifests(inputs, manifests);
    if (!manifest)
      return std::nullopt;
  }
  std::vector<std::string> objPaths;
  for (const std::string &input : inputs) {
    std::optional<std::string> object = run(input, EmitStage::Obj);
    if (!object)
      return std::nullopt;
    Expected<std::string> objPath = temps.create(stem(input), "o");
    if (!objPath)
      return fail(objPath.takeError());
    if (Error err = writeOutput(*objPath, *object))
      return fail(std::move(err));
    objPaths.push_back(*objPath);
  }
  const std::string &input = inputs.front();
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
  args.insert(args.end(), {"-shared", "-fPIC", "-Wl,-Bsymbolic",
                           "-Wl,--no-undefined", "-o", *soPath, *manifestPath});
  args.insert(args.end(), objPaths.begin(), objPaths.end());
  args.insert(args.end(),
              {"-Wl,--whole-archive", flags.front(), "-Wl,--no-whole-archive"});
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
