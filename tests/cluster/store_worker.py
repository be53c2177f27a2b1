"""A long-lived store client for tests that run it on another host (a network namespace): it
sets up a MooncakeDistributedStore and answers one JSON command per line on stdin with one JSON
line on stdout, so that its heartbeats go on between the test's commands.

    python3 store_worker.py MASTER_ADDRESS LOCAL_HOSTNAME [GLOBAL_SEGMENT_BYTES]

Commands: {"op": "put", "prefix", "n", "size", "replicas", "preferred": [...]}, {"op": "read",
"prefix", "n", "size", "seconds"} (reads every object in turn for that long, each checked against
the value written), {"op": "where", "prefix", "n"} (each object's replica segments), {"op": "quit"}.
Values are a function of their key, so any process can check them.
"""
import hashlib
import json
import sys
import time

from yuebing import MooncakeDistributedStore, ReplicateConfig


def value(key, size):
    block = hashlib.sha256(key.encode()).digest()
    return (block * (size // len(block) + 1))[:size]


def keys(prefix, n):
    return [f"{prefix}-{i}" for i in range(n)]


def put(store, cmd):
    cfg = ReplicateConfig()
    cfg.replica_num = cmd.get("replicas", 1)
    if cmd.get("preferred"):
        cfg.preferred_segments = cmd["preferred"]
    codes = [store.put(k, value(k, cmd["size"]), cfg) for k in keys(cmd["prefix"], cmd["n"])]
    return {"codes": codes}


def read(store, cmd):
    ks = keys(cmd["prefix"], cmd["n"])
    expected = {k: value(k, cmd["size"]) for k in ks}
    samples, wrong, failed = [], [], []
    end = time.time() + cmd["seconds"]
    i = 0
    while time.time() < end:
        k = ks[i % len(ks)]
        i += 1
        t0 = time.time()
        got = store.get(k)
        samples.append([t0, time.time() - t0])
        if not got:
            failed.append(k)
        elif got != expected[k]:
            wrong.append(k)
    return {"gets": len(samples), "wrong": wrong, "failed": failed, "samples": samples}


def where(store, cmd):
    return {k: [r.segment for r in store.get_replica_desc(k)] for k in keys(cmd["prefix"], cmd["n"])}


def main():
    master, host = sys.argv[1], sys.argv[2]
    segment = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    store = MooncakeDistributedStore()
    rc = store.setup(host, "P2PHANDSHAKE", segment, 16 << 20, "tcp", "", master)
    print(json.dumps({"ready": rc == 0, "rc": rc}), flush=True)
    ops = {"put": put, "read": read, "where": where}
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "quit":
            break
        print(json.dumps(ops[cmd["op"]](store, cmd)), flush=True)
    store.close()


if __name__ == "__main__":
    main()
