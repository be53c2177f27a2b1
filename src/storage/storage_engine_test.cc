#include "storage/storage_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/temp_dir.h"
#include "storage/memory_device.h"

namespace yb::storage {
namespace {

namespace fs = std::filesystem;

// Every case runs on both devices: a directory (FileDevice) and memory (MemoryDevice, kept across
// the engine's restarts as a disk is). Tests damage, remove or add files with the helpers below,
// and fail operations through fault_ (asked as the device asks its FaultHook).
enum class Kind { kFile, kMemory };

class StorageEngineTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    config_.path = dir_;
    config_.bucket_keys_limit = 3;
    config_.total_size_limit = 10000;
    FaultHook hook = [this](std::string_view op, const std::string& where) { return fault_ ? fault_(op, where) : 0; };
    if (GetParam() == Kind::kMemory) {
      MemoryDevice::Options o;
      o.fault = hook;
      memory_ = std::make_shared<MemoryDevice>(o);
      config_.device = memory_;
    } else {
      config_.fault = hook;
    }
  }

  bool Exists(const std::string& name) const {
    return memory_ ? memory_->Exists(name) : fs::exists(fs::path(dir_) / name);
  }
  void Remove(const std::string& name) {
    if (memory_) {
      memory_->Remove({name});
    } else {
      fs::remove(fs::path(dir_) / name);
    }
  }
  // Flips the bits of one byte, as a bad sector would.
  void Damage(const std::string& name, uint64_t offset) {
    if (memory_) {
      ASSERT_TRUE(memory_->Damage(name, offset));
      return;
    }
    std::fstream f(fs::path(dir_) / name, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    const char c = static_cast<char>(f.get());
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(~c));
  }
  // Adds `bytes` at the end of `name` (created if absent), as a crash mid-write leaves them.
  void AppendRaw(const std::string& name, const std::string& bytes) {
    if (memory_) {
      memory_->Put(name, memory_->Content(name) + bytes);
    } else {
      std::ofstream(fs::path(dir_) / name, std::ios::binary | std::ios::app) << bytes;
    }
  }
  uint64_t SizeOf(const std::string& name) const {
    return memory_ ? memory_->Content(name).size() : fs::file_size(fs::path(dir_) / name);
  }
  // An empty device again.
  void Wipe() {
    if (memory_) {
      memory_->Remove(*memory_->List());
    } else {
      fs::remove_all(dir_);
      fs::create_directory(dir_);
    }
  }

  std::unique_ptr<StorageEngine> OpenEngine(std::vector<StoredObject>* recovered = nullptr) {
    auto e = std::make_unique<StorageEngine>(config_);
    auto r = e->Open();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (recovered && r.ok()) *recovered = *r;
    return e;
  }

  static std::string Val(int i, size_t n = 100) { return std::string(n, static_cast<char>('a' + i % 26)); }

  Status PutN(StorageEngine& e, int from, int to, size_t n = 100) {
    std::vector<std::string> vals;
    for (int i = from; i < to; ++i) vals.push_back(Val(i, n));
    std::vector<StorageEngine::Value> in;
    for (int i = from; i < to; ++i) in.push_back({"k" + std::to_string(i), vals[i - from]});
    return e.Put(in);
  }

  std::string Get(StorageEngine& e, const std::string& key, Code* code = nullptr) {
    std::string buf(1000, '\0');
    auto r = e.Read(key, buf.data(), buf.size());
    if (code) *code = r.code();
    return r.ok() ? buf.substr(0, *r) : "";
  }

  TempDir tmp_{"yb-storage"};
  const std::string dir_ = tmp_.path();
  StorageConfig config_;
  FaultHook fault_;
  std::shared_ptr<MemoryDevice> memory_;  // the memory device's cases
};

