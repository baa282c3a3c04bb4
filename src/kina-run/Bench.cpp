//===- Bench.cpp - kina-run --bench (Bench.h) -----------------------------===//
#include "Bench.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace kina {
namespace run {

std::string parseDimBindings(const std::string &text, DimBindings &out) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    std::string item = text.substr(start, end - start);
    start = end + 1;
    if (item.empty())
      continue;
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq == std::string::npos ? 0 : eq);
    std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    bool ok = !name.empty() && !value.empty() &&
              std::all_of(value.begin(), value.end(),
                          [](char c) { return c >= '0' && c <= '9'; }) &&
              value.size() < 19;
    if (!ok)
      return "--shape: '" + item +
             "' is not NAME=SIZE (a symbolic dim and a non-negative integer)";
    out[name] = std::stoll(value);
  }
  return "";
}

std::string bindShape(const TensorSignature &arg, const DimBindings &bindings,
                      std::vector<int64_t> &shape) {
  shape.clear();
  for (const std::string &d : arg.dims) {
    if (!d.empty() && std::all_of(d.begin(), d.end(), [](char c) {
          return c >= '0' && c <= '9';
        })) {
      shape.push_back(std::stoll(d));
      continue;
    }
    if (d == "?")
      return "argument %" + arg.name + " is " + arg.typeString() +
             ": an unnamed dim ('?') has no size --shape can give";
    auto it = bindings.find(d);
    if (it == bindings.end())
      return "argument %" + arg.name + " is " + arg.typeString() +
             ": --shape gives no size for " + d + " (e.g. --shape " + d +
             "=1024)";
    shape.push_back(it->second);
  }
  return "";
}

namespace {

/// The next 31 bits of a 64-bit linear congruential generator (Knuth's
/// MMIX constants): reproducible across platforms, unlike <random>'s
/// distributions.
uint32_t next(uint64_t &state) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return static_cast<uint32_t>(state >> 33);
}

/// Uniform in [0.5, 1] with a random sign: never zero.
double randomFloat(uint64_t &state) {
  double magnitude = 0.5 + 0.5 * (next(state) / double(1u << 31));
  return (next(state) & 1) ? -magnitude : magnitude;
}

} // namespace

void fillRandom(const ElementInfo &element, const std::vector<int64_t> &shape,
                uint64_t &state, npy::NpyArray &out) {
  out.descr = element.descr;
  out.itemSize = element.size;
  out.shape = shape;
  int64_t count = out.numElements();
  out.data = npy::AlignedBuffer(static_cast<size_t>(count) * element.size);
  char *p = static_cast<char *>(out.data.data());
  for (int64_t i = 0; i < count; ++i, p += element.size) {
    const std::string &n = element.name;
    if (n == "f64") {
      double v = randomFloat(state);
      std::memcpy(p, &v, 8);
    } else if (n == "f32" || n == "bf16") {
      float v = static_cast<float>(randomFloat(state));
      if (n == "f32") {
        std::memcpy(p, &v, 4);
      } else {
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        uint16_t high = static_cast<uint16_t>(bits >> 16); // exact: few bits
        std::memcpy(p, &high, 2);
      }
    } else if (n == "f16") {
      // 0.5..1 with a random sign: exponent 14, a random 10-bit mantissa.
      uint32_t r = next(state);
      uint16_t bits = static_cast<uint16_t>(((r & 1) << 15) | (14u << 10) |
                                            ((r >> 1) & 0x3ff));
      std::memcpy(p, &bits, 2);
    } else if (n == "i1") {
      *p = static_cast<char>(next(state) & 1);
    } else {
      int64_t v = 1 + next(state) % 3;
      std::memcpy(p, &v, element.size); // little-endian: the low bytes
    }
  }
}

int32_t timeCalls(const std::function<int32_t()> &call, int warmup, int repeat,
                  double maxSeconds, std::vector<double> &times) {
  using Clock = std::chrono::steady_clock;
  times.clear();
  for (int i = 0; i < warmup; ++i)
    if (int32_t status = call())
      return status;
  Clock::time_point begin = Clock::now();
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    Clock::time_point start = Clock::now();
    if (int32_t status = call()) {
      times.clear();
      return status;
    }
    Clock::time_point end = Clock::now();
    times.push_back(std::chrono::duration<double>(end - start).count());
    if (maxSeconds > 0 &&
        std::chrono::duration<double>(end - begin).count() >= maxSeconds)
      break;
  }
  return 0;
}

double median(std::vector<double> times) {
  if (times.empty())
    return 0;
  std::sort(times.begin(), times.end());
  size_t n = times.size();
  return n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

} // namespace run
} // namespace kina
