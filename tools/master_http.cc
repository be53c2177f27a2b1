#include "master_http.h"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/files.h"
#include "common/grant.h"
#include "common/log.h"
#include "common/segment_name.h"
#include "common/units.h"
#include "http/admin_http.h"

namespace yb::tools {

using http::AdminTokenPath;
using http::PrometheusText;

namespace {

// The records a standby that has `acked` is behind the leader's log.
uint64_t LagOf(const ha::MetaLog* log, uint64_t acked) {
  const uint64_t last = log ? log->stats().last_seq : 0;
  return last > acked ? last - acked : 0;
}

std::string Metrics(MasterService* master, const rpc::RpcMetrics& rpc, const rpc::RpcServer& server,
                    const ha::MetaLog* log, const ha::HaMaster* ha, const KvEvents* kv_events) {
  PrometheusText p;
  if (kv_events) {
    const KvEventStats k = kv_events->stats();
    p.Counter("yb_master_kv_events_published_total", "KV events sent (--enable_kv_events).", k.published_events);
    p.Counter("yb_master_kv_event_batches_published_total", "KV event messages sent.", k.published_batches);
    p.Counter("yb_master_kv_events_dropped_total",
              "KV events dropped: past --kv_events_queue_capacity, or their message not sent.", k.dropped_events);
    p.Gauge("yb_master_kv_events_queued", "KV events waiting to be sent.", k.queued);
  }
  if (ha) {
    p.Gauge("yb_master_ha_leader", "1 while this master leads (HA).", ha->role() == ha::HaMaster::Role::kLeader);
    p.Gauge("yb_master_ha_epoch", "Epoch of the leader this master knows of.", ha->epoch());
    p.Counter("yb_master_ha_elections_won_total", "Elections this master won (failovers to it).", ha->elections_won());
    uint64_t counted = 0, lag = 0;
    for (const auto& s : ha->standbys()) {
      counted += s.in_sync;
      lag = std::max(lag, LagOf(log, s.acked));
    }
    p.Gauge("yb_master_ha_standbys", "Standbys this leader ships its log to.", ha->standbys().size());
    p.Gauge("yb_master_ha_standbys_in_sync", "Standbys counted: a change waits for each of them.", counted);
    p.Gauge("yb_master_ha_standby_lag_records", "Records the furthest standby is behind the leader's log.", lag);
    p.Counter("yb_master_ha_snapshots_shipped_total",
              "Snapshots begun to standbys: each a standby shipped the whole state again (joining, or too far behind).",
              ha->snapshots_shipped());
  }
  if (log) {
    auto s = log->stats();
    p.Counter("yb_master_log_records_total", "Metadata log records appended.", s.records);
    p.Counter("yb_master_log_bytes_total", "Metadata log bytes written.", s.bytes);
    p.Counter("yb_master_log_writes_total", "Metadata log writes (each of what was appended since the last).",
              s.rounds);
    p.Counter("yb_master_log_syncs_total", "Metadata log syncs (each covers every record written before it).", s.syncs);
    p.Counter("yb_master_log_sync_microseconds_total", "Time spent in those syncs.", s.sync_us);
    p.Gauge("yb_master_log_last_seq", "Sequence number of the last record appended.", s.last_seq);
    p.Gauge("yb_master_log_synced_seq", "Every record up to this one is synced.", s.synced_seq);
    p.Counter("yb_master_log_snapshots_total", "Snapshots written since start.", s.snapshots);
    p.Gauge("yb_master_log_snapshot_milliseconds", "Duration of the last snapshot.", s.last_snapshot_ms);
    p.Gauge("yb_master_log_bytes_since_snapshot", "Log bytes written since the last snapshot.",
            s.log_bytes_since_snapshot);
    p.Gauge("yb_master_log_recovered_records", "Log records replayed at start.", s.recovered_records);
    p.Gauge("yb_master_log_cut_bytes", "Bytes of a torn or corrupt log tail cut at start.", s.cut_bytes);
    p.Gauge("yb_master_log_writable",
            "1 while the metadata log takes writes; 0 (the alarm) while it cannot and every change is refused.",
            !s.failed);
    p.Counter("yb_master_log_failures_total", "Times the metadata log failed (a write or sync, or too little space).",
              s.failures);
    p.Gauge("yb_master_log_free_bytes", "Free bytes under --metadata_dir, at the last check (each second).",
            s.free_bytes);
    p.Gauge("yb_master_rpc_held_replies", "Replies waiting for their change to be durable.", server.held_replies());
  }
  auto per_method = [&](const char* name, const char* help, auto value) {
    p.Family("counter", name, help);
    for (const auto& row : rpc::kMasterMethods) {
      p.Sample(name, fmt::format("op=\"{}\"", row.name), value(static_cast<uint16_t>(row.method)));
    }
  };
  per_method("yb_master_requests_total", "RPC calls per operation.", [&](uint16_t m) { return rpc.calls(m); });
  per_method("yb_master_failures_total", "Failed RPC calls per operation (a batch fails when a key fails).",
             [&](uint16_t m) { return rpc.failures(m); });
  // How long each call took to serve, per operation that was called (the wait for a change to be
  // durable, which comes after its answer is made, is not in it).
  constexpr const char* kDuration = "yb_master_request_duration_seconds";
  p.Family("histogram", kDuration,
           "Time to serve an RPC call, per operation, from its request parsed to its answer made.");
  for (const auto& row : rpc::kMasterMethods) {
    const LatencyHistogram& h = rpc.durations(static_cast<uint16_t>(row.method));
    if (h.count() > 0) p.Histogram(kDuration, fmt::format("op=\"{}\"", row.name), h);
  }
  p.Gauge("yb_master_rpc_connections", "Open RPC connections.", server.open_connections());
  p.Counter("yb_master_rpc_malformed_frames_total", "RPC frames refused as malformed (each closed its connection).",
            server.malformed_frames());
  p.Counter("yb_master_rpc_reads_paused_total", "Times a connection stopped being read: its peer did not read replies.",
            server.reads_paused());
  p.Counter("yb_master_rpc_stalled_closed_total",
            "Connections closed after moving no byte for --rpc_stall_timeout_sec halfway through a request or "
            "with replies unread.",
            server.stalled_closed());
  p.Counter("yb_master_rpc_refused_connections_total",
            "Connections closed at once because --rpc_max_connections were open.", server.refused_connections());
  p.Counter("yb_master_rpc_accept_failures_total",
            "Failed accepts (e.g. out of file descriptors), each followed by a pause.", server.accept_failures());
  if (!master) return p.text();  // a standby: no index to report on
  auto st = master->Stats();
  p.Gauge("yb_master_allocated_bytes", "Bytes allocated in mounted segments.", st.allocated);
  p.Gauge("yb_master_held_bytes",
          "Freed bytes not handed out again while a grant for them may still be valid (counted in allocated).",
          st.held);
  p.Gauge("yb_master_capacity_bytes", "Total bytes of mounted segments.", st.capacity);
  // Per segment and per tenant, labelled: both bounded (segments by the nodes and their chunks,
  // tenants by configuration); past kMaxLabelledSegments segments, none are listed.
  constexpr size_t kMaxLabelledSegments = 4096;
  if (auto segs = master->ListSegments(); segs.ok() && segs->size() <= kMaxLabelledSegments) {
    const std::pair<const char*, const char*> families[] = {
        {"yb_master_segment_capacity_bytes", "Bytes of each mounted segment (name: its owner's; id: the segment's)."},
        {"yb_master_segment_allocated_bytes", "Bytes allocated in each mounted segment."},
        {"yb_master_segment_largest_free_bytes", "The largest free range of each mounted segment."}};
    for (size_t f = 0; f < 3; ++f) {
      p.Family("gauge", families[f].first, families[f].second);
      for (const SegmentUsage& u : *segs) {
        const uint64_t v = f == 0 ? u.capacity : f == 1 ? u.allocated : u.largest_free_region;
        p.Sample(families[f].first,
                 fmt::format("segment=\"{}\",id=\"{}\"", PrometheusText::Label(u.desc.name), u.desc.id), v);
      }
    }
  }
  p.Family("gauge", "yb_master_tenant_used_bytes", "Bytes each tenant's objects (and unfinished Puts) take.");
  for (const auto& t : master->Tenants()) {
    p.Sample("yb_master_tenant_used_bytes", fmt::format("tenant=\"{}\"", PrometheusText::Label(t.name)), t.used);
  }
  p.Gauge("yb_master_keys", "Published objects.", st.keys);
  p.Gauge("yb_master_pending_puts", "Puts between PutStart and PutEnd.", st.pending_puts);
  p.Gauge("yb_master_reservations", "Space clients keep started ahead for their Puts (Puts into reservations).",
          st.reservations);
  p.Gauge("yb_master_segments", "Mounted segments.", st.segments);
  p.Gauge("yb_master_segments_unconfirmed",
          "Segments not served from until their owner re-mounts them: restored after a restart, or of a client "
          "declared dead, in its grace.",
          st.segments_unconfirmed);
  p.Gauge("yb_master_segments_unreachable",
          "Segments clients report they cannot reach now: handed to readers and writers only where nothing else is.",
          st.segments_unreachable);
  p.Gauge("yb_master_segments_unheard",
          "Segments whose owner's heartbeats stopped arriving (short of being declared dead): no new replicas.",
          st.segments_unheard);
  p.Gauge("yb_master_live_clients", "Clients alive (pinging).", st.live_clients);
  p.Counter("yb_master_liveness_gaps_total",
            "Times the master found its own liveness check had not run for over --liveness_max_gap_ms (it was "
            "paused or starved) and gave every client a fresh TTL instead of judging that silence.",
            st.liveness_gaps);
  p.Gauge("yb_master_offload_queued", "Objects queued for, or being copied to, an SSD tier.", st.offload_queued);
  p.Counter("yb_master_under_replicated_puts_total",
            "Puts given fewer memory replicas than their replica_num (too few segments with room).",
            st.under_replicated_puts);
  p.Counter("yb_master_missing_replicas_total", "Replicas those Puts went without.", st.missing_replicas);
  p.Counter("yb_master_stale_read_pins_released_total",
            "Read pins ended because their live reader stopped naming them in its heartbeat (a lost ReadEnd).",
            st.stale_pins_released);
  p.Gauge("yb_master_objects_at_risk",
          "Objects with fewer memory replicas than they want (written with, or asked for while a holder was away), "
          "waiting for or being copied.",
          st.repair_at_risk);
  p.Gauge("yb_master_repairs_in_flight", "Re-replication copies handed to clients and not reported yet.",
          st.repairs_in_flight);
  p.Gauge("yb_master_tasks_unfinished", "Copy and move tasks (create_copy_task, create_move_task) not ended yet.",
          st.tasks_unfinished);
  p.Counter("yb_master_repaired_total", "Replicas restored by re-replication.", st.repaired);
  p.Counter("yb_master_repair_bytes_total", "Bytes copied by re-replication.", st.repair_bytes);
  p.Counter("yb_master_objects_lost_total", "Objects removed because their last replica went.", st.objects_lost);
  p.Counter("yb_master_evicted_objects_total", "Objects evicted from memory.", st.evicted_objects);
  p.Counter("yb_master_evicted_bytes_total", "Bytes evicted from memory.", st.evicted_bytes);
  p.Counter("yb_master_offloaded_total", "LOCAL_DISK replicas added by offloads.", st.offloaded);
  p.Counter("yb_master_offload_failures_total", "Offloads a client reported failed (the DRAM copy stayed).",
            st.offload_failed);
  p.Counter("yb_master_offloaded_on_evict_total", "Objects eviction sent to an SSD tier instead of dropping.",
            st.offloaded_on_evict);
  p.Counter("yb_master_offload_queue_full_total", "Objects not queued for offload: the client's queue was full.",
            st.offload_refused);
  p.Counter("yb_master_offload_kept_in_dram_total",
            "Evictions that kept an object in DRAM: its offload queue was full.", st.kept_queue_full);
  p.Counter("yb_master_disk_replicas_registered_total", "LOCAL_DISK replicas registered by clients (restarts).",
            st.disk_registered);
  p.Counter("yb_master_disk_replicas_dropped_total", "LOCAL_DISK replicas dropped by SSD-tier bucket eviction.",
            st.disk_dropped);
  p.Counter("yb_master_disk_drops_refused_total",
            "Disk copies of removed or replaced keys not sent to their owner for deletion: its queue was full.",
            st.disk_drops_refused);
  p.Gauge("yb_master_disk_away_copies",
          "Disk copies remembered while their owner is away, so that stale ones are refused when it returns.",
          st.disk_away_copies);
  p.Counter("yb_master_disk_away_untracked_total",
            "Disk copies of absent owners not remembered: --disk_away_copies_limit was reached.",
            st.disk_away_untracked);
  // Why reads missed (MissReason; docs/operations.md, "Why a key is missing"), and Puts refused.
  p.Family("counter", "yb_master_misses_total",
           "Reads that found no object, by call (get, exist) and by why, as far as the master remembers.");
  for (int i = 1; i < yb::kMissReasonCount; ++i) {  // from 1: kStored is not a miss
    const auto name = yb::MissReasonName(static_cast<yb::MissReason>(i));
    p.Sample("yb_master_misses_total", fmt::format("call=\"get\",reason=\"{}\"", name), st.get_misses[i]);
    p.Sample("yb_master_misses_total", fmt::format("call=\"exist\",reason=\"{}\"", name), st.exist_misses[i]);
  }
  p.Family("counter", "yb_master_hits_total",
           "Reads that found their object, by call: get (a Get that pinned it to read), exist.");
  p.Sample("yb_master_hits_total", "call=\"get\"", st.get_hits);
  p.Sample("yb_master_hits_total", "call=\"exist\"", st.exist_hits);
  p.Family("counter", "yb_master_puts_refused_total", "Puts refused for lack of room, by why.");
  for (const auto r : {yb::MissReason::kRefusedQuota, yb::MissReason::kRefusedNoSpace}) {
    p.Sample("yb_master_puts_refused_total", fmt::format("reason=\"{}\"", yb::MissReasonName(r)),
             st.puts_refused[static_cast<size_t>(r)]);
  }
  p.Gauge("yb_master_miss_reason_keys", "Keys whose departure the master remembers at most (--miss_reason_keys).",
          st.miss_reason_capacity);
  return p.text();
}

nlohmann::json SegmentsJson(MasterService* master) {
  nlohmann::json arr = nlohmann::json::array();
  if (!master) return arr;
  auto segments = master->ListSegments().value();
  for (const auto& u : segments) {
    arr.push_back({{"id", std::to_string(u.desc.id)},
                   {"name", u.desc.name},
                   {"endpoint", u.desc.endpoint},
                   {"zone", u.desc.zone},
                   {"owner", u.owner.ToString()},
                   {"capacity", u.capacity},
                   {"allocated", u.allocated},
                   {"allocations", u.allocations},
                   {"largest_free", u.largest_free_region},
                   {"fragmentation", u.fragmentation},
                   {"draining", u.draining}});
  }
  return arr;
}

// The segments awaiting their owner (MasterService::AwaitingSegments): not on /segments, which
// lists what readers are sent to.
nlohmann::json AwaitingJson(MasterService* master) {
  nlohmann::json arr = nlohmann::json::array();
  if (!master) return arr;
  for (const auto& a : master->AwaitingSegments()) {
    arr.push_back({{"id", std::to_string(a.desc.id)},
                   {"name", a.desc.name},
                   {"endpoint", a.desc.endpoint},
                   {"zone", a.desc.zone},
                   {"owner", a.owner.ToString()},
                   {"capacity", a.desc.size},
                   {"drops_in_ms", a.drops_in_ms}});
  }
  return arr;
}

// Whether a request that changes state may: it carries the admin token (compared in constant time).
bool Authorized(const MasterHttpContext& c, const httplib::Request& req, httplib::Response& res) {
  const std::string want = "Bearer " + c.admin_token;
  const std::string got = req.get_header_value("Authorization");
  if (!c.admin_token.empty() && got.size() == want.size() && CRYPTO_memcmp(got.data(), want.data(), want.size()) == 0) {
    return true;
  }
  YB_LOG_WARN("HTTP {} {} from {} refused: {} admin token", req.method, req.path, req.remote_addr,
              got.empty() ? "no" : "a wrong");
  res.status = 401;
  res.set_header("WWW-Authenticate", "Bearer");
  res.set_content("{\"error\": \"needs Authorization: Bearer <the token yb admin-token prints>\"}", "application/json");
  return false;
}

// The master a request that changes state acts on; null, answered, when the request carries no
// admin token or this master does not lead.
std::shared_ptr<MasterService> ForChange(const MasterHttpContext& c, const httplib::Request& req,
                                         httplib::Response& res) {
  if (!Authorized(c, req, res)) return nullptr;
  auto m = c.current();
  if (!m) {
    res.status = 503;
    res.set_content("{\"error\": \"not the leader\"}", "application/json");
    return m;
  }
  if (Status st = m->Writable(); !st.ok()) {
    res.status = 503;
    res.set_content(nlohmann::json{{"error", st.message()}}.dump(), "application/json");
    return nullptr;
  }
  return m;
}


// The standbys this leader ships its log to (/health, /dashboard.json).
nlohmann::json StandbysJson(const MasterHttpContext& c) {
  nlohmann::json out = nlohmann::json::array();
  if (!c.ha) return out;
  for (const auto& s : c.ha->standbys()) {
    out.push_back({{"address", s.address},
                   {"in_sync", s.in_sync},
                   {"acked_seq", s.acked},
                   {"lag_records", LagOf(c.log, s.acked)}});
  }
  return out;
}

// The sample of the master whose stats are `st` (null: none serves here, a standby).
DashboardSample SampleOf(const MasterHttpContext& c, const MasterStats* st) {
  DashboardSample d;
  d.t_ms = WallMs();
  for (const auto& row : rpc::kMasterMethods) {
    const auto m = static_cast<uint16_t>(row.method);
    d.rpc_calls += c.rpc.calls(m);
    d.rpc_failures += c.rpc.failures(m);
    d.rpc_micros += c.rpc.durations(m).total_micros();
  }
  if (c.ha) {
    for (const auto& s : c.ha->standbys()) d.standby_lag_records = std::max(d.standby_lag_records, LagOf(c.log, s.acked));
  }
  d.leader = st != nullptr;
  if (!st) return d;
  d.keys = st->keys;
  d.capacity = st->capacity;
  d.allocated = st->allocated;
  d.segments = st->segments;
  d.live_clients = st->live_clients;
  d.get_hits = st->get_hits;
  d.exist_hits = st->exist_hits;
  for (int i = 1; i < kMissReasonCount; ++i) {  // from 1: kStored is not a miss
    d.get_misses += st->get_misses[i];
    d.exist_misses += st->exist_misses[i];
    d.puts_refused += st->puts_refused[i];
  }
  d.evicted_objects = st->evicted_objects;
  d.repaired = st->repaired;
  d.objects_lost = st->objects_lost;
  d.offloaded = st->offloaded + st->offloaded_on_evict;
  d.disk_replicas_dropped = st->disk_dropped;
  return d;
}

// /dashboard.json: the numbers now, and the history the charts are drawn from. The master's stats
// (which visit every shard) are taken once.
nlohmann::json DashboardJson(const MasterHttpContext& c) {
  auto m = c.current();
  std::optional<MasterStats> st;
  if (m) st = m->Stats();
  nlohmann::json j = {{"cluster_id", c.cluster_id},
                      {"role", !c.ha || c.ha->role() == ha::HaMaster::Role::kLeader ? "leader" : "standby"},
                      {"epoch", c.ha ? c.ha->epoch() : 0},
                      {"now", ToJson(SampleOf(c, st ? &*st : nullptr))},
                      {"history", c.history ? c.history->Json() : nlohmann::json::array()},
                      {"segments", SegmentsJson(m.get())},
                      {"awaiting", AwaitingJson(m.get())},
                      {"standbys", StandbysJson(c)}};
  if (st) {
    nlohmann::json misses = nlohmann::json::object();
    for (int i = 1; i < kMissReasonCount; ++i) {
      const std::string name(MissReasonName(static_cast<MissReason>(i)));
      misses[name] = {{"get", st->get_misses[i]}, {"exist", st->exist_misses[i]}, {"put_refused", st->puts_refused[i]}};
    }
    j["misses"] = misses;
    j["stats"] = {{"pending_puts", st->pending_puts},
                  {"reservations", st->reservations},
                  {"segments_unconfirmed", st->segments_unconfirmed},
                  {"segments_unreachable", st->segments_unreachable},
                  {"repair_at_risk", st->repair_at_risk},
                  {"repairs_in_flight", st->repairs_in_flight},
                  {"offload_queued", st->offload_queued},
                  {"under_replicated_puts", st->under_replicated_puts},
                  {"evicted_bytes", st->evicted_bytes}};
  }
  if (c.kv_events) {
    const KvEventStats k = c.kv_events->stats();
    j["kv_events"] = {{"published", k.published_events}, {"dropped", k.dropped_events}, {"queued", k.queued}};
  }
  return j;
}

}  // namespace

DashboardSample DashboardSampleOf(const MasterHttpContext& c) {
  auto m = c.current();
  if (!m) return SampleOf(c, nullptr);
  const MasterStats st = m->Stats();
  return SampleOf(c, &st);
}

void AddMasterRoutes(httplib::Server& server, const MasterHttpContext& c) {
  for (const char* path : {"/", "/dashboard"}) {
    server.Get(path, [](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(DashboardPage()), "text/html; charset=utf-8");
    });
  }
  server.Get("/dashboard.json", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(DashboardJson(c).dump(), "application/json");
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    auto m = c.current();
    res.set_content(Metrics(m.get(), c.rpc, c.server, c.log, c.ha, c.kv_events),
                    yb::http::PrometheusText::kContentType);
  });
  // Mooncake's: whether KV events are published, and their counts.
  server.Get("/kv_events/status", [&](const httplib::Request&, httplib::Response& res) {
    const KvEventStats k = c.kv_events ? c.kv_events->stats() : KvEventStats{};
    nlohmann::json j = {{"enabled", c.kv_events != nullptr},
                        {"published_batches", k.published_batches},
                        {"published_events", k.published_events},
                        {"dropped_events", k.dropped_events},
                        {"skipped_unparsed_keys", k.skipped_unparsed_keys}};
    if (c.kv_events) {
      j["queued_events"] = k.queued;  // ours
      j["last_log_position"] = k.last_position;  // ours: of the last event sent (0: no metadata log)
      j["bind_endpoint"] = c.kv_events->config().bind_endpoint;
      j["backend_id"] = c.kv_events->config().backend_id;
    }
    res.set_content(j.dump(), "application/json");
  });
  // Plain "OK" for scripts that wait for the master; JSON (?format=json, or asking for JSON) with
  // its role and log position.
  server.Get("/health", [&](const httplib::Request& req, httplib::Response& res) {
    const bool json = req.get_param_value("format") == "json" ||
                      req.get_header_value("Accept").find("application/json") != std::string::npos;
    // A master whose log failed serves reads: still 200 (a restart would not help), with the alarm.
    const std::string alarm = c.log && c.log->failed() ? c.log->stats().failure : "";
    if (!json) {
      res.set_content(alarm.empty() ? "OK\n" : "DEGRADED: changes are refused: " + alarm + "\n", "text/plain");
      return;
    }
    nlohmann::json h = {{"status", alarm.empty() ? "ok" : "degraded"},
                        {"role", "leader"},
                        {"epoch", 0},
                        {"durability", c.log ? c.log->durability() : "off"}};
    if (!alarm.empty()) h["alarm"] = "changes are refused: " + alarm;
    if (c.ha) {
      h["role"] = c.ha->role() == yb::ha::HaMaster::Role::kLeader ? "leader" : "standby";
      h["epoch"] = c.ha->epoch();
      h["leader"] = c.ha->leader();
      h["cluster_id"] = c.cluster_id;
      h["standbys"] = StandbysJson(c);
    }
    if (c.log) {
      auto s = c.log->stats();
      h["log"] = {{"dir", c.log->dir()},
                  {"durability", c.log->durability()},
                  {"sync_interval_ms", c.log->sync_interval().count()},
                  {"last_seq", s.last_seq},
                  {"synced_seq", s.synced_seq},
                  {"snapshot_seq", s.snapshot_seq},
                  {"writable", !s.failed},
                  {"free_bytes", s.free_bytes}};
    }
    res.set_content(h.dump(2), "application/json");
  });
  server.Get("/segments", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(SegmentsJson(c.current().get()).dump(2), "application/json");
  });
  // Drains a storage node (every segment named NAME, or on host NAME): POST /drain?segment=NAME
  // marks them and answers how many objects still need a copy elsewhere; poll until 0. POST
  // /undrain?segment=NAME undoes it: the segments take new replicas again.
  for (const bool undo : {false, true}) {
    server.Post(undo ? "/undrain" : "/drain", [&c, undo](const httplib::Request& req, httplib::Response& res) {
      auto m = ForChange(c, req, res);
      if (!m) return;
      const std::string name = req.get_param_value("segment");
      uint64_t remaining = 0, segments = 0;
      for (const auto& u : m->ListSegments().value()) {
        if (name.empty() || !yb::SegmentNameMatches(u.desc.name, name)) continue;
        if (undo) {
          if (!m->UndrainSegment({}, u.desc.id).ok()) continue;  // unmounted meanwhile
        } else {
          auto left = m->DrainSegment({}, u.desc.id);
          if (!left.ok()) continue;
          remaining += *left;
        }
        ++segments;
      }
      if (segments == 0) {
        res.status = 404;
        res.set_content(nlohmann::json{{"error", "no segment named '" + name + "'"}}.dump(), "application/json");
        return;
      }
      YB_LOG_INFO("HTTP {} from {}: {} segments of '{}' {}", req.path, req.remote_addr, segments, name,
                  undo ? "take new replicas again" : "draining");
      nlohmann::json out{{"segment", name}, {"segments", segments}};
      if (!undo) out["remaining"] = remaining;
      res.set_content(out.dump(), "application/json");
    });
  }
  // Tenants: each one's quota (null: none) and the bytes its objects hold.
  server.Get("/tenants", [&](const httplib::Request&, httplib::Response& res) {
    nlohmann::json arr = nlohmann::json::array();
    if (auto m = c.current()) {
      for (const auto& t : m->Tenants()) {
        arr.push_back({{"tenant", t.name},
                       {"quota", t.quota == TenantRegistry::kNoQuota ? nlohmann::json() : nlohmann::json(t.quota)},
                       {"used", t.used}});
      }
    }
    res.set_content(arr.dump(2), "application/json");
  });
  // Sets a tenant's byte quota: POST /tenants/quota?tenant=NAME&bytes=SIZE ("10 GB", bytes, or
  // "none"). Kept in the metadata log; a Put past it is refused (TENANT_QUOTA_EXCEEDED).
  server.Post("/tenants/quota", [&](const httplib::Request& req, httplib::Response& res) {
    auto m = ForChange(c, req, res);
    if (!m) return;
    const std::string tenant = req.get_param_value("tenant"), bytes = req.get_param_value("bytes");
    uint64_t quota = TenantRegistry::kNoQuota;
    if (bytes != "none") {
      auto size = ParseSize(bytes);
      if (tenant.empty() || !size.ok()) {
        res.status = 400;
        res.set_content(nlohmann::json{{"error", "needs ?tenant=NAME&bytes=SIZE (e.g. 10GB, or none)"}}.dump(),
                        "application/json");
        return;
      }
      quota = *size;
    }
    if (Status st = m->SetTenantQuota(tenant, quota); !st.ok()) {
      res.status = 400;
      res.set_content(nlohmann::json{{"error", st.ToString()}}.dump(), "application/json");
      return;
    }
    res.set_content(nlohmann::json{{"tenant", tenant}, {"quota", bytes}}.dump(), "application/json");
  });
  server.Get("/get_all_segments", [&](const httplib::Request&, httplib::Response& res) {
    std::string names;
    for (const auto& s : SegmentsJson(c.current().get())) names += s["name"].get<std::string>() + "\n";
    res.set_content(names, "text/plain");
  });
}

