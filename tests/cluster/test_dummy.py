"""Dummy clients (issue 34, items 3 and 5): application processes set up with setup_dummy reach the
yb-client of their host through its Unix sockets only, and every call is served by it; their
buffers from MooncakeHostMemAllocator are moved into by the real client directly. Eight of them at
once; one killed -9 mid-transfer; the real client killed and started again; SGLang's standalone
storage mode replayed; the paged-attention example with two engines as dummies of one yb-client."""
import contextlib
import ctypes
import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

yuebing = pytest.importorskip("yuebing")
from yuebing import MooncakeDistributedStore, MooncakeHostMemAllocator  # noqa: E402
from conftest import client_metrics, free_port, wait_until  # noqa: E402
from test_same_host import exercise, views  # noqa: E402

HERE = os.path.dirname(__file__)
# `mooncake.store` (the shim beside the package in a build tree; pip installs it with the opt-in):
# on the path of the processes these tests start, and of this one only within `mooncake_store()`.
SHIM = os.path.join(os.path.dirname(os.path.dirname(yuebing.__file__)), "shim")
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in [os.environ.get("PYTHONPATH", ""), SHIM] if p))


@contextlib.contextmanager
def mooncake_store():
    """`mooncake.store`, imported through the shim and forgotten afterwards (other tests import a
    `mooncake` package of their own making)."""
    sys.path.insert(0, SHIM)
    try:
        import mooncake.store
        yield mooncake.store
    finally:
        sys.path.remove(SHIM)
        for name in [m for m in sys.modules if m == "mooncake" or m.startswith("mooncake.")]:
            del sys.modules[name]
WORKER = os.path.join(HERE, "dummy_worker.py")
ENGINE = os.path.join(HERE, "..", "..", "examples", "paged_attention", "engine.py")


