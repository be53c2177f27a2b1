#include "common/loop_group.h"

#include <unistd.h>

#include <algorithm>

#include "common/log.h"

namespace yb {

LoopGroup::LoopGroup(Options options, Factory factory) : options_(std::move(options)), factory_(std::move(factory)) {}

LoopGroup::~LoopGroup() { Stop(); }

Status LoopGroup::Start() {
  const int n = std::max(1, options_.threads);
  loops_.reserve(n);
  for (int i = 0; i < n; ++i) {
    loops_.push_back(std::make_unique<EventLoop>([this, i](int fd, std::string peer) {
      return factory_(*loops_[i], fd, std::move(peer));
    }));
    if (Status st = loops_.back()->Start(); !st.ok()) {
      loops_.clear();
      return Status(st.code(), options_.name + ": " + st.message());
    }
  }
  listener_ = std::make_unique<Listener>(options_.listen, [this](int fd, std::string peer) { Deal(fd, std::move(peer)); });
  if (Status st = listener_->Start(); !st.ok()) {
    listener_.reset();
    loops_.clear();
    return Status(st.code(), options_.name + ": " + st.message());
  }
  started_ = true;
  return Status::OK();
}

int LoopGroup::open_connections() const {
  int n = 0;
  for (const auto& loop : loops_) n += loop->open_connections();
  return n;
}

void LoopGroup::Deal(int fd, std::string peer) {
  if (open_connections() >= options_.max_connections) {
    const uint64_t n = ++refused_;
    if (LogOccurrence(n)) {  // a flood of connections does not flood the log
      YB_LOG_WARN("{}: {} connections open, the most allowed: closing a new one from {} ({} closed so far)",
                  options_.name, options_.max_connections, peer, n);
    }
    ::close(fd);
    return;
  }
  size_t best = 0;
  for (size_t i = 1; i < loops_.size(); ++i) {
    if (loops_[i]->open_connections() < loops_[best]->open_connections()) best = i;
  }
  loops_[best]->Adopt(fd, std::move(peer));
}

void LoopGroup::Stop() {
  if (!started_) return;
  started_ = false;
  listener_->Stop();  // no connection comes in from here on
  for (auto& loop : loops_) loop->Stop();
}

}  // namespace yb
