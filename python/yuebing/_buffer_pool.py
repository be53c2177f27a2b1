"""BufferPool: Mooncake's pool of registered host buffers (mooncake.store.BufferPool, also named
RegisteredBufferPool), with its constructor arguments, leases and errors (RuntimeError).

A lease is a buffer registered with the store (register_buffer), so put_from / get_into on it move
bytes without staging. Regions are anonymous mappings, kept for reuse once released: a lease of the
same size class takes a kept region, registered already; kept regions are given back (unregistered
and unmapped) when room is needed for a new one, and at close(). Size classes are powers of two
from `min_size_class` up to `max_size_class`; a larger request gets a region of its own size.
Together the regions hold at most `max_bytes` (0: twice the store's local buffer, as Mooncake's);
an acquire that finds no room waits for a release (`block_on_exhaustion`, `timeout` seconds), or
raises. Thread-safe."""
import ctypes
import mmap
import threading
import time

_PAGE = mmap.PAGESIZE


class BufferLease:
    """A leased buffer: `ptr` (its address), `size` (what was asked), `buffer` (a memoryview of
    those bytes, which keeps the lease alive). release() (or leaving a `with` block) gives it back
    to its pool: release the memoryviews taken from `buffer` first, as Mooncake requires (an
    explicit release cannot see them)."""

    def __init__(self, pool, region, size):
        self._pool, self._region, self._size = pool, region, size

    @property
    def ptr(self):
        if self._region is None:
            raise RuntimeError("buffer lease is closed")
        return self._region.ptr

    @property
    def size(self):
        return self._size

    @property
    def buffer(self):
        if self._region is None:
            raise RuntimeError("buffer lease is closed")
        # The view keeps the lease (and so its region) alive: a dropped lease whose bytes are still
        # viewed is not given back under them.
        array = (ctypes.c_char * self._size).from_buffer(self._region.mapping)
        array.lease = self
        return memoryview(array).cast("B")

    def release(self):
        if self._region is None:
            return
        region, self._region = self._region, None
        self._pool._release(region)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
        return False

    def __del__(self):
        try:
            self.release()
        except Exception:  # noqa: BLE001 (a pool closed meanwhile: nothing to give back)
            pass


class _Region:
    def __init__(self, size):
        self.size = size
        self.mapping = mmap.mmap(-1, max(size, 1))
        self.ptr = ctypes.addressof(ctypes.c_char.from_buffer(self.mapping))


class BufferPool:
    def __init__(self, store, max_bytes=0, min_size_class=64 * 1024, max_size_class=None, alignment=8 * 1024 * 1024,
                 block_on_exhaustion=True, default_timeout=None, max_regions=None, prewarm_size=None,
                 prewarm_count=0):
        if store is None or not hasattr(store, "register_buffer"):
            raise RuntimeError("MooncakeDistributedStore is not initialized")
        if min_size_class <= 0 or alignment <= 0:
            raise RuntimeError("min_size_class and alignment must be positive")
        if alignment < ctypes.sizeof(ctypes.c_void_p) or alignment & (alignment - 1):
            raise RuntimeError("alignment must be a power of two and at least sizeof(void*)")
        local = int(store._local_buffer_size()) if hasattr(store, "_local_buffer_size") else 0
        if local == 0:
            raise RuntimeError("BufferPool requires a store configured with a local buffer")
        self._store = store
        self._max_bytes = 2 * local if max_bytes == 0 else max(int(max_bytes), local)
        self._min_class = int(min_size_class)
        self._max_class = self._max_bytes if max_size_class is None else int(max_size_class)
        self._block = bool(block_on_exhaustion)
        self._timeout = default_timeout
        self._max_regions = max_regions
        self._cv = threading.Condition()
        self._kept = {}  # size class -> [regions released, registered still]
        self._in_use = 0  # regions leased
        self._total = 0  # bytes of every region, leased or kept
        self._closed = False
        if prewarm_size is not None and prewarm_count > 0:
            self.prewarm(prewarm_size, prewarm_count)

    def _size_class(self, size):
        size = max(int(size), 1)
        if size > self._max_class:
            return -(-size // _PAGE) * _PAGE  # its own region
        c = self._min_class
        while c < size:
            c *= 2
        return min(c, max(self._max_class, size))

    def _regions(self):
        return self._in_use + sum(len(v) for v in self._kept.values())

    def _drop(self, region):
        self._store.unregister_buffer(region.ptr)
        self._total -= region.size
        region.mapping.close()

    def _room_for(self, size):
        """Makes room for a new region of `size` bytes by giving kept ones back; whether there is."""
        while self._total + size > self._max_bytes or (
                self._max_regions is not None and self._regions() >= self._max_regions):
            victim = next((c for c, v in self._kept.items() if v), None)
            if victim is None:
                return False
            self._drop(self._kept[victim].pop())
        return True

    def acquire(self, size, block=None, timeout=None):
        if size < 0:
            raise RuntimeError("size must be non-negative")
        size_class = self._size_class(size)
        if size_class > self._max_bytes:
            raise RuntimeError("requested buffer size exceeds pool capacity")
        block = self._block if block is None else bool(block)
        timeout = self._timeout if timeout is None else timeout
        if timeout is not None and timeout < 0:
            raise RuntimeError("timeout must be non-negative")
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cv:
            while True:
                if self._closed:
                    raise RuntimeError("buffer pool is closed")
                kept = self._kept.get(size_class)
                if kept:
                    self._in_use += 1
                    return BufferLease(self, kept.pop(), int(size))
                if self._room_for(size_class):
                    region = _Region(size_class)
                    if self._store.register_buffer(region.ptr, size_class) != 0:
                        region.mapping.close()
                        raise RuntimeError("buffer registration failed")
                    self._total += size_class
                    self._in_use += 1
                    return BufferLease(self, region, int(size))
                if not block:
                    raise RuntimeError("buffer pool is exhausted")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise RuntimeError("timed out waiting for buffer")
                self._cv.wait(left)

    def buffer(self, size, block=None, timeout=None):
        """A lease's memoryview; the lease is given back once the view and its slices are gone."""
        return self.acquire(size, block, timeout).buffer

    def prewarm(self, size, count):
        leases = [self.acquire(size, block=False) for _ in range(count)]
        for lease in leases:
            lease.release()

    def _release(self, region):
        with self._cv:
            self._in_use -= 1
            if self._closed:
                self._drop(region)
            else:
                self._kept.setdefault(region.size, []).append(region)
            self._cv.notify_all()

    def close(self):
        with self._cv:
            if self._closed:
                return
            if self._in_use:
                raise RuntimeError("cannot close buffer pool with active leases")
            self._closed = True
            for regions in self._kept.values():
                for region in regions:
                    self._drop(region)
            self._kept.clear()
            self._cv.notify_all()


RegisteredBufferPool = BufferPool
RegisteredBufferLease = BufferLease
