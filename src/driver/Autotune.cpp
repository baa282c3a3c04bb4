//===- Autotune.cpp - kinac --autotune: measure schedules, keep the best --===//
//
// The search of `--autotune` (docs/autotune.md). The module is lowered to
// MLIR once to find its tunable ops (findTunables). For each op, in source
// order, the candidates of its schedule space (kina/Tuning.h) are tried
// stage by stage: every combination of one stage's parameters, the others
// at the best values found so far, the default schedule first. A candidate
// is the whole module compiled as a shared library (--emit=shared) with
// that op's candidate and the other ops' best schedules; kina-run times its
// function in a process of its own (`--bench`: random inputs at
// --tune-shape's sizes, warm-up calls, the median of the timed calls), so
// a candidate that crashes or fails ends only that process and is skipped.
// The search stops starting candidates once --autotune-budget seconds have
// passed (each timing gets at most the time left); the best found so far
// is kept. Progress goes to stderr once the search has run a second.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "llvm/Support/FormatVariadic.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <functional>
#include <map>

#ifndef KINA_VERSION
#define KINA_VERSION "0.0.0"
#endif

namespace kina {
namespace driver {

namespace {

using Clock = std::chrono::steady_clock;

/// `N=1797,M=64` for the symbols `names` as `bindings` gives them.
std::string shapeArgument(const std::vector<std::string> &names,
                          const ShapeBindings &bindings) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ",") + n + "=" + std::to_string(bindings.at(n));
  return s;
}

/// Every schedule that differs from `base` in the parameters of `stage`
/// only, over all combinations of their values; `base` itself first.
std::vector<Schedule> stageCandidates(const ScheduleSpace &space,
                                      const Schedule &base, int stage) {
  std::vector<Schedule> out = {base};
  for (const ScheduleParameter &p : space.parameters) {
    if (p.stage != stage)
      continue;
    std::vector<Schedule> next;
    for (const Schedule &s : out)
      for (int64_t v : p.values) {
        Schedule c = s;
        c.params[p.name] = v;
        if (!llvm::is_contained(next, c))
          next.push_back(c);
      }
    out = std::move(next);
  }
  // The base first, so a stage begins with the best so far.
  auto it = llvm::find(out, base);
  if (it != out.end())
    std::rotate(out.begin(), it, it + 1);
  return out;
}

/// The module `input` built as a shared library (--emit=shared) with the
/// schedules `params`: its bytes, or an error when it does not compile.
Expected<std::string> compileCandidate(const DriverOptions &opts,
                                       const std::string &input,
                                       const char *argv0, TempFiles &temps,
                                       const ToolRunner &tools,
                                       const TuningParameters &params) {
  DriverOptions candidate = opts;
  candidate.emit = "shared";
  candidate.stats.clear();
  candidate.writeDeps = false;
  candidate.autotune = false;
  candidate.tuningOverride = std::make_shared<TuningParameters>(params);
  StageTimer quiet(false);
  Compilation compilation(candidate, quiet, temps, tools);
  compilation.runtimeLib = findRuntimeLib(opts, argv0);
  std::optional<std::string> library =
      compilation.run(input, EmitStage::Shared);
  if (!library)
    return createStringError(inconvertibleErrorCode(),
                             "the candidate did not compile");
  return std::move(*library);
}

/// The cache entry recording `schedule` for `op` of module `module`,
/// measured at --tune-shape's sizes on `identity`.
TuningCacheEntry makeEntry(const std::string &module, const TunableOp &op,
                           const DriverOptions &opts,
                           const TuningIdentity &identity,
                           const Schedule &schedule, double seconds,
                           double defaultSeconds) {
  TuningCacheEntry entry;
  entry.module = module;
  entry.key = op.key;
  entry.space = op.space;
  entry.spaceVersion = lookupSpace(op.space)->version;
  entry.function = op.function;
  entry.shapes = op.shapes;
  entry.dtype = op.dtype;
  for (const std::string &s : op.symbols)
    entry.bindings[s] = opts.tuneShapes.at(s);
  entry.identity = identity;
  entry.schedule = schedule;
  entry.medianSeconds = seconds;
  entry.defaultSeconds = defaultSeconds;
  entry.generator = "kinac " KINA_VERSION;
  return entry;
}

/// The search's state and its measuring.
class Search {
public:
  Search(const DriverOptions &opts, const std::string &input, const char *argv0,
         TempFiles &temps, const ToolRunner &tools)
      : opts(opts), input(input), argv0(argv0), temps(temps), tools(tools),
        start(Clock::now()) {}

