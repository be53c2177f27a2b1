// Copy and move tasks (Mooncake's create_copy_task, create_move_task, query_task; docs/design.md,
// "Copy and move tasks"). A task names a key and target segments; each round (TasksOnce) looks at
// every unfinished task that has no copy in flight and takes its next step from the object as it is
// now: a target without a replica gets a copy, made by the target's owner exactly as re-replication
// makes one (master_repair.cc: a PROCESSING replica, the object read-pinned until the client
// reports); once every target holds a COMPLETE replica a copy task succeeds, and a move task drops
// its source's replica (once no reader holds the object) and succeeds. Since each step is judged from
// the object and not from what the task remembers, a task that a restart or failover interrupted
// (its record in the log, its copies in flight not) simply goes on.
#include "common/log.h"
#include "common/segment_name.h"
#include "master/master_service.h"

namespace yb {
namespace {
constexpr size_t kMaxTaskTargets = 64;
constexpr uint32_t kMaxTaskFailures = 3;  // copies that failed or found no room, before the task does
}  // namespace

Result<TaskId> MasterService::CreateTask(const CallContext& ctx, const TaskSpec& spec) {
  YB_RETURN_IF_ERROR(CheckKey(ctx, spec.key));
  if (spec.targets.empty()) return Status(Code::kInvalidParams, "a task needs a target segment");
  if (spec.targets.size() > kMaxTaskTargets) {
    return Status(Code::kInvalidParams, std::to_string(spec.targets.size()) + " targets: at most " +
                                            std::to_string(kMaxTaskTargets));
  }
  if (spec.type == TaskType::kMove) {
    if (spec.targets.size() != 1) return Status(Code::kInvalidParams, "a move has one target");
    if (spec.source == spec.targets[0]) {
      return Status(Code::kInvalidParams, "a move's source and target are the same segment '" + spec.source + "'");
    }
  }
  for (const auto& target : spec.targets) {
    switch (segments_.StateOfName(target, ctx.tenant)) {
      case SegmentManager::NameState::kNone:
        return Status(Code::kInvalidParams, "no segment named '" + target + "' is mounted");
      case SegmentManager::NameState::kAway:
        return Status(Code::kUnavailableInCurrentStatus,
                      "segment '" + target + "' waits for its owner to mount it again (a restart, or a lost node)");
      case SegmentManager::NameState::kDraining:
        return Status(Code::kUnavailableInCurrentStatus, "segment '" + target + "' is draining: it takes no replica");
      case SegmentManager::NameState::kTakes:
        break;
    }
  }
  const TableKey tk(ctx.tenant, spec.key);
  {
    auto s = table_.Lock(tk.hashed);
    auto obj = s.Find(tk.hashed);
    if (!obj) return Status(Code::kObjectNotFound, "key " + Quote(spec.key) + " has no object");
    if (spec.type == TaskType::kMove) {
      bool on_source = false;
      const ObjectMeta& m = obj.meta();
      for (size_t i = 0; i < m.n_replicas && !on_source; ++i) {
        const StoredReplica& r = m.replica(i);
        on_source = r.kind() == ReplicaKind::kMemory && r.status() == ReplicaStatus::kComplete &&
                    SegmentNameMatches(segments_.NameOf(r.segment()), spec.source);
      }
      if (!on_source) {
        return Status(Code::kInvalidParams,
                      "segment '" + spec.source + "' holds no replica of " + Quote(spec.key) + " in memory");
      }
    }
  }
  UserTask t;
  t.spec = spec;
  if (t.spec.id.empty()) t.spec.id = TaskId::Random();
  t.tenant = ctx.tenant;
  t.deadline = clock_.NowMs() + config_.task_timeout_sec * 1000;
  auto id = tasks_.Add(std::move(t));
  if (id.ok()) {
    YB_LOG_INFO("{} task {:016x}{:016x} of {} to {} created by client {}",
                spec.type == TaskType::kMove ? "move" : "copy", id->hi, id->lo, Quote(spec.key),
                spec.targets.size() == 1 ? "'" + spec.targets[0] + "'" : std::to_string(spec.targets.size()) + " segments",
                ctx.client.ToString());
  }
  return id;
}

Result<TaskInfo> MasterService::QueryTask(const CallContext& ctx, const TaskId& id) {
  auto info = tasks_.Info(id, ctx.privileged ? std::nullopt : std::optional(ctx.tenant));
  if (!info) return Status(Code::kTaskNotFound, "no task with that id (never made here, or long finished)");
  return *info;
}

uint64_t MasterService::TasksOnce() {
  const TimeMs now = clock_.NowMs();
  auto idle = tasks_.Idle();
  for (const UserTask& t : idle) StepTask(t, now);
  return idle.size();
}

void MasterService::StepTask(const UserTask& t, TimeMs now) {
  const TaskId& id = t.spec.id;
  if (now >= t.deadline) {
    tasks_.Finish(id, TaskStatus::kFailed,
                  "not done within --task_timeout_sec (" + std::to_string(config_.task_timeout_sec) + " s)" +
                      (t.message.empty() ? std::string() : ": " + t.message));
    return;
  }
  if (t.failures >= kMaxTaskFailures) {
    tasks_.Finish(id, TaskStatus::kFailed, t.message);
    return;
  }
  const TableKey tk(t.tenant, t.spec.key);
  auto s = table_.Lock(tk.hashed);
  auto obj = s.Find(tk.hashed);
  if (!obj) {
    tasks_.Finish(id, TaskStatus::kFailed, "the object was removed");
    return;
  }
  const ObjectMeta& m = obj.meta();
  const bool move = t.spec.type == TaskType::kMove;
  // Where its memory replicas are, by name; a serving COMPLETE one to copy from (a move's source
  // first).
  std::vector<std::string> names(m.n_replicas);
  std::optional<size_t> from;
  bool in_memory = false;  // a COMPLETE replica in memory, serving or waiting for its owner
  for (size_t i = 0; i < m.n_replicas; ++i) {
    const StoredReplica& r = m.replica(i);
    if (r.kind() != ReplicaKind::kMemory) continue;
    names[i] = segments_.NameOf(r.segment());
    if (r.status() != ReplicaStatus::kComplete) continue;
    in_memory = true;
    if (!segments_.Serving(r.segment())) continue;
    const bool on_source = move && SegmentNameMatches(names[i], t.spec.source);
    if (!from || on_source) from = i;
  }
  size_t complete = 0;
  for (const std::string& target : t.spec.targets) {
    std::optional<ReplicaStatus> there;
    for (size_t i = 0; i < m.n_replicas && !there; ++i) {
      if (!names[i].empty() && SegmentNameMatches(names[i], target)) there = m.replica(i).status();
    }
    if (there == ReplicaStatus::kComplete) {
      ++complete;
      continue;
    }
    if (there) continue;  // a copy being made (a repair's): looked at again next round
    switch (segments_.StateOfName(target, t.tenant)) {
      case SegmentManager::NameState::kNone:
        tasks_.Finish(id, TaskStatus::kFailed, "segment '" + target + "' is not mounted any more");
        return;
      case SegmentManager::NameState::kAway:
      case SegmentManager::NameState::kDraining:
        return;  // its owner may come back, its drain end: the deadline bounds the wait
      case SegmentManager::NameState::kTakes:
        break;
    }
    if (!from) {
      if (!in_memory) tasks_.Finish(id, TaskStatus::kFailed, "no replica in memory to copy from");
      return;  // else its holders have not mounted again since a restart yet
    }
    auto alloc = segments_.AllocateOn(t.tenant, m.size, target);
    if (!alloc) {
      tasks_.CountFailure(id, "no room for " + std::to_string(m.size) + " bytes on segment '" + target + "'");
      return;
    }
    auto owner = BeginCopyLocked(s, obj, m.replica(*from), *alloc, now, id);
    if (!owner) {
      tasks_.CountFailure(id, "segment '" + target + "' has no owner now");
      return;
    }
    tasks_.CopyStarted(id, *owner);
    // BeginCopyLocked changed the object's replicas: the rest waits for the next round.
    return;
  }
  if (complete < t.spec.targets.size()) return;
  if (!move) {
    std::string to;
    for (const auto& target : t.spec.targets) to += (to.empty() ? "'" : ", '") + target + "'";
    tasks_.Finish(id, TaskStatus::kSuccess, "copied to " + to);
    return;
  }
  auto on_source = [&](const StoredReplica& r) {
    return r.kind() == ReplicaKind::kMemory && SegmentNameMatches(segments_.NameOf(r.segment()), t.spec.source) &&
           !SegmentNameMatches(segments_.NameOf(r.segment()), t.spec.targets[0]);
  };
  bool source_there = false;
  for (size_t i = 0; i < m.n_replicas; ++i) source_there = source_there || on_source(m.replica(i));
  if (source_there && m.readers > 0) return;  // its readers end first (the task's deadline bounds the wait)
  if (source_there) s.DropReplicasIf(obj, on_source);
  tasks_.Finish(id, TaskStatus::kSuccess, "moved to '" + t.spec.targets[0] + "'");
}

}  // namespace yb
