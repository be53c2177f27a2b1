// Listener: accepts TCP connections on its own thread and hands each one, connected, non-blocking,
// with Nagle off and TCP keepalive on, to a callback (which deals it to an EventLoop).
//
// Keepalive is what closes a connection whose peer's host died or was cut off: nothing else would,
// since such a peer never sends the FIN, and a server that only waits to read never finds out.
//
// A failed accept (out of descriptors or memory) leaves the connection queued, so accepting again
// at once would fail again at once, in a loop: the listener pauses instead, 10 ms at first and
// doubling up to 1 s while accepts keep failing. Start/Stop from one thread.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <system_error>
#include <thread>

#include "yuebing/status.h"

namespace yb {

// TCP keepalive on accepted connections: probes start after `idle` with nothing received, and the
// connection is closed after `probes` of them go unanswered, `interval` apart. The peer's kernel
// answers them, so a live peer that merely has nothing to say is never dropped. A connection with
// sent bytes unacknowledged for total() is closed too (TCP_USER_TIMEOUT): probes are not sent
// while a reply waits for its acknowledgement.
struct Keepalive {
  std::chrono::seconds idle{60};  // 0: no keepalive
  std::chrono::seconds interval{20};
  int probes = 3;
  // A silent, unanswering peer dropped after about `total`: half of it idle, then 3 probes (at
  // least a second apart). 0 turns keepalive off.
  static Keepalive After(std::chrono::seconds total) {
    const int64_t t = total.count();
    return Keepalive{std::chrono::seconds(t / 2), std::chrono::seconds(std::max<int64_t>(1, t / 6)), 3};
  }
  std::chrono::seconds total() const { return idle + interval * probes; }
};
// The longest keepalive time the flags accept (6 hours): the kernel's own bound on the idle time
// is about 9 hours.
constexpr int64_t kMaxKeepaliveSec = 21600;

class Listener {
 public:
  using OnAccept = std::function<void(int fd, std::string peer)>;  // the callback owns fd
  struct Options {
    // An address, or a host name resolved at Start (IPv4 first); "@name": the Unix socket `name`
    // in the abstract namespace, which serves only processes of this user (or root: SO_PEERCRED).
    std::string address = "0.0.0.0";
    uint16_t port = 0;                // 0: any free port (see port())
    // Called (on the accepting thread) after each failed accept, before the pause that follows it.
    std::function<void()> on_accept_failed;
    Keepalive keepalive;
  };

  Listener(Options options, OnAccept on_accept);
  ~Listener();
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;

  // Binds and listens (INVALID_PARAMS naming the address when it cannot), then accepts.
  Status Start();
  // No connection is handed over after Stop returns.
  void Stop();
  uint16_t port() const { return port_; }
  uint64_t accept_failures() const { return accept_failures_.load(); }

 private:
  struct Impl;
  void Accept();
  void AcceptLocal();
  // True when the accept failed (`ec`): `again` runs after a backoff pause (never when stopping).
  bool Failed(const std::error_code& ec, void (Listener::*again)());
  void RunIo();  // the accepting thread
  void SetKeepalive(int fd) const;

  Options options_;
  OnAccept on_accept_;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> accept_failures_{0};
};

}  // namespace yb