  /// Seconds since the search began.
  double elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }
  /// Whether the budget (if any) is spent.
  bool spent() const {
    return opts.autotuneBudget > 0 && elapsed() >= opts.autotuneBudget;
  }

  /// The median seconds of `op`'s function built with `params`; an error
  /// when the candidate does not compile or its run fails.
  Expected<double> measure(const TunableOp &op,
                           const TuningParameters &params) {
    Expected<std::string> library =
        compileCandidate(opts, input, argv0, temps, tools, params);
    if (!library)
      return library.takeError();
    Expected<std::string> path = temps.create("kinac-autotune", "so");
    if (!path)
      return path.takeError();
    if (Error err = writeOutput(*path, *library))
      return err;
    double left = opts.autotuneBudget > 0
                      ? std::max(0.05, opts.autotuneBudget - elapsed())
                      : 2.0;
    std::vector<std::string> args = {"kina-run",      *path,
                                     op.function,     "--bench",
                                     "--warmup",      "2",
                                     "--repeat",      "9",
                                     "--max-seconds", std::to_string(left)};
    if (!op.symbols.empty()) {
      args.push_back("--shape");
      args.push_back(shapeArgument(op.symbols, opts.tuneShapes));
    }
    std::string output;
    if (Error err = tools.run(findKinaRun(argv0), args, &output))
      return err;
    // The last line of the output is kina-run's JSON.
    StringRef text = StringRef(output).rtrim();
    StringRef last = text.substr(text.rfind('\n') + 1);
    nlohmann::json j = nlohmann::json::parse(last.str(), nullptr, false);
    if (!j.is_object() || !j.contains("median_s") || !j["median_s"].is_number())
      return createStringError(inconvertibleErrorCode(),
                               "kina-run printed no timing: " + output);
    return j["median_s"].get<double>();
  }

  /// Prints a progress line once the search has run a second.
  void progress(const TunableOp &op, size_t tried, const Schedule &candidate,
                const std::string &outcome, const Schedule &best,
                double bestSeconds) {
    if (elapsed() < 1.0)
      return;
    errs() << format("kinac: autotune: %s (@%s): %zu tried, ", op.key.c_str(),
                     op.function.c_str(), tried)
           << "[" << candidate.str() << "] " << outcome
           << format("; best %.3f ms", bestSeconds * 1e3) << " [" << best.str()
           << "]\n";
  }

  const DriverOptions &opts;
  const std::string &input;
  const char *argv0;
  TempFiles &temps;
  const ToolRunner &tools;
  Clock::time_point start;
};

/// Checks that every op can be measured: an exported function, every
/// symbolic dim bound by --tune-shape, no unnamed dim.
Error checkMeasurable(const TunableOp &op, const DriverOptions &opts,
                      const std::string &input) {
  if (!op.exported)
    return createStringError(
        inconvertibleErrorCode(),
        "%s: --autotune: the %s of @%s cannot be measured: the function is "
        "private (kina-run calls exported functions)",
        input.c_str(), op.key.c_str(), op.function.c_str());
  if (op.unnamedDims)
    return createStringError(
        inconvertibleErrorCode(),
        "%s: --autotune: @%s has an argument with an unnamed dim ('?'), "
        "which --tune-shape cannot size; name the dim (e.g. f32[N, 64])",
        input.c_str(), op.function.c_str());
  for (const std::string &s : op.symbols)
    if (!opts.tuneShapes.count(s))
      return createStringError(
          inconvertibleErrorCode(),
          "%s: --autotune: @%s has the symbolic dim %s, which --tune-shape "
          "does not size (e.g. --tune-shape %s=1024)",
          input.c_str(), op.function.c_str(), s.c_str(), s.c_str());
  return Error::success();
}