def value(n, seed):
    return bytes((i * 131 + seed) % 251 for i in range(min(n, 4096))) * (n // 4096) + \
        bytes((i * 131 + seed) % 251 for i in range(n % 4096))


def real_client(cluster, name="node", size="128MB", extra=(), port=None):
    """A yb-client on a fixed port (what dummies are told), with /metrics; (port, http port)."""
    port, http = port or free_port(), free_port()
    cluster.start_client(name, size=size, port=port, extra=["--metrics_port", str(http)] + list(extra))
    wait_until(lambda: client_metrics(http).get("yb_client_segments") == 1, 10, f"{name}'s /metrics")
    wait_until(lambda: serves_dummies(port), 10, f"{name} to serve dummies")  # it starts after /metrics
    return port, http


def serves_dummies(port):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(f"\0yuebing-dummy:{port}")
            return True
        except OSError:
            return False


def dummy(port, local_buffer=16 << 20):
    s = MooncakeDistributedStore()
    assert s.setup_dummy(0, local_buffer, f"127.0.0.1:{port}") == 0
    return s


@pytest.fixture
def worker():
    """Starts dummy_worker.py processes; each is killed after the test, whatever its outcome."""
    started = []

    def start(mode, port, *args, **kw):
        p = subprocess.Popen([sys.executable, WORKER, mode, f"127.0.0.1:{port}"] + [str(a) for a in args],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, **kw)
        started.append(p)
        return p

    yield start
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait(10)


@pytest.mark.parametrize("shared,secret", [(True, False), (True, True), (False, False)],
                         ids=["segments-mapped", "segments-mapped-under-a-secret", "relay-only"])
def test_every_call_of_a_dummy_is_served_by_its_real_client(cluster, shared, secret):
    """The real client shares its segment: the dummy maps it and moves those bytes itself (with a
    secret, proving the data-plane key its real client gave it); or it does not
    (--same_host_transfers false): it moves every byte for the dummy."""
    auth = []
    if secret:
        path = cluster.tmp / "secret"
        path.write_text("cluster-secret-for-the-dummy-tests-0123456789")
        path.chmod(0o600)
        auth = ["--auth_secret_file", str(path)]
    cluster.start_master(extra=auth)
    port, http = real_client(cluster, extra=auth + ([] if shared else ["--same_host_transfers", "false"]))
    s = dummy(port)
    try:
        assert "/dummy-" in s.get_hostname()
        moved = exercise(s)  # single, batch, zero-copy, multi-buffer and range calls, every byte checked
        # get_buffer: the real client's memory itself where the dummy maps it, else a copy.
        assert views(s) == shared
        moved += 0 if shared else 3 << 20
        # Straight into memory the real client maps: batch_put_from / batch_get_into, no staging.
        alloc = MooncakeHostMemAllocator()
        n = 1 << 20
        p = alloc.alloc(3 * n)
        assert p != 0 and s.register_buffer(p, 3 * n) == 0
        ctypes.memmove(p, value(n, 3), n)
        ctypes.memmove(p + n, value(n, 4), n)
        assert s.batch_put_from(["z0", "z1"], [p, p + n], [n, n]) == [0, 0]
        assert s.batch_get_into(["z1"], [p + 2 * n], [n]) == [n]
        assert ctypes.string_at(p + 2 * n, n) == value(n, 4)
        assert s.get("z0") == value(n, 3)
        torch = pytest.importorskip("torch")
        t = torch.arange(4096, dtype=torch.float32)
        assert s.put_tensor("t", t) == 0 and torch.equal(s.get_tensor("t"), t)
        assert s.remove("z0", True) == 0 and s.is_exist("z0") == 0
        assert s.unregister_buffer(p) == 0 and alloc.free(p) == 0 and alloc.free(p) != 0
    finally:
        assert s.close() == 0
    m = client_metrics(http)
    if shared:
        assert m["yb_client_same_host_given_total"] >= 1
        assert m["yb_client_dummy_relayed_bytes_total"] == 0
    else:
        assert m["yb_client_same_host_given_total"] == 0
        assert m["yb_client_dummy_relayed_bytes_total"] >= moved + 4 * n
    # The real client's transfer server served none of it: no byte crossed TCP.
    assert m["yb_client_served_written_bytes_total"] + m["yb_client_served_read_bytes_total"] == 0
    wait_until(lambda: client_metrics(http)["yb_client_dummies"] == 0, 10, "the dummy to be gone")
    assert client_metrics(http)["yb_client_dummy_regions"] == 0


def test_a_dummy_opens_no_network_connection_of_its_own(cluster, worker):
    cluster.start_master()
    port, _ = real_client(cluster)
    p = worker("sockets", port)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 0, out + err
    assert "tcp 0" in out


def test_a_dummy_without_its_real_client_is_told_where_to_start_one(cluster):
    s = MooncakeDistributedStore()
    t0 = time.monotonic()
    assert s.setup_dummy(0, 16 << 20, f"127.0.0.1:{free_port()}") != 0
    assert time.monotonic() - t0 < 15  # waited for one still starting (MC_RPC_TIMEOUT_MS), then said so
    assert s.setup_dummy(0, 16 << 20, "no-port") != 0


def test_a_dummy_started_before_its_real_client_serves_waits_for_it(cluster):
    """An engine started beside the node's daemon, which opens its dummy sockets only once its
    memory is mounted: setup_dummy waits for them (up to the call deadline) instead of failing."""
    cluster.start_master()
    port = free_port()
    dummy_started = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from yuebing import MooncakeDistributedStore as S; s = S(); "
         f"sys.exit(0 if s.setup_dummy(0, 16 << 20, '127.0.0.1:{port}') == 0 and s.put('k', b'v') == 0 "
         "and s.get('k') == b'v' and s.close() == 0 else 1)"],
        env=ENV)
    time.sleep(0.5)  # the engine is waiting when the daemon starts
    real_client(cluster, port=port)
    assert dummy_started.wait(30) == 0


