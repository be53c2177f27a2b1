// The client half of the master's RPC: MasterClient, a MasterApi over an RpcChannel.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "api/master_api.h"
#include "rpc/channel.h"
#include "rpc/master_methods.h"

namespace yb::rpc {

// Every call has `timeout` as its deadline; a call that fails on the way returns RPC_FAIL or
// RPC_TIMEOUT (a per-key call: for every key). Thread-safe: calls from many threads are pipelined
// on one connection.
class MasterClient final : public MasterApi {
 public:
  // `epoch_seen`, when given, is shared with other clients (of the other masters of a cluster):
  // an answer whose epoch is older than the newest seen is refused (RPC_FAIL: a stale leader).
  // `channel` sets the connection up (its security: TLS, the secret it proves, the tenant named);
  // the data-plane key a registration's answer carries goes to that security (SetDataKey).
  MasterClient(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
               std::shared_ptr<std::atomic<uint64_t>> epoch_seen = nullptr, RpcChannel::Options channel = {});
  // "host:port".
  static Result<std::unique_ptr<MasterClient>> Connect(const std::string& address, std::chrono::milliseconds timeout,
                                                       RpcChannel::Options channel = {});

  Result<CallContext> RegisterClient(const ClientRegistration& reg) override;
  using MasterApi::BatchPutStart;  // and its helper form without a WriteMode
  using MasterApi::Ping;
  Result<PingResponse> Ping(const CallContext& ctx, const PingState& state) override;
  Status UnregisterClient(const CallContext& ctx) override;
  Status MountSegments(const CallContext& ctx, const std::vector<SegmentMount>& segs) override;
  Status UnmountSegment(const CallContext& ctx, SegmentId id) override;
  Result<uint64_t> DrainSegment(const CallContext& ctx, SegmentId id) override;
  Status UndrainSegment(const CallContext& ctx, SegmentId id) override;
  Result<std::vector<SegmentUsage>> ListSegments() override;
  std::vector<Result<std::vector<GrantedReplica>>> BatchPutStart(const CallContext& ctx, const Keys& keys,
                                                                 const std::vector<uint64_t>& sizes,
                                                                 const PlacementConfig& config,
                                                                 WriteMode mode) override;
  std::vector<Status> BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                  const std::vector<std::optional<uint64_t>>& checksums) override;
  PutCommitAnswer BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                 const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                 const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                 const PlacementConfig& config) override;
  std::vector<Status> BatchPutRevoke(const CallContext& ctx, const Keys& keys) override;
  std::vector<Result<ObjectInfo>> BatchGetReplicaList(const CallContext& ctx, const Keys& keys, bool pin) override;
  // One-way: a read's end needs no answer, so it costs the reader no round trip. Returns once sent.
  std::vector<Status> BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                   const std::vector<uint64_t>& read_pins) override;
  std::vector<Result<bool>> BatchExistKey(const CallContext& ctx, const Keys& keys) override;
  std::vector<Result<MissInfo>> BatchWhyMissing(const CallContext& ctx, const Keys& keys) override;
  std::vector<Status> BatchRemove(const CallContext& ctx, const Keys& keys, bool force) override;
  Result<Keys> BatchReplicaClear(const CallContext& ctx, const Keys& keys, const std::string& segment_name) override;
  Result<uint64_t> RemoveWhere(const CallContext& ctx, const std::optional<std::string>& pattern, bool force) override;
  Result<std::vector<OffloadTask>> OffloadFetch(const CallContext& ctx, uint32_t max) override;
  std::vector<Status> OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) override;
  Result<std::vector<RepairTask>> RepairFetch(const CallContext& ctx, uint32_t max) override;
  std::vector<Status> RepairDone(const CallContext& ctx, const std::vector<RepairResult>& results) override;
  Result<TaskId> CreateTask(const CallContext& ctx, const TaskSpec& spec) override;
  Result<TaskInfo> QueryTask(const CallContext& ctx, const TaskId& id) override;
  std::vector<Status> AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                      const std::vector<DiskObject>& objects) override;
  std::vector<Status> DropDiskReplicas(const CallContext& ctx, const Keys& disk_keys) override;

 private:
  // One round trip of method `m`: its response, or the call's failure (on the way, or the
  // response's own call-level status).
  template <MasterMethod m>
  Result<typename MethodTraits<m>::Response> Call(const typename MethodTraits<m>::Request& q);

  const std::shared_ptr<const net::Security> security_;
  RpcChannel channel_;
  std::chrono::milliseconds timeout_;
  std::shared_ptr<std::atomic<uint64_t>> epoch_seen_;
};

}  // namespace yb::rpc
