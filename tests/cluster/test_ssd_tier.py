"""The SSD tier across processes: yb-client daemons with --enable_offload, a yb-master that queues
offloads, and a caller (the Python package, no segment of its own) reading LOCAL_DISK replicas
through the owner's transfer server."""
import os
import time

import pytest

from conftest import client_metrics, free_port, small_tmpfs, wait_until

yuebing = pytest.importorskip("yuebing")
from yuebing import MooncakeDistributedStore  # noqa: E402

KB = 1 << 10


def value(n, seed):
    return bytes((i * 131 + seed) & 0xFF for i in range(n))


def ssd_client(cluster, name, root, size="4MB", extra=()):
    cluster.start_client(name, size=size, extra=["--enable_offload", "true", "--storage_root_dir", str(root),
                                                 "--prefault", "false"] + list(extra))


def caller(cluster):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.address) == 0
    return s


def kinds(store, key):
    return sorted(d.kind for d in store.get_replica_desc(key))


def test_eager_offload_then_eviction_serves_disk_hits_to_another_process(cluster, tmp_path):
    cluster.start_master(extra=["--enable_offload", "true"])
    http = free_port()
    ssd_client(cluster, "node-a", tmp_path / "ssd-a", extra=["--metrics_port", str(http)])
    s = caller(cluster)
    vals = {f"k{i}": value(256 * KB, i) for i in range(24)}
    for i in range(12):  # 3 MB: under the 90% watermark of the 4 MB segment
        assert s.put(f"k{i}", vals[f"k{i}"]) == 0
    wait_until(lambda: cluster.metric("yb_master_offloaded_total") == 12, 10, "12 objects offloaded")
    assert kinds(s, "k11") == ["LOCAL_DISK", "MEMORY"]  # (a lookup is a read: k11 is now recent)
    for i in range(12, 24):  # past the watermark: eviction frees DRAM copies that are on disk
        assert s.put(f"k{i}", vals[f"k{i}"]) == 0
    wait_until(lambda: cluster.metric("yb_master_evicted_objects_total") > 0, 10, "eviction")
    assert kinds(s, "k0") == ["LOCAL_DISK"]
    # Counted before the reads: eviction may still be running, and what it moves to disk while
    # they run was read from DRAM (counted after, a slow run found 11 on disk and 8 disk reads).
    on_disk_only = sum(kinds(s, k) == ["LOCAL_DISK"] for k in vals)
    assert s.get_offload_rpc_read_count() == 0
    for k, v in vals.items():  # every object is a hit: from DRAM, or from node-a's SSD over TCP
        assert s.get(k) == v, k
    assert s.get_offload_rpc_read_count() >= on_disk_only  # Mooncake's count of reads from an SSD tier
    assert s.close() == 0
    m = client_metrics(http)  # node-a's own account of it
    assert m["yb_client_offloaded_total"] >= 12 and m["yb_client_offload_failures_total"] == 0
    assert m["yb_client_disk_objects"] >= 12 and m["yb_client_disk_bytes"] >= 12 * 256 * KB
    assert m["yb_client_disk_buckets"] >= 1 and m["yb_client_disk_limit_bytes"] > 0
    assert m["yb_client_served_disk_reads_total"] >= on_disk_only > 0
    assert m["yb_client_served_disk_read_bytes_total"] == m["yb_client_served_disk_reads_total"] * 256 * KB


def test_eviction_offloads_instead_of_dropping(cluster, tmp_path):
    cluster.start_master(extra=["--offload_on_evict", "true"])
    ssd_client(cluster, "node-a", tmp_path / "ssd-a")
    s = caller(cluster)
    vals = {f"k{i}": value(256 * KB, i + 50) for i in range(40)}  # 10 MB through a 4 MB segment
    for k, v in vals.items():
        # A full pool answers NO_AVAILABLE_HANDLE until the offloads free memory: retry, as vLLM does.
        wait_until(lambda: s.put(k, v) == 0, 20, f"put {k}")
    wait_until(lambda: cluster.metric("yb_master_offloaded_on_evict_total") > 0, 10, "offload on evict")
    assert cluster.metric("yb_master_keys") == 40  # nothing was dropped
    for k, v in vals.items():
        assert s.get(k) == v, k
    assert s.close() == 0