/// The module name and tunable ops of `input` (MLIRGen's module; for
/// cuda, the kernels as mapped), each measurable (else reported: false).
/// cuda's kernel class, which names no function, is left out.
bool probeTunables(const DriverOptions &opts, const std::string &input,
                   TempFiles &temps, const ToolRunner &tools,
                   std::string &moduleName, std::vector<TunableOp> &ops) {
  DriverOptions probeOptions = opts;
  probeOptions.stats.clear();
  probeOptions.tuningOverride = nullptr;
  probeOptions.autotune = true; // cuda: find the mapped kernels
  StageTimer quiet(false);
  Compilation probe(probeOptions, quiet, temps, tools);
  if (!probe.run(input, EmitStage::Mlir))
    return false;
  moduleName = probe.moduleName;
  ops.clear();
  for (const TunableOp &op : probe.tunables) {
    if (op.function.empty())
      continue;
    if (Error err = checkMeasurable(op, opts, input)) {
      driverError(toString(std::move(err)));
      return false;
    }
    ops.push_back(op);
  }
  return true;
}

/// --tuning-cache for writing (created when missing), or none.
bool openCacheForWriting(const DriverOptions &opts,
                         std::optional<TuningCache> &cache) {
  if (opts.tuningCache.empty())
    return true;
  Expected<TuningCache> loaded = TuningCache::load(
      opts.tuningCache, /*mayBeMissing=*/true, /*forWriting=*/true);
  if (!loaded) {
    driverError(toString(loaded.takeError()));
    return false;
  }
  cache = std::move(*loaded);
  return true;
}

std::shared_ptr<const TuningParameters>
autotuneCuda(const DriverOptions &opts, const std::string &input,
             const char *argv0, TempFiles &temps, const ToolRunner &tools);

} // namespace

std::shared_ptr<const TuningParameters>
autotune(const DriverOptions &opts, const std::string &input, const char *argv0,
         TempFiles &temps, const ToolRunner &tools) {
  if (opts.target == "cuda")
    return autotuneCuda(opts, input, argv0, temps, tools);
  // The tunable ops, from MLIRGen's module.
  std::string moduleName;
  std::vector<TunableOp> ops;
  if (!probeTunables(opts, input, temps, tools, moduleName, ops))
    return nullptr;
  std::optional<TuningCache> cache;
  if (!openCacheForWriting(opts, cache))
    return nullptr;

  Search search(opts, input, argv0, temps, tools);
  auto best = std::make_shared<TuningParameters>();
  TuningIdentity identity = currentIdentity(opts);
  for (const TunableOp &op : ops) {
    const ScheduleSpace &space = *lookupSpace(op.space);
    Schedule bestSchedule = space.defaults();
    double bestSeconds = 0, defaultSeconds = 0;
    std::map<std::string, double> measured; // by Schedule::str()
    size_t tried = 0;
    int lastStage = 0;
    for (const ScheduleParameter &p : space.parameters)
      lastStage = std::max(lastStage, p.stage);
    bool stop = false;
    for (int stage = 0; stage <= lastStage && !stop; ++stage) {
      for (const Schedule &candidate :
           stageCandidates(space, bestSchedule, stage)) {
        if (measured.count(candidate.str()))
          continue;
        // The default of the first op is measured whatever the budget.
        if (search.spent() && (tried > 0 || &op != &ops.front())) {
          stop = true;
          break;
        }
        TuningParameters params = *best;
        params.set(op.key, candidate);
        Expected<double> seconds = search.measure(op, params);
        ++tried;
        if (!seconds) {
          std::string why = toString(seconds.takeError());
          if (candidate == space.defaults()) {
            driverError(input + ": --autotune: the default schedule of " +
                        op.key + " (@" + op.function +
                        ") cannot be measured: " + why);
            return nullptr;
          }
          measured[candidate.str()] = -1;
          search.progress(op, tried, candidate, "failed (skipped)",
                          bestSchedule, bestSeconds);
          continue;
        }
        measured[candidate.str()] = *seconds;
        if (candidate == space.defaults())
          defaultSeconds = *seconds;
        if (bestSeconds == 0 || *seconds < bestSeconds) {
          bestSeconds = *seconds;
          bestSchedule = candidate;
        }
        search.progress(op, tried, candidate,
                        formatv("{0:F3} ms", *seconds * 1e3).str(),
                        bestSchedule, bestSeconds);
      }
    }
    if (tried == 0)
      continue; // the budget ended before this op: its default stays
    best->set(op.key, bestSchedule);
    if (search.elapsed() >= 1.0 || opts.verbose)
      errs() << format("kinac: autotune: %s (@%s): best of %zu: %.3f ms ",
                       op.key.c_str(), op.function.c_str(), tried,
                       bestSeconds * 1e3)
             << "[" << bestSchedule.str() << "]"
             << format(", default %.3f ms\n", defaultSeconds * 1e3);
    if (cache)
      cache->put(makeEntry(moduleName, op, opts, identity, bestSchedule,
                           bestSeconds, defaultSeconds));
  }
  if (cache)
    if (Error err = cache->save()) {
      driverError("cannot write the tuning cache: " + toString(std::move(err)));
      return nullptr;
    }
  return best;
}

