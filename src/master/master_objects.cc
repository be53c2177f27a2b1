// MasterService: Put, Get, Exist and Remove of single objects.
#include <algorithm>
#include <regex>

#include "common/log.h"
#include "master/master_service.h"

namespace yb {
namespace {

// A put's list of segments to avoid names the few its writer could not reach.
constexpr size_t kMaxAvoidSegments = 256;

std::string Quote(const std::string& key) { return "'" + (key.size() > 64 ? key.substr(0, 64) + "..." : key) + "'"; }

}  // namespace

ReplicaDesc MasterService::Describe(const StoredReplica& r, uint64_t size) const {
  return ReplicaDesc{r.kind(), r.status(), segments_.IdOf(r.segment()), r.offset(), size};
}

// The key has a Put in progress, by this caller. Shard lock held.
static Status CheckWriter(Shard& s, const HashedKey& hk, const CallContext& ctx, const std::string& key) {
  auto p = s.pending.find(hk);
  if (p == s.pending.end()) return Status(Code::kObjectNotFound, "no Put in progress for key " + Quote(key));
  if (!(p->second.writer == ctx.client)) {
    return Status(Code::kIllegalClient, "key " + Quote(key) + " is being written by another client");
  }
  return Status::OK();
}

Status MasterService::CheckKey(const CallContext& ctx, const std::string& key) const {
  if (key.empty()) return Status(Code::kInvalidKey, "key is empty");
  if (key.size() > kMaxKeyLength) {
    return Status(Code::kInvalidKey,
                  "key of " + std::to_string(key.size()) + " bytes exceeds " + std::to_string(kMaxKeyLength));
  }
  if (!tenants_.Valid(ctx.tenant)) return Status(Code::kTenantNotRegistered, "unknown tenant index");
  return Status::OK();
}

Result<std::vector<Allocation>> MasterService::Reserve(TenantIndex tenant, uint64_t size,
                                                       const ReplicateConfig& config) {
  uint64_t n = tenants_.ChargeUpTo(tenant, size, config.replica_num);
  if (n == 0) {
    return Status(Code::kTenantQuotaExceeded, "tenant '" + tenants_.name(tenant) + "' quota of " +
                                                  std::to_string(tenants_.quota(tenant)) + " bytes is used up");
  }
  auto allocs = segments_.Allocate(size, n, config.preferred_segments, config.avoid_segments);
  if (allocs.empty()) {
    // A failed allocation triggers eviction now; the writer does not have to come back.
    evictor_.NoteAllocationFailure(size * n);
    uint64_t want = std::max<uint64_t>(
        size * n, static_cast<uint64_t>(config_.eviction_ratio * static_cast<double>(segments_.capacity())));
    if (evictor_.EvictBytes(want) > 0)
      allocs = segments_.Allocate(size, n, config.preferred_segments, config.avoid_segments);
  }
  if (allocs.size() < n) tenants_.Release(tenant, (n - allocs.size()) * size);
  if (allocs.empty()) {
    return Status(Code::kNoAvailableHandle, "no segment has " + std::to_string(size) + " free bytes");
  }
  return allocs;
}

Result<std::vector<ReplicaDesc>> MasterService::StartWrite(const CallContext& ctx, const std::string& key,
                                                           uint64_t size, const ReplicateConfig& config, bool upsert) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  if (size == 0) return Status(Code::kInvalidParams, "object size is 0");
  if (config.replica_num == 0 || config.replica_num > 64) {
    return Status(Code::kInvalidParams, "replica_num must be 1-64, got " + std::to_string(config.replica_num));
  }
  if (config.avoid_segments.size() > kMaxAvoidSegments) {
    return Status(Code::kInvalidParams, "at most " + std::to_string(kMaxAvoidSegments) + " segments to avoid, got " +
                                            std::to_string(config.avoid_segments.size()));
  }
  if (segments_.segment_count() == 0) return Status(Code::kNoAvailableHandle, "no segment is mounted");
  uint64_t largest = segments_.largest_segment();
  if (size > largest) {
    return Status(Code::kInvalidParams, "object of " + std::to_string(size) +
                                            " bytes is larger than the largest segment (" + std::to_string(largest) +
                                            " bytes)");
  }
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  Shard& s = table_.ShardFor(hk);
  const TimeMs now = clock_.NowMs();
  auto check_free = [&]() -> Status {
    auto obj = s.objects.find(hk);
    if (obj != s.objects.end() && !upsert) {
      return Status(Code::kObjectAlreadyExists,
                    "key " + Quote(key) + " exists with " + std::to_string(obj->second.size) + " bytes");
    }
    auto p = s.pending.find(hk);
    if (p == s.pending.end()) return Status::OK();
    if (now - p->second.started < config_.put_start_discard_timeout_sec * 1000) {
      return Status(Code::kObjectAlreadyExists, "key " + Quote(key) + " is being written");
    }
    // Take over a Put unfinished for put_start_discard_timeout: its writer may still be copying,
    // so its space is released only at put_start_release_timeout.
    YB_LOG_WARN("taking over key {} from client {}", Quote(key), p->second.writer.ToString());
    {
      std::lock_guard dl(discarded_mu_);
      discarded_.push_back(Discarded{p->second.started + config_.put_start_release_timeout_sec * 1000, p->second.tenant,
                                     p->second.size, std::move(p->second.replicas)});
    }
    s.pending.erase(p);
    return Status::OK();
  };
  {
    std::lock_guard lock(s.mu);
    YB_RETURN_IF_ERROR(check_free());
  }
  auto allocs = Reserve(ctx.tenant, size, config);
  if (!allocs.ok()) return allocs.status();
  std::vector<StoredReplica> replicas;
  std::vector<ReplicaDesc> descs;
  for (const auto& a : *allocs) {
    replicas.emplace_back(a, ReplicaKind::kMemory, ReplicaStatus::kProcessing);
    descs.push_back(Describe(replicas.back(), size));
  }

