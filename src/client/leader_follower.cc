#include "client/leader_follower.h"

#include <thread>

#include "common/log.h"
#include "net/auth.h"

namespace yb {
namespace {

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

Status StatusOf(const Status& s) { return s; }
template <typename T>
Status StatusOf(const Result<T>& r) {
  return r.status();
}
// A call's failure shows in every key's answer: the first tells.
template <typename T>
Status StatusOf(const std::vector<T>& v) {
  return v.empty() ? Status::OK() : StatusOf(v.front());
}

// A failure that a new leader may answer: the master is gone, or does not lead (any more).
template <typename R>
bool LeaderChange(const R& r) {
  return StatusOf(r).IsUnavailable();
}

// The answer for a call that could not be made: `st` for it, or for each of its `n` keys.
template <typename R>
R Failure(const Status& st, size_t n) {
  if constexpr (IsVector<R>::value) {
    return R(n, typename R::value_type(st));
  } else {
    return R(st);
  }
}

}  // namespace

Result<std::unique_ptr<LeaderFollower>> LeaderFollower::Create(const std::string& spec, const std::string& cluster_id,
                                                               std::chrono::milliseconds timeout,
                                                               rpc::RpcChannel::Options channel,
                                                               ha::EtcdClient::Options o) {
  auto endpoints = ha::EtcdClient::ParseEndpoints(spec);
  if (!endpoints.ok()) return endpoints.status();
  if (cluster_id.empty()) return Status(Code::kInvalidParams, "cluster_id is empty");
  o.endpoints = std::move(*endpoints);
  o.timeout = std::min(timeout, std::chrono::milliseconds(1000));
  return std::unique_ptr<LeaderFollower>(new LeaderFollower(std::move(o), cluster_id, timeout, std::move(channel)));
}

LeaderFollower::LeaderFollower(ha::EtcdClient::Options etcd, std::string cluster_id, std::chrono::milliseconds timeout,
                               rpc::RpcChannel::Options channel)
    : etcd_(std::move(etcd)),
      key_("mooncake-store/" + cluster_id + "/master_view"),
      timeout_(timeout),
      channel_(std::move(channel)) {}

std::string LeaderFollower::leader() const {
  std::lock_guard lock(mu_);
  return leader_;
}

Result<std::shared_ptr<rpc::MasterClient>> LeaderFollower::Leader(const rpc::MasterClient* stale) {
  std::lock_guard lock(mu_);
  if (client_ && client_.get() != stale) return client_;
  // Looked up at most every 100 ms: many callers failing together ask etcd once.
  const auto now = std::chrono::steady_clock::now();
  if (client_ && now - last_lookup_ < std::chrono::milliseconds(100)) return client_;
  last_lookup_ = now;
  auto view = etcd_.Get(key_);
  if (!view.ok()) return Status(Code::kRpcFail, "cannot find the leader: " + view.status().message());
  if (!*view) return Status(Code::kRpcFail, "no master leads cluster key " + key_ + " yet");
  // With a secret, only a name a master of this cluster signed (net::CheckView): a forged one is
  // not connected to.
  auto named = net::CheckView((*view)->value, key_,
                              channel_.security ? channel_.security->options().secret : std::string());
  if (!named.ok()) {
    static LogBudget budget(1, 10'000);
    const TimeMs ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
    if (uint64_t held = 0; budget.Allow(ms, &held)) {
      YB_LOG_ERROR("{}{}", named.status().message(), LogBudget::HeldBack(held));
    }
    return Status(Code::kRpcFail, named.status().message());
  }
  const std::string& addr = *named;
  if (client_ && addr == leader_) return client_;  // the same leader: it failed, the caller waits and tries again
  auto hp = rpc::ParseHostPort(addr);
  if (!hp.ok()) return Status(Code::kRpcFail, "etcd names the leader '" + addr + "': " + hp.status().message());
  if (!leader_.empty()) {
    failovers_.fetch_add(1);
    YB_LOG_INFO("the leader of {} is now {} (was {})", key_, addr, leader_);
  }
  leader_ = addr;
  client_ = std::make_shared<rpc::MasterClient>(hp->first, hp->second, timeout_, epoch_seen_, channel_);
  return client_;
}

template <typename R, typename Call>
R LeaderFollower::WithLeader(Call&& call, size_t n, bool* retried) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  const rpc::MasterClient* stale = nullptr;
  for (int attempt = 0;; ++attempt) {
    auto c = Leader(stale);
    if (c.ok()) {
      if (retried) *retried = attempt > 0;
      R r = call(**c);
      if (!LeaderChange(r) || std::chrono::steady_clock::now() >= deadline) return r;
      stale = c->get();
    } else if (std::chrono::steady_clock::now() >= deadline) {
      return Failure<R>(c.status(), n);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

// ---- the calls

Result<CallContext> LeaderFollower::RegisterClient(const ClientRegistration& reg) {
  return WithLeader<Result<CallContext>>([&](MasterApi& m) { return m.RegisterClient(reg); });
}

Result<PingResponse> LeaderFollower::Ping(const CallContext& ctx, const PingState& state) {
  return WithLeader<Result<PingResponse>>([&](MasterApi& m) { return m.Ping(ctx, state); });
}

Status LeaderFollower::UnregisterClient(const CallContext& ctx) {
  return WithLeader<Status>([&](MasterApi& m) { return m.UnregisterClient(ctx); });
}

Status LeaderFollower::MountSegments(const CallContext& ctx, const std::vector<SegmentDesc>& segs) {
  return WithLeader<Status>([&](MasterApi& m) { return m.MountSegments(ctx, segs); });
}

Status LeaderFollower::UnmountSegment(const CallContext& ctx, SegmentId id) {
  return WithLeader<Status>([&](MasterApi& m) { return m.UnmountSegment(ctx, id); });
}

Result<std::vector<SegmentUsage>> LeaderFollower::ListSegments() {
  return WithLeader<Result<std::vector<SegmentUsage>>>([&](MasterApi& m) { return m.ListSegments(); });
}

std::vector<Result<std::vector<ReplicaDesc>>> LeaderFollower::BatchPutStart(const CallContext& ctx, const Keys& keys,
                                                                            const std::vector<uint64_t>& sizes,
                                                                            const ReplicateConfig& config,
                                                                            WriteMode mode) {
  return WithLeader<std::vector<Result<std::vector<ReplicaDesc>>>>(
      [&](MasterApi& m) { return m.BatchPutStart(ctx, keys, sizes, config, mode); }, keys.size());
}

std::vector<Status> LeaderFollower::BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                                const std::vector<std::optional<uint64_t>>& checksums) {
  bool retried = false;
  auto out = WithLeader<std::vector<Status>>([&](MasterApi& m) { return m.BatchPutEnd(ctx, keys, checksums); },
                                             keys.size(), &retried);
  if (!retried) return out;
  // The first attempt may have reached the old leader, which published the object and answered
  // into the void: the new leader then has the object and no Put in progress.
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].code() != Code::kObjectNotFound) continue;
    auto e = WithLeader<Result<bool>>([&](MasterApi& m) { return m.ExistKey(ctx, keys[i]); });
    if (e.ok() && *e) out[i] = Status::OK();
  }
  return out;
}

