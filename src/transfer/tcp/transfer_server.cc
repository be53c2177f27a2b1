#include "transfer/tcp/transfer_server.h"

#include <sys/socket.h>

#include <array>
#include <asio.hpp>
#include <condition_variable>
#include <cstring>
#include <vector>

#include "common/backoff.h"
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
  std::condition_variable stop_cv;  // wakes the accept thread from a pause after a failed accept (with mu)
  std::atomic<int> active{0};
};

TransferServer::TransferServer(std::shared_ptr<LocalSegmentRegistry> served, Options options)
    : impl_(std::make_unique<Impl>()), served_(std::move(served)), options_(std::move(options)) {}

TransferServer::~TransferServer() { Stop(); }

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
    Backoff backoff(std::chrono::milliseconds(10), std::chrono::seconds(1));
    for (;;) {
      auto sock = std::make_shared<asio::ip::tcp::socket>(impl_->io);
      asio::error_code ec;
      impl_->acceptor.accept(*sock, ec);
      if (impl_->stopping) return;
      if (ec) {
        // Out of descriptors or memory: the connection stays queued and an immediate retry would
        // fail at once, in a loop. Pause, longer each time (10 ms to 1 s).
        const auto pause = backoff.Next();
        YB_LOG_WARN("transfer server: accept failed: {}; retrying in {} ms", ec.message(), pause.count());
        if (options_.on_accept_failed) options_.on_accept_failed();
        std::unique_lock lock(impl_->mu);
        if (impl_->stop_cv.wait_for(lock, pause, [this] { return impl_->stopping.load(); })) return;
        continue;
      }
      backoff.Reset();
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
                                              // The peer sees the end now; the descriptor is
                                              // closed when the worker is reaped.
                                              ::shutdown(sock->native_handle(), SHUT_RDWR);
                                              --impl_->active;
                                              done->store(true);
                                            })});
    }
  });
  return Status::OK();
}

// Requests are read through a buffer, and the answers to every request already received are sent
// together with one gathered write: a pipelined batch of small reads costs a few system calls,
// not two per request.
template <typename Socket>
void TransferServer::Serve(Socket& s) {
  std::vector<uint8_t> in(64 << 10);
  size_t len = 0, pos = 0;
  std::vector<std::array<uint8_t, kResponseSize>> headers;  // answers not yet sent
  std::vector<asio::const_buffer> out;
  std::vector<std::shared_ptr<MappedRegion>> holds;  // memory that `out` points into
  headers.reserve(256);
  auto flush = [&]() -> bool {
    if (out.empty()) return true;
    asio::error_code ec;
    asio::write(s, out, ec);
    out.clear();
    headers.clear();
    holds.clear();
    return !ec;
  };
  auto answer = [&](Code code, const uint8_t* data, uint64_t length) {
    if (headers.size() == headers.capacity()) {  // keep earlier buffers valid: send them first
      if (!flush()) return false;
    }
    headers.emplace_back();
    WireResponse{static_cast<uint32_t>(code), data ? length : 0}.Encode(headers.back().data());
    out.push_back(asio::buffer(headers.back()));
    if (data && length > 0) out.push_back(asio::buffer(data, length));
    return true;
  };
  for (;;) {
    if (len - pos < kRequestSize) {
      std::memmove(in.data(), in.data() + pos, len - pos);
      len -= pos;
      pos = 0;
      if (!out.empty()) {
        // Requests already waiting in the socket are answered together with these: a pipelined
        // batch of writes gets its acknowledgements in a few sends, not one per slice.
        ssize_t n = ::recv(s.native_handle(), in.data() + len, in.size() - len, MSG_DONTWAIT);
        if (n > 0) {
          len += static_cast<size_t>(n);
          continue;
        }
        if (!flush()) return;  // nothing more to answer until the client sends more
        if (n == 0) return;    // the client closed
      }
      asio::error_code ec;
      size_t n = s.read_some(asio::buffer(in.data() + len, in.size() - len), ec);
      if (ec) return;
      len += n;
      continue;
    }
    WireRequest req;
    if (!req.Decode(in.data() + pos)) {
      ++refused_;
      YB_LOG_WARN("transfer server: malformed request: closing the connection");
      flush();
      return;
    }
    pos += kRequestSize;
    if (req.op == kOpReadObject) {
      if (!ServeObjectRead(s, req, in, len, pos, answer, flush)) return;
      continue;
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
      if (!answer(st.code(), nullptr, 0)) return;
      if (req.op == kOpWrite) {  // its payload is not ours to read
        flush();
        return;
      }
      continue;
    }
    if (req.op == kOpWrite) {
      uint8_t* dst = seg.base + req.offset;
      uint64_t have = std::min<uint64_t>(len - pos, req.length);
      std::memcpy(dst, in.data() + pos, have);
      pos += have;
      if (have < req.length) {
        asio::error_code ec;
        asio::read(s, asio::buffer(dst + have, req.length - have), ec);
        if (ec) return;
      }
      if (!answer(Code::kOk, nullptr, 0)) return;
    } else {
      holds.push_back(seg.region);  // keeps the memory mapped until the answer is sent
      if (!answer(Code::kOk, seg.base + req.offset, req.length)) return;
    }
  }
}

