"""The fake CUDA driver (tests/fake_cuda) from Python, and the two kinds of memory the caller
replays put their KV buffers in: host memory (torch tensors) and fake device memory, which the CPU
cannot touch (its pages are PROT_NONE: a load or store there kills the process).

The client finds the driver with dlopen("libcuda.so.1"), once per process: a process that is to see
device memory must start with the fake's directory on LD_LIBRARY_PATH (fake_cuda_env())."""
import ctypes
import os

import torch

from conftest import BIN

FAKE_DIR = os.path.realpath(os.environ.get("YB_FAKE_CUDA_DIR") or os.path.join(BIN, "..", "fake_cuda"))


def fake_cuda_env(env=None, **extra):
    """`env` (default: this process's) with the fake driver first on the library path."""
    env = dict(os.environ if env is None else env, **extra)
    env["LD_LIBRARY_PATH"] = FAKE_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


class _Counters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "async_copies", "sync_copies", "registrations", "live_registrations", "bytes_to_device", "bytes_to_host",
        "streams_created", "live_streams")]


def real_cuda():
    """Whether the device tests run against the machine's own driver and GPU (scripts/gpu_check.sh)."""
    return os.environ.get("YB_REAL_CUDA") == "1"


class FakeCuda:
    """Allocation and copies through the driver API: the fake's (or, with YB_REAL_CUDA=1, the real
    libcuda.so.1, which has the same entry points); the tests' own calls (the client makes its own)."""

    def __init__(self):
        lib = ctypes.CDLL("libcuda.so.1" if real_cuda() else os.path.join(FAKE_DIR, "libcuda.so.1"))
        u64, vp, sz = ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t
        lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(u64), sz]
        lib.cuMemFree_v2.argtypes = [u64]
        lib.cuMemcpyHtoD_v2.argtypes = [u64, vp, sz]
        lib.cuMemcpyDtoH_v2.argtypes = [vp, u64, sz]
        lib.cuDevicePrimaryCtxRetain.argtypes = [ctypes.POINTER(vp), ctypes.c_int]
        lib.cuCtxSetCurrent.argtypes = [vp]
        self.fake = hasattr(lib, "fake_cuda_counters")
        if self.fake:
            lib.fake_cuda_counters.argtypes = [ctypes.POINTER(_Counters)]
        self.lib = lib
        assert lib.cuInit(0) == 0
        self.ctx = vp()
        assert lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), 0) == 0

    def _call(self, fn, *args):
        assert self.lib.cuCtxSetCurrent(self.ctx) == 0
        try:
            assert fn(*args) == 0, fn.__name__
        finally:
            self.lib.cuCtxSetCurrent(None)  # as an engine's thread may be: no context current

    def alloc(self, n):
        p = ctypes.c_uint64()
        self._call(self.lib.cuMemAlloc_v2, ctypes.byref(p), n)
        return p.value

    def free(self, ptr):
        self._call(self.lib.cuMemFree_v2, ptr)

    def write(self, ptr, data):
        data = bytes(data)
        self._call(self.lib.cuMemcpyHtoD_v2, ptr, data, len(data))

    def read(self, ptr, n):
        out = ctypes.create_string_buffer(n)
        self._call(self.lib.cuMemcpyDtoH_v2, out, ptr, n)
        return out.raw

    def counters(self):
        """What the fake saw (None with a real driver)."""
        if not self.fake:
            return None
        c = _Counters()
        self.lib.fake_cuda_counters(ctypes.byref(c))
        return {name: getattr(c, name) for name, _ in c._fields_}


class HostMemory:
    """KV buffers as torch CPU tensors (what the replays used so far)."""

    def __init__(self):
        self._keep = []

    def alloc(self, n):
        t = torch.zeros(n, dtype=torch.uint8)
        self._keep.append(t)
        return t.data_ptr()

    def write(self, ptr, data):
        data = bytes(data)
        ctypes.memmove(ptr, data, len(data))

    def read(self, ptr, n):
        return ctypes.string_at(ptr, n)


class DeviceMemory:
    """KV buffers in the fake driver's device memory."""

    def __init__(self, cuda=None):
        self.cuda = cuda or FakeCuda()

    def alloc(self, n):
        return self.cuda.alloc(n)

    def write(self, ptr, data):
        self.cuda.write(ptr, data)

    def read(self, ptr, n):
        return self.cuda.read(ptr, n)


class Cache:
    """A contiguous KV cache of `shape` and element size in `memory`, shaped as the torch tensor an
    engine hands the store (untyped_storage().data_ptr(), nbytes(), stride(), element_size(), shape,
    data_ptr(), numel()), without letting anyone touch its bytes but through `memory`."""

    def __init__(self, memory, shape, element_size):
        self.memory, self.shape, self._element_size = memory, tuple(shape), element_size
        self.numel_ = 1
        for d in shape:
            self.numel_ *= d
        self.ptr = memory.alloc(self.numel_ * element_size)

    def untyped_storage(self):
        return self

    def data_ptr(self):
        return self.ptr

    def nbytes(self):
        return self.numel_ * self._element_size

    def numel(self):
        return self.numel_

    def element_size(self):
        return self._element_size

    def stride(self, dim):
        s = 1
        for d in self.shape[dim + 1:]:
            s *= d
        return s
