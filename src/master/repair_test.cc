// Re-replication on the master: what a lost segment queues, the copy tasks it hands the target's
// owner, their outcomes, the bandwidth, and what a restart rebuilds.
#include <gtest/gtest.h>

#include "master/master_image.h"
#include "master/master_test_util.h"

namespace yb {
namespace {

using testing::MasterFixture;

class RepairTest : public MasterFixture {
 protected:
  void SetUp() override { Build(1 << 20); }
  // A master copying `bandwidth` bytes a second, and three clients with a segment each: a, b, c.
  void Build(uint64_t bandwidth) {
    MasterConfig c;
    c.repair_bandwidth = bandwidth;
    Reset(c);
    a_ = Register(ClientId{11, 11});
    b_ = Register(ClientId{12, 12});
    c_ = Register(ClientId{13, 13});
    sa_ = Mount("a", 1 << 20, a_);
    sb_ = Mount("b", 1 << 20, b_);
    sc_ = Mount("c", 1 << 20, c_);
  }
  ReplicateConfig OnAB() {
    ReplicateConfig rc;
    rc.replica_num = 2;
    rc.preferred_segments = {"a", "b"};
    return rc;
  }
  CallContext a_, b_, c_;
  SegmentId sa_ = 0, sb_ = 0, sc_ = 0;
};

TEST_F(RepairTest, AnObjectThatLostAReplicaIsCopiedBackByTheTargetsOwner) {
  ASSERT_TRUE(Put("k", 1000, OnAB()).ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  EXPECT_EQ(master_->Stats().repair_at_risk, 1u);
  EXPECT_EQ(master_->RepairOnce(), 1u);
  EXPECT_EQ(master_->Ping(c_, 1)->repairs, 1u);
  EXPECT_EQ(master_->Ping(b_, 1)->repairs, 0u);
  auto tasks = master_->RepairFetch(c_, 10);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 1u);
  const RepairTask t = (*tasks)[0];
  EXPECT_EQ(t.source, sb_);
  EXPECT_EQ(t.target, sc_);
  EXPECT_EQ(t.size, 1000u);
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sb_}));  // the copy is not readable yet
  EXPECT_EQ(master_->evictor().EvictBytes(1 << 20), 0u);  // and the object is pinned for it
  EXPECT_TRUE(master_->RepairFetch(c_, 10)->empty());  // handed out once
  auto done = master_->RepairDone(c_, {{t.task_id, Status::OK()}});
  ASSERT_TRUE(done[0].ok()) << done[0].ToString();
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sb_, sc_}));
  MasterStats st = master_->Stats();
  EXPECT_EQ(st.repair_at_risk, 0u);
  EXPECT_EQ(st.repairs_in_flight, 0u);
  EXPECT_EQ(st.repaired, 1u);
  EXPECT_EQ(st.repair_bytes, 1000u);
  EXPECT_EQ(master_->TenantUsed(ctx_.tenant), 2000u);
  EXPECT_EQ(master_->RepairDone(c_, {{t.task_id, Status::OK()}})[0].code(), Code::kInvalidParams);
  // Not pinned any more: eviction may take it.
  clock_.AdvanceSec(11);
  EXPECT_GT(master_->evictor().EvictBytes(1 << 20), 0u);
}