  std::lock_guard lock(s.mu);
  Status again = check_free();  // another writer may have come in while we allocated
  if (!again.ok()) {
    table_.FreeReplicas(ctx.tenant, size, replicas);
    return again;
  }
  uint8_t flags = (config.with_hard_pin ? kHardPin : 0) | (config.with_soft_pin ? kSoftPin : 0);
  s.pending.emplace(tk.key, PendingPut{ctx.client, now, size, ctx.tenant, flags, upsert, std::move(replicas)});
  return descs;
}

Result<std::vector<ReplicaDesc>> MasterService::PutStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                                         const ReplicateConfig& config) {
  return StartWrite(ctx, key, size, config, false);
}

Result<std::vector<ReplicaDesc>> MasterService::UpsertStart(const CallContext& ctx, const std::string& key,
                                                            uint64_t size, const ReplicateConfig& config) {
  return StartWrite(ctx, key, size, config, true);
}

Status MasterService::PutEnd(const CallContext& ctx, const std::string& key, std::optional<uint64_t> checksum) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  Shard& s = table_.ShardFor(hk);
  const TimeMs now = clock_.NowMs();
  std::lock_guard lock(s.mu);
  Status own = CheckWriter(s, hk, ctx, key);
  if (!own.ok()) return own;
  auto p = s.pending.find(hk);
  PendingPut put = std::move(p->second);
  s.pending.erase(p);
  if (put.replicas.empty()) {
    return Status(Code::kInvalidWrite, "every replica of key " + Quote(key) + " was lost to an unmount");
  }
  auto old = s.objects.find(hk);
  if (old != s.objects.end()) {  // upsert: readers of the old value keep its bytes
    DropDiskCopiesLocked(s, *old);
    table_.Drop(s, old);
  }
  SupersedeAwayCopiesLocked(s, tk.key);

  ObjectMeta meta;
  meta.size = put.size;
  meta.tenant = put.tenant;
  meta.flags = put.flags;
  if (checksum) {
    meta.checksum = *checksum;
    meta.flags |= kHasChecksum;
  }
  if (put.flags & kSoftPin) meta.soft_pin_deadline = now + config_.default_kv_soft_pin_ttl_ms;
  // No lease at publication: nobody reads the value yet, and a lease here would let a burst of
  // writes faster than the lease TTL make a full pool refuse writes.
  meta.lease_deadline = now;
  meta.object_id = table_.NextObjectId();
  for (auto& r : put.replicas) r.set_status(ReplicaStatus::kComplete);
  meta.SetReplicas(put.replicas);
  ObjectEntry& e = table_.Insert(s, hk, std::move(meta));
  if (config_.enable_offload) QueueEagerOffloadLocked(e);
  return Status::OK();
}

Status MasterService::PutRevoke(const CallContext& ctx, const std::string& key) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  Shard& s = table_.ShardFor(hk);
  std::lock_guard lock(s.mu);
  Status own = CheckWriter(s, hk, ctx, key);
  if (!own.ok()) return own;
  auto p = s.pending.find(hk);
  table_.FreeReplicas(p->second.tenant, p->second.size, p->second.replicas);
  s.pending.erase(p);
  return Status::OK();
}

Result<ObjectInfo> MasterService::GetReplicaList(const CallContext& ctx, const std::string& key, bool pin) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  Shard& s = table_.ShardFor(hk);
  const TimeMs now = clock_.NowMs();
  std::lock_guard lock(s.mu);
  auto it = s.objects.find(hk);
  if (it == s.objects.end()) {
    if (s.pending.count(hk)) return Status(Code::kReplicaNotReady, "key " + Quote(key) + " is being written");
    return Status(Code::kObjectNotFound, "key " + Quote(key));
  }
  ObjectMeta& m = it->second;
  ObjectInfo info;
  info.size = m.size;
  if (m.flags & kHasChecksum) info.checksum = m.checksum;
  info.replicas.reserve(m.n_replicas);
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const auto& r = m.replica(i);
    if (r.status() != ReplicaStatus::kComplete) continue;
    ReplicaDesc d = Describe(r, m.size);
    if (d.segment != 0) info.replicas.push_back(d);  // 0: its segment is being unmounted
  }
  m.lease_deadline = std::max(m.lease_deadline, now + config_.default_kv_lease_ttl_ms);
  if (m.flags & kSoftPin) m.soft_pin_deadline = now + config_.default_kv_soft_pin_ttl_ms;
  table_.Touch(s, *it);
  if (pin) {
    ++m.readers;
    ++s.pins[PinKey{m.object_id, ctx.client}];
    info.read_pin = m.object_id;
  }
  return info;
}

