// Re-replication (docs/design.md, "Replicas that heal"): an object that loses a MEMORY replica with
// a segment (its owner died or unmounted) is queued, fewest replicas left first; each round copies
// as many as --repair_bandwidth allows. A copy is a task for the owner of a newly reserved range,
// who reads a surviving replica through the transfer engine into its own segment (the master
// carries no bytes). Until the client reports it the new replica is PROCESSING (no reader is sent
// to it, the log leaves it out) and the object is read-pinned for the client, so neither eviction
// nor a Remove frees the bytes being read or written. The queue is rebuilt state: after a restart
// the objects with fewer COMPLETE replicas than their want_replicas are queued again.
#include <algorithm>

#include "common/log.h"
#include "master/master_service.h"

namespace yb {

void MasterService::NoteAtRisk(std::string table_key, size_t have) { repairs_.Note(std::move(table_key), have); }

MasterService::RepairStart MasterService::StartRepair(const std::string& table_key, TimeMs now) {
  const HashedKey hk(table_key);
  auto s = table_.Lock(hk);
  auto obj = s.Find(hk);
  if (!obj) return RepairStart::kNotNeeded;  // removed meanwhile
  const ObjectMeta& m = obj.meta();
  // Replicas on a draining segment are read from but do not count: they are about to go.
  size_t total = 0, kept = 0;
  const StoredReplica* source = nullptr;
  const StoredReplica* draining_source = nullptr;
  std::vector<SegmentId> avoid;  // every segment holding a replica, and with it its owner's others
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const StoredReplica& r = m.replica(i);
    if (SegmentId id = segments_.IdOf(r.segment()); id != 0) avoid.push_back(id);
    if (r.kind() != ReplicaKind::kMemory || r.status() != ReplicaStatus::kComplete) continue;
    ++total;
    const bool draining = segments_.Draining(r.segment());
    kept += !draining;
    if (!segments_.Serving(r.segment())) continue;
    const StoredReplica*& pick = draining ? draining_source : source;
    if (!pick) pick = &r;
  }
  if (total == 0 || kept >= std::max<size_t>(m.want_replicas, 1)) return RepairStart::kNotNeeded;
  if (!source) source = draining_source;
  if (!source) return RepairStart::kLater;  // its holders have not re-mounted since our restart
  auto allocs = segments_.Allocate(TenantOfTableKey(table_key), m.size, 1, {}, avoid);
  if (allocs.empty()) {
    // No other process has room now. A drain must end (its segment goes, and what it alone holds
    // with it): the background evictor is asked for room, least recently used first, as a
    // refused Put asks. A lost replica's copy waits for room instead.
    if (kept == 0) evictor_.NoteAllocationFailure(m.size);
    return RepairStart::kLater;
  }
  if (!BeginCopyLocked(s, obj, *source, allocs[0], now, TaskId{})) return RepairStart::kLater;
  repairs_.Spend(m.size);
  return RepairStart::kStarted;
}

std::optional<ClientId> MasterService::BeginCopyLocked(ObjectTable::Locked& s, ObjectTable::Ref obj,
                                                       const StoredReplica& source, const Allocation& target, TimeMs now,
                                                       const TaskId& user_task) {
  const ObjectMeta& m = obj.meta();
  ClientId owner;
  if (!segments_.OwnerOf(target.segment, &owner)) {
    segments_.Free(target);
    return std::nullopt;
  }
  RepairQueue::InFlight f;
  f.task.size = m.size;
  f.task.source = segments_.IdOf(source.segment());
  f.task.source_offset = source.offset();
  // Read access for as long as the copy may take: past it the task is given up and redone anyway.
  f.task.source_grant = segments_.Mint(source.segment(), GrantAccess::kRead, source.offset(), m.size,
                                       WallMs() + config_.repair_task_timeout_sec * 1000 + kCopyGrantSlackMs);
  f.task.target = segments_.IdOf(target.segment);
  f.task.target_offset = target.offset;
  if (m.flags & kHasChecksum) f.task.checksum = m.checksum;
  f.table_key = std::string(obj.key());
  f.object_id = m.object_id;
  f.client = owner;
  f.target = target;
  f.deadline = now + config_.repair_task_timeout_sec * 1000;
  f.user_task = user_task;
  segments_.LogFence(target, f.deadline + kCopyGrantSlackMs + kGrantClockMarginMs);
  s.AddRepairReplica(obj, target);
  s.AddReadPin(obj, owner, PinKind::kTask);  // the source's bytes and the new range stay put until it reports
  s.Touch(obj);  // stamps the source grant's minting (GrantHold)
  (void)repairs_.Start(std::move(f));
  return owner;
}

