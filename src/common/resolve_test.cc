#include "common/resolve.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <atomic>
#include <condition_variable>
#include <thread>

namespace yb {
namespace {

using namespace std::chrono_literals;

auto Far() { return std::chrono::steady_clock::now() + 1h; }

// A lookup that answers 192.0.2.7 once released, counting its calls.
struct GatedLookup {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    std::atomic<int> calls{0};
  };
  std::shared_ptr<State> state = std::make_shared<State>();

  NameResolver::Lookup Fn() const {
    return [s = state](const std::string&, const std::string& port) -> Result<std::vector<SocketAddress>> {
      s->calls++;
      std::unique_lock l(s->mu);
      s->cv.wait(l, [&] { return s->open; });
      SocketAddress a;
      auto* in = reinterpret_cast<sockaddr_in*>(&a.addr);
      in->sin_family = AF_INET;
      in->sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
      inet_pton(AF_INET, "192.0.2.7", &in->sin_addr);
      a.len = sizeof(sockaddr_in);
      a.family = AF_INET;
      return std::vector<SocketAddress>{a};
    };
  }
  void Open() const {
    {
      std::lock_guard l(state->mu);
      state->open = true;
    }
    state->cv.notify_all();
  }
};

std::string Text(const SocketAddress& a) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&a.addr);
    inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf));
    return std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
  }
  auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.addr);
  inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf));
  return "[" + std::string(buf) + "]:" + std::to_string(ntohs(in6->sin6_port));
}

TEST(ResolverTest, NumericAddressesAreParsedWithoutALookup) {
  GatedLookup gate;  // never opened: a lookup would hang the test
  NameResolver r(gate.Fn());
  auto v4 = r.Resolve("127.0.0.1", "50051", std::chrono::steady_clock::now());
  ASSERT_TRUE(v4.ok()) << v4.status().ToString();
  ASSERT_EQ(v4->size(), 1u);
  EXPECT_EQ(Text(v4->front()), "127.0.0.1:50051");
  auto v6 = r.Resolve("::1", "7", std::chrono::steady_clock::now());
  ASSERT_TRUE(v6.ok()) << v6.status().ToString();
  EXPECT_EQ(Text(v6->front()), "[::1]:7");
  EXPECT_EQ(gate.state->calls.load(), 0);
}

TEST(ResolverTest, TheSystemLookupResolvesLocalhostAndSaysWhatItCouldNot) {
  NameResolver r;  // both from local files (/etc/hosts, /etc/services): no DNS server is asked
  auto local = r.Resolve("localhost", "80", Far());
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_FALSE(local->empty());
  auto bad = r.Resolve("localhost", "no-such-service", Far());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), Code::kRpcFail);
  EXPECT_NE(bad.status().message().find("cannot resolve localhost:no-such-service"), std::string::npos)
      << bad.status().message();
}

TEST(ResolverTest, AHungLookupEndsEachCallerAtItsDeadlineAndRunsOnlyOnce) {
  GatedLookup gate;
  NameResolver r(gate.Fn());
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto t = r.Resolve("master.example", "50051", std::chrono::steady_clock::now() + 10ms);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), Code::kRpcTimeout) << t.status().ToString();
  }
  gate.Open();
  auto got = r.Resolve("master.example", "50051", Far());  // the lookup started by the first attempt
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(Text(got->front()), "192.0.2.7:50051");
  EXPECT_EQ(gate.state->calls.load(), 1);
  ASSERT_TRUE(r.Resolve("master.example", "50051", Far()).ok());  // a used answer is not reused
  EXPECT_EQ(gate.state->calls.load(), 2);
  ASSERT_TRUE(r.Resolve("master.example", "9", Far()).ok());  // another port is another lookup
  EXPECT_EQ(gate.state->calls.load(), 3);
}

TEST(ResolverTest, ALookupOlderThanThirtySecondsIsReplaced) {
  ManualClock clock;
  GatedLookup gate;
  NameResolver r(gate.Fn(), &clock);
  ASSERT_EQ(r.Resolve("a.example", "1", std::chrono::steady_clock::now()).status().code(), Code::kRpcTimeout);
  clock.AdvanceSec(30);  // still the same lookup
  ASSERT_EQ(r.Resolve("a.example", "1", std::chrono::steady_clock::now()).status().code(), Code::kRpcTimeout);
  clock.AdvanceSec(1);  // now a new one, while the first still hangs
  ASSERT_EQ(r.Resolve("a.example", "1", std::chrono::steady_clock::now()).status().code(), Code::kRpcTimeout);
  while (gate.state->calls.load() < 2) std::this_thread::yield();  // the helper threads have started
  gate.Open();
  ASSERT_TRUE(r.Resolve("a.example", "1", Far()).ok());
  EXPECT_EQ(gate.state->calls.load(), 2);
}

// Who may say it replaced the process at an endpoint: a caller on that endpoint's host.
TEST(PeerOnHostOfTest, OnlyACallerOnTheEndpointsHost) {
  EXPECT_TRUE(PeerOnHostOf("10.1.2.3", "10.1.2.3:7000"));
  EXPECT_TRUE(PeerOnHostOf("::ffff:10.1.2.3", "10.1.2.3:7000"));
  EXPECT_FALSE(PeerOnHostOf("10.1.2.4", "10.1.2.3:7000"));
  EXPECT_TRUE(PeerOnHostOf("127.0.0.1", "127.0.0.1:7000"));
  EXPECT_TRUE(PeerOnHostOf("127.0.0.1", "localhost:7000"));
  EXPECT_TRUE(PeerOnHostOf("::1", "[::1]:7000"));
  EXPECT_FALSE(PeerOnHostOf("10.9.9.9", "127.0.0.1:7000"));  // another host naming our loopback
  EXPECT_FALSE(PeerOnHostOf("127.0.0.1", "no-port"));
  EXPECT_FALSE(PeerOnHostOf("127.0.0.1", "name.invalid:7000"));
}

}  // namespace
}  // namespace yb
