// Evictor: frees DRAM when the pool is nearly full.
//
// Order: least recently used first. Recency is a global access sequence stamped by reads
// (GetReplicaList) and publication (PutEnd); each shard keeps its objects on a list in that order,
// and an eviction merges the shards' oldest candidates. Leases do not order eviction, and
// existence probes touch neither recency nor leases, so probing can never pin the pool full.
//
// Candidates: not hard-pinned, lease expired, no read pins, a COMPLETE MEMORY replica on a segment
// served from (not one restored and not re-mounted, nor one in a dead client's grace). Objects that
// also have a LOCAL_DISK replica go first (dropping their DRAM copies loses nothing; with eager
// offload the newest objects may not be on disk yet), then the other unpinned ones. Soft-pinned
// objects (pin not yet expired) go only after every other candidate, and only when allowed.
// An object whose eager offload is queued or running (no disk copy yet) is not a candidate: it
// becomes one, among the first, once its copy is durable. With offload_force_evict it is an
// ordinary candidate (and is lost if picked).
//
// With offload_on_evict, a candidate that has no LOCAL_DISK replica and a MEMORY replica on a client
// with an SSD tier is queued for offload instead: that replica stays (pinned from eviction) until
// the disk copy is durable, its other MEMORY replicas are freed now. When the client's offload
// queue is full the object stays in DRAM, unless offload_force_evict.
//
// RunOnce() is the background step (a scheduler calls it; tests call it directly). EvictBytes()
// also runs inline when an allocation fails. Thread-safe; evictions are serialized.
#pragma once

#include <atomic>
#include <cstdint>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "master/master_config.h"
#include "master/object_table.h"
#include "master/offload_queues.h"
#include "master/segment_manager.h"

namespace yb {

class Evictor {
 public:
  Evictor(ObjectTable& table, SegmentManager& segments, OffloadQueues& offload, const Clock& clock,
          const MasterConfig& config);

  // Remembers that an allocation of `bytes` failed: the next RunOnce frees at least that much.
  void NoteAllocationFailure(uint64_t bytes);
  // Evicts when usage is above the high watermark, or after an allocation failure. Returns bytes freed.
  uint64_t RunOnce();
  // Frees at least `bytes` of replica space if there are enough candidates. Returns bytes freed.
  uint64_t EvictBytes(uint64_t bytes);

  uint64_t evicted_objects() const { return evicted_objects_.load(std::memory_order_relaxed); }
  uint64_t evicted_bytes() const { return evicted_bytes_.load(std::memory_order_relaxed); }
  // Objects queued for the SSD tier by eviction, and objects kept in DRAM because the queue was full.
  uint64_t offloaded_on_evict() const { return offloaded_on_evict_.load(std::memory_order_relaxed); }
  uint64_t kept_queue_full() const { return kept_queue_full_.load(std::memory_order_relaxed); }

 private:
  struct Candidate {
    uint64_t last_access;
    uint32_t shard;
    bool last_of_truncated_shard;
    uint64_t object_id;
    uint64_t bytes;
    std::string key;
  };
  enum class Pass { kOnDisk, kUnpinned, kSoftPinned };

  bool IsCandidate(const ObjectMeta& m, Pass pass, TimeMs now) const;
  // Bytes evicting `m` frees where new objects can go: its complete MEMORY replicas on segments
  // that take new replicas. Replicas on a segment that takes none (restored and not re-mounted
  // yet, of a client in its grace or not heard from, or draining) free nothing a Put could use,
  // and are kept for their owner's return (or the drain's copy).
  uint64_t MemoryBytes(const ObjectMeta& m, TimeMs now) const;
  void Collect(Pass pass, TimeMs now, std::vector<Candidate>& out);
  uint64_t EvictOne(ObjectTable::Locked& s, const Candidate& c, Pass pass, TimeMs now);
  enum class Offload { kQueued, kQueueFull, kNoSsdTier };
  Offload QueueOffload(ObjectTable::Locked& s, ObjectTable::Ref obj);

  ObjectTable& table_;
  SegmentManager& segments_;
  OffloadQueues& offload_;
  const Clock& clock_;
  const MasterConfig& config_;
  Mutex run_mu_;  // serializes evictions; taken before any shard's accessor
  std::atomic<uint64_t> failed_bytes_{0};
  std::atomic<uint64_t> evicted_objects_{0};
  std::atomic<uint64_t> evicted_bytes_{0};
  std::atomic<uint64_t> offloaded_on_evict_{0};
  std::atomic<uint64_t> kept_queue_full_{0};
};

}  // namespace yb
