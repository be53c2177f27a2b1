// Injected randomness: components that choose at random take a seeded Random so tests replay.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

namespace yb {

// A seeded generator. Thread-safe.
class Random {
 public:
  explicit Random(uint64_t seed = std::random_device{}()) : gen_(seed) {}
  // Uniform in [0, n); n > 0.
  uint64_t Uniform(uint64_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    return std::uniform_int_distribution<uint64_t>(0, n - 1)(gen_);
  }

 private:
  std::mutex mu_;
  std::mt19937_64 gen_;
};

}  // namespace yb
