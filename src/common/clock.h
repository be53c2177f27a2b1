// Injected time. Every timeout, lease and TTL in Yuebing reads a Clock; tests use ManualClock and
// advance it instead of sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace yb {

// Milliseconds on a monotonic timeline (not wall time).
using TimeMs = int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeMs NowMs() const = 0;
};

// steady_clock, in milliseconds. Thread-safe.
class RealClock final : public Clock {
 public:
  TimeMs NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that moves only when told. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeMs start = 1'000'000) : now_(start) {}
  TimeMs NowMs() const override { return now_.load(std::memory_order_relaxed); }
  void Advance(TimeMs ms) { now_.fetch_add(ms, std::memory_order_relaxed); }
  void AdvanceSec(int64_t s) { Advance(s * 1000); }
  void Set(TimeMs t) { now_.store(t, std::memory_order_relaxed); }

 private:
  std::atomic<TimeMs> now_;
};

}  // namespace yb
