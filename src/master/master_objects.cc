// MasterService: Put, Get, Exist and Remove of single objects.
#include <re2/re2.h>

#include <algorithm>

#include "common/disk_key.h"
#include "common/log.h"
#include "common/segment_name.h"
#include "master/master_service.h"

namespace yb {
namespace {

// A put's list of segments to avoid names the few its writer could not reach.
constexpr size_t kMaxAvoidSegments = 256;
constexpr size_t kMaxPreferredSegments = 64;  // names a Put may prefer (each matched against every segment)
constexpr int kMaxEvictRounds = 8;             // evictions one Put may trigger before it is refused
constexpr size_t kMaxPatternLength = 4096;      // bytes of a remove_by_regex pattern
constexpr int64_t kMaxPatternMemory = 8 << 20;  // RE2's budget for the compiled pattern

}  // namespace

std::string Quote(std::string_view key) {
  return "'" + std::string(key.substr(0, 64)) + (key.size() > 64 ? "..." : "") + "'";
}

GrantedReplica MasterService::Describe(const StoredReplica& r, uint64_t size, std::optional<GrantAccess> grant,
                                       std::string_view disk_key, TimeMs spent_ms) const {
  GrantedReplica d{r.kind(), r.status(), segments_.IdOf(r.segment()), r.offset(), size};
  if (!grant) return d;
  const GrantAccess access = *grant;
  const int64_t ttl_ms = access == GrantAccess::kWrite ? WriteGrantMs(config_) : config_.grant_ttl_sec * 1000;
  const int64_t expires = WallMs() + std::max<TimeMs>(ttl_ms - spent_ms, 0);
  if (r.kind() == ReplicaKind::kLocalDisk) {
    d.grant = segments_.Mint(r.segment(), GrantAccess::kReadObject, 0, size, expires, disk_key);
  } else if (r.kind() == ReplicaKind::kMemory) {
    d.grant = segments_.Mint(r.segment(), access, r.offset(), size, expires);
  }
  return d;
}

// The key has a Put in progress, by this caller.
static Status CheckWriter(ObjectTable::Locked& s, const HashedKey& hk, const CallContext& ctx, const std::string& key) {
  const PendingPut* p = s.FindPending(hk);
  if (!p) return Status(Code::kObjectNotFound, "no Put in progress for key " + Quote(key));
  if (!(p->writer == ctx.client)) {
    return Status(Code::kIllegalClient, "key " + Quote(key) + " is being written by another client");
  }
  return Status::OK();
}

Status MasterService::CheckKey(const CallContext& ctx, const std::string& key) const {
  if (key.empty()) return Status(Code::kInvalidKey, "key is empty");
  if (key.size() > config_.max_key_length) {
    return Status(Code::kInvalidKey,
                  "key of " + std::to_string(key.size()) + " bytes exceeds " + std::to_string(config_.max_key_length));
  }
  if (!tenants_.Valid(ctx.tenant)) return Status(Code::kTenantNotRegistered, "unknown tenant index");
  return Status::OK();
}

Result<std::string> MasterService::GroupOf(const PlacementConfig& config, size_t count, size_t index) {
  if (config.group_ids.empty()) return std::string();
  if (config.group_ids.size() != count) {
    return Status(Code::kInvalidParams, std::to_string(config.group_ids.size()) + " group ids for " +
                                            std::to_string(count) + " keys: one per key");
  }
  const std::string& group = config.group_ids[index];
  if (group.size() > kMaxKeyLength) {
    return Status(Code::kInvalidParams, "a group id of " + std::to_string(group.size()) + " bytes exceeds " +
                                            std::to_string(kMaxKeyLength));
  }
  return group;
}

std::string MasterService::NoRoomMessage(uint64_t size, const SegmentManager::TakingCounts& c) {
  std::string msg = c.taking == 0 ? std::string("no segment takes new replicas now")
                                  : "no segment that takes new replicas has " + std::to_string(size) +
                                        " free bytes, after evicting what could be";
  if (c.unheard > 0) {
    msg += "; " + std::to_string(c.unheard) +
           " segment(s) wait for an owner not heard from (their objects are kept, not evicted)";
  }
  if (c.draining > 0) msg += "; " + std::to_string(c.draining) + " segment(s) drain";
  return msg;
}

Result<std::vector<Allocation>> MasterService::Reserve(TenantIndex tenant, const ClientId& writer, uint64_t size,
                                                       const PlacementConfig& config, const std::string& group,
                                                       uint8_t* want, bool may_evict, bool* as_preferred) {
  *want = 0;
  uint64_t n = tenants_.ChargeUpTo(tenant, size, config.replica_num);
  if (n == 0) {
    return Status(Code::kTenantQuotaExceeded, "tenant '" + tenants_.name(tenant) + "' quota of " +
                                                  std::to_string(tenants_.quota(tenant)) + " bytes is used up");
  }
  const std::vector<std::string>* preferred = &config.preferred_segments;
  std::vector<std::string> local;
  size_t preferred_for = SIZE_MAX;
  std::string home = group.empty() || !config.preferred_segments.empty() ? std::string()
                                                                         : group_homes_.Home(tenant, group);
  if (!home.empty()) {
    // The group's objects together: the first replica where the group's last one went, if it fits
    // there (else placed as if no group were named); the others as usual.
    local.push_back(std::move(home));
    preferred = &local;
    preferred_for = 1;
  } else if ((local_first_ || config.prefer_local) && config.preferred_segments.empty()) {
    // Mooncake's local_first: the first replica on the writer's own segment, else on another
    // process of its host; the others placed as usual (distinct hosts first).
    segments_.AppendNamesAndHostsOf(writer, local);
    preferred = &local;
    preferred_for = 1;
  }
  auto allocs = segments_.Allocate(tenant, size, n, *preferred, config.avoid_segments, preferred_for);
  if (allocs.empty()) {
    // With no segment taking new replicas (their owners not heard from, or draining), eviction
    // frees nothing of use now, nor should it later for this Put: nothing is noted.
    const SegmentManager::TakingCounts taking = segments_.CountTaking();
    if (taking.taking > 0 && may_evict) {
      // A failed allocation triggers eviction now; the writer does not have to come back. Another
      // writer may take the space freed before this one does, and what is freed may lie in pieces
      // too small for the object: eviction goes on while it frees anything, so a Put is refused
      // only when nothing more can be evicted (or after kMaxEvictRounds).
      evictor_.NoteAllocationFailure(size * n);
      uint64_t want = std::max<uint64_t>(
          size * n, static_cast<uint64_t>(config_.eviction_ratio * static_cast<double>(taking.capacity)));
      for (int round = 0; allocs.empty() && round < kMaxEvictRounds; ++round) {
        if (evictor_.EvictBytes(want) == 0) break;
        allocs = segments_.Allocate(tenant, size, n, *preferred, config.avoid_segments, preferred_for);
      }
    }
    if (allocs.empty()) {
      tenants_.Release(tenant, n * size);
      return Status(Code::kNoAvailableHandle, NoRoomMessage(size, taking));
    }
  }
  if (allocs.size() < n) tenants_.Release(tenant, (n - allocs.size()) * size);
  if (as_preferred) {
    const std::string first = segments_.NameOf(allocs.front().segment);
    *as_preferred = preferred->empty() || std::any_of(preferred->begin(), preferred->end(), [&](const std::string& p) {
                      return SegmentNameMatches(first, p);
                    });
  }
  if (!group.empty()) group_homes_.Set(tenant, group, segments_.NameOf(allocs[0].segment));
  if (allocs.size() < config.replica_num) {
    under_replicated_puts_.fetch_add(1, std::memory_order_relaxed);
    missing_replicas_.fetch_add(config.replica_num - allocs.size(), std::memory_order_relaxed);
    // Fewer than asked, though more processes hold memory (one not heard from, or full now): the
    // missing ones are copied once there is room (re-replication), so that a Put made while a
    // holder was paused does not stay one failure from loss. Never more than the quota allowed.
    const size_t holders = segments_.CountHolders(tenant);
    if (holders > allocs.size()) *want = static_cast<uint8_t>(std::min<size_t>({n, holders, 255}));
  }
  return allocs;
}

Status MasterService::FreeForWrite(ObjectTable::Locked& s, const HashedKey& hk, const std::string& key, bool upsert,
                                   TimeMs now) {
  auto obj = s.Find(hk);
  if (obj && !upsert) {
    return Status(Code::kObjectAlreadyExists,
                  "key " + Quote(key) + " exists with " + std::to_string(obj->size) + " bytes");
  }
  const PendingPut* p = s.FindPending(hk);
  if (!p) return Status::OK();
  // A writer this master declared dead, or that left, finishes nothing: its Put is taken over at
  // once (past a client_ttl after a restart, when live writers have registered again).
  const bool writer_gone =
      !clients_.Known(p->writer) && now - started_ms_ >= static_cast<TimeMs>(config_.client_ttl_sec) * 1000;
  if (!writer_gone && now - p->started < config_.put_start_discard_timeout_sec * 1000) {
    return Status(Code::kObjectAlreadyExists, "key " + Quote(key) + " is being written");
  }
  // Take over a Put unfinished for put_start_discard_timeout (or whose writer is gone): its writer
  // may still be copying (a paused process the master gave up on), so its space is released only
  // at put_start_release_timeout.
  YB_LOG_WARN("taking over key {} from client {}{}", Quote(key), p->writer.ToString(),
              writer_gone ? " (declared dead, or left)" : "");
  PendingPut old = s.TakePending(hk);
  MutexLock dl(discarded_mu_);
  discarded_.push_back(Discarded{old.started + config_.put_start_release_timeout_sec * 1000, old.tenant, old.size,
                                 std::move(old.replicas), old.started});
  return Status::OK();
}

Result<std::vector<GrantedReplica>> MasterService::StartWrite(const CallContext& ctx, const std::string& key,
                                                              uint64_t size, const PlacementConfig& config,
                                                              WriteMode mode, const std::string& group) {
  const bool upsert = mode == WriteMode::kUpsert;
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  if (size == 0) return Status(Code::kInvalidParams, "object size is 0");
  if (config.replica_num == 0 || config.replica_num > 64) {
    return Status(Code::kInvalidParams, "replica_num must be 1-64, got " + std::to_string(config.replica_num));
  }
  if (config.avoid_segments.size() > kMaxAvoidSegments) {
    return Status(Code::kInvalidParams, "at most " + std::to_string(kMaxAvoidSegments) + " segments to avoid, got " +
                                            std::to_string(config.avoid_segments.size()));
  }
  if (config.preferred_segments.size() > kMaxPreferredSegments) {
    return Status(Code::kInvalidParams, "at most " + std::to_string(kMaxPreferredSegments) +
                                            " preferred segments, got " +
                                            std::to_string(config.preferred_segments.size()));
  }
  for (const std::string& name : config.preferred_segments) {
    if (name.size() > kMaxHostNameLength) {
      return Status(Code::kInvalidParams, "a preferred segment name of " + std::to_string(name.size()) +
                                              " bytes exceeds " + std::to_string(kMaxHostNameLength));
    }
  }
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  if (segments_.segment_count() == 0) {
    NoteRefused(hk, MissReason::kRefusedNoSpace);
    return Status(Code::kNoAvailableHandle, "no segment is mounted");
  }
  uint64_t largest = segments_.largest_segment();
  if (size > largest) {
    NoteRefused(hk, MissReason::kRefusedNoSpace);
    return Status(Code::kInvalidParams, "object of " + std::to_string(size) +
                                            " bytes is larger than the largest segment (" + std::to_string(largest) +
                                            " bytes)");
  }
  const TimeMs now = clock_.NowMs();
  auto check_free = [&](ObjectTable::Locked& s) { return FreeForWrite(s, hk, key, upsert, now); };
  {
    auto s = table_.Lock(hk);
    const PendingPut* mine = s.FindPending(hk);
    if (mine && mine->writer == ctx.client && mine->size == size && mine->upsert == upsert) {
      // The same writer asking again (its first answer was lost with a master that went away): the
      // reservation it has, with grants that end when its first ones do (its ranges are held after
      // a revoke for as long as those may be valid).
      std::vector<GrantedReplica> descs;
      for (const auto& r : mine->replicas) {
        descs.push_back(Describe(r, size, GrantAccess::kWrite, {}, now - mine->started));
      }
      return descs;
    }
    YB_RETURN_IF_ERROR(check_free(s));
  }
  uint8_t want = 0;
  // A client's reservation is made ahead of any Put: it never evicts a stored object, and a refused
  // one is no refused Put.
  const bool reservation = IsReservation(key);
  bool as_preferred = true;
  auto allocs = Reserve(ctx.tenant, ctx.client, size, config, group, &want, /*may_evict=*/!reservation,
                        reservation ? &as_preferred : nullptr);
  if (!allocs.ok()) {
    if (reservation) return allocs.status();
    NoteRefused(hk, allocs.status().code() == Code::kTenantQuotaExceeded ? MissReason::kRefusedQuota
                                                                          : MissReason::kRefusedNoSpace);
    return allocs.status();
  }
  std::vector<StoredReplica> replicas;
  std::vector<GrantedReplica> descs;
  for (const auto& a : *allocs) {
    replicas.emplace_back(a, ReplicaKind::kMemory, ReplicaStatus::kProcessing);
    descs.push_back(Describe(replicas.back(), size, GrantAccess::kWrite));
  }
  // A reservation serves later Puts: one that could not go where their preference says (the
  // preferred segment, or the writer's own segment or host under prefer_local / local_first, full or
  // not taking new replicas now) would keep them from it once it can.
  if (!as_preferred) {
    table_.FreeReplicas(ctx.tenant, size, replicas, 0, 0);  // their grants never left this call
    return Status(Code::kNoAvailableHandle, "no preferred segment takes a reservation now");
  }

  auto s = table_.Lock(hk);
  Status again = check_free(s);  // another writer may have come in while we allocated
  if (!again.ok()) {
    table_.FreeReplicas(ctx.tenant, size, replicas, 0, 0);  // their grants never left this call
    return again;
  }
  uint8_t flags = (config.with_hard_pin ? kHardPin : 0) | (config.with_soft_pin ? kSoftPin : 0);
  s.AddPending(hk, PendingPut{ctx.client, now, size, ctx.tenant, flags, upsert, std::move(replicas), want});
  return descs;
}

Status MasterService::PutEndOne(const CallContext& ctx, const std::string& key, std::optional<uint64_t> checksum) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  auto s = table_.Lock(tk.hashed);
  Status own = CheckWriter(s, tk.hashed, ctx, key);
  if (!own.ok()) return own;
  return PublishLocked(s, tk, key, checksum, clock_.NowMs());
}

