#!/usr/bin/env python3
"""Red team: attacks on a Yuebing deployment started the way the README starts one, and on one
with a secret, each tried as an attacker would; prints a table of attack and outcome, and exits 1
if any attack got through (docs/security.md lists what each guarantee rests on).

Deployments, each started by this script and stopped by it (and etcd, for the third):
  default  yb-master and a yb-client started with ports and directories only (no secret), in a
           network namespace ("the server host"); the attacker runs in a second namespace joined
           to it by a veth pair (another host), and on the server host itself.
  secret   the same with --auth_secret_file; storage nodes hold the node key, an operator the admin
           key, tenants their own secrets.
  secret+HA two masters under a real etcd on this host with the secret: the HA channel called with
           a node's, an operator's and a tenant's key, and a forged ApplyLog from a master that
           etcd does not name.

Run: YB_BIN_DIR=build/bin python3 tests/security/red_team.py   (as root, for the namespaces)
"""
import base64
import hashlib
import hmac
import importlib.util
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("yb_cluster_helpers", HERE.parent / "cluster" / "conftest.py")
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)
BIN = helpers.BIN
free_port, wait_until = helpers.free_port, helpers.wait_until

SERVER_NS, ATTACKER_NS = "ybr-s", "ybr-a"
SERVER_IP, ATTACKER_IP = "10.231.9.1", "10.231.9.2"
SECRET = "red-team-cluster-secret-0123456789"
TEAM_A = "red-team-team-a-secret-0123456789"

rows = []  # (deployment, attack, outcome, held)


def record(deployment, attack, held, outcome):
    rows.append((deployment, attack, outcome, held))


def sh(*args, check=True):
    return subprocess.run(list(args), check=check, capture_output=True)


def in_ns(ns):
    return ["ip", "netns", "exec", ns]


class Namespaces:
    """Two hosts joined by a veth pair; removed on exit."""

    def __enter__(self):
        self.remove()
        sh("ip", "netns", "add", SERVER_NS)
        sh("ip", "netns", "add", ATTACKER_NS)
        sh("ip", "link", "add", "ybr0", "netns", SERVER_NS, "type", "veth", "peer", "name", "ybr1", "netns",
           ATTACKER_NS)
        for ns, dev, ip in ((SERVER_NS, "ybr0", SERVER_IP), (ATTACKER_NS, "ybr1", ATTACKER_IP)):
            sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        return self

    def __exit__(self, *exc):
        self.remove()

    @staticmethod
    def remove():
        for ns in (SERVER_NS, ATTACKER_NS):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


