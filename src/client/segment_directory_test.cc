#include "client/segment_directory.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "client/mock_master.h"

namespace yb {
namespace {

using ::testing::Return;

std::vector<SegmentUsage> List(std::initializer_list<std::pair<SegmentId, std::string>> segs) {
  std::vector<SegmentUsage> out;
  for (const auto& [id, ep] : segs) {
    SegmentUsage u;
    u.desc.id = id;
    u.desc.endpoint = ep;
    out.push_back(u);
  }
  return out;
}

class SegmentDirectoryTest : public ::testing::Test {
 protected:
  ManualClock clock_;
};

TEST_F(SegmentDirectoryTest, AMissAsksTheMasterAndAKnownSegmentDoesNot) {
  ::testing::StrictMock<testing::MockMaster> master;
  EXPECT_CALL(master, ListSegments()).Times(2).WillRepeatedly(Return(List({{1, "a:1"}, {2, "b:2"}})));
  SegmentDirectory dir(master, clock_, std::chrono::milliseconds(0));
  EXPECT_EQ(dir.Resolve(1), "a:1");
  EXPECT_EQ(dir.Resolve(2), "b:2");
  EXPECT_EQ(dir.Resolve(1), "a:1");
  EXPECT_EQ(dir.Resolve(3), std::nullopt);  // asked again, and still unknown
}

// A node mounts a segment just after our last refresh, and the master allocates on it at once: the
// miss waits for the next refresh (after the interval) instead of failing the transfer.
TEST_F(SegmentDirectoryTest, ASegmentMountedJustAfterARefreshIsFoundByTheNextOne) {
  ::testing::StrictMock<testing::MockMaster> master;
  EXPECT_CALL(master, ListSegments())
      .WillOnce(Return(List({{1, "a:1"}})))
      .WillOnce(Return(List({{1, "a:1"}, {2, "b:2"}})));
  SegmentDirectory dir(master, clock_, std::chrono::milliseconds(50));
  EXPECT_EQ(dir.Resolve(1), "a:1");
  const TimeMs first = clock_.NowMs();
  EXPECT_EQ(dir.Resolve(2), "b:2");
  EXPECT_EQ(clock_.NowMs(), first + 50);  // it waited out the interval, and no longer
}

// A master that takes long to answer (restarting, or cut off until the call's deadline) holds up
// only the lookup that asked it, and the misses that wait for its answer: not the known segments.
TEST_F(SegmentDirectoryTest, KnownSegmentsResolveWhileARefreshWaitsForTheMaster) {
  ::testing::StrictMock<testing::MockMaster> master;
  std::promise<void> entered, release;
  auto released = release.get_future().share();
  EXPECT_CALL(master, ListSegments())
      .WillOnce(Return(List({{1, "a:1"}})))
      .WillOnce([&]() -> Result<std::vector<SegmentUsage>> {
        entered.set_value();
        released.wait();
        return List({{1, "a:1"}, {2, "b:2"}});
      });
  SegmentDirectory dir(master, clock_, std::chrono::milliseconds(0));
  ASSERT_EQ(dir.Resolve(1), "a:1");
  auto slow = std::async(std::launch::async, [&] { return dir.Resolve(2); });
  entered.get_future().wait();
  EXPECT_EQ(dir.Resolve(1), "a:1");  // the refresh is still out
  auto waiting = std::async(std::launch::async, [&] { return dir.Resolve(2); });
  release.set_value();
  EXPECT_EQ(slow.get(), "b:2");
  EXPECT_EQ(waiting.get(), "b:2");  // waited for the refresh in flight rather than asking again
}

}  // namespace
}  // namespace yb
