"""Multi-process tests: a yb-master and yb-client daemons on 127.0.0.1, driven with the yb tool."""
import os
import signal
import socket
import struct
import subprocess
import time

import pytest

from conftest import BIN, Cluster, Hosts, client_http, client_metrics, daemon_name, free_port, hosts, wait_until


def value(n, seed):
    return bytes((i * 131 + seed) & 0xFF for i in range(n))


def put(c, key, data, replicas=1):
    r = c.yb(["put", key, "--value", ""] if not data else ["put", key, "--file", "/dev/stdin",
             "--replicas", str(replicas)], input_bytes=data)
    return r


def get(c, key):
    r = c.yb(["get", key])
    return r.returncode, r.stdout


# The second run pins the master's serving threads to CPUs (--rpc_pin_threads): connections are
# then dealt by the CPU that receives them, and every call must still be answered.
@pytest.mark.parametrize("master_flags", [[], ["--rpc_thread_num", "2", "--rpc_pin_threads"]],
                         ids=["default", "pinned"])
def test_put_with_two_replicas_then_read_from_another_client(cluster, master_flags):
    cluster.start_master(extra=master_flags)
    cluster.start_client("node-a")
    cluster.start_client("node-b")
    data = value(3 << 20, 7)
    assert put(cluster, "obj", data, replicas=2).returncode == 0
    rc, out = get(cluster, "obj")  # another process: another client
    assert rc == 0 and out == data
    segs = cluster.segments()
    assert {daemon_name(s["name"]) for s in segs} == {"node-a", "node-b"}
    for s in segs:  # named after the daemon and its transfer port, as Mooncake's P2PHANDSHAKE does
        assert s["name"].rsplit(":", 1)[1] == s["endpoint"].rsplit(":", 1)[1], s
    assert all(s["allocations"] == 1 for s in segs), segs  # one replica on each node
    pinned = "2 pinned to CPUs" in (cluster.tmp / "master.log").read_text()
    assert pinned == ("--rpc_pin_threads" in master_flags)


def test_kill9_replica_holder_then_ttl_unmount_then_remount(cluster):
    cluster.start_master()
    cluster.start_client("node-a")
    cluster.start_client("node-b")
    data = value(1 << 20, 3)
    assert put(cluster, "k", data, replicas=2).returncode == 0
    cluster.kill_client("node-a")
    rc, out = get(cluster, "k")  # the first replica may be the dead one: the client moves on
    assert rc == 0 and out == data
    wait_until(lambda: cluster.segment_names() == {"node-b"}, cluster.client_ttl + 5,
               "the master to unmount the dead client's segment")
    rc, out = get(cluster, "k")
    assert rc == 0 and out == data
    cluster.start_client("node-a")  # back: mounts again
    assert cluster.segment_names() == {"node-a", "node-b"}


def test_master_restart_clients_reconnect_and_remount(cluster):
    cluster.start_master()
    cluster.start_client("node-a")
    cluster.start_client("node-b")
    cluster.stop_master()
    cluster.start_master()
    wait_until(lambda: cluster.segment_names() == {"node-a", "node-b"}, 10, "clients to re-mount")
    data = value(100000, 1)
    assert put(cluster, "after-restart", data).returncode == 0
    assert get(cluster, "after-restart") == (0, data)


def test_errors_reach_the_tool_with_mooncake_codes(cluster):
    cluster.start_master()
    cluster.start_client("node-a")
    r = cluster.yb(["get", "missing"])
    assert r.returncode == 1 and b"-704" in r.stderr
    r = cluster.yb(["put", "huge", "--value", "x" * 10, "--replicas", "1"])
    assert r.returncode == 0
    r = cluster.yb(["exist", "huge"])
    assert r.stdout.strip() == b"1"
    r = cluster.yb(["remove", "huge"])
    assert r.returncode == 0
    r = cluster.yb(["remove", "huge"])
    assert r.returncode == 1 and b"-704" in r.stderr


def test_listing_segments_does_not_register_a_client(cluster):
    """`yb segments` asks the master for its list only: scripts that poll it (scripts/run.sh does)
    do not add a live client per call."""
    cluster.start_master()
    cluster.start_client("node-a")
    wait_until(lambda: cluster.metric("yb_master_live_clients") == 1, 10, "node-a registered")
    for _ in range(3):
        r = cluster.yb(["segments"])
        assert r.returncode == 0 and b"node-a" in r.stdout, r
    assert cluster.metric("yb_master_live_clients") == 1


def test_a_leaving_client_stops_counting_at_once(tmp_path):
    """A client that closes tells the master, which forgets it then rather than after client_ttl
    (60 s here): `yb` data commands (each a client while it runs) and a daemon stopped with SIGTERM."""
    c = Cluster(tmp_path, client_ttl=60)
    try:
        c.start_master()
        c.start_client("node-a")
        wait_until(lambda: c.metric("yb_master_live_clients") == 1, 10, "node-a registered")
        for args in (["put", "k", "--value", "v"], ["get", "k"], ["exist", "k"], ["remove", "k", "--force"]):
            r = c.yb(args)
            assert r.returncode == 0, (args, r)
            assert c.metric("yb_master_live_clients") == 1, args
        c.start_client("node-b")
        assert c.metric("yb_master_live_clients") == 2
        c.clients["node-b"].terminate()
        assert c.clients["node-b"].wait(10) == 0
        assert c.metric("yb_master_live_clients") == 1
        assert c.segment_names() == {"node-a"}
    finally:
        c.stop()


