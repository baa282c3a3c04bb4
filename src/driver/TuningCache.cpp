//===- TuningCache.cpp - The JSON tuning cache of --autotune --------------===//
//
// The file `--tuning-cache` names (docs/autotune.md):
//
//   {"format": "kinac-tuning-cache", "version": 1, "entries": [
//     {"module": "mm", "key": "matmul@3:8", "space": "cpu.matmul",
//      "space_version": 1, "function": "mm",
//      "shapes": "tensor<?x64xf32>, tensor<64x32xf32>", "dtype": "f32",
//      "bindings": {"N": 1797}, "target": "cpu", "processor": "znver4",
//      "features": "+avx,+avx2,+avx512f,+fma", "mcpu": "",
//      "schedule": {"vbits": 256, "mr": 4, ...},
//      "median_s": 1.2e-4, "default_median_s": 1.5e-4,
//      "generator": "kinac 0.1.0"}, ...]}
//
// Entries for a kernel class of the cuda target (key and space
// "cuda.elementwise") name no module, function, shapes or dtype: they
// apply to every module built for their processor (the --gpu-arch).
// An entry is used when its module, key, space version, target, processor,
// features, --mcpu, shapes and dtype are this build's (and its bindings
// those of --tune-shape, when given); the others for this module's ops are
// reported and ignored. Written with nlohmann/json's ordered_json (fields
// in the documented order, entries sorted), so a cache's bytes depend only
// on its contents.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"
#include "kina/Passes.h"

#include "kina/Pipeline.h"
#include "kina/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Diagnostics.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/TargetParser/Host.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <tuple>

#ifndef KINA_VERSION
#define KINA_VERSION "0.0.0"
#endif