Status MasterService::CommitOne(const CallContext& ctx, const std::string& key, const std::string& reservation,
                                std::optional<uint64_t> checksum) {
  if (reservation.empty() || reservation == key) return PutEndOne(ctx, key, checksum);
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  YB_RETURN_IF_ERROR(CheckKey(ctx, reservation));
  const TableKey tk(ctx.tenant, key);
  const TableKey tr(ctx.tenant, reservation);
  const TimeMs now = clock_.NowMs();
  // Under the locks of both shards (taken in shard order: no other path holds two), so that no
  // unmount, takeover or reclaim sees the Put between its two names.
  auto commit = [&](ObjectTable::Locked& ks, ObjectTable::Locked& rs) -> Status {
    YB_RETURN_IF_ERROR(CheckWriter(rs, tr.hashed, ctx, reservation));
    if (rs.FindPending(tr.hashed)->upsert) {
      return Status(Code::kInvalidParams, "reservation " + Quote(reservation) + " was started as an upsert");
    }
    if (rs.FindPending(tr.hashed)->replicas.empty()) {
      (void)rs.TakePending(tr.hashed, /*to_publish=*/false, MissReason::kStored);
      return Status(Code::kInvalidWrite,
                    "every replica of reservation " + Quote(reservation) + " was lost to an unmount");
    }
    // Placed ahead of the Put: a holder that stopped taking new replicas since (not heard from,
    // draining) gets none through it. The reservation goes; the caller starts the key as usual.
    for (const auto& r : rs.FindPending(tr.hashed)->replicas) {
      if (!segments_.TakesNewReplicas(r.segment(), now)) {
        rs.RevokePending(tr.hashed);
        return Status(Code::kInvalidWrite, "reservation " + Quote(reservation) +
                                               " is on a segment that takes no new replicas now (its owner not "
                                               "heard from, or draining)");
      }
    }
    YB_RETURN_IF_ERROR(FreeForWrite(ks, tk.hashed, key, /*upsert=*/false, now));
    // The reservation's name is no miss anyone asks about: its end is recorded, not remembered.
    PendingPut put = rs.TakePending(tr.hashed, /*to_publish=*/false, MissReason::kStored);
    ks.AddPending(tk.hashed, std::move(put), /*record=*/false);  // published at once: its record says it
    return PublishLocked(ks, tk, key, checksum, now);
  };
  const size_t a = table_.ShardIndex(tk.hashed);
  const size_t b = table_.ShardIndex(tr.hashed);
  if (a == b) {
    auto s = table_.LockShard(a);
    return commit(s, s);
  }
  if (a < b) {
    auto ks = table_.LockShard(a);
    auto rs = table_.LockShard(b);
    return commit(ks, rs);
  }
  auto rs = table_.LockShard(b);
  auto ks = table_.LockShard(a);
  return commit(ks, rs);
}

