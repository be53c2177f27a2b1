// Deterministic pseudo-random values for the demos: the reader can check every byte.
#pragma once

#include <cstdint>
#include <string>

namespace yb::tools {

inline std::string DemoValue(size_t size, uint64_t seed) {
  std::string v(size, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<char>(x);
  }
  return v;
}

}  // namespace yb::tools
