// The HTTP side of a client: see client_http.h.
#include "http/client_http.h"

#include <fmt/format.h>

#include "common/units.h"
#include "http/admin_http.h"

namespace yb::http {

std::string ClientMetricsText(const ClientStats& s) {
  PrometheusText p;
  const TransferServerStats& t = s.transfer;
  p.Gauge("yb_client_master_reachable", "1 while the master answers this client's heartbeats.", s.master_reachable);
  p.Counter("yb_client_heartbeat_failures_total", "Heartbeats that did not reach the master.", s.heartbeat_failures);
  p.Counter("yb_client_remounts_total",
            "Times the master asked for this client's segments again (its restart, or "
            "this client declared dead) and got them.",
            s.remounts);
  p.Gauge("yb_client_segments_mounted_on_master",
          "1 while the master serves from every segment this client holds (0 while a re-mount is owed).",
          s.segments_mounted);
  p.Gauge("yb_client_segments", "Segments mounted.", s.segments);
  p.Counter("yb_client_repairs_total", "Re-replication copies made into this node's memory.", s.repairs);
  p.Counter("yb_client_repair_failures_total", "Re-replication copies that failed (the master redoes them).",
            s.repair_failures);
  p.Counter("yb_client_repair_bytes_total", "Bytes copied by re-replication.", s.repair_bytes);
  p.Gauge("yb_client_segment_bytes", "Bytes of the mounted segments.", s.segment_bytes);
  p.Gauge("yb_client_transfer_connections", "Open connections to the transfer server.", t.open_connections);
  p.Counter("yb_client_transfer_refused_connections_total",
            "Connections closed at once because --transfer_max_connections were open.", t.refused_connections);
  p.Counter("yb_client_transfer_stalled_connections_total",
            "Connections closed after moving no byte for --transfer_stall_timeout_sec halfway through a request.",
            t.stalled_connections);
  p.Counter("yb_client_transfer_accept_failures_total",
            "Failed accepts (e.g. out of file descriptors), each followed by a pause.", t.accept_failures);
  p.Counter("yb_client_transfer_refused_requests_total",
            "Transfer requests refused: out of a segment's bounds, a segment not served here, malformed, or "
            "without a valid grant.",
            t.refused_requests);
  p.Counter("yb_client_transfer_refused_grants_total",
            "Transfer requests refused for want of a grant the master minted for that range and access, unexpired.",
            t.refused_grants);
  p.Counter("yb_client_served_reads_total", "Segment reads served to other clients.", t.reads);
  p.Counter("yb_client_served_read_bytes_total", "Bytes of the segment reads served.", t.read_bytes);
  p.Counter("yb_client_served_writes_total", "Segment writes received whole from other clients.", t.writes);
  p.Counter("yb_client_served_written_bytes_total", "Bytes of the segment writes received.", t.written_bytes);
  p.Counter("yb_client_same_host_given_total",
            "Segments whose memory a process of this host was given to map (its transfers then bypass the served "
            "counters).",
            t.same_host_given);
  p.Counter("yb_client_same_host_refused_total",
            "Processes of this host refused this client's memory (another user, or no proof of the data-plane key): "
            "they go over TCP.",
            t.same_host_refused);
  p.Counter("yb_client_served_disk_reads_total", "Objects read from the SSD tier for other clients.", t.disk_reads);
  p.Counter("yb_client_served_disk_read_bytes_total", "Bytes of the SSD tier reads served.", t.disk_read_bytes);
  p.Counter("yb_client_replica_read_failures_total",
            "Replica reads of this client's gets that failed (the next replica was tried).", s.replica_read_failures);
  if (s.get_durations) {
    p.Family("histogram", "yb_client_get_duration_seconds",
             "This client's get calls (a batch is one call), from the call to its answer.");
    p.Histogram("yb_client_get_duration_seconds", "", *s.get_durations);
  }
  if (s.put_durations) {
    p.Family("histogram", "yb_client_put_duration_seconds",
             "This client's put calls (a batch is one call), from the call to its answer.");
    p.Histogram("yb_client_put_duration_seconds", "", *s.put_durations);
  }
  if (!s.transports.empty()) {
    // This client's own replica transfers, by what they went over.
    auto per_transport = [&](const char* name, const char* help, auto value) {
      p.Family("counter", name, help);
      for (const auto& t : s.transports)
        p.Sample(name, "transport=\"" + PrometheusText::Label(t.kind) + "\"", value(t));
    };
    per_transport("yb_client_transfer_requests_total",
                  "Replica transfers of this client's gets and puts, by transport.",
                  [](const TransportUse& t) { return t.requests; });
    per_transport("yb_client_transfer_bytes_total", "Bytes those transfers moved, by transport.",
                  [](const TransportUse& t) { return t.bytes; });
    per_transport("yb_client_transfer_failures_total", "Those transfers that failed, by transport.",
                  [](const TransportUse& t) { return t.failures; });
    p.Family("histogram", "yb_client_transfer_duration_seconds",
             "Time to move one batch of this client's replica transfers over one transport.");
    for (const auto& t : s.transports) {
      if (t.durations)
        p.Histogram("yb_client_transfer_duration_seconds", "transport=\"" + PrometheusText::Label(t.kind) + "\"",
                    *t.durations);
    }
  }
  p.Counter("yb_client_location_cache_hits_total",
            "Gets served from a cached location: straight to the holder, no master call.", s.location_cache_hits);
  p.Counter("yb_client_location_cache_stale_total",
            "Cached locations that failed or held other bytes (dropped; the master was asked).",
            s.location_cache_stale);
  p.Counter("yb_client_disk_reads_total", "Objects this client's gets read from an SSD tier (LOCAL_DISK replicas).",
            s.disk_reads);
  p.Counter("yb_client_replica_write_failures_total",
            "Replica writes of this client's puts that failed (another node was tried).", s.replica_write_failures);
  p.Gauge("yb_client_disk_objects", "Objects in the SSD tier.", s.disk_objects);
  p.Gauge("yb_client_disk_bytes", "Bytes the SSD tier uses.", s.disk_bytes);
  p.Gauge("yb_client_disk_limit_bytes", "Bytes the SSD tier may use (--storage_size_limit).", s.disk_limit_bytes);
  p.Gauge("yb_client_disk_buckets", "Bucket files in the SSD tier.", s.disk_buckets);
  p.Counter("yb_client_offloaded_total", "Objects copied down to the SSD tier at the master's request.", s.offloaded);
  p.Counter("yb_client_offload_failures_total", "Copies to the SSD tier that failed (the DRAM copy stayed).",
            s.offload_failures);
  p.Counter("yb_client_disk_evicted_buckets_total", "SSD tier buckets evicted above the high watermark.",
            s.disk_evicted_buckets);
  p.Gauge("yb_client_disk_offload_paused",
          "1 while offloading waits for the disk (it refused a write: full or failing); memory keeps serving.",
          s.disk_offload_paused);
  p.Gauge("yb_client_dummies", "Dummy clients of this host connected to this one (setup_dummy).", s.dummies);
  p.Gauge("yb_client_dummy_regions", "Memory regions of dummy clients this client has mapped.", s.dummy_regions);
  p.Counter("yb_client_dummy_relayed_bytes_total",
            "Bytes this client moved between the pool and its dummy clients' memory.", s.dummy_relayed_bytes);
  return p.text();
}

std::string ClientMetricsSummary(const ClientStats& s) {
  const TransferServerStats& t = s.transfer;
  std::string out;
  out += fmt::format("master: {}\n", s.master_reachable ? "reachable" : "unreachable");
  out += fmt::format("segments: {} ({}), {}\n", s.segments, FormatBytes(s.segment_bytes),
                     s.segments_mounted ? "mounted" : "re-mount owed");
  out += fmt::format("served: {} reads ({}), {} writes ({})\n", t.reads, FormatBytes(t.read_bytes), t.writes,
                     FormatBytes(t.written_bytes));
  out += fmt::format("transfer connections: {} open, {} refused\n", t.open_connections, t.refused_connections);
  out +=
      fmt::format("same host: {} segments mapped by peers, {} peers refused\n", t.same_host_given, t.same_host_refused);
  if (s.dummies > 0 || s.dummy_relayed_bytes > 0) {
    out += fmt::format("dummy clients: {} ({} regions mapped), {} moved for them\n", s.dummies, s.dummy_regions,
                       FormatBytes(s.dummy_relayed_bytes));
  }
  out += fmt::format("repairs: {} ({} failed, {})\n", s.repairs, s.repair_failures, FormatBytes(s.repair_bytes));
  if (s.disk_limit_bytes > 0) {
    out += fmt::format("ssd tier: {} objects, {} of {}, {} offloaded\n", s.disk_objects, FormatBytes(s.disk_bytes),
                       FormatBytes(s.disk_limit_bytes), s.offloaded);
  }
  out += fmt::format("heartbeat failures: {}, re-mounts: {}\n", s.heartbeat_failures, s.remounts);
  return out;
}

void AddClientRoutes(httplib::Server& server, std::function<std::optional<ClientStats>()> stats) {
  server.Get("/metrics", [stats](const httplib::Request&, httplib::Response& res) {
    res.set_content(ClientMetricsText(stats().value_or(ClientStats{})), PrometheusText::kContentType);
  });
  server.Get("/metrics/summary", [stats](const httplib::Request&, httplib::Response& res) {
    auto s = stats();
    res.set_content(s ? ClientMetricsSummary(*s) : std::string("not connected to a master yet\n"), "text/plain");
  });
  // Ready while the master answers this client's heartbeats and serves from its memory.
  server.Get("/health", [stats](const httplib::Request&, httplib::Response& res) {
    const auto s = stats();
    if (s && s->master_reachable && s->segments_mounted) {
      res.set_content("OK\n", "text/plain");
    } else if (s && s->master_reachable) {
      res.status = 503;
      res.set_content("segments not mounted on the master (re-mounting)\n", "text/plain");
    } else {
      res.status = 503;
      res.set_content(s ? "master unreachable\n" : "waiting for the master\n", "text/plain");
    }
  });
}

}  // namespace yb::http
