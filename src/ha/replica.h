// Replica: a standby's side of log shipping (HaMaster's third part). It holds the image of the
// leader's metadata that this master would serve from: replayed from its own log at start, then
// kept by applying what the leader ships (LogApplier), and handed to the MasterService built at
// promotion.
//
// Shipped records are answered once they are in this standby's log (written to the kernel, and
// in its memory); a thread of the replica's own then applies them to the image, in order, while
// the leader goes on. Parsing and applying them was half of what a batch of changes waited for on
// a standby (docs/performance.md). Whatever reads the image (promotion, the standby's own
// snapshot, Summary) first applies every record answered; a record that does not apply keeps this
// standby from taking over until the leader ships it a snapshot.
//
// Thread-safe.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <string>

#include "common/thread_annotations.h"
#include "common/worker.h"
#include "ha.pb.h"
#include "ha/meta_log.h"
#include "ha/replication.h"
#include "master/master_image.h"
#include "master/master_service.h"

namespace yb::ha {

class Replica {
 public:
  // A request of at most this many bytes of records, with none waiting, applies them itself before
  // it is answered: waking the thread costs more than a few records take (single-key changes with
  // one standby ran no faster handed over, batches of 128 up to 1.3x faster).
  static constexpr size_t kApplyHereBytes = 4096;

  // `image`: what the log replayed at its opening (MetaLog::Open). `apply_here_bytes`: see
  // kApplyHereBytes (tests set 0: every record goes through the thread).
  Replica(MetaLog& log, MasterImage image, size_t apply_here_bytes = kApplyHereBytes);
  // Stops the applying thread: records it had not applied are in the log, which a restart replays.
  ~Replica();

  // Applies one ApplyLog request of the leader, already known to be the one etcd names (Election::
  // AcceptShipper). A new leader's first request must begin its snapshot.
  pb::ApplyLogResponse Apply(pb::ApplyLogRequest q);
  // Whether the leader counts this standby (as its last request said).
  bool in_sync() const;
  // Loads the image into `master` (promotion), which holds it from then on. Refused when a shipped
  // record did not apply (the image lacks it).
  Status Promote(MasterService& master);
  // The standby's own snapshot when its log calls for one (not while the log has failed: a failed
  // one waits for the leader's snapshot, its image lacking what it held).
  void SnapshotIfDue();
  std::string Summary();
  // Bytes of records answered and not yet applied to the image.
  size_t queued_bytes() const;

 private:
  // Answered records wait for the applying thread up to this many bytes; past it a request applies
  // them itself before it is answered (a standby slower than its leader holds it back rather than
  // its memory growing).
  static constexpr size_t kMaxQueuedBytes = 64u << 20;

  void ApplyLoop();
  // Applies every record answered so far to the image, in order.
  void DrainLocked() REQUIRES(image_mu_);
  // Applies `frames` to the image; false (and noted in apply_failed_) when they do not apply.
  bool ApplyRecordsLocked(std::string_view frames) REQUIRES(image_mu_);

  MetaLog& log_;
  const size_t apply_here_bytes_;
  // One request (or snapshot, or promotion) at a time, as the log takes them.
  mutable Mutex mu_;
  // The image, which the applying thread brings up to the log behind the answers.
  mutable Mutex image_mu_ ACQUIRED_AFTER(mu_);
  // What it has yet to apply.
  mutable Mutex queue_mu_ ACQUIRED_AFTER(image_mu_);
  std::condition_variable_any queue_cv_;

  MasterImage image_ GUARDED_BY(image_mu_);
  std::unique_ptr<LogApplier> applier_ GUARDED_BY(mu_);  // writes to image_ under image_mu_ too
  uint64_t applied_epoch_ GUARDED_BY(mu_) = 0;           // the leader whose snapshot we applied
  bool in_sync_ GUARDED_BY(mu_) = false;                 // that leader counts us
  uint64_t last_call_epoch_ GUARDED_BY(mu_) = 0;         // the leader, and number, of the last call taken
  uint64_t last_call_ GUARDED_BY(mu_) = 0;
  std::deque<std::string> queued_ GUARDED_BY(queue_mu_);
  size_t queued_bytes_ GUARDED_BY(queue_mu_) = 0;
  Status apply_failed_ GUARDED_BY(queue_mu_);  // a record that did not apply, until a snapshot
  bool stop_ GUARDED_BY(queue_mu_) = false;
  Worker thread_;
};

}  // namespace yb::ha
