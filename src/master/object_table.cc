#include "master/object_table.h"

#include <algorithm>
#include <unordered_set>

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

ObjectTable::ObjectTable(SegmentManager& segments, TenantRegistry& tenants, size_t shards)
    : segments_(segments), tenants_(tenants) {
  shards_.reserve(shards);
  for (size_t i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>());
}

ObjectTable::~ObjectTable() = default;

void ObjectTable::LruUnlink(Shard& s, ObjectEntry& e) {
  ObjectMeta& m = e.second;
  if (m.lru_prev) {
    m.lru_prev->second.lru_next = m.lru_next;
  } else if (s.lru_head == &e) {
    s.lru_head = m.lru_next;
  }
  if (m.lru_next) {
    m.lru_next->second.lru_prev = m.lru_prev;
  } else if (s.lru_tail == &e) {
    s.lru_tail = m.lru_prev;
  }
  m.lru_prev = m.lru_next = nullptr;
}

void ObjectTable::LruAppend(Shard& s, ObjectEntry& e) {
  ObjectMeta& m = e.second;
  m.lru_prev = s.lru_tail;
  m.lru_next = nullptr;
  if (s.lru_tail) s.lru_tail->second.lru_next = &e;
  s.lru_tail = &e;
  if (!s.lru_head) s.lru_head = &e;
}

ObjectEntry& ObjectTable::Insert(Shard& s, const HashedKey& key, ObjectMeta meta) {
  meta.last_access = NextAccess();
  auto [it, inserted] = s.objects.emplace(key, std::move(meta));
  objects_.fetch_add(1, std::memory_order_relaxed);
  if (it->second.Evictable()) LruAppend(s, *it);
  return *it;
}

void ObjectTable::Touch(Shard& s, ObjectEntry& e) {
  e.second.last_access = NextAccess();
  if (!e.second.Evictable() || s.lru_tail == &e) return;
  LruUnlink(s, e);
  LruAppend(s, e);
}

void ObjectTable::Relink(Shard& s, ObjectEntry& e) {
  bool linked = e.second.lru_prev != nullptr || s.lru_head == &e;
  if (e.second.Evictable() && !linked) {
    LruAppend(s, e);
  } else if (!e.second.Evictable() && linked) {
    LruUnlink(s, e);
  }
}

void ObjectTable::FreeReplicas(TenantIndex tenant, uint64_t size, const std::vector<StoredReplica>& replicas) {
  uint64_t memory = 0;
  for (const auto& r : replicas) {
    if (r.kind() != ReplicaKind::kMemory) continue;
    segments_.Free(r.alloc());
    ++memory;
  }
  tenants_.Release(tenant, size * memory);
}

void ObjectTable::Drop(Shard& s, ObjectMap::iterator it) {
  ObjectMeta& m = it->second;
  LruUnlink(s, *it);  // a no-op for an object not on the list
  auto replicas = m.TakeReplicas();
  if (m.readers > 0) {
    Zombie z{m.readers, m.tenant, m.size, std::move(replicas)};
    s.zombies.emplace(m.object_id, std::move(z));
  } else {
    FreeReplicas(m.tenant, m.size, replicas);
  }
  s.objects.erase(it);
  objects_.fetch_sub(1, std::memory_order_relaxed);
}

void ObjectTable::DropMemoryReplicas(Shard& s, ObjectMap::iterator it) {
  ObjectMeta& m = it->second;
  std::vector<StoredReplica> keep, gone;
  for (size_t i = 0; i < m.n_replicas; ++i) {
    (m.replica(i).kind() == ReplicaKind::kMemory ? gone : keep).push_back(m.replica(i));
  }
  if (keep.empty()) return Drop(s, it);
  FreeReplicas(m.tenant, m.size, gone);
  m.SetReplicas(keep);
  Relink(s, *it);
}

bool ObjectTable::Unpin(Shard& s, const ClientId& client, uint64_t object_id, ObjectEntry* live) {
  auto pin = s.pins.find(PinKey{object_id, client});
  if (pin == s.pins.end()) return false;
  if (--pin->second == 0) s.pins.erase(pin);
  if (live && live->second.object_id == object_id) {
    --live->second.readers;
    return true;
  }
  auto z = s.zombies.find(object_id);
  if (z != s.zombies.end() && --z->second.readers == 0) {
    FreeReplicas(z->second.tenant, z->second.size, z->second.replicas);
    s.zombies.erase(z);
  }
  return true;
}

uint64_t ObjectTable::UnpinClient(Shard& s, const ClientId& client) {
  std::unordered_map<uint64_t, uint32_t> mine;  // object id -> pins held
  for (auto it = s.pins.begin(); it != s.pins.end();) {
    if (it->first.client == client) {
      mine[it->first.object_id] += it->second;
      it = s.pins.erase(it);
    } else {
      ++it;
    }
  }
  if (mine.empty()) return 0;
  uint64_t released = 0;
  for (auto& [key, meta] : s.objects) {
    auto m = mine.find(meta.object_id);
    if (m == mine.end()) continue;
    meta.readers -= m->second;
    released += m->second;
    mine.erase(m);
  }
  for (auto& [id, count] : mine) {
    auto z = s.zombies.find(id);
    if (z == s.zombies.end()) continue;
    released += count;
    z->second.readers -= count;
    if (z->second.readers == 0) {
      FreeReplicas(z->second.tenant, z->second.size, z->second.replicas);
      s.zombies.erase(z);
    }
  }
  return released;
}

uint64_t ObjectTable::DropSegmentReplicas(Shard& s, SegmentRef segment,
                                          const std::function<void(const ObjectEntry&)>& on_disk_copy) {
  uint64_t dropped = 0;
  for (auto it = s.objects.begin(); it != s.objects.end();) {
    ObjectMeta& m = it->second;
    bool hit = false;
    for (size_t i = 0; i < m.n_replicas && !hit; ++i) hit = m.replica(i).segment() == segment;
    if (!hit) {
      ++it;
      continue;
    }
    std::vector<StoredReplica> keep;
    uint64_t gone = 0;
    for (size_t i = 0; i < m.n_replicas; ++i) {
      if (m.replica(i).segment() != segment) {
        keep.push_back(m.replica(i));
      } else if (m.replica(i).kind() == ReplicaKind::kMemory) {
        ++gone;
      } else if (m.replica(i).kind() == ReplicaKind::kLocalDisk && on_disk_copy) {
        on_disk_copy(*it);
      }
    }
    tenants_.Release(m.tenant, m.size * gone);  // the segment's memory left with its owner
    if (keep.empty()) {
      (void)m.TakeReplicas();
      auto next = std::next(it);
      Drop(s, it);
      it = next;
      ++dropped;
    } else {
      m.SetReplicas(keep);
      Relink(s, *it);
      ++it;
    }
  }
  for (auto& [key, p] : s.pending) {
    std::erase_if(p.replicas, [&](const StoredReplica& r) {
      if (r.segment() != segment) return false;
      tenants_.Release(p.tenant, p.size);
      return true;
    });
  }
  for (auto& [id, z] : s.zombies) {
    std::erase_if(z.replicas, [&](const StoredReplica& r) {
      if (r.segment() != segment) return false;
      if (r.kind() == ReplicaKind::kMemory) tenants_.Release(z.tenant, z.size);
      return true;
    });
  }
  return dropped;
}

}  // namespace yb
