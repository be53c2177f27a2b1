// The master's RPC surface: method numbers, the server side (MasterService behind an RpcServer)
// and the client side (MasterClient, a MasterApi over an RpcChannel).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "master/master_api.h"
#include "rpc/channel.h"
#include "rpc/server.h"

namespace yb::rpc {

enum class MasterMethod : uint16_t {
  kRegisterClient = 1,
  kPing = 2,
  kMountSegment = 3,
  kReMountSegment = 4,
  kUnmountSegment = 5,
  kListSegments = 6,
  kUnregisterClient = 7,
  kPutStart = 10,
  kUpsertStart = 11,
  kPutEnd = 12,
  kPutRevoke = 13,
  kGetReplicaList = 14,
  kReadEnd = 15,
  kExistKey = 16,
  kRemove = 17,
  kRemoveByRegex = 18,
  kRemoveAll = 19,
  kOffloadFetch = 20,
  kOffloadDone = 21,
  kAddDiskReplicas = 22,
  kDropDiskReplicas = 23,
};

// Calls and failed calls per method (a batch call fails when any of its keys fails). Thread-safe.
class RpcMetrics {
 public:
  static constexpr int kMethods = 32;
  void Record(uint16_t method, bool failed) {
    if (method >= kMethods) return;
    calls_[method].fetch_add(1, std::memory_order_relaxed);
    if (failed) failures_[method].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t calls(uint16_t m) const { return m < kMethods ? calls_[m].load(std::memory_order_relaxed) : 0; }
  uint64_t failures(uint16_t m) const { return m < kMethods ? failures_[m].load(std::memory_order_relaxed) : 0; }

 private:
  std::array<std::atomic<uint64_t>, kMethods> calls_{};
  std::array<std::atomic<uint64_t>, kMethods> failures_{};
};

// Name of a method for metrics, e.g. "PutStart"; empty for unknown numbers.
const char* MasterMethodName(uint16_t method);

// Registers every MasterMethod on `server`, answered by `master` (which must outlive the server).
// Counts calls in `metrics` when given.
void RegisterMasterService(RpcServer& server, MasterApi& master, RpcMetrics* metrics = nullptr);

// MasterApi over the network. Every call has `timeout` as its deadline; a failed call returns
// RPC_FAIL or RPC_TIMEOUT (for batch calls: for every key).
class MasterClient final : public MasterApi {
 public:
  MasterClient(const std::string& host, uint16_t port, std::chrono::milliseconds timeout);
  // "host:port".
  static Result<std::unique_ptr<MasterClient>> Connect(const std::string& address, std::chrono::milliseconds timeout);

  Result<TenantIndex> RegisterClient(const ClientRegistration& reg) override;
  Result<PingResponse> Ping(const CallContext& ctx) override;
  Status UnregisterClient(const CallContext& ctx) override;
  Status MountSegment(const CallContext& ctx, const SegmentDesc& seg) override;
  Status ReMountSegment(const CallContext& ctx, const std::vector<SegmentDesc>& segs) override;
  Status UnmountSegment(const CallContext& ctx, SegmentId id) override;
  Result<std::vector<SegmentUsage>> ListSegments() override;
  Result<std::vector<ReplicaDesc>> PutStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                            const ReplicateConfig& config) override;
  Result<std::vector<ReplicaDesc>> UpsertStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                               const ReplicateConfig& config) override;
  Status PutEnd(const CallContext& ctx, const std::string& key, std::optional<uint64_t> checksum) override;
  Status PutRevoke(const CallContext& ctx, const std::string& key) override;
  Result<ObjectInfo> GetReplicaList(const CallContext& ctx, const std::string& key, bool pin) override;
  Status ReadEnd(const CallContext& ctx, const std::string& key, uint64_t read_pin) override;
  Result<bool> ExistKey(const CallContext& ctx, const std::string& key) override;
  Status Remove(const CallContext& ctx, const std::string& key, bool force) override;
  Result<uint64_t> RemoveByRegex(const CallContext& ctx, const std::string& pattern, bool force) override;
  Result<uint64_t> RemoveAll(const CallContext& ctx, bool force) override;
  std::vector<Result<std::vector<ReplicaDesc>>> BatchPutStart(const CallContext& ctx,
                                                              const std::vector<std::string>& keys,
                                                              const std::vector<uint64_t>& sizes,
                                                              const ReplicateConfig& config) override;
  std::vector<Status> BatchPutEnd(const CallContext& ctx, const std::vector<std::string>& keys,
                                  const std::vector<std::optional<uint64_t>>& checksums) override;
  std::vector<Status> BatchPutRevoke(const CallContext& ctx, const std::vector<std::string>& keys) override;
  std::vector<Result<ObjectInfo>> BatchGetReplicaList(const CallContext& ctx, const std::vector<std::string>& keys,
                                                      bool pin) override;
  std::vector<Status> BatchReadEnd(const CallContext& ctx, const std::vector<std::string>& keys,
                                   const std::vector<uint64_t>& read_pins) override;
  std::vector<Result<bool>> BatchExistKey(const CallContext& ctx, const std::vector<std::string>& keys) override;
  std::vector<Status> BatchRemove(const CallContext& ctx, const std::vector<std::string>& keys, bool force) override;
  Result<std::vector<OffloadTask>> OffloadFetch(const CallContext& ctx, uint32_t max) override;
  std::vector<Status> OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) override;
  std::vector<Status> AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                      const std::vector<DiskObject>& objects) override;
  std::vector<Status> DropDiskReplicas(const CallContext& ctx, const std::vector<std::string>& disk_keys) override;

 private:
  RpcChannel channel_;
  std::chrono::milliseconds timeout_;
};

// Splits "host:port"; INVALID_PARAMS when malformed. Port 0 ("any free port") only if allowed.
Result<std::pair<std::string, uint16_t>> ParseHostPort(const std::string& address, bool allow_port_zero = false);

}  // namespace yb::rpc
