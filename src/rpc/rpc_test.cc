// RpcChannel and RpcServer over real loopback sockets. The deadline tests time calls on the real
// clock on purpose: what they check is that a call ends by its deadline when the kernel, not our
// code, holds it (a listener that accepts and never answers, a peer that stops reading, a connect
// that hangs). A manual clock cannot make a blocked poll return, so these bound real waits from
// both sides (at least the deadline, well under the next one) and never sleep to wait for work.
#include <gtest/gtest.h>
#include <sys/ioctl.h>

#include <asio.hpp>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "common/disk_key.h"
#include "common/segment_name.h"
#include "common/test_util.h"
#include "master/master_service.h"
#include "rpc/channel.h"
#include "rpc/master_client.h"
#include "rpc/master_server.h"
#include "rpc/server.h"

namespace yb::rpc {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<RpcServer> EchoServer(uint32_t max_body = kDefaultMaxBody) {
  RpcServer::Options o;
  o.address = "127.0.0.1";
  o.max_body = max_body;
  auto s = std::make_unique<RpcServer>(o);
  s->Register(1, [](const net::Peer&, std::string_view b, std::string& reply) {
    reply += "echo:";
    reply += b;
    return Status::OK();
  });
  s->Register(2, [](const net::Peer&, std::string_view, std::string& reply) {
    reply += "partial";  // dropped: an error reply carries only the status
    return Status(Code::kObjectNotFound, "nope");
  });
  EXPECT_TRUE(s->Start().ok());
  return s;
}

// Method 1 answers with the request body.
void RegisterPlainEcho(RpcServer& server) {
  server.Register(1, [](const net::Peer&, std::string_view b, std::string& reply) {
    reply += b;
    return Status::OK();
  });
}

// Sends raw bytes on a fresh connection and reports whether the server closed it.
bool ServerClosesAfter(uint16_t port, const std::string& bytes) {
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.connect({asio::ip::make_address("127.0.0.1"), port});
  asio::write(sock, asio::buffer(bytes));
  char buf[64];
  asio::error_code ec;
  sock.read_some(asio::buffer(buf), ec);  // returns when the server closes
  return ec == asio::error::eof || ec == asio::error::connection_reset;
}

TEST(RpcTest, EchoAndErrorsTravel) {
  auto server = EchoServer();
  RpcChannel ch("127.0.0.1", server->port());
  auto r = ch.Call(1, "hi", 2s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "echo:hi");
  auto e = ch.Call(2, "", 2s);
  EXPECT_EQ(e.code(), Code::kObjectNotFound);
  EXPECT_EQ(e.status().message(), "nope");
  EXPECT_EQ(ch.Call(99, "", 2s).code(), Code::kNotSupported);
}

TEST(RpcTest, ManyCallsInFlightFromManyThreads) {
  auto server = EchoServer();
  RpcChannel ch("127.0.0.1", server->port());
  std::vector<std::thread> ts;
  std::atomic<int> good{0};
  for (int t = 0; t < 8; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 500; ++i) {
        std::string body = std::to_string(t) + "/" + std::to_string(i);
        auto r = ch.Call(1, body, 5s);
        if (r.ok() && *r == "echo:" + body) ++good;
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(good.load(), 8 * 500);
}

// Bodies far larger than a socket buffer arrive over many reads and leave over many writes (the
// server waits for the socket to drain between them), byte for byte, in both directions.
TEST(RpcTest, LargeRequestsAndRepliesCrossWhole) {
  auto server = EchoServer();
  RpcChannel ch("127.0.0.1", server->port());
  std::mt19937 rng(5);
  for (size_t size : {size_t{1} << 20, size_t{24} << 20}) {
    std::string body(size, '\0');
    for (auto& c : body) c = static_cast<char>(rng());
    auto r = ch.Call(1, body, 30s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), body.size() + 5);
    EXPECT_TRUE(r->compare(5, std::string::npos, body) == 0) << "reply of " << size << " bytes differs";
  }
  auto small = ch.Call(1, "after", 5s);  // the connection is still in step
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(*small, "echo:after");
}

// A new connection goes to the server thread serving the fewest: with two threads, a call that
// blocks its thread on one connection leaves the next connection served by the other thread.
TEST(RpcTest, ConnectionsAreSpreadOverTheServerThreads) {
  RpcServer::Options o;
  o.address = "127.0.0.1";
  o.threads = 2;
  RpcServer server(o);
  std::mutex mu;
  std::condition_variable cv;
  bool entered = false, release = false;
  RegisterPlainEcho(server);
  server.Register(3, [&](const net::Peer&, std::string_view, std::string&) {
    std::unique_lock lock(mu);
    entered = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return Status::OK();
  });
  ASSERT_TRUE(server.Start().ok());
  RpcChannel slow("127.0.0.1", server.port());
  std::thread blocked([&] { EXPECT_TRUE(slow.Call(3, "", 10s).ok()); });
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 5s, [&] { return entered; }));
  }
  RpcChannel other("127.0.0.1", server.port());  // the second connection: the other thread
  auto r = other.Call(1, "served", 2s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  blocked.join();
  EXPECT_EQ(server.open_connections(), 2u);
}

