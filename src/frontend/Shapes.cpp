//===- Shapes.cpp - Broadcasting, dim merging, axes and slice bounds ------===//
//
// Implements Shapes.h: the shape rules of the spec's "Operations" section
// (NumPy broadcasting, Python slicing) as pure functions on `kina::Dim`,
// used by Sema for inference and by the lowering for run-time checks.
//
//===----------------------------------------------------------------------===//
#include "kina/Shapes.h"

#include <algorithm>

namespace kina {

bool staticByteSizeFits(const TensorType &t) {
  int64_t bytes = elementSizeInBytes(t.elementType);
  for (const Dim &d : t.dims)
    if (d.isStatic() && __builtin_mul_overflow(bytes, d.size, &bytes))
      return false;
  return true;
}

std::string dimToString(const Dim &d) {
  switch (d.kind) {
  case Dim::Static:
    return std::to_string(d.size);
  case Dim::Dynamic:
    return "?";
  case Dim::Symbolic:
    return d.symbol;
  }
  return "?";
}

std::optional<Dim> broadcastDim(const Dim &a, const Dim &b) {
  if (a.isStatic() && a.size == 1)
    return b;
  if (b.isStatic() && b.size == 1)
    return a;
  if (a.isStatic() && b.isStatic()) {
    if (a.size != b.size)
      return std::nullopt;
    return a;
  }
  // One static n != 1: the other must be 1 or n at run time.
  if (a.isStatic())
    return a;
  if (b.isStatic())
    return b;
  if (a.kind == Dim::Symbolic && b.kind == Dim::Symbolic &&
      a.symbol == b.symbol)
    return a;
  return Dim::dynamic();
}

std::optional<std::vector<Dim>> broadcastShapes(llvm::ArrayRef<Dim> a,
                                                llvm::ArrayRef<Dim> b,
                                                int64_t *badAxis) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    // i counts from the right.
    size_t r = rank - 1 - i;
    if (i >= a.size()) {
      out[r] = b[b.size() - 1 - i];
      continue;
    }
    if (i >= b.size()) {
      out[r] = a[a.size() - 1 - i];
      continue;
    }
    std::optional<Dim> d =
        broadcastDim(a[a.size() - 1 - i], b[b.size() - 1 - i]);
    if (!d) {
      if (badAxis)
        *badAxis = static_cast<int64_t>(r);
      return std::nullopt;
    }
    out[r] = *d;
  }
  return out;
}

std::optional<Dim> unifyDim(const Dim &a, const Dim &b) {
  if (a.isStatic() && b.isStatic())
    return a.size == b.size ? std::optional<Dim>(a) : std::nullopt;
  if (a.isStatic())
    return a;
  if (b.isStatic())
    return b;
  if (a.kind == Dim::Symbolic)
    return a;
  return b;
}

bool dimsProvablyEqual(const Dim &a, const Dim &b) {
  if (a.isStatic() && b.isStatic())
    return a.size == b.size;
  return a.kind == Dim::Symbolic && b.kind == Dim::Symbolic &&
         a.symbol == b.symbol;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

SliceBounds normalizeSlice(int64_t start, int64_t stop, int64_t step,
                           int64_t size) {
  // CPython's PySlice_AdjustIndices, on int64 (size >= 0, so `x + size`
  // cannot overflow for a negative x).
  SliceBounds s;
  s.step = step;
  if (start < 0) {
    start += size;
    if (start < 0)
      start = step < 0 ? -1 : 0;
  } else if (start >= size) {
    start = step < 0 ? size - 1 : size;
  }
  if (stop < 0) {
    stop += size;
    if (stop < 0)
      stop = step < 0 ? -1 : 0;
  } else if (stop >= size) {
    stop = step < 0 ? size - 1 : size;
  }
  s.start = start;
  s.stop = stop;
  if (step < 0) {
    // -step as unsigned: step may be INT64_MIN.
    uint64_t negStep = 0 - static_cast<uint64_t>(step);
    if (stop < start)
      s.length = static_cast<int64_t>(
          static_cast<uint64_t>(start - stop - 1) / negStep + 1);
  } else if (start < stop) {
    s.length = (stop - start - 1) / step + 1;
  }
  return s;
}

} // namespace kina
