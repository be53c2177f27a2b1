#include "client/repairer.h"

#include "common/hash.h"
#include "common/log.h"

namespace yb {

Repairer::Repairer(Membership& members, std::shared_ptr<TransferEngine> engine,
                   std::shared_ptr<LocalSegmentRegistry> local)
    : members_(members), engine_(std::move(engine)), local_(std::move(local)) {}

void Repairer::Start(Scheduler& scheduler) {
  // A full batch means more may wait: the step runs again at once.
  job_ = scheduler.Every("yb-repair", std::chrono::milliseconds(200),
                         Scheduler::Step([this] { return RunOnce() == kTasksPerFetch; }));
}

Status Repairer::Copy(const RepairTask& t) {
  LocalSegment seg = local_->Find(t.target);
  if (!seg.base) return Status(Code::kSegmentNotFound, "segment " + std::to_string(t.target) + " is not ours");
  if (t.target_offset > seg.size || t.size > seg.size - t.target_offset) {
    return Status(Code::kInvalidParams, "the copy's range is outside segment " + std::to_string(t.target));
  }
  uint8_t* dst = seg.base + t.target_offset;
  TransferRequest r{TransferRequest::Op::kRead, t.source, t.source_offset, dst, t.size};
  Status st = engine_->Submit({r})[0];
  if (!st.ok()) return st;
  if (t.checksum && HashBytes(dst, t.size) != *t.checksum) {
    return Status(Code::kChecksumMismatch, "the copy read from segment " + std::to_string(t.source) +
                                               " does not match the value's checksum");
  }
  return Status::OK();
}

size_t Repairer::RunOnce(bool force) {
  if (!members_.TakeRepairsWaiting() && !force) return 0;
  auto tasks = members_.master().RepairFetch(members_.ctx(), kTasksPerFetch);
  if (!tasks.ok()) {
    YB_LOG_WARN("re-replication: cannot fetch copy tasks: {}", tasks.status().ToString());
    return 0;
  }
  if (tasks->empty()) return 0;
  std::vector<RepairResult> results;
  results.reserve(tasks->size());
  for (const RepairTask& t : *tasks) {
    Status st = Copy(t);
    if (st.ok()) {
      copied_.fetch_add(1);
      bytes_.fetch_add(t.size);
    } else {
      failed_.fetch_add(1);
      YB_LOG_WARN("re-replication: copy of {} bytes from segment {} failed: {}", t.size, t.source, st.ToString());
    }
    results.push_back({t.task_id, std::move(st)});
  }
  (void)members_.master().RepairDone(members_.ctx(), results);  // unreported ones time out and are redone
  return tasks->size();
}

}  // namespace yb
