//===- Driver.h - The kinac command line ----------------------------------===//
//
// `kinac FILE.kir [-o OUT] [--emit=STAGE] [-O0..3] [--target=cpu] ...` and
// `kinac a.kir main.c -o app` (compile, then link with the system compiler
// driver and libkina_runtime.a). The stages are one ordered enum, so each is
// a place to stop and test: kir, mlir, mlir-llvm, llvm, asm, obj; `header`
// writes the C header instead, `manifest` the JSON signature manifest,
// `shared` (or `-shared`) a dlopen-able library with the runtime inside, and
// `dot` a Graphviz graph of the program with its kernels (docs/inspecting.md).
// The kina_driver library (src/driver/, DriverImpl.h lists its files)
// implements it; kinac's main.cpp only calls runDriver.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_DRIVER_H
#define KINA_DRIVER_H

namespace kina {

/// What one run of kinac produces, in pipeline order; then the outputs that
/// are not a pipeline stage: the C header, the JSON signature manifest
/// (Manifest.h), and a shared library (the object, the manifest and the
/// runtime, linked with the system compiler driver).
enum class EmitStage {
  Kir,
  Mlir,
  MlirGpu, // cuda: the kernels outlined into gpu.modules
  Ptx,     // cuda: the kernels' PTX
  MlirLLVM,
  LLVM,
  Asm,
  Obj,
  Header,
  Manifest,
  Shared,
  Dot // Graphviz: the program and the kernels the pipeline produced
};

/// Exit codes of kinac (clang's convention: 0 success, 1 any error of the
/// input, the command line or a tool); 70 (kExitInternalError,
/// InternalError.h) for an internal compiler error.
enum ExitCode : int { ExitSuccess = 0, ExitFailure = 1 };

/// Runs kinac on a command line; returns the process exit code. Errors are
/// printed to stderr as `file:line:col: error: ...` (with the source line
/// and a caret) or `kinac: error: ...`. No output file is written on
/// failure, and an existing one is left untouched.
int runDriver(int argc, char **argv);

} // namespace kina

#endif // KINA_DRIVER_H
