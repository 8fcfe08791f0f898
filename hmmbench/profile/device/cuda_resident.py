"""The resident database on a CUDA device: its large arrays page-locked in place chunk
by chunk, each chunk's asynchronous copy running while the next is registered (the link does
~55 GB/s from page-locked memory on the H100), the rest copied through page-locked staging
buffers that host threads fill while the previous chunk's copy runs (bound by the host's memcpy,
one core's ~13 GB/s), and its launch order sorted on the GPU (kernels_cuda/profile/order.cu)
from the length classes uploaded with it. The API-neutral part, what is kept and when it is
loaded, is :mod:`hmmbench.profile.device.resident`; the backends are :mod:`hmmbench.profile.device.cuda`.
"""
from __future__ import annotations

import mmap
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...apis import cuda, cuda as glue
from .layout import resident_specials
from .resident import ResidentCache, each_array

#: bytes per asynchronous copy of the resident database, and the page-locked staging buffers
#: it cycles through; host threads that fill a staging buffer (NumPy copies release the GIL).
#: The copy from page-locked memory runs at ~55 GB/s on the H100's link, one core's memcpy at
#: ~13 GB/s: the staged upload is bound by the host's copies (H100 host, 204 MB: 64 MiB x 2
#: buffers x 8 threads 23 GB/s, 16 MiB x 2 x 4 threads 19 GB/s; git show 8903acf:scripts/device_upload_paths.py)
UPLOAD_CHUNK = 64 << 20
UPLOAD_BUFFERS = 2
UPLOAD_THREADS = min(8, max(1, (os.cpu_count() or 1) // 2))
#: arrays of at least PIN_MIN bytes are page-locked in place in chunks of PIN_CHUNK bytes, each
#: chunk's copy enqueued as soon as it is locked, and stay page-locked while the database is
#: resident (H100 host, 204 MB never locked before: 16 / 64 MiB chunks 6.2 / 6.8 ms, locking
#: and copies overlapped; the copy alone 3.7 ms, unpinning 3.5-4.5 ms; 2-8 threads locking at
#: once are slower, 8.7-10.6 ms: the driver serializes them. Fewer chunks, fewer times the loop
#: waits for the GIL the layout thread holds. The staged copy: 8-13 ms.
#: git show 8903acf:scripts/device_upload_paths.py)
PIN_CHUNK = 64 << 20
PIN_MIN = 32 << 20
#: the launch order on the device (kernels_cuda/profile/order.cu): sequences per tile, threads
#: per block, and the most length classes its shared-memory tables hold (more: the host sorts)
ORDER_SOURCE = "profile/order.cu"
ORDER_TILE, ORDER_THREADS = 4096, 256
ORDER_MAX_CLASSES = (48 * 1024) // 4 - ORDER_TILE


_STAGING: list = []


def _staging(drv) -> list:
    """UPLOAD_BUFFERS page-locked staging buffers of UPLOAD_CHUNK bytes, allocated once per
    process, with the process's first page-locking in place (the driver sets it up then)."""
    if not _STAGING:
        _STAGING.extend(drv.pagelocked_empty(UPLOAD_CHUNK, np.uint8)
                        for _ in range(UPLOAD_BUFFERS))
        _copiers(UPLOAD_THREADS)
        first = np.ones(1 << 20, np.uint8)
        if cuda.host_register(first.ctypes.data, first.nbytes):
            cuda.host_unregister(first.ctypes.data)
    return _STAGING


_COPIERS: dict = {}                        # thread pools by size, started once per process


def _copiers(threads: int) -> ThreadPoolExecutor:
    """The pool of ``threads`` copying threads, its threads started (once per process, with
    the staging buffers: process setup, not a load's time)."""
    pool = _COPIERS.get(threads)
    if pool is None:
        pool = _COPIERS[threads] = ThreadPoolExecutor(threads, "hmmbench-staging")
        barrier = threading.Barrier(threads)     # every thread started: each waits for all
        list(pool.map(lambda _: barrier.wait(), range(threads)))
    return pool


def fill(dst: np.ndarray, src: np.ndarray, threads: int) -> None:
    """``dst[:] = src`` (converted to ``dst``'s type) in ``threads`` slices copied at once (one
    thread, or under a MiB: a plain copy)."""
    if threads <= 1 or src.nbytes < (1 << 20):
        dst[:] = src
        return
    pool = _copiers(threads)
    step = -(-src.size // threads)

    def copy(start):
        dst[start:start + step] = src[start:start + step]
    list(pool.map(copy, range(0, src.size, step)))


def pin_and_copy(drv, raw: np.ndarray, dev, stream) -> tuple:
    """Page-locks ``raw`` (bytes) in place in chunks of PIN_CHUNK, enqueuing each chunk's copy
    to ``dev`` as soon as it is locked, so the copy of one runs while the next is locked. Chunk
    bounds fall on page bounds (a page is locked once). Stops at the first chunk the driver
    refuses. Returns (the locked chunks' addresses, the bytes enqueued)."""
    base, end, page = raw.ctypes.data, raw.ctypes.data + raw.nbytes, mmap.PAGESIZE
    cuts = [base] + [(base + k) // page * page for k in range(PIN_CHUNK, raw.nbytes, PIN_CHUNK)]
    pinned, done = [], 0
    for lo, hi in zip(cuts, cuts[1:] + [end]):
        if not glue.host_register(lo, hi - lo):
            break
        pinned.append(lo)
        drv.memcpy_htod_async(int(dev) + done, raw[done:done + hi - lo], stream)
        done += hi - lo
    return pinned, done


def upload_database(arrays: dict, later=None) -> tuple:
    """The resident database's arrays copied to the device: arrays of PIN_MIN bytes or more
    page-locked in place and copied chunk by chunk (:func:`pin_and_copy`), the others (and what
    the driver would not lock) through the page-locked staging buffers in turn: while one
    chunk's asynchronous copy runs at the link's speed the host fills the next, UPLOAD_THREADS
    slices at once. ``later()``, when given, returns more arrays to copy after these (called
    once they are under way). Returns ({name: device allocation}, {"h2d": wall seconds of the
    copies, registration, host copies and transfers overlapped, the wait for ``later``
    included}, a function that unpins the locked arrays: called when the database is dropped,
    they stay locked and alive while it is resident)."""
    drv = cuda.driver()
    stream, staging = drv.Stream(), _staging(drv)
    done = [None] * len(staging)               # the last copy out of each staging buffer
    bufs, pinned, k = {}, [], 0

    def unpin():
        for locked, _raw in pinned:            # _raw: the memory stays alive until unpinned
            for ptr in locked:
                cuda.host_unregister(ptr)
        pinned.clear()
    t0 = time.perf_counter()
    try:
        for name, arr in each_array(arrays, later):
            raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
            bufs[name] = dev = drv.mem_alloc(max(raw.size, 1))
            head = 0
            if raw.size >= PIN_MIN and np.shares_memory(raw, arr):
                locked, head = pin_and_copy(drv, raw, dev, stream)
                pinned.append((locked, raw))
            for start in range(head, raw.size, UPLOAD_CHUNK):
                slot, part = k % len(staging), raw[start:start + UPLOAD_CHUNK]
                if done[slot] is not None:
                    done[slot].synchronize()   # that buffer's previous copy has left it
                fill(staging[slot][:part.size], part, UPLOAD_THREADS)
                drv.memcpy_htod_async(int(dev) + start, staging[slot][:part.size], stream)
                done[slot] = drv.Event()
                done[slot].record(stream)
                k += 1
    except BaseException:
        stream.synchronize()                   # no copy reads the locked memory any more
        unpin()
        raise
    stream.synchronize()
    seconds = time.perf_counter() - t0
    return bufs, {"h2d": seconds}, unpin


class DeviceLaunchOrder:
    """The resident database's launch order computed on the device from its length classes
    (``buffers["classes"]``), equal to ``host.launch_order``: a stable counting sort by tiles
    (order.cu) for databases of at most ``max_classes`` distinct lengths."""
    max_classes = ORDER_MAX_CLASSES

    def prepare(self):
        """The kernels, compiled before a load's clocks start (as every kernel is before the
        timed passes: PyCUDA caches the build)."""
        return cuda.compile(ORDER_SOURCE, {"ORDER_TILE": ORDER_TILE,
                                           "ORDER_THREADS": ORDER_THREADS})

    def __call__(self, buffers: dict, n: int, n_classes: int):
        """``buffers["order"]`` sorted on the device; returns once it is done, with a function
        that downloads it."""
        drv = cuda.driver()
        buffers["order"] = order = drv.mem_alloc(max(4 * n, 4))

        def fetch() -> np.ndarray:
            host = np.empty(n, np.int32)
            if n:
                drv.memcpy_dtoh(host, order)
            return host
        if n == 0:
            return fetch
        mod, tiles = self.prepare(), -(-n // ORDER_TILE)
        table = drv.mem_alloc(4 * n_classes * tiles)
        cls, args, block = buffers["classes"], (np.int32(n), np.int32(n_classes)), (ORDER_THREADS, 1, 1)
        mod.get_function("order_count")(cls, *args, table, block=block, grid=(tiles, 1),
                                        shared=4 * n_classes)
        mod.get_function("order_scan")(table, np.int64(n_classes * tiles), block=(1024, 1, 1),
                                       grid=(1, 1))
        mod.get_function("order_place")(cls, *args, table, order, block=block, grid=(tiles, 1),
                                        shared=4 * (n_classes + ORDER_TILE))
        drv.Context.synchronize()
        table.free()
        return fetch


def resident_cache() -> ResidentCache:
    """The CUDA backends' resident database: staged upload, the generic Forward's per-sequence
    length model, the launch order sorted on the device."""
    return ResidentCache(upload_database, resident_specials, DeviceLaunchOrder())
