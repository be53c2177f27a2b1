"""A small paged-attention engine in numpy that keeps its prefix KV cache in Yuebing.

One attention layer with fixed random weights (the same in every process). Tokens are grouped in
blocks of 16; each full block is named by a chained hash of all tokens up to its end. Each request
has a block table (logical block -> physical block id) over a fixed pool of device blocks with a
free-block queue and reference counts. The connector saves computed K/V blocks to the store
(batch_is_exist, then batch_put_from_multi_buffers) under vLLM-shaped keys, and for a new request
finds the longest stored prefix, allocates fresh blocks, loads them (batch_get_into_multi_buffers),
writes the new block ids into the block table and computes only the rest.

With --connector lmcache the blocks travel as LMCache's Mooncake connector moves them by default
(save_chunk_meta on): one object per block holding a 28-byte metadata header and the block's K and
V bytes, saved with put_parts after an is_exist probe, loaded with batch_get_buffer and copied out
of the returned buffers, under LMCache-shaped keys ("vllm@model@world_size@worker@hash").

Run as an "instance": python3 engine.py --master HOST:PORT --prompt-seed S --shared-prefix N ...
or, as a dummy client of this host's yb-client (Mooncake's standalone mode), --real-client HOST:PORT.
It prints one JSON line: hit blocks, prefill times, and whether the output with loaded blocks
equals a full recompute exactly.
"""
import argparse
import collections
import ctypes
import hashlib
import json
import struct
import time

import numpy as np

BLOCK = 16
MODEL = "yuebing-demo-attn"


class Layer:
    """One attention layer; weights depend only on the seed, so every process has the same."""

    def __init__(self, vocab=1000, dim=256, heads=8, seed=1234):
        rng = np.random.default_rng(seed)
        self.dim, self.heads, self.hd = dim, heads, dim // heads
        self.embed = rng.standard_normal((vocab, dim))
        self.wq, self.wk, self.wv = (rng.standard_normal((dim, dim)) / np.sqrt(dim) for _ in range(3))
        # Extra work per block, standing in for the layers a real model would run before this one.
        self.mix = [rng.standard_normal((dim, dim)) / np.sqrt(dim) for _ in range(24)]

    def hidden(self, tokens):
        """Hidden states of one block of tokens (always a (16, dim) computation: bit-exact)."""
        h = self.embed[tokens]
        for w in self.mix:
            h = np.tanh(h @ w)
        return h

    def kv(self, tokens):
        h = self.hidden(tokens)
        return h @ self.wk, h @ self.wv

    def attend(self, q_tokens_h, keys, values, first_pos):
        """Causal attention of queries at positions first_pos.. over keys/values [0, pos]."""
        q = q_tokens_h @ self.wq
        out = np.empty_like(q)
        for i in range(q.shape[0]):
            n = first_pos + i + 1
            for hh in range(self.heads):
                s = slice(hh * self.hd, (hh + 1) * self.hd)
                scores = keys[:n, s] @ q[i, s] / np.sqrt(self.hd)
                p = np.exp(scores - scores.max())
                out[i, s] = (p / p.sum()) @ values[:n, s]
        return out


class BlockPool:
    """Device blocks: K and V per block, a free-block queue and reference counts."""

    def __init__(self, num_blocks, dim, allocator=None):
        if allocator is None:
            self.k = np.zeros((num_blocks, BLOCK, dim))
            self.v = np.zeros((num_blocks, BLOCK, dim))
        else:  # memory the store's real client moves blocks into directly (a dummy client's)
            n = num_blocks * BLOCK * dim
            self.ptr = allocator.alloc(2 * n * 8)
            if self.ptr == 0:
                raise RuntimeError("cannot allocate the block pool")
            whole = np.ctypeslib.as_array((ctypes.c_double * (2 * n)).from_address(self.ptr))
            self.k = whole[:n].reshape(num_blocks, BLOCK, dim)
            self.v = whole[n:].reshape(num_blocks, BLOCK, dim)
        self.free = collections.deque(range(num_blocks))
        self.refs = [0] * num_blocks

    def allocate(self):
        if not self.free:
            raise RuntimeError("out of device blocks")
        b = self.free.popleft()
        self.refs[b] = 1
        return b

    def release(self, b):
        self.refs[b] -= 1
        if self.refs[b] == 0:
            self.free.append(b)


