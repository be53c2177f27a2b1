// MasterService: the SSD tier's metadata. Offload tasks (eager at PutEnd, or from eviction),
// their completion into LOCAL_DISK replicas, and the disk replicas clients register or drop.
#include <algorithm>

#include "common/disk_key.h"
#include "common/log.h"
#include "master/master_service.h"

namespace yb {
namespace {

// The key a table key has in an offload task: tenant index and key, back to tenant name and key.
std::string_view UserKey(std::string_view table_key) { return table_key.substr(2); }

}  // namespace

bool MasterService::OwnedBy(const StoredReplica& r, const ClientId& client) const {
  ClientId owner;
  return segments_.OwnerOf(r.segment(), &owner) && owner == client;
}

MasterService::ClientReplicas MasterService::ReplicasOn(const ObjectMeta& m, const ClientId& client) const {
  ClientReplicas out;
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const StoredReplica& r = m.replica(i);
    if (!OwnedBy(r, client)) continue;
    if (r.kind() == ReplicaKind::kMemory && r.status() == ReplicaStatus::kComplete && !out.memory) out.memory = &r;
    if (r.kind() == ReplicaKind::kLocalDisk) out.on_disk = true;
  }
  return out;
}

void MasterService::QueueEagerOffloadLocked(ObjectTable::Locked& s, ObjectTable::Ref obj) {
  const ObjectMeta& m = obj.meta();
  for (size_t i = 0; i < m.n_replicas; ++i) {
    ClientId owner;
    const StoredReplica& r = m.replica(i);
    if (r.kind() != ReplicaKind::kMemory || !segments_.OwnerOf(r.segment(), &owner)) continue;
    // Each owner with an SSD tier keeps its own copy: replica_num copies in DRAM stay replica_num
    // copies on disk, and the bytes never cross the network on the way down.
    // Until a copy is on disk, eviction leaves the object alone (docs/ssd-tier.md): dropping
    // it now would lose what is about to be kept.
    if (offload_.Push(owner, OffloadItem{std::string(obj.key()), m.object_id, m.size, false})) {
      s.SetOffloadFlags(obj, kDiskCopyPending);
    }
  }
}

void MasterService::DropDiskCopiesLocked(ObjectTable::Locked& s, ObjectTable::Ref obj) {
  const ObjectMeta& m = obj.meta();
  for (size_t i = 0; i < m.n_replicas; ++i) {
    ClientId owner;
    const StoredReplica& r = m.replica(i);
    if (r.kind() != ReplicaKind::kLocalDisk || !segments_.OwnerOf(r.segment(), &owner)) continue;
    OffloadItem item;
    item.table_key = DiskKey(tenants_.name(m.tenant), UserKey(obj.key()));
    item.object_id = m.object_id;
    item.drop = true;
    if (!offload_.Push(owner, std::move(item))) {
      const uint64_t n = drops_refused_.fetch_add(1, std::memory_order_relaxed) + 1;
      if ((n & (n - 1)) == 0) {  // 1st, 2nd, 4th, ...: a burst does not flood the log
        YB_LOG_WARN(
            "client {}'s offload queue is full: its disk copy of a removed object stays until its bucket is "
            "evicted, and is refused if the client registers it again ({} such copies so far)",
            owner.ToString(), n);
      }
      s.NoteAwayCopy(obj.key(), m.known_checksum(), true);
    }
  }
}

void MasterService::FinishEvictOffloadLocked(ObjectTable::Locked& s, ObjectTable::Ref obj) {
  s.ClearOffloadFlags(obj, kOffloading);
  const ObjectMeta& m = obj.meta();
  if (!m.HasKind(ReplicaKind::kLocalDisk) || m.readers > 0) return;  // eviction picks it again later
  s.DropMemoryReplicas(obj);
}

