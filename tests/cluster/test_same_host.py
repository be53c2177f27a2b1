"""Same-host transfers (issue 34, items 1, 2 and 5): a process and a yb-client daemon of one host move
object bytes through the daemon's memory, mapped by the process, not over TCP (the daemon's transfer
server serves none of them); single, batch, multi-buffer and range calls come back byte for byte; a
daemon that does not share (--same_host_transfers false) and a process of another user are served
over TCP instead, with the same bytes."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

yuebing = pytest.importorskip("yuebing")
from yuebing import MooncakeDistributedStore  # noqa: E402
from conftest import client_metrics, free_port, wait_until  # noqa: E402

HERE = os.path.dirname(__file__)


def value(n, seed):
    return bytes((i * 131 + seed) % 251 for i in range(n))


def daemon(cluster, name, extra=()):
    http = free_port()
    cluster.start_client(name, size="64MB", extra=["--metrics_port", str(http)] + list(extra))
    wait_until(lambda: client_metrics(http).get("yb_client_segments") == 1, 10, f"{name}'s /metrics")
    return http


def served_bytes(http):
    m = client_metrics(http)
    return m["yb_client_served_written_bytes_total"] + m["yb_client_served_read_bytes_total"]


def store_of(cluster):
    s = MooncakeDistributedStore()
    # No memory of its own: every replica is in the daemon's segment.
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.address) == 0
    return s


def exercise(s):
    """Single, batch, zero-copy, multi-buffer and range calls; every byte checked. The bytes moved."""
    big = value(3 << 20, 1)
    assert s.put("big", big) == 0 and s.get("big") == big
    keys = [f"b{i}" for i in range(32)]
    vals = [value(4096 + i, i) for i in range(32)]
    assert s.put_batch(keys, vals) == 0
    assert s.get_batch(keys) == vals
    dst = np.zeros(1 << 20, dtype=np.uint8)
    assert s.register_buffer(dst.ctypes.data, dst.nbytes) == 0
    assert s.get_into("b3", dst.ctypes.data, dst.nbytes) == len(vals[3])
    assert bytes(dst[:len(vals[3])]) == vals[3]
    layers = [np.frombuffer(value(512, 10 + i), dtype=np.uint8).copy() for i in range(4)]
    assert s.batch_put_from_multi_buffers(["blk"], [[a.ctypes.data for a in layers]], [[512] * 4]) == [0]
    assert s.get("blk") == b"".join(bytes(a) for a in layers)
    # A range of an object into the registered buffer: bytes 100-1099 of "big" at offset 7.
    assert s.get_into_ranges([dst.ctypes.data], [["big"]], [[[7]]], [[[100]]], [[[1000]]]) == [[[1000]]]
    assert bytes(dst[7:1007]) == big[100:1100]
    assert s.unregister_buffer(dst.ctypes.data) == 0
    return 2 * len(big) + 2 * sum(map(len, vals)) + 2 * 2048


def views(s):
    """get_buffer and batch_get_buffer, bytes checked; whether they showed the pool's own bytes in
    place (read-only, pinned while held) rather than a copy."""
    v = value(1 << 20, 7)
    assert s.put("view", v) == 0
    h = s.get_buffer("view")
    assert h is not None and len(h) == len(v) and bytes(h) == v
    hs = s.batch_get_buffer(["view", "no-such-key"])
    assert bytes(hs[0]) == v and hs[1] is None
    in_place = h.in_place
    assert memoryview(h).readonly == in_place and hs[0].in_place == in_place
    if in_place:  # pinned: a forced remove leaves its bytes where they are until the handles go
        assert s.remove("view", True) == 0 and s.is_exist("view") == 0 and bytes(h) == v
    del h, hs
    s.remove("view", True)
    return in_place


def assert_over_tcp(cluster, http):
    """exercise() from this process, every byte of it through the daemon's TCP transfer server."""
    s = store_of(cluster)
    try:
        moved = exercise(s)
        assert not views(s)  # copies, over TCP
    finally:
        assert s.close() == 0
    assert served_bytes(http) >= moved


