// TcpTransport against a real transfer server on loopback. Timeouts that our code decides are on a
// manual clock; the few checks on the real clock are of bounds the kernel enforces (a connect to a
// peer that never answers, a read from one that stops sending): they measure that a transfer ends
// by its deadline, and the loops that wait for a server thread poll a condition under a deadline
// rather than sleep.
#include "transfer/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <asio.hpp>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "common/test_util.h"
#include "transfer/tcp/tcp_test_fixture.h"
#include "transfer/tcp/transfer_server.h"
#include "transfer/tcp/wire.h"
#include "yuebing/client.h"

namespace yb::tcp {
namespace {

using namespace std::chrono_literals;

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

// A checksum sink given with the requests is fed each chunk as it is sent or lands, whatever
// connection carries it; a request cut mid-chunk (a caller's two buffers) leaves that chunk to
// Finish(), which still gives the object's checksum.
TEST_F(TcpTransportTest, ChecksumsAreComputedAsTheBytesMove) {
  std::vector<uint8_t> in((1 << 20) + 123), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 13 + 1);
  const uint64_t want = ObjectChecksum(in.data(), in.size());
  const std::vector<Slice> whole_in{{in.data(), in.size()}}, whole_out{{out.data(), out.size()}};
  ChecksumSink sent(in.size());
  ASSERT_TRUE(transport_->Submit({{Op::kWrite, 5, 8192, in.data(), in.size(), nullptr, {}, &sent, 0}})[0].ok());
  EXPECT_TRUE(sent.complete());
  EXPECT_EQ(sent.Finish(whole_in), want);
  ChecksumSink got(in.size());
  ASSERT_TRUE(transport_->Submit({{Op::kRead, 5, 8192, out.data(), out.size(), nullptr, {}, &got, 0}})[0].ok());
  EXPECT_TRUE(got.complete());
  EXPECT_EQ(got.Finish(whole_out), want);
  EXPECT_EQ(in, out);
  const uint64_t cut = 100000;
  ChecksumSink split(in.size());
  auto r =
      transport_->Submit({{Op::kRead, 5, 8192, out.data(), cut, nullptr, {}, &split, 0},
                          {Op::kRead, 5, 8192 + cut, out.data() + cut, in.size() - cut, nullptr, {}, &split, cut}});
  ASSERT_TRUE(r[0].ok() && r[1].ok());
  EXPECT_FALSE(split.complete());
  EXPECT_EQ(split.Finish(whole_out), want);
}

// A read's landing observer is told of every byte once, after it landed, in whole checksum chunks
// where the request allows: what lets a mover copy them on to a GPU while the rest arrives.
TEST_F(TcpTransportTest, ALandingObserverSeesEveryByteOnceAfterItLanded) {
  std::vector<uint8_t> in((1 << 20) + 777), out(in.size());
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<uint8_t>(i * 7 + 3);
  ASSERT_TRUE(transport_->Submit({{Op::kWrite, 5, 4096, in.data(), in.size()}})[0].ok());
  struct Recorder : LandingObserver {
    void Landed(uint64_t pos, const void* p, uint64_t n) override {
      std::lock_guard lock(mu);
      seen.emplace_back(pos, std::vector<uint8_t>(static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n));
    }
    std::mutex mu;
    std::vector<std::pair<uint64_t, std::vector<uint8_t>>> seen;
  } recorder;
  TransferRequest r{Op::kRead, 5, 4096, out.data(), out.size(), nullptr, {}, nullptr, 1000};
  r.landed = &recorder;
  ASSERT_TRUE(transport_->Submit({r})[0].ok());
  std::sort(recorder.seen.begin(), recorder.seen.end());
  uint64_t next = 1000;
  for (const auto& [pos, bytes] : recorder.seen) {
    ASSERT_EQ(pos, next);  // no gap, no byte twice
    EXPECT_LE(bytes.size(), kChecksumChunk);
    EXPECT_EQ(std::memcmp(bytes.data(), in.data() + (pos - 1000), bytes.size()), 0);
    next += bytes.size();
  }
  EXPECT_EQ(next, 1000 + in.size());
}

// Each slice is one request on the wire: slices longer than the server's bound are refused, and
// MC_SLICE_SIZE's value is the size that is sent.
TEST_F(TcpTransportTest, TheSliceSizeIsTheRequestSizeOnTheWire) {
  std::string ep = "127.0.0.1:" + std::to_string(server_->port());
  auto resolve = [ep](SegmentId) -> std::optional<std::string> { return ep; };
  std::vector<uint8_t> in(10 << 20, 0x5A);
  TcpTransport::Options big;
  big.slice_size = 8 << 20;  // over the fixture server's 4 MiB bound
  auto refused =
      Granting(std::make_unique<TcpTransport>(resolve, big)).Submit({{Op::kWrite, 5, 0, in.data(), in.size()}});
  EXPECT_FALSE(refused[0].ok());
  EXPECT_TRUE(GuardsIntact());
  auto env = TcpTransport::Options::WithSliceSize(0, "2MB");
  ASSERT_TRUE(env.ok());
  auto w = Granting(std::make_unique<TcpTransport>(resolve, *env)).Submit({{Op::kWrite, 5, 0, in.data(), in.size()}});
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
  for (const char* bad : {"abc", "-1", "1", "1GB", "0"})
    EXPECT_EQ(O::WithSliceSize(0, bad)->slice_size, 64u << 10) << bad;
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

// The transfer server moves bytes only under a grant minted with the segment's key for that
// access and a range covering the request, unexpired (issue 22 item 3). Everything else is refused,
// counted, and leaves the segment as it was.
TEST_F(TcpTransportTest, RequestsWithoutAValidGrantAreRefusedAndTouchNoByte) {
  std::vector<uint8_t> good(1000, 0x11), evil(1000, 0x66), back(1000, 0);
  ASSERT_TRUE(transport_->Submit({{Op::kWrite, 5, 0, good.data(), good.size()}})[0].ok());
  const TransferRequest write{Op::kWrite, 5, 0, evil.data(), evil.size()};
  const TransferRequest read{Op::kRead, 5, 0, back.data(), back.size()};
  auto with = [](TransferRequest r, Grant g) {
    r.grant = g;
    return r;
  };
  Grant forged = GrantFor(write);
  forged.mac[3] ^= 0x40;
  Grant widened = GrantFor(with(write, {}));
  widened.length = kSeg;  // a grant's fields are under its mac
  const std::vector<TransferRequest> refused = {
      write,                                                                                // none
      with(write, GrantFor(read)),                                                          // a read's
      with(write, MintGrant(kKey, 5, GrantAccess::kWrite, 0, 100, WallMs() + 60'000)),      // too short
      with(write, MintGrant(kKey, 5, GrantAccess::kWrite, 4096, 1000, WallMs() + 60'000)),  // elsewhere
      with(write, MintGrant(kKey, 6, GrantAccess::kWrite, 0, 1000, WallMs() + 60'000)),     // another segment's
      with(write, GrantFor(write, -1)),                                                     // expired
      with(write, forged),
      with(write, widened),
      with(write, MintGrant(std::string(kGrantKeySize, 'X'), 5, GrantAccess::kWrite, 0, 1000, WallMs() + 60'000)),
  };
  for (size_t i = 0; i < refused.size(); ++i) {
    auto st = raw_->Submit({refused[i]})[0];
    EXPECT_EQ(st.code(), Code::kIllegalClient) << i << ": " << st.ToString();
  }
  EXPECT_EQ(raw_->Submit({read})[0].code(), Code::kIllegalClient);
  EXPECT_EQ(raw_->Submit({with(read, GrantFor(write))})[0].code(), Code::kIllegalClient);
  EXPECT_EQ(server_->stats().refused_grants, refused.size() + 2);
  // Not a byte of the refused writes landed; a grant serves any part of its range.
  const Grant whole = MintGrant(kKey, 5, GrantAccess::kRead, 0, 4096, WallMs() + 60'000);
  ASSERT_TRUE(raw_->Submit({with(read, whole)})[0].ok());
  EXPECT_EQ(back, good);
  std::vector<uint8_t> part(10);
  EXPECT_TRUE(raw_->Submit({{Op::kRead, 5, 4086, part.data(), 10, nullptr, whole}})[0].ok());
  EXPECT_EQ(raw_->Submit({{Op::kRead, 5, 4087, part.data(), 10, nullptr, whole}})[0].code(), Code::kIllegalClient);
  EXPECT_TRUE(GuardsIntact());
}

// An SSD tier read's grant names the object's key: it reads that object only.
TEST_F(TcpTransportTest, AnObjectReadNeedsTheGrantOfItsKey) {
  struct Disk final : ObjectReader {
    Result<uint64_t> ReadObject(const std::string&, void* buffer, uint64_t size) override {
      std::memset(buffer, 'v', size);
      return size;
    }
  };
  served_->AddDisk(5, std::make_shared<Disk>());
  std::string key = "tenant/a", other = "tenant/b", out(100, '\0');
  TransferRequest r{Op::kReadObject, 5, 0, out.data(), out.size(), &key};
  TransferRequest wrong = r;
  wrong.key = &other;
  r.grant = GrantFor(r);
  wrong.grant = r.grant;  // a's grant, used for b
  EXPECT_TRUE(raw_->Submit({r})[0].ok());
  EXPECT_EQ(out, std::string(100, 'v'));
  EXPECT_EQ(raw_->Submit({wrong})[0].code(), Code::kIllegalClient);
  r.grant = {};
  EXPECT_EQ(raw_->Submit({r})[0].code(), Code::kIllegalClient);
  EXPECT_EQ(server_->stats().refused_grants, 2u);
}

TEST_F(TcpTransportTest, ServedRequestsAndTheirBytesAreCounted) {
  std::vector<uint8_t> buf(300 << 10, 0x21);
  ASSERT_TRUE(transport_->Submit({{Op::kWrite, 5, 0, buf.data(), buf.size()}})[0].ok());  // two slices
  // Two reads in one batch run concurrently: each into its own part of the buffer.
  auto reads = transport_->Submit({{Op::kRead, 5, 0, buf.data(), 1000}, {Op::kRead, 5, 4096, buf.data() + 2000, 10}});
  ASSERT_TRUE(reads[0].ok() && reads[1].ok());
  EXPECT_EQ(transport_->Submit({{Op::kRead, 5, kSeg, buf.data(), 1}})[0].code(), Code::kInvalidParams);
  TransferServerStats s = server_->stats();
  EXPECT_EQ(s.writes, 2u);
  EXPECT_EQ(s.written_bytes, buf.size());
  EXPECT_EQ(s.reads, 2u);
  EXPECT_EQ(s.read_bytes, 1010u);
  EXPECT_EQ(s.refused_requests, 1u);
  EXPECT_EQ(s.disk_reads, 0u);
  EXPECT_GE(s.open_connections, 1u);  // pooled by the transport
  EXPECT_EQ(s.refused_connections, 0u);
}

TEST_F(TcpTransportTest, MalformedRequestClosesOnlyItsConnection) {
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address("127.0.0.1"), server_->port()});
  std::string junk(kRequestSize, 'j');  // a whole header, with a bad magic
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
  auto server = StartServer([&](TransferServer::Options& o) { o.on_accept_failed = failures.Recorder(); });
  std::string ep = "127.0.0.1:" + std::to_string(server->port());
  auto resolve = [ep](SegmentId) -> std::optional<std::string> { return ep; };
  TcpTransport before(resolve, {});
  std::vector<uint8_t> buf(4096, 0x5A), back(4096);
  ASSERT_TRUE(
      Grants{before}.Submit({{Op::kWrite, 5, 0, buf.data(), buf.size()}})[0].ok());  // its connection stays pooled

  auto exhausted = test_util::ExhaustAndExpectAcceptPauses(server->port(), failures);
  ASSERT_NE(exhausted, nullptr);
  auto r = Grants{before}.Submit({{Op::kRead, 5, 0, back.data(), back.size()}});
  ASSERT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_EQ(back, buf);
  exhausted.reset();  // descriptors and the limit back
  TcpTransport after(resolve, {});
  std::fill(back.begin(), back.end(), 0);
  r = Grants{after}.Submit({{Op::kRead, 5, 0, back.data(), back.size()}});
  ASSERT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_EQ(back, buf);
}

size_t ThreadsOfThisProcess() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Every client of a cluster keeps pooled connections to every other: they stay open, mostly idle,
// and cost no thread each. (The server used to run a thread per connection and to refuse any past
// the 256th.)
TEST_F(TcpTransportTest, HundredsOfOpenConnectionsAreServedByAFewThreads) {
  const size_t threads_before = ThreadsOfThisProcess();
  std::vector<std::unique_ptr<RawConn>> conns;
  for (int i = 0; i < 300; ++i) {
    conns.push_back(std::make_unique<RawConn>(server_->port()));
    ASSERT_TRUE(conns.back()->Read(0, 8).has_value()) << "connection " << i;
  }
  EXPECT_EQ(server_->open_connections(), 300u);
  EXPECT_LT(ThreadsOfThisProcess(), threads_before + 5);
  // The first ones, idle since, still answer, and so does a transport's own connection.
  std::memset(region_->data() + kGuard + 100, 0x42, 16);
  EXPECT_EQ(conns.front()->Read(100, 16), std::string(16, '\x42'));
  EXPECT_EQ(conns[150]->Read(100, 16), std::string(16, '\x42'));
  std::vector<uint8_t> back(16);
  ASSERT_TRUE(transport_->Submit({{Op::kRead, 5, 100, back.data(), back.size()}})[0].ok());
  EXPECT_EQ(back, std::vector<uint8_t>(16, 0x42));
}

// A storage node restarted on the same address: the connections a client pooled to the old process
// are dead. The next transfer still succeeds, on a new connection, and so do the ones after it.
TEST_F(TcpTransportTest, ConnectionsPooledToARestartedServerAreReplaced) {
  const uint16_t port = server_->port();
  std::vector<uint8_t> buf(300 << 10, 0x77), back(buf.size());
  ASSERT_TRUE(transport_->Submit({{Op::kWrite, 5, 0, buf.data(), buf.size()}})[0].ok());  // pools two connections
  server_->Stop();
  server_ = StartServer([port](TransferServer::Options& o) { o.port = port; });
  ASSERT_EQ(server_->port(), port);
  for (int i = 0; i < 3; ++i) {
    auto r = transport_->Submit({{Op::kRead, 5, 0, back.data(), back.size()}});
    ASSERT_TRUE(r[0].ok()) << "transfer " << i << ": " << r[0].ToString();
    EXPECT_EQ(back, buf);
  }
}

// A peer that accepts but never answers, or never reads: the transfer fails after the I/O timeout
// instead of waiting for ever.
TEST_F(TcpTransportTest, APeerThatStopsAnsweringFailsTheTransfer) {
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});  // connects, never accepted
  std::string ep = "127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  ManualClock clock;
  TcpTransport::Options o;
  o.io_timeout = std::chrono::milliseconds(200);
  o.clock = &clock;
  TcpTransport transport([ep](SegmentId) -> std::optional<std::string> { return ep; }, o);
  std::vector<uint8_t> buf(64 << 20, 1);
  auto r = Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), 4096}});
  EXPECT_EQ(r[0].code(), Code::kTransferFail) << r[0].ToString();
  EXPECT_NE(r[0].message().find("timed out"), std::string::npos) << r[0].ToString();
  // A timeout counts as a failed connection attempt: the endpoint waits out a pause.
  r = Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), 4096}});
  EXPECT_NE(r[0].message().find("unreachable"), std::string::npos) << r[0].ToString();
  clock.Advance(100);
  r = Grants{transport}.Submit({{Op::kWrite, 5, 0, buf.data(), buf.size()}});  // more than the socket buffers take
  EXPECT_EQ(r[0].code(), Code::kTransferFail) << r[0].ToString();
  EXPECT_NE(r[0].message().find("sending to"), std::string::npos) << r[0].ToString();
}

