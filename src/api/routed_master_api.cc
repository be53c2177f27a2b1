#include "api/routed_master_api.h"

namespace yb {

Result<CallContext> RoutedMasterApi::RegisterClient(const ClientRegistration& reg) {
  return Routed<Result<CallContext>>([&](MasterApi& m) { return m.RegisterClient(reg); });
}

Status RoutedMasterApi::VerifyCaller(const CallContext& ctx) {
  return Routed<Status>([&](MasterApi& m) { return m.VerifyCaller(ctx); });
}

Status RoutedMasterApi::Writable() {
  return Routed<Status>([&](MasterApi& m) { return m.Writable(); });
}

Result<PingResponse> RoutedMasterApi::Ping(const CallContext& ctx, const PingState& state) {
  return Routed<Result<PingResponse>>([&](MasterApi& m) { return m.Ping(ctx, state); });
}

Status RoutedMasterApi::UnregisterClient(const CallContext& ctx) {
  return Routed<Status>([&](MasterApi& m) { return m.UnregisterClient(ctx); });
}

Status RoutedMasterApi::MountSegments(const CallContext& ctx, const std::vector<SegmentMount>& segs) {
  return Routed<Status>([&](MasterApi& m) { return m.MountSegments(ctx, segs); });
}

Status RoutedMasterApi::UnmountSegment(const CallContext& ctx, SegmentId id) {
  return Routed<Status>([&](MasterApi& m) { return m.UnmountSegment(ctx, id); });
}

Result<uint64_t> RoutedMasterApi::DrainSegment(const CallContext& ctx, SegmentId id) {
  return Routed<Result<uint64_t>>([&](MasterApi& m) { return m.DrainSegment(ctx, id); });
}

Status RoutedMasterApi::UndrainSegment(const CallContext& ctx, SegmentId id) {
  return Routed<Status>([&](MasterApi& m) { return m.UndrainSegment(ctx, id); });
}

Result<std::vector<SegmentUsage>> RoutedMasterApi::ListSegments() {
  return Routed<Result<std::vector<SegmentUsage>>>([&](MasterApi& m) { return m.ListSegments(); });
}

std::vector<Result<std::vector<GrantedReplica>>> RoutedMasterApi::BatchPutStart(const CallContext& ctx,
                                                                                const Keys& keys,
                                                                                const std::vector<uint64_t>& sizes,
                                                                                const PlacementConfig& config,
                                                                                WriteMode mode) {
  return Routed<std::vector<Result<std::vector<GrantedReplica>>>>(
      [&](MasterApi& m) { return m.BatchPutStart(ctx, keys, sizes, config, mode); }, keys.size());
}

std::vector<Status> RoutedMasterApi::BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                                 const std::vector<std::optional<uint64_t>>& checksums) {
  return Routed<std::vector<Status>>([&](MasterApi& m) { return m.BatchPutEnd(ctx, keys, checksums); }, keys.size());
}

PutCommitAnswer RoutedMasterApi::BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                                const std::vector<std::optional<uint64_t>>& checksums,
                                                const Keys& revoke, const Keys& start_keys,
                                                const std::vector<uint64_t>& start_sizes,
                                                const PlacementConfig& config) {
  return Routed<PutCommitAnswer>(
      [&](MasterApi& m) {
        return m.BatchPutCommit(ctx, keys, reservations, checksums, revoke, start_keys, start_sizes, config);
      },
      keys.size(), start_keys.size());
}

std::vector<Status> RoutedMasterApi::BatchPutRevoke(const CallContext& ctx, const Keys& keys) {
  return Routed<std::vector<Status>>([&](MasterApi& m) { return m.BatchPutRevoke(ctx, keys); }, keys.size());
}

std::vector<Result<ObjectInfo>> RoutedMasterApi::BatchGetReplicaList(const CallContext& ctx, const Keys& keys,
                                                                     bool pin) {
  return Routed<std::vector<Result<ObjectInfo>>>([&](MasterApi& m) { return m.BatchGetReplicaList(ctx, keys, pin); },
                                                 keys.size());
}

