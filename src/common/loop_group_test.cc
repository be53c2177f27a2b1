#include "common/loop_group.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <thread>

#include "common/cpus.h"

namespace yb {
namespace {

// Echoes what it receives; tells the test which loop adopted it, what the accepted socket's
// keepalive settings are, and when it closes.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::map<const EventLoop*, int> per_loop;
  int open = 0;
  int keepalive = -1, idle = -1, interval = -1, probes = -1;
  unsigned user_timeout_ms = 1;

  template <typename Pred>
  bool WaitUntil(Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return pred(); });
  }
};

class EchoSession final : public LoopSession {
 public:
  EchoSession(Seen& seen, const EventLoop& loop, int fd) : seen_(seen), fd_(fd) {
    int v[4] = {-1, -1, -1, -1};
    socklen_t len = sizeof(int);
    getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &v[0], &len);
    getsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &v[1], &len);
    getsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &v[2], &len);
    getsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &v[3], &len);
    unsigned user_timeout = 1;
    len = sizeof(user_timeout);
    getsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, &len);
    std::lock_guard lock(seen_.mu);
    seen_.user_timeout_ms = user_timeout;
    ++seen_.per_loop[&loop];
    ++seen_.open;
    seen_.keepalive = v[0];
    seen_.idle = v[1];
    seen_.interval = v[2];
    seen_.probes = v[3];
    seen_.cv.notify_all();
  }
  ~EchoSession() override {
    std::lock_guard lock(seen_.mu);
    --seen_.open;
    seen_.cv.notify_all();
  }
  uint32_t Interest() const override { return EPOLLIN; }
  bool OnEvents(uint32_t) override {
    char buf[256];
    ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    return n > 0 && ::send(fd_, buf, static_cast<size_t>(n), MSG_NOSIGNAL) == n;
  }

 private:
  Seen& seen_;
  int fd_;
};

// Answers each byte with two: the CPU its loop was pinned to and the CPU it runs on.
class CpuSession final : public LoopSession {
 public:
  CpuSession(const EventLoop& loop, int fd) : loop_(loop), fd_(fd) {}
  uint32_t Interest() const override { return EPOLLIN; }
  bool OnEvents(uint32_t) override {
    char c;
    ssize_t n = ::recv(fd_, &c, 1, 0);
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    const char reply[2] = {static_cast<char>(loop_.cpu()), static_cast<char>(sched_getcpu())};
    return n > 0 && ::send(fd_, reply, 2, MSG_NOSIGNAL) == 2;
  }

 private:
  const EventLoop& loop_;
  int fd_;
};

// Runs `fn` on a thread pinned to `cpu`.
template <typename Fn>
void OnCpu(int cpu, Fn fn) {
  std::thread t([&] {
    ASSERT_EQ(PinThread(pthread_self(), cpu), 0);
    fn();
  });
  t.join();
}

// A blocking client connection to 127.0.0.1.
class Conn {
 public:
  explicit Conn(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  }
  ~Conn() { ::close(fd_); }
  // Sends a byte and reads a CpuSession's answer: {loop's CPU, CPU it ran on}, or {-2, -2}.
  std::pair<int, int> Cpus() {
    char c = 'x', r[2];
    if (!ok_ || ::send(fd_, &c, 1, MSG_NOSIGNAL) != 1 || ::recv(fd_, r, 2, MSG_WAITALL) != 2) return {-2, -2};
    return {r[0], r[1]};
  }
  // Sends a byte and reads the echo: false when the server closed the connection instead.
  bool Echoes() {
    char c = 'x';
    return ok_ && ::send(fd_, &c, 1, MSG_NOSIGNAL) == 1 && ::recv(fd_, &c, 1, 0) == 1 && c == 'x';
  }

 private:
  int fd_;
  bool ok_ = false;
};

std::unique_ptr<LoopGroup> StartGroup(Seen& seen, LoopGroup::Options o) {
  o.name = "test server";
  o.listen.address = "127.0.0.1";
  auto g = std::make_unique<LoopGroup>(std::move(o), [&seen](EventLoop& loop, int fd, std::string) {
    return std::make_unique<EchoSession>(seen, loop, fd);
  });
  EXPECT_TRUE(g->Start().ok());
  return g;
}

