"""Mooncake's unified-parallelism tensor calls: ParallelAxis, TensorParallelism, ReadTarget and the
*_tensor_with_parallelism* methods of MooncakeDistributedStore, over the tensor format of _tensor.py.

Where a tensor goes (Mooncake's key names, so that the tensor-parallel wrappers read the same objects):
- no parallelism and no writer_partition: the whole tensor at KEY;
- a parallelism of one "tp" axis: the tensor given is that rank's shard, stored at KEY_tp_RANK as a
  shard of a whole whose split dimension is size times the shard's (the wrappers' key);
- a parallelism with "tp" and other axes, or any "_from" form: the tensor given is the whole one, and
  the tp rank's shard of it is stored at KEY__dp_0of2__tp_1of4_sd1... (axes in the order dp, tp, ep,
  pp, whatever order the caller gave; ep and pp name their expert and stage: _eidN, _sidN);
- a parallelism without "tp": the tensor as given, at that axes key;
- writer_partition (rank, size, split_dim): the tensor given is the whole one; that rank's shard is
  stored at KEY__writer_RofS_sdD.
Every shard write also stores a 92-byte manifest (KEY__parallelism_manifest or KEY__writer_manifest:
u32 magic 0x574d414e, u16 version 1, u16 size 92, i32 dtype, ndim, split dim, shard count, 0, i64
global shape[8]) through which a reader finds every shard. Shards split a dimension evenly: a split
that does not divide it is refused (INVALID_PARAMS), before anything is written.

Reads (ReadTarget.mode): "as_stored" (the default) reads the object the parallelism names (or KEY);
"shard" the requested rank's shard, from the object stored for it or, for another tp size, cut from
the stored shards it overlaps (None when the requested size does not divide the dimension); "full"
the whole tensor, joined from every stored shard (with the target's other axes). The _into forms
land [header][data] in the caller's buffer (host memory) and answer a tensor viewing it.
Conventions are Mooncake's: writes answer 0 or a negative code, reads a tensor or None.
"""
import ctypes
import logging
import struct

from ._tensor import (AXIS_DP, AXIS_EP, AXIS_PP, AXIS_TP, HEADER_BYTES, INVALID_PARAMS, _address_view, _dtype_tables,
                      _is_device_memory, _is_tensor, _torch, _view_tensor, decode_header, encode_header, header_axes,
                      MAX_AXES, MAX_DIMS)

_log = logging.getLogger("yuebing")

_KINDS = {"dp": AXIS_DP, "tp": AXIS_TP, "ep": AXIS_EP, "pp": AXIS_PP}
_ORDER = ["dp", "tp", "ep", "pp"]  # the canonical order of axes in keys
_MODES = ("as_stored", "shard", "full")
_MANIFEST = struct.Struct("<IHHiiiii8q")  # 92 bytes
_MANIFEST_MAGIC = 0x574D414E


class ParallelAxis:
    """One axis of a parallel layout: kind ("tp", "dp", "ep", "pp"), rank, size; split_dim (tp
    only), expert_id (ep), stage_id (pp)."""

    def __init__(self):
        self.kind, self.rank, self.size = "", 0, 1
        self.split_dim = self.expert_id = self.stage_id = None

    def __repr__(self):
        return (f"ParallelAxis(kind={self.kind!r}, rank={self.rank}, size={self.size}, split_dim={self.split_dim}, "
                f"expert_id={self.expert_id}, stage_id={self.stage_id})")


class TensorParallelism:
    """The axes of a tensor's parallel layout (at most 4, one per kind)."""

    def __init__(self):
        self.axes = []

    def __repr__(self):
        return f"TensorParallelism(axes={self.axes!r})"


class ReadTarget:
    """What a read answers: mode "as_stored", "shard" or "full", for `parallelism`."""

    def __init__(self):
        self._mode = "as_stored"
        self.parallelism = None

    @property
    def mode(self):
        return self._mode

    @mode.setter
    def mode(self, value):
        mode = str(value).lower()
        if mode not in _MODES:
            raise RuntimeError("Unsupported ReadTarget mode")
        self._mode = mode

    def __repr__(self):
        return f"ReadTarget(mode={self._mode!r}, parallelism={self.parallelism!r})"


