// OffloadQueues: per client, the objects the master wants copied down to that client's SSD tier
// (docs/ssd-tier.md). Only clients that registered an SSD tier have a queue. A queue holds at
// most `limit` objects, counting those already handed out and not yet reported: when it is full,
// eager offload skips the object and eviction keeps it in DRAM (unless offload_force_evict). It
// also carries drops (disk copies of removed or replaced keys to delete), up to 64 x `limit`.
// Thread-safe; never calls out while holding its lock (callers may hold a shard lock).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/master_api.h"
#include "common/thread_annotations.h"

namespace yb {

struct OffloadItem {
  std::string table_key;  // tenant index + key
  uint64_t object_id = 0;
  uint64_t bytes = 0;
  bool on_evict = false;  // eviction picked it: its memory is freed once the disk copy is durable
  bool drop = false;      // the key was removed or replaced: the client drops its disk copy (no report)
};

class OffloadQueues {
 public:
  explicit OffloadQueues(size_t limit) : limit_(limit) {}

  // The client has an SSD tier (again): it gets an empty queue if it had none.
  void AddClient(const ClientId& c);
  bool Has(const ClientId& c) const;
  // Whether any client has an SSD tier.
  bool Any() const;
  // False when the client has no SSD tier or its queue is full.
  bool Push(const ClientId& c, OffloadItem item);
  // Hands out up to `max` queued items; they stay counted until Finish.
  std::vector<OffloadItem> Take(const ClientId& c, size_t max);
  // Ends a handed-out item; nothing if the client was not given `object_id`.
  std::optional<OffloadItem> Finish(const ClientId& c, uint64_t object_id);
  // Forgets a client's queue; returns every item it held (queued and handed out).
  std::vector<OffloadItem> RemoveClient(const ClientId& c);

  // DRAM bytes that on-evict offloads will free when they finish.
  uint64_t evict_pending_bytes() const { return evict_pending_.load(std::memory_order_relaxed); }
  uint64_t queued() const;
  uint64_t pushed() const { return pushed_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  struct IdHash {
    size_t operator()(const ClientId& c) const { return c.hi ^ (c.lo * 0x9E3779B97F4A7C15ULL); }
  };
  struct Queue {
    std::deque<OffloadItem> waiting;
    std::unordered_map<uint64_t, OffloadItem> handed_out;  // by object id
    size_t drops = 0;                                      // drop items in `waiting`
  };
  static constexpr size_t kDropsPerTask = 64;  // drop items allowed per unit of `limit`
  void Forget(const OffloadItem& item) REQUIRES(mu_);

  const size_t limit_;
  mutable Mutex mu_;  // a leaf: nothing is called while it is held
  std::unordered_map<ClientId, Queue, IdHash> queues_ GUARDED_BY(mu_);
  std::atomic<uint64_t> evict_pending_{0};
  std::atomic<uint64_t> pushed_{0};
  std::atomic<uint64_t> refused_{0};
};

}  // namespace yb
