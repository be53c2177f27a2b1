// The secure channel end to end on loopback: an echo server behind Security::Accept on an event
// loop, clients through Security::Connect.
#include "net/security.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>

#include "common/loop_group.h"
#include "common/resolve.h"
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
  // `as_peer`: the address the server is told each connection comes from (a host that is not this
  // one, say), instead of its real one.
  explicit EchoServer(std::shared_ptr<Security> sec, std::string as_peer = "") : sec_(std::move(sec)) {
    LoopGroup::Options o;
    o.name = "echo";
    o.listen.address = "127.0.0.1";
    o.stall_timeout_ms = 2000;
    group_ = std::make_unique<LoopGroup>(o, [this, as_peer](EventLoop&, int fd, std::string peer) {
      if (!as_peer.empty()) peer = as_peer;
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

// MACs on every frame (the default with a secret, without TLS) need the same setting on both ends:
// a client that differs from its server refuses, naming the flag; off on both, bytes pass as they are.
TEST(SecurityTest, BothEndsAgreeOnMacsOnFramesOrTheClientSaysSo) {
  SecurityOptions on;
  on.secret = kSecret;
  SecurityOptions off = on;
  off.wire_macs = false;
  EchoServer with_macs(Make(on)), without(Make(off));
  EXPECT_TRUE(Make(on)->MacsOn(*MakePlainStream(-1)));
  EXPECT_FALSE(Make(off)->MacsOn(*MakePlainStream(-1)));
  ASSERT_TRUE(RoundTrip(*Make(on), with_macs.port()).ok());
  ASSERT_TRUE(RoundTrip(*Make(off), without.port()).ok());
  for (auto [client, port] : {std::pair{off, with_macs.port()}, std::pair{on, without.port()}}) {
    auto refused = RoundTrip(*Make(client), port);
    EXPECT_EQ(refused.code(), Code::kIllegalClient);
    EXPECT_NE(refused.status().message().find("--wire_macs"), std::string::npos) << refused.status().ToString();
  }
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

// The leader's name in etcd (issue 30 item 6): signed under every key a caller may hold, checked by
// each; a forged or altered name, one of another cluster, or an unsigned one is refused by a
// process with a secret, and read as Mooncake writes it by one without.
TEST(SecurityTest, TheLeadersNameInEtcdIsSignedForEveryCaller) {
  const std::string view = "mooncake-store/c/master_view";
  const std::string node = RoleKey(kSecret, Role::kNode), admin = RoleKey(kSecret, Role::kAdmin);
  const std::string tenant = "team-a-secret-0123456";
  const std::string value = SignView("10.0.0.1:50051", view, {kSecret, node, admin, tenant});
  for (const std::string& key : {std::string(kSecret), node, admin, tenant, std::string()}) {
    auto named = CheckView(value, view, key);
    ASSERT_TRUE(named.ok()) << named.status().ToString();
    EXPECT_EQ(*named, "10.0.0.1:50051");
  }
  EXPECT_EQ(CheckView(value, view, "another-secret-0123456").code(), Code::kIllegalClient);
  EXPECT_EQ(CheckView(value, "mooncake-store/other/master_view", kSecret).code(), Code::kIllegalClient);
  std::string moved = value;
  moved.replace(0, 8, "10.6.6.6");  // the same MACs, another address
  EXPECT_EQ(CheckView(moved, view, kSecret).code(), Code::kIllegalClient);
  EXPECT_EQ(CheckView("10.6.6.6:1", view, kSecret).code(), Code::kIllegalClient);  // unsigned
  EXPECT_EQ(*CheckView("10.0.0.1:50051", view, ""), "10.0.0.1:50051");
  EXPECT_EQ(SignView("10.0.0.1:50051", view, {}), "10.0.0.1:50051");  // no secret: as Mooncake writes it
  EXPECT_EQ(CheckView(value + " junk", view, kSecret).ok(), true);     // extra words harm nothing
  EXPECT_FALSE(CheckView("a yb-view1", view, kSecret).ok());
  EXPECT_FALSE(CheckView(" yb-view1  ", view, kSecret).ok());
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
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
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

// As ssh refuses a loose key: a file of secrets its group or others may read is not used.
TEST(SecretFileTest, FilesOthersMayReadAreRefused) {
  TempDir dir{"yb-secret"};
  const std::string path = dir.path() + "/s";
  std::ofstream(path) << kSecret << "\n";
  for (mode_t loose : {0644, 0640, 0604, 0660}) {
    ASSERT_EQ(::chmod(path.c_str(), loose), 0);
    auto s = ReadSecretFile(path);
    EXPECT_EQ(s.code(), Code::kInvalidParams) << std::oct << loose;
    EXPECT_NE(s.status().message().find("chmod 600"), std::string::npos) << s.status().ToString();
  }
  ASSERT_EQ(::chmod(path.c_str(), 0400), 0);
  EXPECT_TRUE(ReadSecretFile(path).ok());
  std::ofstream(path + "t") << "team-a: " << kSecret << "\n";
  ASSERT_EQ(::chmod((path + "t").c_str(), 0644), 0);
  EXPECT_EQ(ReadTenantSecrets(path + "t").code(), Code::kInvalidParams);
}

// What each role may do, as the servers ask it (docs/security.md "Roles").
TEST(RolesTest, EachRoleHasItsOwnPowers) {
  auto peer = [](bool authenticated, Role role, std::string tenant = "") {
    Peer p;
    p.authenticated = authenticated;
    p.role = role;
    p.tenant = std::move(tenant);
    return p;
  };
  const Peer anyone = peer(false, Role::kCluster), master = peer(true, Role::kCluster),
             node = peer(true, Role::kNode), admin = peer(true, Role::kAdmin),
             tenant = peer(true, Role::kTenant, "team-a");
  // Follows the log (the HA channel): masters only (and anyone where nothing is checked: protected
  // mode keeps that to this host).
  EXPECT_TRUE(anyone.master() && master.master());
  EXPECT_FALSE(node.master() || admin.master() || tenant.master());
  // Drains others, sets quotas: masters and operators.
  EXPECT_TRUE(master.privileged() && admin.privileged());
  EXPECT_FALSE(node.privileged() || tenant.privileged());
  // Any tenant's objects: all but a tenant's client, which has its own.
  EXPECT_TRUE(node.any_tenant() && admin.any_tenant() && node.MayActFor("team-b"));
  EXPECT_FALSE(tenant.any_tenant() || tenant.MayActFor("team-b"));
  EXPECT_TRUE(tenant.MayActFor("team-a"));
  // A role key names its role, and only a well-formed one counts.
  const std::string key = RoleKey(kSecret, Role::kNode);
  EXPECT_EQ(RoleOfSecret(key), Role::kNode);
  EXPECT_FALSE(RoleOfSecret(key.substr(0, key.size() - 1)));
  EXPECT_FALSE(RoleOfSecret("yb-role:master:" + key.substr(13)));
  EXPECT_NE(RoleKey(kSecret, Role::kNode), RoleKey("another-cluster-secret", Role::kNode));
}

TEST(ProtectedModeTest, LoopbackAddresses) {
  for (const char* a : {"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"}) EXPECT_TRUE(IsLoopbackAddress(a)) << a;
  for (const char* a : {"10.0.0.1", "192.168.1.1", "::ffff:10.0.0.1", "fe80::1", "1.127.0.0", ""}) {
    EXPECT_FALSE(IsLoopbackAddress(a)) << a;
  }
}

TEST(ProtectedModeTest, LocalPeersAreLoopbackOrThisHostsAddresses) {
  for (const char* a : {"127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"}) EXPECT_TRUE(IsAddressOfThisHost(a)) << a;
  // Documentation addresses (TEST-NET-2, 2001:db8::/32): no interface here has them.
  for (const char* a : {"198.51.100.7", "::ffff:198.51.100.7", "2001:db8::1", "1.127.0.0", ""}) {
    EXPECT_FALSE(IsAddressOfThisHost(a)) << a;
  }
  // A process here that reached us at one of this host's own addresses (a daemon named by its
  // host name) is on this host.
  ifaddrs* ifs = nullptr;
  ASSERT_EQ(getifaddrs(&ifs), 0);
  for (ifaddrs* i = ifs; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof(buf));
    EXPECT_TRUE(IsAddressOfThisHost(buf)) << buf;
    EXPECT_TRUE(IsAddressOfThisHost(std::string("::ffff:") + buf)) << buf;
  }
  freeifaddrs(ifs);
}

// What a connection's first bytes are, read until the server closes it (or 2 s pass).
std::string ReadUntilClosed(int fd) {
  std::string got;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return got;
    got.append(buf, static_cast<size_t>(n));
  }
}

// A server with no secret serves its own host and tells any other why it will not serve it.
TEST(ProtectedModeTest, WithoutASecretOnlyThisHostIsServed) {
  {
    EchoServer local(Security::None(), "::ffff:127.0.0.1");
    auto got = RoundTrip(*Security::None(), local.port());
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->size(), 100000u);
  }
  EchoServer remote(Security::None(), "10.1.2.3");
  // A client without a secret sends its request and reads the refusal where the answer would be.
  int fd = ConnectTo(remote.port());
  const std::string req = "a request";
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  Refusal r = DecodeRefusal(ReadUntilClosed(fd));
  ::close(fd);
  ASSERT_TRUE(r.is_refusal && r.complete);
  EXPECT_NE(r.text.find("protected mode"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("--auth_secret_file"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("--protected_mode false"), std::string::npos) << r.text;
  EXPECT_TRUE(remote.peers().empty());  // no session was made for it
  // A client with a secret finds the refusal where it waits for the hello.
  SecurityOptions co;
  co.secret = kSecret;
  auto refused = RoundTrip(*Make(co), remote.port());
  EXPECT_EQ(refused.code(), Code::kIllegalClient);
  EXPECT_NE(refused.status().message().find("protected mode"), std::string::npos) << refused.status().ToString();
}

// Protected mode binds a server that checks nothing; with a secret, or turned off, others are served.
TEST(ProtectedModeTest, ASecretOrTheOperatorsChoiceServesOtherHosts) {
  SecurityOptions open;
  open.protected_mode = false;
  auto open_sec = Make(open);
  EXPECT_FALSE(open_sec->loopback_only());
  EchoServer served(open_sec, "10.1.2.3");
  auto got = RoundTrip(*Security::None(), served.port());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 100000u);

  SecurityOptions so;
  so.secret = kSecret;
  auto with_secret = Make(so);
  EXPECT_FALSE(with_secret->loopback_only());
  EchoServer proven(with_secret, "10.1.2.3");
  got = RoundTrip(*with_secret, proven.port());
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(proven.peers().size(), 1u);
  EXPECT_TRUE(proven.peers()[0].authenticated);
}

// A peer that connects and never proves itself is closed once the handshake timeout passes, long
// before the stall timeout of a session's own requests would.
TEST(ProtectedModeTest, AHandshakeThatDoesNotEndInTimeIsClosed) {
  SecurityOptions so;
  so.secret = kSecret;
  so.handshake_timeout = 200ms;
  EchoServer server(Make(so));
  int fd = ConnectTo(server.port());
  timeval tv{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const auto start = std::chrono::steady_clock::now();
  const std::string got = ReadUntilClosed(fd);  // the hello, then the close
  const auto waited = std::chrono::steady_clock::now() - start;
  ::close(fd);
  EXPECT_EQ(got.size(), kHelloSize);
  EXPECT_LT(waited, 5s);  // the stall timeout of EchoServer's loops is 2 s; bounded well under the 10 s read timeout
  EXPECT_TRUE(server.peers().empty());
}

TEST(ProtectedModeTest, RefusalsRoundTrip) {
  const std::string why(2000, 'x');
  const std::string wire = EncodeRefusal(why);
  Refusal r = DecodeRefusal(wire);
  EXPECT_TRUE(r.is_refusal && r.complete);
  EXPECT_EQ(r.text.size(), kMaxRefusalText);
  r = DecodeRefusal(std::string_view(wire).substr(0, 10));
  EXPECT_TRUE(r.is_refusal);
  EXPECT_FALSE(r.complete);
  EXPECT_FALSE(DecodeRefusal("YBRP....").is_refusal);
  EXPECT_FALSE(DecodeRefusal("").is_refusal);
}

}  // namespace
}  // namespace yb::net