// Past max_connections a new connection is closed before anything is read from it, and counted;
// the open one is still served.
TEST(RpcTest, ConnectionsPastTheLimitAreClosedAtOnce) {
  RpcServer::Options o;
  o.address = "127.0.0.1";
  o.max_connections = 1;
  RpcServer server(o);
  RegisterPlainEcho(server);
  ASSERT_TRUE(server.Start().ok());
  RpcChannel first("127.0.0.1", server.port());
  ASSERT_TRUE(first.Call(1, "a", 2s).ok());
  std::string frame(kHeaderSize, '\0');
  EncodeHeader(FrameHeader{1, FrameKind::kRequest, 0, 1, 1}, reinterpret_cast<uint8_t*>(frame.data()));
  frame += "b";
  EXPECT_TRUE(ServerClosesAfter(server.port(), frame));
  EXPECT_EQ(server.refused_connections(), 1u);
  EXPECT_EQ(server.malformed_frames(), 0u);
  auto r = first.Call(1, "still", 2s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "still");
}

// A peer that sends requests but does not read the replies: the server stops reading that
// connection once its unsent replies pass the bound, serves other connections meanwhile, and
// answers every request once the peer reads.
TEST(RpcTest, PeerThatDoesNotReadIsThrottledAndThenServedInFull) {
  RpcServer::Options o;
  o.address = "127.0.0.1";
  o.max_pending_reply_bytes = 64 << 10;
  test_util::CallTimes paused;
  o.on_reads_paused = paused.Recorder();
  RpcServer server(o);
  RegisterPlainEcho(server);
  ASSERT_TRUE(server.Start().ok());
  constexpr int kCalls = 8000;
  const std::string body(1024, 'r');
  asio::io_context io;
  asio::ip::tcp::socket sock(io);
  sock.open(asio::ip::tcp::v4());
  sock.set_option(asio::socket_base::receive_buffer_size(16 << 10));  // no autotuning: fills fast
  sock.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  std::thread writer([&] {
    std::string all;
    for (int i = 0; i < kCalls; ++i) all += EncodeFrame(FrameHeader{0, FrameKind::kRequest, 0, 1, uint32_t(i)}, body);
    asio::error_code ec;
    asio::write(sock, asio::buffer(all), ec);
    EXPECT_FALSE(ec) << ec.message();
  });
  // The peer reads nothing until the server has stopped reading it.
  EXPECT_EQ(paused.WaitFor(1, 10s).size(), 1u);
  EXPECT_GT(server.reads_paused(), 0u);
  RpcChannel other("127.0.0.1", server.port());
  auto r = other.Call(1, "meanwhile", 2s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  auto read_all = [&]() -> ::testing::AssertionResult {
    uint8_t h[kHeaderSize];
    std::string got(body.size(), '\0');
    for (int i = 0; i < kCalls; ++i) {
      asio::error_code ec;
      asio::read(sock, asio::buffer(h, kHeaderSize), ec);
      auto hdr = ec ? std::nullopt : DecodeHeader(h, kDefaultMaxBody);
      if (!hdr || hdr->request_id != uint32_t(i) || hdr->body_len != body.size()) {
        return ::testing::AssertionFailure() << "bad reply header at call " << i;
      }
      asio::read(sock, asio::buffer(got), ec);
      if (ec || got != body) return ::testing::AssertionFailure() << "bad reply body at call " << i;
    }
    return ::testing::AssertionSuccess();
  };
  EXPECT_TRUE(read_all());
  asio::error_code ec;
  sock.shutdown(asio::ip::tcp::socket::shutdown_both, ec);  // unblocks the writer if reading failed
  writer.join();
}

// Out of file descriptors, a failed accept is retried after a pause, not at once in a loop (the
// queued connection would make it fail again immediately); connections already open are served
// meanwhile, and queued ones are taken once descriptors are free again.
TEST(RpcTest, AcceptFailuresPauseAndRecover) {
  if (test_util::kSanitizerNeedsFreeDescriptors) GTEST_SKIP() << "the ASan+UBSan runtime needs free descriptors";
  test_util::CallTimes failures;
  RpcServer::Options o;
  o.address = "127.0.0.1";
  o.on_accept_failed = failures.Recorder();
  RpcServer server(o);
  RegisterPlainEcho(server);
  ASSERT_TRUE(server.Start().ok());
  RpcChannel open_before("127.0.0.1", server.port());
  ASSERT_TRUE(open_before.Call(1, "x", 5s).ok());

  auto exhausted = test_util::ExhaustAndExpectAcceptPauses(server.port(), failures);
  ASSERT_NE(exhausted, nullptr);
  EXPECT_TRUE(open_before.Call(1, "still served", 5s).ok());
  exhausted.reset();  // descriptors and the limit back
  RpcChannel after("127.0.0.1", server.port());
  auto r = after.Call(1, "after", 10s);  // accepted once the pause ends
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "after");
  EXPECT_GE(server.accept_failures(), 2u);
}

