// Membership's heartbeat against a scripted master: a master that lost the client gets its
// registration and the same segments back, the SSD tier's re-mount hook is owed until it succeeds,
// failed heartbeats mark the master unreachable; the heartbeat on a ManualScheduler beats each
// second of the manual clock. DrainSegments on the manual clock: it polls until nothing is held
// only on the drained segments, or its time runs out.
#include "client/membership.h"

#include <gtest/gtest.h>

#include "client/mock_master.h"
#include "common/scheduler.h"

namespace yb {
namespace {

using ::testing::_;
using ::testing::DoAll;
using ::testing::Return;
using ::testing::SaveArg;

std::vector<SegmentId> IdsOf(const std::vector<SegmentMount>& segs) {
  std::vector<SegmentId> ids;
  for (const auto& s : segs) ids.push_back(s.id);
  return ids;
}

// A client contributing 2 MiB in segments of 1 MiB, registered and mounted with a scripted master.
class MembershipTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.global_segment_size = 2 << 20;
    config_.segment_chunk_size = 1 << 20;
    config_.same_host_transfers = false;
    config_.local_hostname = "node-a";
    master_ = std::make_shared<::testing::StrictMock<testing::MockMaster>>();
    membership_ = std::make_unique<Membership>(config_, master_, std::make_shared<LocalSegmentRegistry>(), nullptr,
                                               "127.0.0.1:1");
    CallContext first;
    first.client = membership_->id();
    first.token[0] = 1;
    EXPECT_CALL(*master_, RegisterClient(_)).WillOnce(Return(first));
    ASSERT_TRUE(membership_->Register().ok());
    EXPECT_CALL(*master_, MountSegments(_, _))  // one segment at a time
        .Times(2)
        .WillRepeatedly([this](const CallContext&, const std::vector<SegmentMount>& segs) {
          mounted_.insert(mounted_.end(), segs.begin(), segs.end());
          return Status::OK();
        });
    ASSERT_TRUE(membership_->MountPool().ok());
    ASSERT_EQ(mounted_.size(), 2u);
    ::testing::Mock::VerifyAndClearExpectations(master_.get());
  }
  void TearDown() override {
    membership_->StopHeartbeat();
    EXPECT_CALL(*master_, UnmountSegment(_, _)).WillRepeatedly(Return(Status::OK()));
    membership_->UnmountPool();
  }

  ClientConfig config_;
  std::shared_ptr<::testing::StrictMock<testing::MockMaster>> master_;
  std::unique_ptr<Membership> membership_;
  std::vector<SegmentMount> mounted_;
};

TEST_F(MembershipTest, AMasterThatLostTheClientGetsItsRegistrationAndTheSameSegmentsBack) {
  ClientRegistration again;
  CallContext second;
  second.client = membership_->id();
  second.token[0] = 2;
  std::vector<SegmentMount> remounted;
  EXPECT_CALL(*master_, Ping(_, _)).WillOnce(Return(PingResponse{true, 0}));
  EXPECT_CALL(*master_, RegisterClient(_)).WillOnce(DoAll(SaveArg<0>(&again), Return(second)));
  EXPECT_CALL(*master_, MountSegments(_, _)).WillOnce(DoAll(SaveArg<1>(&remounted), Return(Status::OK())));
  EXPECT_TRUE(membership_->Beat().ok());
  EXPECT_EQ(again.id, membership_->id());  // the same client, proving itself with the token it had
  EXPECT_EQ(again.token[0], 1);
  EXPECT_EQ(IdsOf(remounted), IdsOf(mounted_));  // the same segments: their objects stay valid
  EXPECT_EQ(membership_->remounts(), 1u);
  EXPECT_TRUE(membership_->segments_mounted());
  EXPECT_EQ(membership_->ctx().token[0], 2);  // calls now carry the new registration's token
}

TEST_F(MembershipTest, AMasterThatDoesNotKnowTheTokenIsRegisteredWithAgain) {
  EXPECT_CALL(*master_, Ping(_, _)).WillOnce(Return(Status(Code::kClientNotFound, "restarted without its log")));
  CallContext second;
  second.client = membership_->id();
  EXPECT_CALL(*master_, RegisterClient(_)).WillOnce(Return(second));
  EXPECT_CALL(*master_, MountSegments(_, _)).WillOnce(Return(Status::OK()));
  EXPECT_TRUE(membership_->Beat().ok());
  EXPECT_TRUE(membership_->master_reachable());
  EXPECT_EQ(membership_->remounts(), 1u);
}

