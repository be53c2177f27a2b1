#include "common/loop_group.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

#include "common/cpus.h"
#include "common/log.h"

namespace yb {

LoopGroup::LoopGroup(Options options, Factory factory) : options_(std::move(options)), factory_(std::move(factory)) {}

LoopGroup::~LoopGroup() { Stop(); }

Status LoopGroup::Start() {
  const int n = std::max(1, options_.threads);
  std::vector<int> cpus;
  if (options_.pin_to_cpus) {
    cpus = AllowedCpus();
    if (cpus.empty())
      YB_LOG_WARN("{}: cannot read this process's CPUs: the serving threads run unpinned", options_.name);
  }
  loops_.reserve(n);
  for (int i = 0; i < n; ++i) {
    loops_.push_back(std::make_unique<EventLoop>(
        [this, i](int fd, std::string peer) { return factory_(*loops_[i], fd, std::move(peer)); }));
    if (options_.max_connections_per_peer > 0) {
      loops_.back()->SetOnClose([this](const std::string& peer) {
        std::lock_guard lock(peers_mu_);
        if (auto it = per_peer_.find(peer); it != per_peer_.end() && --it->second <= 0) per_peer_.erase(it);
      });
    }
    if (options_.after_batch) {
      EventLoop* loop = loops_.back().get();
      loops_.back()->SetAfterBatch([this, loop] { options_.after_batch(*loop); });
    }
    loops_.back()->SetStallTimeout(options_.stall_timeout_ms);
    if (Status st = loops_.back()->Start(cpus.empty() ? -1 : cpus[i % cpus.size()]); !st.ok()) {
      loops_.clear();
      return Status(st.code(), options_.name + ": " + st.message());
    }
  }
  listener_ =
      std::make_unique<Listener>(options_.listen, [this](int fd, std::string peer) { Deal(fd, std::move(peer)); });
  if (Status st = listener_->Start(); !st.ok()) {
    listener_.reset();
    loops_.clear();
    return Status(st.code(), options_.name + ": " + st.message());
  }
  started_ = true;
  return Status::OK();
}

int LoopGroup::pinned_threads() const {
  return static_cast<int>(std::count_if(loops_.begin(), loops_.end(), [](const auto& l) { return l->cpu() >= 0; }));
}

int64_t LoopGroup::Unresponsive() const {
  const int64_t now = SteadyNowMs();
  int64_t worst = 0;
  for (const auto& loop : loops_) worst = std::max(worst, loop->Unresponsive(now));
  return worst;
}

int LoopGroup::open_connections() const {
  int n = 0;
  for (const auto& loop : loops_) n += loop->open_connections();
  return n;
}

void LoopGroup::Deal(int fd, std::string peer) {
  auto refuse = [&](const std::string& why) {
    const uint64_t n = ++refused_;
    if (LogOccurrence(n)) {  // a flood of connections does not flood the log
      YB_LOG_WARN("{}: {}: closing a new connection from {} ({} closed so far)", options_.name, why, peer, n);
    }
    ::close(fd);
  };
  if (open_connections() >= options_.max_connections) {
    return refuse(std::to_string(options_.max_connections) + " connections open, the most allowed");
  }
  if (options_.max_connections_per_peer > 0) {
    std::lock_guard lock(peers_mu_);
    int& open = per_peer_[peer];
    if (open >= options_.max_connections_per_peer) {
      return refuse(std::to_string(open) + " connections open from that address, the most allowed");
    }
    ++open;
  }
  loops_[Choose(fd)]->Adopt(fd, std::move(peer));
}

size_t LoopGroup::Choose(int fd) const {
  size_t least = 0;
  for (size_t i = 1; i < loops_.size(); ++i) {
    if (loops_[i]->open_connections() < loops_[least]->open_connections()) least = i;
  }
  int cpu = -1;
  socklen_t len = sizeof(cpu);
  if (!options_.pin_to_cpus || getsockopt(fd, SOL_SOCKET, SO_INCOMING_CPU, &cpu, &len) != 0 || cpu < 0) return least;
  size_t local = loops_.size();  // the least busy loop on that CPU
  for (size_t i = 0; i < loops_.size(); ++i) {
    if (loops_[i]->cpu() == cpu &&
        (local == loops_.size() || loops_[i]->open_connections() < loops_[local]->open_connections())) {
      local = i;
    }
  }
  if (local == loops_.size()) return least;
  // Balance first when the packets all arrive on a few CPUs (a NIC with one queue): the local loop
  // may serve at most a quarter more connections than the least busy one, plus a few.
  const int floor = loops_[least]->open_connections();
  return loops_[local]->open_connections() <= floor + floor / 4 + 4 ? local : least;
}

void LoopGroup::Stop() {
  if (!started_) return;
  started_ = false;
  listener_->Stop();  // no connection comes in from here on
  for (auto& loop : loops_) loop->Stop();
}

}  // namespace yb
