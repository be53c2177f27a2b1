// What the benchmarks time with: seconds since a steady_clock reading, and the median of samples.
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace yb_bench {

using Clock = std::chrono::steady_clock;

inline double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The middle sample (the upper one of an even count); 0 for none.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace yb_bench