def test_c_api_program_against_the_cluster(cluster):
    """A Mooncake-style C program (store_c_header_check) does put/get/exist/size/remove over TCP."""
    import subprocess
    cluster.start_master()
    cluster.start_client("node-a")
    from conftest import BIN
    r = subprocess.run([f"{BIN}/store_c_header_check", cluster.address], capture_output=True, timeout=30)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert b"C API check passed" in r.stdout


def test_malformed_rpc_frames_are_refused_and_the_master_keeps_serving(cluster):
    cluster.start_master()
    cluster.start_client("node-a")
    for junk in (b"\x00" * 64, b"GET / HTTP/1.1\r\n\r\n", struct.pack("<IIBBHI", 0x50524259, 1 << 30, 1, 0, 1, 1)):
        with socket.create_connection(("127.0.0.1", cluster.rpc_port), timeout=5) as s:
            s.sendall(junk)
            assert s.recv(16) == b""  # closed by the server
    assert put(cluster, "still", b"alive").returncode == 0
    assert get(cluster, "still") == (0, b"alive")
    metrics = cluster.http("/metrics")
    assert 'yb_master_requests_total{op="PutStart"}' in metrics
    assert cluster.metric("yb_master_rpc_malformed_frames_total") == 3


def transfer_endpoint(cluster, name):
    for s in cluster.segments():
        if daemon_name(s["name"]) == name:
            host, port = s["endpoint"].rsplit(":", 1)
            return host, int(port), int(s["id"]), s["capacity"]
    raise AssertionError(name)


def transfer_request(op, seg, off, length, grant=b""):
    """A transfer request as src/transfer/tcp/wire.h lays it out: 32 bytes, then a 48-byte grant."""
    return struct.pack("<IB3xQQQ", 0x58544259, op, seg, off, length) + grant.ljust(48, b"\0")


def forged_grant(access, off, length):
    """A grant shaped like the master's (access, range, expiry an hour on) with a made-up mac."""
    import os
    import time
    return struct.pack("<B7xQQq", access, off, length, int(time.time() * 1000) + 3600_000) + os.urandom(16)


def test_transfers_without_a_grant_from_the_master_are_refused_and_the_data_stays(cluster):
    """Issue 22 item 3: a process that reaches a daemon's transfer port can neither read nor write
    its segment without a grant the master minted for that range: no grant, a forged one and one out
    of bounds are refused and counted, and the stored object stays intact."""
    cluster.start_master()
    http = free_port()
    cluster.start_client("node-a", size="8MB", extra=["--metrics_port", str(http)])
    wait_until(lambda: client_http(http, "/health")[0] == 200, 10, "the daemon's /health")
    data = value(50000, 9)
    assert put(cluster, "victim", data).returncode == 0
    host, port, seg, cap = transfer_endpoint(cluster, "node-a")
    refused = 0
    with socket.create_connection((host, port), timeout=5) as s:
        for off, length, grant in ((0, 4096, b""), (0, cap, forged_grant(1, 0, cap)), (cap - 10, 100, b""),
                                   (1 << 62, 8, forged_grant(1, 1 << 62, 8))):
            s.sendall(transfer_request(1, seg, off, length, grant))  # reads
            magic, code, n = struct.unpack("<IIQ", s.recv(16, socket.MSG_WAITALL))
            assert magic == 0x52544259 and code != 0 and n == 0
        refused += 2  # the out-of-bounds ones are refused for their bounds
    for grant in (b"", forged_grant(2, 0, cap)):  # writes over the whole segment: refused, the connection closed
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(transfer_request(2, seg, 0, 65536, grant) + b"\x66" * 65536)
            magic, code, n = struct.unpack("<IIQ", s.recv(16, socket.MSG_WAITALL))
            assert code != 0
        refused += 1
    assert get(cluster, "victim") == (0, data)
    assert client_metrics(http)["yb_client_transfer_refused_grants_total"] == refused
    assert client_metrics(http)["yb_client_transfer_refused_requests_total"] == refused + 2


