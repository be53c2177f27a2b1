// PeriodicRunner: the scheduler that drives RunOnce-style steps on a real clock, one thread for
// all its tasks. Components never own threads; whoever wires them (tools/, the C API, the demo)
// hands their steps to a runner. Stop() (or the destructor) waits for the thread to end.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace yb {

class PeriodicRunner {
 public:
  PeriodicRunner() = default;
  ~PeriodicRunner() { Stop(); }
  PeriodicRunner(const PeriodicRunner&) = delete;
  PeriodicRunner& operator=(const PeriodicRunner&) = delete;

  // Adds a task before Start().
  void Add(std::string name, std::chrono::milliseconds period, std::function<void()> step) {
    tasks_.push_back(Task{std::move(name), period, std::move(step), {}});
  }

  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }

  void Stop() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  struct Task {
    std::string name;
    std::chrono::milliseconds period;
    std::function<void()> step;
    std::chrono::steady_clock::time_point next;
  };

  void Loop() {
    auto now = std::chrono::steady_clock::now();
    for (auto& t : tasks_) t.next = now + t.period;
    std::unique_lock lock(mu_);
    while (!stop_) {
      auto wake = now + std::chrono::hours(1);
      for (auto& t : tasks_) wake = std::min(wake, t.next);
      cv_.wait_until(lock, wake, [this] { return stop_; });
      if (stop_) break;
      lock.unlock();
      now = std::chrono::steady_clock::now();
      for (auto& t : tasks_) {
        if (t.next <= now) {
          t.step();
          t.next = now + t.period;
        }
      }
      lock.lock();
    }
  }

  std::vector<Task> tasks_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace yb