//===----------------------------------------------------------------------===//
// cuda: the plan route (build here, measure on the GPU, import)
//===----------------------------------------------------------------------===//

namespace {

using OrderedJson = nlohmann::ordered_json;

constexpr const char *kPlanFormat = "kinac-tuning-plan";
constexpr const char *kResultsFormat = "kinac-tuning-results";
/// Calls of each candidate: untimed, then timed (at most), and the seconds
/// the timed calls may take (kina-run --bench's --warmup, --repeat,
/// --max-seconds).
constexpr int kPlanWarmup = 3, kPlanRepeat = 15;
constexpr double kPlanMaxSeconds = 2.0;

/// The schedules a plan holds for a space: the defaults first, then, stage
/// by stage, every combination of the stage's parameters with the others
/// at their defaults (no measurement decides between stages: the plan is
/// measured elsewhere in one go).
std::vector<Schedule> planSchedules(const ScheduleSpace &space) {
  std::vector<Schedule> out;
  int lastStage = 0;
  for (const ScheduleParameter &p : space.parameters)
    lastStage = std::max(lastStage, p.stage);
  for (int stage = 0; stage <= lastStage; ++stage)
    for (const Schedule &c : stageCandidates(space, space.defaults(), stage))
      if (!llvm::is_contained(out, c))
        out.push_back(c);
  return out;
}

OrderedJson scheduleJson(const Schedule &s) {
  OrderedJson j = OrderedJson::object();
  for (const auto &[name, value] : s.params)
    j[name] = value;
  return j;
}

/// `library` with the random part of the manifest's temporary C file
/// name (Shared.cpp: `<stem>-manifest-XXXXXX.c`, kept in the symbol table
/// as the object's FILE symbol) zeroed, so that two builds of the same
/// code compare equal.
std::string withoutTempNames(std::string library) {
  static constexpr StringLiteral kMarker = "-manifest-";
  for (size_t at = library.find(kMarker.data(), 0, kMarker.size());
       at != std::string::npos;
       at = library.find(kMarker.data(), at + 1, kMarker.size())) {
    size_t random = at + kMarker.size();
    if (random + 8 <= library.size() &&
        library.compare(random + 6, 2, ".c") == 0)
      library.replace(random, 6, "000000");
  }
  return library;
}

/// An error about the results file `path` at the JSON path `where`.
Error resultsError(const std::string &path, const std::string &where,
                   const Twine &message) {
  return createStringError(inconvertibleErrorCode(),
                           path + ": malformed tuning results: " + where +
                               ": " + message.str());
}

/// One measured kernel of a results file.
struct MeasuredOp {
  TunableOp op;
  ShapeBindings bindings;
  Schedule best, defaults;
  double bestSeconds = 0, defaultSeconds = 0;
};

/// What a results file says: the module, the GPU, each kernel's fastest.
struct Results {
  std::string module, gpuName, gpuArch;
  std::vector<MeasuredOp> ops;
};

/// Reads kina-run --tune-plan's results (TunePlan.cpp for the format).
Expected<Results> readResults(const std::string &path) {
  Expected<std::string> text = readFile(path);
  if (!text)
    return createStringError(inconvertibleErrorCode(),
                             "cannot read the tuning results '" + path +
                                 "': " + toString(text.takeError()));
  OrderedJson root;
  try {
    root = OrderedJson::parse(*text);
  } catch (const OrderedJson::parse_error &e) {
    return jsonSyntaxError(path, *text, e.byte, e.what(), "tuning results");
  }
  auto need = [&](const OrderedJson &j, const std::string &at, const char *name,
                  auto check,
                  const char *kind) -> Expected<const OrderedJson *> {
    auto it = j.find(name);
    if (it == j.end())
      return resultsError(path, at, Twine("no field '") + name + "'");
    if (!check(*it))
      return resultsError(path, (at.empty() ? "" : at + ".") + name,
                          Twine("not ") + kind);
    return &*it;
  };
  auto isString = [](const OrderedJson &j) { return j.is_string(); };
  auto isInt = [](const OrderedJson &j) { return j.is_number_unsigned(); };
  auto isArray = [](const OrderedJson &j) { return j.is_array(); };
  auto isObject = [](const OrderedJson &j) { return j.is_object(); };
  if (!root.is_object() || root.value("format", "") != kResultsFormat)
    return resultsError(path, "format",
                        Twine("not \"") + kResultsFormat +
                            "\" (not kina-run --tune-plan's results)");
  if (root.value("version", 0) != 1)
    return resultsError(path, "version", "not 1");
  Results r;
  Expected<const OrderedJson *> plan =
      need(root, "", "plan", isObject, "an object");
  if (!plan)
    return plan.takeError();
  if ((*plan)->value("format", "") != kPlanFormat)
    return resultsError(path, "plan.format",
                        Twine("not \"") + kPlanFormat + "\"");
  Expected<const OrderedJson *> gpu =
      need(root, "", "gpu", isObject, "an object");
  if (!gpu)
    return gpu.takeError();
  for (auto [field, out] :
       {std::pair<const char *, std::string *>{"name", &r.gpuName},
        {"arch", &r.gpuArch}}) {
    Expected<const OrderedJson *> v =
        need(**gpu, "gpu", field, isString, "a string");
    if (!v)
      return v.takeError();
    *out = (*v)->get<std::string>();
  }
  Expected<const OrderedJson *> module =
      need(**plan, "plan", "module", isString, "a string");
  if (!module)
    return module.takeError();
  r.module = (*module)->get<std::string>();
  Expected<const OrderedJson *> ops =
      need(**plan, "plan", "ops", isArray, "an array");
  if (!ops)
    return ops.takeError();
  for (size_t i = 0; i < (*ops)->size(); ++i) {
    const OrderedJson &j = (**ops)[i];
    std::string at = "plan.ops[" + std::to_string(i) + "]";
    if (!j.is_object())
      return resultsError(path, at, "not an object");
    MeasuredOp m;
    for (auto [field, out] :
         {std::pair<const char *, std::string *>{"key", &m.op.key},
          {"space", &m.op.space},
          {"function", &m.op.function},
          {"shapes", &m.op.shapes},
          {"dtype", &m.op.dtype}}) {
      Expected<const OrderedJson *> v =
          need(j, at, field, isString, "a string");
      if (!v)
        return v.takeError();
      *out = (*v)->get<std::string>();
    }
    const ScheduleSpace *space = lookupSpace(m.op.space);
    if (!space)
      return resultsError(path, at + ".space",
                          "'" + m.op.space + "' is unknown to this kinac");
    Expected<const OrderedJson *> version =
        need(j, at, "space_version", isInt, "a non-negative integer");
    if (!version)
      return version.takeError();
    if ((*version)->get<int64_t>() != space->version)
      return resultsError(path, at + ".space_version",
                          "the plan was built with version " +
                              (*version)->dump() + " of '" + m.op.space +
                              "', this kinac reads version " +
                              std::to_string(space->version));
    if (j.contains("bindings")) {
      if (!j["bindings"].is_object())
        return resultsError(path, at + ".bindings", "not an object");
      for (const auto &b : j["bindings"].items()) {
        if (!b.value().is_number_unsigned())
          return resultsError(path, at + ".bindings." + b.key(),
                              "not a non-negative integer");
        m.bindings[b.key()] = b.value().get<int64_t>();
        m.op.symbols.push_back(b.key());
      }
    }
    m.defaults = space->defaults();
    r.ops.push_back(std::move(m));
  }
  Expected<const OrderedJson *> candidates =
      need(**plan, "plan", "candidates", isArray, "an array");
  if (!candidates)
    return candidates.takeError();
  Expected<const OrderedJson *> measurements =
      need(root, "", "measurements", isArray, "an array");
  if (!measurements)
    return measurements.takeError();
  for (size_t i = 0; i < (*measurements)->size(); ++i) {
    const OrderedJson &j = (**measurements)[i];
    std::string at = "measurements[" + std::to_string(i) + "]";
    if (!j.is_object())
      return resultsError(path, at, "not an object");
    Expected<const OrderedJson *> index =
        need(j, at, "candidate", isInt, "a non-negative integer");
    if (!index)
      return index.takeError();
    size_t c = (*index)->get<size_t>();
    if (c >= (*candidates)->size())
      return resultsError(path, at + ".candidate",
                          "the plan has no candidate " + std::to_string(c));
    if (j.contains("error") || j.contains("skipped"))
      continue; // failed on the GPU or not measured: not a choice
    Expected<const OrderedJson *> median = need(
        j, at, "median_s", [](const OrderedJson &v) { return v.is_number(); },
        "a number");
    if (!median)
      return median.takeError();
    double seconds = (*median)->get<double>();
    if (!(seconds > 0))
      return resultsError(path, at + ".median_s", "not a positive number");
    const OrderedJson &cand = (**candidates)[c];
    std::string cat = "plan.candidates[" + std::to_string(c) + "]";
    Expected<const OrderedJson *> op =
        need(cand, cat, "op", isInt, "a non-negative integer");
    if (!op)
      return op.takeError();
    size_t o = (*op)->get<size_t>();
    if (o >= r.ops.size())
      return resultsError(path, cat + ".op",
                          "the plan has no op " + std::to_string(o));
    Expected<const OrderedJson *> sched =
        need(cand, cat, "schedule", isObject, "an object");
    if (!sched)
      return sched.takeError();
    Schedule schedule;
    for (const auto &p : (*sched)->items()) {
      if (!p.value().is_number_integer())
        return resultsError(path, cat + ".schedule." + p.key(),
                            "not an integer");
      schedule.params[p.key()] = p.value().get<int64_t>();
    }
    MeasuredOp &m = r.ops[o];
    if (std::string why = lookupSpace(m.op.space)->check(schedule);
        !why.empty())
      return resultsError(path, cat + ".schedule", why);
    if (schedule == m.defaults)
      m.defaultSeconds = seconds;
    if (m.bestSeconds == 0 || seconds < m.bestSeconds) {
      m.bestSeconds = seconds;
      m.best = schedule;
    }
  }
  return r;
}

std::shared_ptr<const TuningParameters>
autotuneCuda(const DriverOptions &opts, const std::string &input,
             const char *argv0, TempFiles &temps, const ToolRunner &tools) {
  // A GPU here? Else the plan route.
  std::string info;
  if (Error err =
          tools.run(findKinaRun(argv0), {"kina-run", "--gpu-info"}, &info)) {
    info = toString(std::move(err));
    driverError(
        input +
        ": --target=cuda --autotune measures on this machine's GPU, "
        "and kina-run --gpu-info finds none (" +
        StringRef(info).trim().str() +
        "); build the candidates here with --autotune-plan DIR, measure "
        "them on the GPU machine with `kina-run --tune-plan DIR/plan.json`, "
        "then build with --tuning-results DIR/results.json (docs/autotune.md)");
    return nullptr;
  }
  SmallString<128> dir;
  if (std::error_code ec =
          sys::fs::createUniqueDirectory("kinac-autotune", dir)) {
    driverError("--autotune: cannot create a temporary directory: " +
                ec.message());
    return nullptr;
  }
  auto cleanUp = [&] {
    if (!opts.keepTemps)
      sys::fs::remove_directories(dir);
  };
  std::string plan = (dir + "/plan.json").str();
  if (!buildTuningPlan(opts, input, dir.str().str(), argv0, temps, tools)) {
    cleanUp();
    return nullptr;
  }
  std::string output;
  if (Error err = tools.run(findKinaRun(argv0),
                            {"kina-run", "--tune-plan", plan}, &output)) {
    driverError(input + ": --autotune: measuring the candidates failed: " +
                toString(std::move(err)));
    cleanUp();
    return nullptr;
  }
  if (opts.verbose)
    errs() << output;
  std::shared_ptr<const TuningParameters> tuned = importTuningResults(
      opts, input, (dir + "/results.json").str(), temps, tools);
  cleanUp();
  return tuned;
}

} // namespace