class Deployment:
    def __init__(self, name, tmp, secret=False):
        self.name, self.tmp = name, Path(tmp)
        self.rpc_port, self.http_port = free_port(), free_port()
        self.procs = []
        self.secret_file = self.node_key_file = self.admin_key_file = None
        if secret:
            self.secret_file = self.private(self.tmp / "cluster.secret", SECRET)
            self.node_key_file = self.private(self.tmp / "node.key", self.role_key("node"))
            self.admin_key_file = self.private(self.tmp / "admin.key", self.role_key("admin"))
            self.tenants_file = self.private(self.tmp / "tenants.yaml", f"team-a: {TEAM_A}")
            self.team_a_file = self.private(self.tmp / "team-a.secret", TEAM_A)

    @staticmethod
    def private(path, text):
        path.write_text(text + "\n")
        os.chmod(path, 0o600)
        return str(path)

    def role_key(self, role):
        return subprocess.run([f"{BIN}/yb", "role-key", "--role", role, "--auth_secret_file", self.secret_file],
                              check=True, capture_output=True).stdout.decode().strip()

    def spawn(self, name, args, env=None):
        log = open(self.tmp / f"{name}.log", "ab")
        p = subprocess.Popen(in_ns(SERVER_NS) + args, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp, env=env)
        self.procs.append(p)
        return p

    def start(self):
        master = [f"{BIN}/yb-master", "--rpc_port", str(self.rpc_port), "--metrics_port", str(self.http_port)]
        if self.secret_file:
            master += ["--auth_secret_file", self.secret_file, "--tenant_secrets_file", self.tenants_file]
        self.spawn("master", master)
        wait_until(lambda: self.local_http("GET", "/health")[0] == 200, 15, "yb-master to serve")
        node = [f"{BIN}/yb-client", "--host", "0.0.0.0", "--port", "0", "--local_hostname", "node-1",
                "--master_server_address", f"127.0.0.1:{self.rpc_port}", "--global_segment_size", "16MB",
                "--local_buffer_size", "4MB"]
        if self.node_key_file:
            node += ["--auth_secret_file", self.node_key_file]
        self.spawn("node-1", node)
        wait_until(lambda: len(self.segments()) == 1, 15, "the node to mount")

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)

    # ---- the server host's view (127.0.0.1 inside its namespace)
    def local_http(self, method, path, token=None, host="127.0.0.1", ns=SERVER_NS):
        code = ("import sys, urllib.request, urllib.error\n"
                "req = urllib.request.Request(sys.argv[1], method=sys.argv[2], data=b'' if sys.argv[2] == 'POST' else None)\n"
                "if sys.argv[3]: req.add_header('Authorization', 'Bearer ' + sys.argv[3])\n"
                "try:\n"
                "    r = urllib.request.urlopen(req, timeout=3); print(r.status); print(r.read().decode())\n"
                "except urllib.error.HTTPError as e:\n"
                "    print(e.code); print(e.read().decode())\n"
                "except OSError as e:\n"
                "    print(0); print(e)\n")
        r = subprocess.run(in_ns(ns) + [sys.executable, "-c", code, f"http://{host}:{self.http_port}{path}", method,
                                        token or ""], capture_output=True, timeout=20)
        out = r.stdout.decode().split("\n", 1)
        try:
            return int(out[0]), (out[1] if len(out) > 1 else "")
        except ValueError:
            return 0, r.stderr.decode()

    def segments(self):
        status, body = self.local_http("GET", "/segments")
        return json.loads(body) if status == 200 else []

    def yb(self, args, ns=SERVER_NS, host="127.0.0.1", key=None):
        cmd = in_ns(ns) + [f"{BIN}/yb", "--master", f"{host}:{self.rpc_port}"]
        if key:
            cmd += ["--auth_secret_file", key]
        return subprocess.run(cmd + args, capture_output=True, timeout=30, cwd=self.tmp)

    def raw(self, host, port, data, ns):
        """Sends `data` to host:port from namespace `ns`; what came back before the close."""
        code = ("import socket, sys\n"
                "s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)\n"
                "s.sendall(bytes.fromhex(sys.argv[3]))\n"
                "out = b''\n"
                "try:\n"
                "    while True:\n"
                "        b = s.recv(65536)\n"
                "        if not b: break\n"
                "        out += b\n"
                "except OSError:\n"
                "    pass\n"
                "sys.stdout.write(out.hex())\n")
        r = subprocess.run(in_ns(ns) + [sys.executable, "-c", code, host, str(port), data.hex()], capture_output=True,
                           timeout=20)
        return bytes.fromhex(r.stdout.decode() or "")


def rpc_frame(method, body=b"", request_id=1):
    return struct.pack("<IIBBHI", 0x50524259, len(body), 1, 0, method, request_id) + body


def refusal_text(data):
    if not data.startswith(b"YBNO") or len(data) < 6:
        return None
    n = data[4] | data[5] << 8
    return data[6:6 + n].decode(errors="replace")


