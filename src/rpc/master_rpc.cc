#include "rpc/master_rpc.h"

#include "master.pb.h"

namespace yb::rpc {
namespace {

using M = MasterMethod;

CallContext FromPb(const pb::Context& c) {
  return CallContext{ClientId{c.client_hi(), c.client_lo()}, static_cast<TenantIndex>(c.tenant())};
}
void ToPb(const CallContext& c, pb::Context* out) {
  out->set_client_hi(c.client.hi);
  out->set_client_lo(c.client.lo);
  out->set_tenant(c.tenant);
}
ReplicateConfig FromPb(const pb::ReplicateConfig& c) {
  ReplicateConfig r;
  r.replica_num = c.replica_num();
  r.with_soft_pin = c.with_soft_pin();
  r.with_hard_pin = c.with_hard_pin();
  r.preferred_segments.assign(c.preferred_segments().begin(), c.preferred_segments().end());
  r.avoid_segments.assign(c.avoid_segments().begin(), c.avoid_segments().end());
  return r;
}
void ToPb(const ReplicateConfig& c, pb::ReplicateConfig* out) {
  out->set_replica_num(static_cast<uint32_t>(c.replica_num));
  out->set_with_soft_pin(c.with_soft_pin);
  out->set_with_hard_pin(c.with_hard_pin);
  for (const auto& s : c.preferred_segments) out->add_preferred_segments(s);
  for (SegmentId s : c.avoid_segments) out->add_avoid_segments(s);
}
SegmentDesc FromPb(const pb::Segment& s) { return SegmentDesc{s.id(), s.name(), s.base(), s.size(), s.endpoint()}; }
void ToPb(const SegmentDesc& s, pb::Segment* out) {
  out->set_id(s.id);
  out->set_name(s.name);
  out->set_base(s.base);
  out->set_size(s.size);
  out->set_endpoint(s.endpoint);
}
ReplicaDesc FromPb(const pb::Replica& r) {
  return ReplicaDesc{static_cast<ReplicaKind>(r.kind()), static_cast<ReplicaStatus>(r.status()), r.segment(),
                     r.offset(), r.size()};
}
void ToPb(const std::vector<ReplicaDesc>& rs, pb::KeyResult* out) {
  for (const auto& r : rs) {
    auto* p = out->add_replicas();
    p->set_kind(static_cast<uint32_t>(r.kind));
    p->set_status(static_cast<uint32_t>(r.status));
    p->set_segment(r.segment);
    p->set_offset(r.offset);
    p->set_size(r.size);
  }
}
Status FromPb(const pb::Status& s) {
  if (s.code() == 0) return Status::OK();
  Code c = s.code() < static_cast<uint32_t>(kNumCodes) ? static_cast<Code>(s.code()) : Code::kInternal;
  return Status(c, s.message());
}
void ToPb(const Status& s, pb::Status* out) {
  out->set_code(static_cast<uint32_t>(s.code()));
  if (!s.ok()) out->set_message(s.message());
}
std::vector<ReplicaDesc> Replicas(const pb::KeyResult& k) {
  std::vector<ReplicaDesc> out;
  for (const auto& r : k.replicas()) out.push_back(FromPb(r));
  return out;
}

using Fn = std::function<void(const pb::MasterRequest&, pb::MasterResponse&)>;

bool Failed(const pb::MasterResponse& r) {
  if (r.status().code() != 0) return true;
  for (const auto& k : r.results()) {
    if (k.status().code() != 0) return true;
  }
  return false;
}

void Add(RpcServer& server, RpcMetrics* metrics, M method, Fn fn) {
  auto m = static_cast<uint16_t>(method);
  server.Register(m, [fn = std::move(fn), metrics, m](std::string_view body, std::string& reply) -> Status {
    // One request and one response message per server thread, cleared and refilled on each call:
    // their strings and repeated fields keep their memory, so a call allocates little.
    thread_local pb::MasterRequest req;
    thread_local pb::MasterResponse resp;
    if (!req.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      if (metrics) metrics->Record(m, true);
      return Status(Code::kInvalidParams, "request does not parse");
    }
    resp.Clear();
    fn(req, resp);
    if (metrics) metrics->Record(m, Failed(resp));
    resp.AppendToString(&reply);
    if (body.size() + static_cast<size_t>(resp.GetCachedSize()) > (256u << 10)) {  // a big batch: drop its memory
      pb::MasterRequest().Swap(&req);
      pb::MasterResponse().Swap(&resp);
    }
    return Status::OK();
  });
}

std::vector<std::string> Keys(const pb::MasterRequest& r) { return {r.keys().begin(), r.keys().end()}; }

// Answers each key of the request into its own KeyResult with `put`. A lone key (a single-key
// call) goes to the single-key method: no copy of the key and no vector of results.
template <typename One, typename Batch, typename Put>
void PerKey(const pb::MasterRequest& q, pb::MasterResponse& r, One&& one, Batch&& batch, Put&& put) {
  if (q.keys_size() == 1) {
    put(one(q.keys(0)), r.add_results());
    return;
  }
  for (const auto& res : batch(Keys(q))) put(res, r.add_results());
}

void PutStatuses(const std::vector<Status>& sts, pb::MasterResponse& resp) {
  for (const auto& s : sts) ToPb(s, resp.add_results()->mutable_status());
}
void PutReplicaLists(const std::vector<Result<std::vector<ReplicaDesc>>>& rs, pb::MasterResponse& resp) {
  for (const auto& r : rs) {
    auto* k = resp.add_results();
    ToPb(r.status(), k->mutable_status());
    if (r.ok()) ToPb(*r, k);
  }
}

}  // namespace

const char* MasterMethodName(uint16_t method) {
  switch (static_cast<M>(method)) {
    case M::kRegisterClient:
      return "RegisterClient";
    case M::kPing:
      return "Ping";
    case M::kMountSegment:
      return "MountSegment";
    case M::kReMountSegment:
      return "ReMountSegment";
    case M::kUnmountSegment:
      return "UnmountSegment";
    case M::kListSegments:
      return "ListSegments";
    case M::kUnregisterClient:
      return "UnregisterClient";
    case M::kPutStart:
      return "PutStart";
    case M::kUpsertStart:
      return "UpsertStart";
    case M::kPutEnd:
      return "PutEnd";
    case M::kPutRevoke:
      return "PutRevoke";
    case M::kGetReplicaList:
      return "GetReplicaList";
    case M::kReadEnd:
      return "ReadEnd";
    case M::kExistKey:
      return "ExistKey";
    case M::kRemove:
      return "Remove";
    case M::kRemoveByRegex:
      return "RemoveByRegex";
    case M::kRemoveAll:
      return "RemoveAll";
    case M::kOffloadFetch:
      return "OffloadFetch";
    case M::kOffloadDone:
      return "OffloadDone";
    case M::kAddDiskReplicas:
      return "AddDiskReplicas";
    case M::kDropDiskReplicas:
      return "DropDiskReplicas";
  }
  return "";
}

void RegisterMasterService(RpcServer& server, MasterApi& m, RpcMetrics* metrics) {
  Add(server, metrics, M::kRegisterClient, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    auto t =
        m.RegisterClient({FromPb(q.ctx()).client, q.text(), q.tenant().empty() ? "default" : q.tenant(), q.ssd_tier()});
    ToPb(t.status(), r.mutable_status());
    if (t.ok()) r.set_count(*t);
  });
  Add(server, metrics, M::kPing, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    auto p = m.Ping(FromPb(q.ctx()));
    ToPb(p.status(), r.mutable_status());
    if (p.ok()) r.set_need_remount(p->need_remount);
  });
  Add(server, metrics, M::kUnregisterClient, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    ToPb(m.UnregisterClient(FromPb(q.ctx())), r.mutable_status());
  });
  Add(server, metrics, M::kMountSegment, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    Status st = q.segments_size() == 1 ? m.MountSegment(FromPb(q.ctx()), FromPb(q.segments(0)))
                                       : Status(Code::kInvalidParams, "mount takes one segment");
    ToPb(st, r.mutable_status());
  });
  Add(server, metrics, M::kReMountSegment, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    std::vector<SegmentDesc> segs;
    for (const auto& s : q.segments()) segs.push_back(FromPb(s));
    ToPb(m.ReMountSegment(FromPb(q.ctx()), segs), r.mutable_status());
  });
  Add(server, metrics, M::kUnmountSegment, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    ToPb(m.UnmountSegment(FromPb(q.ctx()), q.segment_id()), r.mutable_status());
  });
  Add(server, metrics, M::kListSegments, [&m](const pb::MasterRequest&, pb::MasterResponse& r) {
    auto list = m.ListSegments();
    ToPb(list.status(), r.mutable_status());
    if (!list.ok()) return;
    for (const auto& u : *list) {
      auto* p = r.add_segments();
      ToPb(u.desc, p->mutable_desc());
      p->set_owner_hi(u.owner.hi);
      p->set_owner_lo(u.owner.lo);
      p->set_capacity(u.capacity);
      p->set_allocated(u.allocated);
      p->set_allocations(u.allocations);
      p->set_free_regions(u.free_regions);
      p->set_largest_free_region(u.largest_free_region);
      p->set_fragmentation(u.fragmentation);
    }
  });
  Add(server, metrics, M::kPutStart, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    PutReplicaLists(m.BatchPutStart(FromPb(q.ctx()), Keys(q), {q.sizes().begin(), q.sizes().end()}, FromPb(q.config())),
                    r);
  });
  Add(server, metrics, M::kUpsertStart, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    CallContext ctx = FromPb(q.ctx());
    ReplicateConfig cfg = FromPb(q.config());
    std::vector<Result<std::vector<ReplicaDesc>>> out;
    for (int i = 0; i < q.keys_size(); ++i) {
      out.push_back(i < q.sizes_size() ? m.UpsertStart(ctx, q.keys(i), q.sizes(i), cfg)
                                       : Result<std::vector<ReplicaDesc>>(Code::kInvalidParams, "missing size"));
    }
    PutReplicaLists(out, r);
  });
  Add(server, metrics, M::kPutEnd, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    std::vector<std::optional<uint64_t>> sums;
    for (int i = 0; i < q.values_size(); ++i) {
      sums.push_back(i < q.has_values_size() && q.has_values(i) ? std::optional(q.values(i)) : std::nullopt);
    }
    PutStatuses(m.BatchPutEnd(FromPb(q.ctx()), Keys(q), sums), r);
  });
  Add(server, metrics, M::kPutRevoke, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    PutStatuses(m.BatchPutRevoke(FromPb(q.ctx()), Keys(q)), r);
  });
  Add(server, metrics, M::kGetReplicaList, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    const CallContext ctx = FromPb(q.ctx());
    PerKey(
        q, r, [&](const std::string& key) { return m.GetReplicaList(ctx, key, q.flag()); },
        [&](const std::vector<std::string>& keys) { return m.BatchGetReplicaList(ctx, keys, q.flag()); },
        [](const Result<ObjectInfo>& info, pb::KeyResult* k) {
          ToPb(info.status(), k->mutable_status());
          if (!info.ok()) return;
          ToPb(info->replicas, k);
          k->set_size(info->size);
          k->set_has_checksum(info->checksum.has_value());
          k->set_checksum(info->checksum.value_or(0));
          k->set_read_pin(info->read_pin);
        });
  });
  Add(server, metrics, M::kReadEnd, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    PutStatuses(m.BatchReadEnd(FromPb(q.ctx()), Keys(q), {q.values().begin(), q.values().end()}), r);
  });
  Add(server, metrics, M::kExistKey, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    const CallContext ctx = FromPb(q.ctx());
    PerKey(
        q, r, [&](const std::string& key) { return m.ExistKey(ctx, key); },
        [&](const std::vector<std::string>& keys) { return m.BatchExistKey(ctx, keys); },
        [](const Result<bool>& e, pb::KeyResult* k) {
          ToPb(e.status(), k->mutable_status());
          k->set_exists(e.ok() && *e);
        });
  });
  Add(server, metrics, M::kRemove, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    PutStatuses(m.BatchRemove(FromPb(q.ctx()), Keys(q), q.flag()), r);
  });
  Add(server, metrics, M::kRemoveByRegex, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    auto n = m.RemoveByRegex(FromPb(q.ctx()), q.text(), q.flag());
    ToPb(n.status(), r.mutable_status());
    if (n.ok()) r.set_count(*n);
  });
  Add(server, metrics, M::kRemoveAll, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    auto n = m.RemoveAll(FromPb(q.ctx()), q.flag());
    ToPb(n.status(), r.mutable_status());
    if (n.ok()) r.set_count(*n);
  });
  Add(server, metrics, M::kOffloadFetch, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    auto tasks = m.OffloadFetch(FromPb(q.ctx()), q.max());
    ToPb(tasks.status(), r.mutable_status());
    if (!tasks.ok()) return;
    for (const auto& t : *tasks) {
      auto* k = r.add_results();
      k->set_key(t.disk_key);
      k->set_read_pin(t.object_id);
      if (t.drop) {
        k->set_drop(true);
        continue;
      }
      ToPb({ReplicaDesc{ReplicaKind::kMemory, ReplicaStatus::kComplete, t.segment, t.offset, t.size}}, k);
      k->set_size(t.size);
      k->set_has_checksum(t.checksum.has_value());
      k->set_checksum(t.checksum.value_or(0));
    }
  });
  Add(server, metrics, M::kOffloadDone, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    if (q.values_size() != q.keys_size() || q.statuses_size() != q.keys_size()) {
      ToPb(Status(Code::kInvalidParams, "OffloadDone needs an object id and a status per key"), r.mutable_status());
      return;
    }
    std::vector<OffloadResult> results;
    const bool sums = q.checksums_size() == q.keys_size();
    for (int i = 0; i < q.keys_size(); ++i) {
      results.push_back({q.keys(i), q.values(i), FromPb(q.statuses(i)), std::nullopt});
      if (sums && results.back().status.ok()) results.back().checksum = q.checksums(i);
    }
    PutStatuses(m.OffloadDone(FromPb(q.ctx()), results), r);
  });
  Add(server, metrics, M::kAddDiskReplicas, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    if (q.sizes_size() != q.keys_size() || q.values_size() != q.keys_size()) {
      ToPb(Status(Code::kInvalidParams, "AddDiskReplicas needs a size and a checksum per key"), r.mutable_status());
      return;
    }
    std::vector<DiskObject> objects;
    for (int i = 0; i < q.keys_size(); ++i) objects.push_back({q.keys(i), q.sizes(i), q.values(i)});
    PutStatuses(m.AddDiskReplicas(FromPb(q.ctx()), q.segment_id(), objects), r);
  });
  Add(server, metrics, M::kDropDiskReplicas, [&m](const pb::MasterRequest& q, pb::MasterResponse& r) {
    PutStatuses(m.DropDiskReplicas(FromPb(q.ctx()), Keys(q)), r);
  });
}

