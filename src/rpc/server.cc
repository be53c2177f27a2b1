#include "rpc/server.h"

#include <asio.hpp>
#include <deque>

#include "common/log.h"

namespace yb::rpc {

struct RpcServer::Acceptor {
  asio::ip::tcp::acceptor acceptor;
  explicit Acceptor(asio::io_context& io) : acceptor(io) {}
};

// One connection: a read loop on a strand, and a queue of replies written in order.
class RpcServer::Session : public std::enable_shared_from_this<Session> {
 public:
  Session(RpcServer& server, asio::ip::tcp::socket socket)
      : server_(server), strand_(asio::make_strand(*server.io_)), socket_(std::move(socket)) {
    ++server_.connections_;
  }
  ~Session() { --server_.connections_; }

  void Start() {
    asio::error_code ec;
    socket_.set_option(asio::ip::tcp::no_delay(true), ec);
    peer_ = socket_.remote_endpoint(ec).address().to_string();
    ReadHeader();
  }

 private:
  void ReadHeader() {
    auto self = shared_from_this();
    asio::async_read(socket_, asio::buffer(header_, kHeaderSize),
                     asio::bind_executor(strand_, [this, self](asio::error_code ec, size_t) {
                       if (ec) return Close();
                       auto h = DecodeHeader(header_, server_.options_.max_body);
                       if (!h || h->kind != FrameKind::kRequest) {
                         ++server_.malformed_;
                         YB_LOG_WARN("rpc: malformed frame from {}: closing the connection", peer_);
                         return Close();
                       }
                       current_ = *h;
                       body_.resize(h->body_len);
                       ReadBody();
                     }));
  }

  void ReadBody() {
    auto self = shared_from_this();
    asio::async_read(socket_, asio::buffer(body_.data(), body_.size()),
                     asio::bind_executor(strand_, [this, self](asio::error_code ec, size_t) {
                       if (ec) return Close();
                       Dispatch();
                       ReadHeader();
                     }));
  }

  void Dispatch() {
    FrameHeader reply{0, FrameKind::kResponse, 0, current_.method, current_.request_id};
    std::string out;
    auto it = server_.handlers_.find(current_.method);
    Result<std::string> r = it == server_.handlers_.end()
                                ? Result<std::string>(Code::kNotSupported, "unknown method " + std::to_string(current_.method))
                                : it->second(body_);
    if (r.ok()) {
      out = EncodeFrame(reply, *r);
    } else {
      reply.flags = kFlagError;
      std::string err(1, static_cast<char>(r.code()));
      err += r.status().message();
      out = EncodeFrame(reply, err);
    }
    writes_.push_back(std::move(out));
    if (writes_.size() == 1) Write();
  }

  void Write() {
    auto self = shared_from_this();
    asio::async_write(socket_, asio::buffer(writes_.front()),
                      asio::bind_executor(strand_, [this, self](asio::error_code ec, size_t) {
                        if (ec) return Close();
                        writes_.pop_front();
                        if (!writes_.empty()) Write();
                      }));
  }

  void Close() {
    asio::error_code ec;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  RpcServer& server_;
  asio::strand<asio::io_context::executor_type> strand_;
  asio::ip::tcp::socket socket_;
  std::string peer_;
  uint8_t header_[kHeaderSize];
  FrameHeader current_;
  std::string body_;
  std::deque<std::string> writes_;
};

RpcServer::RpcServer(Options options) : options_(std::move(options)), io_(std::make_unique<asio::io_context>()) {}

RpcServer::~RpcServer() { Stop(); }

void RpcServer::Register(uint16_t method, Handler handler) { handlers_[method] = std::move(handler); }

Status RpcServer::Start() {
  try {
    acceptor_ = std::make_unique<Acceptor>(*io_);
    asio::ip::tcp::endpoint ep(asio::ip::make_address(options_.address), options_.port);
    acceptor_->acceptor.open(ep.protocol());
    acceptor_->acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
    acceptor_->acceptor.bind(ep);
    acceptor_->acceptor.listen();
    port_ = acceptor_->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    return Status(Code::kInvalidParams, "cannot listen on " + options_.address + ":" +
                                            std::to_string(options_.port) + ": " + e.what());
  }
  Accept();
  int n = std::max(1, options_.threads);
  for (int i = 0; i < n; ++i) threads_.emplace_back([this] { io_->run(); });
  started_ = true;
  return Status::OK();
}

void RpcServer::Accept() {
  acceptor_->acceptor.async_accept(asio::make_strand(*io_), [this](asio::error_code ec, asio::ip::tcp::socket s) {
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      YB_LOG_WARN("rpc: accept failed: {}", ec.message());
    } else {
      std::make_shared<Session>(*this, std::move(s))->Start();
    }
    Accept();
  });
}

void RpcServer::Stop() {
  if (!started_) return;
  started_ = false;
  asio::post(*io_, [this] {
    asio::error_code ec;
    acceptor_->acceptor.close(ec);
  });
  io_->stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace yb::rpc
