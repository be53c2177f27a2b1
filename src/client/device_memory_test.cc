// Device memory through the fake CUDA driver (tests/fake_cuda, found first on LD_LIBRARY_PATH):
// its device addresses are mapped PROT_NONE, so any CPU touch crashes this test.
#include "client/device_memory.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>

#include "client/client_internal.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "common/temp_dir.h"
#include "master/master_service.h"
#include "transfer/fault_transport.h"
#include "transfer/memcpy_transport.h"
#include "transfer/transfer_engine.h"
#include "yuebing/client.h"

namespace yb {
namespace {

// The fake driver's calls the tests make themselves (allocation is not ours to do).
struct FakeCudaCounters {
  uint64_t async_copies, sync_copies, registrations, live_registrations, bytes_to_device, bytes_to_host,
      streams_created, live_streams;
};

class FakeDriver {
 public:
  FakeDriver() {
    lib_ = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib_) lib_ = dlopen("libcuda.so.1", RTLD_NOW);
    counters_ = reinterpret_cast<void (*)(FakeCudaCounters*)>(dlsym(lib_, "fake_cuda_counters"));
    fail_ = reinterpret_cast<void (*)(int)>(dlsym(lib_, "fake_cuda_fail_copies"));
    init_ = reinterpret_cast<int (*)(unsigned)>(dlsym(lib_, "cuInit"));
    retain_ = reinterpret_cast<int (*)(void**, int)>(dlsym(lib_, "cuDevicePrimaryCtxRetain"));
    set_ = reinterpret_cast<int (*)(void*)>(dlsym(lib_, "cuCtxSetCurrent"));
    get_ = reinterpret_cast<int (*)(void**)>(dlsym(lib_, "cuCtxGetCurrent"));
    alloc_ = reinterpret_cast<int (*)(unsigned long long*, size_t)>(dlsym(lib_, "cuMemAlloc_v2"));
    free_ = reinterpret_cast<int (*)(unsigned long long)>(dlsym(lib_, "cuMemFree_v2"));
    h2d_ = reinterpret_cast<int (*)(unsigned long long, const void*, size_t)>(dlsym(lib_, "cuMemcpyHtoD_v2"));
    d2h_ = reinterpret_cast<int (*)(void*, unsigned long long, size_t)>(dlsym(lib_, "cuMemcpyDtoH_v2"));
  }
  bool loaded() const { return counters_ != nullptr; }

  // Device memory on `device`, allocated with its context current; no context is left current.
  void* Alloc(size_t n, int device = 0) {
    void* ctx = nullptr;
    EXPECT_EQ(init_(0), 0);
    EXPECT_EQ(retain_(&ctx, device), 0);
    EXPECT_EQ(set_(ctx), 0);
    unsigned long long p = 0;
    EXPECT_EQ(alloc_(&p, n), 0);
    EXPECT_EQ(set_(nullptr), 0);
    return reinterpret_cast<void*>(p);
  }
  void Free(void* p) { EXPECT_EQ(free_(reinterpret_cast<unsigned long long>(p)), 0); }
  void Fill(void* device, const std::string& bytes) {
    Bound b(*this, device);
    ASSERT_EQ(h2d_(reinterpret_cast<unsigned long long>(device), bytes.data(), bytes.size()), 0);
  }
  std::string Read(const void* device, size_t n) {
    std::string out(n, '\0');
    Bound b(*this, device);
    EXPECT_EQ(d2h_(out.data(), reinterpret_cast<unsigned long long>(device), n), 0);
    return out;
  }
  void* Current() {
    void* ctx = nullptr;
    EXPECT_EQ(get_(&ctx), 0);
    return ctx;
  }
  // Every copy fails from now on (true) or works again (false): a device that faulted.
  void FailCopies(bool fail) { fail_(fail ? 1 : 0); }
  FakeCudaCounters Counters() {
    FakeCudaCounters c{};
    counters_(&c);
    return c;
  }

 private:
  struct Bound {
    Bound(FakeDriver& d, const void* device) : d(d) {
      auto ctx = DeviceMemory::Get().Locate(device, 1);
      EXPECT_TRUE(ctx.ok() && *ctx);
      EXPECT_EQ(d.set_(*ctx), 0);
    }
    ~Bound() { d.set_(nullptr); }
    FakeDriver& d;
  };
  void* lib_ = nullptr;
  void (*counters_)(FakeCudaCounters*) = nullptr;
  void (*fail_)(int) = nullptr;
  int (*init_)(unsigned) = nullptr;
  int (*retain_)(void**, int) = nullptr;
  int (*set_)(void*) = nullptr;
  int (*get_)(void**) = nullptr;
  int (*alloc_)(unsigned long long*, size_t) = nullptr;
  int (*free_)(unsigned long long) = nullptr;
  int (*h2d_)(unsigned long long, const void*, size_t) = nullptr;
  int (*d2h_)(void*, unsigned long long, size_t) = nullptr;
};

std::string Bytes(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 13 + (i >> 9));
  return s;
}

