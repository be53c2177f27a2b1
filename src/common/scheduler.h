// Scheduler: where background steps run. A component with periodic work (the client's heartbeat,
// the SSD tier's rounds, the master's upkeep) exposes it as a step and asks the Scheduler it was
// given to run it; it owns no thread itself. ThreadScheduler runs each job on a thread of its own,
// on the real clock (so a slow step, an SSD round, never delays another job, a heartbeat); tests
// pass a ManualScheduler, whose jobs run only when the test advances its ManualClock, on the
// test's own thread, so no test waits on a real clock.
//
// A job's step returns whether it has more to do at once: true runs it again without waiting its
// period (the SSD tier drains its queue that way), with a chance to stop the job in between.
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"

namespace yb {

class Scheduler {
 public:
  // A running job. Destroying it stops it: no step starts afterwards, and a step in progress on
  // another thread is waited for. Never destroyed from its own step.
  class Job {
   public:
    virtual ~Job() = default;
  };
  using Step = std::function<bool()>;  // true: more to do now

  virtual ~Scheduler() = default;
  // Runs `step` every `period`, the first time one period from now.
  virtual std::unique_ptr<Job> Every(std::string name, std::chrono::milliseconds period, Step step) = 0;
  // The same for a step that never has more to do at once.
  std::unique_ptr<Job> Every(std::string name, std::chrono::milliseconds period, std::function<void()> step) {
    return Every(std::move(name), period, Step([s = std::move(step)] {
                   s();
                   return false;
                 }));
  }
  // The clock the periods are measured on.
  virtual const Clock& clock() const = 0;
};

// Each job on its own thread (named after the job), on steady_clock.
class ThreadScheduler final : public Scheduler {
 public:
  using Scheduler::Every;
  std::unique_ptr<Job> Every(std::string name, std::chrono::milliseconds period, Step step) override;
  const Clock& clock() const override { return clock_; }

 private:
  RealClock clock_;
};

// Jobs run only in Advance()/RunDue(), on the caller's thread, as the ManualClock says they are due.
class ManualScheduler final : public Scheduler {
 public:
  explicit ManualScheduler(ManualClock& clock) : clock_(clock) {}
  ~ManualScheduler() override;
  using Scheduler::Every;
  std::unique_ptr<Job> Every(std::string name, std::chrono::milliseconds period, Step step) override;
  const Clock& clock() const override { return clock_; }

  // Moves the clock forward by `ms`, stopping at each moment a job is due to run it (in the order
  // they come due). Returns the steps run.
  size_t Advance(TimeMs ms);
  // Runs the jobs due now (a step that has more to do runs again, up to 1000 times). Returns the
  // steps run.
  size_t RunDue();
  size_t jobs() const;

 private:
  class ManualJob;
  struct Entry {
    std::string name;
    TimeMs period;
    Step step;
    TimeMs next;
    bool running = false;
  };
  void Remove(uint64_t id);

  ManualClock& clock_;
  mutable std::mutex mu_;
  std::condition_variable done_;                        // a step ended
  uint64_t next_id_ = 1;                                // guarded by mu_
  std::map<uint64_t, std::shared_ptr<Entry>> entries_;  // guarded by mu_
};

}  // namespace yb
