// LeaderFollower on the manual clock: it finds the leader etcd names (a fake etcd's JSON gateway),
// makes a call again on a new leader after the old one went, and gives up at its deadline (by the
// manual clock) when no master leads, without waiting it out.
#include "client/leader_follower.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "master/master_service.h"
#include "rpc/master_server.h"
#include "rpc/server.h"

namespace yb {
namespace {

using namespace std::chrono_literals;

// etcd's range call over its JSON gateway, answering one master_view value (none while empty).
class FakeEtcd {
 public:
  FakeEtcd() {
    server_.Post("/v3/kv/range", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      nlohmann::json j = nlohmann::json::object();
      if (!view_.empty()) {
        j["kvs"] = nlohmann::json::array(
            {{{"key", Base64Encode("view")}, {"value", Base64Encode(view_)}, {"create_revision", "1"}}});
      }
      ++lookups_;
      res.set_content(j.dump(), "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~FakeEtcd() {
    server_.stop();
    thread_.join();
  }
  std::string spec() const { return "etcd://127.0.0.1:" + std::to_string(port_); }
  void Name(std::string leader) {
    std::lock_guard lock(mu_);
    view_ = std::move(leader);
  }
  int lookups() {
    std::lock_guard lock(mu_);
    return lookups_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::string view_;
  int lookups_ = 0;
};

// A master served on a loopback port.
struct Master {
  explicit Master(const Clock& clock)
      : service(MasterService::Create(MasterConfig{}, clock).value()), server(Loopback()) {
    rpc::RegisterMasterService(server, *service);
    EXPECT_TRUE(server.Start().ok());
  }
  static rpc::RpcServer::Options Loopback() {
    rpc::RpcServer::Options o;
    o.address = "127.0.0.1";
    return o;
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(server.port()); }
  std::unique_ptr<MasterService> service;
  rpc::RpcServer server;
};

TEST(LeaderFollowerTest, CallsGoToTheLeaderEtcdNamesAndAgainToTheNextOne) {
  ManualClock clock;
  FakeEtcd etcd;
  auto a = std::make_unique<Master>(clock);
  Master b(clock);
  etcd.Name(a->address());
  auto f = LeaderFollower::Create(etcd.spec(), "c", 5s, {}, {}, clock);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  auto ctx = (*f)->RegisterClient({ClientId{1, 2}, "h", "default"});
  ASSERT_TRUE(ctx.ok()) << ctx.status().ToString();
  EXPECT_EQ((*f)->leader(), a->address());
  ASSERT_TRUE((*f)->MountSegment(*ctx, {7, "h", 0, 1 << 20, "127.0.0.1:1"}).ok());

  // The leader goes; etcd names the other master. The next call finds it and is made there (the
  // new master does not know the client: it says so, as a leader without its registration would).
  a.reset();
  etcd.Name(b.address());
  auto listed = (*f)->ListSegments();
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_TRUE(listed->empty());  // b's own (empty) pool: the call reached b
  EXPECT_EQ((*f)->leader(), b.address());
  EXPECT_EQ((*f)->failovers(), 1u);
}

// A leader that hangs (paused by SIGSTOP: its kernel still takes connections, nothing answers)
// costs one call its deadline; the next call asks etcd before it goes anywhere, and reaches the
// master etcd names now. (Before, every later call went to the hung leader until it woke.) Real
// time: what runs out is the RPC's bound on a silent peer.
TEST(LeaderFollowerTest, AfterALeaderTimesOutTheNextCallAsksEtcdFirst) {
  const int hung = ::socket(AF_INET, SOCK_STREAM, 0);  // listens, never accepts nor reads
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(hung, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(hung, 16), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(hung, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string hung_address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  FakeEtcd etcd;
  Master b(SteadyClock());
  etcd.Name(hung_address);
  auto f = LeaderFollower::Create(etcd.spec(), "c", 300ms, {}, {}, SteadyClock());
  ASSERT_TRUE(f.ok());
  auto first = (*f)->ListSegments();
  EXPECT_EQ(first.status().code(), Code::kRpcTimeout) << first.status().ToString();
  EXPECT_EQ((*f)->leader(), hung_address);

  etcd.Name(b.address());  // another master took over meanwhile
  const int lookups = etcd.lookups();
  auto second = (*f)->ListSegments();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*f)->leader(), b.address());
  EXPECT_EQ(etcd.lookups(), lookups + 1);  // asked once, before the call
  ::close(hung);
}

TEST(LeaderFollowerTest, WithNoLeaderACallFailsAtItsDeadlineByTheClock) {
  ManualClock clock;
  FakeEtcd etcd;  // names no one
  auto f = LeaderFollower::Create(etcd.spec(), "c", 3s, {}, {}, clock);
  ASSERT_TRUE(f.ok());
  const TimeMs start = clock.NowMs();
  const auto wall = std::chrono::steady_clock::now();
  auto r = (*f)->ExistKey(CallContext{}, "k");
  EXPECT_EQ(r.status().code(), Code::kRpcFail);
  EXPECT_NE(r.status().message().find("no master leads"), std::string::npos) << r.status().ToString();
  EXPECT_GE(clock.NowMs() - start, 3000);                  // it waited its whole deadline, on the manual clock
  EXPECT_LT(std::chrono::steady_clock::now() - wall, 2s);  // and not on the real one
  // Lookups are spaced by the clock too: one per 100 ms of it at most, plus the first.
  EXPECT_LE(etcd.lookups(), (clock.NowMs() - start) / 50 + 1);
}

}  // namespace
}  // namespace yb
