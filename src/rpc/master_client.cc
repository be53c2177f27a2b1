// The client half of the master's RPC: each MasterApi call as a request of its method.
#include "rpc/master_client.h"

#include <cstring>

#include "common/segment_name.h"
#include "rpc/master_convert.h"

namespace yb::rpc {
namespace {

using M = MasterMethod;

template <typename Q>
void SetContext(const CallContext& ctx, Q& q) {
  ToPb(ctx, q.mutable_ctx());
}

template <typename Q>
Q KeysRequestOf(const CallContext& ctx, const MasterApi::Keys& keys) {
  Q q;
  SetContext(ctx, q);
  for (const auto& k : keys) q.add_keys(k);
  return q;
}

// The per-key answers of a reply: `decode(i)` for each of n keys, or for every key the call's
// failure (also a reply with a result missing).
template <typename Out, typename R, typename Decode>
std::vector<Out> PerKey(const Result<R>& r, size_t n, Decode&& decode) {
  if (!r.ok()) return std::vector<Out>(n, Out(r.status()));
  if (static_cast<size_t>(r->results_size()) != n) {
    return std::vector<Out>(n, Out(Status(Code::kRpcFail, "reply has " + std::to_string(r->results_size()) +
                                                              " results for " + std::to_string(n) + " keys")));
  }
  std::vector<Out> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(decode(static_cast<int>(i)));
  return out;
}

std::vector<Status> Statuses(const Result<pb::StatusesResponse>& r, size_t n) {
  return PerKey<Status>(r, n, [&](int i) { return FromPb(r->results(i)); });
}

}  // namespace

template <MasterMethod m>
Result<typename MethodTraits<m>::Response> MasterClient::Call(const typename MethodTraits<m>::Request& q) {
  auto reply = channel_.Call(static_cast<uint16_t>(m), q.SerializeAsString(), timeout_);
  if (!reply.ok()) return reply.status();
  typename MethodTraits<m>::Response resp;
  if (!resp.ParseFromString(*reply)) {
    return Status(Code::kRpcFail, "reply to " + std::string(MasterMethodName(static_cast<uint16_t>(m))) + " from " +
                                      channel_.target() + " does not parse");
  }
  // Fencing: an answer from a leader older than one already heard from is not believed.
  const uint64_t epoch = resp.epoch();
  uint64_t seen = epoch_seen_->load(std::memory_order_relaxed);
  while (epoch > seen && !epoch_seen_->compare_exchange_weak(seen, epoch, std::memory_order_relaxed)) {
  }
  if (epoch < seen) {
    return Status(Code::kRpcFail, "answer from " + channel_.target() + " at epoch " + std::to_string(epoch) +
                                      ", older than the leader's " + std::to_string(seen) + ": a stale leader");
  }
  if (Status st = FromPb(resp.status()); !st.ok()) return st;
  return resp;
}

MasterClient::MasterClient(const std::string& host, uint16_t port, std::chrono::milliseconds timeout,
                           std::shared_ptr<std::atomic<uint64_t>> epoch_seen, RpcChannel::Options channel)
    : security_(channel.security),
      channel_(host, port, std::move(channel)),
      timeout_(timeout),
      epoch_seen_(epoch_seen ? std::move(epoch_seen) : std::make_shared<std::atomic<uint64_t>>(0)) {}

Result<std::unique_ptr<MasterClient>> MasterClient::Connect(const std::string& address,
                                                            std::chrono::milliseconds timeout,
                                                            RpcChannel::Options channel) {
  auto hp = ParseHostPort(address);
  if (!hp.ok()) return hp.status();
  return std::make_unique<MasterClient>(hp->first, hp->second, timeout, nullptr, std::move(channel));
}

Result<CallContext> MasterClient::RegisterClient(const ClientRegistration& reg) {
  pb::RegisterClientRequest q;
  SetContext(CallContext{reg.id, 0, reg.token}, q);
  q.set_hostname(reg.hostname);
  q.set_tenant(reg.tenant);
  q.set_ssd_tier(reg.ssd_tier);
  auto r = Call<M::kRegisterClient>(q);
  if (!r.ok()) return r.status();
  CallContext ctx{reg.id, static_cast<TenantIndex>(r->tenant_index())};
  if (r->token().size() != ctx.token.size()) return Status(Code::kRpcFail, "the master answered no client token");
  std::memcpy(ctx.token.data(), r->token().data(), ctx.token.size());
  if (!r->data_key().empty() && security_) security_->SetDataKey(r->data_key());
  return ctx;
}

Result<PingResponse> MasterClient::Ping(const CallContext& ctx, const PingState& state) {
  pb::PingRequest q;
  SetContext(ctx, q);
  q.set_mounted_segments(state.mounted_segments);
  q.set_pins_stated(state.pins_stated);
  for (const HeldPin& p : state.pins) {
    auto* h = q.add_pins();
    h->set_key(p.key);
    h->set_read_pin(p.read_pin);
  }
  for (SegmentId s : state.unreachable) q.add_unreachable(s);
  auto r = Call<M::kPing>(q);
  if (!r.ok()) return r.status();
  return PingResponse{r->need_remount(), r->repairs()};
}

Status MasterClient::UnregisterClient(const CallContext& ctx) {
  pb::UnregisterClientRequest q;
  SetContext(ctx, q);
  return Call<M::kUnregisterClient>(q).status();
}

Status MasterClient::MountSegments(const CallContext& ctx, const std::vector<SegmentMount>& segs) {
  pb::MountSegmentsRequest q;
  SetContext(ctx, q);
  for (const auto& s : segs) ToPb(s, q.add_segments());
  return Call<M::kMountSegments>(q).status();
}

Status MasterClient::UnmountSegment(const CallContext& ctx, SegmentId id) {
  pb::UnmountSegmentRequest q;
  SetContext(ctx, q);
  q.set_segment_id(id);
  return Call<M::kUnmountSegment>(q).status();
}

Result<std::vector<SegmentUsage>> MasterClient::ListSegments() {
  auto r = Call<M::kListSegments>(pb::ListSegmentsRequest());
  if (!r.ok()) return r.status();
  return FromPbList(r->segments());
}

std::vector<Result<std::vector<GrantedReplica>>> MasterClient::BatchPutStart(const CallContext& ctx, const Keys& keys,
                                                                             const std::vector<uint64_t>& sizes,
                                                                             const PlacementConfig& config,
                                                                             WriteMode mode) {
  auto q = KeysRequestOf<pb::PutStartRequest>(ctx, keys);
  for (auto s : sizes) q.add_sizes(s);
  ToPb(config, q.mutable_config());
  q.set_upsert(mode == WriteMode::kUpsert);
  auto r = Call<M::kPutStart>(q);
  return PerKey<Result<std::vector<GrantedReplica>>>(r, keys.size(), [&](int i) -> Result<std::vector<GrantedReplica>> {
    const auto& k = r->results(i);
    if (Status st = FromPb(k.status()); !st.ok()) return st;
    return FromPbList(k.replicas());
  });
}

std::vector<Status> MasterClient::BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                              const std::vector<std::optional<uint64_t>>& checksums) {
  auto q = KeysRequestOf<pb::PutEndRequest>(ctx, keys);
  for (const auto& c : checksums) {
    q.add_checksums(c.value_or(0));
    q.add_has_checksum(c.has_value());
  }
  return Statuses(Call<M::kPutEnd>(q), keys.size());
}

