// ObjectTable: the master's object metadata, sharded by key hash with one mutex per shard.
//
// A shard holds
//   objects  - published (COMPLETE) objects, each on the shard's recency list unless hard-pinned;
//   pending  - Puts between PutStart and PutEnd (invisible to readers, the key is reserved);
//   pins     - read pins per (object, client): bytes a reader is copying are never freed;
//   zombies  - objects already removed whose bytes are still pinned by readers;
//   away     - disk copies whose owner went away (AwayCopy).
// The shard is private: callers lock one through Lock()/LockShard(), which return a Locked
// accessor, and read and change it only through the accessor's named operations. The table frees
// space through the SegmentManager and returns quota through the TenantRegistry. With a MetaSink,
// each operation that changes what readers see or where bytes live appends the key's new state
// (proto/metalog.proto) while it holds the shard: the metadata log's one source for objects,
// unfinished Puts and away copies. Leases, recency, read pins and the SSD tier's offload bits
// are not recorded.
// Lock order: a shard mutex, then the locks of SegmentManager, OffloadQueues, ClientRegistry and
// TenantRegistry (each leaf: none calls out while holding its own). Never two shards at once.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/thread_annotations.h"
#include "master/gone_keys.h"
#include "master/grant_hold.h"
#include "master/inline_key_map.h"
#include "master/meta_sink.h"
#include "master/segment_manager.h"
#include "master/tenants.h"

namespace yb {

// One replica in 16 bytes: its range (offset in the low 56 bits), with kind and status packed in
// the top byte.
class StoredReplica {
 public:
  StoredReplica() = default;
  StoredReplica(const Allocation& a, ReplicaKind kind, ReplicaStatus status)
      : bits_((a.offset & kOffsetMask) | (static_cast<uint64_t>(kind) << 60) | (static_cast<uint64_t>(status) << 56)),
        segment_(a.segment),
        node_(a.node) {}
  Allocation alloc() const { return Allocation{offset(), segment_, node_}; }
  uint64_t offset() const { return bits_ & kOffsetMask; }
  SegmentRef segment() const { return segment_; }
  ReplicaKind kind() const { return static_cast<ReplicaKind>(bits_ >> 60); }
  ReplicaStatus status() const { return static_cast<ReplicaStatus>((bits_ >> 56) & 0xF); }
  void set_status(ReplicaStatus s) { bits_ = (bits_ & ~(0xFULL << 56)) | (static_cast<uint64_t>(s) << 56); }

 private:
  static constexpr uint64_t kOffsetMask = (1ULL << 56) - 1;
  uint64_t bits_ = 0;
  SegmentRef segment_ = kNoSegment;
  uint32_t node_ = 0;
};
static_assert(sizeof(StoredReplica) == 16);

struct ObjectMeta;
using ObjectMap = InlineKeyMap<ObjectMeta>;  // inline_key_map.h: a lookup costs two cache misses
using ObjectEntry = InlineKeyEntry<ObjectMeta>;

enum ObjectFlags : uint8_t {
  kHardPin = 1,
  kSoftPin = 2,
  kHasChecksum = 4,
  kOffloading = 8,        // eviction queued it for the SSD tier: its MEMORY replica stays until the copy is durable
  kNoOffload = 16,        // an offload failed: not queued again, evicted like an object without an SSD tier
  kDiskCopyPending = 32,  // an eager offload is queued or running and no disk copy exists yet
  kDiskChecksum = 64,     // `checksum` was computed by an offload (readers are not given it)
  // Not read since it was published: `lease_deadline` holds the publication time (a write counts as
  // a use for batch_replica_clear, never for Remove). Not recorded.
  kUnread = 128,
};

// One published object. Kept small: the table holds tens of millions of these.
struct ObjectMeta {
  uint64_t size = 0;
  uint64_t checksum = 0;
  TimeMs lease_deadline = 0;
  TimeMs soft_pin_deadline = 0;
  uint64_t object_id = 0;    // unique per published value; names read pins
  uint64_t last_access = 0;  // global recency sequence; larger is more recent
  ObjectEntry* lru_prev = nullptr;
  ObjectEntry* lru_next = nullptr;
  uint32_t readers : 24 = 0;  // read pins held
  // MEMORY replicas it was published with: re-replication brings it back to this many when a
  // segment holding one goes (0: none asked, as for an object known only on disk).
  uint32_t want_replicas : 8 = 0;
  TenantIndex tenant = 0;
  uint8_t flags = 0;
  uint8_t n_replicas = 0;

