// Partitions as the master sees them: holders that clients report they cannot reach.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "master/master_service.h"
#include "master/master_test_util.h"

namespace yb {
namespace {

using MasterServiceTest = testing::MasterFixture;

// Partitions (docs/design.md): a holder clients cannot reach is handed out only where nothing else
// is, while their reports last; a holder the master does not hear from takes no new replicas.
class PartitionTest : public MasterServiceTest {
 protected:
  void SetUp() override {
    MasterServiceTest::SetUp();
    a_ = Register(ClientId{2, 2});
    b_ = Register(ClientId{3, 3});
    seg_a_ = Mount("a", 1 << 20, a_);
    seg_b_ = Mount("b", 1 << 20, b_);
    PutBothAndOnlyOn("a", "on-both", "only-on-a", 1000);
  }
  // ctx_ (a reader with no memory of its own) says it cannot reach `seg`.
  void Report(SegmentId seg) {
    PingState st;
    st.unreachable = {seg};
    ASSERT_TRUE(master_->Ping(ctx_, st).ok());
  }
  std::vector<SegmentId> ReplicaSegments(const std::string& key) {
    std::vector<SegmentId> out;
    auto info = master_->GetReplicaList(ctx_, key, false);
    EXPECT_TRUE(info.ok()) << info.status().ToString();
    if (info.ok()) {
      for (const auto& r : info->replicas) out.push_back(r.segment);
    }
    return out;
  }
  CallContext a_, b_;
  SegmentId seg_a_ = 0, seg_b_ = 0;
};

TEST_F(PartitionTest, AReportedHolderIsHandedOutOnlyWhereNoOtherReplicaIsUntilReportsLapse) {
  ASSERT_EQ(ReplicaSegments("on-both").size(), 2u);
  Report(seg_a_);
  EXPECT_EQ(master_->Stats().segments_unreachable, 1u);
  EXPECT_EQ(ReplicaSegments("on-both"), std::vector<SegmentId>{seg_b_});
  EXPECT_EQ(ReplicaSegments("only-on-a"), std::vector<SegmentId>{seg_a_});  // nothing else to read
  // New objects go elsewhere while the report lasts.
  for (int i = 0; i < 10; ++i) {
    auto r = master_->PutStart(ctx_, "new" + std::to_string(i), 100, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)[0].segment, seg_b_);
  }
  // Reports renewed each heartbeat keep it; once they stop, it is handed out again.
  clock_.Advance(2000);
  Report(seg_a_);
  clock_.Advance(2000);
  EXPECT_EQ(ReplicaSegments("on-both").size(), 1u);
  clock_.Advance(1001);
  EXPECT_EQ(master_->Stats().segments_unreachable, 0u);
  EXPECT_EQ(ReplicaSegments("on-both").size(), 2u);
}

TEST_F(PartitionTest, ReportsNeverStopEveryWriteAndIgnoreTheReportersOwnSegments) {
  // A client that reports every segment (wrongly, or to harm) leaves writes possible.
  PingState st;
  st.unreachable = {seg_a_, seg_b_, 424242};
  ASSERT_TRUE(master_->Ping(ctx_, st).ok());
  EXPECT_EQ(master_->Stats().segments_unreachable, 2u);
  ReplicateConfig two;
  two.replica_num = 2;
  auto r = master_->PutStart(ctx_, "still-written", 100, two);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->size(), 1u);
  // Its own segment is not a client's to report.
  clock_.Advance(3001);
  PingState own;
  own.unreachable = {seg_a_};
  ASSERT_TRUE(master_->Ping(a_, own).ok());
  EXPECT_EQ(master_->Stats().segments_unreachable, 0u);
}

TEST_F(PartitionTest, AHolderNotHeardFromTakesNoNewReplicasButIsStillRead) {
  SilenceAllBut({a_});  // a_ and the reader ping; b_ is cut off from the master
  EXPECT_EQ(master_->Stats().segments_unheard, 1u);
  EXPECT_EQ(ReplicaSegments("on-both").size(), 2u);  // it may still serve its clients
  for (int i = 0; i < 10; ++i) {
    auto r = master_->PutStart(ctx_, "new" + std::to_string(i), 100, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ((*r)[0].segment, seg_a_);
  }
  ReplicateConfig on_b;
  on_b.preferred_segments = {"b"};
  auto r = master_->PutStart(ctx_, "prefers-b", 100, on_b);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].segment, seg_a_);
  // Heard again: it takes replicas once more.
  ASSERT_TRUE(master_->Ping(b_).ok());
  master_->LivenessOnce();
  clock_.Advance(1001);
  master_->LivenessOnce();
  EXPECT_EQ(master_->Stats().segments_unheard, 0u);
  auto back = master_->PutStart(ctx_, "prefers-b-again", 100, on_b);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0].segment, seg_b_);
}

}  // namespace
}  // namespace yb
