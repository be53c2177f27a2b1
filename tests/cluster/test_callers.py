"""The real callers' call sequences, replayed unchanged against real yb-master and yb-client
processes: LMCache's Mooncake connector (both of its paths), SGLang's HiCache Mooncake backend and
vLLM's MooncakeStoreConnector worker, each with its configuration shape, buffer registration,
existence probes, key format, batch puts and gets, removal and close. docs/compat.md names the
connector file and commit each replay follows. Also: Mooncake's return conventions (per-key codes,
no exceptions for a bad address), tensors shared between processes, and Mooncake's defaults
(init_all, a master started with no flags on port 50051)."""
import ctypes
import json
import os
import struct
import subprocess
import sys
import time
import urllib.request
import uuid

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("yuebing")
from yuebing import MooncakeDistributedStore, ReplicateConfig, SoftPinAction  # noqa: E402
from conftest import BIN, Cluster, c_api_env, client_http, free_port, wait_until  # noqa: E402
from fake_cuda import Cache, HostMemory  # noqa: E402

LIB = os.path.join(BIN, "..", "lib", "libyuebing.so")


@pytest.fixture
def pool(cluster):
    """A master and one storage node, as a deployment with a standalone mooncake_client has."""
    cluster.start_master()
    cluster.start_client("storage-node", size="256MB")
    return cluster


def config_file(tmp_path, name, **values):
    """The JSON file a connector reads (MOONCAKE_CONFIG_PATH and the like)."""
    path = tmp_path / name
    path.write_text(json.dumps(values))
    return str(path)


# ---------------------------------------------------------------------------------------------
# LMCache: lmcache/v1/storage_backend/connector/mooncakestore_connector.py

LMCACHE_META = struct.Struct("<7i")  # RemoteMetadata: length, shape[4], dtype, format (28 bytes)


class LMCacheReplay:
    """What MooncakestoreConnector does, call for call."""

    def __init__(self, config_path):
        with open(config_path) as f:
            cfg = json.load(f)  # MooncakeStoreConfig.from_file, with its defaults
        self.config = {
            "local_hostname": cfg.get("local_hostname"), "metadata_server": cfg.get("metadata_server"),
            "global_segment_size": cfg.get("global_segment_size", 3355443200),
            "local_buffer_size": cfg.get("local_buffer_size", 1073741824), "protocol": cfg.get("protocol", "tcp"),
            "device_name": cfg.get("device_name", ""), "master_server_address": cfg.get("master_server_address"),
            "prefer_local_alloc": cfg.get("prefer_local_alloc", False),
        }
        c = self.config
        self.store = MooncakeDistributedStore()
        rc = self.store.setup(c["local_hostname"], c["metadata_server"], c["global_segment_size"],
                              c["local_buffer_size"], c["protocol"], c["device_name"], c["master_server_address"])
        assert rc == 0
        self.replica_config = ReplicateConfig()
        self.replica_config.replica_num = 1
        if c["prefer_local_alloc"]:
            self.replica_config.preferred_segment = self.store.get_hostname()
        # _register_cpu_buffer: the local CPU backend's pinned buffer, as one uint8 tensor.
        self.cpu_buffer = torch.zeros(16 << 20, dtype=torch.uint8)
        self.registered_buffer_ptr = self.cpu_buffer.data_ptr()
        assert self.store.register_buffer(self.cpu_buffer.data_ptr(), self.cpu_buffer.numel()) == 0
        self.next_free = 0

    def allocate(self, shape, dtype):
        """A memory object carved out of the registered buffer (LocalCPUBackend.allocate)."""
        n = int(np.prod(shape)) * torch.empty((), dtype=dtype).element_size()
        t = self.cpu_buffer[self.next_free:self.next_free + n].view(dtype).view(shape)
        self.next_free += n
        return t

    def exists(self, key):
        return self.store.is_exist(key)

    def put_with_metadata(self, key, kv):  # save_chunk_meta on: LMCache's default
        kv_bytes = memoryview(kv.view(torch.uint8).numpy())
        meta = LMCACHE_META.pack(kv_bytes.nbytes, *kv.shape, 0 if kv.dtype == torch.bfloat16 else 1, 1)
        assert len(meta) == 28
        return self.store.put_parts(key, meta, kv_bytes)

    def batch_get_buffer(self, keys, dtype):
        out = []
        for buf in self.store.batch_get_buffer(keys):
            if buf is None:
                out.append(None)
                continue
            view = memoryview(buf)
            length, *shape, _, _ = LMCACHE_META.unpack(view[:28])
            assert len(view) == length + 28
            obj = self.allocate(shape, dtype)
            count = int(np.prod(shape))
            obj.copy_(torch.frombuffer(buf, dtype=dtype, offset=28, count=count).reshape(shape))
            out.append(obj)
        return out

    def put_without_metadata(self, key, kv):  # save_chunk_meta off: zero copy from the buffer
        return self.store.put_from(key, kv.data_ptr(), kv.numel() * kv.element_size(), self.replica_config)

    def batch_get_into(self, keys, shape, dtype):
        objs = [self.allocate(shape, dtype) for _ in keys]
        res = self.store.batch_get_into(keys, [o.data_ptr() for o in objs],
                                        [o.numel() * o.element_size() for o in objs])
        return [o if n > 0 else None for o, n in zip(objs, res)]

    def close(self):
        assert self.store.unregister_buffer(self.registered_buffer_ptr) == 0
        self.store.close()


def lmcache_key(chunk_hash):
    return f"vllm@Qwen2.5-7B@1@0@{chunk_hash}"  # CacheEngineKey.to_string(): fmt@model@world@worker@hash


def test_lmcache_connector_both_paths(pool, tmp_path):
    path = config_file(tmp_path, "mooncake.json", local_hostname="127.0.0.1", metadata_server="P2PHANDSHAKE",
                       global_segment_size=64 << 20, local_buffer_size=32 << 20, protocol="tcp", device_name="",
                       master_server_address=pool.address, transfer_timeout=1, storage_root_dir="",
                       prefer_local_alloc=True)
    writer, reader = LMCacheReplay(path), LMCacheReplay(path)
    shape = (2, 4, 256, 64)  # [K/V, layers, tokens, hidden]: one chunk
    chunks = [torch.randn(shape).to(torch.bfloat16) for _ in range(3)]

    # The default path: put_parts with the 28-byte header, batch_get_buffer on the other instance.
    keys = [lmcache_key(f"{i:016x}") for i in range(3)]
    for key, kv in zip(keys, chunks):
        assert not writer.exists(key)
        assert writer.put_with_metadata(key, kv) == 0
        assert writer.exists(key) == 1
    got = reader.batch_get_buffer(keys + [lmcache_key("ffff")], torch.bfloat16)
    assert got[3] is None
    assert all(torch.equal(g, kv) for g, kv in zip(got, chunks))

    # The optimized path: put_from out of the registered buffer, batch_get_into into it.
    zkeys = [lmcache_key(f"z{i}") for i in range(3)]
    for key, kv in zip(zkeys, chunks):
        obj = writer.allocate(shape, torch.bfloat16)
        obj.copy_(kv)
        assert writer.put_without_metadata(key, obj) == 0
    # prefer_local_alloc: preferred_segment = get_hostname(), the writer's own segment, got them.
    segment = {int(s["id"]) for s in pool.segments() if s["name"] == writer.store.get_hostname()}
    assert {r.segment for key in zkeys for r in writer.store.get_replica_desc(key)} <= segment
    got = reader.batch_get_into(zkeys + [lmcache_key("missing")], shape, torch.bfloat16)
    assert got[3] is None  # n_read <= 0
    assert all(torch.equal(g, kv) for g, kv in zip(got, chunks))
    writer.close()
    reader.close()


