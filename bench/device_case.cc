// yb-bench --device_memory: put and get of values held in GPU memory against the same values in
// host memory, in alternating windows of one run (the machine's speed moves between minutes).
// The device memory comes from the CUDA driver the client loads (libcuda.so.1): on a machine
// without a GPU, tests/fake_cuda's on LD_LIBRARY_PATH, whose copies are memcpy, so the ratio shows
// what the staging pipeline costs over the host path when the device copy is as fast as memory.
#include "device_case.h"

#include <dlfcn.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "bench_time.h"
#include "client/device_memory.h"

namespace yb_bench {
namespace {

// Device memory for the benchmark's values: allocation is the caller's business, not the client's,
// so the bench resolves cuMemAlloc_v2 / cuMemcpyHtoD_v2 itself.
struct DeviceAlloc {
  int (*retain)(void**, int) = nullptr;
  int (*set)(void*) = nullptr;
  int (*alloc)(unsigned long long*, size_t) = nullptr;  // NOLINT(runtime/int): the driver's type
  int (*free)(unsigned long long) = nullptr;            // NOLINT(runtime/int)
  int (*h2d)(unsigned long long, const void*, size_t) = nullptr;  // NOLINT(runtime/int)
  void* ctx = nullptr;

  bool Load() {
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!lib) return false;
    retain = reinterpret_cast<decltype(retain)>(dlsym(lib, "cuDevicePrimaryCtxRetain"));
    set = reinterpret_cast<decltype(set)>(dlsym(lib, "cuCtxSetCurrent"));
    alloc = reinterpret_cast<decltype(alloc)>(dlsym(lib, "cuMemAlloc_v2"));
    free = reinterpret_cast<decltype(free)>(dlsym(lib, "cuMemFree_v2"));
    h2d = reinterpret_cast<decltype(h2d)>(dlsym(lib, "cuMemcpyHtoD_v2"));
    return retain && set && alloc && free && h2d && retain(&ctx, 0) == 0;
  }
  void* Alloc(size_t n, const std::vector<char>& fill) {
    unsigned long long p = 0;  // NOLINT(runtime/int)
    set(ctx);
    bool ok = alloc(&p, n) == 0 && h2d(p, fill.data(), n) == 0;
    set(nullptr);
    return ok ? reinterpret_cast<void*>(p) : nullptr;
  }
  void Free(void* p) {
    set(ctx);
    free(reinterpret_cast<unsigned long long>(p));  // NOLINT(runtime/int)
    set(nullptr);
  }
};

}  // namespace

nlohmann::json DeviceBench(const yb::ClientConfig& config, double seconds, const std::vector<uint64_t>& sizes) {
  if (!yb::DeviceMemory::Get().available()) {
    return {{"error", "no CUDA driver with a device: run with a GPU, or LD_LIBRARY_PATH=<build>/fake_cuda"}};
  }
  DeviceAlloc dev;
  if (!dev.Load()) return {{"error", "the CUDA driver has no cuMemAlloc_v2 / cuMemcpyHtoD_v2"}};
  auto connected = yb::Client::Connect(config);
  if (!connected.ok()) return {{"error", connected.status().ToString()}};
  auto client = std::move(connected).value();
  nlohmann::json out = nlohmann::json::array();
  constexpr int kRounds = 9;
  for (uint64_t size : sizes) {
    std::vector<char> host(size);
    for (size_t i = 0; i < size; ++i) host[i] = static_cast<char>(i * 29 + 3);
    void* device = dev.Alloc(size, host);
    if (!device) return {{"error", "cannot allocate device memory"}};
    // Sources and one window of puts in at most 256 MiB: no eviction in a pool of 512 MiB or more.
    const uint64_t objects = std::max<uint64_t>(8, std::min<uint64_t>(512, (128ULL << 20) / size));
    const double window = std::max(0.2, seconds / 4);
    // One window: as many puts (distinct keys, removed after) or gets as fit; GB/s. The first
    // failure ends the case: its figures would measure failing calls.
    std::string failure;
    auto note = [&](const yb::Status& st, const char* what) {
      if (!st.ok() && failure.empty()) failure = std::string(what) + " of " + std::to_string(size) + " bytes: " + st.ToString();
      return st.ok();
    };
    auto puts = [&](void* from, const std::string& tag) {
      auto t0 = Clock::now();
      uint64_t n = 0;
      for (; n < objects && Since(t0) < window; ++n) {
        if (!note(client->Put("bench/dev/" + tag + "/" + std::to_string(n), from, size), "put")) break;
      }
      double gbps = static_cast<double>(n * size) / Since(t0) / 1e9;
      (void)client->RemoveByRegex("^bench/dev/" + tag + "/", true);
      return gbps;
    };
    for (uint64_t i = 0; i < objects; ++i) (void)note(client->Put("bench/dev/src/" + std::to_string(i), host.data(), size), "put");
    auto gets = [&](void* into) {
      auto t0 = Clock::now();
      uint64_t n = 0;
      while (Since(t0) < window && note(client->Get("bench/dev/src/" + std::to_string(n % objects), into, size).status(), "get")) ++n;
      return static_cast<double>(n * size) / Since(t0) / 1e9;
    };
    std::vector<double> put_host, put_dev, get_host, get_dev, put_ratio, get_ratio;
    for (int r = 0; r < kRounds; ++r) {
      // Host first in even rounds, device first in odd ones: neither always runs warmer.
      if (r % 2 == 0) {
        put_host.push_back(puts(host.data(), "h"));
        put_dev.push_back(puts(device, "d"));
        get_host.push_back(gets(host.data()));
        get_dev.push_back(gets(device));
      } else {
        put_dev.push_back(puts(device, "d"));
        put_host.push_back(puts(host.data(), "h"));
        get_dev.push_back(gets(device));
        get_host.push_back(gets(host.data()));
      }
      if (put_host.back() > 0) put_ratio.push_back(put_dev.back() / put_host.back());
      if (get_host.back() > 0) get_ratio.push_back(get_dev.back() / get_host.back());
    }
    (void)client->RemoveByRegex("^bench/dev/", true);
    dev.Free(device);
    if (!failure.empty()) return {{"error", failure}};
    out.push_back({{"value_bytes", size},
                   {"rounds", kRounds},
                   {"put", {{"host_GBps", Median(put_host)}, {"device_GBps", Median(put_dev)},
                            {"median_ratio", Median(put_ratio)}, {"ratios", put_ratio}}},
                   {"get", {{"host_GBps", Median(get_host)}, {"device_GBps", Median(get_dev)},
                            {"median_ratio", Median(get_ratio)}, {"ratios", get_ratio}}}});
  }
  return out;
}

}  // namespace yb_bench
