#include "common/deadline_mutex.h"

#include <gtest/gtest.h>

#include <thread>

namespace yb {
namespace {

using namespace std::chrono_literals;

TEST(DeadlineMutexTest, ALockHeldElsewhereIsGivenUpAtTheDeadline) {
  DeadlineMutex m;
  std::unique_lock held(m);
  bool got = true;
  std::thread other([&] { got = m.try_lock_until(std::chrono::steady_clock::now() + 20ms); });
  other.join();
  EXPECT_FALSE(got);
  EXPECT_FALSE(m.try_lock());
  held.unlock();
  EXPECT_TRUE(m.try_lock_until(std::chrono::steady_clock::now()));  // free: no wait at all
  m.unlock();
}

TEST(DeadlineMutexTest, AWaiterGetsTheLockWhenItIsReleased) {
  DeadlineMutex m;
  m.lock();
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    std::unique_lock l(m, std::defer_lock);
    got = l.try_lock_until(std::chrono::steady_clock::now() + 1h);  // released long before
  });
  m.unlock();
  waiter.join();
  EXPECT_TRUE(got);
  EXPECT_TRUE(m.try_lock());  // the waiter's unique_lock released it
  m.unlock();
}

TEST(DeadlineMutexTest, ExcludesManyThreads) {
  DeadlineMutex m;
  int counter = 0;  // ThreadSanitizer checks that the mutex orders these
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        if (i % 2 == 0) {
          std::lock_guard l(m);
          ++counter;
        } else {
          std::unique_lock l(m, std::defer_lock);
          ASSERT_TRUE(l.try_lock_until(std::chrono::steady_clock::now() + 1h));
          ++counter;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter, 40000);
}

}  // namespace
}  // namespace yb
