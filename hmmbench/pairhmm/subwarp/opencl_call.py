"""One ``opencl-subwarp`` pass on the device, organised as the CUDA twin's small call
(``small.SmallCall``): the host stages the PairSet's raw arrays into one page-locked buffer
(``staging.stage_whole``, the timed ``prep``; from ``PAGEABLE_FROM_BYTES`` of sequences only
the integers, the sequences going up from the PairSet's own arrays), the upload, the work items
laid out on the device (``kernels_opencl/pairhmm/subwarp_layout.cl``, the twin of
``subwarp_layout.cu``), each bin's kernel over the item range the layout wrote, one copy back.
Stages from OpenCL profiling events as CUDA's from its events: h2d = the uploads, kernel = the
layout's start .. the last bin's end, d2h = the copy back.

:class:`DeviceBuffers` keeps what a backend reuses across calls on one device: the staging
buffer (grow-only, mapped once) and the device buffers (``DeviceKit.scratch``, grow-only).
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from ...apis.opencl import DeviceKit, cl_module
from ..model import PairSet
from .layout import SW_LEVELS, Bin, items_per_bin
from .staging import STAGED, headroom, int_views, stage_whole, whole_offsets

LAYOUT_SOURCE = "pairhmm/subwarp_layout.cl"
#: Work-items per work-group of the counting and scan steps (the counting step keeps a
#: histogram of the call's keys in local memory: bins x SW_LEVELS ints).
LAYOUT_THREADS = 256
#: Bytes of one SwItem (read, first hap, n haps, first pair).
ITEM_BYTES = 16


def alignment(kit: DeviceKit) -> int:
    """Sub-buffer offsets: the device's base address alignment, at least 256 bytes."""
    return max(256, int(kit.device.mem_base_addr_align) // 8)


class DeviceBuffers:
    """A backend's staging buffer on one device: page-locked where the runtime maps an
    ALLOC_HOST_PTR buffer so (NVIDIA's), reallocated only when too small."""

    def __init__(self, kit: DeviceKit):
        self.kit = kit
        self.align = alignment(kit)
        self._host = None  # (cl buffer, mapped array, int views)

    def staging(self, nbytes: int) -> tuple:
        if self._host is None or self._host[1].nbytes < nbytes:
            cl = cl_module()
            if self._host is not None:
                self._host[1].base.release(self.kit.queue)  # unmapped before it is dropped
            size = headroom(nbytes)
            buf = cl.Buffer(self.kit.context, cl.mem_flags.READ_WRITE
                            | cl.mem_flags.ALLOC_HOST_PTR, size)
            arr, _ = cl.enqueue_map_buffer(self.kit.queue, buf, cl.map_flags.WRITE
                                           | cl.map_flags.READ, 0, (size,), np.uint8,
                                           is_blocking=True)
            self._host = (buf, arr, int_views(arr))
        return self._host[2]

    def device(self, name: str, nbytes: int):
        return self.kit.scratch(f"subwarp_{name}", headroom(nbytes))


def bin_lut(bins: Sequence[Bin], max_read: int) -> np.ndarray:
    """Each read length's bin (``items_per_bin``)."""
    return np.minimum(np.searchsorted([b.hi for b in bins], np.arange(max_read + 1)),
                      len(bins) - 1)


def device_pass(backend, kit: DeviceKit, bufs: DeviceBuffers, pairs: PairSet,
                bins: Sequence[Bin], double: bool, timing: dict) -> tuple:
    """The raw sums of ``pairs`` (dataset order) from ``bins``' kernels; adds its stages to
    ``timing``; returns (sums, items per bin)."""
    cl = cl_module()
    q, align = kit.queue, bufs.align
    nb = len(bins)
    if nb * SW_LEVELS * 4 > kit.device.local_mem_size or nb > 64:
        raise ValueError(f"{nb} bins: the layout's histogram exceeds the device's local memory")
    real = np.float64 if double else np.float32

    # prep: the raw arrays staged (as CUDA's small call) and the items per bin for the grids
    t0 = time.perf_counter()
    meta = np.array([nb, *(min(b.hi, 2**31 - 1) for b in bins), *([0] * nb)], np.int32)
    offs, slot_bytes, ends = whole_offsets(pairs, len(meta), align)
    views = bufs.staging(slot_bytes)
    a0, a1, c0, c1 = ends[4:]
    pageable = 5 * (a1 - a0) + c1 - c0 >= backend.pageable_from_bytes
    used = stage_whole(pairs, meta, offs, ends, views, not pageable)
    per_pair = pairs.n_pairs <= backend.per_pair_below
    units = pairs.n_pairs if per_pair else ends[1] - ends[0]
    ro = pairs.read_offsets
    counts = items_per_bin(bin_lut(bins, int(pairs.max_read_length)), nb, ro[1:] - ro[:-1],
                           pairs.batch_reads, pairs.batch_haps, per_pair).astype(np.int64)
    timing["prep"] += time.perf_counter() - t0

    # device buffers (grow-only) and the staged arrays' sub-buffers
    slot = bufs.device("slot", slot_bytes)
    bounds = list(offs) + [used]
    dev = {name: slot.get_sub_region(bounds[i], max(bounds[i + 1] - bounds[i], 1))
           for i, (name, _) in enumerate(STAGED)}
    raw = bufs.device("raw", units * ITEM_BYTES)
    items = bufs.device("items", units * ITEM_BYTES)
    key_rank = bufs.device("key_rank", units * 8)
    hist = bufs.device("hist", nb * SW_LEVELS * 4)
    bin_pairs = bufs.device("bin_pairs", 64 * 4)
    bin_range = bufs.device("bin_range", nb * align)
    sums = kit.scratch(f"sums{np.dtype(real).itemsize}", pairs.n_pairs * np.dtype(real).itemsize)
    stride = align // 4
    ranges = [bin_range.get_sub_region(i * align, 8) for i in range(nb)]
    lk = {name: kit.kernel(LAYOUT_SOURCE, name, {"SW_RANGE_STRIDE": stride,
                                                 "SW_COUNT_THREADS": LAYOUT_THREADS,
                                                 "SW_SCAN_THREADS": LAYOUT_THREADS})
          for name in ("sw_layout_clear", "sw_layout_count", "sw_layout_scan",
                       "sw_layout_scatter")}

    for b, n in zip(bins, counts.tolist()):
        if n:
            backend.bin_kernel(kit, b, double)
    if pageable:  # as the CUDA twin's small call: the sequences from the PairSet's arrays
        ups = [cl.enqueue_copy(q, slot, a[lo:hi], dst_offset=offs[i], is_blocking=False)
               for i, a, lo, hi in ((0, pairs.read_bases, a0, a1), (1, pairs.base_qual, a0, a1),
                                    (2, pairs.ins_qual, a0, a1), (3, pairs.del_qual, a0, a1),
                                    (4, pairs.gcp_qual, a0, a1), (6, pairs.hap_bases, c0, c1))
               if hi > lo]
        ups.append(cl.enqueue_copy(q, slot, views[0][offs[5]:offs[6]], dst_offset=offs[5],
                                   is_blocking=False))
        ups.append(cl.enqueue_copy(q, slot, views[0][offs[7]:used], dst_offset=offs[7],
                                   is_blocking=False))
    else:
        ups = [cl.enqueue_copy(q, slot, views[0][:used], is_blocking=False)]
    grid = -(-units // LAYOUT_THREADS) * LAYOUT_THREADS
    kernels = [lk["sw_layout_clear"](q, (-(-nb * SW_LEVELS // 64) * 64,), None, hist, bin_pairs,
                                     dev["meta"])]
    kernels.append(lk["sw_layout_count"](
        q, (grid,), (LAYOUT_THREADS,), np.int32(units), np.int32(per_pair),
        np.int32(pairs.n_batches), dev["batch_reads"], dev["batch_haps"], dev["batch_pairs"],
        dev["read_off"], dev["hap_off"], dev["meta"], raw, key_rank, hist, bin_pairs))
    kernels.append(lk["sw_layout_scan"](q, (LAYOUT_THREADS,), (LAYOUT_THREADS,), dev["meta"],
                                        hist, bin_range))
    kernels.append(lk["sw_layout_scatter"](q, (grid,), None, np.int32(units), raw, key_rank,
                                           hist, items))
    dev["items"] = items
    max_hap = int(pairs.hap_lengths.max(initial=1))
    events: list = []
    for b, n, rng in zip(bins, counts.tolist(), ranges):
        if n:
            backend._launch_bin(kit, b, double, dev, rng, int(n), max_hap, sums, events)
    kernels += events
    out = np.empty(pairs.n_pairs, real)
    down = cl.enqueue_copy(q, out, sums, is_blocking=True)
    timing["h2d"] += (ups[-1].profile.end - ups[0].profile.start) * 1e-9
    timing["kernel"] += (kernels[-1].profile.end - kernels[0].profile.start) * 1e-9
    timing["d2h"] += (down.profile.end - down.profile.start) * 1e-9
    return out, {b.label: int(n) for b, n in zip(bins, counts.tolist()) if n}