# ---------------------------------------------------------------------------------------------
# SGLang: python/sglang/srt/mem_cache/storage/mooncake_store/mooncake_store.py

class SGLangReplay:
    """MooncakeStore (HiCache storage backend) for one TP rank, page_first host KV layout."""

    def __init__(self, config, tp_rank, tp_size, host_pool, page_bytes, is_mla, http_port):
        self.store = MooncakeDistributedStore()
        # check_server: the master's /get_all_segments answers something before setup.
        master_ip = config["master_server_address"].split(":")[0]
        url = f"http://{master_ip}:{config['master_metrics_port']}/get_all_segments"
        with urllib.request.urlopen(url, timeout=3) as r:
            assert r.read().decode() != ""
        setup_kwargs = {"enable_client_http_server": True, "client_http_port": http_port}
        ret = self.store.setup(config["local_hostname"], config["metadata_server"],
                               config["global_segment_size"] // tp_size, 16 * 1024 * 1024, config["protocol"],
                               config["device_name"], config["master_server_address"], None, **setup_kwargs)
        assert ret == 0
        self.local_rank, self.is_mla = tp_rank, is_mla
        self.mha_suffix, self.mla_suffix = f"{tp_rank}", ""
        self.warmup()
        self.host_pool, self.page_bytes = host_pool, page_bytes
        assert self.store.register_buffer(host_pool.data_ptr(), host_pool.numel() * host_pool.element_size()) == 0

    def warmup(self):
        warmup_key = "sglang_mooncake_store_warmup_key" + uuid.uuid4().hex
        warmup_value = bytes(4 * 1024)
        assert self.store.put(warmup_key, warmup_value) == 0
        assert self.store.is_exist(warmup_key) == 1
        assert self.store.get(warmup_key) == warmup_value

    def buffer_meta(self, keys, pages):
        """_get_mha_buffer_meta / _get_mla_buffer_meta: one object per page (K and V apart for MHA;
        MLA: one object, its per-layer halves as two buffers, packed as _pack_multi_buffer_meta does)."""
        base = self.host_pool.data_ptr()
        key_list, ptrs, sizes = [], [], []
        for key, page in zip(keys, pages):
            start = base + page * self.page_bytes
            half = self.page_bytes // 2
            if self.is_mla:
                key_list.append(f"{key}_{self.mla_suffix}_k")
                ptrs.append([start, start + half])
                sizes.append([half, half])
            else:
                key_list += [f"{key}_{self.mha_suffix}_k", f"{key}_{self.mha_suffix}_v"]
                ptrs += [start, start + half]
                sizes += [half, half]
        return key_list, ptrs, sizes

    def put_batch_zero_copy(self, key_strs, ptrs, sizes):
        if ptrs and isinstance(ptrs[0], list):
            return self.store.batch_put_from_multi_buffers(key_strs, ptrs, sizes, ReplicateConfig())
        return self.store.batch_put_from(key_strs, ptrs, sizes)

    def get_batch_zero_copy(self, key_strs, ptrs, sizes):
        if ptrs and isinstance(ptrs[0], list):
            return self.store.batch_get_into_multi_buffers(key_strs, ptrs, sizes)
        return self.store.batch_get_into(key_strs, ptrs, sizes)

    def multiplier(self):
        return 1 if self.is_mla else 2

    def batch_set_v1(self, keys, pages):
        key_strs, ptrs, sizes = self.buffer_meta(keys, pages)
        exist = self.store.batch_is_exist(key_strs)
        results = [0 if e == 1 else -1 for e in exist]
        missing = [i for i, e in enumerate(exist) if e != 1]
        if missing:
            put = self.put_batch_zero_copy([key_strs[i] for i in missing], [ptrs[i] for i in missing],
                                           [sizes[i] for i in missing])
            for i, r in zip(missing, put):
                results[i] = r
        m = self.multiplier()
        return [all(r == 0 for r in results[i:i + m]) for i in range(0, len(results), m)]

    def batch_exists(self, keys):
        if self.is_mla:
            query = [f"{k}_{self.mla_suffix}_k" for k in keys]
        else:
            query = [q for k in keys for q in (f"{k}_{self.mha_suffix}_k", f"{k}_{self.mha_suffix}_v")]
        exist = self.store.batch_is_exist(query)
        for i, e in enumerate(exist):
            if e != 1:
                return i // self.multiplier()
        return len(query) // self.multiplier()

    def batch_get_v1(self, keys, pages):
        key_strs, ptrs, sizes = self.buffer_meta(keys, pages)
        res = self.get_batch_zero_copy(key_strs, ptrs, sizes)
        m = self.multiplier()
        return [all(r > 0 for r in res[i:i + m]) for i in range(0, len(res), m)]

    def clear(self):
        return self.store.remove_all()


@pytest.mark.parametrize("is_mla", [False, True])
def test_sglang_hicache_backend(pool, tmp_path, is_mla):
    run_sglang_backend(pool, tmp_path, is_mla, HostMemory())