namespace kina {
namespace driver {

namespace {

using Json = nlohmann::ordered_json;

constexpr const char *kFormat = "kinac-tuning-cache";
constexpr int64_t kVersion = 1;

/// The host's vector features that change which schedule is fastest.
constexpr const char *kFeatures[] = {"sse4.2",  "avx",      "avx2",     "fma",
                                     "avx512f", "avx512bw", "avx512vl", "neon",
                                     "sve",     "sve2"};

std::string typeText(mlir::Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return s;
}

/// An error about the cache file `path`, at `where` (a JSON path such as
/// entries[2].schedule.mr).
Error cacheError(const std::string &path, const std::string &where,
                 const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           path + ": malformed tuning cache: " + where + ": " +
                               message.str());
}

/// The entry of `j` (entries[index]), or an error naming the field.
Expected<TuningCacheEntry> parseEntry(const Json &j, const std::string &path,
                                      size_t index) {
  std::string at = "entries[" + std::to_string(index) + "]";
  if (!j.is_object())
    return cacheError(path, at, "not an object");
  TuningCacheEntry e;
  auto str = [&](const char *field, std::string &out, bool required) -> Error {
    auto it = j.find(field);
    if (it == j.end())
      return required ? cacheError(path, at, Twine("no field '") + field + "'")
                      : Error::success();
    if (!it->is_string())
      return cacheError(path, at + "." + field, "not a string");
    out = it->get<std::string>();
    return Error::success();
  };
  auto ints = [&](const char *field, auto &&set) -> Error {
    auto it = j.find(field);
    if (it == j.end())
      return Error::success();
    if (!it->is_object())
      return cacheError(path, at + "." + field, "not an object");
    for (const auto &item : it->items()) {
      if (!item.value().is_number_integer())
        return cacheError(path, at + "." + field + "." + item.key(),
                          "not an integer");
      set(item.key(), item.value().template get<int64_t>());
    }
    return Error::success();
  };
  for (auto [field, out, required] :
       {std::tuple<const char *, std::string *, bool>{"key", &e.key, true},
        {"space", &e.space, true},
        {"target", &e.identity.target, true},
        {"processor", &e.identity.processor, true},
        {"module", &e.module, false},
        {"function", &e.function, false},
        {"shapes", &e.shapes, false},
        {"dtype", &e.dtype, false},
        {"features", &e.identity.features, false},
        {"mcpu", &e.identity.mcpu, false},
        {"gpu", &e.identity.gpu, false},
        {"generator", &e.generator, false}})
    if (Error err = str(field, *out, required))
      return err;
  auto version = j.find("space_version");
  if (version == j.end() || !version->is_number_integer())
    return cacheError(path, at + ".space_version",
                      version == j.end() ? "missing" : "not an integer");
  e.spaceVersion = version->get<int64_t>();
  if (!j.contains("schedule"))
    return cacheError(path, at, "no field 'schedule'");
  if (Error err = ints("schedule", [&](const std::string &n, int64_t v) {
        e.schedule.params[n] = v;
      }))
    return err;
  if (Error err = ints("bindings", [&](const std::string &n, int64_t v) {
        e.bindings[n] = v;
      }))
    return err;
  for (auto [field, out] :
       {std::pair<const char *, double *>{"median_s", &e.medianSeconds},
        {"default_median_s", &e.defaultSeconds}}) {
    auto it = j.find(field);
    if (it == j.end())
      continue;
    if (!it->is_number())
      return cacheError(path, at + "." + field, "not a number");
    *out = it->get<double>();
  }
  // A known space at its version must hold a valid schedule; another
  // version or an unknown space is stale, reported when selecting.
  if (const ScheduleSpace *space = lookupSpace(e.space))
    if (space->version == e.spaceVersion)
      if (std::string why = space->check(e.schedule); !why.empty())
        return cacheError(path, at + ".schedule", why);
  return e;
}

Json entryJson(const TuningCacheEntry &e) {
  Json j = Json::object();
  if (!e.module.empty())
    j["module"] = e.module;
  j["key"] = e.key;
  j["space"] = e.space;
  j["space_version"] = e.spaceVersion;
  if (!e.function.empty())
    j["function"] = e.function;
  if (!e.shapes.empty())
    j["shapes"] = e.shapes;
  if (!e.dtype.empty())
    j["dtype"] = e.dtype;
  if (!e.bindings.empty()) {
    Json b = Json::object();
    for (const auto &[name, size] : e.bindings)
      b[name] = size;
    j["bindings"] = std::move(b);
  }
  j["target"] = e.identity.target;
  j["processor"] = e.identity.processor;
  j["features"] = e.identity.features;
  j["mcpu"] = e.identity.mcpu;
  if (!e.identity.gpu.empty())
    j["gpu"] = e.identity.gpu;
  Json s = Json::object();
  for (const auto &[name, value] : e.schedule.params)
    s[name] = value;
  j["schedule"] = std::move(s);
  if (e.medianSeconds > 0)
    j["median_s"] = e.medianSeconds;
  if (e.defaultSeconds > 0)
    j["default_median_s"] = e.defaultSeconds;
  if (!e.generator.empty())
    j["generator"] = e.generator;
  return j;
}

/// Whether two entries describe the same op, identity and sizes (put()
/// replaces one by the other).
bool sameSlot(const TuningCacheEntry &a, const TuningCacheEntry &b) {
  auto tie = [](const TuningCacheEntry &e) {
    return std::tie(e.module, e.key, e.space, e.shapes, e.dtype, e.bindings,
                    e.identity.target, e.identity.processor,
                    e.identity.features, e.identity.mcpu, e.identity.gpu);
  };
  return tie(a) == tie(b);
}

/// Why `e` does not apply to `op` under `identity` and `tuneShapes`, or an
/// empty string when it does.
std::string mismatch(const TuningCacheEntry &e, const TunableOp &op,
                     const TuningIdentity &identity,
                     const ShapeBindings &tuneShapes) {
  const ScheduleSpace *space = lookupSpace(e.space);
  if (!space || e.space != op.space)
    return "its schedule space '" + e.space + "' is unknown to this kinac";
  if (space->version != e.spaceVersion)
    return "it was recorded with version " + std::to_string(e.spaceVersion) +
           " of '" + e.space + "', this kinac reads version " +
           std::to_string(space->version);
  auto differs = [](const char *what, const std::string &theirs,
                    const std::string &ours) {
    return std::string("it is for ") + what + " '" + theirs + "', not '" +
           ours + "'";
  };
  if (e.identity.processor != identity.processor)
    return differs("processor", e.identity.processor, identity.processor);
  if (e.identity.features != identity.features)
    return differs("processor features", e.identity.features,
                   identity.features);
  if (e.identity.mcpu != identity.mcpu)
    return differs("--mcpu", e.identity.mcpu, identity.mcpu);
  if (!identity.gpu.empty() && e.identity.gpu != identity.gpu)
    return differs("GPU", e.identity.gpu, identity.gpu);
  if (!op.function.empty()) {
    if (e.shapes != op.shapes)
      return differs("operand types", e.shapes, op.shapes);
    if (e.dtype != op.dtype)
      return differs("element type", e.dtype, op.dtype);
  }
  for (const auto &[name, size] : e.bindings) {
    auto it = tuneShapes.find(name);
    if (it != tuneShapes.end() && it->second != size)
      return "it was tuned at " + name + "=" + std::to_string(size) +
             ", --tune-shape gives " + name + "=" + std::to_string(it->second);
  }
  return "";
}

/// Fills in the function `symbol` (an MLIR symbol, with the symbol prefix)
/// of `tunable`: its Kina name, whether it is exported, and the symbolic
/// dims of its arguments.
void describeTunableFunction(StringRef symbol, const Module &ast,
                             const DriverOptions &opts, TunableOp &tunable) {
  StringRef name = symbol;
  name.consume_front(opts.symbolPrefix);
  tunable.function = name.str();
  const Function *f = ast.lookup(tunable.function);
  if (!f)
    return;
  tunable.exported = !f->isPrivate;
  std::set<std::string> symbols;
  for (const Param &p : f->params)
    for (const Dim &d : p.type.dims) {
      if (d.kind == Dim::Symbolic)
        symbols.insert(d.symbol);
      tunable.unnamedDims |= d.kind == Dim::Dynamic;
    }
  tunable.symbols.assign(symbols.begin(), symbols.end());
}

} // namespace

Error jsonSyntaxError(const std::string &path, const std::string &text,
                      size_t byte, std::string what, const char *kind) {
  // The line and column of the byte the parser stopped at (1-based).
  size_t end = std::min<size_t>(byte ? byte - 1 : 0, text.size());
  size_t line = 1 + std::count(text.begin(), text.begin() + end, '\n');
  size_t lineStart = text.rfind('\n', end ? end - 1 : 0);
  size_t col =
      lineStart == std::string::npos || end == 0 ? end + 1 : end - lineStart;
  // nlohmann's "[json.exception.parse_error.101] parse error at line 1,
  // column 5: syntax error ...": keep what follows the position.
  size_t colon = what.find(": ", what.find("column"));
  if (colon != std::string::npos)
    what = what.substr(colon + 2);
  return createStringError(inconvertibleErrorCode(),
                           path + ":" + std::to_string(line) + ":" +
                               std::to_string(col) + ": malformed " + kind +
                               ": " + what);
}

std::vector<TunableOp> findCudaTunables(mlir::ModuleOp module,
                                        const Module &ast,
                                        const DriverOptions &opts) {
  // The gpu-map stage on a copy, its diagnostics swallowed (the build
  // proper reports them), recording the keys the mappers look up.
  const Target *target = lookupTarget("cuda");
  TargetOptions probe;
  probe.optLevel = opts.optLevel;
  probe.symbolPrefix = opts.symbolPrefix;
  probe.gpuArch = opts.gpuArch;
  probe.cudaPath = opts.cudaPath;
  probe.allowTf32 = opts.allowTf32;
  probe.gpuMatmul = opts.gpuMatmul;
  probe.stopAfter = "mlir-gpu";
  probe.tuningSites = std::make_shared<TuningSites>();
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  std::vector<TunableOp> ops;
  {
    mlir::ScopedDiagnosticHandler quiet(
        module.getContext(),
        [](mlir::Diagnostic &) { return mlir::success(); });
    if (!target ||
        mlir::failed(lowerToLLVMDialect(*copy, *target, probe, nullptr, {})))
      return ops;
  }
  for (const TuningSite &site : *probe.tuningSites) {
    TunableOp op;
    op.key = site.key;
    op.space = site.space;
    op.shapes = site.shapes;
    op.dtype = site.dtype;
    describeTunableFunction(site.symbol, ast, opts, op);
    if (!ast.lookup(op.function))
      continue; // an entry wrapper's copy: no Kina function to measure
    ops.push_back(op);
  }
  TunableOp elementwiseClass;
  elementwiseClass.key = elementwiseClass.space = "cuda.elementwise";
  ops.push_back(elementwiseClass);
  return ops;
}

std::vector<TunableOp> findTunables(mlir::ModuleOp module, const Module &ast,
                                    const DriverOptions &opts) {
  std::vector<TunableOp> ops;
  if (opts.target == "cuda") {
    TunableOp op;
    op.key = op.space = "cuda.elementwise";
    ops.push_back(op);
    return ops;
  }
  auto describeFunction = [&](mlir::Operation *op, TunableOp &tunable) {
    if (auto fn = op->getParentOfType<mlir::func::FuncOp>())
      describeTunableFunction(fn.getSymName(), ast, opts, tunable);
  };
  auto operandTypes = [](mlir::ValueRange operands) {
    std::string shapes;
    for (mlir::Value operand : operands)
      shapes += (shapes.empty() ? "" : ", ") + typeText(operand.getType());
    return shapes;
  };
  module.walk([&](mlir::Operation *each) {
    TunableOp op;
    if (matchKernelMatmul(each)) {
      // 2-D, batched and broadcast-batch f32/f64 matmuls: kina-matmul-kernel.
      auto matmul = cast<mlir::linalg::LinalgOp>(each);
      op.space = "cpu.matmul";
      op.dtype = typeText(
          mlir::getElementTypeOrSelf(matmul.getDpsInits()[0].getType()));
      op.shapes = operandTypes(matmul.getDpsInputs());
    } else if (auto generic = dyn_cast<mlir::linalg::GenericOp>(each)) {
      // A reduction (reduce_*, or a step of softmax, layer_norm, ...): the
      // first of its statement's generics stands for the statement, whose
      // generics share the key (kina-tile-and-vectorize).
      if (generic.getNumReductionLoops() == 0 || generic.getDpsInputs().empty())
        return;
      op.space = "cpu.vectorize";
      op.dtype = typeText(
          mlir::getElementTypeOrSelf(generic.getDpsInputs()[0].getType()));
      op.shapes = operandTypes(generic.getDpsInputs());
    } else {
      return;
    }
    op.key = op.space == "cpu.vectorize" ? tuningKey(each, kVectorizeKeyKind)
                                         : tuningKey(each, "matmul");
    if (op.key.empty() || llvm::any_of(ops, [&](const TunableOp &other) {
          return other.key == op.key;
        }))
      return;
    describeFunction(each, op);
    ops.push_back(op);
  });
  return ops;
}

TuningIdentity currentIdentity(const DriverOptions &opts) {
  TuningIdentity id;
  id.target = opts.target;
  if (opts.target == "cuda") {
    id.processor = opts.gpuArch;
    id.gpu = opts.gpuModel;
    return id;
  }
  id.processor = sys::getHostCPUName().str();
  StringMap<bool> host = sys::getHostCPUFeatures();
  for (const char *f : kFeatures) {
    auto it = host.find(f);
    if (it != host.end() && it->second)
      id.features += (id.features.empty() ? "+" : ",+") + std::string(f);
  }
  id.mcpu = opts.mcpu;
  return id;
}

Expected<TuningCache> TuningCache::load(const std::string &path,
                                        bool mayBeMissing, bool forWriting) {
  TuningCache cache;
  cache.file = path;
  if (mayBeMissing && !sys::fs::exists(path))
    return cache;
  Expected<std::string> text = readFile(path);
  if (!text)
    return createStringError(inconvertibleErrorCode(),
                             "cannot read the tuning cache '" + path +
                                 "': " + toString(text.takeError()));
  Json root;
  try {
    root = Json::parse(*text);
  } catch (const Json::parse_error &e) {
    return jsonSyntaxError(path, *text, e.byte, e.what(), "tuning cache");
  }
  if (!root.is_object())
    return cacheError(path, "top level", "not a JSON object");
  auto format = root.find("format");
  if (format == root.end() || !format->is_string() ||
      format->get<std::string>() != kFormat)
    return cacheError(path, "format",
                      Twine("not \"") + kFormat + "\" (not a tuning cache)");
  auto version = root.find("version");
  if (version == root.end() || !version->is_number_integer())
    return cacheError(path, "version", "missing or not an integer");
  if (version->get<int64_t>() != kVersion) {
    std::string what = "tuning cache '" + path + "' has version " +
                       std::to_string(version->get<int64_t>()) +
                       ", this kinac reads version " + std::to_string(kVersion);
    if (forWriting)
      return createStringError(inconvertibleErrorCode(),
                               what + "; --autotune would overwrite it");
    reportDriverWarning(what + "; every entry is ignored");
    return cache;
  }
  auto entries = root.find("entries");
  if (entries == root.end() || !entries->is_array())
    return cacheError(path, "entries", "missing or not an array");
  for (size_t i = 0; i < entries->size(); ++i) {
    Expected<TuningCacheEntry> e = parseEntry((*entries)[i], path, i);
    if (!e)
      return e.takeError();
    cache.list.push_back(std::move(*e));
  }
  return cache;
}

TuningParameters TuningCache::select(const std::string &module,
                                     const std::vector<TunableOp> &ops,
                                     const TuningIdentity &identity,
                                     const ShapeBindings &tuneShapes) const {
  TuningParameters chosen;
  for (const TunableOp &op : ops) {
    std::vector<std::pair<size_t, std::string>> rejected;
    bool found = false;
    for (size_t i = 0; i < list.size() && !found; ++i) {
      const TuningCacheEntry &e = list[i];
      // Another target's entries, and another module's, are not this
      // build's business.
      if (e.key != op.key || e.identity.target != identity.target)
        continue;
      if (!op.function.empty() ? e.module != module
                               : !e.module.empty() && e.module != module)
        continue;
      std::string why = mismatch(e, op, identity, tuneShapes);
      if (why.empty()) {
        chosen.set(op.key, e.schedule);
        found = true;
      } else {
        rejected.emplace_back(i, why);
      }
    }
    if (!found)
      for (const auto &[index, why] : rejected)
        reportDriverWarning("tuning cache '" + file + "': entry " +
                            std::to_string(index) + " (" + op.key +
                            (module.empty() ? "" : " of module @" + module) +
                            ") is ignored: " + why);
  }
  // This module's entries for ops it no longer has (the source changed).
  for (size_t i = 0; i < list.size(); ++i) {
    const TuningCacheEntry &e = list[i];
    if (e.module.empty() || e.module != module ||
        e.identity.target != identity.target ||
        llvm::any_of(ops, [&](const TunableOp &op) { return op.key == e.key; }))
      continue;
    reportDriverWarning("tuning cache '" + file + "': entry " +
                        std::to_string(i) + " (" + e.key + " of module @" +
                        module + ") is ignored: the module has no tunable " +
                        "op at that position (stale: the source changed?)");
  }
  return chosen;
}

void TuningCache::put(TuningCacheEntry entry) {
  for (TuningCacheEntry &e : list)
    if (sameSlot(e, entry)) {
      e = std::move(entry);
      return;
    }
  list.push_back(std::move(entry));
}

Error TuningCache::save() const {
  std::vector<const TuningCacheEntry *> sorted;
  for (const TuningCacheEntry &e : list)
    sorted.push_back(&e);
  // Entries in a stable order: by module, key, target, processor, sizes.
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const TuningCacheEntry *a, const TuningCacheEntry *b) {
                     return std::tie(a->module, a->key, a->identity.target,
                                     a->identity.processor, a->bindings) <
                            std::tie(b->module, b->key, b->identity.target,
                                     b->identity.processor, b->bindings);
                   });
  Json entries = Json::array();
  for (const TuningCacheEntry *e : sorted)
    entries.push_back(entryJson(*e));
  Json root = Json::object();
  root["format"] = kFormat;
  root["version"] = kVersion;
  root["entries"] = std::move(entries);
  return writeOutput(file, root.dump(2) + "\n");
}

} // namespace driver
} // namespace kina
