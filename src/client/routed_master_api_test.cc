// RoutedMasterApi: every call goes through Route, to the target it picks, as often as it decides.
#include "api/routed_master_api.h"

#include <gtest/gtest.h>

#include "client/mock_master.h"

namespace yb {
namespace {

using ::testing::_;
using ::testing::Return;

// Makes each call on `targets` in turn while the answer is UNAVAILABLE_IN_CURRENT_STATUS (as the
// leader follower does), or answers `refuse` without any attempt.
class Rotating final : public RoutedMasterApi {
 public:
  std::vector<MasterApi*> targets;
  Status refuse = Status::OK();
  Status give_up = Status::OK();  // said after the attempts: no target found in time
  int routes = 0;
  int attempts = 0;

 private:
  Status Route(const Attempt& attempt) override {
    ++routes;
    if (!refuse.ok()) return refuse;
    for (MasterApi* t : targets) {
      ++attempts;
      if (!attempt(*t).IsUnavailable()) break;
    }
    return give_up;
  }
};

TEST(RoutedMasterApiTest, ACallIsMadeOnTheTargetRouteChoosesAndAnswersItsAnswer) {
  testing::MockMaster m;
  Rotating r;
  r.targets = {&m};
  EXPECT_CALL(m, BatchExistKey(_, _)).WillOnce(Return(std::vector<Result<bool>>{true, false}));
  auto got = r.BatchExistKey(CallContext{}, {"a", "b"});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(*got[0]);
  EXPECT_FALSE(*got[1]);
  // The single-key helpers arrive as batches of one, through the same route.
  EXPECT_CALL(m, BatchRemove(_, _, true)).WillOnce(Return(std::vector<Status>{Status::OK()}));
  EXPECT_TRUE(r.Remove(CallContext{}, "a", true).ok());
  EXPECT_EQ(r.routes, 2);
}

TEST(RoutedMasterApiTest, TheLastAttemptsAnswerIsTheCalls) {
  testing::MockMaster gone, leader;
  Rotating r;
  r.targets = {&gone, &leader};
  EXPECT_CALL(gone, ListSegments()).WillOnce(Return(Status(Code::kUnavailableInCurrentStatus, "not the leader")));
  EXPECT_CALL(leader, ListSegments()).WillOnce(Return(std::vector<SegmentUsage>(3)));
  auto got = r.ListSegments();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->size(), 3u);
  EXPECT_EQ(r.attempts, 2);
}

TEST(RoutedMasterApiTest, WithoutAnAttemptEveryKeyCarriesRoutesStatus) {
  testing::MockMaster m;
  Rotating r;
  r.targets = {&m};
  r.refuse = Status(Code::kRpcFail, "no leader");
  EXPECT_CALL(m, BatchGetReplicaList(_, _, _)).Times(0);
  auto got = r.BatchGetReplicaList(CallContext{}, {"a", "b", "c"}, true);
  ASSERT_EQ(got.size(), 3u);
  for (const auto& g : got) EXPECT_EQ(g.status().code(), Code::kRpcFail);
  auto one = r.QueryTask(CallContext{}, TaskId{});
  EXPECT_EQ(one.status().code(), Code::kRpcFail);
  EXPECT_EQ(r.Writable().code(), Code::kRpcFail);
}

// Attempts were made, but Route gave up (the leader went and no other was found in time): what it
// says stands for the call, not the gone target's answer.
TEST(RoutedMasterApiTest, WhenRouteGivesUpAfterAttemptsItsStatusIsTheAnswer) {
  testing::MockMaster gone;
  Rotating r;
  r.targets = {&gone};
  r.give_up = Status(Code::kRpcFail, "no master leads cluster key k yet");
  EXPECT_CALL(gone, BatchPutRevoke(_, _))
      .WillOnce(Return(std::vector<Status>(2, Status(Code::kRpcFail, "connection refused"))));
  auto got = r.BatchPutRevoke(CallContext{}, {"a", "b"});
  ASSERT_EQ(got.size(), 2u);
  for (const auto& g : got) EXPECT_NE(g.message().find("no master leads"), std::string::npos) << g.ToString();
}

}  // namespace
}  // namespace yb