// Remove without force once the lease has passed succeeds whatever repair is doing (issue 33:
// Mooncake's test_replication_failure_tolerance got OBJECT_HAS_LEASE while a copy ran): the copy's
// range and its source stay reserved until the copy reports, and its report finds the object gone.
TEST_F(RepairTest, RemoveAfterTheLeaseSucceedsWhileACopyIsInFlight) {
  ASSERT_TRUE(Put("k", 1000, OnAB()).ok());
  ASSERT_TRUE(Read("k").ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  ASSERT_EQ(master_->RepairOnce(), 1u);
  auto tasks = master_->RepairFetch(c_, 10);
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ(master_->Remove(ctx_, "k", false).code(), Code::kObjectHasLease);  // the reader's lease
  clock_.Advance(config_.default_kv_lease_ttl_ms + 1);
  ASSERT_TRUE(master_->Remove(ctx_, "k", false).ok());
  EXPECT_FALSE(Exists("k"));
  EXPECT_EQ(master_->Stats().allocated, 2 * 1024u);  // source and target (aligned) held for the copy
  auto done = master_->RepairDone(c_, {{(*tasks)[0].task_id, Status::OK()}});
  EXPECT_EQ(done[0].code(), Code::kObjectNotFound);
  EXPECT_EQ(master_->Stats().allocated, master_->Stats().held);  // the copy's range: fenced a while
  // A client's own read still keeps it, as before.
  ASSERT_TRUE(Put("r", 1000, OnAB()).ok());
  auto info = master_->GetReplicaList(ctx_, "r", true);
  ASSERT_TRUE(info.ok());
  clock_.Advance(config_.default_kv_lease_ttl_ms + 1);
  EXPECT_EQ(master_->Remove(ctx_, "r", false).code(), Code::kObjectHasLease);
}

// The pin a copy task holds is the master's, not a read of the target's owner: heartbeats that
// name no read pin leave it, and the copy, in place.
TEST_F(RepairTest, HeartbeatsNamingNoReadPinLeaveACopysPinInPlace) {
  ASSERT_TRUE(Put("k", 1000, OnAB()).ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  ASSERT_EQ(master_->RepairOnce(), 1u);
  auto t = (*master_->RepairFetch(c_, 10))[0];
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(master_->Ping(c_, PingState{1, true, {}, {}}).ok());
    master_->RunBackgroundOnce();
  }
  EXPECT_EQ(master_->Stats().stale_pins_released, 0u);
  EXPECT_EQ(master_->evictor().EvictBytes(1 << 20), 0u);  // still pinned for the copy
  EXPECT_TRUE(master_->RepairDone(c_, {{t.task_id, Status::OK()}})[0].ok());
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sb_, sc_}));
}

// The last readable replica goes while its copy is being made: the object is lost (removed and
// counted), not kept with only an unfinished copy, and the copy's range is freed when the copier
// reports.
TEST_F(RepairTest, AnObjectWhoseLastSourceGoesDuringItsCopyIsLost) {
  ASSERT_TRUE(Put("k", 1000, OnAB()).ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  ASSERT_EQ(master_->RepairOnce(), 1u);
  auto t = (*master_->RepairFetch(c_, 10))[0];
  ASSERT_TRUE(master_->UnmountSegment(b_, sb_).ok());  // the source
  EXPECT_FALSE(Exists("k"));
  EXPECT_EQ(master_->Stats().objects_lost, 1u);
  EXPECT_GT(master_->Stats().allocated, 0u);  // the copy's range, until the copier reports
  EXPECT_EQ(master_->RepairDone(c_, {{t.task_id, Status::OK()}})[0].code(), Code::kObjectNotFound);
  EXPECT_EQ(master_->Stats().allocated, master_->Stats().held);  // the copy's range: fenced a while
  EXPECT_EQ(master_->TenantUsed(ctx_.tenant), 0u);
}

TEST_F(RepairTest, AFailedOrUnreportedCopyIsFreedAndMadeAgain) {
  ASSERT_TRUE(Put("k", 1000, OnAB()).ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  ASSERT_EQ(master_->RepairOnce(), 1u);
  auto t1 = (*master_->RepairFetch(c_, 10))[0];
  EXPECT_TRUE(master_->RepairDone(c_, {{t1.task_id, Status(Code::kTransferFail, "x")}})[0].ok());
  EXPECT_EQ(master_->Stats().repair_at_risk, 1u);
  EXPECT_EQ(master_->TenantUsed(ctx_.tenant), 1000u);  // the failed copy's space is back
  clock_.AdvanceSec(1);
  ASSERT_EQ(master_->RepairOnce(), 1u);
  auto t2 = (*master_->RepairFetch(c_, 10))[0];
  EXPECT_NE(t2.task_id, t1.task_id);
  // Never reported: given up after repair_task_timeout_sec, and made again.
  clock_.AdvanceSec(31);
  ASSERT_TRUE(master_->Ping(b_).ok());
  ASSERT_TRUE(master_->Ping(c_).ok());
  EXPECT_EQ(master_->RepairOnce(), 1u);
  EXPECT_EQ(master_->Stats().repairs_in_flight, 1u);
  auto t3 = (*master_->RepairFetch(c_, 10))[0];
  EXPECT_EQ(master_->RepairDone(c_, {{t2.task_id, Status::OK()}})[0].code(), Code::kInvalidParams);  // too late
  EXPECT_TRUE(master_->RepairDone(c_, {{t3.task_id, Status::OK()}})[0].ok());
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sb_, sc_}));
  EXPECT_EQ(master_->TenantUsed(ctx_.tenant), 2000u);
}