// A driver installed on a machine without a GPU (cuInit: CUDA_ERROR_NO_DEVICE): nothing is device
// memory and every path is the host one. Run by the test device_memory_no_device, which sets
// FAKE_CUDA_DEVICES=0; skipped otherwise.
TEST(DeviceMemoryNoDeviceTest, ADriverWithoutADeviceChangesNothing) {
  const char* devices = getenv("FAKE_CUDA_DEVICES");
  if (!devices || std::string(devices) != "0") GTEST_SKIP() << "needs FAKE_CUDA_DEVICES=0";
  DeviceMemory& dm = DeviceMemory::Get();
  EXPECT_FALSE(dm.available());
  std::string a(1000, 'a'), b(1000, 'b');
  EXPECT_EQ(*dm.Locate(a.data(), a.size()), nullptr);
  ASSERT_TRUE(Client::CopyMemory(b.data(), a.data(), a.size()).ok());
  EXPECT_EQ(a, b);
  EXPECT_EQ(dm.Acquire(nullptr, 4096).code(), Code::kInternal);
}

class DeviceMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* d = getenv("FAKE_CUDA_DEVICES"); d && std::string(d) == "0") GTEST_SKIP() << "no device";
    ASSERT_TRUE(driver_.loaded()) << "libcuda.so.1 is not the fake driver: run with LD_LIBRARY_PATH=<build>/fake_cuda";
    ASSERT_TRUE(DeviceMemory::Get().available());
    Build(false);
  }
  void TearDown() override {
    clients_.clear();
    for (void* p : allocated_) driver_.Free(p);
  }

  void Build(bool transport_needs_registration) {
    clients_.clear();
    MasterConfig mc;
    mc.random_seed = 7;
    mc.liveness_max_gap_ms = 0;
    master_ = std::shared_ptr<MasterService>(MasterService::Create(mc, clock_).value().release());
    local_ = std::make_shared<LocalSegmentRegistry>();
    engine_ = std::make_shared<TransferEngine>();
    fault_ = std::make_shared<FaultInjectingTransport>(std::make_shared<MemcpyTransport>(local_),
                                                       transport_needs_registration);
    engine_->AddTransport(fault_);
    a_ = NewClient("node-a");
    b_ = NewClient("node-b");
  }

  Client* NewClient(const std::string& host) {
    ClientConfig c;
    c.local_hostname = host;
    c.global_segment_size = 64 << 20;
    c.local_buffer_size = 4 << 20;
    ClientParts p;
    p.master = master_;
    p.local_segments = local_;
    p.engine = engine_;
    p.scheduler = &scheduler_;
    auto cl = ClientInternal::Create(c, p);
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    clients_.push_back(std::move(cl).value());
    return clients_.back().get();
  }

  void* Device(size_t n, int device = 0) {
    allocated_.push_back(driver_.Alloc(n, device));
    return allocated_.back();
  }

  FakeDriver driver_;
  ManualClock clock_;
  ManualScheduler scheduler_{clock_};
  std::shared_ptr<MasterService> master_;
  std::shared_ptr<LocalSegmentRegistry> local_;
  std::shared_ptr<TransferEngine> engine_;
  std::shared_ptr<FaultInjectingTransport> fault_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<void*> allocated_;
  Client* a_ = nullptr;
  Client* b_ = nullptr;
};

TEST_F(DeviceMemoryTest, TheDriverTellsDeviceFromHostMemory) {
  DeviceMemory& dm = DeviceMemory::Get();
  std::string host(100, 'h');
  void* dev = Device(1 << 20);
  EXPECT_EQ(*dm.Locate(host.data(), host.size()), nullptr);
  auto ctx = dm.Locate(dev, 1 << 20);
  ASSERT_TRUE(ctx.ok());
  EXPECT_NE(*ctx, nullptr);
  EXPECT_NE(*dm.Locate(static_cast<char*>(dev) + 4096, 100), nullptr);
  // Past the allocation's end: an error, not a fault on the device.
  EXPECT_EQ(dm.Locate(static_cast<char*>(dev) + 4096, 1 << 20).code(), Code::kInvalidParams);
  EXPECT_TRUE(Client::IsDeviceMemory(dev));
  EXPECT_FALSE(Client::IsDeviceMemory(host.data()));
}

