// Injected time. Every timeout, lease and TTL in Yuebing reads a Clock; tests use ManualClock and
// advance it instead of sleeping.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace yb {

// Milliseconds on a monotonic timeline (not wall time).
using TimeMs = int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimeMs NowMs() const = 0;
  // Returns once NowMs() >= t.
  virtual void SleepUntil(TimeMs t) const = 0;
};

// steady_clock, in milliseconds. Thread-safe.
class RealClock final : public Clock {
 public:
  TimeMs NowMs() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  void SleepUntil(TimeMs t) const override {
    std::this_thread::sleep_until(std::chrono::steady_clock::time_point(std::chrono::milliseconds(t)));
  }
};

// One RealClock for code that is not handed a Clock (tools, defaults).
inline const Clock& SteadyClock() {
  static const RealClock clock;
  return clock;
}

// Real-time bounds on waits in the kernel (poll, a socket's timeout, a timed lock, a TLS handshake,
// a connection attempt's back-off), which no Clock can drive: a moment of steady_clock. Decisions
// the master and the clients make by time (leases, TTLs, liveness) read a Clock instead.
using SteadyTime = std::chrono::steady_clock::time_point;
inline SteadyTime SteadyNow() { return std::chrono::steady_clock::now(); }
inline SteadyTime DeadlineIn(std::chrono::milliseconds d) { return SteadyNow() + d; }
inline bool Passed(SteadyTime deadline) { return SteadyNow() >= deadline; }
// Whole milliseconds left until `deadline`, rounded up (what poll() takes); 0 once it passed.
inline int64_t MillisLeft(SteadyTime deadline) {
  return std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyNow()).count());
}

// steady_clock in microseconds: what durations reported as metrics are measured with (not for
// deciding anything: that is a Clock's).
inline int64_t MonotonicMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
// Microseconds from `start` (a MonotonicMicros() reading) to now; never negative.
inline uint64_t MicrosSince(int64_t start) {
  const int64_t d = MonotonicMicros() - start;
  return d > 0 ? static_cast<uint64_t>(d) : 0;
}

// A clock that moves only when told, or when someone sleeps on it: SleepUntil moves it to the
// moment the sleeper waits for, at once, so code that waits out an interval runs without waiting
// in a test (which then sees the clock moved). Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimeMs start = 1'000'000) : now_(start) {}
  TimeMs NowMs() const override { return now_.load(std::memory_order_relaxed); }
  void SleepUntil(TimeMs t) const override {
    TimeMs now = now_.load(std::memory_order_relaxed);
    while (now < t && !now_.compare_exchange_weak(now, t, std::memory_order_relaxed)) {
    }
  }
  void Advance(TimeMs ms) { now_.fetch_add(ms, std::memory_order_relaxed); }
  void AdvanceSec(int64_t s) { Advance(s * 1000); }
  void Set(TimeMs t) { now_.store(t, std::memory_order_relaxed); }

 private:
  mutable std::atomic<TimeMs> now_;  // SleepUntil moves it
};

}  // namespace yb
