"""Long multi-process workloads, a minute or more each: a full pool that keeps taking writes, and
storage daemons killed and restarted every few seconds while re-replication heals. Marked `long`:
ctest runs them as `cluster_long_tests` in the plain build only (the sanitizer builds run the rest
of the cluster tests). YB_LONG_SCALE scales their durations: the suite runs them at a third of their
length (the default, 0.34), a soak at full length with YB_LONG_SCALE=1 (README.md). (At 0.2 the
kill loop's judgement of which losses are excused missed some: see the issue's note.)"""
import hashlib
import os
import random
import threading
import time

import pytest

yuebing = pytest.importorskip("yuebing")
from yuebing import MooncakeDistributedStore, ReplicateConfig  # noqa: E402
from conftest import daemon_name, wait_until  # noqa: E402

pytestmark = pytest.mark.long

NO_SPACE = -200       # NO_AVAILABLE_HANDLE: the Put was refused for want of space
OTHER_SIZE = -705     # the key holds a value of another size (values are immutable)
SCALE = float(os.environ.get("YB_LONG_SCALE", "0.34"))


def value(key, size):
    block = hashlib.sha256(f"{key}/{size}".encode()).digest()
    return (block * (size // len(block) + 1))[:size]


def new_store(address):
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", address) == 0
    return s


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.c = {}
        self.errors = []

    def add(self, what, n=1):
        with self.lock:
            self.c[what] = self.c.get(what, 0) + n

    def get(self, what):
        with self.lock:
            return self.c.get(what, 0)


def run_threads(targets, seconds):
    stop = threading.Event()
    threads = [threading.Thread(target=t, args=(stop,)) for t in targets]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(60)


def test_a_full_pool_keeps_taking_writes_under_a_mixed_load(cluster):
    """Issue 21's scenarios, as a new user ran them: (1) 4 threads mixing put, get and remove of
    64 KiB-1 MiB values on two 256 MiB daemons for 3 minutes (82% of the Puts were refused when
    leases blocked eviction); (2) one writer adding 1 MiB values to a 128 MiB pool while a reader
    gets random keys among the last 300 MiB written (99% refused). Reads pin, leases do not block
    eviction: no Put is refused while evictable objects exist, and no read returns wrong bytes."""
    cluster.start_master()
    cluster.start_client("a", size="256MB")
    cluster.start_client("b", size="256MB")
    counts = Counts()

    def mixed(seed):
        def run(stop):
            try:
                rnd = random.Random(seed)
                store = new_store(cluster.address)
                while not stop.is_set():
                    key = f"mix/{rnd.randrange(3000)}"
                    r = rnd.random()
                    if r < 0.5:
                        rc = store.put(key, value(key, rnd.randint(64 << 10, 1 << 20)))
                        counts.add("put_ok" if rc == 0 else "put_other_size" if rc == OTHER_SIZE
                                   else "put_refused" if rc == NO_SPACE else f"put_failed_{rc}")
                    elif r < 0.85:
                        got = store.get(key)
                        if not got:
                            counts.add("miss")
                        else:
                            counts.add("read" if got == value(key, len(got)) else "wrong")
                    else:
                        store.remove(key)
                        counts.add("remove")
                store.close()
            except Exception as e:  # reported by the test, not lost in a thread
                counts.errors.append(repr(e))
        return run

    run_threads([mixed(i) for i in range(4)], 180 * SCALE)
    print("mixed:", counts.c)
    assert not counts.errors, counts.errors
    puts = sum(v for k, v in counts.c.items() if k.startswith("put_"))
    assert counts.get("put_ok") > 100, counts.c
    assert counts.get("put_refused") == 0 and counts.get("put_ok") + counts.get("put_other_size") == puts, counts.c
    assert counts.get("wrong") == 0, counts.c
    assert cluster.metric("yb_master_evicted_objects_total") > 0  # the pool did fill, many times over

    # (2) One 128 MiB daemon, 1 MiB values; the reader asks for the last 300 written.
    cluster.kill_client("a")
    cluster.kill_client("b")
    # Declared dead after client_ttl, their segments (and objects) dropped after the grace.
    wait_until(lambda: not cluster.segments() and cluster.metric("yb_master_keys") == 0, 30,
               "the master to drop both daemons")
    cluster.start_client("small", size="128MB")
    latest = [0]
    tail = Counts()

    def writer(stop):
        try:
            store = new_store(cluster.address)
            n = 0
            while not stop.is_set():
                rc = store.put(f"w/{n}", value(f"w/{n}", 1 << 20))
                tail.add("put_ok" if rc == 0 else "put_refused" if rc == NO_SPACE else f"put_failed_{rc}")
                n += 1
                latest[0] = n
            store.close()
        except Exception as e:
            tail.errors.append(repr(e))

    def reader(stop):
        try:
            rnd = random.Random(5)
            store = new_store(cluster.address)
            while not stop.is_set():
                if latest[0] == 0:
                    time.sleep(0.01)
                    continue
                k = f"w/{rnd.randrange(max(0, latest[0] - 300), latest[0])}"
                got = store.get(k)
                tail.add("miss" if not got else "read" if got == value(k, 1 << 20) else "wrong")
            store.close()
        except Exception as e:
            tail.errors.append(repr(e))

    run_threads([writer, reader], 30 * SCALE)
    print("tail:", tail.c)
    assert not tail.errors, tail.errors
    assert tail.get("put_ok") > 150, tail.c  # more than the pool holds: it was evicted through
    assert tail.get("put_ok") == sum(v for k, v in tail.c.items() if k.startswith("put_")), tail.c
    assert tail.get("wrong") == 0 and tail.get("read") > 0, tail.c


def test_daemons_killed_and_restarted_every_few_seconds_lose_nothing_that_had_time_to_heal(cluster):
    """Issue 21's chaos loop: 4 daemons, replica_num 2, steady Puts and Gets, a random daemon
    killed (-9) every few seconds for a minute and started again once the master dropped it;
    sometimes a second one right after the first. An acknowledged object may be lost only if a kill
    came before re-replication had healed the previous one (the test records when the master had
    no object at risk any more); every other one is read back whole at the end."""
    cluster.start_master()
    daemons = [f"d{i}" for i in range(4)]
    for d in daemons:
        cluster.start_client(d, size="64MB")
    counts = Counts()
    acked = {}  # key -> (size, monotonic time of its acknowledgement)
    acked_lock = threading.Lock()
    two = ReplicateConfig()
    two.replica_num = 2

    def writer(wid):
        def run(stop):
            try:
                rnd = random.Random(wid)
                store = new_store(cluster.address)
                n = 0
                while not stop.is_set() and n < 600:
                    key, size = f"c{wid}/{n}", rnd.choice([4 << 10, 40 << 10, 80 << 10])
                    rc = store.put(key, value(key, size), two)
                    if rc == 0:
                        with acked_lock:
                            acked[key] = (size, time.monotonic())
                    counts.add("put_ok" if rc == 0 else "put_failed")
                    n += 1
                    time.sleep(0.1 * SCALE)
                store.close()
            except Exception as e:
                counts.errors.append(repr(e))
        return run

    def reader(stop):
        try:
            rnd = random.Random(99)
            store = new_store(cluster.address)
            while not stop.is_set():
                with acked_lock:
                    keys = list(acked)
                if not keys:
                    time.sleep(0.01)
                    continue
                k = rnd.choice(keys)
                got = store.get(k)
                counts.add("miss" if not got else "read" if got == value(k, acked[k][0]) else "wrong")
            store.close()
        except Exception as e:
            counts.errors.append(repr(e))

    # The master's objects at risk, sampled: when was everything short of replicas copied back?
    samples = []  # (monotonic time, objects at risk)
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            try:
                samples.append((time.monotonic(), cluster.metric("yb_master_objects_at_risk")))
            except OSError:
                pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    kills = []  # (victim, killed at, dropped by the master at)
    doomed = set()  # objects that had no replica outside a kill's victims when it came
    observer = new_store(cluster.address)
    stop = threading.Event()
    threads = [threading.Thread(target=t, args=(stop,)) for t in [writer(0), writer(1), reader]]
    for t in threads:
        t.start()
    rnd = random.Random(21)
    try:
        start = time.monotonic()
        end = start + 60 * SCALE
        doubled = False
        while time.monotonic() < end:
            time.sleep(rnd.uniform(1.0, 4.0))
            victims = [rnd.choice(daemons)]
            if not doubled and time.monotonic() > start + 30 * SCALE:
                # Once, half-way: a second failure before the first has healed.
                doubled = True
                victims.append(rnd.choice([d for d in daemons if d != victims[0]]))
            # Who holds what just before the kill: an object whose every listed holder is about to
            # die had no chance (its second replica was not made yet, or both are on the victims).
            # Objects acknowledged from here until the drops are judged likewise for a double kill.
            with acked_lock:
                keys = list(acked)
            names = {int(g["id"]): daemon_name(g["name"]) for g in cluster.segments()}
            holders = observer.batch_get_replica_desc(keys)
            for k in keys:
                if {names.get(r.segment, "?") for r in holders.get(k, [])} <= set(victims):
                    doomed.add(k)
            snapshot_at = time.monotonic()
            killed_at = {}
            for v in victims:  # both at once: the second before the first can heal
                killed_at[v] = time.monotonic()
                cluster.kill_client(v)
            for v in victims:
                wait_until(lambda: v not in cluster.segment_names(), 30, f"the master to drop {v}")
                kills.append((v, killed_at[v], time.monotonic()))
            if len(victims) > 1:
                with acked_lock:
                    doomed.update(k for k, (_, t) in acked.items() if t >= snapshot_at)
            for v in victims:
                cluster.start_client(v, size="64MB")
    finally:
        stop.set()
        for t in threads:
            t.join(60)
    # A dead daemon's segment is held for the grace (client_ttl) before its replicas are dropped
    # (or kept, were it back with the same memory): its objects are neither readable nor at risk
    # meanwhile. Judged before the last kill's grace ended, they read as lost without being so.
    wait_until(lambda: cluster.metric("yb_master_segments_unconfirmed") == 0, 30, "the dead daemons' grace to end")
    wait_until(lambda: cluster.metric("yb_master_objects_at_risk") == 0, 60, "re-replication to finish")
    sampling.set()
    sampler.join(10)
    assert not counts.errors, counts.errors
    assert counts.get("wrong") == 0, counts.c

    observer.close()
    # Kill i healed at the first sample after its drop with nothing at risk (for the report: a
    # kill that came sooner is what can lose objects, and only those in `doomed`).
    def healed_at(dropped):
        return next((t for t, risk in samples if t >= dropped and risk == 0), float("inf"))
    close = [kills[i + 1][1] for i in range(len(kills) - 1) if kills[i + 1][1] < healed_at(kills[i][2])]
    heal_s = sorted(healed_at(d) - d for _, _, d in kills)
    excused = doomed
    store = new_store(cluster.address)
    lost, wrong = [], []
    for attempt in range(2):  # a miss is asked once more, half a second later, before it counts
        for k in (sorted(acked) if attempt == 0 else lost.copy()):
            got = store.get(k)
            if not got:
                if attempt == 0:
                    lost.append(k)
                continue
            if attempt == 1:
                lost.remove(k)
            if got != value(k, acked[k][0]):
                wrong.append(k)
        time.sleep(0.5)
    store.close()
    print(f"{len(kills)} kills ({len(close)} before the previous healed; healed in {heal_s[len(heal_s) // 2]:.2f} s "
          f"median, {heal_s[-1]:.2f} s at most after the drop), {len(acked)} acknowledged, "
          f"{len(excused)} excused, {len(lost)} lost, counts {counts.c}, "
          f"repaired {cluster.metric('yb_master_repaired_total')}, lost by the master "
          f"{cluster.metric('yb_master_objects_lost_total')}")
    assert len(kills) >= 10 * SCALE
    assert cluster.metric("yb_master_evicted_objects_total") == 0  # nothing went for want of space
    assert cluster.metric("yb_master_repaired_total") > 0
    assert not wrong, wrong[:10]
    assert set(lost) <= excused, sorted(set(lost) - excused)[:10]
    assert len(lost) <= cluster.metric("yb_master_objects_lost_total")  # each loss reported, none half-present
    assert len(acked) - len(excused) > 500
    assert len(acked) > 500
