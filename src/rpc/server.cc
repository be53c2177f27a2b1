#include "rpc/server.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "common/status_wire.h"

namespace yb::rpc {

// The held replies of one serving loop: which of its sessions hold some, and the release asked
// for. Touched on the loop's thread only, but for `running`, which a release from another thread
// reads to know whether the loop may still be posted to.
struct RpcServer::LoopHolds {
  EventLoop* loop = nullptr;
  std::vector<uint64_t> sessions;  // may name sessions closed since
  uint64_t armed = 0;              // the ticket a release is asked for (0: none)
  Mutex mu;
  bool running GUARDED_BY(mu) = true;
};

namespace {
constexpr size_t kInputBuffer = 16 << 10;    // a connection's first read buffer, and how it grows
constexpr size_t kMaxIdleInput = 256 << 10;  // a larger one goes back to kInputBuffer when emptied
}  // namespace

// One connection, served by one EventLoop (common/event_loop.h): its handlers never run
// concurrently, and its replies go out in order.
class RpcServer::Session final : public LoopSession {
 public:
  Session(RpcServer& server, EventLoop& loop, std::unique_ptr<net::Stream> stream, net::Peer peer)
      : server_(server), loop_(loop), stream_(std::move(stream)), peer_(std::move(peer)) {}
  ~Session() override { server_.held_.fetch_sub(held_.size(), std::memory_order_relaxed); }
  bool holding() const { return !held_.empty(); }

  // Sends the held replies released now (a later one may be released before an earlier: replies
  // carry their request ids). Notes the largest ticket still held in *still (0: none).
  bool Release(uint64_t* still) {
    ReplyGate* gate = server_.options_.gate;
    size_t kept = 0;
    for (auto& h : held_) {
      if (gate->Released(h.ticket)) {
        out_ += h.reply;
        server_.held_.fetch_sub(1, std::memory_order_relaxed);
      } else {
        *still = std::max(*still, h.ticket);
        if (&held_[kept] != &h) held_[kept] = std::move(h);
        ++kept;
      }
    }
    held_.resize(kept);
    listed_ = kept > 0;
    return Flush();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint32_t Interest() const override {
    return (paused_ ? 0u : uint32_t{EPOLLIN}) | (Unsent() > 0 ? uint32_t{EPOLLOUT} : 0u);
  }

  bool WaitsOnPeer() const override { return in_len_ > 0 || Unsent() > 0; }
  bool Buffered() const override { return !paused_ && stream_->Buffered(); }
  void OnStalled(int64_t idle_ms) override {
    if (uint64_t n = ++server_.stalled_; LogOccurrence(n)) {
      YB_LOG_WARN("rpc: {} moved no byte for {} ms with {} ({} so far)", peer_.address, idle_ms,
                  in_len_ > 0 ? "part of a request sent" : "replies it does not read", n);
    }
  }

  bool OnEvents(uint32_t events) override {
    if ((events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) && !Flush()) return false;
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !paused_) {
      if (!Read()) return false;
      if (!Flush()) return false;
    }
    if (!paused_ && Unsent() >= server_.options_.max_pending_reply_bytes) {
      paused_ = true;  // read again once the replies have drained
      ++server_.reads_paused_;
      if (server_.options_.on_reads_paused) server_.options_.on_reads_paused();
    } else if (paused_ && Unsent() == 0) {
      paused_ = false;
    }
    return true;
  }

 private:
  size_t Unsent() const { return out_.size() - out_off_; }

  // One read of whatever has arrived, then every complete request in it is answered into out_.
  // The set is level-triggered, so data beyond this read is reported again by the next wait;
  // pipelined requests cost one read and one write per batch, not per request.
  bool Read() {
    if (in_.size() - in_len_ < 4096) in_.resize(std::max<size_t>(in_.size() * 2, in_len_ + kInputBuffer));
    ssize_t n = stream_->Recv(in_.data() + in_len_, in_.size() - in_len_);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n == 0) return false;  // the peer closed
    in_len_ += static_cast<size_t>(n);
    return Consume();
  }

