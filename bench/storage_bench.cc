// yb-storage-bench: SSD-tier write and read GB/s for 64 KiB, 1 MiB and 4 MiB objects, beside the
// disk's own sequential bandwidth measured in the same run with dd (direct I/O). Prints JSON.
// Usage: yb-storage-bench [--dir /path/on/the/disk] [--total_mb 1024]
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_time.h"
#include "storage/storage_engine.h"

namespace {

using yb_bench::Clock;
using yb_bench::Since;

// dd's own report of bytes/s for one command, or -1.
double Dd(const std::string& args) {
  std::string cmd = "dd " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  pclose(p);
  // "... bytes (...) copied, 1.234 s, 567 MB/s": bytes / seconds.
  unsigned long long bytes = 0;
  double secs = 0;
  auto pos = out.rfind(" bytes");
  auto line_start = out.rfind('\n', pos == std::string::npos ? 0 : pos);
  if (pos == std::string::npos) return -1;
  bytes = std::stoull(out.substr(line_start == std::string::npos ? 0 : line_start + 1));
  auto copied = out.find("copied, ", pos);
  if (copied == std::string::npos) return -1;
  secs = std::stod(out.substr(copied + 8));
  return secs > 0 ? static_cast<double>(bytes) / secs : -1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"yb-storage-bench: SSD tier throughput beside the disk's own (JSON)"};
  std::string dir = "/tmp/yb-storage-bench";
  uint64_t total_mb = 1024;
  app.add_option("--dir", dir, "directory on the disk to measure (created and removed)");
  app.add_option("--total_mb", total_mb, "bytes written per object size, in MiB");
  uint64_t batch_keys = 500;
  std::vector<uint64_t> sizes_kib = {64, 1024, 4096};
  app.add_option("--sizes_kib", sizes_kib, "object sizes to measure, KiB");
  app.add_option("--batch", batch_keys, "objects per offload batch (500: a full bucket by key count)");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::warn);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  nlohmann::json out;
  std::string f = dir + "/dd.bin";
  std::string count = std::to_string(total_mb);
  double dd_write = Dd("if=/dev/zero of=" + f + " bs=1M count=" + count + " oflag=direct conv=fsync");
  double dd_read = Dd("if=" + f + " of=/dev/null bs=1M iflag=direct");
  std::filesystem::remove(f);
  out["disk"] = {{"dd_direct_write_GBps", dd_write / 1e9}, {"dd_direct_read_GBps", dd_read / 1e9}};
  out["tier"] = nlohmann::json::array();
  for (uint64_t kib : sizes_kib) {
    uint64_t size = kib << 10;
    yb::storage::StorageConfig c;
    c.path = dir + "/tier";
    c.total_size_limit = (total_mb + 64) << 20;
    yb::storage::StorageEngine engine(c);
    (void)engine.Open();
    uint64_t n = (total_mb << 20) / size;
    std::string value(size, 'v');
    std::vector<std::string> keys;
    for (uint64_t i = 0; i < n; ++i) keys.push_back("obj/" + std::to_string(i));
    auto t0 = Clock::now();
    for (uint64_t i = 0; i < n; i += batch_keys) {  // one offload batch fills up to a bucket
      std::vector<yb::storage::StorageEngine::Value> batch;
      for (uint64_t j = i; j < std::min(n, i + batch_keys); ++j) batch.push_back({keys[j], value});
      yb::Status st = engine.Put(batch);
      if (!st.ok()) {
        std::fprintf(stderr, "put: %s\n", st.ToString().c_str());
        return 1;
      }
    }
    double w = Since(t0);
    // Read back cold: drop the page cache so reads come from the disk, as they would after DRAM
    // eviction of a large working set (needs root; otherwise the figure includes cached reads).
    bool dropped = std::system("sync && echo 3 > /proc/sys/vm/drop_caches 2>/dev/null") == 0;
    std::string buf(size, '\0');
    t0 = Clock::now();
    for (uint64_t i = 0; i < n; ++i) (void)engine.Read(keys[i], buf.data(), buf.size());
    double r = Since(t0);
    out["tier"].push_back({{"object_bytes", size},
                           {"objects", n},
                           {"write_GBps", static_cast<double>(n * size) / w / 1e9},
                           {"read_GBps", static_cast<double>(n * size) / r / 1e9},
                           {"cold_cache", dropped}});
    std::filesystem::remove_all(c.path);
  }
  std::filesystem::remove_all(dir);
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}