// The wait for a silent peer follows what was asked of it: a floor, plus the bytes at a floor
// bandwidth, and io_timeout at most.
TEST(TcpTransportOptionsTest, TheIoBudgetGrowsWithTheBytesUpToTheTimeout) {
  TcpTransport::Options o;
  o.io_floor = std::chrono::milliseconds(2000);
  o.io_floor_bandwidth = 64ULL << 20;
  o.io_timeout = std::chrono::milliseconds(30000);
  EXPECT_EQ(o.IoBudget(0).count(), 2000);
  EXPECT_EQ(o.IoBudget(64ULL << 20).count(), 3000);
  EXPECT_EQ(o.IoBudget(32ULL << 20).count(), 2500);
  EXPECT_EQ(o.IoBudget(64ULL << 30).count(), 30000);
}

// A peer that stops answering (a SIGSTOPped holder: its kernel still acknowledges) costs a small
// read its budget, not the 30 s io_timeout, and is counted.
TEST_F(TcpTransportTest, ASilentPeerCostsASmallReadItsBudgetNotTheTimeout) {
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  std::string ep = "127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  TcpTransport::Options o;
  o.io_floor = std::chrono::milliseconds(300);
  TcpTransport transport([ep](SegmentId) -> std::optional<std::string> { return ep; }, o);
  std::vector<uint8_t> buf(4096);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), buf.size()}});
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r[0].code(), Code::kTransferFail) << r[0].ToString();
  EXPECT_LT(waited, std::chrono::seconds(10));  // the io_timeout is 30 s
  EXPECT_EQ(transport.timeouts(), 1u);
}

