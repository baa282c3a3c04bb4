//===- HeaderEmitter.cpp - Writing the C header of a module ---------------===//
//
// Implementation of HeaderEmitter.h. The per-function declarations follow
// the ABI section of the spec: `kina_<fn>(results..., args...)` with const
// argument descriptors, and MLIR's `_mlir_ciface_<fn>`, whose results come
// first through one pointer (a struct of descriptors when there are
// several, as MLIR's C interface defines it).
//
//===----------------------------------------------------------------------===//
#include "kina/HeaderEmitter.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/xxhash.h"

#include <cctype>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace kina {

const char *abiHeaderText() {
  return
#include "AbiHeader.inc"
      ;
}

namespace {

std::string memrefType(const TensorType &t) {
  return "KinaMemRef" + std::to_string(t.rank());
}

std::string kinaSignature(const Function &fn) {
  std::string s = "@" + fn.name + "(";
  for (size_t i = 0; i < fn.params.size(); ++i)
    s += (i ? ", %" : "%") + fn.params[i].name + ": " + fn.params[i].type.str();
  s += ") -> ";
  if (fn.results.size() == 1)
    return s + fn.results[0].str();
  s += "(";
  for (size_t i = 0; i < fn.results.size(); ++i)
    s += (i ? ", " : "") + fn.results[i].str();
  return s + ")";
}

/// The include guard of a module's header: its name, its symbol prefix and
/// a hash of its exported C names, so two modules with the same name (two
/// `model.kir` in different folders) get distinct guards whenever their
/// headers can be used together, whatever their prefixes; the same module
/// compiled twice with the same flags gets the same guard.
std::string guardName(const Module &module, const std::string &prefix) {
  auto upper = [](const std::string &text) {
    std::string u;
    for (char c : text)
      u += std::isalnum(static_cast<unsigned char>(c))
               ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
               : '_';
    return u;
  };
  std::string exported;
  for (const Function &fn : module.functions)
    if (!fn.isPrivate)
      exported += "kina_" + prefix + fn.name + ";";
  std::string g = "KINA_GENERATED_" + upper(module.name);
  if (!prefix.empty())
    g += "_P_" + upper(prefix);
  return g + "_" +
         llvm::utohexstr(llvm::xxh3_64bits(exported) & 0xffffffffu,
                         /*LowerCase=*/false, /*Width=*/8) +
         "_H_";
}

/// A C identifier for a Kina value name (`%x.1` -> `x_1`, `%0` -> `arg_0`).
std::string cName(const std::string &name) {
  std::string s;
  for (char c : name)
    s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    s = "arg_" + s;
  return s;
}

/// Words a parameter name must not be in a prototype that C89..C23 and
/// C++98..C++20 compilers all accept: keywords of both languages (with
/// C23's), macros of the standard headers a program may include before ours,
/// and the names the header itself uses.
bool isReservedInHeader(const std::string &s) {
  static const std::set<std::string> words = {
      // C
      "auto", "break", "case", "char", "const", "continue", "default", "do",
      "double", "else", "enum", "extern", "float", "for", "goto", "if",
      "inline", "int", "long", "register", "restrict", "return", "short",
      "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
      "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof",
      "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn",
      "_Static_assert", "_Thread_local", "alignas", "alignof", "bool",
      "constexpr", "false", "nullptr", "static_assert", "thread_local",
      "true", "typeof", "typeof_unqual", "_BitInt", "_Decimal32",
      "_Decimal64", "_Decimal128",
      // C++
      "and", "and_eq", "asm", "bitand", "bitor", "catch", "char8_t",
      "char16_t", "char32_t", "class", "co_await", "co_return", "co_yield",
      "compl", "concept", "const_cast", "consteval", "constinit", "decltype",
      "delete", "dynamic_cast", "explicit", "export", "friend", "mutable",
      "namespace", "new", "noexcept", "not", "not_eq", "operator", "or",
      "or_eq", "private", "protected", "public", "reinterpret_cast",
      "requires", "static_cast", "template", "this", "throw", "try",
      "typeid", "typename", "using", "virtual", "wchar_t", "xor", "xor_eq",
      // macros and typedefs of standard headers
      "NULL", "EOF", "errno", "assert", "stdin", "stdout", "stderr",
      "complex", "imaginary", "I", "offsetof", "noreturn", "int8_t",
      "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
      "uint64_t", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t",
      // the header's own names
      "result", "FfiErrorCode"};
  if (words.count(s))
    return true;
  llvm::StringRef r(s);
  // The entry's results (out0, out1, ...), and the ABI's types and macros.
  if (r.starts_with("out") && r.size() > 3 &&
      llvm::all_of(r.drop_front(3), llvm::isDigit))
    return true;
  return r.starts_with("Kina") || r.starts_with("KINA_") ||
         r.starts_with("kina_") || r.starts_with("runtime_") ||
         r.starts_with("__");
}

/// The C names of `fn`'s parameters in its prototypes: each Kina name made
/// a C identifier (cName), unless that is reserved (isReservedInHeader) or
/// taken by an earlier parameter (`%x.1` and `%x_1` both give `x_1`); then
/// `arg<i>` for the i-th parameter, with `_` appended until it is free.
/// Prototype parameter names are only documentation: the ABI is positional.
std::vector<std::string> paramNames(const Function &fn) {
  std::vector<std::string> names(fn.params.size());
  std::set<std::string> used;
  for (size_t i = 0; i < fn.params.size(); ++i) {
    std::string c = cName(fn.params[i].name);
    if (!isReservedInHeader(c) && used.insert(c).second)
      names[i] = c;
  }
  for (size_t i = 0; i < fn.params.size(); ++i) {
    if (!names[i].empty())
      continue;
    std::string c = "arg" + std::to_string(i);
    while (isReservedInHeader(c) || used.count(c))
      c += "_";
    used.insert(c);
    names[i] = c;
  }
  return names;
}

} // namespace

