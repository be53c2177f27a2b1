// yb-client: the standalone daemon through which a node contributes memory to the pool, with no
// application running. It mounts --global_segment_size, serves transfers of it on --host:--port,
// pings the master every second (re-mounting when the master asks) and stops on SIGTERM. With
// --enable_offload it also runs the node's SSD tier under --storage_root_dir (DESIGN.md section 5).
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include "common/open_files.h"
#include "common/units.h"
#include "stop_signals.h"
#include "yuebing/client.h"

int main(int argc, char** argv) {
  CLI::App app{"yb-client: contributes a node's memory to a Yuebing pool"};
  std::string host = "0.0.0.0", local_hostname, master = "127.0.0.1:50051", gss = "4 GB", lbs = "16 MB";
  std::string metadata_server = "P2PHANDSHAKE", protocol = "tcp", device_names, log_level = "info";
  std::string chunk = "1 GB";
  int port = 50052, threads = 1;
  bool enable_offload = false;
  bool prefault = true;
  app.add_option("--host", host, "address the transfer server binds to");
  app.add_option("--port", port, "port of the transfer server (0: any free port)")->check(CLI::Range(0, 65535));
  app.add_option("--local_hostname", local_hostname,
                 "name of this node's segments and the host others reach it at (default: --host, or the "
                 "machine's hostname when --host is 0.0.0.0)");
  app.add_option("--master_server_address", master, "yb-master host:port");
  app.add_option("--global_segment_size", gss, "memory to contribute (\"4 GB\", \"512MB\", bytes)");
  app.add_option("--local_buffer_size", lbs, "staging buffer");
  app.add_option("--segment_chunk_size", chunk, "the memory is mounted in chunks of this size");
  app.add_option("--metadata_server", metadata_server, "P2PHANDSHAKE (no other service needed)");
  app.add_option("--protocol", protocol, "tcp")->check(CLI::IsMember({"tcp"}));
  app.add_option("--device_names", device_names, "RDMA devices (unused: TCP only)");
  app.add_option("--threads", threads, "accepted for compatibility");
  std::string storage_dir, storage_limit = "64 GB", bucket_size = "256 MB", policy = "fifo";
  uint64_t bucket_keys = 500;
  double high = 0.90, low = 0.80;
  app.add_option("--enable_offload", enable_offload,
                 "run an SSD tier: objects in this node's segment go down to --storage_root_dir when the master "
                 "queues them (its --enable_offload / --offload_on_evict)");
  app.add_option("--storage_root_dir,--ssd_offload_path", storage_dir,
                 "directory of the SSD tier (created if missing)");
  app.add_option("--storage_size_limit", storage_limit, "bytes the SSD tier may use (\"64 GB\")");
  app.add_option("--bucket_size_limit", bucket_size, "bytes per bucket file");
  app.add_option("--bucket_keys_limit", bucket_keys, "objects per bucket")->check(CLI::PositiveNumber);
  app.add_option("--bucket_eviction_policy", policy, "which bucket goes first: fifo (oldest) or lru (least read)")
      ->check(CLI::IsMember({"fifo", "lru"}));
  app.add_option("--storage_high_watermark", high, "usage share that starts bucket eviction")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--storage_low_watermark", low, "usage share bucket eviction brings it down to")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--prefault", prefault, "fault the segment's memory in at start (true: steady latency)");
  app.add_option("--log_level", log_level, "trace | debug | info | warn | error");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));
  if (enable_offload && storage_dir.empty()) {
    spdlog::error("--enable_offload needs --storage_root_dir");
    return 2;
  }
  auto seg = yb::ParseSize(gss);
  auto buf = yb::ParseSize(lbs);
  auto chunk_size = yb::ParseSize(chunk);
  auto storage_bytes = yb::ParseSize(storage_limit);
  auto bucket_bytes = yb::ParseSize(bucket_size);
  for (const auto* r : {&seg, &buf, &chunk_size, &storage_bytes, &bucket_bytes}) {
    if (!r->ok()) {
      spdlog::error("{}", r->status().ToString());
      return 2;
    }
  }
  if (local_hostname.empty()) {
    local_hostname = host;
    if (host == "0.0.0.0") {
      char name[256] = {};
      gethostname(name, sizeof(name) - 1);
      local_hostname = name;
    }
  }

  sigset_t stop_signals = yb::tools::BlockStopSignals();
  yb::RaiseOpenFileLimit();  // the transfer server keeps a descriptor per connection

  yb::ClientConfig c;
  c.local_hostname = local_hostname;
  c.master_server_addr = master;
  c.metadata_server = metadata_server;
  c.protocol = protocol;
  c.device_name = device_names;
  c.global_segment_size = *seg;
  c.local_buffer_size = *buf;
  c.segment_chunk_size = *chunk_size;
  c.transfer_bind_address = host + ":" + std::to_string(port);
  c.prefault_segment = prefault;
  c.enable_offload = enable_offload;
  c.storage_path = storage_dir;
  c.storage_size_limit = *storage_bytes;
  c.storage_bucket_size = *bucket_bytes;
  c.storage_bucket_keys = bucket_keys;
  c.storage_eviction_policy = policy;
  c.storage_high_watermark = high;
  c.storage_low_watermark = low;
  // A daemon waits for its master: retry every second until connected or told to stop.
  auto client = yb::Client::Connect(c);
  while (!client.ok()) {
    yb::Code code = client.code();
    if (code != yb::Code::kRpcFail && code != yb::Code::kRpcTimeout) {
      spdlog::error("yb-client: {}", client.status().ToString());
      return 1;
    }
    spdlog::warn("yb-client: master {} not reachable ({}); retrying in 1 s", master, client.status().message());
    timespec one_second{1, 0};
    if (sigtimedwait(&stop_signals, nullptr, &one_second) > 0) return 0;
    client = yb::Client::Connect(c);
  }
  spdlog::info("yb-client '{}' contributes {} in {} segments to master {}", local_hostname, yb::FormatBytes(*seg),
               (*client)->segments().size(), master);
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("yb-client: signal {} received, unmounting and stopping", sig);
  client->reset();
  return 0;
}
