"""A search's small uploads on a CUDA device (profiles, per-length tables, launch lists): each
array is copied into one page-locked host arena and from there, asynchronously on the launch
stream, into one device arena, both allocated once and reused by every search.

A plain ``to_device`` allocates (``cuMemAlloc``) and copies from pageable memory, which waits
for every kernel already launched: after a search's first launch the host would stop at each
upload until the GPU caught up, and every step of the pipeline (a table, a profile, a list)
would start with the GPU idle. Copies on the launch stream keep their order with the kernels
that read them, so nothing waits; an arena is only written again after the search that used it
ended (its results downloaded, so its copies are done).
"""
from __future__ import annotations

import numpy as np

#: every upload starts on this many bytes (the widest alignment a kernel argument needs)
ALIGN = 256
#: the arenas' first size; a search that needs more gets larger ones (the old kept until it ends)
FIRST_BYTES = 16 << 20


class Uploads:
    """Host arrays put on the device for the current search (``put`` -> device address as a
    kernel argument); ``reset()`` when the search ended reuses the arenas from the start."""

    def __init__(self, drv, stream=None, first_bytes: int = FIRST_BYTES):
        self.drv, self.stream, self.first = drv, stream, first_bytes
        self.host = self.dev = None
        self.size = self.used = 0
        self._retired: list = []            # outgrown arenas a launched kernel may still read

    def _grow(self, need: int) -> None:
        if self.host is not None:
            self._retired.append((self.host, self.dev))
        self.size = max(self.first, 2 * self.size, -(-need // ALIGN) * ALIGN)
        self.host = self.drv.pagelocked_empty(self.size, np.uint8)
        self.dev = self.drv.mem_alloc(self.size)
        self.used = 0

    def put(self, arr: np.ndarray) -> np.uintp:
        """``arr``'s device copy (enqueued on the stream: kernels launched after this read it)."""
        raw = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
        start = -(-self.used // ALIGN) * ALIGN
        if self.host is None or start + raw.size > self.size:
            self._grow(raw.size)
            start = 0
        self.used = start + max(raw.size, 1)
        if raw.size:
            part = self.host[start:start + raw.size]
            part[:] = raw
            self.drv.memcpy_htod_async(int(self.dev) + start, part, self.stream)
        return np.uintp(int(self.dev) + start)

    def reset(self) -> None:
        """The search ended: its copies are done (its results came back after them), the
        arenas are written again from the start, outgrown ones freed."""
        self.used = 0
        self._retired.clear()

    def free(self) -> None:
        self.reset()
        self.host = self.dev = None
        self.size = 0
