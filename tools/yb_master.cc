// yb-master: the metadata service, over the network. Mooncake's flag names and defaults;
// --config_path names a YAML or JSON file with the same keys (command-line flags win).
// Serves RPC on --rpc_port and HTTP on --metrics_port (tools/master_http.h: /metrics, /health,
// /segments, /get_all_segments as SGLang polls, the dashboard at /, /kv_events/status, ...), and
// with --enable_kv_events the KV events on a ZeroMQ PUB socket (tools/master_kv_events.h).
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/clock.h"
#include "common/open_files.h"
#include "common/scheduler.h"
#include "config_file.h"
#include "flags.h"
#include "ha/ha_master.h"
#include "ha/log_gate.h"
#include "ha/meta_log.h"
#include "http/admin_http.h"
#include "master/master_service.h"
#include "master_http.h"
#include "master_kv_events.h"
#include "net/auth.h"
#include "net/security.h"
#include "rpc/master_client.h"
#include "rpc/master_server.h"
#include "stop_signals.h"
#include "yuebing/types.h"

namespace {

// The daemon's settings beside the master's own (MasterConfig, whose fields the other flags set).
struct DaemonFlags {
  std::string rpc_address = "0.0.0.0";
  int rpc_port = yb::kDefaultMasterPort;
  int rpc_thread_num = 0;
  bool rpc_pin_threads = yb::rpc::RpcServer::Options{}.pin_to_cpus;
  int rpc_max_connections = yb::rpc::RpcServer::Options{}.max_connections;
  int rpc_max_connections_per_peer = yb::rpc::RpcServer::Options{}.max_connections_per_peer;
  uint64_t rpc_max_message_bytes = yb::rpc::RpcServer::Options{}.max_body;
  uint32_t max_batch_keys = yb::rpc::MasterServiceOptions{}.max_batch;
  int rpc_stall_timeout_sec = yb::rpc::RpcServer::Options{}.half_sent_timeout_ms / 1000;
  int64_t rpc_keepalive_sec = yb::Keepalive{}.total().count();
  int metrics_port = 9003;
  std::string metrics_address = "0.0.0.0";
  int64_t max_kv_soft_pin_ttl = 24 * 3600 * 1000LL;  // accepted: soft pins have the one lifetime
  std::string memory_allocator = "offset";
  bool enable_ha = false;
  std::string etcd_endpoints;
  std::string etcd_tls_ca, etcd_tls_cert, etcd_tls_key, etcd_user, etcd_password_file;
  std::string cluster_id = "mooncake_cluster";
  int64_t ha_lease_ttl_ms = yb::ha::HaMaster::Options{}.lease_ttl.count();
  std::string config_path;
  std::string log_level = "info";
  // The metadata log: beside where the master starts, as etcd and Redis keep their data.
  std::string metadata_dir = "yb-master.data";
  std::string metadata_durability = "process";
  int64_t metadata_sync_interval_ms = 10;
  uint64_t metadata_snapshot_bytes = yb::ha::MetaLog::Options{}.snapshot_log_bytes;
  uint64_t metadata_file_bytes = yb::ha::MetaLog::Options{}.file_bytes;
  uint64_t metadata_min_free_bytes = yb::ha::MetaLog::Options{}.min_free_bytes;
  // Security (docs/security.md).
  std::string auth_secret_file;
  bool protected_mode = true;
  bool wire_macs = true;
  bool tenants_may_mount = false;
  std::string tenant_secrets_file;
  std::string tls_cert, tls_key, tls_ca;
  std::string tenant_quotas;  // "team-a=10GB,team-b=1TB"
  yb::tools::KvEventsFlags kv_events;
};


// host:port of this master as others name it: its RPC address, or its host name where it listens
// on every address.
std::string AdvertisedAddress(const DaemonFlags& f) {
  std::string host = f.rpc_address;
  if (host.empty() || host == "0.0.0.0" || host == "::") {
    char name[256] = {};
    host = gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
  }
  return host + ":" + std::to_string(f.rpc_port);
}

// Reads the command line and the config file into `f` and `mc` (whose fields hold the defaults):
// -1 to go on, else the exit status (0 after --help, 2 for a bad value).
int ParseFlags(int argc, char** argv, DaemonFlags& f, yb::MasterConfig& mc) {
  CLI::App app{"yb-master: Yuebing's metadata service"};
  app.option_defaults()->always_capture_default();
  app.add_option("--rpc_address", f.rpc_address, "address to serve RPC on");
  app.add_option("--rpc_port", f.rpc_port, "RPC port")->check(CLI::Range(1, 65535));
  app.add_option("--rpc_thread_num", f.rpc_thread_num, "RPC threads (0: min(16, cores))")->check(CLI::Range(0, 256));
  app.add_flag("--rpc_pin_threads", f.rpc_pin_threads,
               "pin RPC thread i to the i-th CPU and serve each connection on the CPU that receives its packets: "
               "fewer cross-CPU wake-ups, for a host that runs little besides the master");
  app.add_option("--rpc_max_connections_per_peer", f.rpc_max_connections_per_peer,
                 "open RPC connections from one peer address at most (0: no bound)")
      ->check(CLI::Range(0, 1 << 24));
  yb::tools::AddSizeOption(app, "--rpc_max_message_bytes", f.rpc_max_message_bytes,
                           "largest RPC request (a frame's body); a larger one closes its connection");
  app.add_option("--max_batch_keys", f.max_batch_keys,
                 "keys (or items) one batch call may carry at most; a larger batch is refused whole")
      ->check(CLI::Range(uint32_t{1}, uint32_t{1} << 24));
  app.add_option("--max_key_length", mc.max_key_length, "bytes of a key at most")
      ->check(CLI::Range(uint32_t{1}, uint32_t{1} << 16));
  app.add_option("--rpc_max_connections", f.rpc_max_connections,
                 "open RPC connections at most; one more is closed at once and logged")
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--rpc_stall_timeout_sec", f.rpc_stall_timeout_sec,
                 "close an RPC connection that has sent part of a request, or does not read its replies, and moves "
                 "no byte for this long; idle connections stay open (0: never)")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  app.add_option("--rpc_keepalive_sec", f.rpc_keepalive_sec,
                 "close the RPC connection of a peer that is silent and answers no TCP keepalive probe for about "
                 "this long (its host died or was cut off); 0: off")
      ->check(CLI::Range(int64_t{0}, yb::kMaxKeepaliveSec));
  app.add_option("--metrics_port", f.metrics_port, "HTTP port for /metrics, /health, /segments (0: off)")
      ->check(CLI::Range(0, 65535));
  app.add_option("--metrics_address", f.metrics_address, "address to serve HTTP on");
  app.add_option("--default_kv_lease_ttl", mc.default_kv_lease_ttl_ms, "lease granted to readers, ms")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--default_kv_soft_pin_ttl", mc.default_kv_soft_pin_ttl_ms, "soft pin lifetime, ms")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--max_kv_soft_pin_ttl", f.max_kv_soft_pin_ttl, "upper bound of a soft pin, ms (accepted)");
  app.add_option("--allow_evict_soft_pinned_objects", mc.allow_evict_soft_pinned_objects,
                 "evict soft-pinned objects after all others");
  app.add_option("--eviction_ratio", mc.eviction_ratio, "share of capacity one eviction frees")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--eviction_high_watermark_ratio", mc.eviction_high_watermark_ratio, "usage that starts eviction")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--liveness_max_gap_ms", mc.liveness_max_gap_ms,
                 "a master whose own liveness check (every 200 ms) did not run for longer than this was paused or "
                 "starved: every client gets a fresh --client_ttl instead of being judged by that silence (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--client_ttl", mc.client_ttl_sec, "seconds of silence before a client is declared dead")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  app.add_option("--client_grace_sec", mc.client_grace_sec,
                 "seconds a client declared dead keeps its segments suspended (not read, no new replicas, repair "
                 "waits): back with the same memory by then, it keeps every replica (-1: --client_ttl; 0: dropped "
                 "at once)")
      ->check(CLI::Range(int64_t{-1}, int64_t{86400}))
      ->capture_default_str();
  app.add_option("--client_quiet_ms", mc.client_quiet_ms,
                 "a client silent this long (cut off from the master, paused), short of --client_ttl, is not read "
                 "from any less but its segments take no new replicas until it is heard again (-1: half the "
                 "--client_ttl, within 2000-3000)")
      ->check(CLI::Range(int64_t{-1}, int64_t{86400000}))
      ->capture_default_str();
  app.add_option("--unreachable_report_ms", mc.unreachable_report_ms,
                 "how long a client's report that it cannot reach a segment (its heartbeat, each second, repeats it "
                 "while that lasts) keeps the segment from readers and writers where others will do")
      ->check(CLI::Range(int64_t{1000}, int64_t{600000}))
      ->capture_default_str();
  app.add_option("--allocation_strategy", mc.allocation_strategy,
                 "random | free_ratio_first | local_first (the writer's own segment, then its host's, then random)")
      ->check(CLI::IsMember({"random", "free_ratio_first", "local_first"}));
  app.add_option("--memory_allocator", f.memory_allocator, "offset (the only one)")->check(CLI::IsMember({"offset"}));
  app.add_option("--put_start_discard_timeout_sec", mc.put_start_discard_timeout_sec,
                 "seconds before another writer may take over an unfinished Put (at once when its writer was declared "
                 "dead or left)");
  app.add_option("--put_start_release_timeout_sec", mc.put_start_release_timeout_sec,
                 "seconds before an unfinished Put's space is reclaimed");
  app.add_option("--enable_ha", f.enable_ha,
                 "one of several masters: etcd elects the leader, the others are hot standbys");
  app.add_option("--etcd_endpoints,--ha_backend_connstring", f.etcd_endpoints,
                 "etcd endpoints for HA, host:port separated by ';'");
  // As Mooncake's master: the default comes from MC_STORE_CLUSTER_ID, which its clients read too.
  if (const char* env = std::getenv("MC_STORE_CLUSTER_ID"); env && *env) f.cluster_id = env;
  app.add_option("--cluster_id", f.cluster_id,
                 "cluster name (HA): the etcd keys are mooncake-store/<cluster_id>/... (MC_STORE_CLUSTER_ID)")
      ->capture_default_str();
  app.add_option("--ha_lease_ttl_ms", f.ha_lease_ttl_ms,
                 "the leader's etcd lease: a dead leader is replaced after about this long")
      ->check(CLI::Range(int64_t{1000}, int64_t{60000}));
  app.add_option("--enable_offload", mc.enable_offload,
                 "SSD tier, eager: queue every new object for offload to the SSD tiers of the clients holding it");
  app.add_option("--offload_on_evict", mc.offload_on_evict,
                 "SSD tier: eviction moves objects down to a client's SSD tier instead of dropping them");
  app.add_option("--offload_force_evict", mc.offload_force_evict,
                 "SSD tier: eviction drops objects whose disk copy is not made instead of keeping them in DRAM "
                 "(with --offload_on_evict, when a client's offload queue is full; with --enable_offload, while the "
                 "eager copy is queued or running)");
  app.add_option("--offload_queue_limit", mc.offload_queue_limit, "objects queued or in flight per client")
      ->check(CLI::PositiveNumber);
  app.add_option(
      "--disk_away_copies_limit", mc.disk_away_copies_limit,
      "SSD tier: disk copies remembered while their owner is away (dead or unmounted), so that copies of "
      "keys removed or rewritten meanwhile are refused when it returns; about 120 bytes beside the key each");
  app.add_option("--miss_reason_keys", mc.miss_reason_keys,
                 "Keys whose last departure (removed, evicted, lost with a node, Put refused...) the master remembers, "
                 "to say why a read missed (yb why, /metrics yb_master_misses_total); 24 bytes each, allocated when "
                 "the first keys go; 0: none")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 31));
  yb::tools::AddSizeOption(app, "--repair_bandwidth", mc.repair_bandwidth,
                           "re-replication: bytes per second copied into new replicas of objects that lost one with "
                           "a node (\"256 MB\"; 0: off)");
  app.add_option("--repair_task_timeout_sec", mc.repair_task_timeout_sec,
                 "re-replication: seconds a client has to report a copy before it is given up and made again")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--task_timeout_sec", mc.task_timeout_sec,
                 "copy and move tasks (create_copy_task, create_move_task): seconds one may take before it fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--max_segments_per_client", mc.max_segments_per_client,
                 "segments one client may have mounted at once (a node mounts its memory in segment_chunk_size "
                 "chunks); one more is refused")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option("--grant_ttl_sec", mc.grant_ttl_sec,
                 "lifetime of the grants handed out with replicas, which transfer servers check (a write's is at "
                 "most --put_start_discard_timeout_sec); the nodes' clocks must agree to well within it")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--metadata_dir", f.metadata_dir,
                 "directory of the metadata log and snapshots: the index survives a restart (\"\": off, the "
                 "index lives in memory only)");
  app.add_option("--metadata_durability", f.metadata_durability,
                 "what an acknowledged change survives. process: its record is written to the kernel before the "
                 "answer (and, with standbys, is on each standby counted): it survives kill -9 of the master (and the loss "
                 "of the leader's host); the log is synced in the background every --metadata_sync_interval_ms, so "
                 "a power loss of a lone master's host loses at most that. always: synced before the answer (a "
                 "Put's reservation: written), it survives the machine. off: no log (as --metadata_dir \"\")")
      ->check(CLI::IsMember({"process", "always", "off"}))
      ->capture_default_str();
  app.add_option("--metadata_sync_interval_ms", f.metadata_sync_interval_ms,
                 "with --metadata_durability process: the log is synced at least this often while it has "
                 "unsynced records, and at most this often; with always: records no answer waits for (a Put's "
                 "reservation, a background step's) are synced within it")
      ->check(CLI::Range(1, 60000))
      ->capture_default_str();
  yb::tools::AddSizeOption(app, "--metadata_snapshot_bytes", f.metadata_snapshot_bytes,
                           "log written since the last snapshot that calls for a new one");
  yb::tools::AddSizeOption(app, "--metadata_file_bytes", f.metadata_file_bytes, "size of one log file");
  yb::tools::AddSizeOption(app, "--metadata_min_free_bytes", f.metadata_min_free_bytes,
                           "free space under --metadata_dir below which the master refuses changes (serving reads) "
                           "and compacts its log, until there is again: room for a snapshot (0: only once a write "
                           "fails)");
  yb::tools::AddSecurityFlags(app, f.auth_secret_file, f.tls_cert, f.tls_key, f.tls_ca, f.wire_macs);
  yb::tools::AddProtectedModeFlag(app, f.protected_mode);
  yb::tools::AddEtcdFlags(app, f.etcd_tls_ca, f.etcd_tls_cert, f.etcd_tls_key, f.etcd_user, f.etcd_password_file);
  app.add_option("--tenant_secrets_file", f.tenant_secrets_file,
                 "YAML file of `tenant: secret` lines: a client proving one may register as that tenant only");
  app.add_option("--tenants_may_mount", f.tenants_may_mount,
                 "a client that proved only its tenant's secret may mount memory; its segments then take that "
                 "tenant's replicas only")
      ->capture_default_str();
  app.add_option("--tenant_quotas", f.tenant_quotas,
                 "byte quotas of tenants, NAME=SIZE separated by commas (\"team-a=10GB,team-b=none\"); also POST "
                 "/tenants/quota");
  yb::tools::AddKvEventsFlags(app, f.kv_events);
  app.add_option("--config_path", f.config_path, "YAML or JSON file with the same keys");
  app.add_option("--log_level", f.log_level, "trace | debug | info | warn | error");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help; else a bad flag or value, said by CLI11
  }
  if (!f.config_path.empty()) {
    if (auto st = yb::tools::ApplyConfigFile(app, f.config_path); !st.ok()) {
      spdlog::error("{}", st.message());
      return 2;
    }
  }
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  if (auto st = yb::tools::ParseTenantQuotas(f.tenant_quotas, &mc.tenant_quotas); !st.ok()) {
    spdlog::error("--tenant_quotas: {}", st.message());
    return 2;
  }
  return -1;
}