def run_sglang_backend(pool, tmp_path, is_mla, memory):
    """The replay with each rank's host KV pool in `memory` (host, or fake device memory)."""
    path = config_file(tmp_path, "hicache.json", local_hostname="127.0.0.1", metadata_server="P2PHANDSHAKE",
                       global_segment_size=128 << 20, protocol="tcp", device_name="",
                       master_server_address=pool.address, master_metrics_port=pool.http_port, check_server=True)
    with open(path) as f:
        config = json.load(f)
    page_bytes, pages = 64 << 10, 32
    ranks = []
    for rank in range(2):  # two TP ranks, each its own client with half the segment
        host_pool = Cache(memory, (page_bytes * pages,), 1)
        http = free_port()
        ranks.append((SGLangReplay(config, rank, 2, host_pool, page_bytes, is_mla, http), host_pool, http))
    page_keys = [uuid.uuid4().hex for _ in range(8)]  # page hashes
    shared = os.urandom(8 * page_bytes)
    for rank, (r, host_pool, _) in enumerate(ranks):
        # MHA: each rank holds its own heads; MLA: every rank holds the same latent KV, one set of keys.
        memory.write(host_pool.data_ptr(), shared if is_mla else os.urandom(8 * page_bytes))
        assert r.batch_exists(page_keys) == (8 if is_mla and rank > 0 else 0)
        assert r.batch_set_v1(page_keys[:6], list(range(6))) == [True] * 6
        assert r.batch_set_v1(page_keys[:8], list(range(8))) == [True] * 8  # the first 6 exist: skipped
        assert r.batch_exists(page_keys + ["never-written"]) == 8
    for rank, (r, host_pool, _) in enumerate(ranks):
        saved = memory.read(host_pool.data_ptr(), 8 * page_bytes)
        memory.write(host_pool.data_ptr(), bytes(host_pool.nbytes()))
        # Loaded into other pages of the host pool (prefetch), then compared page by page.
        assert r.batch_get_v1(page_keys, list(range(16, 24))) == [True] * 8
        assert memory.read(host_pool.data_ptr() + 16 * page_bytes, 8 * page_bytes) == saved
        if not is_mla:  # each rank's pages under its own keys
            other = ranks[1 - rank][0].mha_suffix
            assert r.store.is_exist(f"{page_keys[0]}_{other}_k") == 1
    # The client HTTP server each rank asked for: metrics and health on its port.
    for r, _, http in ranks:
        assert client_http(http, "/health") == (200, "OK\n")
        status, metrics = client_http(http, "/metrics")
        assert status == 200 and "yb_client_segments" in metrics
        assert client_http(http, "/metrics/summary")[0] == 200
    # clear(): remove_all() skips objects still leased to the readers above (Mooncake's rule);
    # the warmup objects were not read since their own get, a lease ago or less: also kept.
    assert ranks[0][0].clear() >= 0
    assert ranks[0][0].store.remove_all(force=True) > 0
    assert ranks[1][0].batch_exists(page_keys) == 0
    for r, _, _ in ranks:
        assert r.store.close() == 0


# ---------------------------------------------------------------------------------------------
# vLLM: vllm/distributed/kv_transfer/kv_connector/v1/mooncake/store/worker.py

NUM_BLOCKS, BLOCK_TOKENS, HEADS, HEAD_DIM, LAYERS = 64, 16, 4, 32, 3


def vllm_key(block_hash, tp_rank=0):
    return f"Qwen2.5-7B@tp_rank:{tp_rank}@pcp0@dcp0@pp_rank:0@group:0@{block_hash}"


class VLLMReplay:
    """MooncakeStoreWorker: FlashAttention layout, (2, num_blocks, block, heads, dim) per layer."""

    def __init__(self, config_path, memory=None):
        with open(config_path) as f:
            cfg = json.load(f)
        self.store = MooncakeDistributedStore()
        self.memory = memory or HostMemory()
        ret = self.store.setup("127.0.0.1", cfg.get("metadata_server", ""), cfg.get("global_segment_size"),
                               cfg.get("local_buffer_size"), cfg.get("protocol", "rdma"), cfg.get("device_name", ""),
                               cfg.get("master_server_address", ""))
        if ret != 0:
            raise RuntimeError("Initialize MooncakeDistributedStore failed.")
        self.replicate_config = ReplicateConfig()
        # float16 caches (host, or fake device memory: the engine's GPU KV caches).
        self.kv_caches = [Cache(self.memory, (2, NUM_BLOCKS, BLOCK_TOKENS, HEADS, HEAD_DIM), 2) for _ in range(LAYERS)]
        # register_kv_caches: one region per cache storage; K and V segments per layer.
        self.segments, self.block_lens = [], []
        for cache in self.kv_caches:
            storage = cache.untyped_storage() if hasattr(cache, "untyped_storage") else cache.storage()  # torch<2
            base, region = storage.data_ptr(), storage.nbytes()
            assert self.store.register_buffer(base, region) == 0
            seg_stride = cache.stride(0) * cache.element_size()
            for idx in range(cache.shape[0]):
                self.segments.append(base + idx * seg_stride)
                self.block_lens.append(seg_stride // NUM_BLOCKS)

    def prepare_value(self, block_id):
        return ([base + block_id * n for base, n in zip(self.segments, self.block_lens)], list(self.block_lens))

    def save(self, hashes, block_ids):
        keys = [vllm_key(h) for h in hashes]
        exists = self.store.batch_is_exist(keys)
        missing = [i for i, e in enumerate(exists) if e != 1]
        if not missing:
            return []
        values = [self.prepare_value(block_ids[i]) for i in missing]
        res = self.store.batch_put_from_multi_buffers([keys[i] for i in missing], [v[0] for v in values],
                                                      [v[1] for v in values], self.replicate_config)
        return res

    def lookup(self, hashes):
        exists = self.store.batch_is_exist([vllm_key(h) for h in hashes])
        hits = 0
        while hits < len(exists) and exists[hits] == 1:
            hits += 1
        return hits

    def load(self, hashes, block_ids, tier_log=False):
        keys = [vllm_key(h) for h in hashes]
        if tier_log:  # VLLM_MOONCAKE_STORE_TIER_LOG
            tiers = self.store.batch_get_replica_desc(keys)
            assert all(tiers[k] and tiers[k][0].is_memory_replica() for k in keys)
        values = [self.prepare_value(b) for b in block_ids]
        return self.store.batch_get_into_multi_buffers(keys, [v[0] for v in values], [v[1] for v in values])

    def block(self, block_id):
        """The block's bytes in every layer's K and V, read as the engine's memory allows."""
        return b"".join(self.memory.read(base + block_id * n, n) for base, n in zip(self.segments, self.block_lens))


def test_vllm_store_connector_worker(pool, tmp_path):
    # vLLM's MooncakeStoreConfig defaults to protocol "rdma": without an RDMA device it runs over
    # tcp (one warning that names the setting); with YB_STRICT_PROTOCOL=1 setup fails instead.
    rdma = config_file(tmp_path, "rdma.json", metadata_server="P2PHANDSHAKE",
                       master_server_address=pool.address, global_segment_size=32 << 20,
                       local_buffer_size=16 << 20)
    VLLMReplay(rdma).store.close()
    os.environ["YB_STRICT_PROTOCOL"] = "1"
    try:
        with pytest.raises(RuntimeError, match="Initialize MooncakeDistributedStore failed"):
            VLLMReplay(rdma)
    finally:
        del os.environ["YB_STRICT_PROTOCOL"]
    run_vllm_worker(pool, tmp_path, HostMemory)


def run_vllm_worker(pool, tmp_path, memory):
    """Two workers' save, lookup and load with their KV caches in `memory()` (host, or fake device)."""
    path = config_file(tmp_path, "vllm.json", metadata_server="P2PHANDSHAKE", master_server_address=pool.address,
                       protocol="tcp", device_name="", global_segment_size=64 << 20, local_buffer_size=16 << 20)
    producer, consumer = VLLMReplay(path, memory()), VLLMReplay(path, memory())
    for c in producer.kv_caches:
        producer.memory.write(c.data_ptr(), os.urandom(c.nbytes()))
    hashes = [f"{i:032x}" for i in range(10)]
    assert producer.save(hashes[:6], list(range(6))) == [0] * 6
    assert producer.save(hashes, list(range(10))) == [0] * 4  # dedup: only the 4 new blocks
    assert consumer.lookup(hashes + ["f" * 32]) == 10
    targets = list(range(20, 30))
    expected = sum(producer.block_lens)
    assert consumer.load(hashes, targets, tier_log=True) == [expected] * 10
    for src, dst in zip(range(10), targets):
        assert consumer.block(dst) == producer.block(src)
    assert consumer.block(40) == bytes(expected)  # untouched blocks stay zero
    assert consumer.load(["e" * 32], [40])[0] < 0  # a miss is a per-key negative value
    producer.store.close()
    consumer.store.close()


# ---------------------------------------------------------------------------------------------
# Mooncake's return conventions and the calls added for the callers.

@pytest.fixture
def store(pool):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 32 << 20, 16 << 20, "tcp", "", pool.address) == 0
    yield s
    s.close()


