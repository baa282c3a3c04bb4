//===- Sema.cpp - Name resolution and type/shape inference of Kina IR -----===//
//
// Semantic analysis of a parsed module (docs/language.md,
// "Module and functions", "Operations"): function-level checks (duplicate
// names, collisions with the runtime's C symbols, recursion), then, per
// function, name resolution and the inference of every statement's result
// types with NumPy broadcasting over static, `?` and symbolic dims
// (Shapes.h). Every error is a located diagnostic; analysis goes on after
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
//  - Attribute defaults (the values the spec's table shows), added to the
//    statement with Attribute::isDefault: gelu approximate = "none"; iota,
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

#include "kina/Frontend.h"
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

namespace {

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

enum class Family {
  UnaryFloat,
  UnaryNumeric, // neg, abs
  Not,
  Binary,
  Compare,
  Select,
  Cast,
  Constant,
  Iota,
  Matmul,
  Transpose,
  Reshape,
  BroadcastTo,
  Concat,
  Slice,
  Gather,
  Reduce,
  ArgReduce,
  Softmax,
  LayerNorm,
  RmsNorm,
  Call,
};

enum class AttrKind { Int, Float, Bool, String, Type, IntList, ShapeList };

struct AttrSpec {
  const char *name;
  AttrKind kind;
  bool required;
};

struct OpInfo {
  Family family;
  std::vector<AttrSpec> attrs;
};

const std::map<std::string, OpInfo> &opTable() {
  static const std::map<std::string, OpInfo> table = [] {
    std::map<std::string, OpInfo> t;
    for (const char *op : {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid",
                           "relu", "erf", "sin", "cos", "floor", "ceil"})
      t[op] = {Family::UnaryFloat, {}};
    t["gelu"] = {Family::UnaryFloat,
                 {{"approximate", AttrKind::String, false}}};
    t["neg"] = t["abs"] = {Family::UnaryNumeric, {}};
    t["not"] = {Family::Not, {}};
    for (const char *op :
         {"add", "sub", "mul", "div", "mod", "pow", "max", "min"})
      t[op] = {Family::Binary, {}};
    for (const char *op : {"eq", "ne", "lt", "le", "gt", "ge"})
      t[op] = {Family::Compare, {}};
    t["select"] = {Family::Select, {}};
    t["cast"] = {Family::Cast, {{"to", AttrKind::Type, true}}};
    t["constant"] = {Family::Constant, {}};
    t["iota"] = {Family::Iota, {{"axis", AttrKind::Int, false}}};
    t["matmul"] = {Family::Matmul, {}};
    t["transpose"] = {Family::Transpose, {{"perm", AttrKind::IntList, false}}};
    t["reshape"] = {Family::Reshape, {{"shape", AttrKind::ShapeList, true}}};
    t["broadcast_to"] = {Family::BroadcastTo,
                         {{"shape", AttrKind::ShapeList, true}}};
    t["concat"] = {Family::Concat, {{"axis", AttrKind::Int, false}}};
    t["slice"] = {Family::Slice,
                  {{"start", AttrKind::IntList, true},
                   {"stop", AttrKind::IntList, true},
                   {"step", AttrKind::IntList, false}}};
    t["gather"] = {Family::Gather, {{"axis", AttrKind::Int, false}}};
    for (const char *op : {"reduce_sum", "reduce_mean", "reduce_max",
                           "reduce_min", "reduce_prod"})
      t[op] = {Family::Reduce,
               {{"axes", AttrKind::IntList, false},
                {"keepdims", AttrKind::Bool, false}}};
    t["argmax"] = t["argmin"] = {
        Family::ArgReduce,
        {{"axis", AttrKind::Int, false}, {"keepdims", AttrKind::Bool, false}}};
    t["softmax"] =
        t["log_softmax"] = {Family::Softmax, {{"axis", AttrKind::Int, false}}};
    t["layer_norm"] = {
        Family::LayerNorm,
        {{"axis", AttrKind::Int, false}, {"epsilon", AttrKind::Float, false}}};
    t["rms_norm"] = {
        Family::RmsNorm,
        {{"axis", AttrKind::Int, false}, {"epsilon", AttrKind::Float, false}}};
    t["call"] = {Family::Call, {}};
    return t;
  }();
  return table;
}

const OpInfo *lookupOp(const std::string &name) {
  const std::map<std::string, OpInfo> &table = opTable();
  auto it = table.find(name);
  return it == table.end() ? nullptr : &it->second;
}

/// `; did you mean 'PREFIX<name>'?` for the candidate nearest to `typo`
/// (suggestName), or "" when none is close. `quote` encloses the
/// suggestion (`'` for names, `"` for string values).
std::string didYouMean(llvm::StringRef typo,
                       llvm::ArrayRef<llvm::StringRef> candidates,
                       llvm::StringRef prefix = "", char quote = '\'') {
  std::optional<std::string> s = suggestName(typo, candidates);
  if (!s)
    return "";
  return "; did you mean " + std::string(1, quote) + prefix.str() + *s +
         std::string(1, quote) + "?";
}

/// The names of the operations of the op table, for typo correction.
std::vector<llvm::StringRef> opNames() {
  std::vector<llvm::StringRef> names;
  for (const auto &entry : opTable())
    names.push_back(entry.first);
  return names;
}

const char *describeKind(AttrKind k) {
  switch (k) {
  case AttrKind::Int:
    return "an integer";
  case AttrKind::Float:
    return "a number";
  case AttrKind::Bool:
    return "a boolean (true or false)";
  case AttrKind::String:
    return "a string";
  case AttrKind::Type:
    return "an element type";
  case AttrKind::IntList:
    return "a list of integers";
  case AttrKind::ShapeList:
    return "a list of sizes and dim names";
  }
  return "?";
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

std::string pluralize(size_t n, const char *word,
                      const char *plural = nullptr) {
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
// Analysis
//===----------------------------------------------------------------------===//

using Types = std::vector<TensorType>;
using MaybeType = std::optional<TensorType>;

class Sema {
public:
  Sema(Module &m, std::string symbolPrefix)
      : module(m), symbolPrefix(std::move(symbolPrefix)) {}
  mlir::LogicalResult run();

private:
  mlir::InFlightDiagnostic error(mlir::Location l) {
    failed = true;
    return mlir::emitError(l);
  }

  // Module level.
  void checkFunctionNames();
  void checkRecursion();

  // Function level.
  void analyzeFunction(Function &fn);
  void analyzeStatement(Statement &st);
  void checkReturn();
  void define(const std::string &name, mlir::Location loc, MaybeType type);
  bool resolveValues(Statement &st);
  std::string suggestValue(llvm::StringRef name) const;

  // Statement level (st is the current statement).
  std::optional<Types> infer(Statement &st, const OpInfo &info);
  bool checkAttributes(Statement &st, const OpInfo &info);
  bool checkOperandCount(Statement &st, size_t lo, size_t hi);
  bool checkNoDense(Statement &st);
  bool requireValue(Statement &st, size_t i);
  bool typeLiteralGroup(Statement &st, llvm::ArrayRef<size_t> group);
  bool fitLiteral(Operand &o, ElementType et);
  bool sameElementType(Statement &st, llvm::ArrayRef<size_t> group);
  bool checkStaticOrParamDims(Statement &st, const TensorType &t);
  std::optional<int64_t> axisAttr(Statement &st, const char *name,
                                  int64_t rank);
  bool compatible(const TensorType &inferred, const TensorType &written,
                  TensorType &merged) const;
  void addDefault(Statement &st, const char *name, AttrValue value);
  AttrValue intValue(int64_t v, mlir::Location l) const {
    AttrValue a(l);
    a.kind = AttrValue::Int;
    a.intValue = v;
    a.floatValue = static_cast<double>(v);
    return a;
  }
  AttrValue listValue(llvm::ArrayRef<int64_t> v, mlir::Location l) const {
    AttrValue a(l);
    a.kind = AttrValue::List;
    for (int64_t x : v)
      a.elements.push_back(intValue(x, l));
    return a;
  }
  std::vector<int64_t> intList(const Statement &st, const char *name) const {
    std::vector<int64_t> v;
    for (const AttrValue &e : st.attr(name)->value.elements)
      v.push_back(e.intValue);
    return v;
  }

  MaybeType inferUnary(Statement &st, Family family);
  MaybeType inferBinary(Statement &st, Family family);
  MaybeType inferSelect(Statement &st);
  MaybeType inferCast(Statement &st);
  MaybeType inferConstant(Statement &st);
  MaybeType inferIota(Statement &st);
  MaybeType inferMatmul(Statement &st);
  MaybeType inferTranspose(Statement &st);
  MaybeType inferReshape(Statement &st);
  MaybeType inferBroadcastTo(Statement &st);
  MaybeType inferConcat(Statement &st);
  MaybeType inferSlice(Statement &st);
  MaybeType inferGather(Statement &st);
  MaybeType inferReduce(Statement &st);
  MaybeType inferArgReduce(Statement &st);
  MaybeType inferSoftmax(Statement &st);
  MaybeType inferNorm(Statement &st, bool layerNorm);
  std::optional<Types> inferCall(Statement &st);
  bool checkShapeList(Statement &st, bool allowMinusOne);

  Module &module;
  /// `--symbol-prefix`: exported symbols are kina_<prefix><name>, ...
  std::string symbolPrefix;
  bool failed = false;

  // Per function.
  Function *fn = nullptr;
  struct ValueInfo {
    MaybeType type;
    mlir::Location loc;
  };
  llvm::StringMap<ValueInfo> values;
  llvm::StringMap<mlir::Location> laterDefs;
  llvm::StringSet<> paramSymbols;
};

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
  const OpInfo *info = lookupOp(st.op);
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
    bool writesOwnType = info && (info->family == Family::Constant ||
                                  info->family == Family::Iota);
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

bool Sema::checkAttributes(Statement &st, const OpInfo &info) {
  bool ok = true;
  for (const Attribute &a : st.attrs) {
    if (a.isDefault)
      continue;
    const AttrSpec *spec = nullptr;
    for (const AttrSpec &s : info.attrs)
      if (a.name == s.name)
        spec = &s;
    if (!spec) {
      mlir::InFlightDiagnostic d = error(a.loc);
      d << "unknown attribute '" << a.name << "' for '" << st.op << "'";
      std::vector<llvm::StringRef> known;
      for (const AttrSpec &s : info.attrs)
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
                         << "' must be " << describeKind(spec->kind)
                         << ", found " << found << suggestion;
      ok = false;
    }
  }
  for (const AttrSpec &s : info.attrs)
    if (s.required && !st.attr(s.name)) {
      error(st.opLoc) << "'" << st.op << "' needs the attribute '" << s.name
                      << "' (" << describeKind(s.kind) << ")";
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
  else if (hi == SIZE_MAX)
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

void Sema::addDefault(Statement &st, const char *name, AttrValue value) {
  if (st.attr(name))
    return;
  Attribute a{name, std::move(value), st.opLoc};
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

std::optional<Types> Sema::infer(Statement &st, const OpInfo &info) {
  bool ok = resolveValues(st);
  ok &= checkAttributes(st, info);
  if (info.family != Family::Constant)
    ok &= checkNoDense(st);
  size_t lo = 1, hi = 1;
  switch (info.family) {
  case Family::Binary:
  case Family::Compare:
  case Family::Matmul:
  case Family::Gather:
  case Family::RmsNorm:
    lo = hi = 2;
    break;
  case Family::Select:
  case Family::LayerNorm:
    lo = hi = 3;
    break;
  case Family::Iota:
    lo = hi = 0;
    break;
  case Family::Concat:
    hi = SIZE_MAX;
    break;
  case Family::Call:
    lo = 0;
    hi = SIZE_MAX;
    break;
  default:
    break;
  }
  ok &= checkOperandCount(st, lo, hi);
  if (!ok)
    return std::nullopt;

  MaybeType t;
  switch (info.family) {
  case Family::UnaryFloat:
  case Family::UnaryNumeric:
  case Family::Not:
    t = inferUnary(st, info.family);
    break;
  case Family::Binary:
  case Family::Compare:
    t = inferBinary(st, info.family);
    break;
  case Family::Select:
    t = inferSelect(st);
    break;
  case Family::Cast:
    t = inferCast(st);
    break;
  case Family::Constant:
    t = inferConstant(st);
    break;
  case Family::Iota:
    t = inferIota(st);
    break;
  case Family::Matmul:
    t = inferMatmul(st);
    break;
  case Family::Transpose:
    t = inferTranspose(st);
    break;
  case Family::Reshape:
    t = inferReshape(st);
    break;
  case Family::BroadcastTo:
    t = inferBroadcastTo(st);
    break;
  case Family::Concat:
    t = inferConcat(st);
    break;
  case Family::Slice:
    t = inferSlice(st);
    break;
  case Family::Gather:
    t = inferGather(st);
    break;
  case Family::Reduce:
    t = inferReduce(st);
    break;
  case Family::ArgReduce:
    t = inferArgReduce(st);
    break;
  case Family::Softmax:
    t = inferSoftmax(st);
    break;
  case Family::LayerNorm:
    t = inferNorm(st, /*layerNorm=*/true);
    break;
  case Family::RmsNorm:
    t = inferNorm(st, /*layerNorm=*/false);
    break;
  case Family::Call:
    return inferCall(st);
  }
  if (!t)
    return std::nullopt;
  return Types{*t};
}

MaybeType Sema::inferUnary(Statement &st, Family family) {
  if (!typeLiteralGroup(st, {0}))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  if (family == Family::UnaryFloat && !isFloat(x.elementType)) {
    error(st.opLoc) << "'" << st.op
                    << "' expects a float tensor (f64, f32, f16, bf16), "
                       "found "
                    << x.str();
    return std::nullopt;
  }
  if (family == Family::UnaryNumeric && x.elementType == ElementType::I1) {
    error(st.opLoc) << "'" << st.op
                    << "' expects a float or integer tensor, found " << x.str()
                    << " (use 'not' on i1)";
    return std::nullopt;
  }
  if (family == Family::Not && x.elementType != ElementType::I1) {
    error(st.opLoc) << "'not' expects an i1 tensor, found " << x.str();
    return std::nullopt;
  }
  if (st.op == "gelu") {
    if (const Attribute *a = st.attr("approximate")) {
      if (a->value.stringValue != "none" && a->value.stringValue != "tanh") {
        error(a->value.loc)
            << "'gelu' approximate must be \"none\" or "
               "\"tanh\", found "
            << quoteString(a->value.stringValue)
            << didYouMean(a->value.stringValue, {"none", "tanh"}, "", '"');
        return std::nullopt;
      }
    } else {
      AttrValue v(st.opLoc);
      v.kind = AttrValue::String;
      v.stringValue = "none";
      addDefault(st, "approximate", v);
    }
  }
  return x;
}

MaybeType Sema::inferBinary(Statement &st, Family family) {
  if (!typeLiteralGroup(st, {0, 1}) || !sameElementType(st, {0, 1}))
    return std::nullopt;
  const TensorType &a = *st.operands[0].type;
  const TensorType &b = *st.operands[1].type;
  // On i1, NumPy's add and maximum are `or`, multiply and minimum `and`.
  if (family == Family::Binary && a.elementType == ElementType::I1 &&
      st.op != "add" && st.op != "mul" && st.op != "max" && st.op != "min") {
    error(st.opLoc) << "'" << st.op << "' does not take i1 operands, found "
                    << a.str() << " and " << b.str()
                    << " (on i1, add/max is or, mul/min is and; or 'cast')";
    return std::nullopt;
  }
  int64_t bad = 0;
  std::optional<std::vector<Dim>> dims = broadcastShapes(a.dims, b.dims, &bad);
  if (!dims) {
    error(st.opLoc) << "'" << st.op << "' operands " << a.str() << " and "
                    << b.str()
                    << " do not broadcast (static sizes differ in result "
                       "dim "
                    << bad << ")";
    return std::nullopt;
  }
  return TensorType{family == Family::Compare ? ElementType::I1 : a.elementType,
                    *dims};
}

MaybeType Sema::inferSelect(Statement &st) {
  Operand &c = st.operands[0];
  if (c.kind == Operand::BoolLiteral) {
    c.type = TensorType{ElementType::I1, {}};
  } else if (c.kind != Operand::Value) {
    error(c.loc) << "the condition of 'select' must be i1 (a %value, true "
                    "or false), found the literal "
                 << literalSpelling(c);
    return std::nullopt;
  } else if (c.type->elementType != ElementType::I1) {
    error(st.opLoc) << "the condition of 'select' must be i1, found "
                    << c.type->str();
    return std::nullopt;
  }
  if (!typeLiteralGroup(st, {1, 2}) || !sameElementType(st, {1, 2}))
    return std::nullopt;
  const TensorType &a = *st.operands[1].type;
  const TensorType &b = *st.operands[2].type;
  std::optional<std::vector<Dim>> dims = broadcastShapes(c.type->dims, a.dims);
  if (dims)
    dims = broadcastShapes(*dims, b.dims);
  if (!dims) {
    error(st.opLoc) << "'select' operands " << c.type->str() << ", " << a.str()
                    << " and " << b.str()
                    << " do not broadcast (static sizes differ)";
    return std::nullopt;
  }
  return TensorType{a.elementType, *dims};
}

MaybeType Sema::inferCast(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  TensorType t = *st.operands[0].type;
  t.elementType = st.attr("to")->value.typeValue;
  return t;
}

MaybeType Sema::inferConstant(Statement &st) {
  if (!st.annotation) {
    error(st.opLoc) << "'constant' needs its type written after the value "
                       "(e.g. 'constant 0.5 : f32')";
    return std::nullopt;
  }
  if (st.annotation->size() != 1) {
    error(st.annotationLoc) << "'constant' has one result, but the "
                               "annotation gives "
                            << pluralize(st.annotation->size(), "type");
    return std::nullopt;
  }
  const TensorType &type = st.annotation->front();
  Operand &o = st.operands[0];
  if (o.kind == Operand::Value) {
    error(o.loc) << "'constant' takes a literal or dense<...>, found %"
                 << o.name;
    return std::nullopt;
  }
  if (!checkStaticOrParamDims(st, type))
    return std::nullopt;
  ElementType et = type.elementType;
  if (isLiteral(o)) {
    if (!fitLiteral(o, et))
      return std::nullopt;
    return type;
  }
  // dense<...>: a single number is a splat; a list must have the type's
  // (static) shape.
  const DenseLiteral &lit = *o.dense;
  bool ok = true;
  std::function<void(const DenseLiteral &)> checkLeaves =
      [&](const DenseLiteral &e) {
        if (e.isList) {
          for (const DenseLiteral &c : e.elements)
            checkLeaves(c);
          return;
        }
        if (!literalFits(e.isBool, e.isInteger, e.intValue, e.floatValue, et)) {
          std::string spelled = e.isBool      ? (e.intValue ? "true" : "false")
                                : e.isInteger ? std::to_string(e.intValue)
                                              : formatFloat(e.floatValue);
          error(e.loc) << "literal " << spelled << " "
                       << doesNotFit(e.isBool, et);
          ok = false;
        }
      };
  if (lit.isList) {
    // The literal's shape, from its first elements; then every list at
    // depth k must have shape[k] elements.
    std::vector<int64_t> shape;
    for (const DenseLiteral *e = &lit; e->isList;
         e = e->elements.empty() ? nullptr : &e->elements.front()) {
      shape.push_back(static_cast<int64_t>(e->elements.size()));
      if (e->elements.empty())
        break;
    }
    std::function<bool(const DenseLiteral &, size_t)> rectangular =
        [&](const DenseLiteral &e, size_t depth) -> bool {
      bool wantList = depth < shape.size();
      if (e.isList != wantList) {
        error(e.loc) << "dense literal is not rectangular: expected "
                     << (wantList ? "a list" : "a number") << " at depth "
                     << depth;
        return false;
      }
      if (!wantList)
        return true;
      if (static_cast<int64_t>(e.elements.size()) != shape[depth]) {
        error(e.loc) << "dense literal is not rectangular: expected "
                     << shape[depth] << " elements, found "
                     << e.elements.size();
        return false;
      }
      for (const DenseLiteral &c : e.elements)
        if (!rectangular(c, depth + 1))
          return false;
      return true;
    };
    if (!rectangular(lit, 0))
      return std::nullopt;
    bool matches = type.rank() == static_cast<int64_t>(shape.size());
    for (size_t i = 0; matches && i < shape.size(); ++i)
      matches = type.dims[i].isStatic() && type.dims[i].size == shape[i];
    if (!matches) {
      error(o.loc) << "dense literal has shape " << listString(shape)
                   << ", but the type is " << type.str();
      return std::nullopt;
    }
  }
  checkLeaves(lit);
  if (!ok)
    return std::nullopt;
  o.type = type;
  return type;
}

MaybeType Sema::inferIota(Statement &st) {
  if (!st.annotation) {
    error(st.opLoc) << "'iota' needs its type written (e.g. 'iota {axis = 0} "
                       ": i64[8]')";
    return std::nullopt;
  }
  if (st.annotation->size() != 1) {
    error(st.annotationLoc) << "'iota' has one result, but the annotation "
                               "gives "
                            << pluralize(st.annotation->size(), "type");
    return std::nullopt;
  }
  const TensorType &type = st.annotation->front();
  if (type.elementType == ElementType::I1) {
    error(st.annotationLoc) << "'iota' needs an integer or float element "
                               "type other than i1, found "
                            << type.str();
    return std::nullopt;
  }
  if (!checkStaticOrParamDims(st, type))
    return std::nullopt;
  addDefault(st, "axis", intValue(0, st.opLoc));
  if (!axisAttr(st, "axis", type.rank()))
    return std::nullopt;
  return type;
}

MaybeType Sema::inferMatmul(Statement &st) {
  if (!requireValue(st, 0) || !requireValue(st, 1) ||
      !sameElementType(st, {0, 1}))
    return std::nullopt;
  const TensorType &ta = *st.operands[0].type;
  const TensorType &tb = *st.operands[1].type;
  if (ta.elementType == ElementType::I1) {
    error(st.opLoc) << "'matmul' does not take i1 operands, found " << ta.str()
                    << " and " << tb.str();
    return std::nullopt;
  }
  if (ta.rank() == 0 || tb.rank() == 0) {
    error(st.opLoc) << "'matmul' operands must have rank >= 1, found "
                    << ta.str() << " and " << tb.str() << " (use 'mul')";
    return std::nullopt;
  }
  // NumPy: a rank-1 left operand is a row [1, K], a rank-1 right operand a
  // column [K, 1]; the added dim is removed from the result.
  std::vector<Dim> a = ta.dims, b = tb.dims;
  bool aVec = a.size() == 1, bVec = b.size() == 1;
  if (aVec)
    a.insert(a.begin(), Dim::fixed(1));
  if (bVec)
    b.push_back(Dim::fixed(1));
  const Dim &ka = a[a.size() - 1], &kb = b[b.size() - 2];
  if (!unifyDim(ka, kb)) {
    error(st.opLoc) << "'matmul' contraction dims differ: " << ta.str() << " x "
                    << tb.str() << " (" << dimToString(ka) << " vs "
                    << dimToString(kb) << ")";
    return std::nullopt;
  }
  std::optional<std::vector<Dim>> batch = broadcastShapes(
      llvm::ArrayRef<Dim>(a).drop_back(2), llvm::ArrayRef<Dim>(b).drop_back(2));
  if (!batch) {
    error(st.opLoc) << "'matmul' batch dims of " << ta.str() << " and "
                    << tb.str() << " do not broadcast";
    return std::nullopt;
  }
  std::vector<Dim> dims = *batch;
  if (!aVec)
    dims.push_back(a[a.size() - 2]);
  if (!bVec)
    dims.push_back(b[b.size() - 1]);
  return TensorType{ta.elementType, dims};
}

MaybeType Sema::inferTranspose(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  int64_t rank = x.rank();
  if (!st.attr("perm")) {
    std::vector<int64_t> rev;
    for (int64_t i = rank - 1; i >= 0; --i)
      rev.push_back(i);
    addDefault(st, "perm", listValue(rev, st.opLoc));
  }
  const Attribute *a = st.attr("perm");
  std::vector<int64_t> perm = intList(st, "perm");
  if (static_cast<int64_t>(perm.size()) != rank) {
    error(a->value.loc) << "'transpose' perm " << listString(perm) << " has "
                        << pluralize(perm.size(), "entry", "entries")
                        << ", but the operand " << x.str() << " has rank "
                        << rank;
    return std::nullopt;
  }
  std::vector<bool> seen(rank, false);
  TensorType r{x.elementType, {}};
  for (int64_t p : perm) {
    std::optional<int64_t> ax = normalizeAxis(p, rank);
    if (!ax) {
      error(a->value.loc) << "'transpose' perm entry " << p
                          << " is out of range for rank " << rank;
      return std::nullopt;
    }
    if (seen[*ax]) {
      error(a->value.loc) << "'transpose' perm " << listString(perm)
                          << " is not a permutation: axis " << *ax
                          << " appears twice";
      return std::nullopt;
    }
    seen[*ax] = true;
    r.dims.push_back(x.dims[*ax]);
  }
  return r;
}

bool Sema::checkShapeList(Statement &st, bool allowMinusOne) {
  const Attribute *a = st.attr("shape");
  int minusOnes = 0;
  for (const AttrValue &e : a->value.elements) {
    if (e.kind == AttrValue::Symbol) {
      if (!paramSymbols.contains(e.stringValue)) {
        std::vector<llvm::StringRef> dims;
        for (const auto &entry : paramSymbols)
          dims.push_back(entry.getKey());
        error(e.loc) << "'" << st.op << "' shape uses '" << e.stringValue
                     << "', which is not a symbolic dim of @" << fn->name
                     << "'s parameters" << didYouMean(e.stringValue, dims);
        return false;
      }
      continue;
    }
    if (e.intValue == -1 && allowMinusOne) {
      if (++minusOnes > 1) {
        error(e.loc) << "'" << st.op << "' shape may hold only one -1";
        return false;
      }
      continue;
    }
    if (e.intValue < 0) {
      error(e.loc) << "'" << st.op << "' shape entry " << e.intValue
                   << " is negative"
                   << (allowMinusOne ? " (only one -1 is allowed)" : "");
      return false;
    }
  }
  if (static_cast<int64_t>(a->value.elements.size()) > kMaxRank) {
    error(a->value.loc) << "'" << st.op << "' shape has "
                        << a->value.elements.size()
                        << " entries, above the maximum rank " << kMaxRank;
    return false;
  }
  return true;
}

MaybeType Sema::inferReshape(Statement &st) {
  if (!requireValue(st, 0) || !checkShapeList(st, /*allowMinusOne=*/true))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  const Attribute *a = st.attr("shape");
  // Element counts as static product x symbol multiset (+ unknown `?`).
  int64_t inStatic = 1;
  bool inDynamic = false;
  std::multiset<std::string> inSyms, outSyms;
  bool inOverflow = false;
  for (const Dim &d : x.dims) {
    if (d.isStatic()) {
      if (__builtin_mul_overflow(inStatic, d.size, &inStatic))
        inOverflow = true;
    } else if (d.kind == Dim::Symbolic) {
      inSyms.insert(d.symbol);
    } else {
      inDynamic = true;
    }
  }
  int64_t outStatic = 1;
  int64_t minusOneAt = -1;
  TensorType r{x.elementType, {}};
  for (const AttrValue &e : a->value.elements) {
    if (e.kind == AttrValue::Symbol) {
      outSyms.insert(e.stringValue);
      r.dims.push_back(Dim::named(e.stringValue));
    } else if (e.intValue == -1) {
      minusOneAt = r.rank();
      r.dims.push_back(Dim::dynamic());
    } else {
      if (__builtin_mul_overflow(outStatic, e.intValue, &outStatic))
        inOverflow = true;
      r.dims.push_back(Dim::fixed(e.intValue));
    }
  }
  bool comparable = !inDynamic && !inOverflow && inSyms == outSyms;
  if (minusOneAt < 0) {
    if (comparable && inStatic != outStatic) {
      error(st.opLoc) << "'reshape' cannot turn " << x.str() << " into "
                      << r.str() << ": the element counts differ";
      return std::nullopt;
    }
    return r;
  }
  if (comparable) {
    if (outStatic == 0 || inStatic % outStatic != 0) {
      error(st.opLoc) << "'reshape' cannot turn " << x.str() << " into "
                      << "shape " << r.str()
                      << " with -1: the other sizes do not divide the "
                         "element count";
      return std::nullopt;
    }
    r.dims[minusOneAt] = Dim::fixed(inStatic / outStatic);
  }
  return r;
}

MaybeType Sema::inferBroadcastTo(Statement &st) {
  if (!requireValue(st, 0) || !checkShapeList(st, /*allowMinusOne=*/false))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  TensorType r{x.elementType, {}};
  for (const AttrValue &e : st.attr("shape")->value.elements)
    r.dims.push_back(e.kind == AttrValue::Symbol ? Dim::named(e.stringValue)
                                                 : Dim::fixed(e.intValue));
  if (x.rank() > r.rank()) {
    error(st.opLoc) << "'broadcast_to' cannot lower the rank: " << x.str()
                    << " to " << r.str();
    return std::nullopt;
  }
  int64_t off = r.rank() - x.rank();
  for (int64_t i = 0; i < x.rank(); ++i) {
    const Dim &d = x.dims[i], &t = r.dims[off + i];
    if (d.isStatic() && d.size == 1)
      continue;
    if (!unifyDim(d, t)) {
      error(st.opLoc) << "'broadcast_to' cannot broadcast " << x.str() << " to "
                      << r.str() << " (dim " << i << ": " << dimToString(d)
                      << " vs " << dimToString(t) << ")";
      return std::nullopt;
    }
  }
  return r;
}

MaybeType Sema::inferConcat(Statement &st) {
  std::vector<size_t> all;
  for (size_t i = 0; i < st.operands.size(); ++i) {
    if (!requireValue(st, i))
      return std::nullopt;
    all.push_back(i);
  }
  if (!sameElementType(st, all))
    return std::nullopt;
  const TensorType &first = *st.operands[0].type;
  addDefault(st, "axis", intValue(0, st.opLoc));
  std::optional<int64_t> axis = axisAttr(st, "axis", first.rank());
  if (!axis)
    return std::nullopt;
  TensorType r = first;
  bool allStatic = first.dims[*axis].isStatic();
  int64_t sum = allStatic ? first.dims[*axis].size : 0;
  for (size_t i = 1; i < st.operands.size(); ++i) {
    const TensorType &t = *st.operands[i].type;
    if (t.rank() != first.rank()) {
      error(st.opLoc) << "'concat' operands must have the same rank, found "
                      << first.str() << " and " << t.str();
      return std::nullopt;
    }
    for (int64_t d = 0; d < t.rank(); ++d) {
      if (d == *axis) {
        if (t.dims[d].isStatic() && allStatic)
          allStatic = !__builtin_add_overflow(sum, t.dims[d].size, &sum);
        else
          allStatic = false;
        continue;
      }
      std::optional<Dim> u = unifyDim(r.dims[d], t.dims[d]);
      if (!u) {
        error(st.opLoc) << "'concat' operands " << first.str() << " and "
                        << t.str() << " differ in dim " << d
                        << ", which is not the concatenation axis " << *axis;
        return std::nullopt;
      }
      r.dims[d] = *u;
    }
  }
  r.dims[*axis] = allStatic ? Dim::fixed(sum) : Dim::dynamic();
  return r;
}

MaybeType Sema::inferSlice(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  int64_t rank = x.rank();
  if (!st.attr("step"))
    addDefault(st, "step", listValue(std::vector<int64_t>(rank, 1), st.opLoc));
  std::vector<int64_t> start = intList(st, "start"), stop = intList(st, "stop"),
                       step = intList(st, "step");
  for (const char *name : {"start", "stop", "step"}) {
    const Attribute *a = st.attr(name);
    if (static_cast<int64_t>(a->value.elements.size()) != rank) {
      error(a->value.loc) << "'slice' " << name << " has "
                          << pluralize(a->value.elements.size(), "entry",
                                       "entries")
                          << ", but the operand " << x.str() << " has rank "
                          << rank;
      return std::nullopt;
    }
  }
  const Attribute *stepAttr = st.attr("step");
  for (int64_t i = 0; i < rank; ++i)
    if (step[i] == 0) {
      error(stepAttr->value.elements[i].loc)
          << "'slice' step must not be 0 (dim " << i << ")";
      return std::nullopt;
    }
  TensorType r{x.elementType, {}};
  for (int64_t i = 0; i < rank; ++i) {
    const Dim &d = x.dims[i];
    if (d.isStatic()) {
      r.dims.push_back(Dim::fixed(
          normalizeSlice(start[i], stop[i], step[i], d.size).length));
      continue;
    }
    // Slices that keep every element whatever the size keep the dim.
    bool whole = (step[i] == 1 && (start[i] == 0 || start[i] == INT64_MIN) &&
                  stop[i] == INT64_MAX) ||
                 (step[i] == -1 && (start[i] == -1 || start[i] == INT64_MAX) &&
                  stop[i] == INT64_MIN);
    r.dims.push_back(whole ? d : Dim::dynamic());
  }
  return r;
}

MaybeType Sema::inferGather(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &table = *st.operands[0].type;
  Operand &idx = st.operands[1];
  addDefault(st, "axis", intValue(0, st.opLoc));
  std::optional<int64_t> axis = axisAttr(st, "axis", table.rank());
  if (!axis)
    return std::nullopt;
  if (idx.kind == Operand::IntLiteral) {
    idx.type = TensorType{ElementType::I64, {}};
    const Dim &d = table.dims[*axis];
    if (d.isStatic() && (idx.intValue < -d.size || idx.intValue >= d.size)) {
      error(idx.loc) << "'gather' index " << idx.intValue
                     << " is out of range for dim " << *axis << " of "
                     << table.str();
      return std::nullopt;
    }
  } else if (idx.kind != Operand::Value) {
    error(idx.loc) << "'gather' indices must be i32 or i64, found the "
                      "literal "
                   << literalSpelling(idx);
    return std::nullopt;
  } else if (idx.type->elementType != ElementType::I32 &&
             idx.type->elementType != ElementType::I64) {
    error(st.opLoc) << "'gather' indices must be i32 or i64, found "
                    << idx.type->str();
    return std::nullopt;
  }
  TensorType r{table.elementType, {}};
  r.dims.insert(r.dims.end(), table.dims.begin(), table.dims.begin() + *axis);
  r.dims.insert(r.dims.end(), idx.type->dims.begin(), idx.type->dims.end());
  r.dims.insert(r.dims.end(), table.dims.begin() + *axis + 1, table.dims.end());
  return r;
}

MaybeType Sema::inferReduce(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  bool isMaxMin = st.op == "reduce_max" || st.op == "reduce_min";
  if (st.op == "reduce_mean" && !isFloat(x.elementType)) {
    error(st.opLoc) << "'reduce_mean' expects a float tensor, found " << x.str()
                    << " (cast it to a float type first)";
    return std::nullopt;
  }
  if (!isMaxMin && x.elementType == ElementType::I1) {
    error(st.opLoc) << "'" << st.op << "' does not take i1, found " << x.str()
                    << " (reduce_max/reduce_min are any/all; or cast)";
    return std::nullopt;
  }
  addDefault(st, "axes", listValue({}, st.opLoc));
  AttrValue f(st.opLoc);
  f.kind = AttrValue::Bool;
  addDefault(st, "keepdims", f);
  const Attribute *axesAttr = st.attr("axes");
  std::vector<bool> reduced(x.rank(), false);
  if (axesAttr->value.elements.empty())
    reduced.assign(x.rank(), true);
  for (const AttrValue &e : axesAttr->value.elements) {
    std::optional<int64_t> ax = normalizeAxis(e.intValue, x.rank());
    if (!ax) {
      error(e.loc) << "'" << st.op << "' axis " << e.intValue
                   << " is out of range for " << x.str();
      return std::nullopt;
    }
    if (reduced[*ax]) {
      error(e.loc) << "'" << st.op << "' axes name axis " << *ax << " twice";
      return std::nullopt;
    }
    reduced[*ax] = true;
  }
  bool keepdims = st.attr("keepdims")->value.boolValue;
  TensorType r{x.elementType, {}};
  for (int64_t i = 0; i < x.rank(); ++i) {
    const Dim &d = x.dims[i];
    if (reduced[i] && isMaxMin && d.isStatic() && d.size == 0) {
      error(st.opLoc) << "'" << st.op << "' over an empty extent: dim " << i
                      << " of " << x.str() << " has size 0";
      return std::nullopt;
    }
    if (!reduced[i])
      r.dims.push_back(d);
    else if (keepdims)
      r.dims.push_back(Dim::fixed(1));
  }
  return r;
}

MaybeType Sema::inferArgReduce(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  addDefault(st, "axis", intValue(-1, st.opLoc));
  AttrValue f(st.opLoc);
  f.kind = AttrValue::Bool;
  addDefault(st, "keepdims", f);
  std::optional<int64_t> axis = axisAttr(st, "axis", x.rank());
  if (!axis)
    return std::nullopt;
  const Dim &d = x.dims[*axis];
  if (d.isStatic() && d.size == 0) {
    error(st.opLoc) << "'" << st.op << "' over an empty extent: dim " << *axis
                    << " of " << x.str() << " has size 0";
    return std::nullopt;
  }
  bool keepdims = st.attr("keepdims")->value.boolValue;
  TensorType r{ElementType::I64, x.dims};
  if (keepdims)
    r.dims[*axis] = Dim::fixed(1);
  else
    r.dims.erase(r.dims.begin() + *axis);
  return r;
}

MaybeType Sema::inferSoftmax(Statement &st) {
  if (!requireValue(st, 0))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  if (!isFloat(x.elementType)) {
    error(st.opLoc) << "'" << st.op
                    << "' expects a float tensor (f64, f32, f16, bf16), "
                       "found "
                    << x.str();
    return std::nullopt;
  }
  addDefault(st, "axis", intValue(-1, st.opLoc));
  if (!axisAttr(st, "axis", x.rank()))
    return std::nullopt;
  return x;
}

MaybeType Sema::inferNorm(Statement &st, bool layerNorm) {
  size_t n = layerNorm ? 3 : 2;
  std::vector<size_t> all;
  for (size_t i = 0; i < n; ++i) {
    if (!requireValue(st, i))
      return std::nullopt;
    all.push_back(i);
  }
  if (!sameElementType(st, all))
    return std::nullopt;
  const TensorType &x = *st.operands[0].type;
  if (!isFloat(x.elementType)) {
    error(st.opLoc) << "'" << st.op
                    << "' expects float tensors (f64, f32, f16, bf16), "
                       "found "
                    << x.str();
    return std::nullopt;
  }
  addDefault(st, "axis", intValue(-1, st.opLoc));
  AttrValue eps(st.opLoc);
  eps.kind = AttrValue::Float;
  eps.floatValue = layerNorm ? 1e-5 : 1e-6;
  addDefault(st, "epsilon", eps);
  const AttrValue &e = st.attr("epsilon")->value;
  if (!std::isfinite(e.floatValue) || e.floatValue < 0) {
    error(e.loc) << "'" << st.op
                 << "' epsilon must be a finite number >= 0, found "
                 << formatFloat(e.floatValue);
    return std::nullopt;
  }
  std::optional<int64_t> axis = axisAttr(st, "axis", x.rank());
  if (!axis)
    return std::nullopt;
  llvm::ArrayRef<Dim> trailing = llvm::ArrayRef<Dim>(x.dims).drop_front(*axis);
  const char *names[] = {"", "%g (scale)", "%b (bias)"};
  for (size_t i = 1; i < n; ++i) {
    const TensorType &p = *st.operands[i].type;
    bool ok = p.rank() == static_cast<int64_t>(trailing.size());
    for (size_t k = 0; ok && k < trailing.size(); ++k)
      ok = unifyDim(p.dims[k], trailing[k]).has_value();
    if (!ok) {
      error(st.opLoc) << "'" << st.op << "' operand " << i + 1 << " "
                      << names[i] << " must have the dims "
                      << shapeString(trailing) << " of " << x.str()
                      << " from axis " << *axis << ", found " << p.str();
      return std::nullopt;
    }
  }
  return x;
}

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

} // namespace

mlir::LogicalResult analyzeModule(Module &module, mlir::MLIRContext &ctx,
                                  llvm::StringRef symbolPrefix) {
  (void)ctx; // diagnostics reach it through the modules' locations
  Sema sema(module, symbolPrefix.str());
  return sema.run();
}

} // namespace kina
