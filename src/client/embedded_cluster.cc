#include "client/embedded_cluster.h"

#include <map>
#include <mutex>

#include "transfer/memcpy_transport.h"

namespace yb {
namespace {
std::mutex g_mu;
std::map<std::string, std::weak_ptr<EmbeddedCluster>> g_clusters;  // guarded by g_mu
}  // namespace

std::optional<std::string> EmbeddedClusterName(const std::string& addr) {
  if (addr == "embedded") return std::string("default");
  if (addr.rfind("embedded:", 0) == 0 && addr.size() > 9) return addr.substr(9);
  return std::nullopt;
}

Result<std::shared_ptr<EmbeddedCluster>> EmbeddedCluster::Get(const std::string& name, const MasterConfig& config) {
  std::lock_guard lock(g_mu);
  if (auto existing = g_clusters[name].lock()) return existing;
  std::shared_ptr<EmbeddedCluster> c(new EmbeddedCluster());
  auto master = MasterService::Create(config, c->clock_);
  if (!master.ok()) return master.status();
  c->master_ = std::move(master).value();
  c->local_ = std::make_shared<LocalSegmentRegistry>();
  c->engine_ = std::make_shared<TransferEngine>();
  c->engine_->AddTransport(std::make_shared<MemcpyTransport>(c->local_));
  MasterService* m = c->master_.get();
  c->runner_.Add("master-background", std::chrono::milliseconds(200), [m] { m->RunBackgroundOnce(); });
  c->runner_.Start();
  g_clusters[name] = c;
  return c;
}

EmbeddedCluster::~EmbeddedCluster() { runner_.Stop(); }

}  // namespace yb
