// RpcServer: accepts connections and answers framed requests (frame.h) with registered handlers.
//
// Each connection reads frames in a loop and answers each request in order of arrival, so a
// client may pipeline many requests on one connection. Each serving thread runs its own event
// loop (an epoll set) and a new connection goes to the thread serving the fewest (LoopGroup), so
// several connections are served in parallel and a connection is always served by the same
// thread. A malformed or oversized frame closes that connection (and is logged); other
// connections are unaffected. Past max_connections a new connection is closed at once.
// Handlers run on the server's threads and must be thread-safe. Start/Stop from one thread.
// With Options::security, a connection runs TLS and proves the cluster's (or a tenant's) secret
// before its first request; each handler is told what its caller proved.
//
// With a ReplyGate (the master's metadata log), the reply to a call whose handler made a change
// is held until the gate releases the change (it is durable), while the connection and the others
// of its thread go on being served; held replies are sent as they are released (a connection's
// replies may then arrive out of order: they carry their request ids).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/loop_group.h"
#include "common/thread_annotations.h"
#include "net/security.h"
#include "rpc/frame.h"
#include "yuebing/status.h"

namespace yb::rpc {

// What a reply must wait for. Tickets are the gate's own numbers; 0 is "nothing".
class ReplyGate {
 public:
  virtual ~ReplyGate() = default;
  // What the handler that just ran on this thread must wait for (and resets it).
  virtual uint64_t TakeTicket() = 0;
  virtual bool Released(uint64_t ticket) const = 0;
  // Calls `fn` once `ticket` is released: at once if it is, else later from another thread.
  virtual void WhenReleased(uint64_t ticket, std::function<void()> fn) = 0;
  // A ticket whose release releases every ticket up to `ticket` (by value) too.
  virtual uint64_t Cover(uint64_t ticket) const { return ticket; }
  // Called on a serving thread after each batch of calls, before it waits again: makes what the
  // batch's handlers changed as durable as it can at once (the log writes it; syncing follows).
  virtual void Flush() {}
};

class RpcServer {
 public:
  // Answers a request: appends the reply body to `reply` and returns OK, or returns an error Status,
  // sent back as such (whatever it appended is dropped). `body` is valid only during the call.
  // `reply` is the connection's output buffer: append to it, never read or shrink it. `peer` is
  // what the connection's handshake proved (net/security.h).
  using Handler = std::function<Status(const net::Peer& peer, std::string_view body, std::string& reply)>;

  struct Options {
    std::string address = "0.0.0.0";
    uint16_t port = 0;  // 0: any free port (see port())
    int threads = 2;
    // Serving thread i runs on the i-th CPU, and a connection is served on the CPU that receives
    // its packets (LoopGroup::Options::pin_to_cpus).
    bool pin_to_cpus = false;
    uint32_t max_body = kDefaultMaxBody;
    // Open connections at most; one more is closed at once (and logged). Each costs a descriptor
    // and its buffers.
    int max_connections = 16384;
    // Open connections from one peer address at most (0: no bound); one more is closed at once.
    int max_connections_per_peer = 4096;
    // Closes the connection of a peer whose host died or was cut off (it never sends a FIN).
    Keepalive keepalive;
    // A connection whose unsent replies reach this many bytes (its peer sends but does not read)
    // is not read from until they drain: a bound on the memory one connection can hold.
    size_t max_pending_reply_bytes = 64u << 20;
    // A connection that has sent part of a request, or has replies waiting that it does not read,
    // and moves no byte either way for this long is closed (and counted): a peer that stops
    // halfway holds neither memory nor a connection slot for ever. Idle connections (nothing
    // pending) stay open. 0: never.
    int half_sent_timeout_ms = 30000;
    // Called (on the connection's thread) each time a connection stops being read for that reason.
    std::function<void()> on_reads_paused;
    // Called (on the accepting thread) after each failed accept, before the pause that follows it.
    std::function<void()> on_accept_failed;
    // Holds replies until what their calls changed is durable; must outlive the server.
    ReplyGate* gate = nullptr;
    // TLS and authentication of each connection before its first request (null: neither).
    std::shared_ptr<net::Security> security;
  };

  explicit RpcServer(Options options);
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Before Start().
  void Register(uint16_t method, Handler handler);
  // Runs the handler of `method` on `body` as a connection of `peer` would, without a connection
  // (tests, fuzzers): the reply's body, or the error the handler answered.
  Result<std::string> Call(uint16_t method, const net::Peer& peer, std::string_view body) const;
  Status Start();
  void Stop();
  uint16_t port() const { return group_ ? group_->port() : 0; }
  // Serving threads pinned to a CPU (Options::pin_to_cpus).
  int pinned_threads() const { return group_ ? group_->pinned_threads() : 0; }

  uint64_t malformed_frames() const { return malformed_.load(); }
  // Connections closed for stopping halfway (Options::half_sent_timeout_ms).
  uint64_t stalled_closed() const { return stalled_.load(); }
  uint64_t open_connections() const { return group_ ? group_->open_connections() : 0; }
  // The longest any serving thread has not turned, in ms (LoopGroup::Unresponsive): calls sent to
  // it meanwhile were not heard.
  int64_t Unresponsive() const { return group_ ? group_->Unresponsive() : 0; }
  // Connections closed at once because max_connections were open.
  uint64_t refused_connections() const { return group_ ? group_->refused_connections() : 0; }
  // Times a connection stopped being read because its peer was not reading its replies.
  uint64_t reads_paused() const { return reads_paused_.load(); }
  // Accepts that failed (e.g. out of file descriptors); each is followed by a pause of 10 ms,
  // doubling up to 1 s while they keep failing.
  uint64_t accept_failures() const { return group_ ? group_->accept_failures() : 0; }
  // Replies held for the gate and not yet sent.
  uint64_t held_replies() const { return held_.load(std::memory_order_relaxed); }

 private:
  class Session;
  struct LoopHolds;
  std::shared_ptr<LoopHolds> HoldsOf(EventLoop& loop);
  // On a loop's thread, after its batch: sends what its sessions hold that is released, and asks
  // the gate for one release covering what is left.
  void ReleasePass(EventLoop& loop);

  Options options_;
  std::unordered_map<uint16_t, Handler> handlers_;
  std::unique_ptr<LoopGroup> group_;
  std::atomic<uint64_t> malformed_{0};
  std::atomic<uint64_t> stalled_{0};
  std::atomic<uint64_t> reads_paused_{0};
  std::atomic<uint64_t> held_{0};
  Mutex holds_mu_;
  std::unordered_map<EventLoop*, std::shared_ptr<LoopHolds>> holds_ GUARDED_BY(holds_mu_);
  bool stopped_ GUARDED_BY(holds_mu_) = false;
};

}  // namespace yb::rpc
