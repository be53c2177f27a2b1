#include "transfer/tcp/tcp_transport.h"

#include <gtest/gtest.h>

#include <asio.hpp>
#include <cstring>

#include "common/test_util.h"
#include "transfer/tcp/transfer_server.h"
#include "transfer/tcp/wire.h"

namespace yb::tcp {
namespace {

using namespace std::chrono_literals;

class TcpTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_ = MappedRegion::Map(kGuard * 2 + kSeg);
    std::memset(region_->data(), 0xEE, region_->size());
    served_ = std::make_shared<LocalSegmentRegistry>();
    served_->Add(5, LocalSegment{region_, region_->data() + kGuard, kSeg});
    TransferServer::Options o;
    o.address = "127.0.0.1";
    o.max_request = 4 << 20;
    server_ = std::make_unique<TransferServer>(served_, o);
    ASSERT_TRUE(server_->Start().ok());
    std::string ep = "127.0.0.1:" + std::to_string(server_->port());
    TcpTransport::Options to;
    to.slice_size = 256 << 10;
    transport_ = std::make_unique<TcpTransport>(
        [ep](SegmentId s) -> std::optional<std::string> {
          if (s == 5 || s == 6) return ep;  // 6: a segment the server does not own
          return std::nullopt;
        },
        to);
  }

  bool GuardsIntact() const {
    for (uint64_t i = 0; i < kGuard; ++i) {
      if (region_->data()[i] != 0xEE || region_->data()[kGuard + kSeg + i] != 0xEE) return false;
    }
    return true;
  }

  static constexpr uint64_t kSeg = 16 << 20;
  static constexpr uint64_t kGuard = 4096;
  std::shared_ptr<MappedRegion> region_;
  std::shared_ptr<LocalSegmentRegistry> served_;
  std::unique_ptr<TransferServer> server_;
  std::unique_ptr<TcpTransport> transport_;
};

using Op = TransferRequest::Op;

TEST_F(TcpTransportTest, LargeWriteAndReadInSlicesOverSeveralConnections) {
  std::vector<uint8_t> in(10 << 20), out(10 << 20);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 31 + 7);
  auto w = transport_->Submit({{Op::kWrite, 5, 4096, in.data(), in.size()}});
  ASSERT_TRUE(w[0].ok()) << w[0].ToString();
  EXPECT_EQ(std::memcmp(region_->data() + kGuard + 4096, in.data(), in.size()), 0);
  auto r = transport_->Submit({{Op::kRead, 5, 4096, out.data(), out.size()}});
  ASSERT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_EQ(in, out);
  EXPECT_TRUE(GuardsIntact());
}

// Each slice is one request on the wire: slices longer than the server's bound are refused, and
// MC_SLICE_SIZE's value is the size that is sent.
TEST_F(TcpTransportTest, TheSliceSizeIsTheRequestSizeOnTheWire) {
  std::string ep = "127.0.0.1:" + std::to_string(server_->port());
  auto resolve = [ep](SegmentId) -> std::optional<std::string> { return ep; };
  std::vector<uint8_t> in(10 << 20, 0x5A);
  TcpTransport::Options big;
  big.slice_size = 8 << 20;  // over the fixture server's 4 MiB bound
  auto refused = TcpTransport(resolve, big).Submit({{Op::kWrite, 5, 0, in.data(), in.size()}});
  EXPECT_FALSE(refused[0].ok());
  EXPECT_TRUE(GuardsIntact());
  auto env = TcpTransport::Options::WithSliceSize(0, "2MB");
  ASSERT_TRUE(env.ok());
  auto w = TcpTransport(resolve, *env).Submit({{Op::kWrite, 5, 0, in.data(), in.size()}});
  ASSERT_TRUE(w[0].ok()) << w[0].ToString();
  EXPECT_EQ(std::memcmp(region_->data() + kGuard, in.data(), in.size()), 0);
}

TEST(TcpTransportOptionsTest, SliceSizeComesFromTheConfigElseMcSliceSize) {
  using O = TcpTransport::Options;
  EXPECT_EQ(O::WithSliceSize(0, "")->slice_size, 64u << 10);
  EXPECT_EQ(O::WithSliceSize(0, "1048576")->slice_size, 1u << 20);
  EXPECT_EQ(O::WithSliceSize(0, "16MB")->slice_size, 16u << 20);
  EXPECT_EQ(O::WithSliceSize(128 << 10, "1MB")->slice_size, 128u << 10);  // the config wins
  // A bad variable keeps the default; a bad configured size is an error.
  for (const char* bad : {"abc", "-1", "1", "1GB", "0"}) EXPECT_EQ(O::WithSliceSize(0, bad)->slice_size, 64u << 10) << bad;
  EXPECT_EQ(O::WithSliceSize(100, "").status().code(), Code::kInvalidParams);
  EXPECT_EQ(O::WithSliceSize(O::kMaxSlice + 1, "").status().code(), Code::kInvalidParams);
  EXPECT_EQ(O::WithSliceSize(O::kMaxSlice, "")->slice_size, O::kMaxSlice);
}

