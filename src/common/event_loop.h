// EventLoop: one thread serving many non-blocking connections through a level-triggered epoll set.
//
// Both of our servers use it (the master's RPC server and a client's transfer server): a
// connection is a LoopSession, handed to one loop (Adopt) and only ever touched by that loop's
// thread, so its handlers never run concurrently and need no lock. The set is level-triggered: a
// session that leaves data unread (to be fair to the others) is told again on the next wait.
//
// Why not Asio's reactor: a connection here carries small requests one after another, and Asio
// spends an extra system call per request on that pattern (async_wait re-arms the descriptor with
// epoll_ctl each time; async_read_some first tries a read that finds nothing). This loop costs one
// recv and one send per request and one epoll_wait shared by the connections that became ready
// together. Accepting is the Listener's (listener.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "yuebing/status.h"

namespace yb {

// The steady clock in milliseconds: what LoopSession::Alive is given.
inline int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A connection served by an EventLoop. Its methods run on the loop's thread only.
class LoopSession {
 public:
  virtual ~LoopSession() = default;
  // The epoll events (EPOLLIN, EPOLLOUT) the session waits for now; 0 waits for none (an error or
  // hang-up is still reported).
  virtual uint32_t Interest() const = 0;
  // Handles readiness; false closes the connection (the session is destroyed).
  virtual bool OnEvents(uint32_t events) = 0;
  // Whether the session waits on its peer halfway through (part of a request received, or replies
  // it does not read): with a stall timeout set (EventLoop::SetStallTimeout), a session waiting so
  // with no event for that long is told (OnStalled) and closed. An idle session never is.
  virtual bool WaitsOnPeer() const { return false; }
  virtual void OnStalled(int64_t idle_ms) { (void)idle_ms; }
  // A steady time (SteadyNowMs) past which the session is closed whatever it does, with a stall
  // timeout set (told through OnStalled too); 0: none. A handshake that must end in time has one.
  virtual int64_t DeadlineMs() const { return 0; }
  // Input the session's stream holds that the socket's readiness does not show (TLS records
  // decrypted ahead): the loop offers the session EPOLLIN again at once while it says so.
  virtual bool Buffered() const { return false; }
  // The session that serves the connection: this one, or the one a wrapper (a handshake,
  // net/security.h) handed the connection to, or null while the wrapper has not yet.
  virtual LoopSession* Inner() { return this; }
  // The loop's name for the session (RunOn), set when it is adopted.
  uint64_t loop_id() const { return loop_id_; }

 protected:
  // A wrapper gives the session it made its own name in the loop.
  void ShareLoopId(LoopSession& inner) const { inner.loop_id_ = loop_id_; }

 private:
  friend class EventLoop;
  uint64_t loop_id_ = 0;
};

class EventLoop {
 public:
  // Makes the session for a connected, non-blocking descriptor. The loop owns the descriptor and
  // closes it after the session is destroyed.
  using Factory = std::function<std::unique_ptr<LoopSession>(int fd, std::string peer)>;

  explicit EventLoop(Factory factory);
  ~EventLoop();  // stops the loop; closes its connections and those not yet adopted
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // `cpu` >= 0 pins the loop's thread to that CPU (a failure to pin is logged, and the loop runs
  // unpinned).
  Status Start(int cpu = -1);
  // The CPU the thread was asked to run on, or -1.
  int cpu() const { return cpu_; }
  // Ends the thread and closes every connection. Tasks not yet run are dropped.
  void Stop();

  // From any thread: the loop takes the descriptor over.
  void Adopt(int fd, std::string peer);
  // From any thread: runs `fn` on the loop's thread on the session `id` if it is still open; false
  // from `fn` closes it. The loop then looks at what the session waits for again.
  void RunOn(uint64_t id, std::function<bool(LoopSession&)> fn);
  // From any thread: runs `fn` on the loop's thread.
  void Post(std::function<void()> fn);
  // On the loop's thread only: runs `fn` on session `id` now, as RunOn would later. False when
  // there is no such session.
  bool Visit(uint64_t id, const std::function<bool(LoopSession&)>& fn);
  // Before Start: called on the loop's thread after each batch of events and tasks, before the
  // loop waits again (a server flushes what its handlers queued there).
  void SetAfterBatch(std::function<void()> fn) { after_batch_ = std::move(fn); }
  // Before Start: closes a WaitsOnPeer() session that had no event for `timeout_ms` (0: never),
  // checked every quarter of it (10 ms - 1 s).
  void SetStallTimeout(int timeout_ms) { stall_ms_ = timeout_ms; }
  // Before Start: called on the loop's thread with the peer of each connection it closes (or drops
  // unadopted), once per Adopt.
  void SetOnClose(std::function<void(const std::string& peer)> fn) { on_close_ = std::move(fn); }
  // Connections handed over (Adopt) and not yet closed, from any thread.
  int open_connections() const { return open_.load(std::memory_order_relaxed); }
  // From any thread, now_ms on SteadyNowMs: how long the loop has not turned, in ms. It posts a
  // probe when none is out, and answers the age of the one out, or (once) how late the last one
  // ran. A loop that is merely idle answers about 0: a blocked or starved one, how long.
  int64_t Unresponsive(int64_t now_ms);

 private:
  bool Watch(int op, int fd, uint32_t events, void* ptr);
  void Wake();
  void Run();
  bool TakeQueued();  // false once the loop stops

  struct Entry {
    std::unique_ptr<LoopSession> session;
    int fd;
    int64_t last_event_ms = 0;  // while a stall timeout is set
    std::string peer;
  };
  // After a session ran: closes it (`ok` false) or updates what it waits for.
  void Settle(Entry& e, uint32_t before, bool ok);
  void Close(Entry& e);
  void CloseFd(int fd, const std::string& peer);
  struct Task {
    uint64_t id;  // 0: the loop's own task (Post), in loop_fn
    std::function<bool(LoopSession&)> fn;
    std::function<void()> loop_fn;
  };

  Factory factory_;
  std::atomic<int64_t> probe_sent_ms_{0};  // a probe posted and not yet run (0: none)
  std::atomic<int64_t> probe_late_ms_{0};  // how late the last probe ran, until read
  std::function<void()> after_batch_;
  std::function<void(const std::string&)> on_close_;
  int stall_ms_ = 0;
  int64_t now_ms_ = 0;         // the current batch's time, while stall_ms_ > 0; the loop thread's alone
  int64_t last_sweep_ms_ = 0;  // the loop thread's alone
  int SweepPeriod() const { return stall_ms_ <= 0 ? -1 : std::min(1000, std::max(10, stall_ms_ / 4)); }
  void Sweep();
  void OfferBuffered();
  std::vector<uint64_t> buffered_;  // sessions whose streams hold input (Buffered); the loop thread's
  int ep_ = -1;
  int wake_ = -1;
  std::thread thread_;
  int cpu_ = -1;
  uint64_t next_id_ = 1;                          // the loop thread's alone
  std::unordered_map<uint64_t, Entry> sessions_;  // the loop thread's alone; epoll names an Entry
  std::mutex mu_;
  std::vector<std::pair<int, std::string>> incoming_;  // under mu_
  std::vector<Task> tasks_;                            // under mu_
  bool stopping_ = false;                              // under mu_
  std::atomic<int> open_{0};
};

}  // namespace yb
