// ClientConfig: the environment read in one place, Mooncake's variables, one validation for
// every entry point.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

#include "client/client_internal.h"
#include "client/mock_master.h"
#include "common/checksum.h"
#include "common/clock.h"
#include "master/master_service.h"
#include "transfer/fault_transport.h"
#include "transfer/memcpy_transport.h"
#include "transfer/transfer_engine.h"
#include "yuebing/client.h"
#include "yuebing/embedded.h"

namespace yb {
namespace {

// The C API's and Python's setup read the environment through one function; a value that does
// not parse leaves the setting as it was.
TEST(ClientConfigTest, TheEnvironmentIsReadInOnePlace) {
  std::map<std::string, std::string> env{
      {"YB_ENABLE_CHECKSUM", "false"}, {"YB_ZONE", "rack-1"}, {"MC_SLICE_SIZE", "1MB"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ClientConfig c;
  EXPECT_TRUE(c.enable_checksum);  // on by default
  ApplyEnvironment(c, lookup);
  EXPECT_FALSE(c.enable_checksum);
  EXPECT_EQ(c.zone, "rack-1");
  EXPECT_EQ(c.mc_slice_size, "1MB");
  env["YB_ENABLE_CHECKSUM"] = "perhaps";
  ApplyEnvironment(c, lookup);
  EXPECT_FALSE(c.enable_checksum);
  env["YB_ENABLE_CHECKSUM"] = "ON";
  ApplyEnvironment(c, lookup);
  EXPECT_TRUE(c.enable_checksum);
  EXPECT_TRUE(c.same_host_transfers);  // on by default
  env["YB_SAME_HOST_TRANSFERS"] = "0";
  ApplyEnvironment(c, lookup);
  EXPECT_FALSE(c.same_host_transfers);
  EXPECT_TRUE(c.get_buffer_in_place);
  EXPECT_EQ(c.location_cache_ttl_ms, 1000u);
  env["YB_GET_BUFFER_IN_PLACE"] = "false";
  env["YB_LOCATION_CACHE_TTL_MS"] = "0";
  ApplyEnvironment(c, lookup);
  EXPECT_FALSE(c.get_buffer_in_place);
  EXPECT_EQ(c.location_cache_ttl_ms, 0u);
  env["YB_LOCATION_CACHE_TTL_MS"] = "soon";  // not milliseconds: logged, left as it was
  ApplyEnvironment(c, lookup);
  EXPECT_EQ(c.location_cache_ttl_ms, 0u);
  env["YB_LOCATION_CACHE_TTL_MS"] = "250";
  ApplyEnvironment(c, lookup);
  EXPECT_EQ(c.location_cache_ttl_ms, 250u);
}

// Mooncake's variables, where its client reads them.
TEST(ClientConfigTest, MooncakesEnvironmentVariablesAreHonoured) {
  std::map<std::string, std::string> env{{"MC_STORE_CLUSTER_ID", "team-a"},
                                         {"MC_RPC_TIMEOUT_MS", "12000"},
                                         {"MOONCAKE_STORAGE_ROOT_DIR", "/data/root"},
                                         {"YB_STRICT_PROTOCOL", "1"}};
  auto lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  ClientConfig c;
  ApplyEnvironment(c, lookup);
  EXPECT_EQ(c.cluster_id, "team-a");
  EXPECT_EQ(c.rpc_timeout_ms, 12000u);
  EXPECT_EQ(c.ssd.path, "/data/root");
  EXPECT_TRUE(c.strict_protocol);
  // The offload path wins over the root; a path already configured wins over both.
  env["MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"] = "/data/offload";
  ClientConfig d;
  ApplyEnvironment(d, lookup);
  EXPECT_EQ(d.ssd.path, "/data/offload");
  ClientConfig e;
  e.ssd.path = "/mine";
  ApplyEnvironment(e, lookup);
  EXPECT_EQ(e.ssd.path, "/mine");
  // A negative timeout (Mooncake: none) is the longest one; a word is logged and ignored.
  env["MC_RPC_TIMEOUT_MS"] = "-1";
  ApplyEnvironment(e, lookup);
  EXPECT_EQ(e.rpc_timeout_ms, 24u * 3600 * 1000);
  env["MC_RPC_TIMEOUT_MS"] = "soon";
  ApplyEnvironment(e, lookup);
  EXPECT_EQ(e.rpc_timeout_ms, 24u * 3600 * 1000);
  env["MC_STORE_CLUSTER_ID"] = "";  // empty: the default stays
  ClientConfig f;
  ApplyEnvironment(f, lookup);
  EXPECT_EQ(f.cluster_id, ClientConfig{}.cluster_id);
  // The range a client's port is taken from: Mooncake's by default, its variables, and a bad value
  // or an upside-down range logged and left at the default.
  EXPECT_EQ(f.client_port_min, 12300);
  EXPECT_EQ(f.client_port_max, 14300);
  env["MC_STORE_CLIENT_MIN_PORT"] = "20000";
  env["MC_STORE_CLIENT_MAX_PORT"] = "20010";
  ClientConfig g;
  ApplyEnvironment(g, lookup);
  EXPECT_EQ(g.client_port_min, 20000);
  EXPECT_EQ(g.client_port_max, 20010);
  env["MC_STORE_CLIENT_MAX_PORT"] = "70000";
  ClientConfig h;
  ApplyEnvironment(h, lookup);
  EXPECT_EQ(h.client_port_max, 14300);  // not a port: the default; and then min > max: both defaults
  EXPECT_EQ(h.client_port_min, 12300);
}

// Every entry point (C, Python, the daemons) checks a configuration through this one function.
TEST(ClientConfigTest, OneValidationForEveryEntryPoint) {
  ClientConfig c;
  EXPECT_TRUE(ValidateClientConfig(c).ok());
  // Mooncake's hardware protocols (the callers' default configs) run as tcp; strict, they are refused.
  for (const char* p : {"rdma", "efa", "nvlink"}) {
    c.protocol = p;
    c.strict_protocol = false;
    EXPECT_TRUE(ValidateClientConfig(c).ok()) << p;
    EXPECT_EQ(EffectiveConfig(c).protocol, "tcp");
    c.strict_protocol = true;
    Status strict = ValidateClientConfig(c);
    EXPECT_EQ(strict.code(), Code::kNotSupported) << p;
    EXPECT_NE(strict.message().find("\"tcp\""), std::string::npos) << strict.ToString();
    EXPECT_EQ(EffectiveConfig(c).protocol, p);
  }
  c.strict_protocol = false;
  c.protocol = "udp";
  EXPECT_EQ(ValidateClientConfig(c).code(), Code::kInvalidParams);
  c = ClientConfig{};
  c.enable_offload = true;
  EXPECT_EQ(ValidateClientConfig(c).code(), Code::kInvalidParams);  // no segment, no path
  c.global_segment_size = 1 << 20;
  c.ssd.path = "/tmp/x";
  EXPECT_TRUE(ValidateClientConfig(c).ok());
  c.ssd.low_watermark = 0.95;  // above the high one
  EXPECT_EQ(ValidateClientConfig(c).code(), Code::kInvalidParams);
  c.ssd.low_watermark = 0.5;
  c.ssd.eviction_policy = "random";
  EXPECT_EQ(ValidateClientConfig(c).code(), Code::kInvalidParams);
  c = ClientConfig{};
  c.global_segment_size = 1 << 20;
  c.segment_chunk_size = 100;
  EXPECT_EQ(Client::Connect(c).code(), Code::kInvalidParams);  // Connect checks before anything starts
}

}  // namespace
}  // namespace yb
