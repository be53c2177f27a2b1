// HaMaster: one of several masters, of which etcd elects one leader (yb-master --enable_ha). It is
// made of three parts and forwards the master's calls:
// - Election (election.h): the leader's lease and key in etcd, its epoch, the in-sync list, and
//   when it must step down;
// - Standbys (standbys.h), while leading: the log shipped to each standby that asks (Follow), which
//   standbys changes wait for, and which may take over;
// - Replica (replica.h), while a standby: the image the leader's shipped log is applied to.
//
// Standbys: a master that is not the leader asks the leader to ship it the metadata log (Follow,
// repeated), receives a snapshot then every record as it is written (replication.h), writes them to
// its own log and applies them to an image (hot standby). Only a master in etcd's in-sync list, or
// the leader it names, may campaign, so whoever wins has every acknowledged change; when none of
// them can, no one takes over (a master started on an empty directory never does) until one of
// them is back.
//
// Promotion builds the MasterService from the image (MasterService::Load): segments come back
// restored until their owners re-mount them, as after a restart. A leader that cannot renew its
// lease stops answering and then stops the process (fail-stop): the changes it had not
// acknowledged go with it, and started again (a supervisor's restart) it follows the new leader,
// which ships it a snapshot that replaces its log.
//
// As a MasterApi this is what the RPC server serves: calls go to the MasterService while this
// master leads and may answer, else UNAVAILABLE_IN_CURRENT_STATUS naming the leader. Thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <shared_mutex>
#include <string>

#include "api/routed_master_api.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "etcd/etcd_client.h"
#include "ha/election.h"
#include "ha/meta_log.h"
#include "ha/replica.h"
#include "ha/replication.h"
#include "ha/standbys.h"
#include "master/master_config.h"
#include "master/master_service.h"
#include "rpc/server.h"

namespace yb::ha {

class HaMaster final : public RoutedMasterApi {
 public:
  struct Options {
    EtcdClient::Options etcd;
    std::string cluster_id = "mooncake_cluster";
    std::string address;  // host:port of this master's RPC server, as others reach it
    std::chrono::milliseconds lease_ttl{2000};
    MasterConfig master;
    MetaLog::Options log;
    // TLS and the cluster secret on the connections between masters (null: neither).
    std::shared_ptr<net::Security> security;
    // The keys the leader signs its name in etcd with (net::SignView): the cluster secret, the role
    // keys, each tenant's secret. Empty without a secret (the name goes unsigned).
    std::vector<std::string> view_keys;
    // Told of changes of media while this master leads (the KV events); null: no one.
    MediaObserver* media_observer = nullptr;
  };
  enum class Role { kStandby, kLeader };

  // Opens the metadata log (its state is this master's until a leader ships it another).
  static Result<std::unique_ptr<HaMaster>> Create(Options options, const Clock& clock);
  ~HaMaster() override;  // a leader gives its lease back: a standby takes over at once

  // Before the server starts: the replication methods (the master's are RegisterMasterService's
  // with this as the MasterApi).
  void RegisterReplication(rpc::RpcServer& server);
  rpc::ReplyGate& gate() { return *gate_; }
  // The election and replication step; run every 100 ms.
  void RunOnce();
  // The master's own background step, while leading.
  void RunBackgroundOnce();
  // Each second: the log's snapshots, its free space and its recovery (MetaLog::Maintain). A leader
  // whose log failed hands over to a standby in sync (it stops, for a supervisor to restart it as a
  // standby); without one it leads on, refusing changes.
  void MaintainLog();

  Role role() const { return election_->leading() ? Role::kLeader : Role::kStandby; }
  uint64_t epoch() const { return election_->epoch(); }
  std::string leader() const { return election_->leader(); }
  // For /health and /metrics.
  using StandbyState = Standbys::State;
  std::vector<StandbyState> standbys() const { return standbys_->states(); }
  uint64_t snapshots_shipped() const { return standbys_->snapshots_shipped(); }
  uint64_t elections_won() const { return election_->elections_won(); }
  uint64_t step_downs() const { return election_->step_downs(); }
  MetaLog& log() { return *log_; }
  // The master while leading (else null).
  std::shared_ptr<MasterService> master() const;

 private:
  HaMaster(Options options, const Clock& clock);
  // The master if this one may answer now, else the status to answer with.
  Result<std::shared_ptr<MasterService>> Serving() const;
  // MasterApi (RoutedMasterApi): every call is made on the master while this one leads, else
  // answered with who leads.
  Status Route(const Attempt& attempt) override;
  // Election's hooks: build the master from the replica's image; ask the leader to ship the log.
  Status Lead(uint64_t epoch);
  void FollowLeader(const std::string& leader);
  std::string HandleFollow(std::string_view body);
  std::string HandleApplyLog(std::string_view body);

  const Options options_;
  const Clock& clock_;
  EtcdClient etcd_;
  std::unique_ptr<MetaLog> log_;
  std::unique_ptr<rpc::ReplyGate> gate_;
  std::unique_ptr<Replica> replica_;
  std::unique_ptr<Election> election_;
  std::unique_ptr<Standbys> standbys_;

  mutable SharedMutex master_mu_;
  std::shared_ptr<MasterService> master_ GUARDED_BY(master_mu_);  // set while leading
  Mutex follow_mu_;
  TimeMs last_follow_ GUARDED_BY(follow_mu_) = 0;
  std::unique_ptr<rpc::RpcChannel> to_leader_ GUARDED_BY(follow_mu_);
  std::string to_leader_address_ GUARDED_BY(follow_mu_);
};

}  // namespace yb::ha
