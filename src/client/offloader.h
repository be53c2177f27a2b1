// Offloader: a client's SSD tier in motion (docs/ssd-tier.md). It owns the StorageEngine over
// the client's storage directory and, in rounds run on a Scheduler (back to back while there is
// work, idle_ms apart when there is none):
//   - fetches the offload tasks the master queued for this client (eager after PutEnd, or from
//     eviction), copies each object from the client's own segment into a bucket, and reports the
//     outcome (OffloadDone) so the master records the LOCAL_DISK replica or keeps the DRAM copy;
//   - evicts whole buckets above the high watermark (telling the master first).
// A write the disk refuses (full, failing) pauses offloading: no task is fetched (the master keeps
// every DRAM copy, and memory keeps serving), reads of what is on disk go on, and after a pause (1 s,
// doubling to 30 s) a round tries again once space was freed there (or 1 MiB is free); logged once
// each way.
// It serves LOCAL_DISK reads to this process and to the transfer server (ObjectReader), and
// registers what is on disk with the master after start, re-mount or master restart.
#pragma once

#include <atomic>
#include <functional>
#include <memory>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "common/thread_annotations.h"
#include "storage/storage_engine.h"
#include "transfer/local_segments.h"

namespace yb {

class Offloader {
 public:
  struct Options {
    storage::StorageConfig storage;
    // Offload tasks fetched per round: a round is one bucket write (fsync pair), and small buckets
    // cost throughput (64 KiB objects: 0.8 GB/s in rounds of 64, 1.3-1.5 GB/s in rounds of 256+).
    uint32_t batch = 500;
    const Clock* clock = nullptr;  // the pauses' clock (null: the real one)
  };
  using ContextFn = std::function<CallContext()>;

  // Opens (and recovers) the storage directory. Nothing runs until Start().
  static Result<std::unique_ptr<Offloader>> Open(Options options, std::shared_ptr<MasterApi> master, ContextFn ctx,
                                                 std::shared_ptr<LocalSegmentRegistry> local);
  ~Offloader();

  // Registers every object on disk as a LOCAL_DISK replica on `segment`. Objects whose key now has
  // another value are forgotten. Returns the first call failure (the master unreachable).
  Status RegisterAll(SegmentId segment);
  // One round: fetch tasks, write them, report them, evict buckets if needed. Returns tasks handled.
  size_t RunOnce();
  // Brings usage under the watermarks (plus `incoming` bytes). Returns buckets evicted.
  size_t EvictIfNeeded(uint64_t incoming = 0);
  // Runs rounds on `scheduler` until Stop() (or destruction).
  void Start(Scheduler& scheduler);
  void Stop();

  std::shared_ptr<ObjectReader> reader() const { return reader_; }
  storage::StorageEngine& engine() { return *engine_; }
  const storage::StorageEngine& engine() const { return *engine_; }
  uint64_t offloaded() const { return offloaded_.load(std::memory_order_relaxed); }
  uint64_t failed() const { return failed_.load(std::memory_order_relaxed); }
  uint64_t evicted_buckets() const { return evicted_buckets_.load(std::memory_order_relaxed); }
  // Offloading stopped: the disk refused a write, and has not taken one since.
  bool paused() const { return paused_.load(std::memory_order_relaxed); }

 private:
  // Drops disk copies nobody will ask for, durably (logged if that fails).
  void ForgetCopies(const std::vector<std::string>& disk_keys);
  Offloader(Options options, std::shared_ptr<MasterApi> master, ContextFn ctx,
            std::shared_ptr<LocalSegmentRegistry> local);

  Options options_;
  std::shared_ptr<MasterApi> master_;
  ContextFn ctx_;
  std::shared_ptr<LocalSegmentRegistry> local_;
  std::shared_ptr<storage::StorageEngine> engine_;
  std::shared_ptr<ObjectReader> reader_;
  Mutex round_mu_;  // one round at a time (scheduler and tests)
  std::unique_ptr<Scheduler::Job> job_;
  std::atomic<uint64_t> offloaded_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> evicted_buckets_{0};
  // Whether a round may write now (false while paused and the pause or the disk says no).
  bool MayWrite() REQUIRES(round_mu_);
  void Pause(const Status& why) REQUIRES(round_mu_);
  RealClock real_clock_;
  const Clock& clock_;  // options_.clock, or real_clock_
  std::atomic<bool> paused_{false};
  TimeMs retry_at_ GUARDED_BY(round_mu_) = 0;
  TimeMs pause_ms_ GUARDED_BY(round_mu_) = 0;         // the current pause, doubling while the disk refuses
  uint64_t free_at_pause_ GUARDED_BY(round_mu_) = 0;  // free bytes when the disk last refused
};

}  // namespace yb
