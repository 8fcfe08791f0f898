"""One ``opencl-subwarp`` call on the device, organised as the CUDA twin's call (``small.SmallCall``
below ``SMALL_CALL_PAIRS`` pairs, else the first chunk of ``call.SubwarpCall``):

- prep: the PairSet's raw arrays staged into one page-locked buffer (an ``ALLOC_HOST_PTR`` buffer
  mapped once, ``staging.stage_whole``); from ``POOL_FROM_PAIRS`` pairs by the staging threads,
  each array's pieces uploaded as soon as they are in (``staging.STREAM_ORDER``, as CUDA's
  streamed first chunk). A small call stages every array and uploads them in one copy, then
  queues the layout (``sequences_after_layout``: the integers up and the layout queued before
  the sequences are staged and uploaded, two copies); ``pageable_from_bytes``: its sequences go
  up from the PairSet's own arrays instead (as CUDA's small call's; NVIDIA's OpenCL copies them
  through its own staging: slower on the H200, off); ``pooled_from_bytes``: the staging threads
  stage them, each a piece of every array (off);
- the work items laid out on the device (``kernels_opencl/pairhmm/subwarp_layout.cl``, the twin
  of ``subwarp_layout.cu``): bin ranges and the recompute queues' heads; the key histogram is
  left cleared by the scan for the next call (no clearing launch but on a first use);
- each bin's kernel over the item range the layout wrote, the bins after the first on side queues
  (in-order queues of their own, as CUDA's side streams) once the layout is done; with the rescue
  on the device (``rescue``: devices with fp64) the float32 kernels write log10 and queue their
  underflows, and each recompute queue's float64 kernel follows the bin that feeds it on that
  bin's queue (or, where a queue has several bins, runs after all of them); a small call launches
  every bin up to its longest read with a grid of at most what the device holds at once, as
  CUDA's (the items per bin, for ``info``: the layout's, back with the results; without the
  rescue counted by the host while the device works);
- one copy back (with the rescue, the bin ranges and queue heads in front of the results, as
  CUDA's heads: the items per bin of a small call's ``info`` come back with them).

No sub-buffers (``opencl_buffers.py``, with what a backend keeps across calls: staging, result
and device buffers, the layout's counters and kernels, side queues, staging threads, and
:class:`Launch`, whose kernel arguments stay set between calls). A small call with the rescue
keeps its :class:`CallShape` (buffers, queues, every launch's grid and arguments) per plan and
call shape, as CUDA's ``SmallLaunches``: a repeated call looks it up and enqueues.

Stages from the commands' OpenCL profiling events (``opencl_stages.py``): h2d, kernel and d2h
the unions of the uploads', the kernels' and the copy back's spans; the events that end before
the bins (uploads, layout) are read while the device runs the bins. ``info["host_s"]`` splits
the host's wall time.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

import numpy as np

from ...apis.opencl import DeviceKit, cl_module
from ..model import PairSet
from .layout import SW_LEVELS, Bin, items_per_bin
from .opencl_buffers import (ITEM_BYTES, LAYOUT_KERNELS, LAYOUT_THREADS, MAX_BINS, RANGE_INTS,
                             DeviceBuffers, Launch)
from .opencl_stages import read_spans, stage_seconds
from .staging import (CHUNK_PARTS, STREAM_ORDER, part_ranges, stage_chunk_part, stage_whole,
                      whole_offsets)

__all__ = ["DeviceBuffers", "Launch", "RANGE_INTS", "device_pass"]

#: Recompute grids: at most this many work-groups per compute unit (grid-stride), as CUDA's
#: 4 blocks per SM for the double kernels.
DOUBLE_GROUPS_PER_CU = 4
#: Below this many pairs a call launches as the CUDA twin's small call (``small.SMALL_CALL_PAIRS``):
#: every bin up to the longest read, the call's items as each bin's bound and its grid capped at
#: ``RESIDENT_ITEMS_PER_CU`` work-items per compute unit (the kernels loop over the range the
#: layout writes), the items per bin (``info``) the layout's (or counted while the device works).
#: From it the host counts them first, each bin's grid sized by its count, bins without items
#: skipped.
SMALL_CALL_PAIRS = 1 << 16
#: Work-items a compute unit holds at once (an NVIDIA SM: 2,048): a small call's bins' grids.
RESIDENT_ITEMS_PER_CU = 2048


def _stage_part(pairs, meta, offs, ends, views, n_batches, part, piece, pieces) -> tuple:
    """Worker: one staging task (``stage_chunk_part`` of the whole set); (end written, seconds)."""
    t0 = time.perf_counter()
    used = stage_chunk_part(pairs, meta, offs, ends, views, 0, n_batches, part, piece, pieces)
    return used, time.perf_counter() - t0


def _stage_pieces(pairs, offs, ends, views, piece, pieces) -> None:
    """Worker: piece ``piece`` of ``pieces`` of every sequence array (``stage_chunk_part``)."""
    for part in range(CHUNK_PARTS - 1):
        stage_chunk_part(pairs, None, offs, ends, views, 0, 0, part, piece, pieces)


def _small_uploads(backend, bufs: DeviceBuffers, q, slot, pairs: PairSet, offs, ends, views,
                   used: int, layout, pageable: bool, pooled: bool) -> tuple:
    """A small call's commands up to its bins: the integers up, the layout (``layout()``: its
    events) and a flush, so that the device lays out the items while this thread stages the
    sequences into the page-locked buffer (or the threads, ``pooled``), then their one upload
    (or six from the PairSet's arrays, ``pageable``). Returns (integer uploads, layout events,
    sequence uploads, seconds staging)."""
    cl = cl_module()
    # read_off .. meta's end in one copy: hap_bases' bytes in between are the sequences'
    # upload's to write (after the layout, which reads none)
    ints = [cl.enqueue_copy(q, slot, views[0][offs[5]:used], dst_offset=offs[5],
                            is_blocking=False)]
    laid = layout()
    q.flush()
    t0 = time.perf_counter()
    a0, a1, c0, c1 = ends[4:]
    if pageable:  # as the CUDA twin's small call: the sequences from the PairSet's arrays
        return ints, laid, [
            cl.enqueue_copy(q, slot, a[lo:hi], dst_offset=offs[i], is_blocking=False)
            for i, a, lo, hi in ((0, pairs.read_bases, a0, a1), (1, pairs.base_qual, a0, a1),
                                 (2, pairs.ins_qual, a0, a1), (3, pairs.del_qual, a0, a1),
                                 (4, pairs.gcp_qual, a0, a1), (6, pairs.hap_bases, c0, c1))
            if hi > lo], 0.0
    if pooled:  # the threads a piece of every sequence array each, this thread the first
        n = bufs.threads
        tasks = [bufs.pool().submit(_stage_pieces, pairs, offs, ends, views, k, n)
                 for k in range(1, n)]
        _stage_pieces(pairs, offs, ends, views, 0, n)
        for f in tasks:
            f.result()
    else:
        _stage_pieces(pairs, offs, ends, views, 0, 1)
    staged = time.perf_counter() - t0
    # one copy from the slot's start to hap_bases' end (read_off again: the same bytes)
    return ints, laid, [cl.enqueue_copy(q, slot, views[0][:offs[7]], is_blocking=False)], staged


#: A step's waits: none (its queue's order), the layout (``READY``: a bin on a side queue; a split
#: call's sequences' upload) or every side queue's last command (``JOIN``: a recompute queue fed
#: by several bins, on the main queue).
NONE, READY, JOIN = 0, 1, 2


class CallShape:
    """What a call's commands need beyond its data, made from the plan and the call's sizes:
    the device buffers, the layout's arguments, the queues, and each bin's and recompute
    queue's launch in enqueue order, ``steps``: (queue index, :class:`Launch`, global size,
    local size, arguments, waits, (bin, recompute)) -- the longest reads' bin first (as CUDA's,
    whose block scheduler starts the first launch's blocks first; here each launch also waits
    ~25 us for the host to enqueue the one before), and with chained recompute queues every
    bin before the recompute kernel after it (``longest_bins_first`` off: shortest first, each
    recompute right after its bin). Kernels are built here, before the first enqueue (no
    build falls between two timed events)."""

    def __init__(self, backend, kit: DeviceKit, bufs: DeviceBuffers, pairs: PairSet,
                 bins: Sequence[Bin], double: bool, rescue: Optional[tuple], small: bool,
                 units: int, per_pair: bool, offs: list, slot_bytes: int, max_read: int,
                 max_hap: int, counts: Optional[list]):
        self.plan = (bins, rescue)  # held: the keys name them by id
        nb, n_pairs = len(bins), pairs.n_pairs
        queue_of = list(rescue[1]) if rescue else [0] * nb
        # device buffers (grow-only); the kernels take the slot and each staged array's byte
        # offset, a bin's range and a queue's head as their buffer and an int offset (no
        # sub-buffers)
        slot = self.slot = bufs.device("slot", slot_bytes)
        at = [np.int64(o) for o in offs]
        arrays = (slot, *at[:8])  # the bin kernels' KERNEL_ARRAYS: STAGED's first eight
        raw = bufs.device("raw", units * ITEM_BYTES)
        items = bufs.device("items", units * ITEM_BYTES)
        key_rank = bufs.device("key_rank", units * 8)
        key_start = bufs.device("key_start", nb * SW_LEVELS * 4)
        hist, bin_pairs = bufs.counters()
        range_bytes = nb * RANGE_INTS * 4
        self.heads_bytes = 0
        if rescue:  # bin ranges, queue heads, the results (float64: 16-byte bins): one copy back
            self.heads_bytes = 2 * range_bytes
            both = bin_range = heads = self.out_buffer = bufs.device(
                "out", self.heads_bytes + n_pairs * 8)
            out_at, queue_at = np.int32(self.heads_bytes // 8), nb * RANGE_INTS
        else:
            bin_range = bufs.device("bin_range", range_bytes)
            heads = bufs.device("queues", range_bytes)
            queue_at = 0
            real = np.float64 if double else np.float32
            sums = self.out_buffer = kit.scratch(f"sums{np.dtype(real).itemsize}",
                                                 n_pairs * np.dtype(real).itemsize)
        self.queue_at = queue_at
        fb_items = bufs.device("fb_items", n_pairs * ITEM_BYTES) if rescue else None
        self.lk = [bufs.layout()[name] for name in LAYOUT_KERNELS]
        self.grid = (-(-units // LAYOUT_THREADS) * LAYOUT_THREADS,)
        self.clear_args = (hist, bin_pairs)
        self.count_args = (np.int32(units), np.int32(per_pair), np.int32(pairs.n_batches), slot,
                           at[8], at[9], at[10], at[5], at[7], at[11], raw, key_rank, hist,
                           bin_pairs)
        self.scan_args = (slot, at[11], hist, bin_pairs, key_start, bin_range, np.int32(0), heads,
                          np.int32(queue_at))
        self.scatter_args = (np.int32(units), raw, key_rank, key_start, items)
        if small:  # as CUDA's small call: every bin up to the longest read, bound by all items
            launched = [i for i in range(nb) if bins[i].lo <= max_read]
            bound = [units] * nb
        else:
            launched = [i for i in range(nb) if counts[i]]
            bound = counts
        self.launched = launched
        self.labels = [(i, bins[i].label) for i in launched]
        fed: dict = {}  # recompute queue -> the launched bins feeding it
        if rescue:
            for i in launched:
                fed.setdefault(queue_of[i], []).append(i)
        self.fed = list(fed)
        # side queues: one per launched bin (CUDA's side streams); a queue fed by one bin
        # follows it
        cqs = self.cqs = bufs.queues(len(launched) if backend.side_queues else 1)
        chained = all(len(v) == 1 for v in fed.values())
        cus = bufs.compute_units
        cap = cus * RESIDENT_ITEMS_PER_CU if small else None

        def recompute(j: int) -> tuple:
            head = np.int32(queue_at + j * RANGE_INTS)
            return backend._bin_launch(kit, rescue[0][j], True, fb_items, arrays, heads, head,
                                       n_pairs, max_hap, (both, out_at, heads, head, fb_items),
                                       True, recompute=True, cus=cus)

        steps = self.steps = []
        order = launched[::-1] if backend.longest_bins_first else launched
        chain = []  # (queue index, bin) of each bin its recompute queue's kernel follows
        for n_q, i in enumerate(order):
            k = n_q % len(cqs)
            res = (both, out_at, heads, np.int32(queue_at + queue_of[i] * RANGE_INTS), fb_items) \
                if rescue else (sums,)
            steps.append((k, *backend._bin_launch(kit, bins[i], double, items, arrays, bin_range,
                                                  np.int32(i * RANGE_INTS), bound[i], max_hap,
                                                  res, bool(rescue), cap=cap, cus=cus),
                          READY if k else NONE, (bins[i], False)))
            if rescue and chained:
                chain.append((k, i))
            if chain and (not backend.longest_bins_first or n_q == len(order) - 1):
                steps.extend((k, *recompute(queue_of[i]), NONE, (rescue[0][queue_of[i]], True))
                             for k, i in chain)
                chain = []
        if rescue and not chained:  # on the main queue after every side queue's bins
            steps.extend((0, *recompute(j), JOIN, (rescue[0][j], True)) for j in fed)


def device_pass(backend, kit: DeviceKit, bufs: DeviceBuffers, pairs: PairSet,
                bins: Sequence[Bin], double: bool, timing: dict,
                rescue: Optional[tuple] = None, lengths: Optional[tuple] = None) -> tuple:
    """``bins``' kernels over ``pairs``; adds its stages to ``timing``. Without ``rescue``: the
    raw sums in dataset order (float32, or float64 for ``double``). With ``rescue`` =
    (queue bins, queue of each bin), ``recompute_queues``' plan: log10 of every pair (float64),
    the underflows recomputed on the device. ``lengths``: (longest read, longest haplotype,
    read lengths) where the caller has them. Returns (results, items per bin, stats: pairs
    recomputed, queues used, host seconds by step)."""
    cl = cl_module()
    t_call = time.perf_counter()
    q, align = kit.queue, bufs.align
    nb = len(bins)
    if nb * SW_LEVELS * 4 > bufs.local_mem or nb > MAX_BINS:
        raise ValueError(f"{nb} bins: the layout's histogram exceeds the device's local memory")
    real = np.float64 if double or rescue else np.float32
    if lengths is None:
        ro, ho = pairs.read_offsets, pairs.hap_offsets
        rl = ro[1:] - ro[:-1]
        lengths = (int(rl.max(initial=0)), int((ho[1:] - ho[:-1]).max(initial=1)), rl)
    max_read, max_hap, read_lengths = lengths

    # prep: the raw arrays staged (as CUDA's calls; a split small call's integers only, its
    # sequences once the layout is queued), a large call's items per bin counted first
    t0 = time.perf_counter()
    queue_of = list(rescue[1]) if rescue else [0] * nb
    meta = np.array([nb, *(min(b.hi, 2**31 - 1) for b in bins), *queue_of], np.int32)
    offs, slot_bytes, ends = whole_offsets(pairs, len(meta), align)
    views = bufs.staging(slot_bytes)
    seq_bytes = 5 * (ends[5] - ends[4]) + ends[7] - ends[6]
    threaded = pairs.n_pairs >= backend.pool_from_pairs and bufs.threads > 1
    small = not threaded and pairs.n_pairs < backend.small_call_pairs
    pooled = (small and bufs.threads > 1 and backend.pooled_from_bytes is not None
              and seq_bytes >= backend.pooled_from_bytes)
    pageable = (small and not pooled and backend.pageable_from_bytes is not None
                and seq_bytes >= backend.pageable_from_bytes)
    # a small call's sequences staged after its layout is queued (else: one upload of all)
    split = small and (pooled or pageable or backend.sequences_after_layout)
    prep_work, parts = 0.0, None
    if threaded:  # every thread a piece of each sequence array, the integers first
        pool, n, nbat = bufs.pool(), bufs.threads, pairs.n_batches
        parts = [(part, [pool.submit(_stage_part, pairs, meta, offs, ends, views, nbat, part,
                                     k, 1 if part == CHUNK_PARTS - 1 else n)
                         for k in range(1 if part == CHUNK_PARTS - 1 else n)])
                 for part in STREAM_ORDER]
        used = 0
    elif split:  # the integers (the sequences once the layout is queued: _small_uploads)
        used = stage_whole(pairs, meta, offs, ends, views, False)
    else:
        used = stage_whole(pairs, meta, offs, ends, views)
    per_pair = pairs.n_pairs <= backend.per_pair_below
    units = pairs.n_pairs if per_pair else ends[1] - ends[0]
    lut = None if small and rescue else bufs.lut(bins, max_read)  # a small rescue call: unused
    counts = None if small else items_per_bin(lut, nb, read_lengths, pairs.batch_reads,
                                              pairs.batch_haps, per_pair).astype(np.int64).tolist()
    t_prep = time.perf_counter() - t0

    # plan: buffers, kernels, queues and every launch's arguments (:class:`CallShape`); a small
    # call with the rescue keeps them per plan and call shape, as CUDA's SmallLaunches (set once,
    # not per call), other calls make them anew
    key = None
    if small and rescue and backend.keep_launches:
        key = (id(bins), id(rescue), double, max_read, max_hap, pairs.n_pairs, pairs.n_batches,
               units, per_pair, slot_bytes, backend.side_queues, backend.longest_bins_first,
               *offs)
    shape = bufs.shapes.get(key) if key is not None else None
    if shape is None:
        shape = CallShape(backend, kit, bufs, pairs, bins, double, rescue, small, units,
                          per_pair, offs, slot_bytes, max_read, max_hap, counts)
        if key is not None:
            bufs.keep_shape(key, shape)
    slot, cqs, launched = shape.slot, shape.cqs, shape.launched
    if rescue:  # bin ranges, queue heads, the results (float64): one copy back
        n_out = shape.heads_bytes + pairs.n_pairs * 8
        host_out = bufs.results(n_out)[:n_out]
        head_view = host_out[:shape.heads_bytes].view(np.int32)  # bin ranges, then queue heads
        out = host_out[shape.heads_bytes:].view(np.float64)
    else:
        out = np.empty(pairs.n_pairs, real)
    lk = shape.lk

    def layout() -> list:
        """The layout's launches (count, scan, scatter; a clearing one first where needed)."""
        evs = []
        if not bufs.counters_clear:  # a first use, or a call that stopped before its scan
            evs.append(lk[0](q, (MAX_BINS * SW_LEVELS,), None, shape.clear_args))
        bufs.counters_clear = False
        evs.append(lk[1](q, shape.grid, (LAYOUT_THREADS,), shape.count_args))
        evs.append(lk[2](q, (LAYOUT_THREADS,), (LAYOUT_THREADS,), shape.scan_args))
        bufs.counters_clear = True
        # one work-group size for every grid (a runtime free to pick one per grid, as PoCL,
        # compiles the kernel again for each size it picks)
        evs.append(lk[3](q, shape.grid, (LAYOUT_THREADS,), shape.scatter_args))
        return evs
    t_plan = time.perf_counter() - t0 - t_prep

    # the commands: a split small call's integers, layout, then sequences (_small_uploads); a
    # large call's uploads streamed part by part as the threads stage them; else one upload;
    # then the layout
    t0 = time.perf_counter()
    wait = staged = 0.0
    if split:
        ints, kernels, seqs, staged = _small_uploads(backend, bufs, q, slot, pairs, offs, ends,
                                                     views, used, layout, pageable, pooled)
        ups = ints + seqs
    elif threaded:
        ups = []
        for part, tasks in parts:
            tw = time.perf_counter()
            got = [f.result() for f in tasks]
            wait += time.perf_counter() - tw
            prep_work += sum(w for _, w in got)
            used = max(used, *(u for u, _ in got))
            for lo, hi in part_ranges(offs, ends, used, part):
                if hi > lo:
                    ups.append(cl.enqueue_copy(q, slot, views[0][lo:hi], dst_offset=lo,
                                               is_blocking=False))
    else:
        ups = [cl.enqueue_copy(q, slot, views[0][:used], is_blocking=False)]
    if not split:
        kernels = layout()  # every launch's event (the kernel stage: the union of their spans)
    n_layout = len(kernels)
    laid_out = kernels[-1]
    # what a side queue's bin waits for: the layout, and a split call's sequences (after it)
    ready = [seqs[-1] if split and seqs else laid_out]
    last = {0: laid_out}  # queue index -> its last event
    joins = None  # a join step's waits: every side queue's last event
    for k, launch, gsize, lsize, args, waits, _ in shape.steps:
        if waits == JOIN and joins is None:
            joins = [ev for j, ev in last.items() if j] or None
        ev = last[k] = launch(cqs[k], gsize, lsize, args, wait_for=ready if waits == READY
                              else joins if waits == JOIN else None)
        kernels.append(ev)
    if joins is None:  # the copy back waits for every side queue's last command
        joins = [ev for j, ev in last.items() if j]
    else:
        joins = []
    down = cl.enqueue_copy(q, host_out if rescue else out, shape.out_buffer,
                           wait_for=joins or None, is_blocking=False)
    t_enqueue = time.perf_counter() - t0 - wait - staged
    t0 = time.perf_counter()
    if small and not rescue:  # the items per bin (info) while the device works
        counts = items_per_bin(lut, nb, read_lengths, pairs.batch_reads, pairs.batch_haps,
                               per_pair).tolist()
    t_count = time.perf_counter() - t0
    # the uploads' and the layout's spans while the device runs the bins (they end first)
    t0 = time.perf_counter()
    cl.wait_for_events([ups[-1], laid_out])
    early = read_spans(ups), read_spans(kernels[:n_layout])
    t_early = time.perf_counter() - t0
    t0 = time.perf_counter()
    down.wait()
    t_wait = time.perf_counter() - t0
    if small and rescue:  # the counts the layout wrote, back with the results
        counts = head_view[1:nb * RANGE_INTS:RANGE_INTS].tolist()

    t0 = time.perf_counter()
    timing["prep"] += t_prep + prep_work + staged
    stages = stage_seconds(early[0], early[1] + read_spans(kernels[n_layout:]),
                           read_spans([down])[0])
    for k in ("h2d", "kernel", "d2h"):
        timing[k] += stages[k]
    n_redo = 0
    if rescue:
        n_redo = int(sum(int(head_view[shape.queue_at + j * RANGE_INTS + 1]) for j in shape.fed))
        out = out.copy()
    stats = {"recomputed": n_redo, "queues": len(cqs), "gpu_span_s": stages["gpu_span_s"],
             "kernel_span_s": stages["kernel_span_s"],
             "host_s": {"prep": t_prep, "plan": t_plan, "prep_wait": wait, "stage": staged,
                        "enqueue": t_enqueue, "count": t_count, "spans_early": t_early,
                        "device_wait": t_wait,
                        "finish": time.perf_counter() - t0,
                        "call": time.perf_counter() - t_call}}
    return out, {label: int(counts[i]) for i, label in shape.labels if counts[i]}, stats