TEST_F(MembershipTest, AReMountThatFailsIsAskedForAgainAndTheHookIsOwedUntilItSucceeds) {
  std::vector<SegmentId> hooked;
  int hook_failures = 1;
  membership_->SetRemountHook([&](SegmentId first) {
    hooked.push_back(first);
    return hook_failures-- > 0 ? Status(Code::kInternal, "disk busy") : Status::OK();
  });
  CallContext ctx;
  ctx.client = membership_->id();
  EXPECT_CALL(*master_, RegisterClient(_)).WillRepeatedly(Return(ctx));
  EXPECT_CALL(*master_, Ping(_, _))
      .WillOnce(Return(PingResponse{true, 0}))    // lost us: the re-mount fails
      .WillOnce(Return(PingResponse{true, 0}))    // still lost: it succeeds, the hook fails
      .WillOnce(Return(PingResponse{false, 0}))   // the hook is still owed: it succeeds
      .WillOnce(Return(PingResponse{false, 0}));  // nothing owed
  EXPECT_CALL(*master_, MountSegments(_, _))
      .WillOnce(Return(Status(Code::kRpcFail, "lost on the way")))
      .WillOnce(Return(Status::OK()));
  EXPECT_EQ(membership_->Beat().code(), Code::kRpcFail);
  EXPECT_FALSE(membership_->segments_mounted());
  EXPECT_TRUE(hooked.empty());
  EXPECT_EQ(membership_->Beat().code(), Code::kInternal);
  EXPECT_TRUE(membership_->segments_mounted());
  EXPECT_TRUE(membership_->Beat().ok());
  EXPECT_TRUE(membership_->Beat().ok());
  EXPECT_EQ(hooked, (std::vector<SegmentId>{mounted_[0].id, mounted_[0].id}));
}

TEST_F(MembershipTest, FailedHeartbeatsMarkTheMasterUnreachableUntilItAnswers) {
  EXPECT_CALL(*master_, Ping(_, _))
      .WillOnce(Return(Status(Code::kRpcTimeout, "paused")))
      .WillOnce(Return(Status(Code::kRpcTimeout, "paused")))
      .WillOnce(Return(PingResponse{false, 3}));
  EXPECT_EQ(membership_->Beat().code(), Code::kRpcTimeout);
  EXPECT_FALSE(membership_->master_reachable());
  EXPECT_EQ(membership_->Beat().code(), Code::kRpcTimeout);
  EXPECT_EQ(membership_->heartbeat_failures(), 2u);
  EXPECT_FALSE(membership_->TakeRepairsWaiting());
  EXPECT_TRUE(membership_->Beat().ok());
  EXPECT_TRUE(membership_->master_reachable());
  EXPECT_TRUE(membership_->TakeRepairsWaiting());  // the answer said copy tasks wait
  EXPECT_FALSE(membership_->TakeRepairsWaiting());
  EXPECT_EQ(membership_->remounts(), 0u);
}

TEST_F(MembershipTest, TheHeartbeatBeatsEachSecondOfTheSchedulersClockAndStopsWhenAsked) {
  ManualClock clock;
  ManualScheduler scheduler(clock);
  PingState last;
  EXPECT_CALL(*master_, Ping(_, _)).Times(3).WillRepeatedly(DoAll(SaveArg<1>(&last), Return(PingResponse{})));
  membership_->StartHeartbeat(scheduler);
  EXPECT_EQ(scheduler.Advance(999), 0u);
  EXPECT_EQ(scheduler.Advance(1), 1u);
  EXPECT_EQ(scheduler.Advance(2000), 2u);
  EXPECT_EQ(last.mounted_segments, 2u);  // each heartbeat says what it holds
  membership_->StopHeartbeat();
  EXPECT_EQ(scheduler.Advance(5000), 0u);
}

TEST(DrainSegmentsTest, PollsUntilNothingIsHeldOnlyThere) {
  testing::MockMaster m;
  ManualClock clock;
  const TimeMs start = clock.NowMs();
  EXPECT_CALL(m, DrainSegment(_, 7)).WillOnce(Return(3u)).WillOnce(Return(1u)).WillOnce(Return(0u));
  std::vector<uint64_t> heard;
  Status st = DrainSegments(
      m, CallContext{}, {7}, std::chrono::seconds(10), [&](uint64_t left) { heard.push_back(left); }, clock);
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(heard, (std::vector<uint64_t>{3, 1, 0}));
  EXPECT_EQ(clock.NowMs() - start, 400);  // two waits of 200 ms
}

TEST(DrainSegmentsTest, SaysWhatIsLeftWhenItsTimeRunsOut) {
  testing::MockMaster m;
  ManualClock clock;
  const TimeMs start = clock.NowMs();
  EXPECT_CALL(m, DrainSegment(_, _)).WillRepeatedly(Return(2u));
  Status st = DrainSegments(m, CallContext{}, {1, 2}, std::chrono::seconds(1), [](uint64_t) {}, clock);
  EXPECT_EQ(st.code(), Code::kRpcTimeout);
  EXPECT_NE(st.message().find("4 objects"), std::string::npos) << st.message();
  EXPECT_GE(clock.NowMs() - start, 1000);
  EXPECT_LT(clock.NowMs() - start, 1400);
}

TEST(DrainSegmentsTest, AMasterThatRefusesEndsTheDrainAtOnce) {
  testing::MockMaster m;
  ManualClock clock;
  EXPECT_CALL(m, DrainSegment(_, _)).WillOnce(Return(Status(Code::kSegmentNotFound, "no such segment")));
  Status st = DrainSegments(m, CallContext{}, {9}, std::chrono::seconds(5), [](uint64_t) {}, clock);
  EXPECT_EQ(st.code(), Code::kSegmentNotFound);
}

}  // namespace
}  // namespace yb