TEST(LoopGroupTest, EachNewConnectionGoesToTheLoopServingFewest) {
  Seen seen;
  LoopGroup::Options o;
  o.threads = 3;
  auto g = StartGroup(seen, o);
  EXPECT_EQ(g->pinned_threads(), 0);
  std::vector<std::unique_ptr<Conn>> conns;
  for (int i = 0; i < 6; ++i) {
    conns.push_back(std::make_unique<Conn>(g->port()));
    ASSERT_TRUE(conns.back()->Echoes());
  }
  ASSERT_TRUE(seen.WaitUntil([&] { return seen.open == 6; }));
  {
    std::lock_guard lock(seen.mu);
    ASSERT_EQ(seen.per_loop.size(), 3u);
    for (auto& [loop, n] : seen.per_loop) EXPECT_EQ(n, 2);
  }
  EXPECT_EQ(g->open_connections(), 6);
  conns.clear();
  ASSERT_TRUE(seen.WaitUntil([&] { return seen.open == 0; }));
  EXPECT_EQ(g->open_connections(), 0);
}

std::unique_ptr<LoopGroup> StartPinned(int threads) {
  LoopGroup::Options o;
  o.name = "pinned server";
  o.listen.address = "127.0.0.1";
  o.threads = threads;
  o.pin_to_cpus = true;
  auto g = std::make_unique<LoopGroup>(
      std::move(o), [](EventLoop& loop, int fd, std::string) { return std::make_unique<CpuSession>(loop, fd); });
  EXPECT_TRUE(g->Start().ok());
  return g;
}

TEST(LoopGroupTest, PinnedLoopsServeEachConnectionOnTheCpuThatSendsIt) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs, this process may use " << cpus.size();
  auto g = StartPinned(2);
  EXPECT_EQ(g->pinned_threads(), 2);
  // On loopback the sender's CPU receives the packets: connections made and used from a thread
  // pinned to CPU c are served by the loop pinned to c, on c.
  for (int cpu : {cpus[0], cpus[1]}) {
    OnCpu(cpu, [&] {
      for (int i = 0; i < 3; ++i) {
        Conn c(g->port());
        EXPECT_EQ(c.Cpus(), std::make_pair(cpu, cpu));
      }
    });
  }
}

TEST(LoopGroupTest, PinnedLoopsStillShareConnectionsThatAllArriveOnOneCpu) {
  const std::vector<int> cpus = AllowedCpus();
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs, this process may use " << cpus.size();
  auto g = StartPinned(2);
  std::map<int, int> per_loop_cpu;  // as a NIC with one receive queue would deliver them
  std::vector<std::unique_ptr<Conn>> conns;
  OnCpu(cpus[0], [&] {
    for (int i = 0; i < 40; ++i) {
      conns.push_back(std::make_unique<Conn>(g->port()));
      ++per_loop_cpu[conns.back()->Cpus().first];
    }
  });
  ASSERT_EQ(per_loop_cpu.size(), 2u);
  EXPECT_GT(per_loop_cpu[cpus[0]], per_loop_cpu[cpus[1]]);  // the local loop takes more, within a bound
  EXPECT_LE(per_loop_cpu[cpus[0]], per_loop_cpu[cpus[1]] + per_loop_cpu[cpus[1]] / 4 + 5);
}

TEST(LoopGroupTest, ConnectionsPastTheLimitAreClosedAtOnceAndTheOthersGoOn) {
  Seen seen;
  LoopGroup::Options o;
  o.threads = 2;
  o.max_connections = 2;
  auto g = StartGroup(seen, o);
  auto a = std::make_unique<Conn>(g->port());
  Conn b(g->port());
  ASSERT_TRUE(a->Echoes());
  ASSERT_TRUE(b.Echoes());
  {
    Conn extra(g->port());
    EXPECT_FALSE(extra.Echoes());
  }
  EXPECT_EQ(g->refused_connections(), 1u);
  EXPECT_TRUE(a->Echoes());
  EXPECT_TRUE(b.Echoes());
  a.reset();  // one leaves: room for a new one once the server has seen it go
  ASSERT_TRUE(seen.WaitUntil([&] { return seen.open == 1; }));
  Conn c(g->port());
  EXPECT_TRUE(c.Echoes());
  EXPECT_EQ(g->refused_connections(), 1u);
}