// A host that drops connection attempts (here: a listener whose queue is full, so the kernel drops
// the SYNs) fails the transfer after the timeout, not after the kernel's two minutes of retries.
TEST_F(TcpTransportTest, AConnectionThatIsNeverAcceptedFailsAfterTheTimeout) {
  int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  ASSERT_EQ(::listen(l, 0), 0);
  socklen_t len = sizeof(a);
  ::getsockname(l, reinterpret_cast<sockaddr*>(&a), &len);
  const uint16_t port = ntohs(a.sin_port);
  std::vector<int> fillers;  // fill the accept queue (nothing accepts)
  for (int i = 0; i < 4; ++i) {
    int f = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    ::connect(f, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    fillers.push_back(f);
  }
  TcpTransport::Options o;
  o.connect_timeout = std::chrono::milliseconds(300);
  std::string ep = "127.0.0.1:" + std::to_string(port);
  TcpTransport transport([ep](SegmentId) -> std::optional<std::string> { return ep; }, o);
  std::vector<uint8_t> buf(4096);
  const auto t0 = std::chrono::steady_clock::now();
  auto r = Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), buf.size()}});
  EXPECT_EQ(r[0].code(), Code::kTransferFail) << r[0].ToString();
  EXPECT_NE(r[0].message().find("cannot connect"), std::string::npos) << r[0].ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));  // not the kernel's ~127 s
  for (int f : fillers) ::close(f);
  ::close(l);
}

