// The master's HTTP endpoints (on --metrics_port): /metrics (Prometheus text), /health, /segments
// (JSON usage), /get_all_segments (segment names, as SGLang polls), /tenants (quotas and usage),
// /kv_events/status (Mooncake's counts of the KV events published), the dashboard (/, /dashboard,
// and its feed /dashboard.json),
// and the administration that changes state: POST /drain, POST /undrain and POST /tenants/quota.
// Those always answer 401 unless the request carries `Authorization: Bearer <token>` (a header no
// web page can make a browser send: no CSRF), the token `yb admin-token` prints: derived from the
// cluster's secret, or, without one, made at start and kept in the metadata directory (AdminToken).
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>
#include <string>

#include "dashboard.h"
#include "ha/ha_master.h"
#include "ha/meta_log.h"
#include "http/admin_token.h"
#include "master/kv_events.h"
#include "master/master_service.h"
#include "rpc/master_server.h"

namespace yb::tools {

struct MasterHttpContext {
  std::function<std::shared_ptr<MasterService>()> current;  // the master serving now (null: a standby)
  const rpc::RpcMetrics& rpc;
  const rpc::RpcServer& server;
  ha::MetaLog* log = nullptr;  // the metadata log, when there is one
  ha::HaMaster* ha = nullptr;  // with --enable_ha
  std::string cluster_id;
  std::string admin_token;  // what the endpoints that change state ask for (never empty)
  const KvEvents* kv_events = nullptr;  // with --enable_kv_events
  const DashboardHistory* history = nullptr;  // the dashboard's samples (none: its charts start empty)
};

// The master's numbers now, for the dashboard's history (DashboardHistory::Record each second).
DashboardSample DashboardSampleOf(const MasterHttpContext& c);

// The admin token of a master: from its security (the cluster secret), else the one kept in
// `metadata_dir`/admin-token (made, 0600, on first start), else a new one each start (logged, as
// there is nowhere to keep it). FILE_* when the file cannot be read or written.
Result<std::string> MasterAdminToken(const net::Security& security, const std::string& metadata_dir);

// Adds every route to `server`; `c` must outlive it.
void AddMasterRoutes(httplib::Server& server, const MasterHttpContext& c);

}  // namespace yb::tools