Result<std::vector<OffloadTask>> MasterService::OffloadFetch(const CallContext& ctx, uint32_t max) {
  std::vector<OffloadTask> tasks;
  for (OffloadItem& item : offload_.Take(ctx.client, max)) {
    if (item.drop) {
      OffloadTask t;
      t.disk_key = std::move(item.table_key);  // queued as the disk key already
      t.object_id = item.object_id;
      t.drop = true;
      tasks.push_back(std::move(t));
      continue;
    }
    const HashedKey hk(item.table_key);
    auto s = table_.Lock(hk);
    auto obj = s.Find(hk);
    if (!obj || obj->object_id != item.object_id) {  // removed or replaced
      (void)offload_.Finish(ctx.client, item.object_id);
      continue;
    }
    const ObjectMeta& m = obj.meta();
    const ClientReplicas mine = ReplicasOn(m, ctx.client);
    const StoredReplica* mem = mine.memory;
    if (!mem || mine.on_disk) {  // nothing of ours to copy, or already copied
      (void)offload_.Finish(ctx.client, item.object_id);
      s.ClearOffloadFlags(obj, kDiskCopyPending);
      if (item.on_evict) FinishEvictOffloadLocked(s, obj);
      continue;
    }
    s.AddReadPin(obj, ctx.client, PinKind::kTask);  // the bytes stay put while the client copies them
    OffloadTask t;
    t.disk_key = DiskKey(tenants_.name(m.tenant), UserKey(item.table_key));
    t.object_id = m.object_id;
    t.segment = segments_.IdOf(mem->segment());
    t.offset = mem->offset();
    t.size = m.size;
    if (m.flags & kHasChecksum) t.checksum = m.checksum;
    tasks.push_back(std::move(t));
  }
  return tasks;
}

std::vector<Status> MasterService::OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) {
  std::vector<Status> out;
  out.reserve(results.size());
  for (const OffloadResult& res : results) {
    auto item = offload_.Finish(ctx.client, res.object_id);
    if (!item) {
      out.emplace_back(Code::kInvalidParams, "no offload task " + std::to_string(res.object_id) + " for this client");
      continue;
    }
    const HashedKey hk(item->table_key);
    auto s = table_.Lock(hk);
    auto obj = s.Find(hk);
    s.Unpin(ctx.client, item->object_id, obj, PinKind::kTask);
    if (!obj || obj->object_id != item->object_id) {
      out.emplace_back(Code::kObjectNotFound, "the object was removed or replaced during its offload");
      continue;
    }
    const ObjectMeta& m = obj.meta();
    Status st = Status::OK();
    Status copy = res.status;
    if (copy.ok() && res.checksum && m.checksum_known() && *res.checksum != m.checksum) {
      // The bytes copied are not the value's: the client is told to drop its copy.
      copy = Status(Code::kChecksumMismatch, "the disk copy's checksum differs from the value's");
      st = copy;
    }
    if (copy.ok()) {
      const ClientReplicas mine = ReplicasOn(m, ctx.client);
      if (!mine.memory) {
        st = Status(Code::kSegmentNotFound, "the client's segment was unmounted during the offload");
      } else if (!mine.on_disk) {
        s.AddDiskReplica(obj, mine.memory->segment());
        offloaded_.fetch_add(1, std::memory_order_relaxed);
      }
      // Remembered so that a disk copy registered later (after a restart) can be matched to this value.
      if (!m.checksum_known() && res.checksum) s.SetDiskChecksum(obj, *res.checksum);
    } else {
      // The DRAM copy stays; eviction will treat the object as one without an SSD tier.
      s.SetOffloadFlags(obj, kNoOffload);
      s.ClearOffloadFlags(obj, kDiskCopyPending);
      // A full disk fails a whole round, and the client then pauses (and says so): the 1st, 2nd,
      // 4th, ... failure here, the rest counted (yb_master_offload_failures_total).
      const uint64_t n = offload_failed_.fetch_add(1, std::memory_order_relaxed) + 1;
      if (LogOccurrence(n)) {
        YB_LOG_WARN("client {} could not offload an object of {} bytes: {} ({} offloads failed so far)",
                    ctx.client.ToString(), m.size, copy.ToString(), n);
      }
    }
    if (item->on_evict) FinishEvictOffloadLocked(s, obj);
    out.push_back(std::move(st));
  }
  return out;
}

Result<MasterService::DiskTableKey> MasterService::TableKeyOfDiskKey(const CallContext& ctx,
                                                                    const std::string& disk_key) {
  auto parts = SplitDiskKey(disk_key);
  if (!parts || parts->second.size() > config_.max_key_length) return Status(Code::kInvalidKey, "malformed disk key");
  auto tenant = tenants_.Find(std::string(parts->first));
  if (!tenant.ok()) return tenant.status();
  if (!ctx.any_tenant && *tenant != ctx.tenant) {
    return Status(Code::kIllegalClient, "a disk copy of another tenant's object: this client acts for tenant '" +
                                            tenants_.name(ctx.tenant) + "' only");
  }
  return DiskTableKey{*tenant, InternalKey(*tenant, parts->second)};
}