// ---- client side ----

namespace {

// One round trip: the response, or the call's failure.
Result<pb::MasterResponse> Invoke(RpcChannel& ch, M method, const pb::MasterRequest& req,
                                  std::chrono::milliseconds timeout) {
  auto reply = ch.Call(static_cast<uint16_t>(method), req.SerializeAsString(), timeout);
  if (!reply.ok()) return reply.status();
  pb::MasterResponse resp;
  if (!resp.ParseFromString(*reply)) return Status(Code::kRpcFail, "reply from " + ch.target() + " does not parse");
  return resp;
}

pb::MasterRequest Request(const CallContext& ctx, const std::vector<std::string>& keys) {
  pb::MasterRequest q;
  ToPb(ctx, q.mutable_ctx());
  for (const auto& k : keys) q.add_keys(k);
  return q;
}

// Per-key statuses, or the call's failure for every key.
std::vector<Status> Statuses(const Result<pb::MasterResponse>& r, size_t n) {
  if (!r.ok()) return std::vector<Status>(n, r.status());
  std::vector<Status> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(i < static_cast<size_t>(r->results_size()) ? FromPb(r->results(static_cast<int>(i)).status())
                                                             : Status(Code::kRpcFail, "short reply"));
  }
  return out;
}

template <typename T>
T First(std::vector<T> v) {
  return std::move(v.front());
}

}  // namespace

