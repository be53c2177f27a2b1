// The server half of the master's RPC: one Serve<M> per row of YB_MASTER_METHODS, each decoding
// its request, calling the MasterApi and encoding the answer.
#include "rpc/master_server.h"

#include <fmt/format.h>

#include "common/clock.h"
#include "rpc/master_convert.h"

namespace yb::rpc {
namespace {

using M = MasterMethod;
template <M m>
using Req = typename MethodTraits<m>::Request;
template <M m>
using Resp = typename MethodTraits<m>::Response;

// A request field of strings as the MasterApi takes keys.
MasterApi::Keys KeysOf(const google::protobuf::RepeatedPtrField<std::string>& f) { return {f.begin(), f.end()}; }

void PutStatuses(const std::vector<Status>& sts, pb::StatusesResponse& r) {
  for (const auto& s : sts) ToPb(s, r.add_results());
}

// Whether a reply reports a failure: of the call, or of any of its keys.
template <typename R>
bool Failed(const R& r) {
  if (r.status().code() != 0) return true;
  if constexpr (requires { r.results(); }) {
    for (const auto& k : r.results()) {
      if constexpr (std::is_same_v<std::decay_t<decltype(k)>, pb::Status>) {
        if (k.code() != 0) return true;
      } else if (k.status().code() != 0) {
        return true;
      }
    }
  }
  return false;
}

// One specialization per method; a row of the table without one does not compile.
template <M m>
void Serve(MasterApi& api, const CallContext& ctx, const Req<m>& q, Resp<m>& r) = delete;

template <>
void Serve<M::kRegisterClient>(MasterApi& api, const CallContext& ctx, const pb::RegisterClientRequest& q,
                               pb::RegisterClientResponse& r) {
  auto registered = api.RegisterClient(
      {ctx.client, q.hostname(), q.tenant().empty() ? "default" : q.tenant(), q.ssd_tier(), ctx.token});
  ToPb(registered.status(), r.mutable_status());
  if (!registered.ok()) return;
  r.set_tenant_index(registered->tenant);
  r.set_token(reinterpret_cast<const char*>(registered->token.data()), registered->token.size());
}

// Whether a caller may make this call: one that proved only a tenant's secret registers as that
// tenant; every call but registration and the segment list carries the context its client was
// registered with.
// The largest repeated field of a request: what a batch bound applies to.
template <typename Q>
size_t BatchSize(const Q& q) {
  size_t n = 0;
  if constexpr (requires { q.keys_size(); }) n = std::max(n, static_cast<size_t>(q.keys_size()));
  if constexpr (requires { q.segments_size(); }) n = std::max(n, static_cast<size_t>(q.segments_size()));
  if constexpr (requires { q.results_size(); }) n = std::max(n, static_cast<size_t>(q.results_size()));
  if constexpr (requires { q.objects_size(); }) n = std::max(n, static_cast<size_t>(q.objects_size()));
  if constexpr (requires { q.disk_keys_size(); }) n = std::max(n, static_cast<size_t>(q.disk_keys_size()));
  if constexpr (requires { q.pins_size(); }) n = std::max(n, static_cast<size_t>(q.pins_size()));
  if constexpr (requires { q.start_keys_size(); }) n = std::max(n, static_cast<size_t>(q.start_keys_size()));
  if constexpr (requires { q.revoke_size(); }) n = std::max(n, static_cast<size_t>(q.revoke_size()));
  return n;
}

// A storage node's own calls: memory it contributes, and the copies it makes and reports.
constexpr bool NodeCall(M m) {
  return m == M::kMountSegments || m == M::kUnmountSegment || m == M::kOffloadFetch || m == M::kOffloadDone ||
         m == M::kAddDiskReplicas || m == M::kDropDiskReplicas || m == M::kRepairFetch || m == M::kRepairDone;
}

// Whether what the connection proved lets it make call `m` (docs/security.md, "Roles"): a master
// (the cluster secret) and a node anything here; an operator's key and a tenant's secret no node
// call (they contribute no memory). Where the server asks for no proof, anyone (protected mode
// keeps that to this host).
template <M m>
Status RoleMay(const net::Peer& peer, bool tenants_may_mount) {
  if (!peer.authenticated || peer.role == net::Role::kCluster || peer.role == net::Role::kNode) return Status::OK();
  if constexpr (NodeCall(m)) {
    if (peer.role == net::Role::kTenant && tenants_may_mount) return Status::OK();  // into its own segments
    return Status(Code::kIllegalClient,
                  fmt::format("{} is a storage node's call: this connection proved {}, which contributes no memory "
                              "(a node proves the cluster's secret or its node key: `yb role-key --role node`; a "
                              "tenant's client mounts memory only with yb-master --tenants_may_mount)",
                              MasterMethodName(static_cast<uint16_t>(m)),
                              peer.role == net::Role::kTenant ? "tenant '" + peer.tenant + "''s secret"
                                                              : std::string("the operator's key")));
  }
  return Status::OK();
}

// Calls that change what the master records (metadata log): refused while it cannot record them.
// A mount is judged by the master (a remount that changes nothing recorded is taken).
constexpr bool ChangeCall(M m) {
  return !(m == M::kRegisterClient || m == M::kPing || m == M::kListSegments || m == M::kGetReplicaList ||
           m == M::kReadEnd || m == M::kExistKey || m == M::kMountSegments || m == M::kQueryTask ||
           m == M::kWhyMissing);
}

template <M m>
Status Admit(MasterApi& api, const net::Peer& peer, const CallContext& ctx, const Req<m>& q, uint32_t max_batch,
             bool tenants_may_mount) {
  if (const size_t n = BatchSize(q); n > max_batch) {
    return Status(Code::kInvalidParams, "a batch of " + std::to_string(n) + " exceeds the master's bound of " +
                                            std::to_string(max_batch) + " (--max_batch_keys)");
  }
  YB_RETURN_IF_ERROR(RoleMay<m>(peer, tenants_may_mount));
  if constexpr (m == M::kRegisterClient) {
    const std::string& tenant = q.tenant().empty() ? std::string("default") : q.tenant();
    if (!peer.MayActFor(tenant)) {
      return Status(Code::kIllegalClient,
                    "this connection proved tenant '" + peer.tenant + "''s secret, not tenant '" + tenant + "''s");
    }
    return Status::OK();
  } else if constexpr (m == M::kListSegments) {
    return Status::OK();
  } else {
    YB_RETURN_IF_ERROR(api.VerifyCaller(ctx));
    if constexpr (ChangeCall(m)) YB_RETURN_IF_ERROR(api.Writable());
    return Status::OK();
  }
}

template <>
void Serve<M::kPing>(MasterApi& api, const CallContext& ctx, const pb::PingRequest& q, pb::PingResponse& r) {
  PingState state{q.mounted_segments(), q.pins_stated(), {}, {}};
  state.pins.reserve(static_cast<size_t>(q.pins_size()));
  for (const auto& h : q.pins()) state.pins.push_back(HeldPin{h.key(), h.read_pin()});
  const size_t reported = std::min(static_cast<size_t>(q.unreachable_size()), kMaxReportedUnreachable);
  state.unreachable.assign(q.unreachable().begin(), q.unreachable().begin() + static_cast<int>(reported));
  auto p = api.Ping(ctx, state);
  ToPb(p.status(), r.mutable_status());
  if (p.ok()) {
    r.set_need_remount(p->need_remount);
    r.set_repairs(p->repairs);
  }
}

template <>
void Serve<M::kUnregisterClient>(MasterApi& api, const CallContext& ctx, const pb::UnregisterClientRequest& q,
                                 pb::StatusResponse& r) {
  ToPb(api.UnregisterClient(ctx), r.mutable_status());
}

template <>
void Serve<M::kMountSegments>(MasterApi& api, const CallContext& ctx, const pb::MountSegmentsRequest& q,
                              pb::StatusResponse& r) {
  ToPb(api.MountSegments(ctx, FromPbList(q.segments())), r.mutable_status());
}

template <>
void Serve<M::kUnmountSegment>(MasterApi& api, const CallContext& ctx, const pb::UnmountSegmentRequest& q,
                               pb::StatusResponse& r) {
  ToPb(api.UnmountSegment(ctx, q.segment_id()), r.mutable_status());
}

template <>
void Serve<M::kListSegments>(MasterApi& api, const CallContext&, const pb::ListSegmentsRequest&,
                             pb::ListSegmentsResponse& r) {
  auto list = api.ListSegments();
  ToPb(list.status(), r.mutable_status());
  if (!list.ok()) return;
  for (const auto& u : *list) ToPb(u, r.add_segments());
}

template <typename Q>
std::vector<std::optional<uint64_t>> ChecksumsOf(const Q& q) {
  std::vector<std::optional<uint64_t>> sums;
  sums.reserve(q.checksums_size());
  for (int i = 0; i < q.checksums_size(); ++i) {
    sums.push_back(i < q.has_checksum_size() && q.has_checksum(i) ? std::optional(q.checksums(i)) : std::nullopt);
  }
  return sums;
}

void StartToPb(const Result<std::vector<GrantedReplica>>& start, pb::ReplicaList* k) {
  ToPb(start.status(), k->mutable_status());
  if (!start.ok()) return;
  for (const auto& rep : *start) ToPb(rep, k->add_replicas());
}

template <>
void Serve<M::kPutStart>(MasterApi& api, const CallContext& ctx, const pb::PutStartRequest& q,
                         pb::PutStartResponse& r) {
  auto starts = api.BatchPutStart(ctx, KeysOf(q.keys()), {q.sizes().begin(), q.sizes().end()}, FromPb(q.config()),
                                  q.upsert() ? WriteMode::kUpsert : WriteMode::kPut);
  for (const auto& s : starts) StartToPb(s, r.add_results());
}

template <>
void Serve<M::kPutEnd>(MasterApi& api, const CallContext& ctx, const pb::PutEndRequest& q, pb::StatusesResponse& r) {
  PutStatuses(api.BatchPutEnd(ctx, KeysOf(q.keys()), ChecksumsOf(q)), r);
}

template <>
void Serve<M::kPutCommit>(MasterApi& api, const CallContext& ctx, const pb::PutCommitRequest& q,
                          pb::PutCommitResponse& r) {
  auto answer =
      api.BatchPutCommit(ctx, KeysOf(q.keys()), KeysOf(q.reservations()), ChecksumsOf(q), KeysOf(q.revoke()),
                         KeysOf(q.start_keys()), {q.start_sizes().begin(), q.start_sizes().end()}, FromPb(q.config()));
  for (const Status& st : answer.ends) ToPb(st, r.add_results());
  for (const auto& s : answer.started) StartToPb(s, r.add_started());
}

template <>
void Serve<M::kPutRevoke>(MasterApi& api, const CallContext& ctx, const pb::KeysRequest& q, pb::StatusesResponse& r) {
  PutStatuses(api.BatchPutRevoke(ctx, KeysOf(q.keys())), r);
}

template <>
void Serve<M::kGetReplicaList>(MasterApi& api, const CallContext& ctx, const pb::GetReplicaListRequest& q,
                               pb::GetReplicaListResponse& r) {
  for (const auto& info : api.BatchGetReplicaList(ctx, KeysOf(q.keys()), q.pin())) {
    ToPb(info, r.add_results());
  }
}

template <>
void Serve<M::kReadEnd>(MasterApi& api, const CallContext& ctx, const pb::ReadEndRequest& q, pb::StatusesResponse& r) {
  PutStatuses(api.BatchReadEnd(ctx, KeysOf(q.keys()), {q.read_pins().begin(), q.read_pins().end()}), r);
}

template <>
void Serve<M::kExistKey>(MasterApi& api, const CallContext& ctx, const pb::KeysRequest& q, pb::ExistKeyResponse& r) {
  for (const auto& e : api.BatchExistKey(ctx, KeysOf(q.keys()))) {
    ToPb(e.status(), r.add_results());
    r.add_exists(e.ok() && *e);
  }
}

template <>
void Serve<M::kWhyMissing>(MasterApi& api, const CallContext& ctx, const pb::KeysRequest& q,
                           pb::WhyMissingResponse& r) {
  for (const auto& e : api.BatchWhyMissing(ctx, KeysOf(q.keys()))) {
    ToPb(e.status(), r.add_results());
    r.add_reasons(e.ok() ? static_cast<uint32_t>(e->reason) : 0);
    r.add_ages_ms(e.ok() ? e->age_ms : -1);
  }
}

template <>
void Serve<M::kRemove>(MasterApi& api, const CallContext& ctx, const pb::RemoveRequest& q, pb::StatusesResponse& r) {
  PutStatuses(api.BatchRemove(ctx, KeysOf(q.keys()), q.force()), r);
}

template <>
void Serve<M::kRemoveWhere>(MasterApi& api, const CallContext& ctx, const pb::RemoveWhereRequest& q,
                            pb::RemoveWhereResponse& r) {
  auto n = api.RemoveWhere(ctx, q.has_pattern() ? std::optional(q.pattern()) : std::nullopt, q.force());
  ToPb(n.status(), r.mutable_status());
  if (n.ok()) r.set_removed(*n);
}

template <>
void Serve<M::kOffloadFetch>(MasterApi& api, const CallContext& ctx, const pb::OffloadFetchRequest& q,
                             pb::OffloadFetchResponse& r) {
  auto tasks = api.OffloadFetch(ctx, q.max());
  ToPb(tasks.status(), r.mutable_status());
  if (!tasks.ok()) return;
  for (const auto& t : *tasks) ToPb(t, r.add_tasks());
}

template <>
void Serve<M::kOffloadDone>(MasterApi& api, const CallContext& ctx, const pb::OffloadDoneRequest& q,
                            pb::StatusesResponse& r) {
  PutStatuses(api.OffloadDone(ctx, FromPbList(q.results())), r);
}

template <>
void Serve<M::kDrainSegment>(MasterApi& api, const CallContext& ctx, const pb::DrainSegmentRequest& q,
                             pb::DrainSegmentResponse& r) {
  auto n = api.DrainSegment(ctx, q.segment_id());
  ToPb(n.status(), r.mutable_status());
  if (n.ok()) r.set_remaining(*n);
}

template <>
void Serve<M::kUndrainSegment>(MasterApi& api, const CallContext& ctx, const pb::DrainSegmentRequest& q,
                               pb::StatusResponse& r) {
  ToPb(api.UndrainSegment(ctx, q.segment_id()), r.mutable_status());
}

template <>
void Serve<M::kRepairFetch>(MasterApi& api, const CallContext& ctx, const pb::RepairFetchRequest& q,
                            pb::RepairFetchResponse& r) {
  auto tasks = api.RepairFetch(ctx, q.max());
  ToPb(tasks.status(), r.mutable_status());
  if (!tasks.ok()) return;
  for (const auto& t : *tasks) ToPb(t, r.add_tasks());
}

template <>
void Serve<M::kRepairDone>(MasterApi& api, const CallContext& ctx, const pb::RepairDoneRequest& q,
                           pb::StatusesResponse& r) {
  PutStatuses(api.RepairDone(ctx, FromPbList(q.results())), r);
}

template <>
void Serve<M::kBatchReplicaClear>(MasterApi& api, const CallContext& ctx, const pb::ReplicaClearRequest& q,
                                  pb::ReplicaClearResponse& r) {
  auto cleared = api.BatchReplicaClear(ctx, KeysOf(q.keys()), q.segment_name());
  ToPb(cleared.status(), r.mutable_status());
  if (!cleared.ok()) return;
  for (const auto& k : *cleared) r.add_cleared(k);
}

template <>
void Serve<M::kCreateTask>(MasterApi& api, const CallContext& ctx, const pb::CreateTaskRequest& q,
                           pb::CreateTaskResponse& r) {
  if (q.type() > static_cast<uint32_t>(TaskType::kMove)) {
    ToPb(Status(Code::kInvalidParams, "unknown task type " + std::to_string(q.type())), r.mutable_status());
    return;
  }
  TaskSpec spec{FromPb(q.id()), static_cast<TaskType>(q.type()), q.key(), q.source(), KeysOf(q.targets())};
  auto id = api.CreateTask(ctx, spec);
  ToPb(id.status(), r.mutable_status());
  if (id.ok()) ToPb(*id, r.mutable_id());
}

template <>
void Serve<M::kQueryTask>(MasterApi& api, const CallContext& ctx, const pb::QueryTaskRequest& q,
                          pb::QueryTaskResponse& r) {
  auto t = api.QueryTask(ctx, FromPb(q.id()));
  ToPb(t.status(), r.mutable_status());
  if (!t.ok()) return;
  ToPb(t->id, r.mutable_id());
  r.set_type(static_cast<uint32_t>(t->type));
  r.set_state(static_cast<uint32_t>(t->status));
  r.set_created_ms(t->created_ms);
  r.set_updated_ms(t->updated_ms);
  r.set_assigned_hi(t->assigned_client.hi);
  r.set_assigned_lo(t->assigned_client.lo);
  r.set_message(t->message);
}

template <>
void Serve<M::kAddDiskReplicas>(MasterApi& api, const CallContext& ctx, const pb::AddDiskReplicasRequest& q,
                                pb::StatusesResponse& r) {
  std::vector<DiskObject> objects;
  objects.reserve(q.objects_size());
  for (const auto& o : q.objects()) objects.push_back({o.disk_key(), o.size(), o.checksum()});
  PutStatuses(api.AddDiskReplicas(ctx, q.segment_id(), objects), r);
}

template <>
void Serve<M::kDropDiskReplicas>(MasterApi& api, const CallContext& ctx, const pb::DropDiskReplicasRequest& q,
                                 pb::StatusesResponse& r) {
  PutStatuses(api.DropDiskReplicas(ctx, KeysOf(q.disk_keys())), r);
}

// Registers method `m`: parse, check the caller, Serve<m>, count, serialize.
template <M m>
void Add(RpcServer& server, MasterApi& api, const MasterServiceOptions& o) {
  constexpr auto id = static_cast<uint16_t>(m);
  server.Register(
      id, [&api, metrics = o.metrics, epoch = o.epoch, data_key = o.data_key, max_batch = o.max_batch,
           tenants_may_mount = o.tenants_may_mount](
              const net::Peer& peer, std::string_view body, std::string& reply) -> Status {
        // One request and one response message per method and server thread, cleared and refilled on
        // each call: their strings and repeated fields keep their memory, so a call allocates little.
        thread_local Req<m> req;
        thread_local Resp<m> resp;
        const int64_t started = MonotonicMicros();
        auto took = [started] { return MicrosSince(started); };
        if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
          if (metrics) metrics->Record(id, true, took());
          return Status(Code::kInvalidParams, "request does not parse");
        }
        resp.Clear();
        CallContext ctx;
        if constexpr (requires { req.ctx(); }) ctx = FromPb(req.ctx());
        ctx.privileged = peer.privileged();
        ctx.any_tenant = peer.any_tenant();
        ctx.peer_address = peer.address;
        if (Status who = Admit<m>(api, peer, ctx, req, max_batch, tenants_may_mount); !who.ok()) {
          if (metrics) metrics->Record(id, true, took());
          return who;
        }
        Serve<m>(api, ctx, req, resp);
        if constexpr (m == M::kRegisterClient) {
          if (peer.authenticated && resp.status().code() == 0) resp.set_data_key(data_key);
        }
        if (epoch) resp.set_epoch(epoch());
        if (metrics) metrics->Record(id, Failed(resp), took());
        resp.AppendToString(&reply);
        if (body.size() + static_cast<size_t>(resp.GetCachedSize()) > (256u << 10)) {  // a big batch: drop its memory
          Req<m>().Swap(&req);
          Resp<m>().Swap(&resp);
        }
        return Status::OK();
      });
}

}  // namespace

void RegisterMasterService(RpcServer& server, MasterApi& api, MasterServiceOptions options) {
#define YB_REGISTER(id, name, req, resp) Add<M::k##name>(server, api, options);
  YB_MASTER_METHODS(YB_REGISTER)
#undef YB_REGISTER
}

}  // namespace yb::rpc
