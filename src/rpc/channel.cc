#include "rpc/channel.h"

#include <asio.hpp>

#include "common/log.h"

namespace yb::rpc {

struct RpcChannel::Connection {
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  std::mutex write_mu;
  std::mutex pending_mu;
  std::unordered_map<uint32_t, std::promise<Result<std::string>>> pending;  // guarded by pending_mu
  bool broken = false;                                                       // guarded by pending_mu
  std::thread reader;
};

RpcChannel::RpcChannel(std::string host, uint16_t port, Options options)
    : host_(std::move(host)),
      port_(port),
      target_(host_ + ":" + std::to_string(port)),
      options_(options),
      backoff_(options.backoff_min) {}

RpcChannel::~RpcChannel() {
  std::shared_ptr<Connection> c;
  {
    std::lock_guard lock(mu_);
    c = std::move(conn_);
  }
  if (c) {
    asio::error_code ec;
    c->socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    c->socket.close(ec);
    if (c->reader.joinable()) c->reader.join();
  }
}

Status RpcChannel::EnsureConnected(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds budget) {
  if (conn_) {
    std::lock_guard pl(conn_->pending_mu);
    if (!conn_->broken) return Status::OK();
  }
  if (conn_) {  // reap the broken one
    auto old = std::move(conn_);
    lock.unlock();
    if (old->reader.joinable()) old->reader.join();
    lock.lock();
    if (conn_) return Status::OK();  // another caller reconnected meanwhile
  }
  auto now = std::chrono::steady_clock::now();
  if (now < next_attempt_) {
    return Status(Code::kRpcFail, "not connected to " + target_ + " (retrying after backoff)");
  }
  auto c = std::make_shared<Connection>();
  asio::error_code ec = asio::error::timed_out;
  try {
    asio::ip::tcp::resolver resolver(c->io);
    auto endpoints = resolver.resolve(host_, std::to_string(port_));
    asio::async_connect(c->socket, endpoints, [&](asio::error_code e, const asio::ip::tcp::endpoint&) { ec = e; });
    c->io.run_for(std::min(options_.connect_timeout, budget));
  } catch (const std::exception& e) {
    next_attempt_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
    return Status(Code::kRpcFail, "cannot resolve " + target_ + ": " + e.what());
  }
  if (ec) {
    next_attempt_ = now + backoff_;
    backoff_ = std::min(backoff_ * 2, options_.backoff_max);
    return Status(ec == asio::error::timed_out ? Code::kRpcTimeout : Code::kRpcFail,
                  "cannot connect to " + target_ + ": " + ec.message());
  }
  c->socket.set_option(asio::ip::tcp::no_delay(true), ec);
  backoff_ = options_.backoff_min;
  next_attempt_ = {};
  c->reader = std::thread([this, c] { ReadLoop(c); });
  conn_ = c;
  return Status::OK();
}

void RpcChannel::FailAll(const std::shared_ptr<Connection>& conn, const Status& why) {
  std::lock_guard pl(conn->pending_mu);
  conn->broken = true;
  for (auto& [id, p] : conn->pending) p.set_value(why);
  conn->pending.clear();
}

void RpcChannel::ReadLoop(std::shared_ptr<Connection> conn) {
  for (;;) {
    uint8_t header[kHeaderSize];
    asio::error_code ec;
    asio::read(conn->socket, asio::buffer(header), ec);
    if (ec) break;
    auto h = DecodeHeader(header, options_.max_body);
    if (!h || h->kind != FrameKind::kResponse) {
      YB_LOG_WARN("rpc: malformed reply from {}: closing the connection", target_);
      break;
    }
    std::string body(h->body_len, '\0');
    asio::read(conn->socket, asio::buffer(body.data(), body.size()), ec);
    if (ec) break;
    Result<std::string> r = std::move(body);
    if (h->flags & kFlagError) {
      const std::string& b = r.value();
      Code code = b.empty() ? Code::kInternal : static_cast<Code>(static_cast<uint8_t>(b[0]));
      r = Status(code, b.empty() ? "" : b.substr(1));
    }
    std::lock_guard pl(conn->pending_mu);
    auto it = conn->pending.find(h->request_id);
    if (it == conn->pending.end()) continue;  // its caller gave up (deadline)
    it->second.set_value(std::move(r));
    conn->pending.erase(it);
  }
  asio::error_code ec;
  conn->socket.close(ec);
  FailAll(conn, Status(Code::kRpcFail, "connection to " + target_ + " lost"));
}

Status RpcChannel::Send(uint16_t method, const std::string& body, std::chrono::milliseconds connect_deadline) {
  std::shared_ptr<Connection> conn;
  uint32_t id;
  {
    std::unique_lock lock(mu_);
    YB_RETURN_IF_ERROR(EnsureConnected(lock, connect_deadline));
    conn = conn_;
    id = next_id_++;
  }
  std::string frame = EncodeFrame(FrameHeader{0, FrameKind::kRequest, 0, method, id}, body);
  std::lock_guard wl(conn->write_mu);
  asio::error_code ec;
  asio::write(conn->socket, asio::buffer(frame), ec);
  if (ec) return Status(Code::kRpcFail, "sending to " + target_ + ": " + ec.message());
  return Status::OK();  // the reply finds no pending caller and is dropped
}

Result<std::string> RpcChannel::Call(uint16_t method, const std::string& body, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  std::shared_ptr<Connection> conn;
  uint32_t id;
  {
    std::unique_lock lock(mu_);
    YB_RETURN_IF_ERROR(EnsureConnected(lock, deadline));
    conn = conn_;
    id = next_id_++;
  }
  std::future<Result<std::string>> fut;
  {
    std::lock_guard pl(conn->pending_mu);
    if (conn->broken) return Status(Code::kRpcFail, "connection to " + target_ + " lost");
    fut = conn->pending[id].get_future();
  }
  std::string frame = EncodeFrame(FrameHeader{0, FrameKind::kRequest, 0, method, id}, body);
  {
    std::lock_guard wl(conn->write_mu);
    asio::error_code ec;
    asio::write(conn->socket, asio::buffer(frame), ec);
    if (ec) {
      conn->socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
      // The reader sees the shutdown and fails every pending call, this one included.
    }
  }
  if (fut.wait_until(until) != std::future_status::ready) {
    std::lock_guard pl(conn->pending_mu);
    auto it = conn->pending.find(id);
    if (it != conn->pending.end()) {
      conn->pending.erase(it);
      return Status(Code::kRpcTimeout, "no reply from " + target_ + " within " +
                                           std::to_string(deadline.count()) + " ms");
    }
  }
  return fut.get();
}

}  // namespace yb::rpc
