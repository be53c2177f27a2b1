// yb-repair-bench: re-replication throughput under a foreground read load, in one run, printed as
// JSON. Run by bench/repair_bench.sh, which starts the master and the storage daemons.
//   1. fill: --fill_bytes of --value_size objects, replica_num 2, from this process (a pure caller);
//   2. baseline: --readers threads getting random objects for --seconds (GB/s, gets/s);
//   3. the victim daemon (--victim_pid) is killed (-9) with the readers still running; the master
//      declares it dead after its client_ttl and queues every object it held; re-replication runs
//      from then until no object is at risk (the master's /metrics, polled every 20 ms);
//   4. repair: bytes copied (yb_master_repair_bytes_total) over that window: GB/s; the readers'
//      GB/s in the same window beside the baseline; and every object read back whole at the end.
// Usage: yb-repair-bench --master 127.0.0.1:P --master_http 127.0.0.1:H --victim_pid PID
#include <httplib.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>
#include <vector>

#include "bench_time.h"
#include "common/units.h"
#include "yuebing/client.h"

namespace {

using yb_bench::Clock;
using yb_bench::Since;

using json = nlohmann::json;

// The value of an unlabelled metric on the master's /metrics; nullopt when it cannot be read.
std::optional<double> Metric(httplib::Client& http, const std::string& name) {
  auto r = http.Get("/metrics");
  if (!r || r->status != 200) return std::nullopt;
  const std::string& body = r->body;
  for (size_t pos = 0; pos < body.size();) {
    size_t end = body.find('\n', pos);
    if (end == std::string::npos) end = body.size();
    std::string_view line(body.data() + pos, end - pos);
    if (line.size() > name.size() && line.substr(0, name.size()) == name && line[name.size()] == ' ') {
      return std::stod(std::string(line.substr(name.size() + 1)));
    }
    pos = end + 1;
  }
  return std::nullopt;
}

void Fill(std::vector<char>& v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i + 8 <= v.size(); i += 8) {
    uint64_t x = rng();
    std::memcpy(v.data() + i, &x, 8);
  }
}

// Reader threads getting random objects; bytes read counted as they go.
class Readers {
 public:
  Readers(std::vector<std::unique_ptr<yb::Client>>& clients, size_t objects, uint64_t value_size)
      : clients_(clients), objects_(objects), value_size_(value_size) {}
  void Start() {
    for (size_t t = 0; t < clients_.size(); ++t) {
      threads_.emplace_back([this, t] {
        std::vector<char> buf(value_size_);
        std::mt19937_64 rng(t + 1);
        while (!stop_.load(std::memory_order_relaxed)) {
          auto r = clients_[t]->Get("rb/" + std::to_string(rng() % objects_), buf.data(), buf.size());
          if (r.ok()) {
            bytes_.fetch_add(*r, std::memory_order_relaxed);
            gets_.fetch_add(1, std::memory_order_relaxed);
          } else {
            failed_.fetch_add(1, std::memory_order_relaxed);
          }
        }
      });
    }
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) t.join();
  }
  uint64_t bytes() const { return bytes_.load(); }
  uint64_t gets() const { return gets_.load(); }
  uint64_t failed() const { return failed_.load(); }

 private:
  std::vector<std::unique_ptr<yb::Client>>& clients_;
  size_t objects_;
  uint64_t value_size_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> bytes_{0}, gets_{0}, failed_{0};
};