def test_unregistered_addresses_work_and_bad_memory_is_a_per_key_code(store):
    raw = (ctypes.c_uint8 * 8192)()  # never registered: staged, as Mooncake over TCP
    addr = ctypes.addressof(raw)
    ctypes.memset(addr, 7, 8192)
    assert store.put_from("raw", addr, 8192) == 0
    out = (ctypes.c_uint8 * 8192)()
    assert store.get_into("raw", ctypes.addressof(out), 8192) == 8192 and bytes(out) == b"\x07" * 8192
    # One key's bad memory answers -600 for that key; the others of the batch go through.
    res = store.batch_put_from(["a", "b", "c"], [bytearray(b"a" * 10), bytearray(4), addr], [10, 100, 50])
    assert res == [0, -600, 0]
    assert store.batch_get_into(["a", "c", "none"], [bytearray(10), bytearray(1), addr], [10, 50, 50]) == \
        [10, -600, -704]
    assert store.put_from("k", bytearray(10), 100) == -600
    assert store.put_from("k", 0, 10) == -600  # a null address
    assert store.batch_put_from(["x", "y"], [bytearray(1)], [1]) == [-600, -600]  # lengths differ
    # Wrong Python types raise, as pybind11 raises them in Mooncake.
    with pytest.raises(TypeError):
        store.put(123, b"x")
    with pytest.raises(TypeError):
        store.get_into("k", "nope", 10)


def test_calls_before_setup_and_after_close_answer_codes(pool):
    s = MooncakeDistributedStore()
    assert s.health_check() == 1
    assert s.put("k", b"v") == -600 and s.get("k") == b"" and s.get_buffer("k") is None
    assert s.batch_is_exist(["a", "b"]) == [-600, -600] and s.batch_get_buffer(["a"]) == [None]
    assert s.get_hostname() == ""
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 1 << 20, "tcp", "", pool.address) == 0
    assert s.health_check() == 0
    assert s.close() == 0
    assert s.health_check() == 1 and s.is_exist("k") == -600


def test_health_check_reports_an_unreachable_master(pool):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 1 << 20, "tcp", "", pool.address) == 0
    assert s.health_check() == 0
    pool.stop_master()
    assert s.health_check() == 2
    s.close()


def test_rdma_runs_as_tcp_unless_strict(pool, capfd, caplog, monkeypatch):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 1 << 20, "rdma", "mlx5_0", pool.address) == 0
    assert s.put("over-tcp", b"x" * 100) == 0 and s.get("over-tcp") == b"x" * 100
    s.close()
    err = capfd.readouterr().err
    assert err.count("running over tcp") == 1 and 'Set the protocol to "tcp"' in err, err
    monkeypatch.setenv("YB_STRICT_PROTOCOL", "1")
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 1 << 20, "efa", "", pool.address) == -1012
    assert 'use protocol "tcp"' in caplog.text  # on the yuebing logger, as every setup failure


def test_the_offload_path_comes_from_the_environment_as_mooncakes_client_reads_it(pool, tmp_path, monkeypatch):
    """enable_ssd_offload without a path: Mooncake's client takes MOONCAKE_OFFLOAD_FILE_STORAGE_PATH."""
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 16 << 20, 1 << 20, "tcp", "", pool.address,
                   enable_ssd_offload=True) != 0  # nowhere to put it
    monkeypatch.setenv("MOONCAKE_OFFLOAD_FILE_STORAGE_PATH", str(tmp_path / "ssd"))
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 16 << 20, 1 << 20, "tcp", "", pool.address,
                   enable_ssd_offload=True) == 0
    assert s.put("to-disk", b"d" * 4096) == 0 and s.get("to-disk") == b"d" * 4096
    assert (tmp_path / "ssd").is_dir()
    s.close()


def test_a_non_default_cluster_id_is_reached_through_mc_store_cluster_id(tmp_path, monkeypatch):
    """SGLang configured by the environment alone (MOONCAKE_PROTOCOL left at its default, rdma)
    reaching a master of another cluster id: Mooncake's clients and its master take it from
    MC_STORE_CLUSTER_ID, and so do ours (the master started with the variable and no flag)."""
    from test_ha import HaCluster, ETCD
    if ETCD is None:
        pytest.skip("etcd is not installed")
    ha = HaCluster(tmp_path, masters=1)
    try:
        monkeypatch.setenv("MC_STORE_CLUSTER_ID", "team-a")
        ha.start_master(0)
        wait_until(lambda: ha.leader() == 0, 15, "the master to lead")
        assert b"mooncake-store/team-a/master_view" in ha.etcdctl("get", "--prefix", "mooncake-store/",
                                                                   "--keys-only").stdout
        # SGLang's MooncakeStoreConfig.load_from_env: only MOONCAKE_MASTER (and a smaller segment than
        # its 4gb default) set; hostname, metadata server, protocol "rdma" and device at its defaults.
        monkeypatch.setenv("MOONCAKE_MASTER", ha.address)
        monkeypatch.setenv("MOONCAKE_GLOBAL_SEGMENT_SIZE", str(16 << 20))
        env = os.environ.get
        segment = env("MOONCAKE_GLOBAL_SEGMENT_SIZE", "4gb").strip().lower()
        segment = int(segment[:-2]) << 30 if segment.endswith("gb") else int(segment)
        s = MooncakeDistributedStore()
        assert s.setup(env("MOONCAKE_LOCAL_HOSTNAME", env("LOCAL_HOSTNAME", "localhost")),
                       env("MOONCAKE_TE_META_DATA_SERVER", "P2PHANDSHAKE"), segment, 16 * 1024 * 1024,
                       env("MOONCAKE_PROTOCOL", "rdma"), env("MOONCAKE_DEVICE", ""), env("MOONCAKE_MASTER")) == 0
        assert s.put("k", b"v" * 64) == 0 and s.get("k") == b"v" * 64
        s.close()
        monkeypatch.delenv("MC_STORE_CLUSTER_ID")
        other = MooncakeDistributedStore()
        assert other.setup("127.0.0.1", "P2PHANDSHAKE", 0, 1 << 20, "tcp", "", ha.address) != 0
    finally:
        ha.stop()


