// The same-host side of a client's segments (docs/design.md, "Same-host transfers"): a Unix domain
// socket in the abstract namespace, named after the transfer server's endpoint, through which a
// process of this host asks for the memfd of one segment and maps it, then moves bytes with one
// memcpy (ShmTransport). It is given only to a peer of this user (SO_PEERCRED; root too) that,
// when this process has a secret, proves the data-plane key, and it proves the key back. Each
// connection asks for one segment, and stays open while both live: its end tells the peer that
// this process died.
//
// The exchange (SOCK_SEQPACKET, one message each):
//   server -> client  hello    "YBSH" | u32 version (1) | nonce (16)
//   client -> server  ask      "YBSA" | u32 version | u64 segment | nonce (16)
//                              | HMAC-SHA256(data key, "yb-shm-client" 0 | server nonce | client nonce | segment)
//   server -> client  answer   "YBSR" | i32 code | u64 region size | u64 segment offset in it
//                              | u64 segment size | u16 grant key length | grant key
//                              | HMAC-SHA256(data key, "yb-shm-server" 0 | server nonce | client nonce | segment)
//                              with the region's memfd (SCM_RIGHTS) when the code is 0.
// Without a secret the MACs are zero and not checked (the user's credentials are the boundary).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/worker.h"
#include "transfer/local_segments.h"
#include "yuebing/status.h"

namespace yb::shm {

// The abstract socket name of the same-host side of the transfer server at `endpoint`.
std::string SocketName(const std::string& endpoint);

class ShmServer {
 public:
  struct Options {
    std::string endpoint;  // the transfer server's "host:port": names the socket
    // The data-plane key peers prove ("": no secret); read at each request (a client may be given
    // its key at registration, after its server started).
    std::function<std::string()> data_key;
  };
  ShmServer(std::shared_ptr<LocalSegmentRegistry> served, Options options);
  ~ShmServer();
  ShmServer(const ShmServer&) = delete;
  ShmServer& operator=(const ShmServer&) = delete;

  // Binds the socket and starts serving; an error when the name is taken (another process of
  // this network namespace serves that endpoint).
  Status Start();
  void Stop();
  uint64_t given() const { return given_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  void Serve();
  // True when the peer was given a segment: its connection is kept while both live.
  bool Answer(int fd);
  static constexpr size_t kMaxPeers = 4096;

  const std::shared_ptr<LocalSegmentRegistry> served_;
  const Options options_;
  int listen_fd_ = -1;
  int stop_fd_[2] = {-1, -1};
  Worker thread_;
  std::atomic<uint64_t> given_{0}, refused_{0};
};

}  // namespace yb::shm