bool MasterService::DropRepairLocked(ObjectTable::Locked& s, ObjectTable::Ref obj, const Allocation& target) {
  // The copy was all that was left when its source went with its segment meanwhile: the object is
  // removed with it (lost).
  const ObjectMeta& m = obj.meta();
  bool there = false;
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const StoredReplica& r = m.replica(i);
    there = there ||
            (r.status() == ReplicaStatus::kProcessing && r.segment() == target.segment && r.offset() == target.offset);
  }
  if (!there) return true;  // its segment went, and the replica with it
  const bool last = m.n_replicas == 1;
  if (last) {
    YB_LOG_WARN("object {} lost: its last replica's segment went while a copy of it was being made",
                Quote(obj.key().substr(2)));
  }
  s.DropRepairReplica(obj, target);
  if (last) objects_lost_.fetch_add(1, std::memory_order_relaxed);
  return !last;
}

uint64_t MasterService::RepairOnce() {
  const TimeMs now = clock_.NowMs();
  // Copies of tasks too: they run whether or not re-replication does.
  CancelRepairsIf([now](const ClientId&, TimeMs deadline) { return deadline <= now; },
                  "not reported within --repair_task_timeout_sec");
  std::vector<RepairQueue::AtRisk> batch = repairs_.NextRound(now);
  uint64_t started = 0;
  std::vector<RepairQueue::AtRisk> later;
  for (auto& [have, key] : batch) {
    RepairStart r = repairs_.HasBudget() ? StartRepair(key, now) : RepairStart::kLater;
    if (r == RepairStart::kStarted) {
      ++started;
    } else if (r == RepairStart::kLater) {
      later.emplace_back(have, std::move(key));
    } else {
      repairs_.Forget(key);
    }
  }
  repairs_.Requeue(std::move(later));  // behind the others
  return started;
}

void MasterService::CancelRepairsIf(const std::function<bool(const ClientId& client, TimeMs deadline)>& gone,
                                    std::string_view why) {
  std::vector<RepairQueue::InFlight> cancelled = repairs_.TakeIf(gone);
  if (!cancelled.empty()) {
    uint64_t bytes = 0;
    for (const RepairQueue::InFlight& f : cancelled) bytes += f.task.size;
    YB_LOG_WARN("re-replication: {} copies ({} bytes, the first into segment {}) {}: given up, to be made again",
                cancelled.size(), bytes, cancelled.front().task.target, why);
  }
  for (RepairQueue::InFlight& f : cancelled) {
    const HashedKey hk(f.table_key);
    auto s = table_.Lock(hk);
    auto obj = s.Find(hk);
    const bool same = obj && obj->object_id == f.object_id;
    // Its death may have ended it.
    (void)s.Unpin(f.client, f.object_id, same ? obj : ObjectTable::Ref(), PinKind::kTask);
    repairs_.Forget(f.table_key);
    if (!f.user_task.empty()) tasks_.CopyEnded(f.user_task, Status(Code::kTransferFail, "a copy was " + std::string(why)));
    if (same && DropRepairLocked(s, obj, f.target)) NoteAtRisk(f.table_key, obj->CompleteMemoryReplicas());
  }
}

Status MasterService::MayDrain(const CallContext& ctx, SegmentId id) const {
  if (ctx.privileged) return Status::OK();  // a master or an operator (the cluster secret, the admin key)
  const auto owned = segments_.SegmentsOf(ctx.client);
  if (std::find(owned.begin(), owned.end(), id) != owned.end()) return Status::OK();
  return Status(Code::kIllegalClient, "segment " + std::to_string(id) +
                                          " may be drained by its owner, a master or an operator (the admin key) only");
}