TEST_F(DeviceMemoryTest, SynchronousCopiesEitherWay) {
  void* dev = Device(8192);
  std::string in = Bytes(5000, 3), out(5000, '\0');
  ASSERT_TRUE(Client::CopyMemory(dev, in.data(), in.size()).ok());
  ASSERT_TRUE(Client::CopyMemory(out.data(), dev, out.size()).ok());
  EXPECT_EQ(out, in);
  EXPECT_EQ(driver_.Current(), nullptr);  // the thread's context is as it was
  void* dev2 = Device(8192);
  ASSERT_TRUE(Client::CopyMemory(dev2, dev, 5000).ok());  // device to device
  EXPECT_EQ(driver_.Read(dev2, 5000), in);
  EXPECT_EQ(Client::CopyMemory(static_cast<char*>(dev) + 8000, in.data(), 1000).code(), Code::kInvalidParams);
}

// Values of several sizes (one piece, several pieces, a piece boundary inside a checksum chunk
// of the caller's layout) put from device memory and read back into device memory, bytes exact,
// through pipelined async copies; the reads verify the writer's checksum.
TEST_F(DeviceMemoryTest, PutFromAndGetIntoDeviceMemory) {
  const FakeCudaCounters before = driver_.Counters();
  for (size_t n : {size_t{1}, size_t{4096}, size_t{(1 << 20) + 3}, size_t{5 << 20}}) {
    const std::string key = "k" + std::to_string(n);
    const std::string v = Bytes(n, static_cast<char>(n));
    void* src = Device(n);
    driver_.Fill(src, v);
    ASSERT_TRUE(a_->Put(key, src, n).ok()) << n;
    void* dst = Device(n);
    auto got = b_->Get(key, dst, n);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, n);
    EXPECT_EQ(driver_.Read(dst, n), v) << n;
    EXPECT_EQ(*b_->Get(key), v);  // what the store holds is the device's bytes
  }
  const FakeCudaCounters after = driver_.Counters();
  EXPECT_GT(after.async_copies, before.async_copies);
  EXPECT_EQ(after.sync_copies - before.sync_copies, 8u);  // only the test's own Fill and Read
  EXPECT_EQ(driver_.Current(), nullptr);
}

TEST_F(DeviceMemoryTest, MixedHostAndDeviceSlicesScatterAndGather) {
  const std::string head = Bytes(304, 1), body = Bytes(700000, 2), tail = Bytes(70000, 9);
  void* dev_body = Device(body.size());
  driver_.Fill(dev_body, body);
  ASSERT_TRUE(a_->Put("mixed", {{const_cast<char*>(head.data()), head.size()}, {dev_body, body.size()},
                                {const_cast<char*>(tail.data()), tail.size()}})
                  .ok());
  // Read back split differently: device, host, device.
  void* d1 = Device(100000);
  std::string h(500000, '\0');
  void* d2 = Device(head.size() + body.size() + tail.size() - 600000);
  auto got = b_->Get("mixed", std::vector<Slice>{{d1, 100000}, {h.data(), h.size()}, {d2, 170304}});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const std::string all = head + body + tail;
  EXPECT_EQ(driver_.Read(d1, 100000), all.substr(0, 100000));
  EXPECT_EQ(h, all.substr(100000, 500000));
  EXPECT_EQ(driver_.Read(d2, 170304), all.substr(600000));
}

TEST_F(DeviceMemoryTest, BatchesOfDeviceValues) {
  constexpr int kKeys = 6;
  constexpr size_t kSize = 300000;
  std::vector<std::string> keys, values;
  std::vector<std::vector<Slice>> src, dst;
  for (int i = 0; i < kKeys; ++i) {
    keys.push_back("b" + std::to_string(i));
    values.push_back(Bytes(kSize, static_cast<char>(i)));
    void* s = Device(kSize);
    driver_.Fill(s, values.back());
    src.push_back({{s, kSize}});
    dst.push_back({{Device(kSize), kSize}});
  }
  for (const auto& st : a_->BatchPut(keys, src)) ASSERT_TRUE(st.ok()) << st.ToString();
  auto got = b_->BatchGet(keys, dst);
  for (int i = 0; i < kKeys; ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].status().ToString();
    EXPECT_EQ(driver_.Read(dst[i][0].ptr, kSize), values[i]);
  }
}