def attacks_from_another_host(d):
    dep = d.name
    node_port = int(d.segments()[0]["endpoint"].rsplit(":", 1)[1])
    # 1. The master's RPC, anonymously, from another host.
    r = d.yb(["segments"], ns=ATTACKER_NS, host=SERVER_IP)
    err = r.stderr.decode()
    if d.secret_file:
        record(dep, "remote RPC without the secret", r.returncode != 0 and "authentication" in err,
               err.strip().splitlines()[-1][:90] if err.strip() else f"exit {r.returncode}")
    else:
        record(dep, "remote RPC without the secret", r.returncode != 0 and "protected mode" in err,
               "refused: " + ("protected mode named" if "protected mode" in err else err.strip()[:80]))
    # 2. Follow (the HA channel: method 100) in a raw frame, from another host.
    back = d.raw(SERVER_IP, d.rpc_port, rpc_frame(100, b"\x0a\x0c10.231.9.2:1"), ATTACKER_NS)
    text = refusal_text(back)
    shipped = len(back) > 16 and back[:4] == b"YBRP"
    record(dep, "remote Follow frame (HA log with grant keys)", not shipped,
           "refused: protected mode" if text else ("answered!" if shipped else "closed, no answer"))
    # 3. Raw bytes to a storage node's transfer port, from another host.
    back = d.raw(SERVER_IP, node_port, b"\x00" * 64, ATTACKER_NS)
    # Served would be a transfer response; refused is the protected server's word, or (with a
    # secret) its hello asking for a proof and nothing more.
    held = back.startswith(b"YBAU") and len(back) <= 24 if d.secret_file else refusal_text(back) is not None
    record(dep, "remote raw write to a transfer port", held,
           "refused: protected mode" if refusal_text(back) else
           "asked for a proof, then closed" if back.startswith(b"YBAU") else f"{len(back)} bytes back")
    # 4. The admin HTTP endpoint, from another host, without a token.
    before = d.segments()[0]["draining"]
    status, body = d.local_http("POST", "/drain?segment=node-1", host=SERVER_IP, ns=ATTACKER_NS)
    drained = d.segments()[0]["draining"] and not before
    record(dep, "remote POST /drain without a token", not drained and status in (401, 403), f"HTTP {status}")


def attacks_on_the_host(d):
    dep = d.name
    # 5. POST /drain on the host itself, no token and a wrong one (a web page could send the first).
    status, _ = d.local_http("POST", "/drain?segment=node-1")
    status2, _ = d.local_http("POST", "/drain?segment=node-1", token="0" * 64)
    held = status == 401 and status2 == 401 and not d.segments()[0]["draining"]
    record(dep, "local POST /drain, no or wrong token", held, f"HTTP {status} / {status2}")
    # ... and with the token the operator reads, which can be undone.
    key = d.admin_key_file
    token_cmd = d.yb(["admin-token"], key=key)
    token = token_cmd.stdout.decode().strip()
    status, _ = d.local_http("POST", "/drain?segment=node-1", token=token)
    drained = d.segments()[0]["draining"]
    status2, _ = d.local_http("POST", "/undrain?segment=node-1", token=token)
    record(dep, "operator: drain with the token, then undrain", status == 200 and drained and status2 == 200 and
           not d.segments()[0]["draining"], f"HTTP {status}, then {status2}")
    # 6. The metadata directory and the files that hold keys.
    meta = d.tmp / "yb-master.data"
    modes = {p.name: p.stat().st_mode & 0o777 for p in meta.iterdir()} if meta.exists() else {}
    loose = {n: oct(m) for n, m in modes.items() if m & 0o077}
    dir_mode = meta.stat().st_mode & 0o777 if meta.exists() else None
    record(dep, "metadata dir and files readable by others", dir_mode == 0o700 and not loose,
           f"dir {oct(dir_mode) if dir_mode else '-'}, {len(modes)} files" + (f", loose {loose}" if loose else ""))