// The security the flags ask for (a secret, tenants' secrets, TLS, protected mode), said at start;
// null, with the reason logged, when it cannot be had or does not allow what the flags ask.
std::shared_ptr<yb::net::Security> MakeSecurity(const DaemonFlags& f, yb::MasterConfig& mc) {
  yb::net::SecurityOptions so;
  so.tls = {f.tls_cert, f.tls_key, f.tls_ca};
  so.protected_mode = f.protected_mode;
  so.wire_macs = f.wire_macs;
  if (!f.auth_secret_file.empty()) {
    auto secret = yb::net::ReadSecretFile(f.auth_secret_file);
    if (!secret.ok()) {
      spdlog::error("--auth_secret_file: {}", secret.status().message());
      return nullptr;
    }
    so.secret = std::move(secret).value();
  }
  if (!f.tenant_secrets_file.empty()) {
    auto tenants = yb::net::ReadTenantSecrets(f.tenant_secrets_file);
    if (!tenants.ok()) {
      spdlog::error("--tenant_secrets_file: {}", tenants.status().message());
      return nullptr;
    }
    so.tenant_secrets = std::move(tenants).value();
    mc.hold_freed_ranges = true;  // tenants are walled off from each other: so are their old grants
  }
  if (so.tls.enabled() && (f.tls_cert.empty() || f.tls_key.empty())) {
    spdlog::error("TLS: the master serves it, so it needs --tls_cert and --tls_key");
    return nullptr;
  }
  auto made = yb::net::Security::Create(std::move(so));
  if (!made.ok()) {
    spdlog::error("{}", made.status().message());
    return nullptr;
  }
  const std::shared_ptr<yb::net::Security> security = std::move(made).value();
  if (security->loopback_only()) {
    spdlog::info(
        "protected mode: no --auth_secret_file, so RPC and HTTP serve only processes on this host; give every "
        "process the cluster's secret to serve others (docs/security.md)");
  } else if (!security->auth()) {
    spdlog::warn(
        "PROTECTED MODE IS OFF and there is no --auth_secret_file: ANY process that reaches this master's ports "
        "may call it, read every segment's grant key through the HA channel, drain nodes and set quotas "
        "(tenants are named, not proven); see docs/security.md");
  }
  if (f.enable_ha && !security->auth() && !yb::IsLoopbackAddress(f.rpc_address)) {
    spdlog::error(
        "--enable_ha across hosts (--rpc_address {}) needs --auth_secret_file: the HA channel carries every "
        "segment's grant key and the key that signs client tokens, so only masters that prove the cluster's "
        "secret may follow the log",
        f.rpc_address);
    return nullptr;
  }
  return security;
}