Status MasterService::ReadEnd(const CallContext& ctx, const std::string& key, uint64_t read_pin) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  Shard& s = table_.ShardFor(hk);
  std::lock_guard lock(s.mu);
  auto it = s.objects.find(hk);
  if (!table_.Unpin(s, ctx.client, read_pin, it == s.objects.end() ? nullptr : &*it)) {
    return Status(Code::kInvalidParams, "no read pin " + std::to_string(read_pin) + " on key " + Quote(key));
  }
  return Status::OK();
}

Result<bool> MasterService::ExistKey(const CallContext& ctx, const std::string& key) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  Shard& s = table_.ShardFor(hk);
  std::lock_guard lock(s.mu);
  return s.objects.find(hk) != s.objects.end();
}

Status MasterService::RemoveLocked(Shard& s, ObjectMap::iterator it, bool force, TimeMs now) {
  const ObjectMeta& m = it->second;
  if (!force && (m.lease_deadline > now || m.readers > 0)) {
    return Status(Code::kObjectHasLease, "object is leased by a reader");
  }
  DropDiskCopiesLocked(s, *it);
  SupersedeAwayCopiesLocked(s, it->first);
  table_.Drop(s, it);  // bytes still being read stay reserved until their reads end
  return Status::OK();
}

Status MasterService::Remove(const CallContext& ctx, const std::string& key, bool force) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  Shard& s = table_.ShardFor(hk);
  std::lock_guard lock(s.mu);
  auto it = s.objects.find(hk);
  if (it == s.objects.end()) {
    if (s.pending.count(hk)) return Status(Code::kReplicaNotReady, "key " + Quote(key) + " is being written");
    SupersedeAwayCopiesLocked(s, tk.key);  // a copy on an absent client's disk does not come back either
    return Status(Code::kObjectNotFound, "key " + Quote(key));
  }
  Status st = RemoveLocked(s, it, force, clock_.NowMs());
  if (!st.ok()) return Status(st.code(), "key " + Quote(key) + ": " + st.message());
  return st;
}

uint64_t MasterService::RemoveMatching(const CallContext& ctx, bool force,
                                       const std::function<bool(std::string_view)>& match) {
  const TimeMs now = clock_.NowMs();
  const char t0 = static_cast<char>(ctx.tenant >> 8), t1 = static_cast<char>(ctx.tenant & 0xff);
  uint64_t removed = 0;
  for (size_t i = 0; i < table_.shard_count(); ++i) {
    Shard& s = table_.shard(i);
    std::lock_guard lock(s.mu);
    for (auto it = s.objects.begin(); it != s.objects.end();) {
      const std::string_view ik = it->first;  // valid until RemoveLocked frees the entry
      auto next = std::next(it);
      if (ik[0] == t0 && ik[1] == t1 && match(ik.substr(2)) && RemoveLocked(s, it, force, now).ok()) {
        ++removed;
      }
      it = next;
    }
    // Nor do copies of matching keys on absent clients' disks, unless the key stays (leased).
    for (auto& [ik, copies] : s.away) {
      if (ik[0] == t0 && ik[1] == t1 && match(std::string_view(ik).substr(2)) &&
          s.objects.find(HashedKey(ik)) == s.objects.end()) {
        for (AwayCopy& c : copies) c.superseded = true;
      }
    }
  }
  return removed;
}

Result<uint64_t> MasterService::RemoveByRegex(const CallContext& ctx, const std::string& pattern, bool force) {
  if (!tenants_.Valid(ctx.tenant)) return Status(Code::kTenantNotRegistered, "unknown tenant index");
  std::regex re;
  try {
    re = std::regex(pattern, std::regex::ECMAScript | std::regex::optimize);
  } catch (const std::regex_error& e) {
    return Status(Code::kInvalidParams, "bad regular expression '" + pattern + "': " + e.what());
  }
  uint64_t n =
      RemoveMatching(ctx, force, [&](std::string_view k) { return std::regex_search(k.begin(), k.end(), re); });
  YB_LOG_INFO("removed {} objects matching '{}'", n, pattern);
  return n;
}

Result<uint64_t> MasterService::RemoveAll(const CallContext& ctx, bool force) {
  if (!tenants_.Valid(ctx.tenant)) return Status(Code::kTenantNotRegistered, "unknown tenant index");
  uint64_t n = RemoveMatching(ctx, force, [](std::string_view) { return true; });
  YB_LOG_INFO("removed all {} objects", n);
  return n;
}

}  // namespace yb
