#include "transfer/tcp/transfer_server.h"

#include <asio.hpp>

#include "common/log.h"
#include "transfer/memcpy_transport.h"
#include "transfer/tcp/wire.h"

namespace yb::tcp {

struct TransferServer::Impl {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor{io};
  std::thread accept_thread;
  std::mutex mu;
  struct Worker {
    std::shared_ptr<asio::ip::tcp::socket> socket;
    std::shared_ptr<std::atomic<bool>> done;
    std::thread thread;
  };
  std::list<Worker> workers;  // guarded by mu

  // Joins the workers whose connections ended.
  void Reap() {
    std::lock_guard lock(mu);
    for (auto it = workers.begin(); it != workers.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = workers.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::atomic<bool> stopping{false};
  std::atomic<int> active{0};
};

TransferServer::TransferServer(std::shared_ptr<LocalSegmentRegistry> served, Options options)
    : impl_(std::make_unique<Impl>()), served_(std::move(served)), options_(std::move(options)) {}

TransferServer::~TransferServer() { Stop(); }

namespace {

bool SendResponse(asio::ip::tcp::socket& s, Code code, uint64_t length) {
  uint8_t buf[kResponseSize];
  WireResponse{static_cast<uint32_t>(code), length}.Encode(buf);
  asio::error_code ec;
  asio::write(s, asio::buffer(buf), ec);
  return !ec;
}

}  // namespace

Status TransferServer::Start() {
  try {
    asio::ip::tcp::endpoint ep(asio::ip::make_address(options_.address), options_.port);
    impl_->acceptor.open(ep.protocol());
    impl_->acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true));
    impl_->acceptor.bind(ep);
    impl_->acceptor.listen();
    port_ = impl_->acceptor.local_endpoint().port();
  } catch (const std::exception& e) {
    return Status(Code::kInvalidParams, "transfer server cannot listen on " + options_.address + ":" +
                                            std::to_string(options_.port) + ": " + e.what());
  }
  impl_->accept_thread = std::thread([this] {
    for (;;) {
      auto sock = std::make_shared<asio::ip::tcp::socket>(impl_->io);
      asio::error_code ec;
      impl_->acceptor.accept(*sock, ec);
      if (impl_->stopping) return;
      if (ec) continue;
      impl_->Reap();
      if (impl_->active.load() >= options_.max_connections) {
        YB_LOG_WARN("transfer server: too many connections, refusing one");
        continue;
      }
      sock->set_option(asio::ip::tcp::no_delay(true), ec);
      std::lock_guard lock(impl_->mu);
      ++impl_->active;
      auto done = std::make_shared<std::atomic<bool>>(false);
      impl_->workers.push_back(Impl::Worker{sock, done, std::thread([this, sock, done] {
                                              Serve(*sock);
                                              asio::error_code e;
                                              sock->close(e);
                                              --impl_->active;
                                              done->store(true);
                                            })});
    }
  });
  return Status::OK();
}

template <typename Socket>
void TransferServer::Serve(Socket& s) {
  for (;;) {
    uint8_t hdr[kRequestSize];
    asio::error_code ec;
    asio::read(s, asio::buffer(hdr), ec);
    if (ec) return;
    WireRequest req;
    if (!req.Decode(hdr)) {
      ++refused_;
      YB_LOG_WARN("transfer server: malformed request: closing the connection");
      return;
    }
    LocalSegment seg = served_->Find(req.segment);
    TransferRequest probe{TransferRequest::Op::kRead, req.segment, req.offset, nullptr, req.length};
    Status st;
    if (!seg.base) {
      st = Status(Code::kSegmentNotFound, "segment not served here");
    } else if (req.length > options_.max_request) {
      st = Status(Code::kInvalidParams, "request too long");
    } else {
      probe.local = seg.base;  // only the bounds are checked
      st = CheckBounds(probe, seg.size);
    }
    if (!st.ok()) {
      ++refused_;
      YB_LOG_WARN("transfer server: refused {} of segment {} [{}, +{}): {}", req.op == kOpRead ? "read" : "write",
                  req.segment, req.offset, req.length, st.ToString());
      SendResponse(s, st.code(), 0);
      if (req.op == kOpWrite) return;  // its payload is not ours to read
      continue;
    }
    if (req.op == kOpWrite) {
      asio::read(s, asio::buffer(seg.base + req.offset, req.length), ec);
      if (ec) return;
      if (!SendResponse(s, Code::kOk, 0)) return;
    } else {
      uint8_t rh[kResponseSize];
      WireResponse{0, req.length}.Encode(rh);
      std::array<asio::const_buffer, 2> bufs{asio::buffer(rh), asio::buffer(seg.base + req.offset, req.length)};
      asio::write(s, bufs, ec);
      if (ec) return;
    }
  }
}

void TransferServer::Stop() {
  if (impl_->stopping.exchange(true)) return;
  asio::error_code ec;
  impl_->acceptor.close(ec);
  // Unblock accept(): a connection to ourselves.
  if (port_ != 0) {
    try {
      asio::io_context io;
      asio::ip::tcp::socket poke(io);
      std::string addr = options_.address == "0.0.0.0" ? "127.0.0.1" : options_.address;
      poke.connect({asio::ip::make_address(addr), port_}, ec);
    } catch (...) {
    }
  }
  if (impl_->accept_thread.joinable()) impl_->accept_thread.join();
  std::list<Impl::Worker> workers;
  {
    std::lock_guard lock(impl_->mu);
    for (auto& w : impl_->workers) w.socket->shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    workers.swap(impl_->workers);
  }
  for (auto& w : workers) w.thread.join();
}

}  // namespace yb::tcp