// A transfer server that went away: after a failed connection attempt its requests fail at once,
// with no attempt, for a pause that doubles while it stays away; once it is back, the first request
// after the pause reaches it, and the pauses start over.
TEST_F(TcpTransportTest, AnUnreachableServerIsNotTriedAgainBeforeItsPause) {
  ManualClock clock;
  const uint16_t port = server_->port();
  auto stopped = StopServer(clock);
  TcpTransport& transport = *stopped;
  std::vector<uint8_t> buf(4096);
  auto read = [&] { return Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), buf.size()}})[0]; };
  auto says = [](const Status& st, const std::string& what) {
    return st.code() == Code::kTransferFail && st.message().find(what) != std::string::npos;
  };
  Status st = read();
  EXPECT_TRUE(says(st, "cannot connect")) << st.ToString();
  st = read();
  EXPECT_TRUE(says(st, "unreachable")) << st.ToString();
  EXPECT_TRUE(says(st, "1 failed connection attempts in a row, the next in 100 ms")) << st.ToString();
  server_ = StartServer([port](TransferServer::Options& so) { so.port = port; });
  ASSERT_EQ(server_->port(), port);
  clock.Advance(99);
  EXPECT_TRUE(says(read(), "the next in 1 ms"));  // back, but its pause is not over
  clock.Advance(1);
  st = read();
  EXPECT_TRUE(st.ok()) << st.ToString();

  server_->Stop();  // away again (the pooled connection fails, then a new one cannot be made)
  EXPECT_TRUE(says(read(), "cannot connect"));
  EXPECT_TRUE(says(read(), "1 failed connection attempts in a row, the next in 100 ms"));
  clock.Advance(100);
  EXPECT_TRUE(says(read(), "cannot connect"));
  EXPECT_TRUE(says(read(), "2 failed connection attempts in a row, the next in 200 ms"));
  for (int i = 0; i < 6; ++i) {
    clock.Advance(2000);
    EXPECT_TRUE(says(read(), "cannot connect"));
  }
  EXPECT_TRUE(says(read(), "8 failed connection attempts in a row, the next in 2000 ms"));  // the cap
}