  ObjectMeta() : one_() {}
  ObjectMeta(ObjectMeta&& o) noexcept;
  ObjectMeta& operator=(ObjectMeta&& o) noexcept;
  ObjectMeta(const ObjectMeta&) = delete;
  ObjectMeta& operator=(const ObjectMeta&) = delete;
  ~ObjectMeta() { ClearReplicas(); }

  void SetReplicas(const std::vector<StoredReplica>& r);
  std::vector<StoredReplica> TakeReplicas();
  StoredReplica& replica(size_t i) { return n_replicas == 1 ? one_ : many_[i]; }
  const StoredReplica& replica(size_t i) const { return n_replicas == 1 ? one_ : many_[i]; }
  bool hard_pinned() const { return flags & kHardPin; }
  // `checksum` holds the value's checksum (common/checksum.h): given by the writer, or computed by an offload.
  bool checksum_known() const { return flags & (kHasChecksum | kDiskChecksum); }
  std::optional<uint64_t> known_checksum() const { return checksum_known() ? std::optional(checksum) : std::nullopt; }
  // COMPLETE MEMORY replicas (repairs in progress are PROCESSING).
  size_t CompleteMemoryReplicas() const {
    size_t n = 0;
    for (size_t i = 0; i < n_replicas; ++i) {
      n += replica(i).kind() == ReplicaKind::kMemory && replica(i).status() == ReplicaStatus::kComplete;
    }
    return n;
  }
  bool HasKind(ReplicaKind kind) const {
    for (size_t i = 0; i < n_replicas; ++i) {
      if (replica(i).kind() == kind) return true;
    }
    return false;
  }
  // On its shard's recency list: what eviction may pick (DRAM held, not hard-pinned).
  bool Evictable() const { return !hard_pinned() && HasKind(ReplicaKind::kMemory); }

 private:
  void ClearReplicas();
  // One replica inline (the common case), or an array of n_replicas on the heap.
  union {
    StoredReplica one_;
    StoredReplica* many_;
  };
};
static_assert(sizeof(ObjectMeta) == 88, "ObjectMeta is sized for ~185 bytes per object");

// Whether a table key (2-byte tenant index, then the user's key) names a client's reservation
// (api/master_api.h, kReservationPrefix).
inline bool IsReservationTableKey(std::string_view table_key) {
  return table_key.size() >= 2 && IsReservation(table_key.substr(2));
}

struct PendingPut {
  ClientId writer;
  TimeMs started = 0;
  uint64_t size = 0;
  TenantIndex tenant = 0;
  uint8_t flags = 0;    // kHardPin / kSoftPin
  bool upsert = false;  // replaces a COMPLETE value at PutEnd
  std::vector<StoredReplica> replicas;
  // Replicas wanted, when PutStart placed fewer (a holder not heard from, or full): the request,
  // as far as the tenant's quota and the processes holding memory allow. The object is queued for
  // re-replication at PutEnd. 0: as many as it has (also after a restart: not recorded).
  uint8_t want = 0;
};

// A read pin is a reader's (GetReplicaList with pin, ended by ReadEnd); a task pin is the master's
// own for a copy it asked a client to make (a repair or an offload, ended when the task reports).
// Only read pins are named in heartbeats and released when their reader stops naming them.
enum class PinKind : uint8_t { kRead = 0, kTask = 1 };

struct PinKey {
  uint64_t object_id;
  ClientId client;
  PinKind kind = PinKind::kRead;
  bool operator==(const PinKey&) const = default;
};
struct PinKeyHash {
  size_t operator()(const PinKey& k) const {
    return (k.object_id * 0x9E3779B97F4A7C15ULL ^ k.client.lo) + static_cast<size_t>(k.kind);
  }
};
struct PinState {
  static constexpr uint64_t kUnstamped = UINT64_MAX;
  uint32_t count = 0;
  // The reader's heartbeat round (ClientRegistry::PinRound) when the pin was last named, or first
  // seen by a sweep; kUnstamped before either.
  uint64_t round = kUnstamped;
};

struct Zombie {
  uint32_t readers = 0;
  TenantIndex tenant = 0;
  uint64_t size = 0;
  std::vector<StoredReplica> replicas;
  TimeMs hold_until = 0;  // its ranges are held until then once freed (GrantHold)
};

// A disk copy the master stopped listing while it may still be on its owner's disk: the owner went
// away (died or unmounted) holding it, or was not told to drop it after its key went. If the owner
// registers it again (AddDiskReplicas), a superseded copy is refused instead of bringing back a
// removed or replaced value.
struct AwayCopy {
  std::optional<uint64_t> checksum;  // unknown: stands for any copy of the key
  bool superseded = false;           // the key was removed or written since the copy was made
};

// Where an object can be read from (COMPLETE replicas only), as a set of bits.
enum ObjectMedia : uint8_t { kMediaMemory = 1, kMediaDisk = 2 };
uint8_t MediaOf(const ObjectMeta& m);

// Told, under the key's shard lock, each time the media an object can be read from change: a Put
// published, a value removed or replaced, a replica lost with its node, evicted, offloaded to disk
// or repaired. `before` and `after` are ObjectMedia bits (0: no object). The KV events
// (master/kv_events.h) are made from it. In two steps on one thread, one right after the other:
// MediaChanging before the change's record is appended (its work done outside the log's lock),
// then MediaChanged with the record's position in the metadata log (0: no log); with a log the
// second steps come in position order (MetaSink::AppendThen: under the log's lock), so they must
// be quick, take only leaf locks and call nothing back.
class MediaObserver {
 public:
  virtual ~MediaObserver() = default;
  virtual void MediaChanging(std::string_view table_key, std::string_view tenant, uint8_t before, uint8_t after) = 0;
  virtual void MediaChanged(uint64_t position) = 0;
};

class ObjectTable {
  struct Shard;

