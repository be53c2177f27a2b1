#include "master/offload_queues.h"

namespace yb {

void OffloadQueues::AddClient(const ClientId& c) {
  MutexLock lock(mu_);
  queues_.try_emplace(c);
}

bool OffloadQueues::Any() const {
  MutexLock lock(mu_);
  return !queues_.empty();
}

bool OffloadQueues::Has(const ClientId& c) const {
  MutexLock lock(mu_);
  return queues_.count(c) != 0;
}

bool OffloadQueues::Push(const ClientId& c, OffloadItem item) {
  MutexLock lock(mu_);
  auto it = queues_.find(c);
  if (it == queues_.end()) return false;
  Queue& q = it->second;
  // Drops (a key name each) have their own, larger bound: they must not keep copies from being made.
  const bool full = item.drop ? q.drops >= limit_ * kDropsPerTask
                              : q.waiting.size() - q.drops + q.handed_out.size() >= limit_;
  if (full) {
    if (!item.drop) refused_.fetch_add(1, std::memory_order_relaxed);  // the caller counts refused drops
    return false;
  }
  if (item.drop) ++q.drops;
  if (item.on_evict) evict_pending_.fetch_add(item.bytes, std::memory_order_relaxed);
  q.waiting.push_back(std::move(item));
  pushed_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

std::vector<OffloadItem> OffloadQueues::Take(const ClientId& c, size_t max) {
  std::vector<OffloadItem> out;
  MutexLock lock(mu_);
  auto it = queues_.find(c);
  if (it == queues_.end()) return out;
  Queue& q = it->second;
  while (!q.waiting.empty() && out.size() < max) {
    OffloadItem& item = q.waiting.front();
    if (item.drop) {  // handed out once, never reported
      --q.drops;
      out.push_back(std::move(item));
      q.waiting.pop_front();
      continue;
    }
    // An object queued twice (eager, then again by eviction) is handed out once; the eviction's
    // intent (free the memory when done) carries over.
    auto [h, fresh] = q.handed_out.emplace(item.object_id, item);
    if (fresh) {
      out.push_back(std::move(item));
    } else if (item.on_evict && !h->second.on_evict) {
      h->second.on_evict = true;
      h->second.bytes = item.bytes;
    } else {
      Forget(item);
    }
    q.waiting.pop_front();
  }
  return out;
}

std::optional<OffloadItem> OffloadQueues::Finish(const ClientId& c, uint64_t object_id) {
  MutexLock lock(mu_);
  auto it = queues_.find(c);
  if (it == queues_.end()) return std::nullopt;
  auto h = it->second.handed_out.find(object_id);
  if (h == it->second.handed_out.end()) return std::nullopt;
  OffloadItem item = std::move(h->second);
  it->second.handed_out.erase(h);
  Forget(item);
  return item;
}

std::vector<OffloadItem> OffloadQueues::RemoveClient(const ClientId& c) {
  std::vector<OffloadItem> out;
  MutexLock lock(mu_);
  auto it = queues_.find(c);
  if (it == queues_.end()) return out;
  for (auto& item : it->second.waiting) {
    Forget(item);
    out.push_back(std::move(item));
  }
  for (auto& [id, item] : it->second.handed_out) {
    Forget(item);
    out.push_back(std::move(item));
  }
  queues_.erase(it);
  return out;
}

void OffloadQueues::Forget(const OffloadItem& item) {
  if (item.on_evict) evict_pending_.fetch_sub(item.bytes, std::memory_order_relaxed);
}

uint64_t OffloadQueues::queued() const {
  MutexLock lock(mu_);
  uint64_t n = 0;
  for (const auto& [c, q] : queues_) n += q.waiting.size() + q.handed_out.size();
  return n;
}

}  // namespace yb