class _Axis:
    __slots__ = ("kind", "rank", "size", "split_dim", "expert_id", "stage_id")

    def __init__(self, kind, rank, size, split_dim, expert_id, stage_id):
        self.kind, self.rank, self.size = kind, rank, size
        self.split_dim, self.expert_id, self.stage_id = split_dim, expert_id, stage_id

    def with_rank(self, rank, size=None):
        return _Axis(self.kind, rank, self.size if size is None else size, self.split_dim, self.expert_id,
                     self.stage_id)

    def suffix(self):
        s = f"{self.kind}_{self.rank}of{self.size}"
        if self.split_dim is not None:
            s += f"_sd{self.split_dim}"
        if self.expert_id is not None:
            s += f"_eid{self.expert_id}"
        if self.stage_id is not None:
            s += f"_sid{self.stage_id}"
        return s

    def packed(self):
        """(kind, rank, count, split dim or -1, expert or stage id) for the tensor header."""
        tag = self.expert_id if self.kind == "ep" else self.stage_id if self.kind == "pp" else 0
        return (_KINDS[self.kind], self.rank, self.size, -1 if self.split_dim is None else self.split_dim, tag or 0)


def _optional_int(v):
    return None if v is None else int(v)


def _axes(parallelism, what):
    """The validated axes of `parallelism` in canonical order, or None (logged)."""
    raw = getattr(parallelism, "axes", None)
    if raw is None:
        _log.error("%s: TensorParallelism must provide axes", what)
        return None
    if not raw or len(raw) > MAX_AXES:
        _log.error("%s: a parallelism needs 1 to %d axes, got %d", what, MAX_AXES, len(raw))
        return None
    axes = {}
    try:
        for a in raw:
            kind = str(a.kind).lower()
            axis = _Axis(kind, int(a.rank), int(a.size), _optional_int(getattr(a, "split_dim", None)),
                         _optional_int(getattr(a, "expert_id", None)), _optional_int(getattr(a, "stage_id", None)))
            if kind not in _KINDS:
                _log.error("%s: unsupported parallel axis kind %r", what, a.kind)
                return None
            if kind in axes:
                _log.error("%s: two %s axes", what, kind)
                return None
            if axis.size <= 0 or not 0 <= axis.rank < axis.size:
                _log.error("%s: rank %d of size %d on the %s axis", what, axis.rank, axis.size, kind)
                return None
            if (kind == "tp") != (axis.split_dim is not None):
                _log.error("%s: %s", what, "a tp axis needs split_dim" if kind == "tp" else
                           f"a {kind} axis takes no split_dim")
                return None
            if kind == "ep" and axis.expert_id is None:
                _log.error("%s: an ep axis needs expert_id", what)
                return None
            if kind == "pp" and axis.stage_id is None:
                _log.error("%s: a pp axis needs stage_id", what)
                return None
            axes[kind] = axis
    except (AttributeError, TypeError, ValueError) as e:
        _log.error("%s: not a parallel axis: %s", what, e)
        return None
    return [axes[k] for k in _ORDER if k in axes]


def _tp(axes):
    return next((a for a in axes if a.kind == "tp"), None)


def _axes_key(key, axes):
    if len(axes) == 1 and axes[0].kind == "tp":
        return f"{key}_tp_{axes[0].rank}"  # the tensor-parallel wrappers' key
    return key + "".join("__" + a.suffix() for a in axes)


def _writer_key(key, rank, size, split_dim):
    return f"{key}__writer_{rank}of{size}_sd{split_dim}"


def _writer(obj, what):
    """(rank, size, split_dim) of a writer_partition, or None (logged)."""
    try:
        w = (int(obj.rank), int(obj.size), int(obj.split_dim))
    except (AttributeError, TypeError, ValueError):
        _log.error("%s: writer_partition must provide rank, size and split_dim", what)
        return None
    if w[1] <= 0 or not 0 <= w[0] < w[1] or w[2] < 0:
        _log.error("%s: invalid writer partition %s", what, w)
        return None
    return w


def _manifest(tensor, shape, split_dim, count):
    to_number, _ = _dtype_tables()
    dims = list(shape) + [-1] * (MAX_DIMS - len(shape))
    return _MANIFEST.pack(_MANIFEST_MAGIC, 1, _MANIFEST.size, to_number[tensor.dtype], len(shape), split_dim, count, 0,
                          *dims)


