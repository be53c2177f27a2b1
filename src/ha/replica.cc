#include "ha/replica.h"

#include <utility>

#include "common/log.h"
#include "rpc/master_convert.h"

namespace yb::ha {

Replica::Replica(MetaLog& log, MasterImage image, size_t apply_here_bytes)
    : log_(log), apply_here_bytes_(apply_here_bytes) {
  {
    MutexLock lock(mu_);
    MutexLock image_lock(image_mu_);
    image_ = std::move(image);
    applier_ = std::make_unique<LogApplier>(log_, image_);
  }
  thread_ = Worker("yb-log-apply", [this] { ApplyLoop(); });
}

Replica::~Replica() {
  {
    MutexLock lock(queue_mu_);
    stop_ = true;
  }
  queue_cv_.notify_all();
  thread_.Join();
}

void Replica::ApplyLoop() {
  for (;;) {
    {
      MutexUniqueLock lock(queue_mu_);
      queue_cv_.wait(lock, [&]() REQUIRES(queue_mu_) { return stop_ || !queued_.empty(); });
      if (stop_) return;
    }
    MutexLock image_lock(image_mu_);
    DrainLocked();
  }
}

void Replica::DrainLocked() {
  for (;;) {
    std::deque<std::string> batch;
    bool failed;
    {
      MutexLock lock(queue_mu_);
      batch.swap(queued_);
      failed = !apply_failed_.ok();
    }
    if (batch.empty()) return;
    size_t bytes = 0;
    for (const std::string& frames : batch) {
      bytes += frames.size();
      if (failed) continue;  // the image lacks a record: nothing after it goes in until a snapshot
      failed = !ApplyRecordsLocked(frames);
    }
    MutexLock lock(queue_mu_);
    queued_bytes_ -= std::min(queued_bytes_, bytes);
  }
}

bool Replica::ApplyRecordsLocked(std::string_view frames) {
  Status st = LogApplier::ApplyRecords(frames, image_);
  if (st.ok()) return true;
  YB_LOG_ERROR(
      "replication: shipped records do not apply ({}): this standby cannot take over until the leader "
      "ships it a snapshot",
      st.ToString());
  MutexLock lock(queue_mu_);
  apply_failed_ = st;
  return false;
}

pb::ApplyLogResponse Replica::Apply(pb::ApplyLogRequest q) {
  pb::ApplyLogResponse r;
  MutexLock lock(mu_);
  // A call the leader gave up on (this standby was paused past its deadline, the request left in a
  // socket) that arrives after the leader's later ones: applied now it would undo what they did
  // (rewind a snapshot being received, or clash with records shipped since). Refused, nothing changed.
  if (q.call() != 0 && q.epoch() == last_call_epoch_ && q.call() <= last_call_) {
    rpc::ToPb(Status(Code::kInvalidParams, "call " + std::to_string(q.call()) + " arrives after call " +
                                               std::to_string(last_call_) + " of the same leader: it gave up on it"),
              r.mutable_status());
    return r;
  }
  if (q.call() != 0) {
    last_call_epoch_ = q.epoch();
    last_call_ = q.call();
  }
  if (applied_epoch_ != q.epoch() && !q.snapshot_begin()) {
    rpc::ToPb(Status(Code::kInvalidParams, "a new leader starts with its snapshot"), r.mutable_status());
    return r;
  }
  Status failed;
  {
    MutexLock queue_lock(queue_mu_);
    failed = apply_failed_;
  }
  Result<uint64_t> last = Status::OK();
  if (!failed.ok() && !q.snapshot_begin() && !applier_->receiving()) {
    last = failed;  // answered records that did not apply: start over from a snapshot
  } else if (!q.snapshot_begin() && q.snapshot_frames().empty() && !q.snapshot_done() && !applier_->receiving()) {
    // Records alone: answered once in the log, applied behind the answer by the thread.
    last = applier_->Append(q.frames());
    if (last.ok() && !q.frames().empty()) {
      bool here, full = false;
      {
        MutexLock queue_lock(queue_mu_);
        // A few records, none waiting: applied here, as waking the thread would cost more.
        here = queued_.empty() && q.frames().size() <= apply_here_bytes_;
        if (!here) {
          queued_bytes_ += q.frames().size();
          queued_.push_back(std::move(*q.mutable_frames()));
          full = queued_bytes_ > kMaxQueuedBytes;
        }
      }
      if (!here) queue_cv_.notify_one();
      if (here || full) {
        MutexLock image_lock(image_mu_);
        DrainLocked();  // the thread's last batch, if it is still at it; or all, when too many wait
        if (here) (void)ApplyRecordsLocked(q.frames());
      }
    }
  } else {
    // A snapshot (or part of one): it replaces the image, after what was answered before it.
    MutexLock image_lock(image_mu_);
    DrainLocked();
    if (q.snapshot_begin()) applied_epoch_ = q.epoch();
    last = applier_->Apply(q.snapshot_begin(), q.snapshot_seq(), q.snapshot_frames(), q.snapshot_done(), q.frames());
    if (last.ok() && q.snapshot_done()) {
      MutexLock queue_lock(queue_mu_);
      apply_failed_ = Status::OK();  // the image is the snapshot's now
    }
  }
  if (!last.ok()) {
    applied_epoch_ = 0;  // start over from a snapshot
    rpc::ToPb(last.status(), r.mutable_status());
    return r;
  }
  in_sync_ = q.in_sync();
  rpc::ToPb(Status::OK(), r.mutable_status());
  r.set_last_seq(*last);
  r.set_digest(applier_->digest());
  return r;
}

bool Replica::in_sync() const {
  MutexLock lock(mu_);
  return in_sync_;
}

Status Replica::Promote(MasterService& master) {
  MutexLock lock(mu_);
  MutexLock image_lock(image_mu_);
  DrainLocked();
  {
    MutexLock queue_lock(queue_mu_);
    if (!apply_failed_.ok()) {
      return Status(apply_failed_.code(), "a shipped record did not apply: " + apply_failed_.message());
    }
  }
  YB_RETURN_IF_ERROR(master.Load(image_));
  image_ = MasterImage{};  // the master holds it now
  return Status::OK();
}

// The locks are let go inside the applier's callback once the image is copied: the analysis cannot
// follow that.
void Replica::SnapshotIfDue() NO_THREAD_SAFETY_ANALYSIS {
  MutexUniqueLock lock(mu_);
  MutexUniqueLock image_lock(image_mu_);
  if (log_.failed()) return;
  DrainLocked();
  {
    MutexLock queue_lock(queue_mu_);
    if (!apply_failed_.ok()) return;  // the image lacks records: the leader's snapshot replaces it
  }
  (void)applier_->SnapshotIfDue([&]() NO_THREAD_SAFETY_ANALYSIS {
    image_lock.unlock();
    lock.unlock();
  });
}

std::string Replica::Summary() {
  MutexLock image_lock(image_mu_);
  DrainLocked();
  return image_.Summary();
}

size_t Replica::queued_bytes() const {
  MutexLock lock(queue_mu_);
  return queued_bytes_;
}

}  // namespace yb::ha