def attacks_with_roles(d):
    dep = d.name
    # 7. A tenant's secret mounts memory (its segments would take other tenants' replicas): refused.
    p = d.spawn("tenant-node", [f"{BIN}/yb-client", "--host", "127.0.0.1", "--port", "0", "--local_hostname",
                                "tenant-node", "--master_server_address", f"127.0.0.1:{d.rpc_port}",
                                "--global_segment_size", "16MB", "--local_buffer_size", "4MB",
                                "--auth_secret_file", d.team_a_file], env=dict(os.environ, YB_TENANT="team-a"))
    time.sleep(3)
    names = {s["name"].split(":")[0] for s in d.segments()}
    p.kill()
    p.wait(10)
    record(dep, "a tenant's secret mounts memory", "tenant-node" not in names,
           "refused" if "tenant-node" not in names else "mounted!")
    # 8. A node's key drains another node, and acts as an operator: refused.
    r = d.yb(["drain", "node-1", "--timeout", "2"], key=d.node_key_file)
    record(dep, "node key drains another node", r.returncode != 0,
           r.stderr.decode().strip().splitlines()[-1][:90] if r.returncode else "drained!")
    r = d.yb(["admin-token"], key=d.node_key_file)
    record(dep, "node key computes the admin token", r.returncode != 0, f"exit {r.returncode}")
    # 10. A host on the path changes one byte the master sends after the handshake: the client sees
    # the change (the frame's MAC fails) and gives up, instead of acting on an altered answer.
    tamper_on_the_path(d)
    # 9. A loose secret file: the master refuses to start with it.
    loose = d.tmp / "loose.secret"
    loose.write_text(SECRET + "\n")
    os.chmod(loose, 0o644)
    r = subprocess.run([f"{BIN}/yb-master", "--rpc_port", str(free_port()), "--metrics_port", "0",
                        "--metadata_dir", "", "--auth_secret_file", str(loose)], capture_output=True, timeout=20)
    out = (r.stdout + r.stderr).decode()
    record(dep, "a secret file others may read", r.returncode != 0 and "chmod 600" in out, f"exit {r.returncode}")


PROXY = '''
import socket, sys, threading
listen, target, flip = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", listen)); srv.listen(8)
def pipe(a, b, at):
    seen = 0
    try:
        while True:
            data = a.recv(65536)
            if not data: break
            if at is not None and seen <= at < seen + len(data):
                data = bytearray(data); data[at - seen] ^= 0x20; data = bytes(data)
            seen += len(data)
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
while True:
    c, _ = srv.accept()
    m = socket.create_connection(("127.0.0.1", target))
    threading.Thread(target=pipe, args=(c, m, None), daemon=True).start()
    threading.Thread(target=pipe, args=(m, c, flip if flip >= 0 else None), daemon=True).start()
'''


def tamper_on_the_path(d):
    dep = d.name
    outcomes = []
    for flip in (-1, 24 + 40 + 6):  # as it is, then a byte of the first frame after hello (24) and answer (40)
        port = free_port()
        proxy = d.spawn(f"proxy-{flip}", [sys.executable, "-c", PROXY, str(port), str(d.rpc_port), str(flip)])
        time.sleep(0.5)
        cmd = in_ns(SERVER_NS) + [f"{BIN}/yb", "--master", f"127.0.0.1:{port}", "--auth_secret_file",
                                  d.secret_file, "exist", "no-such-key"]
        r = subprocess.run(cmd, capture_output=True, timeout=60)
        proxy.kill()
        proxy.wait(10)
        outcomes.append((r.returncode, r.stdout.decode().strip(), r.stderr.decode().strip()))
    (ok_rc, ok_out, _), (bad_rc, bad_out, bad_err) = outcomes
    held = ok_rc == 0 and ok_out == "0" and bad_rc != 0
    record(dep, "a byte changed on the path (no TLS)", held,
           f"untouched: exit {ok_rc} '{ok_out}'; changed: exit {bad_rc} "
           + (bad_err.splitlines()[-1][:60] if bad_err else f"'{bad_out}'"))


# ---- the HA channel, with a secret: a real etcd, two masters on this host (loopback), and callers
# that prove a role's key and then speak the replication calls in raw frames.

def recv_exact(sock, n):
    out = b""
    while len(out) < n:
        b = sock.recv(n - len(out))
        if not b:
            break
        out += b
    return out


