#include "master/client_registry.h"

namespace yb {

ClientRegistry::Entry& ClientRegistry::TouchLocked(const ClientId& id, TimeMs now, bool* inserted) {
  auto [it, fresh] = clients_.try_emplace(id);
  it->second.last_seen = now;
  *inserted = fresh;
  return it->second;
}

void ClientRegistry::Register(const ClientId& id) {
  TimeMs now = clock_.NowMs();
  MutexLock lock(mu_);
  // Registering starts a (re-)mount: a fresh client owes nothing. A known one keeps a debt it has
  // not been told of: its segments were dropped, and it may not know.
  bool inserted = false;
  TouchLocked(id, now, &inserted);
}

void ClientRegistry::Touch(const ClientId& id) {
  TimeMs now = clock_.NowMs();
  MutexLock lock(mu_);
  bool inserted = false;
  Entry& e = TouchLocked(id, now, &inserted);
  if (inserted) e.owes_remount = true;  // known from a call, not a registration
}

bool ClientRegistry::Ping(const ClientId& id) {
  TimeMs now = clock_.NowMs();
  MutexLock lock(mu_);
  bool inserted = false;
  Entry& e = TouchLocked(id, now, &inserted);
  bool owes = inserted || e.owes_remount;
  e.owes_remount = false;
  return owes;
}

void ClientRegistry::MarkRemount(const ClientId& id) {
  MutexLock lock(mu_);
  if (auto it = clients_.find(id); it != clients_.end()) it->second.owes_remount = true;
}

bool ClientRegistry::Known(const ClientId& id) const {
  MutexLock lock(mu_);
  return clients_.count(id) != 0;
}

std::optional<uint64_t> ClientRegistry::PinRound(const ClientId& id) const {
  MutexLock lock(mu_);
  auto it = clients_.find(id);
  if (it == clients_.end()) return std::nullopt;
  return it->second.pin_round;
}

void ClientRegistry::AdvancePinRound(const ClientId& id) {
  MutexLock lock(mu_);
  if (auto it = clients_.find(id); it != clients_.end()) ++it->second.pin_round;
}

std::vector<ClientId> ClientRegistry::Expire() {
  TimeMs now = clock_.NowMs();
  std::vector<ClientId> dead;
  MutexLock lock(mu_);
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (now - it->second.last_seen > ttl_ms_) {
      dead.push_back(it->first);
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
  return dead;
}

void ClientRegistry::RefreshAll() {
  const TimeMs now = clock_.NowMs();
  MutexLock lock(mu_);
  for (auto& [id, e] : clients_) e.last_seen = std::max(e.last_seen, now);
}

std::vector<ClientId> ClientRegistry::Quiet(int64_t quiet_ms, std::vector<QuietChange>* changed) {
  const TimeMs now = clock_.NowMs();
  std::vector<ClientId> out;
  MutexLock lock(mu_);
  for (auto& [id, e] : clients_) {
    const int64_t silent = now - e.last_seen;
    const bool quiet = silent > quiet_ms;
    if (quiet) out.push_back(id);
    if (quiet != e.quiet && changed) changed->push_back({id, quiet, silent});
    e.quiet = quiet;
  }
  return out;
}

bool ClientRegistry::Remove(const ClientId& id) {
  MutexLock lock(mu_);
  return clients_.erase(id) != 0;
}

size_t ClientRegistry::size() const {
  MutexLock lock(mu_);
  return clients_.size();
}

}  // namespace yb
