// yb-bench --session_layers N: a layer-wise load of a batch of objects through a get session (one
// start, N ranged reads, one end) against N plain batch gets of per-layer objects holding the same
// bytes, in alternating rounds of one run.
#include "session_case.h"

#include <string>

#include "bench_time.h"

namespace yb_bench {

nlohmann::json SessionBench(const yb::ClientConfig& config, int layers, int keys, uint64_t page) {
  auto connected = yb::Client::Connect(config);
  if (!connected.ok()) return {{"error", connected.status().ToString()}};
  auto client = std::move(connected).value();
  const uint64_t object = layers * page;
  std::vector<char> src(object);
  for (uint64_t i = 0; i < object; ++i) src[i] = static_cast<char>(i * 31 + 7);
  std::vector<std::string> whole;
  std::vector<std::vector<std::string>> per_layer(layers);
  for (int k = 0; k < keys; ++k) {
    whole.push_back("bench/sess/obj/" + std::to_string(k));
    if (!client->Put(whole.back(), src.data(), object).ok()) return {{"error", "cannot store the objects"}};
    for (int l = 0; l < layers; ++l) {
      per_layer[l].push_back("bench/sess/layer/" + std::to_string(k) + "/" + std::to_string(l));
      if (!client->Put(per_layer[l].back(), src.data() + l * page, page).ok()) {
        return {{"error", "cannot store the per-layer objects"}};
      }
    }
  }
  // The engine's layout: one buffer per layer, each holding every object's page of that layer.
  std::vector<std::vector<char>> dst(layers, std::vector<char>(keys * page));
  std::vector<std::vector<std::vector<yb::Slice>>> slices(layers);
  std::vector<std::vector<uint64_t>> offsets_of(layers);
  for (int l = 0; l < layers; ++l) {
    for (int k = 0; k < keys; ++k) slices[l].push_back({{dst[l].data() + k * page, page}});
  }
  auto session = [&] {
    for (const auto& st : client->GetSessionStart(whole)) {
      if (!st.ok()) return false;
    }
    bool ok = true;
    for (int l = 0; l < layers && ok; ++l) {
      std::vector<std::vector<uint64_t>> offsets(keys, std::vector<uint64_t>{l * page});
      for (const auto& r : client->GetSessionRanges(whole, slices[l], offsets)) ok = ok && r.ok();
    }
    client->GetSessionEnd(whole);
    return ok;
  };
  auto plain = [&] {
    bool ok = true;
    for (int l = 0; l < layers && ok; ++l) {
      for (const auto& r : client->BatchGet(per_layer[l], slices[l])) ok = ok && r.ok();
    }
    return ok;
  };
  constexpr int kRounds = 9;
  const double bytes = static_cast<double>(keys) * object;
  std::vector<double> s_gbps, p_gbps, ratio;
  for (int r = 0; r < kRounds; ++r) {
    double s = 0, p = 0;
    for (int order = 0; order < 2; ++order) {
      const bool session_now = (order == 0) == (r % 2 == 0);
      auto t0 = Clock::now();
      if (!(session_now ? session() : plain())) return {{"error", "a load failed"}};
      (session_now ? s : p) = bytes / Since(t0) / 1e9;
    }
    s_gbps.push_back(s);
    p_gbps.push_back(p);
    ratio.push_back(s / p);
  }
  (void)client->RemoveByRegex("^bench/sess/", true);
  return {{"layers", layers},
          {"objects", keys},
          {"layer_bytes", page},
          {"rounds", kRounds},
          {"session_GBps", Median(s_gbps)},
          {"plain_batch_gets_GBps", Median(p_gbps)},
          {"median_ratio", Median(ratio)},
          {"ratios", ratio}};
}

}  // namespace yb_bench
