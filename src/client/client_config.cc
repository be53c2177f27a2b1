// ValidateClientConfig: the one check of a client's configuration, whoever fills it (the C API,
// Python, yb-client, yb, a C++ program): every entry point reaches it through Connect().
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

#include "client/client_internal.h"
#include "common/listener.h"
#include "common/log.h"
#include "net/security.h"
#include "yuebing/client.h"

namespace yb {
namespace {

Status Bad(const std::string& what) { return Status(Code::kInvalidParams, what); }

constexpr long long kMaxRpcTimeoutMs = 24LL * 3600 * 1000;  // what MC_RPC_TIMEOUT_MS < 0 (none) becomes

Status ValidateSsdTier(const ClientConfig& c) {
  const SsdTierConfig& s = c.ssd;
  if (c.global_segment_size == 0) return Bad("enable_offload needs a global segment (global_segment_size > 0)");
  if (s.path.empty()) return Bad("enable_offload needs a storage path (ssd_offload_path / --storage_root_dir)");
  if (s.total_size_limit == 0) return Bad("the SSD tier's size limit is 0");
  if (s.bucket_size_limit == 0 || s.bucket_keys_limit == 0) return Bad("the SSD tier's bucket limits must be > 0");
  if (s.eviction_policy != "fifo" && s.eviction_policy != "lru") {
    return Bad("bucket eviction policy must be fifo or lru, not '" + s.eviction_policy + "'");
  }
  if (!(s.low_watermark >= 0 && s.low_watermark <= s.high_watermark && s.high_watermark <= 1)) {
    return Bad("the SSD tier's watermarks must satisfy 0 <= low <= high <= 1");
  }
  if (s.idle_ms == 0) return Bad("the SSD tier's idle pause must be at least 1 ms");
  return Status::OK();
}

// "1", "true", "on", "yes" / "0", "false", "off", "no", any case.
std::optional<bool> ParseBool(std::string v) {
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return std::tolower(ch); });
  if (v == "1" || v == "true" || v == "on" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "off" || v == "no") return false;
  return std::nullopt;
}

}  // namespace

