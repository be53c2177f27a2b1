"""A dummy client in its own process (tests/cluster/test_dummy.py): python3 dummy_worker.py MODE
REAL_CLIENT_ADDRESS ARGS... Prints "ready" once set up; exits 0 when every check held."""
import ctypes
import os
import sys
import time

from mooncake.store import MooncakeDistributedStore, MooncakeHostMemAllocator


def value(n, seed):
    return bytes((i * 131 + seed) % 251 for i in range(min(n, 4096))) * (n // 4096) + \
        bytes((i * 131 + seed) % 251 for i in range(n % 4096))


def tcp_inodes():
    """Inodes of every TCP socket of this host (network namespace)."""
    out = set()
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as f:
                for line in f.readlines()[1:]:
                    out.add(line.split()[9])
        except OSError:
            pass
    return out


def my_socket_inodes():
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(target[8:-1])
    return out


def main():
    mode, address = sys.argv[1], sys.argv[2]
    s = MooncakeDistributedStore()
    rc = s.setup_dummy(0, 16 << 20, address)
    if rc != 0:
        print(f"setup_dummy: {rc}", flush=True)
        return 3
    print("ready", flush=True)
    alloc = MooncakeHostMemAllocator()
    if mode == "mixed":  # every kind of call on keys of its own, and a key every worker reads
        me = int(sys.argv[3])
        shared = s.get("shared")
        assert shared == value(1 << 20, 99), "the shared key came back different"
        for r in range(3):
            keys = [f"w{me}-r{r}-{i}" for i in range(16)]
            vals = [value(4096 * (i + 1) + me + 1, me + i) for i in range(16)]
            assert s.put_batch(keys, vals) == 0
            assert s.get_batch(keys) == vals
            n = 1 << 20
            p = alloc.alloc(4 * n)
            assert p != 0 and s.register_buffer(p, 4 * n) == 0
            ctypes.memmove(p, value(n, me), n)
            assert s.batch_put_from([f"z{me}-{r}"], [p], [n]) == [0]
            assert s.batch_get_into([f"z{me}-{r}"], [p + n], [n]) == [n]
            assert ctypes.string_at(p + n, n) == value(n, me)
            parts = [p + 2 * n, p + 2 * n + 4096]
            got = s.batch_get_into_multi_buffers([keys[0]], [parts], [[4096, me + 1]])
            assert got == [len(vals[0])], got
            assert ctypes.string_at(p + 2 * n, 4096) + ctypes.string_at(p + 2 * n + 4096, me + 1) == vals[0]
            assert s.batch_is_exist(keys[:2] + ["nope"]) == [1, 1, 0]
            assert s.remove(keys[-1], True) == 0 and s.is_exist(keys[-1]) == 0
            assert s.unregister_buffer(p) == 0 and alloc.free(p) == 0
        return 0
    if mode == "loop":  # big upserts and reads of a few keys, until killed
        n = 4 << 20
        p = alloc.alloc(2 * n)
        assert s.register_buffer(p, 2 * n) == 0
        i = 0
        while True:
            ctypes.memmove(p, value(n, i % 7), n)
            s.upsert_from(f"hot-{i % 4}", p, n)
            s.get_into(f"hot-{(i + 1) % 4}", p + n, n)
            i += 1
            print(i, flush=True)
    if mode == "sockets":  # its calls work, and none of its sockets is a TCP one
        assert s.put("mine", b"x" * 100000) == 0 and s.get("mine") == b"x" * 100000
        mine = my_socket_inodes()
        tcp = mine & tcp_inodes()
        print(f"sockets {len(mine)} tcp {len(tcp)}", flush=True)
        return 0 if mine and not tcp else 4
    if mode == "wait":  # answers one line of stdin per call: "put|get|view|held KEY SIZE"
        views = {}
        for line in sys.stdin:
            op, key, size = line.split()
            size = int(size)
            if op == "put":
                rc = s.put(key, value(size, 5))
            elif op == "view":  # get_buffer, kept: 1 in place, 0 a copy, negative when wrong or missing
                h = views[key] = s.get_buffer(key)
                rc = -1 if h is None else (-2 if bytes(h) != value(size, 5) else int(h.in_place))
            elif op == "held":  # the view kept still shows the same bytes
                rc = 0 if bytes(views[key]) == value(size, 5) else -2
            else:
                got = s.get(key)
                rc = 0 if got == value(size, 5) else (-1 if not got else -2)
            print(rc, flush=True)
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
