// Worker: a thread of its own, for a loop that blocks on the kernel or on a condition variable
// rather than running in steps (the metadata log's syncer, a log shipper, a Unix-socket server, a
// name lookup that getaddrinfo may hold for seconds). Work that runs in steps goes on a Scheduler
// (scheduler.h), whose manual form tests drive; this is the one other way to start a thread
// (scripts/check_house.py). Each is named (what top -H and gdb show; 15 characters at most kept).
// The destructor joins what was not joined or detached.
#pragma once

#include <pthread.h>

#include <functional>
#include <string>
#include <thread>
#include <utility>

namespace yb {

class Worker {
 public:
  Worker() = default;
  // Starts `fn` on a new thread named `name`. Throws std::system_error as std::thread does when no
  // thread can be made.
  Worker(const std::string& name, std::function<void()> fn) : thread_(std::move(fn)) {
    ::pthread_setname_np(thread_.native_handle(), name.substr(0, 15).c_str());
  }
  Worker(Worker&&) = default;
  Worker& operator=(Worker&& other) {
    Join();
    thread_ = std::move(other.thread_);
    return *this;
  }
  ~Worker() { Join(); }

  bool running() const { return thread_.joinable(); }
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // Lets the thread end on its own: `fn` must hold (by value or shared ownership) all it uses.
  void Detach() {
    if (thread_.joinable()) thread_.detach();
  }

 private:
  std::thread thread_;
};

}  // namespace yb
