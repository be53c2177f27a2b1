// yb-master: the metadata service, over the network. Mooncake's flag names and defaults;
// --config_path names a YAML or JSON file with the same keys (command-line flags win).
// Serves RPC on --rpc_port and HTTP on --metrics_port: /metrics (Prometheus text), /health,
// /segments (JSON usage) and /get_all_segments (segment names, as SGLang polls).
#include <signal.h>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <thread>

#include "admin_http.h"
#include "common/clock.h"
#include "common/open_files.h"
#include "common/scheduler.h"
#include "common/segment_name.h"
#include "flags.h"
#include "ha/ha_master.h"
#include "ha/log_gate.h"
#include "ha/meta_log.h"
#include "master/master_service.h"
#include "rpc/master_client.h"
#include "rpc/master_server.h"
#include "stop_signals.h"

namespace {

// The daemon's settings beside the master's own (MasterConfig, whose fields the other flags set).
struct DaemonFlags {
  std::string rpc_address = "0.0.0.0";
  int rpc_port = 50051;
  int rpc_thread_num = 0;
  bool rpc_pin_threads = yb::rpc::RpcServer::Options{}.pin_to_cpus;
  int rpc_max_connections = yb::rpc::RpcServer::Options{}.max_connections;
  int rpc_stall_timeout_sec = yb::rpc::RpcServer::Options{}.half_sent_timeout_ms / 1000;
  int64_t rpc_keepalive_sec = yb::Keepalive{}.total().count();
  int metrics_port = 9003;
  std::string metrics_address = "0.0.0.0";
  int64_t max_kv_soft_pin_ttl = 24 * 3600 * 1000LL;  // accepted: soft pins have the one lifetime
  std::string memory_allocator = "offset";
  bool enable_ha = false;
  std::string etcd_endpoints;
  std::string cluster_id = "mooncake_cluster";
  int64_t ha_lease_ttl_ms = yb::ha::HaMaster::Options{}.lease_ttl.count();
  std::string config_path;
  std::string log_level = "info";
  // The metadata log: beside where the master starts, as etcd and Redis keep their data.
  std::string metadata_dir = "yb-master.data";
  bool metadata_sync = true;
  uint64_t metadata_snapshot_bytes = yb::ha::MetaLog::Options{}.snapshot_log_bytes;
  uint64_t metadata_file_bytes = yb::ha::MetaLog::Options{}.file_bytes;
};

// Applies a YAML/JSON config file: every key names a flag; flags given on the command line win.
bool ApplyConfigFile(CLI::App& app, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    spdlog::error("cannot read config file {}: {}", path, e.what());
    return false;
  }
  if (!root.IsMap()) {
    spdlog::error("config file {} must be a map of flag names to values", path);
    return false;
  }
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    CLI::Option* opt = nullptr;
    try {
      opt = app.get_option("--" + key);
    } catch (const CLI::OptionNotFound&) {
      spdlog::error("config file {}: unknown key '{}'", path, key);
      return false;
    }
    if (opt->count() > 0) continue;  // set on the command line
    try {
      opt->clear();
      opt->add_result(kv.second.as<std::string>());
      opt->run_callback();
    } catch (const std::exception& e) {
      spdlog::error("config file {}: bad value for '{}': {}", path, key, e.what());
      return false;
    }
  }
  return true;
}