void ApplyEnvironment(ClientConfig& c, const std::function<const char*(const char*)>& lookup) {
  auto get = [&](const char* name) -> std::optional<std::string> {
    const char* v = lookup(name);
    if (!v) return std::nullopt;
    return std::string(v);
  };
  if (auto v = get("MC_SLICE_SIZE")) c.mc_slice_size = *v;  // as Mooncake's users set it
  if (auto v = get("MC_STORE_CLUSTER_ID"); v && !v->empty()) c.cluster_id = *v;
  if (auto v = get("MC_RPC_TIMEOUT_MS"); v && !v->empty()) {
    // Mooncake: a negative value disables the deadline; here the longest one is kept instead.
    char* end = nullptr;
    const long long ms = std::strtoll(v->c_str(), &end, 10);
    if (end == v->c_str() || *end != '\0') {
      YB_LOG_WARN("MC_RPC_TIMEOUT_MS='{}' is not a number of milliseconds: rpc_timeout_ms stays {}", *v,
                  c.rpc_timeout_ms);
    } else {
      c.rpc_timeout_ms = ms < 0 || ms > kMaxRpcTimeoutMs ? kMaxRpcTimeoutMs
                         : ms == 0                      ? c.rpc_timeout_ms
                                                        : static_cast<uint32_t>(ms);
    }
  }
  // Mooncake's range for a client's port; a bad value or range is logged and the default kept.
  for (auto [name, field] : {std::pair{"MC_STORE_CLIENT_MIN_PORT", &c.client_port_min},
                             std::pair{"MC_STORE_CLIENT_MAX_PORT", &c.client_port_max}}) {
    auto v = get(name);
    if (!v || v->empty()) continue;
    char* end = nullptr;
    const long port = std::strtol(v->c_str(), &end, 10);
    if (end == v->c_str() || *end != '\0' || port < 1 || port > 65535) {
      YB_LOG_WARN("{}='{}' is not a port: it stays {}", name, *v, *field);
    } else {
      *field = static_cast<uint16_t>(port);
    }
  }
  if (c.client_port_min > c.client_port_max) {
    const ClientConfig defaults;
    YB_LOG_WARN("MC_STORE_CLIENT_MIN_PORT {} is above MC_STORE_CLIENT_MAX_PORT {}: the range {}-{} is used",
                c.client_port_min, c.client_port_max, defaults.client_port_min, defaults.client_port_max);
    c.client_port_min = defaults.client_port_min;
    c.client_port_max = defaults.client_port_max;
  }
  if (c.ssd.path.empty()) {
    if (auto v = get("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH"); v && !v->empty()) {
      c.ssd.path = *v;
    } else if (auto root = get("MOONCAKE_STORAGE_ROOT_DIR"); root && !root->empty()) {
      c.ssd.path = *root;
    }
  }
  if (auto v = get("YB_ZONE")) c.zone = *v;
  if (auto v = get("YB_AUTH_SECRET_FILE")) c.auth_secret_file = *v;
  if (auto v = get("YB_TLS_CERT")) c.tls_cert = *v;
  if (auto v = get("YB_TLS_KEY")) c.tls_key = *v;
  if (auto v = get("YB_TLS_CA")) c.tls_ca = *v;
  if (auto v = get("YB_ETCD_TLS_CA")) c.etcd_tls_ca = *v;
  if (auto v = get("YB_ETCD_TLS_CERT")) c.etcd_tls_cert = *v;
  if (auto v = get("YB_ETCD_TLS_KEY")) c.etcd_tls_key = *v;
  if (auto v = get("YB_ETCD_USER")) c.etcd_user = *v;
  if (auto v = get("YB_ETCD_PASSWORD_FILE")) c.etcd_password_file = *v;
  if (auto v = get("YB_TENANT"); v && !v->empty()) c.tenant = *v;
  if (auto v = get("YB_LOCATION_CACHE_TTL_MS")) {
    try {
      size_t used = 0;
      const unsigned long ms = std::stoul(*v, &used);
      if (used != v->size() || ms > 3'600'000) throw std::out_of_range(*v);
      c.location_cache_ttl_ms = static_cast<uint32_t>(ms);
    } catch (const std::exception&) {
      YB_LOG_WARN("YB_LOCATION_CACHE_TTL_MS='{}' is not milliseconds (0-3600000): the cache keeps {} ms", *v,
                  c.location_cache_ttl_ms);
    }
  }
  if (auto v = get("YB_PUT_RESERVATION_BYTES")) {
    try {
      size_t used = 0;
      const unsigned long long n = std::stoull(*v, &used);
      if (used != v->size()) throw std::out_of_range(*v);
      c.put_reservation_bytes = n;
    } catch (const std::exception&) {
      YB_LOG_WARN("YB_PUT_RESERVATION_BYTES='{}' is not a number of bytes: reservations keep up to {} bytes", *v,
                  c.put_reservation_bytes);
    }
  }
  // A switch: true or false; anything else is logged and leaves it as it was.
  auto flag = [&](const char* name, bool& field, const char* what) {
    auto v = get(name);
    if (!v) return;
    if (auto b = ParseBool(*v)) {
      field = *b;
    } else {
      YB_LOG_WARN("{}='{}' is not true or false: {} stays {}", name, *v, what, field ? "on" : "off");
    }
  };
  flag("YB_PROTECTED_MODE", c.protected_mode, "protected mode");
  flag("YB_WIRE_MACS", c.wire_macs, "MACs on every frame without TLS");
  flag("YB_STRICT_PROTOCOL", c.strict_protocol, "refusing protocols this build has no transport for");
  flag("YB_ENABLE_CHECKSUM", c.enable_checksum, "checksumming");
  flag("YB_SAME_HOST_TRANSFERS", c.same_host_transfers, "same-host transfers through shared memory");
  flag("YB_GET_BUFFER_IN_PLACE", c.get_buffer_in_place, "get_buffer reading the pool's bytes in place");
}

namespace {
// Mooncake's protocols that need hardware this build has no transport for.
bool RunsAsTcp(const std::string& protocol) { return protocol == "rdma" || protocol == "efa" || protocol == "nvlink"; }
}  // namespace

