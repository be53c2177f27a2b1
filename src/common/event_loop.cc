#include "common/event_loop.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/cpus.h"
#include "common/log.h"

namespace yb {

EventLoop::EventLoop(Factory factory) : factory_(std::move(factory)) {}

EventLoop::~EventLoop() {
  Stop();  // closes the sessions (only a started loop has any)
  for (auto& [fd, peer] : incoming_) CloseFd(fd, peer);
  if (wake_ >= 0) ::close(wake_);
  if (ep_ >= 0) ::close(ep_);
}

Status EventLoop::Start(int cpu) {
  cpu_ = cpu;
  ep_ = epoll_create1(EPOLL_CLOEXEC);
  wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (ep_ < 0 || wake_ < 0)
    return Status(Code::kInternal, std::string("event loop: epoll/eventfd: ") + strerror(errno));
  if (!Watch(EPOLL_CTL_ADD, wake_, EPOLLIN, nullptr)) {  // a null pointer marks the wake-up descriptor
    return Status(Code::kInternal, std::string("event loop: epoll_ctl: ") + strerror(errno));
  }
  thread_ = std::thread([this] { Run(); });
  if (cpu_ >= 0) {
    if (int rc = PinThread(thread_.native_handle(), cpu_); rc != 0) {
      YB_LOG_WARN("event loop: cannot pin the serving thread to CPU {}: {}; it runs unpinned", cpu_, strerror(rc));
      cpu_ = -1;
    }
  }
  return Status::OK();
}

void EventLoop::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  Wake();
  thread_.join();
  for (auto& [id, e] : sessions_) {
    --open_;
    e.session.reset();
    ::close(e.fd);
    if (on_close_) on_close_(e.peer);
  }
  sessions_.clear();
}

void EventLoop::Adopt(int fd, std::string peer) {
  ++open_;
  {
    std::lock_guard lock(mu_);
    incoming_.emplace_back(fd, std::move(peer));
  }
  Wake();
}

void EventLoop::RunOn(uint64_t id, std::function<bool(LoopSession&)> fn) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(Task{id, std::move(fn), nullptr});
  }
  Wake();
}

void EventLoop::Post(std::function<void()> fn) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    tasks_.push_back(Task{0, nullptr, std::move(fn)});
  }
  Wake();
}

int64_t EventLoop::Unresponsive(int64_t now_ms) {
  const int64_t late = probe_late_ms_.exchange(0);
  const int64_t sent = probe_sent_ms_.load();
  if (sent != 0) return std::max(late, now_ms - sent);
  probe_sent_ms_.store(now_ms);
  Post([this, now_ms] {
    probe_late_ms_.store(SteadyNowMs() - now_ms);
    probe_sent_ms_.store(0);
  });
  return late;
}

bool EventLoop::Visit(uint64_t id, const std::function<bool(LoopSession&)>& fn) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return false;
  Entry& e = it->second;
  const uint32_t before = e.session->Interest();
  Settle(e, before, fn(*e.session));
  return true;
}

bool EventLoop::Watch(int op, int fd, uint32_t events, void* ptr) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = ptr;
  return epoll_ctl(ep_, op, fd, &ev) == 0;
}

void EventLoop::Wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t w = ::write(wake_, &one, sizeof(one));
}

void EventLoop::Run() {
  std::vector<epoll_event> evs(256);
  for (;;) {
    int k = epoll_wait(ep_, evs.data(), static_cast<int>(evs.size()), buffered_.empty() ? SweepPeriod() : 0);
    if (k < 0) {
      if (errno == EINTR) continue;
      YB_LOG_ERROR("event loop: epoll_wait: {}: this serving thread stops", strerror(errno));
      return;
    }
    if (stall_ms_ > 0) now_ms_ = SteadyNowMs();  // one reading per batch, not per event
    bool woken = false;
    for (int i = 0; i < k; ++i) {
      auto* e = static_cast<Entry*>(evs[i].data.ptr);
      if (e == nullptr) {
        woken = true;
        continue;
      }
      const uint32_t before = e->session->Interest();
      e->last_event_ms = now_ms_;
      Settle(*e, before, e->session->OnEvents(evs[i].events));
    }
    OfferBuffered();
    // After the batch: a task may close a session whose readiness is further down the batch.
    if (woken && !TakeQueued()) return;
    if (after_batch_) after_batch_();
    if (stall_ms_ > 0) Sweep();
  }
}

