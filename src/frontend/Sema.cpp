//===- Sema.cpp - Name resolution and type/shape inference of Kina IR -----===//
//
// Semantic analysis of a parsed module (docs/language.md,
// "Module and functions", "Operations"): function-level checks (duplicate
// names, collisions with the runtime's C symbols, recursion), then, per
// function, name resolution and the inference of every statement's result
// types with NumPy broadcasting over static, `?` and symbolic dims
// (Shapes.h). This file holds the module, function and value level, the
// checks every statement goes through (the op's row of OpTable.h: operand
// count, attributes and their kinds, defaults; literal operands) and the
// dispatch on the op's family; the inference of each family is in
// Sema<Family>.cpp (SemaImpl.h lists them), as MLIRGen is split. Every error is a located diagnostic; analysis goes on after
// one, and a value whose statement failed gets no type, so that later uses
// of it do not report again. An unknown name (operation, attribute, gelu's
// `approximate`, element type, %value, @callee, shape dim) gets clang's
// "; did you mean 'x'?" (suggestName in Frontend.h); a wrong type at
// `return` or in a call argument gets a note at the definition of the
// value or at the callee's parameter (docs/diagnostics.md).
//
// Choices where the spec is silent (also in docs/):
//  - Annotations and declared result types: the element type and rank must
//    be equal; per dim, an inferred `?` takes the written size or symbol
//    (the refinement is checked at run time: Statement::inferredTypes keeps
//    the type before it), a written `?` accepts any inferred dim (the value
//    keeps the more precise inferred dim), and otherwise the dims must be
//    equal. Anything else is an error showing both types.
//  - Literal operands take the element type of the first %value operand of
//    the op's same-type group (for `call`, the parameter's type). For an
//    integer type the value must be exact (`add %i, 0.5` with i32 is an
//    error, `2.0` is 2); for a float type it rounds to nearest like any
//    decimal (0.1 is fine in f32) but must not overflow (70000 in f16 is an
//    error). `true`/`false` only fit i1, and i1 takes only the integers 0
//    and 1. A literal `gather` index is i64.
//  - Attribute defaults (the values the spec's table shows, kept in the op
//    table), added to the statement with Attribute::isDefault: gelu approximate = "none"; iota,
//    concat, gather axis = 0; transpose perm = reversed axes (NumPy);
//    argmax/argmin, softmax, log_softmax, layer_norm, rms_norm axis = -1;
//    reductions axes = [] (all), keepdims = false; slice step = [1, ...];
//    layer_norm epsilon = 1e-5, rms_norm epsilon = 1e-6. Required: cast
//    `to`, reshape/broadcast_to `shape`, slice `start`/`stop`. An integer is
//    accepted where a float attribute is expected.
//  - Symbolic names in `reshape`/`broadcast_to` shapes and in the types of
//    `constant`/`iota` must be dims of the function's parameters (their
//    sizes come from the arguments); those types may not hold `?`.
//  - i1 (as NumPy's bool): `add`/`max` are or, `mul`/`min` are and;
//    `sub div mod pow`, `neg abs` and `matmul` reject it; comparisons,
//    `select`, `cast`, layout ops, `argmax/argmin` and
//    `reduce_max/reduce_min` (any/all) take it.
//  - Functions need at least one result (parser). Exported functions must
//    not collide with the runtime's C symbols through `f`, `kina_f` or
//    `_mlir_ciface_f`; private ones through `f`. No two functions may define
//    the same C symbol (`@f` and `@kina_f`). Exported names must be C
//    identifiers (no '.'), private ones may hold '.'.
//
//===----------------------------------------------------------------------===//
#include "Format.h"
#include "SemaImpl.h"

#include "kina/Frontend.h"
#include "kina/OpTable.h"
#include "kina/Shapes.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/APInt.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <functional>
#include <map>
#include <set>