// A batch of many small requests is pipelined on each connection; the server answers those that
// are already waiting together (and in several sends past its answer buffer's 256 entries).
TEST_F(TcpTransportTest, ManySmallRequestsInOneBatchAreAnsweredInOrder) {
  constexpr size_t kN = 600, kLen = 1000;
  std::vector<std::vector<uint8_t>> in(kN, std::vector<uint8_t>(kLen)), out(kN, std::vector<uint8_t>(kLen));
  std::vector<TransferRequest> writes, reads;
  for (size_t i = 0; i < kN; ++i) {
    for (size_t j = 0; j < kLen; ++j) in[i][j] = static_cast<uint8_t>(i * 7 + j);
    writes.push_back({Op::kWrite, 5, i * 1024, in[i].data(), kLen});
    reads.push_back({Op::kRead, 5, i * 1024, out[i].data(), kLen});
  }
  for (const auto& st : transport_->Submit(writes)) ASSERT_TRUE(st.ok()) << st.ToString();
  for (const auto& st : transport_->Submit(reads)) ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(in, out);
  EXPECT_TRUE(GuardsIntact());
}

TEST_F(TcpTransportTest, OutOfBoundsAndForeignSegmentsAreRefused) {
  std::vector<uint8_t> buf(8192, 0x11);
  auto res = transport_->Submit({{Op::kWrite, 5, kSeg - 100, buf.data(), 200}});
  EXPECT_EQ(res[0].code(), Code::kInvalidParams);
  res = transport_->Submit({{Op::kRead, 5, ~0ULL - 10, buf.data(), 100}});
  EXPECT_EQ(res[0].code(), Code::kInvalidParams);
  res = transport_->Submit({{Op::kWrite, 6, 0, buf.data(), 100}});
  EXPECT_EQ(res[0].code(), Code::kSegmentNotFound);
  res = transport_->Submit({{Op::kRead, 7, 0, buf.data(), 100}});
  EXPECT_EQ(res[0].code(), Code::kTransferFail);
  EXPECT_TRUE(GuardsIntact());
  EXPECT_EQ(region_->data()[kGuard + kSeg - 100], 0xEE);  // nothing of the refused write landed
  EXPECT_GE(server_->refused_requests(), 3u);
  // The server goes on serving. (Separate batches: the requests of one batch run concurrently, over
  // several connections, so a read in the same batch as a write of its bytes could see either.)
  std::vector<uint8_t> back(10);
  EXPECT_TRUE(transport_->Submit({{Op::kWrite, 5, 0, buf.data(), buf.size()}})[0].ok());
  EXPECT_TRUE(transport_->Submit({{Op::kRead, 5, 0, back.data(), back.size()}})[0].ok());
  EXPECT_EQ(back, std::vector<uint8_t>(10, 0x11));
}

TEST_F(TcpTransportTest, MalformedRequestClosesOnlyItsConnection) {
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address("127.0.0.1"), server_->port()});
  std::string junk(64, 'j');
  asio::write(sock, asio::buffer(junk));
  char c;
  asio::error_code ec;
  sock.read_some(asio::buffer(&c, 1), ec);
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset);
  std::vector<uint8_t> buf(100, 1);
  EXPECT_TRUE(transport_->Submit({{Op::kWrite, 5, 0, buf.data(), buf.size()}})[0].ok());
}

TEST_F(TcpTransportTest, AStoppedServerFailsTransfersCleanly) {
  std::vector<uint8_t> buf(100, 1);
  ASSERT_TRUE(transport_->Submit({{Op::kWrite, 5, 0, buf.data(), buf.size()}})[0].ok());
  server_->Stop();
  auto r = transport_->Submit({{Op::kRead, 5, 0, buf.data(), buf.size()}});
  EXPECT_EQ(r[0].code(), Code::kTransferFail);
}

// Out of file descriptors, a failed accept is retried after a pause, not at once in a loop; a
// connection already open keeps transferring, and a queued one is served once descriptors are
// free again.
TEST_F(TcpTransportTest, AcceptFailuresPauseAndRecover) {
  if (test_util::kSanitizerNeedsFreeDescriptors) GTEST_SKIP() << "the ASan+UBSan runtime needs free descriptors";
  test_util::CallTimes failures;
  TransferServer::Options o;
  o.address = "127.0.0.1";
  o.on_accept_failed = failures.Recorder();
  TransferServer server(served_, o);
  ASSERT_TRUE(server.Start().ok());
  std::string ep = "127.0.0.1:" + std::to_string(server.port());
  auto resolve = [ep](SegmentId) -> std::optional<std::string> { return ep; };
  TcpTransport before(resolve, {});
  std::vector<uint8_t> buf(4096, 0x5A), back(4096);
  ASSERT_TRUE(before.Submit({{Op::kWrite, 5, 0, buf.data(), buf.size()}})[0].ok());  // its connection stays pooled

  auto exhausted = test_util::ExhaustAndExpectAcceptPauses(server.port(), failures);
  ASSERT_NE(exhausted, nullptr);
  auto r = before.Submit({{Op::kRead, 5, 0, back.data(), back.size()}});
  ASSERT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_EQ(back, buf);
  exhausted.reset();  // descriptors and the limit back
  TcpTransport after(resolve, {});
  std::fill(back.begin(), back.end(), 0);
  r = after.Submit({{Op::kRead, 5, 0, back.data(), back.size()}});
  ASSERT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_EQ(back, buf);
}

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
  WireRequest{kOpReadObject, 5, kMaxObjectKey + 1, 10}.Encode(hdr);
  asio::write(sock, asio::buffer(hdr));
  char c;
  asio::error_code ec;
  sock.read_some(asio::buffer(&c, 1), ec);
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset);
  EXPECT_TRUE(transport_->Submit({{Op::kReadObject, 5, 0, out.data(), out.size(), &key}})[0].ok());
  EXPECT_GE(server_->refused_requests(), 1u);
}

}  // namespace
}  // namespace yb::tcp