def test_eight_dummies_of_one_real_client_with_mixed_calls(cluster, worker):
    cluster.start_master()
    port, http = real_client(cluster, size="256MB")
    s = dummy(port)
    assert s.put("shared", value(1 << 20, 99)) == 0
    procs = [worker("mixed", port, i) for i in range(8)]
    for i, p in enumerate(procs):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, f"worker {i}: {out}\n{err[-3000:]}"
    for i in range(8):  # what each wrote, read by another process
        assert s.get(f"w{i}-r2-3") == value(4096 * 4 + i + 1, i + 3)
    assert s.close() == 0
    wait_until(lambda: client_metrics(http)["yb_client_dummies"] == 0, 10, "every dummy to be gone")


@pytest.mark.parametrize("shared", [True, False], ids=["segments-mapped", "relay-only"])
def test_a_dummy_killed_mid_transfer_leaves_the_real_client_and_the_pool_consistent(cluster, shared, worker):
    cluster.start_master()
    port, http = real_client(cluster, extra=[] if shared else ["--same_host_transfers", "false"])
    p = worker("loop", port)
    assert p.stdout.readline().strip() == "ready"
    for _ in range(10):  # rounds of 4 MiB upserts and gets, then killed in the middle of one
        assert p.stdout.readline().strip()
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    # Its memory is unmapped, its connection gone.
    wait_until(lambda: client_metrics(http)["yb_client_dummies"] == 0, 10, "the killed dummy's connection to end")
    assert client_metrics(http)["yb_client_dummy_regions"] == 0
    # Its unfinished upserts are taken over once the master declares it dead (client_ttl), not 30 s
    # later (put_start_discard_timeout): another dummy writes the same keys and reads them back whole.
    s = dummy(port)
    try:
        n = 4 << 20
        codes = []

        def rewrites():
            codes[:] = [s.upsert(f"hot-{i}", value(n, 40 + i)) for i in range(4)]
            return codes == [0] * 4
        wait_until(rewrites, 15, f"the killed dummy's keys to be writable again (upserts answer {codes})")
        for i in range(4):
            assert s.get(f"hot-{i}") == value(n, 40 + i)
    finally:
        assert s.close() == 0


def waiting_dummy(worker, port):
    """A dummy_worker.py in "wait" mode and the function that sends it one call ("put|get|view|held
    KEY SIZE") and returns its code."""
    p = worker("wait", port, stdin=subprocess.PIPE)
    assert p.stdout.readline().strip() == "ready"

    def call(line):
        p.stdin.write(line + "\n")
        p.stdin.flush()
        return int(p.stdout.readline())

    return p, call


def test_dummies_get_clear_errors_while_their_real_client_is_gone_and_recover_when_it_returns(cluster, worker):
    cluster.start_master()
    port, http = real_client(cluster)
    p, call = waiting_dummy(worker, port)
    assert call("put before 300000") == 0
    assert call("view before 300000") == 1  # get_buffer: the real client's memory itself, kept
    cluster.kill_client("node")
    t0 = time.monotonic()
    assert call("put during 300000") < 0  # a negative code, in bounded time, the dummy alive
    assert call("get before 300000") < 0  # its cached location too: the holder is gone
    assert time.monotonic() - t0 < 30
    assert call("held before 300000") == 0  # the view kept: the dead process's pages, still mapped here
    cluster.start_client("node", size="128MB", port=port, extra=["--metrics_port", str(http)])
    wait_until(lambda: call("put after 300000") == 0, 20, "the dummy to work again")
    assert call("get after 300000") == 0
    p.stdin.close()
    assert p.wait(30) == 0