// What a client reports to the master: a server it cannot connect to is unreachable until a
// probe (made in the background, not before the pause) reaches it again; the probe's connection
// is pooled for the next transfer.
TEST_F(TcpTransportTest, AProbeTellsWhenAnUnreachableServerIsBack) {
  ManualClock clock;
  const uint16_t port = server_->port();
  auto stopped = StopServer(clock);
  TcpTransport& transport = *stopped;
  EXPECT_FALSE(transport.Unreachable(5));
  std::vector<uint8_t> buf(4096);
  EXPECT_FALSE(Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), buf.size()}})[0].ok());
  EXPECT_TRUE(transport.Unreachable(5));
  EXPECT_FALSE(transport.Unreachable(7));  // a segment it has no endpoint for
  server_ = StartServer([port](TransferServer::Options& so) { so.port = port; });
  ASSERT_EQ(server_->port(), port);
  transport.Probe(5);  // within the pause: no attempt
  EXPECT_TRUE(transport.Unreachable(5));
  clock.Advance(100);
  transport.Probe(5);
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while ((transport.Unreachable(5) || transport.idle_connections() == 0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();
  }
  EXPECT_FALSE(transport.Unreachable(5));
  EXPECT_EQ(transport.idle_connections(), 1u);
  EXPECT_TRUE(Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), buf.size()}})[0].ok());
}

