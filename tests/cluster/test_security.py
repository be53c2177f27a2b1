"""Security end to end, as users run it (docs/security.md): a cluster whose master and daemons
prove a secret, the yb tool, Python's setup and the C API given the same secret through their
settings, tenants bound to their secrets with quotas, and TLS. Whatever does not prove the secret
moves no byte and changes nothing."""
import os
import socket
import subprocess
import urllib.error
import urllib.request

import pytest

from conftest import BIN, Cluster, c_api_env

SECRET = "cluster-secret-for-the-tests-0123456789"
TEAM_A = "team-a-secret-for-the-tests-01234"
TEAM_B = "team-b-secret-for-the-tests-56789"
LIB = os.path.join(BIN, "..", "lib", "libyuebing.so")


def write_secret(path, text):
    path.write_text(text + "\n")
    os.chmod(path, 0o600)
    return str(path)


def store(master, **extra):
    from yuebing import MooncakeDistributedStore
    s = MooncakeDistributedStore()
    cfg = {"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE", "global_segment_size": 0,
           "local_buffer_size": 16 << 20, "protocol": "tcp", "master_server_address": master}
    cfg.update(extra)
    return s, s.setup(cfg)


def post(url, token=None):
    req = urllib.request.Request(url, method="POST", data=b"")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def closed_without_answer(sock):
    """True once the peer closed (or reset) the connection without sending a byte."""
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True


@pytest.fixture
def secure(tmp_path):
    """A master and two storage daemons that prove the cluster's secret."""
    c = Cluster(tmp_path)
    c.secret = write_secret(tmp_path / "secret", SECRET)
    auth = ["--auth_secret_file", c.secret]
    c.start_master(extra=auth)
    c.start_client("node-a", extra=auth)
    c.start_client("node-b", extra=auth)
    yield c
    c.stop()


def test_members_with_the_secret_are_served_and_anyone_else_is_refused(secure, monkeypatch):
    c = secure
    # Python, as Mooncake's callers write it, with the secret named by the environment.
    monkeypatch.setenv("YB_AUTH_SECRET_FILE", c.secret)
    s, rc = store(c.address)
    assert rc == 0
    from yuebing import ReplicateConfig
    two = ReplicateConfig()
    two.replica_num = 2
    value = os.urandom(300_000)
    assert s.put("k", value, two) == 0
    assert s.get("k") == value
    monkeypatch.delenv("YB_AUTH_SECRET_FILE")
    # The same without the secret: setup fails, naming what is missing.
    _, rc = store(c.address)
    assert rc != 0
    r = c.yb(["segments"])
    assert r.returncode != 0 and b"asks for authentication" in r.stderr, r.stderr
    wrong = write_secret(c.tmp / "wrong", "not-the-cluster-secret-0123456789")
    r = c.yb(["--auth_secret_file", wrong, "segments"])
    assert r.returncode != 0 and b"refused our proof" in r.stderr, r.stderr
    assert c.yb(["--auth_secret_file", c.secret, "segments"]).returncode == 0

    # An anonymous frame (an UnmountSegment with an owner id /segments publishes): the master
    # closes the connection at its first bytes, and every segment stays.
    segs_before = c.segment_names()
    with socket.create_connection(("127.0.0.1", c.rpc_port), timeout=5) as raw:
        assert raw.recv(24)[:4] == b"YBAU"  # the challenge
        frame = b"YBRP" + (2).to_bytes(4, "little") + bytes([1, 0]) + (5).to_bytes(2, "little") + bytes(4) + b"\x10\x07"
        raw.sendall(frame + bytes(64))
        assert closed_without_answer(raw)
    assert c.segment_names() == segs_before
    # The same at a daemon's transfer server: no byte of its segment comes back.
    endpoint = next(s["endpoint"] for s in c.segments() if s["name"].startswith("node-a"))
    host, port = endpoint.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as raw:
        assert raw.recv(24)[:4] == b"YBAU"
        raw.sendall(b"YBTX" + bytes([1]) + bytes(75))  # a read request with no proof before it
        assert closed_without_answer(raw)

    # The admin endpoint that changes state asks for the token derived from the secret.
    status, _ = post(f"http://127.0.0.1:{c.http_port}/drain?segment=node-b")
    assert status == 401
    token = c.yb(["--auth_secret_file", c.secret, "admin-token"], check=True).stdout.decode().strip()
    status, body = post(f"http://127.0.0.1:{c.http_port}/drain?segment=node-b", token)
    assert status == 200, body


