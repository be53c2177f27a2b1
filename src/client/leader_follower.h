// LeaderFollower: a MasterApi over whichever master leads a cluster, found in etcd under Mooncake's
// key mooncake-store/<cluster_id>/master_view (master_server_addr "etcd://host:port[;host:port]").
//
// A call goes to the leader known; when it fails because that master is gone or no longer leads
// (RPC_FAIL, RPC_TIMEOUT, UNAVAILABLE_IN_CURRENT_STATUS), the leader is looked up again and the
// call made again on it, until the call's deadline. That is safe for every call: the new leader
// has every change the old one answered (ha/ha_master.h), a PutStart made again by the same writer
// gets the reservation it already has, and a PutEnd whose first attempt was answered by the old
// leader is taken as done when the object is there. ReadEnd, one-way, is not made again (the old
// leader's pins went with it). Answers of a leader older than one already heard from are refused
// (the clients of all masters share the newest epoch seen). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "api/routed_master_api.h"
#include "common/clock.h"
#include "common/thread_annotations.h"
#include "etcd/etcd_client.h"
#include "rpc/master_client.h"

namespace yb {

class LeaderFollower final : public RoutedMasterApi {
 public:
  // `spec` is "etcd://host:port[;host:port...]".
  // `channel`: how each connection to a master is set up (its security). `etcd`: how etcd is
  // reached (TLS, its user); its endpoints come from `spec`.
  static Result<std::unique_ptr<LeaderFollower>> Create(const std::string& spec, const std::string& cluster_id,
                                                        std::chrono::milliseconds timeout,
                                                        rpc::RpcChannel::Options channel = {},
                                                        EtcdClient::Options etcd = {},
                                                        const Clock& clock = SteadyClock());
  static bool IsEtcdAddress(const std::string& master_server_addr) {
    return master_server_addr.rfind("etcd://", 0) == 0;
  }

  // The leader's address as last looked up ("" before).
  std::string leader() const;
  uint64_t epoch() const { return epoch_seen_->load(); }
  uint64_t failovers() const { return failovers_.load(); }

  // MasterApi (RoutedMasterApi): every call made through Route; these two treated otherwise.
  std::vector<Status> BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                  const std::vector<std::optional<uint64_t>>& checksums) override;
  PutCommitAnswer BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                 const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                 const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                 const PlacementConfig& config) override;
  std::vector<Status> BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                   const std::vector<uint64_t>& read_pins) override;

 private:
  LeaderFollower(EtcdClient::Options etcd, std::string cluster_id, std::chrono::milliseconds timeout,
                 rpc::RpcChannel::Options channel, const Clock& clock);
  // The client of the leader, looking it up when none is known or `stale` is the one that failed.
  Result<std::shared_ptr<rpc::MasterClient>> Leader(const rpc::MasterClient* stale);
  // Makes the call on the leader, again on the new leader while it fails as a leader change does,
  // until the deadline.
  Status Route(const Attempt& attempt) override;

  EtcdClient etcd_;
  const std::string key_;
  const std::chrono::milliseconds timeout_;
  const rpc::RpcChannel::Options channel_;
  const std::shared_ptr<std::atomic<uint64_t>> epoch_seen_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::atomic<uint64_t> failovers_{0};
  const Clock& clock_;
  mutable Mutex mu_;
  std::shared_ptr<rpc::MasterClient> client_ GUARDED_BY(mu_);
  std::string leader_ GUARDED_BY(mu_);
  TimeMs last_lookup_ GUARDED_BY(mu_) = 0;
  // The leader's client whose last call failed as a leader change does (refused, timed out, "not
  // the leader") after the call's time ran out: the next call looks the leader up in etcd first.
  // Else a leader that hangs (paused: SIGSTOP, a stalled host) held every later call too, each
  // until its timeout, while etcd named another.
  const rpc::MasterClient* suspect_ GUARDED_BY(mu_) = nullptr;
};

}  // namespace yb
