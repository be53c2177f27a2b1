// ClientRegistry: which clients are alive. A client is alive while it pings at least every
// client_ttl; Expire() names the ones that went silent and forgets them. Thread-safe.
//
// A client the master does not know must register and re-mount everything it holds: Ping() tells
// it so (need_remount). That covers a master restart and a client declared dead, and also a call
// other than RegisterClient from an unknown client (a MountSegment that arrives after the client
// was declared dead), which makes it known again but leaves it owing the master its other
// segments; and MarkRemount() covers a call that arrived while the client was being forgotten.
#pragma once

#include <optional>
#include <unordered_map>
#include <vector>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/thread_annotations.h"

namespace yb {

class ClientRegistry {
 public:
  ClientRegistry(const Clock& clock, int64_t ttl_ms) : clock_(clock), ttl_ms_(ttl_ms) {}

  // The client registers: known from now on, owing nothing.
  void Register(const ClientId& id);
  // Records a sign of life from a call. A client not known is known from now on, and owes a
  // re-mount (its next Ping says so).
  void Touch(const ClientId& id);
  // Touch(), then whether the client must register and re-mount; the debt is paid by saying so.
  bool Ping(const ClientId& id);
  // A known client owes a re-mount: its segments were dropped while it went on calling.
  void MarkRemount(const ClientId& id);
  bool Known(const ClientId& id) const;
  // Heartbeats of the client that named every read pin it holds (MasterService::Ping); nullopt for
  // a client not known. A read pin left unnamed for two of them is the reader's no longer.
  std::optional<uint64_t> PinRound(const ClientId& id) const;
  void AdvancePinRound(const ClientId& id);
  // Removes and returns the clients silent for longer than the TTL.
  std::vector<ClientId> Expire();
  // Counts every known client as seen now (the master could not hear them for a while).
  void RefreshAll();
  // The known clients silent for longer than `quiet_ms` (short of the TTL: a holder cut off from
  // the master, or paused), and, in `changed`, those that became quiet or were heard again since
  // the last call (for the log).
  struct QuietChange {
    ClientId id;
    bool quiet = false;  // true: became quiet; false: heard again
    int64_t silent_ms = 0;
  };
  std::vector<ClientId> Quiet(int64_t quiet_ms, std::vector<QuietChange>* changed);
  // Forgets a client that says it leaves; false when it was not known.
  bool Remove(const ClientId& id);
  size_t size() const;

 private:
  struct IdHash {
    size_t operator()(const ClientId& c) const { return c.hi ^ (c.lo * 0x9E3779B97F4A7C15ULL); }
  };
  struct Entry {
    TimeMs last_seen = 0;
    bool owes_remount = false;
    uint64_t pin_round = 0;
    bool quiet = false;  // as the last Quiet() found it
  };
  // The entry, its last sign of life now; created (owing nothing) when the client was not known.
  Entry& TouchLocked(const ClientId& id, TimeMs now, bool* inserted) REQUIRES(mu_);

  const Clock& clock_;
  int64_t ttl_ms_;
  mutable Mutex mu_;  // a leaf: nothing is called while it is held
  std::unordered_map<ClientId, Entry, IdHash> clients_ GUARDED_BY(mu_);
};

}  // namespace yb
