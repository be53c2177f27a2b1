"""KV events, Mooncake's way (issue 36 item 3): yb-master --enable_kv_events publishes on a ZeroMQ
PUB socket what the pool stores and drops, per key and medium, in Mooncake's message (an empty
topic, an 8-byte big-endian sequence number, msgpack [timestamp_ms, [event map...], dp_rank]), for
every cause: a Put, a Remove, an eviction, a node lost. A subscriber that applies them holds what the
master holds; GET /kv_events/status counts them as Mooncake's does."""
import json
import subprocess
import time

import pytest

from conftest import BIN, free_port, wait_until

zmq = pytest.importorskip("zmq")
msgpack = pytest.importorskip("msgpack")


class Subscriber:
    def __init__(self, endpoint):
        self.ctx = zmq.Context()
        self.sock = self.ctx.socket(zmq.SUB)
        self.sock.setsockopt(zmq.SUBSCRIBE, b"")
        self.sock.connect(endpoint)
        self.events = []
        self.seqs = []

    def poll(self, timeout_ms=200):
        while self.sock.poll(timeout_ms):
            topic, seq, payload = self.sock.recv_multipart()
            assert topic == b""
            assert len(seq) == 8
            self.seqs.append(int.from_bytes(seq, "big"))
            batch = msgpack.unpackb(payload, raw=False)
            assert len(batch) == 3 and batch[2] == 0, batch
            for e in batch[1]:
                assert e["timestamp"] == batch[0]
                self.events.append(e)
            timeout_ms = 50
        return self.events

    def index(self):
        """What a router's index holds after applying every event: (key, medium) pairs."""
        held = set()
        for e in self.events:
            (held.add if e["event_type"] == "stored" else held.discard)((e["object_key"], e["medium"]))
        return held

    def close(self):
        self.sock.close(0)
        self.ctx.term()


def put(cluster, key, size=100):
    return cluster.yb(["put", key, "--file", "/dev/stdin"], input_bytes=b"v" * size)


def test_events_follow_puts_removes_evictions_and_node_loss(cluster):
    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    cluster.start_master(extra=["--enable_kv_events", "--kv_events_bind_endpoint", endpoint,
                                "--kv_events_backend_id", "pool-test", "--client_grace_sec", "1"])
    cluster.start_client("a", "16MB")
    sub = Subscriber(endpoint)
    try:
        # A subscriber joins a PUB socket a moment after it connects: probe until one event arrives.
        def joined():
            put(cluster, "probe", 10)
            cluster.yb(["remove", "probe", "--force"])
            return any(e["object_key"] == "probe" for e in sub.poll())
        wait_until(joined, 10, "the subscriber to receive events")
        sub.events.clear()

        assert put(cluster, "0x10").returncode == 0
        assert put(cluster, "12345").returncode == 0
        assert put(cluster, "layer0/block7").returncode == 0
        assert cluster.yb(["remove", "0x10", "--force"]).returncode == 0
        wait_until(lambda: len(sub.poll()) >= 4, 10, "four events")
        stored = sub.events[0]
        assert stored["event_type"] == "stored" and stored["type"] == "BlockStored"
        assert stored["medium"] == "cpu" and stored["object_key"] == "0x10"
        assert stored["seq_hashes"] == [16] and stored["block_hashes"] == [16]
        assert stored["backend_id"] == "pool-test" and stored["tenant_id"] == "default"
        assert stored["base_block_idx"] == 0 and stored["parent_hash"] is None and stored["token_ids"] is None
        assert sub.events[1]["seq_hashes"] == [12345]
        assert sub.events[2]["seq_hashes"] == [] and sub.events[2]["object_key"] == "layer0/block7"
        removed = sub.events[3]
        assert removed["event_type"] == "removed" and removed["type"] == "BlockRemoved"
        assert removed["object_key"] == "0x10" and removed["medium"] == "cpu"
        ids = [e["event_id"] for e in sub.events]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)

        # Evictions: 40 values of 1 MiB into 16 MiB. The index the events build is what the master holds.
        for i in range(40):
            put(cluster, f"big{i}", 1 << 20)
        time.sleep(1)
        sub.poll()
        assert any(e["event_type"] == "removed" and e["object_key"].startswith("big") for e in sub.events), \
            "no eviction was published"
        keys = [f"big{i}" for i in range(40)] + ["12345", "layer0/block7", "0x10"]
        held = {k for k in keys if cluster.yb(["exist", k], check=True).stdout == b"1\n"}
        assert {k for k, _ in sub.index()} == held

        # The node holding every replica is killed: once the master drops its segment, each key it
        # held is removed.
        cluster.kill_client("a")
        wait_until(lambda: sub.poll() is not None and not sub.index(), 30, "the lost node's keys to be removed")
        assert sub.index() == set()

        status = json.loads(cluster.http("/kv_events/status"))
        assert status["enabled"] is True
        assert status["published_events"] >= len(sub.events)
        assert status["dropped_events"] == 0
        assert status["skipped_unparsed_keys"] >= 1  # layer0/block7 and the big keys name no block hash
        assert status["backend_id"] == "pool-test"
        # One message per batch, numbered from 0 without a gap.
        assert sub.seqs == list(range(sub.seqs[0], sub.seqs[0] + len(sub.seqs)))
        metrics = cluster.http("/metrics")
        assert "yb_master_kv_events_published_total" in metrics
    finally:
        sub.close()


