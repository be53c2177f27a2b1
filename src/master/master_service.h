// MasterService: the master's metadata engine behind MasterApi, in one process.
//
// Owns the segment registry and allocators, the sharded object table, tenants, client liveness and
// eviction. Never touches object bytes. All methods are thread-safe. Background work is exposed as
// RunOnce-style steps (Evictor::RunOnce, ReclaimOnce, LivenessOnce, RunBackgroundOnce) that a
// scheduler drives; tests call them directly with a ManualClock.
//
// Keys live in a tenant namespace: the table key is a 2-byte tenant index followed by the key.
//
// Identity: RegisterClient answers a context with a token, a keyed hash of the client's id and
// tenant that only the master can make; VerifyCaller checks it (the RPC server, before every other
// call), so a network caller cannot use an id it was not given nor change its tenant per call.
//
// Durability: with a MetaSink (SetSink), every change to what readers see or to where bytes
// live is appended as a record (master/meta_sink.h says where). A master that restarted is built
// from the image those records make (Load) before it serves; its segments come back restored,
// and what is on them is readable again once their owners re-mount them with their memory kept
// (ExpireRecoveredOnce drops the segments of owners that did not come back within client_ttl and
// the grace).
//
// Lock order: Evictor's run lock, then one object-table shard (through its accessor, never two),
// then any of the leaves: discarded_mu_, SegmentManager (its table lock, then one segment's),
// OffloadQueues, RepairQueue, ClientRegistry, TenantRegistry. A leaf calls nothing while it holds its lock.
// Every lock is annotated (common/thread_annotations.h); scripts/thread_safety.sh checks them.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/thread_annotations.h"
#include "master/client_registry.h"
#include "master/evictor.h"
#include "master/group_homes.h"
#include "master/master_config.h"
#include "master/master_image.h"
#include "master/meta_sink.h"
#include "master/object_table.h"
#include "master/offload_queues.h"
#include "master/repair_queue.h"
#include "master/segment_manager.h"
#include "master/task_table.h"
#include "master/tenants.h"

namespace yb {

struct MasterStats {
  uint64_t liveness_gaps = 0;  // times the master found it had not run for a while (LivenessOnce)
  uint64_t keys = 0;
  uint64_t pending_puts = 0;  // callers' Puts in progress (not counting reservations)
  uint64_t reservations = 0;  // clients' reservations (BatchPutCommit): Puts in progress under their own names
  uint64_t segments = 0;
  // Segments known but not served from: restored at start and not re-mounted yet, or of a client
  // declared dead, in its grace (--client_grace_sec).
  uint64_t segments_unconfirmed = 0;
  // Partitions: segments clients report they cannot reach (not handed out while another replica
  // is), and segments whose owner the master does not hear from (no new replicas).
  uint64_t segments_unreachable = 0;
  uint64_t segments_unheard = 0;
  uint64_t capacity = 0;
  uint64_t allocated = 0;
  // Freed bytes held while a grant for them may be valid (GrantHold; counted in `allocated`).
  uint64_t held = 0;
  uint64_t evicted_objects = 0;
  uint64_t evicted_bytes = 0;
  uint64_t live_clients = 0;
  // Puts given fewer memory replicas than their replica_num (too few segments, distinct by name,
  // had room: best effort, as Mooncake), and the replicas they went without.
  uint64_t under_replicated_puts = 0;
  uint64_t stale_pins_released = 0;  // read pins ended because their reader stopped naming them
  uint64_t missing_replicas = 0;
  // Re-replication: objects with fewer COMPLETE memory replicas than they were published with
  // (queued or being copied), copies in flight, copies completed and their bytes, and objects whose
  // last replica went (removed: lost).
  uint64_t repair_at_risk = 0;
  uint64_t repairs_in_flight = 0;
  uint64_t tasks_unfinished = 0;  // copy and move tasks (CreateTask) not ended yet
  uint64_t repaired = 0;
  uint64_t repair_bytes = 0;
  uint64_t objects_lost = 0;
  // SSD tier.
  uint64_t offload_queued = 0;       // objects queued or in flight
  uint64_t offload_pushed = 0;       // objects ever queued
  uint64_t offloaded = 0;            // LOCAL_DISK replicas added by offloads
  uint64_t offload_failed = 0;       // offloads a client reported failed
  uint64_t disk_drops_refused = 0;   // disk copies of removed keys a full queue kept from their owner
  uint64_t offloaded_on_evict = 0;   // objects eviction sent down instead of dropping
  uint64_t kept_queue_full = 0;      // evictions that kept an object in DRAM: its client's queue was full
  uint64_t offload_refused = 0;      // objects not queued (eager or eviction): the queue was full
  uint64_t disk_registered = 0;      // LOCAL_DISK replicas registered by clients (restarts)
  uint64_t disk_dropped = 0;         // LOCAL_DISK replicas dropped by SSD-tier eviction
  uint64_t disk_away_copies = 0;     // disk copies whose owner went away, remembered (AwayCopy)
  uint64_t disk_away_untracked = 0;  // away copies not remembered: disk_away_copies_limit was reached
  // Reads that found no object, by why (MissReason): Gets (GetReplicaList) and exist probes; and
  // Puts refused, by the miss reason they leave (kRefusedQuota, kRefusedNoSpace).
  std::array<uint64_t, kMissReasonCount> get_misses{};
  std::array<uint64_t, kMissReasonCount> exist_misses{};
  std::array<uint64_t, kMissReasonCount> puts_refused{};
  // Reads that found their object: Gets that pinned it (a lookup of size or replicas is not one),
  // and exist probes.
  uint64_t get_hits = 0;
  uint64_t exist_hits = 0;
  uint64_t miss_reason_capacity = 0;  // keys whose departure is remembered at most
};

struct TableKey;  // below: a user's key in the object table

class MasterService final : public MasterApi {
 public:
  // Fails (INVALID_PARAMS) on a bad configuration.
  static Result<std::unique_ptr<MasterService>> Create(const MasterConfig& config, const Clock& clock);

