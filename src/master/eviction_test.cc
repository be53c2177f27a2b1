#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "master/master_test_util.h"

namespace yb {
namespace {

using testing::MasterFixture;

class EvictionTest : public MasterFixture {
 protected:
  static constexpr uint64_t kObj = 1024;
  // One segment holding exactly `n` objects of kObj bytes.
  void Pool(int n) { Mount("a", kObj * n); }
  std::string K(int i) { return "k" + std::to_string(i); }
  void PutN(int from, int to, ReplicateConfig cfg = {}) {
    for (int i = from; i < to; ++i) ASSERT_TRUE(Put(K(i), kObj, cfg).ok()) << i;
  }
  std::vector<std::string> Missing(int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
      if (!Exists(K(i))) out.push_back(K(i));
    }
    return out;
  }
};

TEST_F(EvictionTest, LeastRecentlyReadGoesFirst) {
  Pool(10);
  PutN(0, 10);
  ASSERT_TRUE(Read(K(0)).ok());  // k0 is now the most recent
  clock_.AdvanceSec(11);                                         // past every lease
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
  EXPECT_EQ(Missing(10), (std::vector<std::string>{K(1)}));
  EXPECT_EQ(master_->evictor().EvictBytes(2 * kObj), 2 * kObj);
  EXPECT_EQ(Missing(10), (std::vector<std::string>{K(1), K(2), K(3)}));
  EXPECT_EQ(master_->evictor().evicted_objects(), 3u);
}

TEST_F(EvictionTest, RecencyIsExactAcrossShards) {
  Mount("a", kObj * 1000);
  PutN(0, 1000);
  std::vector<int> order(1000);
  for (int i = 0; i < 1000; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(3));
  for (int i : order) ASSERT_TRUE(Read(K(i)).ok());
  clock_.AdvanceSec(11);
  EXPECT_EQ(master_->evictor().EvictBytes(300 * kObj), 300 * kObj);
  std::vector<std::string> expected;
  for (int j = 0; j < 300; ++j) expected.push_back(K(order[j]));
  std::sort(expected.begin(), expected.end());
  auto missing = Missing(1000);
  std::sort(missing.begin(), missing.end());
  EXPECT_EQ(missing, expected);
}

TEST_F(EvictionTest, HighWatermarkStartsBackgroundEviction) {
  Pool(20);
  PutN(0, 18);  // 0.90: not above the watermark
  EXPECT_EQ(master_->evictor().RunOnce(), 0u);
  PutN(18, 20);  // 1.00
  // Brings usage to (0.90 - 0.05) of capacity: 20 - 17 = 3 objects.
  EXPECT_EQ(master_->evictor().RunOnce(), 3 * kObj);
  EXPECT_EQ(Missing(20), (std::vector<std::string>{K(0), K(1), K(2)}));
}

TEST_F(EvictionTest, FailedAllocationEvictsAndThePutSucceeds) {
  Pool(10);
  PutN(0, 10);
  ASSERT_TRUE(Put("new", kObj).ok());
  EXPECT_FALSE(Exists(K(0)));
  EXPECT_TRUE(Exists("new"));
}

// Fault (a) of Mooncake: existence probes must never make a full pool refuse writes.
TEST_F(EvictionTest, ExistenceProbesNeverBlockWrites) {
  Pool(10);
  PutN(0, 10);
  std::vector<std::string> all;
  for (int i = 0; i < 10; ++i) all.push_back(K(i));
  for (int round = 0; round < 20; ++round) {
    for (const auto& k : all) (void)Exists(k);  // probe everything, present or not
    for (auto& r : master_->BatchExistKey(ctx_, all)) ASSERT_TRUE(r.ok());
    clock_.Advance(100);
    ASSERT_TRUE(Put("new" + std::to_string(round), kObj).ok()) << round;
    all.push_back("new" + std::to_string(round));
  }
  EXPECT_EQ(master_->Stats().keys, 10u);
}

TEST_F(EvictionTest, HardPinnedObjectsAreNeverEvicted) {
  Pool(10);
  ReplicateConfig hard;
  hard.with_hard_pin = true;
  PutN(0, 10, hard);
  clock_.AdvanceSec(3600);
  EXPECT_EQ(master_->evictor().EvictBytes(10 * kObj), 0u);
  EXPECT_EQ(Put("new", kObj).code(), Code::kNoAvailableHandle);
  EXPECT_TRUE(Missing(10).empty());
}

TEST_F(EvictionTest, SoftPinnedGoLastAndOnlyWhenAllowed) {
  Pool(10);
  ReplicateConfig soft;
  soft.with_soft_pin = true;
  PutN(0, 5, soft);  // the oldest are soft-pinned
  PutN(5, 10);
  EXPECT_EQ(master_->evictor().EvictBytes(6 * kObj), 6 * kObj);
  // All five unpinned went first, then the oldest soft-pinned one.
  EXPECT_EQ(Missing(10), (std::vector<std::string>{K(0), K(5), K(6), K(7), K(8), K(9)}));
}

TEST_F(EvictionTest, SoftPinnedStayWhenNotAllowed) {
  MasterConfig c;
  c.allow_evict_soft_pinned_objects = false;
  Reset(c);
  Pool(4);
  ReplicateConfig soft;
  soft.with_soft_pin = true;
  PutN(0, 4, soft);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), 0u);
  // After the soft pin's TTL (30 min) runs out the object is an ordinary candidate.
  clock_.AdvanceSec(31 * 60);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
}

