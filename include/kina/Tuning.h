//===- Tuning.h - Schedule parameters of tunable ops and kernel classes ---===//
//
// What `--autotune` searches and `--tuning-cache` replays (docs/autotune.md):
// a Schedule is a set of named integer parameters (tile sizes, vector
// width, unroll factors, block sizes); a ScheduleSpace names, for one kind
// of schedule, its parameters, their defaults (the constants the passes use
// without tuning) and the values a search tries; TuningParameters maps
// keys to schedules and is what a target's pipeline receives
// (TargetOptions::tuning). A pass asks for the schedule of one of its ops
// by the op's key (tuningKey: kind and source location) or, for a kernel
// class of the cuda target, by the class's key ("cuda.elementwise"), and
// falls back to the space's defaults for everything the table lacks.
//
// Kinds (ScheduleSpace::name):
//  - "cpu.matmul" (kina-matmul-kernel, src/passes/MatmulKernel.cpp): per
//    f32/f64 matmul, 2-D, batched or broadcast-batch (key
//    `matmul@<line>:<col>`); mc, kc (the BLIS row and reduction blocks,
//    elements), mr (rows of the register tile), nv (vectors per column
//    panel), vbits (vector width, bits), ku (unroll of the innermost k
//    loop), grain (thread split: cost units per thread, 0 one thread;
//    src/passes/Parallel.h costAtGrain).
//  - "cpu.vectorize" (kina-tile-and-vectorize,
//    src/passes/TileAndVectorize.cpp): per Kina statement computing a
//    reduction (reduce_*, softmax, layer_norm, ...: every linalg op it
//    lowers to shares the key `reduction@<line>:<col>`); vbits (vector
//    width, bits; 0: the processor's), vectors (vectors per tile of the
//    vectorised loop, i.e. independent accumulators of a row reduction),
//    grain (as cpu.matmul's, for the statement's outermost parallel loops).
//  - "cuda.elementwise" (kina-gpu-map-elementwise): per kernel, key
//    `elementwise@<line>:<col>` (the mapped generic or copy), or one entry
//    for the whole class (key "cuda.elementwise") as a fallback; block
//    (threads per block).
//  - "cuda.rows" (kina-gpu-map-rows): per row kernel, key
//    `rows@<line>:<col>` of its first reduction; threads (most threads per
//    block, one row per block), per_thread (most owned elements per thread
//    and row buffer).
//  - "cuda.reduction" (kina-gpu-map-reductions): per reduction generic, key
//    `reduction@<line>:<col>`; block (threads per block of the
//    block-per-output tree kernel and of the sequential kernel).
//  - "cuda.matmul" (kina-gpu-map-matmul, runtime/CublasLt.cpp): per float
//    contraction taking the cuBLASLt route, key `matmul@<line>:<col>`;
//    algo (index into cublasLtMatmulAlgoGetHeuristic's list, best first).
// The cuda mappers record each key they look up (TuningSites), so the
// driver knows the tunable kernels of a module exactly as mapped.
// Another pass takes tuned parameters by adding its space to allSpaces()
// and reading `tuning->lookup(key)` the same way.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_TUNING_H
#define KINA_TUNING_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class Operation;
} // namespace mlir

namespace kina {

/// Named integer parameters of one op's (or kernel class's) schedule, e.g.
/// {"mc": 256, "kc": 256, "mr": 4, "nv": 2, "vbits": 256, "ku": 1}. Units
/// are the parameter's own (elements, vectors, bits, threads); see the
/// space that defines it.
struct Schedule {
  std::map<std::string, int64_t> params;

