//===- kina-opt.cpp - mlir-opt with kinac's passes and pipelines ----------===//
//
// `kina-opt`: MLIR's `mlir-opt` driver (MlirOptMain) with every upstream
// dialect, extension and pass (kinac loads the same dialects,
// registerKinaDialects), kinac's own passes (Passes.td: kina-buffer-ownership,
// kina-entry-points, ...), each target's own passes (Target::registerPasses:
// cuda's kina-gpu-map-matmul, ...) and one named pipeline per target,
// `kina-<target>-pipeline` (kina/Target.h), whose options are those of
// TargetOptions. So any stage of kinac can be reproduced and tested on its
// own `.mlir` input:
//
//   kinac m.kir --emit=mlir -o m.mlir
//   kina-opt m.mlir --kina-cpu-pipeline="opt-level=0"
//       (prints what `kinac m.kir -O0 --emit=mlir-llvm` prints)
//   kina-opt m.mlir --kina-read-only-arguments
//       --one-shot-bufferize="bufferize-function-boundaries"
//       --kina-buffer-ownership
//
// Installed beside kinac (cmake/KinaInstall.cmake). No front end inside: the
// passes read the Kina signatures from the IR (kina/IRConventions.h).
//
//===----------------------------------------------------------------------===//
#include "kina/Passes.h"
#include "kina/Target.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

#ifndef KINA_VERSION
#error "KINA_VERSION must be defined by the build (src/CMakeLists.txt)"
#endif

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllPasses();
  kina::registerKinaPasses();
  kina::registerAllTargets();
  kina::registerTargetPipelines();
  kina::registerTargetPasses();
  for (const kina::Target *target : kina::allTargets())
    target->getDependentDialects(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "kina-opt " KINA_VERSION ": MLIR optimizer driver with kinac's passes "
      "and the kina-<target>-pipeline pipelines\n",
      registry));
}