Result<std::pair<std::string, uint16_t>> ParseHostPort(const std::string& address, bool allow_port_zero) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return Status(Code::kInvalidParams, "address '" + address + "' is not host:port");
  }
  std::string host = address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  unsigned long port = 0;
  try {
    size_t used = 0;
    port = std::stoul(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1) throw std::invalid_argument("trailing");
  } catch (...) {
    return Status(Code::kInvalidParams, "address '" + address + "' has a bad port");
  }
  if ((port == 0 && !allow_port_zero) || port > 65535)
    return Status(Code::kInvalidParams, "address '" + address + "' has a bad port");
  return std::make_pair(host, static_cast<uint16_t>(port));
}

MasterClient::MasterClient(const std::string& host, uint16_t port, std::chrono::milliseconds timeout)
    : channel_(host, port), timeout_(timeout) {}

Result<std::unique_ptr<MasterClient>> MasterClient::Connect(const std::string& address,
                                                            std::chrono::milliseconds timeout) {
  auto hp = ParseHostPort(address);
  if (!hp.ok()) return hp.status();
  return std::make_unique<MasterClient>(hp->first, hp->second, timeout);
}

Result<TenantIndex> MasterClient::RegisterClient(const ClientRegistration& reg) {
  pb::MasterRequest q = Request(CallContext{reg.id, 0}, {});
  q.set_text(reg.hostname);
  q.set_tenant(reg.tenant);
  q.set_ssd_tier(reg.ssd_tier);
  auto r = Invoke(channel_, M::kRegisterClient, q, timeout_);
  if (!r.ok()) return r.status();
  YB_RETURN_IF_ERROR(FromPb(r->status()));
  return static_cast<TenantIndex>(r->count());
}

