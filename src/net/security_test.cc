// The secure channel end to end on loopback: an echo server behind Security::Accept on an event
// loop, clients through Security::Connect.
#include "net/security.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>

#include "common/loop_group.h"
#include "common/temp_dir.h"
#include "net/test_certs.h"

namespace yb::net {
namespace {

using namespace std::chrono_literals;

// Echoes what it reads; notes who its peer proved to be.
class Echo final : public LoopSession {
 public:
  Echo(std::unique_ptr<Stream> s, Peer p, std::function<void(const Peer&)> note) : s_(std::move(s)) { note(p); }
  uint32_t Interest() const override { return EPOLLIN; }
  bool OnEvents(uint32_t) override {
    char buf[4096];
    ssize_t n = s_->Recv(buf, sizeof(buf));
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN;
    return s_->Send(buf, static_cast<size_t>(n)) == n;
  }
  bool Buffered() const override { return s_->Buffered(); }

 private:
  std::unique_ptr<Stream> s_;
};

class EchoServer {
 public:
  explicit EchoServer(std::shared_ptr<Security> sec) : sec_(std::move(sec)) {
    LoopGroup::Options o;
    o.name = "echo";
    o.listen.address = "127.0.0.1";
    o.stall_timeout_ms = 2000;
    group_ = std::make_unique<LoopGroup>(o, [this](EventLoop&, int fd, std::string peer) {
      return sec_->Accept(Plane::kControl, fd, std::move(peer), [this](std::unique_ptr<Stream> s, Peer p) {
        return std::make_unique<Echo>(std::move(s), std::move(p), [this](const Peer& peer) {
          std::lock_guard lock(mu_);
          peers_.push_back(peer);
        });
      });
    });
    EXPECT_TRUE(group_->Start().ok());
  }
  ~EchoServer() { group_->Stop(); }
  uint16_t port() const { return group_->port(); }
  std::vector<Peer> peers() {
    std::lock_guard lock(mu_);
    return peers_;
  }

 private:
  std::shared_ptr<Security> sec_;
  std::unique_ptr<LoopGroup> group_;
  std::mutex mu_;
  std::vector<Peer> peers_;
};

int ConnectTo(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// A connection through `sec` to `port`: the echo of a message, or the failure.
Result<std::string> RoundTrip(const Security& sec, uint16_t port, const std::string& tenant = "default",
                              std::chrono::milliseconds deadline = 3s) {
  int fd = ConnectTo(port);
  auto s = sec.Connect(Plane::kControl, fd, "echo", tenant, std::chrono::steady_clock::now() + deadline);
  if (!s.ok()) {
    ::close(fd);
    return s.status();
  }
  const std::string msg(100000, 'e');  // several TLS records
  std::string got;
  EXPECT_EQ((*s)->Send(msg.data(), msg.size()), static_cast<ssize_t>(msg.size()));
  char buf[65536];
  while (got.size() < msg.size()) {
    ssize_t n = (*s)->Recv(buf, sizeof(buf));
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  s->reset();
  ::close(fd);
  return got;
}

std::shared_ptr<Security> Make(SecurityOptions o) {
  auto s = Security::Create(std::move(o));
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : nullptr;
}

const std::string kSecret = "0123456789abcdef-cluster";

TEST(SecurityTest, WithNothingToCheckBytesPassAsTheyAre) {
  EchoServer server(Security::None());
  auto got = RoundTrip(*Security::None(), server.port());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 100000u);
  ASSERT_EQ(server.peers().size(), 1u);
  EXPECT_FALSE(server.peers()[0].authenticated);
  EXPECT_TRUE(server.peers()[0].privileged());
}

// The cluster secret, a tenant's secret, a wrong one, none: each connection is what it proved.
TEST(SecurityTest, APeerIsWhatItProvedAndAWrongSecretIsRefused) {
  SecurityOptions so;
  so.secret = kSecret;
  so.tenant_secrets = {{"team-a", "team-a-secret-0123456"}};
  EchoServer server(Make(so));

  SecurityOptions node;
  node.secret = kSecret;
  ASSERT_TRUE(RoundTrip(*Make(node), server.port()).ok());
  SecurityOptions tenant;
  tenant.secret = "team-a-secret-0123456";
  ASSERT_TRUE(RoundTrip(*Make(tenant), server.port(), "team-a").ok());
  auto peers = server.peers();
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_TRUE(peers[0].authenticated && peers[0].privileged());
  EXPECT_EQ(peers[1].role, Role::kTenant);
  EXPECT_TRUE(peers[1].MayActFor("team-a"));
  EXPECT_FALSE(peers[1].MayActFor("team-b"));
  EXPECT_FALSE(peers[1].privileged());

  // A tenant's secret claimed for another tenant, and a wrong secret: refused, no session made.
  EXPECT_EQ(RoundTrip(*Make(tenant), server.port(), "team-b").code(), Code::kIllegalClient);
  SecurityOptions wrong;
  wrong.secret = "not-the-cluster-secret";
  auto refused = RoundTrip(*Make(wrong), server.port());
  EXPECT_EQ(refused.code(), Code::kIllegalClient);
  EXPECT_NE(refused.status().message().find("refused our proof"), std::string::npos) << refused.status().ToString();
  // No secret: the server's hello is all it gets back, never an echo.
  auto none = RoundTrip(*Security::None(), server.port());
  EXPECT_TRUE(!none.ok() || none->size() < 100000u);
  EXPECT_EQ(server.peers().size(), 2u);
}

// A client with a secret and a server that asks for none: a clear error by the deadline.
TEST(SecurityTest, AServerThatAsksForNoProofIsReported) {
  EchoServer server(Security::None());
  SecurityOptions node;
  node.secret = kSecret;
  auto r = RoundTrip(*Make(node), server.port(), "default", 300ms);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--auth_secret_file"), std::string::npos) << r.status().ToString();
}

// The data plane checks the key derived from the cluster secret, which a tenant's client is given.
TEST(SecurityTest, TheDataPlaneKeyIsDerivedFromTheClusterSecret) {
  SecurityOptions so;
  so.secret = kSecret;
  auto master = Make(so);
  SecurityOptions tenant;
  tenant.secret = "team-a-secret-0123456";
  auto client = Make(tenant);
  EXPECT_NE(client->data_key(), master->cluster_data_key());
  client->SetDataKey(master->cluster_data_key());
  EXPECT_EQ(client->data_key(), Make(so)->data_key());
  EXPECT_NE(AdminToken(kSecret), AdminToken("another-secret-0123"));
  EXPECT_EQ(AdminToken(kSecret).size(), 64u);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(MakeTestCerts(dir_.path()).ok()); }
  std::string F(const char* name) const { return dir_.path() + "/" + name; }
  TempDir dir_{"yb-tls"};
};

TEST_F(TlsTest, BytesGoEncryptedAndAuthenticationRunsInside) {
  SecurityOptions so;
  so.secret = kSecret;
  so.tls = {F("server.pem"), F("server.key"), ""};
  EchoServer server(Make(so));
  SecurityOptions co;
  co.secret = kSecret;
  co.tls = {"", "", F("ca.pem")};
  auto got = RoundTrip(*Make(co), server.port());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 100000u);
  ASSERT_EQ(server.peers().size(), 1u);
  EXPECT_TRUE(server.peers()[0].authenticated);
  // A client that does not speak TLS, and one that trusts another CA: refused.
  SecurityOptions plain;
  plain.secret = kSecret;
  EXPECT_FALSE(RoundTrip(*Make(plain), server.port(), "default", 500ms).ok());
  SecurityOptions other;
  other.tls = {"", "", F("other-ca.pem")};
  auto r = RoundTrip(*Make(other), server.port());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("certificate"), std::string::npos) << r.status().ToString();
}