def test_without_the_flag_status_says_disabled(cluster):
    cluster.start_master()
    assert json.loads(cluster.http("/kv_events/status")) == {
        "enabled": False, "published_batches": 0, "published_events": 0, "dropped_events": 0,
        "skipped_unparsed_keys": 0}
    assert "kv_events" not in cluster.http("/metrics")


@pytest.mark.parametrize("endpoint, said", [
    ("tcp://0.0.0.0:{port}", "protected mode without a secret"),
    ("tcp://127.0.0.1:99999", "the port must be"),
    ("nonsense", "cannot publish KV events"),
])
def test_an_endpoint_it_cannot_serve_stops_the_master_with_why(tmp_path, endpoint, said):
    r = subprocess.run([f"{BIN}/yb-master", "--rpc_address", "127.0.0.1", "--rpc_port", str(free_port()),
                        "--metrics_port", str(free_port()), "--metadata_dir", "", "--enable_kv_events=true",
                        "--kv_events_bind_endpoint", endpoint.format(port=free_port())],
                       capture_output=True, text=True, timeout=20, cwd=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert said in r.stdout + r.stderr


def test_whichever_master_leads_publishes(tmp_path):
    """--enable_ha: each master binds its endpoint; only the leader publishes, and a new leader goes
    on publishing what changes after it takes over (from sequence 0: docs/operations.md)."""
    test_ha = pytest.importorskip("test_ha")
    if test_ha.ETCD is None:
        pytest.skip("etcd-server is not installed")
    ha = test_ha.HaCluster(tmp_path, masters=2)
    endpoints = {i: f"tcp://127.0.0.1:{free_port()}" for i in ha.ports}
    subs = {}
    try:
        for i in ha.ports:
            ha.start_master(i, extra=["--enable_kv_events", "--kv_events_bind_endpoint", endpoints[i]])
            subs[i] = Subscriber(endpoints[i])
        wait_until(lambda: ha.leader() is not None, 10, "a leader")
        first = ha.leader()
        wait_until(lambda: ha.in_sync(first, 1), 10, "the standby to catch up")
        ha.start_client("node-a")
        wait_until(lambda: ha.segment_names() == {"node-a"}, 15, "the daemon to mount")
        s = test_ha.store(ha)
        other = 1 - first

        def published(i, key):
            return any(e["object_key"] == key for e in subs[i].poll())

        n = iter(range(1000))

        def put_until_seen(i, prefix):
            # Right after a failover a Put may be refused while the node mounts again: tried again.
            key = f"{prefix}{next(n)}"
            return s.put(key, b"x" * 64) == 0 and published(i, key)

        wait_until(lambda: put_until_seen(first, "0x1"), 10, "the leader's events")
        assert subs[other].poll() == [], "a standby published"
        ha.kill_master(first)
        wait_until(lambda: ha.leader() == other, 20, "the standby to lead")
        wait_until(lambda: put_until_seen(other, "0x2"), 20, "the new leader's events")
        assert all(e["event_type"] == "stored" for e in subs[other].events)
        s.close()
    finally:
        for sub in subs.values():
            sub.close()
        ha.stop()


def test_yb_events_tails_them(cluster):
    port = free_port()
    endpoint = f"tcp://127.0.0.1:{port}"
    cluster.start_master(extra=["--enable_kv_events", "--kv_events_bind_endpoint", endpoint])
    cluster.start_client("a", "16MB")
    tail = subprocess.Popen([f"{BIN}/yb", "events", "--endpoint", endpoint, "--count", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    js = subprocess.Popen([f"{BIN}/yb", "events", "--endpoint", endpoint, "--json", "--timeout", "3"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.5)  # both subscribed (a PUB socket sends only to subscribers it has)
        assert put(cluster, "0x2a").returncode == 0
        assert cluster.yb(["remove", "0x2a", "--force"]).returncode == 0
        out, err = tail.communicate(timeout=20)
        assert tail.returncode == 0, err
        lines = out.splitlines()
        assert len(lines) == 2, out
        assert lines[0].split()[1:] == ["stored", "cpu", "0x2a", "tenant=default"], lines
        assert lines[1].split()[1:] == ["removed", "cpu", "0x2a", "tenant=default"], lines
        out, err = js.communicate(timeout=20)
        assert js.returncode == 0, err
        events = [json.loads(line) for line in out.splitlines()]
        assert [(e["event_type"], e["seq_hashes"]) for e in events] == [("stored", [42]), ("removed", [42])]
    finally:
        for p in (tail, js):
            if p.poll() is None:
                p.kill()
                p.wait(10)
    r = subprocess.run([f"{BIN}/yb", "events", "--endpoint", "nonsense"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 1 and "cannot subscribe to KV events at 'nonsense'" in r.stderr