Status MasterService::PublishLocked(ObjectTable::Locked& s, const TableKey& tk, const std::string& key,
                                    std::optional<uint64_t> checksum, TimeMs now) {
  const HashedKey& hk = tk.hashed;
  if (s.FindPending(hk)->replicas.empty()) {
    (void)s.TakePending(hk, false, MissReason::kNodeLost);
    return Status(Code::kInvalidWrite, "every replica of key " + Quote(key) + " was lost to an unmount");
  }
  PendingPut put = s.TakePending(hk, /*to_publish=*/true);
  if (auto old = s.Find(hk)) {  // upsert: readers of the old value keep its bytes
    DropDiskCopiesLocked(s, old);
    s.Remove(old, MissReason::kStored);  // replaced below, under this lock
  }
  s.SupersedeAwayCopies(tk.key);

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
  meta.flags |= kUnread;
  meta.object_id = table_.NextObjectId();
  for (auto& r : put.replicas) r.set_status(ReplicaStatus::kComplete);
  const size_t have = put.replicas.size();
  meta.want_replicas = static_cast<uint32_t>(std::min<size_t>(std::max<size_t>(have, put.want), 255));
  const bool short_of_replicas = meta.want_replicas > have;
  meta.SetReplicas(put.replicas);
  auto e = s.Publish(hk, std::move(meta), /*ends_put=*/true);
  if (short_of_replicas) NoteAtRisk(std::string(e.key()), have);
  if (config_.enable_offload) QueueEagerOffloadLocked(s, e);
  return Status::OK();
}