// The master as the flags build it, before anything serves: a lone master (its log optional) or
// one of several under etcd (HaMaster), its KV events and their replay endpoint. Members are
// destroyed in reverse: the masters before the events they report to, before the scheduler whose
// clock they read.
struct BuiltMaster {
  // The serving RPC server, once Run starts it: its loops are watched for stalls.
  std::shared_ptr<std::atomic<const yb::rpc::RpcServer*>> serving =
      std::make_shared<std::atomic<const yb::rpc::RpcServer*>>(nullptr);
  std::unique_ptr<yb::KvEvents> kv_events;  // null without --enable_kv_events
  std::unique_ptr<yb::MasterService> lone;
  std::unique_ptr<yb::ha::MetaLog> lone_log;
  std::unique_ptr<yb::ha::LogGate> lone_gate;
  std::unique_ptr<yb::ha::HaMaster> ha;
  // Events are published once the log has released them (a leader that dies has published nothing
  // its successor lacks); a standby's log is what it has written. Empty without a log.
  std::function<uint64_t()> released;
  std::unique_ptr<yb::tools::KvEventReplay> replay;  // outlives its job (Run's)

  yb::MasterApi& api() { return ha ? static_cast<yb::MasterApi&>(*ha) : *lone; }
  yb::ha::MetaLog* log() { return ha ? &ha->log() : lone_log.get(); }
  // The master serving now: the lone one, or the leader's (none while a standby).
  std::shared_ptr<yb::MasterService> current() {
    if (ha) return ha->master();
    return std::shared_ptr<yb::MasterService>(std::shared_ptr<void>(), lone.get());
  }
};