def _parse_manifest(data):
    """(global shape, split dim, shard count) of a manifest object, or None."""
    if data is None or len(data) < _MANIFEST.size:
        return None
    magic, version, size, _, ndim, split_dim, count, _, *dims = _MANIFEST.unpack_from(bytes(data[:_MANIFEST.size]))
    if magic != _MANIFEST_MAGIC or version != 1 or size != _MANIFEST.size or not 0 <= ndim <= MAX_DIMS:
        return None
    shape = tuple(dims[:ndim])
    if count <= 0 or not 0 <= split_dim < ndim or any(d < 0 for d in shape):
        return None
    return shape, split_dim, count


def _even(shape, split_dim, count, what):
    if not 0 <= split_dim < len(shape):
        _log.error("%s: split_dim %d of a %d-dimensional tensor", what, split_dim, len(shape))
        return False
    if shape[split_dim] % count != 0:
        _log.error("%s: dimension %d (%d) does not split evenly into %d shards", what, split_dim, shape[split_dim],
                   count)
        return False
    return True


def _piece(tensor, split_dim, rank, count):
    step = tensor.shape[split_dim] // count
    return tensor.narrow(split_dim, rank * step, step).contiguous()


def _list_or_none(value, n, name, what):
    if value is None:
        return [None] * n
    value = list(value)
    if len(value) != n:
        _log.error("%s: keys and %s differ in length", what, name)
        return None
    return value


