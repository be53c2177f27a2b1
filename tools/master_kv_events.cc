#include "master_kv_events.h"

#include <spdlog/spdlog.h>

#include <charconv>
#include <chrono>

#include "common/grant.h"
#include "common/resolve.h"
#include "ha/meta_log.h"

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

// Refuses what cannot be served: a TCP port out of range; an endpoint off this host from a master
// in protected mode without a secret (the events name every key, unauthenticated). `*off_host`:
// it is reachable from other hosts.
Status CheckEndpoint(const std::string& flag, const std::string& endpoint, const net::Security& security,
                     bool* off_host) {
  const std::string host = TcpHost(endpoint);
  if (!host.empty()) {
    const std::string port = endpoint.substr(endpoint.rfind(':') + 1);
    int n = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), n);
    if (port != "*" && (ec != std::errc() || end != port.data() + port.size() || n < 0 || n > 65535)) {
      return Status(Code::kInvalidParams, flag + " " + endpoint + ": the port must be 0-65535 or * (tcp://HOST:PORT)");
    }
  }
  *off_host = !host.empty() && !IsLoopbackAddress(host) && host != "localhost";
  if (*off_host && security.loopback_only()) {
    return Status(Code::kInvalidParams,
                  flag + " " + endpoint +
                      ": KV events name every key, unauthenticated, and this master is in protected mode without a "
                      "secret (it serves only its own host): bind to 127.0.0.1, or give the cluster a secret "
                      "(docs/security.md)");
  }
  return Status::OK();
}

uint8_t MediaOfRecord(const pb::LogObject& o) {
  uint8_t media = 0;
  for (const auto& r : o.replicas()) {
    media |= r.kind() == static_cast<uint32_t>(ReplicaKind::kMemory) ? kMediaMemory : kMediaDisk;
  }
  return media;
}

std::string TenantName(const MasterImage& image, uint32_t index) {
  auto t = image.tenants.find(index);
  return t == image.tenants.end() ? "" : t->second.name();
}

// What a record changed of the media a key can be read from, as the live events say it (removals
// first), appended to `out`.
void EventsOfRecord(const MasterImage& before, uint64_t position, const pb::LogRecord& rec, std::vector<KvEvent>& out) {
  const pb::LogObject* now = nullptr;
  const std::string* table_key = nullptr;
  switch (rec.change_case()) {
    case pb::LogRecord::kObject:
      now = &rec.object();
      table_key = &rec.object().key();
      break;
    case pb::LogRecord::kPublished:
      now = &rec.published();
      table_key = &rec.published().key();
      break;
    case pb::LogRecord::kObjectGone:
      table_key = &rec.object_gone();
      break;
    default:
      return;
  }
  if (table_key->size() < 2) return;
  auto was = before.objects.find(HashedKey(*table_key));
  const uint8_t had = was == before.objects.end() ? 0 : MediaOfRecord(was->second);
  const uint8_t has = now ? MediaOfRecord(*now) : 0;
  const uint32_t tenant = now ? now->tenant() : (was == before.objects.end() ? 0 : was->second.tenant());
  AppendMediaEvents(std::string_view(*table_key).substr(2), TenantName(before, tenant), had, has, position, out);
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
  app.add_option("--kv_events_replay_endpoint", f.replay_endpoint,
                 "where a ZeroMQ ROUTER socket answers replay requests (ours: an 8-byte big-endian log position, "
                 "answered with the events after it, or a snapshot), served from the metadata log; needs "
                 "--metadata_dir. Default: none");
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
  bool off_host = false;
  YB_RETURN_IF_ERROR(CheckEndpoint("--kv_events_bind_endpoint", c.bind_endpoint, security, &off_host));
  auto sender = BindKvEventSocket(c.bind_endpoint);
  if (!sender.ok()) return sender.status();
  if (off_host) {
    spdlog::warn("KV events on {}: ZeroMQ PUB has no authentication, so any process that reaches it reads every key "
                 "this pool stores; keep it on a network only routers reach",
                 c.bind_endpoint);
  }
  spdlog::info("KV events published on {} (backend_id '{}', queue of {} events)", c.bind_endpoint, c.backend_id,
               c.queue_capacity);
  return std::make_unique<KvEvents>(std::move(c), std::move(sender).value(), [] { return WallMs(); });
}

