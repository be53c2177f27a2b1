// Offset allocator throughput on one thread: allocations per second (each paired with a free) in
// a full pool of one object size (Mooncake's scenario), in a half-full pool of mixed sizes with
// up to a million live ranges (a stress case bound by memory latency), and pure allocation.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "master/offset_allocator.h"

namespace yb {
namespace {

void BM_AllocateFree(benchmark::State& state) {
  const uint64_t capacity = 64ULL << 30;  // 64 GiB segment
  const uint64_t max_size = static_cast<uint64_t>(state.range(0));
  OffsetAllocator alloc(capacity, 64);
  std::mt19937_64 rng(1);
  std::vector<uint32_t> live;
  std::vector<uint64_t> sizes(1 << 16);
  for (auto& s : sizes) s = 64 + rng() % max_size;
  size_t si = 0;
  while (alloc.free_bytes() > capacity / 2) {
    auto a = alloc.Allocate(sizes[si++ & 0xFFFF]);
    if (!a) break;
    live.push_back(a->node);
  }
  std::vector<uint32_t> victims(1 << 16);
  for (auto& v : victims) v = static_cast<uint32_t>(rng());
  size_t vi = 0;
  for (auto _ : state) {
    size_t idx = victims[vi++ & 0xFFFF] % live.size();
    alloc.Free(live[idx]);
    auto a = alloc.Allocate(sizes[si++ & 0xFFFF]);
    live[idx] = a ? a->node : live.back();
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["live_allocations"] = static_cast<double>(live.size());
}
// Value sizes up to 64 KiB (small KV blocks) and up to 4 MiB (large).
BENCHMARK(BM_AllocateFree)->Arg(64 << 10)->Arg(4 << 20);

// Mooncake's allocator benchmark, done our way: a 1 GiB segment filled to the brim with objects
// of one size, then a churn of random free + allocate of that size.
// A size between two bins' bounds (1 MiB + 4 KiB: a block with a header) must take the hole its
// own kind left.
void BM_FullPoolChurn(benchmark::State& state) {
  constexpr uint32_t kGone = UINT32_MAX;  // an object whose allocation failed
  const uint64_t capacity = 1ULL << 30;
  const uint64_t size = static_cast<uint64_t>(state.range(0));
  OffsetAllocator alloc(capacity, 64);
  std::vector<uint32_t> live;
  while (auto a = alloc.Allocate(size)) live.push_back(a->node);
  std::mt19937_64 rng(2);
  std::vector<uint32_t> victims(1 << 16);
  for (auto& v : victims) v = static_cast<uint32_t>(rng() % live.size());
  size_t vi = 0;
  uint64_t failed = 0;
  for (auto _ : state) {
    uint32_t idx = victims[vi++ & 0xFFFF];
    if (live[idx] != kGone) alloc.Free(live[idx]);
    auto a = alloc.Allocate(size);
    live[idx] = a ? a->node : kGone;
    failed += a ? 0 : 1;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["live_allocations"] = static_cast<double>(live.size());
  state.counters["failed"] = static_cast<double>(failed);
}
BENCHMARK(BM_FullPoolChurn)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg((1 << 20) + (4 << 10));

// Allocation only, into an empty segment, then everything freed (outside the timing).
void BM_AllocateOnly(benchmark::State& state) {
  const int batch = 1 << 16;
  for (auto _ : state) {
    state.PauseTiming();
    OffsetAllocator alloc(64ULL << 30, 64);
    state.ResumeTiming();
    for (int i = 0; i < batch; ++i) benchmark::DoNotOptimize(alloc.Allocate(4096 + (i & 1023) * 64));
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_AllocateOnly);

}  // namespace
}  // namespace yb

BENCHMARK_MAIN();
