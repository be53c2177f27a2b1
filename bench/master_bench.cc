// In-process MasterService throughput: PutStart+PutEnd, GetReplicaList and ExistKey, one key per
// call and batches of 128, on 1 and 2 threads. The master carries no bytes, so this is the cost
// of metadata alone.
#include <benchmark/benchmark.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/temp_dir.h"
#include "ha/meta_log.h"
#include "common/grant.h"
#include "master/master_service.h"

namespace yb {
namespace {

constexpr int kKeys = 1 << 20;
constexpr int kBatch = 128;

struct Shared {
  RealClock clock;
  std::unique_ptr<MasterService> master;
  std::vector<std::string> keys;
  CallContext ctx{ClientId{1, 1}, 0};
  std::atomic<uint64_t> put_seq{0};

  Shared() {
    spdlog::set_level(spdlog::level::warn);
    MasterConfig c;
    master = std::move(MasterService::Create(c, clock).value());
    (void)master->RegisterClient({ctx.client, "bench", "default"});
    for (int i = 0; i < 4; ++i) {
      SegmentMount d{static_cast<SegmentId>(i + 1), "node-" + std::to_string(i), 0, 1ULL << 40, "local"};
      (void)master->MountSegment(ctx, d);
    }
    keys.reserve(kKeys);
    for (int i = 0; i < kKeys; ++i) {
      keys.push_back("model@tp_rank:0@" + std::to_string(i * 2654435761ULL));
      (void)master->PutStart(ctx, keys.back(), 4096, {});
      (void)master->PutEnd(ctx, keys.back(), std::nullopt);
    }
  }
};

Shared& S() {
  static Shared s;
  return s;
}

void BM_GetReplicaList(benchmark::State& state) {
  auto& s = S();
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) {
    auto r = s.master->GetReplicaList(s.ctx, s.keys[i++ % kKeys], false);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetReplicaList)->Threads(1)->Threads(2)->UseRealTime();

// A whole read's metadata: GetReplicaList with a read pin, then ReadEnd.
void BM_GetPinned(benchmark::State& state) {
  auto& s = S();
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  CallContext ctx{ClientId{2, static_cast<uint64_t>(state.thread_index() + 1)}, 0};
  for (auto _ : state) {
    const auto& k = s.keys[i++ % kKeys];
    auto r = s.master->GetReplicaList(ctx, k, true);
    if (r.ok()) (void)s.master->ReadEnd(ctx, k, r->read_pin);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GetPinned)->Threads(1)->Threads(2)->UseRealTime();

void BM_ExistKey(benchmark::State& state) {
  auto& s = S();
  size_t i = static_cast<size_t>(state.thread_index()) * 7919;
  for (auto _ : state) benchmark::DoNotOptimize(s.master->ExistKey(s.ctx, s.keys[i++ % kKeys]));
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ExistKey)->Threads(1)->Threads(2)->UseRealTime();

void BM_PutStartEnd(benchmark::State& state) {
  auto& s = S();
  std::string prefix = "new/" + std::to_string(state.thread_index()) + "/";
  std::vector<std::string> mine;
  for (auto _ : state) {
    std::string key = prefix + std::to_string(s.put_seq.fetch_add(1, std::memory_order_relaxed));
    if (s.master->PutStart(s.ctx, key, 4096, {}).ok()) (void)s.master->PutEnd(s.ctx, key, std::nullopt);
  }
  state.SetItemsProcessed(state.iterations());
}
// A fixed count, so that every run grows the table by the same number of keys.
BENCHMARK(BM_PutStartEnd)->Threads(1)->Threads(2)->UseRealTime()->Iterations(300000);

std::vector<std::string> BatchAt(size_t start) {
  auto& s = S();
  std::vector<std::string> b;
  for (int j = 0; j < kBatch; ++j) b.push_back(s.keys[(start + j * 131) % kKeys]);
  return b;
}

void BM_BatchGetReplicaList(benchmark::State& state) {
  auto& s = S();
  std::vector<std::vector<std::string>> batches;
  for (int i = 0; i < 64; ++i) batches.push_back(BatchAt(i * 1000 + state.thread_index() * 17));
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(s.master->BatchGetReplicaList(s.ctx, batches[i++ % 64], false));
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_BatchGetReplicaList)->Threads(1)->Threads(2)->UseRealTime();

void BM_BatchExistKey(benchmark::State& state) {
  auto& s = S();
  std::vector<std::vector<std::string>> batches;
  for (int i = 0; i < 64; ++i) batches.push_back(BatchAt(i * 1000 + state.thread_index() * 17));
  size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(s.master->BatchExistKey(s.ctx, batches[i++ % 64]));
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_BatchExistKey)->Threads(1)->Threads(2)->UseRealTime();

void BM_BatchPutStartEnd(benchmark::State& state) {
  auto& s = S();
  std::vector<uint64_t> sizes(kBatch, 4096);
  std::string prefix = "batch/" + std::to_string(state.thread_index()) + "/";
  for (auto _ : state) {
    std::vector<std::string> keys;
    keys.reserve(kBatch);
    uint64_t base = s.put_seq.fetch_add(kBatch, std::memory_order_relaxed);
    for (int j = 0; j < kBatch; ++j) keys.push_back(prefix + std::to_string(base + j));
    (void)s.master->BatchPutStart(s.ctx, keys, sizes, {}, yb::WriteMode::kPut);
    (void)s.master->BatchPutEnd(s.ctx, keys, {});
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_BatchPutStartEnd)->Threads(1)->Threads(2)->UseRealTime()->Iterations(2000);

// What recording costs the master's threads: PutStart+PutEnd with the metadata log on, written
// but not synced (the syncs happen on the log's own thread; their latency is yb-bench's to show).
struct Logged {
  RealClock clock;
  TempDir dir{"yb-bench-log"};
  std::unique_ptr<ha::MetaLog> log;
  std::unique_ptr<MasterService> master;
  CallContext ctx{ClientId{1, 1}, 0};
  std::atomic<uint64_t> put_seq{0};
  Logged() {
    ha::MetaLog::Options o;
    o.dir = dir.path();
    o.sync = false;
    MasterImage image;
    log = std::move(ha::MetaLog::Open(o, &image).value());
    master = std::move(MasterService::Create(MasterConfig{}, clock).value());
    master->SetSink(log.get());
    (void)master->RegisterClient({ctx.client, "bench", "default"});
    for (int i = 0; i < 4; ++i) {
      SegmentMount d{static_cast<SegmentId>(i + 1), "node-" + std::to_string(i), 0, 1ULL << 40, "local"};
      (void)master->MountSegment(ctx, d);
    }
  }
};

Logged& L() {
  static Logged l;
  return l;
}

void BM_PutStartEndLogged(benchmark::State& state) {
  auto& s = L();
  std::string prefix = "new/" + std::to_string(state.thread_index()) + "/";
  for (auto _ : state) {
    std::string key = prefix + std::to_string(s.put_seq.fetch_add(1, std::memory_order_relaxed));
    if (s.master->PutStart(s.ctx, key, 4096, {}).ok()) (void)s.master->PutEnd(s.ctx, key, std::nullopt);
    s.log->Flush();  // as the RPC server does after each batch of calls
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PutStartEndLogged)->Threads(1)->Threads(2)->UseRealTime()->Iterations(300000);

void BM_BatchPutStartEndLogged(benchmark::State& state) {
  auto& s = L();
  std::vector<uint64_t> sizes(kBatch, 4096);
  std::string prefix = "batch/" + std::to_string(state.thread_index()) + "/";
  for (auto _ : state) {
    std::vector<std::string> keys;
    keys.reserve(kBatch);
    uint64_t base = s.put_seq.fetch_add(kBatch, std::memory_order_relaxed);
    for (int j = 0; j < kBatch; ++j) keys.push_back(prefix + std::to_string(base + j));
    (void)s.master->BatchPutStart(s.ctx, keys, sizes, {}, yb::WriteMode::kPut);
    s.log->Flush();
    (void)s.master->BatchPutEnd(s.ctx, keys, {});
    s.log->Flush();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
}
BENCHMARK(BM_BatchPutStartEndLogged)->Threads(1)->UseRealTime()->Iterations(2000);

// What a capability costs (docs/security.md): the master mints a grant per replica it hands out,
// and the owner's transfer server checks one per request.
void BM_MintGrant(benchmark::State& state) {
  const std::string key = NewGrantKey();
  uint64_t off = 0;
  for (auto _ : state) benchmark::DoNotOptimize(MintGrant(key, 7, GrantAccess::kRead, off += 4096, 65536, WallMs()));
}
BENCHMARK(BM_MintGrant);

void BM_CheckGrant(benchmark::State& state) {
  const std::string key = NewGrantKey();
  const Grant g = MintGrant(key, 7, GrantAccess::kRead, 0, 1 << 20, WallMs() + 60'000);
  for (auto _ : state) benchmark::DoNotOptimize(CheckGrant(key, 7, g, GrantAccess::kRead, 4096, 65536, WallMs()));
}
BENCHMARK(BM_CheckGrant);

}  // namespace
}  // namespace yb

BENCHMARK_MAIN();
