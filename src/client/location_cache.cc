#include "client/location_cache.h"

#include <algorithm>

#include "common/grant.h"

namespace yb {

namespace {
// A grant is not used within this much of its expiry: the holder judges it on its own clock, and
// the transfer takes time.
constexpr int64_t kGrantMarginMs = 2000;
}  // namespace

LocationCache::LocationCache(size_t capacity, TimeMs ttl_ms, const Clock& clock, const Clock* wall)
    : capacity_(capacity), ttl_ms_(ttl_ms), clock_(clock), wall_(wall) {}

std::optional<ObjectInfo> LocationCache::Find(const std::string& key, bool read) {
  if (!enabled()) return std::nullopt;
  MutexLock lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  if (clock_.NowMs() >= it->second.expires) {
    DropLocked(it);
    return std::nullopt;
  }
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  if (read) ++hits_;
  return it->second.info;
}

void LocationCache::Remember(const std::string& key, const ObjectInfo& info) {
  if (!enabled() || !info.checksum) return;
  ObjectInfo kept;
  kept.size = info.size;
  kept.checksum = info.checksum;
  int64_t grant_left = ttl_ms_;
  const int64_t wall_now = WallMs(wall_);
  for (const GrantedReplica& r : info.replicas) {
    if (r.kind != ReplicaKind::kMemory || r.size != info.size) continue;
    // In-process segments need no grant (kNone); another process's is refused past its expiry.
    if (r.grant.access != GrantAccess::kNone) {
      grant_left = std::min<int64_t>(grant_left, r.grant.expires_ms - wall_now - kGrantMarginMs);
    }
    kept.replicas.push_back(r);
  }
  if (kept.replicas.empty() || grant_left <= 0) return;
  MutexLock lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) DropLocked(it);
  while (entries_.size() >= capacity_ && !lru_.empty()) DropLocked(entries_.find(lru_.back()));
  lru_.push_front(key);
  entries_.emplace(key, Entry{std::move(kept), clock_.NowMs() + grant_left, lru_.begin()});
}

void LocationCache::Drop(const std::string& key) {
  if (!enabled()) return;
  MutexLock lock(mu_);
  if (auto it = entries_.find(key); it != entries_.end()) DropLocked(it);
}

void LocationCache::NoteStale(const std::string& key) {
  if (!enabled()) return;
  MutexLock lock(mu_);
  ++stale_;
  if (auto it = entries_.find(key); it != entries_.end()) DropLocked(it);
}

void LocationCache::Clear() {
  MutexLock lock(mu_);
  entries_.clear();
  lru_.clear();
}

void LocationCache::DropLocked(std::unordered_map<std::string, Entry>::iterator it) {
  lru_.erase(it->second.lru);
  entries_.erase(it);
}

size_t LocationCache::size() const {
  MutexLock lock(mu_);
  return entries_.size();
}

uint64_t LocationCache::hits() const {
  MutexLock lock(mu_);
  return hits_;
}

uint64_t LocationCache::stale() const {
  MutexLock lock(mu_);
  return stale_;
}

}  // namespace yb
