//===- Bench.h - kina-run --bench: random inputs and timed calls ----------===//
//
// What `kina-run LIB FN --bench --shape N=1797` needs besides the normal
// call path of main.cpp: the sizes of a manifest argument with its symbolic
// dims bound, random contents for it (never zero, so no product or
// division degenerates), and the median of timed calls. `kinac --autotune`
// runs candidates this way, one kina-run process per candidate, so a
// crashing candidate ends only its process (docs/autotune.md).
//
//===----------------------------------------------------------------------===//
#ifndef KINA_RUN_BENCH_H
#define KINA_RUN_BENCH_H

#include "Npy.h"
#include "SharedModule.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace kina {
namespace run {

/// Sizes of symbolic dims by name, from `--shape N=1797,M=64`.
using DimBindings = std::map<std::string, int64_t>;

/// Parses `NAME=SIZE[,NAME=SIZE...]` into `out` (adding to it); returns the
/// reason on a malformed item, else an empty string.
std::string parseDimBindings(const std::string &text, DimBindings &out);

/// The shape of `arg` with its symbolic dims looked up in `bindings`;
/// returns the reason (naming the argument and the dim) when a dim is
/// unnamed (`?`) or unbound, else an empty string.
std::string bindShape(const TensorSignature &arg, const DimBindings &bindings,
                      std::vector<int64_t> &shape);

/// Fills `out` (dtype and shape set by the caller's element and shape) with
/// pseudo-random elements from `state` (a 64-bit LCG state, advanced):
/// floats uniform in [0.5, 1] with a random sign, integers in [1, 3], i1
/// random; bf16 as its raw bits. Throws std::bad_alloc.
void fillRandom(const ElementInfo &element, const std::vector<int64_t> &shape,
                uint64_t &state, npy::NpyArray &out);

/// Times `call` (one call of the entry; returns its status): `warmup`
/// untimed calls, then up to `repeat` timed calls, stopping early once
/// `maxSeconds` (> 0) have passed after at least one. Returns the status
/// of the first failing call (and no times), else 0 with `times` in
/// seconds, in call order.
int32_t timeCalls(const std::function<int32_t()> &call, int warmup, int repeat,
                  double maxSeconds, std::vector<double> &times);

/// The median of `times` (the mean of the middle two for an even count).
double median(std::vector<double> times);

} // namespace run
} // namespace kina

#endif // KINA_RUN_BENCH_H
