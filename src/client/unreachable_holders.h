// UnreachableHolders: the segments of other processes this client could not reach (a transfer to
// them failed with TRANSFER_FAIL), reported to the master in each heartbeat while the transport
// still finds them unreachable (PingState::unreachable), so that the master stops handing them out
// (docs/design.md, "Partitions"). Each heartbeat asks the transport to probe them in the background;
// once one answers again (or the transport forgot it), it is no longer reported. Thread-safe; a

#pragma once

#include <unordered_set>

#include "api/master_api.h"
#include "common/thread_annotations.h"
#include "transfer/transfer_engine.h"

namespace yb {

class UnreachableHolders {
 public:
  // Records `segment` when `st` says a transfer to it failed for want of a connection.
  void Note(SegmentId segment, const Status& st) {
    if (st.code() != Code::kTransferFail || segment == 0) return;
    MutexLock lock(mu_);
    if (noted_.size() < kMaxReportedUnreachable) noted_.insert(segment);
  }
  // Fills `state.unreachable` with the noted segments `engine` still finds unreachable, asking it
  // to probe each, and forgets the others.
  void State(TransferEngine& engine, PingState& state) {
    MutexLock lock(mu_);
    state.unreachable.clear();
    for (auto it = noted_.begin(); it != noted_.end();) {
      if (!engine.Unreachable(*it)) {
        it = noted_.erase(it);
        continue;
      }
      engine.Probe(*it);
      state.unreachable.push_back(*it);
      ++it;
    }
  }
  size_t size() const {
    MutexLock lock(mu_);
    return noted_.size();
  }

 private:
  mutable Mutex mu_;  // a leaf, but for the engine's transport lock (State asks it under mu_)
  std::unordered_set<SegmentId> noted_ GUARDED_BY(mu_);
};

}  // namespace yb