def test_kill9_during_offload_leaves_no_torn_object_and_restart_serves_the_rest(cluster, tmp_path):
    cluster.start_master(extra=["--enable_offload", "true"])
    root = tmp_path / "ssd-a"
    ssd_client(cluster, "node-a", root, size="64MB")  # one 4 MB bucket per round of 64 objects
    s = caller(cluster)
    vals = {f"k{i}": value(64 * KB, i) for i in range(400)}
    assert s.put_batch(list(vals), list(vals.values())) == 0
    while (cluster.metric("yb_master_offloaded_total") or 0) < 64:  # no sleep: kill while it writes
        pass
    cluster.kill_client("node-a")
    offloaded_before = cluster.metric("yb_master_offloaded_total")
    ssd_client(cluster, "node-a", root, size="64MB")  # same directory: recovers and registers
    wait_until(lambda: cluster.metric("yb_master_disk_replicas_registered_total") is not None and
               cluster.metric("yb_master_disk_replicas_registered_total") > 0, 10, "disk objects registered")
    assert not [p for p in os.listdir(root) if p.endswith(".tmp")]  # interrupted buckets are gone
    # Once the dead client is dropped, what survives is exactly what reached the SSD tier intact.
    wait_until(lambda: len(cluster.segments()) == 1, cluster.client_ttl + 5, "the dead client to be dropped")
    time.sleep(cluster.client_ttl + 1)  # its segment suspended for the grace (another client_ttl), then gone
    present = [k for k in vals if s.is_exist(k) == 1]
    assert len(present) >= offloaded_before > 0
    for k in present:
        assert s.get(k) == vals[k], k
    assert s.close() == 0


def test_master_restart_keeps_the_ssd_contents_and_the_memory_copies(cluster, tmp_path):
    """The master's index survives its restart: each object comes back with its MEMORY replica
    (node-a kept its memory) and its LOCAL_DISK one, readable once node-a has re-mounted; node-a
    registering its disk objects again changes nothing."""
    cluster.start_master(extra=["--enable_offload", "true"])
    ssd_client(cluster, "node-a", tmp_path / "ssd-a")
    s = caller(cluster)
    vals = {f"k{i}": value(100 * KB, i) for i in range(10)}
    for k, v in vals.items():
        assert s.put(k, v) == 0
    wait_until(lambda: cluster.metric("yb_master_offloaded_total") == 10, 10, "offloads")
    assert s.close() == 0
    cluster.stop_master()
    cluster.start_master(extra=["--enable_offload", "true"])
    s = caller(cluster)
    assert s.is_exist("k9") == 1  # known at once: the index was replayed
    wait_until(lambda: s.get("k9") == vals["k9"], 10, "node-a to re-mount")
    wait_until(lambda: cluster.metric("yb_master_disk_replicas_registered_total") == 0 and
               all(kinds(s, k) == ["LOCAL_DISK", "MEMORY"] for k in vals), 10, "both replicas of every object")
    for k, v in vals.items():
        assert s.get(k) == v, k
    assert s.close() == 0


