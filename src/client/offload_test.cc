// The SSD tier end to end in one process: clients with storage directories on a master with a
// ManualClock, moved by memcpy. Each offload round is stepped by the test (no thread).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "client/client_internal.h"
#include "common/clock.h"
#include "common/temp_dir.h"
#include "master/master_service.h"
#include "transfer/memcpy_transport.h"
#include "transfer/transfer_engine.h"
#include "yuebing/client.h"
#include "yuebing/embedded.h"

namespace yb {
namespace {

namespace fs = std::filesystem;

class ClientOffloadTest : public ::testing::Test {
 protected:
  void TearDown() override { clients_.clear(); }  // before their directories go

  void StartMaster(bool eager, bool on_evict) {
    MasterConfig mc;
    mc.random_seed = 5;
    mc.object_shards = 8;
    mc.liveness_max_gap_ms = 0;  // the tests step the clock by whole TTLs
    mc.enable_offload = eager;
    mc.offload_on_evict = on_evict;
    master_ = std::shared_ptr<MasterService>(MasterService::Create(mc, clock_).value().release());
    local_ = std::make_shared<LocalSegmentRegistry>();
    engine_ = std::make_shared<TransferEngine>();
    engine_->AddTransport(std::make_shared<MemcpyTransport>(local_));
  }

  ClientConfig Config(const std::string& host, bool ssd) {
    ClientConfig c;
    c.local_hostname = host;
    c.put_reservation_bytes = 0;  // the tests count the space their Puts hold
    c.global_segment_size = 64 << 10;
    c.local_buffer_size = 1 << 16;
    c.enable_checksum = true;
    c.enable_offload = ssd;
    c.ssd.path = root_ + "/" + host;
    return c;
  }
  // The SSD tier's rounds and the heartbeat on a scheduler the tests never advance: they step
  // every round themselves.
  Client* Add(const ClientConfig& c, StorageFault fault = {}) {
    ClientParts p;
    p.master = master_;
    p.local_segments = local_;
    p.engine = engine_;
    p.scheduler = &scheduler_;
    p.storage_fault = std::move(fault);
    auto cl = ClientInternal::Create(c, std::move(p));
    EXPECT_TRUE(cl.ok()) << cl.status().ToString();
    if (!cl.ok()) return nullptr;
    clients_.push_back(std::move(cl).value());
    return clients_.back().get();
  }
  std::vector<ReplicaKind> Kinds(Client* c, const std::string& key) {
    auto q = c->Query(key);
    std::vector<ReplicaKind> out;
    if (q.ok()) {
      for (const auto& r : q->replicas) out.push_back(r.kind);
    }
    return out;
  }
  // Frees every DRAM copy that has somewhere else to be (leases expired first).
  void EvictAllMemory() {
    clock_.AdvanceSec(11);
    master_->evictor().EvictBytes(1ULL << 40);
  }
  static std::string Bytes(size_t n, char seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + i * 13);
    return s;
  }
  static ReplicateConfig On(const std::vector<std::string>& names) {
    ReplicateConfig rc;
    rc.replica_num = names.size();
    rc.preferred_segments = names;
    return rc;
  }
  void FlipAByteIn(const std::string& dir) {
    for (const auto& f : fs::directory_iterator(dir)) {
      if (f.path().extension() != ".data") continue;
      std::fstream io(f.path(), std::ios::in | std::ios::out | std::ios::binary);
      io.seekp(10);
      io.put('\x7f');
    }
  }

  TempDir tmp_{"yb-offload"};
  const std::string root_ = tmp_.path();
  ManualClock clock_;
  ManualScheduler scheduler_{clock_};
  std::shared_ptr<MasterService> master_;
  std::shared_ptr<LocalSegmentRegistry> local_;
  std::shared_ptr<TransferEngine> engine_;
  std::vector<std::unique_ptr<Client>> clients_;
};

TEST_F(ClientOffloadTest, EagerOffloadThenEvictionLeavesADiskHitReadableAnywhere) {
  StartMaster(/*eager=*/true, /*on_evict=*/false);
  Client* a = Add(Config("a", true));
  Client* b = Add(Config("b", false));
  std::string v = Bytes(3000, 'x');
  ASSERT_TRUE(a->Put("k", v.data(), v.size(), On({"a"})).ok());
  EXPECT_EQ(ClientInternal::RunOffloadOnce(*a), 1u);
  EXPECT_EQ(ClientInternal::DiskObjects(*a), 1u);
  EXPECT_EQ(Kinds(b, "k"), (std::vector<ReplicaKind>{ReplicaKind::kMemory, ReplicaKind::kLocalDisk}));
  EvictAllMemory();
  EXPECT_EQ(Kinds(b, "k"), (std::vector<ReplicaKind>{ReplicaKind::kLocalDisk}));
  EXPECT_EQ(master_->Stats().allocated, 0u);
  auto got = b->Get("k");  // another client, through a's SSD tier
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, v);
  std::string part1(1000, '\0'), part2(2000, '\0');  // and into scattered buffers
  auto n = a->Get("k", {{part1.data(), part1.size()}, {part2.data(), part2.size()}});
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(part1 + part2, v);
  auto batch = b->BatchGet(std::vector<std::string>{"k"});
  ASSERT_TRUE(batch[0].ok());
  EXPECT_EQ(*batch[0], v);
}