class ParallelismMixin:
    """The *_tensor_with_parallelism* methods over the tensor and byte calls of the store."""

    # ---- writes

    def _plan_write(self, key, tensor, parallelism, writer, from_buffer, what):
        """[(key, header, tensor)] to write for one request (manifests as (key, bytes, None)), or None."""
        if not _is_tensor(tensor):
            _log.error("%s: expected a torch.Tensor, got %s", what, type(tensor).__name__)
            return None
        if parallelism is not None and writer is not None:
            _log.error("%s: writer_partition cannot be combined with parallelism", what)
            return None
        shape = tuple(tensor.shape)
        if writer is not None:
            w = _writer(writer, what)
            if w is None or not _even(shape, w[2], w[1], what):
                return None
            rank, size, split_dim = w
            shard = _piece(tensor, split_dim, rank, size)
            head = encode_header(shard, shape, [(AXIS_TP, rank, size, split_dim, 0)])
            return [(_writer_key(key, rank, size, split_dim), head, shard),
                    (key + "__writer_manifest", _manifest(tensor, shape, split_dim, size), None)]
        if parallelism is None:
            return [(key, encode_header(tensor), tensor)]
        axes = _axes(parallelism, what)
        if axes is None:
            return None
        tp = _tp(axes)
        if tp is None:  # stored as given, named by its axes
            return [(_axes_key(key, axes), encode_header(tensor, shape, [a.packed() for a in axes]), tensor)]
        if len(axes) == 1 and not from_buffer:
            # The tensor is the rank's shard: the whole is size times as long along split_dim.
            if not 0 <= tp.split_dim < len(shape):
                _log.error("%s: split_dim %d of a %d-dimensional tensor", what, tp.split_dim, len(shape))
                return None
            whole = list(shape)
            whole[tp.split_dim] *= tp.size
            shard = tensor
        else:
            if not _even(shape, tp.split_dim, tp.size, what):
                return None
            whole = list(shape)
            shard = _piece(tensor, tp.split_dim, tp.rank, tp.size)
        head = encode_header(shard, whole, [a.packed() for a in axes])
        return [(_axes_key(key, axes), head, shard),
                (key + "__parallelism_manifest", _manifest(tensor, whole, tp.split_dim, tp.size), None)]

    def _put_parallel(self, keys, tensors, parallelisms, writers, config, upsert, what, from_buffer=False):
        keys, tensors = list(keys), list(tensors)
        if len(keys) != len(tensors):
            _log.error("%s: keys and tensors differ in length", what)
            return [INVALID_PARAMS] * len(keys)
        parallelisms = _list_or_none(parallelisms, len(keys), "parallelisms", what)
        writers = _list_or_none(writers, len(keys), "writer_partitions", what)
        if parallelisms is None or writers is None:
            return [INVALID_PARAMS] * len(keys)
        if config is None:
            from ._yuebing import ReplicateConfig
            config = ReplicateConfig()
        plans = [self._plan_write(k, t, p, w, from_buffer, what)
                 for k, t, p, w in zip(keys, tensors, parallelisms, writers)]
        flat, owner = [], []
        for i, plan in enumerate(plans):
            for item in plan or ():
                flat.append(item)
                owner.append(i)
        # Data objects first (a manifest names only shards that are there), then the manifests,
        # which every rank writes alike: upserted.
        results = [INVALID_PARAMS if plan is None or any(h is None for _, h, _ in plan) else 0 for plan in plans]
        data = [j for j, (_, _, t) in enumerate(flat) if t is not None and results[owner[j]] == 0]
        meta = [j for j, (_, _, t) in enumerate(flat) if t is None and results[owner[j]] == 0]
        if data:
            out = self._write_objects([flat[j][0] for j in data], [flat[j][1] for j in data],
                                      [flat[j][2] for j in data], config, upsert)
            for j, r in zip(data, out):
                if r != 0 and results[owner[j]] == 0:
                    results[owner[j]] = r
        # One write per manifest key (the ranks of one tensor in one batch name the same one).
        by_key = {}
        for j in meta:
            if results[owner[j]] == 0:
                by_key.setdefault(flat[j][0], []).append(j)
        if by_key:
            firsts = [js[0] for js in by_key.values()]
            out = self._write_objects([flat[j][0] for j in firsts], [flat[j][1] for j in firsts],
                                      [None] * len(firsts), config, True)
            for js, r in zip(by_key.values(), out):
                for j in js:
                    if r != 0 and results[owner[j]] == 0:
                        results[owner[j]] = r
        return results

    def _tensors_from(self, buffer_ptrs, sizes, what):
        """The whole tensors held as tensor objects in caller memory (None where one is not)."""
        out = []
        for ptr, size in zip(buffer_ptrs, sizes):
            if isinstance(ptr, int) and _is_device_memory(ptr):
                _log.error("%s: the object is in GPU memory; the parallel forms split tensors on the host", what)
                out.append(None)
                continue
            view = _address_view(ptr, size)
            meta = decode_header(memoryview(view), what)
            out.append(None if meta is None else _view_tensor(view, *meta))
        return out

    def put_tensor_with_parallelism(self, key, tensor, parallelism=None, config=None, writer_partition=None):
        return self._put_parallel([key], [tensor], [parallelism], [writer_partition], config, False,
                                  "put_tensor_with_parallelism")[0]

    def upsert_tensor_with_parallelism(self, key, tensor, parallelism=None, config=None, writer_partition=None):
        return self._put_parallel([key], [tensor], [parallelism], [writer_partition], config, True,
                                  "upsert_tensor_with_parallelism")[0]

    def batch_put_tensor_with_parallelism(self, keys, tensors_list, parallelisms=None, config=None,
                                          writer_partitions=None):
        return self._put_parallel(keys, tensors_list, parallelisms, writer_partitions, config, False,
                                  "batch_put_tensor_with_parallelism")

    def batch_upsert_tensor_with_parallelism(self, keys, tensors_list, parallelisms=None, config=None,
                                             writer_partitions=None):
        return self._put_parallel(keys, tensors_list, parallelisms, writer_partitions, config, True,
                                  "batch_upsert_tensor_with_parallelism")

    def _put_parallel_from(self, keys, buffer_ptrs, sizes, parallelisms, writers, config, upsert, what):
        keys = list(keys)
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            _log.error("%s: keys, buffer_ptrs and sizes differ in length", what)
            return [INVALID_PARAMS] * len(keys)
        tensors = self._tensors_from(buffer_ptrs, sizes, what)  # None (logged) where no tensor object is
        parallelisms = _list_or_none(parallelisms, len(keys), "parallelisms", what)
        writers = _list_or_none(writers, len(keys), "writer_partitions", what)
        if parallelisms is None or writers is None:
            return [INVALID_PARAMS] * len(keys)
        good = [i for i, t in enumerate(tensors) if t is not None]
        results = [INVALID_PARAMS] * len(keys)
        done = self._put_parallel([keys[i] for i in good], [tensors[i] for i in good], [parallelisms[i] for i in good],
                                  [writers[i] for i in good], config, upsert, what, from_buffer=True)
        for i, r in zip(good, done):
            results[i] = r
        return results

    def put_tensor_with_parallelism_from(self, key, buffer_ptr, size, parallelism=None, config=None,
                                         writer_partition=None):
        return self._put_parallel_from([key], [buffer_ptr], [size], [parallelism], [writer_partition], config, False,
                                       "put_tensor_with_parallelism_from")[0]

    def upsert_tensor_with_parallelism_from(self, key, buffer_ptr, size, parallelism=None, config=None,
                                            writer_partition=None):
        return self._put_parallel_from([key], [buffer_ptr], [size], [parallelism], [writer_partition], config, True,
                                       "upsert_tensor_with_parallelism_from")[0]

    def batch_put_tensor_with_parallelism_from(self, keys, buffer_ptrs, sizes, parallelisms=None, config=None,
                                               writer_partitions=None):
        return self._put_parallel_from(keys, list(buffer_ptrs), list(sizes), parallelisms, writer_partitions, config,
                                       False, "batch_put_tensor_with_parallelism_from")

    def batch_upsert_tensor_with_parallelism_from(self, keys, buffer_ptrs, sizes, parallelisms=None, config=None,
                                                  writer_partitions=None):
        return self._put_parallel_from(keys, list(buffer_ptrs), list(sizes), parallelisms, writer_partitions, config,
                                       True, "batch_upsert_tensor_with_parallelism_from")

    # ---- reads

    def _layout(self, key, axes):
        """(global shape, split dim, shard count, key of stored shard i) of the stored shards of
        KEY, or None when none are stored. `axes` (with a tp axis) names the reader's other axes;
        None: a read that names no layout (writer partitions, or one tp axis)."""
        stored = _parse_manifest(self._get_bytes(key + "__parallelism_manifest"))
        if stored is not None and axes is not None:
            shape, split_dim, count = stored
            others = [a for a in axes if a.kind != "tp"]
            return shape, split_dim, count, lambda i: _axes_key(
                key, sorted(others + [_Axis("tp", i, count, split_dim, None, None)], key=lambda a: _ORDER.index(a.kind)))
        if axes is not None and len(axes) > 1:
            return None
        written = _parse_manifest(self._get_bytes(key + "__writer_manifest"))
        if written is not None:
            shape, split_dim, count = written
            return shape, split_dim, count, lambda i: _writer_key(key, i, count, split_dim)
        if stored is not None:  # axes None: a layout of one tp axis, read without naming it
            shape, split_dim, count = stored
            return shape, split_dim, count, lambda i: f"{key}_tp_{i}"
        return None

    def _stored_shard(self, key, tp, what):
        """The shard stored at `key` when it is the one `tp` asks for: a key of one tp axis does not
        say how many shards its writer made (KEY_tp_0 of 4 is not KEY_tp_0 of 2)."""
        buf = self.batch_get_buffer([key])[0]
        if buf is None:
            return None
        stored = [a for a in header_axes(memoryview(buf)) if a[0] == AXIS_TP]
        if not stored or stored[0][1:] != (tp.rank, tp.size, tp.split_dim):
            return None
        meta = decode_header(memoryview(buf), what)
        return None if meta is None else _view_tensor(buf, *meta)

    def _get_bytes(self, key):
        data = self.get(key)
        return data if data else None

    def _gather(self, layout, first, last, what):
        """The stored shards' rows [first, last) along the split dimension, joined; None if any is missing."""
        shape, split_dim, count, key_of = layout
        step = shape[split_dim] // count if count else 0
        if step == 0:
            return None
        parts = []
        ranks = range(first // step, (last - 1) // step + 1) if last > first else range(0)
        got = self.batch_get_tensor([key_of(r) for r in ranks])
        for r, t in zip(ranks, got):
            if t is None or t.dim() != len(shape) or t.shape[split_dim] != step:
                _log.error("%s: shard %d of %d is missing or not the size its manifest says", what, r, count)
                return None
            lo, hi = max(first, r * step), min(last, (r + 1) * step)
            parts.append(t.narrow(split_dim, lo - r * step, hi - lo))
        if not parts:
            return None
        whole = _torch().cat(parts, dim=split_dim) if len(parts) > 1 else parts[0]
        return whole.contiguous()

    def _read_parallel(self, key, target, what):
        mode = "as_stored" if target is None else str(getattr(target, "mode", "")).lower()
        if mode not in _MODES:
            _log.error("%s: unsupported ReadTarget mode %r", what, mode)
            return None
        parallelism = None if target is None else getattr(target, "parallelism", None)
        axes = None
        if parallelism is not None:
            axes = _axes(parallelism, what)
            if axes is None:
                return None
        if mode == "as_stored" or (axes is not None and _tp(axes) is None):
            return self.get_tensor(key if axes is None else _axes_key(key, axes))
        if mode == "shard":
            if axes is None:
                _log.error("%s: a shard read needs a parallelism", what)
                return None
            tp = _tp(axes)
            exact = self._stored_shard(_axes_key(key, axes), tp, what)
            if exact is not None:
                return exact
            layout = self._layout(key, axes)
            if layout is None or layout[1] != tp.split_dim:
                return None
            length = layout[0][tp.split_dim]
            if length % tp.size != 0:
                _log.error("%s: dimension %d (%d) does not split evenly into %d shards", what, tp.split_dim, length,
                           tp.size)
                return None
            step = length // tp.size
            return self._gather(layout, tp.rank * step, (tp.rank + 1) * step, what)
        layout = self._layout(key, axes)  # full
        if layout is None:
            return self.get_tensor(key) if axes is None else None
        return self._gather(layout, 0, layout[0][layout[1]], what)

    def get_tensor_with_parallelism(self, key, target=None):
        return self._read_parallel(key, target, "get_tensor_with_parallelism")

    def batch_get_tensor_with_parallelism(self, keys, targets=None):
        keys = list(keys)
        targets = _list_or_none(targets, len(keys), "targets", "batch_get_tensor_with_parallelism")
        if targets is None:
            return [None] * len(keys)
        return [self._read_parallel(k, t, "batch_get_tensor_with_parallelism") for k, t in zip(keys, targets)]

    def _into(self, key, buffer_ptr, size, target, what):
        if isinstance(buffer_ptr, int) and _is_device_memory(buffer_ptr):
            if target is None or str(getattr(target, "mode", "")).lower() == "as_stored":
                parallelism = None if target is None else getattr(target, "parallelism", None)
                axes = None if parallelism is None else _axes(parallelism, what)
                if parallelism is not None and axes is None:
                    return None
                return self.get_tensor_into(key if axes is None else _axes_key(key, axes), buffer_ptr, size)
            _log.error("%s: shard and full reads are assembled on the host; the buffer is GPU memory", what)
            return None
        tensor = self._read_parallel(key, target, what)
        if tensor is None:
            return None
        head = encode_header(tensor)
        nbytes = tensor.numel() * tensor.element_size()
        if head is None or HEADER_BYTES + nbytes > size:
            _log.error("%s: %d bytes do not fit the %d-byte buffer", what, HEADER_BYTES + nbytes, size)
            return None
        view = _address_view(buffer_ptr, HEADER_BYTES + nbytes)
        base = buffer_ptr if isinstance(buffer_ptr, int) else ctypes.addressof(ctypes.c_char.from_buffer(view))
        data = tensor.contiguous()
        ctypes.memmove(base, head, HEADER_BYTES)
        if nbytes:
            ctypes.memmove(base + HEADER_BYTES, data.data_ptr(), nbytes)
        return _view_tensor(view, tensor.dtype, tuple(tensor.shape), nbytes, HEADER_BYTES)

    def get_tensor_with_parallelism_into(self, key, buffer_ptr, size, target=None):
        return self._into(key, buffer_ptr, size, target, "get_tensor_with_parallelism_into")

    def batch_get_tensor_with_parallelism_into(self, keys, buffer_ptrs, sizes, targets=None):
        what = "batch_get_tensor_with_parallelism_into"
        keys = list(keys)
        targets = _list_or_none(targets, len(keys), "targets", what)
        if targets is None or not len(keys) == len(buffer_ptrs) == len(sizes):
            _log.error("%s: keys, buffer_ptrs, sizes and targets differ in length", what)
            return [None] * len(keys)
        return [self._into(k, p, n, t, what) for k, p, n, t in zip(keys, buffer_ptrs, sizes, targets)]
