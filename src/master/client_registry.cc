#include "master/client_registry.h"

namespace yb {

bool ClientRegistry::Touch(const ClientId& id) {
  TimeMs now = clock_.NowMs();
  std::lock_guard lock(mu_);
  auto [it, inserted] = last_seen_.try_emplace(id, now);
  if (!inserted) it->second = now;
  return inserted;
}

bool ClientRegistry::Known(const ClientId& id) const {
  std::lock_guard lock(mu_);
  return last_seen_.count(id) != 0;
}

std::vector<ClientId> ClientRegistry::Expire() {
  TimeMs now = clock_.NowMs();
  std::vector<ClientId> dead;
  std::lock_guard lock(mu_);
  for (auto it = last_seen_.begin(); it != last_seen_.end();) {
    if (now - it->second > ttl_ms_) {
      dead.push_back(it->first);
      it = last_seen_.erase(it);
    } else {
      ++it;
    }
  }
  return dead;
}

bool ClientRegistry::Remove(const ClientId& id) {
  std::lock_guard lock(mu_);
  return last_seen_.erase(id) != 0;
}

size_t ClientRegistry::size() const {
  std::lock_guard lock(mu_);
  return last_seen_.size();
}

}  // namespace yb