Result<PingResponse> MasterClient::Ping(const CallContext& ctx) {
  auto r = Invoke(channel_, M::kPing, Request(ctx, {}), timeout_);
  if (!r.ok()) return r.status();
  YB_RETURN_IF_ERROR(FromPb(r->status()));
  return PingResponse{r->need_remount()};
}

Status MasterClient::MountSegment(const CallContext& ctx, const SegmentDesc& seg) {
  pb::MasterRequest q = Request(ctx, {});
  ToPb(seg, q.add_segments());
  auto r = Invoke(channel_, M::kMountSegment, q, timeout_);
  return r.ok() ? FromPb(r->status()) : r.status();
}

Status MasterClient::ReMountSegment(const CallContext& ctx, const std::vector<SegmentDesc>& segs) {
  pb::MasterRequest q = Request(ctx, {});
  for (const auto& s : segs) ToPb(s, q.add_segments());
  auto r = Invoke(channel_, M::kReMountSegment, q, timeout_);
  return r.ok() ? FromPb(r->status()) : r.status();
}

Status MasterClient::UnregisterClient(const CallContext& ctx) {
  auto r = Invoke(channel_, M::kUnregisterClient, Request(ctx, {}), timeout_);
  return r.ok() ? FromPb(r->status()) : r.status();
}

