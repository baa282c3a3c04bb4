//===- SharedModule.h - A kinac shared library, loaded and described ------===//
//
// kina-run's view of a library written by `kinac --emit=shared`: it is
// opened with dlopen (RTLD_NOW | RTLD_LOCAL, so several can live in one
// process), its manifest is read through `kina_module_manifest()` and parsed
// (schema version 1, docs/manifest.md), and the runtime functions the caller
// needs (`runtime_free`, `kina_last_error`, `kina_status_name`,
// `runtime_live_buffer_count`, and `_mlir_ciface_runtime_gpu_alloc_unranked`
// for --target=cuda libraries) are resolved from the library itself, since
// each shared library carries its own copy of the runtime. `callEntry` calls
// a status entry `int32_t kina_<fn>(out..., in...)` with any number of
// descriptor pointers up to kMaxEntryPointers.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUN_SHAREDMODULE_H
#define KINA_RUN_SHAREDMODULE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kina {
namespace run {

/// Schema version of the manifests this kina-run reads (docs/manifest.md).
inline constexpr int kSupportedManifestVersion = 1;

/// Most descriptor pointers (results plus arguments) one entry call takes.
inline constexpr size_t kMaxEntryPointers = 64;

/// An element type of the manifest and how it travels in NPY files
/// (bf16 as `<u2` holding the raw bits, i1 as `|b1`).
struct ElementInfo {
  std::string name;  ///< Kina spelling: "f32", "bf16", "i1", ...
  std::string descr; ///< Normalised NPY descr: "<f4", "<u2", "|b1", ...
  size_t size = 0;   ///< Bytes per element.
};

/// The ElementInfo of a Kina element type name; false if unknown.
bool lookupElement(const std::string &name, ElementInfo &out);

/// One argument or result of a manifest function.
struct TensorSignature {
  std::string name;              ///< Value name without '%'.
  ElementInfo element;           ///< Element type.
  int64_t rank = 0;              ///< Number of dims (0..8).
  std::vector<std::string> dims; ///< Each dim as written: "64", "?", "N".
  /// `f32[N, 64]`, as Kina IR writes the type.
  std::string typeString() const;
};

/// One exported function of the manifest.
struct FunctionSignature {
  std::string name;       ///< Kina name, without '@' or prefix.
  std::string entry;      ///< `kina_<prefix><name>`.
  std::string cInterface; ///< `_mlir_ciface_<prefix><name>`.
  std::vector<TensorSignature> arguments;
  std::vector<TensorSignature> results;
};

/// A parsed manifest.
struct Manifest {
  std::string text; ///< The JSON exactly as the library returned it.
  int version = 0;
  std::string module;
  std::string generator;
  std::string symbolPrefix;
  /// "cpu" or "cuda" (field "target"; "cpu" when absent): where the
  /// library's entries expect their arguments (host / CUDA managed memory).
  std::string target = "cpu";
  std::vector<FunctionSignature> functions;
  /// The function named `name` (Kina name), or nullptr.
  const FunctionSignature *lookup(const std::string &name) const;
};

/// Parses manifest JSON text; returns an empty string on success, else the
/// reason (a JSON syntax error, a missing or mistyped field, an unknown
/// element type, a format or version this kina-run does not read).
std::string parseManifest(const std::string &text, Manifest &out);

/// A loaded shared library. It stays loaded until the process exits (never
/// dlclosed: its runtime keeps thread-local state and a registry whose
/// destructors must not outlive its code).
class SharedModule {
public:
  SharedModule() = default;
  SharedModule(const SharedModule &) = delete;
  SharedModule &operator=(const SharedModule &) = delete;

  /// dlopens `path` (a path without '/' is taken relative to the current
  /// directory, not searched on the library path), reads and parses the
  /// manifest and resolves the runtime functions. Returns an empty string
  /// on success, else the reason.
  std::string open(const std::string &path);

  const Manifest &manifest() const { return parsed; }

  /// The address of symbol `name` in this library, or nullptr.
  void *symbol(const std::string &name) const;

  /// Calls `int32_t entry(pointers[0], ..., pointers[n-1])`; `entry` must be
  /// a status entry from this library and n <= kMaxEntryPointers.
  int32_t callEntry(void *entry, const std::vector<void *> &pointers) const;

  /// The library's runtime_free(allocated): 0, or 1 if not recorded.
  int32_t runtimeFree(void *allocated) const;
  /// The library's kina_last_error() for the calling thread.
  std::string lastError() const;
  /// The library's kina_status_name(status).
  std::string statusName(int32_t status) const;
  /// The library's runtime_live_buffer_count().
  int64_t liveBufferCount() const;
  /// The library's _mlir_ciface_runtime_gpu_alloc_unranked(unranked,
  /// elementSize): allocates CUDA managed memory for the ranked descriptor
  /// `unranked` points at (sizes set) and records it in the library's
  /// registry; returns the runtime's status (3 without a usable GPU; the
  /// reason in lastError()), or 4 if the library lacks the function.
  int32_t gpuAllocate(void *unranked, int32_t elementSize) const;

private:
  void *handle = nullptr;
  Manifest parsed;
  int32_t (*freeFn)(void *) = nullptr;
  const char *(*lastErrorFn)() = nullptr;
  const char *(*statusNameFn)(int32_t) = nullptr;
  int64_t (*liveCountFn)() = nullptr;
  int32_t (*gpuAllocFn)(void *, int32_t) = nullptr;
};

} // namespace run
} // namespace kina

#endif // KINA_RUN_SHAREDMODULE_H