namespace kina {

//===----------------------------------------------------------------------===//
// Runtime symbol collisions
//===----------------------------------------------------------------------===//

namespace {
/// The runtime's C symbols (abi.h) and the reserved prefixes of its internal
/// symbols. `__kina_` holds the compiler's own helpers (MLIRGen.h's
/// `__kina_check`).
const char *const kRuntimeSymbols[] = {
    "kina_status_name",
    "kina_last_error",
    "kina_runtime_version",
    "kina_module_manifest",
    "runtime_free",
    "runtime_gpu_free_all",
    "runtime_live_buffer_count",
    "runtime_live_bytes",
    "_mlir_ciface_runtime_gpu_alloc_unranked",
    "_mlir_ciface_runtime_host_alloc_unranked",
};
const char *const kReservedPrefixes[] = {"kina_rt_", "runtime_", "__kina_"};

bool isRuntimeSymbol(llvm::StringRef s) {
  for (const char *r : kRuntimeSymbols)
    if (s == r)
      return true;
  for (const char *p : kReservedPrefixes)
    if (s.starts_with(p))
      return true;
  return false;
}

/// The C symbols generated for function `name`: `name` itself and, when
/// exported, its entry points `kina_name` and `_mlir_ciface_name`.
std::vector<std::string> generatedSymbols(llvm::StringRef name, bool exported) {
  std::vector<std::string> symbols = {name.str()};
  if (exported) {
    symbols.push_back("kina_" + name.str());
    symbols.push_back("_mlir_ciface_" + name.str());
  }
  return symbols;
}

/// The first symbol generated for function `name` that collides with the
/// runtime, or std::nullopt.
std::optional<std::string> collidingSymbol(llvm::StringRef name,
                                           bool exported) {
  for (const std::string &s : generatedSymbols(name, exported))
    if (isRuntimeSymbol(s))
      return s;
  return std::nullopt;
}
} // namespace

bool collidesWithRuntimeSymbol(llvm::StringRef exportedName) {
  return collidingSymbol(exportedName, /*exported=*/true).has_value();
}

namespace sema {

//===----------------------------------------------------------------------===//
// Diagnostic text
//===----------------------------------------------------------------------===//

/// `; did you mean 'PREFIX<name>'?` for the candidate nearest to `typo`
/// (suggestName), or "" when none is close. `quote` encloses the
/// suggestion (`'` for names, `"` for string values).
std::string didYouMean(llvm::StringRef typo,
                       llvm::ArrayRef<llvm::StringRef> candidates,
                       llvm::StringRef prefix, char quote) {
  std::optional<std::string> s = suggestName(typo, candidates);
  if (!s)
    return "";
  return "; did you mean " + std::string(1, quote) + prefix.str() + *s +
         std::string(1, quote) + "?";
}

std::string describeValue(const AttrValue &v) {
  switch (v.kind) {
  case AttrValue::Int:
    return "the integer " + std::to_string(v.intValue);
  case AttrValue::Float:
    return "the float " + formatFloat(v.floatValue);
  case AttrValue::Bool:
    return v.boolValue ? "'true'" : "'false'";
  case AttrValue::String:
    return "the string " + quoteString(v.stringValue);
  case AttrValue::Type:
    return std::string("the element type ") + elementTypeName(v.typeValue);
  case AttrValue::Symbol:
    return "the name '" + v.stringValue + "'";
  case AttrValue::List:
    return "a list";
  }
  return "?";
}

bool valueHasKind(const AttrValue &v, AttrKind k) {
  switch (k) {
  case AttrKind::Int:
    return v.kind == AttrValue::Int;
  case AttrKind::Float:
    return v.kind == AttrValue::Int || v.kind == AttrValue::Float;
  case AttrKind::Bool:
    return v.kind == AttrValue::Bool;
  case AttrKind::String:
    return v.kind == AttrValue::String;
  case AttrKind::Type:
    return v.kind == AttrValue::Type;
  case AttrKind::IntList:
  case AttrKind::ShapeList:
    if (v.kind != AttrValue::List)
      return false;
    for (const AttrValue &e : v.elements)
      if (e.kind != AttrValue::Int &&
          !(k == AttrKind::ShapeList && e.kind == AttrValue::Symbol))
        return false;
    return true;
  }
  return false;
}

std::string shapeString(llvm::ArrayRef<Dim> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + dimToString(dims[i]);
  return s + "]";
}

std::string listString(llvm::ArrayRef<int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string pluralize(size_t n, const char *word, const char *plural) {
  if (n == 1)
    return "1 " + std::string(word);
  return std::to_string(n) + " " +
         (plural ? std::string(plural) : std::string(word) + "s");
}

//===----------------------------------------------------------------------===//
// Literals
//===----------------------------------------------------------------------===//

const llvm::fltSemantics &semanticsOf(ElementType t) {
  switch (t) {
  case ElementType::F64:
    return llvm::APFloat::IEEEdouble();
  case ElementType::F16:
    return llvm::APFloat::IEEEhalf();
  case ElementType::BF16:
    return llvm::APFloat::BFloat();
  default:
    return llvm::APFloat::IEEEsingle();
  }
}

/// True when the literal is representable in `et` (see the file comment):
/// integer types need the exact value (integral, in range); float types
/// round to nearest like any decimal literal, but a finite literal must not
/// overflow to infinity.
bool literalFits(bool isBool, bool isInteger, int64_t iv, double fv,
                 ElementType et) {
  if (isBool)
    return et == ElementType::I1;
  if (et == ElementType::I1)
    return isInteger && (iv == 0 || iv == 1);
  if (isFloat(et)) {
    llvm::APFloat f(semanticsOf(et));
    if (isInteger) {
      llvm::APInt ai(64, static_cast<uint64_t>(iv), /*isSigned=*/true);
      f.convertFromAPInt(ai, /*IsSigned=*/true,
                         llvm::APFloat::rmNearestTiesToEven);
      return !f.isInfinity();
    }
    if (std::isnan(fv) || std::isinf(fv))
      return true;
    llvm::APFloat d(fv);
    bool losesInfo = false;
    d.convert(semanticsOf(et), llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    return !d.isInfinity();
  }
  unsigned bits = elementBitWidth(et);
  int64_t lo = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
  int64_t hi = bits == 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1;
  if (isInteger)
    return iv >= lo && iv <= hi;
  if (!std::isfinite(fv) || std::trunc(fv) != fv)
    return false;
  // -2^63 <= fv < 2^63 for i64.
  if (bits == 64)
    return fv >= -9223372036854775808.0 && fv < 9223372036854775808.0;
  return fv >= static_cast<double>(lo) && fv <= static_cast<double>(hi);
}

/// How a literal that does not fit `et` is described.
std::string doesNotFit(bool isBool, ElementType et) {
  if (isBool)
    return std::string("is a boolean and cannot be ") + elementTypeName(et) +
           " (only i1)";
  return std::string(isFloat(et) ? "is out of range for "
                                 : "is not exactly representable in ") +
         elementTypeName(et);
}

std::string literalSpelling(const Operand &o) {
  switch (o.kind) {
  case Operand::IntLiteral:
    return std::to_string(o.intValue);
  case Operand::FloatLiteral:
    return formatFloat(o.floatValue);
  case Operand::BoolLiteral:
    return o.intValue ? "true" : "false";
  default:
    return "%" + o.name;
  }
}

bool isLiteral(const Operand &o) {
  return o.kind == Operand::IntLiteral || o.kind == Operand::FloatLiteral ||
         o.kind == Operand::BoolLiteral;
}

//===----------------------------------------------------------------------===//
// Module, functions and values
//===----------------------------------------------------------------------===//

mlir::LogicalResult Sema::run() {
  checkFunctionNames();
  for (Function &f : module.functions)
    analyzeFunction(f);
  checkRecursion();
  return mlir::failure(failed);
}

void Sema::checkFunctionNames() {
  llvm::StringMap<mlir::Location> seen;
  llvm::StringMap<const Function *> symbolOwners;
  for (Function &f : module.functions) {
    auto [it, inserted] = seen.try_emplace(f.name, f.loc);
    if (!inserted) {
      mlir::InFlightDiagnostic d = error(f.loc);
      d << "redefinition of function @" << f.name;
      d.attachNote(it->second)
          << "previous definition of @" << f.name << " is here";
      continue;
    }
    // `@f` and `@kina_f` would both define the C symbol `kina_f`.
    // Exported functions' C symbols carry the prefix (`kina_<prefix><f>`).
    std::string cName = f.isPrivate ? f.name : symbolPrefix + f.name;
    for (const std::string &sym : generatedSymbols(cName, !f.isPrivate)) {
      auto [owner, fresh] = symbolOwners.try_emplace(sym, &f);
      if (!fresh) {
        mlir::InFlightDiagnostic d = error(f.loc);
        d << "function @" << f.name << " and function @" << owner->second->name
          << " would both define the C symbol '" << sym << "'";
        d.attachNote(owner->second->loc)
            << "@" << owner->second->name << " is here";
        break;
      }
    }
    // An exported function's entry points are C functions declared in the
    // generated header, so its name must be a C identifier (no '.').
    if (!f.isPrivate && f.name.find('.') != std::string::npos)
      error(f.loc) << "exported function @" << f.name
                   << " needs a name that is a C identifier (letters, digits "
                      "and '_'), since its entry point is 'kina_"
                   << f.name << "'; make it private or rename it";
    if (std::optional<std::string> sym = collidingSymbol(cName, !f.isPrivate)) {
      mlir::InFlightDiagnostic d = error(f.loc);
      d << "function name @" << f.name;
      if (cName != f.name)
        d << " (exported as '" << cName
          << "' with --symbol-prefix=" << symbolPrefix << ")";
      d << " collides with the runtime: its symbol '" << *sym
        << "' is a runtime C symbol or uses a reserved prefix "
           "(kina_rt_, runtime_, __kina_)";
    }
  }
}

void Sema::checkRecursion() {
  // Call graph on names; calls of unknown functions were reported already.
  std::map<std::string, std::set<std::string>> callees;
  for (const Function &f : module.functions)
    for (const Statement &st : f.body)
      if (st.op == "call" && module.lookup(st.callee))
        callees[f.name].insert(st.callee);
  auto reaches = [&](const std::string &from, const std::string &to) {
    std::set<std::string> visited;
    std::vector<std::string> stack = {from};
    while (!stack.empty()) {
      std::string cur = stack.back();
      stack.pop_back();
      if (cur == to)
        return true;
      if (!visited.insert(cur).second)
        continue;
      for (const std::string &c : callees[cur])
        stack.push_back(c);
    }
    return false;
  };
  for (const Function &f : module.functions)
    for (const Statement &st : f.body) {
      if (st.op != "call" || !module.lookup(st.callee))
        continue;
      if (st.callee == f.name)
        error(st.opLoc) << "@" << f.name
                        << " calls itself; recursion is not allowed (version "
                           "0 has no control flow, so it could not end)";
      else if (reaches(st.callee, f.name))
        error(st.opLoc) << "recursive call: @" << st.callee << " calls @"
                        << f.name
                        << " back; recursion is not allowed (version 0 has "
                           "no control flow, so it could not end)";
    }
}

void Sema::define(const std::string &name, mlir::Location loc, MaybeType type) {
  auto it = values.find(name);
  if (it != values.end()) {
    mlir::InFlightDiagnostic d = error(loc);
    d << "redefinition of %" << name;
    d.attachNote(it->second.loc)
        << "previous definition of %" << name << " is here";
    return;
  }
  values.try_emplace(name, ValueInfo{std::move(type), loc});
}

void Sema::analyzeFunction(Function &f) {
  fn = &f;
  values.clear();
  laterDefs.clear();
  paramSymbols.clear();
  for (const Param &p : f.params) {
    define(p.name, p.loc, p.type);
    for (const Dim &d : p.type.dims)
      if (d.kind == Dim::Symbolic)
        paramSymbols.insert(d.symbol);
  }
  for (const Statement &st : f.body)
    for (size_t i = 0; i < st.results.size(); ++i)
      laterDefs.try_emplace(st.results[i], st.resultLocs[i]);
  for (Statement &st : f.body)
    analyzeStatement(st);
  checkReturn();
}

/// "; did you mean '%v'?" for the value defined so far (parameters
/// included) nearest to the undefined `name`, or "".
std::string Sema::suggestValue(llvm::StringRef name) const {
  std::vector<llvm::StringRef> defined;
  for (const auto &entry : values)
    defined.push_back(entry.getKey());
  return didYouMean(name, defined, "%");
}

bool Sema::resolveValues(Statement &st) {
  bool ok = true;
  for (Operand &o : st.operands) {
    if (o.kind != Operand::Value)
      continue;
    auto it = values.find(o.name);
    if (it == values.end()) {
      auto later = laterDefs.find(o.name);
      if (later != laterDefs.end()) {
        mlir::InFlightDiagnostic d = error(o.loc);
        d << "use of %" << o.name << " before its definition";
        d.attachNote(later->second) << "%" << o.name << " is defined here";
      } else {
        error(o.loc) << "use of undefined value %" << o.name
                     << suggestValue(o.name);
      }
      ok = false;
      continue;
    }
    if (!it->second.type) {
      ok = false; // its statement failed and was reported
      continue;
    }
    o.type = *it->second.type;
  }
  return ok;
}

bool Sema::compatible(const TensorType &inferred, const TensorType &written,
                      TensorType &merged) const {
  if (inferred.elementType != written.elementType ||
      inferred.rank() != written.rank())
    return false;
  merged = inferred;
  for (int64_t i = 0; i < inferred.rank(); ++i) {
    const Dim &a = inferred.dims[i];
    const Dim &w = written.dims[i];
    if (w.kind == Dim::Dynamic)
      continue; // a written `?` accepts anything; keep the inferred dim
    if (a.kind == Dim::Dynamic) {
      merged.dims[i] = w; // refinement, checked at run time
      continue;
    }
    if (a != w)
      return false;
  }
  return true;
}

void Sema::analyzeStatement(Statement &st) {
  st.resultTypes.clear();
  st.inferredTypes.clear();
  std::optional<Types> types;
  const OpDesc *info = lookupOp(st.op);
  if (!info) {
    resolveValues(st);
    error(st.opLoc) << "unknown operation '" << st.op << "'"
                    << didYouMean(st.op, opNames());
  } else {
    types = infer(st, *info);
  }
  if (types) {
    for (const TensorType &t : *types)
      if (t.rank() > kMaxRank) {
        error(st.opLoc) << "'" << st.op << "' result " << t.str()
                        << " has rank " << t.rank()
                        << ", above the maximum rank " << kMaxRank;
        types.reset();
        break;
      } else if (!staticByteSizeFits(t)) {
        error(st.opLoc) << "'" << st.op << "' result " << t.str()
                        << " is too large: its size in bytes does not fit in "
                           "64 bits";
        types.reset();
        break;
      }
  }
  if (types) {
    st.inferredTypes = *types;
    Types merged = *types;
    bool writesOwnType = info && info->result == ResultRule::Written;
    if (st.annotation && !writesOwnType) {
      const Types &ann = *st.annotation;
      if (ann.size() != types->size()) {
        error(st.annotationLoc)
            << "the annotation gives " << pluralize(ann.size(), "type")
            << ", but '" << st.op << "' has "
            << pluralize(types->size(), "result");
        types.reset();
      } else {
        // A symbol in an annotation must be one of the parameters' dims:
        // only those have a run-time size to check the value against.
        for (const TensorType &t : ann)
          for (const Dim &d : t.dims)
            if (types && d.kind == Dim::Symbolic &&
                !paramSymbols.contains(d.symbol)) {
              error(st.annotationLoc)
                  << "symbolic dim '" << d.symbol << "' in the annotation of '"
                  << st.op << "' is not a dim of @" << fn->name
                  << "'s parameters, so its size is unknown";
              types.reset();
            }
        for (size_t i = 0; types && i < ann.size(); ++i)
          if (!compatible((*types)[i], ann[i], merged[i])) {
            error(st.annotationLoc)
                << "'" << st.op << "' result type " << (*types)[i].str()
                << " does not match the annotation " << ann[i].str();
            types.reset();
            break;
          }
      }
    }
    if (types)
      st.resultTypes = merged;
    else
      st.inferredTypes.clear();
  }
  // Define the results (with no type after an error: no cascade).
  size_t nameCount = st.results.size();
  if (types && types->size() != nameCount) {
    error(st.loc) << "'" << st.op << "' gives "
                  << pluralize(types->size(), "result") << ", but " << nameCount
                  << (nameCount == 1 ? " name is" : " names are") << " bound";
    st.resultTypes.clear();
    st.inferredTypes.clear();
    types.reset();
  }
  for (size_t i = 0; i < nameCount; ++i)
    define(st.results[i], st.resultLocs[i],
           types ? MaybeType(st.resultTypes[i]) : std::nullopt);
}

void Sema::checkReturn() {
  Function &f = *fn;
  bool ok = true;
  for (Operand &o : f.returns) {
    auto it = values.find(o.name);
    if (it == values.end()) {
      error(o.loc) << "use of undefined value %" << o.name << " in 'return'"
                   << suggestValue(o.name);
      ok = false;
    } else if (!it->second.type) {
      ok = false;
    } else {
      o.type = *it->second.type;
    }
  }
  if (f.returns.size() != f.results.size()) {
    error(f.returnLoc) << "'return' gives "
                       << pluralize(f.returns.size(), "value") << ", but @"
                       << f.name << " returns "
                       << pluralize(f.results.size(), "value");
    return;
  }
  if (!ok)
    return;
  for (size_t i = 0; i < f.returns.size(); ++i) {
    TensorType merged;
    if (!compatible(*f.returns[i].type, f.results[i], merged)) {
      const Operand &r = f.returns[i];
      mlir::InFlightDiagnostic d = error(r.loc);
      d << "return value %" << r.name << " has type " << r.type->str()
        << ", but @" << f.name << " declares result " << i + 1 << " as "
        << f.results[i].str();
      d.attachNote(values.find(r.name)->second.loc)
          << "%" << r.name << " defined here with type " << r.type->str();
    }
  }
}

//===----------------------------------------------------------------------===//
// Generic statement checks
//===----------------------------------------------------------------------===//

bool Sema::checkAttributes(Statement &st, const OpDesc &info) {
  bool ok = true;
  for (const Attribute &a : st.attrs) {
    if (a.isDefault)
      continue;
    const AttrDesc *spec = nullptr;
    for (const AttrDesc &s : info.attrs)
      if (a.name == s.name)
        spec = &s;
    if (!spec) {
      mlir::InFlightDiagnostic d = error(a.loc);
      d << "unknown attribute '" << a.name << "' for '" << st.op << "'";
      std::vector<llvm::StringRef> known;
      for (const AttrDesc &s : info.attrs)
        known.push_back(s.name);
      std::string suggestion = didYouMean(a.name, known);
      if (!suggestion.empty()) {
        d << suggestion;
      } else if (info.attrs.empty()) {
        d << " (it takes no attributes)";
      } else {
        d << " (expected ";
        for (size_t i = 0; i < info.attrs.size(); ++i)
          d << (i ? ", " : "") << "'" << info.attrs[i].name << "'";
        d << ")";
      }
      ok = false;
      continue;
    }
    if (!valueHasKind(a.value, spec->kind)) {
      std::string found = describeValue(a.value);
      if (a.value.kind == AttrValue::List)
        for (const AttrValue &e : a.value.elements)
          if (e.kind != AttrValue::Int) {
            found = "a list holding " + describeValue(e);
            break;
          }
      std::string suggestion;
      if (spec->kind == AttrKind::Type && a.value.kind == AttrValue::Symbol)
        suggestion = didYouMean(a.value.stringValue, elementTypeSpellings());
      error(a.value.loc) << "attribute '" << a.name << "' of '" << st.op
                         << "' must be " << describeAttrKind(spec->kind)
                         << ", found " << found << suggestion;
      ok = false;
    }
  }
  for (const AttrDesc &s : info.attrs)
    if (s.required() && !st.attr(s.name)) {
      error(st.opLoc) << "'" << st.op << "' needs the attribute '" << s.name
                      << "' (" << describeAttrKind(s.kind) << ")";
      ok = false;
    }
  return ok;
}

bool Sema::checkOperandCount(Statement &st, size_t lo, size_t hi) {
  size_t n = st.operands.size();
  if (n >= lo && n <= hi)
    return true;
  mlir::InFlightDiagnostic d = error(st.opLoc);
  d << "'" << st.op << "' expects ";
  if (lo == hi)
    d << pluralize(lo, "operand");
  else if (hi == kVariadic)
    d << "at least " << pluralize(lo, "operand");
  else
    d << lo << " to " << hi << " operands";
  d << ", found " << n;
  return false;
}

bool Sema::checkNoDense(Statement &st) {
  bool ok = true;
  for (const Operand &o : st.operands)
    if (o.kind == Operand::Dense) {
      error(o.loc) << "a dense<...> literal is only allowed as the operand "
                      "of 'constant'";
      ok = false;
    }
  return ok;
}

bool Sema::requireValue(Statement &st, size_t i) {
  Operand &o = st.operands[i];
  if (o.kind == Operand::Value)
    return true;
  error(o.loc) << "operand " << i + 1 << " of '" << st.op
               << "' must be a tensor %value, found the literal "
               << literalSpelling(o);
  return false;
}

bool Sema::fitLiteral(Operand &o, ElementType et) {
  if (!literalFits(o.kind == Operand::BoolLiteral,
                   o.kind != Operand::FloatLiteral, o.intValue, o.floatValue,
                   et)) {
    error(o.loc) << "literal " << literalSpelling(o) << " "
                 << doesNotFit(o.kind == Operand::BoolLiteral, et);
    return false;
  }
  o.type = TensorType{et, {}};
  return true;
}

bool Sema::typeLiteralGroup(Statement &st, llvm::ArrayRef<size_t> group) {
  std::optional<ElementType> et;
  for (size_t i : group)
    if (st.operands[i].kind == Operand::Value) {
      et = st.operands[i].type->elementType;
      break;
    }
  bool hasLiteral = false;
  for (size_t i : group)
    hasLiteral |= isLiteral(st.operands[i]);
  if (!hasLiteral)
    return true;
  if (!et) {
    error(st.opLoc) << "'" << st.op
                    << "' needs a %value operand to give its literal "
                       "operands an element type (use 'constant' for a "
                       "literal tensor)";
    return false;
  }
  bool ok = true;
  for (size_t i : group)
    if (isLiteral(st.operands[i]))
      ok &= fitLiteral(st.operands[i], *et);
  return ok;
}

bool Sema::sameElementType(Statement &st, llvm::ArrayRef<size_t> group) {
  const TensorType &first = *st.operands[group[0]].type;
  for (size_t i : group.drop_front()) {
    const TensorType &t = *st.operands[i].type;
    if (t.elementType != first.elementType) {
      error(st.opLoc) << "'" << st.op
                      << "' operands must have the same element type, found "
                      << first.str() << " and " << t.str() << " (use 'cast')";
      return false;
    }
  }
  return true;
}

void Sema::addDefault(Statement &st, const char *name,
                      std::optional<AttrValue> value) {
  if (st.attr(name))
    return;
  const AttrDesc *spec = desc->attr(name);
  assert(spec && "a default for an attribute the op table does not list");
  assert((spec->dflt.kind == AttrDefault::Computed) == value.has_value() &&
         "a computed default needs its value, a table default none");
  if (!value) {
    value.emplace(st.opLoc);
    const AttrDefault &d = spec->dflt;
    switch (d.kind) {
    case AttrDefault::Int:
      *value = intValue(d.intValue, st.opLoc);
      break;
    case AttrDefault::Float:
      value->kind = AttrValue::Float;
      value->floatValue = d.floatValue;
      break;
    case AttrDefault::Bool:
      value->kind = AttrValue::Bool;
      value->boolValue = d.intValue != 0;
      break;
    case AttrDefault::String:
      value->kind = AttrValue::String;
      value->stringValue = d.stringValue;
      break;
    case AttrDefault::IntList:
      value->kind = AttrValue::List;
      break;
    case AttrDefault::Required:
    case AttrDefault::Computed:
      llvm_unreachable("no default to add");
    }
  }
  Attribute a{name, std::move(*value), st.opLoc};
  a.isDefault = true;
  st.attrs.push_back(std::move(a));
}

std::optional<int64_t> Sema::axisAttr(Statement &st, const char *name,
                                      int64_t rank) {
  const Attribute *a = st.attr(name);
  std::optional<int64_t> axis = normalizeAxis(a->value.intValue, rank);
  if (!axis) {
    mlir::InFlightDiagnostic d = error(a->value.loc);
    d << "'" << st.op << "' " << name << " " << a->value.intValue
      << " is out of range for rank " << rank;
    if (rank > 0)
      d << " (expected " << -rank << " to " << rank - 1 << ")";
  }
  return axis;
}

bool Sema::checkStaticOrParamDims(Statement &st, const TensorType &t) {
  for (const Dim &d : t.dims) {
    if (d.kind == Dim::Dynamic) {
      error(st.annotationLoc) << "the type " << t.str() << " of '" << st.op
                              << "' must not have '?' dims";
      return false;
    }
    if (d.kind == Dim::Symbolic && !paramSymbols.contains(d.symbol)) {
      error(st.annotationLoc)
          << "symbolic dim '" << d.symbol << "' in the type of '" << st.op
          << "' is not a dim of @" << fn->name
          << "'s parameters, so its size is unknown";
      return false;
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Inference per op family
//===----------------------------------------------------------------------===//

std::optional<Types> Sema::infer(Statement &st, const OpDesc &info) {
  desc = &info;
  bool ok = resolveValues(st);
  ok &= checkAttributes(st, info);
  if (info.family != OpFamily::Constant)
    ok &= checkNoDense(st);
  ok &= checkOperandCount(st, info.minOperands, info.maxOperands);
  if (!ok)
    return std::nullopt;

  MaybeType t;
  switch (info.family) {
  case OpFamily::UnaryFloat:
  case OpFamily::UnaryNumeric:
  case OpFamily::Not:
    t = inferUnary(st);
    break;
  case OpFamily::Binary:
  case OpFamily::Compare:
    t = inferBinary(st);
    break;
  case OpFamily::Select:
    t = inferSelect(st);
    break;
  case OpFamily::Cast:
    t = inferCast(st);
    break;
  case OpFamily::Constant:
    t = inferConstant(st);
    break;
  case OpFamily::Iota:
    t = inferIota(st);
    break;
  case OpFamily::Matmul:
    t = inferMatmul(st);
    break;
  case OpFamily::Transpose:
    t = inferTranspose(st);
    break;
  case OpFamily::Reshape:
    t = inferReshape(st);
    break;
  case OpFamily::BroadcastTo:
    t = inferBroadcastTo(st);
    break;
  case OpFamily::Concat:
    t = inferConcat(st);
    break;
  case OpFamily::Slice:
    t = inferSlice(st);
    break;
  case OpFamily::Gather:
    t = inferGather(st);
    break;
  case OpFamily::Reduce:
    t = inferReduce(st);
    break;
  case OpFamily::ArgReduce:
    t = inferArgReduce(st);
    break;
  case OpFamily::Softmax:
    t = inferSoftmax(st);
    break;
  case OpFamily::LayerNorm:
    t = inferNorm(st, /*layerNorm=*/true);
    break;
  case OpFamily::RmsNorm:
    t = inferNorm(st, /*layerNorm=*/false);
    break;
  case OpFamily::Call:
    return inferCall(st);
  }
  if (!t)
    return std::nullopt;
  return Types{*t};
}

//===----------------------------------------------------------------------===//
// call
//===----------------------------------------------------------------------===//

std::optional<Types> Sema::inferCall(Statement &st) {
  const Function *callee = module.lookup(st.callee);
  if (!callee) {
    std::vector<llvm::StringRef> functions;
    for (const Function &f : module.functions)
      functions.push_back(f.name);
    error(st.opLoc) << "call of undefined function @" << st.callee
                    << didYouMean(st.callee, functions, "@");
    return std::nullopt;
  }
  if (st.operands.size() != callee->params.size()) {
    error(st.opLoc) << "call of @" << st.callee << " with "
                    << pluralize(st.operands.size(), "argument") << ", but @"
                    << st.callee << " takes "
                    << pluralize(callee->params.size(), "parameter");
    return std::nullopt;
  }
  // Bind the callee's symbolic dims to the argument dims.
  std::map<std::string, Dim> binding;
  bool ok = true;
  for (size_t i = 0; i < st.operands.size(); ++i) {
    Operand &o = st.operands[i];
    const Param &p = callee->params[i];
    if (isLiteral(o) && !fitLiteral(o, p.type.elementType)) {
      ok = false;
      continue;
    }
    const TensorType &a = *o.type;
    bool match =
        a.elementType == p.type.elementType && a.rank() == p.type.rank();
    std::string why;
    for (int64_t k = 0; match && k < a.rank(); ++k) {
      const Dim &pd = p.type.dims[k], &ad = a.dims[k];
      if (pd.kind == Dim::Symbolic) {
        auto [it, inserted] = binding.try_emplace(pd.symbol, ad);
        if (!inserted) {
          std::optional<Dim> u = unifyDim(it->second, ad);
          if (!u) {
            match = false;
            why = " (symbolic dim " + pd.symbol + " would be both " +
                  dimToString(it->second) + " and " + dimToString(ad) + ")";
          } else {
            it->second = *u;
          }
        }
      } else if (!unifyDim(pd, ad)) {
        match = false;
      }
    }
    if (!match) {
      mlir::InFlightDiagnostic d = error(o.loc);
      d << "argument " << i + 1 << " of the call of @" << st.callee
        << " has type " << a.str() << ", but the parameter %" << p.name
        << " has type " << p.type.str() << why;
      d.attachNote(p.loc) << "parameter %" << p.name << " of @" << st.callee
                          << " declared here with type " << p.type.str();
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  Types results;
  for (const TensorType &t : callee->results) {
    TensorType r = t;
    for (Dim &d : r.dims)
      if (d.kind == Dim::Symbolic) {
        auto it = binding.find(d.symbol);
        d = it == binding.end() ? Dim::dynamic() : it->second;
      }
    results.push_back(std::move(r));
  }
  return results;
}

} // namespace sema

mlir::LogicalResult analyzeModule(Module &module, mlir::MLIRContext &ctx,
                                  llvm::StringRef symbolPrefix) {
  (void)ctx; // diagnostics reach it through the modules' locations
  sema::Sema sema(module, symbolPrefix.str());
  return sema.run();
}

} // namespace kina
