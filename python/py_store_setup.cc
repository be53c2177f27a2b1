// Store: setup and lifecycle (py_store.h).
#include <cstdlib>
#include <optional>

#include "http/client_http.h"
#include "py_store.h"
#include "yuebing/embedded.h"

namespace yb::py_store {

Store::~Store() {
  py::gil_scoped_release unlocked;
  http_.reset();
  client_.reset();
}

int Store::Setup(const std::string& local_hostname, const std::string& metadata_server, uint64_t global_segment_size,
                 uint64_t local_buffer_size, const std::string& protocol, const std::string& rdma_devices,
                 const std::string& master_server_addr, const py::object& engine, bool enable_ssd_offload,
                 const std::string& ssd_offload_path, const std::string& tenant_id, bool enable_client_http_server,
                 int client_http_port) {
  if (!engine.is_none()) {
    return Error(yb::Status(yb::Code::kNotSupported, "setup: a shared transfer engine object is not supported"));
  }
  yb::ClientConfig c =
      yb::py_setup::Config(local_hostname, metadata_server, global_segment_size, local_buffer_size, protocol,
                           rdma_devices, master_server_addr, enable_ssd_offload, ssd_offload_path, tenant_id);
  yb::py_setup::Extras extras;
  extras.enable_client_http_server = enable_client_http_server;
  extras.client_http_port = client_http_port;
  return Connect(c, extras);
}

int Store::SetupFromDict(const py::dict& d) {
  auto setup = yb::py_setup::FromDict(d);
  if (!setup.ok()) return Error(setup.status());
  return Connect(setup->config, setup->extras);
}

int Store::SetupDummy(uint64_t mem_pool_size, uint64_t local_buffer_size, const std::string& server_address) {
  (void)mem_pool_size;
  yb::ClientConfig c;
  c.real_client = server_address;
  c.local_buffer_size = local_buffer_size;
  yb::ApplyEnvironment(c, [](const char* name) { return std::getenv(name); });
  return Connect(c, {});
}

int Store::InitAll(const std::string& protocol, const std::string& device_name, uint64_t mount_segment_size) {
  return Setup("localhost", "P2PHANDSHAKE", mount_segment_size, yb::py_setup::kInitAllLocalBufferSize, protocol,
               device_name, yb::py_setup::kPyMasterServerAddr, py::none(), false, "", "default", false,
               yb::py_setup::kPyClientHttpPort);
}

int Store::Close() {
  std::shared_ptr<yb::Client> old = std::move(client_);
  std::unique_ptr<yb::http::AdminHttp> http = std::move(http_);
  py::gil_scoped_release unlocked;
  http.reset();
  old.reset();  // the client leaves once calls still running on other threads are done
  return 0;
}

int Store::HealthCheck() {
  auto c = client_;
  if (!c) return kNotInitialized;
  py::gil_scoped_release unlocked;
  return c->HealthCheck().ok() ? kHealthy : kMasterUnreachable;
}

std::shared_ptr<yb::Client> Store::Ready(const char* what) {
  if (!client_) LogError(std::string(what) + ": the store is not set up (call setup() first)");
  return client_;
}

int Store::Connect(const yb::ClientConfig& c, const yb::py_setup::Extras& extras) {
  if (client_) return Error(yb::Status(yb::Code::kInvalidParams, "setup: this store is already set up"));
  yb::Result<std::unique_ptr<yb::Client>> r(yb::Status(yb::Code::kInternal, ""));
  {
    py::gil_scoped_release unlocked;
    yb::EnableEmbeddedMaster();
    r = yb::Client::Connect(c);
  }
  if (!r.ok()) return Error(r.status());
  std::shared_ptr<yb::Client> client = std::move(r).value();
  if (extras.enable_client_http_server) {
    auto http = std::make_unique<yb::http::AdminHttp>();
    std::weak_ptr<yb::Client> weak = client;
    yb::http::AddClientRoutes(http->server(), [weak]() -> std::optional<yb::ClientStats> {
      auto c = weak.lock();
      if (!c) return std::nullopt;
      return c->Stats();
    });
    bool started = false;
    {
      py::gil_scoped_release unlocked;
      started =
          http->Start("MooncakeDistributedStore", extras.client_http_host, extras.client_http_port, c.loopback_only());
    }
    if (!started) {
      {
        py::gil_scoped_release unlocked;
        client.reset();
      }
      return Error(yb::Status(yb::Code::kInvalidParams, "setup: cannot serve the client HTTP server on " +
                                                            extras.client_http_host + ":" +
                                                            std::to_string(extras.client_http_port)));
    }
    http_ = std::move(http);
  }
  client_ = std::move(client);
  local_buffer_size_ = c.local_buffer_size;
  return 0;
}

bool Store::NoStaging(const char* what) const {
  if (local_buffer_size_ > 0) return false;
  LogError(std::string(what) +
           ": this store was set up with local_buffer_size 0, and a value given as a Python "
           "object is written through the local buffer (as Mooncake's): give setup() one, or "
           "write from a registered buffer (put_from)");
  return true;
}

bool Store::SameLength(size_t keys, size_t buffers, size_t sizes, const char* what) {
  if (keys == buffers && keys == sizes) return true;
  LogError(std::string(what) + ": keys, buffers and sizes differ in length");
  return false;
}

}  // namespace yb::py_store
