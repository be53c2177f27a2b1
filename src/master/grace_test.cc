// The grace of a client declared dead: back with its memory in time, it keeps its replicas.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "master/master_service.h"
#include "master/master_test_util.h"

namespace yb {
namespace {

using MasterServiceTest = testing::MasterFixture;

// A client declared dead (a partition, a process paused past client_ttl) keeps its segments
// suspended for the grace: not read, no new replicas, no repair; back with the same memory it has
// every replica again; not back by the grace's end, they are dropped (and repaired from others).
class GraceTest : public MasterServiceTest {
 protected:
  void SetUp() override {
    MasterConfig mc;
    mc.client_grace_sec = 20;
    Reset(mc);
    node_ = Register(ClientId{2, 2});
    ASSERT_TRUE(master_->MountSegment(node_, seg_).ok());
    Mount("other", 1 << 20);  // ctx_'s, for the second replicas
    PutBothAndOnlyOn("node", "on-both", "only-on-node", 1000);
    ASSERT_EQ(master_->GetReplicaList(ctx_, "only-on-node", false)->replicas.size(), 1u);
  }
  // The node falls silent past client_ttl while ctx_ keeps pinging.
  void NodeDeclaredDead() {
    clock_.AdvanceSec(11);
    ASSERT_TRUE(master_->Ping(ctx_).ok());
    ASSERT_EQ(master_->LivenessOnce(), 1u);
  }
  CallContext node_;
  SegmentMount seg_{{801, "node", 0x10000000ULL, 1 << 20, "node:1"}, 5};
};

TEST_F(GraceTest, ADeadClientBackWithItsMemoryWithinTheGraceKeepsEveryReplica) {
  NodeDeclaredDead();
  EXPECT_EQ(master_->Stats().segments_unconfirmed, 1u);
  EXPECT_TRUE(Exists("only-on-node"));  // kept, but not read meanwhile
  EXPECT_EQ(master_->GetReplicaList(ctx_, "only-on-node", false).code(), Code::kReplicaNotReady);
  auto both = master_->GetReplicaList(ctx_, "on-both", false);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->replicas.size(), 1u);  // the live one only
  ReplicateConfig only;
  only.preferred_segments = {"node"};
  auto placed = master_->PutStart(ctx_, "new", 1000, only);
  ASSERT_TRUE(placed.ok());
  EXPECT_NE((*placed)[0].segment, seg_.id);              // no new replica on it
  EXPECT_TRUE(master_->RepairFetch(ctx_, 10)->empty());  // repair waits
  clock_.AdvanceSec(15);                                 // within the 20 s grace
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  master_->RunBackgroundOnce();
  ASSERT_TRUE(master_->RegisterClient({node_.client, "host", "default", false, node_.token}).ok());
  ASSERT_TRUE(master_->MountSegment(node_, seg_).ok());  // the same memory
  auto info = master_->GetReplicaList(ctx_, "only-on-node", false);
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(master_->Stats().segments_unconfirmed, 0u);
  EXPECT_EQ(master_->GetReplicaList(ctx_, "on-both", false)->replicas.size(), 2u);
  clock_.AdvanceSec(30);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  ASSERT_TRUE(master_->Ping(node_).ok());
  master_->RunBackgroundOnce();
  EXPECT_TRUE(master_->GetReplicaList(ctx_, "only-on-node", false).ok());  // not dropped later either
  EXPECT_EQ(master_->Stats().segments, 2u);
}

// Eviction during the grace frees live memory only: the oldest object, held by the suspended node
// alone, is no candidate (evicting it would free nothing a Put can use, and break the promise).
TEST_F(GraceTest, EvictionDuringTheGraceKeepsTheSuspendedNodesObjects) {
  NodeDeclaredDead();
  ReplicateConfig on_other;
  on_other.preferred_segments = {"other"};
  for (int i = 0; i < 30; ++i) {  // 3 MB through a 1 MiB segment: eviction makes the room
    ASSERT_TRUE(Put("fill" + std::to_string(i), 100 << 10, on_other).ok()) << i;
  }
  EXPECT_GT(master_->Stats().evicted_objects, 0u);
  EXPECT_TRUE(Exists("only-on-node"));
  ASSERT_TRUE(master_->RegisterClient({node_.client, "host", "default", false, node_.token}).ok());
  ASSERT_TRUE(master_->MountSegment(node_, seg_).ok());
  EXPECT_TRUE(master_->GetReplicaList(ctx_, "only-on-node", false).ok());
}

TEST_F(GraceTest, ADeadClientNotBackByTheGracesEndLosesItsReplicas) {
  NodeDeclaredDead();
  clock_.AdvanceSec(19);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  EXPECT_EQ(master_->ExpireRecoveredOnce(), 0u);
  EXPECT_TRUE(Exists("only-on-node"));
  clock_.AdvanceSec(2);
  ASSERT_TRUE(master_->Ping(ctx_).ok());
  EXPECT_EQ(master_->ExpireRecoveredOnce(), 1u);
  EXPECT_FALSE(Exists("only-on-node"));  // its only replica went with the node
  EXPECT_EQ(master_->GetReplicaList(ctx_, "on-both", false)->replicas.size(), 1u);
  EXPECT_EQ(master_->Stats().segments, 1u);
}

TEST_F(GraceTest, ADeadClientBackWithOtherMemoryLosesItsReplicasAtOnce) {
  NodeDeclaredDead();
  ASSERT_TRUE(master_->RegisterClient({node_.client, "host", "default", false, node_.token}).ok());
  SegmentMount fresh = seg_;
  fresh.incarnation = 6;  // restarted its memory
  (void)master_->MountSegment(node_, fresh);
  EXPECT_FALSE(Exists("only-on-node"));
  EXPECT_EQ(master_->GetReplicaList(ctx_, "on-both", false)->replicas.size(), 1u);
}

}  // namespace
}  // namespace yb
