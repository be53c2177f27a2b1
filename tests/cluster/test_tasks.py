"""Copy and move tasks (issue 33 item 3: Mooncake's create_copy_task, create_move_task and
query_task) against a real yb-master and storage daemons: the bytes land on the segments named and
read back exact; a move leaves the object on its target only; and a task the master is killed in
the middle of (kill -9, its copy's maker paused) is carried on by the restarted master under the
same id."""
import signal
import time

import pytest

from conftest import daemon_name, wait_until

pytest.importorskip("yuebing")
from yuebing import MooncakeDistributedStore, ReplicateConfig, TaskStatus, TaskType  # noqa: E402


@pytest.fixture
def nodes(cluster):
    cluster.start_master()
    for name in ("node-a", "node-b", "node-c"):
        cluster.start_client(name, size="32MB")
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 0, 16 << 20, "tcp", "", cluster.address) == 0
    yield s
    s.close()


def holders(cluster, store, key):
    """The daemons holding the key's memory replicas, sorted."""
    by_id = {int(s["id"]): daemon_name(s["name"]) for s in cluster.segments()}
    return sorted(by_id[d.segment] for d in store.get_replica_desc(key) if d.is_memory_replica())


def finished(store, task_id, timeout=20):
    deadline = time.time() + timeout
    while True:
        resp, code = store.query_task(task_id)
        assert code == 0, code
        if resp.status in (TaskStatus.SUCCESS, TaskStatus.FAILED) or time.time() > deadline:
            return resp
        time.sleep(0.1)


def put_on(store, key, value, node):
    rc = ReplicateConfig()
    rc.preferred_segment = node
    assert store.put(key, value, rc) == 0


def test_copy_and_move_tasks_put_the_bytes_where_they_are_asked(cluster, nodes):
    value = bytes(range(256)) * 4096  # 1 MiB
    put_on(nodes, "t/copy", value, "node-a")
    task_id, code = nodes.create_copy_task("t/copy", ["node-b", "node-c"])
    assert code == 0 and task_id != (0, 0)
    resp = finished(nodes, task_id)
    assert resp.status == TaskStatus.SUCCESS, resp
    assert resp.type == TaskType.REPLICA_COPY and resp.id == task_id
    assert holders(cluster, nodes, "t/copy") == ["node-a", "node-b", "node-c"]
    # Each new replica holds the bytes: with the original's holder gone, reads come from them.
    cluster.kill_client("node-a")
    assert nodes.get("t/copy") == value

    put_on(nodes, "t/move", value, "node-b")
    task_id, code = nodes.create_move_task("t/move", "node-b", "node-c")
    assert code == 0
    resp = finished(nodes, task_id)
    assert resp.status == TaskStatus.SUCCESS and resp.type == TaskType.REPLICA_MOVE, resp
    assert holders(cluster, nodes, "t/move") == ["node-c"]
    assert nodes.get("t/move") == value

    # Mooncake's codes for what cannot be done.
    assert nodes.create_copy_task("t/none", ["node-b"])[1] == -704
    assert nodes.create_copy_task("t/move", ["nowhere"]) == ((0, 0), -600)
    assert nodes.create_move_task("t/move", "node-c", "node-c")[1] == -600
    assert nodes.create_move_task("t/move", "node-b", "node-c")[1] == -600  # node-b holds none now
    assert nodes.query_task((1, 2)) == (None, -1400)


def test_a_copy_task_survives_kill_9_of_the_master(cluster, nodes):
    value = b"persist" * 100000
    put_on(nodes, "t/durable", value, "node-a")
    # The copy's maker is paused: the task cannot end before the master dies.
    cluster.clients["node-b"].send_signal(signal.SIGSTOP)
    try:
        task_id, code = nodes.create_copy_task("t/durable", ["node-b"])
        assert code == 0
        wait_until(lambda: nodes.query_task(task_id)[0].status == TaskStatus.PROCESSING, 5, "the copy to start")
        cluster.stop_master(signal.SIGKILL)
        cluster.start_master()
        # The restarted master has the task, under the same id, from its log; the first call
        # after the restart reaches it (the closed connection is replaced before it is used).
        resp, code = nodes.query_task(task_id)
        assert code == 0 and resp.status in (TaskStatus.PENDING, TaskStatus.PROCESSING), (resp, code)
    finally:
        cluster.clients["node-b"].send_signal(signal.SIGCONT)
    resp = finished(nodes, task_id, timeout=30)
    assert resp.status == TaskStatus.SUCCESS, resp
    assert holders(cluster, nodes, "t/durable") == ["node-a", "node-b"]
    cluster.kill_client("node-a")
    assert nodes.get("t/durable") == value