  // MasterApi.
  using MasterApi::BatchPutStart;  // and its helper form without a WriteMode
  Result<CallContext> RegisterClient(const ClientRegistration& reg) override;
  Status VerifyCaller(const CallContext& ctx) override;
  Status Writable() override { return table_.sink() ? table_.sink()->Writable() : Status::OK(); }
  using MasterApi::Ping;  // and its form without a segment count
  Result<PingResponse> Ping(const CallContext& ctx, const PingState& state) override;
  Status UnregisterClient(const CallContext& ctx) override;
  Status MountSegments(const CallContext& ctx, const std::vector<SegmentMount>& segs) override;
  Status UnmountSegment(const CallContext& ctx, SegmentId id) override;
  Result<uint64_t> DrainSegment(const CallContext& ctx, SegmentId id) override;
  Status UndrainSegment(const CallContext& ctx, SegmentId id) override;
  Result<std::vector<SegmentUsage>> ListSegments() override;
  // Segments mounted but awaiting their owner (restored after a restart, or suspended after it was
  // declared dead): readers are not sent to them, and unless the owner mounts them again they are
  // dropped, with their replicas, `drops_in_ms` from now (-1: not known yet).
  struct AwaitingSegment {
    SegmentDesc desc;
    ClientId owner;
    int64_t drops_in_ms = -1;
  };
  std::vector<AwaitingSegment> AwaitingSegments() const;
  std::vector<Result<std::vector<GrantedReplica>>> BatchPutStart(const CallContext& ctx, const Keys& keys,
                                                                 const std::vector<uint64_t>& sizes,
                                                                 const PlacementConfig& config,
                                                                 WriteMode mode) override;
  std::vector<Status> BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                  const std::vector<std::optional<uint64_t>>& checksums) override;
  std::vector<Status> BatchPutRevoke(const CallContext& ctx, const Keys& keys) override;
  PutCommitAnswer BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                 const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                 const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                 const PlacementConfig& config) override;
  std::vector<Result<ObjectInfo>> BatchGetReplicaList(const CallContext& ctx, const Keys& keys, bool pin) override;
  std::vector<Status> BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                   const std::vector<uint64_t>& read_pins) override;
  std::vector<Result<bool>> BatchExistKey(const CallContext& ctx, const Keys& keys) override;
  std::vector<Result<MissInfo>> BatchWhyMissing(const CallContext& ctx, const Keys& keys) override;
  std::vector<Status> BatchRemove(const CallContext& ctx, const Keys& keys, bool force) override;
  Result<Keys> BatchReplicaClear(const CallContext& ctx, const Keys& keys, const std::string& segment_name) override;
  Result<uint64_t> RemoveWhere(const CallContext& ctx, const std::optional<std::string>& pattern, bool force) override;
  Result<std::vector<OffloadTask>> OffloadFetch(const CallContext& ctx, uint32_t max) override;
  std::vector<Status> OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) override;
  Result<std::vector<RepairTask>> RepairFetch(const CallContext& ctx, uint32_t max) override;
  std::vector<Status> RepairDone(const CallContext& ctx, const std::vector<RepairResult>& results) override;
  Result<TaskId> CreateTask(const CallContext& ctx, const TaskSpec& spec) override;
  Result<TaskInfo> QueryTask(const CallContext& ctx, const TaskId& id) override;
  std::vector<Status> AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                      const std::vector<DiskObject>& objects) override;
  std::vector<Status> DropDiskReplicas(const CallContext& ctx, const Keys& disk_keys) override;

  // A Put refused for `why` (kRefusedQuota, kRefusedNoSpace): counted, and the key's miss reason.
  void NoteRefused(const HashedKey& hk, MissReason why);

  // Durability (see the class comment). Load before serving and before SetSink.
  Status Load(const MasterImage& image);
  void SetSink(MetaSink* sink);
  // Who is told when the media an object can be read from change (the KV events); null: no one.
  // Set before serving, after Load (a restored state tells no one).
  void SetMediaObserver(MediaObserver* observer) { table_.SetMediaObserver(observer); }
  // The whole state as records (tenants, segments, then each shard's objects, unfinished Puts
  // and away copies), for a snapshot; safe while serving (shards are visited one at a time).
  void WriteImage(const std::function<void(const pb::LogRecord&)>& emit);
  // Drops the restored segments whose owners did not re-mount them within client_ttl plus the grace
  // of Load, and the suspended ones whose grace ended.
  // Returns how many.
  uint64_t ExpireRecoveredOnce();

  // Administration.
  Status SetTenantQuota(const std::string& tenant, uint64_t bytes) { return tenants_.SetQuota(tenant, bytes); }
  // The quotas of MasterConfig::tenant_quotas (a restarted or promoted master sets them again over
  // what its log kept: the operator's configuration wins).
  Status ApplyConfiguredQuotas();
  struct TenantUsage {
    std::string name;
    uint64_t quota = TenantRegistry::kNoQuota;
    uint64_t used = 0;
  };
  std::vector<TenantUsage> Tenants() const;
  uint64_t TenantUsed(TenantIndex t) const { return tenants_.used(t); }

  // Background steps.
  // Frees space of Puts taken over (after their release timeout) and of Puts left unfinished past
  // put_start_release_timeout. Returns the number of Puts reclaimed.
  uint64_t ReclaimOnce();
  // Declares silent clients dead: unmounts their segments and ends their read pins. Returns how many.
  // After a gap in its own runs longer than liveness_max_gap_ms, judges no one and gives every
  // client a fresh TTL instead (counted: liveness_gaps).
  uint64_t LivenessOnce();
  // One of each step above, and eviction.
  void RunBackgroundOnce();
  // One round of re-replication: copies queued for at-risk objects within --repair_bandwidth, and
  // copies not reported in time given up. Returns the copies started.
  uint64_t RepairOnce();
  // One round of copy and move tasks: each unfinished one with no copy in flight is looked at again
  // (its copies started, its move's source dropped, or it ends). Returns the tasks looked at.
  uint64_t TasksOnce();

  Evictor& evictor() { return evictor_; }
  MasterStats Stats() const;
  // Above every object id given out so far (a snapshot's floor for the next ones).
  uint64_t next_object_id() const { return table_.next_object_id(); }
  const MasterConfig& config() const { return config_; }

 private:
  MasterService(const MasterConfig& config, const Clock& clock, std::unique_ptr<AllocationStrategy> strategy);

  struct Discarded {
    TimeMs release_at;
    TenantIndex tenant;
    uint64_t size;
    std::vector<StoredReplica> replicas;
    TimeMs started;  // its PutStart: its ranges' grants may be valid until some time after
  };

  // `group`: the key's routing group ("" for none).
  Result<std::vector<GrantedReplica>> StartWrite(const CallContext& ctx, const std::string& key, uint64_t size,
                                                 const PlacementConfig& config, WriteMode mode,
                                                 const std::string& group);
  Status MountOne(const CallContext& ctx, const SegmentMount& seg);
  // One key of the batch calls (their loops, master_batch.cc).
  // Whether the key may be written now (no object, unless `upsert`; no Put in progress, or one taken
  // over: its writer gone, or unfinished for put_start_discard_timeout).
  Status FreeForWrite(ObjectTable::Locked& s, const HashedKey& hk, const std::string& key, bool upsert, TimeMs now);
  Status PutEndOne(const CallContext& ctx, const std::string& key, std::optional<uint64_t> checksum);
  // Publishes the key's Put in progress (the caller's: checked), under its shard's lock.
  Status PublishLocked(ObjectTable::Locked& s, const TableKey& tk, const std::string& key,
                       std::optional<uint64_t> checksum, TimeMs now);
  // Publishes `key` from the caller's Put in progress under `reservation` (BatchPutCommit).
  Status CommitOne(const CallContext& ctx, const std::string& key, const std::string& reservation,
                   std::optional<uint64_t> checksum);
  Status PutRevokeOne(const CallContext& ctx, const std::string& key);
  Result<ObjectInfo> GetReplicaListOne(const CallContext& ctx, const std::string& key, bool pin);
  Status ReadEndOne(const CallContext& ctx, const std::string& key, uint64_t read_pin);
  Result<bool> ExistKeyOne(const CallContext& ctx, const std::string& key);
  Status RemoveOne(const CallContext& ctx, const std::string& key, bool force);
  // Why a Put found no room (`c`: the segments as it found them): which take no new replicas, and why.
  static std::string NoRoomMessage(uint64_t size, const SegmentManager::TakingCounts& c);
  // `want`: set to how many replicas the object should have (PendingPut::want; 0 when it got them).
  // `may_evict` false (a client's reservation, made ahead of any Put): refused rather than evict.
  // `as_preferred` (if given): set to whether the first replica went where the placement prefers
  // (preferred_segments, or the writer's own segments and host under prefer_local / local_first;
  // true when it prefers nothing it has).
  Result<std::vector<Allocation>> Reserve(TenantIndex tenant, const ClientId& writer, uint64_t size,
                                          const PlacementConfig& config, const std::string& group, uint8_t* want,
                                          bool may_evict = true, bool* as_preferred = nullptr);
  // The routing group of key `index` of a call of `count` keys: "" when the config names none;
  // INVALID_PARAMS when its group_ids do not name one per key, or one is too long.
  static Result<std::string> GroupOf(const PlacementConfig& config, size_t count, size_t index);
  Status CheckKey(const CallContext& ctx, const std::string& key) const;
  // A replica as a caller sees it, with a grant of `grant` access to it (a LOCAL_DISK one's names
  // `disk_key`, the key its owner's SSD tier holds it under), or none. Every grant of an object's
  // bytes is minted under its shard's lock before the object's access stamp is renewed (Touch,
  // Publish): what GrantHold bounds its lifetime by.
  // `spent_ms`: the grant's lifetime is that much shorter (a writer's grants, asked for again).
  GrantedReplica Describe(const StoredReplica& r, uint64_t size, std::optional<GrantAccess> grant,
                          std::string_view disk_key = {}, TimeMs spent_ms = 0) const;
  Status RemoveLocked(ObjectTable::Locked& s, ObjectTable::Ref obj, bool force, TimeMs now);
  // Removes every object of ctx's tenant whose key satisfies `match`; away copies of such keys,
  // but for objects a lease kept, are superseded.
  uint64_t RemoveMatching(const CallContext& ctx, bool force, const std::function<bool(std::string_view)>& match);
  // Unmounts `owner`'s segment and drops every replica on it: objects left with none are lost, and
  // logged by name (the first ones).
  Status UnmountAndDrop(const ClientId& owner, SegmentId segment);
  void DropSegmentEverywhere(SegmentRef ref, SegmentId segment);
  // Unmounts what a client the registry no longer holds (dead, or gone) still has mounted, or with
  // `grace_ms` suspends it for that long (SegmentManager::Suspend), and forgets its offload and
  // repair work; `why` says which, for the log.
  void ForgetClient(const ClientId& c, const std::string& why, TimeMs grace_ms = 0);
  // Ends the pins of clients the registry no longer holds, and read pins their readers stopped
  // naming in their heartbeats.
  void UnpinForgottenClients();
  // A heartbeat named these read pins of ctx's client: it still holds them.
  void RenewPins(const CallContext& ctx, const std::vector<HeldPin>& pins);
  // SSD tier (master_offload.cc). The *Locked ones take the accessor of the object's shard.
  bool OwnedBy(const StoredReplica& r, const ClientId& client) const;
  // What of an object lives on `client`: its first COMPLETE MEMORY replica there, and whether it
  // has a LOCAL_DISK replica there.
  struct ClientReplicas {
    const StoredReplica* memory = nullptr;
    bool on_disk = false;
  };
  ClientReplicas ReplicasOn(const ObjectMeta& m, const ClientId& client) const;
  void QueueEagerOffloadLocked(ObjectTable::Locked& s, ObjectTable::Ref obj);
  // The key of `e` is going away (removed, or replaced by a new value): each owner of a LOCAL_DISK
  // replica is told to drop its copy, so that a restart does not bring the old value back. A drop
  // its owner's full queue does not take is kept as a superseded away copy instead.
  void DropDiskCopiesLocked(ObjectTable::Locked& s, ObjectTable::Ref obj);
  // Ends an eviction's offload: once the object has a disk copy and no reader, its memory goes.
  void FinishEvictOffloadLocked(ObjectTable::Locked& s, ObjectTable::Ref obj);
  void ForgetOffloadsOf(const ClientId& client);
  // The tenant and table key of a disk key, or an error for a malformed one, a tenant never
  // registered (a disk key names no new tenant), or, for a caller bound to its tenant
  // (!ctx.any_tenant), another tenant's key.
  struct DiskTableKey {
    TenantIndex tenant;
    std::string key;
  };
  // Whether the caller may drain (or undrain) segment `id`.
  Status MayDrain(const CallContext& ctx, SegmentId id) const;
  Result<DiskTableKey> TableKeyOfDiskKey(const CallContext& ctx, const std::string& disk_key);
  // Re-replication (master_repair.cc; its queue and copies in flight are repairs_, a leaf lock).
  void NoteAtRisk(std::string table_key, size_t have);
  // Frees a copy's new replica; false when it was the object's last (the object went with it).
  bool DropRepairLocked(ObjectTable::Locked& s, ObjectTable::Ref obj, const Allocation& target);
  enum class RepairStart { kStarted, kNotNeeded, kLater };
  RepairStart StartRepair(const std::string& table_key, TimeMs now);
  // Gives up the copies for which `gone` holds (timed out, or their client went): their space is
  // freed and their objects are queued again.
  // `why` says, for the log, why they are given up.
  void CancelRepairsIf(const std::function<bool(const ClientId& client, TimeMs deadline)>& gone, std::string_view why);
  // Starts a copy of `obj` from `source` into `target` (reserved for it) by the target's owner: a
  // PROCESSING replica until it reports. Returns the owner; nothing (and `target` freed) when its
  // segment has none now.
  std::optional<ClientId> BeginCopyLocked(ObjectTable::Locked& s, ObjectTable::Ref obj, const StoredReplica& source,
                                          const Allocation& target, TimeMs now, const TaskId& user_task);
  // Copy and move tasks (master_tasks.cc): one step of an unfinished task with no copy in flight.
  void StepTask(const UserTask& t, TimeMs now);

  // The token that proves a caller's id and tenant (SipHash under identity_key_).
  CallerToken TokenFor(const ClientId& client, TenantIndex tenant) const;

  MasterConfig config_;
  // Signs callers' tokens: drawn at the first start, kept in the metadata log (so a restarted or
  // promoted master accepts the tokens it gave). Set before serving (Create, Load), then read-only.
  std::string identity_key_;
  const bool local_first_ = config_.allocation_strategy == "local_first";
  const Clock& clock_;
  // When this master started: until a client_ttl later, a writer it does not know may be one
  // re-registering after its restart.
  const TimeMs started_ms_ = clock_.NowMs();
  // How long freed ranges are held (grant_hold.h): the longest grant, and the clocks' margin.
  static constexpr TimeMs kGrantClockMarginMs = 5000;
  // How long a copy's source grant outlives the copy's deadline (--repair_task_timeout_sec).
  static constexpr TimeMs kCopyGrantSlackMs = 5000;
  // The lifetime of a Put's write grants: a writer taken over (put_start_discard_timeout) cannot
  // write after it.
  static TimeMs WriteGrantMs(const MasterConfig& config);
  GrantHold grant_hold_;
  SegmentManager segments_;
  TenantRegistry tenants_;
  ObjectTable table_;
  OffloadQueues offload_;
  Evictor evictor_;
  ClientRegistry clients_;
  GroupHomes group_homes_;  // where each routing group's objects go first
  TaskTable tasks_;         // copy and move tasks; its lock after a shard's and repairs_'s
  RepairQueue repairs_{config_.repair_bandwidth};  // re-replication's queue, copies in flight, budget
  Mutex discarded_mu_;  // taken with or without a shard's accessor held; calls nothing while held
  std::vector<Discarded> discarded_ GUARDED_BY(discarded_mu_);
  std::atomic<uint64_t> offloaded_{0};
  std::atomic<uint64_t> under_replicated_puts_{0}, missing_replicas_{0};
  std::atomic<uint64_t> stale_pins_released_{0};
  std::atomic<uint64_t> offload_failed_{0};
  std::atomic<uint64_t> drops_refused_{0};  // disk-copy drops an owner's full queue did not take
  std::atomic<uint64_t> disk_registered_{0};
  std::atomic<uint64_t> disk_dropped_{0};
  int64_t QuietMs() const {
    if (config_.client_quiet_ms >= 0) return config_.client_quiet_ms;
    return std::clamp<int64_t>(config_.client_ttl_sec * 500, 2000, 3000);
  }
  // Marks the segments of clients not heard from for QuietMs() (LivenessOnce).
  void MarkQuietClients(TimeMs now);
  TimeMs GraceMs() const {
    return (config_.client_grace_sec < 0 ? config_.client_ttl_sec : config_.client_grace_sec) * 1000;
  }
  std::atomic<TimeMs> recovered_deadline_{0};  // restored segments unconfirmed by then are dropped
  std::atomic<uint64_t> repaired_{0}, repair_bytes_{0}, objects_lost_{0};
  std::atomic<TimeMs> last_liveness_{0};  // the last LivenessOnce run (0: none yet)
  std::atomic<uint64_t> liveness_gaps_{0};
  // Why reads missed and Puts were refused (MasterStats).
  std::array<std::atomic<uint64_t>, kMissReasonCount> get_misses_{}, exist_misses_{}, puts_refused_{};
  std::atomic<uint64_t> get_hits_{0}, exist_hits_{0};
};

// A user key for a message: quoted, its first 64 bytes.
std::string Quote(std::string_view key);

// Table key of a user key: tenant index (2 bytes, big-endian) then the key.
std::string InternalKey(TenantIndex tenant, std::string_view key);
// The tenant of a table key.
inline TenantIndex TenantOfTableKey(std::string_view table_key) {
  return table_key.size() < 2 ? TenantIndex{0}
                              : static_cast<TenantIndex>(static_cast<uint8_t>(table_key[0]) << 8 |
                                                         static_cast<uint8_t>(table_key[1]));
}

// A table key with its hash, computed once per call. Not copyable: `hashed` views `key`.
struct TableKey {
  const std::string key;
  const HashedKey hashed;
  TableKey(TenantIndex tenant, std::string_view user_key) : key(InternalKey(tenant, user_key)), hashed(key) {}
  TableKey(const TableKey&) = delete;
  TableKey& operator=(const TableKey&) = delete;
};

}  // namespace yb