std::string Metrics(const yb::MasterService* master, const yb::rpc::RpcMetrics& rpc, const yb::rpc::RpcServer& server,
                    const yb::ha::MetaLog* log, const yb::ha::HaMaster* ha) {
  yb::tools::PrometheusText p;
  if (ha) {
    p.Gauge("yb_master_ha_leader", "1 while this master leads (HA).", ha->role() == yb::ha::HaMaster::Role::kLeader);
    p.Gauge("yb_master_ha_epoch", "Epoch of the leader this master knows of.", ha->epoch());
    p.Counter("yb_master_ha_elections_won_total", "Elections this master won (failovers to it).", ha->elections_won());
    uint64_t counted = 0, lag = 0;
    const uint64_t last = log ? log->stats().last_seq : 0;
    for (const auto& s : ha->standbys()) {
      counted += s.in_sync;
      lag = std::max(lag, last > s.acked ? last - s.acked : 0);
    }
    p.Gauge("yb_master_ha_standbys", "Standbys this leader ships its log to.", ha->standbys().size());
    p.Gauge("yb_master_ha_standbys_in_sync", "Standbys counted: a change waits for each of them.", counted);
    p.Gauge("yb_master_ha_standby_lag_records", "Records the furthest standby is behind the leader's log.", lag);
  }
  if (log) {
    auto s = log->stats();
    p.Counter("yb_master_log_records_total", "Metadata log records appended.", s.records);
    p.Counter("yb_master_log_bytes_total", "Metadata log bytes written.", s.bytes);
    p.Counter("yb_master_log_writes_total", "Metadata log writes (each of what was appended since the last).",
              s.rounds);
    p.Counter("yb_master_log_syncs_total", "Metadata log syncs (each covers every record written before it).", s.syncs);
    p.Counter("yb_master_log_sync_microseconds_total", "Time spent in those syncs.", s.sync_us);
    p.Gauge("yb_master_log_last_seq", "Sequence number of the last record appended.", s.last_seq);
    p.Gauge("yb_master_log_synced_seq", "Every record up to this one is synced.", s.synced_seq);
    p.Counter("yb_master_log_snapshots_total", "Snapshots written since start.", s.snapshots);
    p.Gauge("yb_master_log_snapshot_milliseconds", "Duration of the last snapshot.", s.last_snapshot_ms);
    p.Gauge("yb_master_log_bytes_since_snapshot", "Log bytes written since the last snapshot.",
            s.log_bytes_since_snapshot);
    p.Gauge("yb_master_log_recovered_records", "Log records replayed at start.", s.recovered_records);
    p.Gauge("yb_master_log_cut_bytes", "Bytes of a torn or corrupt log tail cut at start.", s.cut_bytes);
    p.Gauge("yb_master_rpc_held_replies", "Replies waiting for their change to be durable.", server.held_replies());
  }
  auto per_method = [&](const char* name, const char* help, auto value) {
    p.Family("counter", name, help);
    for (const auto& row : yb::rpc::kMasterMethods) {
      p.Sample(name, fmt::format("op=\"{}\"", row.name), value(static_cast<uint16_t>(row.method)));
    }
  };
  per_method("yb_master_requests_total", "RPC calls per operation.", [&](uint16_t m) { return rpc.calls(m); });
  per_method("yb_master_failures_total", "Failed RPC calls per operation (a batch fails when a key fails).",
             [&](uint16_t m) { return rpc.failures(m); });
  p.Gauge("yb_master_rpc_connections", "Open RPC connections.", server.open_connections());
  p.Counter("yb_master_rpc_malformed_frames_total", "RPC frames refused as malformed (each closed its connection).",
            server.malformed_frames());
  p.Counter("yb_master_rpc_reads_paused_total", "Times a connection stopped being read: its peer did not read replies.",
            server.reads_paused());
  p.Counter("yb_master_rpc_stalled_closed_total",
            "Connections closed after moving no byte for --rpc_stall_timeout_sec halfway through a request or "
            "with replies unread.",
            server.stalled_closed());
  p.Counter("yb_master_rpc_refused_connections_total",
            "Connections closed at once because --rpc_max_connections were open.", server.refused_connections());
  p.Counter("yb_master_rpc_accept_failures_total",
            "Failed accepts (e.g. out of file descriptors), each followed by a pause.", server.accept_failures());
  if (!master) return p.text();  // a standby: no index to report on
  auto st = master->Stats();
  p.Gauge("yb_master_allocated_bytes", "Bytes allocated in mounted segments.", st.allocated);
  p.Gauge("yb_master_capacity_bytes", "Total bytes of mounted segments.", st.capacity);
  p.Gauge("yb_master_keys", "Published objects.", st.keys);
  p.Gauge("yb_master_pending_puts", "Puts between PutStart and PutEnd.", st.pending_puts);
  p.Gauge("yb_master_segments", "Mounted segments.", st.segments);
  p.Gauge("yb_master_live_clients", "Clients alive (pinging).", st.live_clients);
  p.Gauge("yb_master_offload_queued", "Objects queued for, or being copied to, an SSD tier.", st.offload_queued);
  p.Counter("yb_master_under_replicated_puts_total",
            "Puts given fewer memory replicas than their replica_num (too few segments with room).",
            st.under_replicated_puts);
  p.Counter("yb_master_missing_replicas_total", "Replicas those Puts went without.", st.missing_replicas);
  p.Counter("yb_master_stale_read_pins_released_total",
            "Read pins ended because their live reader stopped naming them in its heartbeat (a lost ReadEnd).",
            st.stale_pins_released);
  p.Gauge("yb_master_objects_at_risk",
          "Objects with fewer memory replicas than they were written with, waiting for or being copied.",
          st.repair_at_risk);
  p.Gauge("yb_master_repairs_in_flight", "Re-replication copies handed to clients and not reported yet.",
          st.repairs_in_flight);
  p.Counter("yb_master_repaired_total", "Replicas restored by re-replication.", st.repaired);
  p.Counter("yb_master_repair_bytes_total", "Bytes copied by re-replication.", st.repair_bytes);
  p.Counter("yb_master_objects_lost_total", "Objects removed because their last replica went.", st.objects_lost);
  p.Counter("yb_master_evicted_objects_total", "Objects evicted from memory.", st.evicted_objects);
  p.Counter("yb_master_evicted_bytes_total", "Bytes evicted from memory.", st.evicted_bytes);
  p.Counter("yb_master_offloaded_total", "LOCAL_DISK replicas added by offloads.", st.offloaded);
  p.Counter("yb_master_offload_failures_total", "Offloads a client reported failed (the DRAM copy stayed).",
            st.offload_failed);
  p.Counter("yb_master_offloaded_on_evict_total", "Objects eviction sent to an SSD tier instead of dropping.",
            st.offloaded_on_evict);
  p.Counter("yb_master_offload_queue_full_total", "Objects not queued for offload: the client's queue was full.",
            st.offload_refused);
  p.Counter("yb_master_offload_kept_in_dram_total",
            "Evictions that kept an object in DRAM: its offload queue was full.", st.kept_queue_full);
  p.Counter("yb_master_disk_replicas_registered_total", "LOCAL_DISK replicas registered by clients (restarts).",
            st.disk_registered);
  p.Counter("yb_master_disk_replicas_dropped_total", "LOCAL_DISK replicas dropped by SSD-tier bucket eviction.",
            st.disk_dropped);
  p.Counter("yb_master_disk_drops_refused_total",
            "Disk copies of removed or replaced keys not sent to their owner for deletion: its queue was full.",
            st.disk_drops_refused);
  p.Gauge("yb_master_disk_away_copies",
          "Disk copies remembered while their owner is away, so that stale ones are refused when it returns.",
          st.disk_away_copies);
  p.Counter("yb_master_disk_away_untracked_total",
            "Disk copies of absent owners not remembered: --disk_away_copies_limit was reached.",
            st.disk_away_untracked);
  return p.text();
}

