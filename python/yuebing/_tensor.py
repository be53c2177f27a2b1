"""Tensor calls of MooncakeDistributedStore (put_tensor, get_tensor and their batch, _into, pub,
upsert and tensor-parallel forms), over PyTorch CPU tensors.

An object holds Mooncake's tensor object (its format since Mooncake PR #1389): a 304-byte header,
then the tensor's bytes in C order. The header is little-endian:
  u32 magic 0x4d4f4f4e | u16 version 1 | u16 header size 304 | i32 dtype | i32 ndim
  | u32 layout (0 full, 1 shard) | u32 flags 0 | u64 data offset 304 | u64 data bytes
  | i64 global shape[8] | i64 local shape[8] (-1 past ndim) | u32 axis count | u32 0
  | 4 axes of (i32 kind, axis index, shard rank, shard count, split dim, 0 | i64 local split extent)
A tensor-parallel shard is a "shard" object whose global shape is the whole tensor's and whose one
axis says its rank. Objects in Mooncake's earlier format (a 40-byte header: i32 dtype, i32 ndim,
i64 shape[4]) are read too. Tensors of more than 8 dimensions are refused, as Mooncake refuses them.

Return conventions are Mooncake's: puts answer 0 or a negative code, gets a tensor or None; a bad
argument is logged and answered with INVALID_PARAMS (-600), not raised.
"""
import ctypes
import functools
import logging
import struct

MAGIC = 0x4D4F4F4E
VERSION = 1
_HEAD = struct.Struct("<IHHiiIIQQ")  # 40 bytes
_SHAPE = struct.Struct("<8q")
_AXES = struct.Struct("<II")
_MAGIC_WORD = struct.Struct("<I")
_AXIS = struct.Struct("<iiiiiiq")  # 32 bytes
MAX_DIMS = 8
MAX_AXES = 4
HEADER_BYTES = _HEAD.size + 2 * _SHAPE.size + _AXES.size + MAX_AXES * _AXIS.size  # 304
LAYOUT_FULL, LAYOUT_SHARD = 0, 1
AXIS_DP, AXIS_TP, AXIS_EP, AXIS_PP = 0, 1, 2, 3  # Mooncake's LayoutAxisKind
OLD_HEADER = struct.Struct("<ii4q")  # Mooncake's format before PR #1389: 40 bytes
OLD_MAX_DIMS = 4
INVALID_PARAMS = -600

_log = logging.getLogger("yuebing")

# Mooncake's TensorDtype numbers, by torch dtype name.
_DTYPE_NUMBERS = {
    "float32": 0, "float64": 1, "int8": 2, "uint8": 3, "int16": 4, "uint16": 5, "int32": 6,
    "uint32": 7, "int64": 8, "uint64": 9, "bool": 10, "float16": 11, "bfloat16": 12,
    "float8_e4m3fn": 13, "float8_e5m2": 14,
}


def _torch():
    import torch  # imported on first use: the package itself does not need PyTorch
    return torch


@functools.lru_cache(maxsize=None)
def _dtype_tables():
    torch = _torch()
    to_number, to_dtype = {}, {}
    for name, number in _DTYPE_NUMBERS.items():
        dtype = getattr(torch, name, None)  # this PyTorch may not have every type (float8, uint16)
        if dtype is not None:
            to_number[dtype] = number
            to_dtype[number] = dtype
    return to_number, to_dtype


def _is_tensor(x):
    return type(x).__name__.endswith("Tensor") and hasattr(x, "data_ptr") and hasattr(x, "dtype")


def _padded(shape):
    return list(shape) + [-1] * (MAX_DIMS - len(shape))


