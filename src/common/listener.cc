#include "common/listener.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <cerrno>
#include <cstring>

#include "common/backoff.h"
#include "common/log.h"
#include "common/unix_socket.h"

namespace yb {

struct Listener::Impl {
  asio::io_context io{1};
  asio::ip::tcp::acceptor acceptor{io};
  asio::local::stream_protocol::acceptor local{io};  // "@name" addresses
  asio::steady_timer retry{io};  // the pause after a failed accept
  Backoff backoff{std::chrono::milliseconds(10), std::chrono::seconds(1)};
};

Listener::Listener(Options options, OnAccept on_accept)
    : options_(std::move(options)), on_accept_(std::move(on_accept)), impl_(std::make_unique<Impl>()) {}

Listener::~Listener() { Stop(); }

namespace {

// An address, or a host name ("localhost", this machine's name) resolved once, IPv4 first.
asio::ip::tcp::endpoint Endpoint(asio::io_context& io, const std::string& address, uint16_t port) {
  asio::error_code ec;
  asio::ip::address a = asio::ip::make_address(address, ec);
  if (!ec) return {a, port};
  asio::ip::tcp::resolver resolver(io);
  auto found = resolver.resolve(address, std::to_string(port), asio::ip::resolver_base::passive);
  for (const auto& e : found) {
    if (e.endpoint().address().is_v4()) return e.endpoint();
  }
  if (found.empty()) throw std::runtime_error("no address for this name");
  return found.begin()->endpoint();
}

}  // namespace

Status Listener::Start() {
  if (!options_.address.empty() && options_.address[0] == '@') {
    try {
      const std::string name = options_.address.substr(1);
      impl_->local.open();
      impl_->local.bind(asio::local::stream_protocol::endpoint(std::string(1, '\0') + name));
      impl_->local.listen();
    } catch (const std::exception& e) {
      return Status(Code::kInvalidParams, "cannot listen on Unix socket " + options_.address + ": " + e.what());
    }
    AcceptLocal();
    RunIo();
    return Status::OK();
  }
  try {
    asio::ip::tcp::endpoint ep = Endpoint(impl_->io, options_.address, options_.port);
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    port_ = impl_->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    return Status(Code::kInvalidParams,
                  "cannot listen on " + options_.address + ":" + std::to_string(options_.port) + ": " + e.what());
  }
  Accept();
  RunIo();
  return Status::OK();
}

bool Listener::Failed(const std::error_code& ec, void (Listener::*again)()) {
  if (!ec) {
    impl_->backoff.Reset();
    return false;
  }
  if (ec == asio::error::operation_aborted) return true;
  const auto pause = impl_->backoff.Next();
  ++accept_failures_;
  YB_LOG_WARN("accept on {}:{} failed: {}; retrying in {} ms", options_.address, port_, ec.message(), pause.count());
  if (options_.on_accept_failed) options_.on_accept_failed();
  impl_->retry.expires_after(pause);
  impl_->retry.async_wait([this, again](asio::error_code wait_ec) {
    if (!wait_ec) (this->*again)();
  });
  return true;
}

void Listener::RunIo() {
  thread_ = std::thread([this] {
    auto work = asio::make_work_guard(impl_->io);
    impl_->io.run();
  });
}

void Listener::Accept() {
  impl_->acceptor.async_accept([this](asio::error_code ec, asio::ip::tcp::socket s) {
    if (Failed(ec, &Listener::Accept)) return;
    std::string peer = s.remote_endpoint(ec).address().to_string();
    s.set_option(asio::ip::tcp::no_delay(true), ec);
    s.non_blocking(true, ec);  // sets the descriptor itself non-blocking, which it stays once released
    int fd = s.release(ec);
    if (ec) {
      YB_LOG_WARN("cannot take over a new connection: {}", ec.message());
    } else {
      SetKeepalive(fd);
      on_accept_(fd, std::move(peer));
    }
    Accept();
  });
}

void Listener::AcceptLocal() {
  impl_->local.async_accept([this](asio::error_code ec, asio::local::stream_protocol::socket s) {
    if (Failed(ec, &Listener::AcceptLocal)) return;
    s.non_blocking(true, ec);
    int fd = s.release(ec);
    if (ec) {
      YB_LOG_WARN("cannot take over a new connection: {}", ec.message());
    } else if (!SameUserPeer(fd)) {
      YB_LOG_WARN("{}: refused a connection from a process of another user", options_.address);
      ::close(fd);
    } else {
      on_accept_(fd, std::string(kUnixSocketPeer));
    }
    AcceptLocal();
  });
}

void Listener::SetKeepalive(int fd) const {
  const Keepalive& k = options_.keepalive;
  const int idle = static_cast<int>(k.idle.count());
  if (idle <= 0) return;
  const int on = 1, interval = static_cast<int>(k.interval.count()), probes = k.probes;
  const unsigned user_timeout = static_cast<unsigned>(std::chrono::milliseconds(k.total()).count());
  if (setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes)) != 0 ||
      // Keepalive probes go out only while nothing we sent awaits an acknowledgement: a peer gone
      // in the middle of a reply would be given the kernel's ~15 minutes of retransmissions. With
      // a user timeout of the same total, it goes after about as long as a silent one.
      setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout)) != 0) {
    YB_LOG_WARN("cannot turn keepalive on for a new connection on port {}: {}", port_, strerror(errno));
  }
}

void Listener::Stop() {
  if (!thread_.joinable()) return;
  impl_->io.stop();  // no connection is handed over from here on
  thread_.join();
  asio::error_code ec;
  impl_->acceptor.close(ec);
  impl_->local.close(ec);
}

}  // namespace yb