 public:
  static constexpr size_t kDefaultShards = 1024;
  static constexpr size_t kDefaultAwayLimit = 1'000'000;

  // `away_limit` bounds the away copies remembered (MasterConfig::disk_away_copies_limit).
  ObjectTable(SegmentManager& segments, TenantRegistry& tenants, size_t shards = kDefaultShards,
              size_t away_limit = kDefaultAwayLimit);
  ~ObjectTable();

  // A published object as a shard's accessor hands it out: read-only. Valid while the accessor
  // that gave it is alive and until that accessor publishes (which may rehash) or removes it.
  class Ref {
   public:
    Ref() = default;
    explicit operator bool() const { return valid_; }
    std::string_view key() const { return it_->first; }
    const ObjectMeta& meta() const { return it_->second; }
    const ObjectMeta* operator->() const { return &it_->second; }
    const ObjectEntry& entry() const { return *it_; }

   private:
    friend class ObjectTable;
    Ref(ObjectMap::iterator it, bool valid) : it_(it), valid_(valid) {}
    ObjectMeta& mut() const { return it_->second; }
    ObjectMap::iterator it_;
    bool valid_ = false;
  };

  // Holds one shard's mutex for its lifetime and is the only way to read or change the shard. Every
  // change to what readers see (a value published, revoked or removed, replicas added or dropped,
  // pins) is one of its named operations: the one place a metadata log records them. Not movable;
  // one accessor per thread at a time (never two shards at once).
  class Locked {
   public:
    ~Locked();
    Locked(const Locked&) = delete;
    Locked& operator=(const Locked&) = delete;

    // ---- lookups
    Ref Find(const HashedKey& k);
    const PendingPut* FindPending(const HashedKey& k) const;
    size_t pending_count() const;
    // Of those, clients' reservations (named with kReservationPrefix).
    size_t reservation_count() const;
    // Calls f(ref) for every published object; f may Remove the object it is given.
    void ForEach(const std::function<void(Ref)>& f);
    // Calls f(entry) for objects on the recency list, least recent first, until f returns false.
    // Returns true if f stopped it with objects left on the list.
    bool ForEachLeastRecent(const std::function<bool(const ObjectEntry&)>& f);