std::vector<Status> LeaderFollower::BatchPutRevoke(const CallContext& ctx, const Keys& keys) {
  return WithLeader<std::vector<Status>>([&](MasterApi& m) { return m.BatchPutRevoke(ctx, keys); }, keys.size());
}

std::vector<Result<ObjectInfo>> LeaderFollower::BatchGetReplicaList(const CallContext& ctx, const Keys& keys,
                                                                    bool pin) {
  return WithLeader<std::vector<Result<ObjectInfo>>>(
      [&](MasterApi& m) { return m.BatchGetReplicaList(ctx, keys, pin); }, keys.size());
}

std::vector<Status> LeaderFollower::BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                                 const std::vector<uint64_t>& read_pins) {
  auto c = Leader(nullptr);  // one-way, and the pins of a leader that went went with it: once
  if (!c.ok()) return Failure<std::vector<Status>>(c.status(), keys.size());
  return (*c)->BatchReadEnd(ctx, keys, read_pins);
}

std::vector<Result<bool>> LeaderFollower::BatchExistKey(const CallContext& ctx, const Keys& keys) {
  return WithLeader<std::vector<Result<bool>>>([&](MasterApi& m) { return m.BatchExistKey(ctx, keys); }, keys.size());
}

std::vector<Result<MissInfo>> LeaderFollower::BatchWhyMissing(const CallContext& ctx, const Keys& keys) {
  return WithLeader<std::vector<Result<MissInfo>>>([&](MasterApi& m) { return m.BatchWhyMissing(ctx, keys); },
                                                   keys.size());
}