void EventLoop::OfferBuffered() {
  if (buffered_.empty()) return;
  std::vector<uint64_t> ids;
  ids.swap(buffered_);
  for (uint64_t id : ids) {
    auto it = sessions_.find(id);
    if (it == sessions_.end() || !it->second.session->Buffered()) continue;
    Entry& e = it->second;
    const uint32_t before = e.session->Interest();
    if (!(before & EPOLLIN)) continue;  // it reads no more for now: its next run lists it again
    e.last_event_ms = now_ms_;
    Settle(e, before, e.session->OnEvents(EPOLLIN));
  }
}

void EventLoop::Sweep() {
  const int64_t now = now_ms_;
  if (now - last_sweep_ms_ < SweepPeriod()) return;
  last_sweep_ms_ = now;
  std::vector<uint64_t> stalled;
  for (auto& [id, e] : sessions_) {
    const int64_t deadline = e.session->DeadlineMs();
    if ((now - e.last_event_ms >= stall_ms_ && e.session->WaitsOnPeer()) || (deadline > 0 && now >= deadline)) {
      stalled.push_back(id);
    }
  }
  for (uint64_t id : stalled) {
    auto it = sessions_.find(id);
    it->second.session->OnStalled(now - it->second.last_event_ms);
    Close(it->second);
  }
}

bool EventLoop::TakeQueued() {
  uint64_t n;
  [[maybe_unused]] ssize_t r = ::read(wake_, &n, sizeof(n));
  std::vector<std::pair<int, std::string>> in;
  std::vector<Task> tasks;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    in.swap(incoming_);
    tasks.swap(tasks_);
  }
  for (auto& [fd, peer] : in) {
    std::unique_ptr<LoopSession> s = factory_(fd, peer);
    if (!s) {
      CloseFd(fd, peer);
      continue;
    }
    const uint64_t id = next_id_++;
    s->loop_id_ = id;
    const uint32_t interest = s->Interest();
    Entry& e =
        sessions_.emplace(id, Entry{std::move(s), fd, stall_ms_ > 0 ? SteadyNowMs() : 0, std::move(peer)}).first->second;
    if (!Watch(EPOLL_CTL_ADD, fd, interest, &e)) {
      YB_LOG_WARN("event loop: cannot watch a new connection: {}", strerror(errno));
      Close(e);
    }
  }
  for (auto& t : tasks) {
    if (t.id == 0) {  // the loop's own (Post)
      t.loop_fn();
      continue;
    }
    auto it = sessions_.find(t.id);
    if (it == sessions_.end()) continue;  // closed since
    Entry& e = it->second;
    const uint32_t before = e.session->Interest();
    e.last_event_ms = now_ms_;  // work done for it (an SSD read finished) is its event too
    Settle(e, before, t.fn(*e.session));
  }
  return true;
}

void EventLoop::Settle(Entry& e, uint32_t before, bool ok) {
  if (!ok) return Close(e);
  if (e.session->Buffered()) buffered_.push_back(e.session->loop_id());
  if (uint32_t now = e.session->Interest(); now != before && !Watch(EPOLL_CTL_MOD, e.fd, now, &e)) Close(e);
}

void EventLoop::Close(Entry& e) {
  epoll_ctl(ep_, EPOLL_CTL_DEL, e.fd, nullptr);
  const uint64_t id = e.session->loop_id();
  const int fd = e.fd;
  const std::string peer = std::move(e.peer);
  --open_;  // first: whoever the session's destructor tells finds the count down already
  e.session.reset();
  ::close(fd);
  sessions_.erase(id);
  if (on_close_) on_close_(peer);
}

// A descriptor no session was made for.
void EventLoop::CloseFd(int fd, const std::string& peer) {
  ::close(fd);
  --open_;
  if (on_close_) on_close_(peer);
}

}  // namespace yb
