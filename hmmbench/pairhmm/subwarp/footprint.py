"""The device memory of one cuda-subwarp call, from the set's shape: the buffers its lane takes
(``device._lane_buffers``: the staging slots' device twins, the work buffers per slot, the
queue heads and results) and the multi-tile bins' boundary-row scratch
(``DeviceResources.scratch``), each rounded up as the backend rounds it (``headroom``) and
then to CUDA's pages (``hmmbench.apis.cuda.device_pages``). The kernels' local memory (at most
328 bytes a thread) stays within the stack the context holds already. These buffers were 60%,
98% and 93% of the device peaks an H200 measured on 10s, equal-512@20000 and equal-512@100000;
the rest (4, 6 and 28 MiB) is not in the code's allocations and is budgeted as UNMODELLED_*,
fitted on those three cells (docs/working-memory.md)."""
from __future__ import annotations

import math

from ...apis.cuda import device_pages
from ..shape import PairShape
from .layout import MAX_P, THREADS_PER_BLOCK, make_bins
from .staging import PREP_THREADS, STAGING_SLOTS, headroom

#: Multi-tile scratch rows per SM (DeviceResources.scratch: sized for the largest grid).
SCRATCH_BLOCKS_PER_SM = 16
#: The SMs counted where no device can be asked (a cluster's client planning a worker's call):
#: an H200's 132 (cuDeviceGetAttribute MULTIPROCESSOR_COUNT there).
FALLBACK_SM_COUNT = 132
#: The part of a call's device peak past its buffers: fitted, not explained (above).
UNMODELLED_BYTES, UNMODELLED_SHARE = 4 << 20, 1 / 8


def lane_bytes(backend, shape: PairShape, chunk: int, sm_count: int) -> int:
    """Device bytes of ``backend``'s call on a set of this shape in chunks of ``chunk`` pairs,
    on a GPU of ``sm_count`` SMs."""
    pairs = max(shape.pairs, 1)
    chunk = min(max(chunk, 1), pairs)
    small = shape.pairs < backend.small_below
    n_chunks = 1 if small else math.ceil(pairs / chunk)
    n_slots = 1 if small else min(n_chunks, max(STAGING_SLOTS, PREP_THREADS + 2))
    share = chunk / pairs
    units = chunk if chunk <= backend.per_pair_below else math.ceil(shape.reads * share)
    buffers = []
    for _ in range(n_slots):
        buffers += [headroom(int(shape.nbytes * share)), headroom(units) * 16,
                    headroom(units) * 8, headroom(units) * 16, headroom(chunk) * 16,
                    headroom(chunk) * 16]
    buffers.append(headroom(8 * pairs) + 512)
    bins = make_bins(_table(backend, shape), backend._long, shape.max_read)
    queue_bins = backend.queue_plan(bins)[0]
    stride = shape.max_hap + 8 + MAX_P
    rows = sm_count * SCRATCH_BLOCKS_PER_SM * stride
    buffers += [headroom(rows * (THREADS_PER_BLOCK // b.p) * 16) for b in bins if b.multi_tile]
    buffers += [headroom(rows * (THREADS_PER_BLOCK // q.p) * 32) for q in queue_bins
                if q.multi_tile]
    lane = device_pages(buffers)
    return lane + UNMODELLED_BYTES + int(UNMODELLED_SHARE * lane)


def _table(backend, shape: PairShape) -> tuple:
    """The bins' table of the size tier a set of this many pairs falls in (``size_tier``)."""
    for below, rows in backend._small_tiers or ():
        if shape.pairs < below:
            return rows
    return backend._bins_table
