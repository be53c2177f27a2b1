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
    config.addinivalue_line("markers", "plain_only: checks packaging, deployment or a benchmark's plumbing, "
                                       "not the daemons' memory: the sanitizer builds' ctest leaves it out")


# Tests that build network namespaces: their names and addresses are fixed, so under pytest-xdist
# (ctest runs this directory with two or three workers) they run in one group, one at a time: every test of
# these files, and test_cluster.py's that take its `netns` fixture.
_NETNS_FILES = {"test_nemesis.py", "test_partitions.py"}


def _builds_netns(item):
    return os.path.basename(str(item.fspath)) in _NETNS_FILES or "netns" in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup` the tests that build network namespaces share one worker, in
    order, and are handed out first: together they are the longest piece of work that cannot be
    split (about 160 s of the sanitizer run's 390), so the other worker takes the rest meanwhile.
    Every other test is a unit of its own, so the two workers end within about one test of each
    other (grouped by file, test_cluster.py alone was over 200 s of one worker's work there)."""
    for item in items:
        if _builds_netns(item):
            item.add_marker(pytest.mark.xdist_group("netns"))
    items.sort(key=lambda item: not _builds_netns(item))  # stable: each file's order is kept


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


def fill(disk, leave):
    """Fills `disk` with a ballast file until at most `leave` bytes are free."""
    st = os.statvfs(disk)
    free = st.f_bavail * st.f_frsize
    with open(disk / "ballast", "ab") as f:
        try:
            f.write(b"\0" * max(0, free - leave))
        except OSError:
            pass  # ENOSPC: full, as asked for leave=0


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


def metric_value(text, name):
    """The value of the unlabelled metric `name` in Prometheus text, or None."""
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


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


class Hosts:
    """Hosts in network namespaces ("ybt-NAME"), each on a link of its own to a router (the
    namespace "ybt-br", its side of host i's link "ybtIbr"), made for a test and removed after it.
    Host i has the address 10.231.(10+i).2. The router drops, silently as a cut cable does, what
    one host sends another (cut one way or both) or everything to and from a host (unplug): no
    error reaches the sender, its packets just go unanswered."""

    def __init__(self, names):
        self.names = list(names)
        self.ns = {n: f"ybt-{n}" for n in self.names}
        self.addr = {n: self.address(i) for i, n in enumerate(self.names)}
        self.prefix = {n: ["ip", "netns", "exec", self.ns[n]] for n in self.names}
        self.rules = set()

    @staticmethod
    def address(i):
        return f"10.231.{10 + i}.2"

    def __getitem__(self, ns):
        """The command prefix that runs in namespace `ns` ("ybt-NAME")."""
        return self.prefix[ns[len("ybt-"):]]

    def _all(self):
        return list(self.ns.values()) + ["ybt-br"]

    def remove(self):
        for ns in self._all():
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)

    def create(self):
        if os.geteuid() != 0 or not os.path.exists("/usr/sbin/ip"):
            pytest.skip("network namespaces need root and iproute2: skipped")
        self.remove()

        def sh(*args):
            subprocess.run(list(args), check=True, capture_output=True)
        try:
            sh("ip", "netns", "add", "ybt-br")
            sh("ip", "netns", "exec", "ybt-br", "sysctl", "-qw", "net.ipv4.ip_forward=1")
            for i, n in enumerate(self.names):
                ns, gw = self.ns[n], f"10.231.{10 + i}.1"
                sh("ip", "netns", "add", ns)
                sh("ip", "link", "add", f"ybt{i}", "netns", ns, "type", "veth", "peer", "name", f"ybt{i}br",
                   "netns", "ybt-br")
                sh("ip", "-n", "ybt-br", "addr", "add", f"{gw}/24", "dev", f"ybt{i}br")
                sh("ip", "-n", "ybt-br", "link", "set", f"ybt{i}br", "up")
                sh("ip", "-n", ns, "addr", "add", f"{self.addr[n]}/24", "dev", f"ybt{i}")
                sh("ip", "-n", ns, "link", "set", f"ybt{i}", "up")
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                sh("ip", "-n", ns, "route", "add", "default", "via", gw)
        except subprocess.CalledProcessError as e:
            self.remove()
            pytest.skip(f"cannot build network namespaces here: {e.stderr.decode().strip()}")
        return self

    def _rule(self, add, selector):
        if add == (selector in self.rules):
            return
        subprocess.run(["ip", "-n", "ybt-br", "rule", "add" if add else "del"] + list(selector) + ["blackhole"],
                       check=True, capture_output=True)
        (self.rules.add if add else self.rules.discard)(selector)

    def cut(self, a, b, both=True):
        """Drops what `a` sends to `b` (and, both=True, what `b` sends to `a`)."""
        for x, y in ((a, b), (b, a)) if both else ((a, b),):
            self._rule(True, ("from", self.addr[x], "to", self.addr[y]))

    def unplug(self, a):
        """Drops everything `a` sends and everything sent to it: its cable is out."""
        self._rule(True, ("from", self.addr[a]))
        self._rule(True, ("to", self.addr[a]))

    def heal(self):
        """Every link as it was: no cut, no host unplugged."""
        for selector in list(self.rules):
            self._rule(False, selector)

    def run(self, name, args, **kw):
        return subprocess.run(self.prefix[name] + list(args), **kw)

    def http(self, name, url, timeout=3):
        """The body of `url` fetched from inside host `name`."""
        r = self.run(name, ["/usr/bin/python3", "-c",
                            "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen("
                            f"sys.argv[1], timeout={timeout}).read().decode())", url],
                     capture_output=True, timeout=timeout + 10)
        if r.returncode != 0:
            raise OSError(r.stderr.decode())
        return r.stdout.decode()


@contextlib.contextmanager
def hosts(names):
    h = Hosts(names).create()
    try:
        yield h
    finally:
        h.remove()


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
        return metric_value(self.http("/metrics"), name)

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
