// MemoryEtcd: the etcd calls of EtcdKv held in memory, on a Clock, for unit tests of what elects
// and follows a leader. Keys carry etcd's revisions (a key's create_revision is the revision that
// created it); a lease expires when the clock passes its TTL unless renewed, and takes its keys
// with it, as etcd's do. `SetReachable(false)` fails every call as an unreachable etcd does.
// Thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "etcd/etcd_client.h"

namespace yb {

class MemoryEtcd final : public EtcdKv {
 public:
  explicit MemoryEtcd(const Clock& clock) : clock_(clock) {}

  void SetReachable(bool reachable) {
    MutexLock lock(mu_);
    reachable_ = reachable;
  }
  // Writes `key` without a lease (what an operator's etcdctl put does).
  void Put(const std::string& key, const std::string& value) {
    MutexLock lock(mu_);
    PutLocked(key, value, 0);
  }
  void Delete(const std::string& key) {
    MutexLock lock(mu_);
    kvs_.erase(key);
  }
  // The key's value now ("" when absent), expired leases applied.
  std::string Value(const std::string& key) {
    MutexLock lock(mu_);
    Expire();
    auto it = kvs_.find(key);
    return it == kvs_.end() ? std::string() : it->second.value;
  }
  size_t leases() {
    MutexLock lock(mu_);
    Expire();
    return leases_.size();
  }
  int calls() {
    MutexLock lock(mu_);
    return calls_;
  }

  Result<int64_t> Grant(int64_t ttl_sec) override {
    MutexLock lock(mu_);
    YB_RETURN_IF_ERROR(Reach());
    const int64_t id = next_lease_++;
    leases_[id] = Lease{ttl_sec, clock_.NowMs() + ttl_sec * 1000};
    return id;
  }
  Result<int64_t> KeepAlive(int64_t lease) override {
    MutexLock lock(mu_);
    YB_RETURN_IF_ERROR(Reach());
    auto it = leases_.find(lease);
    if (it == leases_.end()) return int64_t{0};
    it->second.expires = clock_.NowMs() + it->second.ttl_sec * 1000;
    return it->second.ttl_sec;
  }
  Status Revoke(int64_t lease) override {
    MutexLock lock(mu_);
    YB_RETURN_IF_ERROR(Reach());
    Drop(lease);
    return Status::OK();
  }
  Result<std::optional<Kv>> Get(const std::string& key) override {
    MutexLock lock(mu_);
    YB_RETURN_IF_ERROR(Reach());
    auto it = kvs_.find(key);
    if (it == kvs_.end()) return std::optional<Kv>();
    return std::optional<Kv>(it->second);
  }
  Result<Claim> PutIfAbsent(const std::string& key, const std::string& value, int64_t lease) override {
    MutexLock lock(mu_);
    YB_RETURN_IF_ERROR(Reach());
    if (auto it = kvs_.find(key); it != kvs_.end()) return Claim{false, it->second};
    if (lease != 0 && !leases_.count(lease)) return Status(Code::kEtcdOperationError, "requested lease not found");
    return Claim{true, PutLocked(key, value, lease)};
  }
  Result<bool> PutIfOwned(const std::string& key, int64_t create_revision, const std::string& key2,
                          const std::string& value) override {
    MutexLock lock(mu_);
    YB_RETURN_IF_ERROR(Reach());
    auto it = kvs_.find(key);
    if (it == kvs_.end() || it->second.create_revision != create_revision) return false;
    PutLocked(key2, value, 0);
    return true;
  }

 private:
  struct Lease {
    int64_t ttl_sec = 0;
    TimeMs expires = 0;
  };
  Status Reach() REQUIRES(mu_) {
    ++calls_;
    if (!reachable_) return Status(Code::kEtcdOperationError, "etcd 127.0.0.1:2379: not reachable (MemoryEtcd)");
    Expire();
    return Status::OK();
  }
  void Expire() REQUIRES(mu_) {
    const TimeMs now = clock_.NowMs();
    for (auto it = leases_.begin(); it != leases_.end();) {
      const int64_t id = it->first;
      const bool gone = it->second.expires <= now;
      ++it;
      if (gone) Drop(id);
    }
  }
  void Drop(int64_t lease) REQUIRES(mu_) {
    leases_.erase(lease);
    for (auto it = kvs_.begin(); it != kvs_.end();) it = it->second.lease == lease ? kvs_.erase(it) : std::next(it);
  }
  Kv PutLocked(const std::string& key, const std::string& value, int64_t lease) REQUIRES(mu_) {
    Kv& kv = kvs_[key];
    ++revision_;
    if (kv.create_revision == 0) kv.create_revision = revision_;
    kv.mod_revision = revision_;
    kv.value = value;
    kv.lease = lease;
    return kv;
  }

  const Clock& clock_;
  Mutex mu_;
  bool reachable_ GUARDED_BY(mu_) = true;
  int64_t revision_ GUARDED_BY(mu_) = 1;
  int64_t next_lease_ GUARDED_BY(mu_) = 7001;
  std::map<int64_t, Lease> leases_ GUARDED_BY(mu_);
  std::map<std::string, Kv> kvs_ GUARDED_BY(mu_);
  int calls_ GUARDED_BY(mu_) = 0;
};

}  // namespace yb