PutCommitAnswer MasterClient::BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                             const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                             const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                             const PlacementConfig& config) {
  auto q = KeysRequestOf<pb::PutCommitRequest>(ctx, keys);
  for (const auto& k : reservations) q.add_reservations(k);
  for (const auto& c : checksums) {
    q.add_checksums(c.value_or(0));
    q.add_has_checksum(c.has_value());
  }
  for (const auto& k : revoke) q.add_revoke(k);
  for (const auto& k : start_keys) q.add_start_keys(k);
  for (auto s : start_sizes) q.add_start_sizes(s);
  ToPb(config, q.mutable_config());
  auto r = Call<M::kPutCommit>(q);
  if (!r.ok()) return PutCommitAnswer::Failed(r.status(), keys.size(), start_keys.size());
  if (static_cast<size_t>(r->results_size()) != keys.size() ||
      static_cast<size_t>(r->started_size()) != start_keys.size()) {
    return PutCommitAnswer::Failed(
        Status(Code::kRpcFail, "reply answers " + std::to_string(r->results_size()) + " and " +
                                   std::to_string(r->started_size()) + " for " + std::to_string(keys.size()) + " and " +
                                   std::to_string(start_keys.size()) + " keys"),
        keys.size(), start_keys.size());
  }
  PutCommitAnswer out;
  out.ends.reserve(keys.size());
  for (const auto& st : r->results()) out.ends.push_back(FromPb(st));
  for (const auto& k : r->started()) {
    if (Status st = FromPb(k.status()); !st.ok()) {
      out.started.emplace_back(st);
    } else {
      out.started.emplace_back(FromPbList(k.replicas()));
    }
  }
  return out;
}

