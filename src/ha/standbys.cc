#include "ha/standbys.h"

#include "common/log.h"

namespace yb::ha {

namespace {
constexpr TimeMs kSilentMs = 5000;  // a standby that has not asked for this long is dropped
constexpr size_t kMaxResumePoints = 64;  // dropped standbys whose position is remembered
}  // namespace

Standbys::Standbys(Options options, MetaLog& log, const Clock& clock, Hooks hooks)
    : options_(std::move(options)), log_(log), clock_(clock), hooks_(std::move(hooks)) {}

void Standbys::Follow(const std::string& standby, uint64_t epoch) {
  MutexLock lock(mu_);
  auto& s = shippers_[standby];
  if (!s) {
    LogShipper::Options o;
    o.standby = standby;
    o.epoch = epoch;
    o.leader = options_.leader;
    o.security = options_.security;
    o.clock = &clock_;
    // Where it stood when its last shipper was dropped (it went silent: paused, cut off): if it
    // still stands there, it is shipped the log from there, not the whole state again.
    if (auto r = resume_.find(standby); r != resume_.end()) {
      o.resume_from = std::move(r->second);
      resume_.erase(r);
    }
    LogShipper::Hooks hooks;
    hooks.acked = [this](const std::string& who, uint64_t seq) { OnAcked(who, seq); };
    hooks.caught_up = [this](const std::string& who) { return OnCaughtUp(who); };
    hooks.sync_changed = [this](const std::string& who, bool v) { return OnSyncChanged(who, v); };
    hooks.snapshot_begun = [this](const std::string&, uint64_t) {
      snapshots_shipped_.fetch_add(1, std::memory_order_relaxed);
    };
    s = std::make_unique<LogShipper>(o, log_, hooks);
    s->Start();
  }
  s->Touch();
}

void Standbys::DropSilent() {
  std::vector<std::unique_ptr<LogShipper>> gone;
  {
    MutexLock lock(mu_);
    const TimeMs now = clock_.NowMs();
    for (auto it = shippers_.begin(); it != shippers_.end();) {
      if (now - it->second->last_follow() > kSilentMs) {
        gone.push_back(std::move(it->second));
        it = shippers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : gone) {
    const std::string standby = s->standby();
    YB_LOG_WARN("HA: standby {} stopped following: no longer shipped to", standby);
    s->Stop();  // its thread ends first: it counts the standby no more
    {
      MutexLock lock(mu_);
      if (resume_.size() >= kMaxResumePoints) resume_.erase(resume_.begin());
      resume_[standby] = s->resume_points();
    }
    s.reset();
    (void)OnSyncChanged(standby, false);
  }
}

void Standbys::StopAll() {
  std::map<std::string, std::unique_ptr<LogShipper>> shippers;
  {
    MutexLock lock(mu_);
    shippers.swap(shippers_);
    resume_.clear();  // a leader of a later epoch starts every standby with its snapshot
  }
  shippers.clear();  // outside the lock: a shipper's thread may be in one of the hooks
}

std::vector<Standbys::State> Standbys::states() const {
  MutexLock lock(mu_);
  std::vector<State> out;
  for (const auto& [addr, s] : shippers_) out.push_back({addr, s->in_sync(), s->acked()});
  return out;
}

bool Standbys::any_in_sync() const {
  for (const auto& s : states()) {
    if (s.in_sync) return true;
  }
  return false;
}

std::vector<std::string> Standbys::Listed() const {
  std::vector<std::string> out;
  for (const auto& [addr, c] : counted_) {
    if (c.listed) out.push_back(addr);
  }
  return out;
}

std::vector<std::string> Standbys::listed() const {
  MutexLock lock(mu_);
  return Listed();
}

std::vector<std::string> Standbys::counted() const {
  MutexLock lock(mu_);
  std::vector<std::string> out;
  for (const auto& [addr, c] : counted_) out.push_back(addr);
  return out;
}

void Standbys::UpdateFloor() {
  uint64_t floor = UINT64_MAX;
  for (const auto& [addr, c] : counted_) floor = std::min(floor, c.acked);
  log_.SetReplicated(floor);
}

void Standbys::OnAcked(const std::string& standby, uint64_t seq) {
  MutexLock lock(mu_);
  auto it = counted_.find(standby);
  if (it == counted_.end()) return;
  it->second.acked = std::max(it->second.acked, seq);
  UpdateFloor();
}

uint64_t Standbys::OnCaughtUp(const std::string& standby) {
  MutexLock lock(mu_);
  auto s = shippers_.find(standby);
  counted_[standby] = Counted{s != shippers_.end() ? s->second->acked() : 0, false};
  UpdateFloor();  // every change from now on waits for it
  // Every change answered without it is at or before the log's last record.
  return log_.last_seq();
}

bool Standbys::OnSyncChanged(const std::string& standby, bool in_sync) {
  if (in_sync) {
    // It has every change answered without it: listed in etcd, it may take over.
    std::vector<std::string> listed;
    {
      MutexLock lock(mu_);
      auto it = counted_.find(standby);
      if (it == counted_.end()) return false;
      it->second.listed = true;
      listed = Listed();
    }
    if (hooks_.write_in_sync(listed)) return true;
    // Still counted (changes go on waiting for it); the shipper tries to list it again.
    MutexLock lock(mu_);
    if (auto it = counted_.find(standby); it != counted_.end()) it->second.listed = false;
    return false;
  }
  // Out of the list in etcd before we answer anything it does not have; until then, changes wait.
  {
    MutexLock lock(mu_);
    if (!counted_.count(standby)) return true;
  }
  std::map<std::string, Counted> before;
  for (;;) {
    std::vector<std::string> listed;
    {
      MutexLock lock(mu_);
      before = counted_;
      counted_.erase(standby);
      listed = Listed();
    }
    if (hooks_.write_in_sync(listed)) break;
    // Past the moment this master may answer (or stopping), nothing more is answered: it may
    // stop counting the standby without telling etcd.
    if (!hooks_.may_answer()) break;
    {
      MutexLock lock(mu_);
      counted_ = before;  // still counted: changes go on waiting for it
    }
    clock_.SleepUntil(clock_.NowMs() + 100);
  }
  MutexLock lock(mu_);
  UpdateFloor();
  YB_LOG_WARN("HA: standby {} is no longer counted (etcd told)", standby);
  return true;
}

}  // namespace yb::ha
