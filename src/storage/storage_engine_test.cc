#include "storage/storage_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/temp_dir.h"

namespace yb::storage {
namespace {

namespace fs = std::filesystem;

class StorageEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.path = dir_;
    config_.bucket_keys_limit = 3;
    config_.total_size_limit = 10000;
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
};

TEST_F(StorageEngineTest, PacksObjectsIntoBucketsAndReadsThemBack) {
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

TEST_F(StorageEngineTest, RestartRecoversEveryIntactObject) {
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

TEST_F(StorageEngineTest, IncompleteOrCorruptBucketsAreDroppedOnRestart) {
  {
    auto e = OpenEngine();
    ASSERT_TRUE(PutN(*e, 0, 9).ok());  // buckets 1, 2, 3
  }
  fs::remove(dir_ + "/bucket-1.meta");  // as if killed between data and meta
  {
    std::fstream f(dir_ + "/bucket-2.meta", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.put('\x7f');  // a flipped byte in the metadata
  }
  std::ofstream(dir_ + "/bucket-9.meta.tmp") << "torn";
  std::ofstream(dir_ + "/bucket-9.data") << "torn";
  std::vector<StoredObject> rec;
  auto e = OpenEngine(&rec);
  EXPECT_EQ(rec.size(), 3u);  // only bucket 3 survives
  EXPECT_EQ(Get(*e, "k6"), Val(6));
  EXPECT_FALSE(e->Contains("k0"));
  EXPECT_FALSE(e->Contains("k3"));
  EXPECT_FALSE(fs::exists(dir_ + "/bucket-1.data"));
  EXPECT_FALSE(fs::exists(dir_ + "/bucket-2.meta"));
  EXPECT_FALSE(fs::exists(dir_ + "/bucket-9.data"));
}

TEST_F(StorageEngineTest, ACorruptByteInDataIsCaughtByTheChecksum) {
  auto e = OpenEngine();
  ASSERT_TRUE(PutN(*e, 0, 3).ok());
  {
    std::fstream f(dir_ + "/bucket-1.data", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(150);  // inside k1
    f.put('!');
  }
  Code c;
  EXPECT_EQ(Get(*e, "k1", &c), "");
  EXPECT_EQ(c, Code::kChecksumMismatch);
  EXPECT_EQ(Get(*e, "k0"), Val(0));
}

TEST_F(StorageEngineTest, FifoEvictsTheOldestBucketLruTheLeastRecentlyRead) {
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
    fs::remove_all(dir_);
    fs::create_directory(dir_);
  }
}

TEST_F(StorageEngineTest, AnUnreachableMasterKeepsTheBucket) {
  auto e = OpenEngine();
  ASSERT_TRUE(PutN(*e, 0, 3).ok());
  Status st = e->EvictBucket(1, [](const std::vector<std::string>&) { return Status(Code::kRpcFail, "down"); });
  EXPECT_EQ(st.code(), Code::kRpcFail);
  EXPECT_EQ(Get(*e, "k2"), Val(2));
  EXPECT_TRUE(fs::exists(dir_ + "/bucket-1.data"));
  ASSERT_TRUE(e->EvictBucket(1, [](const std::vector<std::string>&) { return Status::OK(); }).ok());
  EXPECT_FALSE(e->Contains("k2"));
  EXPECT_FALSE(fs::exists(dir_ + "/bucket-1.data"));
  EXPECT_EQ(e->used_bytes(), 0u);
}

TEST_F(StorageEngineTest, FullStorageRefusesAndBadConfigIsRefused) {
  auto e = OpenEngine();
  EXPECT_EQ(PutN(*e, 0, 200).code(), Code::kNoAvailableHandle);  // 20 KB > 10 KB
  EXPECT_EQ(e->bucket_count(), 0u);
  StorageConfig bad = config_;
  bad.low_watermark = 0.95;
  EXPECT_EQ(StorageEngine(bad).Open().code(), Code::kInvalidParams);
  EXPECT_EQ(ParseBucketPolicy("random").code(), Code::kInvalidParams);
  EXPECT_EQ(*ParseBucketPolicy("lru"), BucketPolicy::kLru);
}

TEST_F(StorageEngineTest, ANewerValueSurvivesTheOldBucketsEvictionAndARestart) {
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
TEST_F(StorageEngineTest, ForgottenKeysStayForgottenAfterARestart) {
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
  EXPECT_EQ(fs::file_size(fs::path(dir_) / "forgotten.log"), 0u);
}

TEST_F(StorageEngineTest, ATornForgottenLogKeepsItsWholeRecords) {
  {
    auto e = OpenEngine();
    ASSERT_TRUE(PutN(*e, 0, 3).ok());
    ASSERT_TRUE(e->Forget("k0").ok());
  }
  {
    std::ofstream log(fs::path(dir_) / "forgotten.log", std::ios::binary | std::ios::app);
    log << "YBBF\x05";  // a record cut short by a crash
  }
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

TEST_F(StorageEngineTest, AFailingDeviceGivesAClearErrorAndKeepsWhatWasDurable) {
  int writes = 0;
  config_.fault = [&](std::string_view op, const std::string& path) {
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
  EXPECT_FALSE(fs::exists(dir_ + "/bucket-2.data"));  // the torn bucket is gone

  config_.fault = [](std::string_view op, const std::string&) { return op == "read" ? EIO : 0; };
  auto broken = OpenEngine();
  Get(*broken, "k0", &c);
  EXPECT_EQ(c, Code::kFileReadFail);
}

}  // namespace
}  // namespace yb::storage