bool buildTuningPlan(const DriverOptions &opts, const std::string &input,
                     const std::string &dir, const char *argv0,
                     TempFiles &temps, const ToolRunner &tools) {
  std::string moduleName;
  std::vector<TunableOp> ops;
  if (!probeTunables(opts, input, temps, tools, moduleName, ops))
    return false;
  if (std::error_code ec = sys::fs::create_directories(dir)) {
    driverError("--autotune-plan: cannot create '" + dir +
                "': " + ec.message());
    return false;
  }
  Search clock(opts, input, argv0, temps, tools);
  OrderedJson opsJson = OrderedJson::array(), candidates = OrderedJson::array();
  size_t built = 0, same = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const TunableOp &op = ops[i];
    const ScheduleSpace &space = *lookupSpace(op.space);
    OrderedJson o = OrderedJson::object();
    o["key"] = op.key;
    o["space"] = op.space;
    o["space_version"] = space.version;
    o["function"] = op.function;
    o["shapes"] = op.shapes;
    o["dtype"] = op.dtype;
    OrderedJson bindings = OrderedJson::object();
    for (const std::string &sym : op.symbols)
      bindings[sym] = opts.tuneShapes.at(sym);
    o["bindings"] = std::move(bindings);
    opsJson.push_back(std::move(o));
    std::vector<std::string> libraries; // this op's, to drop duplicates
    for (const Schedule &schedule : planSchedules(space)) {
      bool isDefault = schedule == space.defaults();
      if (!isDefault && clock.spent())
        break; // --autotune-budget: the defaults of every op still go in
      TuningParameters params;
      params.set(op.key, schedule);
      Expected<std::string> library =
          compileCandidate(opts, input, argv0, temps, tools, params);
      if (!library) {
        std::string why = toString(library.takeError());
        if (isDefault) {
          driverError(input + ": --autotune: the default schedule of " +
                      op.key + " (@" + op.function +
                      ") does not compile: " + why);
          return false;
        }
        errs() << "kinac: autotune: " << op.key << " (@" << op.function
               << "): [" << schedule.str() << "] " << why << " (skipped)\n";
        continue;
      }
      std::string code = withoutTempNames(*library);
      if (llvm::is_contained(libraries, code)) {
        ++same; // the schedule changed nothing in this kernel
        continue;
      }
      std::string file = formatv("c{0:D3}.so", candidates.size()).str();
      if (Error err = writeOutput(dir + "/" + file, *library)) {
        driverError("--autotune-plan: " + toString(std::move(err)));
        return false;
      }
      libraries.push_back(std::move(code));
      OrderedJson c = OrderedJson::object();
      c["op"] = i;
      c["schedule"] = scheduleJson(schedule);
      c["library"] = file;
      c["default"] = isDefault;
      candidates.push_back(std::move(c));
      ++built;
      if (clock.elapsed() >= 1.0 || opts.verbose)
        errs() << "kinac: autotune: " << op.key << " (@" << op.function
               << "): built [" << schedule.str() << "] as " << file << "\n";
    }
  }
  OrderedJson plan = OrderedJson::object();
  plan["format"] = kPlanFormat;
  plan["version"] = 1;
  plan["module"] = moduleName;
  plan["source"] = input;
  plan["target"] = "cuda";
  plan["gpu_arch"] = opts.gpuArch;
  plan["generator"] = "kinac " KINA_VERSION;
  plan["warmup"] = kPlanWarmup;
  plan["repeat"] = kPlanRepeat;
  plan["max_seconds"] = kPlanMaxSeconds;
  // What --autotune-budget leaves for measuring (kina-run --tune-plan
  // stops starting non-default candidates once it is spent).
  if (opts.autotuneBudget > 0)
    plan["budget_s"] = std::max(0.0, opts.autotuneBudget - clock.elapsed());
  plan["ops"] = std::move(opsJson);
  plan["candidates"] = std::move(candidates);
  if (Error err = writeOutput(dir + "/plan.json", plan.dump(2) + "\n")) {
    driverError("--autotune-plan: " + toString(std::move(err)));
    return false;
  }
  errs() << formatv("kinac: autotune: wrote {0}/plan.json: {1} kernels, {2} "
                    "candidates ({3} left out: the same code as another)\n",
                    dir, ops.size(), built, same);
  return true;
}