TEST(RpcTest, ListenerThatNeverAnswersTimesOutWithinTheDeadline) {
  asio::io_context io;
  asio::ip::tcp::acceptor acc(io, {asio::ip::make_address("127.0.0.1"), 0});
  uint16_t port = acc.local_endpoint().port();
  RpcChannel ch("127.0.0.1", port);  // the kernel accepts; nobody ever reads or replies
  auto t0 = std::chrono::steady_clock::now();
  auto r = ch.Call(1, "anyone?", 300ms);
  auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.code(), Code::kRpcTimeout);
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 2s);
}

// A host name whose lookup hangs (as with a DNS server that does not answer) costs a call its
// deadline, not the resolver's timeouts; when the lookup answers, the next call connects with it.
TEST(RpcTest, AHungNameLookupEndsTheCallAtItsDeadline) {
  auto server = EchoServer();
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
  };
  auto gate = std::make_shared<Gate>();
  RpcChannel::Options co;
  co.backoff_min = 0ms;  // try again at the next call
  co.backoff_max = 0ms;
  co.lookup = [gate](const std::string&, const std::string& port) {
    std::unique_lock l(gate->mu);
    gate->cv.wait(l, [&] { return gate->open; });
    return NameResolver::SystemLookup("127.0.0.1", port);
  };
  RpcChannel ch("master.example", server->port(), co);
  auto t0 = std::chrono::steady_clock::now();
  auto r = ch.Call(1, "x", 200ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  ASSERT_EQ(r.code(), Code::kRpcTimeout) << r.status().ToString();
  EXPECT_NE(r.status().message().find("resolving master.example"), std::string::npos) << r.status().message();
  {
    std::lock_guard l(gate->mu);
    gate->open = true;
  }
  gate->cv.notify_all();
  auto ok = ch.Call(1, "y", 5s);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "echo:y");
}

