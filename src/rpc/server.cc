#include "rpc/server.h"

#include <asio.hpp>
#include <cstring>

#include "common/log.h"

namespace yb::rpc {

struct RpcServer::Acceptor {
  asio::ip::tcp::acceptor acceptor;
  explicit Acceptor(asio::io_context& io) : acceptor(io) {}
};

// One connection: a read loop on the connection's own server thread (its socket's io_context),
// so its handlers never run concurrently and need no strand; replies are written in order, one
// write at a time.
class RpcServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(RpcServer& server, asio::ip::tcp::socket socket) : server_(server), socket_(std::move(socket)) {
    ++server_.connections_;
  }
  ~Session() { --server_.connections_; }

  asio::any_io_executor executor() { return socket_.get_executor(); }

  void Start() {
    asio::error_code ec;
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
    socket_.non_blocking(true, ec);
    peer_ = socket_.remote_endpoint(ec).address().to_string();
    Read();
  }

 private:
  // Reads whatever has arrived, answers every complete request in it, and writes the answers
  // back in one go: pipelined requests cost one read and one write per batch, not per request.
  void Read() {
    if (in_.size() - in_len_ < 4096) in_.resize(std::max<size_t>(in_.size() * 2, in_len_ + 65536));
    auto self = shared_from_this();
    // Wait for readiness, then read without blocking: an async read would first try a read that,
    // between a reply and the next request, always finds nothing (one wasted system call each).
    socket_.async_wait(asio::ip::tcp::socket::wait_read, [this, self](asio::error_code ec) {
      if (ec) return Close();
      size_t n = socket_.read_some(asio::buffer(in_.data() + in_len_, in_.size() - in_len_), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) return Read();
      if (ec) return Close();
      in_len_ += n;
      if (!Consume()) return Close();
      if (Throttled()) {
        paused_ = true;  // Write() reads again once the replies have drained
        ++server_.reads_paused_;
        if (server_.options_.on_reads_paused) server_.options_.on_reads_paused();
        return;
      }
      Read();
    });
  }

  bool Throttled() const { return writing_ && pending_.size() >= server_.options_.max_pending_reply_bytes; }

  // Handles the complete frames in the input buffer; false on a malformed frame. Replies are
  // appended to pending_ and go out in one write (or after the write in flight).
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
    if (!pending_.empty() && !writing_) Write();
    return true;
  }

  // Appends the reply frame to pending_: a header slot, the handler's body, then the header.
  void Dispatch(const FrameHeader& req, std::string_view body) {
    FrameHeader reply{0, FrameKind::kResponse, 0, req.method, req.request_id};
    const size_t start = pending_.size();
    pending_.append(kHeaderSize, '\0');
    auto it = server_.handlers_.find(req.method);
    Status st = it == server_.handlers_.end()
                    ? Status(Code::kNotSupported, "unknown method " + std::to_string(req.method))
                    : it->second(body, pending_);
    if (!st.ok()) {
      pending_.resize(start + kHeaderSize);
      reply.flags = kFlagError;
      pending_.push_back(static_cast<char>(st.code()));
      pending_ += st.message();
    }
    reply.body_len = static_cast<uint32_t>(pending_.size() - start - kHeaderSize);
    EncodeHeader(reply, reinterpret_cast<uint8_t*>(pending_.data() + start));
  }

  // Sends everything pending; replies that come meanwhile wait for the next write. The two
  // buffers swap roles, so their memory is reused from call to call.
  void Write() {
    writing_ = true;
    out_.swap(pending_);
    pending_.clear();
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(out_), [this, self](asio::error_code ec, size_t) {
      writing_ = false;
      if (ec) return Close();
      if (!pending_.empty()) Write();
      if (paused_ && !Throttled()) {
        paused_ = false;
        Read();
      }
    });
  }

  void Close() {
    asio::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  RpcServer& server_;
  asio::ip::tcp::socket socket_;
  std::string peer_;
  std::vector<char> in_;
  size_t in_len_ = 0;
  std::string pending_;  // replies not yet handed to a write
  std::string out_;      // the bytes of the write in flight
  bool paused_ = false;  // not reading: too many replies wait for the peer to read
  bool writing_ = false;
};

RpcServer::RpcServer(Options options) : options_(std::move(options)) {}

RpcServer::~RpcServer() {
  Stop();
  acceptor_.reset();  // before the io_context it belongs to
  accept_io_.reset();
  ios_.clear();  // destroys the sessions' pending handlers while the server is still whole
}

void RpcServer::Register(uint16_t method, Handler handler) { handlers_[method] = std::move(handler); }

Status RpcServer::Start() {
  // One io_context per thread, each run by its thread alone: a connection stays on one thread,
  // and a ready socket is served by the thread that waited on it, with no hand-off between
  // threads (one shared io_context costs a wake-up of a second thread per request). Accepting
  // has a thread of its own, so a long handler never holds up new connections.
  const int n = std::max(1, options_.threads);
  for (int i = static_cast<int>(ios_.size()); i < n; ++i) ios_.push_back(std::make_unique<asio::io_context>(1));
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
  Accept();
  auto run = [](asio::io_context* io) {
    io->restart();
    return std::thread([io] {
      auto work = asio::make_work_guard(*io);  // keeps a thread with no connection yet running
      io->run();
    });
  };
  for (auto& io : ios_) threads_.push_back(run(io.get()));
  threads_.push_back(run(accept_io_.get()));
  started_ = true;
  return Status::OK();
}

void RpcServer::Accept() {
  // New connections go to the threads in turn.
  asio::io_context& target = *ios_[next_thread_++ % ios_.size()];
  acceptor_->acceptor.async_accept(target, [this](asio::error_code ec, asio::ip::tcp::socket s) {
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      YB_LOG_WARN("rpc: accept failed: {}", ec.message());
    } else {
      auto session = std::make_shared<Session>(*this, std::move(s));
      asio::post(session->executor(), [session] { session->Start(); });  // on the connection's thread
    }
    Accept();
  });
}

void RpcServer::Stop() {
  if (!started_) return;
  started_ = false;
  accept_io_->stop();  // no connection comes in from here on
  for (auto& io : ios_) io->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
  asio::error_code ec;
  acceptor_->acceptor.close(ec);
}

}  // namespace yb::rpc
