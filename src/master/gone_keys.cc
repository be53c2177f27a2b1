#include "master/gone_keys.h"

#include <bit>

namespace yb {

size_t GoneKeys::SlotOf(uint64_t hash) const {
  const size_t mask = index_.size() - 1;
  for (size_t i = Home(hash);; i = (i + 1) & mask) {
    if (index_[i] == kEmpty || ring_[index_[i] - 1].hash == hash) return i;
  }
}

void GoneKeys::EraseSlot(size_t slot) {
  // Backward shift: each entry after the hole that may move into it (its home is not strictly
  // between the hole and it) does, so a probe never stops early at the hole.
  const size_t mask = index_.size() - 1;
  size_t hole = slot;
  for (size_t i = (hole + 1) & mask; index_[i] != kEmpty; i = (i + 1) & mask) {
    const size_t home = Home(ring_[index_[i] - 1].hash);
    const bool stays = hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
    if (stays) continue;
    index_[hole] = index_[i];
    hole = i;
  }
  index_[hole] = kEmpty;
}

void GoneKeys::Note(uint64_t hash, MissReason why, TimeMs now) {
  if (capacity_ == 0 || why == MissReason::kStored) return;
  if (ring_.empty()) {
    ring_.resize(capacity_);  // every entry vacant (kStored)
    index_.assign(std::bit_ceil(2 * capacity_), kEmpty);
  }
  if (const size_t slot = SlotOf(hash); index_[slot] != kEmpty) {  // known: its older departure goes
    ring_[index_[slot] - 1].reason = MissReason::kStored;
    EraseSlot(slot);
    --count_;
  }
  if (ring_[next_].reason != MissReason::kStored) {  // the oldest is forgotten
    EraseSlot(SlotOf(ring_[next_].hash));
    --count_;
  }
  ring_[next_] = Entry{hash, static_cast<uint32_t>(now / 1000), why};
  index_[SlotOf(hash)] = static_cast<uint32_t>(next_ + 1);
  next_ = (next_ + 1) % capacity_;
  ++count_;
}

std::optional<GoneKeys::Entry> GoneKeys::Find(uint64_t hash) const {
  if (ring_.empty()) return std::nullopt;
  const size_t slot = SlotOf(hash);
  if (index_[slot] == kEmpty) return std::nullopt;
  return ring_[index_[slot] - 1];
}

}  // namespace yb
