#include "rpc/channel.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <asio.hpp>
#include <condition_variable>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/log.h"
#include "common/status_wire.h"
#include "common/unix_socket.h"

namespace yb::rpc {

namespace {
constexpr int kReadSliceUs = 10'000;  // a reader re-checks its deadline this often
}  // namespace

// A call waiting for its reply. Outside the anonymous namespace because Connection, a member of a
// class with linkage, holds pointers to it.
struct ChannelWaiter {
  bool done = false;
  Result<std::string> result{Status(Code::kInternal, "")};
};

struct RpcChannel::Connection {
  asio::io_context io;
  asio::ip::tcp::socket socket{io};
  std::unique_ptr<net::Stream> stream;  // over the socket, once connected (TLS, authenticated)
  DeadlineMutex write_mu;               // one frame is written at a time
  Mutex mu;
  std::condition_variable_any cv;
  std::unordered_map<uint32_t, ChannelWaiter*> pending GUARDED_BY(mu);
  bool reading GUARDED_BY(mu) = false;  // a caller is reading the socket
  bool broken GUARDED_BY(mu) = false;
  std::string target;
  uint32_t max_body = kDefaultMaxBody;
  // Owned by the current reader.
  std::vector<char> in = std::vector<char>(65536);
  size_t in_len = 0;

