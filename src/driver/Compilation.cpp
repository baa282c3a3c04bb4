//===- Compilation.cpp - One module through the pipeline to a stage -------===//
//
// The stages of one `.kir` file, stopping at the requested `--emit` stage:
// read, parse, sema (Frontend.h), then the C header or the manifest, or
// MLIRGen -> the lowering pipeline (Pipeline.h) -> textual LLVM-dialect
// MLIR -> `mlir-translate --mlir-to-llvmir` -> (no --mcpu, -O1 and above:
// one version per x86-64 level and a dispatcher per exported symbol,
// Multiversion.cpp) -> `opt -O<N>` (LLVM's middle end, as clang runs it;
// not at -O0) -> `llc`. Each stage runs under
// the StageTimer (--time-stages). Diagnostics go through a
// DiagnosticSession (Diagnostics.h): text, JSON or checked against the
// source's annotations (--verify-diagnostics); a failure inside the
// pipeline is an internal error naming the pass (InternalError.h).
//
//===----------------------------------------------------------------------===//
#include "DriverImpl.h"

#include "kina/Frontend.h"
#include "kina/HeaderEmitter.h"
#include "kina/MLIRGen.h"
#include "kina/Manifest.h"
#include "kina/Pipeline.h"
#include "kina/Target.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"

#ifndef KINA_VERSION
#define KINA_VERSION "0.0.0"
#endif
#ifndef KINA_DEFAULT_LLVM_BIN
#define KINA_DEFAULT_LLVM_BIN ""
#endif

using namespace llvm;