// A read of a whole object from the SSD tier: the key follows the header. The object is read into
// a buffer of its own and sent at once. Returns false when the connection must close.
template <typename Socket, typename Answer, typename Flush>
bool TransferServer::ServeObjectRead(Socket& s, const WireRequest& req, std::vector<uint8_t>& in, size_t& len,
                                     size_t& pos, Answer& answer, Flush& flush) {
  if (req.offset == 0 || req.offset > kMaxObjectKey) {
    ++refused_;
    YB_LOG_WARN("transfer server: object read with a key of {} bytes: closing the connection", req.offset);
    flush();
    return false;
  }
  std::string key(req.offset, '\0');
  uint64_t have = std::min<uint64_t>(len - pos, key.size());
  std::memcpy(key.data(), in.data() + pos, have);
  pos += have;
  if (have < key.size()) {
    asio::error_code ec;
    asio::read(s, asio::buffer(key.data() + have, key.size() - have), ec);
    if (ec) return false;
  }
  Status st;
  std::vector<uint8_t> data;
  auto disk = served_->FindDisk(req.segment);
  if (!disk) {
    st = Status(Code::kObjectNotFound, "no SSD tier serves segment " + std::to_string(req.segment));
  } else if (req.length > options_.max_object_read) {
    st = Status(Code::kInvalidParams, "object read too long");
  } else {
    data.resize(req.length);
    auto n = disk->ReadObject(key, data.data(), data.size());
    if (!n.ok()) {
      st = n.status();
    } else if (*n != req.length) {
      st = Status(Code::kInvalidRead, "object size differs");
    }
  }
  if (!st.ok()) {
    if (st.code() != Code::kObjectNotFound) {
      YB_LOG_WARN("transfer server: object read of segment {} failed: {}", req.segment, st.ToString());
    }
    return answer(st.code(), nullptr, 0);
  }
  // The answer points into `data`: send it before `data` goes.
  return answer(Code::kOk, data.data(), data.size()) && flush();
}

void TransferServer::Stop() {
  {
    std::lock_guard lock(impl_->mu);  // so a pausing accept thread cannot miss the wake-up
    if (impl_->stopping.exchange(true)) return;
  }
  impl_->stop_cv.notify_all();
  asio::error_code ec;
  // Wake the accept thread with a connection to ourselves; it sees `stopping` and returns. The
  // acceptor is closed only after that thread is gone.
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
  impl_->acceptor.close(ec);
  std::list<Impl::Worker> workers;
  {
    std::lock_guard lock(impl_->mu);
    // ::shutdown on the descriptor wakes a worker blocked in a read without touching the socket
    // object it is using; the descriptor stays open until the worker is joined.
    for (auto& w : impl_->workers) ::shutdown(w.socket->native_handle(), SHUT_RDWR);
    workers.swap(impl_->workers);
  }
  for (auto& w : workers) w.thread.join();
}

}  // namespace yb::tcp
