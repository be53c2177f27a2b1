"""Mooncake's safetensors helpers: a stored tensor written to a .safetensors file, and a tensor of
such a file stored. The `safetensors` package is used when installed (what Mooncake calls);
otherwise the format is read and written here: an 8-byte little-endian header length, a JSON header
({name: {"dtype", "shape", "data_offsets"}}, padded with spaces to 8 bytes), then the bytes."""
import json
import logging
import struct

_log = logging.getLogger("yuebing")

INVALID_PARAMS = -600
FILE_NOT_FOUND = -1100

# safetensors' dtype names, for the torch dtypes Mooncake's tensor format holds.
_NAMES = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
          "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL", "uint16": "U16",
          "uint32": "U32", "uint64": "U64", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}
_MAX_HEADER = 100 << 20  # as the safetensors package: a larger header is no safetensors file


def _torch():
    import torch
    return torch


def _save(tensors, path):
    try:
        from safetensors.torch import save_file
    except ImportError:
        save_file = None
    if save_file is not None:
        save_file(tensors, path)
        return
    torch = _torch()
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        dtype = _NAMES.get(str(t.dtype).replace("torch.", ""))
        if dtype is None:
            raise ValueError(f"dtype {t.dtype} has no safetensors name")
        data = t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for b in blobs:
            f.write(b)


def _load(path):
    try:
        from safetensors.torch import load_file
    except ImportError:
        load_file = None
    if load_file is not None:
        return load_file(path)
    torch = _torch()
    by_name = {v: getattr(torch, k) for k, v in _NAMES.items() if hasattr(torch, k)}
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise ValueError("shorter than a safetensors header")
    (n,) = struct.unpack_from("<Q", blob, 0)
    if n > _MAX_HEADER or 8 + n > len(blob):
        raise ValueError(f"a header of {n} bytes does not fit the file")
    header = json.loads(blob[8:8 + n])
    data = memoryview(blob)[8 + n:]
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        dtype = by_name.get(entry.get("dtype"))
        begin, end = entry["data_offsets"]
        if dtype is None or not 0 <= begin <= end <= len(data):
            raise ValueError(f"tensor {name!r}: bad dtype or offsets")
        shape = [int(d) for d in entry["shape"]]
        flat = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.uint8) if end > begin else \
            torch.empty(0, dtype=torch.uint8)
        t = flat.view(dtype)
        if t.numel() != _count(shape):
            raise ValueError(f"tensor {name!r}: {t.numel()} elements for shape {shape}")
        out[name] = t.reshape(shape)
    return out


def _count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


class SafetensorsMixin:
    """save_tensor_to_safetensor / load_tensor_from_safetensor, with Mooncake's arguments and returns."""

    def save_tensor_to_safetensor(self, key, file_name=None):
        """The tensor stored under `key` written to `file_name` (default: the key) as entry `key`:
        0, FILE_NOT_FOUND (-1100) when no tensor is stored under it, INVALID_PARAMS when it cannot be
        written."""
        tensor = self.get_tensor(key)
        if tensor is None:
            _log.error("save_tensor_to_safetensor: no tensor stored under %r", key)
            return FILE_NOT_FOUND
        try:
            _save({key: tensor}, key if file_name is None else file_name)
        except (OSError, ValueError) as e:
            _log.error("save_tensor_to_safetensor: %s", e)
            return INVALID_PARAMS
        return 0

    def load_tensor_from_safetensor(self, key=None, file_name=None):
        """A tensor of a safetensors file stored under `key` (default: the file name), and returned:
        the file's entry named `key`, else its first one (logged); None on an error."""
        if file_name is None:
            _log.error("load_tensor_from_safetensor: no file_name")
            return None
        try:
            loaded = _load(file_name)
        except (OSError, ValueError, KeyError, TypeError) as e:
            _log.error("load_tensor_from_safetensor: %s: %s", file_name, e)
            return None
        if not loaded:
            _log.error("load_tensor_from_safetensor: no tensors in %s", file_name)
            return None
        store_key = file_name if key is None else key
        if key is not None and key in loaded:
            tensor = loaded[key]
        else:
            if key is not None:
                _log.warning("load_tensor_from_safetensor: %r is not in %s; using its first tensor", key, file_name)
            tensor = next(iter(loaded.values()))
        rc = self.put_tensor(store_key, tensor)
        if rc != 0:
            _log.error("load_tensor_from_safetensor: storing %r failed (%d)", store_key, rc)
            return None
        return tensor