// Builds the master the flags describe into `m`, checking every flag first: nothing serves yet.
// -1 to go on, else the exit status (2: a flag it refuses; 1: the metadata log cannot be opened).
int Build(DaemonFlags& f, yb::MasterConfig& mc, const std::shared_ptr<yb::net::Security>& security,
          const yb::Scheduler& scheduler, BuiltMaster& m) {
  auto kv_events = yb::tools::StartKvEvents(f.kv_events, AdvertisedAddress(f), *security);
  if (!kv_events.ok()) {
    spdlog::error("{}", kv_events.status().message());
    return 2;
  }
  m.kv_events = std::move(kv_events).value();
  // The RPC server's loops are watched for stalls (liveness judged fairly); Run starts it.
  mc.receive_stall_ms = [serving = m.serving] {
    const yb::rpc::RpcServer* s = serving->load();
    return s ? s->Unresponsive() : int64_t{0};
  };
  if (f.metadata_durability == "off") f.metadata_dir.clear();
  yb::ha::MetaLog::Options lo;
  lo.dir = f.metadata_dir;
  lo.durability = f.metadata_durability == "always" ? yb::ha::MetaLog::Options::Durability::kAlways
                                                   : yb::ha::MetaLog::Options::Durability::kProcess;
  lo.sync_interval = std::chrono::milliseconds(f.metadata_sync_interval_ms);
  lo.snapshot_log_bytes = f.metadata_snapshot_bytes;
  lo.file_bytes = f.metadata_file_bytes;
  lo.min_free_bytes = f.metadata_min_free_bytes;

  if (f.enable_ha) {
    if (f.etcd_endpoints.empty()) {
      spdlog::error("--enable_ha needs --etcd_endpoints (or --ha_backend_connstring)");
      return 2;
    }
    if (f.metadata_dir.empty()) {
      spdlog::error("--enable_ha needs a --metadata_dir and a --metadata_durability other than off: standbys keep the "
                    "leader's log there");
      return 2;
    }
    if (f.rpc_address == "0.0.0.0" || f.rpc_address == "::" || f.rpc_address.empty()) {
      spdlog::error(
          "--enable_ha: --rpc_address must be an address the clients and the other masters reach this "
          "master at (it is what etcd names as the leader), not {}",
          f.rpc_address.empty() ? "empty" : f.rpc_address);
      return 2;
    }
    auto endpoints = yb::EtcdClient::ParseEndpoints(f.etcd_endpoints);
    if (!endpoints.ok()) {
      spdlog::error("--etcd_endpoints: {}", endpoints.status().ToString());
      return 2;
    }
    auto etcd =
        yb::EtcdClient::Access(f.etcd_tls_ca, f.etcd_tls_cert, f.etcd_tls_key, f.etcd_user, f.etcd_password_file);
    if (!etcd.ok()) {
      spdlog::error("{}", etcd.status().message());
      return 2;
    }
    yb::ha::HaMaster::Options ho;
    ho.etcd = std::move(etcd).value();
    ho.etcd.endpoints = std::move(*endpoints);
    ho.cluster_id = f.cluster_id;
    ho.address = f.rpc_address + ":" + std::to_string(f.rpc_port);
    ho.lease_ttl = std::chrono::milliseconds(f.ha_lease_ttl_ms);
    ho.master = mc;
    ho.log = lo;
    ho.security = security;
    ho.media_observer = m.kv_events.get();
    if (const auto& sec = security->options(); !sec.secret.empty()) {
      // The leader signs its name in etcd under every key a caller may hold.
      ho.view_keys = {sec.secret, yb::net::RoleKey(sec.secret, yb::net::Role::kNode),
                      yb::net::RoleKey(sec.secret, yb::net::Role::kAdmin)};
      for (const auto& [tenant, key] : sec.tenant_secrets) ho.view_keys.push_back(key);
    }
    if (auto st = yb::MasterService::Create(mc, scheduler.clock()); !st.ok()) {
      spdlog::error("bad configuration: {}", st.status().ToString());
      return 2;
    }
    auto created = yb::ha::HaMaster::Create(ho, scheduler.clock());
    if (!created.ok()) {
      spdlog::error("--metadata_dir {}: {}", f.metadata_dir, created.status().ToString());
      return 1;
    }
    m.ha = std::move(created).value();
  } else {
    auto created = yb::MasterService::Create(mc, scheduler.clock());
    if (!created.ok()) {
      spdlog::error("bad configuration: {}", created.status().ToString());
      return 2;
    }
    m.lone = std::move(created).value();
    if (!f.metadata_dir.empty()) {
      yb::MasterImage image;
      image.gone = yb::GoneKeys(mc.miss_reason_keys);
      auto opened = yb::ha::MetaLog::Open(lo, &image);
      if (!opened.ok()) {
        spdlog::error("--metadata_dir {}: {}", f.metadata_dir, opened.status().ToString());
        return 1;
      }
      m.lone_log = std::move(opened).value();
      if (auto st = m.lone->Load(image); !st.ok()) {
        spdlog::error("--metadata_dir {}: the recovered state does not load: {}", f.metadata_dir, st.ToString());
        return 1;
      }
      m.lone->SetSink(m.lone_log.get());
      m.lone_gate = std::make_unique<yb::ha::LogGate>(*m.lone_log);
    } else {
      spdlog::warn("no metadata log (--metadata_dir \"\" or --metadata_durability off): the index lives in memory only, "
                   "and a restart empties the cache");
    }
  }
  if (m.lone) {
    m.lone->SetMediaObserver(m.kv_events.get());
    if (auto st = m.lone->ApplyConfiguredQuotas(); !st.ok()) {
      spdlog::error("--tenant_quotas: {}", st.ToString());
      return 2;
    }
  }
  // The replay endpoint, checked here with every other flag: one it refuses stops the master
  // before anything serves.
  if (yb::ha::MetaLog* log = m.log()) m.released = [log] { return log->released_seq(); };
  auto started = yb::tools::KvEventReplay::Start(f.kv_events, m.kv_events.get(), m.log() ? f.metadata_dir : "",
                                                 m.released, *security);
  if (!started.ok()) {
    spdlog::error("{}", started.status().message());
    return 2;
  }
  m.replay = std::move(started).value();
  return -1;
}