std::vector<Status> RoutedMasterApi::BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                                  const std::vector<uint64_t>& read_pins) {
  return Routed<std::vector<Status>>([&](MasterApi& m) { return m.BatchReadEnd(ctx, keys, read_pins); }, keys.size());
}

std::vector<Result<bool>> RoutedMasterApi::BatchExistKey(const CallContext& ctx, const Keys& keys) {
  return Routed<std::vector<Result<bool>>>([&](MasterApi& m) { return m.BatchExistKey(ctx, keys); }, keys.size());
}

std::vector<Result<MissInfo>> RoutedMasterApi::BatchWhyMissing(const CallContext& ctx, const Keys& keys) {
  return Routed<std::vector<Result<MissInfo>>>([&](MasterApi& m) { return m.BatchWhyMissing(ctx, keys); }, keys.size());
}

std::vector<Status> RoutedMasterApi::BatchRemove(const CallContext& ctx, const Keys& keys, bool force) {
  return Routed<std::vector<Status>>([&](MasterApi& m) { return m.BatchRemove(ctx, keys, force); }, keys.size());
}

Result<MasterApi::Keys> RoutedMasterApi::BatchReplicaClear(const CallContext& ctx, const Keys& keys,
                                                           const std::string& segment_name) {
  return Routed<Result<Keys>>([&](MasterApi& m) { return m.BatchReplicaClear(ctx, keys, segment_name); });
}

Result<uint64_t> RoutedMasterApi::RemoveWhere(const CallContext& ctx, const std::optional<std::string>& pattern,
                                              bool force) {
  return Routed<Result<uint64_t>>([&](MasterApi& m) { return m.RemoveWhere(ctx, pattern, force); });
}

Result<std::vector<OffloadTask>> RoutedMasterApi::OffloadFetch(const CallContext& ctx, uint32_t max) {
  return Routed<Result<std::vector<OffloadTask>>>([&](MasterApi& m) { return m.OffloadFetch(ctx, max); });
}

std::vector<Status> RoutedMasterApi::OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) {
  return Routed<std::vector<Status>>([&](MasterApi& m) { return m.OffloadDone(ctx, results); }, results.size());
}

Result<std::vector<RepairTask>> RoutedMasterApi::RepairFetch(const CallContext& ctx, uint32_t max) {
  return Routed<Result<std::vector<RepairTask>>>([&](MasterApi& m) { return m.RepairFetch(ctx, max); });
}

std::vector<Status> RoutedMasterApi::RepairDone(const CallContext& ctx, const std::vector<RepairResult>& results) {
  return Routed<std::vector<Status>>([&](MasterApi& m) { return m.RepairDone(ctx, results); }, results.size());
}

Result<TaskId> RoutedMasterApi::CreateTask(const CallContext& ctx, const TaskSpec& spec) {
  return Routed<Result<TaskId>>([&](MasterApi& m) { return m.CreateTask(ctx, spec); });
}

Result<TaskInfo> RoutedMasterApi::QueryTask(const CallContext& ctx, const TaskId& id) {
  return Routed<Result<TaskInfo>>([&](MasterApi& m) { return m.QueryTask(ctx, id); });
}

std::vector<Status> RoutedMasterApi::AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                                     const std::vector<DiskObject>& objects) {
  return Routed<std::vector<Status>>([&](MasterApi& m) { return m.AddDiskReplicas(ctx, segment, objects); },
                                     objects.size());
}

std::vector<Status> RoutedMasterApi::DropDiskReplicas(const CallContext& ctx, const Keys& disk_keys) {
  return Routed<std::vector<Status>>([&](MasterApi& m) { return m.DropDiskReplicas(ctx, disk_keys); },
                                     disk_keys.size());
}

}  // namespace yb
