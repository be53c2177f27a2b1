// Dummy clients (dummy_server.h): a real client served over RPC by an in-process master on
// loopback, and dummies of it in this process, reaching it through its Unix sockets only.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <numeric>
#include <thread>

#include "client/client_internal.h"
#include "client/dummy_server.h"
#include "common/clock.h"
#include "common/unix_socket.h"
#include "dummy.pb.h"
#include "master/master_service.h"
#include "rpc/channel.h"
#include "rpc/master_convert.h"
#include "rpc/master_server.h"
#include "transfer/shm/shared_memory.h"
#include "yuebing/client.h"

namespace yb {
namespace {

// Another thread's doing, awaited: true once `pred` holds, false after 10 s.
template <typename Pred>
bool Eventually(Pred pred) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::yield();
  }
  return true;
}

std::string Bytes(size_t n, uint8_t seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 7 + (i >> 12));
  return s;
}

class DummyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto m = MasterService::Create(MasterConfig{}, clock_);
    ASSERT_TRUE(m.ok());
    master_ = std::move(m).value();
    rpc::RpcServer::Options o;
    o.address = "127.0.0.1";
    server_ = std::make_unique<rpc::RpcServer>(o);
    rpc::RegisterMasterService(*server_, *master_);
    ASSERT_TRUE(server_->Start().ok());
    ClientConfig c;
    c.master_server_addr = "127.0.0.1:" + std::to_string(server_->port());
    c.local_hostname = "127.0.0.1";
    c.global_segment_size = 32 << 20;
    c.segment_chunk_size = 32 << 20;
    c.local_buffer_size = 4 << 20;
    auto real = Client::Connect(c);
    ASSERT_TRUE(real.ok()) << real.status().ToString();
    real_ = std::move(real).value();
    const std::string& name = real_->hostname();
    port_ = static_cast<uint16_t>(std::stoi(name.substr(name.rfind(':') + 1)));
    auto dummies = DummyServer::Start(*real_, {port_});
    ASSERT_TRUE(dummies.ok()) << dummies.status().ToString();
    dummies_ = std::move(dummies).value();
  }
  void TearDown() override {
    dummies_.reset();
    real_.reset();
    if (server_) server_->Stop();
  }

  std::unique_ptr<Client> Dummy(uint64_t local_buffer = 4 << 20) {
    ClientConfig d;
    d.real_client = "127.0.0.1:" + std::to_string(port_);
    d.local_buffer_size = local_buffer;
    auto c = Client::Connect(d);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  RealClock clock_;
  std::unique_ptr<MasterService> master_;
  std::unique_ptr<rpc::RpcServer> server_;
  std::unique_ptr<Client> real_;
  uint16_t port_ = 0;
  std::unique_ptr<DummyServer> dummies_;
};

TEST_F(DummyTest, EveryCallOfADummyIsServedByItsRealClientAndTheBytesAreExact) {
  auto dummy = Dummy();
  ASSERT_NE(dummy, nullptr);
  EXPECT_NE(dummy->hostname().find("/dummy-"), std::string::npos);
  // From the caller's own memory (staged through the shared local buffer), read by the real client.
  const std::string a = Bytes(1 << 20, 3);
  ASSERT_TRUE(dummy->Put("a", a.data(), a.size()).ok());
  auto got = real_->Get("a");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, a);
  // Written by the real client, read by the dummy.
  const std::string b = Bytes(300000, 9);
  ASSERT_TRUE(real_->Put("b", b.data(), b.size()).ok());
  auto back = dummy->Get("b");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, b);
  // Straight from and into shared memory: no staging, the relay names the caller's own bytes.
  auto* src = static_cast<char*>(AllocateSharedMemory(1 << 20));
  auto* dst = static_cast<char*>(AllocateSharedMemory(1 << 20));
  ASSERT_NE(src, nullptr);
  ASSERT_NE(dst, nullptr);
  std::memcpy(src, a.data(), a.size());
  const uint64_t before = dummies_->relayed_bytes();
  ASSERT_TRUE(dummy->Put("c", src, 1 << 20).ok());
  auto n = dummy->Get("c", dst, 1 << 20);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1u << 20);
  EXPECT_EQ(std::memcmp(dst, a.data(), a.size()), 0);
  EXPECT_EQ(dummies_->relayed_bytes() - before, 2u << 20);
  // Batches, existence, sessions, removal.
  std::vector<std::string> keys = {"k0", "k1", "k2"};
  std::vector<std::string> vals = {Bytes(4096, 1), Bytes(70000, 2), Bytes(5, 3)};
  std::vector<std::vector<Slice>> slices;
  for (auto& v : vals) slices.push_back({Slice{v.data(), v.size()}});
  for (const Status& st : dummy->BatchPut(keys, slices)) EXPECT_TRUE(st.ok()) << st.ToString();
  auto strings = dummy->BatchGet(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSERT_TRUE(strings[i].ok());
    EXPECT_EQ(*strings[i], vals[i]);
  }
  auto exist = dummy->BatchIsExist({"k0", "nope"});
  ASSERT_TRUE(exist[0].ok() && exist[1].ok());
  EXPECT_TRUE(*exist[0]);
  EXPECT_FALSE(*exist[1]);
  for (const Status& st : dummy->GetSessionStart({"k1"})) ASSERT_TRUE(st.ok());
  std::string part(100, '\0');
  auto ranges = dummy->GetSessionRanges({"k1"}, {{Slice{part.data(), part.size()}}}, {{1000}});
  ASSERT_TRUE(ranges[0].ok()) << ranges[0].status().ToString();
  EXPECT_EQ(part, vals[1].substr(1000, 100));
  dummy->GetSessionEnd({"k1"});
  EXPECT_TRUE(dummy->Remove("k2", /*force=*/true).ok());
  auto gone = real_->IsExist("k2");
  ASSERT_TRUE(gone.ok());
  EXPECT_FALSE(*gone);
  EXPECT_TRUE(FreeSharedMemory(src).ok());
  EXPECT_TRUE(FreeSharedMemory(dst).ok());
  EXPECT_EQ(FreeSharedMemory(dst).code(), Code::kInvalidParams);
}

