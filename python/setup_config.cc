#include "setup_config.h"

#include <cstdlib>
#include <optional>
#include <utility>

#include "common/units.h"

namespace yb::py_setup {

namespace py = pybind11;

ClientConfig Config(const std::string& local_hostname, const std::string& metadata_server,
                    uint64_t global_segment_size, uint64_t local_buffer_size, const std::string& protocol,
                    const std::string& devices, const std::string& master_server_addr, bool enable_ssd_offload,
                    const std::string& ssd_offload_path, const std::string& tenant_id) {
  ClientConfig c;
  ApplyEnvironment(c, [](const char* name) { return std::getenv(name); });
  c.local_hostname = local_hostname;
  c.metadata_server = metadata_server;
  c.global_segment_size = global_segment_size;
  c.local_buffer_size = local_buffer_size;
  c.protocol = protocol;
  c.device_name = devices;
  c.master_server_addr = master_server_addr;
  c.enable_offload = enable_ssd_offload;
  if (!ssd_offload_path.empty()) c.ssd.path = ssd_offload_path;  // else MOONCAKE_OFFLOAD_FILE_STORAGE_PATH's
  if (tenant_id != "default") c.tenant = tenant_id;
  return c;
}

Result<FromDictResult> FromDict(const py::dict& d) {
  auto str = [&](const char* k, const std::string& def) {
    return d.contains(k) ? py::str(d[k]).cast<std::string>() : def;
  };
  auto flag = [&](const char* k, bool def) {
    if (!d.contains(k)) return def;
    py::object v = d[k];
    if (py::isinstance<py::str>(v)) {
      std::string s = v.cast<std::string>();
      return s == "1" || s == "true" || s == "True" || s == "yes";
    }
    return py::bool_(v).cast<bool>();
  };
  auto size = [&](const char* k, uint64_t def) -> std::optional<uint64_t> {
    if (!d.contains(k)) return def;
    py::object v = d[k];
    if (py::isinstance<py::int_>(v)) return v.cast<uint64_t>();
    auto parsed = ParseSize(py::str(v).cast<std::string>());
    if (!parsed.ok()) return std::nullopt;
    return *parsed;
  };
  auto gss = size("global_segment_size", kPyGlobalSegmentSize);
  auto lbs = size("local_buffer_size", ClientConfig{}.local_buffer_size);
  auto port = size("client_http_port", kPyClientHttpPort);
  if (!gss || !lbs) {
    return Status(Code::kInvalidParams,
                  "setup: global_segment_size / local_buffer_size must be bytes or a size like \"4 GB\"");
  }
  if (!port || *port > 65535) return Status(Code::kInvalidParams, "setup: client_http_port");
  FromDictResult out;
  ClientConfig& c = out.config;
  c = Config(str("local_hostname", "localhost"), str("metadata_server", "P2PHANDSHAKE"), *gss, *lbs,
             str("protocol", "tcp"), str("device_name", str("rdma_devices", "")),
             str("master_server_address", str("master_server_addr", kPyMasterServerAddr)),
             flag("enable_ssd_offload", false), str("ssd_offload_path", ""), str("tenant_id", "default"));
  if (d.contains("zone")) c.zone = str("zone", "");
  if (d.contains("enable_checksum")) c.enable_checksum = flag("enable_checksum", true);
  if (d.contains("protected_mode")) c.protected_mode = flag("protected_mode", true);
  if (d.contains("wire_macs")) c.wire_macs = flag("wire_macs", true);
  // Security (docs/security.md) and etcd: as yb-client's flags, over YB_AUTH_SECRET_FILE, YB_TLS_*
  // and YB_ETCD_*.
  for (auto [key, field] : {std::pair{"auth_secret_file", &c.auth_secret_file}, std::pair{"tls_cert", &c.tls_cert},
                            std::pair{"tls_key", &c.tls_key}, std::pair{"tls_ca", &c.tls_ca},
                            std::pair{"etcd_tls_ca", &c.etcd_tls_ca}, std::pair{"etcd_tls_cert", &c.etcd_tls_cert},
                            std::pair{"etcd_tls_key", &c.etcd_tls_key}, std::pair{"etcd_user", &c.etcd_user},
                            std::pair{"etcd_password_file", &c.etcd_password_file}}) {
    if (d.contains(key)) *field = str(key, "");
  }
  out.extras.enable_client_http_server = flag("enable_client_http_server", false);
  out.extras.client_http_port = static_cast<int>(*port);
  out.extras.client_http_host = str("client_http_host", out.extras.client_http_host);
  return out;
}

}  // namespace yb::py_setup
