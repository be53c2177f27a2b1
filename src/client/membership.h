// Membership: what makes a client a member of the cluster. It owns the client's id and its
// registration with the master (which binds its tenant), the memory it contributes (mapped once,
// mounted as segments of segment_chunk_size), and the heartbeat: a Beat() each second pings the
// master and, when the master has forgotten the client (a restart, or the client declared dead),
// registers again and re-mounts the same segments, then runs the re-mount hook (the SSD tier
// registering its disk replicas again) until that succeeds.
//
// Thread-safe: the heartbeat beats on the scheduler's thread while callers read ctx() and the
// mounted segments. Lock order: mu_ is a leaf (no call to the master is made holding it).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/master_api.h"
#include "client/held_pins.h"
#include "client/unreachable_holders.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/scheduler.h"
#include "common/thread_annotations.h"
#include "transfer/local_segments.h"
#include "yuebing/client.h"

namespace yb {

// Drains segments `ids` (MasterApi::DrainSegment) until no object needs a copy elsewhere any more,
// polling every 200 ms of `clock` for up to `timeout`; `progress` hears how many are left after each
// round. OK once leaving loses nothing; RPC_TIMEOUT naming what is left otherwise.
Status DrainSegments(MasterApi& master, const CallContext& ctx, const std::vector<SegmentId>& ids,
                     std::chrono::milliseconds timeout, const std::function<void(uint64_t remaining)>& progress,
                     const Clock& clock);

class Membership {
 public:
  // `served`, when given, is the registry the client's transfer server serves from; `endpoint`
  // is where other processes reach it; `engine`, the transfer engine whose unreachable holders the
  // heartbeat reports (none: nothing is reported).
  Membership(const ClientConfig& config, std::shared_ptr<MasterApi> master, std::shared_ptr<LocalSegmentRegistry> local,
             std::shared_ptr<LocalSegmentRegistry> served, std::string endpoint,
             std::shared_ptr<TransferEngine> engine = nullptr);
  ~Membership();
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Registers with the master: the first step of a client's life (a fresh random id), and again
  // when the master forgot the client (its id kept, proven with the token it was given).
  Status Register();
  // Beats every second on `scheduler` until StopHeartbeat() (or destruction).
  void StartHeartbeat(Scheduler& scheduler);
  void StopHeartbeat();
  // Maps global_segment_size and mounts it; on failure nothing stays mounted.
  Status MountPool();
  // Unmounts every segment; false when the master could not be reached.
  bool UnmountPool();
  // More memory at run time (Mooncake's allocate_and_mount_segment): `size` bytes mapped and mounted
  // as segments of segment_chunk_size; none mounted on failure. NOT_SUPPORTED for a client that
  // serves no transfers.
  Result<std::vector<SegmentMount>> AllocateAndMount(uint64_t size);
  // A file's range mounted the same way (Mooncake's mount_segment; MappedRegion::MapFile).
  Result<std::vector<SegmentMount>> MountFile(const std::string& path, uint64_t offset, uint64_t size);
  // NOT_SUPPORTED for a client that serves no transfers: memory mounted at run time is its segments'.
  Status MayMountMore() const;
  // Unmounts these segments of this client (the master drops their replicas); their memory is freed
  // once no transfer uses it. SEGMENT_NOT_FOUND for one that is not this client's (the others are
  // unmounted all the same).
  Status Unmount(const std::vector<SegmentId>& ids);
  // Tells the master this client leaves (after UnmountPool). Logged, never fatal.
  void Leave();
  // One heartbeat: ping; register and re-mount if asked; run the re-mount hook if it is owed.
  Status Beat();
  // Called by Beat() after the master forgot the segments, with the first of them, until it
  // returns OK. Set once the SSD tier runs.
  void SetRemountHook(std::function<Status(SegmentId first)> hook);

  // Who is calling, for the master: what it answered at registration. Safe from any thread.
  CallContext ctx() const {
    MutexLock lock(ctx_mu_);
    return ctx_;
  }
  ClientId id() const { return id_; }
  MasterApi& master() const { return *master_; }
  const std::shared_ptr<MasterApi>& master_ptr() const { return master_; }
  // The read pins this client's reads hold, named in each heartbeat.
  HeldPins& pins() { return pins_; }
  const HeldPins& pins() const { return pins_; }
  // The holders this client's transfers could not reach, reported in each heartbeat.
  UnreachableHolders& unreachable() { return unreachable_; }
  // A segment this client mounted (its memory is ours: the cheapest replica to read).
  bool IsLocal(SegmentId s) const;
  std::vector<SegmentMount> mounted() const;

  // Liveness as the heartbeats see it. The master is reachable while no heartbeat has failed
  // since it last answered.
  bool master_reachable() const { return missed_.load() == 0; }
  uint64_t heartbeat_failures() const { return failures_.load(); }
  uint64_t remounts() const { return remounts_.load(); }
  // The master serves from every segment this client holds, as its last answer said (false while
  // it asks for a re-mount, until one succeeds).
  bool segments_mounted() const { return segments_mounted_.load(); }
  // Whether the master said copy tasks wait for this client since this was last asked.
  bool TakeRepairsWaiting() { return repairs_waiting_.exchange(false); }

 private:
  ClientRegistration Registration() const;
  // Mounts `region` as segments of segment_chunk_size; on failure none of them stays mounted.
  Result<std::vector<SegmentMount>> MountRegion(const std::shared_ptr<MappedRegion>& region);
  // Records whether a heartbeat reached the master; logs when it stops and starts doing so.
  void Note(const Status& ping);

  const ClientConfig& config_;
  const std::shared_ptr<MasterApi> master_;
  const std::shared_ptr<LocalSegmentRegistry> local_;
  const std::shared_ptr<LocalSegmentRegistry> served_;
  const std::string endpoint_;
  const std::shared_ptr<TransferEngine> engine_;
  ClientId id_;
  mutable Mutex ctx_mu_;                     // a leaf
  CallContext ctx_ GUARDED_BY(ctx_mu_);      // changes when the client registers again
  std::shared_ptr<MappedRegion> pool_;  // the memory behind the segments
  std::unique_ptr<Scheduler::Job> heartbeat_;
  mutable Mutex mu_;
  std::vector<SegmentMount> mounted_ GUARDED_BY(mu_);
  std::function<Status(SegmentId)> remount_hook_ GUARDED_BY(mu_);
  bool hook_owed_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> missed_{0};  // in a row, since the master was last reached
  std::atomic<uint64_t> remounts_{0};
  std::atomic<bool> segments_mounted_{true};
  std::atomic<bool> repairs_waiting_{false};
  HeldPins pins_;
  UnreachableHolders unreachable_;
};

}  // namespace yb