Result<std::string> MasterAdminToken(const net::Security& security, const std::string& metadata_dir) {
  if (security.auth()) return security.admin_token();
  auto fresh = [] {
    std::string hex;
    for (int i = 0; i < 2; ++i) {
      for (uint8_t b : net::NewNonce()) hex += fmt::format("{:02x}", b);
    }
    return hex;
  };
  if (metadata_dir.empty()) {
    std::string token = fresh();
    YB_LOG_WARN("admin token for the HTTP endpoints that change state (no --metadata_dir to keep it in): {}", token);
    return token;
  }
  YB_RETURN_IF_ERROR(MakePrivateDir(metadata_dir, "LOCK"));
  const std::string path = AdminTokenPath(metadata_dir);
  if (auto kept = ReadWholeFile(path); kept.ok()) {
    std::string t = std::move(*kept);
    while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
    if (t.size() >= 32) return t;
  } else if (kept.code() != Code::kFileNotFound) {
    return kept.status();
  }
  std::string token = fresh();
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, kPrivateFileMode);
  if (fd < 0) return Status(Code::kFileOpenFail, "cannot write " + tmp + ": " + std::strerror(errno));
  Status st = WriteAll(fd, token + "\n", tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Status(Code::kFileWriteFail, "syncing " + tmp + ": " + std::strerror(errno));
  ::close(fd);
  if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status(Code::kFileWriteFail, "cannot rename " + tmp + ": " + std::strerror(errno));
  }
  YB_RETURN_IF_ERROR(st);
  YB_LOG_INFO("admin token made and kept in {} (`yb admin-token --metadata_dir {}` prints it)", path, metadata_dir);
  return token;
}

}  // namespace yb::tools