std::shared_ptr<const TuningParameters>
importTuningResults(const DriverOptions &opts, const std::string &input,
                    const std::string &resultsPath, TempFiles &temps,
                    const ToolRunner &tools) {
  Expected<Results> results = readResults(resultsPath);
  if (!results) {
    driverError(toString(results.takeError()));
    return nullptr;
  }
  std::string moduleName;
  std::vector<TunableOp> ops;
  DriverOptions probeOptions = opts;
  // The sizes the results were measured at (a kernel's function needs
  // them to be measurable).
  for (const MeasuredOp &m : results->ops)
    for (const auto &[name, size] : m.bindings)
      probeOptions.tuneShapes[name] = size;
  if (!probeTunables(probeOptions, input, temps, tools, moduleName, ops))
    return nullptr;
  if (results->module != moduleName) {
    driverError(resultsPath + ": the tuning results are for module @" +
                results->module + ", not @" + moduleName + " (" + input + ")");
    return nullptr;
  }
  std::optional<TuningCache> cache;
  if (!openCacheForWriting(opts, cache))
    return nullptr;
  TuningIdentity measured;
  measured.target = "cuda";
  measured.processor = results->gpuArch;
  measured.gpu = results->gpuName;
  TuningIdentity identity = currentIdentity(opts);
  bool foreign = measured.processor != identity.processor ||
                 (!identity.gpu.empty() && identity.gpu != measured.gpu);
  if (foreign)
    reportDriverWarning(
        "tuning results '" + resultsPath + "' were measured on '" +
        measured.gpu + "' (" + measured.processor + "), this build is for " +
        identity.processor +
        (identity.gpu.empty() ? "" : " '" + identity.gpu + "'") +
        ": they are recorded but not used");
  auto tuned = std::make_shared<TuningParameters>();
  for (MeasuredOp &m : results->ops) {
    if (m.bestSeconds == 0) {
      reportDriverWarning("tuning results '" + resultsPath + "': " + m.op.key +
                          " (@" + m.op.function +
                          ") has no successful measurement; it keeps its "
                          "defaults");
      continue;
    }
    bool known = llvm::any_of(ops, [&](const TunableOp &op) {
      return op.key == m.op.key && op.space == m.op.space &&
             op.shapes == m.op.shapes && op.dtype == m.op.dtype;
    });
    if (!known) {
      reportDriverWarning("tuning results '" + resultsPath + "': " + m.op.key +
                          " (" + m.op.space + ", " + m.op.shapes +
                          ") is no kernel of this build (stale: the source "
                          "or the options changed?); ignored");
      continue;
    }
    if (!foreign)
      tuned->set(m.op.key, m.best);
    if (opts.verbose || cache)
      errs() << format("kinac: autotune: %s (@%s): best %.3f ms ",
                       m.op.key.c_str(), m.op.function.c_str(),
                       m.bestSeconds * 1e3)
             << "[" << m.best.str() << "]"
             << format(", default %.3f ms\n", m.defaultSeconds * 1e3);
    if (cache) {
      DriverOptions sized = opts;
      sized.tuneShapes = m.bindings;
      cache->put(makeEntry(moduleName, m.op, sized, measured, m.best,
                           m.bestSeconds, m.defaultSeconds));
    }
  }
  if (cache)
    if (Error err = cache->save()) {
      driverError("cannot write the tuning cache: " + toString(std::move(err)));
      return nullptr;
    }
  return tuned;
}

} // namespace driver
} // namespace kina
