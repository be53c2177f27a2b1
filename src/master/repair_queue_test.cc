// RepairQueue on its own: the order keys come out in, each key once, the byte budget the bandwidth
// refills (on the caller's clock), the in-flight limit, and the copies handed to their clients.
#include "master/repair_queue.h"

#include <gtest/gtest.h>

namespace yb {
namespace {

RepairQueue::InFlight Copy(const std::string& key, ClientId client, TimeMs deadline, uint64_t size = 100) {
  RepairQueue::InFlight f;
  f.table_key = key;
  f.client = client;
  f.deadline = deadline;
  f.task.size = size;
  return f;
}

TEST(RepairQueueTest, FewestReplicasLeftComeFirstAndEachKeyIsQueuedOnce) {
  RepairQueue q(1 << 20);
  q.Note("two-left", 2);
  q.Note("one-left", 1);
  q.Note("two-left", 2);  // queued already
  q.Note("one-left-b", 1);
  EXPECT_EQ(q.at_risk(), 3u);
  auto round = q.NextRound(1000);
  ASSERT_EQ(round.size(), 3u);
  EXPECT_EQ(round[0].second, "one-left");
  EXPECT_EQ(round[1].second, "one-left-b");
  EXPECT_EQ(round[2].second, "two-left");
  // Taken for a round, still counted: noted again meanwhile, a key is not queued twice.
  q.Note("one-left", 1);
  EXPECT_TRUE(q.NextRound(1001).empty());
  q.Requeue({round[2]});
  q.Forget("one-left");
  q.Note("one-left", 1);
  round = q.NextRound(1002);
  ASSERT_EQ(round.size(), 2u);
  EXPECT_EQ(round[0].second, "one-left");
  EXPECT_EQ(round[1].second, "two-left");
}

TEST(RepairQueueTest, WithoutBandwidthNothingIsQueued) {
  RepairQueue q(0);
  q.Note("k", 1);
  EXPECT_EQ(q.at_risk(), 0u);
  EXPECT_TRUE(q.NextRound(1000).empty());
}

// A bucket of bytes: full (a second's worth) at the first round, spent by copies, refilled at the
// bandwidth by the clock, never above a second's worth.
TEST(RepairQueueTest, TheBudgetIsRefilledAtTheBandwidthByTheClock) {
  RepairQueue q(1000);
  q.Note("a", 1);
  ASSERT_EQ(q.NextRound(10'000).size(), 1u);
  EXPECT_TRUE(q.HasBudget());
  q.Spend(1500);
  EXPECT_FALSE(q.HasBudget());
  q.Note("b", 1);
  EXPECT_TRUE(q.NextRound(10'100).empty());  // -500 + 100: still spent
  auto round = q.NextRound(10'600);          // -500 + 600 = 100
  ASSERT_EQ(round.size(), 1u);
  EXPECT_TRUE(q.HasBudget());
  q.Spend(100);
  EXPECT_FALSE(q.HasBudget());
  (void)q.NextRound(100'000);  // a long quiet spell refills a second's worth, no more
  q.Spend(1000);
  EXPECT_FALSE(q.HasBudget());
}

TEST(RepairQueueTest, CopiesAreHandedToTheirClientOnceAndEndOnce) {
  RepairQueue q(1 << 20);
  const ClientId a{1, 1}, b{2, 2};
  q.Note("k1", 1);
  q.Note("k2", 1);
  (void)q.NextRound(0);
  const uint64_t t1 = q.Start(Copy("k1", a, 5000));
  const uint64_t t2 = q.Start(Copy("k2", b, 9000));
  EXPECT_NE(t1, t2);
  EXPECT_EQ(q.in_flight(), 2u);
  EXPECT_EQ(q.Waiting(a), 1u);
  auto tasks = q.Fetch(a, 10);
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].task_id, t1);
  EXPECT_TRUE(q.Fetch(a, 10).empty());  // handed out once
  EXPECT_EQ(q.Waiting(a), 0u);
  EXPECT_FALSE(q.Finish(t1, b).has_value());  // not b's copy
  auto done = q.Finish(t1, a);
  ASSERT_TRUE(done.has_value());
  EXPECT_EQ(done->table_key, "k1");
  EXPECT_FALSE(q.Finish(t1, a).has_value());  // ended already
  EXPECT_EQ(q.at_risk(), 1u);                 // k2 is still being copied

  // Timed out: taken for the caller to undo; its key stays counted until forgotten.
  auto late = q.TakeIf([](const ClientId&, TimeMs deadline) { return deadline <= 9000; });
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].table_key, "k2");
  EXPECT_EQ(q.in_flight(), 0u);
  EXPECT_EQ(q.at_risk(), 1u);
  q.Forget("k2");
  EXPECT_EQ(q.at_risk(), 0u);
}

TEST(RepairQueueTest, ARoundNeverTakesMoreThanTheInFlightLimitAllows) {
  RepairQueue q(uint64_t{1} << 40);
  for (size_t i = 0; i < RepairQueue::kMaxInFlight + 10; ++i) q.Note("k" + std::to_string(i), 1);
  auto round = q.NextRound(0);
  EXPECT_EQ(round.size(), RepairQueue::kMaxPerRound);
  for (size_t i = 0; i < RepairQueue::kMaxInFlight - 10; ++i) (void)q.Start(Copy("c" + std::to_string(i), {1, 1}, 0));
  EXPECT_EQ(q.NextRound(1).size(), 10u);
  for (int i = 0; i < 10; ++i) (void)q.Start(Copy("d" + std::to_string(i), {1, 1}, 0));
  EXPECT_TRUE(q.NextRound(2).empty());  // at the limit
}

}  // namespace
}  // namespace yb