// Values in the caller's own memory (not shared) go through the dummy's staging buffer together:
// one relay call for a batch of puts and one for a batch of gets, not one per key.
TEST_F(DummyTest, ABatchInTheCallersOwnMemoryIsStagedAndRelayedAsOne) {
  auto dummy = Dummy();
  ASSERT_NE(dummy, nullptr);
  std::vector<std::string> keys, vals, back;
  std::vector<std::vector<Slice>> in, out;
  for (int i = 0; i < 16; ++i) {
    keys.push_back("staged" + std::to_string(i));
    vals.push_back(Bytes(4096 + i * 100, i));
    back.push_back(std::string(vals.back().size(), '\0'));
  }
  for (int i = 0; i < 16; ++i) {
    in.push_back({Slice{vals[i].data(), 1000}, Slice{vals[i].data() + 1000, vals[i].size() - 1000}});  // two pieces
    out.push_back({Slice{back[i].data(), back[i].size()}});
  }
  uint64_t before = dummies_->relays();
  for (const Status& st : dummy->BatchPut(keys, in)) ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(dummies_->relays() - before, 1u);
  before = dummies_->relays();
  for (const auto& r : dummy->BatchGet(keys, out)) ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(dummies_->relays() - before, 1u);
  EXPECT_EQ(back, vals);
  // A batch larger than half the staging buffer: what does not fit goes one staged move at a time.
  const std::string big = Bytes(3 << 20, 7);
  std::string big_back(big.size(), '\0');
  for (const Status& st : dummy->BatchPut({"big", "small"}, {{Slice{const_cast<char*>(big.data()), big.size()}},
                                                            {Slice{vals[0].data(), vals[0].size()}}})) {
    ASSERT_TRUE(st.ok()) << st.ToString();
  }
  auto got = dummy->BatchGet({"big"}, {{Slice{big_back.data(), big_back.size()}}});
  ASSERT_TRUE(got[0].ok()) << got[0].status().ToString();
  EXPECT_EQ(big_back, big);
}

TEST_F(DummyTest, ADummyMovesTheBytesOfSegmentsItsRealClientSharesItself) {
  dummies_.reset();
  DummyServer::Options o;
  o.port = port_;
  o.segments_shared = true;  // no secret here: the real client's segment may be mapped
  auto served = DummyServer::Start(*real_, o);
  ASSERT_TRUE(served.ok());
  dummies_ = std::move(served).value();
  auto dummy = Dummy();
  ASSERT_NE(dummy, nullptr);
  const std::string v = Bytes(3 << 20, 11);
  ASSERT_TRUE(dummy->Put("m", v.data(), v.size()).ok());  // the caller's own memory: no staging needed
  auto back = dummy->Get("m");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, v);
  EXPECT_EQ(*real_->Get("m"), v);
  EXPECT_EQ(dummies_->relayed_bytes(), 0u);  // none through the real client
  EXPECT_GE(real_->Stats().transfer.same_host_given, 1u);
}

TEST_F(DummyTest, ADummysMemoryIsUnmappedWhenItGoesAndItsPutsAreItsOwn) {
  auto one = Dummy();
  auto two = Dummy();
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  EXPECT_NE(one->id(), two->id());  // each a client of the master in its own right
  const std::string v = Bytes(8192, 5);
  ASSERT_TRUE(one->Put("x", v.data(), v.size()).ok());
  ASSERT_TRUE(two->Put("y", v.data(), v.size()).ok());
  EXPECT_TRUE(Eventually([&] { return dummies_->dummies() == 2; }));
  EXPECT_GE(dummies_->regions(), 2u);  // each one's local buffer at least
  one.reset();
  EXPECT_TRUE(Eventually([&] { return dummies_->dummies() == 1; }));
  auto y = two->Get("y");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(*y, v);
  EXPECT_EQ(*real_->Get("x"), v);  // what a dummy wrote stays in the pool after it left
  two.reset();
  EXPECT_TRUE(Eventually([&] { return dummies_->dummies() == 0 && dummies_->regions() == 0; }));
}

