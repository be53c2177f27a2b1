// MasterService: batch forms. Each key succeeds or fails on its own.
#include "master/master_service.h"

namespace yb {
namespace {

template <typename Out, typename F>
std::vector<Out> ForEachKey(const MasterApi::Keys& keys, F&& f) {
  std::vector<Out> out;
  out.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) out.push_back(f(i));
  return out;
}

template <typename Out>
std::vector<Out> SizeMismatch(size_t n, const char* what) {
  return std::vector<Out>(n, Out(Status(Code::kInvalidParams, std::string(what) + " and keys differ in length")));
}

}  // namespace

std::vector<Result<std::vector<GrantedReplica>>> MasterService::BatchPutStart(const CallContext& ctx, const Keys& keys,
                                                                              const std::vector<uint64_t>& sizes,
                                                                              const PlacementConfig& config,
                                                                              WriteMode mode) {
  using R = Result<std::vector<GrantedReplica>>;
  if (sizes.size() != keys.size()) return SizeMismatch<R>(keys.size(), "sizes");
  return ForEachKey<R>(keys, [&](size_t i) -> R {
    auto group = GroupOf(config, keys.size(), i);
    if (!group.ok()) return group.status();
    return StartWrite(ctx, keys[i], sizes[i], config, mode, *group);
  });
}

std::vector<Status> MasterService::BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                               const std::vector<std::optional<uint64_t>>& checksums) {
  if (!checksums.empty() && checksums.size() != keys.size()) return SizeMismatch<Status>(keys.size(), "checksums");
  return ForEachKey<Status>(
      keys, [&](size_t i) { return PutEndOne(ctx, keys[i], checksums.empty() ? std::nullopt : checksums[i]); });
}

PutCommitAnswer MasterService::BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                              const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                              const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                              const PlacementConfig& config) {
  PutCommitAnswer out;
  for (const std::string& name : revoke) (void)PutRevokeOne(ctx, name);
  if (!reservations.empty() && reservations.size() != keys.size()) {
    out.ends = SizeMismatch<Status>(keys.size(), "reservations");
  } else if (!checksums.empty() && checksums.size() != keys.size()) {
    out.ends = SizeMismatch<Status>(keys.size(), "checksums");
  } else {
    out.ends = ForEachKey<Status>(keys, [&](size_t i) {
      return CommitOne(ctx, keys[i], reservations.empty() ? std::string() : reservations[i],
                       checksums.empty() ? std::nullopt : checksums[i]);
    });
  }
  if (!start_keys.empty()) out.started = BatchPutStart(ctx, start_keys, start_sizes, config, WriteMode::kPut);
  return out;
}

std::vector<Status> MasterService::BatchPutRevoke(const CallContext& ctx, const Keys& keys) {
  return ForEachKey<Status>(keys, [&](size_t i) { return PutRevokeOne(ctx, keys[i]); });
}

std::vector<Result<ObjectInfo>> MasterService::BatchGetReplicaList(const CallContext& ctx, const Keys& keys, bool pin) {
  return ForEachKey<Result<ObjectInfo>>(keys, [&](size_t i) { return GetReplicaListOne(ctx, keys[i], pin); });
}

std::vector<Status> MasterService::BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                                const std::vector<uint64_t>& read_pins) {
  if (read_pins.size() != keys.size()) return SizeMismatch<Status>(keys.size(), "read_pins");
  return ForEachKey<Status>(keys, [&](size_t i) { return ReadEndOne(ctx, keys[i], read_pins[i]); });
}

std::vector<Result<bool>> MasterService::BatchExistKey(const CallContext& ctx, const Keys& keys) {
  return ForEachKey<Result<bool>>(keys, [&](size_t i) { return ExistKeyOne(ctx, keys[i]); });
}

std::vector<Result<MissInfo>> MasterService::BatchWhyMissing(const CallContext& ctx, const Keys& keys) {
  return ForEachKey<Result<MissInfo>>(keys, [&](size_t i) -> Result<MissInfo> {
    YB_RETURN_IF_ERROR(CheckKey(ctx, keys[i]));
    const TableKey tk(ctx.tenant, keys[i]);
    return table_.Lock(tk.hashed).WhyMissing(tk.hashed);
  });
}

std::vector<Status> MasterService::BatchRemove(const CallContext& ctx, const Keys& keys, bool force) {
  return ForEachKey<Status>(keys, [&](size_t i) { return RemoveOne(ctx, keys[i], force); });
}

}  // namespace yb