Status MasterService::PutRevokeOne(const CallContext& ctx, const std::string& key) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  auto s = table_.Lock(hk);
  Status own = CheckWriter(s, hk, ctx, key);
  if (!own.ok()) return own;
  s.RevokePending(hk);
  return Status::OK();
}

Result<ObjectInfo> MasterService::GetReplicaListOne(const CallContext& ctx, const std::string& key, bool pin) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  const TimeMs now = clock_.NowMs();
  auto s = table_.Lock(hk);
  auto obj = s.Find(hk);
  if (!obj) {
    const MissInfo why = s.WhyAbsent(hk);
    get_misses_[static_cast<size_t>(why.reason)].fetch_add(1, std::memory_order_relaxed);
    if (why.reason == MissReason::kPutInProgress) {
      return Status(Code::kReplicaNotReady, "key " + Quote(key) + " is being written");
    }
    return Status(Code::kObjectNotFound, "key " + Quote(key) + ": " + DescribeMiss(why));
  }
  const ObjectMeta& m = obj.meta();
  ObjectInfo info;
  info.size = m.size;
  if (m.flags & kHasChecksum) info.checksum = m.checksum;
  info.replicas.reserve(m.n_replicas);
  std::string disk_key;  // what a LOCAL_DISK replica's grant names
  // Replicas on segments clients report unreachable go to the reader only when no other does.
  std::vector<GrantedReplica> unreachable;
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const auto& r = m.replica(i);
    if (r.status() != ReplicaStatus::kComplete || !segments_.Serving(r.segment())) continue;
    if (r.kind() == ReplicaKind::kLocalDisk && disk_key.empty()) disk_key = DiskKey(tenants_.name(ctx.tenant), key);
    (segments_.Shunned(r.segment()) ? unreachable : info.replicas)
        .push_back(Describe(r, m.size, pin ? std::optional(GrantAccess::kRead) : std::nullopt, disk_key));
  }
  if (info.replicas.empty()) info.replicas = std::move(unreachable);
  if (info.replicas.empty()) {
    // Its segments are being unmounted, or after our restart their owners have not re-mounted them.
    return Status(Code::kReplicaNotReady, "key " + Quote(key) + " has no replica to read yet");
  }
  // Only a read that moves bytes (it pins them) counts as use: a lookup of the size or the
  // replicas (Query, get_size, get_replica_desc, a repeated Put's size check) leaves the lease, the
  // recency and the soft pin as they were, so a caller polling sizes keeps nothing from eviction.
  if (pin) {
    s.ExtendLease(obj, now + config_.default_kv_lease_ttl_ms);
    if (m.flags & kSoftPin) s.SetSoftPinDeadline(obj, now + config_.default_kv_soft_pin_ttl_ms);
    s.Touch(obj);
    info.read_pin = s.AddReadPin(obj, ctx.client);
    get_hits_.fetch_add(1, std::memory_order_relaxed);
  }
  return info;
}

