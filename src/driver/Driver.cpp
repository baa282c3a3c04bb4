//===- Driver.cpp - The steps of one run of kinac -------------------------===//
//
// runDriver (Driver.h) as a sequence of named steps: install the interrupt
// and crash handlers, parse the command line (Options.cpp), answer
// --print-link-flags, check the inputs and the options that depend on them,
// then either link an executable (Link.cpp) or compile the one `.kir` input
// to its --emit stage (Compilation.cpp) and write the result with its
// dependency file (Outputs.cpp, DependencyFile.cpp). Each step reports its
// errors itself and the run's exit code comes back up to main; nothing
// here calls exit().
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "kina/Target.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace kina {
namespace driver {
namespace {

/// What the inputs ask for: the `.kir` modules, whether other inputs
/// (C sources, objects, archives) make this a one-step link, and the
/// output path (-o, else the stage's default).
struct InputPlan {
  std::vector<std::string> kirInputs;
  bool link = false;
  std::string output;
};

std::string defaultOutput(EmitStage stage, const std::string &input);

/// Exported symbols are kina_<prefix><fn> and _mlir_ciface_<prefix><fn>,
/// and the header's results struct <prefix><fn>_results: the prefix must
/// keep them all C identifiers.
Error checkSymbolPrefix(const DriverOptions &opts) {
  if (!llvm::all_of(opts.symbolPrefix,
                    [](char c) { return llvm::isAlnum(c) || c == '_'; }) ||
      (!opts.symbolPrefix.empty() && llvm::isDigit(opts.symbolPrefix[0])))
    return createStringError(
        inconvertibleErrorCode(),
        "--symbol-prefix '" + opts.symbolPrefix +
            "' would make invalid C names: use letters, digits and '_', "
            "not starting with a digit");
  return Error::success();
}

/// Sorts the inputs into modules and files to link, warns about C compiler
/// flags that nothing uses, and refuses the combinations kinac does not
/// do: no module, -MD or --verify-diagnostics with more than one module or
/// with a link, an --emit stage with a link, several modules without one,
/// an output that is one of the inputs.
Expected<InputPlan> planInputs(const DriverOptions &opts) {
  auto error = [](const Twine &message) {
    return createStringError(inconvertibleErrorCode(), message);
  };
  if (opts.inputs.empty())
    return error("no input files");
  if (Error err = checkSymbolPrefix(opts))
    return err;
  InputPlan plan;
  for (const std::string &input : opts.inputs) {
    if (isKir(input))
      plan.kirInputs.push_back(input);
    else
      plan.link = true;
  }
  if (plan.kirInputs.empty())
    return error("no .kir input file");
  // The C compiler's flags need a C compile or link, as clang says.
  if (!plan.link)
    for (const std::string &f : opts.cFlagsAsWritten)
      reportDriverWarning("argument unused during compilation: '" + f +
                          "' (C compiler flags apply when kinac links an "
                          "executable)");
  bool several = plan.link || plan.kirInputs.size() > 1;
  if (opts.writeDeps && several)
    return error("-MD applies to the compilation of one .kir file");
  if (opts.verifyDiagnostics && several)
    return error("--verify-diagnostics checks one .kir file at a time");
  if (!opts.stats.empty() && several)
    return error("--stats applies to the compilation of one .kir file");
  if (!opts.stats.empty() &&
      llvm::is_contained({"kir", "mlir", "header", "manifest"}, opts.emit))
    return error("--stats needs a stage that runs the target's pipeline, "
                 "not --emit=" +
                 opts.emit);
  if ((opts.autotune || !opts.tuningCache.empty() ||
       !opts.tuningResults.empty()) &&
      several)
    return error(std::string(opts.autotune ? "--autotune" : "--tuning-cache") +
                 " applies to the compilation of one .kir file");
  if (opts.autotune &&
      llvm::is_contained({"kir", "header", "manifest"}, opts.emit))
    return error("--autotune needs a stage that runs the target's pipeline, "
                 "not --emit=" +
                 opts.emit);
  if (plan.link && opts.emit != "obj")
    return error("--emit=" + opts.emit +
                 " cannot be combined with C sources or objects to link");
  if (!plan.link && plan.kirInputs.size() > 1 && opts.emit != "shared")
    return error("one .kir input at a time (or add C sources to link an "
                 "executable, or --emit=shared for one library)");
  plan.output = opts.output;
  if (plan.output.empty())
    plan.output = plan.link ? "a.out"
                            : defaultOutput(*parseStage(opts.emit),
                                            plan.kirInputs.front());
  if (Error err = checkNotAnInput(opts, plan.output))
    return err;
  if (!opts.statsFile.empty())
    if (Error err = checkNotAnInput(opts, opts.statsFile))
      return err;
  return plan;
}

/// The output path when -o is not given: `<stem>.o`, `.h`, `.json`, `.so`
/// for the binary stages, standard output for the textual ones (dot too).
std::string defaultOutput(EmitStage stage, const std::string &input) {
  switch (stage) {
  case EmitStage::Obj:
    return stem(input) + ".o";
  case EmitStage::Header:
    return stem(input) + ".h";
  case EmitStage::Manifest:
    return stem(input) + ".json";
  case EmitStage::Shared:
    return stem(input) + ".so";
  default:
    return "-";
  }
}

/// `kinac m.kir [--emit=STAGE] [-o OUT]`: compiles the module and writes
/// the stage's output (nothing under --verify-diagnostics, whose result is
/// the exit code).
int runCompile(const DriverOptions &givenOpts,
               const std::vector<std::string> &inputs,
               const std::string &output, const char *argv0, StageTimer &timer,
               TempFiles &temps, const ToolRunner &tools) {
  const std::string &input = inputs.front();
  EmitStage stage = *parseStage(givenOpts.emit);
  // --autotune: the search first (it writes the cache), then the build
  // with its schedules; --tuning-cache alone: the cache's schedules.
  DriverOptions opts = givenOpts;
  std::optional<TuningCache> cache;
  if (opts.autotune && !opts.autotunePlan.empty()) {
    // The plan route's first step: candidates built, nothing measured,
    // nothing else written.
    bool built = timer.time("autotune-plan", [&] {
      return buildTuningPlan(opts, input, opts.autotunePlan, argv0, temps,
                             tools);
    });
    return built ? ExitSuccess : ExitFailure;
  }
  if (opts.autotune) {
    opts.tuningOverride = timer.time(
        "autotune", [&] { return autotune(opts, input, argv0, temps, tools); });
    if (!opts.tuningOverride)
      return ExitFailure;
  } else if (!opts.tuningResults.empty()) {
    opts.tuningOverride = timer.time("tuning-results", [&] {
      return importTuningResults(opts, input, opts.tuningResults, temps, tools);
    });
    if (!opts.tuningOverride)
      return ExitFailure;
  } else if (!opts.tuningCache.empty()) {
    Expected<TuningCache> loaded =
        TuningCache::load(opts.tuningCache, /*mayBeMissing=*/false,
                          /*forWriting=*/false);
    if (!loaded) {
      driverError(toString(loaded.takeError()));
      return ExitFailure;
    }
    cache = std::move(*loaded);
  }
  Compilation compilation(opts, timer, temps, tools);
  compilation.runtimeLib = findRuntimeLib(opts, argv0);
  if (cache)
    compilation.tuningCache = &*cache;
  std::optional<std::string> result =
      stage == EmitStage::Shared && inputs.size() > 1
          ? compilation.buildSharedLibrary(inputs)
          : compilation.run(input, stage);
  if (opts.verifyDiagnostics)
    return compilation.diagnosticsVerified ? ExitSuccess : ExitFailure;
  if (!result)
    return ExitFailure;
  // --stats: to stderr, or staged beside --stats-file and put in place only
  // once the output is written (no partial outputs).
  std::optional<StagedOutput> stats;
  if (!opts.stats.empty()) {
    std::string text =
        opts.stats == "json"
            ? formatStatsJson(*compilation.kernels, input, timer.times(),
                              opts.statsShapes)
            : formatStatsText(*compilation.kernels, timer.times());
    if (opts.statsFile.empty()) {
      errs() << text;
    } else {
      Expected<StagedOutput> staged = stageOutput(opts.statsFile, text);
      if (!staged) {
        driverError(toString(staged.takeError()));
        return ExitFailure;
      }
      stats = std::move(*staged);
    }
  }
  if (Error err = writeResult(opts, input, output, *result, argv0)) {
    if (stats)
      discardOutput(*stats);
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  if (stats)
    if (Error err = commitOutput(*stats)) {
      driverError(toString(std::move(err)));
      return ExitFailure;
    }
  return ExitSuccess;
}

} // namespace
} // namespace driver

int runDriver(int argc, char **argv) {
  using namespace driver;
  installInterruptHandler();
  installCrashReporting(argv[0]);
  registerAllTargets();
  DriverOptions opts;
  if (std::optional<int> rc = parseCommandLine(argc, argv, opts))
    return *rc;
  if (opts.printLinkFlags) {
    outs() << quoteCommand(runtimeLinkFlags(findRuntimeLib(opts, argv[0])))
           << "\n";
    return ExitSuccess;
  }
  Expected<InputPlan> plan = planInputs(opts);
  if (!plan) {
    driverError(toString(plan.takeError()));
    return ExitFailure;
  }

  StageTimer timer(opts.timeStages);
  TempFiles temps(opts.keepTemps);
  ToolRunner tools(opts.verbose);
  // Linking: -o or a.out (linkExecutable); compiling: the plan's output.
  int rc = plan->link ? linkExecutable(opts, argv[0], timer, temps, tools)
                      : runCompile(opts, plan->kirInputs, plan->output, argv[0],
                                   timer, temps, tools);
  timer.print();
  if (rc != ExitSuccess && internalErrorReported())
    rc = kExitInternalError;
  return rc;
}

} // namespace kina
