// RpcChannel: the client end of one connection to an RpcServer.
//
// Call() sends a request and waits for its reply until a deadline (RPC_TIMEOUT after it). The
// deadline covers sending too: a server that stops reading cannot hold a caller, nor the callers
// queued behind it to write, past their deadlines (a request cut short closes the connection). Many
// threads may call at once: requests are pipelined on the one connection. There is no reader
// thread: one waiting caller at a time reads the socket (the "leader") and hands out every reply
// it finds; when its own reply arrives it passes the role on. So a lone caller reads its own
// reply with no thread switch. A broken connection fails the calls in flight with RPC_FAIL; the
// next call reconnects, no sooner than an exponential backoff (100 ms doubling to 5 s, each pause
// +-20% at random so that the clients of a restarted master do not all reconnect at once) allows.
// Connecting, name lookup included (common/resolve.h), is bounded by the call's deadline and the
// connect timeout. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/backoff.h"
#include "common/deadline_mutex.h"
#include "common/resolve.h"
#include "net/security.h"
#include "rpc/frame.h"
#include "yuebing/status.h"

namespace yb::rpc {

class RpcChannel {
 public:
  struct Options {
    std::chrono::milliseconds connect_timeout{2000};
    // Bytes sent and unacknowledged this long fail the connection (TCP_USER_TIMEOUT): a server
    // whose host or network is gone sends no reset, and without this the connection would stay,
    // each call waiting out its deadline, until the kernel's ~15 minutes of retransmissions end.
    // Once failed, calls fail at once between reconnection attempts. 0: the kernel's default.
    std::chrono::milliseconds unacked_timeout{5000};
    std::chrono::milliseconds backoff_min{100};
    std::chrono::milliseconds backoff_max{5000};
    double backoff_jitter = 0.2;
    uint32_t max_body = kDefaultMaxBody;
    NameResolver::Lookup lookup = NameResolver::SystemLookup;  // how host names are looked up
    // TLS and the proof of our secret at each connection (null: neither); `tenant` is the name the
    // proof gives (the tenant whose secret it may be).
    std::shared_ptr<const net::Security> security;
    std::string tenant = "default";
  };

  // `host` "@name": the Unix socket `name` of this host, in the abstract namespace (`port` unused).
  RpcChannel(std::string host, uint16_t port, Options options);
  RpcChannel(std::string host, uint16_t port) : RpcChannel(std::move(host), port, Options{}) {}
  ~RpcChannel();
  RpcChannel(const RpcChannel&) = delete;
  RpcChannel& operator=(const RpcChannel&) = delete;

  Result<std::string> Call(uint16_t method, const std::string& body, std::chrono::milliseconds deadline);
  // Sends a request without waiting for (or keeping) its reply. OK once the request is written.
  Status Send(uint16_t method, const std::string& body, std::chrono::milliseconds connect_deadline);
  const std::string& target() const { return target_; }

 private:
  struct Connection;
  // The connection, made now if there is none (and the backoff allows), by `until`.
  Result<std::shared_ptr<Connection>> Connected(std::chrono::steady_clock::time_point until, uint32_t* id);
  Status SendTimeout(std::chrono::milliseconds deadline, const Status& why) const;

  std::string host_;
  uint16_t port_;
  std::string target_;
  Options options_;
  NameResolver resolver_;
  DeadlineMutex mu_;  // held while connecting
  std::shared_ptr<Connection> conn_ GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point next_attempt_ GUARDED_BY(mu_){};
  Backoff backoff_ GUARDED_BY(mu_);
  uint32_t next_id_ GUARDED_BY(mu_) = 1;
};

}  // namespace yb::rpc