TEST(LoopGroupTest, AcceptedConnectionsProbeTheirPeerWithKeepalive) {
  Seen seen;
  LoopGroup::Options o;
  o.listen.keepalive = Keepalive::After(std::chrono::seconds(90));
  EXPECT_EQ(o.listen.keepalive.total(), std::chrono::seconds(90));
  auto g = StartGroup(seen, o);
  Conn c(g->port());
  ASSERT_TRUE(c.Echoes());
  std::lock_guard lock(seen.mu);
  EXPECT_EQ(seen.keepalive, 1);
  EXPECT_EQ(seen.idle, 45);
  EXPECT_EQ(seen.interval, 15);
  EXPECT_EQ(seen.probes, 3);
  EXPECT_EQ(seen.user_timeout_ms, 90'000u);  // a peer gone while a reply is unacknowledged: as long
}

TEST(LoopGroupTest, KeepaliveDefaultsDropAPeerAfterTwoMinutes) {
  EXPECT_EQ(Keepalive{}.total(), std::chrono::seconds(120));
  EXPECT_EQ(Keepalive::After(std::chrono::seconds(120)).total(), std::chrono::seconds(120));
  EXPECT_EQ(Keepalive::After(std::chrono::seconds(2)).interval, std::chrono::seconds(1));  // at least 1 s
}

TEST(LoopGroupTest, KeepaliveCanBeTurnedOff) {
  Seen seen;
  LoopGroup::Options o;
  o.listen.keepalive = Keepalive::After(std::chrono::seconds(0));
  auto g = StartGroup(seen, o);
  Conn c(g->port());
  ASSERT_TRUE(c.Echoes());
  std::lock_guard lock(seen.mu);
  EXPECT_EQ(seen.keepalive, 0);
  EXPECT_EQ(seen.user_timeout_ms, 0u);
}

TEST(LoopGroupTest, AnAddressInUseIsAnErrorNamingTheServer) {
  Seen seen;
  auto first = StartGroup(seen, {});
  LoopGroup::Options o;
  o.name = "second";
  o.listen.address = "127.0.0.1";
  o.listen.port = first->port();
  LoopGroup second(o, [](EventLoop&, int, std::string) { return std::unique_ptr<LoopSession>(); });
  Status st = second.Start();
  EXPECT_EQ(st.code(), Code::kInvalidParams);
  EXPECT_NE(st.message().find("second"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find(std::to_string(first->port())), std::string::npos) << st.ToString();
}

}  // namespace
}  // namespace yb

namespace yb {
namespace {

// A loop blocked in a handler (or starved) answers its probe late: Unresponsive says for how long,
// so that the master does not judge clients by calls that loop could not read. An idle loop is
// not unresponsive.
TEST(EventLoopTest, AStuckLoopIsSeenUnresponsiveAndAnIdleOneIsNot) {
  EventLoop loop([](int, std::string) -> std::unique_ptr<LoopSession> { return nullptr; });
  ASSERT_TRUE(loop.Start().ok());
  auto turned = [&] {  // once the loop ran everything posted before (the probe out among it)
    std::promise<void> ran;
    loop.Post([&ran] { ran.set_value(); });
    ran.get_future().wait();
  };
  (void)loop.Unresponsive(SteadyNowMs());  // a probe goes out
  turned();
  EXPECT_LT(loop.Unresponsive(SteadyNowMs()), 1000);  // idle: it ran at once
  turned();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  loop.Post([released] { released.wait(); });
  const int64_t t0 = SteadyNowMs();
  (void)loop.Unresponsive(t0);                   // a probe goes out behind the stuck task
  EXPECT_GE(loop.Unresponsive(t0 + 5000), 5000);  // still out 5 s later
  release.set_value();
  turned();
  EXPECT_LT(loop.Unresponsive(SteadyNowMs()), 1000);  // it ran late only by the real time it was stuck
}

}  // namespace
}  // namespace yb
