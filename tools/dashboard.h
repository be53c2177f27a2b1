// The dashboard yb-master serves on its metrics port (`/` and `/dashboard`): one page whose script
// and style are inline and built into the binary (nothing is fetched from elsewhere), drawing its
// charts and tables from `/dashboard.json` every two seconds. The feed holds the numbers now
// (segments, misses by reason, standbys) and a history of samples taken each second by
// DashboardHistory, so a page opened late shows the last ten minutes at once.
#pragma once

#include <cstdint>
#include <deque>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/thread_annotations.h"

namespace yb::tools {

// The master's counters at one moment (the page charts their rates from two samples in a row).
struct DashboardSample {
  int64_t t_ms = 0;  // Unix time
  uint64_t keys = 0, capacity = 0, allocated = 0, segments = 0, live_clients = 0;
  uint64_t get_hits = 0, get_misses = 0, exist_hits = 0, exist_misses = 0, puts_refused = 0;
  uint64_t evicted_objects = 0, repaired = 0, objects_lost = 0, offloaded = 0, disk_replicas_dropped = 0;
  uint64_t rpc_calls = 0, rpc_failures = 0, rpc_micros = 0;  // every method's, since start
  uint64_t standby_lag_records = 0;                          // the standby furthest behind
  bool leader = true;
};

nlohmann::json ToJson(const DashboardSample& s);

// The last `keep` samples. Thread-safe.
class DashboardHistory {
 public:
  explicit DashboardHistory(size_t keep = 600) : keep_(keep) {}
  void Record(const DashboardSample& s);
  nlohmann::json Json() const;  // oldest first

 private:
  const size_t keep_;
  mutable Mutex mu_;
  std::deque<DashboardSample> samples_ GUARDED_BY(mu_);
};

// The page (HTML with its script and style).
std::string_view DashboardPage();

}  // namespace yb::tools
