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
