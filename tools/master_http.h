// The master's HTTP endpoints (on --metrics_port): /metrics (Prometheus text), /health, /segments
// (JSON usage), /get_all_segments (segment names, as SGLang polls), /tenants (quotas and usage),
// and the administration that changes state: POST /drain and POST /tenants/quota. With
// authentication on (--auth_secret_file), those two answer 401 unless the request carries
// `Authorization: Bearer <token>`, the token `yb admin-token` prints from the cluster's secret.
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>
#include <string>

#include "ha/ha_master.h"
#include "ha/meta_log.h"
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
  std::string admin_token;  // "": the endpoints that change state ask for none (no authentication)
};

// Adds every route to `server`; `c` must outlive it.
void AddMasterRoutes(httplib::Server& server, const MasterHttpContext& c);

}  // namespace yb::tools