def test_removed_and_replaced_keys_stay_so_after_restarts(cluster, tmp_path):
    """A removed key's disk copy is dropped by its owner: neither a restart of the owner nor one of
    the master brings the old value back (before, both did). A key removed while its owner is dead
    stays removed when the owner returns: the master refuses the copy it remembers, and the owner
    drops it for good."""
    cluster.start_master(extra=["--enable_offload", "true"])
    root = tmp_path / "ssd-a"
    ssd_client(cluster, "node-a", root)
    s = caller(cluster)
    vals = {f"k{i}": value(100 * KB, i) for i in range(4)}
    for k, v in vals.items():
        assert s.put(k, v) == 0
    wait_until(lambda: cluster.metric("yb_master_offloaded_total") == 4, 10, "offloads")
    assert s.remove("k0") == 0
    assert s.remove("k1") == 0
    vals["k1"] = value(100 * KB, 99)  # the same size, another value
    assert s.put("k1", vals["k1"]) == 0
    wait_until(lambda: cluster.metric("yb_master_offloaded_total") == 5, 10, "the new k1 offloaded")
    wait_until(lambda: cluster.metric("yb_master_offload_queued") == 0, 10, "the drops taken by node-a")
    assert s.close() == 0

    def check(s):
        assert s.is_exist("k0") == 0
        assert s.get("k1") == vals["k1"]
        assert s.is_exist("k2") == 0
        assert s.get("k3") == vals["k3"]

    cluster.kill_client("node-a")
    # Declared dead after client_ttl, its segments dropped after the grace (another client_ttl).
    wait_until(lambda: cluster.metric("yb_master_keys") == 0, 2 * cluster.client_ttl + 5,
               "the dead client's objects to go with it")
    assert cluster.segments() == []
    assert cluster.metric("yb_master_disk_away_copies") == 3  # but not their disk copies: k1, k2, k3
    s = caller(cluster)
    assert s.remove("k2") != 0  # not listed any more (OBJECT_NOT_FOUND), and removed all the same
    assert s.close() == 0
    ssd_client(cluster, "node-a", root)  # restarts on the same directory and registers what it holds
    wait_until(lambda: cluster.metric("yb_master_disk_replicas_registered_total") == 2, 10, "k1 and k3 registered")
    assert cluster.metric("yb_master_disk_away_copies") == 0
    s = caller(cluster)
    check(s)
    assert s.close() == 0
    cluster.stop_master()
    cluster.start_master(extra=["--enable_offload", "true"])  # replays its index
    s = caller(cluster)
    wait_until(lambda: s.get("k3") == vals["k3"], 10, "node-a to re-mount")
    check(s)
    assert s.close() == 0


@pytest.fixture
def tiny_disk(tmp_path):
    """A 1 MiB tmpfs: a disk that fills up. Needs root."""
    with small_tmpfs(tmp_path / "tiny", "1m") as d:
        yield d


def test_a_full_disk_keeps_the_dram_copies_pauses_offloading_and_resumes_when_space_returns(cluster, tiny_disk):
    """A 1 MiB disk, most of it taken by another file: offloads fail, the DRAM copies stay and serve,
    offloading pauses (one line in the log, a gauge), and once the other file goes new objects go
    down to the disk again by themselves."""
    cluster.start_master(extra=["--enable_offload", "true"])
    http = free_port()
    ssd_client(cluster, "node-a", tiny_disk, size="16MB", extra=["--metrics_port", str(http)])
    with open(tiny_disk / "ballast", "wb") as f:
        f.write(b"\0" * (900 * KB))  # what is left holds no 256 KiB object
    s = caller(cluster)
    # 768 KiB: none fits in what is left of the disk, and all of it once the other file goes.
    vals = {f"k{i}": value(256 * KB, i) for i in range(3)}
    for k, v in vals.items():
        assert s.put(k, v) == 0
    wait_until(lambda: (cluster.metric("yb_master_offload_failures_total") or 0) > 0, 10, "a failed offload")
    wait_until(lambda: client_metrics(http)["yb_client_disk_offload_paused"] == 1, 5, "offloading to pause")
    for k, v in vals.items():
        assert s.get(k) == v, k
    log = (cluster.tmp / "node-a.log").read_text()
    assert "No space left on device" in log
    assert log.count("offloading paused") == 1, log[-3000:]

    os.unlink(tiny_disk / "ballast")
    before = client_metrics(http)["yb_client_offloaded_total"]
    more = {f"m{i}": value(16 * KB, 100 + i) for i in range(4)}
    for k, v in more.items():
        assert s.put(k, v) == 0
    # At the pause's end the next round writes what is queued (nothing more is tried while the
    # disk has no more room than when it refused): it goes down by itself.
    wait_until(lambda: client_metrics(http)["yb_client_offloaded_total"] >= before + len(more), 15,
               "offloading to resume")
    assert "offloading resumes" in (cluster.tmp / "node-a.log").read_text()  # said once it wrote again
    for k, v in list(vals.items()) + list(more.items()):
        assert s.get(k) == v, k
    assert s.close() == 0