def proven_socket(port, key, name):
    """A connection to 127.0.0.1:port that proved `key` under `name` (net/auth.h); None if refused."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    hello = recv_exact(s, 24)
    if hello[:4] != b"YBAU":
        s.close()
        return None
    server_nonce, client_nonce, name = hello[8:24], os.urandom(16), name.encode()
    mac = hmac.new(key.encode(), b"yb-auth-client\0" + server_nonce + client_nonce + name, hashlib.sha256).digest()
    s.sendall(b"YBAP" + bytes([1, 0]) + struct.pack("<H", len(name)) + client_nonce + mac + name)
    answer = recv_exact(s, 40)
    if len(answer) != 40 or answer[:4] != b"YBAA" or answer[4] != 0:
        s.close()
        return None
    return s


def call(sock, method, body):
    """One raw RPC call: (error flag, body) of the answer."""
    sock.sendall(rpc_frame(method, body))
    header = recv_exact(sock, 16)
    if len(header) < 16:
        return True, b"connection closed"
    _, length, _, flags, _, _ = struct.unpack("<IIBBHI", header)
    return bool(flags & 1), recv_exact(sock, length)


def pb_string(field, text):
    data = text.encode()
    return bytes([field << 3 | 2, len(data)]) + data


def pb_varint(field, value):
    out = bytes([field << 3])
    while True:
        b = value & 0x7F
        value >>= 7
        out += bytes([b | (0x80 if value else 0)])
        if not value:
            return out


def etcd_json(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v3/{path}", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        return json.loads(r.read())


def forged_master_view(dep, d, etcd_port):
    """Whoever can write etcd rewrites the leader's name to an address of its own: neither a client
    with the secret nor the standby connects there (the name is signed under the secret)."""
    key = base64.b64encode(b"mooncake-store/mooncake_cluster/master_view").decode()
    kvs = etcd_json(etcd_port, "kv/range", {"key": key}).get("kvs", [])
    signed = base64.b64decode(kvs[0]["value"]) if kvs else b""
    record(dep, "the leader's name in etcd is signed", b" yb-view1 " in signed, signed[:40].decode(errors="replace"))
    fake = socket.socket()
    fake.bind(("127.0.0.1", 0))
    fake.listen(16)
    fake.settimeout(0.2)
    forged = f"127.0.0.1:{fake.getsockname()[1]}".encode()
    try:
        etcd_json(etcd_port, "kv/put", {"key": key, "value": base64.b64encode(forged).decode(), "ignore_lease": True})
        r = subprocess.run([f"{BIN}/yb", "--master", f"etcd://127.0.0.1:{etcd_port}", "--auth_secret_file",
                            d.secret_file, "--wire_macs", "false", "exist", "k"], capture_output=True, timeout=60)
        time.sleep(1)  # the standby looks at etcd every 100 ms
        reached = 0
        while True:
            try:
                conn, _ = fake.accept()
                conn.close()
                reached += 1
            except OSError:
                break
        said = b"signature" in r.stderr
        record(dep, "a forged master_view sends clients and standbys elsewhere", reached == 0 and said,
               f"{reached} connections to the forged address; client: exit {r.returncode}"
               + (", 'no signature' said" if said else ""))
    finally:
        fake.close()
        if signed:
            etcd_json(etcd_port, "kv/put", {"key": key, "value": base64.b64encode(signed).decode(),
                                            "ignore_lease": True})


def attacks_on_the_ha_channel(tmp):
    dep = "secret+HA"
    etcd_bin = shutil.which("etcd")
    if not etcd_bin:
        record(dep, "the HA channel", False, "etcd is not installed (scripts/install_deps.sh installs it)")
        return
    d = Deployment(dep, tmp, secret=True)
    etcd_port, etcd_peer = free_port(), free_port()
    procs = [subprocess.Popen(
        [etcd_bin, "--data-dir", str(tmp / "etcd"), "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
         "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
         "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
         "--initial-cluster", f"default=http://127.0.0.1:{etcd_peer}"],
        stdout=open(tmp / "etcd.log", "ab"), stderr=subprocess.STDOUT)]
    try:
        ports = []
        for i in range(2):
            (tmp / f"m{i}").mkdir()
            rpc, http = free_port(), free_port()
            ports.append((rpc, http))
            procs.append(subprocess.Popen(
                [f"{BIN}/yb-master", "--enable_ha", "true", "--etcd_endpoints", f"127.0.0.1:{etcd_port}",
                 "--rpc_address", "127.0.0.1", "--rpc_port", str(rpc), "--metrics_address", "127.0.0.1",
                 "--metrics_port", str(http), "--auth_secret_file", d.secret_file,
                 # The role checks below are tried in raw frames, which this script writes without
                 # the MACs a secret puts on them by default (tamper_on_the_path tries those).
                 "--wire_macs", "false"],
                stdout=open(tmp / f"m{i}" / "master.log", "ab"), stderr=subprocess.STDOUT, cwd=tmp / f"m{i}"))

        def health(i):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{ports[i][1]}/health?format=json", timeout=1) as r:
                    return json.loads(r.read())
            except OSError:
                return None

        def roles():
            return [(health(i) or {}).get("role") for i in range(2)]

        wait_until(lambda: sorted(filter(None, roles())) == ["leader", "standby"], 30, "a leader and a standby")
        leader = roles().index("leader")
        standby = 1 - leader
        wait_until(lambda: any(s["in_sync"] for s in (health(leader) or {}).get("standbys", [])), 30,
                   "the standby to be in sync")
        leader_rpc, standby_rpc = ports[leader][0], ports[standby][0]
        follow = pb_string(1, "127.0.0.1:1")
        for who, key, name in (("a node key", d.role_key("node"), "@node"),
                               ("an admin key", d.role_key("admin"), "@admin"), ("a tenant's secret", TEAM_A, "team-a")):
            sock = proven_socket(leader_rpc, key, name)
            if sock is None:  # the tenant is unknown to this master (no tenant secrets file): refused at connect
                record(dep, f"Follow with {who}", True, "refused at connect")
                continue
            err, body = call(sock, 100, follow)
            sock.close()
            record(dep, f"Follow with {who}", err and b"masters" in body,
                   body.decode(errors="replace")[1:80] if err else "served!")
        # A master (the cluster secret) that is not the leader etcd names ships a forged log to the
        # standby, under a later epoch: refused, and the standby keeps following its leader.
        sock = proven_socket(standby_rpc, SECRET, "")
        apply_log = pb_varint(1, 1 << 40) + pb_string(2, "127.0.0.1:1") + pb_varint(8, 1) + pb_varint(6, 1)
        err, body = call(sock, 101, apply_log)
        sock.close()
        refused = err or b"etcd names" in body
        record(dep, "forged ApplyLog to a standby", refused and roles()[standby] == "standby",
               "refused: etcd names another leader" if b"etcd names" in body else body.decode(errors="replace")[:80])
        # ... and to the leader: a leader learns that it lost from etcd, never from a caller.
        sock = proven_socket(leader_rpc, SECRET, "")
        call(sock, 101, apply_log)
        sock.close()
        time.sleep(1)
        record(dep, "a forged epoch makes the leader step down", roles()[leader] == "leader",
               "the leader still leads" if roles()[leader] == "leader" else "stepped down!")
        forged_master_view(dep, d, etcd_port)
    except Exception as e:
        record(dep, "the run itself", False, f"{type(e).__name__}: {e}"[:120])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)


def main():
    if os.geteuid() != 0:
        print("red team: needs root for its network namespaces: skipped")
        return 77
    try:
        namespaces = Namespaces().__enter__()
    except subprocess.CalledProcessError as e:
        Namespaces.remove()
        print(f"red team: cannot build network namespaces here ({e.stderr.decode().strip()}): skipped")
        return 77
    with tempfile.TemporaryDirectory(prefix="yb-red-team-") as tmp, namespaces:
        for name, secret in (("default", False), ("secret", True)):
            sub = Path(tmp) / name
            sub.mkdir()
            d = Deployment(name, sub, secret=secret)
            try:
                d.start()
                attacks_from_another_host(d)
                attacks_on_the_host(d)
                if secret:
                    attacks_with_roles(d)
            except Exception as e:  # a broken run is a failure, reported as one
                record(name, "the run itself", False, f"{type(e).__name__}: {e}"[:120])
            finally:
                d.stop()
        ha = Path(tmp) / "ha"
        ha.mkdir()
        attacks_on_the_ha_channel(ha)
    width = max(len(r[1]) for r in rows)
    print(f"{'deployment':<10}  {'attack':<{width}}  {'held':<5}  outcome")
    for dep, attack, outcome, held in rows:
        print(f"{dep:<10}  {attack:<{width}}  {'yes' if held else 'NO':<5}  {outcome}")
    failed = sum(1 for r in rows if not r[3])
    print(f"{len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
