"""The world around the store failing: a full metadata disk (a small tmpfs the test mounts)."""
import os
import subprocess
import time

import pytest

from conftest import Cluster, fill, small_tmpfs, wait_until


def value(n, seed):
    return bytes((i * 131 + seed) & 0xFF for i in range(n))


@pytest.fixture
def small_disk(tmp_path):
    """A 3 MiB tmpfs at tmp_path/meta (root only), unmounted at the end."""
    with small_tmpfs(tmp_path / "meta", "3m", mode="0700") as d:
        yield d


def put(c, key, data):
    return c.yb(["put", key, "--file", "/dev/stdin"], input_bytes=data)


def test_a_full_metadata_disk_refuses_changes_keeps_every_read_and_recovers_by_itself(tmp_path, small_disk):
    """The metadata directory on a 3 MiB tmpfs. Space running short makes the master refuse changes
    with a clear error while every stored object stays readable, and /health, /metrics and the log
    raise the alarm; a restart on the full disk comes up read-only, its nodes' replicas readable;
    once space returns it takes changes again within seconds, and nothing acknowledged is lost.
    (The master used to exit: every read failed from then on.)"""
    meta = small_disk / "log"  # a directory of its own on the small disk
    flags = ["--metadata_dir", str(meta), "--metadata_min_free_bytes", "512KiB"]
    c = Cluster(tmp_path, client_ttl=3)
    try:
        c.start_master(extra=flags)
        c.start_client("node-a", "32MB")
        values = {f"k{i}": value(4096, i) for i in range(20)}
        for k, v in values.items():
            assert put(c, k, v).returncode == 0, k

        # Space runs short: changes are refused within a second, with the reason.
        fill(small_disk, 256 << 10)
        wait_until(lambda: c.http("/health").startswith("DEGRADED"), 5, "the master to raise the alarm")
        assert "bytes are free" in c.http("/health")
        h = c.health()
        assert h["status"] == "degraded" and not h["log"]["writable"], h
        assert c.metric("yb_master_log_writable") == 0
        r = put(c, "refused", b"x" * 100)
        assert r.returncode != 0
        assert b"FILE_WRITE_FAIL" in r.stdout + r.stderr and b"metadata log" in r.stdout + r.stderr, r
        for k, v in values.items():
            got = c.yb(["get", k])
            assert got.returncode == 0 and got.stdout == v, k

        # The disk full to the last byte, and the master restarted on it: it comes up read-only, and
        # the node's remount (changing nothing recorded) is taken, so its replicas stay readable.
        c.stop_master()
        fill(small_disk, 0)
        c.start_master(extra=flags)
        assert c.http("/health").startswith("DEGRADED")
        wait_until(lambda: c.segment_names() == {"node-a"}, 10, "node-a to remount")
        time.sleep(c.client_ttl + 1)  # past the grace in which a restored segment must come back
        for k, v in values.items():
            got = c.yb(["get", k])
            assert got.returncode == 0 and got.stdout == v, k
        assert put(c, "refused", b"x" * 100).returncode != 0

        # Space returns: changes are taken again within 5 s, by itself.
        os.unlink(small_disk / "ballast")
        t0 = time.monotonic()
        wait_until(lambda: c.http("/health") == "OK\n", 5, "the master to take changes again")
        back = time.monotonic() - t0
        assert put(c, "after", b"y" * 100).returncode == 0
        assert c.metric("yb_master_log_writable") == 1
        assert c.metric("yb_master_log_failures_total") >= 1
        print(f"changes taken again {back:.1f} s after space returned")

        # Nothing acknowledged was lost: a restart on the mended disk has every object.
        c.stop_master()
        c.start_master(extra=flags)
        wait_until(lambda: c.segment_names() == {"node-a"}, 10, "node-a to remount")
        for k, v in list(values.items()) + [("after", b"y" * 100)]:
            got = c.yb(["get", k])
            assert got.returncode == 0 and got.stdout == v, k
        log = (tmp_path / "master.log").read_text()
        assert "refuses every change" in log and "writable again" in log
        assert "stopping" not in log
    finally:
        c.stop()


QUIET_READER = r"""
import sys
from yuebing import MooncakeDistributedStore, ReplicateConfig
s = MooncakeDistributedStore()
assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", sys.argv[1]) == 0
two = ReplicateConfig()
two.replica_num = 2
vals = {f"q{i}": bytes([i]) * 8192 for i in range(30)}
for k, v in vals.items():
    assert s.put(k, v, two) == 0, k
print("PUT", flush=True)
sys.stdin.readline()  # the test kills a holder meanwhile
sys.stderr.write("MARK\n")
sys.stderr.flush()
for _ in range(3):
    for k, v in vals.items():
        assert s.get(k) == v, k
print("OK", flush=True)
s.close()
"""


def test_a_library_caller_hears_once_of_a_holder_that_went_away(tmp_path):
    """A Python caller reads 30 objects three times over while one of the two nodes holding each is
    dead: every read succeeds from the other replica, and the caller's stderr gets one line about the
    dead node, not one per object (it used to get one per failed read)."""
    import sys
    c = Cluster(tmp_path)
    try:
        c.start_master()
        c.start_client("node-a", "16MB")
        c.start_client("node-b", "16MB")
        p = subprocess.Popen([sys.executable, "-c", QUIET_READER, c.address], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
        assert p.stdout.readline().strip() == "PUT"
        c.kill_client("node-b")
        out, err = p.communicate("go\n", timeout=120)
        assert p.returncode == 0 and "OK" in out, err[-3000:]
        after = err.split("MARK\n", 1)[1].splitlines()
        loud = [line for line in after if "[warning]" in line or "[error]" in line]
        assert len(loud) <= 1, "\n".join(loud)
    finally:
        c.stop()
