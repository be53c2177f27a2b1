"""KV events, Mooncake's way (issue 36 item 3): yb-master --enable_kv_events publishes on a ZeroMQ
PUB socket what the pool stores and drops, per key and medium, in Mooncake's message (an empty
topic, an 8-byte big-endian sequence number, msgpack [timestamp_ms, [event map...], dp_rank]), for
every cause: a Put, a Remove, an eviction, a node lost. A subscriber that applies them holds what the
master holds; GET /kv_events/status counts them as Mooncake's does."""
import json
import subprocess
import threading
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


@pytest.mark.parametrize("flags, said", [
    (["--enable_kv_events=true", "--metadata_dir", ""], "needs --metadata_dir"),
    (["--metadata_dir", "d"], "needs --enable_kv_events"),
    (["--enable_kv_events=true", "--metadata_dir", "d", "--kv_events_replay_endpoint", "tcp://0.0.0.0:{port}"],
     "protected mode without a secret"),
])
def test_a_replay_endpoint_it_cannot_serve_stops_the_master_with_why(tmp_path, flags, said):
    r = subprocess.run([f"{BIN}/yb-master", "--rpc_address", "127.0.0.1", "--rpc_port", str(free_port()),
                        "--metrics_port", str(free_port()), "--kv_events_bind_endpoint",
                        f"tcp://127.0.0.1:{free_port()}"] + [f.format(port=free_port()) for f in flags]
                       + (["--kv_events_replay_endpoint", f"tcp://127.0.0.1:{free_port()}"]
                          if "--kv_events_replay_endpoint" not in flags else []),
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


class Router:
    """A cache-aware router's index, kept as docs/operations.md ("KV events that never lose a
    block") says: subscribed to every master's PUB endpoint, it asks the leader's replay endpoint
    for what followed the last log position it applied when it starts, when a publisher's message
    numbers skip (a gap), and when a publisher it has not heard yet (a new leader) speaks."""

    def __init__(self, pubs, replays, leader, snapshot=False):
        self.ctx = zmq.Context()
        self.sub = self.ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.SUBSCRIBE, b"")
        for e in pubs:
            self.sub.connect(e)
        self.replays, self.leader = replays, leader
        self.position, self.held, self.last_seq = 0, set(), {}
        self.replayed, self.snapshots, self.drop_next = 0, 0, False
        time.sleep(0.3)  # subscribed before asking: what is published from now on is received
        self.replay(snapshot)

    def replay(self, snapshot=False):
        dealer = self.ctx.socket(zmq.DEALER)
        dealer.connect(self.replays[self.leader()])
        try:
            start = (1 << 64) - 1 if snapshot else self.position
            dealer.send(start.to_bytes(8, "big"))
            while True:
                assert dealer.poll(10000), "no answer from the replay endpoint"
                pos, payload = dealer.recv_multipart()
                pos = int.from_bytes(pos, "big")
                if not payload:  # the end: everything up to pos is applied
                    self.position = max(self.position, pos)
                    break
                for e in msgpack.unpackb(payload, raw=False)[1]:
                    if e["event_type"] == "all_cleared":
                        self.held.clear()
                        self.snapshots += 1
                    else:
                        self.apply(e)
            self.replayed += 1
        finally:
            dealer.close(0)

    def apply(self, e):
        (self.held.add if e["event_type"] == "stored" else self.held.discard)((e["object_key"], e["medium"]))

    def pump(self, timeout_ms=100):
        while self.sub.poll(timeout_ms):
            timeout_ms = 20
            _, seq, payload = self.sub.recv_multipart()
            if self.drop_next:  # a message lost on the way
                self.drop_next = False
                continue
            seq = int.from_bytes(seq, "big")
            events = msgpack.unpackb(payload, raw=False)[1]
            backend = events[0]["backend_id"]
            last = self.last_seq.get(backend)
            self.last_seq[backend] = seq
            if last is None or seq != last + 1:
                self.replay()  # a gap, or a publisher not heard before: whatever followed our position
            for e in events:
                if e["log_position"] > self.position:
                    self.apply(e)
                    self.position = e["log_position"]
        return True

    def close(self):
        self.sub.close(0)
        self.ctx.term()


def test_a_router_index_survives_its_own_death_a_gap_a_failover_and_a_node_loss(tmp_path):
    """Under a scripted workload the router's index (key, medium) ends equal to what the master
    holds, although the router is killed and starts again late, loses a message, its leader is
    killed -9, and a storage node dies with its keys."""
    test_ha = pytest.importorskip("test_ha")
    if test_ha.ETCD is None:
        pytest.skip("etcd-server is not installed")
    ha = test_ha.HaCluster(tmp_path, masters=2)
    pubs = {i: f"tcp://127.0.0.1:{free_port()}" for i in ha.ports}
    replays = {i: f"tcp://127.0.0.1:{free_port()}" for i in ha.ports}
    router = None
    try:
        for i in ha.ports:
            ha.start_master(i, extra=["--enable_kv_events", "--kv_events_bind_endpoint", pubs[i],
                                      "--kv_events_replay_endpoint", replays[i]])
        wait_until(lambda: ha.leader() is not None, 10, "a leader")
        wait_until(lambda: ha.in_sync(ha.leader(), 1), 10, "the standby to catch up")
        for n in ("node-a", "node-b"):
            ha.start_client(n)
        wait_until(lambda: ha.segment_names() == {"node-a", "node-b"}, 15, "the daemons to mount")
        s = test_ha.store(ha)
        keys = []

        def write(n, remove_every=0):
            for _ in range(n):
                key = f"0x{len(keys) + 1:x}"
                keys.append(key)
                s.put(key, b"v" * 512)  # refused while a leader changes: the master's word decides
                if remove_every and len(keys) % remove_every == 0:
                    s.remove(keys[len(keys) // 2], True)

        def expected():
            return {(k, "cpu") for k in keys if s.is_exist(k) == 1}

        def caught_up():
            router.pump()
            return router.held == expected()

        router = Router(pubs.values(), replays, ha.leader)
        write(60, remove_every=5)
        wait_until(caught_up, 20, "the router's index to equal the master's")

        # The router dies; the pool changes meanwhile; a new one starts from a snapshot.
        router.close()
        write(40, remove_every=4)
        router = Router(pubs.values(), replays, ha.leader, snapshot=True)
        assert router.snapshots == 1
        wait_until(caught_up, 20, "the restarted router's index to equal the master's")

        # A message is lost: the next one's number skips, and the router asks for what it missed.
        replayed = router.replayed
        router.drop_next = True
        write(10)
        wait_until(caught_up, 20, "the router to recover from a lost message")
        assert router.replayed > replayed

        # The leader is killed -9 while a writer runs; the new one goes on from the same positions.
        position = router.position
        first = ha.leader()
        writer = threading.Thread(target=write, args=(80, 3))
        writer.start()
        time.sleep(0.3)
        ha.kill_master(first)
        wait_until(lambda: ha.leader() is not None, 20, "a new leader")
        writer.join(120)
        assert not writer.is_alive()
        wait_until(lambda: ha.segment_names() == {"node-a", "node-b"}, 20, "the daemons to mount again")
        write(10)
        wait_until(caught_up, 30, "the router's index to follow the new leader")
        assert router.position > position

        # A storage node dies: its keys go with it, as removed events.
        before = len(router.held)
        ha.clients.pop("node-a").kill()
        # (Dropped once the master gives up on it: client_ttl, then the grace.)
        wait_until(lambda: caught_up() and len(router.held) < before, 40, "the router's index to lose the dead node's keys")
        s.close()
    finally:
        if router:
            router.close()
        ha.stop()