def keepalive_timers(port):
    """Seconds left on the keepalive timer of each established connection to local `port`."""
    import re
    import subprocess
    out = subprocess.run(["ss", "-Htno", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, check=True).stdout.decode()
    scale = {"ms": 0.001, "sec": 1, "min": 60}
    return [float(n) * scale[unit]
            for n, unit in re.findall(r"timer:\(keepalive,(\d+(?:\.\d+)?)(ms|sec|min)", out)]


def test_a_client_daemon_reports_its_transfers_and_its_master_over_http(cluster):
    """yb-client --metrics_port: /metrics counts what its transfer server served, /health follows the
    master's answers to its heartbeats (503 while the master is down), and --transfer_keepalive_sec
    reaches the accepted connections."""
    cluster.start_master()
    http = free_port()
    # Not sharing its memory: the yb tool of this host would move the bytes by memcpy otherwise.
    cluster.start_client("node-a", size="32MB", extra=["--metrics_port", str(http), "--transfer_keepalive_sec", "30",
                                                       "--same_host_transfers", "false"])
    # The segment shows at the master a moment before the daemon's Connect returns and /health
    # reports on the client (a wide moment under a sanitizer).
    wait_until(lambda: client_http(http, "/health") == (200, "OK\n"), 10, "the daemon's /health to say OK")
    data = value(100000, 5)
    assert put(cluster, "served", data).returncode == 0
    assert get(cluster, "served") == (0, data)
    m = client_metrics(http)
    assert m["yb_client_master_reachable"] == 1
    assert m["yb_client_segments"] == 1 and m["yb_client_segment_bytes"] == 32 << 20
    assert m["yb_client_served_writes_total"] >= 1 and m["yb_client_served_written_bytes_total"] == len(data)
    assert m["yb_client_served_reads_total"] >= 1 and m["yb_client_served_read_bytes_total"] == len(data)
    assert m["yb_client_transfer_refused_requests_total"] == 0
    assert m["yb_client_remounts_total"] == 0 and m["yb_client_heartbeat_failures_total"] == 0

    host, port, _, _ = transfer_endpoint(cluster, "node-a")
    with socket.create_connection((host, port), timeout=5):
        wait_until(lambda: client_metrics(http)["yb_client_transfer_connections"] >= 1, 5, "the connection counted")
        timers = keepalive_timers(port)
        assert timers and all(t <= 15 for t in timers), timers  # probes after 15 s idle, not the default 60

    cluster.stop_master()
    wait_until(lambda: client_http(http, "/health")[0] == 503, 10, "/health to report the master gone")
    assert client_http(http, "/health")[1] == "master unreachable\n"
    m = client_metrics(http)
    assert m["yb_client_master_reachable"] == 0 and m["yb_client_heartbeat_failures_total"] >= 1
    cluster.start_master()
    wait_until(lambda: client_http(http, "/health")[0] == 200, 10, "/health to report the master back")
    wait_until(lambda: client_metrics(http)["yb_client_remounts_total"] == 1, 10, "the re-mount counted")
    log = (cluster.tmp / "node-a.log").read_text()
    assert "heartbeat to master" in log and "reachable again" in log


def test_a_client_daemon_answers_health_while_it_waits_for_its_master(tmp_path):
    c = Cluster(tmp_path)
    http = free_port()
    try:
        c.clients["node-a"] = c._spawn("node-a", [
            f"{BIN}/yb-client", "--host", "127.0.0.1", "--port", "0", "--master_server_address", c.address,
            "--global_segment_size", "16MB", "--metrics_port", str(http)])
        def waiting():
            try:
                return client_http(http, "/health") == (503, "waiting for the master\n")
            except OSError:
                return False
        wait_until(waiting, 10, "/health to answer before the master is up")
        assert client_metrics(http)["yb_client_master_reachable"] == 0
        c.start_master()
        wait_until(lambda: client_http(http, "/health")[0] == 200, 15, "the daemon to connect")
    finally:
        c.stop()


ADDR = {"ybt-m": Hosts.address(0), "ybt-a": Hosts.address(1), "ybt-b": Hosts.address(2)}


@pytest.fixture
def netns():
    """Three hosts in network namespaces ("ybt-m", "ybt-a", "ybt-b": netns[name] runs a command
    there) joined by a router; removed afterwards."""
    with hosts(["m", "a", "b"]) as h:
        yield h


def test_three_hosts_in_network_namespaces(tmp_path, netns):
    c = Cluster(tmp_path, master_host=ADDR["ybt-m"], protected_mode=False)
    try:
        c.start_master(prefix=netns["ybt-m"], bind=ADDR["ybt-m"])
        for ns, name in (("ybt-a", "host-a"), ("ybt-b", "host-b")):
            log = open(tmp_path / f"{name}.log", "ab")
            import subprocess
            c.clients[name] = subprocess.Popen(netns[ns] + [
                f"{os.environ.get('YB_BIN_DIR', '')}/yb-client" if os.environ.get("YB_BIN_DIR") else
                os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin", "yb-client"),
                "--host", ADDR[ns], "--port", "0", "--local_hostname", name,
                "--master_server_address", c.address, "--global_segment_size", "16MB",
                "--local_buffer_size", "4MB", "--protected_mode", "false"], stdout=log, stderr=subprocess.STDOUT)
        wait_until(lambda: c.segment_names(netns["ybt-a"]) == {"host-a", "host-b"}, 15, "both hosts to mount")
        data = value(2 << 20, 5)
        assert c.yb(["put", "x", "--file", "/dev/stdin", "--replicas", "2"], prefix=netns["ybt-a"],
                    input_bytes=data).returncode == 0
        r = c.yb(["get", "x"], prefix=netns["ybt-b"])
        assert r.returncode == 0 and r.stdout == data
    finally:
        c.stop()


def test_protected_mode_serves_this_host_at_its_own_address(tmp_path, netns):
    """Protected mode serves this host, not only its loopback: daemons started with defaults and
    named by the host's own address (as a name that resolves to it is) serve each other and local
    callers there; a caller on another host is refused with a message that says what to do."""
    host = ADDR["ybt-a"]
    c = Cluster(tmp_path, master_host=host)
    try:
        c.start_master(prefix=netns["ybt-a"], bind="0.0.0.0")
        for name in ("a1", "a2"):  # each named "10.231.7.2:<its transfer port>"
            c.clients[name] = c._spawn(name, [
                f"{BIN}/yb-client", "--host", "0.0.0.0", "--port", "0", "--local_hostname", host,
                "--master_server_address", c.address, "--global_segment_size", "16MB",
                "--local_buffer_size", "4MB"], netns["ybt-a"])
        wait_until(lambda: len(c.segments(netns["ybt-a"])) == 2, 15, "both daemons to mount")
        data = value(1 << 20, 9)
        assert c.yb(["put", "x", "--file", "/dev/stdin", "--replicas", "2"], prefix=netns["ybt-a"],
                    input_bytes=data).returncode == 0
        r = c.yb(["get", "x"], prefix=netns["ybt-a"])
        assert r.returncode == 0 and r.stdout == data
        far = c.yb(["segments"], prefix=netns["ybt-b"])
        assert far.returncode != 0 and b"protected mode" in far.stderr and b"--auth_secret_file" in far.stderr, far
    finally:
        c.stop()


def established_from(ns_prefix, port, peer):
    """Established TCP connections to local `port` from `peer`, as the kernel of that namespace sees them."""
    import subprocess
    out = subprocess.run(ns_prefix + ["ss", "-Htn", "state", "established", f"( sport = :{port} )"],
                         capture_output=True, check=True).stdout.decode()
    return sum(1 for line in out.splitlines() if line.split()[-1].rsplit(":", 1)[0] == peer)


def test_the_master_closes_the_connection_of_a_host_that_was_cut_off(tmp_path, netns):
    """A host cut off the network never sends a FIN: only keepalive lets the master close its connection.

    The master, with --rpc_keepalive_sec 4 (and a client TTL far longer, so nothing else acts), holds
    host-a's RPC connection; once host-a's link goes down, the connection is closed within seconds, and
    host-b, alive but as quiet, keeps its own.
    """
    c = Cluster(tmp_path, client_ttl=60, master_host=ADDR["ybt-m"], protected_mode=False)
    try:
        c.start_master(prefix=netns["ybt-m"], bind=ADDR["ybt-m"], extra=["--rpc_keepalive_sec", "4"])
        c.start_client("host-a", "16MB", prefix=netns["ybt-a"], host=ADDR["ybt-a"])
        c.start_client("host-b", "16MB", prefix=netns["ybt-b"], host=ADDR["ybt-b"])
        master = netns["ybt-m"]
        assert established_from(master, c.rpc_port, ADDR["ybt-a"]) >= 1
        netns.unplug("a")  # host-a's cable: packets dropped
        wait_until(lambda: established_from(master, c.rpc_port, ADDR["ybt-a"]) == 0, 20,
                   "the master to close the cut-off host's connection")
        assert established_from(master, c.rpc_port, ADDR["ybt-b"]) >= 1
        assert "host-b" in c.segment_names(netns["ybt-b"])
    finally:
        c.stop()


CUT_OFF_READER = r"""
import json, sys, time
from yuebing import MooncakeDistributedStore, ReplicateConfig
store = MooncakeDistributedStore()
assert store.setup(sys.argv[2], "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", sys.argv[1]) == 0
two = ReplicateConfig()
two.replica_num = 2
values = {f"cut/{i}": bytes([i]) * 65536 for i in range(20)}
for k, v in values.items():
    assert store.put(k, v, two) == 0
assert all(store.get(k) == v for k, v in values.items())  # connections to both hosts pooled
print("ready", flush=True)
sys.stdin.readline()
t0 = time.monotonic()
read = sum(store.get(k) == v for k, v in values.items())
print(json.dumps({"read": read, "seconds": time.monotonic() - t0}), flush=True)
"""


def test_reads_move_past_a_host_that_was_cut_off(tmp_path, netns):
    """A host cut off the network sends no reset, so nothing tells a reader it is gone.

    Twenty objects, each with a replica on host-a and on host-b; host-a's link goes down (and the
    master, with a long client TTL, keeps listing its replicas). The reader's first request to
    host-a fails once its bytes stay unacknowledged for 5 s (not after the 30 s I/O timeout), the
    endpoint is then not tried again for a pause (a connection attempt costs up to 3 s), and every
    read moves on to host-b: all twenty are read within seconds, where a wait per read would take
    minutes.
    """
    import json
    import subprocess
    c = Cluster(tmp_path, client_ttl=600, master_host=ADDR["ybt-m"], protected_mode=False)
    reader = None
    try:
        c.start_master(prefix=netns["ybt-m"], bind=ADDR["ybt-m"])
        c.start_client("host-a", "16MB", prefix=netns["ybt-a"], host=ADDR["ybt-a"])
        c.start_client("host-b", "16MB", prefix=netns["ybt-b"], host=ADDR["ybt-b"])
        reader = subprocess.Popen(netns["ybt-m"] + ["/usr/bin/python3", "-c", CUT_OFF_READER, c.address,
                                                     ADDR["ybt-m"]],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(tmp_path / "reader.log", "ab"),
                                  env=dict(os.environ))
        assert reader.stdout.readline().decode().strip() == "ready", (tmp_path / "reader.log").read_text()
        netns.unplug("a")  # host-a's cable: packets dropped
        reader.stdin.write(b"go\n")
        reader.stdin.flush()
        result = json.loads(reader.stdout.readline().decode())
        log = (tmp_path / "reader.log").read_text()
        assert result["read"] == 20, log
        assert result["seconds"] < 20, (result, log)
        assert "unreachable" in log or "timed out" in log, log
    finally:
        if reader and reader.poll() is None:
            reader.kill()
            reader.wait(10)
        c.stop()


MASTER_CUT_OFF_APP = r"""
import json, sys, time
from yuebing import MooncakeDistributedStore
store = MooncakeDistributedStore()
assert store.setup(sys.argv[2], "P2PHANDSHAKE", 16 << 20, 16 << 20, "tcp", "", sys.argv[1]) == 0
assert store.put("kept", b"v" * 4096) == 0 and store.is_exist("kept") == 1
print("ready", flush=True)
sys.stdin.readline()
t0 = time.monotonic()
answers = [store.is_exist("kept") for _ in range(20)]
print(json.dumps({"answers": answers, "seconds": time.monotonic() - t0}), flush=True)
sys.stdin.readline()
t0 = time.monotonic()
while store.is_exist("kept") != 1 and time.monotonic() - t0 < 30:
    time.sleep(0.1)
print(json.dumps({"back": store.is_exist("kept") == 1, "seconds": time.monotonic() - t0}), flush=True)
"""


def test_calls_fail_fast_once_the_master_is_cut_off_and_resume_when_it_returns(tmp_path, netns):
    """A master host cut off the network sends no reset: only the unacknowledged-data timeout
    (TCP_USER_TIMEOUT, 5 s) tells the client its connection is gone.

    Without it every call waits its 5 s deadline on the dead connection: twenty lookups take 100 s.
    With it the connection fails within seconds of the cut, and the calls after that fail at once
    between reconnection attempts. When the link returns, the client reconnects and the object (the
    master's client TTL is longer than the cut) is found again.
    """
    import json
    import subprocess
    c = Cluster(tmp_path, client_ttl=120, master_host=ADDR["ybt-m"], protected_mode=False)
    app = None
    try:
        c.start_master(prefix=netns["ybt-m"], bind=ADDR["ybt-m"])
        app = subprocess.Popen(netns["ybt-a"] + ["/usr/bin/python3", "-c", MASTER_CUT_OFF_APP, c.address, ADDR["ybt-a"]],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(tmp_path / "app.log", "ab"),
                               env=dict(os.environ))
        assert app.stdout.readline().decode().strip() == "ready", (tmp_path / "app.log").read_text()
        netns.unplug("m")  # the master's cable: packets dropped
        app.stdin.write(b"go\n")
        app.stdin.flush()
        cut = json.loads(app.stdout.readline().decode())
        log = (tmp_path / "app.log").read_text()
        assert all(a < 0 for a in cut["answers"]), (cut, log)
        assert cut["seconds"] < 30, (cut, log)
        assert "Connection timed out" in log, log
        netns.heal()
        app.stdin.write(b"go\n")
        app.stdin.flush()
        back = json.loads(app.stdout.readline().decode())
        assert back["back"], (back, (tmp_path / "app.log").read_text())
    finally:
        if app and app.poll() is None:
            app.kill()
            app.wait(10)
        c.stop()


def test_a_master_killed_and_restarted_keeps_every_object(cluster):
    """kill -9 of the only master (at the default durability level), the same command again: every
    acknowledged object is back, read through another client, once the storage daemons have
    re-mounted their memory."""
    cluster.start_master()
    cluster.start_client("node-a")
    cluster.start_client("node-b")
    objects = {f"obj-{i}": value(20000 + i * 100, i) for i in range(30)}
    for k, v in objects.items():
        assert put(cluster, k, v, replicas=2).returncode == 0
    cluster.yb(["put", "gone", "--value", "v"], check=True)
    cluster.yb(["remove", "gone", "--force"], check=True)
    before = cluster.health()
    # The default level: each answer waited only for its record to be written, not synced, which
    # is what a killed process cannot undo (the kill may land before the background sync).
    assert before["role"] == "leader" and before["durability"] == "process" and before["log"]["last_seq"] > 0
    cluster.stop_master(signal.SIGKILL)
    cluster.start_master()
    wait_until(lambda: cluster.segment_names() == {"node-a", "node-b"}, 15, "the daemons to re-mount")
    for k, v in objects.items():
        assert get(cluster, k) == (0, v), k
    assert cluster.metric("yb_master_keys") == 30
    assert cluster.health()["log"]["last_seq"] >= before["log"]["last_seq"]
    # The log said why the removed key went: the restarted master still explains its miss.
    why = cluster.yb(["why", "gone"], check=True).stdout.decode()
    assert why.strip().endswith("(removed)"), why
    # New objects go on next to the restored ones, never over them.
    extra = value(50000, 99)
    assert put(cluster, "after", extra, replicas=2).returncode == 0
    assert get(cluster, "after") == (0, extra)
    for k, v in objects.items():
        assert get(cluster, k) == (0, v), k


def test_objects_of_a_daemon_that_does_not_come_back_are_dropped_after_client_ttl(cluster):
    cluster.start_master()
    cluster.start_client("node-a")
    cluster.start_client("node-b")
    a = value(10000, 1)
    assert put(cluster, "on-a", a).returncode == 0  # one replica: on node-a or node-b
    cluster.stop_master(signal.SIGKILL)
    cluster.kill_client("node-a")
    cluster.kill_client("node-b")
    cluster.start_master()
    cluster.start_client("node-b")  # a new process: new segments, fresh memory
    wait_until(lambda: cluster.metric("yb_master_keys") == 0, cluster.client_ttl + 10,
               "the master to drop what was on the daemons that did not come back")
    rc, _ = get(cluster, "on-a")
    assert rc != 0


def test_two_daemons_on_one_host_with_mooncakes_flags_are_two_fault_domains(cluster):
    """Daemons started as Mooncake's are (--host and --port, no --local_hostname) name their
    segments host:port: replica_num 2 gives two replicas, and every object survives kill -9 of
    either daemon. A third daemon claiming a name in use is refused, and nothing merges."""
    cluster.start_master()
    ports = [free_port(), free_port()]
    for i, p in enumerate(ports):
        cluster.clients[f"d{i}"] = cluster._spawn(f"d{i}", [
            f"{BIN}/yb-client", "--host", "127.0.0.1", "--port", str(p), "--master_server_address", cluster.address,
            "--global_segment_size", "32MB", "--local_buffer_size", "4MB"])
    names = {f"127.0.0.1:{p}" for p in ports}
    wait_until(lambda: {s["name"] for s in cluster.segments()} == names, 10, "both daemons to mount")
    values = {f"k{i}": value(3000 + i, i) for i in range(30)}
    for k, v in values.items():
        assert put(cluster, k, v, replicas=2).returncode == 0, k
    r = cluster.yb(["replicas", "k7"], check=True)
    assert b"2 replicas (2 in memory)" in r.stdout, r.stdout
    assert all(n.encode() in r.stdout for n in names), r.stdout
    assert cluster.metric("yb_master_under_replicated_puts_total") == 0
    segs = cluster.segments()
    assert sum(s["allocations"] for s in segs) == 60, segs
    # A third replica asked of two daemons: best effort (two), counted.
    assert put(cluster, "three", value(100, 3), replicas=3).returncode == 0
    assert b"2 replicas" in cluster.yb(["replicas", "three"], check=True).stdout
    assert cluster.metric("yb_master_under_replicated_puts_total") == 1
    assert cluster.metric("yb_master_missing_replicas_total") == 1

    # A duplicate name at another endpoint: refused with who holds it.
    dup = cluster._spawn("dup", [
        f"{BIN}/yb-client", "--host", "127.0.0.1", "--port", "0", "--local_hostname", f"127.0.0.1:{ports[0]}",
        "--master_server_address", cluster.address, "--global_segment_size", "32MB", "--local_buffer_size", "4MB"])
    assert dup.wait(15) == 1
    assert "in use by client" in (cluster.tmp / "dup.log").read_text()
    assert {s["name"] for s in cluster.segments()} == names

    cluster.kill_client("d0")
    for k, v in values.items():
        assert get(cluster, k) == (0, v), k



def test_replicas_span_zones_and_a_whole_zone_can_go(cluster):
    """Four daemons on one host in two zones (--zone rack-1 / rack-2, and YB_ZONE for one of them):
    every object written with replica_num 2 has a replica in each zone, the listings show the
    zones, and after kill -9 of both daemons of one zone every object is still read."""
    cluster.start_master()
    zones = {"a": "rack-1", "b": "rack-1", "c": "rack-2", "d": "rack-2"}
    for name, zone in zones.items():
        if name == "d":  # the environment's label, as the C API and Python setup read it
            os.environ["YB_ZONE"] = zone
            try:
                cluster.start_client(name)
            finally:
                del os.environ["YB_ZONE"]
        else:
            cluster.start_client(name, extra=["--zone", zone])
    assert {daemon_name(s["name"]): s["zone"] for s in cluster.segments()} == zones
    listing = cluster.yb(["segments"], check=True).stdout.decode()
    assert "ZONE" in listing and "rack-1" in listing and "rack-2" in listing, listing
    values = {f"z{i}": value(2000 + i, i) for i in range(30)}
    for k, v in values.items():
        assert put(cluster, k, v, replicas=2).returncode == 0, k
        out = cluster.yb(["replicas", k], check=True).stdout.decode()
        held = {n for n in zones if f"{n}:" in out}
        assert {zones[n] for n in held} == {"rack-1", "rack-2"}, (k, out)
    cluster.kill_client("a")
    cluster.kill_client("b")
    for k, v in values.items():
        assert get(cluster, k) == (0, v), k


def test_a_master_paused_past_the_client_ttl_gets_every_segment_back(cluster):
    """SIGSTOP of yb-master for longer than --client_ttl, twice: it declares the daemons dead when it
    resumes and its one re-mount request may be lost with a late reply, but each heartbeat states
    the segments its daemon holds, so both converge; a daemon's /health says so meanwhile."""
    import time
    cluster.start_master()
    ports = {}
    for name in ("node-a", "node-b"):
        ports[name] = free_port()
        cluster.start_client(name, extra=["--metrics_port", str(ports[name])])
    for _ in range(2):
        cluster.master.send_signal(signal.SIGSTOP)
        time.sleep(cluster.client_ttl * 2 + 2)
        cluster.master.send_signal(signal.SIGCONT)
        wait_until(lambda: cluster.segment_names() == {"node-a", "node-b"}
                   and all(client_http(p, "/health") == (200, "OK\n") for p in ports.values()),
                   cluster.client_ttl + 10, "both daemons mounted again and healthy")
    assert put(cluster, "after", value(1000, 5), replicas=2).returncode == 0
    assert b"2 replicas" in cluster.yb(["replicas", "after"], check=True).stdout


def test_a_get_with_one_replica_holder_stopped_falls_back_within_the_bound(cluster):
    """SIGSTOP of one of two replica holders (its kernel still acknowledges, its server answers
    nothing): a Get moves on to the other replica once the exchange's budget passes (2 s for small
    objects), not after a fixed 30 s."""
    import time
    cluster.client_ttl = 60  # the stopped daemon stays listed
    cluster.start_master()
    cluster.start_client("node-a")
    cluster.start_client("node-b")
    values = {f"s{i}": value(20000, i) for i in range(4)}
    for k, v in values.items():
        assert put(cluster, k, v, replicas=2).returncode == 0
    cluster.clients["node-a"].send_signal(signal.SIGSTOP)
    try:
        for k, v in values.items():
            t0 = time.monotonic()
            assert get(cluster, k) == (0, v), k
            assert time.monotonic() - t0 < 10, k
    finally:
        cluster.clients["node-a"].send_signal(signal.SIGCONT)


def test_replicas_lost_with_a_node_are_copied_back_and_a_second_loss_loses_nothing(cluster):
    """Three daemons, replica_num 2: kill -9 of one leaves about two thirds of the objects with one
    replica; the master has the survivors copy them back (re-replication), after which kill -9 of a
    second daemon loses nothing."""
    cluster.start_master()
    for name in ("node-a", "node-b", "node-c"):
        cluster.start_client(name)
    values = {f"r{i}": value(30000 + i, i) for i in range(30)}
    for k, v in values.items():
        assert put(cluster, k, v, replicas=2).returncode == 0, k
    cluster.kill_client("node-a")
    wait_until(lambda: cluster.segment_names() == {"node-b", "node-c"}, cluster.client_ttl + 10,
               "node-a declared dead")
    wait_until(lambda: cluster.metric("yb_master_objects_at_risk") == 0
               and cluster.metric("yb_master_repaired_total") > 0, 30, "re-replication to finish")
    repaired = cluster.metric("yb_master_repaired_total")
    assert 10 <= repaired <= 30, repaired
    assert cluster.metric("yb_master_objects_lost_total") == 0
    for k in values:
        assert b"2 replicas (2 in memory)" in cluster.yb(["replicas", k], check=True).stdout, k
    cluster.kill_client("node-b")
    for k, v in values.items():
        assert get(cluster, k) == (0, v), k


def test_drain_moves_every_object_before_a_node_leaves(cluster):
    """`yb drain NAME` copies every object a node holds to the others (one replica each here) and
    says when stopping it loses nothing; a daemon started with --drain_on_exit does the same on
    SIGTERM before it unmounts. Each is then killed and nothing is lost."""
    cluster.start_master()
    cluster.start_client("node-a", extra=["--drain_on_exit", "true"])
    cluster.start_client("node-b")
    cluster.start_client("node-c")
    values = {f"d{i}": value(20000 + i, i) for i in range(30)}
    for k, v in values.items():
        assert put(cluster, k, v).returncode == 0, k
    # A drain can be undone: the node takes new replicas again.
    r = cluster.yb(["drain", "node-c", "--timeout", "1"])
    assert any(s["draining"] for s in cluster.segments())
    r = cluster.yb(["undrain", "node-c"])
    assert r.returncode == 0 and b"new replicas again" in r.stdout, r
    assert not any(s["draining"] for s in cluster.segments())
    r = cluster.yb(["drain", "node-b", "--timeout", "60"])
    assert r.returncode == 0 and b"drained" in r.stdout, r
    assert any(s["draining"] for s in cluster.segments())
    cluster.kill_client("node-b")
    for k, v in values.items():
        assert get(cluster, k) == (0, v), k
    wait_until(lambda: cluster.segment_names() == {"node-a", "node-c"}, cluster.client_ttl + 10,
               "node-b declared dead")
    cluster.clients["node-a"].terminate()  # SIGTERM: drains, then unmounts
    assert cluster.clients["node-a"].wait(60) == 0
    assert "drained" in (cluster.tmp / "node-a.log").read_text()
    for k, v in values.items():
        assert get(cluster, k) == (0, v), k
    assert cluster.metric("yb_master_objects_lost_total") == 0


def test_a_paused_node_back_within_the_grace_keeps_its_replicas(tmp_path):
    """A storage daemon paused (SIGSTOP) past --client_ttl is declared dead, but its segments are
    only suspended for the grace (--client_grace_sec, by default another client_ttl): resumed with
    its memory intact, it remounts and every object it alone held is read again. (They used to be
    dropped the moment it was declared dead.)"""
    c = Cluster(tmp_path, client_ttl=2)
    try:
        c.start_master()
        c.start_client("node-b", "16MB")
        values = {f"b{i}": value(64 << 10, i) for i in range(10)}  # node-b holds each alone
        for k, v in values.items():
            assert c.yb(["put", k, "--file", "/dev/stdin"], input_bytes=v).returncode == 0, k
        c.start_client("node-a", "16MB")
        c.clients["node-b"].send_signal(signal.SIGSTOP)
        time.sleep(3)  # past client_ttl (2 s), within the grace (2 s more)
        c.clients["node-b"].send_signal(signal.SIGCONT)
        wait_until(lambda: c.segment_names() == {"node-a", "node-b"}, 10, "node-b to remount")
        for k, v in values.items():
            r = c.yb(["get", k])
            assert r.returncode == 0 and r.stdout == v, k
        log = (tmp_path / "master.log").read_text()
        assert "declared dead: its 1 segments are suspended" in log, log[-2000:]
        assert "back within the grace" in log
        assert c.metric("yb_master_objects_lost_total") == 0
        assert c.metric("yb_master_segments_unconfirmed") == 0
    finally:
        c.stop()


def test_a_put_while_the_only_holder_is_paused_evicts_nothing(tmp_path):
    """The only storage daemon paused (SIGSTOP) past the heartbeat's gap but within --client_ttl
    (Mooncake's 10 s): the master stops placing replicas on it. A Put then has nowhere to go and
    must be refused saying why, not evict what the paused daemon holds for room it cannot use
    (it once did: `yb get` then answered "evicted" for every object)."""
    c = Cluster(tmp_path, client_ttl=10)
    try:
        c.start_master()
        c.start_client("node-a", "8MB")
        values = {f"h{i}": value(1 << 20, i) for i in range(3)}
        for k, v in values.items():
            assert put(c, k, v).returncode == 0, k
        c.clients["node-a"].send_signal(signal.SIGSTOP)
        try:
            time.sleep(4.5)  # past the 3 s gap, within the 10 s TTL
            r = put(c, "new", value(1 << 20, 9))
            assert r.returncode != 0
            assert b"not heard from" in r.stderr, r.stderr
        finally:
            c.clients["node-a"].send_signal(signal.SIGCONT)
        for k, v in values.items():
            r = c.yb(["get", k])
            assert (r.returncode, r.stdout) == (0, v), (k, r.stderr)
        assert c.metric("yb_master_evicted_objects_total") == 0
        wait_until(lambda: put(c, "new", value(1 << 20, 9)).returncode == 0, 10, "the daemon to take replicas again")
    finally:
        c.stop()


def test_puts_made_while_a_holder_is_paused_get_their_second_replica_when_it_resumes(tmp_path):
    """Two daemons, one paused (SIGSTOP) past the heartbeat's gap: Puts asking two replicas get one
    (the paused daemon takes none), and once it resumes the master has the second copied, so a
    later loss of the first daemon loses nothing."""
    c = Cluster(tmp_path, client_ttl=10)
    try:
        c.start_master()
        c.start_client("node-a", "16MB")
        c.start_client("node-b", "16MB")
        c.clients["node-b"].send_signal(signal.SIGSTOP)
        values = {f"w{i}": value(100000, i) for i in range(5)}
        try:
            time.sleep(4.5)  # past the 3 s gap, within the 10 s TTL
            for k, v in values.items():
                assert put(c, k, v, replicas=2).returncode == 0, k
                assert b"1 replicas" in c.yb(["replicas", k], check=True).stdout, k
        finally:
            c.clients["node-b"].send_signal(signal.SIGCONT)
        wait_until(lambda: all(b"2 replicas" in c.yb(["replicas", k], check=True).stdout for k in values), 20,
                   "the second replicas to be copied")
        c.kill_client("node-a")
        for k, v in values.items():
            assert get(c, k) == (0, v), k
        assert c.metric("yb_master_objects_lost_total") == 0
    finally:
        c.stop()


def test_a_paused_master_declares_no_live_client_dead(tmp_path):
    """A master paused (SIGSTOP) for longer than client_ttl, as a VM pause or a swap storm does,
    finds on resuming that it did not run and gives every client a fresh TTL: the clients, alive the
    whole time with their memory, keep their segments, and every object stays readable. (Judged by
    that silence, all 30 objects were once lost in six pauses.)"""
    c = Cluster(tmp_path, client_ttl=3)
    try:
        c.start_master()
        c.start_client("node-a", "16MB")
        c.start_client("node-b", "16MB")
        values = {f"p{i}": value(1 << 20, i) for i in range(10)}
        for k, v in values.items():
            assert c.yb(["put", k, "--file", "/dev/stdin", "--replicas", "2"], input_bytes=v).returncode == 0, k
        for pause in (5, 8):
            c.master.send_signal(signal.SIGSTOP)
            time.sleep(pause)
            c.master.send_signal(signal.SIGCONT)
            wait_until(lambda: c.http_ok(), 10, "the master to answer again")
            time.sleep(1.5)  # a few liveness checks after the pause
            assert c.segment_names() == {"node-a", "node-b"}
            for k, v in values.items():
                r = c.yb(["get", k])
                assert r.returncode == 0 and r.stdout == v, k
        log = (tmp_path / "master.log").read_text()
        assert "declared dead" not in log, log[-2000:]
        assert "did not run for" in log
        assert c.metric("yb_master_liveness_gaps_total") >= 2
    finally:
        c.stop()


@pytest.mark.parametrize("strategy", ["random", "free_ratio_first", "local_first"])
def test_every_allocation_strategy_the_help_names_starts_and_places(tmp_path, strategy):
    """yb-master takes each --allocation_strategy its help text and docs/operations.md name
    (local_first used to be refused at start), and places a Put with it."""
    c = Cluster(tmp_path)
    try:
        c.start_master(extra=["--allocation_strategy", strategy])
        c.start_client("node-a", "16MB")
        data = value(4096, 3)
        assert put(c, "k", data).returncode == 0
        assert get(c, "k") == (0, data)
    finally:
        c.stop()


RESERVING_WRITER = r"""
import sys
from yuebing import MooncakeDistributedStore
store = MooncakeDistributedStore()
assert store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", sys.argv[1]) == 0
prefix, n = sys.argv[2], int(sys.argv[3])
for i in range(n):
    v = bytes([(i * 7 + len(prefix)) & 0xFF]) * 65536
    assert store.put(f"{prefix}/{i}", v) == 0, i
    assert store.get(f"{prefix}/{i}") == v, i
print("ready", flush=True)
if sys.argv[4] == "wait":
    sys.stdin.readline()
store.close()
"""


def test_puts_into_reservations_over_rpc_and_a_writer_killed_leaves_none(tmp_path):
    """Puts into reservations between real processes (design.md section 3): a writer's repeated
    Puts of one shape go through reservations (one master call each: PutCommit), every value reads
    back exact from another process, and what the writer kept reserved goes when it closes, and
    when it is killed -9 (the master revokes a dead client's reservations)."""
    c = Cluster(tmp_path, client_ttl=2)
    try:
        c.start_master()
        c.start_client("node-a", "64MB")

        def writer(prefix, n, mode):
            p = subprocess.Popen(["/usr/bin/python3", "-c", RESERVING_WRITER, c.address, prefix, str(n), mode],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 env=dict(os.environ, PYTHONPATH=os.environ.get("PYTHONPATH", "")))
            assert p.stdout.readline().strip() == "ready"
            return p

        def calls(op):
            for line in c.http("/metrics").splitlines():
                if line.startswith(f'yb_master_requests_total{{op="{op}"}} '):
                    return float(line.split()[1])
            return 0.0

        commits = calls("PutCommit")
        w = writer("clean", 20, "close")
        assert w.wait(30) == 0
        assert calls("PutCommit") - commits >= 18  # the first two Puts start, the rest commit
        wait_until(lambda: c.metric("yb_master_reservations") == 0, 10, "a closed writer's reservations to go")

        w = writer("killed", 20, "wait")
        assert c.metric("yb_master_reservations") >= 1
        w.kill()
        w.wait(10)
        wait_until(lambda: c.metric("yb_master_reservations") == 0, 15, "a dead writer's reservations to go")
        assert "reservations are revoked" in (tmp_path / "master.log").read_text()
        assert c.metric("yb_master_pending_puts") == 0
        for prefix in ("clean", "killed"):
            for i in range(20):
                rc, out = get(c, f"{prefix}/{i}")
                assert rc == 0 and out == bytes([(i * 7 + len(prefix)) & 0xFF]) * 65536, (prefix, i)
    finally:
        c.stop()
