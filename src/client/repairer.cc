#include "client/repairer.h"

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

Result<TransferRequest> Repairer::Plan(const RepairTask& t) const {
  LocalSegment seg = local_->Find(t.target);
  if (!seg.base) return Status(Code::kSegmentNotFound, "segment " + std::to_string(t.target) + " is not ours");
  if (t.target_offset > seg.size || t.size > seg.size - t.target_offset) {
    return Status(Code::kInvalidParams, "the copy's range is outside segment " + std::to_string(t.target));
  }
  TransferRequest r{TransferRequest::Op::kRead, t.source,  t.source_offset, seg.base + t.target_offset,
                    t.size,                    nullptr,   t.source_grant};
  r.land_within_grant = true;  // the master gives the new replica's range up after that (a paused maker)
  return r;
}

size_t Repairer::RunOnce(bool force) {
  const bool waiting = members_.TakeRepairsWaiting();
  if (!waiting && !force && !more_.load()) return 0;
  more_ = false;
  auto tasks = members_.master().RepairFetch(members_.ctx(), kTasksPerFetch);
  if (!tasks.ok()) {
    YB_LOG_WARN("re-replication: cannot fetch copy tasks: {}", tasks.status().ToString());
    return 0;
  }
  if (tasks->empty()) return 0;
  more_ = tasks->size() == kTasksPerFetch;
  // Every copy of the batch in one submission: the engine moves them in parallel.
  std::vector<RepairResult> results(tasks->size());
  std::vector<TransferRequest> reqs;
  std::vector<size_t> owner;
  std::vector<ChecksumSink> sums(tasks->size());  // a value's checksum, as its copy arrives
  for (size_t i = 0; i < tasks->size(); ++i) {
    results[i].task_id = (*tasks)[i].task_id;
    auto r = Plan((*tasks)[i]);
    if (!r.ok()) {
      results[i].status = r.status();
      continue;
    }
    if ((*tasks)[i].checksum) {
      sums[i].Reset((*tasks)[i].size);
      r->checksum = &sums[i];
    }
    reqs.push_back(*r);
    owner.push_back(i);
  }
  auto done = engine_->Submit(reqs);
  for (size_t k = 0; k < done.size(); ++k) {
    const RepairTask& t = (*tasks)[owner[k]];
    Status st = std::move(done[k]);
    members_.unreachable().Note(t.source, st);
    if (st.ok() && t.checksum && sums[owner[k]].Finish(std::vector<Slice>{{reqs[k].local, t.size}}) != *t.checksum) {
      st = Status(Code::kChecksumMismatch,
                  "the copy read from segment " + std::to_string(t.source) + " does not match the value's checksum");
    }
    results[owner[k]].status = std::move(st);
  }
  size_t failed = 0;
  const Status* first = nullptr;
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].status.ok()) {
      copied_.fetch_add(1);
      bytes_.fetch_add((*tasks)[i].size);
    } else {
      failed_.fetch_add(1);
      if (failed++ == 0) first = &results[i].status;
    }
  }
  if (failed > 0) {
    YB_LOG_WARN("re-replication: {} of {} copies failed (the first: {})", failed, results.size(), first->ToString());
  }
  (void)members_.master().RepairDone(members_.ctx(), results);  // unreported ones time out and are redone
  return tasks->size();
}

}  // namespace yb
