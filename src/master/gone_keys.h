// GoneKeys: why recently gone keys went (MissReason), for a bounded number of keys.
//
// A miss is only worth explaining if the explanation is cheap: the table keeps no key, only its
// 64-bit hash (common/hash.h), with the reason and the time, in a ring of `capacity` entries that
// forgets the oldest first, and an open-addressing index (linear probing, twice the ring's size,
// entries removed by backward shift) from hash to its entry; a key noted again moves to the
// newest position, leaving its old one vacant (so a table whose keys go more than once remembers
// somewhat fewer than `capacity`). kBytesPerKey bytes per key,
// allocated on the first Note. Two keys whose hashes collide (1 in 2^64) share an answer.
//
// Not thread-safe: ObjectTable keeps one per shard, under the shard's lock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "yuebing/types.h"

namespace yb {

class GoneKeys {
 public:
  struct Entry {
    uint64_t hash = 0;
    uint32_t when_s = 0;  // the clock's seconds, truncated
    MissReason reason = MissReason::kStored;  // kStored: a vacant entry
  };
  static constexpr size_t kBytesPerKey = sizeof(Entry) + 2 * sizeof(uint32_t);

  // Remembers up to `capacity` keys (0: none).
  explicit GoneKeys(size_t capacity) : capacity_(capacity) {}

  // The key of hash `hash` went for `why` at `now`; replaces what was remembered of it.
  void Note(uint64_t hash, MissReason why, TimeMs now);
  // What is remembered of the key of hash `hash`: nothing if it was never noted or was forgotten.
  std::optional<Entry> Find(uint64_t hash) const;
  // Calls `fn` with each remembered entry, oldest first.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < ring_.size(); ++i) {
      const Entry& e = ring_[(next_ + i) % ring_.size()];
      if (e.reason != MissReason::kStored) fn(e);
    }
  }

  size_t capacity() const { return capacity_; }
  size_t size() const { return count_; }

 private:
  static constexpr uint32_t kEmpty = 0;  // index slots hold ring position + 1
  size_t Home(uint64_t hash) const { return static_cast<size_t>(hash) & (index_.size() - 1); }
  size_t SlotOf(uint64_t hash) const;  // the index slot naming `hash`, or an empty one
  void EraseSlot(size_t slot);

  size_t capacity_;
  std::vector<Entry> ring_;
  std::vector<uint32_t> index_;
  size_t next_ = 0;   // the ring position written next
  size_t count_ = 0;  // entries in the ring
};

}  // namespace yb
