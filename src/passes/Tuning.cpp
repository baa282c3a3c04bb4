//===- Tuning.cpp - Schedule spaces, keys and tables (kina/Tuning.h) ------===//
//
// The spaces of the schedules the passes take (their defaults are the
// passes' untuned constants), the op keys, and the table a pipeline reads.
//
//===----------------------------------------------------------------------===//
#include "kina/Tuning.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/TypeUtilities.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace kina {

int64_t Schedule::get(llvm::StringRef name, int64_t fallback) const {
  auto it = params.find(name.str());
  return it == params.end() ? fallback : it->second;
}

std::string Schedule::str() const {
  std::string s;
  for (const auto &[name, value] : params)
    s += (s.empty() ? "" : " ") + name + "=" + std::to_string(value);
  return s;
}

Schedule ScheduleSpace::defaults() const {
  Schedule s;
  for (const ScheduleParameter &p : parameters)
    s.params[p.name] = p.defaultValue;
  return s;
}

std::string ScheduleSpace::check(const Schedule &s) const {
  for (const auto &[name, value] : s.params) {
    const ScheduleParameter *param = nullptr;
    for (const ScheduleParameter &p : parameters)
      if (name == p.name)
        param = &p;
    if (!param)
      return "'" + name + "' is not a parameter of " + this->name;
    if (!llvm::is_contained(param->values, value)) {
      std::string allowed;
      for (int64_t v : param->values)
        allowed += (allowed.empty() ? "" : ", ") + std::to_string(v);
      return "'" + name + "' is " + std::to_string(value) + ", not one of " +
             allowed;
    }
  }
  for (const ScheduleParameter &p : parameters)
    if (!s.params.count(p.name))
      return std::string("'") + p.name + "' is missing";
  return "";
}

namespace {
/// The thread split of the cpu spaces: cost units of work per piece of a
/// split loop (the runtime's 2^16 by default, src/passes/Parallel.h;
/// about one element of a streaming f32 loop each, a sixteenth of a
/// matmul's multiply-add lane), 0 for one thread. Searched in `stage`.
ScheduleParameter kGrainParameter(int stage) {
  return {"grain",
          int64_t(1) << 16,
          {0, int64_t(1) << 12, int64_t(1) << 14, int64_t(1) << 16,
           int64_t(1) << 18},
          stage,
          "cost units of work per thread (2^16: the runtime's grain; 0: one "
          "thread)"};
}
} // namespace

llvm::ArrayRef<ScheduleSpace> allSpaces() {
  static const std::vector<ScheduleSpace> spaces = {
      {"cpu.matmul",
       3,
       {// Register tile first (the search's order): vector width, rows,
        // vectors per panel; then the cache blocks; then the k unroll.
        {"vbits",
         0,
         {0, 128, 256, 512},
         0,
         "vector width in bits (0: the processor's, the pass option)"},
        {"mr",
         0,
         {0, 2, 4, 6, 8},
         0,
         "rows of C per micro-kernel (0: 8 with 512-bit vectors, else 4)"},
        {"nv",
         0,
         {0, 1, 2, 3},
         0,
         "vectors of C's columns per panel (0: 3 with 256-bit vectors, else "
         "2)"},
        {"mc", 256, {64, 128, 256, 512}, 1, "rows of A per block (BLIS MC)"},
        {"kc", 256, {128, 256, 512}, 1, "reduction block (BLIS KC)"},
        {"ku", 1, {1, 2, 4}, 2, "unroll factor of the innermost k loop"},
        kGrainParameter(3)}},
      {"cpu.vectorize",
       2,
       {{"vbits",
         0,
         {0, 128, 256, 512},
         0,
         "vector width in bits (0: the processor's, the pass option)"},
        {"vectors",
         1,
         {1, 2, 4},
         0,
         "vectors per tile of the vector dim (independent accumulators of "
         "a reduction)"},
        kGrainParameter(1)}},
      {"cuda.elementwise",
       1,
       {{"block", 256, {64, 128, 256, 512, 1024}, 0, "threads per block"}}},
      {"cuda.rows",
       1,
       {{"threads",
         512,
         {256, 512, 1024},
         0,
         "most threads per block of a row kernel (one row per block)"},
        {"per_thread",
         32,
         {16, 32, 64},
         0,
         "most owned elements per thread and row buffer (registers)"}}},
      {"cuda.reduction",
       1,
       {{"block",
         256,
         {64, 128, 256, 512, 1024},
         0,
         "threads per block of the block-per-output reduction kernel"}}},
      {"cuda.matmul",
       1,
       {{"algo",
         0,
         {0, 1, 2, 3},
         0,
         "index into cuBLASLt's heuristic list of algorithms (0: its "
         "first; past the list's end: its last)"}}},
  };
  return spaces;
}

const ScheduleSpace *lookupSpace(llvm::StringRef name) {
  for (const ScheduleSpace &space : allSpaces())
    if (name == space.name)
      return &space;
  return nullptr;
}

namespace {

/// The first file location in `loc` (itself, or inside a fused, named or
/// call-site location), or null.
FileLineColLoc firstFileLoc(Location loc) {
  FileLineColLoc found;
  loc->walk([&](Location inner) {
    if (auto file = dyn_cast<FileLineColLoc>(inner)) {
      found = file;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

} // namespace

std::string tuningKey(Operation *op) {
  return tuningKey(op, op->getName().stripDialect());
}

std::string tuningKey(Operation *op, llvm::StringRef kind) {
  FileLineColLoc loc = firstFileLoc(op->getLoc());
  if (!loc)
    return "";
  return kind.str() + "@" + std::to_string(loc.getLine()) + ":" +
         std::to_string(loc.getColumn());
}

Schedule schedule(const TuningParameters *tuning, TuningSites *sites,
                  Operation *op, llvm::StringRef kind, llvm::StringRef space,
                  llvm::StringRef classKey) {
  const ScheduleSpace *known = lookupSpace(space);
  Schedule result = known ? known->defaults() : Schedule();
  std::string key = tuningKey(op, kind);
  const Schedule *found = nullptr;
  if (tuning && !key.empty())
    found = tuning->lookup(key);
  if (tuning && !found && !classKey.empty())
    found = tuning->lookup(classKey);
  if (found)
    for (const auto &[name, value] : found->params)
      result.params[name] = value;
  if (sites && !key.empty() && llvm::none_of(*sites, [&](const TuningSite &s) {
        return s.key == key;
      })) {
    TuningSite site;
    site.key = key;
    site.space = space.str();
    if (auto fn = op->getParentOfType<func::FuncOp>())
      site.symbol = fn.getSymName().str();
    llvm::raw_string_ostream shapes(site.shapes);
    for (Value operand : op->getOperands()) {
      if (!site.shapes.empty())
        shapes << ", ";
      operand.getType().print(shapes);
    }
    if (op->getNumOperands())
      llvm::raw_string_ostream(site.dtype)
          << getElementTypeOrSelf(op->getOperand(0).getType());
    sites->push_back(std::move(site));
  }
  return result;
}

const Schedule *TuningParameters::lookup(llvm::StringRef key) const {
  auto it = schedules.find(key.str());
  return it == schedules.end() ? nullptr : &it->second;
}

const Schedule *TuningParameters::lookup(Operation *op) const {
  std::string key = tuningKey(op);
  return key.empty() ? nullptr : lookup(key);
}

} // namespace kina
