//===- SharedModule.cpp - Loading a kinac shared library ------------------===//
//
// Implementation of SharedModule.h: dlopen/dlsym, the manifest parsed with
// nlohmann/json (its exceptions are caught here and become messages), and
// the call of a status entry with a run-time number of pointer arguments
// through a table of fixed-arity callers built at compile time (all
// arguments are pointers, so the C call is exact for every arity; no
// libffi needed).
//
//===----------------------------------------------------------------------===//
#include "SharedModule.h"

#include <nlohmann/json.hpp>

#include <array>
#include <cstring>
#include <utility>

#include <dlfcn.h>

namespace kina {
namespace run {

bool lookupElement(const std::string &name, ElementInfo &out) {
  static const ElementInfo table[] = {{"f64", "<f8", 8}, {"f32", "<f4", 4},
                                      {"f16", "<f2", 2}, {"bf16", "<u2", 2},
                                      {"i64", "<i8", 8}, {"i32", "<i4", 4},
                                      {"i8", "|i1", 1},  {"i1", "|b1", 1}};
  for (const ElementInfo &e : table)
    if (e.name == name) {
      out = e;
      return true;
    }
  return false;
}

std::string TensorSignature::typeString() const {
  std::string s = element.name + "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + dims[i];
  return s + "]";
}

const FunctionSignature *Manifest::lookup(const std::string &name) const {
  for (const FunctionSignature &f : functions)
    if (f.name == name)
      return &f;
  return nullptr;
}

namespace {

using Json = nlohmann::json;

/// Reads one argument or result; throws std::runtime_error on bad shape.
TensorSignature tensorFrom(const Json &j, const std::string &where) {
  TensorSignature t;
  t.name = j.at("name").get<std::string>();
  std::string type = j.at("element_type").get<std::string>();
  if (!lookupElement(type, t.element))
    throw std::runtime_error(where + " has the unknown element type '" + type +
                             "'");
  t.rank = j.at("rank").get<int64_t>();
  const Json &dims = j.at("dims");
  if (!dims.is_array() || static_cast<int64_t>(dims.size()) != t.rank ||
      t.rank < 0 || t.rank > 8)
    throw std::runtime_error(where + " has rank " + std::to_string(t.rank) +
                             " and " + std::to_string(dims.size()) + " dims");
  for (const Json &d : dims) {
    if (d.is_number_integer())
      t.dims.push_back(std::to_string(d.get<int64_t>()));
    else if (d.is_string())
      t.dims.push_back(d.get<std::string>());
    else
      throw std::runtime_error(where + " has a dim that is neither a number "
                                       "nor a string");
  }
  return t;
}

} // namespace

std::string parseManifest(const std::string &text, Manifest &out) {
  Manifest m;
  m.text = text;
  try {
    Json j = Json::parse(text);
    if (!j.is_object() || j.value("format", "") != "kina-manifest")
      return "not a kina manifest (no \"format\": \"kina-manifest\")";
    m.version = j.at("version").get<int>();
    if (m.version != kSupportedManifestVersion)
      return "manifest version " + std::to_string(m.version) +
             " is not supported (this kina-run reads version " +
             std::to_string(kSupportedManifestVersion) + ")";
    m.module = j.at("module").get<std::string>();
    m.generator = j.value("generator", "");
    m.symbolPrefix = j.value("symbol_prefix", "");
    m.target = j.value("target", "cpu");
    if (m.target != "cpu" && m.target != "cuda")
      return "the manifest's target '" + m.target +
             "' is not one this kina-run runs (cpu, cuda)";
    for (const Json &f : j.at("functions")) {
      FunctionSignature fn;
      fn.name = f.at("name").get<std::string>();
      fn.entry = f.at("symbols").at("entry").get<std::string>();
      fn.cInterface = f.at("symbols").at("c_interface").get<std::string>();
      for (const Json &a : f.at("arguments"))
        fn.arguments.push_back(tensorFrom(a, "an argument of @" + fn.name));
      for (const Json &r : f.at("results"))
        fn.results.push_back(tensorFrom(r, "a result of @" + fn.name));
      m.functions.push_back(std::move(fn));
    }
  } catch (const std::exception &e) {
    return std::string("the manifest does not parse: ") + e.what();
  }
  out = std::move(m);
  return "";
}

//===----------------------------------------------------------------------===//
// Loading
//===----------------------------------------------------------------------===//

namespace {

/// A function pointer from dlsym's object pointer (POSIX guarantees the
/// conversion; memcpy avoids the conditionally-supported cast).
template <typename Fn> Fn asFunction(void *p) {
  Fn fn;
  static_assert(sizeof(fn) == sizeof(p), "function and object pointers");
  std::memcpy(&fn, &p, sizeof(p));
  return fn;
}

using Caller = int32_t (*)(void *, void *const *);

/// `void *`, once per index: the parameter list of an N-pointer entry.
template <size_t> using PointerArg = void *;

template <size_t... I>
int32_t callWith(void *entry, void *const *args, std::index_sequence<I...>) {
  using Fn = int32_t (*)(PointerArg<I>...);
  (void)args; // unused by the zero-pointer caller
  return asFunction<Fn>(entry)(args[I]...);
}
template <size_t N> int32_t callN(void *entry, void *const *args) {
  return callWith(entry, args, std::make_index_sequence<N>());
}
template <size_t... N>
constexpr std::array<Caller, sizeof...(N)> callers(std::index_sequence<N...>) {
  return {&callN<N>...};
}
constexpr auto kCallers =
    callers(std::make_index_sequence<kMaxEntryPointers + 1>());

} // namespace

std::string SharedModule::open(const std::string &path) {
  std::string name = path.find('/') == std::string::npos ? "./" + path : path;
  dlerror();
  handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    return std::string("cannot load the library: ") + (why ? why : "?");
  }
  void *manifestFn = symbol("kina_module_manifest");
  if (!manifestFn)
    return "the library does not define kina_module_manifest() (build it "
           "with kinac --emit=shared)";
  const char *text = asFunction<const char *(*)()>(manifestFn)();
  if (!text)
    return "kina_module_manifest() returned null";
  if (std::string error = parseManifest(text, parsed); !error.empty())
    return error;
  freeFn = asFunction<int32_t (*)(void *)>(symbol("runtime_free"));
  lastErrorFn = asFunction<const char *(*)()>(symbol("kina_last_error"));
  statusNameFn =
      asFunction<const char *(*)(int32_t)>(symbol("kina_status_name"));
  liveCountFn = asFunction<int64_t (*)()>(symbol("runtime_live_buffer_count"));
  if (!freeFn || !lastErrorFn || !statusNameFn || !liveCountFn)
    return "the library lacks the kina runtime (runtime_free, "
           "kina_last_error, kina_status_name, runtime_live_buffer_count)";
  gpuAllocFn = asFunction<int32_t (*)(void *, int32_t)>(
      symbol("_mlir_ciface_runtime_gpu_alloc_unranked"));
  if (parsed.target == "cuda" && !gpuAllocFn)
    return "the manifest says target cuda, but the library lacks "
           "_mlir_ciface_runtime_gpu_alloc_unranked";
  return "";
}

void *SharedModule::symbol(const std::string &name) const {
  return handle ? dlsym(handle, name.c_str()) : nullptr;
}

int32_t SharedModule::callEntry(void *entry,
                                const std::vector<void *> &pointers) const {
  return kCallers.at(pointers.size())(entry, pointers.data());
}

int32_t SharedModule::runtimeFree(void *allocated) const {
  return freeFn(allocated);
}

std::string SharedModule::lastError() const {
  const char *s = lastErrorFn();
  return s ? s : "";
}

std::string SharedModule::statusName(int32_t status) const {
  const char *s = statusNameFn(status);
  return s ? s : "?";
}

int64_t SharedModule::liveBufferCount() const { return liveCountFn(); }

int32_t SharedModule::gpuAllocate(void *unranked, int32_t elementSize) const {
  return gpuAllocFn ? gpuAllocFn(unranked, elementSize) : 4;
}

} // namespace run
} // namespace kina
