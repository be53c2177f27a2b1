// HeldPins: the read pins this client holds (reads between GetReplicaList with pin and ReadEnd),
// named in each heartbeat so that the master can end a pin whose one-way ReadEnd was lost instead
// of keeping its bytes until the client dies. Thread-safe; a leaf lock.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "api/master_api.h"
#include "common/thread_annotations.h"

namespace yb {

class HeldPins {
 public:
  void Add(const std::string& key, uint64_t pin) {
    if (pin == 0) return;
    MutexLock lock(mu_);
    auto [it, fresh] = pins_.try_emplace(pin);
    if (fresh) it->second.key = key;
    ++it->second.count;
  }
  void Remove(uint64_t pin) {
    MutexLock lock(mu_);
    auto it = pins_.find(pin);
    if (it != pins_.end() && --it->second.count == 0) pins_.erase(it);
  }
  // Fills `state` with every pin held; more than kMaxStatedPins are not stated at all (the master
  // then ends none of this client's pins for that heartbeat).
  void State(PingState& state) const {
    MutexLock lock(mu_);
    state.pins.clear();
    state.pins_stated = pins_.size() <= kMaxStatedPins;
    if (!state.pins_stated) return;
    state.pins.reserve(pins_.size());
    for (const auto& [pin, held] : pins_) state.pins.push_back(HeldPin{held.key, pin});
  }
  size_t size() const {
    MutexLock lock(mu_);
    return pins_.size();
  }

 private:
  struct Held {
    std::string key;
    uint32_t count = 0;
  };
  mutable Mutex mu_;
  std::unordered_map<uint64_t, Held> pins_ GUARDED_BY(mu_);  // by pin id (the object id: one key each)
};

}  // namespace yb
