//===- Manifest.h - The signature manifest of a compiled module -----------===//
//
// `kinac --emit=manifest` writes, and every `kinac --emit=shared` library
// embeds, a JSON description of the module's exported functions: for each,
// its name, its two C symbols (`kina_<prefix><fn>`, `_mlir_ciface_<prefix>
// <fn>`) and every argument and result with its name, element type, rank and
// dims (a number, "?" or the symbol's name). Loaders such as `kina-run` read
// it to check and build descriptors without the C header. The schema and its
// version are documented in docs/manifest.md; this header is its one writer.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_MANIFEST_H
#define KINA_MANIFEST_H

#include "kina/AST.h"

#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace kina {

/// Version of the manifest schema emitManifest writes (docs/manifest.md,
/// field "version"). Raised on every change a reader could trip over.
inline constexpr int kManifestVersion = 1;

/// The C function a shared library built by `kinac --emit=shared` exports to
/// hand out its manifest: `const char *kina_module_manifest(void)`.
inline constexpr const char *kManifestSymbol = "kina_module_manifest";

/// The manifest of a checked module (Sema has run) whose exported symbols
/// carry `symbolPrefix`, as JSON text ending in a newline. Deterministic: the
/// same module and prefix give the same bytes (no dates, no paths).
/// `generator` names the compiler, e.g. "kinac 0.1.0"; `target` the
/// `--target` it was compiled for ("cpu" or "cuda", field "target": it says
/// where arguments must live, docs/manifest.md).
std::string emitManifest(const Module &module, const std::string &symbolPrefix,
                         const std::string &generator,
                         const std::string &target = "cpu");

/// A C99 translation unit defining `kina_module_manifest()`, which returns
/// `manifestJson` (static storage, NUL-terminated). Compiled into shared
/// libraries next to the module's object.
std::string manifestCSource(llvm::StringRef manifestJson);

/// `text` as a sequence of adjacent C string literals, one per line of the
/// text, each on its own line and indented by `indent` spaces. Escapes
/// backslash, double quote, `?` (no trigraphs), and every byte outside
/// printable ASCII as a three-digit octal escape, so any bytes survive.
std::string cStringLiteral(llvm::StringRef text, unsigned indent);

} // namespace kina

#endif // KINA_MANIFEST_H
