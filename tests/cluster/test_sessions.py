"""Sessions (issue 33 item 3): Mooncake's layer-wise load and store, against a real yb-master and
storage daemon. A 32-layer load of a batch of objects makes one master round trip (the start; the
end is one-way), counted on the master's own /metrics; the store publishes only at its end."""
import time

import numpy as np
import pytest

pytest.importorskip("yuebing")
from yuebing import MooncakeDistributedStore, ReplicateConfig  # noqa: E402

LAYERS, PAGE, KEYS = 32, 16 << 10, 8


def master_calls(cluster):
    """RPC calls per operation the master has served, Pings apart."""
    out = {}
    for line in cluster.http("/metrics").splitlines():
        if line.startswith('yb_master_requests_total{op="'):
            op = line.split('"')[1]
            if op != "Ping":
                out[op] = float(line.split()[1])
    return out


def calls_between(before, after):
    return {op: after[op] - before.get(op, 0) for op in after if after[op] != before.get(op, 0)}


@pytest.fixture
def store(cluster):
    cluster.start_master()
    cluster.start_client("storage-node", size="256MB")
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 64 << 20, "tcp", "", cluster.address) == 0
    yield s
    s.close()


def test_a_32_layer_session_load_is_one_master_round_trip(cluster, store):
    keys = [f"sess/{i}" for i in range(KEYS)]
    src = np.random.randint(0, 255, (KEYS, LAYERS * PAGE), dtype=np.uint8)
    # Stored layer by layer through a put session: one start, one end.
    assert store.register_buffer(src.ctypes.data, src.nbytes) == 0
    before = master_calls(cluster)
    assert store.batch_put_session_start(keys, [LAYERS * PAGE] * KEYS, ReplicateConfig()) == [0] * KEYS
    for layer in range(LAYERS):
        ptrs = [[src[i, layer * PAGE:].ctypes.data] for i in range(KEYS)]
        assert store.batch_put_from_multi_buffer_ranges(keys, ptrs, [[PAGE]] * KEYS,
                                                        [[layer * PAGE]] * KEYS) == [PAGE] * KEYS
        if layer == 0:
            assert store.batch_is_exist(keys) == [0] * KEYS  # not before the end
    assert store.batch_put_session_end(keys) == [0] * KEYS
    put_calls = calls_between(before, master_calls(cluster))
    assert put_calls.pop("ExistKey", None) == 1, put_calls  # the test's own probe (a batch is one call)
    put_calls.pop("ListSegments", None)  # the storage node's transfer endpoint, learnt once and kept
    assert put_calls == {"PutStart": 1, "PutEnd": 1}, put_calls
    # Loaded layer by layer into per-layer buffers (the engine's KV cache layout).
    dst = np.zeros((LAYERS, KEYS, PAGE), dtype=np.uint8)
    assert store.register_buffer(dst.ctypes.data, dst.nbytes) == 0
    before = master_calls(cluster)
    assert store.batch_get_session_start(keys) == [0] * KEYS
    for layer in range(LAYERS):
        ptrs = [[dst[layer, i].ctypes.data] for i in range(KEYS)]
        assert store.batch_get_into_multi_buffer_ranges(keys, ptrs, [[PAGE]] * KEYS,
                                                        [[layer * PAGE]] * KEYS) == [PAGE] * KEYS
    assert store.batch_get_session_end(keys) == 0
    deadline = time.time() + 5  # the end's ReadEnd is one-way: wait for it to be counted
    while calls_between(before, master_calls(cluster)).get("ReadEnd", 0) < 1 and time.time() < deadline:
        time.sleep(0.05)
    assert calls_between(before, master_calls(cluster)) == {"GetReplicaList": 1, "ReadEnd": 1}
    for layer in range(LAYERS):
        for i in range(KEYS):
            assert np.array_equal(dst[layer, i], src[i, layer * PAGE:(layer + 1) * PAGE])


def test_session_errors_are_per_key_codes(store):
    buf = np.zeros(4096, dtype=np.uint8)
    assert store.put("e/k", b"x" * 1000) == 0
    assert store.batch_get_session_start(["e/k", "e/missing"]) == [0, -704]
    p = buf.ctypes.data
    # Past the object's end, no session, lists that differ: INVALID_PARAMS (-600), nothing moved.
    assert store.batch_get_into_multi_buffer_ranges(["e/k", "e/missing", "e/k"], [[p], [p], [p, p]],
                                                    [[100], [10], [10, 10]], [[950], [0], [0]]) == [-600] * 3
    assert store.remove("e/k") == -706  # pinned by the session
    assert store.batch_get_session_end(["e/k"]) == 0
    assert store.batch_put_session_start(["e/p"], [100]) == [0]
    assert store.batch_put_session_start(["e/p"], [100]) == [-600]  # one session per key
    assert store.batch_put_from_multi_buffer_ranges(["e/p"], [[p]], [[10]], [[95]]) == [-600]
    assert store.batch_put_session_revoke(["e/p"]) == [0]
    assert store.batch_put_session_end(["e/p"]) == [-600]  # gone
    assert store.is_exist("e/p") == 0


def test_a_groups_objects_land_together_over_rpc(cluster):
    """ReplicateConfig.group_ids crosses the RPC to the master, which places a group's objects on
    one segment while they fit (three storage nodes: ungrouped ones spread)."""
    cluster.start_master()
    for name in ("g-a", "g-b", "g-c"):
        cluster.start_client(name, size="64MB")
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.address) == 0
    grouped = ReplicateConfig()
    grouped.group_ids = ["layer-7"] * 12
    keys = [f"grp/{i}" for i in range(12)]
    assert s.batch_put_from_multi_buffers(keys, [[b"x" * 1000]] * 12, [[1000]] * 12, grouped) == [0] * 12
    assert len({s.get_replica_desc(k)[0].segment for k in keys}) == 1
    one = ReplicateConfig()
    one.group_ids = ["layer-7"]
    assert s.put("grp/late", b"y" * 1000, one) == 0
    assert s.get_replica_desc("grp/late")[0].segment == s.get_replica_desc(keys[0])[0].segment
    assert s.batch_put_from_multi_buffers(["grp/bad1", "grp/bad2"], [[b"z"], [b"z"]], [[1], [1]], one) == [-600, -600]
    free = [f"free/{i}" for i in range(12)]
    assert s.batch_put_from_multi_buffers(free, [[b"x" * 1000]] * 12, [[1000]] * 12) == [0] * 12
    assert len({s.get_replica_desc(k)[0].segment for k in free}) > 1
    s.close()
