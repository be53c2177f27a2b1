// MasterService: construction, clients, segments and background steps.
// Object operations are in master_objects.cc, batch forms in master_batch.cc.
#include "master/master_service.h"

#include <openssl/crypto.h>

#include <cstring>
#include <random>
#include <unordered_set>

#include "common/grant.h"
#include "common/log.h"
#include "common/resolve.h"

namespace yb {

std::string InternalKey(TenantIndex tenant, std::string_view key) {
  std::string k;
  k.reserve(key.size() + 2);
  k.push_back(static_cast<char>(tenant >> 8));
  k.push_back(static_cast<char>(tenant & 0xff));
  k.append(key);
  return k;
}

Result<std::unique_ptr<MasterService>> MasterService::Create(const MasterConfig& config, const Clock& clock) {
  auto bad = [](const std::string& m) { return Status(Code::kInvalidParams, m); };
  if (config.eviction_high_watermark_ratio <= 0 || config.eviction_high_watermark_ratio > 1) {
    return bad("eviction_high_watermark_ratio must be in (0, 1]");
  }
  if (config.eviction_ratio < 0 || config.eviction_ratio > 1) return bad("eviction_ratio must be in [0, 1]");
  if (config.default_kv_lease_ttl_ms < 0) return bad("default_kv_lease_ttl must be >= 0");
  if (config.grant_ttl_sec < 1 || config.grant_ttl_sec > 86400) return bad("grant_ttl_sec must be within 1-86400");
  if (config.client_ttl_sec <= 0) return bad("client_ttl must be > 0");
  if (config.put_start_discard_timeout_sec < 0 ||
      config.put_start_release_timeout_sec < config.put_start_discard_timeout_sec) {
    return bad("need 0 <= put_start_discard_timeout_sec <= put_start_release_timeout_sec");
  }
  if (config.allocation_alignment == 0 || (config.allocation_alignment & (config.allocation_alignment - 1))) {
    return bad("allocation_alignment must be a power of two");
  }
  if (config.object_shards == 0) return bad("object_shards must be > 0");
  if (config.miss_reason_keys > (1ULL << 31)) return bad("miss_reason_keys must be at most 2^31");
  uint64_t seed = config.random_seed ? config.random_seed : std::random_device{}();
  auto strategy = MakeAllocationStrategy(config.allocation_strategy, seed);
  if (!strategy.ok()) return strategy.status();
  return std::unique_ptr<MasterService>(new MasterService(config, clock, std::move(strategy).value()));
}

MasterService::MasterService(const MasterConfig& config, const Clock& clock,
                             std::unique_ptr<AllocationStrategy> strategy)
    : config_(config),
      identity_key_(NewGrantKey()),
      clock_(clock),
      grant_hold_(clock_, std::max(config.grant_ttl_sec * 1000, config.repair_task_timeout_sec * 1000 + kCopyGrantSlackMs) +
                              kGrantClockMarginMs),
      segments_(std::move(strategy), config.allocation_alignment, &clock_),
      table_(segments_, tenants_, config.object_shards, config.disk_away_copies_limit),
      offload_(config.offload_queue_limit),
      evictor_(table_, segments_, offload_, clock_, config_),
      clients_(clock_, config.client_ttl_sec * 1000) {
  if (config.hold_freed_ranges) table_.SetGrantHold(&grant_hold_);
  table_.RememberGone(config.miss_reason_keys, clock_);
  table_.SetWriteFence(WriteGrantMs(config) + kGrantClockMarginMs);
  // A copy given up at its deadline may land bytes until its source grant lapses.
  segments_.SetFenceFloor(kCopyGrantSlackMs + kGrantClockMarginMs);
}

TimeMs MasterService::WriteGrantMs(const MasterConfig& config) {
  int64_t ms = config.grant_ttl_sec * 1000;
  if (config.put_start_discard_timeout_sec > 0) ms = std::min(ms, config.put_start_discard_timeout_sec * 1000);
  return ms;
}

CallerToken MasterService::TokenFor(const ClientId& client, TenantIndex tenant) const {
  uint8_t head[4 + 8 + 8 + 2] = {'Y', 'B', 'I', 'D'};
  std::memcpy(head + 4, &client.hi, 8);
  std::memcpy(head + 12, &client.lo, 8);
  std::memcpy(head + 20, &tenant, 2);
  CallerToken t{};
  (void)KeyedMac(identity_key_, head, sizeof(head), {}, t);
  return t;
}

Status MasterService::ApplyConfiguredQuotas() {
  for (const auto& [tenant, bytes] : config_.tenant_quotas) YB_RETURN_IF_ERROR(tenants_.SetQuota(tenant, bytes));
  return Status::OK();
}

std::vector<MasterService::TenantUsage> MasterService::Tenants() const {
  std::vector<TenantUsage> out;
  for (size_t t = 0; t < tenants_.count(); ++t) {
    const auto i = static_cast<TenantIndex>(t);
    out.push_back({tenants_.name(i), tenants_.quota(i), tenants_.used(i)});
  }
  return out;
}

Status MasterService::VerifyCaller(const CallContext& ctx) {
  if (!ctx.has_token()) {
    return Status(Code::kIllegalClient, "the call carries no client token: register first (RegisterClient)");
  }
  const CallerToken want = TokenFor(ctx.client, ctx.tenant);
  if (CRYPTO_memcmp(want.data(), ctx.token.data(), want.size()) != 0) {
    return Status(Code::kClientNotFound, "client " + ctx.client.ToString() +
                                             " is not registered with this master under that tenant: register again");
  }
  return Status::OK();
}

Result<CallContext> MasterService::RegisterClient(const ClientRegistration& reg) {
  if (reg.id.empty()) return Status(Code::kInvalidParams, "client id is empty");
  if (reg.hostname.size() > kMaxHostNameLength) {
    return Status(Code::kInvalidParams, "a host name of " + std::to_string(reg.hostname.size()) + " bytes exceeds " +
                                            std::to_string(kMaxHostNameLength));
  }
  auto t = tenants_.Register(reg.tenant);
  if (!t.ok()) return t.status();
  CallContext ctx{reg.id, *t, TokenFor(reg.id, *t)};
  // An id the master knows goes only to the client that had it: one that proves it with the token
  // it was given (registering again after a restart, or after being declared dead).
  const bool proven = CRYPTO_memcmp(ctx.token.data(), reg.token.data(), ctx.token.size()) == 0;
  if (!proven && (clients_.Known(reg.id) || !segments_.SegmentsOf(reg.id).empty())) {
    YB_LOG_WARN("refused to register client {} (host '{}'): the id is in use and the caller did not prove it",
                reg.id.ToString(), reg.hostname);
    return Status(Code::kIllegalClient, "client id " + reg.id.ToString() + " is in use by another client");
  }
  clients_.Register(reg.id);
  if (reg.ssd_tier) offload_.AddClient(reg.id);
  YB_LOG_INFO("client {} registered (host '{}', tenant '{}'{})", reg.id.ToString(), reg.hostname, reg.tenant,
              reg.ssd_tier ? ", with an SSD tier" : "");
  return ctx;
}

Result<PingResponse> MasterService::Ping(const CallContext& ctx, const PingState& state) {
  const uint32_t mounted_segments = state.mounted_segments;
  PingResponse r;
  r.need_remount = clients_.Ping(ctx.client);
  if (state.pins_stated && state.pins.size() <= kMaxStatedPins && tenants_.Valid(ctx.tenant))
    RenewPins(ctx, state.pins);
  if (!state.unreachable.empty()) {
    for (SegmentId id : segments_.Shun(ctx.client, state.unreachable, clock_.NowMs() + config_.unreachable_report_ms)) {
      YB_LOG_WARN("segment {} reported unreachable by client {}: handed to readers only where no other replica is, "
                  "and to writers only where no other segment has room, while reports go on",
                  id, ctx.client.ToString());
    }
  }
  r.repairs += repairs_.Waiting(ctx.client);
  if (!r.need_remount && mounted_segments > 0 && segments_.CountServing(ctx.client) < mounted_segments) {
    r.need_remount = true;  // it holds segments we do not serve from: it mounts them again
  }
  return r;
}

Status MasterService::MountOne(const CallContext& ctx, const SegmentMount& seg) {
  if (ctx.client.empty()) return Status(Code::kInvalidParams, "client id is empty");
  clients_.Touch(ctx.client);
  // While the log cannot be written, only a mount that changes nothing recorded (an owner back with
  // its memory after a restart) is taken.
  if (Status w = Writable(); !w.ok() && !segments_.RecordedAsIs(ctx.client, seg)) return w;
  if (segments_.Stale(ctx.client, seg)) {
    // Its owner came back after our restart with other memory behind the segment: what we
    // recovered on it is gone.
    YB_LOG_WARN("segment {} of client {} came back with other memory: its recovered replicas are dropped", seg.id,
                ctx.client.ToString());
    (void)UnmountAndDrop(ctx.client, seg.id);
  }
  if (!segments_.Contains(seg.id) && segments_.SegmentsOf(ctx.client).size() >= config_.max_segments_per_client) {
    return Status(Code::kInvalidParams, "client " + ctx.client.ToString() + " has " +
                                            std::to_string(config_.max_segments_per_client) +
                                            " segments mounted, the most one client may (--max_segments_per_client); "
                                            "mount larger chunks (segment_chunk_size)");
  }
  if (seg.endpoint != kLocalEndpoint) {
    if (auto holder = segments_.NameHeldByOther(ctx.client, seg.name); holder && holder->endpoint == seg.endpoint) {
      // Only a process on the endpoint's own host may say it replaced the one there (the name
      // and endpoint of every node are public on /segments): another host waits until the
      // holder is declared dead.
      if (!ctx.peer_address.empty() && !PeerOnHostOf(ctx.peer_address, seg.endpoint)) {
        YB_LOG_WARN("client {} from {} mounts '{}' at {}, which live client {} holds: refused (not that host)",
                    ctx.client.ToString(), ctx.peer_address, seg.name, seg.endpoint, holder->owner.ToString());
        return Status(Code::kSegmentAlreadyExists,
                      "segment name '" + seg.name + "' at " + seg.endpoint + " is held by client " +
                          holder->owner.ToString() + ", and this call does not come from that host");
      }
      // A new process at the old one's transfer endpoint: the old one is gone (two processes do
      // not listen on one port), with the memory behind its segments.
      YB_LOG_WARN("client {} serves at {}, where client {} did: that client's segments named '{}' are gone",
                  ctx.client.ToString(), seg.endpoint, holder->owner.ToString(), seg.name);
      for (SegmentId id : segments_.SegmentsOf(holder->owner)) {
        (void)UnmountAndDrop(holder->owner, id);
      }
    }
  }
  // A tenant's client (MasterServiceOptions::tenants_may_mount) lends memory to its tenant only.
  return segments_.Mount(ctx.client, seg, ctx.any_tenant ? std::nullopt : std::optional(ctx.tenant));
}

Status MasterService::MountSegments(const CallContext& ctx, const std::vector<SegmentMount>& segs) {
  Status first_error;
  for (const auto& s : segs) {
    Status st = MountOne(ctx, s);
    if (!st.ok() && first_error.ok()) first_error = st;
  }
  return first_error;
}

Status MasterService::UnmountSegment(const CallContext& ctx, SegmentId id) { return UnmountAndDrop(ctx.client, id); }

Status MasterService::UnmountAndDrop(const ClientId& owner, SegmentId segment) {
  auto ref = segments_.Unmount(owner, segment);
  if (!ref.ok()) return ref.status();
  DropSegmentEverywhere(*ref, segment);
  return Status::OK();
}

void MasterService::DropSegmentEverywhere(SegmentRef id, SegmentId segment) {
  uint64_t dropped = 0;
  std::string named;  // the first keys lost, for the log
  constexpr int kNamed = 16;
  int n_named = 0;
  for (size_t i = 0; i < table_.shard_count(); ++i) {
    auto s = table_.LockShard(i);
    // The owner keeps its disk copies: they come back when it registers them again.
    dropped += s.DropSegment(
        id, MissReason::kNodeLost, [&](ObjectTable::Ref obj) { s.NoteAwayCopy(obj.key(), obj->known_checksum(), false); },
        [&](ObjectTable::Ref obj) {
          const size_t have = obj->CompleteMemoryReplicas();
          if (have < obj->want_replicas) NoteAtRisk(std::string(obj.key()), have);
        },
        [&](std::string_view table_key) {
          if (n_named++ < kNamed) named += (named.empty() ? "" : ", ") + Quote(table_key.substr(2));
        });
  }
  {
    MutexLock lock(discarded_mu_);
    for (auto& d : discarded_) {
      std::erase_if(d.replicas, [&](const StoredReplica& r) { return r.segment() == id; });
    }
  }
  if (dropped) {
    objects_lost_.fetch_add(dropped, std::memory_order_relaxed);
    YB_LOG_WARN("{} objects lost their last replica with segment {}: removed (lost: {}{})", dropped, segment, named,
                dropped > kNamed ? ", ..." : "");
  }
}

Result<std::vector<SegmentUsage>> MasterService::ListSegments() { return segments_.List(); }

uint64_t MasterService::ReclaimOnce() {
  TimeMs now = clock_.NowMs();
  uint64_t reclaimed = 0;
  std::vector<Discarded> due;
  {
    MutexLock lock(discarded_mu_);
    std::erase_if(discarded_, [&](Discarded& d) {
      if (d.release_at > now) return false;
      due.push_back(std::move(d));
      return true;
    });
  }
  for (auto& d : due) {
    table_.FreeUnfinished(d.tenant, d.size, d.replicas, d.started);
    ++reclaimed;
  }
  const TimeMs release_ms = config_.put_start_release_timeout_sec * 1000;
  for (size_t i = 0; i < table_.shard_count(); ++i) {
    reclaimed += table_.LockShard(i).RevokePendingIf([&](std::string_view, const PendingPut& p) {
      if (now - p.started < release_ms) return false;
      YB_LOG_WARN("reclaiming a Put unfinished for {} s by client {}", (now - p.started) / 1000, p.writer.ToString());
      return true;
    });
  }
  return reclaimed;
}

Status MasterService::UnregisterClient(const CallContext& ctx) {
  if (!clients_.Remove(ctx.client)) return Status::OK();
  ForgetClient(ctx.client, "left");  // what it still has mounted goes as if it had died
  UnpinForgottenClients();
  return Status::OK();
}

uint64_t MasterService::LivenessOnce() {
  const TimeMs now = clock_.NowMs();
  const TimeMs last = last_liveness_.exchange(now);
  const int64_t max_gap = config_.liveness_max_gap_ms;
  const int64_t stall = config_.receive_stall_ms ? config_.receive_stall_ms() : 0;
  if (max_gap > 0 && ((last != 0 && now - last > max_gap) || stall > max_gap)) {
    // Paused (SIGSTOP, a VM pause), swapped out or starved, or its receiving threads stalled: the
    // clients were not heard because the master did not listen. Judged by that silence, live
    // clients would lose their memory.
    clients_.RefreshAll();
    liveness_gaps_.fetch_add(1, std::memory_order_relaxed);
    if (stall > max_gap) {
      YB_LOG_WARN("master: a thread receiving the clients' calls did not turn for {} ms (stalled): every client "
                  "gets a fresh client_ttl of {} s instead of being judged by that silence",
                  stall, config_.client_ttl_sec);
    } else {
      YB_LOG_WARN("master: its liveness check did not run for {} ms (paused or starved): every client gets a "
                  "fresh client_ttl of {} s instead of being judged by that silence",
                  now - last, config_.client_ttl_sec);
    }
    return 0;
  }
  MarkQuietClients(now);
  std::vector<ClientId> dead = clients_.Expire();
  for (const ClientId& c : dead) {
    ForgetClient(c, "silent for over " + std::to_string(config_.client_ttl_sec) + " s, declared dead", GraceMs());
  }
  UnpinForgottenClients();
  return dead.size();
}

void MasterService::MarkQuietClients(TimeMs now) {
  std::vector<ClientRegistry::QuietChange> changed;
  std::vector<ClientId> quiet = clients_.Quiet(QuietMs(), &changed);
  // Held a little past the next run (every 200 ms in yb-master), so that it lapses soon once heard.
  segments_.MarkUnheard(quiet, now + std::max<int64_t>(2 * config_.liveness_max_gap_ms, 1000));
  std::vector<ClientId> heard;
  for (const auto& c : changed) {
    if (!c.quiet) heard.push_back(c.id);
  }
  segments_.MarkUnheard(heard, 0);
  for (const auto& c : changed) {
    if (c.quiet) {
      YB_LOG_WARN("client {} not heard from for {} ms: its segments take no new replicas until it is (readers still "
                  "go to them; declared dead after {} s)",
                  c.id.ToString(), c.silent_ms, config_.client_ttl_sec);
    } else {
      YB_LOG_INFO("client {} heard from again: its segments take new replicas", c.id.ToString());
    }
  }
}

void MasterService::ForgetClient(const ClientId& c, const std::string& why, TimeMs grace_ms) {
  if (grace_ms > 0) {
    if (const size_t n = segments_.Suspend(c, clock_.NowMs() + grace_ms); n > 0) {
      YB_LOG_WARN("client {} {}: its {} segments are suspended for {} s (not read, no new replicas, repair waits); "
                  "back with the same memory by then it keeps every replica, else they are dropped",
                  c.ToString(), why, n, grace_ms / 1000);
    } else {
      YB_LOG_INFO("client {} {}: forgotten", c.ToString(), why);
    }
  } else {
    auto segs = segments_.SegmentsOf(c);
    if (segs.empty()) {
      YB_LOG_INFO("client {} {}: forgotten", c.ToString(), why);
    } else {
      YB_LOG_WARN("client {} {}: unmounting its {} segments and dropping their replicas", c.ToString(), why,
                  segs.size());
    }
    for (SegmentId id : segs) {
      (void)UnmountAndDrop(c, id);
    }
  }
  // Its reservations (BatchPutCommit) go with it: no Put of a caller's is in them. Their ranges are
  // held while their write grants may be valid (RevokePending), then freed.
  uint64_t reservations = 0;
  for (size_t i = 0; i < table_.shard_count(); ++i) {
    reservations += table_.LockShard(i).RevokePendingIf([&](std::string_view table_key, const PendingPut& p) {
      return p.writer == c && IsReservationTableKey(table_key);
    });
  }
  if (reservations > 0) YB_LOG_INFO("client {} {}: its {} reservations are revoked", c.ToString(), why, reservations);
  ForgetOffloadsOf(c);
  CancelRepairsIf([&c](const ClientId& owner, TimeMs) { return owner == c; }, "lost their copier");
  // A call from the client between its expiry and now (a MountSegment in flight) made it known
  // again, and what it mounted may have gone with the rest: it must re-mount everything.
  clients_.MarkRemount(c);
}

void MasterService::RenewPins(const CallContext& ctx, const std::vector<HeldPin>& pins) {
  // Named pins are stamped with the round this heartbeat ends before the round advances, so a
  // sweep between the two never sees a named pin as two rounds old.
  auto round = clients_.PinRound(ctx.client);
  if (!round) return;
  for (const HeldPin& p : pins) {
    if (p.key.empty() || p.key.size() > config_.max_key_length) continue;
    const TableKey tk(ctx.tenant, p.key);
    (void)table_.Lock(tk.hashed).RenewReadPins(ctx.client, p.read_pin, *round + 1);
  }
  clients_.AdvancePinRound(ctx.client);
}

void MasterService::UnpinForgottenClients() {
  // Every pin of a client the master no longer knows (dead, gone, or never registered), and each
  // read pin its live reader left unnamed for two heartbeats that named every pin it holds (its
  // ReadEnd was lost). A pin is stamped with its reader's round when a sweep first sees it.
  uint64_t stale = 0;
  for (size_t i = 0; i < table_.shard_count(); ++i) {
    table_.LockShard(i).UnpinIf([&](const PinKey& k, PinState& st) {
      auto round = clients_.PinRound(k.client);
      if (!round) return true;
      if (k.kind != PinKind::kRead) return false;
      if (st.round == PinState::kUnstamped) {
        st.round = *round;
        return false;
      }
      if (*round < st.round + 2) return false;
      ++stale;
      return true;
    });
  }
  if (stale > 0) {
    stale_pins_released_.fetch_add(stale, std::memory_order_relaxed);
    YB_LOG_WARN("ended {} read pins their readers no longer name (their ReadEnd was lost)", stale);
  }
}

void MasterService::RunBackgroundOnce() {
  if (config_.hold_freed_ranges) grant_hold_.Sample(table_.next_access_stamp());  // nothing to bound else
  segments_.ReleaseHeld();  // also what a log written with tenant secrets held: a no-op when nothing is
  ExpireRecoveredOnce();
  LivenessOnce();
  ReclaimOnce();
  evictor_.RunOnce();
  RepairOnce();
  TasksOnce();
}

MasterStats MasterService::Stats() const {
  MasterStats st;
  st.keys = table_.object_count();
  st.liveness_gaps = liveness_gaps_.load(std::memory_order_relaxed);
  st.segments = segments_.segment_count();
  st.segments_unconfirmed = segments_.Unconfirmed().size();
  st.segments_unreachable = segments_.shunned_count();
  st.segments_unheard = segments_.unheard_count();
  st.capacity = segments_.capacity();
  st.allocated = segments_.allocated();
  st.held = segments_.held();
  st.evicted_objects = evictor_.evicted_objects();
  st.evicted_bytes = evictor_.evicted_bytes();
  st.live_clients = clients_.size();
  st.under_replicated_puts = under_replicated_puts_.load(std::memory_order_relaxed);
  st.stale_pins_released = stale_pins_released_.load(std::memory_order_relaxed);
  st.missing_replicas = missing_replicas_.load(std::memory_order_relaxed);
  st.repair_at_risk = repairs_.at_risk();
  st.repairs_in_flight = repairs_.in_flight();
  st.tasks_unfinished = tasks_.unfinished();
  st.repaired = repaired_.load(std::memory_order_relaxed);
  st.repair_bytes = repair_bytes_.load(std::memory_order_relaxed);
  st.objects_lost = objects_lost_.load(std::memory_order_relaxed);
  st.offload_queued = offload_.queued();
  st.offload_pushed = offload_.pushed();
  st.offloaded = offloaded_.load(std::memory_order_relaxed);
  st.offload_failed = offload_failed_.load(std::memory_order_relaxed);
  st.disk_drops_refused = drops_refused_.load(std::memory_order_relaxed);
  st.offloaded_on_evict = evictor_.offloaded_on_evict();
  st.kept_queue_full = evictor_.kept_queue_full();
  st.offload_refused = offload_.refused();
  st.disk_registered = disk_registered_.load(std::memory_order_relaxed);
  st.disk_dropped = disk_dropped_.load(std::memory_order_relaxed);
  for (int i = 0; i < kMissReasonCount; ++i) {
    st.get_misses[i] = get_misses_[i].load(std::memory_order_relaxed);
    st.exist_misses[i] = exist_misses_[i].load(std::memory_order_relaxed);
    st.puts_refused[i] = puts_refused_[i].load(std::memory_order_relaxed);
  }
  st.get_hits = get_hits_.load(std::memory_order_relaxed);
  st.exist_hits = exist_hits_.load(std::memory_order_relaxed);
  st.miss_reason_capacity = table_.gone_capacity();
  st.disk_away_copies = table_.away_copies();
  st.disk_away_untracked = table_.away_untracked();
  auto& table = const_cast<ObjectTable&>(table_);
  for (size_t i = 0; i < table.shard_count(); ++i) {
    auto s = table.LockShard(i);
    const size_t reservations = s.reservation_count();
    st.reservations += reservations;
    st.pending_puts += s.pending_count() - reservations;
  }
  return st;
}

}  // namespace yb
