// HaMaster: one of several masters, of which etcd elects one leader (yb-master --enable_ha).
//
// Election: masters campaign on Mooncake's key mooncake-store/<cluster_id>/master_view, created
// with an etcd lease (lease_ttl) and holding the leader's address; the key's creation revision is
// the leader's epoch, which every answer carries (clients refuse answers of an older epoch). The
// leader renews its lease every lease_ttl/4, and stops answering before the lease can expire
// when it cannot renew it (step-down at lease_ttl/4 before the expiry it knows of); it revokes it
// when it stops, so a standby takes over at once.
//
// Standbys: a master that is not the leader asks the leader to ship it the metadata log (Follow,
// repeated), receives a snapshot then every record as it is written (replication.h), writes them to
// its own log and applies them to an image (hot standby). The leader counts a standby once it has
// caught up: from then on a change is answered only once every counted standby has its record. It
// lists the standby in etcd (key mooncake-store/<cluster_id>/in_sync) only once the standby also
// has every change answered before it was counted, and takes it off that list before it stops
// counting it. Only a master in that list, or the leader it names, may campaign, so whoever wins
// has every acknowledged change; when none of them can, no one takes over (a master started on an
// empty directory never does) until one of them is back.
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

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "api/routed_master_api.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "etcd/etcd_client.h"
#include "ha/meta_log.h"
#include "ha/replication.h"
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

  Role role() const { return leading_.load() ? Role::kLeader : Role::kStandby; }
  uint64_t epoch() const { return epoch_.load(); }
  std::string leader() const;
  // For /health and /metrics.
  struct StandbyState {
    std::string address;
    bool in_sync = false;
    uint64_t acked = 0;
  };
  std::vector<StandbyState> standbys() const;
  uint64_t elections_won() const { return elections_won_.load(); }
  uint64_t step_downs() const { return step_downs_.load(); }
  MetaLog& log() { return *log_; }
  // The master while leading (else null).
  std::shared_ptr<MasterService> master() const;

 private:
  HaMaster(Options options, const Clock& clock);
  std::string Key(const char* name) const { return "mooncake-store/" + options_.cluster_id + "/" + name; }
  // This master's secret ("" without one): what it checks the leader's name in etcd with.
  std::string Secret() const { return options_.security ? options_.security->options().secret : std::string(); }
  // The master if this one may answer now, else the status to answer with.
  Result<std::shared_ptr<MasterService>> Serving() const;
  // MasterApi (RoutedMasterApi): every call is made on the master while this one leads, else
  // answered with who leads.
  Status Route(const Attempt& attempt) override;
  void Campaign();
  void Lead(int64_t lease, int64_t epoch);
  void RenewOrStepDown();
  [[noreturn]] void StepDown(const std::string& why);
  // Revokes this master's etcd lease (its master_view goes with it); false when it holds none.
  bool GiveLeaseBack();
  void FollowLeader(const std::string& leader);
  // Whether etcd's in-sync list lets this master campaign.
  bool MayCampaign();
  // Writes the in-sync list (the leader's address and the counted standbys) to etcd; false when
  // etcd did not take it (or this master no longer owns the key).
  bool WriteInSync();
  void OnAcked(const std::string& standby, uint64_t seq);
  uint64_t OnCaughtUp(const std::string& standby);
  bool OnSyncChanged(const std::string& standby, bool in_sync);
  void UpdateFloor() REQUIRES(mu_);
  std::string HandleFollow(std::string_view body);
  std::string HandleApplyLog(std::string_view body);

  const Options options_;
  const Clock& clock_;
  EtcdClient etcd_;
  std::unique_ptr<MetaLog> log_;
  std::unique_ptr<rpc::ReplyGate> gate_;

  mutable SharedMutex master_mu_;
  std::shared_ptr<MasterService> master_ GUARDED_BY(master_mu_);  // set while leading
  std::atomic<bool> leading_{false};       // answering as the leader (lease known valid)
  std::atomic<bool> stopping_{false};
  std::atomic<TimeMs> answer_until_{0};  // a quarter TTL before the lease could expire: no answer after
  std::atomic<uint64_t> epoch_{0};       // the epoch of the leader this master knows of
  mutable Mutex mu_;                     // guards what follows
  std::string leader_ GUARDED_BY(mu_);   // address of the leader known of
  // The leader etcd names (master_view) and its epoch, as last read there: the only master whose
  // ApplyLog a standby takes.
  std::string view_leader_ GUARDED_BY(mu_);
  uint64_t view_epoch_ GUARDED_BY(mu_) = 0;
  int64_t lease_ GUARDED_BY(mu_) = 0;             // ours, while leading
  TimeMs lease_valid_until_ GUARDED_BY(mu_) = 0;  // etcd keeps the lease at least until then
  TimeMs last_renewal_ GUARDED_BY(mu_) = 0;
  TimeMs last_follow_ GUARDED_BY(mu_) = 0;
  std::unique_ptr<rpc::RpcChannel> to_leader_ GUARDED_BY(mu_);
  std::string to_leader_address_ GUARDED_BY(mu_);
  // By standby address, while leading.
  std::map<std::string, std::unique_ptr<LogShipper>> shippers_ GUARDED_BY(mu_);
  // Standbys changes wait for -> what each acked, and whether etcd's in-sync list names it (it
  // may take over). Counted first, listed once it has every change answered without it.
  struct Counted {
    uint64_t acked = 0;
    bool listed = false;
  };
  std::map<std::string, Counted> counted_ GUARDED_BY(mu_);

  // Standby: applying what the leader ships.
  Mutex apply_mu_;
  MasterImage image_ GUARDED_BY(apply_mu_);
  std::unique_ptr<LogApplier> applier_ GUARDED_BY(apply_mu_);
  uint64_t applied_epoch_ GUARDED_BY(apply_mu_) = 0;  // the leader whose snapshot we applied
  bool in_sync_ GUARDED_BY(apply_mu_) = false;        // that leader counts us

  std::atomic<uint64_t> elections_won_{0};
  std::atomic<uint64_t> step_downs_{0};
};

}  // namespace yb::ha