def encode_header(tensor, whole_shape=None, axes=None):
    """The 304-byte header of `tensor`, or None (logged) for a tensor Mooncake's format cannot hold.
    `whole_shape` and `axes` (kind, rank, count, split dim or -1, expert or stage id): `tensor` is
    that shard of a tensor of that shape."""
    if not _is_tensor(tensor):
        _log.error("put_tensor: expected a torch.Tensor, got %s", type(tensor).__name__)
        return None
    to_number, _ = _dtype_tables()
    number = to_number.get(tensor.dtype)
    if number is None:
        _log.error("put_tensor: dtype %s has no number in Mooncake's tensor format", tensor.dtype)
        return None
    shape = list(tensor.shape)
    if len(shape) > MAX_DIMS:
        _log.error("put_tensor: %d dimensions; Mooncake's tensor format holds at most %d", len(shape), MAX_DIMS)
        return None
    if tensor.device.type not in ("cpu", "cuda"):
        # CUDA memory is found by the client through the driver and moved through pinned host memory.
        _log.error("put_tensor: tensor on %s; only CPU and CUDA tensors are supported", tensor.device)
        return None
    nbytes = tensor.numel() * tensor.element_size()
    layout = LAYOUT_FULL if axes is None else LAYOUT_SHARD
    packed = b""
    for i, (kind, rank, size, split_dim, tag) in enumerate(axes or ()):
        packed += _AXIS.pack(kind, i, rank, size, split_dim, tag, shape[split_dim] if split_dim >= 0 else 0)
    count = len(axes or ())
    axes = packed + bytes(MAX_AXES * _AXIS.size - len(packed))
    return (_HEAD.pack(MAGIC, VERSION, HEADER_BYTES, number, len(shape), layout, 0, HEADER_BYTES, nbytes)
            + _SHAPE.pack(*_padded(whole_shape if whole_shape is not None else shape)) + _SHAPE.pack(*_padded(shape))
            + _AXES.pack(count, 0) + axes)


def _data_bytes(dtype, shape):
    count = 1
    for d in shape:
        count *= d
    return count * _torch().empty((), dtype=dtype).element_size()


def decode_header(view, what, total=None):
    """(dtype, shape, data bytes, data offset) of the tensor object in `view`, in Mooncake's current
    format or its earlier one, or None (logged) when it is no tensor. `total`: the object's size when
    `view` holds only its first bytes (an object in GPU memory, whose header alone was copied)."""
    _, to_dtype = _dtype_tables()
    if total is not None:
        view = _Prefix(view, total)
    if len(view) >= 4 and _unpack_from(_MAGIC_WORD, view, 0)[0] == MAGIC:
        if len(view) < HEADER_BYTES:
            _log.error("%s: object of %d bytes is shorter than a tensor header", what, len(view))
            return None
        (_, version, header_size, number, ndim, layout, _, offset, nbytes) = _unpack_from(_HEAD, view, 0)
        local = _unpack_from(_SHAPE, view, _HEAD.size + _SHAPE.size)
        axis_count = _unpack_from(_AXES, view, _HEAD.size + 2 * _SHAPE.size)[0]
        dtype = to_dtype.get(number)
        if (version != VERSION or header_size != HEADER_BYTES or dtype is None or not 0 <= ndim <= MAX_DIMS
                or layout > LAYOUT_SHARD or axis_count > MAX_AXES or not HEADER_BYTES <= offset <= len(view)
                or nbytes != len(view) - offset or any(d < 0 for d in local[:ndim])):
            _log.error("%s: not a tensor object (version %d, dtype %d, ndim %d)", what, version, number, ndim)
            return None
        shape = tuple(local[:ndim])
        if _data_bytes(dtype, shape) != nbytes:
            _log.error("%s: the header says %d data bytes for shape %s", what, nbytes, shape)
            return None
        return dtype, shape, nbytes, offset
    if len(view) < OLD_HEADER.size:
        _log.error("%s: object of %d bytes is shorter than a tensor header", what, len(view))
        return None
    number, ndim, *dims = _unpack_from(OLD_HEADER, view, 0)
    dtype = to_dtype.get(number)
    if dtype is None or not 0 <= ndim <= OLD_MAX_DIMS or any(d < 0 for d in dims[:ndim]):
        _log.error("%s: not a tensor object (dtype %d, ndim %d)", what, number, ndim)
        return None
    shape = tuple(dims[:ndim])
    nbytes = _data_bytes(dtype, shape)
    if nbytes != len(view) - OLD_HEADER.size:
        _log.error("%s: the header says %d data bytes, the object holds %d", what, nbytes,
                   len(view) - OLD_HEADER.size)
        return None
    return dtype, shape, nbytes, OLD_HEADER.size


