//===- Options.cpp - The command line of kinac ----------------------------===//
//
// kinac's options (DriverOptions) from its command line: CLI11 for the
// options of `kinac --help`; before it, the flags CLI11 cannot parse are
// taken out (-MD -MF -MT -MP, and the C compiler driver's -I -D -U -L -l
// -W... -f... -m... for one-step links) and the aliases C compilers spell
// (`-shared`, a bare `-O`) are replaced by the options they stand for, in a
// copy of the arguments.
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "kina/Target.h"

#include <CLI/CLI.hpp>

#ifndef KINA_VERSION
#define KINA_VERSION "0.0.0"
#endif

using namespace llvm;

namespace kina {
namespace driver {

namespace {

/// Takes the C-compiler-style dependency flags out of `args` (CLI11 cannot
/// parse multi-letter single-dash options): -MD or -MMD (the same: a module
/// has no includes), -MF FILE, -MT TARGET (repeatable), -MP, each with its
/// value attached or in the next argument. Scanning stops at `--`.
Error extractDependencyFlags(std::vector<std::string> &args,
                             DriverOptions &opts) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef a(args[i]);
    if (a == "--") {
      kept.insert(kept.end(), args.begin() + i, args.end());
      break;
    }
    if (a == "-MD" || a == "-MMD") {
      opts.writeDeps = true;
    } else if (a == "-MP") {
      opts.depPhony = true;
    } else if (a.starts_with("-MF") || a.starts_with("-MT")) {
      std::string value = a.drop_front(3).str();
      if (value.empty()) {
        if (i + 1 == args.size())
          return createStringError(inconvertibleErrorCode(), "%s needs a value",
                                   a.str().c_str());
        value = args[++i];
      }
      if (a.starts_with("-MF"))
        opts.depFile = value;
      else
        opts.depTargets.push_back(value);
    } else {
      kept.push_back(args[i]);
    }
  }
  if (!opts.writeDeps &&
      (!opts.depFile.empty() || !opts.depTargets.empty() || opts.depPhony))
    return createStringError(inconvertibleErrorCode(),
                             "-MF, -MT and -MP need -MD");
  args = std::move(kept);
  return Error::success();
}

/// Takes the C compiler driver's flags out of `args` for a one-step link,
/// as nvcc and clang accept them: -I -D -U -L -l (the value attached or in
/// the next argument), -Wl,... -Wa,... -Wp,... and other -W... warnings,
/// -std=..., -f..., -m... (kinac's own is --mcpu, with two dashes), -g...,
/// -pthread, and -Xcompiler ARG / -Xlinker ARG for anything else. -O stays
/// for the option parser: it sets kinac's level and the C compile's.
/// kinac's options that take a separate value keep it (`-o -lfoo.o` is an
/// output name). Scanning stops at `--`.
Error extractCompilerFlags(std::vector<std::string> &args,
                           DriverOptions &opts) {
  static const StringRef separateValue[] = {"-o",
                                            "--emit",
                                            "--target",
                                            "--mcpu",
                                            "--symbol-prefix",
                                            "--mlir-translate",
                                            "--opt",
                                            "--llc",
                                            "--runtime-lib",
                                            "--stats-file",
                                            "--stats-shape",
                                            "--tuning-cache",
                                            "--tune-shape",
                                            "--autotune-budget",
                                            "--autotune-plan",
                                            "--tuning-results",
                                            "--gpu-model",
                                            "--diagnostics-format",
                                            "--abi-version-for-testing",
                                            "--debug-force-internal-error"};
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef a(args[i]);
    if (i == 0) {
      kept.push_back(args[i]);
      continue;
    }
    if (a == "--") {
      kept.insert(kept.end(), args.begin() + i, args.end());
      break;
    }
    if (llvm::is_contained(separateValue, a)) {
      kept.push_back(args[i]);
      if (i + 1 < args.size())
        kept.push_back(args[++i]);
      continue;
    }
    // The flags with a value: attached (-Idir) or the next argument (-I dir).
    auto withValue = [&](StringRef flag,
                         std::vector<std::string> &into) -> Expected<bool> {
      if (!a.starts_with(flag))
        return false;
      std::string value = a.drop_front(flag.size()).str();
      opts.cFlagsAsWritten.push_back(a.str());
      if (value.empty()) {
        if (i + 1 == args.size())
          return createStringError(inconvertibleErrorCode(),
                                   "argument to '%s' is missing (expected 1 "
                                   "value)",
                                   flag.str().c_str());
        value = args[++i];
        opts.cFlagsAsWritten.back() += " " + value;
      }
      into.push_back(flag.str() + value);
      return true;
    };
    bool taken = false;
    for (auto [flag, list] : {std::pair<StringRef, std::vector<std::string> *>{
                                  "-I", &opts.cCompileFlags},
                              {"-D", &opts.cCompileFlags},
                              {"-U", &opts.cCompileFlags},
                              {"-L", &opts.cLinkFlags},
                              {"-l", &opts.cLibraries}}) {
      Expected<bool> took = withValue(flag, *list);
      if (!took)
        return took.takeError();
      if ((taken = *took))
        break;
    }
    if (taken)
      continue;
    if (a == "-Xcompiler" || a == "-Xlinker") {
      if (i + 1 == args.size())
        return createStringError(inconvertibleErrorCode(),
                                 "argument to '%s' is missing (expected 1 "
                                 "value)",
                                 a.str().c_str());
      std::string value = args[++i];
      opts.cFlagsAsWritten.push_back(a.str() + " " + value);
      if (a == "-Xcompiler") {
        opts.cCompileFlags.push_back(value);
      } else {
        opts.cLinkFlags.push_back("-Xlinker");
        opts.cLinkFlags.push_back(value);
      }
      continue;
    }
    bool link = a.starts_with("-Wl,");
    bool compile = !link && ((a.starts_with("-W") && a.size() > 2) ||
                             a.starts_with("-std=") ||
                             (a.starts_with("-f") && a.size() > 2) ||
                             (a.starts_with("-m") && a.size() > 2) ||
                             a.starts_with("-g") || a == "-pthread");
    if (link || compile) {
      opts.cFlagsAsWritten.push_back(a.str());
      (link ? opts.cLinkFlags : opts.cCompileFlags).push_back(a.str());
      continue;
    }
    kept.push_back(args[i]);
  }
  args = std::move(kept);
  return Error::success();
}

