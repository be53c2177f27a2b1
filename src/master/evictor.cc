#include "master/evictor.h"

#include <algorithm>

#include "common/log.h"

namespace yb {
namespace {
constexpr size_t kCandidatesPerShard = 16;  // taken from each shard per round
constexpr size_t kScanPerShard = 256;       // entries examined per shard per round
}  // namespace

Evictor::Evictor(ObjectTable& table, SegmentManager& segments, OffloadQueues& offload, const Clock& clock,
                 const MasterConfig& config)
    : table_(table), segments_(segments), offload_(offload), clock_(clock), config_(config) {}

void Evictor::NoteAllocationFailure(uint64_t bytes) {
  uint64_t cur = failed_bytes_.load(std::memory_order_relaxed);
  while (cur < bytes && !failed_bytes_.compare_exchange_weak(cur, bytes, std::memory_order_relaxed)) {
  }
}

uint64_t Evictor::RunOnce() {
  // Only segments that take new replicas count: the memory of one whose owner is not heard from,
  // or that drains, is of no use to a Put, and evicting elsewhere to make up for it loses objects
  // for nothing. Memory that offloads already queued by eviction will free does not count, nor
  // ranges held for their grants (they come back on their own: evicting to make up for them would
  // chase them).
  const SegmentManager::TakingCounts taking = segments_.CountTaking();
  double cap = static_cast<double>(taking.capacity);
  const uint64_t allocated = taking.allocated;
  double used = static_cast<double>(allocated - std::min(allocated, offload_.evict_pending_bytes() + taking.held));
  uint64_t need = 0;
  if (cap > 0 && used > config_.eviction_high_watermark_ratio * cap) {
    need = static_cast<uint64_t>(used - (config_.eviction_high_watermark_ratio - config_.eviction_ratio) * cap);
  }
  uint64_t failed = failed_bytes_.exchange(0, std::memory_order_relaxed);
  if (failed > 0) {
    need = std::max<uint64_t>({need, failed, static_cast<uint64_t>(config_.eviction_ratio * cap)});
  }
  return need > 0 ? EvictBytes(need) : 0;
}

uint64_t Evictor::MemoryBytes(const ObjectMeta& m, TimeMs now) const {
  uint64_t n = 0;
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const auto& r = m.replica(i);
    if (r.kind() == ReplicaKind::kMemory && r.status() == ReplicaStatus::kComplete &&
        segments_.TakesNewReplicas(r.segment(), now)) {
      ++n;
    }
  }
  return n * m.size;
}

bool Evictor::IsCandidate(const ObjectMeta& m, Pass pass, TimeMs now) const {
  // A lease does not keep an object from eviction: reads are protected by their read pins (a
  // pinned object is skipped), and recency already puts recently read objects last. With leases
  // blocking eviction, a read set hotter than the lease TTL left nothing to evict, and Puts on a
  // full pool failed while most of it held objects nobody was reading. A lease keeps only
  // Mooncake's promise for Remove without force (OBJECT_HAS_LEASE).
  if (m.hard_pinned() || m.readers > 0 || (m.flags & kOffloading) || MemoryBytes(m, now) == 0) return false;
  // On its way to the disk (eager offload): taken once the copy is durable, not dropped before.
  if ((m.flags & kDiskCopyPending) && !config_.offload_force_evict) return false;
  bool soft = (m.flags & kSoftPin) && m.soft_pin_deadline > now;
  switch (pass) {
    case Pass::kOnDisk:
      return !soft && m.HasKind(ReplicaKind::kLocalDisk);
    case Pass::kUnpinned:
      return !soft;
    case Pass::kSoftPinned:
      return soft;
  }
  return false;
}

void Evictor::Collect(Pass pass, TimeMs now, std::vector<Candidate>& out) {
  out.clear();
  for (size_t i = 0; i < table_.shard_count(); ++i) {
    size_t scanned = 0, taken = 0;
    const bool truncated = table_.LockShard(i).ForEachLeastRecent([&](const ObjectEntry& e) {
      ++scanned;
      if (IsCandidate(e.second, pass, now)) {
        out.push_back(Candidate{e.second.last_access, static_cast<uint32_t>(i), false, e.second.object_id,
                                MemoryBytes(e.second, now), std::string(e.first)});
        ++taken;
      }
      return scanned < kScanPerShard && taken < kCandidatesPerShard;
    });
    if (truncated && taken > 0) out.back().last_of_truncated_shard = true;
  }
}

