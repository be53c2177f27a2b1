#include "yb_stats.h"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "common/segment_name.h"
#include "yuebing/status.h"

namespace yb::tools {
namespace {

std::string Bytes(double n) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  size_t i = 0;
  while (n >= 1024 && i + 1 < std::size(kUnits)) {
    n /= 1024;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", n) : fmt::format("{:.1f} {}", n, kUnits[i]);
}

uint64_t U(const nlohmann::json& j, const char* k) { return j.contains(k) ? j[k].get<uint64_t>() : 0; }

// The samples of the last minute of the feed's history (the newest sample last).
std::vector<nlohmann::json> LastMinute(const nlohmann::json& feed) {
  std::vector<nlohmann::json> out;
  const auto& h = feed["history"];
  if (h.empty()) return out;
  const int64_t end = h.back()["t"].get<int64_t>();
  for (const auto& s : h) {
    if (s["t"].get<int64_t>() >= end - 60000) out.push_back(s);
  }
  return out;
}

Result<nlohmann::json> Fetch(const std::string& http) {
  auto hp = ParseHostPort(http);
  if (!hp.ok()) return Status(Code::kInvalidParams, "--http wants host:port, not '" + http + "'");
  httplib::Client cli(hp->first, hp->second);
  cli.set_connection_timeout(std::chrono::seconds(3));
  cli.set_read_timeout(std::chrono::seconds(5));
  auto r = cli.Get("/dashboard.json");
  if (!r) return Status(Code::kRpcFail, "cannot reach the master's HTTP at " + http + ": " + httplib::to_string(r.error()));
  if (r->status != 200) return Status(Code::kRpcFail, fmt::format("{}/dashboard.json answered {}", http, r->status));
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("now")) return Status(Code::kRpcFail, http + " answered no dashboard feed");
  return j;
}

}  // namespace

