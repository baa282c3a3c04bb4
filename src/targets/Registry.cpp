//===- Registry.cpp - The targets of this build and their pipelines -------===//
//
// The registry of code-generation targets (kina/Target.h): registerAllTargets
// calls the registration function of each folder src/targets/<name>/
// (Targets.h), and registerTargetPipelines makes each target's pipeline the
// named pass pipeline `kina-<name>-pipeline`, whose options fill a
// TargetOptions, so `kina-opt --kina-cpu-pipeline="opt-level=0"` runs what
// `kinac -O0` runs; registerTargetPasses registers each target's own passes.
//
//===----------------------------------------------------------------------===//
#include "Targets.h"
#include "kina/Target.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

#include <cassert>
#include <vector>

#ifndef KINA_VERSION
#error "KINA_VERSION must be defined by the build (src/CMakeLists.txt)"
#endif

using namespace mlir;

namespace kina {

Target::~Target() = default;

namespace {

/// The registered targets, owned, in registration order.
std::vector<std::unique_ptr<Target>> &ownedTargets() {
  static std::vector<std::unique_ptr<Target>> targets;
  return targets;
}

/// The same targets as plain pointers, for allTargets().
std::vector<const Target *> &targetList() {
  static std::vector<const Target *> list;
  return list;
}

/// The options of every `kina-<name>-pipeline`, one per TargetOptions field.
struct TargetPipelineOptions
    : public PassPipelineOptions<TargetPipelineOptions> {
  Option<unsigned> optLevel{
      *this, "opt-level",
      llvm::cl::desc("Optimisation level as kinac's -O: 0 disables the "
                     "fusion and cleanup passes"),
      llvm::cl::init(2)};
  Option<std::string> symbolPrefix{
      *this, "symbol-prefix",
      llvm::cl::desc("kinac's --symbol-prefix (MLIRGen already applied it "
                     "to the function names; the passes read names from the "
                     "IR)")};
  Option<int> abiVersion{
      *this, "abi-version",
      llvm::cl::desc("Kina ABI version the entries check against the "
                     "runtime's"),
      llvm::cl::init(KINA_ABI_VERSION)};
  Option<std::string> compiler{
      *this, "compiler",
      llvm::cl::desc("Compiler named in the object's version stamp"),
      llvm::cl::init("kinac " KINA_VERSION)};
  Option<std::string> mcpu{
      *this, "mcpu",
      llvm::cl::desc("cpu: the LLVM processor name, kinac's --mcpu (vector "
                     "width, math approximations; empty: multiversioned at "
                     "opt-level 1 and above on x86-64, as kinac)")};
  Option<std::string> gpuArch{*this, "gpu-arch",
                              llvm::cl::desc("cuda: the SM architecture"),
                              llvm::cl::init("sm_90")};
  Option<std::string> cudaPath{
      *this, "cuda-path", llvm::cl::desc("cuda: the CUDA Toolkit's folder")};
  Option<bool> allowTf32{
      *this, "allow-tf32",
      llvm::cl::desc("cuda: TF32 tensor-core math for f32 matmuls"),
      llvm::cl::init(false)};
  Option<std::string> gpuMatmul{
      *this, "gpu-matmul",
      llvm::cl::desc("cuda: the route of float matmuls, 'cublaslt' (the "
                     "default) or 'kernel'"),
      llvm::cl::init("cublaslt")};
  Option<std::string> stopAfter{
      *this, "stop-after",
      llvm::cl::desc("cuda: stop after 'mlir-gpu' (outlined kernels) or "
                     "'ptx' (kernels compiled to PTX)")};

  TargetOptions toTargetOptions() const {
    TargetOptions options;
    options.optLevel = optLevel;
    options.symbolPrefix = symbolPrefix;
    options.stamp.abiVersion = abiVersion;
    options.stamp.compiler = compiler;
    options.mcpu = mcpu;
    options.multiversioned = cpuMultiversioned(optLevel, mcpu);
    options.gpuArch = gpuArch;
    options.cudaPath = cudaPath;
    options.allowTf32 = allowTf32;
    options.gpuMatmul = gpuMatmul;
    options.stopAfter = stopAfter;
    return options;
  }
};

} // namespace

bool cpuMultiversioned(unsigned optLevel, llvm::StringRef mcpu) {
  return optLevel > 0 && mcpu.empty() &&
         llvm::Triple(llvm::sys::getDefaultTargetTriple()).getArch() ==
             llvm::Triple::x86_64;
}

void registerTarget(std::unique_ptr<Target> target) {
  assert(!lookupTarget(target->name()) && "target registered twice");
  targetList().push_back(target.get());
  ownedTargets().push_back(std::move(target));
}

const Target *lookupTarget(llvm::StringRef name) {
  for (const Target *target : targetList())
    if (target->name() == name)
      return target;
  return nullptr;
}

llvm::ArrayRef<const Target *> allTargets() { return targetList(); }

std::string knownTargetNames() {
  std::string names;
  for (const Target *target : targetList())
    names += (names.empty() ? "" : ", ") + target->name().str();
  return names;
}

void registerAllTargets() {
  static bool registered = [] {
    registerCpuTarget();
    registerCudaTarget();
    return true;
  }();
  (void)registered;
}

void registerTargetPipelines() {
  static bool registered = [] {
    for (const Target *target : allTargets()) {
      std::string name = ("kina-" + target->name() + "-pipeline").str();
      std::string description =
          ("kinac's pipeline for --target=" + target->name() +
           " (MLIRGen's output to the LLVM dialect): " + target->description())
              .str();
      PassPipelineRegistration<TargetPipelineOptions>(
          name, description,
          [target](OpPassManager &pm, const TargetPipelineOptions &options) {
            target->buildPipeline(pm, options.toTargetOptions());
          });
    }
    return true;
  }();
  (void)registered;
}

void registerTargetPasses() {
  static bool registered = [] {
    for (const Target *target : allTargets())
      target->registerPasses();
    return true;
  }();
  (void)registered;
}

} // namespace kina
