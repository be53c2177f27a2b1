#include "master/object_table.h"

#include <google/protobuf/arena.h>

#include <algorithm>
#include <unordered_set>

#include "common/grant.h"
#include "common/log.h"

namespace yb {

ObjectMeta::ObjectMeta(ObjectMeta&& o) noexcept : one_() { *this = std::move(o); }

ObjectMeta& ObjectMeta::operator=(ObjectMeta&& o) noexcept {
  if (this == &o) return *this;
  ClearReplicas();
  size = o.size;
  checksum = o.checksum;
  lease_deadline = o.lease_deadline;
  soft_pin_deadline = o.soft_pin_deadline;
  object_id = o.object_id;
  last_access = o.last_access;
  lru_prev = o.lru_prev;
  lru_next = o.lru_next;
  readers = o.readers;
  want_replicas = o.want_replicas;
  tenant = o.tenant;
  flags = o.flags;
  n_replicas = o.n_replicas;
  if (n_replicas > 1) {
    many_ = o.many_;
  } else {
    one_ = o.one_;
  }
  o.n_replicas = 0;
  return *this;
}

void ObjectMeta::ClearReplicas() {
  if (n_replicas > 1) delete[] many_;
  n_replicas = 0;
}

void ObjectMeta::SetReplicas(const std::vector<StoredReplica>& r) {
  ClearReplicas();
  if (r.size() == 1) {
    one_ = r[0];
  } else if (r.size() > 1) {
    many_ = new StoredReplica[r.size()];
    std::copy(r.begin(), r.end(), many_);
  }
  n_replicas = static_cast<uint8_t>(r.size());
}

std::vector<StoredReplica> ObjectMeta::TakeReplicas() {
  std::vector<StoredReplica> out;
  out.reserve(n_replicas);
  for (size_t i = 0; i < n_replicas; ++i) out.push_back(replica(i));
  ClearReplicas();
  return out;
}

ObjectTable::ObjectTable(SegmentManager& segments, TenantRegistry& tenants, size_t shards, size_t away_limit)
    : segments_(segments), tenants_(tenants), away_limit_(away_limit) {
  shards_.reserve(shards);
  for (size_t i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

ObjectTable::~ObjectTable() = default;

using object_table_internal::AssertHeld;

void ObjectTable::RememberGone(size_t keys, const Clock& clock) {
  gone_clock_ = &clock;
  const size_t per_shard = keys == 0 ? 0 : (keys + shards_.size() - 1) / shards_.size();
  gone_capacity_ = per_shard * shards_.size();
  for (auto& shard : shards_) {
    MutexLock lock(shard->mu);
    shard->gone = GoneKeys(per_shard);
  }
}

void ObjectTable::RestoreGone(uint64_t hash, MissReason why, TimeMs when) {
  Shard& shard = *shards_[ShardIndex(hash)];
  MutexLock lock(shard.mu);
  shard.gone.Note(hash, why, when);
}

void ObjectTable::Locked::NoteGone(const HashedKey& k, MissReason why) {
  AssertHeld(s_);
  if (t_.gone_clock_) s_.gone.Note(k.hash, why, t_.gone_clock_->NowMs());
}

MissInfo ObjectTable::Locked::WhyMissing(const HashedKey& k) {
  return Find(k) ? MissInfo{MissReason::kStored, -1} : WhyAbsent(k);
}

MissInfo ObjectTable::Locked::WhyAbsent(const HashedKey& k) {
  AssertHeld(s_);
  if (FindPending(k)) return MissInfo{MissReason::kPutInProgress, -1};
  auto e = s_.gone.Find(k.hash);
  if (!e || !t_.gone_clock_) return MissInfo{};
  const int64_t age_s = t_.gone_clock_->NowMs() / 1000 - static_cast<int64_t>(e->when_s);
  return MissInfo{e->reason, std::max<int64_t>(age_s, 0) * 1000};
}

void ObjectTable::RaiseNextObjectId(uint64_t next) {
  uint64_t cur = next_object_id_.load(std::memory_order_relaxed);
  while (cur < next && !next_object_id_.compare_exchange_weak(cur, next, std::memory_order_relaxed)) {
  }
}

// ---- records for the sink

namespace {

// A record built on this thread's arena: appending one allocates nothing on the heap.
class Scratch {
 public:
  pb::LogRecord* Fresh() {
    arena_.Reset();
    return google::protobuf::Arena::CreateMessage<pb::LogRecord>(&arena_);
  }

 private:
  alignas(8) char initial_[8192];
  google::protobuf::Arena arena_{initial_, sizeof(initial_)};
};
thread_local Scratch tls_scratch;

// What of an object's flags is part of its value; the offload bits are rebuilt.
constexpr uint8_t kLoggedFlags = kHardPin | kSoftPin | kHasChecksum | kDiskChecksum;

// Only what a miss can say is written: nothing for an object replaced at once.
void SayWhyGone(pb::LogRecord* rec, MissReason why) {
  if (why == MissReason::kStored) return;
  rec->set_gone_reason(static_cast<uint32_t>(why));
  rec->set_gone_wall_ms(WallMs());
}

}  // namespace

void ObjectTable::Locked::AppendTelling(const pb::LogRecord* rec, std::string_view table_key, TenantIndex tenant,
                                        uint8_t had, uint8_t now) {
  MediaObserver* observer = had == kMediaUnchanged || had == now ? nullptr : t_.media_observer_;
  if (observer) observer->MediaChanging(table_key, t_.tenants_.name(tenant), had, now);  // outside the sink's lock
  if (!rec) {                                                                            // no sink: no position
    if (observer) observer->MediaChanged(0);
  } else if (!observer) {
    t_.sink_->Append(*rec);
  } else {
    struct Tell final : MetaSink::Appended {
      MediaObserver* observer;
      void At(uint64_t position) override { observer->MediaChanged(position); }
    } tell;
    tell.observer = observer;
    t_.sink_->AppendThen(*rec, tell);
  }
}

void ObjectTable::Locked::LogObject(const ObjectEntry& e, bool ends_put, uint8_t had) {
  pb::LogRecord* rec = nullptr;
  if (t_.sink_) {
    rec = tls_scratch.Fresh();
    BuildObject(e, ends_put ? rec->mutable_published() : rec->mutable_object());
  }
  AppendTelling(rec, e.first, e.second.tenant, had, MediaOf(e.second));
}

void ObjectTable::Locked::BuildObject(const ObjectEntry& e, pb::LogObject* o) const {
  const ObjectMeta& m = e.second;
  o->set_key(e.first.data(), e.first.size());
  o->set_size(m.size);
  o->set_checksum(m.checksum);
  o->set_flags(m.flags & kLoggedFlags);
  o->set_object_id(m.object_id);
  o->set_tenant(m.tenant);
  o->set_want_replicas(m.want_replicas);
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const StoredReplica& r = m.replica(i);
    if (r.status() != ReplicaStatus::kComplete) continue;  // a repair's copy, not there yet
    SegmentId id = t_.segments_.IdOf(r.segment());
    if (id == 0) continue;  // its segment is being unmounted: never read again
    pb::LogReplica* lr = o->add_replicas();
    lr->set_kind(static_cast<uint32_t>(r.kind()));
    lr->set_segment(id);
    lr->set_offset(r.offset());
  }
}

void ObjectTable::Locked::LogObjectGone(Ref r, MissReason why, uint8_t had) {
  pb::LogRecord* rec = nullptr;
  if (t_.sink_) {
    rec = tls_scratch.Fresh();
    rec->set_object_gone(r.key().data(), r.key().size());
    SayWhyGone(rec, why);
  }
  AppendTelling(rec, r.key(), r->tenant, had, 0);
}

void ObjectTable::Locked::LogPending(std::string_view table_key, const PendingPut& p) {
  if (!t_.sink_) return;
  pb::LogRecord* rec = tls_scratch.Fresh();
  BuildPending(table_key, p, rec->mutable_pending());
  t_.sink_->Append(*rec);
}

void ObjectTable::Locked::BuildPending(std::string_view table_key, const PendingPut& p, pb::LogPending* lp) const {
  lp->set_key(table_key.data(), table_key.size());
  lp->set_writer_hi(p.writer.hi);
  lp->set_writer_lo(p.writer.lo);
  lp->set_size(p.size);
  lp->set_tenant(p.tenant);
  lp->set_flags(p.flags);
  lp->set_upsert(p.upsert);
  for (const StoredReplica& r : p.replicas) {
    SegmentId id = t_.segments_.IdOf(r.segment());
    if (id == 0) continue;
    pb::LogReplica* lr = lp->add_replicas();
    lr->set_kind(static_cast<uint32_t>(r.kind()));
    lr->set_segment(id);
    lr->set_offset(r.offset());
  }
}

void ObjectTable::Locked::LogPendingGone(std::string_view table_key, MissReason why) {
  if (!t_.sink_) return;
  pb::LogRecord* rec = tls_scratch.Fresh();
  rec->set_pending_gone(table_key.data(), table_key.size());
  SayWhyGone(rec, why);
  t_.sink_->Append(*rec);
}

void ObjectTable::Locked::LogAway(std::string_view table_key) {
  if (!t_.sink_) return;
  AssertHeld(s_);
  pb::LogRecord* rec = tls_scratch.Fresh();
  auto it = s_.away.find(HashedKey(table_key));
  static const std::vector<AwayCopy> kNone;
  BuildAway(table_key, it != s_.away.end() ? it->second : kNone, rec->mutable_away());
  t_.sink_->Append(*rec);
}

void ObjectTable::Locked::BuildAway(std::string_view table_key, const std::vector<AwayCopy>& copies,
                                    pb::LogAway* la) const {
  la->set_key(table_key.data(), table_key.size());
  for (const AwayCopy& c : copies) {
    pb::LogAwayCopy* lc = la->add_copies();
    lc->set_has_checksum(c.checksum.has_value());
    lc->set_checksum(c.checksum.value_or(0));
    lc->set_superseded(c.superseded);
  }
}

void ObjectTable::Locked::Dump(const std::function<void(const pb::LogRecord&)>& emit) const {
  AssertHeld(s_);
  for (const auto& e : s_.objects) {
    pb::LogRecord* rec = tls_scratch.Fresh();
    BuildObject(e, rec->mutable_object());
    emit(*rec);
  }
  for (const auto& [k, p] : s_.pending) {
    pb::LogRecord* rec = tls_scratch.Fresh();
    BuildPending(k, p, rec->mutable_pending());
    emit(*rec);
  }
  for (const auto& [k, copies] : s_.away) {
    pb::LogRecord* rec = tls_scratch.Fresh();
    BuildAway(k, copies, rec->mutable_away());
    emit(*rec);
  }
}

void ObjectTable::FreeReplicas(TenantIndex tenant, uint64_t size, const std::vector<StoredReplica>& replicas,
                               TimeMs hold_until, std::optional<TimeMs> fence_until) {
  uint64_t memory = 0;
  for (const auto& r : replicas) {
    if (r.kind() != ReplicaKind::kMemory) continue;
    std::optional<TimeMs> fence;
    if (r.status() == ReplicaStatus::kProcessing) fence = fence_until ? *fence_until : segments_.FenceFloor();
    segments_.Free(r.alloc(), hold_until, tenant, fence);
    ++memory;
  }
  tenants_.Release(tenant, size * memory);
}

// ---- lookups

const PendingPut* ObjectTable::Locked::FindPending(const HashedKey& k) const {
  AssertHeld(s_);
  auto p = s_.pending.find(k);
  return p == s_.pending.end() ? nullptr : &p->second;
}

size_t ObjectTable::Locked::pending_count() const {
  AssertHeld(s_);
  return s_.pending.size();
}

size_t ObjectTable::Locked::reservation_count() const {
  AssertHeld(s_);
  size_t n = 0;
  for (const auto& [key, put] : s_.pending) n += IsReservationTableKey(key);
  return n;
}

void ObjectTable::Locked::ForEach(const std::function<void(Ref)>& f) {
  AssertHeld(s_);
  for (auto it = s_.objects.begin(); it != s_.objects.end();) {
    auto next = std::next(it);  // f may remove `it`; the map's other entries keep their slots
    f(Ref(it, true));
    it = next;
  }
}

bool ObjectTable::Locked::ForEachLeastRecent(const std::function<bool(const ObjectEntry&)>& f) {
  AssertHeld(s_);
  for (const ObjectEntry* e = s_.lru_head; e; e = e->second.lru_next) {
    if (!f(*e)) return e->second.lru_next != nullptr;
  }
  return false;
}

// ---- Puts in progress

void ObjectTable::Locked::AddPending(const HashedKey& k, PendingPut put, bool record) {
  AssertHeld(s_);
  auto it = s_.pending.emplace(std::string(k.key), std::move(put)).first;
  if (record) LogPending(it->first, it->second);
}

PendingPut ObjectTable::Locked::TakePending(const HashedKey& k, bool to_publish, MissReason why) {
  AssertHeld(s_);
  auto p = s_.pending.find(k);
  PendingPut put = std::move(p->second);
  s_.pending.erase(p);
  if (!to_publish) LogPendingGone(k.key, why);
  NoteGone(k, why);
  return put;
}

namespace {

// Why a revoked Put's key has no object: abandoned, except a client's reservation, whose name is
// no key anyone asks about (its going is not remembered, so it takes no room in the table).
MissReason RevokedReason(std::string_view table_key) {
  return IsReservationTableKey(table_key) ? MissReason::kStored : MissReason::kPutAbandoned;
}

}  // namespace

bool ObjectTable::Locked::RevokePending(const HashedKey& k) {
  AssertHeld(s_);
  auto p = s_.pending.find(k);
  if (p == s_.pending.end()) return false;
  t_.FreeUnfinished(p->second.tenant, p->second.size, p->second.replicas, p->second.started);
  s_.pending.erase(p);
  LogPendingGone(k.key, RevokedReason(k.key));
  NoteGone(k, RevokedReason(k.key));
  return true;
}

uint64_t ObjectTable::Locked::RevokePendingIf(
    const std::function<bool(std::string_view table_key, const PendingPut&)>& pred) {
  AssertHeld(s_);
  uint64_t n = 0;
  for (auto it = s_.pending.begin(); it != s_.pending.end();) {
    if (!pred(it->first, it->second)) {
      ++it;
      continue;
    }
    t_.FreeUnfinished(it->second.tenant, it->second.size, it->second.replicas, it->second.started);
    LogPendingGone(it->first, RevokedReason(it->first));
    NoteGone(HashedKey(it->first), RevokedReason(it->first));
    it = s_.pending.erase(it);
    ++n;
  }
  return n;
}

// ---- the recency list

void ObjectTable::Locked::Relink(ObjectEntry& e) {
  AssertHeld(s_);
  bool linked = e.second.lru_prev != nullptr || s_.lru_head == &e;
  if (e.second.Evictable() && !linked) {
    LruAppend(e);
  } else if (!e.second.Evictable() && linked) {
    LruUnlink(e);
  }
}

// ---- published objects

uint8_t MediaOf(const ObjectMeta& m) {
  uint8_t media = 0;
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const StoredReplica& r = m.replica(i);
    if (r.status() != ReplicaStatus::kComplete) continue;
    media |= r.kind() == ReplicaKind::kMemory ? kMediaMemory : kMediaDisk;
  }
  return media;
}

ObjectTable::Ref ObjectTable::Locked::Publish(const HashedKey& k, ObjectMeta meta, bool ends_put) {
  Ref r = RestoreObject(k, std::move(meta));
  LogObject(r.entry(), ends_put, 0);
  return r;
}

ObjectTable::Ref ObjectTable::Locked::RestoreObject(const HashedKey& k, ObjectMeta meta) {
  AssertHeld(s_);
  meta.last_access = t_.NextAccess();
  auto [it, inserted] = s_.objects.emplace(k, std::move(meta));
  t_.objects_.fetch_add(1, std::memory_order_relaxed);
  if (it->second.Evictable()) LruAppend(*it);
  return Ref(it, true);
}

void ObjectTable::Locked::RestorePending(const HashedKey& k, PendingPut put) {
  AssertHeld(s_);
  s_.pending.emplace(std::string(k.key), std::move(put));
}

void ObjectTable::Locked::RestoreAway(const HashedKey& k, std::vector<AwayCopy> copies) {
  AssertHeld(s_);
  t_.away_copies_.fetch_add(copies.size(), std::memory_order_relaxed);
  s_.away[std::string(k.key)] = std::move(copies);
}

void ObjectTable::Locked::Remove(Ref r, MissReason why) { RemoveHad(r, why, MediaOf(r.meta())); }

void ObjectTable::Locked::RemoveHad(Ref r, MissReason why, uint8_t had) {
  AssertHeld(s_);
  NoteGone(HashedKey(r.key()), why);
  LogObjectGone(r, why, had);
  ObjectMeta& m = r.mut();
  LruUnlink(*r.it_);  // a no-op for an object not on the list
  auto replicas = m.TakeReplicas();
  const TimeMs hold = t_.HoldAfterStamp(m.last_access);
  if (m.readers > 0) {
    Zombie z{m.readers, m.tenant, m.size, std::move(replicas), hold};
    s_.zombies.emplace(m.object_id, std::move(z));
  } else {
    t_.FreeReplicas(m.tenant, m.size, replicas, hold);
  }
  s_.objects.erase(r.it_);
  t_.objects_.fetch_sub(1, std::memory_order_relaxed);
}

void ObjectTable::Locked::SetReplicas(Ref r, const std::vector<StoredReplica>& keep, MissReason if_empty,
                                      uint8_t had) {
  if (keep.empty()) return RemoveHad(r, if_empty, had);
  r.mut().SetReplicas(keep);
  Relink(*r.it_);
  LogObject(r.entry(), false, had);
}

void ObjectTable::Locked::DropMemoryReplicas(Ref r, MissReason if_gone) {
  DropReplicasIf(r, [](const StoredReplica& x) { return x.kind() == ReplicaKind::kMemory; }, if_gone);
}

size_t ObjectTable::Locked::DropReplicasIf(Ref r, const std::function<bool(const StoredReplica&)>& drop,
                                           MissReason if_gone) {
  const ObjectMeta& m = r.meta();
  std::vector<StoredReplica> keep, gone;
  for (size_t i = 0; i < m.n_replicas; ++i) (drop(m.replica(i)) ? gone : keep).push_back(m.replica(i));
  if (gone.empty()) return 0;
  if (keep.empty()) {
    Remove(r, if_gone);  // frees what it held
  } else {
    const uint8_t had = MediaOf(m);
    t_.FreeReplicas(m.tenant, m.size, gone, t_.HoldAfterStamp(m.last_access));
    SetReplicas(r, keep, if_gone, had);
  }
  return gone.size();
}

void ObjectTable::Locked::AddDiskReplica(Ref r, SegmentRef segment) {
  ObjectMeta& m = r.mut();
  m.flags &= static_cast<uint8_t>(~kDiskCopyPending);
  const uint8_t had = MediaOf(m);
  std::vector<StoredReplica> replicas = m.TakeReplicas();
  replicas.emplace_back(Allocation{0, segment, OffsetAllocator::kNoNode}, ReplicaKind::kLocalDisk,
                        ReplicaStatus::kComplete);
  SetReplicas(r, replicas, MissReason::kStored, had);
}

void ObjectTable::Locked::AddRepairReplica(Ref r, const Allocation& a) {
  ObjectMeta& m = r.mut();
  t_.tenants_.Charge(m.tenant, m.size);
  std::vector<StoredReplica> replicas = m.TakeReplicas();
  replicas.emplace_back(a, ReplicaKind::kMemory, ReplicaStatus::kProcessing);
  m.SetReplicas(replicas);  // nothing a reader or the log sees changed: not recorded
  Relink(*r.it_);
}

bool ObjectTable::Locked::CompleteReplica(Ref r, const Allocation& a) {
  ObjectMeta& m = r.mut();
  for (size_t i = 0; i < m.n_replicas; ++i) {
    StoredReplica& x = m.replica(i);
    if (x.kind() == ReplicaKind::kMemory && x.status() == ReplicaStatus::kProcessing && x.segment() == a.segment &&
        x.offset() == a.offset) {
      const uint8_t had = MediaOf(m);
      x.set_status(ReplicaStatus::kComplete);
      LogObject(r.entry(), false, had);
      return true;
    }
  }
  return false;
}

void ObjectTable::Locked::DropRepairReplica(Ref r, const Allocation& a) {
  DropReplicasIf(r, [&](const StoredReplica& x) {
    return x.kind() == ReplicaKind::kMemory && x.status() == ReplicaStatus::kProcessing && x.segment() == a.segment &&
           x.offset() == a.offset;
  });
}

void ObjectTable::Locked::SetDiskChecksum(Ref r, uint64_t checksum) {
  ObjectMeta& m = r.mut();
  m.checksum = checksum;
  m.flags |= kDiskChecksum;
  LogObject(r.entry(), false, kMediaUnchanged);
}

namespace {
constexpr uint8_t kOffloadBits = kOffloading | kNoOffload | kDiskCopyPending;
}

void ObjectTable::Locked::SetOffloadFlags(Ref r, uint8_t bits) { r.mut().flags |= (bits & kOffloadBits); }
void ObjectTable::Locked::ClearOffloadFlags(Ref r, uint8_t bits) {
  r.mut().flags &= static_cast<uint8_t>(~(bits & kOffloadBits));
}

// ---- readers

bool ObjectTable::Locked::Unpin(const ClientId& client, uint64_t object_id, Ref live, PinKind kind) {
  AssertHeld(s_);
  auto pin = s_.pins.find(PinKey{object_id, client, kind});
  if (pin == s_.pins.end()) return false;
  if (--pin->second.count == 0) s_.pins.erase(pin);
  if (live && live.meta().object_id == object_id) {
    --live.mut().readers;
    return true;
  }
  auto z = s_.zombies.find(object_id);
  if (z != s_.zombies.end() && --z->second.readers == 0) {
    t_.FreeReplicas(z->second.tenant, z->second.size, z->second.replicas, z->second.hold_until);
    s_.zombies.erase(z);
  }
  return true;
}

uint32_t ObjectTable::Locked::ClientReadPins(Ref r) const {
  AssertHeld(s_);
  const uint64_t id = r.meta().object_id;
  uint32_t n = 0;
  for (const auto& [key, state] : s_.pins) {
    if (key.object_id == id && key.kind == PinKind::kRead) n += state.count;
  }
  return n;
}

bool ObjectTable::Locked::RenewReadPins(const ClientId& client, uint64_t object_id, uint64_t round) {
  AssertHeld(s_);
  auto pin = s_.pins.find(PinKey{object_id, client, PinKind::kRead});
  if (pin == s_.pins.end()) return false;
  pin->second.round = round;
  return true;
}

uint64_t ObjectTable::Locked::UnpinIf(const std::function<bool(const PinKey&, PinState&)>& end) {
  AssertHeld(s_);
  if (s_.pins.empty()) return 0;
  std::unordered_map<uint64_t, uint32_t> ended;  // object id -> pins ended
  for (auto it = s_.pins.begin(); it != s_.pins.end();) {
    if (end(it->first, it->second)) {
      ended[it->first.object_id] += it->second.count;
      it = s_.pins.erase(it);
    } else {
      ++it;
    }
  }
  if (ended.empty()) return 0;
  uint64_t released = 0;
  for (auto& [key, meta] : s_.objects) {
    auto m = ended.find(meta.object_id);
    if (m == ended.end()) continue;
    meta.readers -= m->second;
    released += m->second;
    ended.erase(m);
    if (ended.empty()) break;
  }
  for (auto& [id, count] : ended) {
    auto z = s_.zombies.find(id);
    if (z == s_.zombies.end()) continue;
    released += count;
    z->second.readers -= count;
    if (z->second.readers == 0) {
      t_.FreeReplicas(z->second.tenant, z->second.size, z->second.replicas, z->second.hold_until);
      s_.zombies.erase(z);
    }
  }
  return released;
}

// ---- segments

uint64_t ObjectTable::Locked::DropSegment(SegmentRef segment, MissReason why,
                                          const std::function<void(Ref)>& on_disk_copy,
                                          const std::function<void(Ref)>& thinned,
                                          const std::function<void(std::string_view)>& lost) {
  AssertHeld(s_);
  uint64_t dropped = 0;
  for (auto it = s_.objects.begin(); it != s_.objects.end();) {
    ObjectMeta& m = it->second;
    auto next = std::next(it);
    bool hit = false;
    for (size_t i = 0; i < m.n_replicas && !hit; ++i) hit = m.replica(i).segment() == segment;
    if (!hit) {
      it = next;
      continue;
    }
    const uint8_t had = MediaOf(m);
    std::vector<StoredReplica> keep;
    uint64_t gone = 0;
    for (size_t i = 0; i < m.n_replicas; ++i) {
      if (m.replica(i).segment() != segment) {
        keep.push_back(m.replica(i));
      } else if (m.replica(i).kind() == ReplicaKind::kMemory) {
        ++gone;
      } else if (m.replica(i).kind() == ReplicaKind::kLocalDisk && on_disk_copy) {
        on_disk_copy(Ref(it, true));
      }
    }
    t_.tenants_.Release(m.tenant, m.size * gone);  // the segment's memory left with its owner
    const bool readable = std::any_of(keep.begin(), keep.end(),
                                      [](const StoredReplica& r) { return r.status() == ReplicaStatus::kComplete; });
    if (lost && (keep.empty() || !readable)) lost(it->first);
    if (keep.empty()) {
      (void)m.TakeReplicas();
      RemoveHad(Ref(it, true), why, had);
      ++dropped;
    } else if (!readable) {
      // Only a re-replication copy in flight is left (PROCESSING): its source is gone, so it cannot
      // be finished, and the object is lost, not kept with nothing to read. The copy's range goes
      // with the object (held by the copier's pin until its task ends).
      SetReplicas(Ref(it, true), keep, why, had);
      Remove(Ref(it, true), why);
      ++dropped;
    } else {
      SetReplicas(Ref(it, true), keep, why, had);
      if (gone > 0 && thinned) thinned(Ref(it, true));
    }
    it = next;
  }
  for (auto& entry : s_.pending) {
    PendingPut& p = entry.second;
    size_t erased = std::erase_if(p.replicas, [&](const StoredReplica& r) {
      if (r.segment() != segment) return false;
      t_.tenants_.Release(p.tenant, p.size);
      return true;
    });
    if (erased > 0) LogPending(entry.first, p);
  }
  for (auto& entry : s_.zombies) {
    Zombie& z = entry.second;
    std::erase_if(z.replicas, [&](const StoredReplica& r) {
      if (r.segment() != segment) return false;
      if (r.kind() == ReplicaKind::kMemory) t_.tenants_.Release(z.tenant, z.size);
      return true;
    });
  }
  return dropped;
}

// ---- away copies

void ObjectTable::Locked::NoteAwayCopy(std::string_view table_key, std::optional<uint64_t> checksum, bool superseded) {
  AssertHeld(s_);
  if (t_.away_copies_.load(std::memory_order_relaxed) >= t_.away_limit_) {
    const uint64_t n = t_.away_untracked_.fetch_add(1, std::memory_order_relaxed) + 1;
    if ((n & (n - 1)) == 0) {  // 1st, 2nd, 4th, ...: a burst does not flood the log
      YB_LOG_WARN(
          "{} disk copies of absent clients are remembered (--disk_away_copies_limit): {} more are not, and "
          "such a copy of a key removed or rewritten meanwhile would be registered again if its owner returns",
          t_.away_limit_, n);
    }
    return;
  }
  auto it = s_.away.find(HashedKey(table_key));
  if (it == s_.away.end()) it = s_.away.emplace(std::string(table_key), std::vector<AwayCopy>{}).first;
  it->second.push_back(AwayCopy{checksum, superseded});
  t_.away_copies_.fetch_add(1, std::memory_order_relaxed);
  LogAway(table_key);
}

void ObjectTable::Locked::SupersedeAwayCopies(std::string_view table_key) {
  AssertHeld(s_);
  if (s_.away.empty()) return;  // the common case: no hashing
  auto it = s_.away.find(HashedKey(table_key));
  if (it == s_.away.end()) return;
  for (AwayCopy& c : it->second) c.superseded = true;
  LogAway(table_key);
}

void ObjectTable::Locked::SupersedeAbsentAwayCopiesIf(const std::function<bool(std::string_view)>& match) {
  AssertHeld(s_);
  for (auto& [ik, copies] : s_.away) {
    if (match(ik) && s_.objects.find(HashedKey(ik)) == s_.objects.end()) {
      for (AwayCopy& c : copies) c.superseded = true;
      LogAway(ik);
    }
  }
}

std::optional<bool> ObjectTable::Locked::TakeAwayCopy(const HashedKey& k, uint64_t checksum) {
  AssertHeld(s_);
  auto it = s_.away.find(k);
  if (it == s_.away.end()) return std::nullopt;
  std::vector<AwayCopy>& copies = it->second;
  auto match = std::find_if(copies.begin(), copies.end(), [&](const AwayCopy& c) { return c.checksum == checksum; });
  if (match == copies.end()) {
    match = std::find_if(copies.begin(), copies.end(), [](const AwayCopy& c) { return !c.checksum; });
  }
  if (match == copies.end()) return std::nullopt;
  const bool superseded = match->superseded;
  copies.erase(match);
  if (copies.empty()) s_.away.erase(it);
  t_.away_copies_.fetch_sub(1, std::memory_order_relaxed);
  LogAway(k.key);
  return superseded;
}

}  // namespace yb
