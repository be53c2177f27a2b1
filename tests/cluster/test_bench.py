"""yb-bench cannot break silently (issue 35, item 5): a short run of every case through
bench/cluster_bench.sh, as its users run it, exits 0 with a figure in every case; with a shared
secret every case authenticates as a client does (the event-loop cases, which cannot, say they were
skipped); and a run whose calls fail exits 1 naming them."""
import json
import os
import socket
import subprocess

import pytest

from conftest import BIN, free_port

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BENCH = os.path.join(BIN, "yb-bench")
BUILD = os.path.realpath(os.path.join(BIN, ".."))

pytestmark = [pytest.mark.plain_only,  # the sanitizer builds leave it out (conftest.py)
              pytest.mark.skipif(not os.path.exists(BENCH), reason="yb-bench is not built (YB_BUILD_BENCH=OFF)")]


def port_block(width=10):
    """A base port with `width` free ports from it (cluster_bench.sh uses base .. base + 9)."""
    for _ in range(50):
        base = free_port()
        try:
            for p in range(base, base + width):
                with socket.socket() as s:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
    raise RuntimeError("no block of free ports")


def run_bench(extra_env, args):
    env = dict(os.environ, YB_BENCH_PORT=str(port_block()), YB_BENCH_SEGMENT="1GB", **extra_env)
    p = subprocess.run([os.path.join(ROOT, "bench", "cluster_bench.sh"), BUILD, "--skip_iperf", "--seconds", "0.2"]
                       + args, env=env, capture_output=True, timeout=600)
    assert p.stdout, p.stderr.decode(errors="replace")[-3000:]
    return p.returncode, json.loads(p.stdout), p.stderr.decode(errors="replace")


def rates(tree, path=""):
    """Every ops/s and GB/s figure in the JSON, by path."""
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from rates(v, f"{path}/{k}")
    elif isinstance(tree, list):
        for i, v in enumerate(tree):
            yield from rates(v, f"{path}/{i}")
    elif isinstance(tree, (int, float)) and not isinstance(tree, bool) and ("ops_per_s" in path or path.endswith("GBps")):
        yield path, tree


def test_every_case_measures_something():
    fake = os.path.join(BUILD, "fake_cuda")
    rc, out, err = run_bench({"LD_LIBRARY_PATH": fake}, ["--value_sizes", "4096,1MB", "--device_memory",
                                                        "--device_value_sizes", "1MB", "--session_layers", "4"])
    assert rc == 0 and "failures" not in out, (out.get("failures"), err[-2000:])
    meta = out["master_rpc_ops_per_s"]
    for op in ("ExistKey", "GetReplicaList", "PutStart+PutEnd"):
        assert meta[op]["16_conns_1_in_flight_each_event_loop"] > 0  # the callers carry the identity token
    # Where each case's time went: the master's CPU per pair, measured beside it (--cpu_of).
    cpu = out["cpu_us_per_op"]["PutStart+PutEnd"]["1_conn_1_in_flight"]
    assert cpu["master"] > 0 and "storage" in cpu, cpu
    assert len(out["put_get_over_tcp"]) == 4 and "error" not in out["device_memory_vs_host"][0]
    assert out["session_load_vs_batch_gets"]["session_GBps"] > 0
    figures = dict(rates(out))
    assert len(figures) > 40 and all(v > 0 for v in figures.values()), figures


def test_with_a_secret_every_case_authenticates():
    rc, out, err = run_bench({"YB_BENCH_SECRET": "1", "YB_BENCH_DUMMY": "1"}, ["--value_sizes", "65536"])
    assert rc == 0 and "failures" not in out, (out.get("failures"), err[-2000:])
    meta = out["master_rpc_ops_per_s"]
    assert meta["event_loop_cases"].startswith("skipped")
    assert all("event_loop" not in case for op in meta.values() if isinstance(op, dict) for case in op)
    assert meta["PutStart+PutEnd"]["1_conn_1_in_flight"] > 0
    assert out["put_get_over_tcp"][0]["get"]["ops_per_s"] > 0


def test_failing_calls_exit_1_and_are_named(tmp_path):
    port = free_port()
    master = subprocess.Popen([f"{BIN}/yb-master", "--rpc_address", "127.0.0.1", "--rpc_port", str(port),
                               "--metrics_port", "0", "--metadata_dir", ""], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        # No yb-client mounted: every put fails.
        p = subprocess.run([BENCH, "--master", f"127.0.0.1:{port}", "--skip_iperf", "--skip_meta", "--seconds", "0.1",
                            "--value_sizes", "4096"], capture_output=True, timeout=120)
        assert p.returncode == 1, p.stderr.decode(errors="replace")[-2000:]
        failures = json.loads(p.stdout)["failures"]
        assert any("put of 4096 bytes" in f and "NO_AVAILABLE_HANDLE" in f for f in failures), failures
        assert any(f.endswith("ops_per_s: measured 0") for f in failures), failures
    finally:
        master.kill()
        master.wait(10)