def test_buffers_parts_upserts_and_ranges(store):
    assert store.put_parts("parts", b"head:", memoryview(b"body"), np.arange(3, dtype=np.uint8)) == 0
    buf = store.get_buffer("parts")
    assert len(buf) == buf.size() == 12 and bytes(buf) == b"head:body\x00\x01\x02"
    assert ctypes.string_at(buf.ptr(), 5) == b"head:"
    assert store.get_buffer("none") is None
    assert [None if b is None else bytes(b) for b in store.batch_get_buffer(["parts", "none"])] == \
        [b"head:body\x00\x01\x02", None]
    meta, data = b"M" * 8, np.full(100, 3, np.uint8)
    assert store.put_from_with_metadata("wm", data.ctypes.data, meta, 100, 8) == 0
    assert store.get("wm") == b"M" * 8 + b"\x03" * 100
    # The upsert family replaces what put keeps.
    assert store.upsert("u", b"one") == 0 and store.upsert("u", b"three") == 0 and store.get("u") == b"three"
    assert store.upsert_parts("u", b"a", b"b") == 0 and store.get("u") == b"ab"
    assert store.upsert_from("u", data.ctypes.data, 10) == 0 and store.get("u") == b"\x03" * 10
    assert store.upsert_batch(["u", "v"], [b"x", b"yy"]) == 0 and store.get_batch(["u", "v"]) == [b"x", b"yy"]
    assert store.batch_upsert_from(["u", "v"], [data, data], [5, 6]) == [0, 0]
    assert store.get_size("u") == 5 and store.get_size("v") == 6
    # Byte ranges of two objects into one buffer.
    dst = np.zeros(64, np.uint8)
    assert store.get_into_ranges([dst.ctypes.data], [["parts", "wm", "none"]], [[[0, 20], [40], [50]]],
                                 [[[5, 0], [8], [0]]], [[[4, 5], [3], [1]]]) == [[[4, 5], [3], [-704]]]
    assert bytes(dst[:4]) == b"body" and bytes(dst[20:25]) == b"head:" and bytes(dst[40:43]) == b"\x03" * 3
    assert store.get_into_ranges([dst.ctypes.data], [["parts"]], [[[0]]], [[[10]]], [[[5]]]) == [[[-600]]]
    # Mooncake's shapes: a code per destination offset; a key whose lists differ in length fails
    # alone, the others are read.
    assert store.get_into_ranges([dst.ctypes.data], [["parts", "wm", "parts"]], [[[0], [], [8]]],
                                 [[[0, 1], [], [0]]], [[[], [], [2]]]) == [[[-600], [], [2]]]
    assert store.get_into_ranges([dst.ctypes.data], [["parts"], ["wm"]], [[[0]]], [[[0]]], [[[1]]]) == [[[-600]]]
    # Into a registered buffer, a range that runs past its end is refused and writes nothing
    # (Mooncake's session_ranges test: offset 31, size 4, into 32 bytes).
    guard = np.full(64, 0xEE, np.uint8)
    assert store.register_buffer(guard.ctypes.data, 32) == 0
    assert store.get_into_ranges([guard.ctypes.data], [["parts", "parts"]], [[[31], [0]]], [[[0], [0]]],
                                 [[[4], [4]]]) == [[[-600], [4]]]
    assert bytes(guard[:4]) == b"head" and all(guard[31:] == 0xEE)
    assert store.get_into("parts", guard.ctypes.data + 16, 32) == -600  # get_into: 16 bytes past it
    assert all(guard[16:] == 0xEE)
    assert store.put_from("past", guard.ctypes.data + 30, 8) == -600  # and a write reads no byte past it
    assert store.unregister_buffer(guard.ctypes.data) == 0


def test_replicate_config_fields(store, pool):
    cfg = ReplicateConfig()
    assert cfg.soft_pin_action == SoftPinAction.PRESERVE and cfg.soft_pin_ttl_ms is None
    cfg.soft_pin_action = SoftPinAction.ENABLE
    cfg.soft_pin_ttl_ms = 60000
    cfg.replica_num = 0  # as a zeroed config: one replica
    assert store.put("pinned", b"p" * 100, cfg) == 0
    assert len(store.get_replica_desc("pinned")) == 1
    assert "replica_num=0" in repr(cfg)
    # Mooncake's descriptor accessors: a memory replica's holder endpoint and address.
    [desc] = store.get_replica_desc("pinned")
    mem = desc.get_memory_descriptor().buffer_descriptor
    assert mem.size == 100 and mem.buffer_address > 0 and mem.transport_endpoint.count(":") == 1
    with pytest.raises(RuntimeError):
        desc.get_disk_descriptor()
    # Routing groups (SGLang and Mooncake's structured object store set them): accepted and kept.
    grouped = ReplicateConfig()
    assert grouped.group_ids is None
    grouped.group_ids = ["layer-group"]
    assert grouped.group_ids == ["layer-group"]
    assert store.put("grouped", b"g" * 10, grouped) == 0 and store.get("grouped") == b"g" * 10
    # A TTL goes only with ENABLE: with PRESERVE or DISABLE Mooncake answers INVALID_PARAMS, and so do we.
    for action in (SoftPinAction.PRESERVE, SoftPinAction.DISABLE):
        bad = ReplicateConfig()
        bad.soft_pin_action = action
        bad.soft_pin_ttl_ms = 1000
        assert store.put("bad-pin", b"x" * 10, bad) == -600
        assert store.put_batch(["bad-pin"], [b"x"], bad) == -600
        assert store.is_exist("bad-pin") == 0


def test_a_store_without_a_local_buffer_refuses_python_values_as_mooncake_does(pool):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 0, "tcp", "", pool.address) == 0
    assert s.put("zero-buffer", b"value") == -600
    assert s.put_batch(["zero-buffer"], [b"value"]) == -600
    assert s.put_parts("zero-buffer", b"va", b"lue") == -600
    assert s.is_exist("zero-buffer") == 0
    # From registered memory it needs no staging, here as there.
    buf = np.frombuffer(bytearray(b"registered"), dtype=np.uint8)
    assert s.register_buffer(buf.ctypes.data, buf.nbytes) == 0
    assert s.put_from("zero-buffer", buf.ctypes.data, buf.nbytes) == 0
    assert s.get("zero-buffer") == b"registered"
    s.close()


def test_get_hostname_is_host_port_unique_per_process(pool):
    names = []
    for _ in range(2):
        s = MooncakeDistributedStore()
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 1 << 20, "tcp", "", pool.address) == 0  # no segment
        names.append(s.get_hostname())
        host, port = names[-1].rsplit(":", 1)
        assert host == "127.0.0.1" and 12300 <= int(port) <= 14300  # Mooncake's range
    assert names[0] != names[1]


