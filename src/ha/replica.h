// Replica: a standby's side of log shipping (HaMaster's third part). It holds the image of the
// leader's metadata that this master would serve from: replayed from its own log at start, then
// kept by applying what the leader ships (LogApplier), and handed to the MasterService built at
// promotion. Thread-safe: one mutex over the image and its applier.
#pragma once

#include <memory>

#include "common/thread_annotations.h"
#include "ha.pb.h"
#include "ha/meta_log.h"
#include "ha/replication.h"
#include "master/master_image.h"
#include "master/master_service.h"

namespace yb::ha {

class Replica {
 public:
  // `image`: what the log replayed at its opening (MetaLog::Open).
  Replica(MetaLog& log, MasterImage image);

  // Applies one ApplyLog request of the leader, already known to be the one etcd names (Election::
  // AcceptShipper). A new leader's first request must begin its snapshot.
  pb::ApplyLogResponse Apply(const pb::ApplyLogRequest& q);
  // Whether the leader counts this standby (as its last request said).
  bool in_sync() const;
  // Loads the image into `master` (promotion), which holds it from then on.
  Status Promote(MasterService& master);
  // The standby's own snapshot when its log calls for one (not while the log has failed: a failed
  // one waits for the leader's snapshot, its image lacking what it held).
  void SnapshotIfDue();
  std::string Summary() const;

 private:
  MetaLog& log_;
  mutable Mutex mu_;
  MasterImage image_ GUARDED_BY(mu_);
  std::unique_ptr<LogApplier> applier_ GUARDED_BY(mu_);
  uint64_t applied_epoch_ GUARDED_BY(mu_) = 0;  // the leader whose snapshot we applied
  bool in_sync_ GUARDED_BY(mu_) = false;        // that leader counts us
};

}  // namespace yb::ha
