// yb-cluster-demo: one side of the README's main job against a running cluster.
//   --role write: puts --objects values (two replicas each) and says where the replicas landed;
//   --role read:  reads them back (another process, so every byte crosses TCP), checks each one.
// Both print objects, bytes and throughput.
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>

#include "common/units.h"
#include "demo_values.h"
#include "yuebing/client.h"

int main(int argc, char** argv) {
  CLI::App app{"yb-cluster-demo: write or read demo objects through a Yuebing cluster"};
  std::string master = yb::kDefaultMasterAddress, role, size_text = "1MB", name;
  int objects = 64;
  app.add_option("--master", master, "yb-master host:port");
  app.add_option("--role", role, "write | read")->required()->check(CLI::IsMember({"write", "read"}));
  app.add_option("--objects", objects, "how many objects")->check(CLI::Range(1, 100000));
  app.add_option("--object_size", size_text, "size of each object");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  auto size = yb::ParseSize(size_text);
  if (!size.ok() || *size == 0) {
    std::fprintf(stderr, "bad --object_size %s\n", size_text.c_str());
    return 2;
  }
  yb::ClientConfig c;
  c.local_hostname = "demo-" + role;
  c.master_server_addr = master;
  c.global_segment_size = 0;  // an application client: the memory is the daemons'
  c.local_buffer_size = 16ULL << 20;
  c.enable_checksum = true;
  auto client = yb::Client::Connect(c);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().ToString().c_str());
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  int good = 0;
  std::map<std::string, int> placement;
  if (role == "write") {
    yb::ReplicateConfig two;
    two.replica_num = 2;
    for (int i = 0; i < objects; ++i) {
      std::string v = yb::tools::DemoValue(*size, i);
      yb::Status st = (*client)->Put("demo/" + std::to_string(i), v.data(), v.size(), two);
      if (st.ok()) {
        ++good;
      } else {
        std::fprintf(stderr, "put demo/%d: %s\n", i, st.ToString().c_str());
      }
    }
  } else {
    for (int i = 0; i < objects; ++i) {
      auto v = (*client)->Get("demo/" + std::to_string(i));
      if (v.ok() && *v == yb::tools::DemoValue(*size, i)) {
        ++good;
      } else {
        std::fprintf(stderr, "get demo/%d: %s\n", i, v.ok() ? "wrong bytes" : v.status().ToString().c_str());
      }
    }
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%-5s %d/%d objects, %s, %.2f s, %.0f MB/s\n", role.c_str(), good, objects,
              yb::FormatBytes(static_cast<uint64_t>(good) * *size).c_str(), secs,
              static_cast<double>(good) * static_cast<double>(*size) / secs / 1e6);
  if (role == "write") {
    std::map<yb::SegmentId, std::string> owner;
    auto segs = (*client)->ListSegments();
    if (segs.ok()) {
      for (const auto& s : *segs) owner[s.desc.id] = s.desc.name;
    }
    for (int i = 0; i < objects; ++i) {
      auto q = (*client)->Query("demo/" + std::to_string(i));
      if (!q.ok()) continue;
      for (const auto& r : q->replicas) placement[owner[r.segment]]++;
    }
    std::printf("      replicas:");
    for (const auto& [n, k] : placement) std::printf(" %s=%d", n.c_str(), k);
    std::printf("\n");
  }
  return good == objects ? 0 : 1;
}
