#include "master/task_table.h"

#include "common/grant.h"

namespace yb {

pb::LogTask TaskTable::ToLog(const UserTask& t) {
  pb::LogTask r;
  r.mutable_id()->set_hi(t.spec.id.hi);
  r.mutable_id()->set_lo(t.spec.id.lo);
  r.set_type(static_cast<uint32_t>(t.spec.type));
  r.set_state(static_cast<uint32_t>(t.status));
  r.set_tenant(t.tenant);
  r.set_key(t.spec.key);
  r.set_source(t.spec.source);
  for (const auto& target : t.spec.targets) r.add_targets(target);
  r.set_created_ms(t.created_ms);
  r.set_updated_ms(t.updated_ms);
  r.set_assigned_hi(t.assigned_client.hi);
  r.set_assigned_lo(t.assigned_client.lo);
  r.set_message(t.message);
  return r;
}

void TaskTable::LogLocked(const UserTask& t) {
  if (!sink_) return;
  pb::LogRecord rec;
  *rec.mutable_task() = ToLog(t);
  sink_->Append(rec);
}

Result<TaskId> TaskTable::Add(UserTask t) {
  MutexLock lock(mu_);
  if (auto it = tasks_.find(t.spec.id); it != tasks_.end()) {
    const UserTask& had = it->second;
    if (had.tenant == t.tenant && had.spec.key == t.spec.key && had.spec.type == t.spec.type) return had.spec.id;
    return Status(Code::kInvalidParams, "task id in use by another task");
  }
  if (unfinished_ >= kMaxUnfinished) {
    return Status(Code::kTaskPendingLimitExceeded,
                  std::to_string(unfinished_) + " copy and move tasks are unfinished: retry once some end");
  }
  t.status = TaskStatus::kPending;
  t.created_ms = t.updated_ms = WallMs();
  LogLocked(t);
  const TaskId id = t.spec.id;
  tasks_.emplace(id, std::move(t));
  ++unfinished_;
  return id;
}

std::optional<TaskInfo> TaskTable::Info(const TaskId& id, std::optional<TenantIndex> tenant) const {
  MutexLock lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || (tenant && it->second.tenant != *tenant)) return std::nullopt;
  return it->second.Info();
}

std::vector<UserTask> TaskTable::Idle() const {
  MutexLock lock(mu_);
  std::vector<UserTask> out;
  for (const auto& [id, t] : tasks_) {
    if (!t.finished() && t.in_flight == 0) out.push_back(t);
  }
  return out;
}

void TaskTable::CopyStarted(const TaskId& id, const ClientId& client) {
  MutexLock lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.finished()) return;
  UserTask& t = it->second;
  ++t.in_flight;
  if (t.status == TaskStatus::kProcessing && t.assigned_client == client) return;
  t.status = TaskStatus::kProcessing;
  t.assigned_client = client;
  t.updated_ms = WallMs();
  LogLocked(t);
}

void TaskTable::CopyEnded(const TaskId& id, const Status& status) {
  MutexLock lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  UserTask& t = it->second;
  if (t.in_flight > 0) --t.in_flight;
  if (!status.ok()) {
    ++t.failures;
    t.message = status.ToString();
  }
}

void TaskTable::CountFailure(const TaskId& id, std::string why) {
  MutexLock lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end()) return;
  ++it->second.failures;
  it->second.message = std::move(why);
}

void TaskTable::NoteFinishedLocked(const TaskId& id) {
  finished_.push_back(id);
  while (finished_.size() > kMaxFinished) {
    const TaskId old = finished_.front();
    finished_.pop_front();
    tasks_.erase(old);
    if (sink_) {
      pb::LogRecord rec;
      rec.mutable_task_gone()->set_hi(old.hi);
      rec.mutable_task_gone()->set_lo(old.lo);
      sink_->Append(rec);
    }
  }
}

void TaskTable::Finish(const TaskId& id, TaskStatus status, std::string message) {
  MutexLock lock(mu_);
  auto it = tasks_.find(id);
  if (it == tasks_.end() || it->second.finished()) return;
  UserTask& t = it->second;
  t.status = status;
  t.message = std::move(message);
  t.updated_ms = WallMs();
  LogLocked(t);
  --unfinished_;
  NoteFinishedLocked(id);
}

void TaskTable::Restore(const pb::LogTask& rec, TimeMs deadline) {
  UserTask t;
  t.spec.id = TaskId{rec.id().hi(), rec.id().lo()};
  t.spec.type = rec.type() == static_cast<uint32_t>(TaskType::kMove) ? TaskType::kMove : TaskType::kCopy;
  t.spec.key = rec.key();
  t.spec.source = rec.source();
  t.spec.targets.assign(rec.targets().begin(), rec.targets().end());
  t.tenant = static_cast<TenantIndex>(rec.tenant());
  t.status = rec.state() <= static_cast<uint32_t>(TaskStatus::kFailed) ? static_cast<TaskStatus>(rec.state())
                                                                       : TaskStatus::kFailed;
  t.created_ms = rec.created_ms();
  t.updated_ms = rec.updated_ms();
  t.assigned_client = ClientId{rec.assigned_hi(), rec.assigned_lo()};
  t.message = rec.message();
  t.deadline = deadline;
  MutexLock lock(mu_);
  const bool finished = t.finished();
  auto [it, inserted] = tasks_.try_emplace(t.spec.id, std::move(t));
  if (!inserted) return;  // a record restored twice
  if (finished) {
    NoteFinishedLocked(it->first);
  } else {
    ++unfinished_;
  }
}

void TaskTable::Dump(const std::function<void(const pb::LogRecord&)>& emit) const {
  std::vector<pb::LogTask> records;
  {
    MutexLock lock(mu_);
    records.reserve(tasks_.size());
    for (const auto& [id, t] : tasks_) records.push_back(ToLog(t));
  }
  pb::LogRecord rec;
  for (auto& r : records) {
    *rec.mutable_task() = std::move(r);
    emit(rec);
  }
}

size_t TaskTable::unfinished() const {
  MutexLock lock(mu_);
  return unfinished_;
}

}  // namespace yb