std::vector<Status> LeaderFollower::BatchRemove(const CallContext& ctx, const Keys& keys, bool force) {
  return WithLeader<std::vector<Status>>([&](MasterApi& m) { return m.BatchRemove(ctx, keys, force); }, keys.size());
}

Result<uint64_t> LeaderFollower::RemoveWhere(const CallContext& ctx, const std::optional<std::string>& pattern,
                                             bool force) {
  return WithLeader<Result<uint64_t>>([&](MasterApi& m) { return m.RemoveWhere(ctx, pattern, force); });
}

Result<std::vector<OffloadTask>> LeaderFollower::OffloadFetch(const CallContext& ctx, uint32_t max) {
  return WithLeader<Result<std::vector<OffloadTask>>>([&](MasterApi& m) { return m.OffloadFetch(ctx, max); });
}

std::vector<Status> LeaderFollower::OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) {
  return WithLeader<std::vector<Status>>([&](MasterApi& m) { return m.OffloadDone(ctx, results); }, results.size());
}

Result<uint64_t> LeaderFollower::DrainSegment(const CallContext& ctx, SegmentId id) {
  return WithLeader<Result<uint64_t>>([&](MasterApi& m) { return m.DrainSegment(ctx, id); });
}

Status LeaderFollower::UndrainSegment(const CallContext& ctx, SegmentId id) {
  return WithLeader<Status>([&](MasterApi& m) { return m.UndrainSegment(ctx, id); });
}

Result<std::vector<RepairTask>> LeaderFollower::RepairFetch(const CallContext& ctx, uint32_t max) {
  return WithLeader<Result<std::vector<RepairTask>>>([&](MasterApi& m) { return m.RepairFetch(ctx, max); });
}

std::vector<Status> LeaderFollower::RepairDone(const CallContext& ctx, const std::vector<RepairResult>& results) {
  return WithLeader<std::vector<Status>>([&](MasterApi& m) { return m.RepairDone(ctx, results); }, results.size());
}

Result<MasterApi::Keys> LeaderFollower::BatchReplicaClear(const CallContext& ctx, const Keys& keys,
                                                          const std::string& segment_name) {
  return WithLeader<Result<Keys>>([&](MasterApi& m) { return m.BatchReplicaClear(ctx, keys, segment_name); });
}

// Made again on a new leader with the same id: the task the first attempt made, if it did, is found.
Result<TaskId> LeaderFollower::CreateTask(const CallContext& ctx, const TaskSpec& spec) {
  return WithLeader<Result<TaskId>>([&](MasterApi& m) { return m.CreateTask(ctx, spec); });
}

Result<TaskInfo> LeaderFollower::QueryTask(const CallContext& ctx, const TaskId& id) {
  return WithLeader<Result<TaskInfo>>([&](MasterApi& m) { return m.QueryTask(ctx, id); });
}

std::vector<Status> LeaderFollower::AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                                    const std::vector<DiskObject>& objects) {
  return WithLeader<std::vector<Status>>([&](MasterApi& m) { return m.AddDiskReplicas(ctx, segment, objects); },
                                         objects.size());
}

std::vector<Status> LeaderFollower::DropDiskReplicas(const CallContext& ctx, const Keys& disk_keys) {
  return WithLeader<std::vector<Status>>([&](MasterApi& m) { return m.DropDiskReplicas(ctx, disk_keys); },
                                         disk_keys.size());
}

}  // namespace yb