Status MasterService::ReadEndOne(const CallContext& ctx, const std::string& key, uint64_t read_pin) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  auto s = table_.Lock(hk);
  if (!s.Unpin(ctx.client, read_pin, s.Find(hk))) {
    return Status(Code::kInvalidParams, "no read pin " + std::to_string(read_pin) + " on key " + Quote(key));
  }
  return Status::OK();
}

Result<bool> MasterService::ExistKeyOne(const CallContext& ctx, const std::string& key) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  auto s = table_.Lock(hk);
  if (s.Find(hk)) {
    exist_hits_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  exist_misses_[static_cast<size_t>(s.WhyAbsent(hk).reason)].fetch_add(1, std::memory_order_relaxed);
  return false;
}

void MasterService::NoteRefused(const HashedKey& hk, MissReason why) {
  puts_refused_[static_cast<size_t>(why)].fetch_add(1, std::memory_order_relaxed);
  table_.Lock(hk).NoteGone(hk, why);
}

Status MasterService::RemoveLocked(ObjectTable::Locked& s, ObjectTable::Ref obj, bool force, TimeMs now) {
  const ObjectMeta& m = obj.meta();
  // A lease, or a client's read in progress, keeps it; the master's own copies (a repair, an
  // offload) do not: their bytes stay reserved until they end, as a read's do after a forced Remove.
  if (!force && (m.lease_deadline > now || (m.readers > 0 && s.ClientReadPins(obj) > 0))) {
    return Status(Code::kObjectHasLease, "object is leased by a reader");
  }
  DropDiskCopiesLocked(s, obj);
  s.SupersedeAwayCopies(obj.key());
  s.Remove(obj, MissReason::kRemoved);  // bytes still being read stay reserved until their reads end
  return Status::OK();
}

