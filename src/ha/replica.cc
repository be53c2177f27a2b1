#include "ha/replica.h"

#include "rpc/master_convert.h"

namespace yb::ha {

Replica::Replica(MetaLog& log, MasterImage image) : log_(log) {
  MutexLock lock(mu_);
  image_ = std::move(image);
  applier_ = std::make_unique<LogApplier>(log_, image_);
}

pb::ApplyLogResponse Replica::Apply(const pb::ApplyLogRequest& q) {
  pb::ApplyLogResponse r;
  MutexLock lock(mu_);
  if (applied_epoch_ != q.epoch() && !q.snapshot_begin()) {
    rpc::ToPb(Status(Code::kInvalidParams, "a new leader starts with its snapshot"), r.mutable_status());
    return r;
  }
  if (q.snapshot_begin()) applied_epoch_ = q.epoch();
  auto last = applier_->Apply(q.snapshot_begin(), q.snapshot_seq(), q.snapshot_frames(), q.snapshot_done(), q.frames());
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
  YB_RETURN_IF_ERROR(master.Load(image_));
  image_ = MasterImage{};  // the master holds it now
  return Status::OK();
}

void Replica::SnapshotIfDue() {
  MutexUniqueLock lock(mu_);
  if (!log_.failed()) (void)applier_->SnapshotIfDue(lock);
}

std::string Replica::Summary() const {
  MutexLock lock(mu_);
  return image_.Summary();
}

}  // namespace yb::ha