TEST_F(ClientOffloadTest, EvictionOffloadsInsteadOfDropping) {
  StartMaster(/*eager=*/false, /*on_evict=*/true);
  Client* a = Add(Config("a", true));
  std::vector<std::string> vals;
  for (int i = 0; i < 8; ++i) {
    vals.push_back(Bytes(4000, static_cast<char>(i)));
    ASSERT_TRUE(a->Put("k" + std::to_string(i), vals.back().data(), vals.back().size()).ok());
  }
  EvictAllMemory();
  EXPECT_EQ(master_->Stats().keys, 8u);
  EXPECT_GT(master_->Stats().allocated, 0u);  // memory stays until the copies are durable
  while (ClientInternal::RunOffloadOnce(*a) > 0) {
  }
  EXPECT_EQ(master_->Stats().allocated, 0u);
  for (int i = 0; i < 8; ++i) {
    auto got = a->Get("k" + std::to_string(i));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, vals[i]);
  }
}

TEST_F(ClientOffloadTest, ACorruptDiskCopyIsCaughtAndTheNextReplicaRead) {
  StartMaster(/*eager=*/true, /*on_evict=*/false);
  Client* a = Add(Config("a", true));
  Client* c = Add(Config("c", true));
  Client* b = Add(Config("b", false));
  std::string v = Bytes(5000, 'q');
  ASSERT_TRUE(b->Put("k", v.data(), v.size(), On({"a", "c"})).ok());
  ClientInternal::RunOffloadOnce(*a);
  ClientInternal::RunOffloadOnce(*c);
  EvictAllMemory();
  auto q = b->Query("k");
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(q->replicas.size(), 2u);
  // Damage the copy a reader tries first.
  auto first_segs = ClientInternal::segments(*a);
  bool a_first = std::find(first_segs.begin(), first_segs.end(), q->replicas[0].segment) != first_segs.end();
  FlipAByteIn(root_ + (a_first ? "/a" : "/c"));
  auto got = b->Get("k");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, v);
  FlipAByteIn(root_ + (a_first ? "/c" : "/a"));  // both damaged: a clear error, no garbage
  got = b->Get("k");
  EXPECT_EQ(got.status().code(), Code::kChecksumMismatch) << got.status().ToString();
}

TEST_F(ClientOffloadTest, AFullOrFailingDiskKeepsTheDramCopy) {
  StartMaster(/*eager=*/true, /*on_evict=*/false);
  ClientConfig cfg = Config("a", true);
  Client* a = Add(cfg, [](std::string_view op, const std::string&) { return op == "write" ? ENOSPC : 0; });
  std::string v = Bytes(2000, 'f');
  ASSERT_TRUE(a->Put("k", v.data(), v.size()).ok());
  EXPECT_EQ(ClientInternal::RunOffloadOnce(*a), 1u);
  EXPECT_EQ(ClientInternal::DiskObjects(*a), 0u);
  EXPECT_EQ(Kinds(a, "k"), (std::vector<ReplicaKind>{ReplicaKind::kMemory}));
  EXPECT_EQ(master_->Stats().offload_failed, 1u);
  auto got = a->Get("k");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, v);
  EXPECT_TRUE(fs::is_empty(root_ + "/a"));  // nothing torn left behind
}

TEST_F(ClientOffloadTest, ARestartedClientServesItsSsdDataAgain) {
  StartMaster(/*eager=*/true, /*on_evict=*/false);
  Client* b = Add(Config("b", false));
  std::string v = Bytes(3000, 'r');
  {
    Client* a = Add(Config("a", true));
    ASSERT_TRUE(a->Put("k", v.data(), v.size(), On({"a"})).ok());
    ClientInternal::RunOffloadOnce(*a);
    clients_.erase(clients_.begin() + 1);  // a goes away: its segment and replicas with it
  }
  EXPECT_FALSE(*b->IsExist("k"));
  Client* a2 = Add(Config("a", true));  // same storage directory
  EXPECT_EQ(ClientInternal::DiskObjects(*a2), 1u);
  auto got = b->Get("k");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, v);
}

TEST_F(ClientOffloadTest, BucketEvictionDropsTheMastersDiskReplicasFirst) {
  StartMaster(/*eager=*/true, /*on_evict=*/false);
  ClientConfig cfg = Config("a", true);
  cfg.ssd.total_size_limit = 40000;
  cfg.ssd.bucket_keys_limit = 2;
  cfg.global_segment_size = 1 << 20;
  Client* a = Add(cfg);
  std::string v = Bytes(5000, 'e');
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(a->Put("k" + std::to_string(i), v.data(), v.size()).ok());
    while (ClientInternal::RunOffloadOnce(*a) > 0) {
    }
  }
  EvictAllMemory();
  // 40 KB of disk holds at most 7 objects; FIFO took the oldest buckets, and the master was told.
  EXPECT_LT(ClientInternal::DiskObjects(*a), 8u);
  EXPECT_FALSE(*a->IsExist("k0"));
  EXPECT_TRUE(*a->IsExist("k7"));
  EXPECT_EQ(master_->Stats().keys, ClientInternal::DiskObjects(*a));
  EXPECT_GT(master_->Stats().disk_dropped, 0u);
}

}  // namespace
}  // namespace yb