Status MasterClient::UnmountSegment(const CallContext& ctx, SegmentId id) {
  pb::MasterRequest q = Request(ctx, {});
  q.set_segment_id(id);
  auto r = Invoke(channel_, M::kUnmountSegment, q, timeout_);
  return r.ok() ? FromPb(r->status()) : r.status();
}

Result<std::vector<SegmentUsage>> MasterClient::ListSegments() {
  auto r = Invoke(channel_, M::kListSegments, pb::MasterRequest(), timeout_);
  if (!r.ok()) return r.status();
  YB_RETURN_IF_ERROR(FromPb(r->status()));
  std::vector<SegmentUsage> out;
  for (const auto& p : r->segments()) {
    SegmentUsage u;
    u.desc = FromPb(p.desc());
    u.owner = ClientId{p.owner_hi(), p.owner_lo()};
    u.capacity = p.capacity();
    u.allocated = p.allocated();
    u.allocations = p.allocations();
    u.free_regions = p.free_regions();
    u.largest_free_region = p.largest_free_region();
    u.fragmentation = p.fragmentation();
    out.push_back(std::move(u));
  }
  return out;
}

std::vector<Result<std::vector<ReplicaDesc>>> MasterClient::BatchPutStart(const CallContext& ctx,
                                                                          const std::vector<std::string>& keys,
                                                                          const std::vector<uint64_t>& sizes,
                                                                          const ReplicateConfig& config) {
  pb::MasterRequest q = Request(ctx, keys);
  for (auto s : sizes) q.add_sizes(s);
  ToPb(config, q.mutable_config());
  auto r = Invoke(channel_, M::kPutStart, q, timeout_);
  auto sts = Statuses(r, keys.size());
  std::vector<Result<std::vector<ReplicaDesc>>> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!sts[i].ok()) {
      out.emplace_back(sts[i]);
    } else {
      out.emplace_back(Replicas(r->results(static_cast<int>(i))));
    }
  }
  return out;
}

