// SegmentDirectory: segment id -> transfer endpoint, learned from the master's segment list.
// A miss refreshes the list, at most once per `refresh_interval`. Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "master/master_api.h"

namespace yb {

class SegmentDirectory {
 public:
  explicit SegmentDirectory(MasterApi& master,
                            std::chrono::milliseconds refresh_interval = std::chrono::milliseconds(200))
      : master_(master), refresh_interval_(refresh_interval) {}

  std::optional<std::string> Resolve(SegmentId id) {
    std::lock_guard lock(mu_);
    auto it = endpoints_.find(id);
    if (it != endpoints_.end()) return it->second;
    auto now = std::chrono::steady_clock::now();
    if (now - last_refresh_ < refresh_interval_) return std::nullopt;
    last_refresh_ = now;
    auto list = master_.ListSegments();
    if (!list.ok()) return std::nullopt;
    endpoints_.clear();
    for (const auto& u : *list) endpoints_[u.desc.id] = u.desc.endpoint;
    it = endpoints_.find(id);
    if (it == endpoints_.end()) return std::nullopt;
    return it->second;
  }

 private:
  MasterApi& master_;
  std::chrono::milliseconds refresh_interval_;
  std::mutex mu_;
  std::unordered_map<SegmentId, std::string> endpoints_;  // guarded by mu_
  std::chrono::steady_clock::time_point last_refresh_{};  // guarded by mu_
};

}  // namespace yb