  // Handles the complete frames in the input buffer; false on a malformed frame.
  bool Consume() {
    // The buffer grows with the bytes that arrive (Read doubles it), never to the length a header
    // declares: a peer that announces 64 MiB and sends 16 bytes costs 16 bytes, not 64 MiB (100
    // such connections grew the master's RSS to 4.8 GB).
    auto taken = ScanFrames(std::string_view(in_.data(), in_len_), server_.options_.max_body, FrameKind::kRequest,
                            [this](const FrameHeader& h, std::string_view body) { Dispatch(h, body); });
    if (!taken) {
      if (uint64_t n = ++server_.malformed_; LogOccurrence(n)) {  // a peer in a loop does not flood the log
        YB_LOG_WARN("rpc: malformed frame from {}: closing the connection ({} so far)", peer_.address, n);
      }
      return false;
    }
    const size_t pos = *taken;
    if (pos > 0) {
      std::memmove(in_.data(), in_.data() + pos, in_len_ - pos);
      in_len_ -= pos;
    }
    // A large frame grew the buffer: once it is handled, the buffer goes back to its usual size, so
    // a connection that once sent a big batch does not hold its memory for the rest of its life.
    if (in_len_ == 0 && in_.size() > kMaxIdleInput) std::vector<char>(kInputBuffer).swap(in_);
    return true;
  }

  // Appends the reply frame to out_: a header slot, the handler's body, then the header.
  void Dispatch(const FrameHeader& req, std::string_view body) {
    FrameHeader reply{0, FrameKind::kResponse, 0, req.method, req.request_id};
    const size_t start = out_.size();
    out_.append(kHeaderSize, '\0');
    auto it = server_.handlers_.find(req.method);
    Status st = it == server_.handlers_.end()
                    ? Status(Code::kNotSupported, "unknown method " + std::to_string(req.method))
                    : it->second(peer_, body, out_);
    if (!st.ok()) {
      out_.resize(start + kHeaderSize);
      reply.flags = kFlagError;
      out_.push_back(static_cast<char>(EncodeCode(st.code())));
      out_ += st.message();
    }
    reply.body_len = static_cast<uint32_t>(out_.size() - start - kHeaderSize);
    EncodeHeader(reply, reinterpret_cast<uint8_t*>(out_.data() + start));
    if (ReplyGate* gate = server_.options_.gate) {
      const uint64_t ticket = gate->TakeTicket();
      if (ticket != 0 && !gate->Released(ticket)) Hold(ticket, start);
    }
  }

  // Moves the reply at out_[start, end) aside until `ticket` is released; the loop's pass after
  // this batch (RpcServer::ReleasePass) sends it once it is.
  void Hold(uint64_t ticket, size_t start) {
    held_.push_back({ticket, out_.substr(start)});
    out_.resize(start);
    server_.held_.fetch_add(1, std::memory_order_relaxed);
    if (!listed_) {
      listed_ = true;
      if (!holds_) holds_ = server_.HoldsOf(loop_);
      holds_->sessions.push_back(loop_id());
    }
  }

  // Sends what the socket takes of the unsent replies; false on a broken connection.
  bool Flush() {
    while (Unsent() > 0) {
      ssize_t n = stream_->Send(out_.data() + out_off_, Unsent());
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;  // the rest waits for EPOLLOUT
        return false;
      }
      out_off_ += static_cast<size_t>(n);
    }
    if (out_off_ == out_.size()) {
      out_.clear();  // keeps its memory for the next replies
      out_off_ = 0;
    } else if (out_off_ >= (1u << 20) && out_off_ >= out_.size() / 2) {
      out_.erase(0, out_off_);  // bounds the sent bytes kept ahead of a slow peer's unsent ones
      out_off_ = 0;
    }
    return true;
  }

  struct Held {
    uint64_t ticket;
    std::string reply;
  };

  RpcServer& server_;
  EventLoop& loop_;
  const std::unique_ptr<net::Stream> stream_;
  const net::Peer peer_;
  std::vector<char> in_;
  size_t in_len_ = 0;
  std::string out_;  // replies; the bytes before out_off_ have been sent
  size_t out_off_ = 0;
  bool paused_ = false;               // not reading: too many replies wait for the peer to read
  std::vector<Held> held_;            // replies waiting for the gate, oldest first
  bool listed_ = false;               // in its loop's LoopHolds::sessions
  std::shared_ptr<LoopHolds> holds_;  // its loop's
};

