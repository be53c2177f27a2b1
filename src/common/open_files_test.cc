#include "common/open_files.h"

#include <sys/resource.h>
#include <gtest/gtest.h>

namespace yb {
namespace {

TEST(OpenFilesTest, TheSoftLimitIsRaisedToTheHardOneAndNeverLowered) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < 512) GTEST_SKIP() << "hard limit below 512";
  rlimit low = saved;
  low.rlim_cur = 256;
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);

  OpenFileLimit raised = RaiseOpenFileLimit();
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(raised.before, 256u);
  EXPECT_EQ(raised.now, after.rlim_cur);
  EXPECT_GT(after.rlim_cur, 256u);
  if (saved.rlim_max != RLIM_INFINITY) {
    EXPECT_EQ(after.rlim_cur, saved.rlim_max);
  }

  OpenFileLimit again = RaiseOpenFileLimit();  // already at the top: unchanged
  EXPECT_EQ(again.before, after.rlim_cur);
  EXPECT_EQ(again.now, after.rlim_cur);
  setrlimit(RLIMIT_NOFILE, &saved);
}

}  // namespace
}  // namespace yb