def header_axes(view):
    """(kind, rank, count, split dim) of each layout axis in the tensor object in `view` (a shard
    object's; [] for a whole tensor or the earlier format)."""
    if len(view) < HEADER_BYTES or _unpack_from(_MAGIC_WORD, view, 0)[0] != MAGIC:
        return []
    layout = _unpack_from(_HEAD, view, 0)[5]
    count = _unpack_from(_AXES, view, _HEAD.size + 2 * _SHAPE.size)[0]
    if layout != LAYOUT_SHARD:
        return []
    out = []
    for i in range(min(count, MAX_AXES)):
        kind, _, rank, size, split_dim, _, _ = _unpack_from(_AXIS, view, _HEAD.size + 2 * _SHAPE.size + _AXES.size
                                                            + i * _AXIS.size)
        out.append((kind, rank, size, split_dim))
    return out


class _Prefix:
    """The first bytes of an object of `total` bytes: len() is the object's, unpacking reads the prefix."""

    def __init__(self, data, total):
        self.data, self.total = bytes(data), total

    def __len__(self):
        return self.total

    def __getitem__(self, item):
        return self.data[item]


def _unpack_from(fmt, view, offset=0):
    return fmt.unpack_from(view.data if isinstance(view, _Prefix) else view, offset)


def _device_tensor(ptr, dtype, shape, nbytes, offset, what):
    """A CUDA tensor over GPU memory at `ptr` (the object) from `offset`, sharing it; None (logged)
    where this torch has no CUDA."""
    torch = _torch()
    if not torch.cuda.is_available():
        _log.error("%s: the buffer is GPU memory but this torch has no CUDA: no tensor can view it", what)
        return None

    class _Cuda:
        __cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr + offset, False),
                                    "version": 3}

    flat = torch.as_tensor(_Cuda(), device="cuda")
    return flat.view(dtype).reshape(shape)


def _view_tensor(buffer, dtype, shape, nbytes, offset):
    """A tensor over `buffer`'s bytes after the header: sharing a copy's bytes (it keeps `buffer`
    alive), or, when `buffer` is the pool's own memory in place (read-only, pinned while held), a
    copy of them, so that the caller owns a writable tensor and holds no pin."""
    torch = _torch()
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype)
    if getattr(buffer, "in_place", False):
        import numpy as np
        flat = torch.from_numpy(np.frombuffer(buffer, dtype=np.uint8, count=nbytes, offset=offset).copy())
    else:
        flat = torch.frombuffer(buffer, dtype=torch.uint8, count=nbytes, offset=offset)
    return flat.view(dtype).reshape(shape)


# ---- Mooncake's private codec helpers (mooncake.store._serialize_tensor, _tensor_metadata_size,
# _deserialize_tensor), which its structured object store calls to lay tensors out itself.

def serialize_tensor(tensor):
    """(header bytes, data address, data bytes, owner): the tensor object of `tensor` without its
    data copied; `owner` (the tensor, made contiguous) keeps the data alive."""
    header = encode_header(tensor)
    if header is None:
        raise ValueError("unsupported tensor for Mooncake tensor serialization")
    owner = tensor if tensor.is_contiguous() else tensor.contiguous()
    return header, owner.data_ptr(), owner.numel() * owner.element_size(), owner


def tensor_metadata_size():
    return HEADER_BYTES


def deserialize_tensor(payload):
    """The tensor of a whole tensor object ([header][data], either format), owning a copy."""
    buf = bytearray(payload)
    meta = decode_header(memoryview(buf), "_deserialize_tensor")
    if meta is None:
        raise ValueError("invalid serialized Mooncake tensor payload")
    return _view_tensor(buf, *meta)