Status MasterService::RemoveOne(const CallContext& ctx, const std::string& key, bool force) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, key));
  const TableKey tk(ctx.tenant, key);
  const HashedKey& hk = tk.hashed;
  auto s = table_.Lock(hk);
  auto obj = s.Find(hk);
  if (!obj) {
    if (s.FindPending(hk)) return Status(Code::kReplicaNotReady, "key " + Quote(key) + " is being written");
    s.SupersedeAwayCopies(tk.key);  // a copy on an absent client's disk does not come back either
    return Status(Code::kObjectNotFound, "key " + Quote(key));
  }
  Status st = RemoveLocked(s, obj, force, clock_.NowMs());
  if (!st.ok()) return Status(st.code(), "key " + Quote(key) + ": " + st.message());
  return st;
}

uint64_t MasterService::RemoveMatching(const CallContext& ctx, bool force,
                                       const std::function<bool(std::string_view)>& match) {
  const TimeMs now = clock_.NowMs();
  const char t0 = static_cast<char>(ctx.tenant >> 8), t1 = static_cast<char>(ctx.tenant & 0xff);
  auto matches = [&](std::string_view ik) { return ik[0] == t0 && ik[1] == t1 && match(ik.substr(2)); };
  uint64_t removed = 0;
  for (size_t i = 0; i < table_.shard_count(); ++i) {
    auto s = table_.LockShard(i);
    s.ForEach([&](ObjectTable::Ref obj) {
      if (matches(obj.key()) && RemoveLocked(s, obj, force, now).ok()) ++removed;
    });
    // Nor do copies of matching keys on absent clients' disks, unless the key stays (leased).
    s.SupersedeAbsentAwayCopiesIf(matches);
  }
  return removed;
}

