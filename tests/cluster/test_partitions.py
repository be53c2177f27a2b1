"""Partitions between clients and storage nodes, not only the master (docs/design.md,
"Partitions"): hosts in network namespaces, single links cut both ways and one way.

- A reader cut off from one holder reads every object from the other replica (none wrong, none
  failed, each within the transfer deadline); it reports the holder to the master in its
  heartbeats, which then hands that holder to no reader while the cut lasts (another reader cut
  off alike never waits for it), and takes it back once the readers' probes reach it.
- A holder cut off from the master but not from its clients is still read from, and takes no new
  replica until the master hears from it again.
"""
import json
import os
import subprocess
import time

import pytest

from conftest import Cluster, hosts, metric_value, wait_until

pytest.importorskip("yuebing")

WORKER = os.path.join(os.path.dirname(__file__), "store_worker.py")


class Worker:
    """store_worker.py on host `name`: a library client whose heartbeats run between commands."""

    def __init__(self, h, cluster, name, tmp_path):
        self.p = subprocess.Popen(h.prefix[name] + ["/usr/bin/python3", WORKER, cluster.address, h.addr[name]],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(tmp_path / f"worker-{name}.log", "ab"), env=dict(os.environ))
        assert json.loads(self.p.stdout.readline())["ready"]

    def ask(self, **cmd):
        self.p.stdin.write((json.dumps(cmd) + "\n").encode())
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        assert line, "the worker died"
        return json.loads(line)

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.write(b'{"op": "quit"}\n')
            self.p.stdin.close()
            try:
                self.p.wait(20)
            except subprocess.TimeoutExpired:
                self.p.kill()


@pytest.fixture
def net(tmp_path):
    with hosts(["m", "a", "b", "r", "s"]) as h:
        yield h


def start(h, tmp_path, client_ttl):
    c = Cluster(tmp_path, client_ttl=client_ttl, master_host=h.addr["m"], protected_mode=False)
    c.start_master(prefix=h.prefix["m"], bind=h.addr["m"])
    for n in ("a", "b"):
        c.start_client(n, "64MB", prefix=h.prefix[n], host=h.addr[n])
    return c


def metric(h, c, name):
    return metric_value(h.http("m", f"http://{h.addr['m']}:{c.http_port}/metrics"), name)


def segment_ids(h, c):
    """{daemon name: its segment ids} (a daemon's segments are named "NAME:PORT")."""
    out = {}
    for s in json.loads(h.http("m", f"http://{h.addr['m']}:{c.http_port}/segments")):
        out.setdefault(s["name"].rsplit(":", 1)[0], set()).add(int(s["id"]))
    return out


@pytest.mark.parametrize("direction", ["both", "reader-to-holder", "holder-to-reader"])
def test_readers_cut_from_a_holder_read_the_other_replica_and_the_master_stops_handing_it_out(
        tmp_path, net, direction):
    """Readers r and s are both cut off from holder a. r meets the cut first: its reads fail over to
    b, each within the transfer deadline, and its heartbeat reports a. s, reading after that, is
    never handed a: none of its reads waits for a connection that cannot be made."""
    c = start(net, tmp_path, client_ttl=10)
    r = Worker(net, c, "r", tmp_path)
    s = Worker(net, c, "s", tmp_path)
    try:
        size = 256 << 10
        assert r.ask(op="put", prefix="obj", n=16, size=size, replicas=2)["codes"] == [0] * 16
        placed = r.ask(op="where", prefix="obj", n=16)
        assert all(len(p) == 2 for p in placed.values()), placed
        a_segments = segment_ids(net, c)["a"]
        # Dropped silently on the way: what a reader sends holder a, what a sends it, or both
        # (either way no connection between them completes, and nothing says why).
        for reader in ("r", "s"):
            if direction == "holder-to-reader":
                net.cut("a", reader, both=False)
            else:
                net.cut(reader, "a", both=(direction == "both"))
        got = r.ask(op="read", prefix="obj", n=16, size=size, seconds=5)
        assert got["wrong"] == [] and got["failed"] == [], got["wrong"] + got["failed"]
        assert got["gets"] > 16
        worst = max(lat for _, lat in got["samples"])
        assert worst < 6.0, f"a read took {worst:.2f} s: longer than the transfer deadline"
        wait_until(lambda: metric(net, c, "yb_master_segments_unreachable") == len(a_segments), 5,
                   "the reader's report to reach the master")
        assert "reported unreachable by client" in (tmp_path / "master.log").read_text()
        got = s.ask(op="read", prefix="obj", n=16, size=size, seconds=3)
        assert got["wrong"] == [] and got["failed"] == [], got["wrong"] + got["failed"]
        slow = [round(lat, 2) for _, lat in got["samples"] if lat > 1.0]
        assert not slow, f"reads that waited for the unreachable holder: {slow}"
        # Healed: the readers' probes reach a, their reports stop, and a is handed out again.
        net.heal()
        wait_until(lambda: metric(net, c, "yb_master_segments_unreachable") == 0, 20, "the reports to lapse")
        placed = s.ask(op="where", prefix="obj", n=16)
        assert all(len(p) == 2 for p in placed.values()), placed
        got = s.ask(op="read", prefix="obj", n=16, size=size, seconds=1)
        assert got["wrong"] == [] and got["failed"] == []
    finally:
        r.close()
        s.close()
        c.stop()


def test_a_holder_cut_from_the_master_is_read_from_but_not_written_to(tmp_path, net):
    # A client_ttl long enough that b is not declared dead during the test; it goes quiet after 3 s.
    c = start(net, tmp_path, client_ttl=30)
    w = Worker(net, c, "r", tmp_path)
    try:
        size = 64 << 10
        seg = segment_ids(net, c)
        assert seg["a"] and seg["b"], seg
        assert w.ask(op="put", prefix="on-b", n=8, size=size, preferred=["b"])["codes"] == [0] * 8
        assert all(set(s) <= seg["b"] for s in w.ask(op="where", prefix="on-b", n=8).values())
        net.cut("m", "b")
        wait_until(lambda: metric(net, c, "yb_master_segments_unheard") == len(seg["b"]), 10, "b to go quiet")
        # Still read from: it serves its clients.
        got = w.ask(op="read", prefix="on-b", n=8, size=size, seconds=1)
        assert got["wrong"] == [] and got["failed"] == [] and got["gets"] >= 8
        # Not written to, even where the writer asks for it.
        assert w.ask(op="put", prefix="new", n=20, size=size, preferred=["b"])["codes"] == [0] * 20
        assert all(set(s) <= seg["a"] for s in w.ask(op="where", prefix="new", n=20).values())
        assert "not heard from for" in (tmp_path / "master.log").read_text()
        net.heal()
        wait_until(lambda: metric(net, c, "yb_master_segments_unheard") == 0, 10, "b to be heard again")
        assert w.ask(op="put", prefix="again", n=4, size=size, preferred=["b"])["codes"] == [0] * 4
        assert all(set(s) <= seg["b"] for s in w.ask(op="where", prefix="again", n=4).values())
    finally:
        w.close()
        c.stop()