// The copier dies: its task goes with it and the object is queued again; an object whose last
// replica goes is lost, and counted.
TEST_F(RepairTest, TheCopiersDeathRequeuesAndALastReplicaGoneIsALoss) {
  CallContext d = Register(ClientId{14, 14});
  SegmentId sd = Mount("d", 1 << 20, d);
  ASSERT_TRUE(Put("k", 1000, OnAB()).ok());
  ReplicateConfig only_a;
  only_a.preferred_segments = {"a"};
  ASSERT_TRUE(Put("solo", 500, only_a).ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  EXPECT_EQ(master_->Stats().objects_lost, 1u);
  EXPECT_FALSE(Exists("solo"));
  ASSERT_EQ(master_->RepairOnce(), 1u);
  const bool to_c = master_->Ping(c_, 1)->repairs == 1;
  CallContext copier = to_c ? c_ : d;
  ASSERT_EQ(master_->Ping(copier, 1)->repairs, 1u);
  ASSERT_TRUE(master_->UnregisterClient(copier).ok());  // it leaves (or dies) before reporting
  EXPECT_EQ(master_->Stats().repairs_in_flight, 0u);
  EXPECT_EQ(master_->Stats().repair_at_risk, 1u);
  clock_.AdvanceSec(1);
  ASSERT_EQ(master_->RepairOnce(), 1u);
  CallContext other = to_c ? d : c_;
  auto t = (*master_->RepairFetch(other, 10))[0];
  EXPECT_EQ(t.target, to_c ? sd : sc_);
  EXPECT_TRUE(master_->RepairDone(other, {{t.task_id, Status::OK()}})[0].ok());
  EXPECT_EQ(Replicas("k").size(), 2u);
  EXPECT_EQ(master_->TenantUsed(ctx_.tenant), 2000u);
}

// The bandwidth bounds the bytes handed out per second.
TEST_F(RepairTest, CopiesStayWithinTheBandwidth) {
  Build(2500);  // bytes per second
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(Put("k" + std::to_string(i), 1000, OnAB()).ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  EXPECT_EQ(master_->Stats().repair_at_risk, 6u);
  EXPECT_EQ(master_->RepairOnce(), 3u);  // 2500 bytes: the third goes past, then the bucket is empty
  EXPECT_EQ(master_->RepairOnce(), 0u);
  clock_.Advance(1000);
  EXPECT_EQ(master_->RepairOnce(), 2u);
}

// A drained segment takes nothing new, and every object it holds gets a replica elsewhere (one held
// only there too); once it reports 0 left, unmounting it loses nothing.
TEST_F(RepairTest, ADrainedSegmentsObjectsGetReplicasElsewhereFirst) {
  ReplicateConfig only_a;
  only_a.preferred_segments = {"a"};
  ASSERT_TRUE(Put("solo", 500, only_a).ok());
  ASSERT_TRUE(Put("pair", 1000, OnAB()).ok());
  ReplicateConfig only_b;
  only_b.preferred_segments = {"b"};
  ASSERT_TRUE(Put("other", 800, only_b).ok());
  auto left = master_->DrainSegment(ctx_, sa_);
  ASSERT_TRUE(left.ok());
  EXPECT_EQ(*left, 2u);  // solo and pair
  EXPECT_EQ(master_->DrainSegment(ctx_, 999).code(), Code::kSegmentNotFound);
  auto segs = master_->ListSegments().value();
  for (const auto& u : segs) EXPECT_EQ(u.draining, u.desc.id == sa_);
  for (int i = 0; i < 10; ++i) {  // nothing new goes to a, even when asked for
    ASSERT_TRUE(Put("new" + std::to_string(i), 100, only_a).ok());
    auto r = Replicas("new" + std::to_string(i));
    EXPECT_TRUE(std::find(r.begin(), r.end(), sa_) == r.end());
  }
  ASSERT_EQ(master_->RepairOnce(), 2u);
  for (CallContext who : {b_, c_}) {
    auto tasks = master_->RepairFetch(who, 10).value();
    std::vector<RepairResult> ok;
    for (const auto& t : tasks) ok.push_back({t.task_id, Status::OK()});
    for (const auto& st : master_->RepairDone(who, ok)) EXPECT_TRUE(st.ok()) << st.ToString();
  }
  EXPECT_EQ(*master_->DrainSegment(ctx_, sa_), 0u);
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  EXPECT_EQ(Replicas("solo").size(), 1u);
  EXPECT_EQ(Replicas("pair").size(), 2u);
  EXPECT_EQ(master_->Stats().objects_lost, 0u);
  EXPECT_EQ(master_->Stats().repair_at_risk, 0u);
}

// The queue is rebuilt state: a master restarted from the log finds the objects short of replicas.
TEST_F(RepairTest, ARestartedMasterQueuesTheObjectsShortOfReplicas) {
  ASSERT_TRUE(Put("k", 1000, OnAB()).ok());
  ASSERT_TRUE(Put("whole", 1000, OnAB()).ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  MasterImage image;
  master_->WriteImage([&](const pb::LogRecord& r) { image.Apply(r); });
  auto again = MasterService::Create(config_, clock_).value();
  ASSERT_TRUE(again->Load(image).ok());
  EXPECT_EQ(again->Stats().repair_at_risk, 2u);  // "whole" lost a replica too
}

// A master restarted while a copy is being made does not know the copy (its new replica is not
// logged until it is complete), and its maker may still land bytes until its source grant lapses:
// the restarted master fences the target's range until then, from the log as from a snapshot; a
// copy that completed first leaves nothing fenced (the object's record names the range).
TEST_F(RepairTest, ARestartedMasterFencesTheRangeOfACopyInFlight) {
  testing::ImageSink sink;
  master_->WriteImage([&](const pb::LogRecord& r) { sink.image.Apply(r); });  // the log's base snapshot
  master_->SetSink(&sink);
  ASSERT_TRUE(Put("k", 1000, OnAB()).ok());
  ASSERT_TRUE(Put("done", 1000, OnAB()).ok());
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  ASSERT_EQ(master_->RepairOnce(), 2u);
  auto tasks = master_->RepairFetch(c_, 10);
  ASSERT_EQ(tasks->size(), 2u);
  const auto& finished = (*tasks)[0];
  ASSERT_TRUE(master_->RepairDone(c_, {{finished.task_id, Status::OK()}})[0].ok());
  MasterImage snapshot;
  master_->WriteImage([&](const pb::LogRecord& r) { snapshot.Apply(r); });
  MasterConfig quiet = config_;
  quiet.repair_bandwidth = 0;  // the restarted master makes no copy of its own meanwhile
  for (const MasterImage* image : {&sink.image, &snapshot}) {
    auto again = MasterService::Create(quiet, clock_).value();
    ASSERT_TRUE(again->Load(*image).ok());
    for (const CallContext& c : {a_, b_, c_}) {
      ASSERT_TRUE(again->RegisterClient({c.client, "host", "default", false, c.token}).ok());
    }
    // Their owners mount them again (as after a restart).
    for (auto [c, id, name] : {std::tuple{b_, sb_, "b"}, std::tuple{c_, sc_, "c"}}) {
      ASSERT_TRUE(again->MountSegment(c, SegmentMount{id, name, 0x10000000ULL * (id + 1), 1 << 20, "local"}).ok());
    }
    EXPECT_EQ(again->Stats().held, 1024u);  // the unfinished copy's range only
    // Held until the copy's deadline and its grant's slack and the clocks' margin have passed
    // (its clients heard from meanwhile: a dead one's segment would take its holds with it).
    const TimeMs start = clock_.NowMs();
    auto pass = [&](TimeMs ms) {
      for (TimeMs done = 0; done < ms; done += 1000) {
        clock_.Advance(1000);
        for (const CallContext& c : {b_, c_}) ASSERT_TRUE(again->Ping(c).ok());
        again->RunBackgroundOnce();
      }
    };
    pass((config_.repair_task_timeout_sec + 5 + 5) * 1000 - 2000);
    EXPECT_EQ(again->Stats().held, 1024u);
    pass(3000);
    EXPECT_EQ(again->Stats().held, 0u);
    clock_.Set(start);
  }
}

// A Put made while one of the processes holding memory was paused (not heard from) gets fewer
// replicas than it asked; the missing one is copied once that process is heard again, so the
// object is not left one failure from loss.
TEST_F(RepairTest, APutShortOfReplicasWhileAHolderIsUnheardGetsThemWhenItIsHeard) {
  ASSERT_TRUE(master_->UnmountSegment(c_, sc_).ok());  // two holders: a and b
  SilenceAllBut({a_, c_});                             // b is not heard from
  ASSERT_EQ(master_->Stats().segments_unheard, 1u);
  ReplicateConfig two;
  two.replica_num = 2;
  ASSERT_TRUE(Put("k", 1000, two).ok());
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sa_}));
  EXPECT_EQ(master_->Stats().repair_at_risk, 1u);
  EXPECT_EQ(master_->RepairOnce(), 0u);  // nowhere to copy to while b is unheard
  ASSERT_TRUE(master_->Ping(b_).ok());
  master_->LivenessOnce();
  ASSERT_EQ(master_->Stats().segments_unheard, 0u);
  clock_.AdvanceSec(1);
  EXPECT_EQ(master_->RepairOnce(), 1u);
  auto tasks = master_->RepairFetch(b_, 10);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->size(), 1u);
  EXPECT_EQ((*tasks)[0].source, sa_);
  EXPECT_EQ((*tasks)[0].target, sb_);
  ASSERT_TRUE(master_->RepairDone(b_, {{(*tasks)[0].task_id, Status::OK()}})[0].ok());
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sa_, sb_}));
  EXPECT_EQ(master_->Stats().repair_at_risk, 0u);
}