// A server whose kernel takes the connection but which never reads: once the socket buffers are
// full a request cannot be sent whole. The call ends at its deadline all the same, and so does a
// second caller queued behind it to write on the same connection.
TEST(RpcTest, ACallThatCannotBeSentEndsAtItsDeadline) {
  asio::io_context io;
  asio::ip::tcp::acceptor acc(io);
  acc.open(asio::ip::tcp::v4());
  acc.set_option(asio::socket_base::receive_buffer_size(64 << 10));  // the accepted socket's too
  acc.bind({asio::ip::make_address("127.0.0.1"), 0});
  acc.listen();
  uint16_t port = acc.local_endpoint().port();
  RpcChannel ch("127.0.0.1", port);
  const std::string big(16 << 20, 'x');  // more than the buffers hold (a send buffer grows to 4 MiB)
  auto t0 = std::chrono::steady_clock::now();
  Result<std::string> first(Status(Code::kInternal, ""));
  std::atomic<bool> first_done{false};
  std::thread writer([&] {
    first = ch.Call(1, big, 2000ms);  // far longer than the second call's: it ends first (slow builds too)
    first_done = true;
  });
  asio::ip::tcp::socket peer = acc.accept();  // taken, never read
  // Once the request's bytes arrive, the writer holds the connection's turn to write.
  int queued = 0;
  while (queued < 16384 && !first_done && ioctl(peer.native_handle(), FIONREAD, &queued) == 0) {
    std::this_thread::yield();
  }
  EXPECT_FALSE(first_done) << "the big request was sent whole: the test proves nothing";
  auto t1 = std::chrono::steady_clock::now();
  auto second = ch.Call(1, "small", 300ms);  // waits behind the writer for its turn, up to 300 ms
  auto second_took = std::chrono::steady_clock::now() - t1;
  writer.join();
  auto first_took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(first.code(), Code::kRpcTimeout) << first.status().ToString();
  EXPECT_LT(first_took, 4s);
  EXPECT_EQ(second.code(), Code::kRpcTimeout) << second.status().ToString();
  EXPECT_LT(second_took, 1s);
  // Part of the big frame went out, so the stream is unusable: the next call makes a new
  // connection, which the kernel takes too; a small request fits its buffers and times out waiting
  // for the reply only.
  auto third = ch.Call(1, "again", 200ms);
  EXPECT_EQ(third.code(), Code::kRpcTimeout) << third.status().ToString();
  EXPECT_NE(third.status().message().find("no reply"), std::string::npos) << third.status().ToString();
}

// Connections from this host to 127.0.0.1:`port` whose SYN is unanswered (/proc/net/tcp).
int SynSentTo(uint16_t port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the header
  char want[16];
  std::snprintf(want, sizeof(want), "0100007F:%04X", port);
  int n = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string slot, local, remote, state;
    f >> slot >> local >> remote >> state;
    if (remote == want && state == "02") ++n;
  }
  return n;
}

// A listener whose queue of connections not yet accepted is full drops new connection requests, so
// connecting takes until the connect timeout. A second caller, waiting for that attempt, ends at its
// own deadline.
TEST(RpcTest, ACallWaitingForAnotherCallersConnectEndsAtItsDeadline) {
  asio::io_context io;
  asio::ip::tcp::acceptor acc(io);
  acc.open(asio::ip::tcp::v4());
  acc.bind({asio::ip::make_address("127.0.0.1"), 0});
  acc.listen(1);  // the queue holds two
  const asio::ip::tcp::endpoint at = acc.local_endpoint();
  asio::ip::tcp::socket q1(io), q2(io);  // fill it; never accepted
  q1.connect(at);
  q2.connect(at);
  ASSERT_EQ(SynSentTo(at.port()), 0);
  RpcChannel::Options o;
  o.connect_timeout = 2500ms;
  RpcChannel ch("127.0.0.1", at.port(), o);
  Result<std::string> first(Status(Code::kInternal, ""));
  std::atomic<bool> first_done{false};
  std::thread connecting([&] {
    first = ch.Call(1, "first", 2500ms);  // far longer than the second call's (slow builds too)
    first_done = true;
  });
  while (SynSentTo(at.port()) == 0 && !first_done) std::this_thread::yield();  // the first caller is connecting
  EXPECT_FALSE(first_done) << "the first call never tried to connect: the test proves nothing";
  auto t0 = std::chrono::steady_clock::now();
  auto second = ch.Call(1, "second", 300ms);
  auto took = std::chrono::steady_clock::now() - t0;
  connecting.join();
  EXPECT_EQ(first.code(), Code::kRpcTimeout) << first.status().ToString();
  EXPECT_EQ(second.code(), Code::kRpcTimeout) << second.status().ToString();
  EXPECT_LT(took, 1000ms);
}

TEST(RpcTest, MalformedAndOversizedFramesCloseOnlyThatConnection) {
  auto server = EchoServer(/*max_body=*/1024);
  RpcChannel good("127.0.0.1", server->port());
  ASSERT_TRUE(good.Call(1, "before", 2s).ok());
  EXPECT_TRUE(ServerClosesAfter(server->port(), std::string(32, 'x')));  // bad magic
  std::string big = EncodeFrame(FrameHeader{0, FrameKind::kRequest, 0, 1, 7}, std::string(2048, 'b'));
  EXPECT_TRUE(ServerClosesAfter(server->port(), big));  // body over the limit
  std::string wrong_kind = EncodeFrame(FrameHeader{0, FrameKind::kResponse, 0, 1, 7}, "x");
  EXPECT_TRUE(ServerClosesAfter(server->port(), wrong_kind));
  EXPECT_EQ(server->malformed_frames(), 3u);
  auto r = good.Call(1, "after", 2s);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "echo:after");
}

