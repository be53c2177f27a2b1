// GrantHold: how long a freed range must stay unused so that no grant for it is still valid
// (docs/security.md, "Grants outlive nothing").
//
// A grant is valid until its expiry on the owner's clock, whatever happens to its range meanwhile;
// the owner cannot tell a range's old object from its new one. So the master does not hand a range
// out again while a grant it minted for it may still be valid: a freed range is held until its
// latest grant's lifetime, plus a margin for the clocks' disagreement, has passed.
//
// Which grants a range had is known without a word per object: every grant of an object's bytes is
// minted with a recency stamp (ObjectTable's access sequence, Touch at each pinned read; Publish
// after the writer's grant), and this class keeps, each background round, the sequence reached at
// that time. The first sample past a stamp bounds the time of its grant from above; a stamp newer
// than every sample was made before now. Thread-safe (a leaf lock).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <utility>

#include "common/clock.h"
#include "common/thread_annotations.h"

namespace yb {

class GrantHold {
 public:
  // `hold_ms`: the longest grant lifetime plus the clocks' margin; 0: ranges are never held.
  GrantHold(const Clock& clock, TimeMs hold_ms) : clock_(clock), hold_ms_(hold_ms) {}

  TimeMs hold_ms() const { return hold_ms_; }
  TimeMs Now() const { return clock_.NowMs(); }

  // Every access stamp below `next_stamp` was given out by now (a background round's sample).
  void Sample(uint64_t next_stamp) {
    const TimeMs now = clock_.NowMs();
    MutexLock lock(mu_);
    // Nothing stamped since the last sample: its earlier time is the tighter bound.
    if (samples_.empty() || samples_.back().first != next_stamp) samples_.emplace_back(next_stamp, now);
    // A sample older than the hold bounds only stamps whose ranges need no holding any more; keep
    // one such, so that a stamp below every kept sample still finds an upper bound.
    while (samples_.size() > 1 && samples_[1].second + hold_ms_ <= now) samples_.pop_front();
  }

  // Until when a range must stay unused whose latest grant was minted no later than the access
  // stamp `stamp` was given. 0 when it need not be held.
  TimeMs UntilAfterStamp(uint64_t stamp) const {
    if (hold_ms_ <= 0) return 0;
    TimeMs minted_by;
    {
      MutexLock lock(mu_);
      auto it = std::upper_bound(samples_.begin(), samples_.end(), stamp,
                                 [](uint64_t s, const std::pair<uint64_t, TimeMs>& e) { return s < e.first; });
      minted_by = it == samples_.end() ? clock_.NowMs() : it->second;
    }
    return minted_by + hold_ms_;
  }

  // Until when a range must stay unused whose latest grant was minted at `minted` (or earlier).
  TimeMs UntilAfter(TimeMs minted) const { return hold_ms_ <= 0 ? 0 : minted + hold_ms_; }

 private:
  const Clock& clock_;
  const TimeMs hold_ms_;
  mutable Mutex mu_;
  std::deque<std::pair<uint64_t, TimeMs>> samples_ GUARDED_BY(mu_);  // (next stamp, time), both rising
};

}  // namespace yb
