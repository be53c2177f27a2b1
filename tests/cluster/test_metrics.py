"""Prometheus conventions (issue 36 item 5): the master's calls as a histogram per operation whose
counts agree with its call counters, and the Grafana dashboard in deploy/grafana over metrics the
daemons really export."""
import json
import os
import re

from conftest import client_http, client_metrics, free_port, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
DASHBOARD = os.path.join(HERE, "..", "..", "deploy", "grafana", "yuebing.json")
MASTER_HTTP_SOURCE = os.path.join(HERE, "..", "..", "tools", "master_http.cc")
SAMPLE = re.compile(r'^([a-z_]+)(\{[^}]*\})? (\S+)$')


def samples(text):
    """(name, labels dict, value) for every sample of a Prometheus text page."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        assert m, f"not a sample line: {line!r}"
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or ""))
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def test_master_calls_are_a_histogram_per_operation_and_the_dashboard_reads_real_metrics(cluster):
    from yuebing import MooncakeDistributedStore
    cluster.start_master()
    http = free_port()
    cluster.start_client("node", extra=["--metrics_port", str(http)])
    s = MooncakeDistributedStore()
    mine = free_port()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.address,
                   enable_client_http_server=True, client_http_port=mine) == 0
    try:
        for i in range(20):
            assert s.put(f"k{i}", b"v" * 1000) == 0
        assert s.get_batch([f"k{i}" for i in range(20)]) == [b"v" * 1000] * 20
        assert s.get("missing") == b""
        # The caller's own calls, as histograms on its /metrics: 20 puts, a batch get and a get.
        _, own = client_http(mine, "/metrics")
        own_samples = {(n, l.get("le")): v for n, l, v in samples(own)}
        assert own_samples[("yb_client_put_duration_seconds_count", None)] == 20
        assert own_samples[("yb_client_put_duration_seconds_bucket", "+Inf")] == 20
        assert own_samples[("yb_client_get_duration_seconds_count", None)] == 2
        assert 0 < own_samples[("yb_client_put_duration_seconds_sum", None)] < 20
        # Its transfers, by transport: the 20 puts and the 20 reads of the batch went to the node on
        # this host (shared memory: the shm transport).
        by_transport = {}
        for n, l, v in samples(own):
            if "transport" in l and "le" not in l:
                by_transport.setdefault(l["transport"], {})[n] = v
        assert set(by_transport) == {"memory", "shm", "tcp"}, by_transport
        shm = by_transport["shm"]
        assert shm["yb_client_transfer_requests_total"] >= 40, by_transport
        assert shm["yb_client_transfer_bytes_total"] >= 40 * 1000, by_transport
        assert shm["yb_client_transfer_failures_total"] == 0, by_transport
        assert shm["yb_client_transfer_duration_seconds_count"] >= 2, by_transport
        assert by_transport["tcp"]["yb_client_transfer_requests_total"] == 0, by_transport
    finally:
        assert s.close() == 0
    text = cluster.http("/metrics")
    page = samples(text)
    names = {n for n, _, _ in page}
    by = {}
    for name, labels, value in page:
        by.setdefault((name, labels.get("op")), []).append((labels, value))
    # Every operation called has its buckets, cumulative, ending in +Inf = _count = its calls.
    for op in ("PutStart", "PutEnd", "GetReplicaList"):
        buckets = by[("yb_master_request_duration_seconds_bucket", op)]
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), f"{op}: buckets not cumulative: {counts}"
        assert buckets[-1][0]["le"] == "+Inf"
        count = by[("yb_master_request_duration_seconds_count", op)][0][1]
        assert counts[-1] == count > 0
        assert by[("yb_master_requests_total", op)][0][1] == count
        assert 0 < by[("yb_master_request_duration_seconds_sum", op)][0][1] < count * 1.0  # seconds, each < 1 s
    # Per segment and per tenant, labelled: the node's segment with its capacity and use, the
    # default tenant with the bytes of its 20 objects.
    seg = [(l, v) for n, l, v in page if n == "yb_master_segment_capacity_bytes"]
    assert [l["segment"].split(":")[0] for l, _ in seg] == ["node"] and seg[0][1] == 32 << 20
    assert sum(v for _, v in seg) == by[("yb_master_capacity_bytes", None)][0][1]
    used = {l["segment"]: v for n, l, v in page if n == "yb_master_segment_allocated_bytes"}
    assert sum(used.values()) == by[("yb_master_allocated_bytes", None)][0][1] >= 20 * 1000
    tenants = {l["tenant"]: v for n, l, v in page if n == "yb_master_tenant_used_bytes"}
    assert tenants["default"] >= 20 * 1000
    # Every counter's name ends in _total (Prometheus' convention), the master's and the client's.
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
    assert types["yb_master_request_duration_seconds"] == "histogram"
    _, client_text = client_http(http, "/metrics")
    types.update(re.findall(r"^# TYPE (\S+) (\S+)$", client_text, re.M))
    counters = [n for n, t in types.items() if t == "counter"]
    assert len(counters) > 20
    assert [n for n in counters if not n.endswith("_total")] == []
    wait_until(lambda: "yb_client_location_cache_hits_total" in client_metrics(http), 10, "the client's /metrics")
    names |= {n for n, _, _ in samples(client_http(http, "/metrics")[1])}
    # The dashboard: valid JSON, and every metric its queries name is exported (HA's only by an HA
    # master and the KV events' only with them on: those are checked against the code that exports
    # them).
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    assert len(exprs) >= 12
    with open(MASTER_HTTP_SOURCE) as f:
        exported_by_code = f.read()
    for expr in exprs:
        for metric in re.findall(r"\byb_[a-z_]+", expr):
            if metric.startswith(("yb_master_ha_", "yb_master_kv_event")):  # with --enable_ha, --enable_kv_events
                assert f'"{metric}"' in exported_by_code, metric
            else:
                assert metric in names, f"the dashboard's {metric} is not exported ({expr})"