// Serves RPC and HTTP and runs the background steps on `scheduler` until a stop signal; then stops
// in order (a leader gives its lease back, the log is synced). The exit status.
int Run(const DaemonFlags& f, const std::shared_ptr<yb::net::Security>& security, yb::Scheduler& scheduler,
        BuiltMaster& m) {
  sigset_t stop_signals = yb::tools::BlockStopSignals();
  yb::RaiseOpenFileLimit();  // a descriptor per client connection

  yb::rpc::RpcMetrics rpc_metrics;
  yb::rpc::RpcServer::Options ro;
  ro.address = f.rpc_address;
  ro.port = static_cast<uint16_t>(f.rpc_port);
  ro.max_connections = f.rpc_max_connections;
  ro.max_connections_per_peer = f.rpc_max_connections_per_peer;
  ro.max_body = static_cast<uint32_t>(std::min<uint64_t>(f.rpc_max_message_bytes, UINT32_MAX));
  ro.half_sent_timeout_ms = f.rpc_stall_timeout_sec * 1000;
  ro.keepalive = yb::Keepalive::After(std::chrono::seconds(f.rpc_keepalive_sec));
  ro.threads = f.rpc_thread_num > 0
                   ? f.rpc_thread_num
                   : static_cast<int>(std::min(16u, std::max(1u, std::thread::hardware_concurrency())));
  ro.pin_to_cpus = f.rpc_pin_threads;
  ro.gate = m.ha ? &m.ha->gate() : m.lone_gate.get();  // a change is answered once its record is durable
  ro.security = security;
  yb::rpc::RpcServer server(ro);
  std::function<uint64_t()> epoch;
  if (m.ha) epoch = [h = m.ha.get()] { return h->epoch(); };
  yb::rpc::MasterServiceOptions mso;
  mso.metrics = &rpc_metrics;
  mso.epoch = epoch;
  mso.data_key = security->cluster_data_key();
  mso.max_batch = f.max_batch_keys;
  mso.tenants_may_mount = f.tenants_may_mount;
  yb::rpc::RegisterMasterService(server, m.api(), mso);
  if (m.ha) m.ha->RegisterReplication(server);
  if (auto st = server.Start(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    return 1;
  }
  m.serving->store(&server);

  auto admin_token = yb::tools::MasterAdminToken(*security, f.metadata_dir);
  if (!admin_token.ok()) {
    spdlog::error("the admin token: {}", admin_token.status().ToString());
    return 1;
  }
  yb::http::AdminHttp http;
  yb::tools::DashboardHistory dashboard_history;
  yb::tools::MasterHttpContext http_context{[&m] { return m.current(); },
                                            rpc_metrics,
                                            server,
                                            m.log(),
                                            m.ha.get(),
                                            f.cluster_id,
                                            *admin_token,
                                            m.kv_events.get(),
                                            &dashboard_history};
  if (f.metrics_port > 0) {
    yb::tools::AddMasterRoutes(http.server(), http_context);
    if (!http.Start("yb-master", f.metrics_address, f.metrics_port, security->loopback_only())) return 1;
  }

  std::unique_ptr<yb::Scheduler::Job> background, snapshots, election, publisher, sampler, replayer;
  if (f.metrics_port > 0) {
    sampler = scheduler.Every("yb-dashboard", std::chrono::seconds(1), [&http_context, &dashboard_history] {
      dashboard_history.Record(yb::tools::DashboardSampleOf(http_context));
    });
  }
  if (yb::KvEvents* ev = m.kv_events.get()) {
    if (m.released) ev->SetReleased(m.released);
    publisher = scheduler.Every("yb-kv-events", std::chrono::milliseconds(2),
                                yb::Scheduler::Step([ev] { return ev->PublishOnce(); }));
  }
  if (yb::tools::KvEventReplay* r = m.replay.get()) {
    replayer = scheduler.Every("yb-kv-replay", std::chrono::milliseconds(5),
                               yb::Scheduler::Step([r] { return r->ServeOnce(0); }));
  }
  if (m.ha) {
    yb::ha::HaMaster* h = m.ha.get();
    election = scheduler.Every("yb-ha", std::chrono::milliseconds(100), [h] { h->RunOnce(); });
    background = scheduler.Every("yb-master-bg", std::chrono::milliseconds(200), [h] { h->RunBackgroundOnce(); });
    snapshots = scheduler.Every("yb-snapshot", std::chrono::seconds(1), [h] { h->MaintainLog(); });
  } else {
    yb::MasterService* lone = m.lone.get();
    background = scheduler.Every("yb-master-bg", std::chrono::milliseconds(200), [lone] { lone->RunBackgroundOnce(); });
    if (yb::ha::MetaLog* l = m.lone_log.get()) {
      snapshots = scheduler.Every("yb-snapshot", std::chrono::seconds(1), [l, lone] {
        l->Maintain([lone](const auto& emit) { lone->WriteImage(emit); }, lone->next_object_id());
      });
    }
  }
  spdlog::info("yb-master serving RPC on {}:{} ({} threads{}), HTTP on {}:{}{}", f.rpc_address, server.port(),
               ro.threads, ro.pin_to_cpus ? fmt::format(", {} pinned to CPUs", server.pinned_threads()) : "",
               f.metrics_address, f.metrics_port,
               m.ha ? fmt::format("; HA in cluster '{}' through etcd {}", f.cluster_id, f.etcd_endpoints) : "");

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("yb-master: signal {} received, shutting down", sig);
  election.reset();
  sampler.reset();
  replayer.reset();
  publisher.reset();
  snapshots.reset();
  background.reset();
  http.Stop();
  m.serving->store(nullptr);
  server.Stop();
  m.ha.reset();        // a leader gives its lease back
  m.lone_log.reset();  // what was appended is written and synced
  spdlog::info("yb-master stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  DaemonFlags f;
  yb::MasterConfig mc;  // the defaults of the flags
  if (int status = ParseFlags(argc, argv, f, mc); status >= 0) return status;
  auto security = MakeSecurity(f, mc);
  if (!security) return 2;
  yb::ThreadScheduler scheduler;  // the master's background steps, and its clock; outlives `m`
  BuiltMaster m;
  if (int status = Build(f, mc, security, scheduler, m); status >= 0) return status;
  return Run(f, security, scheduler, m);
}
