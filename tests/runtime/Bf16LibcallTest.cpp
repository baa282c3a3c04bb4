//===- Bf16LibcallTest.cpp - the runtime's __truncsfbf2 --------------------===//
//
// runtime/Bf16Libcall.cpp defines the libcall LLVM's x86 code generator
// calls to narrow a float to bfloat16. These cases check its rounding (to
// nearest even, as IEEE 754 and NumPy's ml_dtypes do), NaN, infinities,
// zeros, overflow and subnormals, through the same register convention LLVM
// uses (result bits in the low half of %xmm0, read here as a float's bits).
//
//===----------------------------------------------------------------------===//
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

extern "C" float __truncsfbf2(float value);

namespace {

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float fromBits(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

/// The 16 result bits (the upper half of the returned register is zero).
uint32_t truncate(float value) {
  uint32_t bits = bitsOf(__truncsfbf2(value));
  EXPECT_EQ(bits >> 16, 0u) << "upper bits of the result register";
  return bits & 0xffffu;
}

TEST(Bf16Libcall, ExactValuesAndZeros) {
  EXPECT_EQ(truncate(1.0f), 0x3f80u);
  EXPECT_EQ(truncate(-2.0f), 0xc000u);
  EXPECT_EQ(truncate(3.0f), 0x4040u);
  EXPECT_EQ(truncate(-7.0f), 0xc0e0u);
  EXPECT_EQ(truncate(0.0f), 0x0000u);
  EXPECT_EQ(truncate(-0.0f), 0x8000u);
}

TEST(Bf16Libcall, RoundsToNearestEven) {
  // Halfway with an even lower neighbour: down; with an odd one: up.
  EXPECT_EQ(truncate(fromBits(0x3f808000u)), 0x3f80u);
  EXPECT_EQ(truncate(fromBits(0x3f818000u)), 0x3f82u);
  // Just above and below halfway.
  EXPECT_EQ(truncate(fromBits(0x3f808001u)), 0x3f81u);
  EXPECT_EQ(truncate(fromBits(0x3f807fffu)), 0x3f80u);
  // 2^30 + 2^22 + 1 as f32 is 2^30 + 2^22 (a bf16 tie): to even, 2^30.
  EXPECT_EQ(truncate(static_cast<float>((1 << 30) + (1 << 22) + 1)), 0x4e80u);
}

TEST(Bf16Libcall, InfinitiesOverflowAndNaN) {
  float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(truncate(inf), 0x7f80u);
  EXPECT_EQ(truncate(-inf), 0xff80u);
  // The largest float rounds past bf16's largest finite value.
  EXPECT_EQ(truncate(std::numeric_limits<float>::max()), 0x7f80u);
  EXPECT_EQ(truncate(fromBits(0x7f7f7fffu)), 0x7f7fu);
  uint32_t quiet = truncate(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(quiet & 0x7f80u, 0x7f80u);
  EXPECT_NE(quiet & 0x007fu, 0u);
  // A signalling NaN whose payload is only in the low bits stays a NaN.
  uint32_t signalling = truncate(fromBits(0xff800001u));
  EXPECT_EQ(signalling & 0xff80u, 0xff80u);
  EXPECT_NE(signalling & 0x007fu, 0u);
}

TEST(Bf16Libcall, Subnormals) {
  EXPECT_EQ(truncate(fromBits(0x00010000u)), 0x0001u);
  EXPECT_EQ(truncate(fromBits(0x00008000u)), 0x0000u); // tie to even zero
  EXPECT_EQ(truncate(fromBits(0x00018000u)), 0x0002u); // tie up to even
  EXPECT_EQ(truncate(fromBits(0x807fffffu)), 0x8080u); // rounds to normal
}

} // namespace