def test_tenant_secrets_bind_tenants_and_quotas_hold(tmp_path, monkeypatch):
    c = Cluster(tmp_path)
    secret = write_secret(tmp_path / "secret", SECRET)
    tenants = tmp_path / "tenants.yaml"
    tenants.write_text(f"team-a: {TEAM_A}\nteam-b: {TEAM_B}\n")
    os.chmod(tenants, 0o600)
    a_file = write_secret(tmp_path / "a", TEAM_A)
    b_file = write_secret(tmp_path / "b", TEAM_B)
    try:
        c.start_master(extra=["--auth_secret_file", secret, "--tenant_secrets_file", str(tenants),
                              "--tenant_quotas", "team-b=64KB"])
        c.start_client("node-a", extra=["--auth_secret_file", secret])
        a, rc = store(c.address, auth_secret_file=a_file, tenant_id="team-a")
        assert rc == 0
        b, rc = store(c.address, auth_secret_file=b_file, tenant_id="team-b")
        assert rc == 0
        # team-a's secret does not make a client of team-b.
        _, rc = store(c.address, auth_secret_file=a_file, tenant_id="team-b")
        assert rc != 0
        assert a.put("k", b"A" * 1000) == 0
        assert b.put("k", b"B" * 1000) == 0
        assert a.get("k") == b"A" * 1000 and b.get("k") == b"B" * 1000
        # Nothing team-b calls reaches team-a's key.
        assert b.remove_all(True) == 1
        assert b.remove("k", True) == -704
        assert b.remove_by_regex(".*", True) == 0
        assert a.get("k") == b"A" * 1000
        # A client of a tenant mounts no memory (--tenants_may_mount false): not at setup, nor a
        # file's range at run time.
        _, rc = store(c.address, auth_secret_file=a_file, tenant_id="team-a", global_segment_size=4 << 20)
        assert rc != 0
        shm = tmp_path / "segment.shm"
        shm.write_bytes(bytes(4 << 20))
        assert a.mount_segment(str(shm), 4 << 20)["ret"] < 0
        # team-b's quota (64 KB, from the flag) holds; raised through the admin endpoint it admits more.
        assert b.put("big", os.urandom(100_000)) == -1700
        token = c.yb(["--auth_secret_file", secret, "admin-token"], check=True).stdout.decode().strip()
        status, body = post(f"http://127.0.0.1:{c.http_port}/tenants/quota?tenant=team-b&bytes=1MB", token)
        assert status == 200, body
        assert b.put("big", os.urandom(100_000)) == 0
        quotas = {t["tenant"]: t for t in __import__("json").loads(c.http("/tenants"))}
        assert quotas["team-b"]["quota"] == 1 << 20 and quotas["team-b"]["used"] >= 100_000
        assert quotas["team-a"]["quota"] is None
    finally:
        c.stop()


# The C API, in a process of its own (libyuebing.so and the Python extension each carry the
# protobuf descriptors; one process loads one of them): puts a value, reads it and another back.
C_PROGRAM = r"""
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1])
lib.mooncake_store_create.restype = ctypes.c_void_p
lib.mooncake_store_setup.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64,
                                     ctypes.c_uint64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
lib.mooncake_store_put.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
lib.mooncake_store_get_into.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
lib.mooncake_store_get_into.restype = ctypes.c_int64
lib.mooncake_store_destroy.argtypes = [ctypes.c_void_p]
h = lib.mooncake_store_create()
rc = lib.mooncake_store_setup(h, b"127.0.0.1", b"P2PHANDSHAKE", 0, 16 << 20, b"tcp", b"", sys.argv[2].encode())
if rc != 0:
    sys.exit(f"setup: {rc}")
data = os.urandom(200_000)
assert lib.mooncake_store_put(h, b"c-key", data, len(data), None) == 0
out = ctypes.create_string_buffer(len(data))
assert lib.mooncake_store_get_into(h, b"c-key", out, len(data)) == len(data)
assert out.raw == data
big = ctypes.create_string_buffer(1 << 20)
assert lib.mooncake_store_get_into(h, b"py", big, 1 << 20) == 1 << 20
lib.mooncake_store_destroy(h)
print("ok")
"""


def test_tls_round_trip_from_c_and_python(tmp_path, monkeypatch):
    certs = tmp_path / "certs"
    certs.mkdir()
    subprocess.run([f"{BIN}/yb-make-test-certs", str(certs)], check=True)
    secret = write_secret(tmp_path / "secret", SECRET)
    server_tls = ["--tls_cert", str(certs / "server.pem"), "--tls_key", str(certs / "server.key"),
                  "--tls_ca", str(certs / "ca.pem"), "--auth_secret_file", secret]
    c = Cluster(tmp_path)
    try:
        c.start_master(extra=server_tls)  # mutual TLS: every peer shows a certificate the CA signed
        c.start_client("node-a", extra=server_tls)
        c.start_client("node-b", extra=server_tls)
        tls = {"tls_cert": str(certs / "client.pem"), "tls_key": str(certs / "client.key"),
               "tls_ca": str(certs / "ca.pem"), "auth_secret_file": secret}
        s, rc = store(c.address, **tls)
        assert rc == 0
        from yuebing import ReplicateConfig
        two = ReplicateConfig()
        two.replica_num = 2
        value = os.urandom(1 << 20)
        assert s.put("py", value, two) == 0
        assert s.get("py") == value
        # Without TLS, or with a certificate of another CA: refused at setup.
        _, rc = store(c.address, auth_secret_file=secret)
        assert rc != 0
        other = dict(tls, tls_cert=str(certs / "other.pem"), tls_key=str(certs / "other.key"))
        _, rc = store(c.address, **other)
        assert rc != 0

        # The C API, configured by the environment as a C program's users would.
        env = c_api_env(YB_TLS_CERT=tls["tls_cert"], YB_TLS_KEY=tls["tls_key"], YB_TLS_CA=tls["tls_ca"],
                        YB_AUTH_SECRET_FILE=secret)
        r = subprocess.run(["/usr/bin/python3", "-c", C_PROGRAM, LIB, c.address], env=env, capture_output=True,
                           timeout=60)
        assert r.returncode == 0 and r.stdout.strip().endswith(b"ok"), r.stderr.decode()[-2000:]
        # And without the TLS settings, the C API's setup fails.
        env.pop("YB_TLS_CA")
        r = subprocess.run(["/usr/bin/python3", "-c", C_PROGRAM, LIB, c.address], env=env, capture_output=True,
                           timeout=60)
        assert r.returncode != 0
    finally:
        c.stop()
