"""Mooncake's unified-parallelism tensor calls (issue 33): ParallelAxis, TensorParallelism,
ReadTarget and the *_tensor_with_parallelism* methods. Shards written by ranks of one layout read
back as any rank's shard of another tp size, or whole; what the layout cannot hold is refused
before a byte is written."""
import ctypes

import pytest

torch = pytest.importorskip("torch")

from yuebing import MooncakeDistributedStore, ParallelAxis, ReadTarget, TensorParallelism  # noqa: E402


@pytest.fixture
def store(cluster):
    cluster.start_master()
    cluster.start_client("storage-node", size="256MB")
    s = MooncakeDistributedStore()
    assert s.setup("127.0.0.1", "P2PHANDSHAKE", 32 << 20, 16 << 20, "tcp", "", cluster.address) == 0
    yield s
    s.close()


def axis(kind, rank, size, split_dim=None, expert_id=None, stage_id=None):
    a = ParallelAxis()
    a.kind, a.rank, a.size, a.split_dim, a.expert_id, a.stage_id = kind, rank, size, split_dim, expert_id, stage_id
    return a


def layout(*axes):
    p = TensorParallelism()
    p.axes = list(axes)
    return p


def target(mode, parallelism=None):
    t = ReadTarget()
    t.mode = mode
    t.parallelism = parallelism
    return t


def numbered(*shape):
    n = 1
    for d in shape:
        n *= d
    return torch.arange(n, dtype=torch.float32).view(*shape).contiguous()


def test_tp_shards_read_as_stored_resharded_and_whole(store):
    whole = numbered(8, 12)
    for rank, shard in enumerate(whole.chunk(4, 1)):  # each rank writes its own shard
        assert store.put_tensor_with_parallelism("w", shard.contiguous(), layout(axis("tp", rank, 4, 1))) == 0
    # The tensor-parallel wrappers read the same objects.
    assert torch.equal(store.get_tensor_with_tp("w", tp_rank=2, tp_size=4), whole.chunk(4, 1)[2])
    for size in (1, 2, 4, 6, 12):  # another tp size: cut from the stored shards
        for rank in range(size):
            got = store.get_tensor_with_parallelism("w", target("shard", layout(axis("tp", rank, size, 1))))
            assert torch.equal(got, whole.chunk(size, 1)[rank]), (size, rank)
    assert store.get_tensor_with_parallelism("w", target("shard", layout(axis("tp", 0, 5, 1)))) is None  # uneven
    assert torch.equal(store.get_tensor_with_parallelism("w", target("full", layout(axis("tp", 1, 2, 1)))), whole)


def test_multi_axis_writers_and_axis_order(store):
    whole = numbered(6, 8)
    for rank in range(4):  # each rank hands the whole tensor; its shard is cut and stored
        p = layout(axis("dp", 1, 2), axis("tp", rank, 4, 1))
        assert store.put_tensor_with_parallelism("m", whole, p) == 0
    read = layout(axis("tp", 3, 4, 1), axis("dp", 1, 2))  # any order of axes names the same layout
    assert torch.equal(store.get_tensor_with_parallelism("m", target("shard", read)), whole.chunk(4, 1)[3])
    assert torch.equal(store.get_tensor_with_parallelism("m", target("full", read)), whole)
    # Another data-parallel rank's copy was never written.
    other = layout(axis("dp", 0, 2), axis("tp", 0, 4, 1))
    assert store.get_tensor_with_parallelism("m", target("shard", other)) is None
    ep = layout(axis("ep", 0, 2, expert_id=5), axis("tp", 0, 2, 0))
    assert store.put_tensor_with_parallelism("e", whole, ep) == 0
    assert torch.equal(store.get_tensor_with_parallelism("e", target("shard", ep)), whole.chunk(2, 0)[0])


