// TaskTable: the copy and move tasks callers asked for (MasterApi::CreateTask), what each has come
// to, and the little run state the master's rounds keep for them (master_tasks.cc). A task's record
// (proto/metalog.proto, LogTask) is appended whenever its status changes, so a restarted or
// promoted master finds every task and carries the unfinished ones on; the run state (copies in
// flight, failures, the deadline) is rebuilt: a copy in flight at a restart is made again.
// Bounded: kMaxUnfinished unfinished tasks (more are refused), and the kMaxFinished most recent
// finished ones are kept for QueryTask (older ones are forgotten, recorded as task_gone).
// Thread-safe; a leaf lock: it calls nothing but its sink while held.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/master_api.h"
#include "common/clock.h"
#include "common/thread_annotations.h"
#include "master/meta_sink.h"

namespace yb {

struct UserTask {
  TaskSpec spec;  // its key is the user's key, of `tenant`
  TenantIndex tenant = 0;
  TaskStatus status = TaskStatus::kPending;
  int64_t created_ms = 0;  // Unix time in milliseconds
  int64_t updated_ms = 0;
  ClientId assigned_client;
  std::string message;
  // Run state, not recorded.
  uint32_t in_flight = 0;  // copies handed to clients and not reported yet
  uint32_t failures = 0;   // copies that failed, or found no room
  TimeMs deadline = 0;     // failed if not done by then (the master's clock)

  bool finished() const { return status == TaskStatus::kSuccess || status == TaskStatus::kFailed; }
  TaskInfo Info() const { return {spec.id, spec.type, status, created_ms, updated_ms, assigned_client, message}; }
};

class TaskTable {
 public:
  static constexpr size_t kMaxUnfinished = 10000;  // Mooncake's DEFAULT_MAX_TOTAL_PENDING_TASKS
  static constexpr size_t kMaxFinished = 10000;    // and DEFAULT_MAX_TOTAL_FINISHED_TASKS

  void SetSink(MetaSink* sink) {
    MutexLock lock(mu_);
    sink_ = sink;
  }
  // Adds `t` (its id set, PENDING) and records it. When a task of that id exists (the caller made its
  // call again after losing the answer), that one's id: the same key and kind, else INVALID_PARAMS.
  // TASK_PENDING_LIMIT_EXCEEDED while kMaxUnfinished are unfinished.
  Result<TaskId> Add(UserTask t);
  // The task's state for a caller of `tenant` (nullopt: any tenant); nothing for an unknown id.
  std::optional<TaskInfo> Info(const TaskId& id, std::optional<TenantIndex> tenant) const;
  // Copies of the unfinished tasks with no copy in flight: what a round looks at.
  std::vector<UserTask> Idle() const;
  // A copy of task `id` was handed to `client`: PROCESSING (recorded when that is new).
  void CopyStarted(const TaskId& id, const ClientId& client);
  // A copy ended: OK, or a failure counted (with its reason as the message).
  void CopyEnded(const TaskId& id, const Status& status);
  // A copy could not start (no room): counted as a failure, with `why`.
  void CountFailure(const TaskId& id, std::string why);
  // Ends the task (SUCCESS or FAILED) with `message`, recorded; forgets the oldest finished ones past
  // kMaxFinished.
  void Finish(const TaskId& id, TaskStatus status, std::string message);

  // A restarted or promoted master's tasks, as recorded; unfinished ones run again, given until
  // `deadline`.
  void Restore(const pb::LogTask& rec, TimeMs deadline);
  // Every task as records (a snapshot's).
  void Dump(const std::function<void(const pb::LogRecord&)>& emit) const;
  size_t unfinished() const;

  static pb::LogTask ToLog(const UserTask& t);

 private:
  void LogLocked(const UserTask& t) REQUIRES(mu_);
  void NoteFinishedLocked(const TaskId& id) REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<TaskId, UserTask> tasks_ GUARDED_BY(mu_);
  std::deque<TaskId> finished_ GUARDED_BY(mu_);  // oldest first
  size_t unfinished_ GUARDED_BY(mu_) = 0;
  MetaSink* sink_ GUARDED_BY(mu_) = nullptr;
};

}  // namespace yb
