// The server half of the master's RPC: every method of the table (rpc/master_methods.h) answered
// by a MasterApi behind an RpcServer, with calls and failures counted per method.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "api/master_api.h"
#include "common/histogram.h"
#include "rpc/master_methods.h"
#include "rpc/server.h"

namespace yb::rpc {

// Calls and failed calls per method (a per-key call fails when any of its keys fails), and how long
// each took to serve: from its request parsed to its answer made (a change's wait for the metadata
// log to be durable comes after, and is not counted). Indexed by wire id; every id of the table
// fits. Thread-safe.
class RpcMetrics {
 public:
  static constexpr uint16_t kMethods = kMethodIdLimit;
  void Record(uint16_t method, bool failed, uint64_t micros = 0) {
    if (method >= kMethods) return;
    calls_[method].fetch_add(1, std::memory_order_relaxed);
    if (failed) failures_[method].fetch_add(1, std::memory_order_relaxed);
    durations_[method].Record(micros);
  }
  uint64_t calls(uint16_t m) const { return m < kMethods ? calls_[m].load(std::memory_order_relaxed) : 0; }
  uint64_t failures(uint16_t m) const { return m < kMethods ? failures_[m].load(std::memory_order_relaxed) : 0; }
  // How long method `m`'s calls took (m must be below kMethods).
  const LatencyHistogram& durations(uint16_t m) const { return durations_[m]; }

 private:
  std::array<std::atomic<uint64_t>, kMethods> calls_{};
  std::array<std::atomic<uint64_t>, kMethods> failures_{};
  std::array<LatencyHistogram, kMethods> durations_{};
};

struct MasterServiceOptions {
  RpcMetrics* metrics = nullptr;      // counts calls, when given
  std::function<uint64_t()> epoch;    // every answer carries it, when given (HA: the leader's epoch)
  std::string data_key;               // net::Security::cluster_data_key: given to authenticated clients at registration
  // Keys (or segments, results, objects, pins) one call may carry at most: a larger batch is
  // refused whole (INVALID_PARAMS) before the method runs.
  uint32_t max_batch = 65536;
  // Whether a client that proved only its tenant's secret may mount memory (and make a storage
  // node's reports on it); its segments then take that tenant's replicas only.
  bool tenants_may_mount = false;
};

// Registers every method of the table on `server`, answered by `master` (which must outlive the
// server). Before server.Start().
//
// Who may call what: every call but RegisterClient and ListSegments must carry the context its
// client was registered with (MasterApi::VerifyCaller); a connection that proved a tenant's secret
// only registers as that tenant, and is not privileged (CallContext::privileged).
void RegisterMasterService(RpcServer& server, MasterApi& master, MasterServiceOptions options = {});

}  // namespace yb::rpc
