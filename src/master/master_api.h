// MasterApi: everything a client asks of the master. The in-process MasterService implements it;
// the RPC client (MasterClient) implements it over the network. Clients hold only a MasterApi, so
// the same Client code runs embedded or remote.
//
// Semantics (DESIGN.md section 3): two-phase Put (PutStart reserves, the writer copies, PutEnd
// publishes or PutRevoke frees); readers see only COMPLETE objects; GetReplicaList with `pin`
// holds the object's bytes for the caller until ReadEnd (or until the caller is declared dead), so
// no timer can fail a read in progress. Batch calls answer each key on its own.
// All methods are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb {

using TenantIndex = uint16_t;

// Who is calling: sent with every request.
struct CallContext {
  ClientId client;
  TenantIndex tenant = 0;  // from RegisterClient
};

struct ClientRegistration {
  ClientId id;
  std::string hostname;
  std::string tenant = "default";
};

struct ObjectInfo {
  uint64_t size = 0;
  std::optional<uint64_t> checksum;   // XXH3-64 of the value, when the writer gave one
  std::vector<ReplicaDesc> replicas;  // COMPLETE replicas only
  uint64_t read_pin = 0;              // non-zero when pinned: pass to ReadEnd
};

struct PingResponse {
  bool need_remount = false;  // the master does not know this client's segments
};

class MasterApi {
 public:
  virtual ~MasterApi() = default;

  // Clients and segments.
  virtual Result<TenantIndex> RegisterClient(const ClientRegistration& reg) = 0;
  virtual Result<PingResponse> Ping(const CallContext& ctx) = 0;
  virtual Status MountSegment(const CallContext& ctx, const SegmentDesc& seg) = 0;
  // Mounts again segments the master forgot (after a restart or after declaring the client dead).
  virtual Status ReMountSegment(const CallContext& ctx, const std::vector<SegmentDesc>& segs) = 0;
  virtual Status UnmountSegment(const CallContext& ctx, SegmentId id) = 0;
  virtual Result<std::vector<SegmentUsage>> ListSegments() = 0;

  // Writes.
  virtual Result<std::vector<ReplicaDesc>> PutStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                                    const ReplicateConfig& config) = 0;
  // Like PutStart, but an existing COMPLETE value is replaced atomically at PutEnd.
  virtual Result<std::vector<ReplicaDesc>> UpsertStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                                       const ReplicateConfig& config) = 0;
  virtual Status PutEnd(const CallContext& ctx, const std::string& key, std::optional<uint64_t> checksum) = 0;
  virtual Status PutRevoke(const CallContext& ctx, const std::string& key) = 0;

  // Reads.
  virtual Result<ObjectInfo> GetReplicaList(const CallContext& ctx, const std::string& key, bool pin) = 0;
  // Over RPC this is one-way: it returns once sent, and an unknown pin is not reported.
  virtual Status ReadEnd(const CallContext& ctx, const std::string& key, uint64_t read_pin) = 0;
  // Never renews a lease nor changes recency: probes cannot keep objects from eviction.
  virtual Result<bool> ExistKey(const CallContext& ctx, const std::string& key) = 0;

  // Removal.
  virtual Status Remove(const CallContext& ctx, const std::string& key, bool force) = 0;
  virtual Result<uint64_t> RemoveByRegex(const CallContext& ctx, const std::string& pattern, bool force) = 0;
  virtual Result<uint64_t> RemoveAll(const CallContext& ctx, bool force) = 0;

  // Batch forms: one answer per key, in order.
  virtual std::vector<Result<std::vector<ReplicaDesc>>> BatchPutStart(const CallContext& ctx,
                                                                      const std::vector<std::string>& keys,
                                                                      const std::vector<uint64_t>& sizes,
                                                                      const ReplicateConfig& config) = 0;
  virtual std::vector<Status> BatchPutEnd(const CallContext& ctx, const std::vector<std::string>& keys,
                                          const std::vector<std::optional<uint64_t>>& checksums) = 0;
  virtual std::vector<Status> BatchPutRevoke(const CallContext& ctx, const std::vector<std::string>& keys) = 0;
  virtual std::vector<Result<ObjectInfo>> BatchGetReplicaList(const CallContext& ctx,
                                                              const std::vector<std::string>& keys, bool pin) = 0;
  virtual std::vector<Status> BatchReadEnd(const CallContext& ctx, const std::vector<std::string>& keys,
                                           const std::vector<uint64_t>& read_pins) = 0;
  virtual std::vector<Result<bool>> BatchExistKey(const CallContext& ctx, const std::vector<std::string>& keys) = 0;
  virtual std::vector<Status> BatchRemove(const CallContext& ctx, const std::vector<std::string>& keys, bool force) = 0;
};

}  // namespace yb