  // The server closed this idle connection (it restarted, or dropped us): its end of the socket
  // has been read to EOF or reset, so a request written now would be lost. No reader.
  bool ClosedByPeer() REQUIRES(mu) {
    char b;
    const ssize_t n = ::recv(socket.native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
  }

  void Break(const Status& why) REQUIRES(mu) {
    if (!broken) {
      broken = true;
      asio::error_code ec;
      socket.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
    }
    for (auto& [id, w] : pending) {
      w->done = true;
      w->result = why;
    }
    pending.clear();
    cv.notify_all();
  }

  // Writes as much of `frame` as the socket takes by `until` (write_mu held). Returns the bytes
  // written; when short, *error is the errno that failed the send, or 0 if the deadline passed.
  size_t WriteFrame(const std::string& frame, std::chrono::steady_clock::time_point until, int* error) {
    const int fd = socket.native_handle();
    size_t off = 0;
    *error = 0;
    while (off < frame.size()) {
      // The socket's SO_SNDTIMEO (a slice) bounds each send: the deadline is checked between them.
      ssize_t n = stream->Send(frame.data() + off, frame.size() - off);
      if (n > 0) {
        off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        *error = errno;
        break;
      }
      const int64_t left = MillisLeft(until);
      if (left <= 0) break;
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    }
    return off;
  }

  // Writes a frame, waiting at most until `until` for the turn to write and for the socket to take
  // it. OK; RPC_TIMEOUT (with the reason) when the deadline passed first; RPC_FAIL when the send
  // failed. A frame cut short leaves the stream unusable, so the connection is broken then: the
  // calls in flight on it fail with RPC_FAIL, and the next call connects again.
  Status Write(const std::string& frame, std::chrono::steady_clock::time_point until) {
    if (!write_mu.try_lock_until(until)) return Status(Code::kRpcTimeout, "earlier requests were still being sent");
    DeadlineMutexLock wl(write_mu, std::adopt_lock);
    int error = 0;
    const size_t sent = WriteFrame(frame, until, &error);
    if (sent == frame.size()) return Status::OK();
    if (error == 0 && sent == 0) return Status(Code::kRpcTimeout, "the server is not reading");
    std::string why = error != 0
                          ? "sending to " + target + ": " + strerror(error)
                          : "a request to " + target + " was cut short by its deadline (" + std::to_string(sent) +
                                " of " + std::to_string(frame.size()) + " bytes sent); closing the connection";
    MutexLock lock(mu);
    Break(Status(Code::kRpcFail, why));
    return Status(error != 0 ? Code::kRpcFail : Code::kRpcTimeout, why);
  }

  // Reads once (waiting at most until `until`) and completes the waiters whose replies arrived.
  // Called without mu, by the reader only. Returns RPC_TIMEOUT if nothing came in time.
  Status ReadOnce(std::chrono::steady_clock::time_point until) {
    if (in.size() - in_len < 4096) in.resize(in.size() * 2);
    // A blocking read that gives up every kReadSlice (SO_RCVTIMEO, set at connect): one system
    // call per reply, and the deadline is checked between slices.
    ssize_t n = stream->Recv(in.data() + in_len, in.size() - in_len);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return Passed(until) ? Status(Code::kRpcTimeout, "") : Status::OK();
    }
    if (n <= 0) {
      return Status(Code::kRpcFail,
                    "connection to " + target + " lost" + (n < 0 ? std::string(": ") + strerror(errno) : ""));
    }
    in_len += n;
    std::vector<std::pair<FrameHeader, std::string>> replies;
    // The buffer grows as the bytes arrive, not to the length a header declares.
    auto taken = ScanFrames(std::string_view(in.data(), in_len), max_body, FrameKind::kResponse,
                            [&](const FrameHeader& h, std::string_view body) { replies.emplace_back(h, body); });
    if (!taken) {
      if (net::Refusal r = net::DecodeRefusal(std::string_view(in.data(), in_len)); r.is_refusal) {
        if (!r.complete) return Status::OK();  // the rest of its text is on its way
        return Status(Code::kIllegalClient, target + ": " + r.text);
      }
      if (in_len >= 4 && std::string_view(in.data(), 4) == "YBAU") {  // a server's hello (net/auth.h)
        return Status(Code::kIllegalClient, target +
                                                " asks for authentication: give this client the cluster's "
                                                "secret (auth_secret_file, YB_AUTH_SECRET_FILE)");
      }
      YB_LOG_WARN("rpc: malformed reply from {}: closing the connection", target);
      return Status(Code::kRpcFail, "malformed reply from " + target);
    }
    const size_t pos = *taken;
    if (pos > 0) {
      std::memmove(in.data(), in.data() + pos, in_len - pos);
      in_len -= pos;
    }
    if (replies.empty()) return Status::OK();
    MutexLock lock(mu);
    for (auto& [h, body] : replies) {
      auto it = pending.find(h.request_id);
      if (it == pending.end()) continue;  // one-way, or its caller gave up
      ChannelWaiter* w = it->second;
      pending.erase(it);
      w->done = true;
      if (h.flags & kFlagError) {
        w->result = body.empty() ? Status(Code::kInternal, "empty error reply")
                                 : DecodeStatus(static_cast<uint8_t>(body[0]), body.substr(1));
      } else {
        w->result = std::move(body);
      }
    }
    cv.notify_all();
    return Status::OK();
  }
};

RpcChannel::RpcChannel(std::string host, uint16_t port, Options options)
    : host_(std::move(host)),
      port_(port),
      target_(!host_.empty() && host_[0] == '@' ? host_ : host_ + ":" + std::to_string(port)),
      options_(options),
      resolver_(options.lookup),
      backoff_(options.backoff_min, options.backoff_max, options.backoff_jitter) {}

RpcChannel::~RpcChannel() {
  mu_.lock();
  DeadlineMutexLock lock(mu_, std::adopt_lock);
  if (conn_) {
    MutexLock cl(conn_->mu);
    conn_->Break(Status(Code::kRpcFail, "channel closed"));
  }
}

Result<std::shared_ptr<RpcChannel::Connection>> RpcChannel::Connected(std::chrono::steady_clock::time_point until,
                                                                      uint32_t* id) {
  if (!mu_.try_lock_until(until)) {  // another caller is connecting, and its attempt outlasted our deadline
    return Status(Code::kRpcTimeout, "still connecting to " + target_);
  }
  DeadlineMutexLock lock(mu_, std::adopt_lock);
  *id = next_id_++;
  if (conn_) {
    MutexLock cl(conn_->mu);
    // An idle connection the server has closed is replaced now, rather than failing the first call
    // after the server comes back (the request would never reach it).
    if (!conn_->broken && conn_->pending.empty() && !conn_->reading && conn_->ClosedByPeer()) {
      conn_->Break(Status(Code::kRpcFail, "connection to " + target_ + " closed by the server"));
      next_attempt_ = {};
    }
    if (!conn_->broken) return conn_;
  }
  const SteadyTime now = SteadyNow();
  if (now < next_attempt_) return Status(Code::kRpcFail, "not connected to " + target_ + " (retrying after backoff)");
  if (now >= until) return Status(Code::kRpcTimeout, "no time left to connect to " + target_);
  auto c = std::make_shared<Connection>();
  c->target = target_;
  c->max_body = options_.max_body;
  asio::error_code ec = asio::error::timed_out;
  auto fail = [&](Code code, const std::string& msg) -> Status {
    mu_.AssertHeld();  // called below, with the lock held
    next_attempt_ = now + backoff_.Next();
    return Status(code, msg);
  };
  const auto connect_until = std::min(until, now + options_.connect_timeout);
  const bool local = !host_.empty() && host_[0] == '@';
  if (local) {  // a Unix socket of this host ("@name", abstract): connects at once or not at all
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr;
    const socklen_t len = AbstractUnixAddress(std::string_view(host_).substr(1), &addr);
    if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
      const std::string why = std::strerror(errno);
      if (fd >= 0) ::close(fd);
      return fail(Code::kRpcFail, "cannot connect to " + target_ + ": " + why);
    }
    c->socket.assign(asio::ip::tcp::v4(), fd, ec);  // the calls below use the descriptor only
    if (ec) {
      ::close(fd);
      return fail(Code::kRpcFail, "cannot connect to " + target_ + ": " + ec.message());
    }
  }
  auto addresses = local ? Result<std::vector<SocketAddress>>(std::vector<SocketAddress>{})
                         : resolver_.Resolve(host_, std::to_string(port_), connect_until);
  if (!addresses.ok()) return fail(addresses.status().code(), addresses.status().message());
  std::vector<asio::ip::tcp::endpoint> endpoints;
  for (const SocketAddress& a : *addresses) {
    asio::ip::tcp::endpoint ep;
    std::memcpy(ep.data(), &a.addr, a.len);
    ep.resize(a.len);
    endpoints.push_back(ep);
  }
  if (!local) {
    asio::async_connect(c->socket, endpoints, [&](asio::error_code e, const asio::ip::tcp::endpoint&) { ec = e; });
    c->io.run_until(connect_until);
  } else {
    ec = {};
  }
  if (ec) {
    return fail(ec == asio::error::timed_out ? Code::kRpcTimeout : Code::kRpcFail,
                "cannot connect to " + target_ + ": " + ec.message());
  }
  c->socket.set_option(asio::ip::tcp::no_delay(true), ec);
  c->socket.non_blocking(false, ec);         // async_connect left the descriptor non-blocking:
  c->socket.native_non_blocking(false, ec);  // reads below block (up to the slice)
  const int fd = c->socket.native_handle();
  timeval slice{0, kReadSliceUs};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof(slice));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &slice, sizeof(slice));
  const unsigned user_timeout = static_cast<unsigned>(options_.unacked_timeout.count());
  if (!local && user_timeout > 0 && setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout)) != 0) {
    YB_LOG_WARN("rpc: cannot set TCP_USER_TIMEOUT on the connection to {}: {}", target_, strerror(errno));
  }
  const auto& security = options_.security ? options_.security : net::Security::None();
  auto stream = security->Connect(net::Plane::kControl, fd, target_, options_.tenant, connect_until);
  if (!stream.ok()) {
    // A refused proof is a configuration to fix, not a server to retry at once.
    return fail(stream.status().code(), stream.status().message());
  }
  c->stream = std::move(stream).value();
  backoff_.Reset();
  next_attempt_ = {};
  conn_ = c;
  return c;
}

