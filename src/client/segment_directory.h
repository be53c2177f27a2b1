// SegmentDirectory: segment id -> transfer endpoint, learned from the master's segment list.
// A miss refreshes the list, at most once per `refresh_interval`; the list is fetched outside the
// lock, so that lookups of known segments never wait for the master (a master restarting or cut
// off holds a call for its whole deadline). A miss during a refresh waits for it. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
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
    std::unique_lock lock(mu_);
    if (auto hit = FindLocked(id)) return hit;
    if (refreshing_) {  // someone is asking the master: its answer is as fresh as ours would be
      cv_.wait(lock, [this] { return !refreshing_; });
      return FindLocked(id);
    }
    auto now = std::chrono::steady_clock::now();
    if (now - last_refresh_ < refresh_interval_) return std::nullopt;
    last_refresh_ = now;
    refreshing_ = true;
    lock.unlock();
    auto list = master_.ListSegments();
    std::unordered_map<SegmentId, std::string> fresh;
    if (list.ok()) {
      for (const auto& u : *list) fresh[u.desc.id] = u.desc.endpoint;
    }
    lock.lock();
    if (list.ok()) endpoints_.swap(fresh);
    refreshing_ = false;
    cv_.notify_all();
    return FindLocked(id);
  }

 private:
  std::optional<std::string> FindLocked(SegmentId id) const {
    auto it = endpoints_.find(id);
    if (it == endpoints_.end()) return std::nullopt;
    return it->second;
  }

  MasterApi& master_;
  std::chrono::milliseconds refresh_interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::unordered_map<SegmentId, std::string> endpoints_;  // guarded by mu_
  std::chrono::steady_clock::time_point last_refresh_{};  // guarded by mu_
  bool refreshing_ = false;                               // a ListSegments call is out; guarded by mu_
};

}  // namespace yb