nlohmann::json SegmentsJson(yb::MasterService* master) {
  nlohmann::json arr = nlohmann::json::array();
  if (!master) return arr;
  auto segments = master->ListSegments().value();
  for (const auto& u : segments) {
    arr.push_back({{"id", std::to_string(u.desc.id)},
                   {"name", u.desc.name},
                   {"endpoint", u.desc.endpoint},
                   {"zone", u.desc.zone},
                   {"owner", u.owner.ToString()},
                   {"capacity", u.capacity},
                   {"allocated", u.allocated},
                   {"allocations", u.allocations},
                   {"fragmentation", u.fragmentation},
                   {"draining", u.draining}});
  }
  return arr;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"yb-master: Yuebing's metadata service"};
  DaemonFlags f;
  yb::MasterConfig mc;  // the defaults of the flags below
  app.option_defaults()->always_capture_default();
  app.add_option("--rpc_address", f.rpc_address, "address to serve RPC on");
  app.add_option("--rpc_port", f.rpc_port, "RPC port")->check(CLI::Range(1, 65535));
  app.add_option("--rpc_thread_num", f.rpc_thread_num, "RPC threads (0: min(16, cores))")->check(CLI::Range(0, 256));
  app.add_flag("--rpc_pin_threads", f.rpc_pin_threads,
               "pin RPC thread i to the i-th CPU and serve each connection on the CPU that receives its packets: "
               "fewer cross-CPU wake-ups, for a host that runs little besides the master");
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
  app.add_option("--client_ttl", mc.client_ttl_sec, "seconds of silence before a client is declared dead")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  app.add_option("--allocation_strategy", mc.allocation_strategy,
                 "random | free_ratio_first | local_first (the writer's own segment, then its host's, then random)")
      ->check(CLI::IsMember({"random", "free_ratio_first"}));
  app.add_option("--memory_allocator", f.memory_allocator, "offset (the only one)")->check(CLI::IsMember({"offset"}));
  app.add_option("--put_start_discard_timeout_sec", mc.put_start_discard_timeout_sec,
                 "seconds before another writer may take over an unfinished Put");
  app.add_option("--put_start_release_timeout_sec", mc.put_start_release_timeout_sec,
                 "seconds before an unfinished Put's space is reclaimed");
  app.add_option("--enable_ha", f.enable_ha,
                 "one of several masters: etcd elects the leader, the others are hot standbys");
  app.add_option("--etcd_endpoints,--ha_backend_connstring", f.etcd_endpoints,
                 "etcd endpoints for HA, host:port separated by ';'");
  app.add_option("--cluster_id", f.cluster_id, "cluster name (HA): the etcd keys are mooncake-store/<cluster_id>/...");
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
  yb::tools::AddSizeOption(app, "--repair_bandwidth", mc.repair_bandwidth,
                           "re-replication: bytes per second copied into new replicas of objects that lost one with "
                           "a node (\"256 MB\"; 0: off)");
  app.add_option("--repair_task_timeout_sec", mc.repair_task_timeout_sec,
                 "re-replication: seconds a client has to report a copy before it is given up and made again")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--grant_ttl_sec", mc.grant_ttl_sec,
                 "lifetime of the grants handed out with replicas, which transfer servers check (a write's is at "
                 "most --put_start_discard_timeout_sec); the nodes' clocks must agree to well within it")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--metadata_dir", f.metadata_dir,
                 "directory of the metadata log and snapshots: the index survives a restart (\"\": off, the "
                 "index lives in memory only)");
  app.add_option("--metadata_sync", f.metadata_sync,
                 "sync the metadata log before acknowledging a change (false: a killed master loses nothing, a "
                 "crashed machine may lose the last changes)");
  yb::tools::AddSizeOption(app, "--metadata_snapshot_bytes", f.metadata_snapshot_bytes,
                           "log written since the last snapshot that calls for a new one");
  yb::tools::AddSizeOption(app, "--metadata_file_bytes", f.metadata_file_bytes, "size of one log file");
  app.add_option("--config_path", f.config_path, "YAML or JSON file with the same keys");
  app.add_option("--log_level", f.log_level, "trace | debug | info | warn | error");
  CLI11_PARSE(app, argc, argv);
  if (!f.config_path.empty() && !ApplyConfigFile(app, f.config_path)) return 2;
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  yb::ThreadScheduler scheduler;  // the master's background steps, and its clock
  yb::ha::MetaLog::Options lo;
  lo.dir = f.metadata_dir;
  lo.sync = f.metadata_sync;
  lo.snapshot_log_bytes = f.metadata_snapshot_bytes;
  lo.file_bytes = f.metadata_file_bytes;

  // One of two shapes: a lone master (its log optional), or one of several under etcd (HaMaster).
  std::unique_ptr<yb::MasterService> lone;
  std::unique_ptr<yb::ha::MetaLog> lone_log;
  std::unique_ptr<yb::ha::LogGate> lone_gate;
  std::unique_ptr<yb::ha::HaMaster> ha;
  if (f.enable_ha) {
    if (f.etcd_endpoints.empty()) {
      spdlog::error("--enable_ha needs --etcd_endpoints (or --ha_backend_connstring)");
      return 2;
    }
    if (f.metadata_dir.empty()) {
      spdlog::error("--enable_ha needs a --metadata_dir: standbys keep the leader's log there");
      return 2;
    }
    if (f.rpc_address == "0.0.0.0" || f.rpc_address == "::" || f.rpc_address.empty()) {
      spdlog::error(
          "--enable_ha: --rpc_address must be an address the clients and the other masters reach this "
          "master at (it is what etcd names as the leader), not {}",
          f.rpc_address.empty() ? "empty" : f.rpc_address);
      return 2;
    }
    auto endpoints = yb::ha::EtcdClient::ParseEndpoints(f.etcd_endpoints);
    if (!endpoints.ok()) {
      spdlog::error("--etcd_endpoints: {}", endpoints.status().ToString());
      return 2;
    }
    yb::ha::HaMaster::Options ho;
    ho.etcd.endpoints = std::move(*endpoints);
    ho.cluster_id = f.cluster_id;
    ho.address = f.rpc_address + ":" + std::to_string(f.rpc_port);
    ho.lease_ttl = std::chrono::milliseconds(f.ha_lease_ttl_ms);
    ho.master = mc;
    ho.log = lo;
    if (auto st = yb::MasterService::Create(mc, scheduler.clock()); !st.ok()) {
      spdlog::error("bad configuration: {}", st.status().ToString());
      return 2;
    }
    auto created = yb::ha::HaMaster::Create(ho, scheduler.clock());
    if (!created.ok()) {
      spdlog::error("--metadata_dir {}: {}", f.metadata_dir, created.status().ToString());
      return 1;
    }
    ha = std::move(created).value();
  } else {
    auto created = yb::MasterService::Create(mc, scheduler.clock());
    if (!created.ok()) {
      spdlog::error("bad configuration: {}", created.status().ToString());
      return 2;
    }
    lone = std::move(created).value();
    if (!f.metadata_dir.empty()) {
      yb::MasterImage image;
      auto opened = yb::ha::MetaLog::Open(lo, &image);
      if (!opened.ok()) {
        spdlog::error("--metadata_dir {}: {}", f.metadata_dir, opened.status().ToString());
        return 1;
      }
      lone_log = std::move(opened).value();
      if (auto st = lone->Load(image); !st.ok()) {
        spdlog::error("--metadata_dir {}: the recovered state does not load: {}", f.metadata_dir, st.ToString());
        return 1;
      }
      lone->SetSink(lone_log.get());
      lone_gate = std::make_unique<yb::ha::LogGate>(*lone_log);
    } else {
      spdlog::warn("--metadata_dir is empty: the index lives in memory only, and a restart empties the cache");
    }
  }
  yb::MasterApi& api = ha ? static_cast<yb::MasterApi&>(*ha) : *lone;
  yb::ha::MetaLog* log = ha ? &ha->log() : lone_log.get();
  // The master serving now: the lone one, or the leader's (none while a standby).
  auto current = [&]() -> std::shared_ptr<yb::MasterService> {
    if (ha) return ha->master();
    return std::shared_ptr<yb::MasterService>(std::shared_ptr<void>(), lone.get());
  };

  sigset_t stop_signals = yb::tools::BlockStopSignals();
  yb::RaiseOpenFileLimit();  // a descriptor per client connection

  yb::rpc::RpcMetrics rpc_metrics;
  yb::rpc::RpcServer::Options ro;
  ro.address = f.rpc_address;
  ro.port = static_cast<uint16_t>(f.rpc_port);
  ro.max_connections = f.rpc_max_connections;
  ro.half_sent_timeout_ms = f.rpc_stall_timeout_sec * 1000;
  ro.keepalive = yb::Keepalive::After(std::chrono::seconds(f.rpc_keepalive_sec));
  ro.threads = f.rpc_thread_num > 0
                   ? f.rpc_thread_num
                   : static_cast<int>(std::min(16u, std::max(1u, std::thread::hardware_concurrency())));
  ro.pin_to_cpus = f.rpc_pin_threads;
  ro.gate = ha ? &ha->gate() : lone_gate.get();  // a change is answered once its record is durable
  yb::rpc::RpcServer server(ro);
  std::function<uint64_t()> epoch;
  if (ha) epoch = [h = ha.get()] { return h->epoch(); };
  yb::rpc::RegisterMasterService(server, api, &rpc_metrics, epoch);
  if (ha) ha->RegisterReplication(server);
  if (auto st = server.Start(); !st.ok()) {
    spdlog::error("{}", st.ToString());
    return 1;
  }

  yb::tools::AdminHttp http;
  if (f.metrics_port > 0) {
    httplib::Server& h = http.server();
    h.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
      auto m = current();
      res.set_content(Metrics(m.get(), rpc_metrics, server, log, ha.get()), yb::tools::PrometheusText::kContentType);
    });
    // Plain "OK" for scripts that wait for the master; JSON (?format=json, or asking for JSON) with
    // its role and log position.
    h.Get("/health", [&](const httplib::Request& req, httplib::Response& res) {
      const bool json = req.get_param_value("format") == "json" ||
                        req.get_header_value("Accept").find("application/json") != std::string::npos;
      if (!json) {
        res.set_content("OK\n", "text/plain");
        return;
      }
      nlohmann::json h = {{"status", "ok"}, {"role", "leader"}, {"epoch", 0}};
      if (ha) {
        h["role"] = ha->role() == yb::ha::HaMaster::Role::kLeader ? "leader" : "standby";
        h["epoch"] = ha->epoch();
        h["leader"] = ha->leader();
        h["cluster_id"] = f.cluster_id;
        nlohmann::json standbys = nlohmann::json::array();
        const uint64_t last = log->stats().last_seq;
        for (const auto& s : ha->standbys()) {
          standbys.push_back({{"address", s.address},
                              {"in_sync", s.in_sync},
                              {"acked_seq", s.acked},
                              {"lag_records", last > s.acked ? last - s.acked : 0}});
        }
        h["standbys"] = standbys;
      }
      if (log) {
        auto s = log->stats();
        h["log"] = {{"dir", log->dir()},
                    {"last_seq", s.last_seq},
                    {"synced_seq", s.synced_seq},
                    {"snapshot_seq", s.snapshot_seq}};
      }
      res.set_content(h.dump(2), "application/json");
    });
    h.Get("/segments", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(SegmentsJson(current().get()).dump(2), "application/json");
    });
    // Drains a storage node (every segment named NAME, or on host NAME): POST /drain?segment=NAME
    // marks them and answers how many objects still need a copy elsewhere; poll until 0.
    h.Post("/drain", [&](const httplib::Request& req, httplib::Response& res) {
      auto m = current();
      if (!m) {
        res.status = 503;
        res.set_content("{\"error\": \"not the leader\"}", "application/json");
        return;
      }
      const std::string name = req.get_param_value("segment");
      uint64_t remaining = 0, segments = 0;
      for (const auto& u : m->ListSegments().value()) {
        if (name.empty() || !yb::SegmentNameMatches(u.desc.name, name)) continue;
        auto left = m->DrainSegment({}, u.desc.id);
        if (!left.ok()) continue;  // unmounted meanwhile
        ++segments;
        remaining += *left;
      }
      if (segments == 0) {
        res.status = 404;
        res.set_content(nlohmann::json{{"error", "no segment named '" + name + "'"}}.dump(), "application/json");
        return;
      }
      res.set_content(nlohmann::json{{"segment", name}, {"segments", segments}, {"remaining", remaining}}.dump(),
                      "application/json");
    });
    h.Get("/get_all_segments", [&](const httplib::Request&, httplib::Response& res) {
      std::string names;
      for (const auto& s : SegmentsJson(current().get())) names += s["name"].get<std::string>() + "\n";
      res.set_content(names, "text/plain");
    });
    if (!http.Start("yb-master", f.metrics_address, f.metrics_port)) return 1;
  }

  std::unique_ptr<yb::Scheduler::Job> background, snapshots, election;
  if (ha) {
    yb::ha::HaMaster* h = ha.get();
    election = scheduler.Every("yb-ha", std::chrono::milliseconds(100), [h] { h->RunOnce(); });
    background = scheduler.Every("yb-master-bg", std::chrono::milliseconds(200), [h] { h->RunBackgroundOnce(); });
    snapshots = scheduler.Every("yb-snapshot", std::chrono::seconds(1), [h] { h->SnapshotIfDue(); });
  } else {
    yb::MasterService* m = lone.get();
    background = scheduler.Every("yb-master-bg", std::chrono::milliseconds(200), [m] { m->RunBackgroundOnce(); });
    if (lone_log) {
      yb::ha::MetaLog* l = lone_log.get();
      snapshots = scheduler.Every("yb-snapshot", std::chrono::seconds(1), [l, m] {
        (void)l->SnapshotIfDue([m](const auto& emit) { m->WriteImage(emit); }, m->next_object_id());
      });
    }
  }
  spdlog::info("yb-master serving RPC on {}:{} ({} threads{}), HTTP on {}:{}{}", f.rpc_address, server.port(),
               ro.threads, ro.pin_to_cpus ? fmt::format(", {} pinned to CPUs", server.pinned_threads()) : "",
               f.metrics_address, f.metrics_port,
               ha ? fmt::format("; HA in cluster '{}' through etcd {}", f.cluster_id, f.etcd_endpoints) : "");

  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("yb-master: signal {} received, shutting down", sig);
  election.reset();
  snapshots.reset();
  background.reset();
  http.Stop();
  server.Stop();
  ha.reset();        // a leader gives its lease back
  lone_log.reset();  // what was appended is written and synced
  spdlog::info("yb-master stopped");
  return 0;
}
