// yb-client: the standalone daemon through which a node contributes memory to the pool, with no
// application running. It mounts --global_segment_size, serves transfers of it on --host:--port,
// pings the master every second (re-mounting when the master asks) and stops on SIGTERM. With
// --enable_offload it also runs the node's SSD tier under --storage_root_dir (docs/ssd-tier.md).
// With --metrics_port it serves /metrics (Prometheus text), /metrics/summary and /health over HTTP.
// It serves the dummy clients of its host (client/dummy_server.h) unless --serve_dummies false.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <atomic>

#include "client/dummy_server.h"
#include "common/listener.h"
#include "common/log.h"
#include "common/open_files.h"
#include "common/segment_name.h"
#include "common/units.h"
#include "flags.h"
#include "http/admin_http.h"
#include "http/client_http.h"
#include "stop_signals.h"
#include "yuebing/client.h"

int main(int argc, char** argv) {
  CLI::App app{"yb-client: contributes a node's memory to a Yuebing pool"};
  // The daemon's own defaults where they differ from a library client's (ClientConfig's): Mooncake's
  // mooncake_client flags (a 4 GB segment, transfers on 0.0.0.0:50052), the memory faulted in at
  // start for steady latency.
  yb::ClientConfig c;
  c.master_server_addr = yb::kDefaultMasterAddress;
  c.global_segment_size = 4ULL << 30;
  c.prefault_segment = true;
  std::string host = "0.0.0.0", log_level = "info", metrics_address = "0.0.0.0";
  int port = 50052, threads = 1, metrics_port = 0;
  bool serve_dummies = true;
  c.local_hostname.clear();  // default: from --host (below)
  app.add_option("--host", host, "address the transfer server binds to")->capture_default_str();
  app.add_option("--port", port, "port of the transfer server (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--local_hostname", c.local_hostname,
                 "name of this node's segments and the host others reach it at (default: --host, or the "
                 "machine's hostname when --host is 0.0.0.0)");
  app.add_option("--master_server_address", c.master_server_addr,
                 "yb-master host:port, or etcd://host:port[;host:port] to follow the leader of several")
      ->capture_default_str();
  app.add_option("--cluster_id", c.cluster_id, "with etcd://: the masters' --cluster_id")->capture_default_str();
  yb::tools::AddSizeOption(app, "--global_segment_size", c.global_segment_size,
                           "memory to contribute (\"4 GB\", \"512MB\", bytes)");
  yb::tools::AddSizeOption(app, "--local_buffer_size", c.local_buffer_size, "staging buffer");
  yb::tools::AddSizeOption(app, "--segment_chunk_size", c.segment_chunk_size,
                           "the memory is mounted in chunks of this size");
  app.add_option("--metadata_server", c.metadata_server, "P2PHANDSHAKE (no other service needed)")
      ->capture_default_str();
  app.add_option("--protocol", c.protocol, "tcp (rdma is not available)")->capture_default_str();
  app.add_option("--device_names", c.device_name, "RDMA devices (unused: TCP only)");
  app.add_option("--threads", threads, "accepted for compatibility");
  app.add_option("--zone", c.zone,
                 "this node's failure domain (a rack, a power feed): replicas go to distinct zones first, then "
                 "distinct hosts (default: YB_ZONE, else none)");
  app.add_option("--metrics_port", metrics_port, "HTTP port for /metrics, /metrics/summary and /health (0: off)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  app.add_option("--metrics_address", metrics_address, "address to serve HTTP on")->capture_default_str();
  app.add_option("--transfer_max_connections_per_peer", c.transfer_max_connections_per_peer,
                 "open transfer connections from one peer address at most (0: no bound)")
      ->check(CLI::Range(0, 1 << 24))
      ->capture_default_str();
  app.add_option("--transfer_max_connections", c.transfer_max_connections,
                 "open transfer connections at most; one more is closed at once and counted")
      ->check(CLI::Range(1, 1 << 24))
      ->capture_default_str();
  app.add_option("--transfer_stall_timeout_sec", c.transfer_stall_timeout_sec,
                 "close a transfer connection halfway through a request, or not reading its answers, that moves no "
                 "byte for this long; idle connections stay (0: never)")
      ->check(CLI::Range(0, 86400))
      ->capture_default_str();
  app.add_option("--transfer_keepalive_sec", c.transfer_keepalive_sec,
                 "close the transfer connection of a peer that is silent and answers no TCP keepalive probe for "
                 "about this long (its host died or was cut off); 0: off")
      ->check(CLI::Range(int64_t{0}, yb::kMaxKeepaliveSec))
      ->capture_default_str();
  yb::SsdTierConfig& ssd = c.ssd;
  app.add_option("--enable_offload", c.enable_offload,
                 "run an SSD tier: objects in this node's segment go down to --storage_root_dir when the master "
                 "queues them (its --enable_offload / --offload_on_evict)")
      ->capture_default_str();
  app.add_option("--storage_root_dir,--ssd_offload_path", ssd.path, "directory of the SSD tier (created if missing)");
  yb::tools::AddSizeOption(app, "--storage_size_limit", ssd.total_size_limit, "bytes the SSD tier may use");
  yb::tools::AddSizeOption(app, "--bucket_size_limit", ssd.bucket_size_limit, "bytes per bucket file");
  app.add_option("--bucket_keys_limit", ssd.bucket_keys_limit, "objects per bucket")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--bucket_eviction_policy", ssd.eviction_policy,
                 "which bucket goes first: fifo (oldest) or lru (least read)")
      ->capture_default_str();
  app.add_option("--storage_high_watermark", ssd.high_watermark, "usage share that starts bucket eviction")
      ->capture_default_str();
  app.add_option("--storage_low_watermark", ssd.low_watermark, "usage share bucket eviction brings it down to")
      ->capture_default_str();
  app.add_option("--same_host_transfers", c.same_host_transfers,
                 "move bytes with processes of this host and user through shared memory, not TCP (default true)");
  app.add_option("--serve_dummies", serve_dummies,
                 "serve dummy clients of this host (setup_dummy(..., \"<host>:<--port>\")) through Unix sockets "
                 "named after --port; only processes of this user (or root) are served")
      ->capture_default_str();
  app.add_option("--prefault", c.prefault_segment, "fault the segment's memory in at start (true: steady latency)")
      ->capture_default_str();
  bool drain_on_exit = false;
  int64_t drain_timeout_sec = 300;
  app.add_option("--drain_on_exit", drain_on_exit,
                 "on SIGTERM, have the master copy every object held only in this node's memory to other nodes "
                 "before unmounting (needs yb-master --repair_bandwidth > 0 and room elsewhere)")
      ->capture_default_str();
  app.add_option("--drain_timeout_sec", drain_timeout_sec, "how long a drain on exit may take at most")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--log_level", log_level, "trace | debug | info | warn | error")->capture_default_str();
  app.add_option("--enable_checksum", c.enable_checksum,
                 "record a checksum with this node's writes and check it on reads (YB_ENABLE_CHECKSUM)")
      ->capture_default_str();
  yb::tools::AddSecurityFlags(app, c.auth_secret_file, c.tls_cert, c.tls_key, c.tls_ca, c.wire_macs);
  yb::tools::AddProtectedModeFlag(app, c.protected_mode);
  yb::tools::AddEtcdFlags(app, c.etcd_tls_ca, c.etcd_tls_cert, c.etcd_tls_key, c.etcd_user, c.etcd_password_file);
  yb::ApplyEnvironment(c, [](const char* name) { return std::getenv(name); });  // flags given win
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));
  if (c.local_hostname.empty()) {
    c.local_hostname = host;
    if (host == "0.0.0.0") {
      char name[256] = {};
      gethostname(name, sizeof(name) - 1);
      c.local_hostname = name;
    }
  }
  c.transfer_bind_address = host + ":" + std::to_string(port);
  // The checks every entry point makes (the C API and Python too), before anything starts.
  if (yb::Status st = yb::ValidateClientConfig(c); !st.ok()) {
    spdlog::error("yb-client: {}", st.ToString());
    return 2;
  }

  sigset_t stop_signals = yb::tools::BlockStopSignals();
  yb::RaiseOpenFileLimit();  // the transfer server keeps a descriptor per connection

  // HTTP first, so that /health answers (503) while the daemon waits for its master.
  std::atomic<const yb::Client*> daemon{nullptr};
  std::atomic<const yb::DummyServer*> dummy_server{nullptr};
  yb::http::AdminHttp http;
  if (metrics_port > 0) {
    yb::http::AddClientRoutes(http.server(), [&daemon, &dummy_server]() -> std::optional<yb::ClientStats> {
      const yb::Client* d = daemon.load();
      if (!d) return std::nullopt;
      yb::ClientStats s = d->Stats();
      if (const yb::DummyServer* ds = dummy_server.load()) {
        s.dummies = ds->dummies();
        s.dummy_regions = ds->regions();
        s.dummy_relayed_bytes = ds->relayed_bytes();
      }
      return s;
    });
    if (!http.Start("yb-client", metrics_address, metrics_port, c.loopback_only())) return 1;
    spdlog::info("yb-client: HTTP on {}:{}", metrics_address, metrics_port);
  }
  // A daemon waits for its master: retry every second until connected or told to stop.
  auto client = yb::Client::Connect(c);
  for (uint64_t failed = 1; !client.ok(); ++failed) {
    yb::Code code = client.code();
    if (!yb::IsUnavailable(code)) {
      spdlog::error("yb-client: {}", client.status().ToString());
      return 1;
    }
    if (yb::LogOccurrence(failed)) {
      spdlog::warn("yb-client: master {} not reachable ({}); retrying every second ({} attempts so far)",
                   c.master_server_addr, client.status().message(), failed);
    }
    timespec one_second{1, 0};
    if (sigtimedwait(&stop_signals, nullptr, &one_second) > 0) return 0;
    client = yb::Client::Connect(c);
  }
  spdlog::info("yb-client '{}' contributes {} in {} segments to master {}", (*client)->hostname(),
               yb::FormatBytes(c.global_segment_size), (*client)->Stats().segments, c.master_server_addr);
  daemon = client->get();
  std::unique_ptr<yb::DummyServer> dummies;
  if (serve_dummies) {
    // Named after the port the dummies are told (--port), or the one taken when that was 0.
    const std::string& name = (*client)->hostname();
    auto named = yb::ParseHostPort(name);  // "host:port", the port the transfer server took
    const uint16_t dummy_port = port != 0 ? static_cast<uint16_t>(port) : named.ok() ? named->second : 0;
    yb::DummyServer::Options o;
    o.port = dummy_port;
    o.segments_shared = c.same_host_transfers;
    auto served = yb::DummyServer::Start(**client, o);
    if (served.ok()) {
      dummies = std::move(served).value();
      dummy_server = dummies.get();
    } else {
      spdlog::warn("yb-client: not serving dummy clients: {}", served.status().ToString());
    }
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  if (drain_on_exit && sig == SIGTERM) {
    // A graceful stop: every object held only here goes to other nodes first. A second signal
    // (or SIGINT) does not wait for it.
    spdlog::info("yb-client: SIGTERM received, draining (up to {} s) before unmounting", drain_timeout_sec);
    if (yb::Status st = (*client)->Drain(std::chrono::seconds(drain_timeout_sec)); !st.ok()) {
      spdlog::warn("yb-client: drain incomplete: {}", st.ToString());
    }
  }
  spdlog::info("yb-client: signal {} received, unmounting and stopping", sig);
  http.Stop();  // before the client it reports on goes
  dummies.reset();  // before the client that serves them
  client->reset();
  return 0;
}
