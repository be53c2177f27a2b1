// Why a read missed (MissReason): each way a key can go leaves its reason, a Get's error says it,
// and the master counts misses and refused Puts by reason.
#include <gtest/gtest.h>

#include "master/master_image.h"
#include "master/master_test_util.h"

namespace yb {
namespace {

using testing::MasterFixture;

class MissReasonTest : public MasterFixture {
 protected:
  MissReason Why(const std::string& key, CallContext ctx = {}) {
    auto w = master_->WhyMissing(ctx.client.empty() ? ctx_ : ctx, key);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? w->reason : MissReason::kStored;
  }
};

TEST_F(MissReasonTest, EachWayAKeyGoesLeavesItsReason) {
  CallContext owner_b = Register(ClientId{2, 2});
  Mount("a", 1 << 20);
  const SegmentId b = Mount("b", 1 << 20, owner_b);
  EXPECT_EQ(Why("never"), MissReason::kNotRemembered);

  ASSERT_TRUE(Put("k", 100).ok());
  EXPECT_EQ(Why("k"), MissReason::kStored);
  clock_.AdvanceSec(3);
  ASSERT_TRUE(master_->Remove(ctx_, "k", true).ok());
  clock_.AdvanceSec(12);
  auto w = master_->WhyMissing(ctx_, "k");
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->reason, MissReason::kRemoved);
  EXPECT_EQ(w->age_ms, 12'000);
  EXPECT_EQ(DescribeMiss(*w), "removed 12 s ago");

  ASSERT_TRUE(master_->PutStart(ctx_, "p", 100, {}).ok());
  EXPECT_EQ(Why("p"), MissReason::kPutInProgress);
  ASSERT_TRUE(master_->PutRevoke(ctx_, "p").ok());
  EXPECT_EQ(Why("p"), MissReason::kPutAbandoned);

  PutBothAndOnlyOn("b", "both", "only_b", 100);
  ASSERT_TRUE(master_->UnmountSegment(owner_b, b).ok());
  EXPECT_EQ(Why("only_b"), MissReason::kNodeLost);
  EXPECT_EQ(Why("both"), MissReason::kStored);

  // Written again, then gone another way: the newest reason is the one remembered.
  ASSERT_TRUE(Put("k", 100).ok());
  ASSERT_TRUE(master_->Remove(ctx_, "k", true).ok());
  ASSERT_TRUE(Put("k", 100).ok());
  EXPECT_EQ(Why("k"), MissReason::kStored);
  EXPECT_EQ(*master_->RemoveAll(ctx_, true), 2u);
  EXPECT_EQ(Why("k"), MissReason::kRemoved);
}

TEST_F(MissReasonTest, EvictedKeysAndRefusedPutsSaySo) {
  Mount("a", 4096);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put("e" + std::to_string(i), 1024).ok());
  clock_.AdvanceSec(11);  // past every lease
  ASSERT_TRUE(Put("e4", 1024).ok());  // no room: the least recent goes
  EXPECT_EQ(Why("e0"), MissReason::kEvicted);

  // Nothing evictable: hard-pinned objects fill the pool.
  ReplicateConfig pinned;
  pinned.with_hard_pin = true;
  EXPECT_EQ(*master_->RemoveAll(ctx_, true), 4u);
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(Put("h" + std::to_string(i), 1024, pinned).ok());
  EXPECT_EQ(Put("big", 1024).code(), Code::kNoAvailableHandle);
  EXPECT_EQ(Why("big"), MissReason::kRefusedNoSpace);
  EXPECT_EQ(master_->Stats().puts_refused[static_cast<size_t>(MissReason::kRefusedNoSpace)], 1u);

