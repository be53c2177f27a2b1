// SegmentManager: the registry of mounted segments and the allocation of replicas inside them.
//
// Owns one OffsetAllocator per segment, each under its own mutex; the table itself is under a
// reader/writer lock (mounts are rare, allocations frequent). Thread-safe.
//
// After a master restart the segments it knew come back restored (Restore): their allocators
// hold the ranges of the recovered objects, but nothing is allocated on them and no reader is sent
// to them (Serving) until their owner mounts them again with the same incarnation, which confirms
// them. With a MetaSink, mounts and unmounts are recorded while the table's lock is held.
// Lock order: callers may hold an object-table shard lock when they call Free(); the manager never
// calls out while holding its locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/grant.h"
#include "common/thread_annotations.h"
#include "master/allocation_strategy.h"
#include "master/meta_sink.h"
#include "master/offset_allocator.h"
#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb {

// A mounted segment as the object table records it: a slot (16 bits) and the slot's generation
// (16 bits). 4 bytes instead of the 8-byte SegmentId keeps per-object metadata small; the
// generation makes a reference to an unmounted segment harmless after its slot is reused.
using SegmentRef = uint32_t;
inline constexpr SegmentRef kNoSegment = 0;

// One reserved range: what a replica records so that it can be freed.
struct Allocation {
  uint64_t offset = 0;
  SegmentRef segment = kNoSegment;
  uint32_t node = OffsetAllocator::kNoNode;
};

class SegmentManager {
 public:
  // `clock` (null: the steady clock) tells when reports of unreachable segments lapse.
  SegmentManager(std::unique_ptr<AllocationStrategy> strategy, uint64_t alignment, const Clock* clock = nullptr);

