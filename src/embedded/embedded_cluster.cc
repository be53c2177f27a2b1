#include "embedded/embedded_cluster.h"

#include <map>
#include <mutex>

#include "client/client_internal.h"
#include "transfer/memcpy_transport.h"
#include "yuebing/embedded.h"

namespace yb {
namespace {
std::mutex g_mu;
std::map<std::string, std::weak_ptr<EmbeddedCluster>> g_clusters;  // guarded by g_mu
}  // namespace

Result<std::shared_ptr<EmbeddedCluster>> EmbeddedCluster::Get(const std::string& name, const MasterConfig& config) {
  std::lock_guard lock(g_mu);
  if (auto existing = g_clusters[name].lock()) return existing;
  std::shared_ptr<EmbeddedCluster> c(new EmbeddedCluster());
  auto master = MasterService::Create(config, c->scheduler_.clock());
  if (!master.ok()) return master.status();
  c->master_ = std::move(master).value();
  c->local_ = std::make_shared<LocalSegmentRegistry>();
  c->engine_ = std::make_shared<TransferEngine>();
  c->engine_->AddTransport(std::make_shared<MemcpyTransport>(c->local_));
  MasterService* m = c->master_.get();
  c->background_ = c->scheduler_.Every("yb-master-bg", std::chrono::milliseconds(200), [m] { m->RunBackgroundOnce(); });
  g_clusters[name] = c;
  return c;
}

EmbeddedCluster::~EmbeddedCluster() { background_.reset(); }

void EnableEmbeddedMaster() {
  SetEmbeddedConnector([](const ClientConfig& config, const std::string& name) -> Result<std::unique_ptr<Client>> {
    auto cluster = EmbeddedCluster::Get(name);
    if (!cluster.ok()) return cluster.status();
    const std::shared_ptr<EmbeddedCluster>& c = *cluster;
    ClientParts parts;
    parts.master = c->master();
    parts.local_segments = c->local_segments();
    parts.engine = c->engine();
    parts.keepalive = c;
    return ClientInternal::Create(config, std::move(parts));
  });
}

}  // namespace yb
