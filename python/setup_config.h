// What MooncakeDistributedStore.setup() makes of its arguments (docs/compat.md): the positional
// form's and the dict form's, built the same way, into a ClientConfig and the few settings of the
// Python store itself. Conversion only: the client checks the configuration (ValidateClientConfig).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "yuebing/client.h"

namespace yb::py_setup {

// What Mooncake's Python setup() assumes for arguments left out, where it differs from a C++
// client's defaults (ClientConfig): it contributes 16 MiB, and looks for a master on this host.
inline constexpr uint64_t kPyGlobalSegmentSize = 16ULL << 20;
inline constexpr const char* kPyMasterServerAddr = yb::kDefaultMasterAddress;
inline constexpr int kPyClientHttpPort = 9300;
// init_all's: Mooncake's (a 1 GiB staging buffer, the master on this host).
inline constexpr uint64_t kInitAllLocalBufferSize = 1ULL << 30;

// setup()'s arguments beyond the client's configuration.
struct Extras {
  bool enable_client_http_server = false;
  int client_http_port = kPyClientHttpPort;
  std::string client_http_host = "0.0.0.0";
};

// The positional setup's configuration, over the environment (ApplyEnvironment): the arguments
// given win.
ClientConfig Config(const std::string& local_hostname, const std::string& metadata_server,
                    uint64_t global_segment_size, uint64_t local_buffer_size, const std::string& protocol,
                    const std::string& devices, const std::string& master_server_addr, bool enable_ssd_offload,
                    const std::string& ssd_offload_path, const std::string& tenant_id);

struct FromDictResult {
  ClientConfig config;
  Extras extras;
};
// setup(dict): Mooncake's keys (sizes as bytes or "4 GB"), and ours (security, etcd, zone,
// checksums). INVALID_PARAMS for a size or port that does not parse.
Result<FromDictResult> FromDict(const pybind11::dict& d);

}  // namespace yb::py_setup