def test_a_taken_port_in_local_hostname_moves_to_a_free_one(pool, caplog):
    """Two stores given one "host:port" (Mooncake's test_batch_replica_clear sets one up twice in a
    process): the second serves on a free port of Mooncake's range, named after it, with a warning,
    where it used to fail setup with -600."""
    port = free_port()
    stores = [MooncakeDistributedStore() for _ in range(2)]
    for s in stores:
        assert s.setup(f"127.0.0.1:{port}", "P2PHANDSHAKE", 4 << 20, 1 << 20, "tcp", "", pool.address) == 0
    names = [s.get_hostname() for s in stores]
    assert names[0] == f"127.0.0.1:{port}" and names[1] != names[0], names
    assert 12300 <= int(names[1].rsplit(":", 1)[1]) <= 14300
    cfg = ReplicateConfig()
    cfg.preferred_segment = names[1]
    assert stores[0].put("taken-port", b"v" * 1000, cfg) == 0
    assert [d.get_memory_descriptor().buffer_descriptor.transport_endpoint
            for d in stores[0].get_replica_desc("taken-port")] == [names[1]]
    assert stores[0].get("taken-port") == b"v" * 1000
    for s in stores:
        s.close()


def test_batch_replica_clear_leaves_what_is_in_use(cluster):
    """Mooncake's batch_replica_clear: objects read or written within the lease TTL, or being read,
    stay; the others go whole, or lose their replica on the segment named."""
    ttl = 1.0
    cluster.start_master(extra=["--default_kv_lease_ttl", "1000"])
    a, b = MooncakeDistributedStore(), MooncakeDistributedStore()
    for s in (a, b):
        assert s.setup("127.0.0.1", "P2PHANDSHAKE", 8 << 20, 4 << 20, "tcp", "", cluster.address) == 0
    two = ReplicateConfig()
    two.replica_num = 2
    assert a.put("clear/old", b"o" * 100, two) == 0
    assert a.put("clear/read", b"r" * 100) == 0
    assert a.put("clear/both", b"b" * 100, two) == 0
    time.sleep(ttl + 0.3)
    assert a.put("clear/new", b"n" * 100) == 0
    assert a.get("clear/read") == b"r" * 100  # a read's lease
    assert a.batch_replica_clear([]) == []
    assert sorted(a.batch_replica_clear(["clear/old", "clear/read", "clear/new", "clear/none"])) == ["clear/old"]
    assert a.is_exist("clear/old") == 0 and a.get("clear/new") == b"n" * 100
    # On one segment: that replica goes, the other serves.
    assert a.batch_replica_clear(["clear/both"], segment_name="nowhere:1") == []
    assert a.batch_replica_clear(["clear/both"], segment_name=b.get_hostname()) == ["clear/both"]
    assert [d.get_memory_descriptor().buffer_descriptor.transport_endpoint
            for d in a.get_replica_desc("clear/both")] == [a.get_hostname()]
    assert b.get("clear/both") == b"b" * 100
    for s in (a, b):
        s.close()


def test_buffer_pool_leases_registered_buffers_as_mooncakes_does(store):
    """mooncake.store.BufferPool (Mooncake's structured object store leases its zero-copy buffers
    from it): leases are registered (put_from / get_into straight from them), reused by size class,
    bounded, and the pool refuses to close under a lease."""
    from yuebing import BufferPool
    pool = BufferPool(store, max_bytes=1 << 20, min_size_class=4096, alignment=4096)  # raised to 16 MiB:
    # at least the store's local buffer, as Mooncake's
    lease = pool.acquire(3000)
    assert lease.size == 3000
    view = lease.buffer
    view[:] = bytes(range(256)) * 11 + bytes(184)
    view.release()
    assert store.put_from("pool/k", lease.ptr, 3000) == 0
    with pool.acquire(3000) as into:
        assert into.ptr != lease.ptr
        assert store.get_into("pool/k", into.ptr, into.size) == 3000
        assert bytes(into.buffer) == bytes(range(256)) * 11 + bytes(184)
        into_ptr = into.ptr
    again = pool.acquire(4000)  # the same size class: the region just given back
    assert again.ptr == into_ptr
    with pytest.raises(RuntimeError, match="exceeds pool capacity"):
        pool.acquire(32 << 20)
    big = pool.acquire(8 << 20)
    with pytest.raises(RuntimeError, match="exhausted"):
        pool.acquire(8 << 20, block=False)
    with pytest.raises(RuntimeError, match="timed out"):
        pool.acquire(8 << 20, timeout=0.05)
    with pytest.raises(RuntimeError, match="active leases"):
        pool.close()
    for held in (lease, again, big):
        held.release()
    pool.close()
    with pytest.raises(RuntimeError, match="closed"):
        pool.acquire(10)


def test_memory_mounted_and_unmounted_at_run_time(cluster):
    """allocate_and_mount_segment / unmount_and_free_segment (Mooncake's store service resizes a
    node's contribution with them): the new memory takes objects that did not fit before, readable
    from another process; unmounting drops what only it held."""
    cluster.start_master()
    node, reader = MooncakeDistributedStore(), MooncakeDistributedStore()
    assert node.setup("127.0.0.1", "P2PHANDSHAKE", 4 << 20, 16 << 20, "tcp", "", cluster.address) == 0
    assert reader.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.address) == 0
    big = bytes(range(256)) * (6 << 12)  # 6 MiB: more than the first segment
    assert node.put("grown/big", big) != 0
    r = node.allocate_and_mount_segment(8 << 20)
    assert r["ret"] == 0 and r["allocated_size"] == 8 << 20 and r["segment_ids"], r
    assert node.put("grown/big", big) == 0
    assert reader.get("grown/big") == big
    # Unmounting: the id must be this client's; a client without a segment serves none.
    assert node.unmount_and_free_segment(["12345"]) == -101
    assert node.unmount_and_free_segment(["x"]) == -600
    assert reader.allocate_and_mount_segment(1 << 20)["ret"] == -1012
    assert node.unmount_and_free_segment(r["segment_ids"], 0) == 0
    assert reader.get("grown/big") == b"" and node.is_exist("grown/big") == 0
    for s in (node, reader):
        s.close()