Result<std::unique_ptr<KvEventReplay>> KvEventReplay::Start(const KvEventsFlags& f, const KvEvents* events,
                                                            std::string log_dir, std::function<uint64_t()> released,
                                                            const net::Security& security) {
  if (f.replay_endpoint.empty()) return std::unique_ptr<KvEventReplay>();
  if (!events) return Status(Code::kInvalidParams, "--kv_events_replay_endpoint needs --enable_kv_events");
  if (log_dir.empty()) {
    return Status(Code::kInvalidParams,
                  "--kv_events_replay_endpoint is served from the metadata log: it needs --metadata_dir (and a "
                  "durability level other than off)");
  }
  bool off_host = false;
  YB_RETURN_IF_ERROR(CheckEndpoint("--kv_events_replay_endpoint", f.replay_endpoint, security, &off_host));
  auto socket = KvReplaySocket::Bind(f.replay_endpoint);
  if (!socket.ok()) return socket.status();
  std::unique_ptr<KvEventReplay> r(new KvEventReplay());
  r->config_ = events->config();
  r->log_dir_ = std::move(log_dir);
  r->released_ = std::move(released);
  r->socket_ = std::move(socket).value();
  spdlog::info("KV event replay served on {} from the metadata log in {}", f.replay_endpoint, r->log_dir_);
  return r;
}

bool KvEventReplay::ServeOnce(int timeout_ms) {
  auto request = socket_->Receive(timeout_ms);
  if (!request) return false;
  Answer(*request);
  return true;
}

bool KvEventReplay::Send(const KvReplaySocket::Request& r, std::vector<KvEvent>& batch) {
  if (batch.empty()) return true;
  uint64_t encoded = 0, skipped = 0;
  const std::string payload = EncodeKvEventBatch(batch, next_event_id_, WallMs(), config_, &encoded, &skipped);
  next_event_id_ += encoded;
  const uint64_t position = batch.back().position;
  batch.clear();
  return encoded == 0 || socket_->Reply(r, position, payload);
}

void KvEventReplay::Answer(const KvReplaySocket::Request& r) {
  ++answered_;
  if (!r.position) {
    spdlog::warn("KV event replay: a request that is not an 8-byte position: answered with an empty replay");
    (void)socket_->Reply(r, 0, "");
    return;
  }
  const uint64_t from = *r.position, upto = released_();
  if (from != KvReplaySocket::kReplaySnapshot && from >= upto) {
    (void)socket_->Reply(r, from, "");  // nothing after it here (a standby behind the leader, or nothing new)
    return;
  }
  MasterImage image;
  std::vector<KvEvent> batch;
  bool ok = true;
  Status st = Status(Code::kFileNotFound, "a snapshot was asked for");
  if (from != KvReplaySocket::kReplaySnapshot) {
    st = ha::ReadLogRange(log_dir_, from, upto, &image, [&](uint64_t seq, const pb::LogRecord& rec) {
      EventsOfRecord(image, seq, rec, batch);
      if (ok && batch.size() >= KvEvents::kMaxBatch) ok = Send(r, batch);
    });
    if (st.ok() && ok) ok = Send(r, batch);
  }
  if (!st.ok() && ok) {  // a snapshot: everything stored as of `upto`
    spdlog::info("KV event replay after position {}: answered with a snapshot as of {} ({})", from, upto, st.message());
    batch.clear();
    st = ha::ReadLogRange(log_dir_, upto, upto, &image, [](uint64_t, const pb::LogRecord&) {});
    if (!st.ok()) {
      spdlog::warn("KV event replay: the metadata log does not give the state as of {}: {}", upto, st.message());
      (void)socket_->Reply(r, from == KvReplaySocket::kReplaySnapshot ? 0 : from, "");
      return;
    }
    KvEvent cleared;
    cleared.cleared = true;
    cleared.position = upto;
    batch.push_back(cleared);
    for (const auto& [table_key, o] : image.objects) {
      if (table_key.size() < 2) continue;
      AppendMediaEvents(std::string_view(table_key).substr(2), TenantName(image, o.tenant()), 0, MediaOfRecord(o), upto,
                        batch);
      if (ok && batch.size() >= KvEvents::kMaxBatch) ok = Send(r, batch);
    }
    if (ok) ok = Send(r, batch);
  }
  if (ok) (void)socket_->Reply(r, upto, "");  // the end: the subscriber has everything up to `upto`
}

}  // namespace yb::tools
