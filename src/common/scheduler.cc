#include "common/scheduler.h"

#include <pthread.h>

#include <thread>
#include <vector>

namespace yb {
namespace {

class ThreadJob final : public Scheduler::Job {
 public:
  ThreadJob(std::string name, std::chrono::milliseconds period, Scheduler::Step step)
      : period_(period), step_(std::move(step)) {
    thread_ = std::thread([this, name = std::move(name)] {
      pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());  // the kernel keeps 15 characters
      Loop();
    });
  }
  ~ThreadJob() override {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void Loop() {
    std::unique_lock lock(mu_);
    for (;;) {
      if (cv_.wait_for(lock, period_, [this] { return stop_; })) return;
      bool more = true;
      while (more) {
        lock.unlock();
        more = step_();
        lock.lock();
        if (stop_) return;
      }
    }
  }

  const std::chrono::milliseconds period_;
  const Scheduler::Step step_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace

std::unique_ptr<Scheduler::Job> ThreadScheduler::Every(std::string name, std::chrono::milliseconds period, Step step) {
  return std::make_unique<ThreadJob>(std::move(name), period, std::move(step));
}

class ManualScheduler::ManualJob final : public Scheduler::Job {
 public:
  ManualJob(ManualScheduler& s, uint64_t id) : s_(s), id_(id) {}
  ~ManualJob() override { s_.Remove(id_); }

 private:
  ManualScheduler& s_;
  const uint64_t id_;
};

ManualScheduler::~ManualScheduler() = default;

std::unique_ptr<Scheduler::Job> ManualScheduler::Every(std::string name, std::chrono::milliseconds period, Step step) {
  auto e = std::make_shared<Entry>();
  e->name = std::move(name);
  e->period = std::max<TimeMs>(1, period.count());
  e->step = std::move(step);
  e->next = clock_.NowMs() + e->period;
  std::lock_guard lock(mu_);
  uint64_t id = next_id_++;
  entries_[id] = std::move(e);
  return std::make_unique<ManualJob>(*this, id);
}

void ManualScheduler::Remove(uint64_t id) {
  std::unique_lock lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  std::shared_ptr<Entry> e = it->second;
  entries_.erase(it);
  done_.wait(lock, [&] { return !e->running; });  // a step on another thread
}

size_t ManualScheduler::RunDue() {
  size_t ran = 0;
  for (;;) {
    // The job due first (ties: the one added first); none due: done.
    std::shared_ptr<Entry> due;
    {
      std::lock_guard lock(mu_);
      for (auto& [id, e] : entries_) {
        if (!e->running && e->next <= clock_.NowMs() && (!due || e->next < due->next)) due = e;
      }
      if (!due) return ran;
      due->running = true;
    }
    bool more = true;
    for (int i = 0; i < 1000 && more; ++i) {
      more = due->step();
      ++ran;
    }
    {
      std::lock_guard lock(mu_);
      due->running = false;
      due->next = clock_.NowMs() + due->period;
    }
    done_.notify_all();
  }
}

size_t ManualScheduler::Advance(TimeMs ms) {
  const TimeMs end = clock_.NowMs() + ms;
  size_t ran = 0;
  for (;;) {
    ran += RunDue();
    const TimeMs now = clock_.NowMs();
    if (now >= end) return ran;
    TimeMs next = end;  // the next moment a job comes due, or the end
    {
      std::lock_guard lock(mu_);
      for (auto& [id, e] : entries_) {
        if (e->next > now) next = std::min(next, e->next);
      }
    }
    clock_.Set(next);
  }
}

size_t ManualScheduler::jobs() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

}  // namespace yb
