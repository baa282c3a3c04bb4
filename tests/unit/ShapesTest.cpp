//===- ShapesTest.cpp - Unit tests of the shared shape rules (Shapes.h) ---===//
//
// NumPy broadcasting of dims and shapes, the merge of must-be-equal dims,
// axis normalisation, and Python slice bounds compared with values that
// CPython's slice.indices gives.
//
//===----------------------------------------------------------------------===//
#include "kina/Shapes.h"

#include <gtest/gtest.h>

namespace kina {
namespace {

std::string bd(const Dim &a, const Dim &b) {
  std::optional<Dim> d = broadcastDim(a, b);
  return d ? dimToString(*d) : "error";
}

TEST(ShapesTest, BroadcastDim) {
  Dim n = Dim::named("N"), m = Dim::named("M"), q = Dim::dynamic();
  EXPECT_EQ(bd(Dim::fixed(3), Dim::fixed(3)), "3");
  EXPECT_EQ(bd(Dim::fixed(1), Dim::fixed(3)), "3");
  EXPECT_EQ(bd(Dim::fixed(3), Dim::fixed(1)), "3");
  EXPECT_EQ(bd(Dim::fixed(3), Dim::fixed(4)), "error");
  EXPECT_EQ(bd(Dim::fixed(1), n), "N");
  EXPECT_EQ(bd(q, Dim::fixed(1)), "?");
  EXPECT_EQ(bd(n, n), "N");
  EXPECT_EQ(bd(n, m), "?");
  EXPECT_EQ(bd(q, q), "?");
  EXPECT_EQ(bd(n, q), "?");
  EXPECT_EQ(bd(Dim::fixed(5), n), "5");
  EXPECT_EQ(bd(q, Dim::fixed(0)), "0");
}

TEST(ShapesTest, BroadcastShapes) {
  int64_t bad = -1;
  std::vector<Dim> a = {Dim::fixed(2), Dim::fixed(1), Dim::named("N")};
  std::vector<Dim> b = {Dim::fixed(7), Dim::fixed(1)};
  auto r = broadcastShapes(a, b);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ(dimToString((*r)[0]), "2");
  EXPECT_EQ(dimToString((*r)[1]), "7");
  EXPECT_EQ(dimToString((*r)[2]), "N");
  std::vector<Dim> c = {Dim::fixed(3), Dim::fixed(4)};
  std::vector<Dim> d = {Dim::fixed(5), Dim::fixed(3), Dim::fixed(5)};
  EXPECT_FALSE(broadcastShapes(c, d, &bad));
  EXPECT_EQ(bad, 2);
  EXPECT_TRUE(broadcastShapes({}, d));
}

TEST(ShapesTest, UnifyDim) {
  EXPECT_FALSE(unifyDim(Dim::fixed(1), Dim::fixed(4)));
  EXPECT_EQ(dimToString(*unifyDim(Dim::named("K"), Dim::fixed(4))), "4");
  EXPECT_EQ(dimToString(*unifyDim(Dim::dynamic(), Dim::named("K"))), "K");
  EXPECT_EQ(dimToString(*unifyDim(Dim::named("A"), Dim::named("B"))), "A");
  EXPECT_TRUE(dimsProvablyEqual(Dim::named("A"), Dim::named("A")));
  EXPECT_FALSE(dimsProvablyEqual(Dim::named("A"), Dim::named("B")));
  EXPECT_FALSE(dimsProvablyEqual(Dim::dynamic(), Dim::dynamic()));
}

TEST(ShapesTest, NormalizeAxis) {
  EXPECT_EQ(normalizeAxis(-1, 3), 2);
  EXPECT_EQ(normalizeAxis(-3, 3), 0);
  EXPECT_EQ(normalizeAxis(2, 3), 2);
  EXPECT_FALSE(normalizeAxis(3, 3));
  EXPECT_FALSE(normalizeAxis(-4, 3));
  EXPECT_FALSE(normalizeAxis(0, 0));
}

TEST(ShapesTest, SliceBoundsMatchPython) {
  // (start, stop, step, size) -> Python's slice(start, stop,
  // step).indices(size) and len(range(...)).
  struct Case {
    int64_t start, stop, step, size;
    int64_t wStart, wStop, wLen;
  };
  const Case cases[] = {
      {1, -1, 2, 10, 1, 9, 4},         {-1, INT64_MIN, -1, 10, 9, -1, 10},
      {20, 30, 1, 10, 10, 10, 0},      {-20, 3, 1, 10, 0, 3, 3},
      {5, 2, 1, 10, 5, 2, 0},          {8, 2, -3, 10, 8, 2, 2},
      {0, 5, 1, 0, 0, 0, 0},           {-1, -11, -1, 10, 9, -1, 10},
      {3, 100, 4, 10, 3, 10, 2},       {9, 0, INT64_MIN, 10, 9, 0, 1},
      {0, 10, INT64_MAX, 10, 0, 10, 1}};
  for (const Case &c : cases) {
    SliceBounds s = normalizeSlice(c.start, c.stop, c.step, c.size);
    EXPECT_EQ(s.start, c.wStart) << c.start << ":" << c.stop << ":" << c.step;
    EXPECT_EQ(s.stop, c.wStop) << c.start << ":" << c.stop << ":" << c.step;
    EXPECT_EQ(s.length, c.wLen) << c.start << ":" << c.stop << ":" << c.step;
  }
}

} // namespace
} // namespace kina