def test_a_files_range_mounted_as_a_segment(cluster, tmp_path):
    """mount_segment(path, size, offset): a /dev/shm-style file's range mapped shared and mounted
    (Mooncake's store service mounts shared memory files so); objects put into it are in the file;
    bad ranges, an unaligned offset and a missing file answer a negative code, never a crash."""
    cluster.start_master()
    node, reader = MooncakeDistributedStore(), MooncakeDistributedStore()
    assert node.setup("127.0.0.1", "P2PHANDSHAKE", 0 + (1 << 20), 16 << 20, "tcp", "", cluster.address) == 0
    assert reader.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.address) == 0
    backing = tmp_path / "segment.shm"
    with open(backing, "wb") as f:
        f.truncate(12 << 20)
    big = bytes(range(251)) * ((6 << 20) // 251)  # more than the first segment holds
    assert node.put("filed/big", big) != 0
    assert node.mount_segment(str(backing), 8 << 20, 8 << 20)["ret"] == -600  # past the file's end
    assert node.mount_segment(str(backing), 4 << 20, 100)["ret"] == -600  # not page-aligned
    assert node.mount_segment(str(tmp_path / "none"), 4 << 20)["ret"] < 0
    assert node.mount_segment(str(tmp_path), 4 << 20)["ret"] < 0  # a directory
    r = node.mount_segment(str(backing), 8 << 20, 4 << 20)
    assert r["ret"] == 0 and r["segment_ids"] and "allocated_size" not in r, r
    assert node.put("filed/big", big) == 0
    assert reader.get("filed/big") == big
    assert big[:4096] in backing.read_bytes()[4 << 20:]  # the bytes live in the file
    assert node.unmount_segment(r["segment_ids"]) == 0
    assert node.is_exist("filed/big") == 0
    assert reader.mount_segment(str(backing), 1 << 20)["ret"] == -1012  # serves no transfers
    for s in (node, reader):
        s.close()


NUMA_CHILD = r"""
import logging, os, sys
logging.basicConfig(level=logging.WARNING)
from yuebing import bind_to_numa_node
before = os.sched_getaffinity(0)
bind_to_numa_node(9999)  # no such node: a warning, nothing changed
assert os.sched_getaffinity(0) == before
bind_to_numa_node(0)
print(sorted(os.sched_getaffinity(0)))
"""


def test_bind_to_numa_node_runs_the_thread_on_the_nodes_cpus():
    """mooncake.store.bind_to_numa_node, which LMCache's connector calls for its GPU's node."""
    if not os.path.exists("/sys/devices/system/node/node0/cpulist"):
        pytest.skip("this machine shows no NUMA node")
    r = subprocess.run([sys.executable, "-c", NUMA_CHILD], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Invalid NUMA node: 9999" in r.stderr
    cpus = set()
    for part in open("/sys/devices/system/node/node0/cpulist").read().strip().split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    assert json.loads(r.stdout) == sorted(cpus)


def test_mooncakes_private_tensor_codec_helpers(store):
    """mooncake.store._serialize_tensor / _tensor_metadata_size / _deserialize_tensor, which
    Mooncake's structured object store lays tensors out with: the same object put_tensor writes."""
    import yuebing as mc  # the shim's mooncake.store re-exports these three
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)[:, 1:]  # not contiguous
    header, ptr, nbytes, owner = mc._serialize_tensor(t)
    assert len(header) == mc._tensor_metadata_size() == 304 and nbytes == 36
    whole = bytes(header) + ctypes.string_at(ptr, nbytes)
    assert torch.equal(mc._deserialize_tensor(whole), t)
    assert store.put_tensor("codec/t", t) == 0
    assert store.get("codec/t") == whole
    with pytest.raises(ValueError):
        mc._deserialize_tensor(b"not a tensor")
    del owner


TENSOR_WRITER = r"""
import struct, sys, torch
from yuebing import MooncakeDistributedStore
s = MooncakeDistributedStore()
assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", sys.argv[1]) == 0
assert s.put_tensor("t/bf16", torch.arange(24, dtype=torch.bfloat16).reshape(2, 3, 4)) == 0
assert s.batch_put_tensor(["t/f32", "t/i64", "t/bool", "t/9d", "t/5d"],
                          [torch.ones(7) * 0.5, torch.arange(6).reshape(3, 2), torch.tensor([True, False]),
                           torch.zeros([1] * 9), torch.arange(6).reshape(1, 1, 2, 1, 3)]) == [0, 0, 0, -600, 0]
# Mooncake's format before its PR #1389 (40-byte header: dtype, ndim, shape[4]): still read.
old = struct.pack("<ii4q", 6, 2, 2, 2, -1, -1) + struct.pack("<4i", 1, 2, 3, 4)
assert s.put("t/old", old) == 0
assert s.put_tensor_with_tp("t/tp", torch.arange(10).reshape(5, 2), tp_size=2) == 0
s.close()
"""


def test_tensors_written_by_one_process_read_by_another(store, pool):
    r = subprocess.run([sys.executable, "-c", TENSOR_WRITER, pool.address], capture_output=True, text=True,
                       timeout=60, env=os.environ)
    assert r.returncode == 0, r.stderr
    t = store.get_tensor("t/bf16")
    assert t.dtype == torch.bfloat16 and t.shape == (2, 3, 4) and torch.equal(t, torch.arange(24).reshape(2, 3, 4))
    f32, i64, b, missing, five = store.batch_get_tensor(["t/f32", "t/i64", "t/bool", "t/9d", "t/5d"])
    assert f32.dtype == torch.float32 and torch.equal(f32, torch.ones(7) * 0.5)
    assert i64.shape == (3, 2) and i64.dtype == torch.int64 and b.tolist() == [True, False]
    assert missing is None and torch.equal(five, torch.arange(6).reshape(1, 1, 2, 1, 3))
    old = store.get_tensor("t/old")
    assert old.dtype == torch.int32 and old.tolist() == [[1, 2], [3, 4]]
    # Into a caller buffer: [304-byte header][data]; the tensor views the data there.
    buf = torch.zeros(4096, dtype=torch.uint8)
    into = store.get_tensor_into("t/i64", buf.data_ptr(), 4096)
    assert torch.equal(into, torch.arange(6).reshape(3, 2)) and into.data_ptr() == buf.data_ptr() + 304
    assert store.batch_get_tensor_into(["t/f32", "nope"], [buf.data_ptr(), buf.data_ptr()], [4096, 4096])[1] is None
    # Lists of different lengths: Mooncake's INVALID_PARAMS for each key, not None.
    assert store.batch_get_tensor_into(["t/f32", "nope"], [buf.data_ptr()], [4096, 4096]) == [-600, -600]
    assert torch.equal(store.get_tensor_with_tp("t/tp", tp_rank=1, tp_size=2), torch.tensor([[6, 7], [8, 9]]))
    # A whole tensor object in caller memory, split and stored as every rank's shard (Mooncake's
    # put_tensor_with_tp_from), and a batch of them.
    whole = store.get_tensor_into("t/i64", buf.data_ptr(), 4096)
    n = 304 + whole.numel() * whole.element_size()
    assert store.put_tensor_with_tp_from("t/from", buf.data_ptr(), n, tp_rank=1, tp_size=2, split_dim=1) == 0
    assert [t.tolist() for t in store.batch_get_tensor_with_tp(["t/from"], tp_rank=0, tp_size=2)] == [[[0], [2], [4]]]
    assert store.get_tensor_with_tp("t/from", tp_rank=1, tp_size=2).tolist() == [[1], [3], [5]]
    assert store.batch_put_tensor_with_tp_from(["t/from2", "t/bad"], [buf.data_ptr(), buf.data_ptr()], [n, 7],
                                               tp_size=3) == [0, -600]
    assert store.get_tensor_with_tp("t/from2", tp_rank=2, tp_size=3).tolist() == [[4, 5]]
    # The format is Mooncake's (PR #1389): magic, version, header size, dtype, ndim, layout, flags,
    # data offset and bytes, global and local shape[8] (-1 past ndim), the axes; then the bytes.
    raw = store.get("t/i64")
    assert len(raw) == 304 + 48
    assert struct.unpack_from("<IHHiiIIQQ", raw) == (0x4D4F4F4E, 1, 304, 8, 2, 0, 0, 304, 48)
    assert struct.unpack_from("<8q", raw, 40) == (3, 2, -1, -1, -1, -1, -1, -1) == struct.unpack_from("<8q", raw, 104)
    assert struct.unpack_from("<II", raw, 168) == (0, 0)
    # A tensor-parallel shard says so: a shard object of the whole shape, with its rank on a TP axis.
    shard = store.get("t/tp_tp_1")
    assert struct.unpack_from("<IHHiiIIQQ", shard)[5] == 1  # layout: shard
    assert struct.unpack_from("<8q", shard, 40)[:2] == (5, 2) and struct.unpack_from("<8q", shard, 104)[:2] == (2, 2)
    assert struct.unpack_from("<II", shard, 168)[0] == 1
    assert struct.unpack_from("<iiiiiiq", shard, 176) == (1, 0, 1, 2, 0, 0, 2)
    assert store.get_tensor("missing") is None
    assert store.put_tensor("not", "a tensor") == -600
    # Upserts replace a tensor whatever its size.
    assert store.batch_upsert_tensor(["t/i64", "t/new"], [torch.zeros(2), torch.ones(3, dtype=torch.int8)]) == [0, 0]
    assert torch.equal(store.get_tensor("t/i64"), torch.zeros(2)) and store.get_tensor("t/new").tolist() == [1, 1, 1]


# ---------------------------------------------------------------------------------------------
# Mooncake's defaults: a master started with no flags listens on 50051; init_all and a setup
# that names no master find it there.

C_INIT_ALL = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.mooncake_store_create.restype = ctypes.c_void_p
for f in ("mooncake_store_init_all", "mooncake_store_health_check", "mooncake_store_put", "mooncake_store_destroy",
          "mooncake_store_get_into", "mooncake_store_setup"):
    getattr(lib, f).argtypes = None
lib.mooncake_store_init_all.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64]
lib.mooncake_store_health_check.argtypes = [ctypes.c_void_p]
lib.mooncake_store_put.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
lib.mooncake_store_get_into.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
lib.mooncake_store_get_into.restype = ctypes.c_int64
lib.mooncake_store_setup.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64,
                                     ctypes.c_uint64, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
