// TransferServer: serves reads and writes of the segments this client owns, over TCP (wire.h).
//
// Every request is checked against its segment: an unknown segment or a range outside it is
// refused with an error and no byte outside is read or written (a refused write also closes the
// connection, since its payload is not consumed). It also serves whole-object reads of the
// LOCAL_DISK replicas its SSD tier holds (registered with LocalSegmentRegistry::AddDisk).
//
// Connections are served by a few event loops (common/event_loop.h), not a thread each: the pooled
// connections of every other client of a cluster stay open here, mostly idle, and cost a small
// record each (an idle connection holds no buffer). Data still goes straight between the socket
// and segment memory: a write's payload is received into the segment, a read is sent from it. Reads
// of the SSD tier run on a small pool of their own, so a slow disk holds up only the connections
// waiting for it. Thread-safe; Start/Stop from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/grant.h"
#include "common/loop_group.h"
#include "common/thread_pool.h"
#include "net/security.h"
#include "transfer/local_segments.h"
#include "transfer/tcp/wire.h"
#include "yuebing/status.h"
#include "yuebing/types.h"

namespace yb::tcp {

class TransferServer {
 public:
  struct Options {
    std::string address = "0.0.0.0";
    uint16_t port = 0;                          // 0: any free port
    uint64_t max_request = kDefaultMaxRequest;  // longest single request
    uint64_t max_object_read = 1ULL << 30;      // largest object read from the SSD tier at once
    // Open connections at most; one more is closed at once (and logged). Each costs a descriptor.
    int max_connections = 4096;
    int max_connections_per_peer = 1024;  // from one peer address (0: no bound)
    // TCP keepalive on accepted connections: a peer whose host died or was cut off sends no FIN, and
    // its connection is closed after this instead of holding a descriptor for ever.
    Keepalive keepalive;
    int threads = 0;       // event loops; 0: one per core, 2 to 8
    int disk_threads = 2;  // SSD tier reads in parallel
    // A connection halfway through a request (a header, a write's payload, a key) or with answers
    // it does not read, that moves no byte for this long, is closed and counted: a peer that
    // stops halfway holds no connection slot for ever. Idle connections stay. 0: never.
    int stall_timeout_ms = 30000;
    // Called (on the accepting thread) after each failed accept, before the pause that follows it
    // (10 ms, doubling up to 1 s while accepts keep failing, e.g. out of file descriptors).
    std::function<void()> on_accept_failed;
    // TLS and the data-plane key's proof at each connection (null: neither).
    std::shared_ptr<net::Security> security;
    // The Unix-time clock grants are judged by, in milliseconds (null: the system's, WallMs()).
    const Clock* wall_clock = nullptr;
  };

  TransferServer(std::shared_ptr<LocalSegmentRegistry> served, Options options);
  ~TransferServer();
  Status Start();
  void Stop();
  uint16_t port() const { return port_; }
  uint64_t refused_requests() const { return refused_.load(); }
  uint64_t refused_grants() const { return refused_grants_.load(); }
  // Connections closed for moving no byte halfway through (Options::stall_timeout_ms).
  uint64_t stalled_closed() const { return stalled_.load(); }
  uint64_t open_connections() const { return group_ ? group_->open_connections() : 0; }
  // Connections closed at once because max_connections were open.
  uint64_t refused_connections() const { return group_ ? group_->refused_connections() : 0; }
  // Everything above and what has been served, from any thread.
  TransferServerStats stats() const;

 private:
  int64_t Wall() const { return WallMs(options_.wall_clock); }
  class Session;

  std::shared_ptr<LocalSegmentRegistry> served_;
  Options options_;
  std::unique_ptr<ThreadPool> disk_pool_;
  // Stop's order: the loops stop, then the SSD tier reads drain (posting to stopped loops), then
  // the loops go.
  std::unique_ptr<LoopGroup> group_;
  uint16_t port_ = 0;  // kept after Stop
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> refused_grants_{0};
  std::atomic<uint64_t> stalled_{0};
  // Served, counted when answered (reads) or received whole (writes).
  std::atomic<uint64_t> reads_{0}, read_bytes_{0}, writes_{0}, written_bytes_{0}, disk_reads_{0}, disk_read_bytes_{0};
};

}  // namespace yb::tcp