/// The aliases C compilers spell, as the options they stand for: `-shared`
/// is --emit=shared, a bare `-O` is -O1 (as for gcc and clang). Stops at
/// `--`. A bare `--stats` is `--stats=text`.
void spellAliases(std::vector<std::string> &args) {
  for (std::string &arg : args) {
    if (arg == "--")
      break;
    if (arg == "-shared")
      arg = "--emit=shared";
    else if (arg == "-O")
      arg = "-O1";
    else if (arg == "--stats")
      arg = "--stats=text";
  }
}

/// The options of `kinac --help`, bound to the fields of `opts`.
void addOptions(CLI::App &app, DriverOptions &opts) {
  app.add_option("inputs", opts.inputs,
                 "Input files: .kir modules; with .c/.cc/.cpp/.o/.a files "
                 "too, kinac links an executable");
  app.add_option("-o", opts.output,
                 "Output file ('-' for standard output). Defaults: obj "
                 "<stem>.o, header <stem>.h, manifest <stem>.json, shared "
                 "<stem>.so, text stages standard output, link a.out");
  app.add_option("--emit", opts.emit,
                 "What to produce: kir|mlir|mlir-gpu (cuda: outlined "
                 "kernels)|ptx (cuda: the kernels' PTX)|mlir-llvm|llvm "
                 "(after LLVM's -O pipeline, as llc gets it)|asm|obj|header|"
                 "manifest (JSON signatures)|shared (a dlopen-able library "
                 "with the runtime; also -shared)|dot (Graphviz: the "
                 "program's ops and the kernels made of them)")
      ->check(
          CLI::IsMember({"kir", "mlir", "mlir-gpu", "ptx", "mlir-llvm", "llvm",
                         "asm", "obj", "header", "manifest", "shared", "dot"}));
  app.add_option("-O", opts.optLevel, "Optimisation level 0..3 (default 2)")
      ->check(CLI::Range(0, 3));
  std::vector<std::string> targetNames;
  for (const Target *target : allTargets())
    targetNames.push_back(target->name().str());
  app.add_option("--target", opts.target,
                 "Code generation target: " + knownTargetNames())
      ->check(CLI::IsMember(targetNames));
  app.add_option("--gpu-arch", opts.gpuArch,
                 "cuda: the SM to compile kernels for, sm_XX or sm_XXa as "
                 "LLVM's NVPTX back end names it (default sm_90)");
  app.add_option("--cuda-path", opts.cudaPath,
                 "cuda: the CUDA Toolkit root holding bin/ptxas (default: "
                 "$CUDA_PATH, else /usr/local/cuda)");
  app.add_flag("--allow-tf32", opts.allowTf32,
               "cuda: allow TF32 tensor-core math in f32 matmuls (cuBLASLt's "
               "CUBLAS_COMPUTE_32F_FAST_TF32; default: strict f32)");
  app.add_option("--gpu-matmul", opts.gpuMatmul,
                 "cuda: the route of float matmuls: cublaslt (the runtime "
                 "calls cuBLASLt, the generated kernel is the fallback; "
                 "default) or kernel (the generated kernel only)")
      ->check(CLI::IsMember({"cublaslt", "kernel"}));
  app.add_option("--mcpu", opts.mcpu,
                 "Processor to generate code for, as llc names it (e.g. "
                 "x86-64-v3, znver3, skylake-avx512), or 'native' for this "
                 "machine's (default: the generic processor, which runs "
                 "everywhere)");
  app.add_option("--symbol-prefix", opts.symbolPrefix,
                 "Prefix every exported symbol of the module");
  app.add_option("--mlir-translate", opts.mlirTranslate,
                 "Path of mlir-translate (else $KINA_LLVM_BIN, else the one "
                 "found at build time)");
  app.add_option("--opt", opts.opt,
                 "Path of LLVM's opt, which runs LLVM's -O1..-O3 pipeline "
                 "before llc (else $KINA_LLVM_BIN, else the one found at "
                 "build time)");
  app.add_option("--llc", opts.llc,
                 "Path of llc (else $KINA_LLVM_BIN, else the one found at "
                 "build time)");
  app.add_option("--runtime-lib", opts.runtimeLib,
                 "libkina_runtime.a to link executables with");
  app.add_flag("-v,--verbose", opts.verbose,
               "Print each external command before running it");
  app.add_flag("--keep-temps", opts.keepTemps,
               "Keep temporary files and print where they are");
  app.add_flag("--time-stages", opts.timeStages,
               "Print the wall time of each compilation stage");
  app.add_option("--stats", opts.stats,
                 "Print per function the kernels after fusion, their FLOPs "
                 "and bytes moved, the intermediates' bytes, the stage "
                 "times (cuda: registers and shared memory from ptxas -v): "
                 "text (--stats alone) or json; to stderr, or --stats-file")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_option("--stats-file", opts.statsFile,
                 "Write --stats to this file instead of stderr");
  app.add_option("--stats-shape", opts.statsShape,
                 "Sizes of symbolic dims for --stats's figures: "
                 "NAME=SIZE[,NAME=SIZE...] (e.g. N=1797)");
  app.add_flag("--autotune", opts.autotune,
               "Measure candidate schedules of each matmul and reduction "
               "(cuda: each kernel, on this machine's GPU) on this machine "
               "(random inputs at --tune-shape's sizes, each candidate in a "
               "kina-run process) and build with the fastest; with "
               "--tuning-cache, record them there (docs/autotune.md)");
  app.add_option("--tuning-cache", opts.tuningCache,
                 "JSON tuning cache: build with the schedules it holds for "
                 "this module, target and processor (nothing is measured); "
                 "with --autotune, updated (written to a temporary file, then "
                 "renamed)");
  app.add_option("--tune-shape", opts.tuneShape,
                 "Sizes of symbolic dims to tune at: NAME=SIZE[,NAME=SIZE...] "
                 "(e.g. N=1797); with --tuning-cache alone, entries tuned at "
                 "other sizes are stale");
  app.add_option("--autotune-budget", opts.autotuneBudget,
                 "Bound the search to about this many seconds of wall clock "
                 "(the best schedule found so far is kept; default: no bound)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--autotune-plan", opts.autotunePlan,
                 "cuda, with --autotune: build every candidate schedule as a "
                 "shared library in DIR and write DIR/plan.json, measuring "
                 "nothing (kina-run --tune-plan DIR/plan.json measures it on "
                 "the GPU machine)");
  app.add_option("--tuning-results", opts.tuningResults,
                 "cuda: import kina-run --tune-plan's results.json: keep the "
                 "fastest schedule of each kernel, record it in "
                 "--tuning-cache (if given) and build with it");
  app.add_option("--gpu-model", opts.gpuModel,
                 "cuda: use only --tuning-cache entries measured on this GPU "
                 "(its name, e.g. \"NVIDIA H200\"); default: any GPU of "
                 "--gpu-arch");
  app.add_flag("--mlir-print-debuginfo", opts.printDebugInfo,
               "Print source locations in emitted MLIR");
  app.add_flag("--print-link-flags", opts.printLinkFlags,
               "Print what a link of compiled objects needs, then exit");
  app.add_option("--diagnostics-format", opts.diagnosticsFormat,
                 "How errors are printed: text (clang style) or json (one "
                 "object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--verify-diagnostics", opts.verifyDiagnostics,
               "Check the diagnostics against the source's "
               "'expected-error@+1:COL {{...}}' comments; write no output");
  app.add_option("--abi-version-for-testing", opts.abiVersion,
                 "Record this ABI version in objects (tests only)")
      ->group("");
  app.add_option("--debug-force-internal-error", opts.forceInternalError,
                 "invalid-ir:PASS or crash:PASS (developers' tests only)")
      ->group("");
  app.footer("Make dependency files, as a C compiler writes them: -MD (or "
             "-MMD) writes\n  'OUTPUT: INPUT KINAC' to OUTPUT with .d "
             "for its extension; -MF FILE names\n  that file, -MT TARGET "
             "the rule's target (repeatable), -MP adds an empty\n  rule "
             "for kinac.\n\nC compiler flags for a one-step link (kinac "
             "m.kir main.c -o app), passed to\n  $CC: -I -D -U -L -l -Wl,... "
             "-W... -std=... -f... -m... -g... -pthread,\n  -Xcompiler ARG, "
             "-Xlinker ARG; $CPPFLAGS $CFLAGS $LDFLAGS $LDLIBS are used too,\n"
             "  and -O sets the level of both kinac and the C compile.\n\n"
             "Exit status: 0 success, 1 error, 70 internal compiler error.");
  app.set_version_flag("--version", "kinac version " KINA_VERSION);
}

