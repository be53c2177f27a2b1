// ClientRegistry: which clients are alive. A client is alive while it pings at least every
// client_ttl; Expire() names the ones that went silent and forgets them. Thread-safe.
#pragma once

#include <mutex>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "master/master_api.h"

namespace yb {

class ClientRegistry {
 public:
  ClientRegistry(const Clock& clock, int64_t ttl_ms) : clock_(clock), ttl_ms_(ttl_ms) {}

  // Records a sign of life. Returns true when the client was not known (it must re-mount).
  bool Touch(const ClientId& id);
  bool Known(const ClientId& id) const;
  // Removes and returns the clients silent for longer than the TTL.
  std::vector<ClientId> Expire();
  // Forgets a client that says it leaves; false when it was not known.
  bool Remove(const ClientId& id);
  size_t size() const;

 private:
  struct IdHash {
    size_t operator()(const ClientId& c) const { return c.hi ^ (c.lo * 0x9E3779B97F4A7C15ULL); }
  };
  const Clock& clock_;
  int64_t ttl_ms_;
  mutable std::mutex mu_;
  std::unordered_map<ClientId, TimeMs, IdHash> last_seen_;  // guarded by mu_
};

}  // namespace yb