// Pooled connections unused for max_idle are closed, including those to an endpoint that is never
// asked for again (a node that left).
// A peer that sends a write's header and part of its payload and stops is closed after the stall
// timeout; an idle connection stays open.
TEST_F(TcpTransportTest, APeerStalledHalfwayThroughAWriteIsClosed) {
  auto server = StartServer([](TransferServer::Options& o) { o.stall_timeout_ms = 100; });
  RawConn idle(server->port());
  RawConn half(server->port());
  half.Send(WireRequest{kOpWrite, 5, 0, 1000, {}}, std::string(100, 'w'));  // 900 bytes never come
  EXPECT_FALSE(half.Answer().has_value());                                  // closed
  EXPECT_EQ(server->stalled_closed(), 1u);
  idle.Send(WireRequest{kOpWrite, 5, 0, 10, {}}, std::string(10, 'i'));
  auto a = idle.Answer();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->first, Code::kOk);
}

// A write whose writer stalls past its grant (cut off or paused, its Put revoked meanwhile and its
// range fenced by the master only until the grant lapses) lands not one byte more once the grant
// has lapsed: the rest of its payload would overwrite whatever the range holds by then.
TEST_F(TcpTransportTest, AWriteWhoseGrantLapsesHalfwayLandsNoMoreBytes) {
  ManualClock wall(WallMs());
  auto server = StartServer([&](TransferServer::Options& o) { o.wall_clock = &wall; });
  RawConn late(server->port());
  const Grant grant = MintGrant(kKey, 5, GrantAccess::kWrite, 0, 1000, wall.NowMs() + 1000);
  late.Send(WireRequest{kOpWrite, 5, 0, 1000, grant}, std::string(100, 'w'));  // 900 bytes to come
  uint8_t* seg = region_->data() + kGuard;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seg[99] != 'w' && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_EQ(seg[99], 'w');  // the first part landed while the grant held
  wall.Advance(1001);
  late.SendBytes(std::string(900, 'L'));
  auto a = late.Answer();
  ASSERT_TRUE(a.has_value());
  for (int i = 100; i < 1000; ++i) ASSERT_EQ(seg[i], 0xEE) << i;
  ASSERT_EQ(a->first, Code::kIllegalClient);
  EXPECT_FALSE(late.Answer().has_value());  // and closed
}

