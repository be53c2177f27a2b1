// Client internals, shared by client.cc (lifecycle, metadata), client_write.cc and client_read.cc.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "api/master_api.h"
#include "client/buffers.h"
#include "client/offloader.h"
#include "common/log.h"
#include "common/periodic_runner.h"
#include "transfer/local_segments.h"
#include "transfer/tcp/transfer_server.h"
#include "transfer/transfer_engine.h"
#include "yuebing/client.h"

namespace yb {

struct Client::Impl {
  ClientConfig config;
  std::shared_ptr<MasterApi> master;
  std::shared_ptr<LocalSegmentRegistry> local;
  std::shared_ptr<TransferEngine> engine;
  std::shared_ptr<void> keepalive;                       // whatever Connect() started for this client (master, server)
  std::string endpoint = "local";                        // advertised for this client's segments
  std::shared_ptr<LocalSegmentRegistry> served;          // segments its transfer server serves
  const tcp::TransferServer* transfer_server = nullptr;  // serves them (owned by `keepalive`)
  ClientId id;
  std::atomic<TenantIndex> tenant{0};  // changes when the client registers again
  // Who is calling, for the master. Safe from any thread.
  CallContext ctx() const { return {id, tenant.load(std::memory_order_relaxed)}; }
  std::shared_ptr<MappedRegion> pool;  // the memory behind this client's segments
  mutable std::mutex mounted_mu;
  std::vector<SegmentDesc> mounted;  // guarded by mounted_mu
  std::unique_ptr<StagingBuffer> staging;
  BufferRegistry registered;
  std::unique_ptr<PeriodicRunner> heartbeat;
  std::unique_ptr<Offloader> offloader;        // the SSD tier, when enable_offload
  std::atomic<bool> offload_running{false};    // `offloader` is set and started (the heartbeat may use it)
  std::atomic<bool> disk_unregistered{false};  // the master lost our disk replicas; retried each heartbeat
  // Liveness as the heartbeats see it (Stats()). The master is reachable while no heartbeat has
  // failed since it last answered (Create() reached it).
  std::atomic<uint64_t> heartbeat_failures{0};
  std::atomic<uint64_t> missed_heartbeats{0};  // in a row, since the master was last reached
  std::atomic<uint64_t> remounts{0};
  // Failed replica transfers are warned about at most 5 times in 10 s: a node that went away fails
  // every transfer that touches it until the master drops its segments (client_ttl).
  LogBudget transfer_warnings{5, 10'000};

  // A segment this client mounted (its memory is ours: the cheapest replica to read).
  bool IsLocal(SegmentId s) const {
    std::lock_guard lock(mounted_mu);
    for (const auto& d : mounted) {
      if (d.id == s) return true;
    }
    return false;
  }
  // Moves a contiguous object range to or from the caller's slices, staging through the
  // registered buffer when the transport needs registered memory and the slices are not.
  Status Move(TransferRequest::Op op, const ReplicaDesc& replica, const std::vector<Slice>& slices);
  // Reads a whole object from a LOCAL_DISK replica (here or through its owner's transfer server).
  Status ReadFromDisk(const std::string& key, const ReplicaDesc& replica, const std::vector<Slice>& slices);
  // Requests for a whole object over `slices`, appended to `out`.
  static void AppendRequests(TransferRequest::Op op, const ReplicaDesc& replica, const std::vector<Slice>& slices,
                             std::vector<TransferRequest>& out);
  bool NeedsStaging(const ReplicaDesc& replica, const std::vector<Slice>& slices) const;
  Status Write(const std::string& key, const std::vector<Slice>& slices, const ReplicateConfig& config, bool upsert);
  // One round of BatchPut over the keys `pending` (indices): start, copy, end or revoke; sets `out`
  // for each. Returns the keys whose replica writes failed, to try once more avoiding the segments
  // it adds to `unreachable` (none when no transfer failed).
  std::vector<size_t> BatchWriteRound(const std::vector<std::string>& keys,
                                      const std::vector<std::vector<Slice>>& values, const std::vector<uint64_t>& sizes,
                                      const std::vector<size_t>& pending, const ReplicateConfig& config,
                                      std::vector<Status>& out, std::vector<SegmentId>& unreachable);
  // Reads a whole object into `slices` from its best replica, falling back to the next ones.
  Result<uint64_t> Read(const std::string& key, const std::vector<Slice>& slices);
  // Copies one object (info) into `target`, trying replicas in order from `first`; `prior` is the
  // error of the attempts already made (returned if no later replica succeeds).
  Status ReadReplicas(const std::string& key, const ObjectInfo& info, const std::vector<Slice>& target, size_t first,
                      Status prior = Status(Code::kTransferFail, "no replica could be read"));
  Status MountPool();
  // Unmounts the global segment; false when the master could not be reached.
  bool UnmountPool();
  // Opens the SSD tier, serves it for our segments, registers what it holds, starts its thread.
  Status StartOffload();
  void StopOffload();
  // Pings the master; registers and re-mounts when it asks. Client::Heartbeat().
  Status Heartbeat();
  // Records whether a heartbeat reached the master; logs when it stops and starts doing so.
  void NoteHeartbeat(const Status& ping);
  ClientRegistration Registration() const { return {id, config.local_hostname, config.tenant, config.enable_offload}; }
};

// Total bytes of slices; INVALID_PARAMS for a null slice with a size.
Result<uint64_t> SlicesSize(const std::vector<Slice>& slices);
uint64_t SlicesChecksum(const std::vector<Slice>& slices);

}  // namespace yb