Result<std::vector<ReplicaDesc>> MasterClient::PutStart(const CallContext& ctx, const std::string& key, uint64_t size,
                                                        const ReplicateConfig& config) {
  return First(BatchPutStart(ctx, {key}, {size}, config));
}

Result<std::vector<ReplicaDesc>> MasterClient::UpsertStart(const CallContext& ctx, const std::string& key,
                                                           uint64_t size, const ReplicateConfig& config) {
  pb::MasterRequest q = Request(ctx, {key});
  q.add_sizes(size);
  ToPb(config, q.mutable_config());
  auto r = Invoke(channel_, M::kUpsertStart, q, timeout_);
  Status st = Statuses(r, 1)[0];
  if (!st.ok()) return st;
  return Replicas(r->results(0));
}

std::vector<Status> MasterClient::BatchPutEnd(const CallContext& ctx, const std::vector<std::string>& keys,
                                              const std::vector<std::optional<uint64_t>>& checksums) {
  pb::MasterRequest q = Request(ctx, keys);
  for (const auto& c : checksums) {
    q.add_values(c.value_or(0));
    q.add_has_values(c.has_value());
  }
  return Statuses(Invoke(channel_, M::kPutEnd, q, timeout_), keys.size());
}

Status MasterClient::PutEnd(const CallContext& ctx, const std::string& key, std::optional<uint64_t> checksum) {
  return First(BatchPutEnd(ctx, {key}, {checksum}));
}

std::vector<Status> MasterClient::BatchPutRevoke(const CallContext& ctx, const std::vector<std::string>& keys) {
  return Statuses(Invoke(channel_, M::kPutRevoke, Request(ctx, keys), timeout_), keys.size());
}

Status MasterClient::PutRevoke(const CallContext& ctx, const std::string& key) {
  return First(BatchPutRevoke(ctx, {key}));
}

std::vector<Result<ObjectInfo>> MasterClient::BatchGetReplicaList(const CallContext& ctx,
                                                                  const std::vector<std::string>& keys, bool pin) {
  pb::MasterRequest q = Request(ctx, keys);
  q.set_flag(pin);
  auto r = Invoke(channel_, M::kGetReplicaList, q, timeout_);
  auto sts = Statuses(r, keys.size());
  std::vector<Result<ObjectInfo>> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!sts[i].ok()) {
      out.emplace_back(sts[i]);
      continue;
    }
    const auto& k = r->results(static_cast<int>(i));
    ObjectInfo info;
    info.size = k.size();
    if (k.has_checksum()) info.checksum = k.checksum();
    info.replicas = Replicas(k);
    info.read_pin = k.read_pin();
    out.emplace_back(std::move(info));
  }
  return out;
}

Result<ObjectInfo> MasterClient::GetReplicaList(const CallContext& ctx, const std::string& key, bool pin) {
  return First(BatchGetReplicaList(ctx, {key}, pin));
}

// One-way: a read's end needs no answer, so it costs the reader no round trip. A pin whose
// ReadEnd is lost is released when the client is declared dead.
std::vector<Status> MasterClient::BatchReadEnd(const CallContext& ctx, const std::vector<std::string>& keys,
                                               const std::vector<uint64_t>& read_pins) {
  pb::MasterRequest q = Request(ctx, keys);
  for (auto p : read_pins) q.add_values(p);
  Status st = channel_.Send(static_cast<uint16_t>(M::kReadEnd), q.SerializeAsString(), timeout_);
  return std::vector<Status>(keys.size(), st);
}

