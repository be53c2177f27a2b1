#include "master/segment_manager.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "common/log.h"
#include "common/segment_name.h"

namespace yb {

namespace {
uint32_t SlotOf(SegmentRef ref) { return ref & 0xFFFF; }
}  // namespace

SegmentManager::SegmentManager(std::unique_ptr<AllocationStrategy> strategy, uint64_t alignment, const Clock* clock)
    : strategy_(std::move(strategy)),
      alignment_(alignment),
      by_slot_(kMaxSegments),
      slot_gen_(kMaxSegments, 0),
      slot_ref_(std::make_unique<std::atomic<uint32_t>[]>(kMaxSegments)),
      slot_id_(std::make_unique<std::atomic<uint64_t>[]>(kMaxSegments)),
      slot_serving_(std::make_unique<std::atomic<bool>[]>(kMaxSegments)),
      slot_key_(std::make_unique<std::atomic<uint64_t>[]>(2 * kMaxSegments)),
      slot_shunned_(std::make_unique<std::atomic<TimeMs>[]>(kMaxSegments)),
      slot_draining_(std::make_unique<std::atomic<bool>[]>(kMaxSegments)),
      slot_unheard_(std::make_unique<std::atomic<TimeMs>[]>(kMaxSegments)),
      clock_(clock ? clock : &SteadyClock()) {
  // Slot 0 is never used, so that a zero SegmentRef means "none".
  for (uint32_t i = kMaxSegments - 1; i >= 1; --i) free_slots_.push_back(static_cast<uint16_t>(i));
}

SegmentId SegmentManager::IdOf(SegmentRef ref) const {
  uint32_t slot = SlotOf(ref);
  if (slot == 0 || slot_ref_[slot].load(std::memory_order_acquire) != ref) return 0;
  SegmentId id = slot_id_[slot].load(std::memory_order_acquire);
  return slot_ref_[slot].load(std::memory_order_acquire) == ref ? id : 0;
}

bool SegmentManager::Serving(SegmentRef ref) const {
  uint32_t slot = SlotOf(ref);
  if (slot == 0 || slot_ref_[slot].load(std::memory_order_acquire) != ref) return false;
  bool serving = slot_serving_[slot].load(std::memory_order_acquire);
  return serving && slot_ref_[slot].load(std::memory_order_acquire) == ref;
}

TimeMs SegmentManager::Now() const { return clock_->NowMs(); }

bool SegmentManager::DrainingNow(const Segment& seg) const {
  return slot_draining_[SlotOf(seg.ref)].load(std::memory_order_relaxed);
}

bool SegmentManager::UnheardAt(const Segment& seg, TimeMs now) const {
  return now < slot_unheard_[SlotOf(seg.ref)].load(std::memory_order_relaxed);
}

bool SegmentManager::TakesNewReplicas(SegmentRef ref, TimeMs now) const {
  if (!Serving(ref)) return false;
  const uint32_t slot = SlotOf(ref);
  return !slot_draining_[slot].load(std::memory_order_relaxed) &&
         now >= slot_unheard_[slot].load(std::memory_order_relaxed) &&
         slot_ref_[slot].load(std::memory_order_acquire) == ref;
}

size_t SegmentManager::CountHolders(TenantIndex tenant) const {
  ReaderLock lock(mu_);
  std::vector<ClientId> owners;
  for (const auto& seg : list_) {
    if (DrainingNow(*seg) || (seg->only_tenant && *seg->only_tenant != tenant)) continue;
    if (std::find(owners.begin(), owners.end(), seg->owner) == owners.end()) owners.push_back(seg->owner);
  }
  return owners.size();
}

SegmentManager::TakingCounts SegmentManager::CountTaking() const {
  const TimeMs now = Now();
  TakingCounts c;
  ReaderLock lock(mu_);
  for (const auto& seg : list_) {
    if (DrainingNow(*seg)) {
      ++c.draining;
    } else if (UnheardAt(*seg, now)) {
      ++c.unheard;
    } else {
      ++c.taking;
      c.capacity += seg->capacity;
      c.allocated += seg->capacity - seg->free_bytes.load(std::memory_order_relaxed);
      c.held += seg->held_bytes.load(std::memory_order_relaxed);
    }
  }
  return c;
}

bool SegmentManager::Shunned(SegmentRef ref) const {
  uint32_t slot = SlotOf(ref);
  if (slot == 0) return false;
  const TimeMs now = Now();
  if (now >= any_shunned_until_.load(std::memory_order_relaxed)) return false;  // the common case: none is
  return now < slot_shunned_[slot].load(std::memory_order_relaxed) &&
         slot_ref_[slot].load(std::memory_order_acquire) == ref;
}

std::vector<SegmentId> SegmentManager::Shun(const ClientId& reporter, const std::vector<SegmentId>& ids,
                                            TimeMs until) {
  std::vector<SegmentId> fresh;
  const TimeMs now = Now();
  ReaderLock lock(mu_);
  for (size_t i = 0; i < std::min(ids.size(), kMaxReportedUnreachable); ++i) {
    auto it = by_id_.find(ids[i]);
    if (it == by_id_.end() || it->second->owner == reporter) continue;
    std::atomic<TimeMs>& shunned = slot_shunned_[SlotOf(it->second->ref)];
    const TimeMs was = shunned.load(std::memory_order_relaxed);
    if (was <= now) fresh.push_back(ids[i]);
    if (was < until) shunned.store(until, std::memory_order_relaxed);
    TimeMs any = any_shunned_until_.load(std::memory_order_relaxed);
    while (any < until && !any_shunned_until_.compare_exchange_weak(any, until, std::memory_order_relaxed)) {
    }
  }
  return fresh;
}

void SegmentManager::MarkUnheard(const std::vector<ClientId>& owners, TimeMs until) {
  if (owners.empty()) return;
  ReaderLock lock(mu_);
  for (const auto& [id, seg] : by_id_) {
    if (std::find(owners.begin(), owners.end(), seg->owner) != owners.end()) {
      slot_unheard_[SlotOf(seg->ref)].store(until, std::memory_order_relaxed);
    }
  }
}

size_t SegmentManager::CountUntil(const std::function<TimeMs(const Segment&)>& until) const {
  const TimeMs now = Now();
  ReaderLock lock(mu_);
  return static_cast<size_t>(
      std::count_if(by_id_.begin(), by_id_.end(), [&](const auto& entry) { return now < until(*entry.second); }));
}

size_t SegmentManager::shunned_count() const {
  return CountUntil([this](const Segment& seg) { return slot_shunned_[SlotOf(seg.ref)].load(std::memory_order_relaxed); });
}

size_t SegmentManager::unheard_count() const {
  return CountUntil(
      [this](const Segment& seg) { return slot_unheard_[SlotOf(seg.ref)].load(std::memory_order_relaxed); });
}

void SegmentManager::PublishKey(uint32_t slot, const std::string& key) {
  uint64_t words[2] = {0, 0};
  if (key.size() == kGrantKeySize) std::memcpy(words, key.data(), kGrantKeySize);
  slot_key_[2 * slot].store(words[0], std::memory_order_release);
  slot_key_[2 * slot + 1].store(words[1], std::memory_order_release);
}

Grant SegmentManager::Mint(SegmentRef ref, GrantAccess access, uint64_t offset, uint64_t length, int64_t expires_ms,
                           std::string_view object) const {
  uint32_t slot = SlotOf(ref);
  if (slot == 0 || slot_ref_[slot].load(std::memory_order_acquire) != ref) return Grant{};
  uint64_t words[2] = {slot_key_[2 * slot].load(std::memory_order_acquire),
                       slot_key_[2 * slot + 1].load(std::memory_order_acquire)};
  SegmentId id = slot_id_[slot].load(std::memory_order_acquire);
  if (slot_ref_[slot].load(std::memory_order_acquire) != ref || (words[0] == 0 && words[1] == 0)) return Grant{};
  return MintGrant(std::string_view(reinterpret_cast<const char*>(words), kGrantKeySize), id, access, offset, length,
                   expires_ms, object);
}

pb::LogSegment SegmentManager::ToLog(const Segment& seg) {
  pb::LogSegment s;
  s.set_id(seg.desc.id);
  s.set_name(seg.desc.name);
  s.set_base(seg.desc.base);
  s.set_size(seg.desc.size);
  s.set_endpoint(seg.desc.endpoint);
  s.set_owner_hi(seg.owner.hi);
  s.set_owner_lo(seg.owner.lo);
  s.set_incarnation(seg.desc.incarnation);
  s.set_zone(seg.desc.zone);
  s.set_grant_key(seg.desc.grant_key);
  s.set_host_id(seg.desc.host_id);
  if (seg.only_tenant) s.set_only_tenant(*seg.only_tenant);
  return s;
}

void SegmentManager::LogLocked(const Segment& seg) const {
  if (!sink_) return;
  pb::LogRecord rec;
  *rec.mutable_segment() = ToLog(seg);
  sink_->Append(rec);
}

Status SegmentManager::AddLocked(std::shared_ptr<Segment> seg) {
  if (free_slots_.empty()) return Status(Code::kNoAvailableHandle, "too many segments mounted");
  uint16_t slot = free_slots_.back();
  free_slots_.pop_back();
  seg->ref = (static_cast<uint32_t>(++slot_gen_[slot]) << 16) | slot;
  slot_id_[slot].store(seg->desc.id, std::memory_order_release);
  PublishKey(slot, seg->desc.grant_key);
  slot_serving_[slot].store(seg->confirmed, std::memory_order_release);
  slot_shunned_[slot].store(0, std::memory_order_relaxed);
  slot_draining_[slot].store(false, std::memory_order_relaxed);
  slot_unheard_[slot].store(0, std::memory_order_relaxed);
  slot_ref_[slot].store(seg->ref, std::memory_order_release);
  by_slot_[slot] = seg;
  capacity_.fetch_add(seg->capacity, std::memory_order_relaxed);
  {
    MutexLock seg_lock(seg->mu);
    allocated_.fetch_add(seg->capacity - seg->alloc.free_bytes(), std::memory_order_relaxed);
  }
  const SegmentId id = seg->desc.id;
  by_id_.emplace(id, std::move(seg));
  RebuildListLocked();
  return Status::OK();
}

bool SegmentManager::Stale(const ClientId& owner, const SegmentMount& desc) const {
  ReaderLock lock(mu_);
  auto it = by_id_.find(desc.id);
  if (it == by_id_.end() || it->second->confirmed || !(it->second->owner == owner)) return false;
  return it->second->desc.size != desc.size || it->second->desc.incarnation != desc.incarnation;
}

namespace {
bool SameRecord(const SegmentMount& had, const SegmentMount& desc) {
  return had.size == desc.size && had.incarnation == desc.incarnation && had.endpoint == desc.endpoint &&
         had.base == desc.base && had.grant_key == desc.grant_key;
}
}  // namespace

bool SegmentManager::RecordedAsIs(const ClientId& owner, const SegmentMount& desc) const {
  ReaderLock lock(mu_);
  auto it = by_id_.find(desc.id);
  return it != by_id_.end() && it->second->owner == owner && SameRecord(it->second->desc, desc);
}

Result<SegmentManager::Restored> SegmentManager::Restore(const ClientId& owner, const SegmentMount& desc,
                                                         const std::vector<std::pair<uint64_t, uint64_t>>& ranges,
                                                         std::optional<TenantIndex> only_tenant) {
  if (desc.size < alignment_ || desc.name.empty() || desc.size >= (1ULL << 56)) {
    return Status(Code::kInvalidParams, "recovered segment " + std::to_string(desc.id) + " is malformed");
  }
  auto seg = std::make_shared<Segment>(desc, owner, alignment_);
  seg->confirmed = false;
  seg->only_tenant = only_tenant;
  Restored out;
  {
    MutexLock seg_lock(seg->mu);
    auto nodes = seg->alloc.Restore(ranges);
    if (!nodes) {
      return Status(Code::kInvalidParams,
                    "recovered replicas of segment " + std::to_string(desc.id) + " overlap or lie outside it");
    }
    out.nodes = std::move(*nodes);
    seg->free_bytes.store(seg->alloc.free_bytes(), std::memory_order_relaxed);
  }
  WriterLock lock(mu_);
  if (by_id_.count(desc.id)) return Status(Code::kSegmentAlreadyExists, "segment recovered twice");
  YB_RETURN_IF_ERROR(AddLocked(seg));
  out.ref = seg->ref;
  return out;
}

std::vector<SegmentManager::UnconfirmedSegment> SegmentManager::Unconfirmed() const {
  ReaderLock lock(mu_);
  std::vector<UnconfirmedSegment> out;
  for (const auto& [id, seg] : by_id_) {
    if (seg->confirmed) continue;
    out.push_back({id, seg->owner, seg->suspended_until, seg->desc});  // the listing's part: no grant key
  }
  return out;
}

size_t SegmentManager::Suspend(const ClientId& owner, TimeMs until) {
  WriterLock lock(mu_);
  size_t n = 0;
  for (auto& [id, seg] : by_id_) {
    if (!(seg->owner == owner)) continue;
    if (seg->confirmed || seg->suspended_until != 0) seg->suspended_until = until;  // a restored one keeps its own
    seg->confirmed = false;
    slot_serving_[SlotOf(seg->ref)].store(false, std::memory_order_release);
    ++n;
  }
  if (n > 0) RebuildListLocked();
  return n;
}

std::vector<pb::LogSegment> SegmentManager::Records() const {
  ReaderLock lock(mu_);
  std::vector<pb::LogSegment> out;
  for (const auto& [id, seg] : by_id_) {
    out.push_back(ToLog(*seg));
  }
  return out;
}

Status SegmentManager::Mount(const ClientId& owner, const SegmentMount& desc, std::optional<TenantIndex> only_tenant) {
  if (desc.size < alignment_) {
    return Status(Code::kInvalidParams, "segment size " + std::to_string(desc.size) + " is below the alignment " +
                                            std::to_string(alignment_));
  }
  if (desc.name.empty()) return Status(Code::kInvalidParams, "segment has no name");
  if (desc.name.size() > kMaxHostNameLength || desc.endpoint.size() > kMaxHostNameLength) {
    return Status(Code::kInvalidParams, "a segment's name and endpoint have at most " +
                                            std::to_string(kMaxHostNameLength) + " bytes each");
  }
  if (desc.zone.size() > kMaxZoneLength) {
    return Status(Code::kInvalidParams,
                  "zone of " + std::to_string(desc.zone.size()) + " bytes exceeds " + std::to_string(kMaxZoneLength));
  }
  if (desc.host_id.size() > kMaxHostNameLength) {
    return Status(Code::kInvalidParams, "a segment's host identity has at most " + std::to_string(kMaxHostNameLength) +
                                            " bytes");
  }
  if (desc.size >= (1ULL << 56)) return Status(Code::kInvalidParams, "segment is larger than 64 PiB");
  if (!desc.grant_key.empty() && desc.grant_key.size() != kGrantKeySize) {
    return Status(Code::kInvalidParams, "a segment's grant key has " + std::to_string(kGrantKeySize) + " bytes, not " +
                                            std::to_string(desc.grant_key.size()));
  }
  WriterLock lock(mu_);
  auto it = by_id_.find(desc.id);
  if (it != by_id_.end()) {
    Segment& seg = *it->second;
    if (!seg.confirmed && seg.owner == owner && seg.desc.size == desc.size &&
        seg.desc.incarnation == desc.incarnation) {
      // Its owner kept its memory across our restart: what we recovered on it is readable again.
      const bool recorded_as_is = SameRecord(seg.desc, desc);
      const bool was_suspended = seg.suspended_until != 0;
      seg.confirmed = true;
      seg.suspended_until = 0;
      slot_unheard_[SlotOf(seg.ref)].store(0, std::memory_order_relaxed);  // its owner is talking
      seg.desc.endpoint = desc.endpoint;
      seg.desc.base = desc.base;
      seg.desc.grant_key = desc.grant_key;  // the owner's, which its transfer server checks with
      PublishKey(SlotOf(seg.ref), seg.desc.grant_key);
      slot_serving_[SlotOf(seg.ref)].store(true, std::memory_order_release);
      RebuildListLocked();
      if (!recorded_as_is) LogLocked(seg);
      YB_LOG_INFO("segment {} '{}' re-mounted by client {} with its contents{}", desc.id, desc.name, owner.ToString(),
                  was_suspended ? " (back within the grace after it was declared dead: its replicas stay)" : "");
      return Status::OK();
    }
    if (seg.confirmed && seg.owner == owner && seg.desc.size == desc.size) return Status::OK();
    return Status(Code::kSegmentAlreadyExists, "segment " + std::to_string(desc.id) +
                                                   (seg.confirmed ? " is already mounted"
                                                                  : " was mounted before the master restarted "
                                                                    "by another client or with other memory"));
  }
  if (desc.endpoint != kLocalEndpoint) {
    if (auto other = NameHolderLocked(owner, desc.name)) {
      return Status(Code::kSegmentAlreadyExists, "segment name '" + desc.name + "' is in use by client " +
                                                     other->owner.ToString() + " at " + other->endpoint +
                                                     ": each storage process needs a name of its own (a " +
                                                     "local_hostname without a port gets its transfer port)");
    }
  }
  auto seg = std::make_shared<Segment>(desc, owner, alignment_);
  seg->only_tenant = only_tenant;
  YB_RETURN_IF_ERROR(AddLocked(seg));
  LogLocked(*seg);
  YB_LOG_INFO("mounted segment {} '{}' ({} bytes{}{}{}) for client {}", desc.id, desc.name, desc.size,
              desc.zone.empty() ? "" : ", zone ", desc.zone,
              only_tenant ? fmt::format(", tenant {}'s only", *only_tenant) : std::string(), owner.ToString());
  return Status::OK();
}

Status SegmentManager::SetDraining(SegmentId id, bool draining) {
  ReaderLock lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return Status(Code::kSegmentNotFound, "segment " + std::to_string(id) + " is not mounted");
  if (slot_draining_[SlotOf(it->second->ref)].exchange(draining) != draining) {
    if (draining) {
      YB_LOG_INFO("segment {} '{}' drains: no new replicas, its objects are copied elsewhere", id,
                  it->second->desc.name);
    } else {
      YB_LOG_INFO("segment {} '{}' no longer drains: it takes new replicas again", id, it->second->desc.name);
    }
  }
  return Status::OK();
}

bool SegmentManager::Draining(SegmentRef ref) const {
  ReaderLock lock(mu_);
  const auto& slot = by_slot_[SlotOf(ref)];
  return slot && slot->ref == ref && DrainingNow(*slot);
}

void SegmentManager::AppendNamesAndHostsOf(const ClientId& owner, std::vector<std::string>& out) const {
  ReaderLock lock(mu_);
  std::vector<std::string> hosts;
  auto add = [](std::vector<std::string>& v, std::string_view s) {
    if (std::find(v.begin(), v.end(), s) == v.end()) v.emplace_back(s);
  };
  for (const auto& seg : list_) {
    if (!(seg->owner == owner)) continue;
    add(out, seg->desc.name);
    add(hosts, HostOf(seg->desc.endpoint));
  }
  for (const auto& h : hosts) add(out, h);
}

size_t SegmentManager::CountServing(const ClientId& owner) const {
  ReaderLock lock(mu_);
  return static_cast<size_t>(
      std::count_if(list_.begin(), list_.end(), [&](const auto& seg) { return seg->owner == owner; }));
}

std::optional<SegmentManager::NameHolder> SegmentManager::NameHeldByOther(const ClientId& owner,
                                                                          const std::string& name) const {
  ReaderLock lock(mu_);
  return NameHolderLocked(owner, name);
}

std::optional<SegmentManager::NameHolder> SegmentManager::NameHolderLocked(const ClientId& owner,
                                                                           const std::string& name) const {
  for (const auto& [id, seg] : by_id_) {
    if (seg->desc.name == name && !(seg->owner == owner)) return NameHolder{seg->owner, seg->desc.endpoint};
  }
  return std::nullopt;
}

Result<SegmentRef> SegmentManager::Unmount(const ClientId& owner, SegmentId id) {
  WriterLock lock(mu_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return Status(Code::kSegmentNotFound, "segment " + std::to_string(id) + " is not mounted");
  if (!(it->second->owner == owner)) {
    return Status(Code::kIllegalClient, "segment " + std::to_string(id) + " belongs to another client");
  }
  {
    MutexLock seg_lock(it->second->mu);
    capacity_.fetch_sub(it->second->alloc.capacity(), std::memory_order_relaxed);
    allocated_.fetch_sub(it->second->alloc.capacity() - it->second->alloc.free_bytes(), std::memory_order_relaxed);
    held_bytes_.fetch_sub(it->second->held_bytes.load(std::memory_order_relaxed),
                          std::memory_order_relaxed);  // its memory goes with its owner
  }
  YB_LOG_INFO("unmounted segment {} '{}'", id, it->second->desc.name);
  SegmentRef ref = it->second->ref;
  uint32_t slot = SlotOf(ref);
  slot_ref_[slot].store(kNoSegment, std::memory_order_release);
  slot_serving_[slot].store(false, std::memory_order_release);
  by_slot_[slot].reset();
  free_slots_.insert(free_slots_.begin(), static_cast<uint16_t>(slot));  // reuse slots last
  by_id_.erase(it);
  RebuildListLocked();
  if (sink_) {
    pb::LogRecord rec;
    rec.set_segment_gone(id);
    sink_->Append(rec);
  }
  return ref;
}

void SegmentManager::RebuildListLocked() {
  list_.clear();
  for (auto& [id, seg] : by_id_) {
    if (seg->confirmed) list_.push_back(seg);
  }
  std::sort(list_.begin(), list_.end(), [](const auto& a, const auto& b) { return a->desc.id < b->desc.id; });
}

std::vector<SegmentId> SegmentManager::SegmentsOf(const ClientId& owner) const {
  ReaderLock lock(mu_);
  std::vector<SegmentId> out;
  for (const auto& [id, seg] : by_id_) {
    if (seg->owner == owner) out.push_back(id);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool SegmentManager::OwnerOf(SegmentRef ref, ClientId* owner) const {
  ReaderLock lock(mu_);
  const auto& slot = by_slot_[SlotOf(ref)];
  if (!slot || slot->ref != ref) return false;
  *owner = slot->owner;
  return true;
}

std::string SegmentManager::NameOf(SegmentRef ref) const {
  ReaderLock lock(mu_);
  const auto& slot = by_slot_[SlotOf(ref)];
  return slot && slot->ref == ref ? slot->desc.name : std::string();
}

SegmentRef SegmentManager::RefOf(SegmentId id, const ClientId& owner) const {
  ReaderLock lock(mu_);
  auto it = by_id_.find(id);
  return it != by_id_.end() && it->second->owner == owner ? it->second->ref : kNoSegment;
}

bool SegmentManager::Contains(SegmentId id) const {
  ReaderLock lock(mu_);
  return by_id_.count(id) != 0;
}

bool SegmentManager::TryAllocateOn(Segment& seg, TenantIndex tenant, uint64_t size, Allocation* out) {
  MutexLock lock(seg.mu);
  if (seg.held_bytes.load(std::memory_order_relaxed) > 0) {
    // A range this tenant's object held, of the size asked for: its grants let only this tenant's
    // callers in, who may read and write its new object anyway.
    const uint64_t rounded = (size + alignment_ - 1) & ~(alignment_ - 1);
    if (auto it = seg.held.find({tenant, rounded}); it != seg.held.end()) {
      const Segment::Held h = it->second.back();
      it->second.pop_back();
      if (it->second.empty()) seg.held.erase(it);
      seg.held_bytes.fetch_sub(rounded, std::memory_order_relaxed);
      held_bytes_.fetch_sub(rounded, std::memory_order_relaxed);
      *out = Allocation{h.offset, seg.ref, h.node};
      return true;
    }
  }
  auto r = seg.alloc.Allocate(size);
  if (!r) return false;
  seg.free_bytes.store(seg.alloc.free_bytes(), std::memory_order_relaxed);
  allocated_.fetch_add(seg.alloc.AllocationSize(r->node), std::memory_order_relaxed);
  *out = Allocation{r->offset, seg.ref, r->node};
  return true;
}

std::vector<Allocation> SegmentManager::Allocate(TenantIndex tenant, uint64_t size, size_t count,
                                                 const std::vector<std::string>& preferred,
                                                 const std::vector<SegmentId>& avoid, size_t preferred_for) {
  std::vector<Allocation> out;
  if (count == 0 || size == 0) return out;
  const TimeMs now = Now();
  ReaderLock lock(mu_);
  // Replicas go to distinct names (each a storage process, its own fault domain); to distinct
  // zones (the label an operator gives, --zone) and distinct hosts while there are any: a zone's
  // hosts share a switch or a power feed, a host's daemons its power and its network. The segments
  // to avoid already hold a copy (a repair) or could not be written: their zones and hosts count as
  // taken.
  // A segment to avoid takes its owner's other segments with it: one process, one fate.
  std::vector<const std::string*> used_names;
  std::vector<std::string_view> used_hosts, used_zones;
  std::vector<ClientId> avoided_owners;
  auto taken = [](const std::vector<std::string_view>& v, std::string_view x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (SegmentId id : avoid) {
    if (auto it = by_id_.find(id); it != by_id_.end()) {
      avoided_owners.push_back(it->second->owner);
      used_hosts.push_back(HostOf(it->second->desc.endpoint));
      used_zones.push_back(it->second->desc.zone);
    }
  }
  auto name_used = [&](const std::string& n) {
    return std::any_of(used_names.begin(), used_names.end(), [&](const std::string* u) { return *u == n; });
  };
  enum Spread { kNewZoneAndHost, kNewZone, kNewHost, kAny };
  // A segment whose owner the master does not hear from takes nothing; one that clients report
  // unreachable, only when no other segment takes the object (below).
  auto try_segment = [&](Segment& seg, Spread spread, bool even_shunned = false) {
    if (out.size() >= count || name_used(seg.desc.name) || DrainingNow(seg) || UnheardAt(seg, now)) return;
    if (!even_shunned && now < slot_shunned_[SlotOf(seg.ref)].load(std::memory_order_relaxed)) return;
    if (seg.only_tenant && *seg.only_tenant != tenant) return;
    const std::string_view host = HostOf(seg.desc.endpoint);
    if ((spread == kNewZoneAndHost || spread == kNewHost) && taken(used_hosts, host)) return;
    if (spread <= kNewZone && taken(used_zones, seg.desc.zone)) return;
    if (std::find(avoided_owners.begin(), avoided_owners.end(), seg.owner) != avoided_owners.end()) return;
    Allocation a;
    if (TryAllocateOn(seg, tenant, size, &a)) {
      out.push_back(a);
      used_names.push_back(&seg.desc.name);
      used_hosts.push_back(host);
      used_zones.push_back(seg.desc.zone);
    }
  };
  // A preferred name is a segment's name, or the host part of it ("node-a" for "node-a:15001").
  for (const auto& name : preferred) {
    for (const auto& seg : list_) {
      if (out.size() >= preferred_for) break;
      if (SegmentNameMatches(seg->desc.name, name)) try_segment(*seg, kAny);
    }
  }
  if (out.size() >= count) return out;

  thread_local std::vector<SegmentCandidate> candidates;
  thread_local std::vector<uint32_t> order;
  candidates.clear();
  bool zoned = false;
  for (const auto& seg : list_) {
    // Held ranges count as room: the tenant that freed them may take them again.
    candidates.push_back({seg->capacity, seg->free_bytes.load(std::memory_order_relaxed) +
                                             seg->held_bytes.load(std::memory_order_relaxed)});
    zoned = zoned || !seg->desc.zone.empty();
  }
  strategy_->Order(candidates, order);
  for (Spread spread : {kNewZoneAndHost, kNewZone, kNewHost, kAny}) {
    if (spread <= kNewZone && !zoned) continue;  // no zones: the same as kNewHost
    for (uint32_t i : order) {
      if (candidates[i].free < size) continue;
      try_segment(*list_[i], spread);
      if (out.size() >= count) return out;
    }
  }
  if (out.empty() && now < any_shunned_until_.load(std::memory_order_relaxed)) {
    for (uint32_t i : order) {
      if (candidates[i].free >= size) try_segment(*list_[i], kAny, true);
      if (!out.empty()) break;
    }
  }
  return out;
}

SegmentManager::NameState SegmentManager::StateOfName(const std::string& name, TenantIndex tenant) const {
  ReaderLock lock(mu_);
  NameState state = NameState::kNone;
  for (const auto& [id, seg] : by_id_) {
    if (!SegmentNameMatches(seg->desc.name, name) || (seg->only_tenant && *seg->only_tenant != tenant)) continue;
    if (!seg->confirmed) {
      state = std::max(state, NameState::kAway);
    } else if (!DrainingNow(*seg)) {
      return NameState::kTakes;
    } else {
      state = NameState::kDraining;
    }
  }
  return state;
}

std::optional<Allocation> SegmentManager::AllocateOn(TenantIndex tenant, uint64_t size, const std::string& name) {
  if (size == 0) return std::nullopt;
  const TimeMs now = Now();
  ReaderLock lock(mu_);
  for (const auto& seg : list_) {
    if (!SegmentNameMatches(seg->desc.name, name) || DrainingNow(*seg) || UnheardAt(*seg, now)) continue;
    if (seg->only_tenant && *seg->only_tenant != tenant) continue;
    Allocation a;
    if (TryAllocateOn(*seg, tenant, size, &a)) return a;
  }
  return std::nullopt;
}

bool SegmentManager::HasKey(SegmentRef ref) const {
  const uint32_t slot = SlotOf(ref);
  return slot_key_[2 * slot].load(std::memory_order_acquire) != 0 ||
         slot_key_[2 * slot + 1].load(std::memory_order_acquire) != 0;
}

pb::LogHold SegmentManager::ToLogHold(SegmentId segment, TenantIndex tenant, uint64_t size, const Segment::Held& h,
                                      TimeMs now, int64_t wall_ms) {
  pb::LogHold r;
  r.set_segment(segment);
  r.set_offset(h.offset);
  r.set_size(size);
  r.set_tenant(tenant);
  r.set_until_wall_ms(wall_ms + (h.until - now));  // a restarted master's clock starts elsewhere
  return r;
}

std::optional<pb::LogHold> SegmentManager::FenceRecord(const Allocation& a, TimeMs until) const {
  ReaderLock lock(mu_);
  const auto& slot = by_slot_[SlotOf(a.segment)];
  if (!slot || slot->ref != a.segment) return std::nullopt;
  MutexLock seg_lock(slot->mu);
  const uint64_t sz = slot->alloc.AllocationSize(a.node);
  if (sz == 0) return std::nullopt;
  return ToLogHold(slot->desc.id, kFenced, sz, Segment::Held{until, a.node, a.offset}, Now(), WallMs());
}

void SegmentManager::LogFence(const Allocation& a, TimeMs until) const {
  if (!sink_) return;
  auto fence = FenceRecord(a, until);
  if (!fence) return;
  pb::LogRecord rec;
  *rec.mutable_hold() = std::move(*fence);
  sink_->Append(rec);
}

void SegmentManager::HoldLocked(Segment& seg, TenantIndex tenant, uint64_t size, Segment::Held h, bool log) {
  seg.held[{tenant, size}].push_back(h);
  seg.held_bytes.fetch_add(size, std::memory_order_relaxed);
  held_bytes_.fetch_add(size, std::memory_order_relaxed);
  if (!log || !sink_) return;
  pb::LogRecord rec;
  *rec.mutable_hold() = ToLogHold(seg.desc.id, tenant, size, h, Now(), WallMs());
  sink_->Append(rec);
}

void SegmentManager::Free(const Allocation& a, TimeMs hold_until, TenantIndex tenant, std::optional<TimeMs> fence_until) {
  ReaderLock lock(mu_);
  const auto& slot = by_slot_[SlotOf(a.segment)];
  if (!slot || slot->ref != a.segment) return;  // unmounted: its memory went with it
  Segment& seg = *slot;
  MutexLock seg_lock(seg.mu);
  uint64_t sz = seg.alloc.AllocationSize(a.node);
  if (fence_until && sz > 0 && std::max(hold_until, *fence_until) > Now()) {
    HoldLocked(seg, kFenced, sz, Segment::Held{std::max(hold_until, *fence_until), a.node, a.offset}, true);
    return;
  }
  // Only another tenant's callers could misuse an old grant: a segment that takes one tenant's
  // replicas needs no holding, nor one whose grants mean nothing (mounted without a key).
  if (hold_until > 0 && sz > 0 && !seg.only_tenant && HasKey(a.segment) && hold_until > Now()) {
    HoldLocked(seg, tenant, sz, Segment::Held{hold_until, a.node, a.offset}, true);
    return;
  }
  if (seg.alloc.Free(a.node)) {
    seg.free_bytes.store(seg.alloc.free_bytes(), std::memory_order_relaxed);
    allocated_.fetch_sub(sz, std::memory_order_relaxed);
  } else {
    YB_LOG_ERROR("free of a range that is not allocated: segment {} offset {}", seg.desc.id, a.offset);
  }
}

uint64_t SegmentManager::ReleaseHeld() {
  if (held_bytes_.load(std::memory_order_relaxed) == 0) return 0;
  const TimeMs now = Now();
  uint64_t released = 0;
  ReaderLock lock(mu_);
  for (const auto& [id, seg] : by_id_) {
    if (seg->held_bytes.load(std::memory_order_relaxed) == 0) continue;
    MutexLock seg_lock(seg->mu);
    for (auto it = seg->held.begin(); it != seg->held.end();) {
      const uint64_t size = it->first.second;
      auto& queue = it->second;
      while (!queue.empty() && queue.front().until <= now) {
        const uint32_t node = queue.front().node;
        queue.pop_front();
        seg->held_bytes.fetch_sub(size, std::memory_order_relaxed);
        held_bytes_.fetch_sub(size, std::memory_order_relaxed);
        if (seg->alloc.Free(node)) {
          allocated_.fetch_sub(size, std::memory_order_relaxed);
          released += size;
        }
      }
      it = queue.empty() ? seg->held.erase(it) : std::next(it);
    }
    seg->free_bytes.store(seg->alloc.free_bytes(), std::memory_order_relaxed);
  }
  return released;
}

void SegmentManager::HoldRestored(SegmentRef ref, uint32_t node, uint64_t offset, TenantIndex tenant, TimeMs until) {
  ReaderLock lock(mu_);
  const auto& slot = by_slot_[SlotOf(ref)];
  if (!slot || slot->ref != ref) return;
  MutexLock seg_lock(slot->mu);
  const uint64_t sz = slot->alloc.AllocationSize(node);
  if (sz > 0) HoldLocked(*slot, tenant, sz, Segment::Held{until, node, offset}, false);
}

std::vector<pb::LogHold> SegmentManager::HeldRecords() const {
  std::vector<pb::LogHold> out;
  if (held_bytes_.load(std::memory_order_relaxed) == 0) return out;
  const TimeMs now = Now();
  const int64_t wall = WallMs();
  ReaderLock lock(mu_);
  for (const auto& [id, seg] : by_id_) {
    MutexLock seg_lock(seg->mu);
    for (const auto& [tenant_size, queue] : seg->held) {
      for (const auto& h : queue) out.push_back(ToLogHold(id, tenant_size.first, tenant_size.second, h, now, wall));
    }
  }
  return out;
}

uint64_t SegmentManager::largest_segment() const {
  ReaderLock lock(mu_);
  uint64_t m = 0;
  for (const auto& seg : list_) m = std::max(m, seg->capacity);
  return m;
}

size_t SegmentManager::segment_count() const {
  ReaderLock lock(mu_);
  return list_.size();
}

std::vector<SegmentUsage> SegmentManager::List() const {
  ReaderLock lock(mu_);
  std::vector<SegmentUsage> out;
  for (const auto& seg : list_) {
    MutexLock seg_lock(seg->mu);
    auto st = seg->alloc.GetStats();
    SegmentUsage u;
    u.desc = seg->desc;  // the listing's part: no grant key
    u.owner = seg->owner;
    u.capacity = st.capacity;
    u.allocated = st.allocated_bytes;
    u.allocations = st.allocations;
    u.free_regions = st.free_regions;
    u.largest_free_region = st.largest_free_region;
    u.fragmentation = st.fragmentation;
    u.draining = DrainingNow(*seg);
    out.push_back(std::move(u));
  }
  return out;
}

}  // namespace yb
