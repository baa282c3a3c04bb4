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

} // namespace

std::shared_ptr<const TuningParameters>
autotune(const DriverOptions &opts, const std::string &input, const char *argv0,
         TempFiles &temps, const ToolRunner &tools) {
  // The tunable ops, from MLIRGen's module.
  DriverOptions probeOptions = opts;
  probeOptions.stats.clear();
  probeOptions.tuningOverride = nullptr;
  StageTimer quiet(false);
  Compilation probe(probeOptions, quiet, temps, tools);
  if (!probe.run(input, EmitStage::Mlir))
    return nullptr;
  std::vector<TunableOp> ops = probe.tunables;
  for (const TunableOp &op : ops)
    if (Error err = checkMeasurable(op, opts, input)) {
      driverError(toString(std::move(err)));
      return nullptr;
    }
  std::optional<TuningCache> cache;
  if (!opts.tuningCache.empty()) {
    Expected<TuningCache> loaded = TuningCache::load(
        opts.tuningCache, /*mayBeMissing=*/true, /*forWriting=*/true);
    if (!loaded) {
      driverError(toString(loaded.takeError()));
      return nullptr;
    }
    cache = std::move(*loaded);
  }

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
    if (cache) {
      TuningCacheEntry entry;
      entry.module = probe.moduleName;
      entry.key = op.key;
      entry.space = op.space;
      entry.spaceVersion = space.version;
      entry.function = op.function;
      entry.shapes = op.shapes;
      entry.dtype = op.dtype;
      for (const std::string &s : op.symbols)
        entry.bindings[s] = opts.tuneShapes.at(s);
      entry.identity = identity;
      entry.schedule = bestSchedule;
      entry.medianSeconds = bestSeconds;
      entry.defaultSeconds = defaultSeconds;
      entry.generator = "kinac " KINA_VERSION;
      cache->put(std::move(entry));
    }
  }
  if (cache)
    if (Error err = cache->save()) {
      driverError("cannot write the tuning cache: " + toString(std::move(err)));
      return nullptr;
    }
  return best;
}

} // namespace driver
} // namespace kina
