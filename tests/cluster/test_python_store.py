"""The Python package against a real yb-master and yb-client: every MooncakeDistributedStore method,
misses, bad arguments and concurrent use from threads."""
import concurrent.futures
import os
import sys

import numpy as np
import pytest

yuebing = pytest.importorskip("yuebing")
from yuebing import MooncakeDistributedStore, ReplicateConfig  # noqa: E402
from conftest import free_port, wait_until  # noqa: E402


@pytest.fixture
def store(cluster):
    cluster.start_master()
    cluster.start_client("node-a", size="64MB")
    cluster.start_client("node-b", size="64MB")
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 16 << 20, 16 << 20, "tcp", "", cluster.address) == 0
    yield s
    assert s.close() == 0


def test_put_get_exist_size_remove(store):
    assert store.health_check() == 0
    # "host:port" of its transfer server, unique per process, as Mooncake's under P2PHANDSHAKE
    host, port = store.get_hostname().rsplit(":", 1)
    assert host == "127.0.0.1" and port.isdigit() and int(port) > 0
    assert store.put("k", b"hello") == 0
    assert store.put("k", b"hello") == 0  # same size again: a no-op success
    assert store.put("k", b"longer value") == -705
    assert store.get("k") == b"hello"
    assert store.get("missing") == b""
    assert store.is_exist("k") == 1 and store.is_exist("missing") == 0
    assert store.batch_is_exist(["k", "missing", ""]) == [1, 0, -400]
    assert store.get_size("k") == 5 and store.get_size("missing") == -704
    assert store.remove("k") == -706  # just read: leased
    assert store.remove("k", force=True) == 0
    assert store.remove("k") == -704


def test_batches_regex_and_remove_all(store):
    keys = [f"m@{i}" for i in range(10)]
    assert store.put_batch(keys, [bytes([i]) * (i + 1) for i in range(10)]) == 0
    assert store.get_batch(keys[:3] + ["nope"]) == [b"\x00", b"\x01\x01", b"\x02\x02\x02", b""]
    assert store.remove_by_regex("^m@[0-4]$", force=True) == 5
    assert store.batch_remove(["m@5", "nope"], force=True) == [0, -704]
    assert store.remove_all(force=True) == 4


def test_replicate_config(store):
    cfg = ReplicateConfig()
    assert cfg.replica_num == 1 and not cfg.with_soft_pin and not cfg.with_hard_pin
    cfg.replica_num = 2
    cfg.preferred_segments = ["node-b"]
    assert store.put("two", b"x" * 1000, cfg) == 0
    assert store.get("two") == b"x" * 1000


def test_prefer_alloc_in_same_node_puts_the_replica_in_the_writers_segment(store, cluster):
    mine = {int(g["id"]) for g in cluster.segments() if g["name"] == store.get_hostname()}
    near = ReplicateConfig()
    assert near.prefer_alloc_in_same_node is False
    near.prefer_alloc_in_same_node = True
    for i in range(20):
        assert store.put(f"near{i}", b"n" * 5000, near) == 0
        assert {r.segment for r in store.get_replica_desc(f"near{i}")} <= mine, i


def test_zero_copy_with_numpy_bytearray_memoryview_and_addresses(store):
    src = np.arange(4096, dtype=np.uint8)
    dst = np.zeros(4096, dtype=np.uint8)
    assert store.put_from("np", src, src.nbytes) == 0
    assert store.get_into("np", dst, dst.nbytes) == 4096
    assert np.array_equal(src, dst)
    ba = bytearray(4096)
    assert store.get_into("np", ba, len(ba)) == 4096 and bytes(ba) == src.tobytes()
    mv = memoryview(bytearray(5000))
    assert store.get_into("np", mv, 5000) == 4096
    assert store.get_into("np", bytearray(10), 10) == -10  # smaller than the object
    # Integer addresses, as Mooncake's users pass them: registered buffers are the zero-copy path.
    reg = np.zeros(1 << 16, dtype=np.uint8)
    addr = reg.ctypes.data
    assert store.register_buffer(addr, reg.nbytes) == 0
    reg[:100] = 7
    assert store.put_from("addr", addr, 100) == 0
    assert store.get_into("addr", addr + 1000, 100) == 100
    assert (reg[1000:1100] == 7).all()
    assert store.unregister_buffer(addr) == 0
    assert store.unregister_buffer(addr) == -600
    assert store.get_into("addr", addr + 2000, 100) == 100  # no longer registered: staged, as Mooncake over TCP
    assert (reg[2000:2100] == 7).all()