TEST_P(StorageEngineTest, PacksObjectsIntoBucketsAndReadsThemBack) {
  auto e = OpenEngine();
  ASSERT_TRUE(PutN(*e, 0, 10).ok());
  EXPECT_EQ(e->bucket_count(), 4u);  // 3 keys per bucket
  EXPECT_EQ(e->used_bytes(), 1000u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(Get(*e, "k" + std::to_string(i)), Val(i));
  Code c;
  Get(*e, "nope", &c);
  EXPECT_EQ(c, Code::kObjectNotFound);
  std::string v2(100, 'Z');
  ASSERT_TRUE(e->Put({{"k0", v2}}).ok());  // written again: the new value replaces the old
  EXPECT_EQ(e->bucket_count(), 5u);
  EXPECT_EQ(Get(*e, "k0"), v2);
  EXPECT_EQ(e->List().size(), 10u);
  std::string small(10, '\0');
  EXPECT_EQ(e->Read("k1", small.data(), small.size()).code(), Code::kBufferOverflow);
}

TEST_P(StorageEngineTest, RestartRecoversEveryIntactObject) {
  {
    auto e = OpenEngine();
    ASSERT_TRUE(PutN(*e, 0, 7).ok());
  }
  std::vector<StoredObject> rec;
  auto e = OpenEngine(&rec);
  EXPECT_EQ(rec.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(Get(*e, "k" + std::to_string(i)), Val(i));
  ASSERT_TRUE(PutN(*e, 7, 9).ok());  // new buckets get fresh ids
  EXPECT_EQ(e->bucket_count(), 4u);
}

TEST_P(StorageEngineTest, IncompleteOrCorruptBucketsAreDroppedOnRestart) {
  {
    auto e = OpenEngine();
    ASSERT_TRUE(PutN(*e, 0, 9).ok());  // buckets 1, 2, 3
  }
  Remove("bucket-1.meta");      // as if killed between data and meta
  Damage("bucket-2.meta", 20);  // a damaged byte in the metadata
  AppendRaw("bucket-9.meta.tmp", "torn");
  AppendRaw("bucket-9.data", "torn");
  std::vector<StoredObject> rec;
  auto e = OpenEngine(&rec);
  EXPECT_EQ(rec.size(), 3u);  // only bucket 3 survives
  EXPECT_EQ(Get(*e, "k6"), Val(6));
  EXPECT_FALSE(e->Contains("k0"));
  EXPECT_FALSE(e->Contains("k3"));
  EXPECT_FALSE(Exists("bucket-1.data"));
  EXPECT_FALSE(Exists("bucket-2.meta"));
  EXPECT_FALSE(Exists("bucket-9.data"));
  EXPECT_FALSE(Exists("bucket-9.meta.tmp"));
}

TEST_P(StorageEngineTest, ACorruptByteInDataIsCaughtByTheChecksum) {
  auto e = OpenEngine();
  ASSERT_TRUE(PutN(*e, 0, 3).ok());
  Damage("bucket-1.data", 150);  // inside k1
  Code c;
  EXPECT_EQ(Get(*e, "k1", &c), "");
  EXPECT_EQ(c, Code::kChecksumMismatch);
  EXPECT_EQ(Get(*e, "k0"), Val(0));
}

TEST_P(StorageEngineTest, FifoEvictsTheOldestBucketLruTheLeastRecentlyRead) {
  for (const char* policy : {"fifo", "lru"}) {
    config_.eviction_policy = policy;
    config_.bucket_keys_limit = 1;
    config_.total_size_limit = 1000;
    auto e = OpenEngine();
    ASSERT_TRUE(PutN(*e, 0, 10, 95).ok());  // 950 bytes: above the 0.90 watermark
    Get(*e, "k0");                          // the oldest is read now
    auto victims = e->PickEvictions();      // down to 0.80: two buckets
    ASSERT_EQ(victims.size(), 2u);
    std::vector<std::string> told;
    for (auto id : victims) {
      ASSERT_TRUE(e->EvictBucket(id, [&](const std::vector<std::string>& keys) {
                     told.insert(told.end(), keys.begin(), keys.end());
                     return Status::OK();
                   }).ok());
    }
    if (std::string(policy) == "fifo") {
      EXPECT_EQ(told, (std::vector<std::string>{"k0", "k1"}));
    } else {
      EXPECT_EQ(told, (std::vector<std::string>{"k1", "k2"}));
    }
    EXPECT_TRUE(e->PickEvictions().empty());
    e.reset();
    Wipe();
  }
}

TEST_P(StorageEngineTest, AnUnreachableMasterKeepsTheBucket) {
  auto e = OpenEngine();
  ASSERT_TRUE(PutN(*e, 0, 3).ok());
  Status st = e->EvictBucket(1, [](const std::vector<std::string>&) { return Status(Code::kRpcFail, "down"); });
  EXPECT_EQ(st.code(), Code::kRpcFail);
  EXPECT_EQ(Get(*e, "k2"), Val(2));
  EXPECT_TRUE(Exists("bucket-1.data"));
  ASSERT_TRUE(e->EvictBucket(1, [](const std::vector<std::string>&) { return Status::OK(); }).ok());
  EXPECT_FALSE(e->Contains("k2"));
  EXPECT_FALSE(Exists("bucket-1.data"));
  EXPECT_EQ(e->used_bytes(), 0u);
}

TEST_P(StorageEngineTest, FullStorageRefusesAndBadConfigIsRefused) {
  auto e = OpenEngine();
  EXPECT_EQ(PutN(*e, 0, 200).code(), Code::kNoAvailableHandle);  // 20 KB > 10 KB
  EXPECT_EQ(e->bucket_count(), 0u);
  StorageConfig bad = config_;
  bad.low_watermark = 0.95;
  EXPECT_EQ(StorageEngine(bad).Open().code(), Code::kInvalidParams);
  EXPECT_EQ(MakeBucketPolicy("random").code(), Code::kInvalidParams);
  bad = config_;
  bad.eviction_policy = "random";
  EXPECT_EQ(StorageEngine(bad).Open().code(), Code::kInvalidParams);
  EXPECT_EQ((*MakeBucketPolicy("lru"))->name(), "lru");
}

TEST_P(StorageEngineTest, ANewerValueSurvivesTheOldBucketsEvictionAndARestart) {
  auto e = OpenEngine();
  ASSERT_TRUE(PutN(*e, 0, 3).ok());  // bucket 1: k0 k1 k2
  std::string v2(100, 'Z');
  ASSERT_TRUE(e->Put({{"k1", v2}}).ok());  // bucket 2: the newer k1
  {
    std::vector<StoredObject> recovered;
    auto again = OpenEngine(&recovered);  // a restart sees the newest value of k1
    EXPECT_EQ(recovered.size(), 3u);
    EXPECT_EQ(Get(*again, "k1"), v2);
  }
  std::vector<std::string> told;
  ASSERT_TRUE(e->EvictBucket(1, [&](const std::vector<std::string>& keys) {
                 told = keys;
                 return Status::OK();
               }).ok());
  EXPECT_EQ(told, (std::vector<std::string>{"k0", "k2"}));  // k1's value is not in bucket 1
  EXPECT_EQ(Get(*e, "k1"), v2);
  Code c;
  Get(*e, "k0", &c);
  EXPECT_EQ(c, Code::kObjectNotFound);
  ASSERT_TRUE(e->Forget("k1").ok());
  EXPECT_FALSE(e->Contains("k1"));
}

// A forgotten key (removed or replaced on the master) stays forgotten across a restart, with every
// older copy of it; a value of the same key written later survives. Before, Forget only touched
// the index, and the next Open recovered the removed value.
TEST_P(StorageEngineTest, ForgottenKeysStayForgottenAfterARestart) {
  {
    auto e = OpenEngine();
    ASSERT_TRUE(PutN(*e, 0, 3).ok());                          // bucket 1: k0 k1 k2
    ASSERT_TRUE(e->Put({{"k1", Val(7)}, {"k5", Val(5)}}).ok());  // bucket 2: a newer k1
    ASSERT_TRUE(e->Forget(std::vector<std::string>{"k1", "k2", "never"}).ok());
    ASSERT_TRUE(e->Put({{"k2", Val(9)}}).ok());  // bucket 3: k2 written again after its removal
  }
  std::vector<StoredObject> recovered;
  auto e = OpenEngine(&recovered);
  EXPECT_EQ(recovered.size(), 3u);  // k0, k5 and the new k2
  EXPECT_TRUE(e->Contains("k0"));
  EXPECT_FALSE(e->Contains("k1")) << "neither k1 of bucket 2 nor the older one of bucket 1";
  EXPECT_EQ(Get(*e, "k2"), Val(9));
  // Once the buckets a record speaks of are gone, the next Open drops the record.
  for (uint64_t b : {1, 2}) ASSERT_TRUE(e->EvictBucket(b, [](const auto&) { return Status::OK(); }).ok());
  e.reset();
  e = OpenEngine();
  EXPECT_EQ(Get(*e, "k2"), Val(9));
  EXPECT_EQ(SizeOf("forgotten.log"), 0u);
}

TEST_P(StorageEngineTest, ATornForgottenLogKeepsItsWholeRecords) {
  {
    auto e = OpenEngine();
    ASSERT_TRUE(PutN(*e, 0, 3).ok());
    ASSERT_TRUE(e->Forget("k0").ok());
  }
  AppendRaw("forgotten.log", "YBBF\x05");  // a record cut short by a crash
  auto e = OpenEngine();
  EXPECT_FALSE(e->Contains("k0"));
  EXPECT_TRUE(e->Contains("k1"));
  ASSERT_TRUE(e->Forget("k1").ok());  // appended after the repaired log
  e.reset();
  e = OpenEngine();
  EXPECT_FALSE(e->Contains("k0"));
  EXPECT_FALSE(e->Contains("k1"));
  EXPECT_TRUE(e->Contains("k2"));
}

TEST_P(StorageEngineTest, AFailingDeviceGivesAClearErrorAndKeepsWhatWasDurable) {
  int writes = 0;
  fault_ = [&](std::string_view op, const std::string& path) {
    // The second bucket's data file hits a full disk.
    if (op == "write" && path.find("bucket-2.data") != std::string::npos) return ENOSPC;
    ++writes;
    return 0;
  };
  auto e = OpenEngine();
  size_t stored = 99;
  Status st = PutN(*e, 0, 5);  // two buckets: 3 + 2 keys
  EXPECT_EQ(st.code(), Code::kFileWriteFail);
  EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.ToString();
  EXPECT_GT(writes, 0);
  std::vector<std::string> vals = {Val(5), Val(6)};
  st = e->Put({{"k5", vals[0]}, {"k6", vals[1]}}, &stored);  // bucket 3 is fine
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(stored, 2u);
  EXPECT_EQ(Get(*e, "k0"), Val(0));  // the first bucket stayed
  Code c;
  Get(*e, "k3", &c);
  EXPECT_EQ(c, Code::kObjectNotFound);
  EXPECT_FALSE(Exists("bucket-2.data"));  // the torn bucket is gone

  fault_ = [](std::string_view op, const std::string&) { return op == "read" ? EIO : 0; };
  auto broken = OpenEngine();
  Get(*broken, "k0", &c);
  EXPECT_EQ(c, Code::kFileReadFail);
}

// The memory device's own knobs: a capacity that fills as a disk does, and latency on the clock.
TEST(MemoryDeviceTest, AFullDeviceFailsTheWriteWithENOSPCAndSaysItHasNoRoom) {
  MemoryDevice::Options o;
  o.capacity = 250;
  auto device = std::make_shared<MemoryDevice>(o);
  StorageConfig config;
  config.device = device;
  config.bucket_keys_limit = 1;
  StorageEngine e(config);
  ASSERT_TRUE(e.Open().ok());
  const std::string a(100, 'a'), b(100, 'b');
  size_t stored = 0;
  Status st = e.Put({{"a", a}, {"b", b}}, &stored);  // bucket 2's data does not fit beside bucket 1
  EXPECT_EQ(st.code(), Code::kFileWriteFail);
  EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.ToString();
  EXPECT_EQ(stored, 1u);
  EXPECT_TRUE(e.Contains("a"));
  EXPECT_FALSE(e.Contains("b"));
  EXPECT_FALSE(device->Exists("bucket-2.data"));  // the torn bucket is gone
  EXPECT_LT(device->FreeBytes(), 150u);
}

TEST(MemoryDeviceTest, ReadsAndWritesWaitTheirLatencyOnTheClock) {
  ManualClock clock;
  MemoryDevice::Options o;
  o.clock = &clock;
  o.read_latency = std::chrono::milliseconds(3);
  o.write_latency = std::chrono::milliseconds(10);
  MemoryDevice device(o);
  const TimeMs start = clock.NowMs();
  ASSERT_TRUE(device.WriteDurable("f", {"hello", " world"}).ok());
  EXPECT_EQ(clock.NowMs() - start, 10);
  char buf[5];
  ASSERT_TRUE(device.ReadAt("f", 6, buf, 5).ok());
  EXPECT_EQ(std::string(buf, 5), "world");
  EXPECT_EQ(clock.NowMs() - start, 13);
  EXPECT_EQ(device.ReadAt("f", 8, buf, 5).code(), Code::kFileReadFail);  // past its end
  EXPECT_EQ(device.ReadAt("g", 0, buf, 1).code(), Code::kFileOpenFail);
  EXPECT_EQ(device.ReadAll("g").code(), Code::kFileNotFound);
}

TEST(BucketPolicyTest, FifoKeepsWriteOrderLruPutsTheLeastRecentlyReadFirst) {
  std::vector<BucketStats> buckets = {{1, 10, 7}, {2, 10, 3}, {3, 10, 5}};
  auto fifo = MakeBucketPolicy("fifo");
  ASSERT_TRUE(fifo.ok());
  auto order = buckets;
  (*fifo)->Order(order);
  EXPECT_EQ(order[0].id, 1u);
  EXPECT_EQ(order[2].id, 3u);
  auto lru = MakeBucketPolicy("lru");
  ASSERT_TRUE(lru.ok());
  order = buckets;
  (*lru)->Order(order);
  EXPECT_EQ(order[0].id, 2u);
  EXPECT_EQ(order[1].id, 3u);
  EXPECT_EQ(order[2].id, 1u);
}

INSTANTIATE_TEST_SUITE_P(Devices, StorageEngineTest, ::testing::Values(Kind::kFile, Kind::kMemory),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return info.param == Kind::kFile ? "File" : "Memory";
                         });

}  // namespace
}  // namespace yb::storage
