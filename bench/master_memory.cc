// Master memory per object: publishes N single-replica objects with 64-character keys (the length
// of a hex block hash) and prints JSON with the heap bytes per object, in total and beside the key
// (the table key's bytes, stored inline in the object's entry, subtracted).
// Usage: yb-master-memory [N ...]   (default: 1000000 10000000)
#include <malloc.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/clock.h"
#include "master/master_service.h"

namespace {

size_t HeapInUse() { return mallinfo2().uordblks + mallinfo2().hblkhd; }

std::string Key(uint64_t i) {
  char buf[80];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx%016llx%016llx", static_cast<unsigned long long>(i),
                static_cast<unsigned long long>(i * 0x9E3779B97F4A7C15ULL), 0x1234ULL, 0x5678ULL);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_level(spdlog::level::warn);
  std::vector<uint64_t> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::strtoull(argv[i], nullptr, 10));
  if (counts.empty()) counts = {1000000, 10000000};
  std::printf("[\n");
  for (size_t c = 0; c < counts.size(); ++c) {
    uint64_t n = counts[c];
    // The key's own cost: the object table stores each table key (2-byte tenant prefix + 64
    // chars) inline in its entry, so the key costs its bytes and nothing more.
    {
      const double key_per_object = static_cast<double>(yb::InternalKey(0, Key(0)).size());

      yb::RealClock clock;
      yb::MasterConfig config;
      size_t before = HeapInUse();
      auto master = std::move(yb::MasterService::Create(config, clock).value());
      yb::CallContext ctx{yb::ClientId{1, 1}, 0};
      (void)master->RegisterClient({ctx.client, "mem", "default"});
      (void)master->MountSegment(ctx, {1, "node", 0, 1ULL << 50, "local"});
      size_t empty = HeapInUse();
      for (uint64_t i = 0; i < n; ++i) {
        std::string k = Key(i);
        if (!master->PutStart(ctx, k, 4096, {}).ok() || !master->PutEnd(ctx, k, std::nullopt).ok()) {
          std::fprintf(stderr, "put %llu failed\n", static_cast<unsigned long long>(i));
          return 1;
        }
      }
      size_t after = HeapInUse();
      double per_object = static_cast<double>(after - empty) / static_cast<double>(n);
      std::printf(
          "  {\"objects\": %llu, \"key_chars\": 64, \"master_heap_bytes\": %zu, "
          "\"bytes_per_object\": %.1f, \"key_bytes_per_object\": %.1f, "
          "\"bytes_per_object_beside_key\": %.1f, \"empty_master_bytes\": %zu}%s\n",
          static_cast<unsigned long long>(n), after - before, per_object, key_per_object, per_object - key_per_object,
          empty - before, c + 1 < counts.size() ? "," : "");
      std::fflush(stdout);
    }
  }
  std::printf("]\n");
  return 0;
}
