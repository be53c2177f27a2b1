#include "rpc/server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include "common/log.h"

namespace yb::rpc {

// One connection, served by one EventLoop (common/event_loop.h): its handlers never run
// concurrently, and its replies go out in order.
class RpcServer::Session final : public LoopSession {
 public:
  Session(RpcServer& server, int fd, std::string peer) : server_(server), fd_(fd), peer_(std::move(peer)) {
    ++server_.connections_;
  }
  ~Session() override { --server_.connections_; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  uint32_t Interest() const override {
    return (paused_ ? 0u : uint32_t{EPOLLIN}) | (Unsent() > 0 ? uint32_t{EPOLLOUT} : 0u);
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

RpcServer::RpcServer(Options options) : options_(std::move(options)) {}

RpcServer::~RpcServer() { Stop(); }

void RpcServer::Register(uint16_t method, Handler handler) { handlers_[method] = std::move(handler); }

Status RpcServer::Start() {
  // A connection stays on one serving thread, and a ready socket is served by the thread that
  // waited on it, with no hand-off between threads. Accepting has a thread of its own, so a long
  // handler never holds up new connections.
  Listener::Options lo{options_.address, options_.port, options_.on_accept_failed};
  listener_ = std::make_unique<Listener>(std::move(lo), [this](int fd, std::string peer) {
    loops_[next_loop_++ % loops_.size()]->Adopt(fd, std::move(peer));  // dealt in turn
  });
  const int n = std::max(1, options_.threads);
  for (int i = 0; i < n; ++i) {
    loops_.push_back(std::make_unique<EventLoop>(
        [this](int fd, std::string peer) { return std::make_unique<Session>(*this, fd, std::move(peer)); }));
    if (Status st = loops_.back()->Start(); !st.ok()) {
      loops_.clear();
      return st;
    }
  }
  if (Status st = listener_->Start(); !st.ok()) {
    loops_.clear();
    return st;
  }
  port_ = listener_->port();
  started_ = true;
  return Status::OK();
}

uint64_t RpcServer::accept_failures() const { return listener_ ? listener_->accept_failures() : 0; }

void RpcServer::Stop() {
  if (!started_) return;
  started_ = false;
  listener_->Stop();  // no connection comes in from here on
  for (auto& loop : loops_) loop->Stop();
  loops_.clear();  // closes the connections
}

}  // namespace yb::rpc