def block_hashes(tokens):
    """Chained hashes: block i's hash covers every token up to the end of block i."""
    out, prev = [], b""
    for i in range(len(tokens) // BLOCK):
        prev = hashlib.sha256(prev + np.asarray(tokens[i * BLOCK:(i + 1) * BLOCK], np.int64).tobytes()).digest()
        out.append(prev.hex())
    return out


def key_of(block_hash):
    return f"{MODEL}@tp_rank:0@pcp0@dcp0@pp_rank:0@group:0@{block_hash}"


class Connector:
    """Saves and loads K/V blocks through the store."""

    def __init__(self, store, pool):
        self.store, self.pool = store, pool

    def save(self, hashes, block_table):
        keys = [key_of(h) for h in hashes]
        exist = self.store.batch_is_exist(keys)
        missing = [i for i, e in enumerate(exist) if e != 1]
        if not missing:
            return 0
        bufs = [[self.pool.k[block_table[i]], self.pool.v[block_table[i]]] for i in missing]
        sizes = [[b.nbytes for b in pair] for pair in bufs]
        res = self.store.batch_put_from_multi_buffers([keys[i] for i in missing], bufs, sizes)
        return sum(1 for r in res if r == 0)

    def load_prefix(self, hashes, block_table):
        """Loads the longest stored prefix into fresh blocks; returns how many blocks it loaded."""
        exist = self.store.batch_is_exist([key_of(h) for h in hashes])
        hits = 0
        while hits < len(exist) and exist[hits] == 1:
            hits += 1
        if hits == 0:
            return 0
        fresh = [self.pool.allocate() for _ in range(hits)]
        bufs = [[self.pool.k[b], self.pool.v[b]] for b in fresh]
        sizes = [[x.nbytes for x in pair] for pair in bufs]
        res = self.store.batch_get_into_multi_buffers([key_of(h) for h in hashes[:hits]], bufs, sizes)
        want = sum(sizes[0])
        loaded = 0
        while loaded < hits and res[loaded] == want:  # a block lost meanwhile ends the prefix
            loaded += 1
        block_table.extend(fresh[:loaded])
        for b in fresh[loaded:]:
            self.pool.release(b)
        return loaded


class LMCacheConnector:
    """The same blocks through LMCache's default Mooncake path: put_parts(key, metadata, kv bytes)
    and batch_get_buffer, a 28-byte header (length, 4 shape dims, dtype, format as int32) first."""

    META = struct.Struct("<7i")  # LMCache's RemoteMetadata is 28 bytes: 7 int32
    FLOAT64, KV_2LTD = 7, 1     # the dtype and memory-format numbers written in the header

    def __init__(self, store, pool):
        self.store, self.pool = store, pool

    @staticmethod
    def key(block_hash):
        return f"vllm@{MODEL}@1@0@{block_hash}"

    def save(self, hashes, block_table):
        saved = 0
        for h, b in zip(hashes, block_table):
            if self.store.is_exist(self.key(h)) == 1:
                continue
            kv = np.stack([self.pool.k[b], self.pool.v[b]])  # the chunk: [K/V, tokens, dim]
            meta = self.META.pack(kv.nbytes, *kv.shape, 0, self.FLOAT64, self.KV_2LTD)
            if self.store.put_parts(self.key(h), meta, memoryview(kv).cast("B")) == 0:
                saved += 1
        return saved

    def load_prefix(self, hashes, block_table):
        hits = 0
        while hits < len(hashes) and self.store.is_exist(self.key(hashes[hits])) == 1:
            hits += 1
        if hits == 0:
            return 0
        loaded = 0
        for buf in self.store.batch_get_buffer([self.key(h) for h in hashes[:hits]]):
            if buf is None:  # lost meanwhile: the prefix ends here
                break
            length, d0, d1, d2, _, dtype, fmt = self.META.unpack_from(memoryview(buf), 0)
            assert (dtype, fmt) == (self.FLOAT64, self.KV_2LTD) and len(buf) == length + self.META.size
            kv = np.frombuffer(buf, dtype=np.float64, count=length // 8, offset=self.META.size).reshape(d0, d1, d2)
            b = self.pool.allocate()
            self.pool.k[b], self.pool.v[b] = kv[0], kv[1]
            block_table.append(b)
            loaded += 1
        return loaded


def prefill(layer, pool, tokens, block_table, start_block):
    """Computes K/V for blocks start_block.. into fresh device blocks; returns the last block's output."""
    for i in range(start_block, len(tokens) // BLOCK):
        b = pool.allocate()
        pool.k[b], pool.v[b] = layer.kv(tokens[i * BLOCK:(i + 1) * BLOCK])
        block_table.append(b)
    keys = np.concatenate([pool.k[b] for b in block_table])
    values = np.concatenate([pool.v[b] for b in block_table])
    last = len(block_table) - 1
    q_tokens = tokens[last * BLOCK:(last + 1) * BLOCK]
    return layer.attend(layer.hidden(q_tokens), keys, values, last * BLOCK)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--master", help="host:port of a yb-master: this engine is a client of the pool")
    where.add_argument("--real-client", help="host:port of this host's yb-client: this engine is its dummy client "
                       "(setup_dummy), its block pool in memory from MooncakeHostMemAllocator")
    ap.add_argument("--prompt-seed", type=int, default=1, help="seed of this request's own tokens")
    ap.add_argument("--shared-prefix", type=int, default=256, help="tokens shared by every request")
    ap.add_argument("--tokens", type=int, default=512, help="prompt length (a multiple of 16)")
    ap.add_argument("--connector", choices=["vllm", "lmcache"], default="vllm",
                    help="move blocks as vLLM's connector (multi-buffer batches) or LMCache's (put_parts + "
                    "batch_get_buffer)")
    args = ap.parse_args()
    from yuebing import MooncakeDistributedStore, MooncakeHostMemAllocator

    store = MooncakeDistributedStore()
    if args.real_client:
        rc = store.setup_dummy(0, 16 << 20, args.real_client)
    else:
        rc = store.setup("127.0.0.1", "P2PHANDSHAKE", 0, 64 << 20, "tcp", "", args.master)
    if rc != 0:
        raise SystemExit(f"setup failed: {rc}")
    layer = Layer()
    shared = np.random.default_rng(99).integers(0, 1000, args.shared_prefix)
    own = np.random.default_rng(args.prompt_seed).integers(0, 1000, args.tokens - args.shared_prefix)
    tokens = np.concatenate([shared, own])
    hashes = block_hashes(tokens)

    pool = BlockPool(num_blocks=4 * len(hashes), dim=layer.dim,
                     allocator=MooncakeHostMemAllocator() if args.real_client else None)
    if args.real_client:
        for part in (pool.k, pool.v):
            if store.register_buffer(part.ctypes.data, part.nbytes) != 0:
                raise SystemExit("register_buffer failed")
    conn = (LMCacheConnector if args.connector == "lmcache" else Connector)(store, pool)
    table = []
    t0 = time.perf_counter()
    hits = conn.load_prefix(hashes, table)
    t1 = time.perf_counter()
    out = prefill(layer, pool, tokens, table, start_block=hits)
    t2 = time.perf_counter()
    saved = conn.save(hashes, table)

    # The same request recomputed from scratch, without the store.
    full_pool, full_table = BlockPool(num_blocks=len(hashes), dim=layer.dim), []
    t3 = time.perf_counter()
    full = prefill(layer, full_pool, tokens, full_table, start_block=0)
    t4 = time.perf_counter()
    print(json.dumps({
        "blocks": len(hashes), "hit_blocks": hits, "hit_rate": hits / len(hashes), "saved_blocks": saved,
        "load_s": t1 - t0, "prefill_with_store_s": t2 - t0, "prefill_full_s": t4 - t3,
        "prefill_saved_s": (t4 - t3) - (t2 - t0), "exact_match": bool(np.array_equal(out, full)),
    }))
    store.close()


if __name__ == "__main__":
    main()
