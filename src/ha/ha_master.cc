#include "ha/ha_master.h"

#include <cstdlib>

#include "common/log.h"
#include "common/segment_name.h"
#include "ha.pb.h"
#include "ha/log_gate.h"
#include "net/auth.h"
#include "rpc/master_client.h"
#include "rpc/master_convert.h"

namespace yb::ha {
namespace {

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
  const Options& o = ha->options_;
  MasterImage image;
  image.gone = GoneKeys(o.master.miss_reason_keys);
  auto log = MetaLog::Open(o.log, &image);
  if (!log.ok()) return log.status();
  ha->log_ = std::move(log).value();
  ha->gate_ = std::make_unique<LogGate>(*ha->log_);
  ha->replica_ = std::make_unique<Replica>(*ha->log_, std::move(image));

  Election::Options eo;
  eo.cluster_id = o.cluster_id;
  eo.address = o.address;
  eo.lease_ttl = o.lease_ttl;
  eo.secret = o.security ? o.security->options().secret : std::string();
  eo.view_keys = o.view_keys;
  Election::Hooks eh;
  HaMaster* self = ha.get();
  eh.lead = [self](uint64_t epoch) { return self->Lead(epoch); };
  eh.follow = [self](const std::string& leader) { self->FollowLeader(leader); };
  eh.step_down = [](const std::string&) {
    // The election logged why. What this master had not acknowledged goes with the process.
    spdlog::shutdown();
    std::_Exit(76);
  };
  ha->election_ = std::make_unique<Election>(eo, ha->etcd_, ha->clock_, std::move(eh));

  Standbys::Hooks sh;
  sh.write_in_sync = [self](const std::vector<std::string>& listed) { return self->election_->WriteInSync(listed); };
  sh.may_answer = [self] { return self->election_->MayAnswer(); };
  ha->standbys_ =
      std::make_unique<Standbys>(Standbys::Options{o.address, o.security}, *ha->log_, ha->clock_, std::move(sh));
  YB_LOG_INFO("HA: master {} of cluster '{}' starts as a standby ({} in its log)", o.address, o.cluster_id,
              ha->replica_->Summary());
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
  if (!election_) return;  // Create failed before the parts were built
  const bool was_leading = election_->leading();
  election_->Stop();  // no answer from here on
  standbys_->StopAll();
  // Stopping: the lease goes back now, and a standby takes over without waiting for it to expire.
  if (was_leading && election_->GiveLeaseBack()) YB_LOG_INFO("HA: master {} stops leading", options_.address);
}

std::shared_ptr<MasterService> HaMaster::master() const {
  ReaderLock lock(master_mu_);
  return master_;
}

Result<std::shared_ptr<MasterService>> HaMaster::Serving() const {
  // The lease's own clock, whatever the election thread is doing (a call to etcd that hangs).
  if (election_->MayAnswer()) {
    ReaderLock lock(master_mu_);
    if (master_) return master_;
  }
  return NotLeader(leader());
}

void HaMaster::RunOnce() {
  election_->RunOnce();
  // Standbys that stopped asking are dropped (after which they are not counted).
  if (election_->leading()) standbys_->DropSilent();
}

Status HaMaster::Lead(uint64_t epoch) {
  auto created = MasterService::Create(options_.master, clock_);
  if (!created.ok()) return Status(created.code(), "the master cannot be built: " + created.status().ToString());
  std::shared_ptr<MasterService> m = std::move(created).value();
  if (Status st = replica_->Promote(*m); !st.ok()) {
    return Status(st.code(), "the replicated state does not load: " + st.ToString());
  }
  m->SetSink(log_.get());
  m->SetMediaObserver(options_.media_observer);
  if (Status st = m->ApplyConfiguredQuotas(); !st.ok()) YB_LOG_WARN("HA: --tenant_quotas: {}", st.ToString());
  log_->SetReplicated(UINT64_MAX);  // no standby counted yet
  {
    WriterLock lock(master_mu_);
    master_ = m;
  }
  YB_LOG_INFO("HA: master {} leads cluster '{}' at epoch {} (log at record {})", options_.address, options_.cluster_id,
              epoch, log_->last_seq());
  return Status::OK();
}

void HaMaster::FollowLeader(const std::string& leader) {
  const TimeMs now = clock_.NowMs();
  rpc::RpcChannel* ch;
  {
    MutexLock lock(follow_mu_);
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
  const uint64_t epoch = election_->epoch();
  r.set_epoch(epoch);
  if (!q.ParseFromArray(body.data(), static_cast<int>(body.size())) || q.standby().empty()) {
    rpc::ToPb(Status(Code::kInvalidParams, "Follow needs the standby's address"), r.mutable_status());
  } else if (!election_->leading()) {
    rpc::ToPb(NotLeader(leader()), r.mutable_status());
  } else {
    standbys_->Follow(q.standby(), epoch);
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
  if (election_->leading()) {
    // Not taken as a reason to step down: a leader learns that it lost from etcd (its lease), never
    // from a caller's word.
    rpc::ToPb(Status(Code::kInvalidParams, "this master leads at epoch " + std::to_string(election_->epoch())),
              r.mutable_status());
    return r.SerializeAsString();
  }
  // Only the leader etcd names, at the epoch etcd gives it: a master (or anyone with the secret)
  // that merely claims to lead cannot rewrite this standby's log.
  if (Status st = election_->AcceptShipper(q.leader(), q.epoch()); !st.ok()) {
    rpc::ToPb(st, r.mutable_status());
    return r.SerializeAsString();
  }
  return replica_->Apply(std::move(q)).SerializeAsString();
}

// ---- the master's own background work

void HaMaster::RunBackgroundOnce() {
  if (auto m = Serving(); m.ok()) (*m)->RunBackgroundOnce();
}

void HaMaster::MaintainLog() {
  auto m = Serving();
  if (!m.ok()) {  // a standby (or not yet either): its own log is compacted from the image it applies
    if (!election_->leading()) replica_->SnapshotIfDue();
    return;
  }
  MasterService* raw = m->get();
  log_->Maintain([raw](const auto& emit) { raw->WriteImage(emit); }, raw->next_object_id());
  if (!log_->failed()) return;
  if (standbys_->any_in_sync()) {
    election_->Stop();  // no answer from here on; the lease goes back, so the standby need not wait it out
    (void)election_->GiveLeaseBack();
    election_->StepDown("its metadata log cannot be written (" + log_->stats().failure +
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