// Given a CA, the server asks for client certificates: one it signed passes, none or another's does not.
TEST_F(TlsTest, MutualTlsNeedsAClientCertificateTheCaSigned) {
  SecurityOptions so;
  so.tls = {F("server.pem"), F("server.key"), F("ca.pem")};
  EchoServer server(Make(so));
  SecurityOptions good;
  good.tls = {F("client.pem"), F("client.key"), F("ca.pem")};
  ASSERT_TRUE(RoundTrip(*Make(good), server.port()).ok());
  SecurityOptions none;
  none.tls = {"", "", F("ca.pem")};
  EXPECT_FALSE(RoundTrip(*Make(none), server.port()).ok());
  SecurityOptions foreign;
  foreign.tls = {F("other.pem"), F("other.key"), F("ca.pem")};
  EXPECT_FALSE(RoundTrip(*Make(foreign), server.port()).ok());
  EXPECT_EQ(server.peers().size(), 1u);
}

TEST_F(TlsTest, BadFilesAreRefusedWithTheirNames) {
  SecurityOptions so;
  so.tls = {F("missing.pem"), F("server.key"), ""};
  auto s = Security::Create(so);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("missing.pem"), std::string::npos);
  so.tls = {F("server.pem"), F("client.key"), ""};  // a key of another certificate
  EXPECT_FALSE(Security::Create(so).ok());
  so.tls = {F("server.pem"), "", ""};
  EXPECT_FALSE(Security::Create(so).ok());
}

TEST(SecretFileTest, ShortOrMissingSecretsAreRefused) {
  TempDir dir{"yb-secret"};
  const std::string path = dir.path() + "/s";
  std::ofstream(path) << "short\n";
  EXPECT_EQ(ReadSecretFile(path).code(), Code::kInvalidParams);
  std::ofstream(path) << kSecret << "\n";
  auto s = ReadSecretFile(path);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, kSecret);  // the newline is not part of it
  EXPECT_EQ(ReadSecretFile(dir.path() + "/none").code(), Code::kInvalidParams);
  std::ofstream(path) << "team-a: " << kSecret << "\nteam-b: tooshort\n";
  EXPECT_EQ(ReadTenantSecrets(path).code(), Code::kInvalidParams);
  std::ofstream(path) << "team-a: " << kSecret << "\n";
  auto t = ReadTenantSecrets(path);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->at("team-a"), kSecret);
}

}  // namespace
}  // namespace yb::net