Status MasterClient::ReadEnd(const CallContext& ctx, const std::string& key, uint64_t read_pin) {
  return First(BatchReadEnd(ctx, {key}, {read_pin}));
}

std::vector<Result<bool>> MasterClient::BatchExistKey(const CallContext& ctx, const std::vector<std::string>& keys) {
  auto r = Invoke(channel_, M::kExistKey, Request(ctx, keys), timeout_);
  auto sts = Statuses(r, keys.size());
  std::vector<Result<bool>> out;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (!sts[i].ok()) {
      out.emplace_back(sts[i]);
    } else {
      out.emplace_back(r->results(static_cast<int>(i)).exists());
    }
  }
  return out;
}

Result<bool> MasterClient::ExistKey(const CallContext& ctx, const std::string& key) {
  return First(BatchExistKey(ctx, {key}));
}

std::vector<Status> MasterClient::BatchRemove(const CallContext& ctx, const std::vector<std::string>& keys,
                                              bool force) {
  pb::MasterRequest q = Request(ctx, keys);
  q.set_flag(force);
  return Statuses(Invoke(channel_, M::kRemove, q, timeout_), keys.size());
}

Status MasterClient::Remove(const CallContext& ctx, const std::string& key, bool force) {
  return First(BatchRemove(ctx, {key}, force));
}

Result<uint64_t> MasterClient::RemoveByRegex(const CallContext& ctx, const std::string& pattern, bool force) {
  pb::MasterRequest q = Request(ctx, {});
  q.set_text(pattern);
  q.set_flag(force);
  auto r = Invoke(channel_, M::kRemoveByRegex, q, timeout_);
  if (!r.ok()) return r.status();
  YB_RETURN_IF_ERROR(FromPb(r->status()));
  return r->count();
}

Result<uint64_t> MasterClient::RemoveAll(const CallContext& ctx, bool force) {
  pb::MasterRequest q = Request(ctx, {});
  q.set_flag(force);
  auto r = Invoke(channel_, M::kRemoveAll, q, timeout_);
  if (!r.ok()) return r.status();
  YB_RETURN_IF_ERROR(FromPb(r->status()));
  return r->count();
}

Result<std::vector<OffloadTask>> MasterClient::OffloadFetch(const CallContext& ctx, uint32_t max) {
  pb::MasterRequest q = Request(ctx, {});
  q.set_max(max);
  auto r = Invoke(channel_, M::kOffloadFetch, q, timeout_);
  if (!r.ok()) return r.status();
  YB_RETURN_IF_ERROR(FromPb(r->status()));
  std::vector<OffloadTask> out;
  for (const auto& k : r->results()) {
    OffloadTask t;
    t.disk_key = k.key();
    t.object_id = k.read_pin();
    if (k.drop()) {
      t.drop = true;
      out.push_back(std::move(t));
      continue;
    }
    if (k.replicas_size() != 1) return Status(Code::kRpcFail, "offload task without its replica");
    t.segment = k.replicas(0).segment();
    t.offset = k.replicas(0).offset();
    t.size = k.size();
    if (k.has_checksum()) t.checksum = k.checksum();
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Status> MasterClient::OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) {
  pb::MasterRequest q = Request(ctx, {});
  for (const auto& res : results) {
    q.add_keys(res.disk_key);
    q.add_values(res.object_id);
    q.add_checksums(res.checksum.value_or(0));
    ToPb(res.status, q.add_statuses());
  }
  return Statuses(Invoke(channel_, M::kOffloadDone, q, timeout_), results.size());
}

std::vector<Status> MasterClient::AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                                  const std::vector<DiskObject>& objects) {
  pb::MasterRequest q = Request(ctx, {});
  q.set_segment_id(segment);
  for (const auto& o : objects) {
    q.add_keys(o.disk_key);
    q.add_sizes(o.size);
    q.add_values(o.checksum);
  }
  return Statuses(Invoke(channel_, M::kAddDiskReplicas, q, timeout_), objects.size());
}

std::vector<Status> MasterClient::DropDiskReplicas(const CallContext& ctx, const std::vector<std::string>& disk_keys) {
  return Statuses(Invoke(channel_, M::kDropDiskReplicas, Request(ctx, disk_keys), timeout_), disk_keys.size());
}

}  // namespace yb::rpc
