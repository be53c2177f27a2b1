// The real client's side of dummy clients (Mooncake's dummy/real split; docs/design.md, "Dummy
// clients"). An application process set up with setup_dummy(mem_pool_size, local_buffer_size,
// "host:PORT") has no master address and no network connection of its own: it reaches the real
// client of its host (a yb-client serving transfers on PORT) through two Unix sockets in the
// abstract namespace, served here:
//   "yuebing-dummy:PORT"      the RPC (rpc/server.h, stream): every master method, forwarded to
//                             the real client's master as the dummy's own calls (the dummy is a
//                             client of the master with its own id, pins and leases, under the
//                             real client's proof), plus Hello and Relay (proto/dummy.proto): the
//                             transfers the real client makes between the pool and the dummy's
//                             memory, through its own transports (memcpy for its own segments,
//                             the same-host transport, TCP).
//   "yuebing-dummy-mem:PORT"  memory (SOCK_SEQPACKET): the dummy hands over the memfd of each
//                             region it allocated (shm/shared_memory.h) and gets a token for it;
//                             the relay names bytes by token and offset. The regions of a
//                             connection are unmapped when it ends (the dummy left or died), once
//                             no transfer uses them.
// Both serve only processes of this user (or root): SO_PEERCRED. A dummy acts with the real
// client's standing at the master (its tenant and role): whoever may run as this user may.
//
// A Relay to one of the real client's own segments is checked against its grant exactly as the
// transfer server checks it; other segments' owners check theirs.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "common/worker.h"
#include "rpc/server.h"
#include "transfer/local_segments.h"
#include "transfer/transfer_engine.h"
#include "yuebing/client.h"

namespace yb {

// The socket names of the real client whose transfer server listens on `port`.
std::string DummyRpcSocket(uint16_t port);
std::string DummyMemorySocket(uint16_t port);

// Method ids of the dummy's own calls on the RPC socket (beside the master's, rpc/master_methods.h).
inline constexpr uint16_t kDummyHello = 1001;
inline constexpr uint16_t kDummyRelay = 1002;
inline constexpr uint32_t kDummyProtocolVersion = 1;

class DummyServer {
 public:
  struct Options {
    uint16_t port = 0;  // the real client's transfer port: names the sockets
    int threads = 8;    // serving threads of the RPC (a relayed transfer holds one while it runs)
    const Clock* wall_clock = nullptr;  // grant expiry (tests); null: the system's
    // Its dummies map the segments of this host and move those bytes themselves (same-host
    // transfers on); with a secret they prove the real client's data-plane key, given them in the
    // hello. Off: the real client moves every byte for them (the relay).
    bool segments_shared = false;
  };
  // Serves dummies of `real` (which must outlive the server) until Stop or destruction. An error
  // when the names are taken (another real client of this network namespace serves that port).
  static Result<std::unique_ptr<DummyServer>> Start(Client& real, Options options);
  ~DummyServer();
  DummyServer(const DummyServer&) = delete;
  DummyServer& operator=(const DummyServer&) = delete;
  void Stop();

  uint64_t dummies() const { return dummies_.load(std::memory_order_relaxed); }  // memory connections open
  uint64_t regions() const;
  uint64_t relayed_bytes() const { return relayed_bytes_.load(std::memory_order_relaxed); }
  uint64_t relays() const { return relays_.load(std::memory_order_relaxed); }  // relay calls served
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  DummyServer(Client& real, Options options);
  Status Relay(std::string_view body, std::string& reply);
  void ServeMemory();
  // One message of a memory connection: maps the region it carries; false ends the connection.
  bool TakeRegion(int conn);
  void DropRegionsOf(int conn);
  std::shared_ptr<MappedRegion> Region(uint64_t token) const;

  Client& real_;
  const Options options_;
  std::shared_ptr<TransferEngine> engine_;
  std::shared_ptr<LocalSegmentRegistry> served_;  // the real client's own segments (grant keys)
  std::unique_ptr<rpc::RpcServer> rpc_;
  int mem_fd_ = -1;
  int stop_fd_[2] = {-1, -1};
  Worker mem_thread_;
  struct Held {
    std::shared_ptr<MappedRegion> region;
    int conn = -1;
  };
  mutable Mutex mu_;
  std::map<uint64_t, Held> regions_ GUARDED_BY(mu_);  // by token
  std::atomic<uint64_t> dummies_{0}, relayed_bytes_{0}, relays_{0}, refused_{0};
};

}  // namespace yb