// A lookup that reads no bytes (Query, get_size, get_replica_desc: no read pin) is not a use: it
// grants no lease and leaves the recency, so a caller polling sizes keeps nothing from eviction.
TEST_F(EvictionTest, LookupsThatReadNoBytesNeitherLeaseNorRenew) {
  Pool(4);
  PutN(0, 4);
  clock_.AdvanceSec(11);
  for (int i = 0; i < 5; ++i) ASSERT_EQ(master_->GetReplicaList(ctx_, K(0), false)->size, kObj);
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), kObj);
  EXPECT_EQ(Missing(4), (std::vector<std::string>{K(0)}));  // still the least recently read
  ASSERT_TRUE(master_->GetReplicaList(ctx_, K(1), false).ok());
  EXPECT_TRUE(master_->Remove(ctx_, K(1), false).ok());  // no lease to wait for
}

// A read in progress (a read pin) keeps its object; a lease alone does not: recency puts the
// objects read lately last, and they go once nothing older is left.
TEST_F(EvictionTest, ReadPinnedObjectsAreSkippedAndLeasedOnesGoInRecencyOrder) {
  Pool(4);
  PutN(0, 4);
  ASSERT_TRUE(Read(K(0)).ok());  // leased for 10 s, and the most recently used
  auto pin = master_->GetReplicaList(ctx_, K(1), true);
  ASSERT_TRUE(pin.ok());
  EXPECT_EQ(master_->evictor().EvictBytes(2 * kObj), 2 * kObj);  // k2, k3: the least recent
  EXPECT_EQ(Missing(4), (std::vector<std::string>{K(2), K(3)}));
  EXPECT_EQ(master_->Remove(ctx_, K(0), false).code(), Code::kObjectHasLease);  // Mooncake's promise
  EXPECT_EQ(master_->evictor().EvictBytes(4 * kObj), kObj);  // k0, leased; k1 is still being read
  EXPECT_EQ(Missing(4), (std::vector<std::string>{K(0), K(2), K(3)}));
  ASSERT_TRUE(master_->ReadEnd(ctx_, K(1), pin->read_pin).ok());
  EXPECT_EQ(master_->evictor().EvictBytes(4 * kObj), kObj);
}

// A holder paused past the heartbeat's gap (SIGSTOP, a hung host) takes no new replicas. Its
// objects are still there when it comes back: a Put that finds no room elsewhere must not evict
// them for memory it cannot use, and says why it is refused.
class EvictionUnheardTest : public EvictionTest {
 protected:
  void SetUp() override {
    EvictionTest::SetUp();
    a_ = Register(ClientId{2, 2});
    b_ = Register(ClientId{3, 3});
  }
  // Heartbeats from the writer (ctx_) and b_ alone: a_ goes unheard.
  void SilenceA() {
    SilenceAllBut({b_});
    ASSERT_EQ(master_->Stats().segments_unheard, 1u);
  }
  CallContext a_, b_;
};

TEST_F(EvictionUnheardTest, APutKeepsTheObjectsOfTheOnlyHolderNotHeardFrom) {
  Mount("a", kObj * 10, a_);
  PutN(0, 10);
  SilenceA();
  auto r = master_->PutStart(ctx_, "new", kObj, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kNoAvailableHandle);
  EXPECT_NE(r.status().message().find("not heard from"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(Missing(10).empty());
  EXPECT_EQ(master_->evictor().RunOnce(), 0u);  // full, but nothing of use to free
  EXPECT_EQ(master_->evictor().EvictBytes(kObj), 0u);
  EXPECT_TRUE(Missing(10).empty());
  // Heard again: a Put makes room as usual.
  ASSERT_TRUE(master_->Ping(a_).ok());
  master_->LivenessOnce();
  ASSERT_EQ(master_->Stats().segments_unheard, 0u);
  EXPECT_TRUE(Put("new", kObj).ok());
  EXPECT_EQ(Missing(10), (std::vector<std::string>{K(0)}));
}

TEST_F(EvictionUnheardTest, APutRefusedForLackOfAHolderLeavesNoEvictionForLater) {
  Mount("a", kObj * 10, a_);
  PutN(0, 5);
  SilenceA();
  EXPECT_FALSE(Put("new", kObj).ok());
  ASSERT_TRUE(master_->Ping(a_).ok());
  master_->LivenessOnce();
  EXPECT_EQ(master_->evictor().RunOnce(), 0u);  // half full: the refusal was not for memory
  EXPECT_TRUE(Missing(5).empty());
}

TEST_F(EvictionUnheardTest, APutEvictsOnlyWhereItCanThenWrite) {
  Mount("a", kObj * 10, a_);
  PutN(0, 10);  // all on a
  Mount("b", kObj * 10, b_);
  PutN(10, 20);                   // all on b
  ASSERT_TRUE(Read(K(10)).ok());  // b's objects are read after a's: a's are the least recent
  SilenceA();
  ASSERT_TRUE(Put("new", kObj).ok());
  const auto missing = Missing(20);
  ASSERT_FALSE(missing.empty());
  for (const auto& k : missing) EXPECT_GE(std::stoi(k.substr(1)), 10) << k << " was on the unheard holder";
  // Background eviction sees only b: full again after the Put, so it frees room there.
  EXPECT_GT(master_->evictor().RunOnce(), 0u);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(Exists(K(i))) << i;
}

TEST_F(EvictionTest, ADrainingSegmentsObjectsAreNotEvictedForRoomItCannotGive) {
  const SegmentId a = Mount("a", kObj * 10);
  PutN(0, 10);
  ASSERT_TRUE(master_->DrainSegment(ctx_, a).ok());
  auto r = master_->PutStart(ctx_, "new", kObj, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("drain"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(Missing(10).empty());
}

}  // namespace
}  // namespace yb
