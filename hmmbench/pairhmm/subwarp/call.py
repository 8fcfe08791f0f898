"""One ``cuda-subwarp`` call on the device: chunks staged by host threads into pinned slots, each
uploaded on the copy stream, laid out on the GPU, its bins launched on their streams, their
underflows recomputed by the kernels of their queues (``rescue``); the results copied
back once.

:class:`SubwarpCall` holds what one call needs (its chunks, slots, buffers, streams and events)
so that each step reads as one method: :meth:`enqueue` (upload, :meth:`_layout`, :meth:`_bins`,
:meth:`_recompute`) per chunk, then :meth:`finish` (the copy back and the stage times). The
backend (``cuda.SubwarpBackend``) owns the kernels, plans and resources kept across
calls; this object lives for one ``run()``.

A small call (one chunk under the backend's ``small_below`` pairs, e.g. one of 1m's 110
regions) takes a path of its own, ``small.SmallCall`` (one stream, one layout launch,
five events, one copy back); the two share a lane's buffers (``device.sized_lane``).
"""
from __future__ import annotations

import threading
import time
from collections import Counter

import numpy as np

from ...apis import cuda as glue
from ...backend import Execution
from ..model import PairSet
from .device import sized_lane
from .layout import SW_LEVELS, THREADS_PER_BLOCK, bin_cells, host_layout, items_per_bin
from .rescue import DOUBLE, EXP, FLOAT, exp_config, recompute_counts
from .staging import (CHUNK_PARTS, POOL_FROM_PAIRS, PREP_THREADS, STAGED, STAGING_SLOTS,
                              STREAM_ORDER, chunk_offsets, headroom, int_views, part_ranges,
                              stage_chunk_part)


def busy_seconds(start, spans, at=None) -> float:
    """Seconds covered by the union of (begin, end) event spans, in any order: overlapping spans
    (bins on parallel streams, consecutive chunks) count once, gaps between them not at all.
    ``at(event)``: its milliseconds since ``start`` (default: asked of the driver)."""
    at = at or (lambda ev: ev.time_since(start))
    total, prev_end = 0.0, 0.0
    for t0, t1 in sorted((at(a), at(b)) for a, b in spans):
        total += max(0.0, t1 - max(t0, prev_end))
        prev_end = max(prev_end, t1)
    return total / 1e3


def _ptr(x) -> np.uintp:
    return np.uintp(int(x))