std::vector<Status> MasterClient::BatchPutRevoke(const CallContext& ctx, const Keys& keys) {
  return Statuses(Call<M::kPutRevoke>(KeysRequestOf<pb::KeysRequest>(ctx, keys)), keys.size());
}

std::vector<Result<ObjectInfo>> MasterClient::BatchGetReplicaList(const CallContext& ctx, const Keys& keys, bool pin) {
  auto q = KeysRequestOf<pb::GetReplicaListRequest>(ctx, keys);
  q.set_pin(pin);
  auto r = Call<M::kGetReplicaList>(q);
  return PerKey<Result<ObjectInfo>>(r, keys.size(), [&](int i) -> Result<ObjectInfo> {
    const auto& k = r->results(i);
    if (Status st = FromPb(k.status()); !st.ok()) return st;
    return FromPb(k);
  });
}

// A pin whose ReadEnd is lost is released when the client is declared dead.
std::vector<Status> MasterClient::BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                               const std::vector<uint64_t>& read_pins) {
  auto q = KeysRequestOf<pb::ReadEndRequest>(ctx, keys);
  for (auto p : read_pins) q.add_read_pins(p);
  Status st = channel_.Send(static_cast<uint16_t>(M::kReadEnd), q.SerializeAsString(), timeout_);
  return std::vector<Status>(keys.size(), st);
}

std::vector<Result<bool>> MasterClient::BatchExistKey(const CallContext& ctx, const Keys& keys) {
  auto r = Call<M::kExistKey>(KeysRequestOf<pb::KeysRequest>(ctx, keys));
  if (r.ok() && r->exists_size() != r->results_size()) r = Status(Code::kRpcFail, "ExistKey reply is malformed");
  return PerKey<Result<bool>>(r, keys.size(), [&](int i) -> Result<bool> {
    if (Status st = FromPb(r->results(i)); !st.ok()) return st;
    return r->exists(i);
  });
}

std::vector<Result<MissInfo>> MasterClient::BatchWhyMissing(const CallContext& ctx, const Keys& keys) {
  auto r = Call<M::kWhyMissing>(KeysRequestOf<pb::KeysRequest>(ctx, keys));
  if (r.ok() && (r->reasons_size() != r->results_size() || r->ages_ms_size() != r->results_size())) {
    r = Status(Code::kRpcFail, "WhyMissing reply is malformed");
  }
  return PerKey<Result<MissInfo>>(r, keys.size(), [&](int i) -> Result<MissInfo> {
    if (Status st = FromPb(r->results(i)); !st.ok()) return st;
    if (r->reasons(i) >= static_cast<uint32_t>(kMissReasonCount)) {
      return Status(Code::kRpcFail, "WhyMissing reply names an unknown reason " + std::to_string(r->reasons(i)));
    }
    return MissInfo{static_cast<MissReason>(r->reasons(i)), r->ages_ms(i)};
  });
}

std::vector<Status> MasterClient::BatchRemove(const CallContext& ctx, const Keys& keys, bool force) {
  auto q = KeysRequestOf<pb::RemoveRequest>(ctx, keys);
  q.set_force(force);
  return Statuses(Call<M::kRemove>(q), keys.size());
}

Result<uint64_t> MasterClient::RemoveWhere(const CallContext& ctx, const std::optional<std::string>& pattern,
                                           bool force) {
  pb::RemoveWhereRequest q;
  SetContext(ctx, q);
  if (pattern) q.set_pattern(*pattern);
  q.set_force(force);
  auto r = Call<M::kRemoveWhere>(q);
  if (!r.ok()) return r.status();
  return r->removed();
}

Result<std::vector<OffloadTask>> MasterClient::OffloadFetch(const CallContext& ctx, uint32_t max) {
  pb::OffloadFetchRequest q;
  SetContext(ctx, q);
  q.set_max(max);
  auto r = Call<M::kOffloadFetch>(q);
  if (!r.ok()) return r.status();
  return FromPbList(r->tasks());
}

