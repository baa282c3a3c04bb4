//===- Bf16Libcall.cpp - __truncsfbf2 for code generators that call it ----===//
//
// LLVM's x86 code generator keeps a `bfloat` value that is live across basic
// blocks in an f32 register and, where it must be narrowed again, calls the
// libcall `__truncsfbf2` (float -> bfloat16). compiler-rt and libgcc 13 and
// later provide it; Debian 12's libgcc 12 does not, so an object whose bf16
// value crosses a branch (e.g. `concat` with a size-0 part feeding `matmul`,
// found by differential testing, tests/difftest/regressions/
// concat-size0-matmul-bf16-truncsfbf2) failed to link with "undefined
// reference to `__truncsfbf2'". kinac already turns every bf16 conversion it
// writes into integer code (arith-expand with bf16, src/targets/cpu); this
// definition covers the conversions LLVM's code generator creates itself.
//
// Weak and hidden: a C library that has its own definition wins, and a
// shared library built with the runtime (`kinac --emit=shared`) does not
// export it.
//
//===----------------------------------------------------------------------===//
#include <cstdint>
#include <cstring>

/// float -> bfloat16, rounding to nearest even; NaN stays NaN (quieted, sign
/// kept); infinities and zeros keep their sign; overflow gives infinity, as
/// IEEE 754 round-to-nearest and compiler-rt's __truncsfbf2 do.
///
/// ABI (x86-64 System V, as LLVM calls it): the argument in %xmm0, the
/// bfloat16 result in the low 16 bits of %xmm0. GCC 12 has no `__bf16`
/// arithmetic type, so the result is returned as a `float` whose bit pattern
/// is the 16 result bits zero-extended: the same register, the same bits.
extern "C" __attribute__((weak, visibility("hidden"))) float
__truncsfbf2(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  uint32_t result;
  if ((bits & 0x7fffffffu) > 0x7f800000u) {
    result = (bits >> 16) | 0x0040u; // NaN: keep the sign and top payload
  } else {
    uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
    result = (bits + roundingBias) >> 16;
  }
  result &= 0xffffu;
  float out;
  std::memcpy(&out, &result, sizeof out);
  return out;
}
