// DeadlineMutex: a mutex whose lock can give up at a deadline on the steady clock.
//
// std::timed_mutex offers the same, but libstdc++ waits on the steady clock with
// pthread_mutex_clocklock, which GCC 12's ThreadSanitizer does not intercept: it would then see
// unlocks of a mutex it never saw locked. A condition variable's steady-clock wait it does see.
// Meets Lockable, so std::lock_guard and std::unique_lock work with it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace yb {

class DeadlineMutex {
 public:
  void lock() {
    std::unique_lock l(mu_);
    cv_.wait(l, [this] { return !held_; });
    held_ = true;
  }
  bool try_lock() {
    std::lock_guard l(mu_);
    if (held_) return false;
    held_ = true;
    return true;
  }
  // False if the mutex was still held by someone else at `until`.
  bool try_lock_until(std::chrono::steady_clock::time_point until) {
    std::unique_lock l(mu_);
    if (!cv_.wait_until(l, until, [this] { return !held_; })) return false;
    held_ = true;
    return true;
  }
  void unlock() {
    {
      std::lock_guard l(mu_);
      held_ = false;
    }
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
};

}  // namespace yb