Result<uint64_t> MasterService::RemoveWhere(const CallContext& ctx, const std::optional<std::string>& pattern,
                                            bool force) {
  if (!tenants_.Valid(ctx.tenant)) return Status(Code::kTenantNotRegistered, "unknown tenant index");
  if (!pattern) {
    uint64_t n = RemoveMatching(ctx, force, [](std::string_view) { return true; });
    YB_LOG_INFO("removed all {} objects", n);
    return n;
  }
  // RE2: time linear in the key, no backtracking and no recursion, so no pattern a caller sends
  // can stall a serving thread or overflow its stack (std::regex did both: `(.*)*c` ran for
  // minutes, a long pattern recursed per character). Its syntax is the ECMAScript subset without
  // backreferences and lookaround; a match anywhere in the key counts, as regex_search did.
  if (pattern->size() > kMaxPatternLength) {
    return Status(Code::kInvalidParams, "regular expression of " + std::to_string(pattern->size()) + " bytes exceeds " +
                                            std::to_string(kMaxPatternLength));
  }
  RE2::Options options;
  options.set_log_errors(false);
  options.set_max_mem(kMaxPatternMemory);
  const RE2 re(*pattern, options);
  if (!re.ok()) {
    return Status(Code::kInvalidParams, "bad regular expression " + Quote(*pattern) + ": " + re.error());
  }
  uint64_t n = RemoveMatching(
      ctx, force, [&](std::string_view k) { return RE2::PartialMatch(re2::StringPiece(k.data(), k.size()), re); });
  YB_LOG_INFO("removed {} objects matching '{}'", n, *pattern);
  return n;
}

}  // namespace yb

namespace yb {

// Mooncake's batch_replica_clear. Mooncake lets only the object's writer clear it; here any client
// of its tenant may, as any may Remove it (docs/compat.md).
Result<MasterApi::Keys> MasterService::BatchReplicaClear(const CallContext& ctx, const Keys& keys,
                                                         const std::string& segment_name) {
  if (!tenants_.Valid(ctx.tenant)) return Status(Code::kTenantNotRegistered, "unknown tenant index");
  const TimeMs now = clock_.NowMs();
  Keys cleared;
  for (const auto& key : keys) {
    if (!CheckKey(ctx, key).ok()) continue;
    const TableKey tk(ctx.tenant, key);
    auto s = table_.Lock(tk.hashed);
    auto obj = s.Find(tk.hashed);
    if (!obj) continue;
    const ObjectMeta& m = obj.meta();
    // In use: a reader's lease or read, a write within the lease TTL, a copy being made of it.
    const bool written_lately = (m.flags & kUnread) && m.lease_deadline + config_.default_kv_lease_ttl_ms > now;
    if (m.lease_deadline > now || written_lately || m.readers > 0) continue;
    bool copying = false;
    for (size_t i = 0; i < m.n_replicas; ++i) copying = copying || m.replica(i).status() != ReplicaStatus::kComplete;
    if (copying) continue;
    if (segment_name.empty()) {
      if (RemoveLocked(s, obj, false, now).ok()) cleared.push_back(key);
      continue;
    }
    auto on_segment = [&](const StoredReplica& r) {
      return r.kind() == ReplicaKind::kMemory && segments_.NameOf(r.segment()) == segment_name;
    };
    size_t there = 0;
    for (size_t i = 0; i < m.n_replicas; ++i) there += on_segment(m.replica(i));
    if (there == 0) continue;
    if (there == m.n_replicas) {
      if (RemoveLocked(s, obj, false, now).ok()) cleared.push_back(key);  // nothing would be left
      continue;
    }
    s.DropReplicasIf(obj, on_segment);
    cleared.push_back(key);
  }
  return cleared;
}

}  // namespace yb
