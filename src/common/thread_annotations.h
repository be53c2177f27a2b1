// Clang's thread-safety annotations (-Wthread-safety), as LevelDB's port/thread_annotations.h has
// them, and mutexes that carry them. libstdc++'s std::mutex is not annotated, so a member guarded
// by one cannot be checked; guard it with yb::Mutex or yb::SharedMutex instead.
//
// GCC ignores the attributes. scripts/test.sh runs clang's analysis over the master
// (scripts/thread_safety.sh), where every lock is one of these.
#pragma once

#include <mutex>
#include <shared_mutex>

#if defined(__clang__)
#define YB_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define YB_THREAD_ANNOTATION(x)
#endif

#define CAPABILITY(x) YB_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY YB_THREAD_ANNOTATION(scoped_lockable)
#define GUARDED_BY(x) YB_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) YB_THREAD_ANNOTATION(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) YB_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define ACQUIRED_AFTER(...) YB_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define REQUIRES(...) YB_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) YB_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) YB_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) YB_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) YB_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) YB_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) YB_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) YB_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) YB_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ASSERT_CAPABILITY(x) YB_THREAD_ANNOTATION(assert_capability(x))
#define RETURN_CAPABILITY(x) YB_THREAD_ANNOTATION(lock_returned(x))
#define NO_THREAD_SAFETY_ANALYSIS YB_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace yb {

// std::mutex with annotations. Meets Lockable, so std::unique_lock and condition_variable_any work.
class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  bool try_lock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds the mutex (a contract it cannot see, such as an accessor's).
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  std::mutex mu_;
};

// std::shared_mutex with annotations.
class CAPABILITY("shared_mutex") SharedMutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  void lock_shared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void unlock_shared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a Mutex for its scope (std::lock_guard, annotated).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Holds a Mutex for its scope, and lets a std::condition_variable_any release it while it waits
// (wait() calls unlock() and lock(): to the analysis the mutex is held throughout the wait, as it
// is whenever the waiter runs). unlock() and lock() may also end and take it again in the scope.
class SCOPED_CAPABILITY MutexUniqueLock {
 public:
  explicit MutexUniqueLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexUniqueLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    held_ = false;
    mu_.unlock();
  }
  bool owns_lock() const { return held_; }
  MutexUniqueLock(const MutexUniqueLock&) = delete;
  MutexUniqueLock& operator=(const MutexUniqueLock&) = delete;

 private:
  Mutex& mu_;
  bool held_ = true;
};

// Holds a SharedMutex exclusively for its scope.
class SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~WriterLock() RELEASE() { mu_.unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex& mu_;
};

// Holds a SharedMutex shared for its scope.
class SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex& mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_.lock_shared(); }
  ~ReaderLock() RELEASE() { mu_.unlock_shared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex& mu_;
};

}  // namespace yb
