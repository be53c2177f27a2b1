// The transfer server: SSD-tier objects served by key, and a server with a secret that serves only
// peers that prove it.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "transfer/tcp/tcp_test_fixture.h"

namespace yb::tcp {
namespace {

using namespace std::chrono_literals;

// A stand-in SSD tier: one object.
class OneObject final : public ObjectReader {
 public:
  Result<uint64_t> ReadObject(const std::string& key, void* buffer, uint64_t size) override {
    if (key != "disk-key") return Status(Code::kObjectNotFound, "absent");
    if (size < value.size()) return Status(Code::kBufferOverflow, "small");
    std::memcpy(buffer, value.data(), value.size());
    return value.size();
  }
  std::string value = std::string(300000, 'v');
};

TEST_F(TcpTransportTest, ObjectReadsServeTheSsdTierByKey) {
  auto disk = std::make_shared<OneObject>();
  served_->AddDisk(5, disk);
  std::string key = "disk-key", other = "other-key", out(disk->value.size(), '\0'), small(10, '\0');
  auto r = transport_->Submit({{Op::kReadObject, 5, 0, out.data(), out.size(), &key},
                               {Op::kReadObject, 5, 0, out.data(), out.size(), &other},
                               {Op::kReadObject, 6, 0, out.data(), out.size(), &key},
                               {Op::kReadObject, 5, 0, small.data(), small.size(), &key}});
  EXPECT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_EQ(out, disk->value);
  EXPECT_EQ(r[1].code(), Code::kObjectNotFound);
  EXPECT_EQ(r[2].code(), Code::kObjectNotFound);  // segment 6 has no SSD tier here
  EXPECT_EQ(r[3].code(), Code::kBufferOverflow);
  std::string huge(kMaxObjectKey + 1, 'k');
  EXPECT_EQ(transport_->Submit({{Op::kReadObject, 5, 0, out.data(), out.size(), &huge}})[0].code(),
            Code::kInvalidParams);
  // A raw request whose key length is out of bounds closes its connection; others go on.
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address("127.0.0.1"), server_->port()});
  uint8_t hdr[kRequestSize];
  WireRequest{kOpReadObject, 5, kMaxObjectKey + 1, 10, {}}.Encode(hdr);
  asio::write(sock, asio::buffer(hdr));
  char c;
  asio::error_code ec;
  sock.read_some(asio::buffer(&c, 1), ec);
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset);
  EXPECT_TRUE(transport_->Submit({{Op::kReadObject, 5, 0, out.data(), out.size(), &key}})[0].ok());
  EXPECT_GE(server_->refused_requests(), 1u);
  EXPECT_EQ(server_->stats().disk_reads, 2u);  // the two served whole; the ones refused are not counted
  EXPECT_EQ(server_->stats().disk_read_bytes, 2 * disk->value.size());
}

// A stand-in SSD tier whose reads wait until the test lets them go.
class HeldDisk final : public ObjectReader {
 public:
  Result<uint64_t> ReadObject(const std::string&, void* buffer, uint64_t size) override {
    std::unique_lock lock(mu_);
    started_ = true;
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
    std::memset(buffer, 'd', size);
    return size;
  }
  void WaitStarted() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return started_; });
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false, released_ = false;
};

// An SSD tier read runs off the loop: while the disk is slow, the loop's other connections are
// served, and the reader's later requests are answered after it, in order.
TEST_F(TcpTransportTest, ASlowSsdReadHoldsUpOnlyItsOwnConnection) {
  auto disk = std::make_shared<HeldDisk>();
  served_->AddDisk(5, disk);
  auto server = StartServer([](TransferServer::Options& o) { o.threads = 1; });
  RawConn reader(server->port());
  const std::string key = "k";
  reader.Send({kOpReadObject, 5, key.size(), 1000, {}}, key);
  reader.Send({kOpRead, 5, 0, 4, {}});
  disk->WaitStarted();
  RawConn other(server->port());
  EXPECT_TRUE(other.Read(0, 4).has_value());
  disk->Release();
  auto first = reader.Answer();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->first, Code::kOk);
  EXPECT_EQ(first->second, std::string(1000, 'd'));
  auto second = reader.Answer();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->first, Code::kOk);
  EXPECT_EQ(second->second.size(), 4u);
}

// With a secret, a transfer server serves only connections that prove the data-plane key derived
// from it: nothing moves for anyone else, whatever grants it holds.
TEST_F(TcpTransportTest, ATransferServerWithASecretServesOnlyPeersThatProveIt) {
  auto with = [](const std::string& secret) {
    net::SecurityOptions o;
    o.secret = secret;
    return net::Security::Create(std::move(o)).value();
  };
  const std::string secret = "the-cluster-secret-0123456789";
  auto server = StartServer([&](TransferServer::Options& o) { o.security = with(secret); });
  const std::string ep = "127.0.0.1:" + std::to_string(server->port());
  auto resolve = [ep](SegmentId) -> std::optional<std::string> { return ep; };
  auto transport = [&](std::shared_ptr<const net::Security> sec) {
    TcpTransport::Options o;
    o.security = std::move(sec);
    o.connect_timeout = std::chrono::milliseconds(500);
    return std::make_unique<Granting>(std::make_unique<TcpTransport>(resolve, o));
  };
  std::vector<uint8_t> in(100000, 0x42), out(in.size());
  auto good = transport(with(secret));
  ASSERT_TRUE(good->Submit({{Op::kWrite, 5, 0, in.data(), in.size()}})[0].ok());
  ASSERT_TRUE(good->Submit({{Op::kRead, 5, 0, out.data(), out.size()}})[0].ok());
  EXPECT_EQ(in, out);
  std::vector<uint8_t> evil(in.size(), 0x66);
  auto wrong = transport(with("another-secret-0123456789"));
  auto refused = wrong->Submit({{Op::kWrite, 5, 0, evil.data(), evil.size()}});
  EXPECT_EQ(refused[0].code(), Code::kIllegalClient) << refused[0].ToString();
  EXPECT_FALSE(transport(net::Security::None())->Submit({{Op::kWrite, 5, 0, evil.data(), evil.size()}})[0].ok());
  EXPECT_EQ(std::memcmp(region_->data() + kGuard, in.data(), in.size()), 0);  // untouched
  EXPECT_TRUE(GuardsIntact());
}

}  // namespace
}  // namespace yb::tcp
