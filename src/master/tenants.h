// TenantRegistry: tenant names -> small indices, and each tenant's byte quota and usage.
// Lock-free on the hot path (Charge/Release); registration takes a mutex. Thread-safe. A tenant's
// index is part of its keys in the object table, so with a MetaSink every new tenant and quota is
// recorded (under the mutex), and a restarted master restores them at the same indices.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "api/master_api.h"
#include "common/thread_annotations.h"
#include "master/meta_sink.h"
#include "yuebing/status.h"

namespace yb {

class TenantRegistry {
 public:
  static constexpr size_t kMaxTenants = 4096;
  static constexpr uint64_t kNoQuota = UINT64_MAX;

  TenantRegistry();
  // Index of a tenant, registering it (without quota) on first use.
  Result<TenantIndex> Register(const std::string& name);
  // Index of a tenant already registered; TENANT_NOT_REGISTERED otherwise.
  Result<TenantIndex> Find(const std::string& name) const;
  // Sets the quota in bytes (kNoQuota: unlimited). Registers the tenant if needed.
  Status SetQuota(const std::string& name, uint64_t bytes);
  bool Valid(TenantIndex t) const { return t < count_.load(std::memory_order_acquire); }
  // A tenant as a restarted master recovered it: `index` is the next one (the default tenant, 0,
  // exists already and takes only its quota). INVALID_PARAMS when the indices do not follow.
  Status Restore(TenantIndex index, const std::string& name, uint64_t quota = kNoQuota);
  size_t count() const { return count_.load(std::memory_order_acquire); }
  void SetSink(MetaSink* sink) { sink_ = sink; }

  // Charges `unit` bytes up to `max_units` times within the quota; returns how many fit.
  uint64_t ChargeUpTo(TenantIndex t, uint64_t unit, uint64_t max_units);
  void Release(TenantIndex t, uint64_t bytes);
  // Charges `bytes` whatever the quota (space a restarted master found in use).
  void Charge(TenantIndex t, uint64_t bytes) { slots_[t].used.fetch_add(bytes, std::memory_order_relaxed); }
  uint64_t used(TenantIndex t) const { return slots_[t].used.load(std::memory_order_relaxed); }
  uint64_t quota(TenantIndex t) const { return slots_[t].quota.load(std::memory_order_relaxed); }
  const std::string& name(TenantIndex t) const { return names_[t]; }

 private:
  struct Slot {
    std::atomic<uint64_t> used{0};
    std::atomic<uint64_t> quota{kNoQuota};
  };
  void LogLocked(TenantIndex t) REQUIRES(mu_);

  mutable Mutex mu_;  // a leaf: nothing is called while it is held (but the sink)
  MetaSink* sink_ = nullptr;
  std::unordered_map<std::string, TenantIndex> by_name_ GUARDED_BY(mu_);
  std::atomic<size_t> count_{0};
  std::unique_ptr<Slot[]> slots_;
  std::unique_ptr<std::string[]> names_;  // written once under mu_ before count_ publishes it
};

}  // namespace yb
