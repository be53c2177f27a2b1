#include "rpc/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/backoff.h"
#include "common/log.h"

namespace yb::rpc {

// Why the serving threads run their own epoll loop rather than Asio's: a connection here carries
// small calls one after another, and Asio's reactor spends one extra system call per call on
// that pattern (async_wait re-arms the descriptor with epoll_ctl each time; async_read_some first
// tries a read that finds nothing). A level-triggered epoll set costs one recv and one send per
// call and an epoll_wait shared by all the connections that became ready together. Accepting
// stays on Asio.

struct RpcServer::Acceptor {
  asio::ip::tcp::acceptor acceptor;
  asio::steady_timer retry;  // the pause after a failed accept
  Backoff backoff{std::chrono::milliseconds(10), std::chrono::seconds(1)};
  explicit Acceptor(asio::io_context& io) : acceptor(io), retry(io) {}
};

// One connection, owned by its loop and only ever touched by the loop's thread: its handlers
// never run concurrently, and its replies go out in order.
class RpcServer::Session {
 public:
  Session(RpcServer& server, int fd, std::string peer) : server_(server), fd_(fd), peer_(std::move(peer)) {
    ++server_.connections_;
  }
  ~Session() {
    ::close(fd_);
    --server_.connections_;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int fd() const { return fd_; }
  // The epoll events the connection waits for now.
  uint32_t interest() const { return (paused_ ? 0u : uint32_t{EPOLLIN}) | (Unsent() > 0 ? uint32_t{EPOLLOUT} : 0u); }

  // Handles readiness; false when the connection is to be closed.
  bool OnEvents(uint32_t events) {
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
    if (in_.size() - in_len_ < 4096) in_.resize(std::max<size_t>(in_.size() * 2, in_len_ + 65536));
    ssize_t n = ::recv(fd_, in_.data() + in_len_, in_.size() - in_len_, 0);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    if (n == 0) return false;  // the peer closed
    in_len_ += static_cast<size_t>(n);
    return Consume();
  }

  // Handles the complete frames in the input buffer; false on a malformed frame.
  bool Consume() {
    size_t pos = 0;
    while (in_len_ - pos >= kHeaderSize) {
      auto h = DecodeHeader(reinterpret_cast<const uint8_t*>(in_.data() + pos), server_.options_.max_body);
      if (!h || h->kind != FrameKind::kRequest) {
        ++server_.malformed_;
        YB_LOG_WARN("rpc: malformed frame from {}: closing the connection", peer_);
        return false;
      }
      if (in_len_ - pos < kHeaderSize + h->body_len) {
        if (in_.size() < kHeaderSize + h->body_len) in_.resize(kHeaderSize + h->body_len);
        break;
      }
      Dispatch(*h, std::string_view(in_.data() + pos + kHeaderSize, h->body_len));
      pos += kHeaderSize + h->body_len;
    }
    if (pos > 0) {
      std::memmove(in_.data(), in_.data() + pos, in_len_ - pos);
      in_len_ -= pos;
    }
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
                    : it->second(body, out_);
    if (!st.ok()) {
      out_.resize(start + kHeaderSize);
      reply.flags = kFlagError;
      out_.push_back(static_cast<char>(st.code()));
      out_ += st.message();
    }
    reply.body_len = static_cast<uint32_t>(out_.size() - start - kHeaderSize);
    EncodeHeader(reply, reinterpret_cast<uint8_t*>(out_.data() + start));
  }

  // Sends what the socket takes of the unsent replies; false on a broken connection.
  bool Flush() {
    while (Unsent() > 0) {
      ssize_t n = ::send(fd_, out_.data() + out_off_, Unsent(), MSG_NOSIGNAL);
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

  RpcServer& server_;
  const int fd_;
  const std::string peer_;
  std::vector<char> in_;
  size_t in_len_ = 0;
  std::string out_;  // replies; the bytes before out_off_ have been sent
  size_t out_off_ = 0;
  bool paused_ = false;  // not reading: too many replies wait for the peer to read
};

// A serving thread: an epoll set of its connections plus an eventfd by which the accepting
// thread hands it new connections and Stop() ends it.
class RpcServer::Loop {
 public:
  explicit Loop(RpcServer& server) : server_(server) {}
  ~Loop() {
    Stop();
    for (auto& [fd, peer] : incoming_) ::close(fd);
    sessions_.clear();
    if (wake_ >= 0) ::close(wake_);
    if (ep_ >= 0) ::close(ep_);
  }

  Status Start() {
    ep_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ep_ < 0 || wake_ < 0) return Status(Code::kInternal, std::string("rpc: epoll/eventfd: ") + strerror(errno));
    if (!Watch(EPOLL_CTL_ADD, wake_, EPOLLIN, nullptr)) {  // a null pointer marks the wake-up descriptor
      return Status(Code::kInternal, std::string("rpc: epoll_ctl: ") + strerror(errno));
    }
    thread_ = std::thread([this] { Run(); });
    return Status::OK();
  }

  void Stop() {
    if (!thread_.joinable()) return;
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    Wake();
    thread_.join();
  }

  // From the accepting thread: the loop takes the connected socket over.
  void Adopt(int fd, std::string peer) {
    {
      std::lock_guard lock(mu_);
      incoming_.emplace_back(fd, std::move(peer));
    }
    Wake();
  }

 private:
  // Adds a descriptor to the set or changes what it waits for; `ptr` comes back with its events.
  bool Watch(int op, int fd, uint32_t events, void* ptr) {
    epoll_event ev{};
    ev.events = events;
    ev.data.ptr = ptr;
    return epoll_ctl(ep_, op, fd, &ev) == 0;
  }

  void Wake() {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t w = ::write(wake_, &one, sizeof(one));
  }

  void Run() {
    std::vector<epoll_event> evs(256);
    for (;;) {
      int k = epoll_wait(ep_, evs.data(), static_cast<int>(evs.size()), -1);
      if (k < 0) {
        if (errno == EINTR) continue;
        YB_LOG_ERROR("rpc: epoll_wait: {}: this serving thread stops", strerror(errno));
        return;
      }
      for (int i = 0; i < k; ++i) {
        auto* s = static_cast<Session*>(evs[i].data.ptr);
        if (s == nullptr) {
          if (!TakeIncoming()) return;
          continue;
        }
        const uint32_t before = s->interest();
        if (!s->OnEvents(evs[i].events)) {
          Close(s);
          continue;
        }
        if (uint32_t now = s->interest(); now != before && !Watch(EPOLL_CTL_MOD, s->fd(), now, s)) Close(s);
      }
    }
  }

  // Registers the connections handed over; false once the server stops.
  bool TakeIncoming() {
    uint64_t n;
    [[maybe_unused]] ssize_t r = ::read(wake_, &n, sizeof(n));
    std::vector<std::pair<int, std::string>> in;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return false;
      in.swap(incoming_);
    }
    for (auto& [fd, peer] : in) {
      auto s = std::make_unique<Session>(server_, fd, std::move(peer));
      if (!Watch(EPOLL_CTL_ADD, fd, EPOLLIN, s.get())) {
        YB_LOG_WARN("rpc: cannot watch a new connection: {}", strerror(errno));
        continue;  // s closes it
      }
      Session* key = s.get();
      sessions_.emplace(key, std::move(s));
    }
    return true;
  }

  void Close(Session* s) {
    epoll_ctl(ep_, EPOLL_CTL_DEL, s->fd(), nullptr);
    sessions_.erase(s);
  }

  RpcServer& server_;
  int ep_ = -1;
  int wake_ = -1;
  std::thread thread_;
  std::unordered_map<Session*, std::unique_ptr<Session>> sessions_;  // the loop thread's alone
  std::mutex mu_;
  std::vector<std::pair<int, std::string>> incoming_;  // under mu_
  bool stopping_ = false;                              // under mu_
};

RpcServer::RpcServer(Options options) : options_(std::move(options)) {}

RpcServer::~RpcServer() {
  Stop();
  acceptor_.reset();  // before the io_context it belongs to
  accept_io_.reset();
}

void RpcServer::Register(uint16_t method, Handler handler) { handlers_[method] = std::move(handler); }

Status RpcServer::Start() {
  // A connection stays on one serving thread, and a ready socket is served by the thread that
  // waited on it, with no hand-off between threads. Accepting has a thread of its own, so a long
  // handler never holds up new connections.
  if (!accept_io_) accept_io_ = std::make_unique<asio::io_context>(1);
  try {
    acceptor_ = std::make_unique<Acceptor>(*accept_io_);
    asio::ip::tcp::endpoint ep(asio::ip::make_address(options_.address), options_.port);
    acceptor_->acceptor.open(ep.protocol());
    acceptor_->acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
    acceptor_->acceptor.bind(ep);
    acceptor_->acceptor.listen();
    port_ = acceptor_->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    return Status(Code::kInvalidParams,
                  "cannot listen on " + options_.address + ":" + std::to_string(options_.port) + ": " + e.what());
  }
  const int n = std::max(1, options_.threads);
  for (int i = 0; i < n; ++i) {
    loops_.push_back(std::make_unique<Loop>(*this));
    if (Status st = loops_.back()->Start(); !st.ok()) {
      loops_.clear();
      return st;
    }
  }
  Accept();
  accept_io_->restart();
  accept_thread_ = std::thread([io = accept_io_.get()] {
    auto work = asio::make_work_guard(*io);
    io->run();
  });
  started_ = true;
  return Status::OK();
}

void RpcServer::Accept() {
  acceptor_->acceptor.async_accept([this](asio::error_code ec, asio::ip::tcp::socket s) {
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of descriptors or memory: the connection stays queued, so accepting again at once
      // would fail again at once, in a loop. Wait, longer each time (10 ms to 1 s), and retry.
      auto& a = *acceptor_;
      const auto pause = a.backoff.Next();
      ++accept_failures_;
      YB_LOG_WARN("rpc: accept failed: {}; retrying in {} ms", ec.message(), pause.count());
      if (options_.on_accept_failed) options_.on_accept_failed();
      a.retry.expires_after(pause);
      a.retry.async_wait([this](asio::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
      return;
    }
    acceptor_->backoff.Reset();
    std::string peer = s.remote_endpoint(ec).address().to_string();
    s.set_option(asio::ip::tcp::no_delay(true), ec);
    s.non_blocking(true, ec);  // sets the descriptor itself non-blocking, which it stays once released
    int fd = s.release(ec);
    if (ec) {
      YB_LOG_WARN("rpc: cannot take over a new connection: {}", ec.message());
    } else {
      loops_[next_loop_++ % loops_.size()]->Adopt(fd, std::move(peer));  // dealt in turn
    }
    Accept();
  });
}

void RpcServer::Stop() {
  if (!started_) return;
  started_ = false;
  accept_io_->stop();  // no connection comes in from here on
  accept_thread_.join();
  asio::error_code ec;
  acceptor_->acceptor.close(ec);
  for (auto& loop : loops_) loop->Stop();
  loops_.clear();  // closes the connections
}

}  // namespace yb::rpc
