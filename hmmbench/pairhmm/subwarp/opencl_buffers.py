"""What an ``opencl-subwarp`` backend keeps across its calls on one device
(:class:`DeviceBuffers`): the page-locked staging and result buffers (``ALLOC_HOST_PTR`` buffers
mapped once, grow-only), the device buffers (``DeviceKit.scratch``, grow-only), the layout's
counters and kernels, the side queues, the staging threads, each plan's bin per read length,
the small calls' shapes (``opencl_call.CallShape``); and
:class:`Launch`, a kernel object of the backend's own whose arguments stay set between calls.

No sub-buffers: the kernels take the slot and each array's byte offset, a buffer and an int
offset for bin ranges and queue heads (NVIDIA's runtime crashed, status 139, releasing
sub-buffers at a backend's close).
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

import numpy as np

from ...apis.opencl import DeviceKit, cl_module
from .layout import SW_LEVELS, Bin
from .staging import PREP_THREADS, headroom, int_views

LAYOUT_SOURCE = "pairhmm/subwarp_layout.cl"
#: Work-items per work-group of the counting and scan steps (the counting step keeps a
#: histogram of the call's keys in local memory: bins x SW_LEVELS ints).
LAYOUT_THREADS = 256
#: Bytes of one SwItem (read, first hap, n haps, first pair).
ITEM_BYTES = 16
#: Bin luts kept per backend.
MAX_LUTS = 4096
#: The staged arrays' byte offsets in the slot (as the CUDA twin's): the kernels take the slot and
#: each array's offset, never a sub-buffer (NVIDIA's runtime crashed, status 139, releasing them).
ARRAY_ALIGN = 256
#: Ints per bin range and per recompute queue head ({first, count}): the kernels take the buffer
#: and an offset of i * RANGE_INTS.
RANGE_INTS = 2
#: Bins a call may have (the layout's histogram: SW_MAX_BINS in subwarp_layout.cl).
MAX_BINS = 64
#: Call shapes a backend keeps (``opencl_call.CallShape``: each holds the device buffers that were
#: current when it was made).
MAX_SHAPES = 8
LAYOUT_KERNELS = ("sw_layout_clear", "sw_layout_count", "sw_layout_scan", "sw_layout_scatter")


class Launch:
    """A kernel object of the caller's own with the arguments last set on it: a launch sets only
    the arguments that differ from the last launch's (buffers by identity, scalars by value),
    then enqueues; OpenCL takes the arguments' values at the enqueue."""

    __slots__ = ("kernel", "args", "last")

    def __init__(self, kernel):
        self.kernel = kernel
        self.args: list = []
        self.last: tuple = ()  # the last launch's arguments as given

    def __call__(self, queue, global_size, local_size, args: tuple, wait_for=None):
        # the same arguments as the last launch (one tuple comparison: identity, then value):
        # nothing to set -- a call's launches mostly repeat the last call's
        if args is not self.last and args != self.last:
            old, kernel = self.args, self.kernel
            if len(old) != len(args):
                old = self.args = [None] * len(args)
            for i, a in enumerate(args):
                o = old[i]
                if a is not o and not (isinstance(a, np.generic) and type(a) is type(o)
                                       and a == o):
                    kernel.set_arg(i, a)
                    old[i] = a
            self.last = args
        return cl_module().enqueue_nd_range_kernel(queue, self.kernel, global_size, local_size,
                                                   wait_for=wait_for)


