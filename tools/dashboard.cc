#include "dashboard.h"

#include "dashboard_page.h"  // generated from dashboard.html (tools/CMakeLists.txt)

namespace yb::tools {

nlohmann::json ToJson(const DashboardSample& s) {
  return {{"t", s.t_ms},
          {"keys", s.keys},
          {"capacity", s.capacity},
          {"allocated", s.allocated},
          {"segments", s.segments},
          {"live_clients", s.live_clients},
          {"get_hits", s.get_hits},
          {"get_misses", s.get_misses},
          {"exist_hits", s.exist_hits},
          {"exist_misses", s.exist_misses},
          {"puts_refused", s.puts_refused},
          {"evicted_objects", s.evicted_objects},
          {"repaired", s.repaired},
          {"objects_lost", s.objects_lost},
          {"offloaded", s.offloaded},
          {"disk_replicas_dropped", s.disk_replicas_dropped},
          {"rpc_calls", s.rpc_calls},
          {"rpc_failures", s.rpc_failures},
          {"rpc_micros", s.rpc_micros},
          {"standby_lag_records", s.standby_lag_records},
          {"leader", s.leader}};
}

void DashboardHistory::Record(const DashboardSample& s) {
  MutexLock lock(mu_);
  samples_.push_back(s);
  while (samples_.size() > keep_) samples_.pop_front();
}

nlohmann::json DashboardHistory::Json() const {
  nlohmann::json out = nlohmann::json::array();
  MutexLock lock(mu_);
  for (const auto& s : samples_) out.push_back(ToJson(s));
  return out;
}

std::string_view DashboardPage() { return kDashboardPage; }

}  // namespace yb::tools