  /// The value of `name`, or `fallback` when the schedule lacks it.
  int64_t get(llvm::StringRef name, int64_t fallback) const;
  /// `mr=4 nv=2 ...` in the order of the map (names sorted), for messages.
  std::string str() const;
  bool operator==(const Schedule &other) const {
    return params == other.params;
  }
};

/// One tunable parameter: its name, its default (the pass's constant when
/// nothing is tuned) and the values a search tries (the default among
/// them); a value outside `values` is refused when read from a cache.
/// `--autotune` searches the parameters of one `stage` together (every
/// combination of their values), stage after stage, each from the best
/// schedule of the stages before.
struct ScheduleParameter {
  const char *name;
  int64_t defaultValue;
  std::vector<int64_t> values;
  int stage;
  const char *meaning; ///< One line for docs and messages.
};

/// The parameters of one kind of schedule ("cpu.matmul", "cuda.elementwise").
struct ScheduleSpace {
  const char *name;
  /// Bumped when a parameter's meaning changes: a cache entry recorded
  /// under another version is stale.
  int version;
  std::vector<ScheduleParameter> parameters;

  /// Every parameter at its default.
  Schedule defaults() const;
  /// Checks that `s` names exactly this space's parameters with allowed
  /// values; returns the reason it does not, or an empty string.
  std::string check(const Schedule &s) const;
};

/// Every kind of schedule kinac knows.
llvm::ArrayRef<ScheduleSpace> allSpaces();
/// The space named `name`, or nullptr.
const ScheduleSpace *lookupSpace(llvm::StringRef name);

/// The key of a tunable op: `<kind>@<line>:<col>`, kind the op's name
/// without its dialect (`matmul`), line and column those of the first
/// file location in the op's location (the Kina statement it lowers; for
/// a fused or named location, the first file location inside). Stable
/// across the pipeline's passes, which keep an op's location; empty when
/// the op has no file location.
std::string tuningKey(mlir::Operation *op);
/// The same key with `kind` in place of the op's name: the key of a Kina
/// statement whose several ops share one schedule (`reduction@4:8` for
/// every linalg op that softmax at 4:8 lowers to, fills included).
std::string tuningKey(mlir::Operation *op, llvm::StringRef kind);

/// The kind of the "cpu.vectorize" keys: `reduction@<line>:<col>`.
inline constexpr const char *kVectorizeKeyKind = "reduction";

/// One schedule a pass looked up while it mapped an op (cuda mappers):
/// the key, the space, the exported function the op sits in (its name
/// without the symbol prefix is the driver's business: this is the MLIR
/// symbol), the op's operand types as MLIR prints them ("memref<?x64xf32>,
/// ...") and its element type ("f32").
struct TuningSite {
  std::string key, space, symbol, shapes, dtype;
};

/// The sites of one pipeline run, in the order the passes met them, each
/// key once. Filled by schedule() below when a pipeline carries one
/// (TargetOptions::tuningSites); not thread-safe (passes over a module run
/// on one thread).
using TuningSites = std::vector<TuningSite>;

class TuningParameters;

/// The schedule of `op` in space `space` under the key `tuningKey(op,
/// kind)`: the table's entry for that key, else the one for `classKey`
/// (when not empty), else the space's defaults; records the site in
/// `sites` (when not null). `tuning` may be null (defaults).
Schedule schedule(const TuningParameters *tuning, TuningSites *sites,
                  mlir::Operation *op, llvm::StringRef kind,
                  llvm::StringRef space, llvm::StringRef classKey = "");

/// Schedules by key (tuningKey for ops, "cuda.elementwise" for a kernel
/// class), as a target's pipeline receives them. Empty: every pass uses
/// its defaults.
class TuningParameters {
public:
  /// Sets the schedule of `key` (replacing one set before).
  void set(const std::string &key, Schedule schedule) {
    schedules[key] = std::move(schedule);
  }
  /// The schedule of `key`, or nullptr.
  const Schedule *lookup(llvm::StringRef key) const;
  /// The schedule of `op` (by tuningKey), or nullptr.
  const Schedule *lookup(mlir::Operation *op) const;
  bool empty() const { return schedules.empty(); }
  const std::map<std::string, Schedule> &all() const { return schedules; }

private:
  std::map<std::string, Schedule> schedules;
};

} // namespace kina

#endif // KINA_TUNING_H
