#include "client/leader_follower.h"

#include "common/log.h"
#include "common/segment_name.h"
#include "net/auth.h"

namespace yb {
namespace {

// A failure that a new leader may answer: the master is gone, or does not lead (any more).
bool LeaderChange(const Status& st) { return st.IsUnavailable(); }

}  // namespace

Result<std::unique_ptr<LeaderFollower>> LeaderFollower::Create(const std::string& spec, const std::string& cluster_id,
                                                               std::chrono::milliseconds timeout,
                                                               rpc::RpcChannel::Options channel, EtcdClient::Options o,
                                                               const Clock& clock) {
  auto endpoints = EtcdClient::ParseEndpoints(spec);
  if (!endpoints.ok()) return endpoints.status();
  if (cluster_id.empty()) return Status(Code::kInvalidParams, "cluster_id is empty");
  o.endpoints = std::move(*endpoints);
  o.timeout = std::min(timeout, std::chrono::milliseconds(1000));
  return std::unique_ptr<LeaderFollower>(new LeaderFollower(std::move(o), cluster_id, timeout, std::move(channel), clock));
}

LeaderFollower::LeaderFollower(EtcdClient::Options etcd, std::string cluster_id, std::chrono::milliseconds timeout,
                               rpc::RpcChannel::Options channel, const Clock& clock)
    : etcd_(std::move(etcd)),
      key_("mooncake-store/" + cluster_id + "/master_view"),
      timeout_(timeout),
      channel_(std::move(channel)),
      clock_(clock) {}

std::string LeaderFollower::leader() const {
  MutexLock lock(mu_);
  return leader_;
}

Result<std::shared_ptr<rpc::MasterClient>> LeaderFollower::Leader(const rpc::MasterClient* stale) {
  MutexLock lock(mu_);
  if (client_ && client_.get() != stale && client_.get() != suspect_) return client_;
  // Looked up at most every 100 ms: many callers failing together ask etcd once.
  const TimeMs now = clock_.NowMs();
  if (client_ && now - last_lookup_ < 100) return client_;
  last_lookup_ = now;
  suspect_ = nullptr;  // asked anew: the same leader named again is used again
  auto view = etcd_.Get(key_);
  if (!view.ok()) return Status(Code::kRpcFail, "cannot find the leader: " + view.status().message());
  if (!*view) return Status(Code::kRpcFail, "no master leads cluster key " + key_ + " yet");
  // With a secret, only a name a master of this cluster signed (net::CheckView): a forged one is
  // not connected to.
  auto named = net::CheckView((*view)->value, key_,
                              channel_.security ? channel_.security->options().secret : std::string());
  if (!named.ok()) {
    static LogBudget budget(1, 10'000);
    if (uint64_t held = 0; budget.Allow(now, &held)) {
      YB_LOG_ERROR("{}{}", named.status().message(), LogBudget::HeldBack(held));
    }
    return Status(Code::kRpcFail, named.status().message());
  }
  const std::string& addr = *named;
  if (client_ && addr == leader_) return client_;  // the same leader: it failed, the caller waits and tries again
  auto hp = ParseHostPort(addr);
  if (!hp.ok()) return Status(Code::kRpcFail, "etcd names the leader '" + addr + "': " + hp.status().message());
  if (!leader_.empty()) {
    failovers_.fetch_add(1);
    YB_LOG_INFO("the leader of {} is now {} (was {})", key_, addr, leader_);
  }
  leader_ = addr;
  client_ = std::make_shared<rpc::MasterClient>(hp->first, hp->second, timeout_, epoch_seen_, channel_);
  return client_;
}

Status LeaderFollower::Route(const Attempt& attempt) {
  const TimeMs deadline = clock_.NowMs() + timeout_.count();
  const rpc::MasterClient* stale = nullptr;
  for (;;) {
    auto c = Leader(stale);
    if (c.ok()) {
      if (!LeaderChange(attempt(**c))) return Status::OK();
      stale = c->get();
      if (clock_.NowMs() >= deadline) {
        MutexLock lock(mu_);
        if (client_.get() == stale) suspect_ = stale;
        return Status::OK();
      }
    } else if (clock_.NowMs() >= deadline) {
      return c.status();
    }
    clock_.SleepUntil(clock_.NowMs() + 50);
  }
}

// ---- the calls treated otherwise

std::vector<Status> LeaderFollower::BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                                const std::vector<std::optional<uint64_t>>& checksums) {
  int attempts = 0;
  auto out = Routed<std::vector<Status>>(
      [&](MasterApi& m) {
        ++attempts;
        return m.BatchPutEnd(ctx, keys, checksums);
      },
      keys.size());
  if (attempts <= 1) return out;
  // The first attempt may have reached the old leader, which published the object and answered
  // into the void: the new leader then has the object and no Put in progress.
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i].code() != Code::kObjectNotFound) continue;
    auto e = ExistKey(ctx, keys[i]);
    if (e.ok() && *e) out[i] = Status::OK();
  }
  return out;
}

PutCommitAnswer LeaderFollower::BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                               const std::vector<std::optional<uint64_t>>& checksums,
                                               const Keys& revoke, const Keys& start_keys,
                                               const std::vector<uint64_t>& start_sizes,
                                               const PlacementConfig& config) {
  int attempts = 0;
  auto out = Routed<PutCommitAnswer>(
      [&](MasterApi& m) {
        ++attempts;
        return m.BatchPutCommit(ctx, keys, reservations, checksums, revoke, start_keys, start_sizes, config);
      },
      keys.size(), start_keys.size());
  if (attempts <= 1) return out;
  // As for PutEnd: an earlier attempt may have published the key on the old leader, and the new one
  // then knows no Put in progress under its name or its reservation's. (A start made again by the
  // same writer answers the reservation it has.)
  for (size_t i = 0; i < out.ends.size(); ++i) {
    if (out.ends[i].code() != Code::kObjectNotFound) continue;
    auto e = ExistKey(ctx, keys[i]);
    if (e.ok() && *e) out.ends[i] = Status::OK();
  }
  return out;
}

std::vector<Status> LeaderFollower::BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                                 const std::vector<uint64_t>& read_pins) {
  auto c = Leader(nullptr);  // one-way, and the pins of a leader that went went with it: once
  if (!c.ok()) return std::vector<Status>(keys.size(), c.status());
  return (*c)->BatchReadEnd(ctx, keys, read_pins);
}

}  // namespace yb