// A transport that needs registered memory (RDMA-like) stages host memory through the local
// buffer and device memory through the pinned slots alike.
TEST_F(DeviceMemoryTest, TransportThatNeedsRegisteredMemory) {
  Build(true);
  const std::string v = Bytes(3 << 20, 5);
  void* src = Device(v.size());
  driver_.Fill(src, v);
  ASSERT_TRUE(a_->Put("r", src, v.size()).ok());
  void* dst = Device(v.size());
  ASSERT_TRUE(b_->Get("r", dst, v.size()).ok());
  EXPECT_EQ(driver_.Read(dst, v.size()), v);
  std::string host(v.size(), '\0');
  ASSERT_TRUE(b_->Get("r", host.data(), host.size()).ok());
  EXPECT_EQ(host, v);
}

TEST_F(DeviceMemoryTest, RegisteredDeviceBuffers) {
  // vLLM registers its KV caches, then reads and writes blocks at offsets inside them.
  constexpr size_t kCache = 1 << 20, kBlock = 64 << 10;
  char* cache = static_cast<char*>(Device(kCache));
  ASSERT_TRUE(a_->RegisterBuffer(cache, kCache).ok());
  const std::string block = Bytes(kBlock, 4);
  driver_.Fill(cache + 3 * kBlock, block);
  ASSERT_TRUE(a_->Put("blk", cache + 3 * kBlock, kBlock).ok());
  ASSERT_TRUE(a_->Get("blk", cache + 9 * kBlock, kBlock).ok());
  EXPECT_EQ(driver_.Read(cache + 9 * kBlock, kBlock), block);
  // A block that runs past the registered cache is refused before a byte moves.
  EXPECT_EQ(a_->Get("blk", cache + kCache - kBlock / 2, kBlock).code(), Code::kInvalidParams);
  EXPECT_EQ(a_->CheckCallerMemory(cache + kCache - 10, 20).code(), Code::kInvalidParams);
}

TEST_F(DeviceMemoryTest, BadDeviceBuffersAreErrorsNotFaults) {
  const std::string v = Bytes(200000, 6);
  void* dev = Device(100000);
  // Past the end of a device allocation (not registered): refused by the driver's range.
  EXPECT_EQ(a_->Put("x", dev, v.size()).code(), Code::kInvalidParams);
  ASSERT_TRUE(a_->Put("x", v.data(), v.size()).ok());
  EXPECT_EQ(b_->Get("x", dev, v.size()).code(), Code::kInvalidParams);
  // Too small: the object does not fit, nothing is written.
  EXPECT_EQ(b_->Get("x", dev, 100000).code(), Code::kBufferOverflow);
  // One value over two devices' memory is refused (one stream, one context per move).
  void* other = Device(100000, 1);
  EXPECT_EQ(a_->Put("two", {{dev, 100000}, {other, 100000}}).code(), Code::kInvalidParams);
  EXPECT_EQ(b_->Get("two").code(), Code::kObjectNotFound);
}

TEST_F(DeviceMemoryTest, StagersArePooled) {
  const std::string v = Bytes(1 << 20, 8);
  void* src = Device(v.size());
  driver_.Fill(src, v);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(a_->Put("p" + std::to_string(i), src, v.size()).ok());
  const FakeCudaCounters c = driver_.Counters();
  EXPECT_LE(c.live_streams, 8u);
  EXPECT_LE(c.live_registrations, 16u);
}

// An object whose only replica is on another client's SSD tier, read into device memory: the
// whole object comes through a host buffer and is copied on by the driver, its checksum taken
// from that buffer.
TEST_F(DeviceMemoryTest, ADiskReplicaIsReadIntoDeviceMemory) {
  TempDir dir("yb-device-ssd");
  MasterConfig mc;
  mc.random_seed = 3;
  mc.liveness_max_gap_ms = 0;
  mc.enable_offload = true;
  clients_.clear();
  master_ = std::shared_ptr<MasterService>(MasterService::Create(mc, clock_).value().release());
  local_ = std::make_shared<LocalSegmentRegistry>();
  engine_ = std::make_shared<TransferEngine>();
  engine_->AddTransport(std::make_shared<MemcpyTransport>(local_));
  ClientConfig c;
  c.local_hostname = "disk-node";
  c.global_segment_size = 1 << 20;
  c.local_buffer_size = 1 << 16;
  c.enable_offload = true;
  c.ssd.path = dir.path() + "/disk-node";
  ClientParts p;
  p.master = master_;
  p.local_segments = local_;
  p.engine = engine_;
  p.scheduler = &scheduler_;
  auto owner = ClientInternal::Create(c, p);
  ASSERT_TRUE(owner.ok()) << owner.status().ToString();
  clients_.push_back(std::move(owner).value());
  Client* reader = NewClient("reader");
  const std::string v = Bytes(300000, 2);
  ReplicateConfig there;
  there.preferred_segments = {"disk-node"};
  ASSERT_TRUE(clients_[0]->Put("ssd", v.data(), v.size(), there).ok());
  ASSERT_EQ(ClientInternal::RunOffloadOnce(*clients_[0]), 1u);
  clock_.AdvanceSec(11);
  master_->evictor().EvictBytes(1ULL << 40);
  auto q = reader->Query("ssd");
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->replicas.size(), 1u);
  ASSERT_EQ(q->replicas[0].kind, ReplicaKind::kLocalDisk);
  void* one = Device(v.size());
  ASSERT_TRUE(reader->Get("ssd", one, v.size()).ok());
  EXPECT_EQ(driver_.Read(one, v.size()), v);
  void* head = Device(1000);
  std::string rest(v.size() - 1000, '\0');
  ASSERT_TRUE(reader->Get("ssd", std::vector<Slice>{{head, 1000}, {rest.data(), rest.size()}}).ok());
  EXPECT_EQ(driver_.Read(head, 1000) + rest, v);
}