TEST_F(DummyTest, ARelayIntoTheRealClientsOwnMemoryIsCheckedAgainstItsGrant) {
  // A process of this user that speaks the protocol itself, with no grant from the master.
  auto region = MappedRegion::Map(1 << 20, false, /*shareable=*/true);
  ASSERT_TRUE(region && region->fd() >= 0);
  int mem = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  sockaddr_un addr;
  const socklen_t len = AbstractUnixAddress(DummyMemorySocket(port_), &addr);
  ASSERT_EQ(connect(mem, reinterpret_cast<sockaddr*>(&addr), len), 0);
  std::string ask(12, '\0');
  std::memcpy(ask.data(), "YBDM", 4);
  const uint64_t size = region->size();
  std::memcpy(ask.data() + 4, &size, 8);
  ASSERT_TRUE(SendWithFd(mem, ask, region->fd()));
  std::string answer;
  int none = -1;
  ASSERT_TRUE(RecvWithFd(mem, answer, 16, &none));
  uint64_t token = 0;
  std::memcpy(&token, answer.data() + 8, 8);
  ASSERT_NE(token, 0u);
  const SegmentId seg = ClientInternal::segments(*real_).at(0);
  rpc::RpcChannel channel(DummyRpcSocket(port_), 0);
  pb::RelayBatch batch;
  for (uint32_t op : {0u, 1u}) {  // a read and a write of the real client's segment, ungranted
    pb::RelayRequest* r = batch.add_requests();
    r->set_op(op);
    r->set_segment(seg);
    r->set_offset(0);
    r->set_region(token);
    r->set_length(4096);
  }
  pb::RelayRequest* past = batch.add_requests();  // past the end of the region it names
  past->set_op(0);
  past->set_segment(seg);
  past->set_region(token);
  past->set_region_offset(size - 10);
  past->set_length(4096);
  pb::RelayRequest* stranger = batch.add_requests();  // a region never handed over
  stranger->set_op(0);
  stranger->set_segment(seg);
  stranger->set_region(token + 1);
  stranger->set_length(16);
  auto reply = channel.Call(kDummyRelay, batch.SerializeAsString(), std::chrono::seconds(5));
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  pb::RelayResponse resp;
  ASSERT_TRUE(resp.ParseFromString(*reply));
  ASSERT_EQ(resp.results_size(), 4);
  EXPECT_EQ(rpc::FromPb(resp.results(0)).code(), Code::kIllegalClient);
  EXPECT_EQ(rpc::FromPb(resp.results(1)).code(), Code::kIllegalClient);
  EXPECT_EQ(rpc::FromPb(resp.results(2)).code(), Code::kInvalidParams);
  EXPECT_EQ(rpc::FromPb(resp.results(3)).code(), Code::kInvalidParams);
  EXPECT_EQ(dummies_->relayed_bytes(), 0u);
  close(mem);
}

TEST_F(DummyTest, AProcessOfAnotherUserIsRefusedOnBothSockets) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to run a process as another user";
  const std::string rpc_name = DummyRpcSocket(port_).substr(1), mem_name = DummyMemorySocket(port_);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {  // raw system calls only: this process has threads it did not inherit
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    sockaddr_un addr;
    // The RPC: the connection is closed before a byte is read from it.
    int rpc = socket(AF_UNIX, SOCK_STREAM, 0);
    socklen_t len = AbstractUnixAddress(rpc_name, &addr);
    if (connect(rpc, reinterpret_cast<sockaddr*>(&addr), len) != 0) _exit(3);
    char b;
    timeval tv{5, 0};
    setsockopt(rpc, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (read(rpc, &b, 1) != 0) _exit(4);
    // The memory: an answer that refuses, and no more.
    int mem = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    len = AbstractUnixAddress(mem_name, &addr);
    if (connect(mem, reinterpret_cast<sockaddr*>(&addr), len) != 0) _exit(5);
    setsockopt(mem, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char answer[16];
    if (recv(mem, answer, sizeof(answer), 0) != 16) _exit(6);
    int32_t code = 0;
    std::memcpy(&code, answer + 4, 4);
    _exit(code == static_cast<int32_t>(Code::kIllegalClient) ? 0 : 7);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(dummies_->refused(), 1u);  // the memory socket's count; the RPC's refusal is logged
  EXPECT_EQ(dummies_->dummies(), 0u);
}

TEST(DummyConfigTest, ADummyWithoutARealClientIsToldWhereToStartOne) {
  ClientConfig d;
  d.real_client = "127.0.0.1:1";
  d.rpc_timeout_ms = 1;  // how long it waits for one that is still starting
  auto c = Client::Connect(d);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("yb-client --port 1"), std::string::npos) << c.status().ToString();
  d.real_client = "no-port";
  EXPECT_EQ(Client::Connect(d).code(), Code::kInvalidParams);
  d.real_client = "127.0.0.1:50052";
  d.global_segment_size = 1 << 20;
  EXPECT_EQ(Client::Connect(d).code(), Code::kInvalidParams);
}

}  // namespace
}  // namespace yb