ClientConfig EffectiveConfig(const ClientConfig& config) {
  ClientConfig c = config;
  if (RunsAsTcp(c.protocol) && !c.strict_protocol) {
    YB_LOG_WARN("protocol '{}' asks for hardware this build has no transport for: running over tcp. Set the "
                "protocol to \"tcp\" in your configuration (MOONCAKE_PROTOCOL, the JSON's \"protocol\", setup()'s "
                "argument) to silence this, or YB_STRICT_PROTOCOL=1 to refuse instead",
                c.protocol);
    c.protocol = "tcp";
  }
  return c;
}

Status ValidateClientConfig(const ClientConfig& c) {
  if (RunsAsTcp(c.protocol)) {
    if (c.strict_protocol) {
      return Status(Code::kNotSupported, "protocol '" + c.protocol +
                                             "' is not available (this build has no transport for it) and "
                                             "YB_STRICT_PROTOCOL refuses a fallback; use protocol \"tcp\"");
    }
  } else if (c.protocol != "tcp") {
    return Bad("protocol '" + c.protocol + "' is unknown; use \"tcp\"");
  }
  if (c.local_hostname.empty()) return Bad("local_hostname is empty");
  if (c.master_server_addr.empty()) return Bad("master_server_addr is empty");
  if (c.global_segment_size > 0 && c.segment_chunk_size < 4096) {
    return Bad("segment_chunk_size must be at least 4096 bytes");
  }
  if (c.transfer_max_connections < 1) return Bad("transfer_max_connections must be at least 1");
  if (c.transfer_keepalive_sec > kMaxKeepaliveSec) {
    return Bad("transfer_keepalive_sec must be at most " + std::to_string(kMaxKeepaliveSec));
  }
  if (c.rpc_timeout_ms == 0) return Bad("rpc_timeout_ms must be > 0");
  if (c.zone.size() > kMaxZoneLength ||
      std::any_of(c.zone.begin(), c.zone.end(), [](char ch) { return ch <= ' ' || ch > '~'; })) {
    return Bad("zone '" + c.zone + "' must be at most 64 printable characters without spaces");
  }
  if (c.tls_cert.empty() != c.tls_key.empty()) return Bad("tls_cert and tls_key go together");
  if (c.etcd_tls_cert.empty() != c.etcd_tls_key.empty()) return Bad("etcd_tls_cert and etcd_tls_key go together");
  if (c.etcd_user.empty() != c.etcd_password_file.empty()) return Bad("etcd_user and etcd_password_file go together");
  if ((!c.tls_ca.empty() || !c.tls_cert.empty()) && c.global_segment_size > 0 && c.tls_cert.empty() &&
      !EmbeddedClusterName(c.master_server_addr)) {
    return Bad("a client that contributes memory serves transfers: with TLS on it needs tls_cert and tls_key");
  }
  if (c.enable_offload) YB_RETURN_IF_ERROR(ValidateSsdTier(c));
  if (!c.real_client.empty()) {
    if (c.global_segment_size > 0) {
      return Bad("a dummy client (real_client set) contributes no memory of its own: its real client does; "
                 "global_segment_size must be 0");
    }
    if (c.enable_offload) return Bad("a dummy client (real_client set) has no SSD tier: its real client does");
  }
  return Status::OK();
}

Result<std::shared_ptr<net::Security>> ClientSecurity(const ClientConfig& c) {
  net::SecurityOptions o;
  if (!c.auth_secret_file.empty()) {
    auto secret = net::ReadSecretFile(c.auth_secret_file);
    if (!secret.ok()) return secret.status();
    o.secret = std::move(secret).value();
  }
  o.tls = {c.tls_cert, c.tls_key, c.tls_ca};
  o.protected_mode = c.protected_mode;
  o.wire_macs = c.wire_macs;
  if (o.secret.empty() && !o.tls.enabled() && o.protected_mode) return net::Security::None();
  return net::Security::Create(std::move(o));
}

Result<EtcdClient::Options> EtcdAccess(const ClientConfig& c) {
  return EtcdClient::Access(c.etcd_tls_ca, c.etcd_tls_cert, c.etcd_tls_key, c.etcd_user, c.etcd_password_file);
}

rpc::RpcChannel::Options MasterChannel(const ClientConfig& c, std::shared_ptr<const net::Security> security) {
  rpc::RpcChannel::Options o;
  o.security = std::move(security);
  o.tenant = c.tenant;
  return o;
}

}  // namespace yb
