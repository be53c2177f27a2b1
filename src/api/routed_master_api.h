// RoutedMasterApi: a MasterApi that makes every call on another MasterApi it picks per call, the
// shape of LevelDB's EnvWrapper with the target chosen at call time. A decorator (the HA master,
// which serves through its MasterService while it leads; the client that follows a cluster's leader
// and makes a call again on a new one) overrides Route, and of the calls only those it treats
// otherwise: nothing restates the list of MasterApi's methods.
#pragma once

#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "api/master_api.h"

namespace yb {

class RoutedMasterApi : public MasterApi {
 public:
  // One attempt of a call on `target`; the status its answer shows (a per-key call's first key's:
  // a call that fails as a whole fails every key alike), by which Route decides whether to try
  // again. Valid during Route only.
  class Attempt {
   public:
    template <typename F>
    explicit Attempt(F& f) : fn_(&f), call_([](void* fn, MasterApi& m) { return (*static_cast<F*>(fn))(m); }) {}
    Status operator()(MasterApi& target) const { return call_(fn_, target); }

   private:
    void* fn_;
    Status (*call_)(void*, MasterApi&);
  };

  // Every call of MasterApi, made through Route.
  using MasterApi::BatchPutStart;
  using MasterApi::Ping;
  Result<CallContext> RegisterClient(const ClientRegistration& reg) override;
  Status VerifyCaller(const CallContext& ctx) override;
  Status Writable() override;
  Result<PingResponse> Ping(const CallContext& ctx, const PingState& state) override;
  Status UnregisterClient(const CallContext& ctx) override;
  Status MountSegments(const CallContext& ctx, const std::vector<SegmentMount>& segs) override;
  Status UnmountSegment(const CallContext& ctx, SegmentId id) override;
  Result<uint64_t> DrainSegment(const CallContext& ctx, SegmentId id) override;
  Status UndrainSegment(const CallContext& ctx, SegmentId id) override;
  Result<std::vector<SegmentUsage>> ListSegments() override;
  std::vector<Result<std::vector<GrantedReplica>>> BatchPutStart(const CallContext& ctx, const Keys& keys,
                                                                 const std::vector<uint64_t>& sizes,
                                                                 const PlacementConfig& config,
                                                                 WriteMode mode) override;
  std::vector<Status> BatchPutEnd(const CallContext& ctx, const Keys& keys,
                                  const std::vector<std::optional<uint64_t>>& checksums) override;
  std::vector<Status> BatchPutRevoke(const CallContext& ctx, const Keys& keys) override;
  PutCommitAnswer BatchPutCommit(const CallContext& ctx, const Keys& keys, const Keys& reservations,
                                 const std::vector<std::optional<uint64_t>>& checksums, const Keys& revoke,
                                 const Keys& start_keys, const std::vector<uint64_t>& start_sizes,
                                 const PlacementConfig& config) override;
  std::vector<Result<ObjectInfo>> BatchGetReplicaList(const CallContext& ctx, const Keys& keys, bool pin) override;
  std::vector<Status> BatchReadEnd(const CallContext& ctx, const Keys& keys,
                                   const std::vector<uint64_t>& read_pins) override;
  std::vector<Result<bool>> BatchExistKey(const CallContext& ctx, const Keys& keys) override;
  std::vector<Result<MissInfo>> BatchWhyMissing(const CallContext& ctx, const Keys& keys) override;
  std::vector<Status> BatchRemove(const CallContext& ctx, const Keys& keys, bool force) override;
  Result<Keys> BatchReplicaClear(const CallContext& ctx, const Keys& keys, const std::string& segment_name) override;
  Result<uint64_t> RemoveWhere(const CallContext& ctx, const std::optional<std::string>& pattern, bool force) override;
  Result<std::vector<OffloadTask>> OffloadFetch(const CallContext& ctx, uint32_t max) override;
  std::vector<Status> OffloadDone(const CallContext& ctx, const std::vector<OffloadResult>& results) override;
  Result<std::vector<RepairTask>> RepairFetch(const CallContext& ctx, uint32_t max) override;
  std::vector<Status> RepairDone(const CallContext& ctx, const std::vector<RepairResult>& results) override;
  Result<TaskId> CreateTask(const CallContext& ctx, const TaskSpec& spec) override;
  Result<TaskInfo> QueryTask(const CallContext& ctx, const TaskId& id) override;
  std::vector<Status> AddDiskReplicas(const CallContext& ctx, SegmentId segment,
                                      const std::vector<DiskObject>& objects) override;
  std::vector<Status> DropDiskReplicas(const CallContext& ctx, const Keys& disk_keys) override;

 protected:
  // Makes a call: `attempt` on the target Route picks, and again (on the same or another) as it
  // decides. Returns OK when the last attempt's answer is the call's; otherwise (no target could be
  // found, in time) the status every part of the answer then carries instead.
  virtual Status Route(const Attempt& attempt) = 0;

  // `call(target)` through Route, as every method above makes it; `n`: the keys of a per-key call,
  // each of which carries Route's status when Route does not stand by an attempt's answer.
  // (A BatchPutCommit's answer: `n` keys ended and `m` started.)
  template <typename R, typename Call>
  R Routed(Call&& call, size_t n = 1, size_t m = 0) {
    std::optional<R> out;
    auto one = [&](MasterApi& m) {
      out.emplace(call(m));
      return StatusOf(*out);
    };
    Status st = Route(Attempt(one));
    if (st.ok() && out) return std::move(*out);
    if (st.ok()) st = Status(Code::kInternal, "the call was routed to no master");
    if constexpr (std::is_same_v<R, PutCommitAnswer>) {
      return R::Failed(st, n, m);
    } else if constexpr (IsVector<R>::value) {
      return R(n, typename R::value_type(st));
    } else {
      return R(st);
    }
  }

  static Status StatusOf(const Status& s) { return s; }
  static Status StatusOf(const PutCommitAnswer& a) { return a.status(); }
  template <typename T>
  static Status StatusOf(const Result<T>& r) {
    return r.status();
  }
  template <typename T>
  static Status StatusOf(const std::vector<T>& v) {
    return v.empty() ? Status::OK() : StatusOf(v.front());
  }

 private:
  template <typename T>
  struct IsVector : std::false_type {};
  template <typename T>
  struct IsVector<std::vector<T>> : std::true_type {};
};

}  // namespace yb
