// MasterService: durability. Building the master from a recovered image, writing the image out for
// a snapshot, and dropping restored segments whose owners did not come back.
#include <algorithm>
#include <map>

#include "common/grant.h"
#include "common/log.h"
#include "master/master_service.h"

namespace yb {
namespace {

// Where a recovered MEMORY replica sits, to give it the allocator handle its segment's restore
// hands out.
struct RangeOwner {
  std::string_view key;  // the image's, which outlives the restore
  bool pending = false;
  size_t replica = 0;  // its index in the record
};

ClientId Owner(const pb::LogSegment& s) { return ClientId{s.owner_hi(), s.owner_lo()}; }

}  // namespace

Status MasterService::Load(const MasterImage& image) {
  const TimeMs now = clock_.NowMs();
  if (image.identity_key.size() == kGrantKeySize) identity_key_ = image.identity_key;
  // Why keys went, as the records say: on this clock, as long ago as they went by the wall's.
  const int64_t wall_now = WallMs();
  image.gone.ForEach([&](const GoneKeys::Entry& e) {
    const int64_t ago = std::max<int64_t>(0, wall_now - static_cast<int64_t>(e.when_s) * 1000);
    table_.RestoreGone(e.hash, e.reason, std::max<int64_t>(0, now - ago));
  });
  for (const auto& [index, t] : image.tenants) {
    YB_RETURN_IF_ERROR(tenants_.Restore(static_cast<TenantIndex>(index), t.name(),
                                        t.has_quota() ? t.quota() : TenantRegistry::kNoQuota));
  }
  // Every MEMORY range of every segment, so that each segment's allocator comes back with them.
  std::map<SegmentId, std::vector<std::pair<uint64_t, uint64_t>>> ranges;
  std::map<SegmentId, std::vector<RangeOwner>> owners;
  auto note = [&](std::string_view key, bool pending, uint64_t size,
                  const google::protobuf::RepeatedPtrField<pb::LogReplica>& replicas) {
    for (int i = 0; i < replicas.size(); ++i) {
      const pb::LogReplica& r = replicas[i];
      if (r.kind() != static_cast<uint32_t>(ReplicaKind::kMemory)) continue;
      ranges[r.segment()].emplace_back(r.offset(), size);
      owners[r.segment()].push_back({key, pending, static_cast<size_t>(i)});
    }
  };
  for (const auto& [k, o] : image.objects) note(k, false, o.size(), o.replicas());
  for (const auto& [k, p] : image.pending) note(k, true, p.size(), p.replicas());
  // Freed ranges the old master held while its grants for them could be valid: held as long here,
  // after every replica's range (a hold that a later object overlaps lapsed before it was reused).
  const int64_t wall = WallMs();
  std::map<SegmentId, std::vector<const pb::LogHold*>> holds;
  for (const auto& held_at : image.holds) {
    const pb::LogHold& h = held_at.second;  // (a lambda below cannot capture a structured binding in clang)
    if (h.until_wall_ms() <= wall || h.size() == 0) continue;
    // One that would not fit its segment (a damaged record) is dropped, never the segment with it.
    auto seg = image.segments.find(h.segment());
    if (seg == image.segments.end() || h.offset() % config_.allocation_alignment != 0 ||
        h.size() > seg->second.size() || h.offset() > seg->second.size() - h.size()) {
      continue;
    }
    auto& taken = ranges[h.segment()];
    const bool overlaps = std::any_of(taken.begin(), taken.end(), [&](const auto& r) {
      return r.first < h.offset() + h.size() && h.offset() < r.first + r.second;
    });
    if (overlaps) continue;
    taken.emplace_back(h.offset(), h.size());
    holds[h.segment()].push_back(&h);
  }

  // Restored segments: the reference of each, and the handle of each of its ranges.
  std::map<SegmentId, SegmentRef> refs;
  std::map<std::pair<std::string_view, bool>, std::map<size_t, uint32_t>> nodes;  // (key, pending) -> replica -> node
  for (const auto& [id, s] : image.segments) {
    SegmentMount d{
        {s.id(), s.name(), s.base(), s.size(), s.endpoint(), s.zone(), s.host_id()}, s.incarnation(), s.grant_key()};
    auto restored = segments_.Restore(Owner(s), d, ranges[id],
                                      s.has_only_tenant() ? std::optional(static_cast<TenantIndex>(s.only_tenant()))
                                                          : std::nullopt);
    if (!restored.ok()) {
      YB_LOG_ERROR("restart: segment {} '{}' not restored, its replicas are dropped: {}", id, s.name(),
                   restored.status().ToString());
      continue;
    }
    refs[id] = restored->ref;
    const auto& own = owners[id];
    for (size_t i = 0; i < own.size(); ++i) nodes[{own[i].key, own[i].pending}][own[i].replica] = restored->nodes[i];
    const auto& held = holds[id];
    for (size_t i = 0; i < held.size(); ++i) {
      segments_.HoldRestored(restored->ref, restored->nodes[own.size() + i], held[i]->offset(),
                             static_cast<TenantIndex>(held[i]->tenant()), now + (held[i]->until_wall_ms() - wall));
    }
  }
  // The replicas of a record whose segments came back.
  auto replicas_of = [&](std::string_view key, bool pending,
                         const google::protobuf::RepeatedPtrField<pb::LogReplica>& in, ReplicaStatus status,
                         uint64_t* memory) {
    std::vector<StoredReplica> out;
    *memory = 0;
    for (int i = 0; i < in.size(); ++i) {
      const pb::LogReplica& r = in[i];
      auto ref = refs.find(r.segment());
      if (ref == refs.end()) continue;
      const auto kind = static_cast<ReplicaKind>(r.kind());
      uint32_t node = OffsetAllocator::kNoNode;
      if (kind == ReplicaKind::kMemory) {
        node = nodes[{key, pending}][static_cast<size_t>(i)];
        ++*memory;
      }
      out.emplace_back(Allocation{kind == ReplicaKind::kMemory ? r.offset() : 0, ref->second, node}, kind, status);
    }
    return out;
  };
  uint64_t objects = 0, lost = 0;
  for (const auto& [k, o] : image.objects) {
    const auto tenant = static_cast<TenantIndex>(o.tenant());
    uint64_t memory = 0;
    auto replicas = replicas_of(k, false, o.replicas(), ReplicaStatus::kComplete, &memory);
    if (replicas.empty() || !tenants_.Valid(tenant)) {
      table_.RestoreGone(HashKey(k), MissReason::kNodeLost, now);
      ++lost;
      continue;
    }
    ObjectMeta meta;
    meta.size = o.size();
    meta.checksum = o.checksum();
    meta.flags = static_cast<uint8_t>(o.flags());
    meta.object_id = o.object_id();
    meta.tenant = tenant;
    meta.want_replicas = std::min<uint32_t>(o.want_replicas() ? o.want_replicas() : memory, 255);
    meta.lease_deadline = now;  // leases and pins were the old master's: none now
    if (meta.flags & kSoftPin) meta.soft_pin_deadline = now + config_.default_kv_soft_pin_ttl_ms;
    meta.SetReplicas(replicas);
    tenants_.Charge(tenant, meta.size * memory);
    const bool short_of_replicas = memory > 0 && memory < meta.want_replicas;
    const HashedKey hk(k);
    table_.Lock(hk).RestoreObject(hk, std::move(meta));
    if (short_of_replicas) NoteAtRisk(std::string(k), memory);  // the queue of copies is rebuilt, not recorded
    ++objects;
  }
  for (const auto& [k, p] : image.pending) {
    const auto tenant = static_cast<TenantIndex>(p.tenant());
    if (!tenants_.Valid(tenant)) continue;
    uint64_t memory = 0;
    PendingPut put{ClientId{p.writer_hi(), p.writer_lo()},
                   now,
                   p.size(),
                   tenant,
                   static_cast<uint8_t>(p.flags()),
                   p.upsert(),
                   replicas_of(k, true, p.replicas(), ReplicaStatus::kProcessing, &memory)};
    tenants_.Charge(tenant, put.size * memory);
    const HashedKey hk(k);
    table_.Lock(hk).RestorePending(hk, std::move(put));
  }
  for (const auto& [k, a] : image.away) {
    std::vector<AwayCopy> copies;
    for (const auto& c : a.copies()) {
      copies.push_back(AwayCopy{c.has_checksum() ? std::optional(c.checksum()) : std::nullopt, c.superseded()});
    }
    const HashedKey hk(k);
    table_.Lock(hk).RestoreAway(hk, std::move(copies));
  }
  for (const auto& [id, t] : image.tasks) tasks_.Restore(t, now + config_.task_timeout_sec * 1000);
  table_.RaiseNextObjectId(image.next_object_id);
  // As long as a live master gives a silent client (declared dead after client_ttl, then suspended
  // for the grace): an owner that was paused or cut off while the leader changed, or that finds the
  // new leader late, keeps its replicas when it is back within that time.
  recovered_deadline_ = now + config_.client_ttl_sec * 1000 + GraceMs();
  YB_LOG_INFO("restart: {} objects, {} unfinished Puts on {} segments restored ({} objects without a segment left); "
              "{} copy and move tasks, {} of them unfinished (carried on)",
              objects, image.pending.size(), refs.size(), lost, image.tasks.size(), tasks_.unfinished());
  return Status::OK();
}

void MasterService::SetSink(MetaSink* sink) {
  if (sink) {  // the key callers' tokens are signed with: a restarted master accepts them
    pb::LogRecord rec;
    rec.set_identity_key(identity_key_);
    sink->Append(rec);
  }
  tenants_.SetSink(sink);
  segments_.SetSink(sink);
  table_.SetSink(sink);
  tasks_.SetSink(sink);
}

void MasterService::WriteImage(const std::function<void(const pb::LogRecord&)>& emit) {
  pb::LogRecord rec;
  rec.set_identity_key(identity_key_);
  emit(rec);
  for (size_t t = 0; t < tenants_.count(); ++t) {
    pb::LogTenant* lt = rec.mutable_tenant();
    lt->set_index(static_cast<uint32_t>(t));
    lt->set_name(tenants_.name(static_cast<TenantIndex>(t)));
    const uint64_t q = tenants_.quota(static_cast<TenantIndex>(t));
    lt->set_has_quota(q != TenantRegistry::kNoQuota);
    lt->set_quota(q == TenantRegistry::kNoQuota ? 0 : q);
    emit(rec);
  }
  for (auto& s : segments_.Records()) {
    *rec.mutable_segment() = std::move(s);
    emit(rec);
  }
  for (auto& h : segments_.HeldRecords()) {
    *rec.mutable_hold() = std::move(h);
    emit(rec);
  }
  // The copies being made: their new replicas' ranges, fenced after a restart (FenceRecord).
  std::vector<pb::LogHold> copies;
  repairs_.ForEach([&](const RepairQueue::InFlight& f) {
    if (auto fence = segments_.FenceRecord(f.target, f.deadline + kCopyGrantSlackMs + kGrantClockMarginMs)) {
      copies.push_back(std::move(*fence));
    }
  });
  for (auto& h : copies) {
    *rec.mutable_hold() = std::move(h);
    emit(rec);
  }
  for (size_t i = 0; i < table_.shard_count(); ++i) table_.LockShard(i).Dump(emit);
  tasks_.Dump(emit);
}

std::vector<MasterService::AwaitingSegment> MasterService::AwaitingSegments() const {
  const TimeMs now = clock_.NowMs();
  const TimeMs restart_deadline = recovered_deadline_.load(std::memory_order_relaxed);
  std::vector<AwaitingSegment> out;
  for (auto& u : segments_.Unconfirmed()) {
    const TimeMs deadline = u.until != 0 ? u.until : restart_deadline;  // as ExpireRecoveredOnce judges
    out.push_back({std::move(u.desc), u.owner, deadline == 0 ? -1 : std::max<int64_t>(0, deadline - now)});
  }
  return out;
}

uint64_t MasterService::ExpireRecoveredOnce() {
  const TimeMs now = clock_.NowMs();
  const TimeMs restart_deadline = recovered_deadline_.load(std::memory_order_relaxed);
  uint64_t dropped = 0;
  for (const auto& u : segments_.Unconfirmed()) {
    // Restored at start (until 0): the restart's deadline; suspended: its own.
    const TimeMs deadline = u.until != 0 ? u.until : restart_deadline;
    if (deadline == 0 || now < deadline) continue;
    if (u.until != 0) {
      YB_LOG_WARN("segment {} of client {} was not re-mounted within the {} s grace after its owner was declared "
                  "dead: its replicas are dropped",
                  u.id, u.owner.ToString(), GraceMs() / 1000);
    } else {
      YB_LOG_WARN("segment {} of client {} was not re-mounted within {} s of the restart (client_ttl and the grace): "
                  "its replicas are dropped",
                  u.id, u.owner.ToString(), config_.client_ttl_sec + GraceMs() / 1000);
    }
    (void)UnmountAndDrop(u.owner, u.id);
    ++dropped;
  }
  if (restart_deadline != 0 && now >= restart_deadline) recovered_deadline_ = 0;  // every restored one judged
  return dropped;
}

}  // namespace yb