// One process with memory: asking two replicas gets one, and that is all there can be.
TEST_F(RepairTest, APutAskingMoreReplicasThanThereAreProcessesIsNotAtRisk) {
  ASSERT_TRUE(master_->UnmountSegment(b_, sb_).ok());
  ASSERT_TRUE(master_->UnmountSegment(c_, sc_).ok());
  ReplicateConfig three;
  three.replica_num = 3;
  ASSERT_TRUE(Put("k", 1000, three).ok());
  EXPECT_EQ(Replicas("k"), (std::vector<SegmentId>{sa_}));
  EXPECT_EQ(master_->Stats().repair_at_risk, 0u);
  EXPECT_EQ(master_->Stats().under_replicated_puts, 1u);
}

// Draining a node of a full pool: the copies of what only it holds find no room, so the evictor
// makes some (least recently used first, elsewhere) and the drain ends without a loss.
TEST_F(RepairTest, ADrainInAFullPoolHasRoomMadeForItsCopies) {
  ReplicateConfig only_a;
  only_a.preferred_segments = {"a"};
  ASSERT_TRUE(Put("solo", 300 << 10, only_a).ok());
  ReplicateConfig only_b, only_c;
  only_b.preferred_segments = {"b"};
  only_c.preferred_segments = {"c"};
  for (int i = 0; i < 3; ++i) {  // b and c too full for it, though under the eviction watermark (88%)
    ASSERT_TRUE(Put("b" + std::to_string(i), 300 << 10, only_b).ok());
    ASSERT_TRUE(Put("c" + std::to_string(i), 300 << 10, only_c).ok());
  }
  ASSERT_EQ(*master_->DrainSegment(ctx_, sa_), 1u);
  EXPECT_EQ(master_->RepairOnce(), 0u);  // no room anywhere else
  clock_.AdvanceSec(11);                 // past the leases
  // The background rounds: eviction asked for room, then the copy tried again (a freed range of
  // exactly the object's size may not take it: the allocator's size classes round up).
  uint64_t started = 0;
  for (int round = 0; round < 4 && started == 0; ++round) {
    EXPECT_GT(master_->evictor().RunOnce(), 0u) << round;
    started = master_->RepairOnce();
  }
  ASSERT_EQ(started, 1u);
  EXPECT_LE(master_->evictor().evicted_objects(), 3u);
  bool done = false;
  for (CallContext who : {b_, c_}) {
    auto tasks = master_->RepairFetch(who, 10).value();
    for (const auto& t : tasks) {
      EXPECT_TRUE(master_->RepairDone(who, {{t.task_id, Status::OK()}})[0].ok());
      done = true;
    }
  }
  ASSERT_TRUE(done);
  EXPECT_EQ(*master_->DrainSegment(ctx_, sa_), 0u);
  ASSERT_TRUE(master_->UnmountSegment(a_, sa_).ok());
  EXPECT_EQ(Replicas("solo").size(), 1u);
  EXPECT_EQ(master_->Stats().objects_lost, 0u);
}

}  // namespace
}  // namespace yb