def test_dummies_of_a_real_client_paused_past_every_timeout_fail_in_bounded_time_and_recover(cluster, worker):
    """The real client paused (SIGSTOP: its sockets still accept, nothing answers) for longer than the
    master's client_ttl: a dummy's calls fail with an error within their deadlines instead of
    hanging, the dummy lives, and once the real client is continued within the grace (it mounts
    its memory again on the master) the same dummy's calls work again and what was stored before
    reads back."""
    cluster.start_master(extra=["--client_grace_sec", "60"])  # client_ttl 2 s; dead, it is awaited a minute
    port, http = real_client(cluster)
    p, call = waiting_dummy(worker, port)
    assert call("put before 300000") == 0
    cluster.clients["node"].send_signal(signal.SIGSTOP)
    pid = cluster.clients["node"].pid

    def stopped():  # every thread of it: a signal stops a busy process's threads one by one
        tasks = os.listdir(f"/proc/{pid}/task")
        return all(open(f"/proc/{pid}/task/{t}/stat").read().rsplit(")", 1)[1].split()[0] == "T" for t in tasks)
    try:
        wait_until(stopped, 10, "the real client to stop")
        t0 = time.monotonic()
        assert call("put during 300000") < 0
        # A cached location may still reach the paused process's pages (mapped here): the bytes or
        # a clear failure, never other bytes.
        assert call("get before 300000") in (0, -1)
        assert time.monotonic() - t0 < 60
        time.sleep(cluster.client_ttl + 1)  # past client_ttl: the master declares the paused client dead
    finally:
        cluster.clients["node"].send_signal(signal.SIGCONT)
    wait_until(lambda: call("put after 300000") == 0, 30, "the dummy to work again")
    assert call("get after 300000") == 0
    assert call("get before 300000") == 0  # kept through the pause: the same memory came back
    p.stdin.close()
    assert p.wait(30) == 0


def test_sglang_standalone_storage_replay(cluster):
    """SGLang's MooncakeStore with standalone_storage: its host KV pool from
    MooncakeHostMemAllocator (via mooncake.store), setup_dummy, the warm-up, register_buffer of the
    pool, then pages saved with batch_put_from and loaded with batch_get_into by pointer."""
    torch = pytest.importorskip("torch")
    with mooncake_store() as mc:
        sglang_replay(cluster, torch, mc.MooncakeDistributedStore, mc.MooncakeHostMemAllocator)


def sglang_replay(cluster, torch, MDS, Alloc):
    cluster.start_master()
    port, http = real_client(cluster, size="256MB")
    pages, page_bytes = 64, 64 << 10
    allocator = Alloc()
    size = pages * page_bytes
    ptr = allocator.alloc(size)
    kv = torch.frombuffer((ctypes.c_byte * size).from_address(ptr), dtype=torch.uint8, count=size)
    kv = kv.view(torch.bfloat16).view(pages, page_bytes // 2)
    kv.copy_(torch.randn(pages, page_bytes // 2).to(torch.bfloat16))
    expect = kv.clone()
    store = MDS()
    assert store.setup_dummy(size, 16 << 20, f"127.0.0.1:{port}") == 0
    warm = "sglang_mooncake_store_warmup_key" + os.urandom(8).hex()
    assert store.put(warm, bytes(4096)) == 0 and store.is_exist(warm) == 1 and store.get(warm) == bytes(4096)
    assert store.register_buffer(kv.data_ptr(), size) == 0
    keys = [f"model_{i:04x}_0_k" for i in range(pages)]
    ptrs = [kv.data_ptr() + i * page_bytes for i in range(pages)]
    assert store.batch_put_from(keys, ptrs, [page_bytes] * pages) == [0] * pages
    assert store.batch_is_exist(keys) == [1] * pages
    kv.zero_()
    assert store.batch_get_into(keys, ptrs, [page_bytes] * pages) == [page_bytes] * pages
    assert torch.equal(kv, expect)
    assert store.close() == 0
    m = client_metrics(http)
    assert m["yb_client_served_written_bytes_total"] + m["yb_client_served_read_bytes_total"] == 0


def run_engine(port, seed):
    r = subprocess.run([sys.executable, ENGINE, "--real-client", f"127.0.0.1:{port}", "--prompt-seed", str(seed)],
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_the_paged_attention_example_with_two_engines_as_dummies_of_one_real_client(cluster):
    cluster.start_master()
    port, http = real_client(cluster)
    run = functools.partial(run_engine, port)
    a = run(1)
    assert a["hit_blocks"] == 0 and a["saved_blocks"] == 32 and a["exact_match"]
    b = run(2)
    assert b["hit_blocks"] == 16 and b["saved_blocks"] == 16 and b["exact_match"]
    m = client_metrics(http)
    assert m["yb_client_served_written_bytes_total"] + m["yb_client_served_read_bytes_total"] == 0