class DeviceBuffers:
    """A backend's reusable host and device state on one device: page-locked staging and result
    buffers where the runtime maps an ALLOC_HOST_PTR buffer so (NVIDIA's), reallocated only when
    too small; side queues; the staging threads."""

    def __init__(self, kit: DeviceKit):
        self.kit = kit
        self.align = ARRAY_ALIGN
        # the device's figures a call asks for, read once (each read is a runtime query)
        self.local_mem = kit.device.local_mem_size
        self.compute_units = kit.device.max_compute_units
        self._host = None  # (cl buffer, mapped array, int views)
        self._out = None   # (cl buffer, mapped array)
        self._side: list = []
        self._pool: Optional[ThreadPoolExecutor] = None
        self.threads = PREP_THREADS
        self._layout: Optional[dict] = None
        self._luts: dict = {}  # (bins, longest read) -> bin_lut
        self._counters = None  # (key histogram, pairs per bin): 0 between calls
        self.counters_clear = False
        self.shapes: dict = {}  # a small call's shape key -> opencl_call.CallShape

    def keep_shape(self, key: tuple, shape, most: int = MAX_SHAPES) -> None:
        """Keeps a call's shape (at most ``most``: each holds the device buffers it was made
        with, which a larger call's may since have replaced)."""
        if len(self.shapes) >= most:
            self.shapes.clear()
        self.shapes[key] = shape

    def layout(self) -> dict:
        """The layout's kernels (:class:`Launch`, built once)."""
        if self._layout is None:
            kit, cl = self.kit, cl_module()
            prg = kit.program(LAYOUT_SOURCE, {"SW_RANGE_STRIDE": RANGE_INTS,
                                              "SW_COUNT_THREADS": LAYOUT_THREADS,
                                              "SW_SCAN_THREADS": LAYOUT_THREADS})
            self._layout = {name: Launch(cl.Kernel(prg, name)) for name in LAYOUT_KERNELS}
        return self._layout

    def lut(self, bins: Sequence[Bin], max_read: int) -> np.ndarray:
        """``bin_lut`` of a plan, kept."""
        key = (tuple(bins), max_read)
        got = self._luts.get(key)
        if got is None:
            if len(self._luts) >= MAX_LUTS:
                self._luts.clear()
            got = self._luts[key] = bin_lut(bins, max_read)
        return got

    def counters(self) -> tuple:
        """The layout's key histogram and pairs per bin (buffers of this backend alone, sized
        for ``MAX_BINS``): each call's scan leaves them 0 for the next one's count."""
        if self._counters is None:
            cl = cl_module()
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
            self._counters = tuple(
                cl.Buffer(self.kit.context, flags, hostbuf=np.zeros(n, np.int32))
                for n in (MAX_BINS * SW_LEVELS, MAX_BINS))
            self.counters_clear = True
        return self._counters

    def _mapped(self, held, nbytes: int) -> tuple:
        cl = cl_module()
        if held is not None:
            held[1].base.release(self.kit.queue)  # unmapped before it is dropped
        size = headroom(nbytes)
        buf = cl.Buffer(self.kit.context, cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR,
                        size)
        arr, _ = cl.enqueue_map_buffer(self.kit.queue, buf, cl.map_flags.WRITE
                                       | cl.map_flags.READ, 0, (size,), np.uint8,
                                       is_blocking=True)
        return buf, arr

    def staging(self, nbytes: int) -> tuple:
        if self._host is None or self._host[1].nbytes < nbytes:
            buf, arr = self._mapped(self._host, nbytes)
            self._host = (buf, arr, int_views(arr))
        return self._host[2]

    def results(self, nbytes: int) -> np.ndarray:
        """The page-locked buffer the results come back into."""
        if self._out is None or self._out[1].nbytes < nbytes:
            self._out = self._mapped(self._out, nbytes)
        return self._out[1]

    def device(self, name: str, nbytes: int):
        return self.kit.scratch(f"subwarp_{name}", headroom(nbytes))

    def queues(self, n: int) -> list:
        """The kit's queue, then n - 1 side queues (profiled, in order)."""
        cl = cl_module()
        while len(self._side) < n - 1:
            self._side.append(cl.CommandQueue(
                self.kit.context, self.kit.device,
                properties=cl.command_queue_properties.PROFILING_ENABLE))
        return [self.kit.queue, *self._side[:n - 1]]

    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.threads,
                                            thread_name_prefix="opencl-subwarp-staging")
        return self._pool

    def close(self) -> None:
        """Let every command end, unmap the page-locked buffers, then drop them and the rest."""
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for queue in (self.kit.queue, *self._side):
            queue.finish()
        self._layout = None
        self.shapes.clear()
        for held in (self._host, self._out):
            if held is not None:
                held[1].base.release(self.kit.queue)
        self._host = self._out = self._counters = None
        self._side.clear()


def bin_lut(bins: Sequence[Bin], max_read: int) -> np.ndarray:
    """Each read length's bin (``items_per_bin``)."""
    return np.minimum(np.searchsorted([b.hi for b in bins], np.arange(max_read + 1)),
                      len(bins) - 1)
