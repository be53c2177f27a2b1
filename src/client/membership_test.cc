// DrainSegments on the manual clock: it polls until nothing is held only on the drained segments,
// or its time runs out.
#include <gtest/gtest.h>

#include "client/membership.h"
#include "client/mock_master.h"

namespace yb {
namespace {

using ::testing::_;
using ::testing::Return;

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
