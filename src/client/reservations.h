// Reservations: space a client keeps started ahead, so that a Put costs one master call.
//
// A reservation is a Put in progress under a name of the client's own (kReservationPrefix, its id,
// a counter), started with the same size and placement as the Puts it serves. A later Put of that
// shape writes its value into a reservation's replicas before the master knows its key, then
// publishes it with BatchPutCommit, which also starts the reservation that replaces it: PutStart's
// round trip leaves the write path (docs/design.md, "Puts into reservations").
//
// What this class keeps is bounded in bytes (ClientConfig::put_reservation_bytes; 0: none), and a
// reservation is used only within half of what its write grants had left when it came, so that
// its copy cannot outlast them. The master revokes a client's reservations when the client leaves
// or is declared dead; the client revokes those that aged or that it no longer wants (Discard) with
// its next call that revokes.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/thread_annotations.h"

namespace yb {

class Reservations {
 public:
  struct Reservation {
    std::string name;
    uint64_t size = 0;
    std::vector<GrantedReplica> replicas;
    TimeMs usable_until = 0;  // by the steady clock
  };

  // `wall` gives the Unix ms that grants' expiry is in (null: WallMs()).
  Reservations(uint64_t max_bytes, const Clock& clock, const Clock* wall = nullptr);

  // The shape of the reservations that can serve a Put of `size` bytes placed by `config` in
  // `mode` (their size and every placement choice), or nullopt when none can: upserts, Puts that
  // steer around segments or name groups per key, or this client keeps none.
  std::optional<std::string> Shape(uint64_t size, const PlacementConfig& config, WriteMode mode) const;

  // Whether a Put of `shape` was made before (by an earlier call), noting this one: reservations are
  // started only for shapes a client writes again, so that a process that puts once (a CLI, a
  // one-off) leaves none, and values of ever-new sizes hold no space. A bounded memory of shapes.
  bool SeenBefore(const std::string& shape);
  // Up to `n` reservations of `shape`, taken (their bytes count until Release or Keep). Those found
  // past their time are discarded (Discard).
  std::vector<Reservation> Take(const std::string& shape, size_t n);
  // Names for up to `n` new reservations of `size` bytes by `owner` (kReservationPrefix, its id, a
  // counter), as many as the budget has room for; their bytes count from now on (Keep them, or
  // Release what the master did not start).
  std::vector<std::string> Names(const ClientId& owner, size_t n, uint64_t size);
  // Keeps a reservation the master started (its grants as answered), or one a Put gave back unused.
  void Keep(const std::string& shape, std::string name, uint64_t size, std::vector<GrantedReplica> replicas);
  void Keep(const std::string& shape, Reservation r);
  // Gives back the budget of a name from Names() the master did not start, or of a taken
  // reservation that a Put used or that is gone.
  void Release(uint64_t size);
  // The master's answer to starting a name from Names(): kept if it started, else released.
  void Started(const std::string& shape, std::string name, uint64_t size, Result<std::vector<GrantedReplica>> answer);
  // A reservation no longer wanted: its bytes leave the budget, and its name waits to be revoked
  // with the client's next call that revokes (TakeDiscarded).
  void Discard(Reservation r);
  std::vector<std::string> TakeDiscarded();
  // Every reservation kept and discarded (the client closes: the caller revokes them).
  std::vector<std::string> TakeAll();

  uint64_t held_bytes() const;
  size_t kept() const;
  bool enabled() const { return max_bytes_ > 0; }

 private:
  const uint64_t max_bytes_;
  const Clock& clock_;
  const Clock* wall_;
  mutable Mutex mu_;
  uint64_t next_ GUARDED_BY(mu_) = 0;
  uint64_t held_ GUARDED_BY(mu_) = 0;  // bytes kept, taken-and-not-settled, or named-and-not-answered
  std::map<std::string, std::vector<Reservation>> by_shape_ GUARDED_BY(mu_);
  std::vector<std::string> discarded_ GUARDED_BY(mu_);
  std::unordered_set<std::string> seen_ GUARDED_BY(mu_);
};

}  // namespace yb