/// --diagnostics-format=json applies to errors of the command line itself
/// too, so it is looked for before anything is parsed.
void preScanDiagnosticFormat(int argc, char **argv) {
  for (int i = 1; i < argc; ++i)
    if (StringRef(argv[i]) == "--diagnostics-format=json" ||
        (StringRef(argv[i]) == "--diagnostics-format" && i + 1 < argc &&
         StringRef(argv[i + 1]) == "json"))
      setDiagnosticFormat(DiagnosticFormat::Json);
}

/// The checks and conversions of parsed values: the diagnostics format,
/// whether -O was given, the forced internal error, --mcpu, and whether the
/// --target can generate code here (Target::checkAvailable).
Error finishOptions(const CLI::App &app, DriverOptions &opts) {
  setDiagnosticFormat(*parseDiagnosticFormat(opts.diagnosticsFormat));
  opts.optExplicit = app.count("-O") > 0;
  if (!opts.forceInternalError.empty()) {
    Expected<ForcedInternalError> forced =
        parseForcedInternalError(opts.forceInternalError);
    if (!forced)
      return forced.takeError();
    opts.forced = *forced;
  }
  if (Error err = resolveProcessor(opts.mcpu))
    return err;
  if (!opts.statsShape.empty())
    if (Error err = parseShapeBindings(opts.statsShape, opts.statsShapes))
      return err;
  if (opts.stats.empty() &&
      (!opts.statsFile.empty() || !opts.statsShape.empty()))
    return createStringError(inconvertibleErrorCode(),
                             "--stats-file and --stats-shape need --stats");
  if (!opts.tuneShape.empty())
    if (Error err =
            parseShapeBindings(opts.tuneShape, opts.tuneShapes, "--tune-shape"))
      return err;
  if (!opts.autotune && app.count("--autotune-budget"))
    return createStringError(inconvertibleErrorCode(),
                             "--autotune-budget needs --autotune");
  if (!opts.autotune && opts.tuningCache.empty() &&
      opts.tuningResults.empty() && !opts.tuneShape.empty())
    return createStringError(inconvertibleErrorCode(),
                             "--tune-shape needs --autotune or --tuning-cache");
  if (!opts.autotunePlan.empty() && (!opts.autotune || opts.target != "cuda"))
    return createStringError(inconvertibleErrorCode(),
                             "--autotune-plan needs --autotune and "
                             "--target=cuda");
  if (!opts.tuningResults.empty() && opts.target != "cuda")
    return createStringError(inconvertibleErrorCode(),
                             "--tuning-results needs --target=cuda");
  if (!opts.tuningResults.empty() && opts.autotune)
    return createStringError(inconvertibleErrorCode(),
                             "--tuning-results imports measurements; it "
                             "cannot be combined with --autotune");
  if (!opts.gpuModel.empty() && opts.target != "cuda")
    return createStringError(inconvertibleErrorCode(),
                             "--gpu-model needs --target=cuda");
  if (opts.autotune && opts.optLevel == 0)
    return createStringError(inconvertibleErrorCode(),
                             "--autotune needs -O1 or above (at -O0 no "
                             "schedule applies)");
  TargetOptions targetOptions;
  targetOptions.mcpu = opts.mcpu;
  targetOptions.gpuArch = opts.gpuArch;
  targetOptions.cudaPath = opts.cudaPath;
  return lookupTarget(opts.target)->checkAvailable(targetOptions);
}

} // namespace