RpcServer::RpcServer(Options options) : options_(std::move(options)) {}

RpcServer::~RpcServer() { Stop(); }

void RpcServer::Register(uint16_t method, Handler handler) { handlers_[method] = std::move(handler); }

Result<std::string> RpcServer::Call(uint16_t method, const net::Peer& peer, std::string_view body) const {
  auto it = handlers_.find(method);
  if (it == handlers_.end()) return Status(Code::kNotSupported, "unknown method " + std::to_string(method));
  std::string reply;
  Status st = it->second(peer, body, reply);
  if (!st.ok()) return st;
  return reply;
}

Status RpcServer::Start() {
  // A connection stays on one serving thread, and a ready socket is served by the thread that
  // waited on it, with no hand-off between threads. Accepting has a thread of its own, so a long
  // handler never holds up new connections.
  LoopGroup::Options go;
  go.name = "rpc";
  go.listen = {options_.address, options_.port, options_.on_accept_failed, options_.keepalive};
  go.threads = options_.threads;
  go.pin_to_cpus = options_.pin_to_cpus;
  go.max_connections = options_.max_connections;
  go.max_connections_per_peer = options_.max_connections_per_peer;
  go.stall_timeout_ms = options_.half_sent_timeout_ms;
  {
    MutexLock lock(holds_mu_);
    holds_.clear();
  }
  if (options_.gate) {
    go.after_batch = [this](EventLoop& loop) {
      options_.gate->Flush();  // what this batch's handlers changed: written now
      ReleasePass(loop);
    };
  }
  if (!options_.security) options_.security = net::Security::None();
  auto group = std::make_unique<LoopGroup>(std::move(go), [this](EventLoop& loop, int fd, std::string peer) {
    return options_.security->Accept(net::Plane::kControl, fd, std::move(peer),
                                     [this, &loop](std::unique_ptr<net::Stream> stream, net::Peer p) {
                                       return std::make_unique<Session>(*this, loop, std::move(stream), std::move(p));
                                     });
  });
  if (Status st = group->Start(); !st.ok()) return st;
  group_ = std::move(group);
  return Status::OK();
}

void RpcServer::Stop() {
  {
    MutexLock lock(holds_mu_);
    for (auto& [loop, h] : holds_) {
      MutexLock hl(h->mu);
      h->running = false;  // a release still to come finds no loop
    }
    stopped_ = true;
  }
  if (group_) group_->Stop();  // no connection comes in, then the open ones close
}

std::shared_ptr<RpcServer::LoopHolds> RpcServer::HoldsOf(EventLoop& loop) {
  MutexLock lock(holds_mu_);
  auto& h = holds_[&loop];
  if (!h) {
    h = std::make_shared<LoopHolds>();
    h->loop = &loop;
    MutexLock hl(h->mu);  // not shared yet; said for the analysis
    h->running = !stopped_;
  }
  return h;
}

void RpcServer::ReleasePass(EventLoop& loop) {
  const std::shared_ptr<LoopHolds> holds = HoldsOf(loop);
  LoopHolds& h = *holds;
  if (h.sessions.empty()) return;
  uint64_t still = 0;
  std::erase_if(h.sessions, [&](uint64_t id) {
    bool holding = false;
    const bool open = loop.Visit(id, [&](LoopSession& s) {
      auto& session = static_cast<Session&>(*s.Inner());  // listed only once it holds replies
      const bool ok = session.Release(&still);
      holding = session.holding();
      return ok;
    });
    return !open || !holding;
  });
  if (h.sessions.empty() || still == 0) return;
  const uint64_t cover = options_.gate->Cover(still);
  if (cover <= h.armed) return;  // a release already asked for covers them
  h.armed = cover;
  std::weak_ptr<LoopHolds> weak = holds;
  options_.gate->WhenReleased(cover, [this, weak] {
    auto holds = weak.lock();
    if (!holds) return;
    MutexLock lock(holds->mu);
    if (!holds->running) return;
    holds->loop->Post([this, raw = holds.get()] {
      raw->armed = 0;
      ReleasePass(*raw->loop);
    });
  });
}

}  // namespace yb::rpc
