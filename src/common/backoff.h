// Exponential backoff: the pauses between retries of something that keeps failing start at `min`
// and double up to `max`; Reset() after a success starts over.
#pragma once

#include <algorithm>
#include <chrono>

namespace yb {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds min, std::chrono::milliseconds max) : min_(min), max_(max), next_(min) {}
  // The pause to take after this failure.
  std::chrono::milliseconds Next() {
    auto now = next_;
    next_ = std::min(next_ * 2, max_);
    return now;
  }
  void Reset() { next_ = min_; }

 private:
  std::chrono::milliseconds min_, max_, next_;
};

}  // namespace yb
