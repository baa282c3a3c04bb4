//===- HeaderEmitter.h - The C header of a compiled module ----------------===//
//
// `kinac --emit=header` (spec, "ABI"): a self-contained C99/C++ header with
// the Kina ABI block (include/kina/abi.h, embedded verbatim behind its one
// shared include guard) and, per exported function, the status entry
// `kina_<fn>` and the MLIR C-interface entry `_mlir_ciface_<fn>`, each with a
// comment giving the Kina signature and who owns what.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_HEADEREMITTER_H
#define KINA_HEADEREMITTER_H

#include "kina/AST.h"

#include <string>

namespace kina {

/// The header text for a checked module whose exported symbols carry
/// `symbolPrefix`, compiled for `target` ("cpu" or "cuda": the header says
/// which, and for cuda that arguments must be CUDA managed or device memory
/// and results are managed memory). Deterministic: no dates, no absolute
/// paths.
std::string emitHeader(const Module &module, const std::string &symbolPrefix,
                       const std::string &target = "cpu");

/// The texts of include/kina/abi.h and include/kina/runtime.h (in that
/// order), embedded at build time: the ABI and runtime API block of every
/// generated header.
const char *abiHeaderText();

} // namespace kina

#endif // KINA_HEADEREMITTER_H