Status MasterService::UndrainSegment(const CallContext& ctx, SegmentId id) {
  YB_RETURN_IF_ERROR(MayDrain(ctx, id));
  return segments_.SetDraining(id, false);
}

Result<uint64_t> MasterService::DrainSegment(const CallContext& ctx, SegmentId id) {
  YB_RETURN_IF_ERROR(MayDrain(ctx, id));
  YB_RETURN_IF_ERROR(segments_.SetDraining(id));
  uint64_t remaining = 0;
  for (size_t i = 0; i < table_.shard_count(); ++i) {
    auto s = table_.LockShard(i);
    s.ForEach([&](ObjectTable::Ref obj) {
      const ObjectMeta& m = obj.meta();
      bool on = false;
      size_t kept = 0;
      for (size_t j = 0; j < m.n_replicas; ++j) {
        const StoredReplica& r = m.replica(j);
        if (r.kind() != ReplicaKind::kMemory || r.status() != ReplicaStatus::kComplete) continue;
        if (segments_.IdOf(r.segment()) == id) {
          on = true;
        } else if (!segments_.Draining(r.segment())) {
          ++kept;
        }
      }
      if (on && kept < std::max<size_t>(m.want_replicas, 1)) {
        ++remaining;
        NoteAtRisk(std::string(obj.key()), kept);
      }
    });
  }
  return remaining;
}

Result<std::vector<RepairTask>> MasterService::RepairFetch(const CallContext& ctx, uint32_t max) {
  return repairs_.Fetch(ctx.client, max);
}

std::vector<Status> MasterService::RepairDone(const CallContext& ctx, const std::vector<RepairResult>& results) {
  std::vector<Status> out;
  out.reserve(results.size());
  size_t failed = 0;  // logged once per report, with the first reason
  std::string first_failure;
  for (const RepairResult& res : results) {
    auto finished = repairs_.Finish(res.task_id, ctx.client);
    if (!finished) {
      out.emplace_back(Code::kInvalidParams, "no copy task " + std::to_string(res.task_id) + " for this client");
      continue;
    }
    RepairQueue::InFlight& f = *finished;
    const HashedKey hk(f.table_key);
    auto s = table_.Lock(hk);
    auto obj = s.Find(hk);
    const bool same = obj && obj->object_id == f.object_id;
    (void)s.Unpin(ctx.client, f.object_id, same ? obj : ObjectTable::Ref(), PinKind::kTask);
    const bool for_task = !f.user_task.empty();
    if (!same) {  // removed or replaced meanwhile: its zombie held the range, freed with the pin
      out.emplace_back(Code::kObjectNotFound, "the object was removed or replaced during its copy");
      if (for_task) tasks_.CopyEnded(f.user_task, out.back());
      continue;
    }
    if (res.status.ok() && s.CompleteReplica(obj, f.target)) {
      if (!for_task) {
        repaired_.fetch_add(1, std::memory_order_relaxed);
        repair_bytes_.fetch_add(f.task.size, std::memory_order_relaxed);
      }
      out.push_back(Status::OK());
      if (for_task) tasks_.CopyEnded(f.user_task, Status::OK());
    } else {
      if (failed++ == 0) first_failure = res.status.ok() ? "its new replica went meanwhile" : res.status.ToString();
      out.push_back(res.status.ok() ? Status(Code::kSegmentNotFound, "the new replica's segment went") : Status::OK());
      if (for_task) tasks_.CopyEnded(f.user_task, res.status.ok() ? out.back() : res.status);
      if (!DropRepairLocked(s, obj, f.target)) continue;  // that was all it had left
    }
    // Another copy if it is still short (several replicas lost, or this one failed).
    const size_t have = obj->CompleteMemoryReplicas();
    if (have > 0 && have < obj->want_replicas) NoteAtRisk(f.table_key, have);
  }
  if (failed > 0) {
    YB_LOG_WARN("re-replication: client {} could not make {} of {} copies ({}), to be made again",
                ctx.client.ToString(), failed, results.size(), first_failure);
  }
  return out;
}

}  // namespace yb
