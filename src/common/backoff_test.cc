#include "common/backoff.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace yb
