// LatencyHistogram: durations counted into fixed buckets, for Prometheus histograms (the master's
// calls per operation, a client's gets and puts). Lock-free; thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace yb {

// Upper bounds of the buckets, in microseconds; a last bucket holds the rest (Prometheus' +Inf).
inline constexpr std::array<uint64_t, 12> kLatencyBoundsUs{25,   50,   100,   250,   500,    1000,
                                                           2500, 5000, 10000, 25000, 100000, 1000000};

class LatencyHistogram {
 public:
  static constexpr size_t kBuckets = kLatencyBoundsUs.size() + 1;
  void Record(uint64_t micros) {
    size_t b = 0;
    while (b < kLatencyBoundsUs.size() && micros > kLatencyBoundsUs[b]) ++b;
    buckets_[b].fetch_add(1, std::memory_order_relaxed);
    micros_.fetch_add(micros, std::memory_order_relaxed);
  }
  // Durations of at most bucket `b`'s bound (b = kBuckets - 1: all of them), cumulative as
  // Prometheus counts them.
  uint64_t at_most(size_t b) const {
    uint64_t n = 0;
    for (size_t i = 0; i <= b && i < kBuckets; ++i) n += buckets_[i].load(std::memory_order_relaxed);
    return n;
  }
  uint64_t count() const { return at_most(kBuckets - 1); }
  uint64_t total_micros() const { return micros_.load(std::memory_order_relaxed); }

 private:
  std::array<std::atomic<uint64_t>, kBuckets> buckets_{};
  std::atomic<uint64_t> micros_{0};
};

}  // namespace yb