// A device that faults mid-way (every driver copy failing): puts and gets answer an error, the
// store keeps what it had, and once the device works again the same calls succeed.
TEST_F(DeviceMemoryTest, ADeviceThatFaultsFailsTheCallNotTheStore) {
  const std::string v = Bytes(2 << 20, 7);
  void* src = Device(v.size());
  driver_.Fill(src, v);
  ASSERT_TRUE(a_->Put("kept", src, v.size()).ok());
  void* dst = Device(v.size());
  driver_.FailCopies(true);
  Status put = a_->Put("new", src, v.size());
  auto got = b_->Get("kept", dst, v.size());
  std::vector<Status> batch = a_->BatchPut({"b1", "b2"}, {{{src, 1000}}, {{src, 2000}}});
  driver_.FailCopies(false);
  EXPECT_FALSE(put.ok());
  EXPECT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("illegal memory access"), std::string::npos) << got.status().ToString();
  for (const auto& st : batch) EXPECT_FALSE(st.ok());
  EXPECT_EQ(b_->Get("new").code(), Code::kObjectNotFound);  // revoked, not half-written
  EXPECT_EQ(b_->Get("b1").code(), Code::kObjectNotFound);
  EXPECT_EQ(*b_->Get("kept"), v);
  ASSERT_TRUE(b_->Get("kept", dst, v.size()).ok());
  EXPECT_EQ(driver_.Read(dst, v.size()), v);
  ASSERT_TRUE(a_->Put("new", src, v.size()).ok());
}

// Sessions with GPU memory: layer ranges written from and read into device memory (staged), and a
// range whose best replica fails is read from the next one.
TEST_F(DeviceMemoryTest, SessionRangesMoveDeviceMemoryAndFallToTheNextReplica) {
  constexpr size_t kLayers = 4, kLayer = 300000;
  const std::string v = Bytes(kLayers * kLayer, 3);
  char* src = static_cast<char*>(Device(v.size()));
  driver_.Fill(src, v);
  ReplicateConfig two;
  two.replica_num = 2;
  ASSERT_TRUE(a_->PutSessionStart({"s"}, {v.size()}, two)[0].ok());
  for (size_t l = 0; l < kLayers; ++l) {
    auto r = a_->PutSessionRanges({"s"}, {{{src + l * kLayer, kLayer}}}, {{l * kLayer}});
    ASSERT_TRUE(r[0].ok()) << r[0].status().ToString();
  }
  ASSERT_TRUE(a_->PutSessionEnd({"s"})[0].ok());
  ASSERT_EQ(*b_->Get("s"), v);
  ASSERT_TRUE(b_->GetSessionStart({"s"})[0].ok());
  char* dst = static_cast<char*>(Device(v.size()));
  auto q = b_->Query("s");
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->replicas.size(), 2u);
  for (size_t l = 0; l < kLayers; ++l) {
    // Layer 2 with the first replica failing, layer 3 with the second: the best one fails once.
    if (l >= 2) {
      fault_->Clear();
      fault_->FailSegment(q->replicas[l - 2].segment);
    }
    auto r = b_->GetSessionRanges({"s"}, {{{dst + l * kLayer, kLayer}}}, {{l * kLayer}});
    ASSERT_TRUE(r[0].ok()) << l << ": " << r[0].status().ToString();
  }
  EXPECT_EQ(driver_.Read(dst, v.size()), v);
  EXPECT_GE(b_->Stats().replica_read_failures, 1u);
  b_->GetSessionEnd({"s"});
}

}  // namespace
}  // namespace yb
