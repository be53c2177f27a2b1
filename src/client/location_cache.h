// LocationCache: where the objects this client read lately live (their memory replicas, size,
// checksum and read grants), so that a repeated Get goes straight to a holder, one transfer and
// no master round trip (docs/design.md section 3, "Cached locations").
//
// What makes a cached location safe to use without asking the master: only objects with a
// checksum are cached, and a read through the cache is verified as any read is. A location gone
// stale (the object removed, evicted or replaced, its range reused) reads bytes that do not match,
// or is refused by the holder (its grant lapsed or it is gone): the reader drops the entry and asks
// the master, once. So a cached read returns the object's bytes as some Put wrote them, never
// another object's; what it may return is an object removed (or replaced) up to `ttl` ago, whose
// bytes still lie where they were. Entries live at most `ttl` (and never past a grant's expiry),
// so that the master still sees each hot key read (its recency, its lease) at least once a ttl
// per client. At most `capacity` entries; the least recently used goes first. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/thread_annotations.h"

namespace yb {

class LocationCache {
 public:
  // `clock`: how long an entry has lived; `wall`: grants' expiry (null: the system's).
  LocationCache(size_t capacity, TimeMs ttl_ms, const Clock& clock, const Clock* wall = nullptr);

  bool enabled() const { return capacity_ > 0 && ttl_ms_ > 0; }
  // The fresh entry for `key`; nullopt when there is none (or it has expired: it goes). `read`:
  // a read is served from it (counted as a hit), else only looked at.
  std::optional<ObjectInfo> Find(const std::string& key, bool read = true);
  // Remembers what the master said of `key`: its memory replicas, when it has a checksum and one.
  // The read pin is not kept (a cached read holds none).
  void Remember(const std::string& key, const ObjectInfo& info);
  void Drop(const std::string& key);
  void Clear();

  size_t size() const;
  uint64_t hits() const;
  uint64_t stale() const;  // entries dropped because a read through them failed or mismatched
  void NoteStale(const std::string& key);

 private:
  struct Entry {
    ObjectInfo info;
    TimeMs expires = 0;  // on `clock_`
    std::list<std::string>::iterator lru;
  };
  void DropLocked(std::unordered_map<std::string, Entry>::iterator it) REQUIRES(mu_);

  const size_t capacity_;
  const TimeMs ttl_ms_;
  const Clock& clock_;
  const Clock* const wall_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Entry> entries_ GUARDED_BY(mu_);
  std::list<std::string> lru_ GUARDED_BY(mu_);  // most recently used first
  uint64_t hits_ GUARDED_BY(mu_) = 0;
  uint64_t stale_ GUARDED_BY(mu_) = 0;
};

}  // namespace yb
