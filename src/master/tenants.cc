#include "master/tenants.h"

namespace yb {

TenantRegistry::TenantRegistry()
    : slots_(std::make_unique<Slot[]>(kMaxTenants)), names_(std::make_unique<std::string[]>(kMaxTenants)) {
  (void)Register("default");
}

Result<TenantIndex> TenantRegistry::Register(const std::string& name) {
  // 255: the SSD tier stores the name length-prefixed in one byte (common/disk_key.h).
  if (name.empty() || name.size() > 255) return Status(Code::kInvalidParams, "tenant name must be 1-255 bytes");
  MutexLock lock(mu_);
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  size_t n = count_.load(std::memory_order_relaxed);
  if (n >= kMaxTenants) return Status(Code::kInvalidParams, "too many tenants");
  if (sink_) YB_RETURN_IF_ERROR(sink_->Writable());  // a new tenant is a change
  names_[n] = name;
  by_name_.emplace(name, static_cast<TenantIndex>(n));
  count_.store(n + 1, std::memory_order_release);
  LogLocked(static_cast<TenantIndex>(n));
  return static_cast<TenantIndex>(n);
}

Result<TenantIndex> TenantRegistry::Find(const std::string& name) const {
  MutexLock lock(mu_);
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return Status(Code::kTenantNotRegistered, "no tenant '" + name + "' is registered");
  return it->second;
}

Status TenantRegistry::SetQuota(const std::string& name, uint64_t bytes) {
  auto t = Register(name);
  if (!t.ok()) return t.status();
  MutexLock lock(mu_);
  slots_[*t].quota.store(bytes, std::memory_order_relaxed);
  LogLocked(*t);
  return Status::OK();
}

Status TenantRegistry::Restore(TenantIndex index, const std::string& name, uint64_t quota) {
  if (name.empty() || name.size() > 255) return Status(Code::kInvalidParams, "recovered tenant name is malformed");
  MutexLock lock(mu_);
  size_t n = count_.load(std::memory_order_relaxed);
  if (index < n) {  // the default tenant, registered at construction
    if (names_[index] != name) return Status(Code::kInvalidParams, "recovered tenant " + name + " has index 0");
  } else if (index == n && n < kMaxTenants) {
    names_[n] = name;
    by_name_.emplace(name, index);
    count_.store(n + 1, std::memory_order_release);
  } else {
    return Status(Code::kInvalidParams, "recovered tenant " + name + " has index " + std::to_string(index) + " where " +
                                            std::to_string(n) + " comes next");
  }
  slots_[index].quota.store(quota, std::memory_order_relaxed);
  return Status::OK();
}

void TenantRegistry::LogLocked(TenantIndex t) {
  if (!sink_) return;
  pb::LogRecord rec;
  pb::LogTenant* lt = rec.mutable_tenant();
  lt->set_index(t);
  lt->set_name(names_[t]);
  uint64_t q = slots_[t].quota.load(std::memory_order_relaxed);
  lt->set_has_quota(q != kNoQuota);
  lt->set_quota(q == kNoQuota ? 0 : q);
  sink_->Append(rec);
}

uint64_t TenantRegistry::ChargeUpTo(TenantIndex t, uint64_t unit, uint64_t max_units) {
  Slot& s = slots_[t];
  uint64_t quota = s.quota.load(std::memory_order_relaxed);
  uint64_t used = s.used.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t room = quota == kNoQuota ? UINT64_MAX : (quota > used ? quota - used : 0);
    uint64_t n = unit == 0 ? max_units : std::min<uint64_t>(max_units, room / unit);
    if (n == 0) return 0;
    if (s.used.compare_exchange_weak(used, used + n * unit, std::memory_order_relaxed)) return n;
  }
}

void TenantRegistry::Release(TenantIndex t, uint64_t bytes) {
  slots_[t].used.fetch_sub(bytes, std::memory_order_relaxed);
}

}  // namespace yb
