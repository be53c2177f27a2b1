// Injected randomness: components that choose at random take a seeded Random so tests replay.
#pragma once

#include <atomic>
#include <cstdint>
#include <random>

namespace yb {

// A seeded generator (splitmix64 over an atomic counter). Thread-safe and lock-free; from one
// thread the sequence depends only on the seed.
class Random {
 public:
  explicit Random(uint64_t seed = std::random_device{}()) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = state_.fetch_add(0x9E3779B97F4A7C15ULL, std::memory_order_relaxed) + 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n); n > 0 (the modulo bias is below 2^-40 for the small n used here).
  uint64_t Uniform(uint64_t n) { return Next() % n; }

 private:
  std::atomic<uint64_t> state_;
};

}  // namespace yb
