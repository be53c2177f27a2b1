// yb-bench: measures a running cluster and this machine's limits, and prints one JSON document.
//   - master RPC ops/s: ExistKey, GetReplicaList, PutStart+PutEnd; single keys with 1 call in
//     flight on 1 connection, 1 call in flight on each of 16 (and 64) connections, from a thread per
//     connection and from one event-loop thread driving all of them (event_callers.h), 16 in flight
//     pipelined on 1 connection; batches of 128;
//   - put and get between this process (a pure caller) and the segments of the cluster's clients,
//     over TCP: GB/s, ops/s, p50 and p99 latency for 4 KiB, 64 KiB, 1 MiB, 4 MiB values, and
//     4 KiB values in batches of 32; for 1 MiB gets, also five short get windows each right after
//     an iperf3 measurement (get.vs_iperf3_adjacent: the ratio at the machine's speed of the moment);
//   - the machine: single-thread memcpy bandwidth, iperf3's loopback bandwidth when iperf3 is
//     installed, and the same event-loop caller against an RPC server (a child process, one
//     thread) whose handler does nothing: the ceiling for the master's single-key figures.
// With --per_cpu_callers the event-loop callers run as a pinned thread per CPU (against a master
// started with --rpc_pin_threads), and the do-nothing server as a pinned thread per CPU.
// Usage: yb-bench --master 127.0.0.1:50051 [--seconds 1.5] [--skip_iperf] [--per_cpu_callers]
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include "api/master_api.h"
#include "bench_time.h"
#include "client/client_internal.h"
#include "common/cpus.h"
#include "common/segment_name.h"
#include "common/units.h"
#include "device_case.h"
#include "event_callers.h"
#include "iperf3.h"
#include "master.pb.h"
#include "rpc/master_client.h"
#include "rpc/master_convert.h"
#include "rpc/master_server.h"
#include "session_case.h"
#include "transfer/local_segments.h"
#include "yuebing/client.h"

