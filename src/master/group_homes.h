// Where each routing group (Mooncake's ReplicateConfig.group_ids) placed its last object: the
// segment its next object's first replica tries first, so that a group's objects (a request's or
// a layer's blocks) sit together where they fit. Soft state: a restarted or promoted master starts
// without it (objects already placed stay where they are; a group's next object starts it anew).
// Bounded: past kMaxGroups it forgets every group at once. Thread-safe.
#pragma once

#include <string>
#include <unordered_map>

#include "common/thread_annotations.h"
#include "api/master_api.h"

namespace yb {

class GroupHomes {
 public:
  static constexpr size_t kMaxGroups = 1 << 20;

  // The segment name the group's last object went to, or "".
  std::string Home(TenantIndex tenant, const std::string& group) const {
    MutexLock lock(mu_);
    auto it = homes_.find(Key(tenant, group));
    return it == homes_.end() ? std::string() : it->second;
  }
  void Set(TenantIndex tenant, const std::string& group, std::string segment) {
    if (group.empty() || segment.empty()) return;
    MutexLock lock(mu_);
    if (homes_.size() >= kMaxGroups) homes_.clear();
    homes_[Key(tenant, group)] = std::move(segment);
  }

 private:
  static std::string Key(TenantIndex tenant, const std::string& group) {
    return std::to_string(tenant) + '/' + group;
  }
  mutable Mutex mu_;
  std::unordered_map<std::string, std::string> homes_ GUARDED_BY(mu_);
};

}  // namespace yb
