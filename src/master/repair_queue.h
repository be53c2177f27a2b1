// RepairQueue: re-replication's bookkeeping (docs/design.md, "Replicas that heal"), a component
// beside the Evictor and the OffloadQueues. It holds the objects at risk (queued fewest replicas
// left first, each key once while queued or being copied), the copies in flight (a RepairTask for
// the target segment's owner, handed out once), and the byte budget --repair_bandwidth refills.
// MasterService decides what to copy where (master_repair.cc); this decides what comes next.
// Thread-safe; a leaf: nothing is called while its lock is held (callers may hold a shard's).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/thread_annotations.h"
#include "master/segment_manager.h"

namespace yb {

class RepairQueue {
 public:
  // A copy being made: the task its target's owner is handed, and what the master needs to end it.
  struct InFlight {
    RepairTask task;
    std::string table_key;
    uint64_t object_id = 0;
    ClientId client;  // the target segment's owner, who copies
    Allocation target;
    TimeMs deadline = 0;
    bool handed_out = false;
    TaskId user_task;  // the copy or move task it is for; empty: a repair
  };
  // What is queued: the key and its COMPLETE replicas when it was queued.
  using AtRisk = std::pair<size_t, std::string>;

  static constexpr size_t kMaxInFlight = 4096;
  static constexpr size_t kMaxPerRound = 1024;

  // `bandwidth`: bytes per second that may be copied (0: no re-replication; copies of tasks still run).
  explicit RepairQueue(uint64_t bandwidth) : bandwidth_(bandwidth) {}
  bool enabled() const { return bandwidth_ != 0; }

  // Queues `table_key` (with `have` replicas left) unless it is queued or being copied already.
  void Note(std::string table_key, size_t have);
  // The next keys to try at `now`: fewest replicas left first, as many as the budget (refilled at
  // the bandwidth, a second's worth at most; full at the first round) and the in-flight limit
  // allow. Each stays "queued" until Requeue or Forget.
  std::vector<AtRisk> NextRound(TimeMs now);
  bool HasBudget() const;
  void Spend(uint64_t bytes);
  // Puts keys that could not start now back, behind the others.
  void Requeue(std::vector<AtRisk> later);
  // `table_key` is no longer queued nor being copied.
  void Forget(const std::string& table_key);

  // A copy starts: its task id.
  uint64_t Start(InFlight f);
  // Up to `max` copies of `client` not handed out yet; handed out from now on.
  std::vector<RepairTask> Fetch(const ClientId& client, size_t max);
  // The copy `task_id` of `client` ends (its key no longer counted as queued); nothing when there
  // is no such copy for that client.
  std::optional<InFlight> Finish(uint64_t task_id, const ClientId& client);
  // Ends every copy for which `gone` holds (timed out, its client gone): returned for the caller
  // to undo. Their keys stay counted until Forget.
  std::vector<InFlight> TakeIf(const std::function<bool(const ClientId& client, TimeMs deadline)>& gone);
  // Calls `fn` with each copy in flight (under the lock: `fn` must call nothing of the master).
  void ForEach(const std::function<void(const InFlight&)>& fn) const;
  // Copies of `client` it has not been handed yet.
  size_t Waiting(const ClientId& client) const;
  size_t at_risk() const;    // keys queued or being copied
  size_t in_flight() const;  // copies

 private:
  const uint64_t bandwidth_;
  mutable Mutex mu_;
  std::map<size_t, std::deque<std::string>> queue_ GUARDED_BY(mu_);  // by COMPLETE replicas left
  std::unordered_set<std::string> keys_ GUARDED_BY(mu_);             // queued or being copied
  std::unordered_map<uint64_t, InFlight> copies_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  double tokens_ GUARDED_BY(mu_) = 0;  // bytes that may be copied now
  TimeMs refilled_ GUARDED_BY(mu_) = 0;
};

}  // namespace yb