def test_writer_partitions_join_into_the_whole(store):
    class Writer:
        def __init__(self, rank, size, split_dim):
            self.rank, self.size, self.split_dim = rank, size, split_dim

    whole = numbered(6, 9, 4)
    results = store.batch_put_tensor_with_parallelism(["a", "b"], [whole, whole],
                                                      writer_partitions=[Writer(0, 3, 1), Writer(1, 3, 1)])
    assert results == [0, 0]
    assert store.get_tensor_with_parallelism("a", target("full")) is None  # ranks 1 and 2 of "a" are missing
    for rank in (1, 2):
        assert store.put_tensor_with_parallelism("a", whole, writer_partition=Writer(rank, 3, 1)) == 0
    assert torch.equal(store.get_tensor_with_parallelism("a", target("full")), whole)
    got = store.get_tensor_with_parallelism("a", target("shard", layout(axis("tp", 2, 3, 1))))
    assert torch.equal(got, whole.chunk(3, 1)[2])
    # Both routes at once, or an uneven split: refused, nothing written.
    assert store.put_tensor_with_parallelism("c", whole, layout(axis("tp", 0, 3, 1)), writer_partition=Writer(0, 3, 1)) != 0
    assert store.put_tensor_with_parallelism("c", whole, writer_partition=Writer(0, 4, 1)) != 0
    assert store.is_exist("c__writer_0of4_sd1") == 0 and store.is_exist("c__writer_manifest") == 0


def test_bad_layouts_are_refused_before_anything_is_written(store):
    whole = numbered(2, 3)
    bad = [
        layout(axis("dp", 0, 2, split_dim=0)),  # dp splits nothing
        layout(axis("ep", 0, 2)),  # ep names its expert
        layout(axis("pp", 0, 2)),  # pp names its stage
        layout(axis("tp", 0, 2)),  # tp names its dimension
        layout(axis("tp", 2, 2, 0)),  # rank outside the size
        layout(axis("tp", 0, 2, 0), axis("tp", 1, 2, 0)),  # two tp axes
        layout(axis("xx", 0, 1)),
        layout(),
        layout(axis("dp", 0, 2), axis("tp", 0, 2, 1)),  # 3 columns do not split in 2
    ]
    for i, p in enumerate(bad):
        assert store.put_tensor_with_parallelism(f"bad{i}", whole, p) == -600, i
    assert store.batch_put_tensor_with_parallelism(["x", "y"], [whole], [None, None]) == [-600, -600]
    assert store.batch_put_tensor_with_parallelism(["x"], [whole], [None, None]) == [-600]
    with pytest.raises(RuntimeError):
        ReadTarget().mode = "sideways"
    assert store.get_tensor_with_parallelism("bad0", target("shard")) is None  # a shard of no layout


def test_as_stored_from_buffers_and_into_buffers(store):
    whole = numbered(4, 6)
    assert store.put_tensor_with_parallelism("plain", whole) == 0  # no layout: the tensor at its key
    assert torch.equal(store.get_tensor("plain"), whole)
    assert torch.equal(store.get_tensor_with_parallelism("plain"), whole)
    size = 304 + whole.numel() * 4
    buf = (ctypes.c_ubyte * (1 << 16))()
    ptr = ctypes.addressof(buf)
    assert store.register_buffer(ptr, 1 << 16) == 0
    try:
        got = store.get_tensor_into("plain", ptr, size)
        assert torch.equal(got, whole)
        p = layout(axis("pp", 0, 2, stage_id=3), axis("tp", 1, 2, 0))  # the buffer holds the whole tensor
        assert store.upsert_tensor_with_parallelism_from("f", ptr, size, p) == 0
        into = store.get_tensor_with_parallelism_into("f", ptr + 8192, 8192, target("shard", p))
        assert torch.equal(into, whole.chunk(2, 0)[1])
        assert bytes(buf[8192:8196]) == b"NOOM"  # the object's header, then its bytes, in the buffer
        assert store.get_tensor_with_parallelism_into("f", ptr + 8192, 100, target("shard", p)) is None  # too small
        # A batch from buffers where one holds no tensor object: that one refused, the other stored.
        assert store.batch_put_tensor_with_parallelism_from(["g1", "g2"], [ptr, ptr + 32768], [size, size]) == [0, -600]
        assert torch.equal(store.get_tensor("g1"), whole) and store.is_exist("g2") == 0
    finally:
        assert store.unregister_buffer(ptr) == 0
