#include "master/repair_queue.h"

#include <algorithm>

namespace yb {

void RepairQueue::Note(std::string table_key, size_t have) {
  if (!enabled()) return;
  MutexLock lock(mu_);
  if (!keys_.insert(table_key).second) return;  // queued or being copied already
  queue_[have].push_back(std::move(table_key));
}

std::vector<RepairQueue::AtRisk> RepairQueue::NextRound(TimeMs now) {
  std::vector<AtRisk> batch;
  if (!enabled()) return batch;
  MutexLock lock(mu_);
  // A bucket of bytes refilled at the bandwidth, holding a second's worth at most.
  const double rate = static_cast<double>(bandwidth_);
  if (refilled_ == 0) {  // the first round starts with a full bucket
    refilled_ = now;
    tokens_ = rate;
  }
  tokens_ = std::min(rate, tokens_ + rate * static_cast<double>(now - refilled_) / 1000.0);
  refilled_ = now;
  if (tokens_ <= 0 || copies_.size() >= kMaxInFlight) return batch;
  const size_t n = std::min(kMaxPerRound, kMaxInFlight - copies_.size());
  while (batch.size() < n && !queue_.empty()) {
    auto it = queue_.begin();  // fewest replicas left first
    batch.emplace_back(it->first, std::move(it->second.front()));
    it->second.pop_front();
    if (it->second.empty()) queue_.erase(it);
  }
  return batch;
}

bool RepairQueue::HasBudget() const {
  MutexLock lock(mu_);
  return tokens_ > 0;
}

void RepairQueue::Spend(uint64_t bytes) {
  MutexLock lock(mu_);
  tokens_ -= static_cast<double>(bytes);
}

void RepairQueue::Requeue(std::vector<AtRisk> later) {
  MutexLock lock(mu_);
  for (auto& [have, key] : later) queue_[have].push_back(std::move(key));
}

void RepairQueue::Forget(const std::string& table_key) {
  MutexLock lock(mu_);
  keys_.erase(table_key);
}

uint64_t RepairQueue::Start(InFlight f) {
  MutexLock lock(mu_);
  const uint64_t id = next_id_++;
  f.task.task_id = id;
  copies_.emplace(id, std::move(f));
  return id;
}

std::vector<RepairTask> RepairQueue::Fetch(const ClientId& client, size_t max) {
  std::vector<RepairTask> out;
  MutexLock lock(mu_);
  for (auto& [id, f] : copies_) {
    if (out.size() >= max) break;
    if (f.client == client && !f.handed_out) {
      f.handed_out = true;
      out.push_back(f.task);
    }
  }
  return out;
}

std::optional<RepairQueue::InFlight> RepairQueue::Finish(uint64_t task_id, const ClientId& client) {
  MutexLock lock(mu_);
  auto it = copies_.find(task_id);
  if (it == copies_.end() || !(it->second.client == client)) return std::nullopt;
  InFlight f = std::move(it->second);
  copies_.erase(it);
  keys_.erase(f.table_key);
  return f;
}

std::vector<RepairQueue::InFlight> RepairQueue::TakeIf(
    const std::function<bool(const ClientId& client, TimeMs deadline)>& gone) {
  std::vector<InFlight> out;
  MutexLock lock(mu_);
  for (auto it = copies_.begin(); it != copies_.end();) {
    if (gone(it->second.client, it->second.deadline)) {
      out.push_back(std::move(it->second));
      it = copies_.erase(it);
    } else {
      ++it;
    }
  }
  return out;
}

void RepairQueue::ForEach(const std::function<void(const InFlight&)>& fn) const {
  MutexLock lock(mu_);
  for (const auto& [id, f] : copies_) fn(f);
}

size_t RepairQueue::Waiting(const ClientId& client) const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [id, f] : copies_) n += f.client == client && !f.handed_out;
  return n;
}

size_t RepairQueue::at_risk() const {
  MutexLock lock(mu_);
  return keys_.size();
}

size_t RepairQueue::in_flight() const {
  MutexLock lock(mu_);
  return copies_.size();
}

}  // namespace yb
