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
/// `symbolPrefix`. Deterministic: no dates, no absolute paths.
std::string emitHeader(const Module &module, const std::string &symbolPrefix);

/// The texts of include/kina/abi.h and include/kina/runtime.h (in that
/// order), embedded at build time: the ABI and runtime API block of every
/// generated header.
const char *abiHeaderText();

} // namespace kina

#endif // KINA_HEADEREMITTER_H