namespace {

using yb_bench::Clock;
using yb_bench::Since;

using nlohmann::json;
using yb::bench::Iperf3;

// What went wrong in this run: each case that failed calls, or could not run. Any makes yb-bench
// exit 1 (its JSON still printed, with the list under "failures"): a figure measured over failing
// calls is no figure.
std::mutex g_failures_mu;
std::vector<std::string> g_failures;
void Failed(const std::string& what) {
  spdlog::error("{}", what);
  std::lock_guard lock(g_failures_mu);
  g_failures.push_back(what);
}

// A batch call succeeded when every key did.
template <typename Results>
bool AllOk(const Results& results) {
  return std::all_of(results.begin(), results.end(), [](const auto& r) { return r.ok(); });
}

// Runs `op(thread, i)` (true: the call succeeded) on `threads` threads for `seconds`; returns
// operations per second of the calls that succeeded, where each counts `per_call` operations. Calls
// that failed are reported as failures of the case `what`.
template <typename Op>
double Rate(const std::string& what, int threads, double seconds, uint64_t per_call, Op op) {
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> total{0}, failed{0};
  std::vector<std::thread> ts;
  auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      uint64_t n = 0, ok = 0;
      while (!stop.load(std::memory_order_relaxed)) ok += op(t, n++) ? 1 : 0;
      total += ok * per_call;
      failed += n - ok;
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop = true;
  for (auto& t : ts) t.join();
  if (failed > 0) Failed(what + ": " + std::to_string(failed.load()) + " calls failed");
  return static_cast<double>(total.load()) / Since(t0);
}

// CPU seconds a process on this host has used so far, user and system, from /proc/PID/stat.
std::optional<std::pair<double, double>> ProcessCpu(pid_t pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return std::nullopt;
  char buf[4096];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  if (!p) return std::nullopt;
  // After the name come the fields from 3 (state) on; utime and stime are fields 14 and 15.
  std::istringstream in(p + 1);
  std::string field;
  for (int i = 3; i < 14 && in >> field; ++i) {
  }
  unsigned long utime = 0, stime = 0;
  if (!(in >> utime >> stime)) return std::nullopt;
  double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  return std::make_pair(utime / tick, stime / tick);
}

// The name of an event-loop case in the JSON.
std::string EventLoopCase(int conns, bool per_cpu) {
  return std::to_string(conns) + "_conns_1_in_flight_each_event_loop" + (per_cpu ? "_per_cpu" : "");
}

// Single-key calls from one event-loop thread (with per_cpu, one pinned thread per CPU) over
// `conns` connections, one call in flight on each (event_callers.h); ops/s of replies that
// succeeded. PutStart+PutEnd counts pairs. With check_replies false any reply counts (for the no-op
// server). When server_pid names the serving process on this host, *cpu gets its user and system
// CPU microseconds per call over the run.
double EventLoopRate(const std::string& host, uint16_t port, int conns, double seconds, const std::string& op,
                     const yb::CallContext& ctx, const std::vector<std::string>& keys, std::atomic<uint64_t>& put_seq,
                     bool check_replies = true, pid_t server_pid = 0, json* cpu = nullptr, bool per_cpu = false) {
  using yb::rpc::MasterMethod;
  const bool put = op == "PutStart+PutEnd", exist = op == "ExistKey";
  uint64_t put_base = put_seq.fetch_add(1ULL << 32);  // fresh keys for this run
  yb::pb::Context pctx;
  yb::rpc::ToPb(ctx, &pctx);  // with the identity token the master gave: as a client calls
  // Reads of existing keys: every request body is built before the clock starts.
  std::vector<std::string> bodies;
  if (!put) {
    for (const auto& k : keys) {
      if (exist) {
        yb::pb::KeysRequest q;
        *q.mutable_ctx() = pctx;
        q.add_keys(k);
        bodies.push_back(q.SerializeAsString());
      } else {
        yb::pb::GetReplicaListRequest q;
        *q.mutable_ctx() = pctx;
        q.add_keys(k);
        bodies.push_back(q.SerializeAsString());
      }
    }
  }
  // Per connection, as the per-CPU callers call from several threads: a put's requests and body
  // (alive until the connection's next call), and the replies parsed by `check`.
  std::vector<std::string> put_bodies(conns);
  std::vector<yb::pb::PutStartRequest> starts(conns);
  std::vector<yb::pb::PutEndRequest> ends(conns);
  std::vector<yb::pb::ExistKeyResponse> exist_resps(conns);
  std::vector<yb::pb::GetReplicaListResponse> grl_resps(conns);
  std::vector<yb::pb::PutStartResponse> start_resps(conns);
  std::vector<yb::pb::StatusesResponse> end_resps(conns);
  for (int c = 0; c < conns; ++c) {
    *starts[c].mutable_ctx() = pctx;
    starts[c].mutable_config()->set_replica_num(1);
    *ends[c].mutable_ctx() = pctx;
  }
  auto next = [&](int c, uint64_t n, uint16_t* m) -> std::string_view {
    if (!put) {
      *m = static_cast<uint16_t>(exist ? MasterMethod::kExistKey : MasterMethod::kGetReplicaList);
      return bodies[(n * conns + c) % bodies.size()];
    }
    std::string key = "bench/eput/" + std::to_string(put_base + (n / 2) * conns + c);
    if (n % 2 == 0) {
      *m = static_cast<uint16_t>(MasterMethod::kPutStart);
      auto& q = starts[c];
      q.clear_keys();
      q.clear_sizes();
      q.add_keys(key);
      q.add_sizes(4096);
      q.SerializeToString(&put_bodies[c]);
    } else {
      *m = static_cast<uint16_t>(MasterMethod::kPutEnd);
      auto& q = ends[c];
      q.clear_keys();
      q.add_keys(key);
      q.SerializeToString(&put_bodies[c]);
    }
    return put_bodies[c];
  };
  // A reply with one OK result (and for reads, the key found).
  auto one_ok = [](auto& r, std::string_view body) {
    return r.ParseFromArray(body.data(), static_cast<int>(body.size())) && r.results_size() == 1;
  };
  auto check = [&](int c, uint64_t n, std::string_view body) {
    if (!check_replies) return true;
    if (put && n % 2 == 0) return one_ok(start_resps[c], body) && start_resps[c].results(0).status().code() == 0;
    if (put) return one_ok(end_resps[c], body) && end_resps[c].results(0).code() == 0;
    if (exist) {
      auto& r = exist_resps[c];
      return one_ok(r, body) && r.results(0).code() == 0 && r.exists_size() == 1 && r.exists(0);
    }
    auto& r = grl_resps[c];
    return one_ok(r, body) && r.results(0).status().code() == 0 && r.results(0).replicas_size() > 0;
  };
  auto cpu0 = server_pid > 0 ? ProcessCpu(server_pid) : std::nullopt;
  auto r = yb::bench::RunEventCallers(host, port, conns, seconds, next, check, per_cpu);
  auto cpu1 = server_pid > 0 ? ProcessCpu(server_pid) : std::nullopt;
  const std::string what = op + " from an event loop over " + std::to_string(conns) + " connections";
  if (!r.ok()) {
    Failed(what + ": " + r.status().ToString());
    return 0;
  }
  if (r->failures > 0) Failed(what + ": " + std::to_string(r->failures) + " calls failed");
  if (cpu && cpu0 && cpu1 && r->calls + r->failures > 0) {
    double calls = static_cast<double>(r->calls + r->failures);
    *cpu = {{"user_us_per_call", (cpu1->first - cpu0->first) * 1e6 / calls},
            {"sys_us_per_call", (cpu1->second - cpu0->second) * 1e6 / calls}};
  }
  return static_cast<double>(r->calls) / (put ? 2 : 1) / r->seconds;
}

// Processes of this host whose CPU time each master RPC case reports (--cpu_of), by name.
using Watched = std::vector<std::pair<std::string, pid_t>>;

json MetadataBench(const yb::ClientConfig& caller, double seconds, const std::regex& filter, pid_t master_pid,
                   bool per_cpu, const Watched& watched) {
  constexpr int kKeys = 20000, kBatch = 128;
  auto hp = yb::ParseHostPort(caller.master_server_addr);
  auto security = yb::ClientSecurity(caller);
  if (!hp.ok() || !security.ok()) {
    Failed("master RPC cases: " + (hp.ok() ? security.status() : hp.status()).ToString());
    return json{{"error", (hp.ok() ? security.status() : hp.status()).ToString()}};
  }
  // Connections made as a client's are: with its TLS and the proof of its secret, if it has them.
  const auto channel = yb::MasterChannel(caller, *security);
  auto timeout = std::chrono::milliseconds(5000);
  std::vector<std::unique_ptr<yb::rpc::MasterClient>> conns;
  for (int i = 0; i < 64; ++i) {
    conns.push_back(std::make_unique<yb::rpc::MasterClient>(hp->first, hp->second, timeout, nullptr, channel));
  }
  auto registered = conns[0]->RegisterClient({yb::ClientId::Random(), "yb-bench", caller.tenant});
  if (!registered.ok()) {
    Failed("master RPC cases: RegisterClient: " + registered.status().ToString());
    return json{{"error", registered.status().ToString()}};
  }
  const yb::CallContext ctx = *registered;
  std::vector<std::string> keys;
  for (int i = 0; i < kKeys; ++i) keys.push_back("bench/meta/" + std::to_string(i));
  for (int i = 0; i < kKeys; i += kBatch) {
    std::vector<std::string> b(keys.begin() + i, keys.begin() + std::min(kKeys, i + kBatch));
    (void)conns[0]->BatchPutStart(ctx, b, std::vector<uint64_t>(b.size(), 4096), {});
    (void)conns[0]->BatchPutEnd(ctx, b, {});
  }
  std::atomic<uint64_t> put_seq{0};
  auto exist = [&](yb::MasterApi& m, uint64_t i) {
    auto r = m.ExistKey(ctx, keys[i % kKeys]);
    return r.ok() && *r;
  };
  auto grl = [&](yb::MasterApi& m, uint64_t i) { return m.GetReplicaList(ctx, keys[(i * 7) % kKeys], false).ok(); };
  auto put = [&](yb::MasterApi& m, uint64_t) {
    std::string k = "bench/put/" + std::to_string(put_seq++);
    return m.PutStart(ctx, k, 4096, {}).ok() && m.PutEnd(ctx, k, std::nullopt).ok();
  };
  json out;
  struct Op {
    const char* name;
    std::function<bool(yb::MasterApi&, uint64_t)> fn;
  };
  // Runs a case when its "operation/case" name matches --meta_cases.
  // With --cpu_of, also the CPU time (user and system) each watched process spent per operation
  // counted (a pair, or a batch's key) over the case: where a case's time goes across processes.
  auto run = [&](const std::string& op, const std::string& name, const std::function<double(const std::string&)>& measure) {
    const std::string what = op + "/" + name;
    if (!std::regex_search(what, filter)) return;
    std::vector<std::optional<std::pair<double, double>>> before;
    for (const auto& w : watched) before.push_back(ProcessCpu(w.second));
    const auto t0 = Clock::now();
    const double rate = measure(what);
    const double ops = rate * Since(t0);
    out[op][name] = rate;
    for (size_t i = 0; i < watched.size(); ++i) {
      auto after = ProcessCpu(watched[i].second);
      if (before[i] && after && ops > 0) {
        const double us = (after->first - before[i]->first + after->second - before[i]->second) * 1e6 / ops;
        out["cpu_us_per_op"][op][name][watched[i].first] = std::round(us * 100) / 100;
      }
    }
  };
  // The event-loop callers speak the RPC framing on plain sockets: no TLS, no proof of a secret.
  const bool event_loops = !(*security)->auth() && !(*security)->tls();
  if (!event_loops) out["event_loop_cases"] = "skipped: their callers cannot prove a secret or speak TLS";
  for (const Op& op : {Op{"ExistKey", exist}, Op{"GetReplicaList", grl}, Op{"PutStart+PutEnd", put}}) {
    run(op.name, "1_conn_1_in_flight",
        [&](const std::string& what) { return Rate(what, 1, seconds, 1, [&](int, uint64_t i) { return op.fn(*conns[0], i); }); });
    for (int n : {16, 64}) {
      run(op.name, std::to_string(n) + "_conns_1_in_flight_each", [&](const std::string& what) {
        return Rate(what, n, seconds, 1, [&](int t, uint64_t i) { return op.fn(*conns[t], i * n + t); });
      });
      if (!event_loops) continue;
      const std::string name = EventLoopCase(n, per_cpu);
      run(op.name, name, [&](const std::string&) {
        json cpu;
        double rate = EventLoopRate(hp->first, hp->second, n, seconds, op.name, ctx, keys, put_seq, true, master_pid,
                                    &cpu, per_cpu);
        if (!cpu.is_null()) out["master_cpu_us_per_call"][op.name][name] = cpu;
        return rate;
      });
    }
    run(op.name, "1_conn_16_in_flight", [&](const std::string& what) {
      return Rate(what, 16, seconds, 1, [&](int t, uint64_t i) { return op.fn(*conns[0], i * 16 + t); });
    });
  }
  // Batches of 128 keys, on 1 and 4 connections.
  auto batch_of = [&](uint64_t i) {
    std::vector<std::string> b;
    for (int j = 0; j < kBatch; ++j) b.push_back(keys[(i * kBatch + j * 131) % kKeys]);
    return b;
  };
  std::vector<std::vector<std::string>> batches;
  for (int i = 0; i < 64; ++i) batches.push_back(batch_of(i));
  auto batch_put = [&](yb::MasterApi& m) {
    std::vector<std::string> b;
    uint64_t base = put_seq.fetch_add(kBatch);
    for (int j = 0; j < kBatch; ++j) b.push_back("bench/bput/" + std::to_string(base + j));
    auto started = m.BatchPutStart(ctx, b, std::vector<uint64_t>(kBatch, 4096), {});
    auto ended = m.BatchPutEnd(ctx, b, {});
    return AllOk(started) && AllOk(ended);
  };
  struct BatchOp {
    const char* name;
    std::function<bool(yb::MasterApi&, uint64_t)> fn;
  };
  for (const BatchOp& op :
       {BatchOp{"BatchExistKey_128", [&](yb::MasterApi&m, uint64_t i) { return AllOk(m.BatchExistKey(ctx, batches[i % 64])); }},
        BatchOp{"BatchGetReplicaList_128",
                [&](yb::MasterApi&m, uint64_t i) { return AllOk(m.BatchGetReplicaList(ctx, batches[i % 64], false)); }},
        BatchOp{"BatchPutStart+PutEnd_128", [&](yb::MasterApi&m, uint64_t) { return batch_put(m); }}}) {
    for (int n : {1, 4}) {
      run(op.name, n == 1 ? "1_conn" : "4_conns", [&](const std::string& what) {
        return Rate(what, n, seconds, kBatch, [&](int t, uint64_t i) { return op.fn(*conns[t], i); });
      });
    }
  }
  // Nothing left for the data cases' pool: leftovers would be evicted among their objects.
  if (auto removed = conns[0]->RemoveByRegex(ctx, "^bench/", true); !removed.ok()) {
    Failed("master RPC cases: removing their keys: " + removed.status().ToString());
  }
  return out;
}

json Latency(std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  auto pct = [&](double p) {
    return us.empty() ? 0.0 : us[std::min(us.size() - 1, static_cast<size_t>(p * us.size()))];
  };
  return {{"p50_us", pct(0.50)}, {"p99_us", pct(0.99)}};
}

// The data cases' client: a pure caller (every byte crosses TCP to another process), set up from
// the environment as a caller's process would be (YB_AUTH_SECRET_FILE, YB_TLS_*, MC_SLICE_SIZE);
// with --real_client, a dummy of that yb-client instead.
std::string g_real_client;
yb::ClientConfig CallerConfig(const std::string& master, bool checksum) {
  yb::ClientConfig c;
  yb::ApplyEnvironment(c, [](const char* name) { return std::getenv(name); });
  c.enable_checksum = checksum;
  c.local_hostname = "127.0.0.1";
  c.master_server_addr = master;
  c.real_client = g_real_client;
  c.global_segment_size = 0;
  c.local_buffer_size = 64ULL << 20;
  return c;
}

json DataBench(const std::string& master, double seconds, const Iperf3* iperf, const std::vector<uint64_t>& sizes,
               bool checksum) {
  const yb::ClientConfig c = CallerConfig(master, checksum);
  auto connected = yb::Client::Connect(c);
  if (!connected.ok()) {
    Failed("put/get cases: cannot connect: " + connected.status().ToString());
    return json{{"error", connected.status().ToString()}};
  }
  auto client = std::move(connected).value();
  // The same run's reference for cached locations: a client whose every get asks the master.
  yb::ClientConfig uc = c;
  uc.location_cache_ttl_ms = 0;
  auto uncached_client = yb::Client::Connect(uc);
  if (!uncached_client.ok()) {
    Failed("put/get cases: cannot connect: " + uncached_client.status().ToString());
    return json{{"error", uncached_client.status().ToString()}};
  }
  json out = json::array();
  for (uint64_t size : sizes) {
    // At most 256 MiB of distinct objects (more than any cache holds): none evicted in a pool of
    // 512 MiB or more, where a get of an evicted one would fail the case.
    uint64_t max_objects = std::max<uint64_t>(16, std::min<uint64_t>(20000, (256ULL << 20) / size));
    // A dummy's values in memory its real client maps (as SGLang's host pool is): moved straight.
    struct Buffer {
      explicit Buffer(uint64_t n) : shared(!g_real_client.empty()) {
        p = shared ? static_cast<char*>(yb::AllocateSharedMemory(n)) : new char[n];
      }
      ~Buffer() {
        if (shared) {
          (void)yb::FreeSharedMemory(p);
        } else {
          delete[] p;
        }
      }
      char* data() const { return p; }
      bool shared;
      char* p;
    } buf(size);
    for (size_t i = 0; i < size; ++i) buf.data()[i] = static_cast<char>(i * 13);
    std::vector<double> put_us, get_us;
    auto t0 = Clock::now();
    uint64_t n = 0;
    for (; n < max_objects && Since(t0) < seconds; ++n) {
      auto s = Clock::now();
      yb::Status st = client->Put("bench/data/" + std::to_string(n), buf.data(), size);
      if (!st.ok()) {
        Failed("put of " + std::to_string(size) + " bytes: " + st.ToString());
        break;
      }
      put_us.push_back(Since(s) * 1e6);
    }
    double put_s = Since(t0);
    t0 = Clock::now();
    auto get = [&](uint64_t i) {
      auto r = client->Get("bench/data/" + std::to_string(i % n), buf.data(), size);
      if (!r.ok()) Failed("get of " + std::to_string(size) + " bytes: " + r.status().ToString());
      return r.ok();
    };
    uint64_t got = 0;
    while (Since(t0) < seconds && n > 0) {
      auto s = Clock::now();
      if (!get(got)) break;
      get_us.push_back(Since(s) * 1e6);
      ++got;
    }
    double get_s = Since(t0);
    // The same gets with the location cache off (a master round trip each), the run's reference.
    std::vector<double> uncached_us;
    uint64_t uncached = 0;
    t0 = Clock::now();
    while (Since(t0) < seconds && n > 0) {
      auto s = Clock::now();
      auto r = (*uncached_client)->Get("bench/data/" + std::to_string(uncached % n), buf.data(), size);
      if (!r.ok()) {
        Failed("uncached get of " + std::to_string(size) + " bytes: " + r.status().ToString());
        break;
      }
      uncached_us.push_back(Since(s) * 1e6);
      ++uncached;
    }
    double uncached_s = Since(t0);
    // get_buffer's way (GetView): the bytes in place where this process maps them, checksum
    // checked, pinned while held (here: let go at once); a copy where it does not.
    std::vector<double> view_us;
    uint64_t viewed = 0, in_place = 0;
    t0 = Clock::now();
    while (Since(t0) < seconds && n > 0) {
      auto s = Clock::now();
      auto v = client->GetView("bench/data/" + std::to_string(viewed % n));
      if (!v.ok()) {
        Failed("get_view of " + std::to_string(size) + " bytes: " + v.status().ToString());
        break;
      }
      in_place += v->in_place ? 1 : 0;
      view_us.push_back(Since(s) * 1e6);
      ++viewed;
    }
    double view_s = Since(t0);
    json row = {{"value_bytes", size},
                {"put", {{"ops", n}, {"ops_per_s", n / put_s}, {"GBps", n * size / put_s / 1e9}}},
                {"get", {{"ops", got}, {"ops_per_s", got / get_s}, {"GBps", got * size / get_s / 1e9}}},
                {"get_uncached",
                 {{"ops", uncached}, {"ops_per_s", uncached / uncached_s}, {"GBps", uncached * size / uncached_s / 1e9}}},
                {"get_view",
                 {{"ops", viewed},
                  {"ops_per_s", viewed / view_s},
                  {"GBps", viewed * size / view_s / 1e9},
                  {"in_place", viewed ? static_cast<double>(in_place) / viewed : 0.0}}}};
    row["put"].update(Latency(put_us));
    row["get"].update(Latency(get_us));
    row["get_view"].update(Latency(view_us));
    row["get_uncached"].update(Latency(uncached_us));
    if (iperf && size == (1ULL << 20) && got > 0) {
      // The ">= 80% of iperf3" target: short get windows, each right after an iperf3 measurement,
      // so that each ratio compares the two at the same speed of the machine.
      json rounds = json::array();
      std::vector<double> ratios;
      for (int r = 0; r < 5; ++r) {
        double bw = iperf->Measure("-n 512M");
        auto t1 = Clock::now();
        uint64_t k = 0;
        while (Since(t1) < std::max(0.25, seconds / 4) && get(got + k)) ++k;
        double g = static_cast<double>(k * size) / Since(t1) / 1e9;
        rounds.push_back({{"iperf3_GBps", bw}, {"get_GBps", g}});
        if (bw > 0) ratios.push_back(g / bw);
      }
      json adj = {{"rounds", rounds}};
      if (!ratios.empty()) {
        std::sort(ratios.begin(), ratios.end());
        adj["median_ratio"] = ratios[ratios.size() / 2];
      }
      row["get"]["vs_iperf3_adjacent"] = adj;
    }
    out.push_back(row);
    (void)client->RemoveAll(true);
  }
  // 4 KiB values in batches of 32 (Mooncake's published TCP comparison), from 1 and 4 calling
  // threads, each with its own client.
  for (int threads : {1, 4}) {
    constexpr int kB = 32;
    std::vector<std::unique_ptr<yb::Client>> clients;
    for (int t = 0; t < threads; ++t) {
      auto more = yb::Client::Connect(c);
      if (!more.ok()) {
        Failed("4 KiB batch cases: cannot connect: " + more.status().ToString());
        return out;
      }
      clients.push_back(std::move(more).value());
    }
    std::vector<std::vector<std::vector<char>>> vals(threads,
                                                     std::vector<std::vector<char>>(kB, std::vector<char>(4096, 'b')));
    std::vector<std::vector<std::vector<yb::Slice>>> slices(threads);
    for (int t = 0; t < threads; ++t) {
      for (auto& v : vals[t]) slices[t].push_back({{v.data(), v.size()}});
    }
    auto keys_of = [&](int t, uint64_t b) {
      std::vector<std::string> keys;
      for (int j = 0; j < kB; ++j) keys.push_back("bench/b32/" + std::to_string(t) + "/" + std::to_string(b * kB + j));
      return keys;
    };
    constexpr uint64_t kBatches = 300;  // per thread: 9,600 objects of 4 KiB, then read back
    const std::string what = "4 KiB batches of " + std::to_string(kB) + " on " + std::to_string(threads) + " threads";
    auto t0 = Clock::now();
    std::atomic<uint64_t> failed_puts{0};
    std::vector<std::thread> writers;
    for (int t = 0; t < threads; ++t) {
      writers.emplace_back([&, t] {
        for (uint64_t i = 0; i < kBatches; ++i) failed_puts += AllOk(clients[t]->BatchPut(keys_of(t, i), slices[t])) ? 0 : 1;
      });
    }
    for (auto& w : writers) w.join();
    if (failed_puts > 0) Failed(what + ": " + std::to_string(failed_puts.load()) + " batch puts failed");
    double put_rate = static_cast<double>(threads * kBatches * kB) / Since(t0);
    double get_rate = Rate(what + " (gets)", threads, seconds, kB, [&](int t, uint64_t i) {
      return AllOk(clients[t]->BatchGet(keys_of(t, i % kBatches), slices[t]));
    });
    out.push_back({{"value_bytes", 4096},
                   {"batch", kB},
                   {"threads", threads},
                   {"put", {{"ops_per_s", put_rate}}},
                   {"get", {{"ops_per_s", get_rate}}}});
    (void)client->RemoveAll(true);
  }
  return out;
}

// A child process serving the RPC layer on one thread, with a handler that does nothing. The same
// event-loop caller against it shows, in the same run, what the RPC layer and this machine's
// loopback allow without the master's work: the ceiling for the master's single-key figures.
class NoopRpcServer {
 public:
  // Call before any thread is started (it forks).
  bool Start(bool pinned) {
    int down[2], up[2];
    if (pipe(down) != 0) return false;
    if (pipe(up) != 0) return false;
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      close(down[1]);
      close(up[0]);
      // As cluster_bench.sh runs the master: one serving thread, or with per-CPU callers one
      // pinned thread per CPU.
      yb::rpc::RpcServer::Options o;
      o.address = "127.0.0.1";
      o.threads = pinned ? std::max<int>(1, static_cast<int>(yb::AllowedCpus().size())) : 1;  // as `nproc`
      o.pin_to_cpus = pinned;
      yb::rpc::RpcServer server(o);
      server.Register(static_cast<uint16_t>(yb::rpc::MasterMethod::kExistKey),
                      [](const yb::net::Peer&, std::string_view, std::string&) { return yb::Status::OK(); });
      uint16_t port = server.Start().ok() ? server.port() : 0;
      if (write(up[1], &port, sizeof(port)) != sizeof(port)) _exit(1);
      char c;
      while (read(down[0], &c, 1) > 0) {
      }  // until the parent closes its end (or dies)
      server.Stop();
      _exit(0);
    }
    close(down[0]);
    close(up[1]);
    to_child_ = down[1];
    bool ok = read(up[0], &port_, sizeof(port_)) == sizeof(port_) && port_ != 0;
    close(up[0]);
    return ok;
  }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  ~NoopRpcServer() {
    if (pid_ <= 0) return;
    close(to_child_);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  uint16_t port_ = 0;
};

// A case that reported an error, or a rate of 0 (ops/s, GB/s, a ratio): it measured nothing, and
// says so in the failures even when no call was seen to fail.
void FindMissingFigures(const json& j, const std::string& path) {
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      const std::string at = path.empty() ? k : path + "/" + k;
      if (k == "error" && v.is_string()) {
        Failed(at + ": " + v.get<std::string>());
      } else {
        FindMissingFigures(v, at);
      }
    }
  } else if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) FindMissingFigures(j[i], path + "/" + std::to_string(i));
  } else if (j.is_number()) {
    const bool rate = path.find("ops_per_s") != std::string::npos || path.ends_with("GBps") ||
                      path.ends_with("median_ratio");
    if (rate && j.get<double>() <= 0) Failed(path + ": measured 0");
  }
}

