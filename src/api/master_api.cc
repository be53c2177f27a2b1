#include "api/master_api.h"

namespace yb {
namespace {

template <typename T>
T First(std::vector<T> v) {
  return std::move(v.front());
}

}  // namespace

Result<std::vector<GrantedReplica>> MasterApi::PutStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                                        const PlacementConfig& config) {
  return First(BatchPutStart(ctx, {key}, {size}, config, WriteMode::kPut));
}

Result<std::vector<GrantedReplica>> MasterApi::UpsertStart(const CallContext& ctx, const std::string& key,
                                                           uint64_t size, const PlacementConfig& config) {
  return First(BatchPutStart(ctx, {key}, {size}, config, WriteMode::kUpsert));
}

Status MasterApi::PutEnd(const CallContext& ctx, const std::string& key, std::optional<uint64_t> checksum) {
  return First(BatchPutEnd(ctx, {key}, {checksum}));
}

PutCommitAnswer MasterApi::BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                          const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                          const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                          const PlacementConfig& config) {
  PutCommitAnswer out;
  for (const std::string& r : reservations) {
    if (!r.empty()) {
      return PutCommitAnswer::Failed(Status(Code::kNotSupported, "this master takes no Puts into reservations"),
                                     keys.size(), start_keys.size());
    }
  }
  if (!revoke.empty()) (void)BatchPutRevoke(ctx, revoke);
  if (!keys.empty()) out.ends = BatchPutEnd(ctx, keys, checksums);
  if (!start_keys.empty()) out.started = BatchPutStart(ctx, start_keys, start_sizes, config, WriteMode::kPut);
  return out;
}

Status MasterApi::PutRevoke(const CallContext& ctx, const std::string& key) {
  return First(BatchPutRevoke(ctx, {key}));
}

Result<ObjectInfo> MasterApi::GetReplicaList(const CallContext& ctx, const std::string& key, bool pin) {
  return First(BatchGetReplicaList(ctx, {key}, pin));
}

Status MasterApi::ReadEnd(const CallContext& ctx, const std::string& key, uint64_t read_pin) {
  return First(BatchReadEnd(ctx, {key}, {read_pin}));
}

Result<bool> MasterApi::ExistKey(const CallContext& ctx, const std::string& key) {
  return First(BatchExistKey(ctx, {key}));
}

Result<MissInfo> MasterApi::WhyMissing(const CallContext& ctx, const std::string& key) {
  return First(BatchWhyMissing(ctx, {key}));
}

Status MasterApi::Remove(const CallContext& ctx, const std::string& key, bool force) {
  return First(BatchRemove(ctx, {key}, force));
}

}  // namespace yb