std::optional<int> parseCommandLine(int argc, char **argv,
                                    DriverOptions &opts) {
  CLI::App app{
      "kinac: ahead-of-time compiler for Kina IR (version " KINA_VERSION ")",
      "kinac"};
  addOptions(app, opts);
  preScanDiagnosticFormat(argc, argv);
  // A copy of the arguments (argv[0] included), from which the flags CLI11
  // cannot parse are taken out.
  std::vector<std::string> args(argv, argv + argc);
  if (Error err = extractDependencyFlags(args, opts)) {
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  if (Error err = extractCompilerFlags(args, opts)) {
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  spellAliases(args);
  try {
    // CLI11 takes the arguments after the program name, last first.
    app.parse(std::vector<std::string>(args.rbegin(), args.rend() - 1));
  } catch (const CLI::CallForHelp &e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion &e) {
    return app.exit(e);
  } catch (const CLI::ParseError &e) {
    driverError(e.what());
    if (getDiagnosticFormat() == DiagnosticFormat::Text)
      errs() << "Run with --help for more information.\n";
    return ExitFailure;
  }
  if (Error err = finishOptions(app, opts)) {
    driverError(toString(std::move(err)));
    return ExitFailure;
  }
  return std::nullopt;
}

std::optional<EmitStage> parseStage(StringRef s) {
  return StringSwitch<std::optional<EmitStage>>(s)
      .Case("kir", EmitStage::Kir)
      .Case("mlir", EmitStage::Mlir)
      .Case("mlir-gpu", EmitStage::MlirGpu)
      .Case("ptx", EmitStage::Ptx)
      .Case("mlir-llvm", EmitStage::MlirLLVM)
      .Case("llvm", EmitStage::LLVM)
      .Case("asm", EmitStage::Asm)
      .Case("obj", EmitStage::Obj)
      .Case("header", EmitStage::Header)
      .Case("manifest", EmitStage::Manifest)
      .Case("shared", EmitStage::Shared)
      .Case("dot", EmitStage::Dot)
      .Default(std::nullopt);
}

bool isKir(StringRef path) { return sys::path::extension(path) == ".kir"; }

} // namespace driver
} // namespace kina
