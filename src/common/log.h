// Logging goes through spdlog; components log with these macros so the sink is chosen in main().
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <mutex>
#include <string>

#include "common/clock.h"

#define YB_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define YB_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define YB_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define YB_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)

namespace yb {

// For a condition that repeats (a refused connection, a failed retry): true for its 1st, 2nd, 4th,
// 8th, ... occurrence, so that the log tells it started and that it goes on, without one line each.
inline bool LogOccurrence(uint64_t n) { return n > 0 && (n & (n - 1)) == 0; }

// For a warning that can come at the rate of requests (a peer that went away fails every transfer
// that touches it): at most `burst` lines per `interval_ms`; the first line allowed after some were
// held back says how many (HeldBack()). Thread-safe.
class LogBudget {
 public:
  LogBudget(int burst, TimeMs interval_ms) : burst_(burst), interval_ms_(interval_ms) {}
  // Whether to log now. When true, `*held` is the number of lines held back since the last one.
  bool Allow(TimeMs now, uint64_t* held) {
    std::lock_guard lock(mu_);
    if (used_ == 0 || now - window_start_ >= interval_ms_) {
      window_start_ = now;
      used_ = 0;
    }
    if (used_ >= burst_) {
      ++held_;
      return false;
    }
    ++used_;
    *held = held_;
    held_ = 0;
    return true;
  }
  // " (N like it held back)", or nothing when none was.
  static std::string HeldBack(uint64_t held) {
    return held ? " (" + std::to_string(held) + " more like it not logged)" : std::string();
  }

 private:
  const int burst_;
  const TimeMs interval_ms_;
  std::mutex mu_;
  TimeMs window_start_ = 0;  // guarded by mu_
  int used_ = 0;             // lines logged in the window; guarded by mu_
  uint64_t held_ = 0;        // guarded by mu_
};

}  // namespace yb
