// SegmentDirectory: segment id -> transfer endpoint, learned from the master's segment list.
//
// A miss is a segment the master named (in a replica list) that we have not heard of: most often
// one a node mounted a moment ago. It refreshes the list and waits for that: refreshes start no
// sooner than `refresh_interval` after the previous one, one at a time, and every miss waiting at
// that moment is answered by the same refresh. The list is fetched outside the lock, so lookups
// of known segments never wait for the master (a master restarting, or cut off until the call's
// deadline). An id still unknown after a refresh that started after its miss is not found. Time
// is the injected Clock's (a test's ManualClock moves when a miss waits out the interval).
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/thread_annotations.h"

namespace yb {

class SegmentDirectory {
 public:
  SegmentDirectory(MasterApi& master, const Clock& clock,
                   std::chrono::milliseconds refresh_interval = std::chrono::milliseconds(200))
      : master_(master), clock_(clock), refresh_interval_(refresh_interval.count()) {}

  // The owner's host identity (SegmentDesc::host_id) as last listed; "" when unknown. Never asks
  // the master.
  std::string HostOf(SegmentId id) const {
    MutexLock lock(mu_);
    auto it = hosts_.find(id);
    return it == hosts_.end() ? std::string() : it->second;
  }

  std::optional<std::string> Resolve(SegmentId id) {
    MutexUniqueLock lock(mu_);
    // Found, or not found by a refresh that started after this miss (one already out may predate
    // the segment, though it may find it too).
    const uint64_t need = started_ + 1;
    for (;;) {
      if (auto hit = FindLocked(id)) return hit;
      if (done_ >= need) return std::nullopt;
      if (started_ != done_) {  // a refresh is out
        cv_.wait(lock);
        continue;
      }
      const TimeMs now = clock_.NowMs();
      if (started_ > 0 && now < last_refresh_ + refresh_interval_) {
        const TimeMs until = last_refresh_ + refresh_interval_;
        lock.unlock();
        clock_.SleepUntil(until);
        lock.lock();
        continue;
      }
      RefreshLocked(now);
    }
  }

 private:
  std::optional<std::string> FindLocked(SegmentId id) const REQUIRES(mu_) {
    auto it = endpoints_.find(id);
    if (it == endpoints_.end()) return std::nullopt;
    return it->second;
  }

  // Fetches the list with mu_ released (held again on return); a failed fetch keeps what we knew.
  void RefreshLocked(TimeMs now) REQUIRES(mu_) {
    ++started_;
    last_refresh_ = now;
    mu_.unlock();
    auto list = master_.ListSegments();
    std::unordered_map<SegmentId, std::string> fresh, hosts;
    if (list.ok()) {
      for (const auto& u : *list) {
        fresh[u.desc.id] = u.desc.endpoint;
        if (!u.desc.host_id.empty()) hosts[u.desc.id] = u.desc.host_id;
      }
    }
    mu_.lock();
    if (list.ok()) {
      endpoints_.swap(fresh);
      hosts_.swap(hosts);
    }
    ++done_;
    cv_.notify_all();
  }

  MasterApi& master_;
  const Clock& clock_;
  const TimeMs refresh_interval_;
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::unordered_map<SegmentId, std::string> endpoints_ GUARDED_BY(mu_);
  std::unordered_map<SegmentId, std::string> hosts_ GUARDED_BY(mu_);  // owners' host identities
  TimeMs last_refresh_ GUARDED_BY(mu_) = 0;                           // when the last refresh started
  // Refreshes, one at a time (one is out while they differ).
  uint64_t started_ GUARDED_BY(mu_) = 0;
  uint64_t done_ GUARDED_BY(mu_) = 0;
};

}  // namespace yb
