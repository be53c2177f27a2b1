"""The caller replays and every address-taking call with their buffers in fake device memory
(tests/fake_cuda): the CPU cannot touch it, so a pass means no path dereferenced a device address.
With YB_REAL_CUDA=1 (scripts/gpu_check.sh) the same cases run on the machine's driver and GPU.
Run by test_device_memory.py in a process whose library path puts the fake driver first (the
client looks for libcuda.so.1 once per process); not collected on its own (not a test_ file)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("yuebing")
from yuebing import ReplicateConfig, _yuebing  # noqa: E402
from conftest import BIN, c_api_env  # noqa: E402
from fake_cuda import DeviceMemory, FakeCuda, fake_cuda_env, real_cuda  # noqa: E402
from test_callers import pool, run_sglang_backend, run_vllm_worker, store  # noqa: E402,F401

LIB = os.path.join(BIN, "..", "lib", "libyuebing.so")


@pytest.fixture(scope="module")
def cuda():
    c = FakeCuda()
    probe = c.alloc(4096)
    assert _yuebing._is_device_memory(probe), "the client did not load the driver (for the fake: LD_LIBRARY_PATH)"
    c.free(probe)
    return c


def test_vllm_worker_with_kv_caches_in_device_memory(cuda, pool, tmp_path):
    before = cuda.counters()
    run_vllm_worker(pool, tmp_path, lambda: DeviceMemory(cuda))
    after = cuda.counters()
    if after is not None:  # the fake counts what the client did
        assert after["async_copies"] > before["async_copies"]  # through the pinned slots, on a stream
        assert after["live_streams"] <= 8  # pooled (one process: the store's stagers are shared)


@pytest.mark.parametrize("is_mla", [False, True])
def test_sglang_backend_with_its_pool_in_device_memory(cuda, pool, tmp_path, is_mla):
    run_sglang_backend(pool, tmp_path, is_mla, DeviceMemory(cuda))


def round_trips(store, cuda, prefix, n):
    """put_from / get_into / get of `n` bytes of unregistered device memory, single and batched,
    every byte checked; (src, dst, data) for more."""
    data = os.urandom(n)
    src, dst = cuda.alloc(n), cuda.alloc(n)
    cuda.write(src, data)
    assert store.put_from(f"{prefix}/one", src, n) == 0
    assert store.get_into(f"{prefix}/one", dst, n) == n and cuda.read(dst, n) == data
    assert store.get(f"{prefix}/one") == data
    assert store.batch_put_from([f"{prefix}/a", f"{prefix}/b"], [src, src + 1000], [5000, 6000]) == [0, 0]
    assert store.batch_get_into([f"{prefix}/a", f"{prefix}/b"], [dst, dst + 10000], [5000, 6000]) == [5000, 6000]
    assert cuda.read(dst, 5000) == data[:5000] and cuda.read(dst + 10000, 6000) == data[1000:7000]
    return src, dst, data


def test_every_address_taking_call_with_device_memory(cuda, store):
    n = 700_000
    # Unregistered device memory: put_from / get_into, single and batched, upsert.
    src, dst, data = round_trips(store, cuda, "d", n)
    assert store.upsert_from("d/one", src + 1, n - 1) == 0
    assert store.get_into("d/one", dst, n) == n - 1 and cuda.read(dst, n - 1) == data[1:]
    # Registered device memory (what vLLM does), multi-buffer values that mix host and device.
    assert store.register_buffer(src, n) == 0 and store.register_buffer(dst, n) == 0
    host = bytearray(b"h" * 304)
    import ctypes
    hbuf = (ctypes.c_uint8 * len(host)).from_buffer(host)
    assert store.batch_put_from_multi_buffers(["d/m"], [[ctypes.addressof(hbuf), src]], [[304, 4096]],
                                              ReplicateConfig()) == [0]
    assert store.batch_get_into_multi_buffers(["d/m"], [[dst, dst + 304]], [[304, 4096]], True) == [304 + 4096]
    assert cuda.read(dst, 304) == b"h" * 304 and cuda.read(dst + 304, 4096) == data[:4096]
    # put_from_with_metadata: metadata in host memory, data in device memory.
    assert store.put_from_with_metadata("d/meta", src, ctypes.addressof(hbuf), 2048, 304) == 0
    assert store.get("d/meta") == b"h" * 304 + data[:2048]
    # Byte ranges of objects into device memory.
    got = store.get_into_ranges([dst], [["d/one"]], [[[0, 100]]], [[[10, 20]]], [[[50, 60]]])
    assert got == [[[50, 60]]]
    assert cuda.read(dst, 50) == data[11:61] and cuda.read(dst + 100, 60) == data[21:81]
    # A device buffer that runs past its allocation is a per-key code, never a fault.
    assert store.batch_get_into(["d/one", "d/a"], [dst + n - 10, dst], [1000, 5000])[0] < 0
    assert store.put_from("d/past", dst + n - 10, 1000) < 0 and store.is_exist("d/past") == 0
    assert store.unregister_buffer(src) == 0 and store.unregister_buffer(dst) == 0


@pytest.mark.parametrize("same_host", [True, False], ids=["segment-mapped", "relay"])
def test_a_dummy_moves_device_memory(cuda, cluster, same_host):
    """A dummy client's GPU buffers: staged through pinned slots in shared memory, which its real
    client moves bytes into and out of when the dummy does not map the segment itself (the relay)."""
    from test_dummy import dummy, real_client
    cluster.start_master()
    port, _ = real_client(cluster, extra=[] if same_host else ["--same_host_transfers", "false"])
    s = dummy(port)
    try:
        src, dst, _ = round_trips(s, cuda, "g", 3 << 20)
        cuda.free(src)
        cuda.free(dst)
    finally:
        assert s.close() == 0


def test_sessions_with_device_memory(cuda, store):
    layers, page, keys = 4, 100_000, ["s/a", "s/b"]
    data = os.urandom(layers * page)
    src, dst = cuda.alloc(layers * page), cuda.alloc(layers * page * len(keys))
    cuda.write(src, data)
    assert store.batch_put_session_start(keys, [layers * page] * 2) == [0, 0]
    for layer in range(layers):
        assert store.batch_put_from_multi_buffer_ranges(keys, [[src + layer * page]] * 2, [[page]] * 2,
                                                        [[layer * page]] * 2) == [page, page]
    assert store.batch_put_session_end(keys) == [0, 0]
    assert store.batch_get_session_start(keys) == [0, 0]
    for layer in reversed(range(layers)):
        ptrs = [[dst + (k * layers + layer) * page] for k in range(len(keys))]
        assert store.batch_get_into_multi_buffer_ranges(keys, ptrs, [[page]] * 2,
                                                        [[layer * page]] * 2) == [page, page]
    assert store.batch_get_session_end(keys) == 0
    assert cuda.read(dst, layers * page) == data and cuda.read(dst + layers * page, layers * page) == data


def test_tensor_calls_with_device_memory(cuda, store):
    import torch
    t = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    assert store.put_tensor("t/host", t) == 0
    size = 304 + t.numel() * 4
    buf = cuda.alloc(size)
    # Lands in device memory whole; the header is read by a copy, and with a torch that has no
    # CUDA no tensor can view it (logged), as documented.
    res = store.batch_get_tensor_into(["t/host"], [buf], [size])
    assert res == [None] if not torch.cuda.is_available() else torch.equal(res[0].cpu(), t)
    raw = store.get("t/host")
    assert cuda.read(buf, size) == raw
    # A whole tensor object in device memory, split into TP shards (copied out, split on the host).
    assert store.put_tensor_with_tp_from("t/tp", buf, size, tp_size=2, split_dim=1) == 0
    assert torch.equal(store.get_tensor_with_tp("t/tp", tp_rank=1, tp_size=2), t[:, 3:])


C_DEVICE = r"""
import ctypes, sys
sys.path.insert(0, sys.argv[3])
from fake_cuda import FakeCuda
cuda = FakeCuda()
lib = ctypes.CDLL(sys.argv[1])
vp, sz = ctypes.c_void_p, ctypes.c_size_t
lib.mooncake_store_create.restype = vp
lib.mooncake_store_setup.argtypes = [vp, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64,
                                     ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
lib.mooncake_store_put.argtypes = [vp, ctypes.c_char_p, vp, sz, vp]
lib.mooncake_store_put_from.argtypes = [vp, ctypes.c_char_p, vp, sz, vp]
lib.mooncake_store_get_into.argtypes = [vp, ctypes.c_char_p, vp, sz]
lib.mooncake_store_get_into.restype = ctypes.c_int64
lib.mooncake_store_register_buffer.argtypes = [vp, vp, sz]
lib.mooncake_store_unregister_buffer.argtypes = [vp, vp]
lib.mooncake_store_batch_put_from.argtypes = [vp, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(vp),
                                              ctypes.POINTER(sz), sz, vp, ctypes.POINTER(ctypes.c_int)]
lib.mooncake_store_batch_get_into.argtypes = [vp, ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(vp),
                                              ctypes.POINTER(sz), sz, ctypes.POINTER(ctypes.c_int64)]
lib.mooncake_store_destroy.argtypes = [vp]
s = lib.mooncake_store_create()
assert lib.mooncake_store_setup(s, b"127.0.0.1", b"P2PHANDSHAKE", 16 << 20, 16 << 20, b"tcp", b"",
                                sys.argv[2].encode()) == 0
import os
n = 300000
data = os.urandom(n)
kv = cuda.alloc(4 * n)  # a registered KV region, as an engine's
assert lib.mooncake_store_register_buffer(s, kv, 4 * n) == 0
cuda.write(kv, data)
assert lib.mooncake_store_put(s, b"c/put", kv, n, None) == 0
assert lib.mooncake_store_put_from(s, b"c/from", kv + 1, n - 1, None) == 0
keys = (ctypes.c_char_p * 2)(b"c/b0", b"c/b1")
bufs = (vp * 2)(kv, kv + 5000)
sizes = (sz * 2)(5000, 7000)
codes = (ctypes.c_int * 2)()
assert lib.mooncake_store_batch_put_from(s, keys, bufs, sizes, 2, None, codes) == 0 and list(codes) == [0, 0]
assert lib.mooncake_store_get_into(s, b"c/put", kv + n, n) == n and cuda.read(kv + n, n) == data
assert lib.mooncake_store_get_into(s, b"c/from", kv + 2 * n, n) == n - 1 and cuda.read(kv + 2 * n, n - 1) == data[1:]
out = (vp * 2)(kv + 3 * n, kv + 3 * n + 5000)
got = (ctypes.c_int64 * 2)()
assert lib.mooncake_store_batch_get_into(s, keys, out, sizes, 2, got) == 0 and list(got) == [5000, 7000]
assert cuda.read(kv + 3 * n, 12000) == data[:12000]
other = cuda.alloc(1000)  # unregistered, too small for the object: an error code
assert lib.mooncake_store_get_into(s, b"c/put", other, 1000) < 0
assert lib.mooncake_store_unregister_buffer(s, kv) == 0
lib.mooncake_store_destroy(s)
print("C API device check passed")
"""


def test_c_api_with_device_memory(cuda, pool):
    here = os.path.dirname(os.path.abspath(__file__))
    env = c_api_env() if real_cuda() else fake_cuda_env(c_api_env())
    r = subprocess.run([sys.executable, "-c", C_DEVICE, LIB, pool.address, here], capture_output=True, text=True,
                       timeout=60, env=env)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "C API device check passed" in r.stdout