  // SEGMENT_ALREADY_EXISTS if the id is mounted by another client; mounting the same segment again
  // by its owner is a no-op success. INVALID_PARAMS for a zero size or an empty name. A restored
  // segment is confirmed by its owner mounting it with the same size and incarnation; with another
  // incarnation (its memory is not what it was) the answer is SEGMENT_ALREADY_EXISTS and
  // Stale(desc) is true: the caller drops it (Unmount) and mounts afresh.
  // A segment's name is its fault domain, so a name another client's segments carry is refused
  // (SEGMENT_ALREADY_EXISTS), except in one process (endpoint "local": one fate anyway).
  // `only_tenant`: a tenant's client's memory, which takes that tenant's replicas only.
  Status Mount(const ClientId& owner, const SegmentMount& desc, std::optional<TenantIndex> only_tenant = std::nullopt);
  // The client other than `owner` whose segments are named `name`, if one is mounted, and where its
  // transfer server is.
  struct NameHolder {
    ClientId owner;
    std::string endpoint;
  };
  std::optional<NameHolder> NameHeldByOther(const ClientId& owner, const std::string& name) const;
  // The segment `desc.id` was restored for `owner` and `desc` does not confirm it.
  bool Stale(const ClientId& owner, const SegmentMount& desc) const;
  // Mounting `desc` for `owner` changes nothing recorded: the segment is mounted or restored for it
  // with the same memory (size, incarnation), endpoint, base and grant key. Such a mount appends no
  // record, so a master whose log cannot be written takes it (its owner's replicas stay readable).
  bool RecordedAsIs(const ClientId& owner, const SegmentMount& desc) const;
  // A segment as a master that restarted found it, with the ranges (offset, size) of its recovered
  // replicas allocated: returns the reference and each range's allocator handle, in order.
  struct Restored {
    SegmentRef ref = kNoSegment;
    std::vector<uint32_t> nodes;
  };
  Result<Restored> Restore(const ClientId& owner, const SegmentMount& desc,
                           const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                           std::optional<TenantIndex> only_tenant = std::nullopt);
  // Segments not confirmed: restored at start (until 0) or suspended (until: when they are dropped).
  struct UnconfirmedSegment {
    SegmentId id;
    ClientId owner;
    TimeMs until;
    SegmentDesc desc;
  };
  std::vector<UnconfirmedSegment> Unconfirmed() const;
  // `owner` was declared dead: its segments are not read and take no new replicas until `until`,
  // and are confirmed again by their owner mounting them with the same memory (as after a
  // restart). Returns how many.
  size_t Suspend(const ClientId& owner, TimeMs until);
  // Whether readers may be sent to the segment: mounted, and confirmed if restored. Lock-free.
  bool Serving(SegmentRef ref) const;
  // Partitions (docs/design.md, "Partitions"). `reporter`'s transfers cannot reach segments `ids`
  // (its heartbeat says so): until `until` each is handed to readers only when no other replica
  // of an object is (MasterService), and takes new replicas only when no other segment can (a
  // report, a client's word, never stops every write). Returns the ids that were not reported
  // unreachable before; the reporter's own segments, and ids past kMaxReportedUnreachable, are ignored.
  std::vector<SegmentId> Shun(const ClientId& reporter, const std::vector<SegmentId>& ids, TimeMs until);
  // Whether clients report the segment unreachable now. Lock-free.
  bool Shunned(SegmentRef ref) const;
  // `owners` are not heard from (their heartbeats stopped arriving, short of being declared dead):
  // their segments take no new replica until `until`, while readers still go to them (a holder cut
  // off from the master may still serve its clients). `until` 0: they are heard again.
  void MarkUnheard(const std::vector<ClientId>& owners, TimeMs until);
  // Segments reported unreachable now, and segments whose owner is not heard from now.
  size_t shunned_count() const;
  size_t unheard_count() const;
  void SetSink(MetaSink* sink) { sink_ = sink; }
  // SEGMENT_NOT_FOUND if unknown; ILLEGAL_CLIENT if owned by someone else. Returns the reference
  // the segment had, so that the caller can drop the replicas that name it.
  Result<SegmentRef> Unmount(const ClientId& owner, SegmentId id);
  // The id of a mounted segment, or 0 when the reference is stale. Lock-free.
  SegmentId IdOf(SegmentRef ref) const;
  // A grant (common/grant.h) of `access` to a range of the segment, minted with its key; empty
  // when the segment is gone or was mounted without a key (an in-process one). Lock-free.
  Grant Mint(SegmentRef ref, GrantAccess access, uint64_t offset, uint64_t length, int64_t expires_ms,
             std::string_view object = {}) const;
  std::vector<SegmentId> SegmentsOf(const ClientId& owner) const;
  // Appends the name of `owner`'s segments, then the host part of their endpoint (what a preferred
  // name matches: the other processes on that host), once each.
  void AppendNamesAndHostsOf(const ClientId& owner, std::vector<std::string>& out) const;
  // How many of `owner`'s segments readers are sent to (mounted, and confirmed if restored).
  size_t CountServing(const ClientId& owner) const;
  // The owner of a mounted segment; false when the reference is stale.
  bool OwnerOf(SegmentRef ref, ClientId* owner) const;
  // The segment's name (its owner's: what preferred segments name), or "" when it is gone.
  std::string NameOf(SegmentRef ref) const;
  // The reference of segment `id` if `owner` mounted it, else kNoSegment.
  SegmentRef RefOf(SegmentId id, const ClientId& owner) const;
  bool Contains(SegmentId id) const;
  // A draining segment takes no new replicas; its objects are copied elsewhere before it goes.
  // SEGMENT_NOT_FOUND if `id` is not mounted.
  Status SetDraining(SegmentId id, bool draining = true);
  bool Draining(SegmentRef ref) const;
  // Whether the segment takes new replicas now: readers are sent to it (Serving), it does not
  // drain, and its owner is heard from. Memory that eviction frees is of use to a Put only on
  // such a segment. Lock-free; `now` from the manager's clock (NowMs of the clock it was given).
  bool TakesNewReplicas(SegmentRef ref, TimeMs now) const;
  // The segments readers are sent to, by whether they take new replicas (for a refused Put's
  // message): `taking`, and of the others how many drain and how many have an owner not heard from.
  struct TakingCounts {
    size_t taking = 0, draining = 0, unheard = 0;
    uint64_t capacity = 0, allocated = 0, held = 0;  // of the segments that take new replicas
  };
  TakingCounts CountTaking() const;
  // How many processes hold segments that may take `tenant`'s replicas, now or once their owner is
  // heard again (mounted and confirmed, not draining): how many replicas of one object can exist.
  size_t CountHolders(TenantIndex tenant) const;

