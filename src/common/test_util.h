// Helpers for tests (gtest).
//
// DescriptorExhaustion leaves this process with no file descriptor to spare and one connection queued on a
// local port, so that the listener's next accept fails (EMFILE). It lowers the soft RLIMIT_NOFILE
// to a little above the descriptors open now, fills the rest with eventfds (no connection yet, so
// the listener takes none of them), then frees one and connects with it. The destructor closes
// them and restores the limit.
#pragma once

#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace yb::test_util {

// UBSan's vptr check reads memory through a pipe: in a process with no descriptor left it reports
// valid objects as invalid, so tests that exhaust descriptors skip themselves in that build.
#if defined(__SANITIZE_ADDRESS__)  // GCC's name for an ASan build; clang's is __has_feature
#define YB_TEST_UTIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define YB_TEST_UTIL_ASAN 1
#endif
#endif
#ifdef YB_TEST_UTIL_ASAN
inline constexpr bool kSanitizerNeedsFreeDescriptors = true;
#else
inline constexpr bool kSanitizerNeedsFreeDescriptors = false;
#endif

// Records when a callback is called (e.g. a server's on_accept_failed), from any thread, and
// lets a test wait for the calls.
class CallTimes {
 public:
  using Time = std::chrono::steady_clock::time_point;
  std::function<void()> Recorder() {
    return [this] {
      std::lock_guard lock(mu_);
      times_.push_back(std::chrono::steady_clock::now());
      cv_.notify_all();
    };
  }
  // The times of the first `n` calls once there have been that many, or empty after `timeout`.
  std::vector<Time> WaitFor(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return times_.size() >= n; })) return {};
    return {times_.begin(), times_.begin() + static_cast<std::ptrdiff_t>(n)};
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Time> times_;
};

class DescriptorExhaustion {
 public:
  explicit DescriptorExhaustion(uint16_t port) {
    if (getrlimit(RLIMIT_NOFILE, &saved_) != 0) return;
    int open_now = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) open_now += e.is_symlink() ? 1 : 0;
    rlimit low = saved_;
    low.rlim_cur = static_cast<rlim_t>(open_now + 16);
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) return;
    lowered_ = true;
    addr_.sin_family = AF_INET;
    addr_.sin_port = htons(port);
    addr_.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int fd; (fd = eventfd(0, EFD_CLOEXEC)) >= 0;) fds_.push_back(fd);
    // Free one descriptor for the connection. Another thread (a sanitizer's runtime) may take it
    // first: then free one more.
    while (!fds_.empty() && !ok_) {
      ::close(fds_.back());
      fds_.pop_back();
      int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      if (::connect(fd, reinterpret_cast<sockaddr*>(&addr_), sizeof(addr_)) != 0) {
        ::close(fd);
        return;
      }
      fds_.push_back(fd);
      ok_ = true;
    }
  }
  ~DescriptorExhaustion() {
    for (int fd : fds_) {
      if (fd >= 0) ::close(fd);
    }
    if (lowered_) setrlimit(RLIMIT_NOFILE, &saved_);
  }
  DescriptorExhaustion(const DescriptorExhaustion&) = delete;
  DescriptorExhaustion& operator=(const DescriptorExhaustion&) = delete;

  // True once a connection is queued with no descriptor left to accept it.
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool lowered_ = false;
  bool ok_ = false;
  sockaddr_in addr_{};
  std::vector<int> fds_;
};

// Exhausts descriptors with a connection queued on `port` and checks that the server's failed
// accepts, recorded by `failures`, come at least 9 ms apart (a retry at once would fail within
// microseconds). Returns the exhaustion, to be reset to give the descriptors back; null when the
// checks could not be made (they have failed the test).
inline std::unique_ptr<DescriptorExhaustion> ExhaustAndExpectAcceptPauses(uint16_t port, CallTimes& failures) {
  auto exhausted = std::make_unique<DescriptorExhaustion>(port);
  EXPECT_TRUE(exhausted->ok());
  if (!exhausted->ok()) return nullptr;
  auto times = failures.WaitFor(2, std::chrono::seconds(10));
  EXPECT_EQ(times.size(), 2u);
  if (times.size() != 2) return nullptr;
  EXPECT_GE(times[1] - times[0], std::chrono::milliseconds(9));
  return exhausted;
}

}  // namespace yb::test_util