  ASSERT_TRUE(master_->SetTenantQuota("small", 1000).ok());
  CallContext small = Register(ClientId{6, 6}, "small");
  EXPECT_EQ(Put("q", 2000, {}, small).code(), Code::kTenantQuotaExceeded);
  EXPECT_EQ(Why("q", small), MissReason::kRefusedQuota);
  EXPECT_EQ(Why("q"), MissReason::kNotRemembered);  // another tenant's key of the same name
}

TEST_F(MissReasonTest, MissesAreCountedByReasonAndAGetSaysWhy) {
  Mount("a", 1 << 20);
  ASSERT_TRUE(Put("k", 100).ok());
  ASSERT_TRUE(master_->Remove(ctx_, "k", true).ok());
  auto get = master_->GetReplicaList(ctx_, "k", false);
  EXPECT_EQ(get.code(), Code::kObjectNotFound);
  EXPECT_NE(get.status().message().find("removed 0 s ago"), std::string::npos) << get.status().ToString();
  EXPECT_FALSE(Exists("k"));
  EXPECT_FALSE(Exists("never"));
  EXPECT_FALSE(Exists("never"));
  EXPECT_EQ(master_->GetReplicaList(ctx_, "never", false).code(), Code::kObjectNotFound);
  const MasterStats st = master_->Stats();
  EXPECT_EQ(st.get_misses[static_cast<size_t>(MissReason::kRemoved)], 1u);
  EXPECT_EQ(st.get_misses[static_cast<size_t>(MissReason::kNotRemembered)], 1u);
  EXPECT_EQ(st.exist_misses[static_cast<size_t>(MissReason::kRemoved)], 1u);
  EXPECT_EQ(st.exist_misses[static_cast<size_t>(MissReason::kNotRemembered)], 2u);
  // Asking why counts no miss.
  EXPECT_EQ(Why("k"), MissReason::kRemoved);
  EXPECT_EQ(master_->Stats().get_misses[static_cast<size_t>(MissReason::kRemoved)], 1u);
}

TEST_F(MissReasonTest, TheTableIsBoundedAndCanBeTurnedOff) {
  MasterConfig c;
  c.miss_reason_keys = 0;
  Reset(c);
  Mount("a", 1 << 20);
  ASSERT_TRUE(Put("k", 100).ok());
  ASSERT_TRUE(master_->Remove(ctx_, "k", true).ok());
  EXPECT_EQ(Why("k"), MissReason::kNotRemembered);
  EXPECT_EQ(master_->Stats().miss_reason_capacity, 0u);

  c.miss_reason_keys = 5000;
  c.object_shards = 4;
  Reset(c);
  Mount("a", 1 << 20);
  const uint64_t capacity = master_->Stats().miss_reason_capacity;  // rounded up to whole shards
  EXPECT_GE(capacity, 5000u);
  EXPECT_LT(capacity, 5100u);
  for (int i = 0; i < 20'000; ++i) {
    ASSERT_TRUE(Put("k" + std::to_string(i), 8).ok());
    ASSERT_TRUE(master_->Remove(ctx_, "k" + std::to_string(i), true).ok());
  }
  int remembered = 0;
  for (int i = 0; i < 20'000; ++i) remembered += Why("k" + std::to_string(i)) == MissReason::kRemoved;
  EXPECT_LE(static_cast<uint64_t>(remembered), capacity);
  EXPECT_GE(remembered, 4000);  // the newest, spread over the shards by hash
  EXPECT_EQ(Why("k19999"), MissReason::kRemoved);
}

// The log's records say why keys went: a master built from them (restarted from its log, or a
// standby taking over) explains the same misses, across a snapshot that replaces the rest.
TEST_F(MissReasonTest, AMasterBuiltFromTheLogRemembersWhyKeysWent) {
  testing::ImageSink sink;
  sink.image.gone = GoneKeys(1000);
  master_->SetSink(&sink);
  CallContext owner_b = Register(ClientId{2, 2});
  Mount("a", 1 << 20);
  const SegmentId b = Mount("b", 1 << 20, owner_b);
  ASSERT_TRUE(Put("removed", 100).ok());
  ASSERT_TRUE(master_->Remove(ctx_, "removed", true).ok());
  ASSERT_TRUE(master_->PutStart(ctx_, "abandoned", 100, {}).ok());
  ASSERT_TRUE(master_->PutRevoke(ctx_, "abandoned").ok());
  PutBothAndOnlyOn("b", "both", "only_b", 100);
  ASSERT_TRUE(master_->UnmountSegment(owner_b, b).ok());
  ASSERT_TRUE(Put("upserted", 100).ok());
  ASSERT_TRUE(master_->UpsertStart(ctx_, "upserted", 100, {}).ok());  // replaced at once: nothing noted
  ASSERT_TRUE(master_->PutEnd(ctx_, "upserted", std::nullopt).ok());

  // A snapshot taken now replaces the image's state and keeps what it remembers.
  MasterImage snapshot;
  master_->WriteImage([&](const pb::LogRecord& r) { snapshot.Apply(r); });
  sink.image.TakeSnapshotState(std::move(snapshot));
  EXPECT_EQ(sink.image.gone.size(), 3u);

  auto again = MasterService::Create(config_, clock_).value();
  ASSERT_TRUE(again->Load(sink.image).ok());
  auto why = [&](const std::string& key) { return again->WhyMissing(ctx_, key).value(); };
  EXPECT_EQ(why("removed").reason, MissReason::kRemoved);
  EXPECT_GE(why("removed").age_ms, 0);
  EXPECT_LE(why("removed").age_ms, 5000);  // as long ago as the wall clock says
  EXPECT_EQ(why("abandoned").reason, MissReason::kPutAbandoned);
  EXPECT_EQ(why("only_b").reason, MissReason::kNodeLost);
  EXPECT_EQ(why("both").reason, MissReason::kStored);
  EXPECT_EQ(why("upserted").reason, MissReason::kStored);
  EXPECT_EQ(why("never").reason, MissReason::kNotRemembered);

  // A record without a reason (a log written before it) or with one a miss cannot give leaves
  // nothing remembered.
  MasterImage old;
  old.gone = GoneKeys(1000);
  pb::LogRecord r;
  r.set_object_gone(std::string("\0\0old", 5));
  old.Apply(r);
  r.set_gone_reason(static_cast<uint32_t>(MissReason::kPutInProgress));
  old.Apply(r);
  r.set_gone_reason(200);
  old.Apply(r);
  EXPECT_EQ(old.gone.size(), 0u);
}

TEST_F(MissReasonTest, AConfigurationOverTheBoundIsRefused) {
  MasterConfig c;
  c.miss_reason_keys = (1ULL << 31) + 1;
  EXPECT_EQ(MasterService::Create(c, clock_).status().code(), Code::kInvalidParams);
}

}  // namespace
}  // namespace yb
