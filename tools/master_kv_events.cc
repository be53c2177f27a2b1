#include "master_kv_events.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>

#include "common/resolve.h"

namespace yb::tools {
namespace {

// The host of a tcp:// endpoint ("tcp://127.0.0.1:5557" -> "127.0.0.1", "tcp://[::1]:5557" ->
// "::1"); empty for another transport (ipc://, inproc://), which stays on this host.
std::string TcpHost(const std::string& endpoint) {
  constexpr std::string_view kTcp = "tcp://";
  if (endpoint.rfind(kTcp, 0) != 0) return "";
  std::string rest = endpoint.substr(kTcp.size());
  if (auto semi = rest.find(';'); semi != std::string::npos) rest = rest.substr(semi + 1);  // "src;dst"
  if (!rest.empty() && rest[0] == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.rfind(':'));
}

}  // namespace

void AddKvEventsFlags(CLI::App& app, KvEventsFlags& f) {
  // A flag as gflags has it: --enable_kv_events, --enable_kv_events=true or =false.
  app.add_flag("--enable_kv_events", f.enable,
               "publish KV events (a key stored or removed, per medium: cpu, disk) on a ZeroMQ PUB socket, in "
               "Mooncake's message shape, for cache-aware routers; GET /kv_events/status counts them");
  app.add_option("--kv_events_bind_endpoint", f.config.bind_endpoint,
                 "where the PUB socket binds (ZeroMQ's syntax). The events name every key, unauthenticated: in "
                 "protected mode without a secret only an endpoint on this host is taken")
      ->capture_default_str();
  app.add_option("--kv_events_backend_id", f.config.backend_id,
                 "the events' backend_id, naming this pool's stream (default: the master's RPC address)");
  app.add_option("--kv_events_queue_capacity", f.config.queue_capacity,
                 "events waiting to be sent at most; past it the oldest are dropped and the sequence numbers of "
                 "their batches skipped (subscribers see the gap; counted as dropped_events; 0: no bound)")
      ->capture_default_str();
  app.add_option("--kv_events_emit_legacy_compat", f.config.emit_legacy_compat_fields,
                 "also give vLLM's and SGLang's field names (type, block_hashes, parent_block_hash)")
      ->capture_default_str();
  app.add_option("--kv_events_emit_object_key", f.config.emit_object_key,
                 "give each event's key as object_key; without it an event whose key is not a decimal or 0x-hex "
                 "64-bit block hash is not published")
      ->capture_default_str();
  const char* ignored = "accepted for Mooncake's command lines; not stamped on events (as in Mooncake)";
  app.add_option("--kv_events_model_name", f.model_name, ignored);
  app.add_option("--kv_events_tenant_id", f.tenant_id, ignored);
  app.add_option("--kv_events_additional_salt", f.additional_salt, ignored);
  app.add_option("--kv_events_lora_name", f.lora_name, ignored);
  app.add_option("--kv_events_block_size", f.block_size, ignored);
  app.add_option("--kv_events_dp_rank", f.dp_rank, ignored);
}

Result<std::unique_ptr<KvEvents>> StartKvEvents(const KvEventsFlags& f, const std::string& default_backend_id,
                                                const net::Security& security) {
  if (!f.enable) return std::unique_ptr<KvEvents>();
  KvEventsConfig c = f.config;
  if (c.backend_id.empty()) c.backend_id = default_backend_id;
  const std::string host = TcpHost(c.bind_endpoint);
  if (!host.empty()) {
    // ZeroMQ takes a port past 65535 without a word (and binds another): refused here.
    const std::string port = c.bind_endpoint.substr(c.bind_endpoint.rfind(':') + 1);
    int n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (port != "*" && (ec != std::errc() || end != port.data() + port.size() || n < 0 || n > 65535)) {
      return Status(Code::kInvalidParams, "--kv_events_bind_endpoint " + c.bind_endpoint +
                                              ": the port must be 0-65535 or * (tcp://HOST:PORT)");
    }
  }
  const bool off_host = !host.empty() && !IsLoopbackAddress(host) && host != "localhost";
  if (off_host && security.loopback_only()) {
    return Status(Code::kInvalidParams,
                  "--kv_events_bind_endpoint " + c.bind_endpoint +
                      ": KV events name every key, unauthenticated, and this master is in protected mode without a "
                      "secret (it serves only its own host): bind to 127.0.0.1, or give the cluster a secret "
                      "(docs/security.md)");
  }
  auto sender = BindKvEventSocket(c.bind_endpoint);
  if (!sender.ok()) return sender.status();
  if (off_host) {
    spdlog::warn("KV events on {}: ZeroMQ PUB has no authentication, so any process that reaches it reads every key "
                 "this pool stores; keep it on a network only routers reach",
                 c.bind_endpoint);
  }
  spdlog::info("KV events published on {} (backend_id '{}', queue of {} events)", c.bind_endpoint, c.backend_id,
               c.queue_capacity);
  auto unix_ms = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  };
  return std::make_unique<KvEvents>(std::move(c), std::move(sender).value(), unix_ms);
}

}  // namespace yb::tools