def shard_range(dim, rank, count):
    """(start, length) of shard `rank` of `count` along a dimension of size `dim`: the first
    dim % count shards get one more element."""
    base, extra = divmod(dim, count)
    return rank * base + min(rank, extra), base + (1 if rank < extra else 0)


def tp_key(key, rank):
    return f"{key}_tp_{rank}"


class TensorMixin:
    """Tensor methods over the byte calls of MooncakeDistributedStore."""

    # ---- writes

    def _write_tensors(self, keys, tensors, config, upsert, what, shards_of=None):
        """`shards_of`: (whole shape, split dim): tensors[i] is shard i of len(tensors) of that tensor."""
        if len(keys) != len(tensors):
            _log.error("%s: keys and tensors differ in length", what)
            return [INVALID_PARAMS] * len(keys)
        headers = []
        for i, tensor in enumerate(tensors):
            if shards_of is None:
                headers.append(encode_header(tensor))
            else:
                headers.append(encode_header(tensor, shards_of[0], [(AXIS_TP, i, len(tensors), shards_of[1], 0)]))
        return self._write_objects(keys, headers, tensors, config, upsert)

    def _write_objects(self, keys, heads, tensors, config, upsert):
        """One batch write of objects [heads[i]][tensors[i]'s bytes] (a tensor None: the head alone;
        a head None: not written, INVALID_PARAMS)."""
        out = [INVALID_PARAMS] * len(keys)
        go, bufs, sizes, keep = [], [], [], []
        for i, (head, tensor) in enumerate(zip(heads, tensors)):
            if head is None:
                continue
            nbytes = 0
            if tensor is not None:
                data = tensor.contiguous()
                keep.append(data)  # alive until the bytes moved
                nbytes = data.numel() * data.element_size()
            go.append(i)
            bufs.append([head, data.data_ptr()] if nbytes else [head])
            sizes.append([len(head), nbytes] if nbytes else [len(head)])
        if go:
            write = self._batch_upsert_from_multi_buffers if upsert else self.batch_put_from_multi_buffers
            for i, r in zip(go, write([keys[i] for i in go], bufs, sizes, config)):
                out[i] = r
        return out

    def put_tensor(self, key, tensor):
        return self._write_tensors([key], [tensor], _default_config(), False, "put_tensor")[0]

    def pub_tensor(self, key, tensor, config=None):
        return self._write_tensors([key], [tensor], config or _default_config(), False, "pub_tensor")[0]

    def upsert_tensor(self, key, tensor):
        return self._write_tensors([key], [tensor], _default_config(), True, "upsert_tensor")[0]

    def upsert_pub_tensor(self, key, tensor, config=None):
        return self._write_tensors([key], [tensor], config or _default_config(), True, "upsert_pub_tensor")[0]

    def batch_put_tensor(self, keys, tensors_list):
        return self._write_tensors(list(keys), list(tensors_list), _default_config(), False, "batch_put_tensor")

    def batch_pub_tensor(self, keys, tensors_list, config=None):
        return self._write_tensors(list(keys), list(tensors_list), config or _default_config(), False,
                                   "batch_pub_tensor")

    def batch_upsert_tensor(self, keys, tensors_list):
        return self._write_tensors(list(keys), list(tensors_list), _default_config(), True, "batch_upsert_tensor")

    def batch_upsert_pub_tensor(self, keys, tensors_list, config=None):
        return self._write_tensors(list(keys), list(tensors_list), config or _default_config(), True,
                                   "batch_upsert_pub_tensor")

    # An object already in the layout ([header][data]) in caller memory.
    def put_tensor_from(self, key, buffer_ptr, size):
        return self.put_from(key, buffer_ptr, size)

    def batch_put_tensor_from(self, keys, buffer_ptrs, sizes):
        return self.batch_put_from(keys, buffer_ptrs, sizes)

    def upsert_tensor_from(self, key, buffer_ptr, size):
        return self.upsert_from(key, buffer_ptr, size)

    def batch_upsert_tensor_from(self, keys, buffer_ptrs, sizes):
        return self.batch_upsert_from(keys, buffer_ptrs, sizes)

    # ---- reads

    def get_tensor(self, key):
        return self.batch_get_tensor([key])[0]

    def batch_get_tensor(self, keys):
        out = []
        for key, buf in zip(keys, self.batch_get_buffer(list(keys))):
            if buf is None:
                out.append(None)
                continue
            meta = decode_header(memoryview(buf), "get_tensor")
            out.append(None if meta is None else _view_tensor(buf, *meta))
        return out

    def get_tensor_into(self, key, buffer_ptr, size):
        return self.batch_get_tensor_into([key], [buffer_ptr], [size])[0]

    def batch_get_tensor_into(self, keys, buffer_ptrs, sizes):
        """Each object lands in its buffer ([header][data]); the tensors returned view the data there."""
        if not len(keys) == len(buffer_ptrs) == len(sizes):
            _log.error("batch_get_tensor_into: keys, buffer_ptrs and sizes differ in length")
            return [INVALID_PARAMS] * len(keys)  # as Mooncake: the code, not None, for each key
        res = self.batch_get_into(list(keys), list(buffer_ptrs), list(sizes))
        out = []
        for ptr, n in zip(buffer_ptrs, res):
            if n < 0:
                out.append(None)
            elif isinstance(ptr, int) and _is_device_memory(ptr):
                # GPU memory: only the header is copied out to read; the tensor views the device's bytes.
                head = _read_memory(ptr, min(n, HEADER_BYTES))
                meta = None if head is None else decode_header(head, "get_tensor_into", total=n)
                out.append(None if meta is None else _device_tensor(ptr, *meta, "get_tensor_into"))
            else:
                view = _address_view(ptr, n)
                meta = decode_header(memoryview(view), "get_tensor_into")
                out.append(None if meta is None else _view_tensor(view, *meta))
        return out

    # ---- tensor parallelism: a tensor split along split_dim into tp_size shards, KEY_tp_RANK

    def _shards(self, tensor, tp_size, split_dim):
        if not _is_tensor(tensor) or not 0 <= split_dim < tensor.dim():
            return None
        return [tensor.narrow(split_dim, *shard_range(tensor.shape[split_dim], r, tp_size)).contiguous()
                for r in range(tp_size)]

    def _put_with_tp(self, keys, tensors, config, upsert, tp_size, split_dim, what):
        if tp_size <= 1:
            return self._write_tensors(keys, tensors, config, upsert, what)
        if len(keys) != len(tensors):
            _log.error("%s: keys and tensors differ in length", what)
            return [INVALID_PARAMS] * len(keys)
        out = []
        for key, tensor in zip(keys, tensors):
            shards = self._shards(tensor, tp_size, split_dim)
            if shards is None:
                _log.error("%s: %s cannot be split along dimension %d", what, key, split_dim)
                out.append(INVALID_PARAMS)
                continue
            res = self._write_tensors([tp_key(key, r) for r in range(tp_size)], shards, config, upsert, what,
                                      shards_of=(list(tensor.shape), split_dim))
            out.append(next((r for r in res if r != 0), 0))
        return out

    def put_tensor_with_tp(self, key, tensor, tp_rank=0, tp_size=1, split_dim=0):
        return self._put_with_tp([key], [tensor], _default_config(), False, tp_size, split_dim,
                                 "put_tensor_with_tp")[0]

    def pub_tensor_with_tp(self, key, tensor, config=None, tp_rank=0, tp_size=1, split_dim=0):
        return self._put_with_tp([key], [tensor], config or _default_config(), False, tp_size, split_dim,
                                 "pub_tensor_with_tp")[0]

    def upsert_tensor_with_tp(self, key, tensor, tp_rank=0, tp_size=1, split_dim=0):
        return self._put_with_tp([key], [tensor], _default_config(), True, tp_size, split_dim,
                                 "upsert_tensor_with_tp")[0]

    def batch_put_tensor_with_tp(self, base_keys, tensors_list, tp_rank=0, tp_size=1, split_dim=0):
        return self._put_with_tp(list(base_keys), list(tensors_list), _default_config(), False, tp_size, split_dim,
                                 "batch_put_tensor_with_tp")

    def batch_pub_tensor_with_tp(self, base_keys, tensors_list, config=None, tp_rank=0, tp_size=1, split_dim=0):
        return self._put_with_tp(list(base_keys), list(tensors_list), config or _default_config(), False, tp_size,
                                 split_dim, "batch_pub_tensor_with_tp")

    # A whole tensor object ([header][data]) in caller memory, split and stored as every rank's shard
    # (with tp_size 1: stored as it is).
    def put_tensor_with_tp_from(self, key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0):
        return self.batch_put_tensor_with_tp_from([key], [buffer_ptr], [size], tp_rank, tp_size, split_dim)[0]

    def batch_put_tensor_with_tp_from(self, base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1, split_dim=0):
        what = "batch_put_tensor_with_tp_from"
        if not len(base_keys) == len(buffer_ptrs) == len(sizes):
            _log.error("%s: base_keys, buffer_ptrs and sizes differ in length", what)
            return [INVALID_PARAMS] * len(base_keys)
        if tp_size <= 1:
            return self.batch_put_tensor_from(list(base_keys), list(buffer_ptrs), list(sizes))
        keys, tensors, where, out = [], [], [], [INVALID_PARAMS] * len(base_keys)
        for i, (key, ptr, size) in enumerate(zip(base_keys, buffer_ptrs, sizes)):
            # An object in GPU memory is split on the host: it is copied out whole first.
            if isinstance(ptr, int) and _is_device_memory(ptr):
                copied = _read_memory(ptr, size)
                if copied is None:
                    continue
                view = bytearray(copied)
            else:
                view = _address_view(ptr, size)
            meta = decode_header(memoryview(view), what)
            if meta is None:
                continue
            keys.append(key)
            tensors.append(_view_tensor(view, *meta))
            where.append(i)
        for i, r in zip(where, self._put_with_tp(keys, tensors, _default_config(), False, tp_size, split_dim, what)):
            out[i] = r
        return out

    def get_tensor_with_tp(self, key, tp_rank=0, tp_size=1, split_dim=0):
        return self.get_tensor(key if tp_size <= 1 else tp_key(key, tp_rank))

    def batch_get_tensor_with_tp(self, base_keys, tp_rank=0, tp_size=1):
        return self.batch_get_tensor([k if tp_size <= 1 else tp_key(k, tp_rank) for k in base_keys])

    def get_tensor_with_tp_into(self, key, buffer_ptr, size, tp_rank=0, tp_size=1, split_dim=0):
        return self.get_tensor_into(key if tp_size <= 1 else tp_key(key, tp_rank), buffer_ptr, size)

    def batch_get_tensor_with_tp_into(self, base_keys, buffer_ptrs, sizes, tp_rank=0, tp_size=1, split_dim=0):
        return self.batch_get_tensor_into([k if tp_size <= 1 else tp_key(k, tp_rank) for k in base_keys],
                                          buffer_ptrs, sizes)


def _is_device_memory(ptr):
    from ._yuebing import _is_device_memory as is_device
    return is_device(ptr)


def _read_memory(ptr, size):
    from ._yuebing import _read_memory as read
    return read(ptr, size)


def _default_config():
    from ._yuebing import ReplicateConfig
    return ReplicateConfig()


def _address_view(ptr, size):
    """Writable bytes at an int address (or a buffer object's own bytes)."""
    if isinstance(ptr, int):
        return (ctypes.c_uint8 * size).from_address(ptr)
    return memoryview(ptr).cast("B")[:size]