// A copy's maker (re-replication, tasks) reads into a range of its own segment that the master gives
// up once the copy's source grant lapses: past that, no byte lands (the maker was paused or slow).
TEST_F(TcpTransportTest, ACopyLandsNoByteAfterItsSourceGrantLapsed) {
  std::memset(region_->data() + kGuard, 'S', 4096);
  ManualClock wall(WallMs());
  TcpTransport::Options o;
  o.wall_clock = &wall;
  const std::string ep = "127.0.0.1:" + std::to_string(server_->port());
  TcpTransport maker([ep](SegmentId) -> std::optional<std::string> { return ep; }, o);
  std::vector<uint8_t> target(4096, 'T');
  TransferRequest copy{Op::kRead, 5, 0, target.data(), 4096};
  copy.grant = MintGrant(kKey, 5, GrantAccess::kRead, 0, 4096, WallMs() + 60'000);
  copy.land_within_grant = true;
  wall.Set(copy.grant.expires_ms + 1);  // the maker's clock is past it; the server's is not
  auto r = maker.Submit({copy});
  EXPECT_EQ(r[0].code(), Code::kTransferFail);
  EXPECT_EQ(target, std::vector<uint8_t>(4096, 'T'));
  wall.Set(copy.grant.expires_ms - 1);
  r = maker.Submit({copy});
  ASSERT_TRUE(r[0].ok()) << r[0].ToString();
  EXPECT_EQ(target, std::vector<uint8_t>(4096, 'S'));
}

TEST_F(TcpTransportTest, PooledConnectionsUnusedForMaxIdleAreClosed) {
  ManualClock clock;
  auto other = StartServer([](TransferServer::Options&) {});
  const std::string first = "127.0.0.1:" + std::to_string(server_->port());
  const std::string second = "127.0.0.1:" + std::to_string(other->port());
  TcpTransport::Options o;
  o.max_idle = std::chrono::seconds(60);
  o.clock = &clock;
  TcpTransport transport([&](SegmentId s) -> std::optional<std::string> { return s == 5 ? first : second; }, o);
  std::vector<uint8_t> buf(4096);
  ASSERT_TRUE(Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), buf.size()}})[0].ok());
  EXPECT_EQ(transport.idle_connections(), 1u);
  clock.AdvanceSec(30);
  ASSERT_TRUE(Grants{transport}.Submit({{Op::kRead, 7, 0, buf.data(), buf.size()}})[0].code() ==
              Code::kSegmentNotFound);
  EXPECT_EQ(transport.idle_connections(), 2u);  // 30 s idle: kept
  clock.AdvanceSec(31);
  ASSERT_TRUE(Grants{transport}.Submit({{Op::kRead, 7, 0, buf.data(), buf.size()}})[0].code() ==
              Code::kSegmentNotFound);
  EXPECT_EQ(transport.idle_connections(), 1u);  // the first endpoint's, idle 61 s, is closed
  // The first endpoint is served again on a new connection.
  ASSERT_TRUE(Grants{transport}.Submit({{Op::kRead, 5, 0, buf.data(), buf.size()}})[0].ok());
  EXPECT_EQ(transport.idle_connections(), 2u);
}

