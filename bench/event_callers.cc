#include "event_callers.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>
#include <vector>

#include "common/cpus.h"
#include "rpc/frame.h"

namespace yb::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Conn {
  int fd = -1;
  uint64_t n = 0;  // calls completed on this connection
  std::vector<char> in = std::vector<char>(65536);
  size_t in_len = 0;
  std::string out;  // the request frame, rebuilt in place for each call
};

// A blocking connect, then non-blocking with Nagle off.
Result<int> Dial(const std::string& host, uint16_t port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    return Status(Code::kRpcFail, "cannot resolve " + host + ": " + gai_strerror(rc));
  }
  int fd = -1;
  for (addrinfo* a = res; a && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(res);
  if (fd < 0) return Status(Code::kRpcFail, "cannot connect to " + host + ":" + std::to_string(port));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

Status Send(Conn& c, int index, const NextRequest& next) {
  uint16_t method = 0;
  std::string_view body = next(index, c.n, &method);
  c.out.resize(rpc::kHeaderSize + body.size());
  rpc::EncodeHeader(
      {static_cast<uint32_t>(body.size()), rpc::FrameKind::kRequest, 0, method, static_cast<uint32_t>(c.n)},
      reinterpret_cast<uint8_t*>(c.out.data()));
  std::memcpy(c.out.data() + rpc::kHeaderSize, body.data(), body.size());
  // A small frame into an empty send buffer (the previous reply has been read): written whole.
  ssize_t w = write(c.fd, c.out.data(), c.out.size());
  if (w != static_cast<ssize_t>(c.out.size())) return Status(Code::kRpcFail, "short write");
  return Status::OK();
}

// One thread's callers: connections [first, first + conns), named by those indices to next/check.
Result<EventCallResult> RunOneLoop(const std::string& host, uint16_t port, int first, int conns, double seconds,
                                   const NextRequest& next, const CheckReply& check) {
  std::vector<Conn> cs(conns);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  auto cleanup = [&] {
    for (auto& c : cs) {
      if (c.fd >= 0) close(c.fd);
    }
    close(ep);
  };
  for (int i = 0; i < conns; ++i) {
    auto fd = Dial(host, port);
    if (!fd.ok()) {
      cleanup();
      return fd.status();
    }
    cs[i].fd = *fd;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(i);
    epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
  }
  EventCallResult out;
  Status failed = Status::OK();
  auto t0 = Clock::now();
  auto until = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (int i = 0; i < conns && failed.ok(); ++i) failed = Send(cs[i], first + i, next);
  std::vector<epoll_event> evs(conns);
  while (failed.ok() && Clock::now() < until) {
    int k = epoll_wait(ep, evs.data(), conns, 100);
    if (k < 0 && errno != EINTR) failed = Status(Code::kInternal, std::string("epoll_wait: ") + strerror(errno));
    for (int e = 0; e < k && failed.ok(); ++e) {
      int i = static_cast<int>(evs[e].data.u32);
      Conn& c = cs[i];
      ssize_t r = read(c.fd, c.in.data() + c.in_len, c.in.size() - c.in_len);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) continue;
      if (r <= 0) {
        failed = Status(Code::kRpcFail, "connection lost");
        break;
      }
      c.in_len += r;
      if (c.in_len < rpc::kHeaderSize) continue;
      auto h = rpc::DecodeHeader(reinterpret_cast<const uint8_t*>(c.in.data()), rpc::kDefaultMaxBody);
      if (!h || h->kind != rpc::FrameKind::kResponse || h->request_id != static_cast<uint32_t>(c.n)) {
        failed = Status(Code::kRpcFail, "malformed reply");
        break;
      }
      size_t whole = rpc::kHeaderSize + h->body_len;
      if (c.in.size() < whole) c.in.resize(whole);
      if (c.in_len < whole) continue;
      if (c.in_len > whole) {  // one call in flight: nothing may follow its reply
        failed = Status(Code::kRpcFail, "unexpected bytes after a reply");
        break;
      }
      bool ok = !(h->flags & rpc::kFlagError) &&
                check(first + i, c.n, std::string_view(c.in.data() + rpc::kHeaderSize, h->body_len));
      ++(ok ? out.calls : out.failures);
      c.in_len = 0;
      ++c.n;
      failed = Send(c, first + i, next);
    }
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  cleanup();
  if (!failed.ok()) return failed;
  return out;
}

}  // namespace

Result<EventCallResult> RunEventCallers(const std::string& host, uint16_t port, int conns, double seconds,
                                        const NextRequest& next, const CheckReply& check, bool per_cpu) {
  const std::vector<int> cpus = per_cpu ? AllowedCpus() : std::vector<int>{};
  const int threads = std::clamp(static_cast<int>(cpus.size()), 1, conns);
  if (threads == 1) return RunOneLoop(host, port, 0, conns, seconds, next, check);
  std::vector<std::optional<Result<EventCallResult>>> results(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      // Pinned before it connects: on loopback the CPU that sends also receives, so the server
      // sees this CPU as the connection's incoming CPU.
      if (int rc = PinThread(pthread_self(), cpus[t]); rc != 0) {
        results[t] = Status(Code::kInternal,
                            "cannot pin a caller thread to CPU " + std::to_string(cpus[t]) + ": " + std::strerror(rc));
        return;
      }
      const int first = conns * t / threads, last = conns * (t + 1) / threads;
      results[t] = RunOneLoop(host, port, first, last - first, seconds, next, check);
    });
  }
  for (auto& th : ts) th.join();
  EventCallResult sum;
  for (auto& r : results) {
    if (!r->ok()) return r->status();
    sum.calls += (*r)->calls;
    sum.failures += (*r)->failures;
    sum.seconds = std::max(sum.seconds, (*r)->seconds);
  }
  return sum;
}

}  // namespace yb::bench
