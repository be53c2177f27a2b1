// RpcServer: accepts connections and answers framed requests (frame.h) with registered handlers.
//
// Each connection reads frames in a loop and answers each request in order of arrival, so a
// client may pipeline many requests on one connection. Each serving thread runs its own event
// loop (an epoll set) and connections are dealt to the threads in turn, so several connections
// are served in parallel and a connection is always served by the same thread. A malformed or
// oversized frame closes that connection (and is logged); other connections are unaffected.
// Handlers run on the server's threads and must be thread-safe. Start/Stop from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/event_loop.h"
#include "common/listener.h"
#include "rpc/frame.h"
#include "yuebing/status.h"

namespace yb::rpc {

class RpcServer {
 public:
  // Answers a request: appends the reply body to `reply` and returns OK, or returns an error Status,
  // sent back as such (whatever it appended is dropped). `body` is valid only during the call.
  // `reply` is the connection's output buffer: append to it, never read or shrink it.
  using Handler = std::function<Status(std::string_view body, std::string& reply)>;

  struct Options {
    std::string address = "0.0.0.0";
    uint16_t port = 0;  // 0: any free port (see port())
    int threads = 2;
    uint32_t max_body = kDefaultMaxBody;
    // A connection whose unsent replies reach this many bytes (its peer sends but does not read)
    // is not read from until they drain: a bound on the memory one connection can hold.
    size_t max_pending_reply_bytes = 64u << 20;
    // Called (on the connection's thread) each time a connection stops being read for that reason.
    std::function<void()> on_reads_paused;
    // Called (on the accepting thread) after each failed accept, before the pause that follows it.
    std::function<void()> on_accept_failed;
  };

  explicit RpcServer(Options options);
  ~RpcServer();
  RpcServer(const RpcServer&) = delete;
  RpcServer& operator=(const RpcServer&) = delete;

  // Before Start().
  void Register(uint16_t method, Handler handler);
  Status Start();
  void Stop();
  uint16_t port() const { return port_; }

  uint64_t malformed_frames() const { return malformed_.load(); }
  uint64_t open_connections() const { return connections_.load(); }
  // Times a connection stopped being read because its peer was not reading its replies.
  uint64_t reads_paused() const { return reads_paused_.load(); }
  // Accepts that failed (e.g. out of file descriptors); each is followed by a pause of 10 ms,
  // doubling up to 1 s while they keep failing.
  uint64_t accept_failures() const;

 private:
  class Session;

  Options options_;
  std::unordered_map<uint16_t, Handler> handlers_;
  std::vector<std::unique_ptr<EventLoop>> loops_;  // one per serving thread
  std::unique_ptr<Listener> listener_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> malformed_{0};
  std::atomic<uint64_t> connections_{0};
  std::atomic<uint64_t> reads_paused_{0};
  bool started_ = false;
  size_t next_loop_ = 0;  // the loop the next connection goes to (the listener's thread only)
};

}  // namespace yb::rpc