Status RpcChannel::SendTimeout(std::chrono::milliseconds deadline, const Status& why) const {
  return Status(Code::kRpcTimeout, "could not send to " + target_ + " within " + std::to_string(deadline.count()) +
                                       " ms: " + why.message());
}

Status RpcChannel::Send(uint16_t method, const std::string& body, std::chrono::milliseconds connect_deadline) {
  uint32_t id;
  auto conn = Connected(DeadlineIn(connect_deadline), &id);
  if (!conn.ok()) return conn.status();
  Connection& c = **conn;
  std::string frame = EncodeFrame(FrameHeader{0, FrameKind::kRequest, 0, method, id}, body);
  Status st = c.Write(frame, DeadlineIn(connect_deadline));
  if (st.code() == Code::kRpcTimeout) return SendTimeout(connect_deadline, st);
  return st;  // on success the reply finds no waiter and is dropped
}

Result<std::string> RpcChannel::Call(uint16_t method, const std::string& body, std::chrono::milliseconds deadline) {
  const SteadyTime until = DeadlineIn(deadline);
  uint32_t id;
  auto got = Connected(until, &id);
  if (!got.ok()) return got.status();
  Connection& c = **got;
  ChannelWaiter w;
  {
    MutexLock lock(c.mu);
    if (c.broken) return Status(Code::kRpcFail, "connection to " + target_ + " lost");
    c.pending[id] = &w;
  }
  std::string frame = EncodeFrame(FrameHeader{0, FrameKind::kRequest, 0, method, id}, body);
  if (Status st = c.Write(frame, until); st.code() == Code::kRpcTimeout) {
    MutexLock lock(c.mu);
    c.pending.erase(id);
    return SendTimeout(deadline, st);
  }
  MutexUniqueLock lock(c.mu);  // a failed write broke the connection and completed `w`
  while (!w.done) {
    if (!c.reading) {
      c.reading = true;  // lead: read until our reply arrives or the deadline passes
      lock.unlock();
      Status st = c.ReadOnce(until);
      lock.lock();
      c.reading = false;
      c.cv.notify_all();  // a follower may take over
      if (st.code() == Code::kRpcTimeout) break;
      if (!st.ok()) c.Break(st);
      continue;
    }
    if (!c.cv.wait_until(lock, until, [&] {
          c.mu.AssertHeld();  // the predicate runs with the lock held
          return w.done || !c.reading;
        })) {
      break;
    }
  }
  if (!w.done) {
    c.pending.erase(id);
    return Status(Code::kRpcTimeout,
                  "no reply from " + target_ + " within " + std::to_string(deadline.count()) + " ms");
  }
  return std::move(w.result);
}

}  // namespace yb::rpc