def launch_layout(drv, kernels: dict, stream, counters, n_counters: int, args: tuple,
                  grid_units: int = 0) -> None:
    """The work items' layout over the whole GPU (``subwarp_layout.cu``): its ``n_counters``
    counters cleared, then one thread per unit counting (key and rank), one block scanning, one
    thread per unit scattering. ``args`` are ``sw_layout_small``'s: the unit count, the counting
    step's twelve (its batch arrays and ``meta`` at 8; raw items, key ranks, key histogram and
    pairs per bin last), bin ranges, queue heads, items. A unit count of -1 (a graph's call: the
    counts staged after meta) takes its grids from ``grid_units``, an upper bound."""
    n_units, meta = args[0], args[8]
    raw, key_rank, hist, bin_pairs, bin_range, queues, items = args[9:]
    grid = (max(1, -(-int(n_units if n_units >= 0 else grid_units) // 256)), 1)
    drv.memset_d32_async(counters, 0, n_counters, stream)
    kernels["sw_layout_count"].prepared_async_call(grid, (256, 1, 1), stream, *args[:13])
    kernels["sw_layout_scan"].prepared_async_call((1, 1), (1024, 1, 1), stream, meta, hist,
                                                  bin_pairs, bin_range, queues)
    kernels["sw_layout_scatter"].prepared_async_call(grid, (256, 1, 1), stream, n_units, meta,
                                                     raw, key_rank, hist, items)


class SubwarpHandle:
    """A submitted call (``SubwarpBackend.submit``): its work is enqueued on its lane's streams;
    :meth:`result` waits for it, copies its results out, reads its stage times from its events
    and frees the lane for a later call."""

    def __init__(self, backend):
        self.b = backend
        self.call: "SubwarpCall | None" = None
        self.info: dict = {}
        self._execution: "Execution | None" = None

    def result(self) -> Execution:
        if self._execution is None:
            call, self.call = self.call, None
            try:
                self._execution = call.finish(self.info)
            finally:
                call.lane.busy = None
            self.info["sm_clock_mhz"] = self.b.sm_clock()
        return self._execution


class SubwarpCall:
    def __init__(self, backend, pairs: PairSet, lane, max_read_len: int, max_hap_len: int):
        self.b, self.pairs, self.lane = backend, pairs, lane
        self.drv = glue.driver()
        plan = backend._plan(pairs, max_read_len)
        self.bins, self.queue_bins, self.queue_of, meta, self.bin_lut = plan[:5]
        self.cascade, self.queue_labels = plan.cascade, plan.queue_labels
        self.lk = backend.layout_kernels()
        nb, nq = len(self.bins), len(self.queue_bins)
        self.n_keys = nb * SW_LEVELS
        self.t_run = time.perf_counter()
        self.res = res = lane.res

        # chunks: whole batches; small chunks get one work item per pair
        bp, br = pairs.batch_pairs, pairs.batch_reads
        self.bounds = backend.chunk_bounds(pairs)
        self.n_chunks = n_chunks = len(self.bounds)
        self.chunk_pairs = [int(bp[b1] - bp[b0]) for b0, b1 in self.bounds]
        self.per_pair = [n <= backend.per_pair_below for n in self.chunk_pairs]
        self.units = [self.chunk_pairs[c] if self.per_pair[c] else int(br[b1] - br[b0])
                      for c, (b0, b1) in enumerate(self.bounds)]
        self.meta = meta

        # pinned host slots and their device twins, work buffers per slot (grow-only)
        self.offs, slot_bytes, self.ends = chunk_offsets(pairs, self.bounds, len(meta))
        self.n_slots = min(n_chunks, max(STAGING_SLOTS, (backend.prep_threads or PREP_THREADS) + 2))
        sizes = (self.n_slots, headroom(slot_bytes), headroom(max(self.units)),
                 headroom(max(self.chunk_pairs)), nb, nq, n_chunks,
                 headroom(pairs.n_pairs * 8), backend._streams_on, False)
        (self.pinned, self.dev_slots, self.work, self.queues_dev, self.out_dev, self.main,
         self.copy, self.lay_stream, self.bin_streams, self.queue_streams,
         self.odd_bin_streams) = sized_lane(lane, self.n_keys, sizes)[1]

        # host staging: one worker task per array group of a chunk, plus its bin estimate.
        # Chunk 0 starts now, alone (the workers make no driver calls): the GPU waits for it,
        # so it has every thread and the memory bandwidth to itself; the chunks after it start
        # once it is staged (``enqueue``), while the GPU uploads and runs it.
        self.views = [int_views(buf) for buf in self.pinned]
        self.futures: dict = {}
        self.prep_work = self.prep_wait = 0.0
        # (one pool for all lanes; a call of one chunk too from POOL_FROM_PAIRS)
        self.pool = backend._staging.pool() \
            if n_chunks > 1 or pairs.n_pairs >= POOL_FROM_PAIRS else None
        # a streamed array's pieces
        self.stream_pieces = backend.stream_pieces or backend.prep_threads or PREP_THREADS
        self.row_tasks = None
        self.submit(0)

        self.max_hap_len = max(max_hap_len, 1)
        self.sms = backend.sm_count
        for b in self.bins:  # multi-tile scratch sized before the first event
            res.scratch(b, False, self.max_hap_len)
        for q in self.queue_bins:
            res.scratch(q, True, self.max_hap_len)
        self.host_out, self.queue_heads = res.result_buffers(pairs.n_pairs, n_chunks * nb * 4)

        # events: the call's start, then each launch group's own (begin, end) -- their union is
        # the kernel time, without the gaps where the GPU waited for the host to enqueue work
        res.restart_events()
        self.start = res.mark(self.main)
        self.copy.wait_for_event(self.start)
        self.lay_stream.wait_for_event(self.start)
        self.h2d_spans, self.kernel_spans, self.kernels_done, self.staged_done = [], [], [], []
        self.float_launches, self.double_launches, self.bin_events = [], [], []
        # each chunk's results, copied back once its kernels are done (_results_back) and moved
        # into the call's own array while later chunks still run (finish)
        self.results_back, self.d2h_spans = [], []
        # each chunk's events (its launches' end in float_launches / double_launches), asked
        # of the driver as soon as the chunk is done (_times_of): a 2M-pair call has ~260
        # and their queries after the last chunk cost ~1 ms past the GPU's end
        self.chunk_launches: list = []
        self.since: dict = {}
        self.out_ranges = [(int(bp[b0]), int(bp[b1])) for b0, b1 in self.bounds]
        self.bin_counts: Counter = Counter()

    # --- host staging -------------------------------------------------------------------------
    def _stage_part(self, c: int, parts, piece: int = 0, pieces: int = 1) -> tuple:
        """Worker: staging tasks ``parts`` of chunk c (of a sequence array its ``piece``-th of
        ``pieces`` byte ranges) into its pinned slot (numpy frees the GIL)."""
        t0 = time.perf_counter()
        (b0, b1), ends, views = self.bounds[c], self.ends[c], self.views[c % self.n_slots]
        used = max(stage_chunk_part(self.pairs, self.meta, self.offs[c], ends, views, b0, b1,
                                    part, piece, pieces) for part in parts)
        return used, time.perf_counter() - t0, None

    def _stage_rows(self, k: int, n: int) -> tuple:
        """Worker, the first chunk staged by thread: the k-th of n byte ranges of each sequence
        array in slot order, each array's gate released once its range is in (every gate on
        failure, so that the main thread reaches this task's exception)."""
        t0 = time.perf_counter()
        (b0, b1), ends, views = self.bounds[0], self.ends[0], self.views[0]
        released = 0
        try:
            for part in range(CHUNK_PARTS - 1):
                stage_chunk_part(self.pairs, self.meta, self.offs[0], ends, views, b0, b1,
                                 part, k, n)
                self.gates[part].release()
                released += 1
        finally:
            for gate in self.gates[released:]:
                gate.release()
        return 0, time.perf_counter() - t0, None

    def _bin_estimate(self, c: int) -> tuple:
        """Worker: items per bin of chunk c, for grid sizes only (the kernels read the exact
        ranges). Ready before the launches: any host work between a chunk's upload and its
        launches would leave the GPU waiting (and count in its kernel time)."""
        t0 = time.perf_counter()
        pairs, (b0, b1), lut, nb = self.pairs, self.bounds[c], self.bin_lut, len(self.bins)
        r0, r1 = self.ends[c][:2]
        ro = pairs.read_offsets[r0:r1 + 1]
        lengths = ro[1:] - ro[:-1]  # (np.diff: the same, with more Python around)
        est = items_per_bin(lut, nb, lengths, pairs.batch_reads[b0:b1 + 1],
                            pairs.batch_haps[b0:b1 + 1], self.per_pair[c])
        return 0, time.perf_counter() - t0, est

    def submit(self, c: int) -> None:
        """Chunk c's staging, once its pinned slot is free (its previous upload done)."""
        if c >= self.n_chunks or c in self.futures:
            return
        if c >= self.n_slots:
            self.staged_done[c - self.n_slots].synchronize()
        # (bin estimate, [(part, its tasks)]): done on the calling thread without a pool;
        # the first chunk streamed (``_upload``): part by part, a sequence array in pieces
        pool = self.pool
        if pool is None:
            self.futures[c] = (self._bin_estimate(c),
                               [(None, [self._stage_part(c, range(CHUNK_PARTS))])])
        elif c == 0 and self.b.stream_by_thread:
            # a task per thread, each a piece of every sequence array (fewer tasks: each costs
            # a dispatch under the GIL); an array's gate opens once per task. Its bin estimate
            # and integers first: they are needed first.
            n, seq = self.stream_pieces, CHUNK_PARTS - 1
            self.gates = [threading.Semaphore(0) for _ in range(seq)]
            est, ints = pool.submit(self._bin_estimate, c), pool.submit(self._stage_part, c,
                                                                        (seq,))
            self.row_tasks = [pool.submit(self._stage_rows, k, n) for k in range(n)]
            self.futures[c] = (est, [(part, [ints] if part == seq else None)
                                     for part in STREAM_ORDER] if self.b.stream_first
                               else [(None, [ints, *self.row_tasks])])
        elif c == 0:
            n = self.stream_pieces
            self.futures[c] = (pool.submit(self._bin_estimate, c), [
                (part, [pool.submit(self._stage_part, c, (part,), k, n)
                        for k in range(1 if part == CHUNK_PARTS - 1 else n)])
                for part in STREAM_ORDER])
        else:
            self.futures[c] = (pool.submit(self._bin_estimate, c),
                               [(part, [pool.submit(self._stage_part, c, (part,))])
                                for part in range(CHUNK_PARTS)])

    # --- one chunk on the GPU -----------------------------------------------------------------
    def _done(self, tasks: list) -> int:
        """Waits for staging tasks (futures, or results without a pool); returns the end of
        what they wrote (meta's end for the integers' task)."""
        t0 = time.perf_counter()
        got = [f if self.pool is None else f.result() for f in tasks]
        self.prep_wait += time.perf_counter() - t0
        self.prep_work += sum(w for _, w, _ in got)
        return max(u for u, _, _ in got)

    def _upload(self, c: int, slot: int) -> tuple:
        """Chunk c's upload on the copy stream once it is staged: (its bin estimate, its
        copies' (begin, end) events). The first chunk of a multi-chunk call, staged while
        the GPU waits, is streamed: each part is uploaded as soon as it is staged (the
        integers first, then each sequence array once every staging task's piece of it is in),
        so the upload overlaps the staging of the parts after it; the others in one copy."""
        est, parts = self.futures.pop(c)
        self._done([est])
        est = est if self.pool is None else est.result()
        spans, mark, copy = [], self.res.mark, self.copy
        if c == 0 and self.pool is not None and self.b.stream_first:
            base, buf, used = int(self.dev_slots[slot]), self.pinned[slot], 0
            for part, tasks in parts:
                if tasks is None:  # staged by thread: every task's piece of this array
                    t0 = time.perf_counter()
                    for _ in range(self.stream_pieces):
                        self.gates[part].acquire()
                    self.prep_wait += time.perf_counter() - t0
                else:
                    used = max(used, self._done(tasks))
                for lo, hi in part_ranges(self.offs[c], self.ends[c], used, part):
                    e0 = mark(copy)
                    self.drv.memcpy_htod_async(base + lo, buf[lo:hi], copy)
                    spans.append((e0, mark(copy)))
            if self.row_tasks is not None:
                self._done(self.row_tasks)  # their work times, or a task's exception
        else:
            used = max(self._done(tasks) for _, tasks in parts)
            e0 = mark(copy)
            self.drv.memcpy_htod_async(self.dev_slots[slot], self.pinned[slot][:used], copy)
            spans.append((e0, mark(copy)))
        return est[2], spans

    def _device_arrays(self, c: int) -> dict:
        """{name: device address} of chunk c's arrays in its device slot."""
        base = int(self.dev_slots[c % self.n_slots])
        return {name: np.uintp(base + o) for (name, _), o in zip(STAGED, self.offs[c])}

    def enqueue(self, c: int) -> None:
        """Chunk c: wait for its staging, upload it, lay it out, launch its bins and their
        recompute; then start staging the chunk that reuses its slot."""
        res, slot = self.res, c % self.n_slots
        if c >= self.n_slots:  # device slot free once chunk c-n_slots's kernels are done
            self.copy.wait_for_event(self.kernels_done[c - self.n_slots])
        est, spans = self._upload(c, slot)
        if c == 0:  # the other first slots' chunks (no driver call: their slots are unused)
            for nxt in range(1, self.n_slots):
                self.submit(nxt)
        e1 = spans[-1][1]
        self.staged_done.append(e1)
        self.h2d_spans.append(spans)
        dev = self._device_arrays(c)
        queues = int(self.queues_dev) + 16 * len(self.bins) * c
        laid, ticket = self._layout(c, dev, self.work[slot], e1, queues)
        fed = self._bins(c, dev, self.work[slot], est, laid, queues)
        self._recompute(c, dev, self.work[slot], fed, laid, queues)
        k1 = res.mark(self.main)
        self.kernels_done.append(k1)
        self.kernel_spans.append((e1, k1))
        self._results_back(c, k1)
        if ticket is not None:  # the chunk's launches are in: its layout may start
            self.res.release(ticket)
        self.chunk_launches.append((len(self.float_launches), len(self.double_launches)))
        self.submit(c + self.n_slots)

    def _results_back(self, c: int, done) -> None:
        """Chunk c's results (its range of the output, recomputed pairs included) copied back
        after its kernels (``done``, on the main stream), so that ``finish`` moves them out of
        the page-locked buffer while later chunks run: one copy of the whole output after the
        last chunk left a 2M-pair call 2-4.8 ms past the GPU's end (H100,
        8903acf:docs/evidence/subwarp-timeline-chunks5e6-piece0-h100.json)."""
        lo, hi = self.out_ranges[c]
        if hi > lo:
            self.drv.memcpy_dtoh_async(self.host_out[lo:hi], int(self.out_dev) + 8 * lo,
                                       self.main)
        self.results_back.append(self.res.mark(self.main))
        self.d2h_spans.append((done, self.results_back[-1]))

    def _bin_call(self, i: int, n: int, dev: dict, w: dict, queues: int) -> tuple:
        """``_kernel_call``'s arguments for bin i's float32 kernel over its ``n`` items (at
        most; the exact range is read on the device)."""
        x = self.bins[i]
        return (x, FLOAT, w["items"], int(w["bin_range"]) + 8 * i, n, dev, self.out_dev,
                queues + 8 * self.queue_of[i], w["fb_items"], self.max_hap_len,
                -(-n // (THREADS_PER_BLOCK // x.p)))

    def _recompute_calls(self, c: int, q: int, dev: dict, w: dict, queues: int) -> list:
        """``_kernel_call``'s arguments for recompute queue q over chunk c (its counts read on
        the device): its double kernel, or for a cascade the float32 kernel with exponents over
        the queue, whose failures go to the second level, then the double kernel over that."""
        qb = self.queue_bins[q]
        blocks = min(-(-self.chunk_pairs[c] // (THREADS_PER_BLOCK // qb.p)), self.sms * 4)
        head, n, hap = queues + 8 * q, self.chunk_pairs[c], self.max_hap_len
        if not self.cascade[q]:
            return [(qb, DOUBLE, w["fb_items"], head, n, dev, self.out_dev, 0, 0, hap, blocks)]
        second = head + 8 * len(self.bins)
        return [(exp_config(qb), EXP, w["fb_items"], head, n, dev, self.out_dev, second,
                 w["fb_items2"], hap, blocks),
                (qb, DOUBLE, w["fb_items2"], second, n, dev, self.out_dev, 0, 0, hap, blocks)]

    def _layout(self, c: int, dev: dict, w: dict, uploaded, queues: int):
        """Work items on the GPU: count + key, scan, scatter (sorted by bin, descending work);
        returns the event after them and the ticket of the gate holding them (None: not
        held), which ``enqueue`` releases once the chunk's launches are in."""
        s, lk, n_keys, nb = self.lay_stream, self.lk, self.n_keys, len(self.bins)
        b0, b1 = self.bounds[c]
        hist = int(w["counters"])
        bin_pairs = hist + 4 * n_keys
        s.wait_for_event(uploaded)
        # Onto an idle GPU (the chunk before done) the chunk waits in a gate until its launches
        # are in (enqueue releases it); behind running work they queue up anyway, and a gate
        # would only keep the chunk's first kernels from filling the tail of the one before.
        ticket = None
        if self.b.gate_chunks and (c == 0 or self.kernels_done[c - 1].query()):
            ticket, flag = self.res.gate()
            lk["sw_gate"].prepared_async_call((1, 1), (1, 1, 1), s, flag, np.int32(ticket))
        g0 = self.res.mark(s)
        launch_layout(self.drv, lk, s, w["counters"], n_keys + nb, (
            np.int32(self.units[c]), np.int32(self.per_pair[c]), np.int32(b1 - b0),
            dev["batch_reads"], dev["batch_haps"], dev["batch_pairs"], dev["read_off"],
            dev["hap_off"], dev["meta"], _ptr(w["raw"]), _ptr(w["key_rank"]), _ptr(hist),
            _ptr(bin_pairs), _ptr(w["bin_range"]), _ptr(queues), _ptr(w["items"])))
        laid = self.res.mark(s)
        self.float_launches.append((g0, laid))
        return laid, ticket

    def _bins(self, c: int, dev: dict, w: dict, est, laid, queues: int) -> list:
        """Every bin with items, on its own stream after the layout; returns per recompute
        queue the end events of the bins feeding it. A single-tile bin of an odd chunk runs on
        a stream of its own (``alternate_bin_streams``), so that its first blocks fill the
        part-empty last round of the chunk before; a multi-tile bin keeps its stream across
        chunks (its launches share the scratch: they must not overlap)."""
        b = self.b
        profile = b.profile_bins
        odd = c % 2 == 1 and b.alternate_bin_streams
        if profile:  # cells per bin from the host's reference layout
            ref = host_layout(self.pairs, self.bins, *self.bounds[c], per_pair=self.per_pair[c])
            cells_of = {x.label: bin_cells(self.pairs, self.bounds[c], ref, lo, hi)
                        for x, lo, hi in ref.bin_ranges}
        fed: list = [[] for _ in self.queue_bins]
        for i, x in enumerate(self.bins):
            n = int(est[i])
            if n == 0:
                continue
            s = self.main if profile else \
                (self.odd_bin_streams if odd and not x.multi_tile else self.bin_streams)[i]
            s.wait_for_event(laid)
            begin, end = b._launch(self.res, s, *self._bin_call(i, n, dev, w, queues))
            self.float_launches.append((begin, end))
            fed[self.queue_of[i]].append(end)
            self.bin_counts[x.label] += n
            if profile:
                self.bin_events.append((x.label, begin, end, cells_of.get(x.label, 0)))
        return fed

    def _recompute(self, c: int, dev: dict, w: dict, fed: list, laid, queues: int) -> None:
        """Each fed recompute queue's kernels once its bins are done (its count is read
        on the device); the main stream joins them all."""
        b, main = self.b, self.main
        main.wait_for_event(laid)
        for evs in fed:
            for ev in evs:
                main.wait_for_event(ev)
        for q in range(len(self.queue_bins)):
            if not fed[q]:
                continue
            s = main if b.profile_bins else self.queue_streams[q]
            for ev in fed[q]:
                s.wait_for_event(ev)
            for call in self._recompute_calls(c, q, dev, w, queues):
                begin, end = b._launch(self.res, s, *call)
                self.double_launches.append((begin, end))
            main.wait_for_event(end)

    # --- results ------------------------------------------------------------------------------
    def copy_back(self) -> None:
        """The queue heads' copy back (their counts), enqueued once after every chunk (not
        waited for); the results go back per chunk (``_results_back``)."""
        res, main = self.res, self.main
        self.d0 = res.mark(main)
        self.drv.memcpy_dtoh_async(self.queue_heads, self.queues_dev, main)
        self.d1 = res.mark(main)

    def finish(self, info: dict) -> Execution:
        """Each chunk's results into the call's array as soon as they are back (the page-locked
        buffer is the next call's), then the counts, the stage times and what the call did."""
        out = np.empty(len(self.host_out))
        for c, ((lo, hi), back) in enumerate(zip(self.out_ranges, self.results_back)):
            back.synchronize()
            out[lo:hi] = self.host_out[lo:hi]
            self._times_of(c)
        self.d1.synchronize()
        n_fb, info["exp_recomputed"] = recompute_counts(self.queue_heads, len(self.bins),
                                                        self.cascade)
        timing = self._times(info)
        info["prep_wait_s"] = self.prep_wait
        info["run_wall_s"] = time.perf_counter() - self.t_run
        info["chunks"] = self.n_chunks
        info["bins"] = dict(self.bin_counts)
        info["recompute_queues"] = list(self.queue_labels)
        return Execution(out, timing, n_fb, info)

    def _at(self, ev) -> float:
        """ms since the call's start, asked of the driver once per event (the busy-time
        measures share their events; each query is a driver call)."""
        t = self.since.get(id(ev))
        if t is None:
            t = self.since[id(ev)] = ev.time_since(self.start)
        return t

    def _times_of(self, c: int) -> None:
        """Chunk c's event times, asked once its results are back (every event of its
        launches, upload and copy back is then complete) while later chunks still run."""
        f0, d0 = self.chunk_launches[c - 1] if c else (0, 0)
        f1, d1 = self.chunk_launches[c]
        at = self._at
        for a, b in (*self.float_launches[f0:f1], *self.double_launches[d0:d1],
                     *self.h2d_spans[c], self.kernel_spans[c], self.d2h_spans[c]):
            at(a), at(b)

    def _times(self, info: dict) -> dict:
        """The stages from each chunk's and launch's own events (their unions)."""
        start, at = self.start, self._at
        timing = {
            # host staging work of every chunk (worker threads; it overlaps the uploads and
            # kernels of earlier chunks -- info has the part the launches waited for)
            "prep": self.prep_work,
            "h2d": sum(at(e) - at(s) for spans in self.h2d_spans for s, e in spans) / 1e3,
            # the GPU running a layout, bin or recompute launch (overlap counted once)
            "kernel": busy_seconds(start, self.float_launches + self.double_launches, at),
            "d2h": sum(at(b) - at(a) for a, b in (*self.d2h_spans, (self.d0, self.d1))) / 1e3}
        info["gpu_span_s"] = at(self.d1) / 1e3
        # kernel = layout + float32 bins + the float64 recompute of their underflows
        info["float32_kernel_s"] = busy_seconds(start, self.float_launches, at)
        # The former measure: each chunk from its upload's end to its last kernel's end (host
        # enqueue gaps included); far above "kernel" = the GPU waited for the host.
        info["kernel_span_s"] = busy_seconds(start, self.kernel_spans, at)
        if self.bin_events:
            prof: dict = {}
            for label, a, b, cells in self.bin_events:
                row = prof.setdefault(label, {"seconds": 0.0, "cells": 0})
                row["seconds"] += b.time_since(a) / 1e3
                row["cells"] += cells
            info["bin_profile"] = prof
        info["recompute_kernel_s"] = timing["kernel"] - info["float32_kernel_s"]
        return timing
