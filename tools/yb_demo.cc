// yb-demo: runs a whole Yuebing store in one process and shows what it does: three clients mount
// memory, objects are written with replicas and read back through other clients, then the pool
// is filled past capacity so that eviction runs, and the numbers are printed.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "common/units.h"
#include "demo_values.h"
#include "embedded/embedded_cluster.h"
#include "yuebing/client.h"
#include "yuebing/embedded.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Yuebing in-process demo: a store with three clients, replicas and eviction"};
  std::string segment_text = "64MB", object_text = "1MB";
  int clients = 3;
  bool verbose = false;
  app.add_option("--segment_size", segment_text, "memory each client mounts (\"64MB\", bytes or units)");
  app.add_option("--object_size", object_text, "size of each object");
  app.add_option("--clients", clients, "number of clients")->check(CLI::Range(2, 16));
  app.add_flag("--verbose", verbose, "log what the master does");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(verbose ? spdlog::level::info : spdlog::level::warn);

  auto segment_size = yb::ParseSize(segment_text);
  auto object_size = yb::ParseSize(object_text);
  if (!segment_size.ok() || !object_size.ok() || *object_size == 0 || *object_size > *segment_size) {
    std::fprintf(stderr, "bad sizes: --segment_size %s --object_size %s\n", segment_text.c_str(), object_text.c_str());
    return 2;
  }

  // A short lease so that the demo's own reads stop protecting objects within a second.
  yb::MasterConfig master_config;
  master_config.default_kv_lease_ttl_ms = 300;
  yb::EnableEmbeddedMaster();
  auto cluster = yb::EmbeddedCluster::Get("demo", master_config);
  if (!cluster.ok()) {
    std::fprintf(stderr, "master: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  auto& master = *(*cluster)->master();
  std::vector<std::unique_ptr<yb::Client>> nodes;
  for (int i = 0; i < clients; ++i) {
    yb::ClientConfig c;
    c.local_hostname = "node-" + std::to_string(i + 1);
    c.master_server_addr = "embedded:demo";
    c.global_segment_size = *segment_size;
    c.local_buffer_size = 16ULL << 20;
    c.enable_checksum = true;
    auto client = yb::Client::Connect(c);
    if (!client.ok()) {
      std::fprintf(stderr, "client %d: %s\n", i + 1, client.status().ToString().c_str());
      return 1;
    }
    nodes.push_back(std::move(client).value());
  }
  std::printf("Yuebing demo: %d clients, %s mounted each, objects of %s\n", clients,
              yb::FormatBytes(*segment_size).c_str(), yb::FormatBytes(*object_size).c_str());

  // 1. Write objects with two replicas through node-1, read them through every other node.
  const int first_batch = 16;
  yb::ReplicateConfig two;
  two.replica_num = 2;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < first_batch; ++i) {
    std::string v = yb::tools::DemoValue(*object_size, i);
    yb::Status st = nodes[0]->Put("demo/" + std::to_string(i), v.data(), v.size(), two);
    if (!st.ok()) {
      std::fprintf(stderr, "put failed: %s\n", st.ToString().c_str());
      return 1;
    }
  }
  double put_s = Seconds(t0);
  std::map<std::string, int> placement;
  std::map<yb::SegmentId, std::string> segment_owner;
  auto segments = master.ListSegments().value();
  for (const auto& seg : segments) segment_owner[seg.desc.id] = seg.desc.name;
  int verified = 0;
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < first_batch; ++i) {
    std::string key = "demo/" + std::to_string(i);
    auto& reader = nodes[1 + i % (clients - 1)];
    auto got = reader->Get(key);
    if (got.ok() && *got == yb::tools::DemoValue(*object_size, i)) ++verified;
    auto query = reader->Query(key);
    if (!query.ok()) continue;
    for (const auto& r : query->replicas) placement[segment_owner[r.segment]]++;
  }
  double get_s = Seconds(t0);
  double mb = static_cast<double>(*object_size) * first_batch / 1e6;
  std::printf(
      "\n1. wrote %d objects with 2 replicas each (%.0f MB/s of values), read back %d/%d intact through "
      "other clients (%.0f MB/s)\n",
      first_batch, mb / put_s, verified, first_batch, mb / get_s);
  std::printf("   replicas per node:");
  for (const auto& [node, n] : placement) std::printf(" %s=%d", node.c_str(), n);
  std::printf("\n");

  // 2. Fill the pool well past its capacity: eviction makes room, least recently used first.
  // demo/0 stays hot (read now and then during the fill); its neighbours go cold.
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // the reads' leases run out
  uint64_t capacity = master.Stats().capacity;
  uint64_t to_write = capacity * 2 / *object_size;
  int refused = 0;
  t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < to_write; ++i) {
    std::string v = yb::tools::DemoValue(*object_size, 1000 + i);
    yb::Status st = nodes[i % clients]->Put("fill/" + std::to_string(i), v.data(), v.size());
    if (!st.ok()) ++refused;
    if (i % 16 == 0) (void)nodes[1]->Get("demo/0");
  }
  double fill_s = Seconds(t0);
  master.evictor().RunOnce();
  auto st = master.Stats();
  std::printf("\n2. wrote %llu more objects (2x the pool's %s) in %.2f s: %d refused\n",
              static_cast<unsigned long long>(to_write), yb::FormatBytes(capacity).c_str(), fill_s, refused);
  std::printf("   eviction removed %llu objects (%s); the pool now holds %llu keys, %.1f%% full\n",
              static_cast<unsigned long long>(st.evicted_objects), yb::FormatBytes(st.evicted_bytes).c_str(),
              static_cast<unsigned long long>(st.keys),
              100.0 * static_cast<double>(st.allocated) / static_cast<double>(st.capacity));
  int early_left = 0;
  for (int i = 1; i < first_batch; ++i) early_left += *nodes[0]->IsExist("demo/" + std::to_string(i)) ? 1 : 0;
  std::printf("   hot demo/0 (read during the fill) %s; %d of its %d cold neighbours survived\n",
              *nodes[0]->IsExist("demo/0") ? "survived" : "was evicted", early_left, first_batch - 1);

  // 3. A node leaves: its replicas go with it, objects with a second replica stay readable.
  uint64_t keys_before = master.Stats().keys;
  nodes.pop_back();
  std::printf("\n3. node-%d left: %llu objects lost their only replica, %llu keys remain\n", clients,
              static_cast<unsigned long long>(keys_before - master.Stats().keys),
              static_cast<unsigned long long>(master.Stats().keys));
  std::printf("\nsegments:\n");
  segments = master.ListSegments().value();
  for (const auto& seg : segments) {
    std::printf("  %-8s %s used of %s, fragmentation %.2f\n", seg.desc.name.c_str(),
                yb::FormatBytes(seg.allocated).c_str(), yb::FormatBytes(seg.capacity).c_str(), seg.fragmentation);
  }
  std::printf("\ndemo done: %s\n", verified == first_batch && refused == 0 ? "OK" : "PROBLEMS (see above)");
  return verified == first_batch && refused == 0 ? 0 : 1;
}