    // ---- Puts in progress (invisible to readers; the key is reserved)
    // `record` false: the caller publishes it at once under this accessor (Publish with ends_put),
    // whose record says all a reader of the log needs (a Put moved from a reservation's name).
    void AddPending(const HashedKey& k, PendingPut put, bool record = true);
    // Takes a Put out of the table, its space still reserved (the caller frees or keeps it).
    // `to_publish`: the caller publishes it (Publish with ends_put) under this same accessor, and the
    // two are recorded as one change.
    // `why`: the reason a miss on the key gives from now on (kStored: the caller says it, or the
    // key is written again at once).
    PendingPut TakePending(const HashedKey& k, bool to_publish = false, MissReason why = MissReason::kStored);
    // Ends a Put and frees its space (the key's miss reason: kPutAbandoned). False if there is none.
    bool RevokePending(const HashedKey& k);
    // Revokes every Put for which `pred` holds, calling it once per Put. Returns how many.
    // (`pred` is given each Put's table key too.)
    uint64_t RevokePendingIf(const std::function<bool(std::string_view table_key, const PendingPut&)>& pred);

    // ---- published objects
    // Publishes a new object (the key must be free) and puts it on the recency list. `ends_put`: it
    // is the Put just taken with TakePending(k, true).
    Ref Publish(const HashedKey& k, ObjectMeta meta, bool ends_put = false);
    // Removes an object. Its bytes are freed now, or when its last reader ends. `why`: the key's
    // miss reason from now on (NoteGone); kStored for an object replaced at once (nothing noted).
    void Remove(Ref r, MissReason why);
    // Frees an object's MEMORY replicas and keeps the others (disk copies); an object left with no
    // replica is removed (for `if_gone`). The caller makes sure no reader holds the memory.
    void DropMemoryReplicas(Ref r, MissReason if_gone = MissReason::kEvicted);
    // Drops the replicas for which `drop` holds (MEMORY ones are freed); an object left with no
    // replica is removed (for `if_gone`). Returns how many were dropped.
    size_t DropReplicasIf(Ref r, const std::function<bool(const StoredReplica&)>& drop,
                          MissReason if_gone = MissReason::kReplicaLost);

    // ---- why keys are missing (GoneKeys; RememberGone sets how many keys are remembered)
    // The key went, or its Put was refused, for `why` (kStored: nothing is noted).
    void NoteGone(const HashedKey& k, MissReason why);
    // Why the key holds no object: kStored if it does, kPutInProgress, what NoteGone remembers,
    // else kNotRemembered. WhyAbsent: the same for a key the caller just found absent (a miss's
    // path looks the key up once).
    MissInfo WhyMissing(const HashedKey& k);
    MissInfo WhyAbsent(const HashedKey& k);
    // Adds a LOCAL_DISK replica on `segment` (its owner's) and ends kDiskCopyPending.
    void AddDiskReplica(Ref r, SegmentRef segment);
    // Re-replication: a new MEMORY replica at `a`, PROCESSING (readers skip it, the log leaves it
    // out) until CompleteReplica; its space is charged to the object's tenant.
    void AddRepairReplica(Ref r, const Allocation& a);
    // The PROCESSING replica at `a` becomes COMPLETE and is recorded; false if it is not there.
    bool CompleteReplica(Ref r, const Allocation& a);
    // Frees the PROCESSING replica at `a`, if it is there.
    void DropRepairReplica(Ref r, const Allocation& a);
    // The checksum an offload computed for a value its writer gave none (kDiskChecksum).
    void SetDiskChecksum(Ref r, uint64_t checksum);
    // Sets or clears the offload bits (kOffloading, kNoOffload, kDiskCopyPending): state that the
    // offload queues rebuild, not part of the value.
    void SetOffloadFlags(Ref r, uint8_t bits);
    void ClearOffloadFlags(Ref r, uint8_t bits);

    // ---- readers (leases, recency and read pins are rebuilt state, never logged)
    // Moves the object to the recent end and renews its access stamp, which bounds when its
    // grants were minted (GrantHold): every read grant of its bytes is minted just before one.
    void Touch(Ref r);
    // The lease lasts at least until `until`.
    void ExtendLease(Ref r, TimeMs until);
    void SetSoftPinDeadline(Ref r, TimeMs until);
    // Read pins clients hold on the object (its `readers` less the master's own task pins). Walks
    // the shard's pins: for the rare caller (a Remove that finds readers).
    uint32_t ClientReadPins(Ref r) const;
    // Pins the object's bytes for `client` until Unpin; returns the pin's id (the object id).
    uint64_t AddReadPin(Ref r, const ClientId& client, PinKind kind = PinKind::kRead);
    // Ends one pin of `client` on object `object_id` (`live` is the key's object, if any); false
    // if there is no such pin.
    bool Unpin(const ClientId& client, uint64_t object_id, Ref live, PinKind kind = PinKind::kRead);
    // Stamps `client`'s read pins on `object_id` with heartbeat round `round`; false if it holds none.
    bool RenewReadPins(const ClientId& client, uint64_t object_id, uint64_t round);
    // Ends every pin for which `end` holds (it may stamp the state it is shown and keep the pin).
    // Returns how many pins ended.
    uint64_t UnpinIf(const std::function<bool(const PinKey&, PinState&)>& end);