// Past max_connections a new connection is closed at once; the open ones go on.
TEST_F(TcpTransportTest, ConnectionsPastTheLimitAreClosedAtOnce) {
  auto server = StartServer([](TransferServer::Options& o) { o.max_connections = 3; });
  std::vector<std::unique_ptr<RawConn>> conns;
  for (int i = 0; i < 3; ++i) {
    conns.push_back(std::make_unique<RawConn>(server->port()));
    ASSERT_TRUE(conns.back()->Read(0, 8).has_value());
  }
  RawConn extra(server->port());
  extra.Send({kOpRead, 5, 0, 8, {}});
  EXPECT_FALSE(extra.Answer().has_value());
  EXPECT_EQ(server->refused_connections(), 1u);
  EXPECT_TRUE(conns[0]->Read(0, 8).has_value());
  conns.pop_back();  // one closes: a new one is served again
  std::vector<uint8_t> back(8);
  TcpTransport after(
      [&](SegmentId) -> std::optional<std::string> { return "127.0.0.1:" + std::to_string(server->port()); }, {});
  bool served = false;
  for (int attempt = 0; attempt < 1000 && !served; ++attempt) {  // until the server has seen the close
    served = Grants{after}.Submit({{Op::kRead, 5, 0, back.data(), back.size()}})[0].ok();
    if (!served) std::this_thread::yield();
  }
  EXPECT_TRUE(served);
}

// One loop serves every connection here: a peer that stops in the middle of a write's payload, or
// one that sends requests and never reads the answers, holds up no one else.
TEST_F(TcpTransportTest, AStalledPeerHoldsUpNoOtherConnection) {
  auto server = StartServer([](TransferServer::Options& o) { o.threads = 1; });
  RawConn stalled(server->port());
  stalled.Send({kOpWrite, 5, 1 << 20, 1 << 20, {}}, std::string(100, 'p'));  // 100 bytes of 1 MiB
  RawConn deaf(server->port());                                              // asks for 64 MiB and reads nothing
  for (int i = 0; i < 16; ++i) deaf.Send({kOpRead, 5, 0, 4 << 20, {}});
  RawConn other(server->port());
  std::memset(region_->data() + kGuard, 0x24, 64);
  EXPECT_EQ(other.Read(0, 64), std::string(64, '\x24'));
  // The stalled write goes on where it stopped.
  stalled.SendBytes(std::string((1 << 20) - 100, 'p'));
  auto a = stalled.Answer();
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->first, Code::kOk);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(region_->data() + kGuard + (1 << 20)), 1 << 20),
            std::string(1 << 20, 'p'));
  EXPECT_TRUE(GuardsIntact());
}

}  // namespace
}  // namespace yb::tcp
