"""Why a read missed: `yb why`, the Python get_miss_reason, a Get's error and /metrics say it for a
key removed, never written, lost with a node, or whose Put was refused (docs/operations.md, "Why
a key is missing")."""
import os
import subprocess

from conftest import BIN, wait_until

WHY_FROM_PYTHON = r"""
import json, sys
from yuebing import MooncakeDistributedStore
store = MooncakeDistributedStore()
assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 4 << 20, "tcp", "", sys.argv[1]) == 0
print(json.dumps({k: store.get_miss_reason(k) for k in sys.argv[2:]}))
"""


def why(cluster, key):
    r = cluster.yb(["why", key], check=True)
    return r.stdout.decode().strip()


def misses(cluster, call, reason):
    label = f'yb_master_misses_total{{call="{call}",reason="{reason}"}} '
    for line in cluster.http("/metrics").splitlines():
        if line.startswith(label):
            return float(line.split()[1])
    return None


def test_a_miss_says_why(cluster):
    cluster.start_master(extra=["--client_grace_sec", "1"])
    cluster.start_client("a", "16MB")
    for i in range(3):
        assert cluster.yb(["put", f"on-a{i}", "--value", "x" * 100], check=True).returncode == 0
    cluster.start_client("b", "16MB")
    cluster.yb(["put", "gone", "--value", "v"], check=True)
    cluster.yb(["remove", "gone", "--force"], check=True)

    assert why(cluster, "gone").startswith("gone: removed "), why(cluster, "gone")
    assert why(cluster, "gone").endswith("(removed)")
    assert why(cluster, "never") == "never: never written, as far as the master remembers (not_remembered)"

    # A Get says why too, and is counted by reason; so is an exist probe.
    r = cluster.yb(["get", "gone"])
    assert r.returncode == 1 and b"removed" in r.stderr, r.stderr
    assert cluster.yb(["exist", "never"], check=True).stdout == b"0\n"
    assert misses(cluster, "get", "removed") == 1
    assert misses(cluster, "exist", "not_remembered") == 1

    # A Put larger than any segment is refused, and the key's reason is the refusal.
    big = cluster.yb(["put", "big", "--file", "/dev/stdin"], input_bytes=b"z" * (24 << 20))
    assert big.returncode == 1, big.stderr
    assert why(cluster, "big").endswith("(refused_no_space)"), (why(cluster, "big"), big.stderr)
    assert 'yb_master_puts_refused_total{reason="refused_no_space"} 1' in cluster.http("/metrics")

    # The node holding the only replicas is killed: once the master drops its segment, the keys
    # say they went with it.
    cluster.kill_client("a")
    wait_until(lambda: "node_lost" in why(cluster, "on-a0"), 20, "the master to drop the killed node's keys")
    assert all("node_lost" in why(cluster, f"on-a{i}") for i in range(3))
    log = (cluster.tmp / "master.log").read_text()
    assert "lost their last replica" in log

    # The same answers from Python, as a caller sees them.
    env = dict(os.environ)
    out = subprocess.run(["/usr/bin/python3", "-c", WHY_FROM_PYTHON, cluster.address, "gone", "never", "on-a1"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    import json
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["gone"]["ret"] == 0 and got["gone"]["reason"] == "removed" and got["gone"]["age_ms"] >= 0
    assert got["never"]["reason"] == "not_remembered" and got["never"]["age_ms"] == -1
    assert got["on-a1"]["reason"] == "node_lost"
    assert got["on-a1"]["message"].startswith("dropped with the node that held it")