std::string StatsText(const nlohmann::json& feed) {
  const auto& now = feed["now"];
  std::string out;
  auto line = [&](std::string_view label, const std::string& value) { out += fmt::format("{:<15} {}\n", label, value); };
  out += fmt::format("cluster {} ({}{})\n", feed.value("cluster_id", "?"), feed.value("role", "?"),
                     U(feed, "epoch") ? fmt::format(", epoch {}", U(feed, "epoch")) : "");
  if (!now.value("leader", true)) out += "a standby: the pool's numbers are the leader's\n";
  line("keys", fmt::format("{}  ({} Puts in progress)", U(now, "keys"),
                           feed.contains("stats") ? U(feed["stats"], "pending_puts") : 0));
  const double cap = static_cast<double>(U(now, "capacity")), used = static_cast<double>(U(now, "allocated"));
  line("memory", fmt::format("{} of {}{}", Bytes(used), Bytes(cap), cap > 0 ? fmt::format(" ({:.1f}%)", 100 * used / cap) : ""));
  const auto minute = LastMinute(feed);
  double hits = 0, misses = 0, secs = 0, calls = 0, micros = 0;
  if (minute.size() > 1) {
    const auto &a = minute.front(), &b = minute.back();
    hits = static_cast<double>(U(b, "get_hits") - U(a, "get_hits"));
    misses = static_cast<double>(U(b, "get_misses") - U(a, "get_misses"));
    secs = static_cast<double>(b["t"].get<int64_t>() - a["t"].get<int64_t>()) / 1000;
    calls = static_cast<double>(U(b, "rpc_calls") - U(a, "rpc_calls"));
    micros = static_cast<double>(U(b, "rpc_micros") - U(a, "rpc_micros"));
  }
  std::string when = "last minute";
  if (hits + misses == 0) {
    hits = static_cast<double>(U(now, "get_hits"));
    misses = static_cast<double>(U(now, "get_misses"));
    when = "since start";
  }
  line("get hit rate", hits + misses > 0 ? fmt::format("{:.1f}% {} ({:.0f} hits, {:.0f} misses)", 100 * hits / (hits + misses),
                                                       when, hits, misses)
                                         : std::string("- (no Get yet)"));
  const uint64_t waiting = feed.contains("stats") ? U(feed["stats"], "segments_unconfirmed") : 0;
  line("clients", fmt::format("{} live, {} segments{}", U(now, "live_clients"), U(now, "segments"),
                              waiting ? fmt::format(" ({} waiting for their owner to come back)", waiting) : ""));
  line("rpc", secs > 0 ? fmt::format("{:.1f} calls/s, mean {:.3f} ms (last minute); {} failed since start", calls / secs,
                                     calls > 0 ? micros / calls / 1000 : 0.0, U(now, "rpc_failures"))
                       : fmt::format("{} calls, {} failed since start", U(now, "rpc_calls"), U(now, "rpc_failures")));
  line("since start", fmt::format("{} evicted, {} repaired, {} offloaded, {} lost with their last replica",
                                  U(now, "evicted_objects"), U(now, "repaired"), U(now, "offloaded"),
                                  U(now, "objects_lost")));
  if (feed.contains("standbys") && !feed["standbys"].empty()) {
    for (const auto& s : feed["standbys"]) {
      line("standby", fmt::format("{} {}, {} records behind", s.value("address", "?"),
                                  s.value("in_sync", false) ? "in sync" : "NOT in sync", U(s, "lag_records")));
    }
  } else {
    line("standbys", "none");
  }
  if (feed.contains("kv_events")) {
    const auto& k = feed["kv_events"];
    line("kv events", fmt::format("{} published, {} dropped, {} queued", U(k, "published"), U(k, "dropped"),
                                  U(k, "queued")));
  }
  if (feed.contains("misses")) {
    out += fmt::format("\n{:<18} {:>10} {:>10} {:>12}\n", "misses by reason", "gets", "exist", "puts refused");
    for (const auto& [reason, n] : feed["misses"].items()) {
      if (U(n, "get") + U(n, "exist") + U(n, "put_refused") == 0) continue;
      out += fmt::format("{:<18} {:>10} {:>10} {:>12}\n", reason, U(n, "get"), U(n, "exist"), U(n, "put_refused"));
    }
  }
  out += fmt::format("\n{:<28} {:<22} {:<6} {:>10} {:>10} {:>6} {:>12} {:>6}\n", "segment", "endpoint", "zone",
                     "capacity", "used", "use", "largest free", "frag");
  for (const auto& s : feed["segments"]) {
    const double c = static_cast<double>(U(s, "capacity")), a = static_cast<double>(U(s, "allocated"));
    out += fmt::format("{:<28} {:<22} {:<6} {:>10} {:>10} {:>5.1f}% {:>12} {:>6.3f}{}\n", s.value("name", "?"),
                       s.value("endpoint", "?"), s.value("zone", "").empty() ? "-" : s.value("zone", ""), Bytes(c),
                       Bytes(a), c > 0 ? 100 * a / c : 0.0, Bytes(static_cast<double>(U(s, "largest_free"))),
                       s.value("fragmentation", 0.0), s.value("draining", false) ? "  draining" : "");
  }
  if (feed.contains("awaiting")) {
    for (const auto& s : feed["awaiting"]) {
      const int64_t ms = s.value("drops_in_ms", int64_t{-1});
      out += fmt::format("{:<28} {:<22} {:<6} {:>10}  awaiting its owner{}\n", s.value("name", "?"),
                         s.value("endpoint", "?"), s.value("zone", "").empty() ? "-" : s.value("zone", ""),
                         Bytes(static_cast<double>(U(s, "capacity"))),
                         ms >= 0 ? fmt::format(", dropped in {} s", (ms + 999) / 1000) : "");
    }
  }
  return out;
}

int PrintStats(const StatsOptions& o) {
  auto feed = Fetch(o.http);
  if (!feed.ok()) {
    std::fprintf(stderr, "%s\n", feed.status().message().c_str());
    return 1;
  }
  std::fputs(o.json ? (feed->dump(2) + "\n").c_str() : StatsText(*feed).c_str(), stdout);
  return 0;
}

int Top(const StatsOptions& o) {
  for (int i = 0; o.iterations == 0 || i < o.iterations; ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.interval_s));
    auto feed = Fetch(o.http);
    std::fputs("\x1b[H\x1b[2J", stdout);  // home, clear
    if (feed.ok()) {
      std::fputs(StatsText(*feed).c_str(), stdout);
    } else {
      std::fprintf(stdout, "%s (trying again every %.1f s)\n", feed.status().message().c_str(), o.interval_s);
    }
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace yb::tools
