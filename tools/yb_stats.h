// `yb stats` and `yb top`: the dashboard's numbers as text, from a master's /dashboard.json.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace yb::tools {

struct StatsOptions {
  std::string http;        // the master's metrics address, host:port
  bool json = false;       // stats: the feed itself
  double interval_s = 2;   // top: seconds between refreshes
  int iterations = 0;      // top: stop after this many (0: until interrupted)
};

// The report `yb stats` prints, from a /dashboard.json feed.
std::string StatsText(const nlohmann::json& feed);

// Fetches the feed once and prints it. 0, or 1 when the master cannot be asked.
int PrintStats(const StatsOptions& o);
// Prints it again every interval, the terminal cleared between (a view that refreshes itself).
int Top(const StatsOptions& o);

}  // namespace yb::tools