namespace kina {
namespace driver {

namespace {

/// Where LLVM's tools were found at configure time; also tried relative to
/// kinac for relocated installs.
std::string configuredLLVMBin() { return KINA_DEFAULT_LLVM_BIN; }

} // namespace

std::optional<std::string> Compilation::run(const std::string &input,
                                            EmitStage stage) {
  if (stage == EmitStage::Shared)
    return buildShared(input);
  // The MLIR context (and its thread pool) ends inside generate(): the
  // tools run with kinac single-threaded, so an interrupt is delivered to
  // the thread that blocks it around a spawn (InterruptBlocker).
  std::optional<std::string> text = generate(input, stage);
  if (!text || (stage != EmitStage::LLVM && stage != EmitStage::Asm &&
                stage != EmitStage::Obj))
    return text;
  return runTools(*text, stage);
}

std::optional<std::string> Compilation::generate(const std::string &input,
                                                 EmitStage stage) {
  Expected<std::string> source = readFile(input);
  if (!source) {
    driverError("cannot open '" + input + "': " + toString(source.takeError()));
    return std::nullopt;
  }

  mlir::MLIRContext ctx;
  ctx.printOpOnDiagnostic(false);
  ctx.printStackTraceOnDiagnostic(false);
  registerKinaDialects(ctx);
  // The diagnostics' copy of the source shows each non-ASCII byte as '?':
  // LLVM's SMDiagnostic prints no caret under a line holding non-ASCII text,
  // and invalid UTF-8 would reach the terminal raw. Columns count bytes, so
  // the caret stays under the byte the column names.
  std::string display = *source;
  for (char &c : display)
    if (static_cast<unsigned char>(c) >= 0x80)
      c = '?';
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(MemoryBuffer::getMemBufferCopy(display, input),
                               SMLoc());
  diagnosticsVerified = false;
  std::optional<DiagnosticSession> diagnostics;
  if (opts.verifyDiagnostics)
    diagnostics.emplace(sourceMgr, ctx, errs(), &diagnosticsVerified);
  else
    diagnostics.emplace(sourceMgr, ctx, getDiagnosticFormat(), errs());

  auto parsed =
      timer.time("parse", [&] { return parseModule(*source, input, ctx); });
  if (mlir::failed(parsed))
    return std::nullopt;
  Module &module = *parsed;
  if (mlir::failed(timer.time("sema", [&] {
        return analyzeModule(module, ctx, opts.symbolPrefix);
      })))
    return std::nullopt;
  if (stage == EmitStage::Kir)
    return printModule(module);
  if (stage == EmitStage::Header)
    return emitHeader(module, opts.symbolPrefix, opts.target);
  if (stage == EmitStage::Manifest) {
    return emitManifest(module, opts.symbolPrefix, "kinac " KINA_VERSION,
                        opts.target);
  }

  MLIRGenOptions genOptions;
  genOptions.symbolPrefix = opts.symbolPrefix;
  // MLIRGen's own consistency failures are internal errors; its other
  // errors are the user's (MLIRGenWatch).
  std::optional<MLIRGenWatch> genWatch;
  genWatch.emplace(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> mlirModule =
      timer.time("mlirgen", [&] { return mlirGen(ctx, module, genOptions); });
  if (genWatch->finish())
    return std::nullopt;
  genWatch.reset();
  if (!mlirModule)
    return std::nullopt;
  moduleName = module.name;
  tunables = findTunables(*mlirModule, module, opts);
  // cuda: the kernels as mapped, when a cache or a search needs them.
  if (opts.target == "cuda" && (tuningCache || opts.autotune))
    tunables = findCudaTunables(*mlirModule, module, opts);

  auto print = [&](mlir::ModuleOp m, bool debugInfo) {
    std::string text;
    raw_string_ostream os(text);
    mlir::OpPrintingFlags flags;
    if (debugInfo)
      flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
    m.print(os, flags);
    os.flush();
    return text;
  };
  if (stage == EmitStage::Mlir)
    return print(*mlirModule, opts.printDebugInfo);
  if ((stage == EmitStage::MlirGpu || stage == EmitStage::Ptx) &&
      opts.target != "cuda") {
    driverError("--emit=" + opts.emit + " needs --target=cuda");
    return std::nullopt;
  }

  // --target was checked against the registry when the options were read.
  const Target *target = lookupTarget(opts.target);
  TargetOptions pipeline;
  pipeline.optLevel = opts.optLevel;
  pipeline.symbolPrefix = opts.symbolPrefix;
  pipeline.stamp.abiVersion = opts.abiVersion;
  pipeline.stamp.compiler = "kinac " KINA_VERSION;
  pipeline.mcpu = opts.mcpu;
  pipeline.multiversioned = cpuMultiversioned(opts.optLevel, opts.mcpu);
  pipeline.gpuArch = opts.gpuArch;
  pipeline.cudaPath = opts.cudaPath;
  pipeline.allowTf32 = opts.allowTf32;
  pipeline.gpuMatmul = opts.gpuMatmul;
  // Tuned schedules: --autotune's, else those the cache holds for this
  // module (its stale or foreign entries reported).
  if (opts.tuningOverride)
    pipeline.tuning = opts.tuningOverride;
  else if (tuningCache)
    pipeline.tuning = std::make_shared<TuningParameters>(tuningCache->select(
        moduleName, tunables, currentIdentity(opts), opts.tuneShapes));
  if (stage == EmitStage::MlirGpu ||
      (stage == EmitStage::Dot && opts.target == "cuda"))
    pipeline.stopAfter = "mlir-gpu";
  else if (stage == EmitStage::Ptx)
    pipeline.stopAfter = "ptx";
  // --emit=dot and --stats: the kernels, recorded as the pipeline runs
  // (KernelProbe, Kernels.h). cuda --stats past the PTX: a copy of the
  // module before gpu-ptxas, compiled to PTX for ptxas -v afterwards.
  kernels.reset();
  if (stage == EmitStage::Dot || !opts.stats.empty()) {
    kernels.emplace();
    kernels->target = opts.target;
  }
  bool wantPtxCopy = !opts.stats.empty() && opts.target == "cuda" &&
                     stage != EmitStage::Ptx && pipeline.stopAfter.empty();
  mlir::OwningOpRef<mlir::ModuleOp> beforePtxas;
  // A multiversioned object's x86-64-v4 version: the module through the
  // pipeline a second time with 512-bit vectors (AVX-512's registers:
  // kina-matmul-kernel's 8 x 2 tile, kina-tile-and-vectorize's width);
  // the other levels share the first run's 256-bit code (Multiversion.cpp).
  wideLlvmDialect.clear();
  mlir::OwningOpRef<mlir::ModuleOp> wideModule;
  if (wantsMultiversioning(opts) &&
      (stage == EmitStage::LLVM || stage == EmitStage::Asm ||
       stage == EmitStage::Obj))
    wideModule = mlirModule->clone();
  // Every failure from here on is kinac's bug: reported as an internal
  // error naming the pass, its diagnostics inside the report.
  {
    PipelineWatch watch(ctx, opts.forced);
    auto instrument = [&](mlir::PassManager &pm) {
      watch.instrument(pm);
      if (kernels)
        pm.addInstrumentation(
            std::make_unique<KernelProbe>(*kernels, input, opts.statsShapes));
    };
    // Each stage of the target's pipeline is timed (--time-stages): cpu has
    // one, cuda gpu-map, gpu-nvvm, gpu-ptxas and host-llvm.
    auto timeStage = [&](StringRef name,
                         function_ref<mlir::LogicalResult()> run) {
      if (wantPtxCopy && name == "gpu-ptxas")
        beforePtxas = mlirModule->clone();
      return timer.time(name, run);
    };
    if (mlir::failed(lowerToLLVMDialect(*mlirModule, *target, pipeline,
                                        instrument, timeStage))) {
      watch.report();
      return std::nullopt;
    }
    watch.replay();
    if (opts.forced.kind != ForcedInternalError::None &&
        !watch.forcedPassRan()) {
      driverError("--debug-force-internal-error: no pass '" + opts.forced.pass +
                  "' ran in the pipeline");
      return std::nullopt;
    }
  }
  if (wideModule) {
    TargetOptions wide = pipeline;
    wide.vectorBits = 512;
    PipelineWatch watch(ctx, ForcedInternalError{});
    if (mlir::failed(lowerToLLVMDialect(
            *wideModule, *target, wide,
            [&](mlir::PassManager &pm) { watch.instrument(pm); },
            [&](StringRef name, function_ref<mlir::LogicalResult()> run) {
              return timer.time((name + "-v4").str(), run);
            }))) {
      watch.report();
      return std::nullopt;
    }
    watch.replay();
    wideLlvmDialect = timer.time(
        "print-mlir-v4", [&] { return print(*wideModule, opts.printDebugInfo); });
  }
  if (kernels) {
    if (!kernels->complete) {
      driverError("internal error: the pipeline of target '" + opts.target +
                  "' passed no point where kinac records kernels "
                  "(--emit=dot, --stats)");
      return std::nullopt;
    }
    describeStatements(*kernels, module, opts.symbolPrefix);
  }
  if (stage == EmitStage::Dot)
    return emitDot(module, *kernels, opts.symbolPrefix);
  if (!opts.stats.empty() && opts.target == "cuda") {
    if (beforePtxas) {
      // The same gpu-ptxas stage as the pipeline's, with format isa.
      TargetOptions ptxOptions = pipeline;
      ptxOptions.stopAfter = "ptx";
      mlir::PassManager pm(&ctx);
      target->buildStage(pm, ptxOptions, "gpu-ptxas");
      if (mlir::failed(timer.time("ptx-for-stats",
                                  [&] { return pm.run(*beforePtxas); }))) {
        driverError("--stats: compiling the kernels to PTX for ptxas -v "
                    "failed");
        return std::nullopt;
      }
    }
    if (stage == EmitStage::Ptx || beforePtxas)
      if (!addResourceUsage(beforePtxas ? *beforePtxas : *mlirModule))
        return std::nullopt;
  }
  if (stage == EmitStage::Ptx) {
    // Each kernel module's PTX, as gpu-module-to-binary left it (format
    // isa).
    std::string ptx;
    mlirModule->walk([&](mlir::gpu::BinaryOp binary) {
      for (mlir::Attribute attr : binary.getObjects())
        if (auto object = dyn_cast<mlir::gpu::ObjectAttr>(attr))
          ptx += "// kernel module " + binary.getSymName().str() + "\n" +
                 object.getObject().getValue().str();
    });
    return ptx;
  }
  std::string llvmDialect = timer.time(
      "print-mlir", [&] { return print(*mlirModule, opts.printDebugInfo); });
  return llvmDialect;
}

bool Compilation::addResourceUsage(mlir::ModuleOp module) {
  std::vector<std::pair<std::string, std::string>> ptx;
  module.walk([&](mlir::gpu::BinaryOp binary) {
    for (mlir::Attribute attr : binary.getObjects())
      if (auto object = dyn_cast<mlir::gpu::ObjectAttr>(attr))
        ptx.emplace_back(binary.getSymName().str(),
                         object.getObject().getValue().str());
  });
  // The toolkit the cuda target checked (checkAvailable): --cuda-path, else
  // $CUDA_PATH, else /usr/local/cuda.
  std::string root = opts.cudaPath;
  if (root.empty())
    if (std::optional<std::string> env = sys::Process::GetEnv("CUDA_PATH"))
      root = *env;
  if (root.empty())
    root = "/usr/local/cuda";
  SmallString<256> ptxas(root);
  sys::path::append(ptxas, "bin", "ptxas");
  auto run = [&](const std::vector<std::string> &args,
                 StringRef text) -> Expected<std::string> {
    Expected<std::string> ptxPath = temps.create("kinac-stats", "ptx");
    if (!ptxPath)
      return ptxPath.takeError();
    Expected<std::string> cubin = temps.create("kinac-stats", "cubin");
    if (!cubin)
      return cubin.takeError();
    if (Error err = writeOutput(*ptxPath, text))
      return err;
    std::vector<std::string> argv = args;
    argv.insert(argv.end(), {*ptxPath, "-o", *cubin});
    std::string output;
    if (Error err = tools.run(ptxas, argv, &output))
      return err;
    return output;
  };
  if (Error err = timer.time("ptxas-stats", [&] {
        return addPtxasResourceUsage(*kernels, ptx, opts.gpuArch, run);
      })) {
    driverError("--stats: " + toString(std::move(err)));
    return false;
  }
  return true;
}

std::optional<std::string>
Compilation::runTools(const std::string &llvmDialectText, EmitStage stage) {
  auto fail = [](Error err) -> std::optional<std::string> {
    driverError(toString(std::move(err)));
    return std::nullopt;
  };
  Expected<std::string> translate =
      tools.findTool("mlir-translate", opts.mlirTranslate, configuredLLVMBin());
  if (!translate)
    return fail(translate.takeError());
  // LLVM-dialect text -> a temporary .mlir -> mlir-translate -> a temporary
  // .ll (named `prefix`-*, timed as `stage`); returns the .ll's path.
  auto translateText = [&](StringRef text, StringRef prefix,
                           StringRef stage) -> Expected<std::string> {
    Expected<std::string> mlirPath = temps.create(prefix, "mlir");
    if (!mlirPath)
      return mlirPath.takeError();
    if (Error err = writeOutput(*mlirPath, text))
      return err;
    Expected<std::string> ll = temps.create(prefix, "ll");
    if (!ll)
      return ll.takeError();
    if (Error err = timer.time(stage, [&] {
          return tools.run(*translate, {"mlir-translate", "--mlir-to-llvmir",
                                        *mlirPath, "-o", *ll});
        }))
      return err;
    return ll;
  };
  Expected<std::string> llPath =
      translateText(llvmDialectText, "kinac", "mlir-translate");
  if (!llPath)
    return fail(llPath.takeError());
  // Without --mcpu (x86-64, -O1 and above): a version of every function per
  // processor level and a dispatcher per exported symbol (Multiversion.cpp);
  // opt and llc then read each version's processor from its attributes.
  if (wantsMultiversioning(opts)) {
    // The x86-64-v4 version's own LLVM IR (generate(): 512-bit vectors).
    std::vector<std::string> own(multiversionLevels().size());
    if (!wideLlvmDialect.empty()) {
      Expected<std::string> widePath =
          translateText(wideLlvmDialect, "kinac-v4", "mlir-translate-v4");
      if (!widePath)
        return fail(widePath.takeError());
      for (size_t l = 0; l < own.size(); ++l)
        if (multiversionLevels()[l].level == 4)
          own[l] = *widePath;
    }
    Expected<std::string> versioned = temps.create("kinac", "mv.ll");
    if (!versioned)
      return fail(versioned.takeError());
    if (Error err = timer.time("multiversion", [&] {
          return multiversionFile(*llPath, *versioned, multiversionLevels(),
                                  own);
        }))
      return fail(std::move(err));
    *llPath = *versioned;
  }
  // LLVM's middle end, as clang runs it: `opt -O<N>` for the processor llc
  // will generate code for (its cost model decides vector widths and
  // unrolling), on the default target triple (the module names none).
  // The cpu target only: the cuda target's host module has not been run
  // through it on the H200 yet.
  if (opts.optLevel > 0 && opts.target == "cpu") {
    Expected<std::string> optTool =
        tools.findTool("opt", opts.opt, configuredLLVMBin());
    if (!optTool)
      return fail(optTool.takeError());
    Expected<std::string> optimized = temps.create("kinac", "opt.ll");
    if (!optimized)
      return fail(optimized.takeError());
    std::vector<std::string> args = {"opt",
                                     "-O" + std::to_string(opts.optLevel),
                                     "-mtriple=" +
                                         sys::getDefaultTargetTriple(),
                                     "-S",
                                     *llPath,
                                     "-o",
                                     *optimized};
    if (!opts.mcpu.empty())
      args.push_back("-mcpu=" + opts.mcpu);
    if (Error err =
            timer.time("opt", [&] { return tools.run(*optTool, args); }))
      return fail(std::move(err));
    *llPath = *optimized;
  }
  // Vector sin/cos/exp/log/pow as calls of glibc's libmvec, the variant of
  // each function's processor (VectorMath.cpp); llc would make them a
  // scalar libm call per lane.
  if (opts.optLevel > 0 && opts.target == "cpu") {
    Expected<std::string> text = readFile(*llPath);
    if (!text)
      return fail(text.takeError());
    if (mayNeedVectorMath(*text)) {
      Expected<std::string> mapped = temps.create("kinac", "mvec.ll");
      if (!mapped)
        return fail(mapped.takeError());
      if (Error err = timer.time("vector-math", [&] {
            return mapVectorMathFile(*llPath, *mapped, opts.mcpu);
          }))
        return fail(std::move(err));
      *llPath = *mapped;
    }
  }
  if (stage == EmitStage::LLVM) {
    Expected<std::string> text = readFile(*llPath);
    if (!text)
      return fail(text.takeError());
    // opt names the module after its input file, a temporary with a random
    // name; print mlir-translate's module name instead, so the output does
    // not depend on the temporary (integration.determinism).
    StringRef moduleIdPrefix = "; ModuleID = '";
    if (StringRef(*text).starts_with(moduleIdPrefix)) {
      size_t end = text->find('\n');
      if (end != std::string::npos)
        text->replace(0, end, "; ModuleID = 'LLVMDialectModule'");
    }
    return *text;
  }

  Expected<std::string> llc =
      tools.findTool("llc", opts.llc, configuredLLVMBin());
  if (!llc)
    return fail(llc.takeError());
  bool object = stage == EmitStage::Obj;
  Expected<std::string> outPath = temps.create("kinac", object ? "o" : "s");
  if (!outPath)
    return fail(outPath.takeError());
  std::vector<std::string> args = {"llc",
                                   "-O" + std::to_string(opts.optLevel),
                                   object ? "-filetype=obj" : "-filetype=asm",
                                   "-relocation-model=pic",
                                   *llPath,
                                   "-o",
                                   *outPath};
  if (!opts.mcpu.empty())
    args.push_back("-mcpu=" + opts.mcpu);
  if (Error err = timer.time("llc", [&] { return tools.run(*llc, args); }))
    return fail(std::move(err));
  Expected<std::string> bytes = readFile(*outPath);
  if (!bytes)
    return fail(bytes.takeError());
  return *bytes;
}

/// Checks --mcpu against the processors LLVM knows for the default target
/// triple (the one llc generates code for: the module names none) and
/// replaces "native" with the name of the processor kinac runs on
/// (`llvm::sys::getHostCPUName`, as clang's -march=native does).
Error resolveProcessor(std::string &mcpu) {
  if (mcpu.empty())
    return Error::success();
  if (mcpu == "native") {
    mcpu = sys::getHostCPUName().str();
    return Error::success();
  }
  InitializeNativeTarget();
  std::string triple = sys::getDefaultTargetTriple(), error;
  const llvm::Target *target =
      TargetRegistry::lookupTarget(Triple(triple), error);
  if (!target)
    return createStringError(inconvertibleErrorCode(),
                             "no code generator for target '" + triple +
                                 "': " + error);
  std::unique_ptr<MCSubtargetInfo> info(
      target->createMCSubtargetInfo(Triple(triple), "", ""));
  if (info && !info->isCPUStringValid(mcpu))
    return createStringError(
        inconvertibleErrorCode(),
        "unknown processor '" + mcpu + "' in --mcpu for target '" + triple +
            "' ('llc -mcpu=help' lists them; 'native' is this machine's)");
  return Error::success();
}

} // namespace driver
} // namespace kina
