// ObjectTable: the master's object metadata, sharded by key hash with one mutex per shard.
//
// A shard holds
//   objects  - published (COMPLETE) objects, each on the shard's recency list unless hard-pinned;
//   pending  - Puts between PutStart and PutEnd (invisible to readers, the key is reserved);
//   pins     - read pins per (object, client): bytes a reader is copying are never freed;
//   zombies  - objects already removed whose bytes are still pinned by readers.
// Callers lock a shard through Locked(), and operate on it; the table frees space through the
// SegmentManager and returns quota through the TenantRegistry.
// Lock order: shard mutex, then segment locks (inside SegmentManager). Never two shards at once.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/hash.h"
#include "master/inline_key_map.h"
#include "master/master_api.h"
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
  uint32_t readers = 0;  // read pins held
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
  // `checksum` holds the value's XXH3-64: given by the writer, or computed by an offload.
  bool checksum_known() const { return flags & (kHasChecksum | kDiskChecksum); }
  std::optional<uint64_t> known_checksum() const { return checksum_known() ? std::optional(checksum) : std::nullopt; }
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

struct PendingPut {
  ClientId writer;
  TimeMs started = 0;
  uint64_t size = 0;
  TenantIndex tenant = 0;
  uint8_t flags = 0;    // kHardPin / kSoftPin
  bool upsert = false;  // replaces a COMPLETE value at PutEnd
  std::vector<StoredReplica> replicas;
};

struct PinKey {
  uint64_t object_id;
  ClientId client;
  bool operator==(const PinKey&) const = default;
};
struct PinKeyHash {
  size_t operator()(const PinKey& k) const { return k.object_id * 0x9E3779B97F4A7C15ULL ^ k.client.lo; }
};

struct Zombie {
  uint32_t readers = 0;
  TenantIndex tenant = 0;
  uint64_t size = 0;
  std::vector<StoredReplica> replicas;
};

// A disk copy the master stopped listing while it may still be on its owner's disk: the owner went
// away (died or unmounted) holding it, or was not told to drop it after its key went. If the owner
// registers it again (AddDiskReplicas), a superseded copy is refused instead of bringing back a
// removed or replaced value.
struct AwayCopy {
  std::optional<uint64_t> checksum;  // unknown: stands for any copy of the key
  bool superseded = false;           // the key was removed or written since the copy was made
};

struct Shard {
  std::mutex mu;
  ObjectMap objects;
  std::unordered_map<std::string, PendingPut, KeyHash, KeyEq> pending;
  std::unordered_map<PinKey, uint32_t, PinKeyHash> pins;
  std::unordered_map<uint64_t, Zombie> zombies;
  std::unordered_map<std::string, std::vector<AwayCopy>, KeyHash, KeyEq> away;  // by table key
  ObjectEntry* lru_head = nullptr;                                              // least recently used
  ObjectEntry* lru_tail = nullptr;
};

class ObjectTable {
 public:
  static constexpr size_t kDefaultShards = 1024;

  ObjectTable(SegmentManager& segments, TenantRegistry& tenants, size_t shards = kDefaultShards);
  ~ObjectTable();

  size_t shard_count() const { return shards_.size(); }
  Shard& shard(size_t i) { return *shards_[i]; }
  Shard& ShardFor(const HashedKey& k) { return *shards_[(k.hash >> 32) % shards_.size()]; }

  uint64_t NextObjectId() { return next_object_id_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t NextAccess() { return access_seq_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t object_count() const { return objects_.load(std::memory_order_relaxed); }

  // All of the following need the shard's mutex held.

  // Publishes a new object (not yet in the map) and puts it on the recency list.
  ObjectEntry& Insert(Shard& s, const HashedKey& key, ObjectMeta meta);
  // Marks an object as just used.
  void Touch(Shard& s, ObjectEntry& e);
  // Puts an object on, or takes it off, the recency list after its replicas changed.
  void Relink(Shard& s, ObjectEntry& e);
  // Removes an object. Its bytes are freed now, or when its last reader ends (zombie).
  void Drop(Shard& s, ObjectMap::iterator it);
  // Frees an object's MEMORY replicas and keeps the others (disk copies); an object left with no
  // replica is dropped. The caller makes sure no reader holds the memory.
  void DropMemoryReplicas(Shard& s, ObjectMap::iterator it);
  // Frees replicas and returns their quota. Only MEMORY replicas hold space and quota.
  void FreeReplicas(TenantIndex tenant, uint64_t size, const std::vector<StoredReplica>& replicas);
  // Ends one read pin of `client` on object `object_id`; false if there is no such pin.
  bool Unpin(Shard& s, const ClientId& client, uint64_t object_id, ObjectEntry* live);
  // Ends every read pin `client` holds in this shard; returns how many.
  uint64_t UnpinClient(Shard& s, const ClientId& client);
  // Removes every replica on `segment`; objects left with none are dropped. Returns objects dropped.
  // `on_disk_copy` is called with each object losing a LOCAL_DISK replica, before it changes.
  uint64_t DropSegmentReplicas(Shard& s, SegmentRef segment,
                               const std::function<void(const ObjectEntry&)>& on_disk_copy = {});

 private:
  void LruUnlink(Shard& s, ObjectEntry& e);
  void LruAppend(Shard& s, ObjectEntry& e);

  SegmentManager& segments_;
  TenantRegistry& tenants_;
  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<uint64_t> next_object_id_{1};
  std::atomic<uint64_t> access_seq_{1};
  std::atomic<uint64_t> objects_{0};
};

}  // namespace yb
