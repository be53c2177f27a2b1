"""The clients of the nemesis test (test_nemesis.py): writers and readers on one store, recording
what every call was told, until told to stop on stdin; then a final read of every acknowledged
object, and one JSON line on stdout.

    python3 nemesis_worker.py MASTER_ADDRESS LOCAL_HOSTNAME SECRET_FILE

Every value is a function of its key (value()), so a read is checked without a copy. For each
acknowledged key the worker keeps the segments that held it at its last check (after its Put, then
every two seconds): a key may be lost only if each of those died with its memory.
"""
import hashlib
import json
import random
import sys
import threading
import time

from yuebing import MooncakeDistributedStore, ReplicateConfig

SIZE = 8 << 10
# Objects kept at most, so that the pool (4 nodes of 128 MiB) stays under its eviction watermark with
# two replicas each: past it a writer removes its oldest object before it writes a new one (an
# evicted object is not a lost one, and is not what this test is about).
KEEP = 12000


def value(key):
    block = hashlib.sha256(key.encode()).digest()
    return (block * (SIZE // len(block) + 1))[:SIZE]


class Worker:
    def __init__(self, store):
        self.store = store
        self.stop = threading.Event()
        self.mu = threading.Lock()
        self.acked = {}     # key -> the segments that held it at its last check
        self.acked_at = {}  # key -> when its Put was acknowledged
        self.puts = []      # [time, code]
        self.reads = []     # [time, "ok" | "miss" | "wrong"]
        self.wrong = []

    def writer(self, tid):
        cfg = ReplicateConfig()
        cfg.replica_num = 2
        i = 0
        while not self.stop.is_set():
            key = f"w{tid}-{i}"
            i += 1
            with self.mu:
                oldest = next(iter(self.acked)) if len(self.acked) >= KEEP else None
                if oldest:
                    del self.acked[oldest]
                    del self.acked_at[oldest]
            if oldest:
                self.store.remove(oldest, force=True)
            t = time.time()
            rc = self.store.put(key, value(key), cfg)
            with self.mu:
                self.puts.append([t, rc])
            if rc == 0:
                holders = [r.segment for r in self.store.get_replica_desc(key)]
                with self.mu:
                    self.acked[key] = holders
                    self.acked_at[key] = time.time()
            time.sleep(0.01)

    def reader(self, seed):
        rng = random.Random(seed)
        while not self.stop.is_set():
            with self.mu:
                keys = list(self.acked)
            if not keys:
                time.sleep(0.05)
                continue
            key = rng.choice(keys)
            t = time.time()
            got = self.store.get(key)
            outcome = "miss" if not got else ("ok" if got == value(key) else "wrong")
            with self.mu:
                self.reads.append([t, outcome])
                if outcome == "wrong":
                    self.wrong.append(key)
            time.sleep(0.005)

    def checker(self):
        while not self.stop.wait(2.0):
            with self.mu:
                keys = list(self.acked)
            if not keys:
                continue
            found = self.store.batch_get_replica_desc(keys)
            with self.mu:
                for k in keys:
                    if found.get(k):
                        self.acked[k] = [r.segment for r in found[k]]

    def final(self):
        """Reads every acknowledged key (in batches; the missing ones again twice, a second apart):
        the keys lost with the segments that held them, and the keys read wrong."""
        lost, wrong = {}, []
        missing = list(self.acked)
        for attempt in range(3):
            if attempt:
                time.sleep(1.0)
            still = []
            for i in range(0, len(missing), 200):
                chunk = missing[i:i + 200]
                for key, got in zip(chunk, self.store.get_batch(chunk)):
                    if not got:
                        still.append(key)
                    elif got != value(key):
                        wrong.append(key)
            missing = still
        for key in missing:
            # What the master says became of it (its table of gone keys): a loss with its node reads
            # node_lost; anything else names another cause.
            why = self.store.get_miss_reason(key)
            lost[key] = {"holders": self.acked[key], "acked_at": self.acked_at[key],
                         "reason": why.get("reason"), "age_ms": why.get("age_ms")}
        return lost, wrong


def main():
    master, host, secret = sys.argv[1], sys.argv[2], sys.argv[3]
    store = MooncakeDistributedStore()
    rc = store.setup({"local_hostname": host, "global_segment_size": 0, "local_buffer_size": 16 << 20,
                      "master_server_address": master, "auth_secret_file": secret})
    print(json.dumps({"ready": rc == 0}), flush=True)
    if rc != 0:
        return
    w = Worker(store)
    threads = [threading.Thread(target=w.writer, args=(t,)) for t in range(2)]
    threads += [threading.Thread(target=w.reader, args=(s,)) for s in range(2)]
    threads.append(threading.Thread(target=w.checker))
    for t in threads:
        t.start()
    sys.stdin.readline()  # "stop"
    w.stop.set()
    for t in threads:
        t.join()
    print(json.dumps({"settled": True}), flush=True)
    sys.stdin.readline()  # "check": the cluster is whole again
    lost, final_wrong = w.final()
    print(json.dumps({"acked": w.acked, "puts": w.puts, "reads": w.reads, "wrong": w.wrong,
                      "final_wrong": final_wrong, "lost": lost}), flush=True)
    store.close()


if __name__ == "__main__":
    main()
