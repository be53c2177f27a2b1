#include "common/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace yb {
namespace {

using namespace std::chrono_literals;

TEST(BackoffTest, DoublesUpToTheMaximumAndStartsOverAfterReset) {
  Backoff b(10ms, 50ms);
  EXPECT_EQ(b.Next(), 10ms);
  EXPECT_EQ(b.Next(), 20ms);
  EXPECT_EQ(b.Next(), 40ms);
  EXPECT_EQ(b.Next(), 50ms);
  EXPECT_EQ(b.Next(), 50ms);
  b.Reset();
  EXPECT_EQ(b.Next(), 10ms);
  Backoff none(0ms, 0ms);  // retry at once
  EXPECT_EQ(none.Next(), 0ms);
  EXPECT_EQ(none.Next(), 0ms);
}

TEST(BackoffTest, JitterSpreadsThePausesAroundTheScheduleAndNeverPastTheMaximum) {
  const std::chrono::milliseconds schedule[] = {100ms, 200ms, 400ms, 800ms, 1000ms, 1000ms};
  std::set<int64_t> firsts;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    Backoff b(100ms, 1000ms, 0.2, seed);
    for (auto p : schedule) {
      auto got = b.Next();
      EXPECT_GE(got.count(), p.count() * 8 / 10) << "seed " << seed;
      EXPECT_LE(got.count(), std::min<int64_t>(p.count() * 12 / 10, 1000)) << "seed " << seed;
    }
    firsts.insert(Backoff(100ms, 1000ms, 0.2, seed).Next().count());
  }
  EXPECT_GT(firsts.size(), 10u);  // fifty clients do not retry in step
  Backoff a(100ms, 1000ms, 0.2, 7), b(100ms, 1000ms, 0.2, 7);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a.Next(), b.Next());  // a seed replays
}

}  // namespace
}  // namespace yb
