#include "client/membership.h"

#include <algorithm>
#include <random>

#include "common/grant.h"
#include "common/host_identity.h"

namespace yb {

Status DrainSegments(MasterApi& master, const CallContext& ctx, const std::vector<SegmentId>& ids,
                     std::chrono::milliseconds timeout, const std::function<void(uint64_t remaining)>& progress,
                     const Clock& clock) {
  const TimeMs deadline = clock.NowMs() + timeout.count();
  for (;;) {
    uint64_t remaining = 0;
    for (SegmentId id : ids) {
      auto n = master.DrainSegment(ctx, id);
      if (!n.ok()) return n.status();
      remaining += *n;
    }
    if (progress) progress(remaining);
    if (remaining == 0) return Status::OK();
    if (clock.NowMs() >= deadline) {
      return Status(Code::kRpcTimeout, std::to_string(remaining) +
                                           " objects were still held only on the drained segments when the "
                                           "drain's time ran out");
    }
    clock.SleepUntil(clock.NowMs() + 200);
  }
}

Membership::Membership(const ClientConfig& config, std::shared_ptr<MasterApi> master,
                       std::shared_ptr<LocalSegmentRegistry> local, std::shared_ptr<LocalSegmentRegistry> served,
                       std::string endpoint, std::shared_ptr<TransferEngine> engine)
    : config_(config),
      master_(std::move(master)),
      local_(std::move(local)),
      served_(std::move(served)),
      endpoint_(std::move(endpoint)),
      engine_(std::move(engine)),
      id_(ClientId::Random()) {
  ctx_.client = id_;
}

Membership::~Membership() { StopHeartbeat(); }

ClientRegistration Membership::Registration() const {
  return {id_, config_.local_hostname, config_.tenant, config_.enable_offload, ctx().token};
}

Status Membership::Register() {
  auto ctx = master_->RegisterClient(Registration());
  if (!ctx.ok()) return ctx.status();
  MutexLock lock(ctx_mu_);
  ctx_ = *ctx;
  return Status::OK();
}

void Membership::StartHeartbeat(Scheduler& scheduler) {
  heartbeat_ = scheduler.Every("yb-heartbeat", std::chrono::seconds(1), [this] { (void)Beat(); });
}

void Membership::StopHeartbeat() { heartbeat_.reset(); }

Status Membership::MountPool() {
  if (config_.global_segment_size == 0) return Status::OK();
  pool_ = MappedRegion::Map(config_.global_segment_size, config_.prefault_segment, config_.same_host_transfers);
  if (!pool_) {
    return Status(Code::kInternal, "cannot " + std::string(config_.prefault_segment ? "map and fault in" : "map") +
                                       " a global segment of " + std::to_string(config_.global_segment_size) +
                                       " bytes: not that much memory free?");
  }
  // Said where the host says (an unreadable setting is not taken for "off").
  if (const std::string thp = pool_->fd() >= 0 ? ShmemHugePages() : ""; !thp.empty() && !ShmemHugePagesOn(thp)) {
    YB_LOG_INFO(
        "shmem huge pages are off here (transparent_hugepage/shmem_enabled: {}): the processes of this "
        "host that map this segment pay a page fault per 4 KiB at their first touch of each page; "
        "'advise' lets it use huge pages (docs/operations.md, \"Same-host transfers\")",
        thp);
  }
  auto mounted = MountRegion(pool_);
  if (!mounted.ok()) UnmountPool();
  return mounted.status();
}

Result<std::vector<SegmentMount>> Membership::MountRegion(const std::shared_ptr<MappedRegion>& region) {
  std::mt19937_64 rng(std::random_device{}() ^ id_.lo ^ reinterpret_cast<uint64_t>(region->data()));
  // This mapping of the memory: a master that restarted keeps the objects of segments re-mounted
  // with it, and drops those of a client that came back with fresh memory.
  const uint64_t incarnation = rng() | 1;
  std::vector<SegmentMount> out;
  for (uint64_t off = 0; off < region->size(); off += config_.segment_chunk_size) {
    uint64_t size = std::min(config_.segment_chunk_size, region->size() - off);
    // The segment's grant key: the master mints with it what our transfer server lets others move.
    SegmentMount d{{rng() | 1, config_.local_hostname, reinterpret_cast<uint64_t>(region->data() + off), size,
                    endpoint_, config_.zone, HostIdentity()},
                   incarnation,
                   NewGrantKey()};
    local_->Add(d.id, LocalSegment{region, region->data() + off, size, d.grant_key});
    if (served_) served_->Add(d.id, LocalSegment{region, region->data() + off, size, d.grant_key});
    Status st = master_->MountSegment(ctx(), d);
    if (!st.ok()) {
      local_->Remove(d.id);
      if (served_) served_->Remove(d.id);
      std::vector<SegmentId> ids;
      for (const auto& m : out) ids.push_back(m.id);
      (void)Unmount(ids);
      return st;
    }
    MutexLock lock(mu_);
    mounted_.push_back(d);
    out.push_back(d);
  }
  return out;
}

Status Membership::MayMountMore() const {
  if (served_) return Status::OK();
  return Status(Code::kNotSupported,
                "this client serves no transfers (set up with global_segment_size 0): memory it mounted could not "
                "be reached by others");
}

Result<std::vector<SegmentMount>> Membership::AllocateAndMount(uint64_t size) {
  YB_RETURN_IF_ERROR(MayMountMore());
  if (size == 0) return Status(Code::kInvalidParams, "a segment of 0 bytes");
  auto region = MappedRegion::Map(size, config_.prefault_segment, config_.same_host_transfers);
  if (!region) {
    return Status(Code::kInternal, "cannot map " + std::to_string(size) + " bytes: not that much memory free?");
  }
  return MountRegion(region);
}

Result<std::vector<SegmentMount>> Membership::MountFile(const std::string& path, uint64_t offset, uint64_t size) {
  YB_RETURN_IF_ERROR(MayMountMore());
  auto region = MappedRegion::MapFile(path, offset, size);
  if (!region.ok()) return region.status();
  return MountRegion(*region);
}

Status Membership::Unmount(const std::vector<SegmentId>& ids) {
  Status first;
  for (SegmentId id : ids) {
    bool ours = false;
    {
      MutexLock lock(mu_);
      auto it = std::find_if(mounted_.begin(), mounted_.end(), [&](const SegmentMount& d) { return d.id == id; });
      if (it != mounted_.end()) {
        mounted_.erase(it);
        ours = true;
      }
    }
    if (!ours) {
      if (first.ok()) first = Status(Code::kSegmentNotFound, "segment " + std::to_string(id) + " is not this client's");
      continue;
    }
    Status st = master_->UnmountSegment(ctx(), id);
    if (!st.ok() && st.code() != Code::kSegmentNotFound && first.ok()) first = st;
    // Its memory goes when the last transfer holding it ends (LocalSegment keeps the region).
    local_->Remove(id);
    if (served_) served_->Remove(id);
  }
  return first;
}

bool Membership::UnmountPool() {
  std::vector<SegmentMount> segs;
  {
    MutexLock lock(mu_);
    segs.swap(mounted_);
  }
  bool master_reachable = true;
  for (const auto& d : segs) {
    if (master_reachable) {
      Status st = master_->UnmountSegment(ctx(), d.id);
      if (st.IsUnavailable()) {
        // Do not wait a deadline per segment: the master drops them when our pings stop.
        YB_LOG_WARN("master unreachable while unmounting ({}); it will drop our segments after client_ttl",
                    st.ToString());
        master_reachable = false;
      } else if (!st.ok() && st.code() != Code::kSegmentNotFound) {
        YB_LOG_WARN("unmounting segment {} failed: {}", d.id, st.ToString());
      }
    }
    local_->Remove(d.id);
    if (served_) served_->Remove(d.id);
  }
  return master_reachable;
}

void Membership::Leave() {
  // Leaving says so, so that the master stops counting this client as live now rather than after
  // client_ttl.
  if (Status st = master_->UnregisterClient(ctx()); !st.ok() && st.code() != Code::kNotSupported) {
    YB_LOG_INFO("leaving: the master did not take the news ({}); it forgets this client after client_ttl",
                st.ToString());
  }
}

void Membership::Note(const Status& ping) {
  if (ping.ok()) {
    if (uint64_t missed = missed_.exchange(0); missed > 0) {
      YB_LOG_INFO("client '{}': master {} reachable again after {} failed heartbeats", config_.local_hostname,
                  config_.master_server_addr, missed);
    }
    return;
  }
  ++failures_;
  if (uint64_t missed = ++missed_; LogOccurrence(missed)) {
    YB_LOG_WARN("client '{}': {} heartbeat{} to master {} failed ({}); trying again every second",
                config_.local_hostname, missed, missed == 1 ? "" : "s in a row", config_.master_server_addr,
                ping.ToString());
  }
}

Status Membership::Beat() {
  PingState state;
  state.mounted_segments = static_cast<uint32_t>(mounted().size());
  pins_.State(state);
  if (engine_) unreachable_.State(*engine_, state);
  auto pong = master_->Ping(ctx(), state);
  if (pong.code() == Code::kClientNotFound) {
    // A master that does not know our token (it restarted without its metadata log): register
    // again, then re-mount as for any master that lost us.
    YB_LOG_WARN("client {}: the master does not know this client ({}): registering again", id_.ToString(),
                pong.status().message());
    pong = PingResponse{true, 0};
  }
  Note(pong.status());
  if (!pong.ok()) return pong.status();
  // Each answer weighs what we hold against what the master serves from: a re-mount that failed,
  // or whose answer was lost, is asked for again by the next one.
  segments_mounted_ = !pong->need_remount;
  if (pong->repairs > 0) repairs_waiting_ = true;
  if (pong->need_remount) {
    // The master lost us (restart, or we were declared dead): register again, then re-mount.
    YB_RETURN_IF_ERROR(Register());
    std::vector<SegmentMount> segs = mounted();
    if (!segs.empty()) {
      YB_LOG_INFO("master asked client {} to re-mount {} segments", id_.ToString(), segs.size());
      YB_RETURN_IF_ERROR(master_->MountSegments(ctx(), segs));
      segments_mounted_ = true;
      ++remounts_;
      // The master forgot our disk replicas with our segments: they are registered again below.
      MutexLock lock(mu_);
      hook_owed_ = true;
    }
  }
  std::function<Status(SegmentId)> hook;
  SegmentId first = 0;
  {
    MutexLock lock(mu_);
    if (!hook_owed_ || !remount_hook_ || mounted_.empty()) return Status::OK();
    hook = remount_hook_;
    first = mounted_.front().id;
  }
  YB_RETURN_IF_ERROR(hook(first));
  MutexLock lock(mu_);
  hook_owed_ = false;
  return Status::OK();
}

void Membership::SetRemountHook(std::function<Status(SegmentId)> hook) {
  MutexLock lock(mu_);
  remount_hook_ = std::move(hook);
}

bool Membership::IsLocal(SegmentId s) const {
  MutexLock lock(mu_);
  for (const auto& d : mounted_) {
    if (d.id == s) return true;
  }
  return false;
}

std::vector<SegmentMount> Membership::mounted() const {
  MutexLock lock(mu_);
  return mounted_;
}

}  // namespace yb
