#include "common/scheduler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

namespace yb {
namespace {

TEST(ManualSchedulerTest, JobsRunWhenTheClockSaysTheyAreDue) {
  ManualClock clock;
  ManualScheduler s(clock);
  std::vector<std::string> ran;
  auto fast = s.Every("fast", std::chrono::milliseconds(100),
                      [&] { ran.push_back("fast@" + std::to_string(clock.NowMs() % 1000)); });
  auto slow = s.Every("slow", std::chrono::milliseconds(250),
                      [&] { ran.push_back("slow@" + std::to_string(clock.NowMs() % 1000)); });
  EXPECT_EQ(s.Advance(99), 0u);
  EXPECT_EQ(s.Advance(1), 1u);
  EXPECT_EQ(s.Advance(400), 6u);  // fast at 200..500, slow at 250 and 500
  EXPECT_EQ(ran, (std::vector<std::string>{"fast@100", "fast@200", "slow@250", "fast@300", "fast@400", "fast@500",
                                           "slow@500"}));
  slow.reset();
  ran.clear();
  s.Advance(250);
  EXPECT_EQ(ran, (std::vector<std::string>{"fast@600", "fast@700"}));
  EXPECT_EQ(s.jobs(), 1u);
}

TEST(ManualSchedulerTest, AStepWithMoreToDoRunsAgainAtOnce) {
  ManualClock clock;
  ManualScheduler s(clock);
  int left = 5, steps = 0;
  auto job = s.Every("drain", std::chrono::milliseconds(20), Scheduler::Step([&] {
                       ++steps;
                       if (left > 0) --left;
                       return left > 0;
                     }));
  EXPECT_EQ(s.Advance(20), 5u);
  EXPECT_EQ(left, 0);
  EXPECT_EQ(s.Advance(20), 1u);  // nothing to do: once per period
  EXPECT_EQ(steps, 6);
}

TEST(ThreadSchedulerTest, StoppingAJobWaitsForItsStepInProgress) {
  ThreadScheduler s;
  std::promise<void> entered;
  std::atomic<bool> finished{false};
  std::atomic<int> runs{0};
  auto job = s.Every("t", std::chrono::milliseconds(1), [&] {
    if (runs++ == 0) {
      entered.set_value();
      finished = true;
    }
  });
  entered.get_future().wait();
  job.reset();            // waits for the step in progress
  EXPECT_TRUE(finished);  // the job's thread is gone: no step can start after this
}

}  // namespace
}  // namespace yb