std::vector<Status> MasterClient::OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) {
  pb::OffloadDoneRequest q;
  SetContext(ctx, q);
  for (const auto& res : results) ToPb(res, q.add_results());
  return Statuses(Call<M::kOffloadDone>(q), results.size());
}

Result<uint64_t> MasterClient::DrainSegment(const CallContext& ctx, SegmentId id) {
  pb::DrainSegmentRequest q;
  SetContext(ctx, q);
  q.set_segment_id(id);
  auto r = Call<M::kDrainSegment>(q);
  if (!r.ok()) return r.status();
  return r->remaining();
}

Status MasterClient::UndrainSegment(const CallContext& ctx, SegmentId id) {
  pb::DrainSegmentRequest q;
  SetContext(ctx, q);
  q.set_segment_id(id);
  auto r = Call<M::kUndrainSegment>(q);
  return r.ok() ? Status::OK() : r.status();
}

Result<std::vector<RepairTask>> MasterClient::RepairFetch(const CallContext& ctx, uint32_t max) {
  pb::RepairFetchRequest q;
  SetContext(ctx, q);
  q.set_max(max);
  auto r = Call<M::kRepairFetch>(q);
  if (!r.ok()) return r.status();
  return FromPbList(r->tasks());
}

std::vector<Status> MasterClient::RepairDone(const CallContext& ctx, const std::vector<RepairResult>& results) {
  pb::RepairDoneRequest q;
  SetContext(ctx, q);
  for (const auto& res : results) ToPb(res, q.add_results());
  return Statuses(Call<M::kRepairDone>(q), results.size());
}

Result<MasterApi::Keys> MasterClient::BatchReplicaClear(const CallContext& ctx, const Keys& keys,
                                                        const std::string& segment_name) {
  pb::ReplicaClearRequest q;
  SetContext(ctx, q);
  for (const auto& k : keys) q.add_keys(k);
  q.set_segment_name(segment_name);
  auto r = Call<M::kBatchReplicaClear>(q);
  if (!r.ok()) return r.status();
  return Keys(r->cleared().begin(), r->cleared().end());
}

Result<TaskId> MasterClient::CreateTask(const CallContext& ctx, const TaskSpec& spec) {
  pb::CreateTaskRequest q;
  SetContext(ctx, q);
  ToPb(spec.id, q.mutable_id());
  q.set_type(static_cast<uint32_t>(spec.type));
  q.set_key(spec.key);
  q.set_source(spec.source);
  for (const auto& t : spec.targets) q.add_targets(t);
  auto r = Call<M::kCreateTask>(q);
  if (!r.ok()) return r.status();
  return FromPb(r->id());
}

Result<TaskInfo> MasterClient::QueryTask(const CallContext& ctx, const TaskId& id) {
  pb::QueryTaskRequest q;
  SetContext(ctx, q);
  ToPb(id, q.mutable_id());
  auto r = Call<M::kQueryTask>(q);
  if (!r.ok()) return r.status();
  if (r->type() > static_cast<uint32_t>(TaskType::kMove) || r->state() > static_cast<uint32_t>(TaskStatus::kFailed)) {
    return Status(Code::kInternal, "the master answered an unknown task type or state");
  }
  return TaskInfo{FromPb(r->id()),
                  static_cast<TaskType>(r->type()),
                  static_cast<TaskStatus>(r->state()),
                  r->created_ms(),
                  r->updated_ms(),
                  ClientId{r->assigned_hi(), r->assigned_lo()},
                  r->message()};
}

std::vector<Status> MasterClient::AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                                  const std::vector<DiskObject>& objects) {
  pb::AddDiskReplicasRequest q;
  SetContext(ctx, q);
  q.set_segment_id(segment);
  for (const auto& o : objects) {
    auto* p = q.add_objects();
    p->set_disk_key(o.disk_key);
    p->set_size(o.size);
    p->set_checksum(o.checksum);
  }
  return Statuses(Call<M::kAddDiskReplicas>(q), objects.size());
}

std::vector<Status> MasterClient::DropDiskReplicas(const CallContext& ctx, const Keys& disk_keys) {
  pb::DropDiskReplicasRequest q;
  SetContext(ctx, q);
  for (const auto& k : disk_keys) q.add_disk_keys(k);
  return Statuses(Call<M::kDropDiskReplicas>(q), disk_keys.size());
}

}  // namespace yb::rpc
