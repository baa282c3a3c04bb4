//===- TypoCorrection.cpp - "did you mean ...?" for misspelt names --------===//
//
// The suggestion that follows an unknown name in a diagnostic (an operation,
// an attribute name or value, an element type, a %value, a @function), as
// clang's and rustc's typo correction give it (Frontend.h, suggestName).
//
// The distance is the optimal string alignment distance (Levenshtein with
// the swap of two adjacent characters counting as one edit, like rustc's):
// LLVM's StringRef::edit_distance counts a swap as two edits, which would
// miss the commonest typos (`f23` for `f32`, `gleu` for `gelu`).
//
//===----------------------------------------------------------------------===//
#include "kina/Frontend.h"

#include <algorithm>
#include <vector>

namespace kina {

size_t typoDistance(llvm::StringRef a, llvm::StringRef b) {
  // Three rows of the dynamic programme: i-2, i-1 and i.
  const size_t n = b.size();
  std::vector<size_t> prev2(n + 1), prev(n + 1), cur(n + 1);
  for (size_t j = 0; j <= n; ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= n; ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[n];
}

llvm::ArrayRef<llvm::StringRef> elementTypeSpellings() {
  static const std::vector<llvm::StringRef> names = [] {
    std::vector<llvm::StringRef> v;
    for (ElementType t : {ElementType::F64, ElementType::F32, ElementType::F16,
                          ElementType::BF16, ElementType::I64, ElementType::I32,
                          ElementType::I8, ElementType::I1})
      v.push_back(elementTypeName(t));
    return v;
  }();
  return names;
}

std::optional<std::string>
suggestName(llvm::StringRef typo, llvm::ArrayRef<llvm::StringRef> candidates) {
  if (typo.empty())
    return std::nullopt;
  const size_t limit = std::max<size_t>(1, typo.size() / 3);
  std::optional<llvm::StringRef> best;
  size_t bestDistance = 0;
  for (llvm::StringRef c : candidates) {
    if (c == typo || c.empty())
      continue;
    // Cheap bound first: the lengths alone need this many edits.
    size_t lengthGap = c.size() > typo.size() ? c.size() - typo.size()
                                              : typo.size() - c.size();
    if (lengthGap > limit)
      continue;
    size_t d = typoDistance(typo, c);
    // Replacing every character is no correction (`%q` is not `%x`).
    if (d > limit || d >= typo.size())
      continue;
    if (!best || d < bestDistance || (d == bestDistance && c < *best)) {
      best = c;
      bestDistance = d;
    }
  }
  if (!best)
    return std::nullopt;
  return best->str();
}

} // namespace kina