lib.mooncake_store_destroy.argtypes = [ctypes.c_void_p]
s = lib.mooncake_store_create()
assert lib.mooncake_store_health_check(s) == 1
assert lib.mooncake_store_init_all(s, b"tcp", b"", 16 << 20) == 0
assert lib.mooncake_store_health_check(s) == 0
assert lib.mooncake_store_put(s, b"c-key", b"from C", 6, None) == 0
t = lib.mooncake_store_create()
assert lib.mooncake_store_setup(t, b"localhost", None, 0, 1 << 20, b"tcp", None, None) == 0  # NULL master
out = ctypes.create_string_buffer(16)
assert lib.mooncake_store_get_into(t, b"py-key", out, 16) == 7 and out.raw[:7] == b"from py"
assert lib.mooncake_store_get_into(t, b"c-key", out, 16) == 6 and out.raw[:6] == b"from C"
lib.mooncake_store_destroy(t)
lib.mooncake_store_destroy(s)
"""


def test_mooncake_defaults_init_all_and_port_50051(tmp_path):
    probe = Cluster(tmp_path)
    master = subprocess.Popen([f"{BIN}/yb-master"], cwd=tmp_path, stdout=open(tmp_path / "master.log", "wb"),
                              stderr=subprocess.STDOUT)
    try:
        probe.http_port = 9003  # --metrics_port's default, Mooncake's
        wait_until(probe.http_ok, 10, "yb-master on its default ports")
        s = MooncakeDistributedStore()
        assert s.init_all("tcp", "") == 0
        assert s.put("py-key", b"from py") == 0
        r = subprocess.run([sys.executable, "-c", C_INIT_ALL, LIB], capture_output=True, text=True, timeout=60,
                           env=c_api_env())
        assert r.returncode == 0, r.stderr
        d = MooncakeDistributedStore()
        assert d.setup({"local_hostname": "127.0.0.1"}) == 0  # setup(dict) without a master: the default too
        assert d.get("py-key") == b"from py"
        d.close()
        s.close()
    finally:
        master.kill()
        master.wait(10)


def test_safetensors_helpers_write_and_read_the_format(store, tmp_path):
    """save_tensor_to_safetensor / load_tensor_from_safetensor (Mooncake's arguments and codes); the
    file is the safetensors format (read back by hand here: Debian has no safetensors package)."""
    t = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
    assert store.put_tensor("st/w", t) == 0
    path = tmp_path / "w.safetensors"
    assert store.save_tensor_to_safetensor("st/w", str(path)) == 0
    raw = path.read_bytes()
    (n,) = struct.unpack_from("<Q", raw)
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header == {"st/w": {"dtype": "BF16", "shape": [3, 4], "data_offsets": [0, 24]}}
    assert raw[8 + n:] == t.view(torch.uint8).numpy().tobytes()
    assert store.save_tensor_to_safetensor("st/missing", str(tmp_path / "x")) == -1100
    # A file as another writer makes it: metadata, two tensors, padding; the named entry is stored.
    a, b = torch.ones(2, 3, dtype=torch.float32), torch.arange(5, dtype=torch.int64)
    head = json.dumps({"__metadata__": {"format": "pt"},
                       "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
                       "b": {"dtype": "I64", "shape": [5], "data_offsets": [24, 64]}}).encode()
    head += b" " * (-len(head) % 8)
    other = tmp_path / "other.safetensors"
    other.write_bytes(struct.pack("<Q", len(head)) + head + a.numpy().tobytes() + b.numpy().tobytes())
    got = store.load_tensor_from_safetensor("b", str(other))
    assert torch.equal(got, b) and torch.equal(store.get_tensor("b"), b)
    assert torch.equal(store.load_tensor_from_safetensor("st/first", str(other)), a)  # no such entry: the first
    assert store.load_tensor_from_safetensor("st/none", str(tmp_path / "absent")) is None
    (tmp_path / "junk").write_bytes(b"\xff" * 16)
    assert store.load_tensor_from_safetensor("st/junk", str(tmp_path / "junk")) is None
    assert store.is_exist("st/junk") == 0