def test_batch_zero_copy_and_multi_buffers(store):
    a, b = np.full(1000, 1, np.uint8), np.full(2000, 2, np.uint8)
    assert store.batch_put_from(["a", "b"], [a, b], [1000, 2000]) == [0, 0]
    oa, ob = np.zeros(1000, np.uint8), np.zeros(1500, np.uint8)
    assert store.batch_get_into(["a", "b"], [oa, ob], [1000, 1500]) == [1000, -10]
    assert (oa == 1).all()
    # A KV block scattered over per-layer buffers, saved and loaded as one object.
    layers = [np.random.default_rng(i).integers(0, 255, 512, dtype=np.uint8) for i in range(4)]
    assert store.batch_put_from_multi_buffers(["blk"], [layers], [[512] * 4]) == [0]
    back = [np.zeros(512, np.uint8) for _ in range(4)]
    assert store.batch_get_into_multi_buffers(["blk", "none"], [back, [np.zeros(8, np.uint8)]],
                                              [[512] * 4, [8]]) == [2048, -704]
    assert all(np.array_equal(x, y) for x, y in zip(layers, back))


def test_bad_arguments_give_clear_errors(store):
    with pytest.raises(TypeError):
        store.put(123, b"x")
    with pytest.raises(TypeError):
        store.put("k", "not bytes")
    with pytest.raises(TypeError, match="int address or a C-contiguous"):
        store.get_into("k", "nope", 10)
    # Bad memory and mismatched lists are answered with codes, as Mooncake answers them.
    assert store.put_from("k", bytearray(10), 100) == -600
    assert store.batch_put_from(["a", "b"], [bytearray(1)], [1]) == [-600, -600]
    assert store.put("", b"x") == -400
    assert store.put("empty", b"") == -600
    assert store.setup("h", "P2PHANDSHAKE") == -600  # already set up


def test_setup_from_dict_and_errors(cluster):
    cluster.start_master()
    cluster.start_client("node-a")
    s = MooncakeDistributedStore()
    assert s.get("k") == b""  # not set up: logged, and answered as a miss
    assert s.setup({"local_hostname": "127.0.0.1", "metadata_server": "P2PHANDSHAKE",
                    "master_server_address": cluster.address, "global_segment_size": "8MB",
                    "local_buffer_size": "4 MB", "protocol": "tcp", "zone": "rack-7"}) == 0
    assert s.put("d", b"dict") == 0 and s.get("d") == b"dict"
    assert [g["zone"] for g in cluster.segments() if g["name"] == s.get_hostname()] == ["rack-7"]
    s.close()
    bad = MooncakeDistributedStore()
    assert bad.setup({"local_hostname": "127.0.0.1", "master_server_address": cluster.address,
                      "zone": "two words"}) == -600  # a zone is one printable word
    assert MooncakeDistributedStore().setup("127.0.0.1", "P2PHANDSHAKE", 0, 1 << 20, "tcp", "",
                                            "127.0.0.1:1") == -900


def test_concurrent_use_from_threads(store):
    def work(t):
        ok = 0
        for i in range(50):
            key = f"t{t}/{i}"
            val = bytes([t]) * (100 + i)
            if store.put(key, val) == 0 and store.get(key) == val:
                ok += 1
        return ok
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        assert sum(ex.map(work, range(8))) == 8 * 50


def test_mooncake_import_shim(store, tmp_path):
    """The shim exports every public name of ours that Mooncake's mooncake.store has, and leaves a
    real Mooncake's other modules importable (its package extends its path)."""
    shim = os.path.join(os.path.dirname(yuebing.__file__), "..", "shim")
    other = tmp_path / "real"  # another install of the `mooncake` package, with a module of its own
    (other / "mooncake").mkdir(parents=True)
    (other / "mooncake" / "__init__.py").write_text(
        "from pkgutil import extend_path\n__path__ = extend_path(__path__, __name__)\n")
    (other / "mooncake" / "engine.py").write_text("ENGINE = 'theirs'\n")
    sys.path[:0] = [shim, str(other)]
    try:
        from mooncake.store import (BufferHandle, MooncakeDistributedStore as M, ReplicaDescriptor,  # noqa: F401
                                    ReplicateConfig as R, SoftPinAction)
        assert M is MooncakeDistributedStore and R is ReplicateConfig
        import mooncake.store
        assert set(yuebing.__all__) <= set(dir(mooncake.store))
        from mooncake.engine import ENGINE
        assert ENGINE == "theirs"
    finally:
        sys.path.remove(shim)
        sys.path.remove(str(other))
        for name in [m for m in sys.modules if m == "mooncake" or m.startswith("mooncake.")]:
            del sys.modules[name]


def test_a_storage_node_restarted_on_its_port_is_used_at_once(cluster):
    """A long-lived client pooled connections to a storage node that then restarted on the same
    port: its first put and get there succeed (on new connections), not just later ones."""
    cluster.start_master()
    port = free_port()
    cluster.start_client("storage", size="64MB", port=port)
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.address) == 0
    try:
        assert s.put("before", b"b" * 200000) == 0
        assert s.get("before") == b"b" * 200000
        cluster.kill_client("storage")
        wait_until(lambda: "storage" not in cluster.segment_names(), 20, "the dead node to be unmounted")
        cluster.start_client("storage", size="64MB", port=port)
        assert s.put("after", b"a" * 200000) == 0
        assert s.get("after") == b"a" * 200000
    finally:
        assert s.close() == 0
