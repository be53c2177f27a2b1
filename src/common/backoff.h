// Exponential backoff: the pauses between retries of something that keeps failing start at `min`
// and double up to `max`; Reset() after a success starts over.
//
// With `jitter` (a share, below 1), each pause is drawn uniformly within that share around the
// doubling schedule (and still at most `max`): the many clients that lost the same server at the
// same moment then come back spread out instead of all in the same millisecond.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>

#include "common/random.h"

namespace yb {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max, double jitter = 0,
          uint64_t seed = std::random_device{}())
      : min_(min), max_(max), next_(min), jitter_(std::clamp(jitter, 0.0, 0.99)), random_(seed) {}
  // The pause to take after this failure.
  std::chrono::milliseconds Next() {
    const auto base = next_;
    next_ = std::min(next_ * 2, max_);
    const auto spread = static_cast<int64_t>(static_cast<double>(base.count()) * jitter_);
    if (spread <= 0) return base;
    const int64_t pause = base.count() - spread + static_cast<int64_t>(random_.Uniform(2 * spread + 1));
    return std::min(std::chrono::milliseconds(pause), max_);
  }
  void Reset() { next_ = min_; }

 private:
  std::chrono::milliseconds min_, max_, next_;
  double jitter_;
  Random random_;
};

}  // namespace yb
