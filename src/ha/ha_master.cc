#include "ha/ha_master.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/segment_name.h"
#include "ha.pb.h"
#include "ha/log_gate.h"
#include "net/auth.h"
#include "rpc/master_client.h"
#include "rpc/master_convert.h"

namespace yb::ha {
namespace {

using nlohmann::json;

Status NotLeader(const std::string& leader) {
  return Status(Code::kUnavailableInCurrentStatus, leader.empty()
                                                       ? "this master is not the leader, and no leader is known yet"
                                                       : "this master is not the leader; the leader is " + leader);
}

rpc::RpcChannel::Options FollowChannel(std::shared_ptr<const net::Security> sec) {
  rpc::RpcChannel::Options o;
  o.security = std::move(sec);
  o.tenant.clear();  // masters prove the cluster secret, for no tenant
  o.connect_timeout = std::chrono::milliseconds(500);
  o.backoff_min = std::chrono::milliseconds(50);
  o.backoff_max = std::chrono::milliseconds(500);
  return o;
}

}  // namespace

Result<std::unique_ptr<HaMaster>> HaMaster::Create(Options options, const Clock& clock) {
  if (options.address.empty()) return Status(Code::kInvalidParams, "HA needs this master's address");
  std::unique_ptr<HaMaster> ha(new HaMaster(std::move(options), clock));
  MutexLock lock(ha->apply_mu_);  // nothing else runs yet: for the analysis
  ha->image_.gone = GoneKeys(ha->options_.master.miss_reason_keys);
  auto log = MetaLog::Open(ha->options_.log, &ha->image_);
  if (!log.ok()) return log.status();
  ha->log_ = std::move(log).value();
  ha->gate_ = std::make_unique<LogGate>(*ha->log_);
  ha->applier_ = std::make_unique<LogApplier>(*ha->log_, ha->image_);
  YB_LOG_INFO("HA: master {} of cluster '{}' starts as a standby ({} in its log)", ha->options_.address,
              ha->options_.cluster_id, ha->image_.Summary());
  return ha;
}

namespace {
// The leader's calls to etcd must end well within the lease, so that it can step down in time.
EtcdClient::Options Bounded(EtcdClient::Options o, std::chrono::milliseconds lease_ttl) {
  o.timeout = std::min(o.timeout, std::max(std::chrono::milliseconds(100), lease_ttl / 4));
  return o;
}
}  // namespace

HaMaster::HaMaster(Options options, const Clock& clock)
    : options_(std::move(options)), clock_(clock), etcd_(Bounded(options_.etcd, options_.lease_ttl)) {}

HaMaster::~HaMaster() {
  stopping_ = true;
  answer_until_ = 0;  // no answer from here on
  std::map<std::string, std::unique_ptr<LogShipper>> shippers;
  {
    MutexLock lock(mu_);
    shippers.swap(shippers_);
  }
  shippers.clear();
  // Stopping: the lease goes back now, and a standby takes over without waiting for it to expire.
  if (leading_.exchange(false) && GiveLeaseBack()) YB_LOG_INFO("HA: master {} stops leading", options_.address);
}

bool HaMaster::GiveLeaseBack() {
  int64_t lease;
  {
    MutexLock lock(mu_);
    lease = lease_;
  }
  if (lease == 0) return false;
  if (Status st = etcd_.Revoke(lease); !st.ok()) YB_LOG_WARN("HA: giving the lease back: {}", st.ToString());
  return true;
}

std::string HaMaster::leader() const {
  MutexLock lock(mu_);
  return leader_;
}

std::shared_ptr<MasterService> HaMaster::master() const {
  ReaderLock lock(master_mu_);
  return master_;
}

std::vector<HaMaster::StandbyState> HaMaster::standbys() const {
  MutexLock lock(mu_);
  std::vector<StandbyState> out;
  for (const auto& [addr, s] : shippers_) out.push_back({addr, s->in_sync(), s->acked()});
  return out;
}

Result<std::shared_ptr<MasterService>> HaMaster::Serving() const {
  // The lease's own clock, whatever the election thread is doing (a call to etcd that hangs).
  if (leading_.load(std::memory_order_acquire) && clock_.NowMs() < answer_until_.load(std::memory_order_acquire)) {
    ReaderLock lock(master_mu_);
    if (master_) return master_;
  }
  return NotLeader(leader());
}

// ---- election

void HaMaster::RunOnce() {
  if (leading_.load()) {
    RenewOrStepDown();
    // Standbys that stopped asking are dropped (after which they are not counted).
    std::vector<std::unique_ptr<LogShipper>> gone;
    {
      MutexLock lock(mu_);
      const TimeMs now = clock_.NowMs();
      for (auto it = shippers_.begin(); it != shippers_.end();) {
        if (now - it->second->last_follow() > 5000) {
          gone.push_back(std::move(it->second));
          it = shippers_.erase(it);
        } else {
          ++it;
        }
      }
    }
    for (auto& s : gone) {
      const std::string standby = s->standby();
      YB_LOG_WARN("HA: standby {} stopped following: no longer shipped to", standby);
      s.reset();  // its thread ends first: it counts the standby no more
      (void)OnSyncChanged(standby, false);
    }
    return;
  }
  auto view = etcd_.Get(Key("master_view"));
  if (!view.ok()) {
    static LogBudget budget(1, 10'000);
    if (uint64_t held = 0; budget.Allow(clock_.NowMs(), &held)) {
      YB_LOG_WARN("HA: etcd not reachable: {}{}", view.status().ToString(), LogBudget::HeldBack(held));
    }
    return;
  }
  if (*view) {
    const auto& kv = **view;
    auto named = net::CheckView(kv.value, Key("master_view"), Secret());
    if (!named.ok()) {
      // Not a master of this cluster's word: followed by no one, and no ApplyLog is taken from it.
      {
        MutexLock lock(mu_);
        leader_.clear();
        view_leader_.clear();
      }
      static LogBudget forged(1, 10'000);
      if (uint64_t held = 0; forged.Allow(clock_.NowMs(), &held)) {
        YB_LOG_ERROR("HA: {}{}", named.status().message(), LogBudget::HeldBack(held));
      }
      return;
    }
    epoch_ = std::max<uint64_t>(epoch_.load(), static_cast<uint64_t>(kv.create_revision));
    {
      MutexLock lock(mu_);
      leader_ = *named;
      view_leader_ = *named;
      view_epoch_ = static_cast<uint64_t>(kv.create_revision);
    }
    // Our own key from before a restart: its lease is lost with the process; it expires soon.
    if (*named != options_.address) FollowLeader(*named);
    return;
  }
  if (MayCampaign()) Campaign();
}

bool HaMaster::MayCampaign() {
  auto list = etcd_.Get(Key("in_sync"));
  if (!list.ok()) return false;
  if (!*list) return true;  // a new cluster: anyone may lead
  json j = json::parse((*list)->value, nullptr, false);
  const bool well_formed = j.is_object() && (!j.contains("leader") || j["leader"].is_string()) &&
                           (!j.contains("standbys") || j["standbys"].is_array()) &&
                           (!j.contains("epoch") || j["epoch"].is_number_integer());
  if (!well_formed) {
    // Not ours, or damaged: which masters may take over is unknown, so none does (a master that
    // lacked acknowledged changes could otherwise lead). Fixed by deleting the key, or by the
    // leader's next write of it.
    static LogBudget bad(1, 30'000);
    if (uint64_t held = 0; bad.Allow(clock_.NowMs(), &held)) {
      YB_LOG_ERROR("HA: etcd's in-sync list {} is malformed ('{}'): not campaigning; delete the key if no "
                   "leader will write it again{}",
                   Key("in_sync"), (*list)->value.substr(0, 200), LogBudget::HeldBack(held));
    }
    return false;
  }
  if (j.value("leader", "") == options_.address) return true;
  for (const auto& s : j.value("standbys", json::array())) {
    if (s.is_string() && s.get<std::string>() == options_.address) return true;
  }
  static LogBudget budget(1, 30'000);
  if (uint64_t held = 0; budget.Allow(clock_.NowMs(), &held)) {
    YB_LOG_WARN(
        "HA: no leader, and this master may not take over: it is not in the last leader's in-sync list "
        "(epoch {}: {}), so it may lack acknowledged changes; waiting for one of those masters{}",
        j.value("epoch", 0), (*list)->value, LogBudget::HeldBack(held));
  }
  return false;
}

void HaMaster::Campaign() {
  const int64_t ttl_sec = std::max<int64_t>(1, (options_.lease_ttl.count() + 999) / 1000);
  auto lease = etcd_.Grant(ttl_sec);
  if (!lease.ok()) return;
  const TimeMs granted = clock_.NowMs();
  // Signed under every key a caller of this cluster may hold, so each can tell it from a forgery.
  auto claim = etcd_.PutIfAbsent(Key("master_view"), net::SignView(options_.address, Key("master_view"), options_.view_keys),
                                 *lease);
  if (!claim.ok() || !claim->won) {
    (void)etcd_.Revoke(*lease);
    return;
  }
  {
    MutexLock lock(mu_);
    lease_valid_until_ = granted + ttl_sec * 1000;
    last_renewal_ = granted;
  }
  answer_until_ = granted + ttl_sec * 1000 - std::max<TimeMs>(1, options_.lease_ttl.count() / 4);
  Lead(*lease, claim->current.create_revision);
}

void HaMaster::Lead(int64_t lease, int64_t epoch) {
  {
    MutexLock lock(mu_);
    lease_ = lease;
    leader_ = options_.address;
    counted_.clear();
  }
  epoch_ = static_cast<uint64_t>(epoch);
  // The in-sync list names us first: from now on only we, and the standbys we count, may take over.
  if (!WriteInSync()) {
    YB_LOG_ERROR("HA: elected at epoch {} but etcd did not take the in-sync list: giving the lease back", epoch);
    (void)etcd_.Revoke(lease);
    MutexLock lock(mu_);
    lease_ = 0;
    leader_.clear();
    return;
  }
  std::shared_ptr<MasterService> m;
  {
    MutexLock lock(apply_mu_);
    auto created = MasterService::Create(options_.master, clock_);
    if (!created.ok()) StepDown("the master cannot be built: " + created.status().ToString());
    m = std::move(created).value();
    if (Status st = m->Load(image_); !st.ok()) StepDown("the replicated state does not load: " + st.ToString());
    image_ = MasterImage{};  // the master holds it now
    m->SetSink(log_.get());
    m->SetMediaObserver(options_.media_observer);
    if (Status st = m->ApplyConfiguredQuotas(); !st.ok()) YB_LOG_WARN("HA: --tenant_quotas: {}", st.ToString());
  }
  log_->SetReplicated(UINT64_MAX);  // no standby counted yet
  {
    WriterLock lock(master_mu_);
    master_ = m;
  }
  leading_ = true;
  elections_won_.fetch_add(1);
  YB_LOG_INFO("HA: master {} leads cluster '{}' at epoch {} (log at record {})", options_.address, options_.cluster_id,
              epoch, log_->last_seq());
}

void HaMaster::RenewOrStepDown() {
  const TimeMs now = clock_.NowMs();
  const TimeMs quarter = std::max<TimeMs>(1, options_.lease_ttl.count() / 4);
  int64_t lease;
  TimeMs last, valid;
  {
    MutexLock lock(mu_);
    lease = lease_;
    last = last_renewal_;
    valid = lease_valid_until_;
  }
  if (now - last >= quarter) {
    auto ttl = etcd_.KeepAlive(lease);
    if (ttl.ok() && *ttl > 0) {
      MutexLock lock(mu_);
      lease_valid_until_ = valid = now + *ttl * 1000;  // counted from before the request left
      last_renewal_ = now;
      answer_until_ = valid - quarter;
    } else if (ttl.ok()) {
      StepDown("etcd no longer has this master's lease");
    }
  }
  // Stop before etcd can let the lease go: a quarter of the TTL before the expiry we know of.
  if (clock_.NowMs() >= valid - quarter) StepDown("the lease could not be renewed in time");
}

void HaMaster::StepDown(const std::string& why) {
  leading_ = false;  // answers nothing from here on
  step_downs_.fetch_add(1);
  YB_LOG_ERROR(
      "HA: master {} stops leading at epoch {}: {}. It stops (what it had not acknowledged goes "
      "with it); started again, it follows the new leader",
      options_.address, epoch_.load(), why);
  spdlog::shutdown();
  std::_Exit(76);
}

void HaMaster::FollowLeader(const std::string& leader) {
  const TimeMs now = clock_.NowMs();
  rpc::RpcChannel* ch;
  {
    MutexLock lock(mu_);
    if (now - last_follow_ < 500) return;
    last_follow_ = now;
    if (!to_leader_ || to_leader_address_ != leader) {
      auto hp = ParseHostPort(leader);
      if (!hp.ok()) return;
      to_leader_ = std::make_unique<rpc::RpcChannel>(hp->first, hp->second, FollowChannel(options_.security));
      to_leader_address_ = leader;
    }
    ch = to_leader_.get();
  }
  pb::FollowRequest q;
  q.set_standby(options_.address);
  auto r = ch->Call(static_cast<uint16_t>(HaMethod::kFollow), q.SerializeAsString(), std::chrono::milliseconds(500));
  if (!r.ok()) {
    static LogBudget budget(1, 10'000);
    if (uint64_t held = 0; budget.Allow(now, &held)) {
      YB_LOG_WARN("HA: the leader {} did not take our Follow: {}{}", leader, r.status().ToString(),
                  LogBudget::HeldBack(held));
    }
  }
}

// ---- the in-sync list

bool HaMaster::WriteInSync() {
  json standbys = json::array();
  int64_t epoch = static_cast<int64_t>(epoch_.load());
  {
    MutexLock lock(mu_);
    for (const auto& [addr, c] : counted_) {
      if (c.listed) standbys.push_back(addr);
    }
  }
  json j{{"epoch", epoch}, {"leader", options_.address}, {"standbys", standbys}};
  auto r = etcd_.PutIfOwned(Key("master_view"), epoch, Key("in_sync"), j.dump());
  if (!r.ok()) {
    YB_LOG_WARN("HA: writing the in-sync list: {}", r.status().ToString());
    return false;
  }
  if (!*r) StepDown("etcd says the leader's key is no longer ours");
  return true;
}

void HaMaster::UpdateFloor() {
  uint64_t floor = UINT64_MAX;
  for (const auto& [addr, c] : counted_) floor = std::min(floor, c.acked);
  log_->SetReplicated(floor);
}

void HaMaster::OnAcked(const std::string& standby, uint64_t seq) {
  MutexLock lock(mu_);
  auto it = counted_.find(standby);
  if (it == counted_.end()) return;
  it->second.acked = std::max(it->second.acked, seq);
  UpdateFloor();
}

uint64_t HaMaster::OnCaughtUp(const std::string& standby) {
  MutexLock lock(mu_);
  auto s = shippers_.find(standby);
  counted_[standby] = Counted{s != shippers_.end() ? s->second->acked() : 0, false};
  UpdateFloor();  // every change from now on waits for it
  // Every change answered without it is at or before the log's last record.
  return log_->last_seq();
}

bool HaMaster::OnSyncChanged(const std::string& standby, bool in_sync) {
  if (in_sync) {
    // It has every change answered without it: listed in etcd, it may take over.
    {
      MutexLock lock(mu_);
      auto it = counted_.find(standby);
      if (it == counted_.end()) return false;
      it->second.listed = true;
    }
    if (WriteInSync()) return true;
    // Still counted (changes go on waiting for it); the shipper tries to list it again.
    MutexLock lock(mu_);
    if (auto it = counted_.find(standby); it != counted_.end()) it->second.listed = false;
    return false;
  }
  // Out of the list in etcd before we answer anything it does not have; until then, changes wait.
  {
    MutexLock lock(mu_);
    if (!counted_.count(standby)) return true;
  }
  std::map<std::string, Counted> before;
  for (;;) {
    {
      MutexLock lock(mu_);
      before = counted_;
      counted_.erase(standby);
    }
    if (WriteInSync()) break;
    // Past the moment this master may answer (or stopping), nothing more is answered: it may
    // stop counting the standby without telling etcd.
    if (!leading_.load() || stopping_.load() || clock_.NowMs() >= answer_until_.load()) break;
    {
      MutexLock lock(mu_);
      counted_ = before;  // still counted: changes go on waiting for it
    }
    clock_.SleepUntil(clock_.NowMs() + 100);
  }
  MutexLock lock(mu_);
  UpdateFloor();
  YB_LOG_WARN("HA: standby {} is no longer counted (etcd told)", standby);
  return true;
}

// ---- replication handlers

void HaMaster::RegisterReplication(rpc::RpcServer& server) {
  // Only masters ship and follow the log: a connection that proved a tenant's secret, a node's or
  // an operator's key may not (the log carries every segment's grant key).
  auto masters_only = [](const net::Peer& peer) {
    return peer.master() ? Status::OK()
                         : Status(Code::kIllegalClient, "log replication is for masters (the cluster secret itself)");
  };
  server.Register(static_cast<uint16_t>(HaMethod::kFollow),
                  [this, masters_only](const net::Peer& peer, std::string_view body, std::string& reply) {
                    YB_RETURN_IF_ERROR(masters_only(peer));
                    reply += HandleFollow(body);
                    return Status::OK();
                  });
  server.Register(static_cast<uint16_t>(HaMethod::kApplyLog),
                  [this, masters_only](const net::Peer& peer, std::string_view body, std::string& reply) {
                    YB_RETURN_IF_ERROR(masters_only(peer));
                    reply += HandleApplyLog(body);
                    return Status::OK();
                  });
}

std::string HaMaster::HandleFollow(std::string_view body) {
  pb::FollowRequest q;
  pb::FollowResponse r;
  r.set_epoch(epoch_.load());
  if (!q.ParseFromArray(body.data(), static_cast<int>(body.size())) || q.standby().empty()) {
    rpc::ToPb(Status(Code::kInvalidParams, "Follow needs the standby's address"), r.mutable_status());
  } else if (!leading_.load()) {
    rpc::ToPb(NotLeader(leader()), r.mutable_status());
  } else {
    MutexLock lock(mu_);
    auto& s = shippers_[q.standby()];
    if (!s) {
      LogShipper::Options o;
      o.standby = q.standby();
      o.epoch = epoch_.load();
      o.leader = options_.address;
      o.security = options_.security;
      o.clock = &clock_;
      LogShipper::Hooks hooks;
      hooks.acked = [this](const std::string& standby, uint64_t seq) { OnAcked(standby, seq); };
      hooks.caught_up = [this](const std::string& standby) { return OnCaughtUp(standby); };
      hooks.sync_changed = [this](const std::string& standby, bool v) { return OnSyncChanged(standby, v); };
      s = std::make_unique<LogShipper>(o, *log_, hooks);
      s->Start();
    }
    s->Touch();
    rpc::ToPb(Status::OK(), r.mutable_status());
  }
  return r.SerializeAsString();
}

std::string HaMaster::HandleApplyLog(std::string_view body) {
  pb::ApplyLogRequest q;
  pb::ApplyLogResponse r;
  if (!q.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    rpc::ToPb(Status(Code::kInvalidParams, "ApplyLog does not parse"), r.mutable_status());
    return r.SerializeAsString();
  }
  if (leading_.load()) {
    // Not taken as a reason to step down: a leader learns that it lost from etcd (its lease), never
    // from a caller's word.
    rpc::ToPb(Status(Code::kInvalidParams, "this master leads at epoch " + std::to_string(epoch_.load())),
              r.mutable_status());
    return r.SerializeAsString();
  }
  {
    // Only the leader etcd names, at the epoch etcd gives it: a master (or anyone with the secret)
    // that merely claims to lead cannot rewrite this standby's log.
    MutexLock lock(mu_);
    if (q.leader() != view_leader_ || q.epoch() != view_epoch_) {
      static LogBudget budget(1, 10'000);
      if (uint64_t held = 0; budget.Allow(clock_.NowMs(), &held)) {
        YB_LOG_WARN("HA: refused ApplyLog from {} (epoch {}): etcd names {} (epoch {}) as the leader{}", q.leader(),
                    q.epoch(), view_leader_.empty() ? "no master" : view_leader_, view_epoch_,
                    LogBudget::HeldBack(held));
      }
      rpc::ToPb(Status(Code::kIllegalClient, "etcd names " + (view_leader_.empty() ? "no master" : view_leader_) +
                                                 " at epoch " + std::to_string(view_epoch_) + " as the leader"),
                r.mutable_status());
      return r.SerializeAsString();
    }
    leader_ = q.leader();
  }
  epoch_ = q.epoch();
  MutexLock lock(apply_mu_);
  if (applied_epoch_ != q.epoch() && !q.snapshot_begin()) {
    rpc::ToPb(Status(Code::kInvalidParams, "a new leader starts with its snapshot"), r.mutable_status());
    return r.SerializeAsString();
  }
  if (q.snapshot_begin()) applied_epoch_ = q.epoch();
  auto last = applier_->Apply(q.snapshot_begin(), q.snapshot_seq(), q.snapshot_frames(), q.snapshot_done(), q.frames());
  if (!last.ok()) {
    applied_epoch_ = 0;  // start over from a snapshot
    rpc::ToPb(last.status(), r.mutable_status());
    return r.SerializeAsString();
  }
  in_sync_ = q.in_sync();
  rpc::ToPb(Status::OK(), r.mutable_status());
  r.set_last_seq(*last);
  r.set_digest(applier_->digest());
  return r.SerializeAsString();
}

// ---- the master's own background work

void HaMaster::RunBackgroundOnce() {
  if (auto m = Serving(); m.ok()) (*m)->RunBackgroundOnce();
}

void HaMaster::MaintainLog() {
  auto m = Serving();
  if (!m.ok()) {  // a standby (or not yet either): its own log is compacted from the image it applies
    MutexUniqueLock lock(apply_mu_);
    // A failed one waits for the leader's snapshot (LogApplier::Apply): its image lacks what it held.
    if (!leading_.load() && !log_->failed()) (void)applier_->SnapshotIfDue(lock);
    return;
  }
  MasterService* raw = m->get();
  log_->Maintain([raw](const auto& emit) { raw->WriteImage(emit); }, raw->next_object_id());
  if (!log_->failed()) return;
  bool standby_in_sync = false;
  for (const auto& s : standbys()) standby_in_sync = standby_in_sync || s.in_sync;
  if (standby_in_sync) {
    answer_until_ = 0;  // no answer from here on; the lease goes back, so the standby need not wait it out
    (void)GiveLeaseBack();
    StepDown("its metadata log cannot be written (" + log_->stats().failure +
             "); a standby in sync has every acknowledged change and takes over");
  }
}

// ---- MasterApi: the leader's master, or who the leader is

Status HaMaster::Route(const Attempt& attempt) {
  auto m = Serving();
  if (!m.ok()) return m.status();
  (void)attempt(**m);  // the answer is the call's, whatever it says
  return Status::OK();
}

}  // namespace yb::ha
