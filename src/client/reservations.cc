#include "client/reservations.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "common/grant.h"

namespace yb {
namespace {

// A reservation's grants may lack an expiry (a master without grant keys: in-process segments); it
// is then used for this long.
constexpr TimeMs kUsableWithoutExpiry = 10'000;

}  // namespace

Reservations::Reservations(uint64_t max_bytes, const Clock& clock, const Clock* wall)
    : max_bytes_(max_bytes), clock_(clock), wall_(wall) {}

std::optional<std::string> Reservations::Shape(uint64_t size, const PlacementConfig& config, WriteMode mode) const {
  if (!enabled() || mode != WriteMode::kPut || size == 0 || size > max_bytes_ || !config.group_ids.empty() ||
      !config.avoid_segments.empty()) {
    return std::nullopt;
  }
  std::string shape = std::to_string(size) + "/" + std::to_string(config.replica_num) + "/" +
                      (config.with_soft_pin ? "s" : "") + (config.with_hard_pin ? "h" : "") +
                      (config.prefer_local ? "l" : "");
  for (const std::string& p : config.preferred_segments) {
    shape += "/" + std::to_string(p.size()) + ":" + p;  // length-prefixed: names cannot run together
  }
  return shape;
}

bool Reservations::SeenBefore(const std::string& shape) {
  constexpr size_t kShapesRemembered = 1024;
  MutexLock lock(mu_);
  if (seen_.count(shape)) return true;
  if (seen_.size() >= kShapesRemembered) seen_.clear();  // sizes that never repeat: start over
  seen_.insert(shape);
  return false;
}

std::vector<Reservations::Reservation> Reservations::Take(const std::string& shape, size_t n) {
  std::vector<Reservation> out;
  const TimeMs now = clock_.NowMs();
  MutexLock lock(mu_);
  auto it = by_shape_.find(shape);
  std::vector<Reservation> none;
  auto& kept = it == by_shape_.end() ? none : it->second;
  // The newest first (the back): those have the most time left; the old ones age out here.
  while (!kept.empty() && out.size() < n) {
    Reservation r = std::move(kept.back());
    kept.pop_back();
    if (r.usable_until <= now) {
      held_ -= std::min(held_, r.size);
      discarded_.push_back(std::move(r.name));
      continue;
    }
    out.push_back(std::move(r));
  }
  // Those of every shape that aged (the oldest are at the front): a shape no Put asks for any more
  // keeps nothing past its time.
  for (auto s = by_shape_.begin(); s != by_shape_.end();) {
    auto& list = s->second;
    size_t aged = 0;
    while (aged < list.size() && list[aged].usable_until <= now) {
      held_ -= std::min(held_, list[aged].size);
      discarded_.push_back(std::move(list[aged].name));
      ++aged;
    }
    list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(aged));
    s = list.empty() ? by_shape_.erase(s) : std::next(s);
  }
  return out;
}

std::vector<std::string> Reservations::Names(const ClientId& owner, size_t n, uint64_t size) {
  std::vector<std::string> out;
  if (size == 0 || owner.empty()) return out;
  const std::string prefix = std::string(kReservationPrefix) + owner.ToString() + "/";
  MutexLock lock(mu_);
  while (out.size() < n && held_ + size <= max_bytes_) {
    held_ += size;
    out.push_back(prefix + std::to_string(next_++));
  }
  return out;
}

void Reservations::Keep(const std::string& shape, std::string name, uint64_t size,
                        std::vector<GrantedReplica> replicas) {
  // Usable for half of what the grants had left when they came (the shortest of them), so that
  // a copy begun with one cannot outlast it, whatever the two hosts' clocks say.
  const int64_t wall_now = WallMs(wall_);
  std::optional<int64_t> left;
  for (const auto& r : replicas) {
    if (r.grant.access == GrantAccess::kNone) continue;
    const int64_t l = r.grant.expires_ms - wall_now;
    left = left ? std::min(*left, l) : l;
  }
  Reservation r{std::move(name), size, std::move(replicas),
                clock_.NowMs() + (left ? std::max<int64_t>(*left, 0) / 2 : kUsableWithoutExpiry)};
  Keep(shape, std::move(r));
}

void Reservations::Keep(const std::string& shape, Reservation r) {
  MutexLock lock(mu_);
  by_shape_[shape].push_back(std::move(r));
}

void Reservations::Release(uint64_t size) {
  MutexLock lock(mu_);
  held_ -= std::min(held_, size);
}

void Reservations::Discard(Reservation r) {
  MutexLock lock(mu_);
  held_ -= std::min(held_, r.size);
  discarded_.push_back(std::move(r.name));
}

void Reservations::Started(const std::string& shape, std::string name, uint64_t size,
                           Result<std::vector<GrantedReplica>> answer) {
  if (answer.ok()) {
    Keep(shape, std::move(name), size, std::move(*answer));
  } else {
    Release(size);
  }
}

std::vector<std::string> Reservations::TakeDiscarded() {
  MutexLock lock(mu_);
  return std::exchange(discarded_, {});
}

std::vector<std::string> Reservations::TakeAll() {
  MutexLock lock(mu_);
  std::vector<std::string> out = std::exchange(discarded_, {});
  for (auto& [shape, kept] : by_shape_) {
    for (auto& r : kept) {
      held_ -= std::min(held_, r.size);
      out.push_back(std::move(r.name));
    }
  }
  by_shape_.clear();
  return out;
}

uint64_t Reservations::held_bytes() const {
  MutexLock lock(mu_);
  return held_;
}

size_t Reservations::kept() const {
  MutexLock lock(mu_);
  size_t n = 0;
  for (const auto& [shape, kept] : by_shape_) n += kept.size();
  return n;
}

}  // namespace yb