    // ---- segments
    // Removes every replica on `segment` (its memory left with its owner: nothing is freed);
    // objects left with none are removed. `on_disk_copy` is called with each object losing a
    // LOCAL_DISK replica, before it changes. Returns objects removed.
    // `thinned` is called with each object that keeps a replica but lost a MEMORY one; `lost` with
    // the table key of each object removed, before it goes.
    uint64_t DropSegment(SegmentRef segment, MissReason why, const std::function<void(Ref)>& on_disk_copy = {},
                         const std::function<void(Ref)>& thinned = {},
                         const std::function<void(std::string_view)>& lost = {});

    // ---- the whole shard, for a snapshot and a restart (recorded nowhere)
    // The shard's state as records (its objects, unfinished Puts and away copies), for a snapshot.
    void Dump(const std::function<void(const pb::LogRecord&)>& emit) const;
    // A published object, an unfinished Put or away copies as a restarted master found them.
    Ref RestoreObject(const HashedKey& k, ObjectMeta meta);
    void RestorePending(const HashedKey& k, PendingPut put);
    void RestoreAway(const HashedKey& k, std::vector<AwayCopy> copies);

    // ---- away copies (AwayCopy)
    void NoteAwayCopy(std::string_view table_key, std::optional<uint64_t> checksum, bool superseded);
    // The key was removed or given a new value: its copies still away hold an older state of it.
    void SupersedeAwayCopies(std::string_view table_key);
    // Supersedes the away copies of every key that `match` accepts and that holds no object.
    void SupersedeAbsentAwayCopiesIf(const std::function<bool(std::string_view)>& match);
    // A copy of the key with this checksum is registered: takes the away copy it is (one of the same
    // checksum, else one of unknown checksum) and says whether that was superseded; nothing when the
    // table holds no such copy.
    std::optional<bool> TakeAwayCopy(const HashedKey& k, uint64_t checksum);

   private:
    friend class ObjectTable;
    Locked(ObjectTable& table, Shard& shard);
    void LruUnlink(ObjectEntry& e);
    void LruAppend(ObjectEntry& e);
    void Relink(ObjectEntry& e);
    // `had`: the object's media before the change began (MediaOf).
    void SetReplicas(Ref r, const std::vector<StoredReplica>& keep, MissReason if_empty, uint8_t had);
    void RemoveHad(Ref r, MissReason why, uint8_t had);
    // Records of what changed, for the sink (no-ops without one). `had`: the object's media before
    // the change (MediaOf; 0: none), told to the media observer with the record's position when
    // they differ from its media now (kMediaUnchanged: not told).
    static constexpr uint8_t kMediaUnchanged = 0xff;
    void LogObject(const ObjectEntry& e, bool ends_put, uint8_t had);
    void LogObjectGone(Ref r, MissReason why, uint8_t had);
    // Appends `rec` (null: there is no sink) and tells the media observer, if the media changed.
    void AppendTelling(const pb::LogRecord* rec, std::string_view table_key, TenantIndex tenant, uint8_t had,
                       uint8_t now);
    void LogPending(std::string_view table_key, const PendingPut& p);
    void LogPendingGone(std::string_view table_key, MissReason why);
    void LogAway(std::string_view table_key);
    void BuildObject(const ObjectEntry& e, pb::LogObject* out) const;
    void BuildPending(std::string_view table_key, const PendingPut& p, pb::LogPending* out) const;
    void BuildAway(std::string_view table_key, const std::vector<AwayCopy>& copies, pb::LogAway* out) const;

    ObjectTable& t_;
    Shard& s_;
  };

  // Locks the shard of `k`, or shard `i` (0 <= i < shard_count()).
  Locked Lock(const HashedKey& k);
  Locked LockShard(size_t i);
  size_t shard_count() const { return shards_.size(); }
  size_t ShardIndex(const HashedKey& k) const { return ShardIndex(k.hash); }
  size_t ShardIndex(uint64_t hash) const { return (hash >> 32) % shards_.size(); }

