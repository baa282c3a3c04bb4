//===- Shapes.h - Shape rules shared by semantic analysis and lowering ----===//
//
// The pure shape arithmetic of Kina IR (docs/language.md,
// "Operations"): NumPy broadcasting of dims, the merge of dims that must be
// equal, axis normalisation and Python slice bounds. Sema (type inference)
// and the MLIR generator (run-time checks, static sizes) both use these so
// the compile-time and run-time rules cannot drift apart. Nothing here emits
// diagnostics: callers turn a `std::nullopt` into a located error.
//
//===----------------------------------------------------------------------===//
#ifndef KINA_SHAPES_H
#define KINA_SHAPES_H

#include "kina/AST.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kina {

/// Largest tensor rank kinac accepts (abi.h's KINA_MAX_RANK: the runtime's
/// descriptors go up to KinaMemRef8).
inline constexpr int64_t kMaxRank = 8;

/// True when the product of the static dims of `t` times its element size
/// in bytes fits in a signed 64-bit integer (`?` and symbolic dims are not
/// counted: they are checked at run time). A type failing this can never be
/// allocated (the runtime's allocation returns 1 for it), so the front end
/// rejects it at compile time.
bool staticByteSizeFits(const TensorType &t);

/// Spelling of one dim: `4`, `?` or the symbol's name.
std::string dimToString(const Dim &d);

/// NumPy broadcasting of one pair of dims (spec, "Operations"):
///  - equal dims (same static size, same symbol) give that dim;
///  - a static 1 gives the other dim (also `?` or a symbol);
///  - static a vs static b, both != 1 and different: std::nullopt (a
///    compile-time error for the caller);
///  - a static n != 1 against `?` or a symbol gives n (the other must be 1
///    or n at run time: a run-time check);
///  - anything else (`?` vs `?`, `?` vs `N`, `N` vs `M`) gives `?`.
std::optional<Dim> broadcastDim(const Dim &a, const Dim &b);

/// NumPy broadcasting of two shapes aligned from the right; the result has
/// rank max(rank a, rank b). On a static mismatch returns std::nullopt and,
/// if `badAxis` is given, stores the result axis (0-based, counted in the
/// result) of the first offending pair.
std::optional<std::vector<Dim>> broadcastShapes(llvm::ArrayRef<Dim> a,
                                                llvm::ArrayRef<Dim> b,
                                                int64_t *badAxis = nullptr);

/// Merge of two dims that must be equal at run time (matmul's K, concat's
/// non-axis dims, call arguments bound to one symbol, layer_norm's trailing
/// dims): std::nullopt if both are static and differ; otherwise the most
/// precise of the two (a static size, then a symbol, then `?`; for two
/// different symbols the first). No broadcasting: 1 vs 4 is a mismatch.
std::optional<Dim> unifyDim(const Dim &a, const Dim &b);

/// True when `a` and `b` are known equal at compile time (same static size
/// or same symbol). When false and unifyDim succeeds, the equality is a
/// run-time check.
bool dimsProvablyEqual(const Dim &a, const Dim &b);

/// Normalises an axis of a rank-`rank` tensor: a negative axis counts from
/// the end (-1 is the last). Returns the axis in [0, rank), or std::nullopt
/// if `axis` is outside [-rank, rank).
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

/// Python/NumPy slice bounds on an extent of `size` elements, as Python's
/// `slice(start, stop, step).indices(size)` followed by `len(range(...))`:
/// negative start/stop count from the end, out-of-range bounds clamp, a
/// negative step walks backwards. `step` must not be 0. `start` and `stop`
/// are the first index and the exclusive end after clamping (for a negative
/// step, `stop` may be -1); `length` is the number of selected elements.
struct SliceBounds {
  int64_t start = 0;
  int64_t stop = 0;
  int64_t step = 1;
  int64_t length = 0;
};
SliceBounds normalizeSlice(int64_t start, int64_t stop, int64_t step,
                           int64_t size);

} // namespace kina

#endif // KINA_SHAPES_H
