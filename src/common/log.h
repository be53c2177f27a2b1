// Logging goes through spdlog; components log with these macros so the sink is chosen in main().
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>

#define YB_LOG_DEBUG(...) SPDLOG_DEBUG(__VA_ARGS__)
#define YB_LOG_INFO(...) SPDLOG_INFO(__VA_ARGS__)
#define YB_LOG_WARN(...) SPDLOG_WARN(__VA_ARGS__)
#define YB_LOG_ERROR(...) SPDLOG_ERROR(__VA_ARGS__)

namespace yb {

// For a condition that repeats (a refused connection, a failed retry): true for its 1st, 2nd, 4th,
// 8th, ... occurrence, so that the log tells it started and that it goes on, without one line each.
inline bool LogOccurrence(uint64_t n) { return n > 0 && (n & (n - 1)) == 0; }

}  // namespace yb