uint64_t Evictor::EvictOne(ObjectTable::Locked& s, const Candidate& c, Pass pass, TimeMs now) {
  auto obj = s.Find(HashedKey(c.key));
  if (!obj || obj->object_id != c.object_id) return 0;
  const ObjectMeta& m = obj.meta();
  if (!IsCandidate(m, pass, now)) return 0;
  uint64_t freed = MemoryBytes(m, now);
  if (config_.offload_on_evict && !(m.flags & kNoOffload) && !m.HasKind(ReplicaKind::kLocalDisk)) {
    Offload o = QueueOffload(s, obj);
    if (o == Offload::kQueued) return freed;  // freed when the disk copy is durable
    if (o == Offload::kQueueFull && !config_.offload_force_evict) {
      kept_queue_full_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
  }
  s.DropMemoryReplicas(obj);  // an object with a disk copy stays, without DRAM
  return freed;
}

Evictor::Offload Evictor::QueueOffload(ObjectTable::Locked& s, ObjectTable::Ref obj) {
  const ObjectMeta& m = obj.meta();
  bool full = false;
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const StoredReplica r = m.replica(i);
    ClientId owner;
    if (r.kind() != ReplicaKind::kMemory || !segments_.OwnerOf(r.segment(), &owner) || !offload_.Has(owner)) continue;
    if (!offload_.Push(owner, OffloadItem{std::string(obj.key()), m.object_id, m.size, true})) {
      full = true;
      continue;
    }
    // Keep this replica (and any non-memory ones); the other memory replicas go now.
    s.DropReplicasIf(obj, [&](const StoredReplica& o) {
      return o.kind() == ReplicaKind::kMemory && !(o.segment() == r.segment() && o.offset() == r.offset());
    });
    s.SetOffloadFlags(obj, kOffloading);
    offloaded_on_evict_.fetch_add(1, std::memory_order_relaxed);
    return Offload::kQueued;
  }
  return full ? Offload::kQueueFull : Offload::kNoSsdTier;
}

uint64_t Evictor::EvictBytes(uint64_t need) {
  MutexLock run_lock(run_mu_);
  TimeMs now = clock_.NowMs();
  uint64_t freed = 0, objects = 0;
  std::vector<Candidate> cands;
  for (Pass pass : {Pass::kOnDisk, Pass::kUnpinned, Pass::kSoftPinned}) {
    if (pass == Pass::kOnDisk && !offload_.Any()) continue;  // no SSD tier: no disk copies to prefer
    if (pass == Pass::kSoftPinned && !config_.allow_evict_soft_pinned_objects) break;
    while (freed < need) {
      Collect(pass, now, cands);
      if (cands.empty()) break;
      std::sort(cands.begin(), cands.end(),
                [](const Candidate& a, const Candidate& b) { return a.last_access < b.last_access; });
      // Take the oldest; stop at the end of a shard's partial list, whose successors are unseen.
      size_t take = 0;
      uint64_t planned = 0;
      while (take < cands.size() && freed + planned < need) {
        planned += cands[take].bytes;
        if (cands[take++].last_of_truncated_shard) break;
      }
      std::stable_sort(cands.begin(), cands.begin() + static_cast<long>(take),
                       [](const Candidate& a, const Candidate& b) { return a.shard < b.shard; });
      uint64_t round = 0;
      for (size_t i = 0; i < take;) {
        auto s = table_.LockShard(cands[i].shard);
        for (uint32_t sh = cands[i].shard; i < take && cands[i].shard == sh; ++i) {
          uint64_t f = EvictOne(s, cands[i], pass, now);
          if (f > 0) {
            round += f;
            ++objects;
          }
        }
      }
      freed += round;
      if (round == 0) break;
    }
  }
  if (objects > 0) {
    evicted_objects_.fetch_add(objects, std::memory_order_relaxed);
    evicted_bytes_.fetch_add(freed, std::memory_order_relaxed);
    YB_LOG_INFO("evicted {} objects, {} bytes (asked {})", objects, freed, need);
  }
  return freed;
}

}  // namespace yb