  // Reserves up to `count` ranges of `size` bytes for an object of `tenant` on segments with
  // distinct names: `preferred` names first (in order), then in the strategy's order; never on a
  // segment in `avoid`, nor on any other segment of its owner, nor on another tenant's segment.
  // Best effort: may return fewer, or none.
  // `preferred_for`: how many of the replicas the preferred names are for (the rest are placed as
  // if none were given: distinct hosts first).
  std::vector<Allocation> Allocate(TenantIndex tenant, uint64_t size, size_t count,
                                   const std::vector<std::string>& preferred, const std::vector<SegmentId>& avoid = {},
                                   size_t preferred_for = SIZE_MAX);
  // Whether segments named `name` (SegmentNameMatches) can take `tenant`'s replicas now: kNone when
  // none is mounted for it (another tenant's memory counts as none), kAway when those there are wait
  // for their owner (restored after a restart, or suspended), kDraining when every one is draining,
  // kTakes else. For copy and move tasks, which name their targets.
  enum class NameState { kNone, kAway, kDraining, kTakes };
  NameState StateOfName(const std::string& name, TenantIndex tenant) const;
  // Reserves `size` bytes for `tenant` on a segment named `name` that takes replicas now (confirmed,
  // not draining, its owner heard from), or nothing.
  std::optional<Allocation> AllocateOn(TenantIndex tenant, uint64_t size, const std::string& name);
  // Frees a range; a no-op if its segment was unmounted meanwhile. With `hold_until` in the future
  // (GrantHold: a grant for the range may be valid until then) and a segment whose grants mean
  // something (mounted with a key), the range is held instead: not handed out again before
  // ReleaseHeld finds its time passed. A held range is recorded (LogHold), so that a restarted or
  // promoted master holds it too.
  // `tenant`: whose object the range held (it may take the range again at once).
  // `fence_until`: a write into the range may still land until then (a Put revoked or lost before
  // it ended, a copy given up): the range is held till then (or `hold_until` if later) whatever the
  // segment, and taken again by no one, its tenant included: a late write lands in no other object
  // (its owner refuses a write whose grant lapsed, and a copy's maker lands no byte past its source
  // grant).
  void Free(const Allocation& a, TimeMs hold_until = 0, TenantIndex tenant = 0,
            std::optional<TimeMs> fence_until = std::nullopt);
  // How long after it is freed a range may still be written by a copy given up (its source grant
  // outlives its deadline by this, with the clocks' margin); FenceFloor(): until when, from now.
  void SetFenceFloor(TimeMs ms) { fence_floor_ms_ = ms; }
  TimeMs FenceFloor() const { return Now() + fence_floor_ms_; }
  // The record of a fence on the allocated range `a` until `until`, without holding it here (it is
  // in use: a copy's new replica being made): a master restarted from the log, which does not know
  // the copy, fences the range instead of handing it out while the copy may still land (a range an
  // object record names wins over it). Nullopt when its segment went.
  std::optional<pb::LogHold> FenceRecord(const Allocation& a, TimeMs until) const;
  // Appends FenceRecord's record to the sink, if there is one.
  void LogFence(const Allocation& a, TimeMs until) const;
  // The tenant a fenced range is held for: none takes it again before its time.
  static constexpr TenantIndex kFenced = UINT16_MAX;
  // Frees the held ranges whose time has passed. Returns their bytes.
  uint64_t ReleaseHeld();
  // After a restart: the range `node` of segment `ref` (restored with it) is held until `until`.
  void HoldRestored(SegmentRef ref, uint32_t node, uint64_t offset, TenantIndex tenant, TimeMs until);
  // Every held range as records (for a snapshot).
  std::vector<pb::LogHold> HeldRecords() const;
  // Bytes of freed ranges held.
  uint64_t held() const { return held_bytes_.load(std::memory_order_relaxed); }

  uint64_t capacity() const { return capacity_.load(std::memory_order_relaxed); }
  uint64_t allocated() const { return allocated_.load(std::memory_order_relaxed); }
  uint64_t largest_segment() const;
  // Segments that take new objects (restored ones once confirmed).
  size_t segment_count() const;
  std::vector<SegmentUsage> List() const;
  // Every segment with its owner and incarnation, as records (for a snapshot).
  std::vector<pb::LogSegment> Records() const;

 private:
  static constexpr uint32_t kMaxSegments = 1 << 16;

