"""Fixtures that start real yb-master / yb-client processes on 127.0.0.1 and stop them."""
import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

def pytest_configure(config):
    config.addinivalue_line("markers", "long: a workload of a minute or more (ctest's cluster_long_tests)")


BIN = os.environ.get("YB_BIN_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))


def c_api_env(**extra):
    """The environment of a Python process that loads libyuebing.so through ctypes: without the
    yuebing package on its path (one process carries one copy of our protobuf descriptors), and in
    the ASan build with the sanitizer runtimes preloaded (an instrumented library cannot load into
    an uninstrumented python3 otherwise; Python's own allocations are not leak-checked)."""
    env = dict(os.environ, **extra)
    env.pop("PYTHONPATH", None)
    preload = os.environ.get("YB_C_API_PRELOAD", "")
    if preload:
        env["LD_PRELOAD"] = preload
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    return env


@contextlib.contextmanager
def small_tmpfs(path, size, mode=None):
    """A tmpfs of `size` ("3m") mounted at `path` (created) for the block, a disk that fills up;
    skips the test where it cannot be mounted (root only)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root: skipped")
    path.mkdir(exist_ok=True)
    opts = f"size={size}" + (f",mode={mode}" if mode else "")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(path)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


_EPHEMERAL = _ephemeral_range()
_picked = set()


def free_port():
    """A port free now, below the kernel's ephemeral range: between this pick and the daemon's
    bind, no outgoing connection (nor a port a client reserves) can be given it, as one could take
    a port the kernel picked for us. Not one this test run picked before."""
    lo = 10000
    hi = _EPHEMERAL[0] - 1 if _EPHEMERAL[0] > lo + 1000 else 30000
    for _ in range(1000):
        port = random.randint(lo, hi)
        if port in _picked or _EPHEMERAL[0] <= port <= _EPHEMERAL[1]:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _picked.add(port)
        return port
    raise RuntimeError("no free port below the ephemeral range")


def daemon_name(segment_name):
    """"node-a" for the segment name "node-a:40123"."""
    host, _, port = segment_name.rpartition(":")
    return host if host and port.isdigit() else segment_name


def wait_until(cond, timeout, what):
    """Polls `cond` until it is true; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def client_http(port, path):
    """(status, body) of a yb-client's HTTP endpoint."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def client_metrics(port):
    _, text = client_http(port, "/metrics")
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line and line[0] != "#"}


class Cluster:
    def __init__(self, tmp_path, client_ttl=2, ns_prefix=None, master_host="127.0.0.1", protected_mode=True):
        """protected_mode=False: the daemons serve other hosts without a secret (--protected_mode
        false), as a test across network namespaces that is not about security needs."""
        self.tmp = tmp_path
        self.open_flags = [] if protected_mode else ["--protected_mode", "false"]
        self.client_ttl = client_ttl
        self.master_host = master_host
        self.rpc_port = free_port()
        self.http_port = free_port()
        self.master = None
        self.clients = {}
        self.ns_prefix = ns_prefix or []

    @property
    def address(self):
        return f"{self.master_host}:{self.rpc_port}"

    def _spawn(self, name, args, prefix=None):
        log = open(self.tmp / f"{name}.log", "ab")
        # Started in the test's directory, as a user starts them in theirs: the master keeps its
        # metadata log there (the default --metadata_dir, yb-master.data).
        return subprocess.Popen((prefix or []) + args, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp)

    def start_master(self, prefix=None, bind="127.0.0.1", extra=()):
        self.master = self._spawn("master", [
            f"{BIN}/yb-master", "--rpc_address", bind, "--rpc_port", str(self.rpc_port),
            "--metrics_address", bind, "--metrics_port", str(self.http_port),
            "--client_ttl", str(self.client_ttl)] + self.open_flags + list(extra), prefix)
        wait_until(lambda: self.http_ok(prefix), 10, "yb-master to serve")

    def stop_master(self, sig=signal.SIGTERM):
        self.master.send_signal(sig)
        assert self.master.wait(10) == (0 if sig == signal.SIGTERM else -sig)

    def start_client(self, name, size="32MB", prefix=None, host="127.0.0.1", extra=(), port=0):
        self.clients[name] = self._spawn(name, [
            f"{BIN}/yb-client", "--host", host, "--port", str(port), "--local_hostname", name,
            "--master_server_address", self.address, "--global_segment_size", size,
            "--local_buffer_size", "4MB"] + self.open_flags + list(extra), prefix)
        wait_until(lambda: name in self.segment_names(prefix), 10, f"{name} to mount")

    def kill_client(self, name):
        self.clients[name].kill()
        self.clients[name].wait(10)

    def http_ok(self, prefix=None):
        if prefix:  # inside a network namespace: ask with the yb tool from there
            return self.yb(["segments"], prefix=prefix).returncode == 0
        try:
            h = self.http("/health")  # a master refusing changes (DEGRADED) serves too
            return h == "OK\n" or h.startswith("DEGRADED")
        except OSError:
            return False

    def http(self, path):
        with urllib.request.urlopen(f"http://{self.master_host}:{self.http_port}{path}", timeout=2) as r:
            return r.read().decode()

    def health(self):
        """The master's /health as JSON."""
        return json.loads(self.http("/health?format=json"))

    def metric(self, name):
        """The value of an unlabelled metric on /metrics, or None."""
        for line in self.http("/metrics").splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
        return None

    def segments(self, prefix=None):
        if prefix:
            out = self.yb(["segments"], prefix=prefix)
            lines = out.stdout.decode().splitlines()[1:]
            return [{"name": line.split()[0]} for line in lines if line.strip()]
        try:
            return json.loads(self.http("/segments"))
        except OSError:
            return []

    def segment_names(self, prefix=None):
        """The segments' names as the daemons were given them (--local_hostname): a daemon's
        segments are named "NAME:PORT", PORT its transfer server's."""
        return {daemon_name(s["name"]) for s in self.segments(prefix)}

    def yb(self, args, prefix=None, input_bytes=None, check=False):
        r = subprocess.run((prefix or []) + [f"{BIN}/yb", "--master", self.address] + args,
                           capture_output=True, timeout=30, input=input_bytes)
        if check:
            assert r.returncode == 0, r.stderr.decode()
        return r

    def stop(self):
        for p in list(self.clients.values()) + ([self.master] if self.master else []):
            if p.poll() is None:
                p.kill()
                p.wait(10)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.stop()