def test_a_process_and_a_daemon_of_one_host_move_bytes_through_shared_memory(cluster):
    cluster.start_master()
    http = daemon(cluster, "node-a")
    s = store_of(cluster)
    try:
        exercise(s)
        assert views(s)  # get_buffer shows the daemon's memory itself
    finally:
        assert s.close() == 0
    assert served_bytes(http) == 0  # not one byte over its TCP transfer server
    m = client_metrics(http)
    assert m["yb_client_same_host_given_total"] == 1 and m["yb_client_same_host_refused_total"] == 0


def test_a_daemon_that_does_not_share_is_reached_over_tcp(cluster):
    cluster.start_master()
    http = daemon(cluster, "node-a", ["--same_host_transfers", "false"])
    assert_over_tcp(cluster, http)


def test_a_process_told_so_by_its_environment_stays_on_tcp(cluster, monkeypatch):
    """YB_SAME_HOST_TRANSFERS=0, as Python's and the C API's setup read it: this process maps
    nothing, and its bytes go through the daemon's transfer server."""
    cluster.start_master()
    http = daemon(cluster, "node-a")
    monkeypatch.setenv("YB_SAME_HOST_TRANSFERS", "0")
    assert_over_tcp(cluster, http)
    assert client_metrics(http)["yb_client_same_host_given_total"] == 0  # it never asked


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_a_process_of_another_user_is_served_over_tcp(cluster):
    cluster.start_master()
    http = daemon(cluster, "node-a")
    script = (
        "from yuebing import MooncakeDistributedStore\n"
        "s = MooncakeDistributedStore()\n"
        f"assert s.setup('127.0.0.1', 'P2PHANDSHAKE', 0, 16 << 20, 'tcp', '', '{cluster.address}') == 0\n"
        "v = bytes(range(256)) * 4096\n"
        "assert s.put('theirs', v) == 0\n"
        "assert s.get('theirs') == v\n"
        "assert s.close() == 0\n"
        "print('ok')\n")
    # The package, where that user can read it (a checkout may sit in a directory only root enters).
    pkg = tempfile.mkdtemp(prefix="yb-other-user-")
    try:
        os.chmod(pkg, 0o755)
        shutil.copytree(os.path.dirname(yuebing.__file__), os.path.join(pkg, "yuebing"))
        env = dict(os.environ, PYTHONPATH=pkg)
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-"],
                           input=script.encode(), capture_output=True, timeout=60, env=env, cwd="/")
    finally:
        shutil.rmtree(pkg)
    assert r.returncode == 0 and b"ok" in r.stdout, r.stderr.decode()[-2000:]
    assert served_bytes(http) >= 2 * (1 << 20)  # its bytes went over TCP
    m = client_metrics(http)
    assert m["yb_client_same_host_refused_total"] == 1 and m["yb_client_same_host_given_total"] == 0


def test_a_daemon_killed_is_not_written_into_through_its_memory(cluster):
    """kill -9 of the daemon whose memory a process maps: its writes go elsewhere at once (over TCP,
    failing, then to the other daemon), none acknowledged into the dead one's memory; every
    acknowledged object reads back once the master has dropped the dead one."""
    cluster.start_master()
    daemon(cluster, "node-a")
    daemon(cluster, "node-b")
    s = store_of(cluster)
    try:
        for i in range(20):  # both daemons' memory mapped
            assert s.put(f"warm{i}", value(8192, i)) == 0
        segs = {r.segment for i in range(20) for r in s.get_replica_desc(f"warm{i}")}
        assert len(segs) == 2
        cluster.kill_client("node-a")
        acked = {}
        for i in range(40):
            v = value(8192, 100 + i)
            if s.put(f"after{i}", v) == 0:
                acked[f"after{i}"] = v
        assert len(acked) == 40  # node-b has room: every put lands there
        wait_until(lambda: "node-a" not in cluster.segment_names(), 15, "the master to drop node-a")
        for k, v in acked.items():
            assert s.get(k) == v, k
    finally:
        assert s.close() == 0
