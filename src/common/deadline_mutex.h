// DeadlineMutex: a mutex whose lock can give up at a deadline on the steady clock.
//
// std::timed_mutex offers the same, but libstdc++ waits on the steady clock with
// pthread_mutex_clocklock, which GCC 12's ThreadSanitizer does not intercept: it would then see
// unlocks of a mutex it never saw locked. A condition variable's steady-clock wait it does see.
// Meets Lockable, so std::lock_guard and std::unique_lock work with it; carries clang's
// thread-safety annotations (common/thread_annotations.h), and DeadlineMutexLock holds it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/thread_annotations.h"

namespace yb {

class CAPABILITY("mutex") DeadlineMutex {
 public:
  void lock() ACQUIRE() {
    std::unique_lock l(mu_);
    cv_.wait(l, [this] { return !held_; });
    held_ = true;
  }
  bool try_lock() TRY_ACQUIRE(true) {
    std::lock_guard l(mu_);
    if (held_) return false;
    held_ = true;
    return true;
  }
  // False if the mutex was still held by someone else at `until`.
  bool try_lock_until(std::chrono::steady_clock::time_point until) TRY_ACQUIRE(true) {
    std::unique_lock l(mu_);
    if (!cv_.wait_until(l, until, [this] { return !held_; })) return false;
    held_ = true;
    return true;
  }
  void unlock() RELEASE() {
    {
      std::lock_guard l(mu_);
      held_ = false;
    }
    cv_.notify_one();
  }
  // Tells the analysis the caller holds the mutex (where it cannot see so, as in a lambda).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool held_ = false;
};

// Holds a DeadlineMutex the caller took (lock() or try_lock_until()) until the end of its scope.
class SCOPED_CAPABILITY DeadlineMutexLock {
 public:
  DeadlineMutexLock(DeadlineMutex& mu, std::adopt_lock_t) REQUIRES(mu) : mu_(mu) {}
  ~DeadlineMutexLock() RELEASE() { mu_.unlock(); }
  DeadlineMutexLock(const DeadlineMutexLock&) = delete;
  DeadlineMutexLock& operator=(const DeadlineMutexLock&) = delete;

 private:
  DeadlineMutex& mu_;
};

}  // namespace yb