std::vector<Status> MasterService::AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                                   const std::vector<DiskObject>& objects) {
  const SegmentRef ref = segments_.RefOf(segment, ctx.client);
  if (ref == kNoSegment) {
    return std::vector<Status>(objects.size(), Status(Code::kSegmentNotFound, "segment " + std::to_string(segment) +
                                                                                  " is not mounted by this client"));
  }
  const TimeMs now = clock_.NowMs();
  std::vector<Status> out;
  out.reserve(objects.size());
  for (const DiskObject& obj : objects) {
    auto tk = TableKeyOfDiskKey(ctx, obj.disk_key);
    if (!tk.ok()) {
      out.push_back(tk.status());
      continue;
    }
    if (obj.size == 0) {
      out.emplace_back(Code::kInvalidParams, "object size is 0");
      continue;
    }
    const HashedKey hk(tk->key);
    auto s = table_.Lock(hk);
    if (s.FindPending(hk)) {
      out.emplace_back(Code::kReplicaNotReady, "the key is being written");
      continue;
    }
    // The copy is back: the master no longer needs to remember it.
    const std::optional<bool> superseded = s.TakeAwayCopy(hk, obj.checksum);
    if (auto live = s.Find(hk)) {
      const ObjectMeta& m = live.meta();
      // The copy joins the live object only when it provably holds its value. Without a checksum to
      // compare (a value neither the writer nor an offload checksummed), it may be an older value of
      // the key, put again while this client was away: refused, rather than risk serving it.
      if (m.size != obj.size || !m.checksum_known() || m.checksum != obj.checksum) {
        out.emplace_back(Code::kObjectAlreadyExists, m.checksum_known() || m.size != obj.size
                                                         ? "the key now has another value"
                                                         : "the key has a value this copy cannot be matched to");
        continue;
      }
      if (!ReplicasOn(m, ctx.client).on_disk) {
        s.AddDiskReplica(live, ref);
        disk_registered_.fetch_add(1, std::memory_order_relaxed);
      }
      out.push_back(Status::OK());
      continue;
    }
    if (superseded.value_or(false)) {
      out.emplace_back(Code::kObjectAlreadyExists, "removed or given another value while the copy's owner was away");
      continue;
    }
    ObjectMeta meta;
    meta.size = obj.size;
    meta.checksum = obj.checksum;
    meta.flags = kHasChecksum;
    meta.tenant = tk->tenant;
    meta.lease_deadline = now;
    meta.object_id = table_.NextObjectId();
    meta.SetReplicas({StoredReplica(Allocation{0, ref, OffsetAllocator::kNoNode}, ReplicaKind::kLocalDisk,
                                    ReplicaStatus::kComplete)});
    s.Publish(hk, std::move(meta));
    disk_registered_.fetch_add(1, std::memory_order_relaxed);
    out.push_back(Status::OK());
  }
  return out;
}

std::vector<Status> MasterService::DropDiskReplicas(const CallContext& ctx, const Keys& disk_keys) {
  std::vector<Status> out;
  out.reserve(disk_keys.size());
  for (const std::string& dk : disk_keys) {
    auto tk = TableKeyOfDiskKey(ctx, dk);
    if (!tk.ok()) {
      out.push_back(tk.status());
      continue;
    }
    const HashedKey hk(tk->key);
    auto s = table_.Lock(hk);
    if (auto obj = s.Find(hk)) {
      const size_t dropped = s.DropReplicasIf(
          obj, [&](const StoredReplica& r) { return r.kind() == ReplicaKind::kLocalDisk && OwnedBy(r, ctx.client); },
          MissReason::kEvicted);  // the SSD tier's eviction: the last copy was on its disk
      disk_dropped_.fetch_add(dropped, std::memory_order_relaxed);
    }
    out.push_back(Status::OK());
  }
  return out;
}

void MasterService::ForgetOffloadsOf(const ClientId& client) {
  // The client's copies will not come: its objects are evictable again (eager offload) and no
  // longer wait for a disk copy to free their memory (offload on evict).
  for (const OffloadItem& item : offload_.RemoveClient(client)) {
    if (item.drop) {
      // The client may still have the copy of a key since removed or rewritten: remembered, so
      // that the copy is refused if its owner registers it again.
      auto tk = TableKeyOfDiskKey(CallContext{}, item.table_key);
      if (!tk.ok()) continue;
      table_.Lock(HashedKey(tk->key)).NoteAwayCopy(tk->key, std::nullopt, true);
      continue;
    }
    const HashedKey hk(item.table_key);
    auto s = table_.Lock(hk);
    auto obj = s.Find(hk);
    if (obj && obj->object_id == item.object_id) {
      s.ClearOffloadFlags(obj, static_cast<uint8_t>(kDiskCopyPending | (item.on_evict ? kOffloading : 0)));
    }
  }
}

}  // namespace yb