double MemcpyGBps() {
  const size_t n = 256ULL << 20;
  std::vector<char> a(n, 1), b(n, 2);
  std::memcpy(b.data(), a.data(), n);  // warm
  auto t0 = Clock::now();
  for (int i = 0; i < 8; ++i) std::memcpy((i & 1 ? a : b).data(), (i & 1 ? b : a).data(), n);
  return 8.0 * n / Since(t0) / 1e9;
}

// Writes into shared memory that another mapping (its owner's) already holds, as a put from a
// second process of the host lands: through a mapping of this process, each of whose pages is
// touched here for the first time, and through the memfd (pwrite, the kernel's copy). Without shmem
// huge pages the same-host transport writes the second way (shm_transport.cc): these are the
// ceilings its puts run against on this machine.
json FreshSharedMemoryWriteGBps() {
  const size_t mapped_bytes = 64ULL << 20, file_bytes = 256ULL << 20, chunk = 1ULL << 20;
  auto owner = yb::MappedRegion::Map(mapped_bytes + file_bytes, false, /*shareable=*/true);
  if (!owner || owner->fd() < 0) return "no shareable memory";
  std::memset(owner->data(), 1, owner->size());  // the owner's pages, all in place
  auto second = yb::MappedRegion::MapShared(dup(owner->fd()), owner->size());
  if (!second) return "mapping it again failed";
  std::vector<char> src(chunk, 7);
  auto t0 = Clock::now();
  for (size_t off = 0; off < mapped_bytes; off += chunk) std::memcpy(second->data() + off, src.data(), chunk);
  const double mapped = static_cast<double>(mapped_bytes) / Since(t0) / 1e9;
  t0 = Clock::now();
  for (size_t off = mapped_bytes; off < mapped_bytes + file_bytes; off += chunk) {
    if (pwrite(owner->fd(), src.data(), chunk, static_cast<off_t>(off)) != static_cast<ssize_t>(chunk)) {
      return "pwrite failed";
    }
  }
  const double file = static_cast<double>(file_bytes) / Since(t0) / 1e9;
  return {{"through_a_new_mapping_GBps", mapped}, {"through_the_memfd_GBps", file}};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"yb-bench: cluster and machine benchmarks, printed as JSON"};
  std::string master = yb::kDefaultMasterAddress;
  double seconds = 1.5;
  bool skip_iperf = false, skip_meta = false, skip_data = false;
  std::string meta_cases = ".";
  pid_t master_pid = 0;
  bool per_cpu = false;
  bool checksum = yb::ClientConfig{}.enable_checksum;
  std::vector<std::string> value_sizes{"4096", "65536", "1MB", "4MB"};
  bool device = false;
  int session_layers = 0;
  std::vector<std::string> device_sizes{"1MB", "4MB"};
  app.add_option("--master", master, "yb-master host:port (with at least one yb-client mounted)");
  app.add_option("--real_client", g_real_client,
                 "host:port of this host's yb-client: the put/get cases run as its dummy client (setup_dummy), "
                 "values in memory it maps");
  app.add_option("--value_sizes", value_sizes, "put/get value sizes (\"64KB\", bytes)")->delimiter(',');
  app.add_option("--enable_checksum", checksum, "record and check checksums in the put/get benchmark");
  app.add_option("--seconds", seconds, "duration of each measurement");
  app.add_flag("--skip_iperf", skip_iperf, "do not run iperf3");
  app.add_flag("--skip_meta", skip_meta, "skip the master RPC benchmark");
  app.add_flag("--skip_data", skip_data, "skip the put/get benchmark");
  app.add_option("--meta_cases", meta_cases,
                 "master RPC cases to run: a regex searched in \"operation/case\", e.g. "
                 "\"ExistKey/16_conns.*event_loop\" (default: all)");
  app.add_option("--master_pid", master_pid,
                 "the yb-master's process id when it runs on this host: the event-loop cases then report its CPU "
                 "time per call (master_cpu_us_per_call)");
  std::vector<std::string> cpu_of;
  app.add_option("--cpu_of", cpu_of,
                 "name=pid of a process on this host (repeatable): each master RPC case also reports the CPU time "
                 "it spent per pair or key (cpu_us_per_op)");
  app.add_flag("--per_cpu_callers", per_cpu,
               "event-loop cases: one caller thread per CPU, each pinned and holding its share of the connections "
               "(cases named ..._per_cpu); for a master run with --rpc_pin_threads");
  app.add_flag("--device_memory", device,
               "also put and get values held in GPU memory against host memory (needs the CUDA driver, or "
               "LD_LIBRARY_PATH=<build>/fake_cuda)");
  app.add_option("--device_value_sizes", device_sizes, "value sizes of the --device_memory case")->delimiter(',');
  app.add_option("--session_layers", session_layers,
                 "also load 8 objects of this many 64 KiB layers through a get session against as many plain "
                 "batch gets of per-layer objects (0: skip)")
      ->check(CLI::Range(0, 1024));
  CLI11_PARSE(app, argc, argv);
  NoopRpcServer noop;
  bool have_noop = !skip_meta && noop.Start(per_cpu);               // forks: before any thread
  spdlog::set_default_logger(spdlog::stderr_color_mt("yb-bench"));  // stdout carries the JSON
  spdlog::set_level(spdlog::level::warn);
  json out;
  // Whether shmem has huge pages here: same-host transfers into fresh memory depend on it.
  out["machine"] = {{"cores", std::thread::hardware_concurrency()},
                    {"memcpy_single_thread_GBps", MemcpyGBps()},
                    {"shmem_huge_pages", yb::ShmemHugePages()}};
  // The put cases' ceilings: not measured (about a second of page faults) when they do not run.
  if (!skip_data) out["machine"]["fresh_shared_memory_write"] = FreshSharedMemoryWriteGBps();
  Iperf3 iperf;
  const std::string iperf_error = skip_iperf ? "skipped" : iperf.Start();
  if (iperf_error.empty()) {
    double gbps = iperf.Measure("-t 3");
    out["machine"]["iperf3"] = gbps > 0 ? json{{"loopback_GBps", gbps}} : json("iperf3 failed");
  } else if (!skip_iperf) {
    out["machine"]["iperf3"] = iperf_error;
  }
  std::regex filter;
  try {
    filter = std::regex(meta_cases);
  } catch (const std::regex_error& e) {
    std::fprintf(stderr, "--meta_cases: not a regex: %s\n", e.what());
    return 2;
  }
  if (!skip_meta) {
    if (have_noop) {
      std::atomic<uint64_t> unused{0};
      std::vector<std::string> key{"bench/noop"};
      for (int n : {16, 64}) {
        const std::string name = EventLoopCase(n, per_cpu);
        json cpu;
        out["machine"]["rpc_noop_server_ops_per_s"][name] = EventLoopRate(
            "127.0.0.1", noop.port(), n, seconds, "ExistKey", {}, key, unused, false, noop.pid(), &cpu, per_cpu);
        if (!cpu.is_null()) out["machine"]["rpc_noop_server_cpu_us_per_call"][name] = cpu;
      }
    }
    Watched watched;
    for (const std::string& w : cpu_of) {
      const size_t eq = w.find('=');
      const long pid = eq == std::string::npos ? 0 : std::atol(w.c_str() + eq + 1);
      if (pid <= 0) {
        std::cerr << "--cpu_of wants name=pid, not '" << w << "'\n";
        return 2;
      }
      watched.emplace_back(w.substr(0, eq), static_cast<pid_t>(pid));
    }
    json meta = MetadataBench(CallerConfig(master, checksum), seconds, filter, master_pid, per_cpu, watched);
    for (const char* extra : {"master_cpu_us_per_call", "cpu_us_per_op"}) {
      if (meta.contains(extra)) {
        out[extra] = meta[extra];
        meta.erase(extra);
      }
    }
    out["master_rpc_ops_per_s"] = meta;
  }
  auto parse_sizes = [](const std::vector<std::string>& values, const char* flag) -> std::optional<std::vector<uint64_t>> {
    std::vector<uint64_t> sizes;
    for (const auto& v : values) {
      auto s = yb::ParseSize(v);
      if (!s.ok() || *s == 0) {
        std::fprintf(stderr, "%s: '%s' is not a size\n", flag, v.c_str());
        return std::nullopt;
      }
      sizes.push_back(*s);
    }
    return sizes;
  };
  auto sizes = parse_sizes(value_sizes, "--value_sizes");
  auto dev_sizes = parse_sizes(device_sizes, "--device_value_sizes");
  if (!sizes || !dev_sizes) return 2;
  if (!skip_data) {
    out["put_get_over_tcp"] = DataBench(master, seconds, iperf_error.empty() ? &iperf : nullptr, *sizes, checksum);
    out["checksums"] = checksum;
  }
  if (device) out["device_memory_vs_host"] = yb_bench::DeviceBench(CallerConfig(master, checksum), seconds, *dev_sizes);
  if (session_layers > 0) {
    out["session_load_vs_batch_gets"] =
        yb_bench::SessionBench(CallerConfig(master, checksum), session_layers, 8, 64ULL << 10);
  }
  FindMissingFigures(out, "");
  if (!g_failures.empty()) out["failures"] = g_failures;
  std::printf("%s\n", out.dump(2).c_str());
  return g_failures.empty() ? 0 : 1;
}