  struct Segment {
    SegmentMount desc;
    ClientId owner;
    SegmentRef ref = kNoSegment;
    bool confirmed = true;              // false while restored or suspended; under mu_ (exclusive to change)
    TimeMs suspended_until = 0;         // while suspended (0: restored); under mu_
    std::optional<TenantIndex> only_tenant;  // a tenant's client's memory; fixed at mount
    mutable Mutex mu;                   // after mu_ (shared) when both are held
    OffsetAllocator alloc GUARDED_BY(mu);
    const uint64_t capacity;  // alloc.capacity(), fixed at mount
    // alloc.free_bytes(), readable without the lock (strategies look at every segment per Put).
    std::atomic<uint64_t> free_bytes{0};
    // Freed ranges held until their grants lapse (Free with hold_until), by the tenant whose object
    // they held and their size: that tenant may take one of the same size again at once (its
    // readers could read its new object anyway), another tenant only once it is released. Each
    // queue is in the order the ranges were held, their times nearly rising.
    struct Held {
      TimeMs until;
      uint32_t node;
      uint64_t offset;
    };
    std::map<std::pair<TenantIndex, uint64_t>, std::deque<Held>> held GUARDED_BY(mu);
    std::atomic<uint64_t> held_bytes{0};  // written under mu; read without it by Allocate
    Segment(const SegmentMount& d, const ClientId& o, uint64_t alignment)
        : desc(d), owner(o), alloc(d.size, alignment), capacity(alloc.capacity()), free_bytes(alloc.free_bytes()) {}
  };

  bool TryAllocateOn(Segment& seg, TenantIndex tenant, uint64_t size, Allocation* out);
  TimeMs Now() const;
  // Mounted segments whose `until` is still ahead.
  size_t CountUntil(const std::function<TimeMs(const Segment&)>& until) const;
  static pb::LogHold ToLogHold(SegmentId segment, TenantIndex tenant, uint64_t size, const Segment::Held& h, TimeMs now,
                               int64_t wall_ms);
  void RebuildListLocked() REQUIRES(mu_);
  // Takes a free slot for `seg` and publishes it for IdOf; NO_AVAILABLE_HANDLE when none is left.
  Status AddLocked(std::shared_ptr<Segment> seg) REQUIRES(mu_);
  static pb::LogSegment ToLog(const Segment& seg);
  void PublishKey(uint32_t slot, const std::string& key);
  void LogLocked(const Segment& seg) const REQUIRES(mu_);
  // Holds a range of `seg`, of `size` bytes, for `tenant` (Free, HoldRestored); `log`: append its record.
  void HoldLocked(Segment& seg, TenantIndex tenant, uint64_t size, Segment::Held h, bool log) REQUIRES(seg.mu);
  bool HasKey(SegmentRef ref) const;
  bool DrainingNow(const Segment& seg) const;
  bool UnheardAt(const Segment& seg, TimeMs now) const;
  std::optional<NameHolder> NameHolderLocked(const ClientId& owner, const std::string& name) const REQUIRES_SHARED(mu_);

  std::unique_ptr<AllocationStrategy> strategy_;
  uint64_t alignment_;
  mutable SharedMutex mu_;
  std::unordered_map<SegmentId, std::shared_ptr<Segment>> by_id_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Segment>> list_ GUARDED_BY(mu_);  // confirmed ones, by id
  std::vector<std::shared_ptr<Segment>> by_slot_ GUARDED_BY(mu_);
  std::vector<uint16_t> free_slots_ GUARDED_BY(mu_);
  std::vector<uint16_t> slot_gen_ GUARDED_BY(mu_);
  // Lock-free view for IdOf(): the ref a slot holds now, and its segment id.
  std::unique_ptr<std::atomic<uint32_t>[]> slot_ref_;
  std::unique_ptr<std::atomic<uint64_t>[]> slot_id_;
  std::unique_ptr<std::atomic<bool>[]> slot_serving_;
  std::unique_ptr<std::atomic<uint64_t>[]> slot_key_;  // two words per slot: its segment's grant key (0: none)
  std::unique_ptr<std::atomic<TimeMs>[]> slot_shunned_;  // by slot: reported unreachable until then (Shun)
  std::unique_ptr<std::atomic<bool>[]> slot_draining_;   // by slot: takes no new replicas (SetDraining)
  std::unique_ptr<std::atomic<TimeMs>[]> slot_unheard_;  // by slot: its owner not heard from until then (MarkUnheard)
  std::atomic<TimeMs> any_shunned_until_{0};            // the latest of them: none is shunned after it
  const Clock* clock_;
  MetaSink* sink_ = nullptr;
  std::atomic<uint64_t> capacity_{0};
  std::atomic<uint64_t> allocated_{0};
  std::atomic<uint64_t> held_bytes_{0};
  TimeMs fence_floor_ms_ = 0;
};

}  // namespace yb