json Window(uint64_t bytes, uint64_t gets, double seconds) {
  return {{"seconds", seconds}, {"GBps", bytes / seconds / 1e9}, {"gets_per_s", gets / seconds}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"yb-repair-bench: re-replication throughput beside a foreground read load, as JSON"};
  std::string master = yb::kDefaultMasterAddress, master_http = "127.0.0.1:9003";
  uint64_t fill_bytes = 1ULL << 30, value_size = 1ULL << 20;
  int readers_n = 2, victim_pid = 0;
  double seconds = 5;
  std::string repair_bandwidth;
  app.add_option("--master", master, "yb-master host:port");
  app.add_option("--master_http", master_http, "its metrics host:port (/metrics)");
  app.add_option("--victim_pid", victim_pid, "the storage daemon to kill (-9)")->required();
  app.add_option("--readers", readers_n, "foreground reader threads")->check(CLI::Range(1, 64));
  app.add_option("--seconds", seconds, "baseline window");
  app.add_option("--fill_bytes", fill_bytes, "bytes of objects written (each with 2 replicas)");
  app.add_option("--value_size", value_size, "bytes per object");
  app.add_option("--repair_bandwidth", repair_bandwidth, "the master's --repair_bandwidth, for the report");
  CLI11_PARSE(app, argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("yb-repair-bench"));
  spdlog::set_level(spdlog::level::err);  // the victim's death makes reads fall over: expected

  yb::ClientConfig c;
  c.master_server_addr = master;
  c.local_hostname = "127.0.0.1";
  c.global_segment_size = 0;
  c.local_buffer_size = 4 * value_size;
  std::vector<std::unique_ptr<yb::Client>> clients;
  for (int i = 0; i < readers_n + 1; ++i) {
    auto cl = yb::Client::Connect(c);
    if (!cl.ok()) {
      std::fprintf(stderr, "connect: %s\n", cl.status().ToString().c_str());
      return 1;
    }
    clients.push_back(std::move(cl).value());
  }
  const size_t h = master_http.rfind(':');
  httplib::Client http(master_http.substr(0, h), std::stoi(master_http.substr(h + 1)));
  http.set_read_timeout(2, 0);

  json out;
  if (!repair_bandwidth.empty()) out["repair_bandwidth"] = repair_bandwidth;
  const size_t objects = fill_bytes / value_size;
  std::vector<char> v(value_size);
  yb::ReplicateConfig two;
  two.replica_num = 2;
  auto t0 = Clock::now();
  for (size_t i = 0; i < objects; ++i) {
    Fill(v, i);
    auto st = clients.back()->Put("rb/" + std::to_string(i), v.data(), v.size(), two);
    if (!st.ok()) {
      std::fprintf(stderr, "fill: put %zu: %s\n", i, st.ToString().c_str());
      return 1;
    }
  }
  out["fill"] = {{"objects", objects}, {"bytes", objects * value_size}, {"seconds", Since(t0)}};
  clients.pop_back();  // the writer; the readers remain

  Readers readers(clients, objects, value_size);
  readers.Start();
  uint64_t b0 = readers.bytes(), g0 = readers.gets();
  auto tb = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  out["get_baseline"] = Window(readers.bytes() - b0, readers.gets() - g0, Since(tb));

  const double repaired0 = Metric(http, "yb_master_repair_bytes_total").value_or(0);
  auto killed = Clock::now();
  kill(victim_pid, SIGKILL);
  // The master queues the victim's objects once it declares it dead (client_ttl): repair starts.
  std::optional<Clock::time_point> start;
  uint64_t bs = 0, gs = 0;
  double at_risk_max = 0;
  json timeline = json::array();  // every 100 ms from the start: at risk, copies in flight, repaired
  double next_sample = 0;
  while (Since(killed) < 120) {
    auto risk = Metric(http, "yb_master_objects_at_risk");
    if (start && Since(*start) >= next_sample) {
      next_sample += 0.1;
      timeline.push_back({Since(*start), risk.value_or(-1), Metric(http, "yb_master_repairs_in_flight").value_or(-1),
                          Metric(http, "yb_master_repaired_total").value_or(-1)});
    }
    if (risk && *risk > 0 && !start) {
      start = Clock::now();
      bs = readers.bytes();
      gs = readers.gets();
    }
    if (risk) at_risk_max = std::max(at_risk_max, *risk);
    if (start && risk && *risk == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!start) {
    readers.Stop();
    std::fprintf(stderr, "no object was ever at risk: was the victim holding any?\n");
    return 1;
  }
  const double window = Since(*start);
  const uint64_t read_bytes = readers.bytes() - bs, read_gets = readers.gets() - gs;
  const double repaired = Metric(http, "yb_master_repair_bytes_total").value_or(0) - repaired0;
  readers.Stop();
  out["detected_after_s"] = std::chrono::duration<double>(*start - killed).count();
  out["repair"] = {{"objects_at_risk", at_risk_max},
                   {"bytes", repaired},
                   {"seconds", window},
                   {"GBps", repaired / window / 1e9}};
  out["get_during_repair"] = Window(read_bytes, read_gets, window);
  out["timeline_s_atrisk_inflight_repaired"] = timeline;
  out["get_during_over_baseline"] =
      out["get_during_repair"]["GBps"].get<double>() / out["get_baseline"]["GBps"].get<double>();
  out["reads_failed"] = readers.failed();

  // Every object whole, from the replicas left and made.
  uint64_t missing = 0, wrong = 0;
  std::vector<char> got(value_size);
  for (size_t i = 0; i < objects; ++i) {
    Fill(v, i);
    auto r = clients[0]->Get("rb/" + std::to_string(i), got.data(), got.size());
    if (!r.ok()) {
      ++missing;
    } else if (std::memcmp(got.data(), v.data(), value_size) != 0) {
      ++wrong;
    }
  }
  out["after"] = {{"missing", missing}, {"wrong", wrong}};
  std::printf("%s\n", out.dump(2).c_str());
  return missing == 0 && wrong == 0 ? 0 : 1;
}