std::string emitHeader(const Module &module, const std::string &prefix,
                       const std::string &target) {
  std::ostringstream os;
  std::string guard = guardName(module, prefix);
  os << "/* Generated by kinac from module @" << module.name
     << ". Do not edit.\n"
     << " *\n"
     << " * Target: " << target << " (kinac --target=" << target << ").\n";
  if (target == "cuda")
    os << " * Argument memory: every argument must be CUDA managed or device\n"
       << " * memory (cudaMallocManaged, cudaMalloc, a PyTorch CUDA tensor, "
          "or\n"
       << " * _mlir_ciface_runtime_gpu_alloc_unranked); ordinary host memory\n"
       << " * makes the entry return 1 naming the argument. Results are CUDA\n"
       << " * managed memory the host can read when the entry has returned;\n"
       << " * a CUDA failure is status 3 (2 when the GPU is out of memory).\n";
  else
    os << " * Argument memory: arguments and results are host memory.\n";
  os << " *\n"
     << " * Link the object with libkina_runtime.a (kinac --print-link-flags\n"
     << " * gives the flags). Every entry returns a status code (0 on "
        "success;\n"
     << " * kina_status_name() names it, kina_last_error() explains it). */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << abiHeaderText() << "\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n";

  for (const Function &fn : module.functions) {
    if (fn.isPrivate)
      continue;
    std::string name = prefix + fn.name;
    os << "\n/* Kina: " << kinaSignature(fn) << "\n"
       << " *\n"
       << " * kina_" << name
       << ": results first (out*), then arguments. The callee checks the\n"
       << " * argument descriptors (null pointers, static sizes, symbolic "
          "dims equal\n"
       << " * wherever the same name appears, row-major contiguity) and "
          "returns 1\n"
       << " * on a mismatch; it allocates each result through the runtime "
          "and fills\n"
       << " * *out; the caller owns the results and frees each with\n"
       << " * runtime_free(out->allocated) (or all with "
          "runtime_gpu_free_all()).\n"
       << " * Arguments stay owned by the caller and are never written. On "
          "failure\n"
       << " * the result descriptors are zeroed. Returns 0, 1 (validation), "
          "2\n"
       << (target == "cuda"
               ? " * (allocation refused), 3 (CUDA error) or 5 (internal). */\n"
               : " * (allocation refused) or 5 (internal). */\n")
       << "int32_t kina_" << name << "(";
    std::vector<std::string> params = paramNames(fn);
    bool first = true;
    for (size_t i = 0; i < fn.results.size(); ++i) {
      os << (first ? "" : ", ") << memrefType(fn.results[i]) << " *out" << i;
      first = false;
    }
    for (size_t i = 0; i < fn.params.size(); ++i) {
      os << (first ? "" : ", ") << "const " << memrefType(fn.params[i].type)
         << " *" << params[i];
      first = false;
    }
    os << ");\n";

    // MLIR's C interface: one result pointer (a struct for several).
    std::string resultType;
    if (fn.results.size() == 1) {
      resultType = memrefType(fn.results[0]);
    } else {
      resultType = name + "_results";
      os << "\n/* The results of _mlir_ciface_" << name
         << ", in order, as MLIR's C interface packs them. */\n"
         << "typedef struct " << resultType << " {\n";
      for (size_t i = 0; i < fn.results.size(); ++i)
        os << "  " << memrefType(fn.results[i]) << " r" << i << ";\n";
      os << "} " << resultType << ";\n";
    }
    os << "\n/* MLIR C interface of @" << fn.name
       << " (llvm.emit_c_interface): no status and no\n"
       << " * argument checks. Each argument must be row-major contiguous "
          "with\n"
       << " * offset 0 (the memref types' identity layout; kina_" << name
       << "\n"
       << " * also accepts offsets). On an allocation failure the results "
          "come\n"
       << " * back with null pointers and kina_last_error() says why. Same\n"
       << " * ownership as kina_" << name << ". */\n"
       << "void _mlir_ciface_" << name << "(" << resultType << " *result";
    for (size_t i = 0; i < fn.params.size(); ++i)
      os << ", " << memrefType(fn.params[i].type) << " *" << params[i];
    os << ");\n";
  }
  os << "\n#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n#endif /* "
     << guard << " */\n";
  return os.str();
}

} // namespace kina