// Resident memory of this process, in bytes.
uint64_t ResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  unsigned long long pages = 0, resident = 0;
  if (f) {
    if (std::fscanf(f, "%llu %llu", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// Memory follows the bytes that arrive, never a length a peer declares: 40 connections that each
// send a header announcing a 60 MiB body and stop cost the server next to nothing (it zero-filled
// a buffer of the declared size before: 2.4 GB here), and it keeps serving.
TEST(RpcTest, AnAnnouncedLargeFrameCostsOnlyTheBytesThatArrive) {
  auto server = EchoServer();
  asio::io_context io;
  std::vector<asio::ip::tcp::socket> socks;
  const uint64_t before = ResidentBytes();
  for (int i = 0; i < 40; ++i) {
    uint8_t h[kHeaderSize];
    EncodeHeader(FrameHeader{60u << 20, FrameKind::kRequest, 0, 1, static_cast<uint32_t>(i)}, h);
    socks.emplace_back(io);
    socks.back().connect({asio::ip::make_address("127.0.0.1"), server->port()});
    asio::write(socks.back(), asio::buffer(h, kHeaderSize));
  }
  RpcChannel ch("127.0.0.1", server->port());
  for (int i = 0; i < 3; ++i) {  // accepted, and their headers read meanwhile
    auto r = ch.Call(1, "still here", 2s);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    while (server->open_connections() < 41) std::this_thread::yield();
  }
  EXPECT_LT(ResidentBytes() - std::min(ResidentBytes(), before), 256u << 20);
}

// A peer that sends half a request and stops is closed after the stall timeout; an idle one (a
// pooled connection between calls) stays.
TEST(RpcTest, AConnectionStalledHalfwayThroughARequestIsClosed) {
  RpcServer::Options o;
  o.address = "127.0.0.1";
  o.threads = 1;
  o.half_sent_timeout_ms = 100;
  RpcServer server(o);
  server.Register(1, [](const net::Peer&, std::string_view body, std::string& out) {
    out.append(body);
    return Status::OK();
  });
  ASSERT_TRUE(server.Start().ok());
  RpcChannel idle("127.0.0.1", server.port());
  ASSERT_TRUE(idle.Call(1, "x", 2s).ok());
  asio::io_context io;
  asio::ip::tcp::socket half(io);
  half.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  std::string frame = EncodeFrame(FrameHeader{0, FrameKind::kRequest, 0, 1, 9}, std::string(100, 'h'));
  asio::write(half, asio::buffer(frame.data(), 40));  // the header and part of the body
  char byte;
  asio::error_code ec;
  half.read_some(asio::buffer(&byte, 1), ec);  // blocks until the server closes it
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  EXPECT_EQ(server.stalled_closed(), 1u);
  auto r = idle.Call(1, "still", 2s);  // the idle one was left open... or reconnects: either way served
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(server.stalled_closed(), 1u);
}

// A randomized decoder fuzz: garbage frames (random headers, random lengths, truncated bodies)
// never crash the server, which keeps serving a well-behaved client.
TEST(RpcTest, GarbageFramesNeverCrashTheServer) {
  auto server = EchoServer(/*max_body=*/4096);
  std::mt19937_64 rng(123);
  for (int i = 0; i < 200; ++i) {
    std::string bytes(rng() % 64, '\0');
    for (auto& c : bytes) c = static_cast<char>(rng());
    if (i % 2 == 0 && bytes.size() >= kHeaderSize) {  // a valid magic, the rest random
      uint8_t h[kHeaderSize];
      EncodeHeader(FrameHeader{static_cast<uint32_t>(rng() % 8192), static_cast<FrameKind>(rng() % 4),
                               static_cast<uint8_t>(rng()), static_cast<uint16_t>(rng()), static_cast<uint32_t>(rng())},
                   h);
      std::memcpy(bytes.data(), h, kHeaderSize);
    }
    asio::io_context io;
    asio::ip::tcp::socket sock(io);
    sock.connect({asio::ip::make_address("127.0.0.1"), server->port()});
    asio::write(sock, asio::buffer(bytes));
    sock.close();
  }
  RpcChannel ch("127.0.0.1", server->port());
  auto r = ch.Call(1, "alive", 2s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "echo:alive");
}

TEST(RpcTest, ReconnectsAfterTheServerComesBack) {
  RpcChannel::Options co;
  co.backoff_min = 0ms;  // reconnect at the next call
  co.backoff_max = 0ms;
  uint16_t port;
  auto server = EchoServer();
  port = server->port();
  RpcChannel ch("127.0.0.1", port, co);
  ASSERT_TRUE(ch.Call(1, "a", 2s).ok());
  server.reset();
  auto r = ch.Call(1, "b", 500ms);
  EXPECT_TRUE(r.code() == Code::kRpcFail || r.code() == Code::kRpcTimeout) << r.status().ToString();
  RpcServer::Options o;
  o.address = "127.0.0.1";
  o.port = port;
  RpcServer again(o);
  again.Register(1, [](const net::Peer&, std::string_view b, std::string& reply) {
    reply += "again:";
    reply += b;
    return Status::OK();
  });
  ASSERT_TRUE(again.Start().ok());
  Result<std::string> ok(Status(Code::kRpcFail, ""));
  for (int i = 0; i < 3 && !ok.ok(); ++i) ok = ch.Call(1, "c", 500ms);  // the first may see the old socket die
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(*ok, "again:c");
}

// A server that restarts while its client is idle: the client's first call after it reaches the
// new one (a connection the server closed is noticed before a request is written to it).
TEST(RpcTest, TheFirstCallAfterAServerRestartWhileIdleSucceeds) {
  RpcChannel::Options co;
  co.backoff_min = 0ms;
  co.backoff_max = 0ms;
  auto server = EchoServer();
  const uint16_t port = server->port();
  RpcChannel ch("127.0.0.1", port, co);
  ASSERT_TRUE(ch.Call(1, "a", 2s).ok());
  server.reset();  // closes every connection
  RpcServer::Options o;
  o.address = "127.0.0.1";
  o.port = port;
  RpcServer again(o);
  again.Register(1, [](const net::Peer&, std::string_view b, std::string& reply) {
    reply += b;
    return Status::OK();
  });
  ASSERT_TRUE(again.Start().ok());
  auto r = ch.Call(1, "b", 2s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "b");
}

TEST(RpcTest, ParseHostPort) {
  EXPECT_EQ(ParseHostPort("127.0.0.1:50051")->second, 50051);
  EXPECT_EQ(ParseHostPort("[::1]:1")->first, "::1");
  EXPECT_FALSE(ParseHostPort("nohost").ok());
  EXPECT_FALSE(ParseHostPort("h:0").ok());
  EXPECT_FALSE(ParseHostPort("h:99999").ok());
  EXPECT_FALSE(ParseHostPort("h:12x").ok());
}

// An in-process master served on a loopback port.
class MasterRpcTest : public ::testing::Test {
 protected:
  void Serve(RpcMetrics* metrics = nullptr) {
    MasterServiceOptions o;
    o.metrics = metrics;
    RegisterMasterService(server_, *master_, o);
    ASSERT_TRUE(server_.Start().ok());
  }
  static RpcServer::Options Loopback() {
    RpcServer::Options o;
    o.address = "127.0.0.1";
    return o;
  }
  ManualClock clock_;
  std::unique_ptr<MasterService> master_ = MasterService::Create(MasterConfig{}, clock_).value();
  RpcServer server_{Loopback()};
};

// The MasterApi over RPC behaves as the in-process one, error codes included.
TEST_F(MasterRpcTest, MasterClientMatchesTheInProcessMaster) {
  Serve();
  MasterClient mc("127.0.0.1", server_.port(), 2s);
  ClientId id{7, 7};
  auto registered = mc.RegisterClient({id, "h", "default"});
  ASSERT_TRUE(registered.ok()) << registered.status().ToString();
  CallContext ctx = *registered;
  ASSERT_TRUE(mc.MountSegment(ctx, {42, "h", 0, 1 << 20, "127.0.0.1:1"}).ok());
  PlacementConfig avoid_42;
  avoid_42.avoid_segments = {42};  // the only segment: nowhere to go
  EXPECT_EQ(mc.PutStart(ctx, "k", 1000, avoid_42).code(), Code::kNoAvailableHandle);
  auto start = mc.PutStart(ctx, "k", 1000, {});
  ASSERT_TRUE(start.ok());
  EXPECT_EQ((*start)[0].segment, 42u);
  EXPECT_EQ(mc.GetReplicaList(ctx, "k", false).code(), Code::kReplicaNotReady);
  ASSERT_TRUE(mc.PutEnd(ctx, "k", 99).ok());
  auto info = mc.GetReplicaList(ctx, "k", true);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 1000u);
  EXPECT_EQ(info->checksum, 99u);
  EXPECT_TRUE(mc.ReadEnd(ctx, "k", info->read_pin).ok());
  EXPECT_TRUE(*mc.ExistKey(ctx, "k"));
  auto ex = mc.BatchExistKey(ctx, {"k", "nope", ""});
  EXPECT_TRUE(*ex[0]);
  EXPECT_FALSE(*ex[1]);
  EXPECT_EQ(ex[2].code(), Code::kInvalidKey);
  EXPECT_EQ(mc.Remove(ctx, "k", false).code(), Code::kObjectHasLease);
  EXPECT_EQ(*mc.RemoveAll(ctx, true), 1u);
  EXPECT_EQ(mc.RemoveByRegex(ctx, "([", false).code(), Code::kInvalidParams);
  auto segs = mc.ListSegments();
  ASSERT_TRUE(segs.ok());
  ASSERT_EQ(segs->size(), 1u);
  EXPECT_EQ((*segs)[0].desc.endpoint, "127.0.0.1:1");
  EXPECT_FALSE(mc.Ping(ctx)->need_remount);
  EXPECT_TRUE(mc.UnmountSegment(ctx, 42).ok());
}

// The method table: every row named, served and counted, up to the largest id.
TEST_F(MasterRpcTest, EveryMethodOfTheTableIsServedAndCounted) {
  RpcMetrics metrics;
  Serve(&metrics);
  RpcChannel ch("127.0.0.1", server_.port());
  for (const auto& row : kMasterMethods) {
    const auto id = static_cast<uint16_t>(row.method);
    EXPECT_FALSE(row.name.empty());
    EXPECT_EQ(MasterMethodName(id), row.name);
    EXPECT_LT(id, RpcMetrics::kMethods);
    // An empty body is a valid (empty) request of every method: each is registered and answers.
    if (row.method == MasterMethod::kReadEnd) continue;  // one-way from MasterClient, but answered too
    auto reply = ch.Call(id, "", 2s);
    const bool anyone = row.method == MasterMethod::kRegisterClient || row.method == MasterMethod::kListSegments;
    if (anyone) {
      EXPECT_TRUE(reply.ok()) << row.name << ": " << reply.status().ToString();
    } else {  // no client token in an empty request: refused before the method runs
      EXPECT_EQ(reply.code(), Code::kIllegalClient) << row.name << ": " << reply.status().ToString();
    }
    EXPECT_EQ(metrics.calls(id), 1u) << row.name;
  }
  // A body that is not the method's message is refused, and counted as a failure.
  const auto put_start = static_cast<uint16_t>(MasterMethod::kPutStart);
  const uint64_t failed_before = metrics.failures(put_start);  // the refused empty request
  EXPECT_EQ(ch.Call(put_start, "\xff\xff\xff", 2s).code(), Code::kInvalidParams);
  EXPECT_EQ(metrics.failures(put_start), failed_before + 1);
  EXPECT_EQ(ch.Call(kMethodIdLimit, "", 2s).code(), Code::kNotSupported);
}

// Identity over RPC: a caller's id and tenant are what RegisterClient answered, proven by its token.
// (Tried before tokens: an anonymous frame with the owner ids /segments publishes unmounted every
// daemon's segments, and another ran RemoveAll with force over every tenant.)
TEST_F(MasterRpcTest, ACallerCannotMakeUpBorrowOrChangeItsIdentity) {
  Serve();
  MasterClient mc("127.0.0.1", server_.port(), 2s);
  CallContext a = mc.RegisterClient({ClientId{1, 2}, "a", "tenant-a"}).value();
  CallContext b = mc.RegisterClient({ClientId{3, 4}, "b", "tenant-b"}).value();
  ASSERT_TRUE(mc.MountSegment(a, {5, "a", 0, 1 << 20, "e:5"}).ok());
  ASSERT_TRUE(mc.PutStart(a, "secret", 100, {}).ok() && mc.PutEnd(a, "secret", std::nullopt).ok());
  // The owner's id without its token: refused before anything runs.
  const CallContext anonymous{a.client, a.tenant};
  EXPECT_EQ(mc.UnmountSegment(anonymous, 5).code(), Code::kIllegalClient);
  EXPECT_EQ(mc.RemoveAll(anonymous, true).code(), Code::kIllegalClient);
  // A made-up token, and a's token with another tenant.
  CallContext forged = a;
  forged.token[0] ^= 1;
  EXPECT_EQ(mc.RemoveAll(forged, true).code(), Code::kClientNotFound);
  CallContext switched = a;
  switched.tenant = b.tenant;
  EXPECT_EQ(mc.GetReplicaList(switched, "secret", false).code(), Code::kClientNotFound);
  // a's id is a's: refused without its token (also for another tenant), given back with it.
  EXPECT_EQ(mc.RegisterClient({a.client, "thief", "tenant-b"}).code(), Code::kIllegalClient);
  EXPECT_EQ(mc.RegisterClient({a.client, "thief", "tenant-b", false, a.token}).code(), Code::kIllegalClient);
  EXPECT_TRUE(mc.RegisterClient({a.client, "a", "tenant-a", false, a.token}).ok());
  // b, in its own tenant, reaches nothing of a's.
  EXPECT_EQ(mc.GetReplicaList(b, "secret", false).code(), Code::kObjectNotFound);
  EXPECT_EQ(mc.Remove(b, "secret", true).code(), Code::kObjectNotFound);
  EXPECT_EQ(*mc.RemoveAll(b, true), 0u);
  EXPECT_EQ(*mc.RemoveByRegex(b, ".*", true), 0u);
  EXPECT_EQ(mc.UnmountSegment(b, 5).code(), Code::kIllegalClient);
  EXPECT_EQ(mc.PutStart(b, "secret", 100, {}).ok(), true);  // its own key of that name
  EXPECT_TRUE(mc.GetReplicaList(a, "secret", false).ok());
  EXPECT_EQ(mc.GetReplicaList(a, "secret", false)->size, 100u);
  EXPECT_EQ(master_->Stats().segments, 1u);
}

// The calls that share one method with a mode (Upsert, RemoveAll) keep their meaning over RPC.
TEST_F(MasterRpcTest, UpsertMountsAndRemoveWhereOverRpc) {
  Serve();
  MasterClient mc("127.0.0.1", server_.port(), 2s);
  ClientId id{9, 9};
  CallContext ctx = mc.RegisterClient({id, "h", "default"}).value();
  ASSERT_TRUE(mc.MountSegments(ctx, {{1, "h", 0, 1 << 20, "e:1"}, {2, "h", 0, 1 << 20, "e:2"}}).ok());
  EXPECT_EQ(master_->Stats().segments, 2u);
  for (const char* k : {"a1", "a2", "b1"}) {
    ASSERT_TRUE(mc.PutStart(ctx, k, 100, {}).ok());
    ASSERT_TRUE(mc.PutEnd(ctx, k, std::nullopt).ok());
  }
  EXPECT_EQ(mc.PutStart(ctx, "a1", 200, {}).code(), Code::kObjectAlreadyExists);
  ASSERT_TRUE(mc.UpsertStart(ctx, "a1", 200, {}).ok());
  ASSERT_TRUE(mc.PutEnd(ctx, "a1", 5).ok());
  auto info = mc.GetReplicaList(ctx, "a1", false);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->size, 200u);
  EXPECT_EQ(info->checksum, 5u);
  EXPECT_FALSE(mc.GetReplicaList(ctx, "a2", false)->checksum.has_value());
  clock_.Advance(MasterConfig{}.default_kv_lease_ttl_ms + 1);
  EXPECT_EQ(*mc.RemoveByRegex(ctx, "^a", false), 2u);
  EXPECT_EQ(*mc.RemoveAll(ctx, false), 1u);
  auto puts = mc.BatchPutStart(ctx, {"x", "y"}, {10}, {});
  ASSERT_EQ(puts.size(), 2u);
  EXPECT_EQ(puts[0].code(), Code::kInvalidParams);  // sizes and keys differ in length
}

}  // namespace
}  // namespace yb::rpc