  uint64_t NextObjectId() { return next_object_id_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t object_count() const { return objects_.load(std::memory_order_relaxed); }
  // Away copies remembered, and those not remembered because away_limit was reached.
  uint64_t away_copies() const { return away_copies_.load(std::memory_order_relaxed); }
  uint64_t away_untracked() const { return away_untracked_.load(std::memory_order_relaxed); }

  // Frees replicas and returns their quota. Only MEMORY replicas hold space and quota. For space
  // the table no longer lists (a Put taken over); needs no shard lock. `hold_until`: until when a
  // grant for them may be valid (SegmentManager::Free holds them till then).
  void FreeReplicas(TenantIndex tenant, uint64_t size, const std::vector<StoredReplica>& replicas,
                    TimeMs hold_until = 0, std::optional<TimeMs> fence_until = std::nullopt);
  // A PROCESSING replica (a Put's, or a copy's being made) may still be written into after it is
  // freed (its writer paused or cut off): it is fenced (SegmentManager::Free) until `fence_until`,
  // by default the fence floor. A Put that ended without PutEnd (revoked, its writer lost, taken
  // over) is fenced until its write grants lapse.
  void FreeUnfinished(TenantIndex tenant, uint64_t size, const std::vector<StoredReplica>& replicas,
                      TimeMs started) {
    FreeReplicas(tenant, size, replicas, HoldAfter(started), started + write_fence_ms_);
  }
  // How long after its PutStart a Put's write grants may still be honoured by a segment's owner
  // (their lifetime and the clocks' margin). Set before the table is used from several threads.
  void SetWriteFence(TimeMs ms) { write_fence_ms_ = ms; }

  // Freed ranges are held while a grant for them may be valid (grant_hold.h); without a GrantHold
  // (the default) they are freed at once. Set before the table is used from several threads.
  void SetGrantHold(const GrantHold* hold) { hold_ = hold; }
  // Until when ranges must be held whose latest grant was minted by access stamp `stamp` (an
  // object's last_access), or at `minted`; 0 without a GrantHold.
  TimeMs HoldAfterStamp(uint64_t stamp) const { return hold_ ? hold_->UntilAfterStamp(stamp) : 0; }
  TimeMs HoldAfter(TimeMs minted) const { return hold_ ? hold_->UntilAfter(minted) : 0; }
  // Every access stamp below this one has been given out (GrantHold::Sample).
  uint64_t next_access_stamp() const { return access_seq_.load(std::memory_order_relaxed); }

  // Remembers why up to `keys` keys went (GoneKeys, spread over the shards; 0: none), timed by
  // `clock`. Set before the table is used from several threads.
  void RememberGone(size_t keys, const Clock& clock);
  // Remembers that the key of hash `hash` went for `why` at `when` (this table's clock): what a
  // recovered image remembers (MasterService::Load).
  void RestoreGone(uint64_t hash, MissReason why, TimeMs when);
  size_t gone_capacity() const { return gone_capacity_; }

  // Where changes are recorded; null (the default): nowhere. Set before the table is used from
  // several threads (after a restart, once the recovered state is loaded).
  void SetSink(MetaSink* sink) { sink_ = sink; }
  MetaSink* sink() const { return sink_; }
  // Who is told of changes of media (MediaObserver); null (the default): no one. Set before the
  // table is used from several threads. Restoring a recovered state tells no one.
  void SetMediaObserver(MediaObserver* observer) { media_observer_ = observer; }
  // Object ids start at `next` or above (every id recovered after a restart is below it).
  void RaiseNextObjectId(uint64_t next);
  uint64_t next_object_id() const { return next_object_id_.load(std::memory_order_relaxed); }

 private:
  uint64_t NextAccess() { return access_seq_.fetch_add(1, std::memory_order_relaxed); }

  SegmentManager& segments_;
  TenantRegistry& tenants_;
  MetaSink* sink_ = nullptr;
  MediaObserver* media_observer_ = nullptr;
  const GrantHold* hold_ = nullptr;
  const Clock* gone_clock_ = nullptr;
  size_t gone_capacity_ = 0;
  TimeMs write_fence_ms_ = 0;
  const size_t away_limit_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<uint64_t> next_object_id_{1};
  std::atomic<uint64_t> access_seq_{1};
  std::atomic<uint64_t> objects_{0};
  std::atomic<uint64_t> away_copies_{0};
  std::atomic<uint64_t> away_untracked_{0};
};

// ---- the shard, and the accessor's operations on a lookup's path (inline: every call makes them)

namespace object_table_internal {
// Tells the analysis that the accessor holds the shard's mutex (its invariant): the analysis cannot
// follow a lock held by an object a function returned, so each operation asserts it.
template <typename S>
void AssertHeld(const S& s) ASSERT_CAPABILITY(s.mu) {}
}  // namespace object_table_internal

struct ObjectTable::Shard {
  Mutex mu;
  ObjectMap objects GUARDED_BY(mu);
  std::unordered_map<std::string, PendingPut, KeyHash, KeyEq> pending GUARDED_BY(mu);
  std::unordered_map<PinKey, PinState, PinKeyHash> pins GUARDED_BY(mu);
  std::unordered_map<uint64_t, Zombie> zombies GUARDED_BY(mu);
  std::unordered_map<std::string, std::vector<AwayCopy>, KeyHash, KeyEq> away GUARDED_BY(mu);  // by table key
  ObjectEntry* lru_head GUARDED_BY(mu) = nullptr;                                              // least recently used
  ObjectEntry* lru_tail GUARDED_BY(mu) = nullptr;
  GoneKeys gone GUARDED_BY(mu){0};
};

inline ObjectTable::Locked ObjectTable::Lock(const HashedKey& k) { return Locked(*this, *shards_[ShardIndex(k)]); }
inline ObjectTable::Locked ObjectTable::LockShard(size_t i) { return Locked(*this, *shards_[i]); }

inline ObjectTable::Locked::Locked(ObjectTable& table, Shard& shard) NO_THREAD_SAFETY_ANALYSIS : t_(table), s_(shard) {
  s_.mu.lock();
}
inline ObjectTable::Locked::~Locked() NO_THREAD_SAFETY_ANALYSIS { s_.mu.unlock(); }

inline ObjectTable::Ref ObjectTable::Locked::Find(const HashedKey& k) {
  object_table_internal::AssertHeld(s_);
  auto it = s_.objects.find(k);
  return Ref(it, it != s_.objects.end());
}

inline void ObjectTable::Locked::ExtendLease(Ref r, TimeMs until) {
  r.mut().lease_deadline = std::max(r.meta().lease_deadline, until);
  r.mut().flags &= static_cast<uint8_t>(~kUnread);
}

inline void ObjectTable::Locked::SetSoftPinDeadline(Ref r, TimeMs until) { r.mut().soft_pin_deadline = until; }

inline void ObjectTable::Locked::LruUnlink(ObjectEntry& e) {
  object_table_internal::AssertHeld(s_);
  ObjectMeta& m = e.second;
  if (m.lru_prev) {
    m.lru_prev->second.lru_next = m.lru_next;
  } else if (s_.lru_head == &e) {
    s_.lru_head = m.lru_next;
  }
  if (m.lru_next) {
    m.lru_next->second.lru_prev = m.lru_prev;
  } else if (s_.lru_tail == &e) {
    s_.lru_tail = m.lru_prev;
  }
  m.lru_prev = m.lru_next = nullptr;
}

inline void ObjectTable::Locked::LruAppend(ObjectEntry& e) {
  object_table_internal::AssertHeld(s_);
  ObjectMeta& m = e.second;
  m.lru_prev = s_.lru_tail;
  m.lru_next = nullptr;
  if (s_.lru_tail) s_.lru_tail->second.lru_next = &e;
  s_.lru_tail = &e;
  if (!s_.lru_head) s_.lru_head = &e;
}

inline void ObjectTable::Locked::Touch(Ref r) {
  object_table_internal::AssertHeld(s_);
  ObjectEntry& e = *r.it_;
  e.second.last_access = t_.NextAccess();
  if (!e.second.Evictable() || s_.lru_tail == &e) return;
  LruUnlink(e);
  LruAppend(e);
}

inline uint64_t ObjectTable::Locked::AddReadPin(Ref r, const ClientId& client, PinKind kind) {
  object_table_internal::AssertHeld(s_);
  ObjectMeta& m = r.mut();
  ++m.readers;
  ++s_.pins[PinKey{m.object_id, client, kind}].count;
  return m.object_id;
}

}  // namespace yb
