// LoopGroup: a listening socket and the event loops that serve its connections. Both of our TCP
// servers are one (the master's RPC server and a client's transfer server); what they share is
// here: accepting (Listener, with keepalive), dealing each connection to the loop serving the
// fewest, and bounds on open connections (in all, and from one peer address).
//
// The bound: with `max_connections` open, a new connection is closed at once, counted and logged
// (the 1st, 2nd, 4th, 8th, ... time), so a flood of connections costs the server neither memory,
// nor the descriptors its other connections need, nor its log. Start/Stop from one thread; the counters from any.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <mutex>
#include <string>
#include <vector>

#include "common/event_loop.h"
#include "common/listener.h"
#include "yuebing/status.h"

namespace yb {

class LoopGroup {
 public:
  // Makes the session for a connection adopted by `loop` (see EventLoop::Factory).
  using Factory = std::function<std::unique_ptr<LoopSession>(EventLoop& loop, int fd, std::string peer)>;

  struct Options {
    std::string name;          // names the server in logs and errors, e.g. "transfer server"
    Listener::Options listen;  // address, port, keepalive, on_accept_failed
    int threads = 1;           // event loops (at least 1)
    int max_connections = 4096;
    // Open connections from one peer address at most (0: no bound); one more is closed at once,
    // counted and logged, so that one host cannot take every slot.
    int max_connections_per_peer = 0;
    // Pins loop i to the i-th CPU this process may run on (wrapping around), and gives a new
    // connection to a loop on the CPU that processes its incoming packets (SO_INCOMING_CPU) unless
    // that loop serves clearly more connections than the least busy one. A connection's packets are
    // then received and served on one CPU, with no wake-up sent to another: on loopback the sender's
    // CPU receives, on a NIC the CPU its receive queue interrupts. For a host that runs little else.
    bool pin_to_cpus = false;
    // Each loop calls it on its thread after each batch of events (EventLoop::SetAfterBatch).
    std::function<void(EventLoop&)> after_batch;
    // EventLoop::SetStallTimeout of each loop (0: never).
    int stall_timeout_ms = 0;
  };

  LoopGroup(Options options, Factory factory);
  ~LoopGroup();
  LoopGroup(const LoopGroup&) = delete;
  LoopGroup& operator=(const LoopGroup&) = delete;

  // Starts the loops, then listens (an error names the server and the address).
  Status Start();
  // Stops accepting, then stops the loops, which close their connections. The loops stay (RunOn on
  // a stopped loop does nothing) until the group is destroyed.
  void Stop();

  uint16_t port() const { return listener_ ? listener_->port() : 0; }
  int threads() const { return static_cast<int>(loops_.size()); }
  // Loops whose thread is pinned to a CPU (pin_to_cpus; a thread that could not be pinned is not).
  int pinned_threads() const;
  int open_connections() const;
  // The longest any loop has not turned, in ms (EventLoop::Unresponsive).
  int64_t Unresponsive() const;
  // Connections closed at once because max_connections (or max_connections_per_peer from their
  // peer) were open.
  uint64_t refused_connections() const { return refused_.load(); }
  // Accepts that failed (e.g. out of descriptors); each is followed by a pause (listener.h).
  uint64_t accept_failures() const { return listener_ ? listener_->accept_failures() : 0; }

 private:
  void Deal(int fd, std::string peer);  // on the accepting thread
  size_t Choose(int fd) const;          // the loop for a new connection

  Options options_;
  Factory factory_;
  std::vector<std::unique_ptr<EventLoop>> loops_;
  std::unique_ptr<Listener> listener_;
  std::atomic<uint64_t> refused_{0};
  std::mutex peers_mu_;
  std::unordered_map<std::string, int> per_peer_;  // open connections by peer address; under peers_mu_
  bool started_ = false;
};

}  // namespace yb
