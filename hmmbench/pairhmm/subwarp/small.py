"""One small ``cuda-subwarp`` call (one chunk under the backend's ``small_below`` pairs, e.g. one
of 1m's 110 regions): the host's Python is its bound (per-region calls), so it does only what
such a call needs, in plain integers where it can.

Its driver calls (``git show 8903acf:scripts/subwarp_driver_record.py`` checks every argument): everything on the
lane's main stream (stream order replaces every wait; calls in flight overlap on their own
lanes' streams; from ``GRAPH_FROM`` pairs all that follows the upload is replayed from a CUDA
graph of the plan and size class, captured on the first call of its key), the upload (from ``PAGEABLE_FROM_BYTES`` of sequences, e.g. 1m merged,
eight: the sequences from the PairSet's own arrays and the integers), the layout in one launch
that also clears its counters (``sw_layout_small``: no memset; from ``MANY_ITEMS`` items, e.g.
1m merged, the full path's memset and count, scan and scatter launches), the bins with items,
each fed recompute queue, five events (start, upload end, float32 end, kernels end, copy back
end) and one copy back (queue heads in front of the results, ``HEADS_BYTES``). From
``SIDE_BINS_FROM`` pairs the bins, and then the recompute queues, run side by side (a side
stream per bin or queue after the first: one more event each and the waits; below it a region's
few hundred pairs gain less than the host pays for them); where each fed queue has one bin (1m
merged) it follows that bin on the bin's stream (no float32 end event). The staging and every
launch's arguments are built before the start event, so between the first and the last event
the host only issues driver calls. The bins' grids need no count of items per bin (their bound
is the call's items, capped at what the GPU holds at once); that count, for ``info``, runs while
the GPU works.

What depends only on the plan and the lane's buffers (kernels, device addresses of the work
buffers, the fixed head and tail of each launch's arguments) is worked out once per lane and
plan (:class:`SmallLaunches`); a call adds its staged arrays' addresses and its counts.
Device addresses go to the prepared calls as Python ints (PyCUDA packs a "P" argument with
``struct``: the same bytes as the ``np.uintp`` the full path passes); "i" values stay np.int32.
"""
from __future__ import annotations

import time

import numpy as np

from ...apis import cuda as glue
from ...backend import Execution
from ..model import PairSet
from .call import launch_layout
from .device import sized_lane
from .layout import SW_LEVELS, THREADS_PER_BLOCK, items_per_bin
from .rescue import DOUBLE, EXP, exp_config
from .staging import (PAGEABLE_FROM_BYTES, class_offsets, headroom, int_views, size_class,
                      stage_whole, whole_offsets)

_BLOCK = (THREADS_PER_BLOCK, 1, 1)
#: From this many pairs a small call runs its bins side by side (a stream per bin after the
#: first, joined before the recompute): 10s's two bins (3,022 pairs of p32k4, 528 of p32k8) each
#: fill part of the GPU, and the longer one's chain is most of the kernel stage. Below it the
#: host issuing the driver calls is the bound (1m's regions: ~270 pairs), so no extra waits.
SIDE_BINS_FROM = 1024
#: One chunk of fewer pairs takes this path (``SubwarpBackend.small_below``): every per-region
#: call, 10s and 1m merged; larger calls take the full path (chunks staged by threads).
SMALL_CALL_PAIRS = 1 << 16
#: From this many work items (1m merged: 29,307) a small call's layout runs as the full path's, a
#: memset and three launches (count, scan, scatter) over the whole GPU instead of one block doing
#: all (on the one block 1m's layout took 88 us longer, H100,
#: 8903acf:docs/evidence/subwarp-ab-small-below-h100.json).
MANY_ITEMS = 8192
#: From this many pairs (10s: 3,550; 1m merged: 29,307) a small call replays its launches from a
#: CUDA graph (``SubwarpBackend.graph_from``; 0 or no driver graph calls: never): the host issues
#: ~12 launches and ~10 event records a call, ~0.1 ms the GPU waits for (H100 / H200:
#: 8903acf:docs/evidence/subwarp-graph-probe-*.json). A region call (~270 pairs) keeps them.
GRAPH_FROM = 1024
_NO_SCRATCH = (0, np.int32(0))  # a single-tile kernel's scratch pointer and stride


class SmallLaunches:
    """The fixed parts of a small call's launches for one plan on one lane's buffers: per bin
    and per recompute queue (kernel, dynamic shared bytes, items per block, the bin if it is
    multi-tile, arguments before its count, arguments after the staged arrays, [bin label,
    queue, shortest read, most blocks]); the layout launch's fixed tail."""

    def __init__(self, backend, plan, bufs: tuple, res):
        pinned, dev_slots, work, queues, out = bufs[:5]
        self.pinned, self.slot, self.main, self.queues = pinned[0], dev_slots[0], bufs[5], queues
        # streams for the bins after the first when they run side by side (the lane's own,
        # after its main stream; a full call on the lane uses them too, never at the same time)
        self.side = res.streams(len(plan.bins))[1:] if backend._streams_on else []
        self.views = int_views(pinned[0])
        w = work[0]
        items, ranges, fb_items = int(w["items"]), int(w["bin_range"]), int(w["fb_items"])
        hist = int(w["counters"])
        self.layout_kernels = backend.layout_kernels()
        self.layout_fn = self.layout_kernels["sw_layout_small"]
        n_keys = len(plan.bins) * SW_LEVELS
        self.layout_tail = (int(w["raw"]), int(w["key_rank"]), hist, hist + 4 * n_keys, ranges,
                            queues, items)
        self.counters = (w["counters"], n_keys + len(plan.bins))  # key histogram, bins' pairs
        # grid caps: the recompute's, a multi-tile kernel's (resident groups)
        self.double_cap, self.mt_cap = backend.sm_count * 4, backend.sm_count * 16
        # per bin also its shortest read and the most blocks it launches: a multi-tile kernel's
        # cap, or the blocks of its kernel the GPU holds at once (backend.resident_grid)
        self.bins = [(*backend.kernel(x), THREADS_PER_BLOCK // x.p, x if x.multi_tile else None,
                      (items, ranges + 8 * i), (out, queues + 8 * plan.queue_of[i], fb_items),
                      plan.labels[i], plan.queue_of[i], x.lo,
                      self.mt_cap if x.multi_tile else backend.resident_grid(x))
                     for i, x in enumerate(plan.bins)]
        # per queue its launches: the double kernel, or for a cascade the float32 kernel with
        # exponents (its failures to the second level, 8 x n_bins further) and the double
        # kernel over that level
        nb, fb_items2 = len(plan.bins), int(w["fb_items2"])
        self.queue_launches = [
            [(*backend.kernel(q, DOUBLE), THREADS_PER_BLOCK // q.p, q if q.multi_tile else None,
              (fb_items, queues + 8 * j), (out, 0, 0))] if not casc else
            [(*backend.kernel(exp_config(q), EXP), THREADS_PER_BLOCK // exp_config(q).p, None,
              (fb_items, queues + 8 * j), (out, queues + 8 * (nb + j), fb_items2)),
             (*backend.kernel(q, DOUBLE), THREADS_PER_BLOCK // q.p, q if q.multi_tile else None,
              (fb_items2, queues + 8 * (nb + j)), (out, 0, 0))]
            for j, (q, casc) in enumerate(zip(plan.queue_bins, plan.cascade))]
        # which queue counts are float64 pairs (a queue's, or a cascade's second level) and
        # which float32-with-exponents ones (a cascade's first level): recompute_counts' rule
        # as index lists, summed in plain ints on a region call's hot path
        self.double_counts = [j + nb * c for j, c in enumerate(plan.cascade)]
        self.exp_counts = [j for j, c in enumerate(plan.cascade) if c]
        # multi-tile scratch, sized before the first event in the full path's order
        self.scratch = [(x, False) for x in plan.bins if x.multi_tile] + \
                       [(q, True) for q in plan.queue_bins if q.multi_tile]
        # the CUDA graphs of this plan on this lane's buffers, by size class (SmallCall)
        self.graphs: dict = {}

    def close(self) -> None:
        """Destroys the graphs (the lane's buffers moved, or the lane closes)."""
        for g, _ in self.graphs.values():
            g.destroy()
        self.graphs.clear()


class SmallCall:
    """A small call: staged and its launches' arguments built on construction; :meth:`enqueue`
    issues its driver calls, :meth:`finish` (``SubwarpHandle.result``) collects it."""

    def __init__(self, backend, pairs: PairSet, lane, max_read_len: int, max_hap_len: int,
                 read_lengths: np.ndarray):
        self.t_run = time.perf_counter()
        self.lane, self.res = lane, lane.res
        res = lane.res
        self.plan = plan = backend._plan(pairs, max_read_len)
        n_pairs = pairs.n_pairs
        per_pair = n_pairs <= backend.per_pair_below
        # From graph_from pairs the arrays sit at their size class's offsets and the counts go
        # after meta, so that one graph per class serves every call of it (below; not with a
        # multi-tile kernel, whose scratch stride follows the call's longest haplotype).
        graph = (n_pairs >= backend.graph_from > 0 and glue.graphs_available()
                 and not any(x.multi_tile for x in (*plan.bins, *plan.queue_bins)))
        if graph:
            offs, slot_bytes, ends, classes = class_offsets(pairs, len(plan.meta) + 2)
        else:
            offs, slot_bytes, ends = whole_offsets(pairs, len(plan.meta))
        units = n_pairs if per_pair else ends[1] - ends[0]
        nb = len(plan.bins)
        # the full path's lane sizes for one chunk (n_slots 1), so both reuse a lane alike
        sizes = (1, headroom(slot_bytes), headroom(units), headroom(n_pairs), nb,
                 len(plan.queue_bins), 1, headroom(n_pairs * 8), backend._streams_on, True)
        _, bufs, per_plan, _ = sized_lane(lane, nb * SW_LEVELS, sizes)
        fixed = per_plan.get(plan.key)
        if fixed is None:
            fixed = per_plan[plan.key] = SmallLaunches(backend, plan, bufs, res)
        self.fixed = fixed
        max_hap = max(max_hap_len, 1)
        for x, double in fixed.scratch:
            res.scratch(x, double, max_hap)
        self.joined, self.host_out, self.queue_heads = res.joined_results(n_pairs, nb * 4)
        res.restart_events()

        # host staging (the timed prep): the arrays; from PAGEABLE_FROM_BYTES of sequences only
        # the integers (the sequences go up from the PairSet's own arrays, the driver staging
        # them: its time falls in h2d)
        a0, a1, c0, c1 = ends[4:]
        self.pageable = 5 * (a1 - a0) + c1 - c0 >= backend.pageable_from_bytes
        t0 = time.perf_counter()
        self.used = stage_whole(pairs, plan.meta, offs, ends, fixed.views, not self.pageable)
        if graph:  # the counts the layout reads (it is passed -1 for them)
            w = offs[11] // 4 + len(plan.meta)
            fixed.views[2][w:w + 2] = (units, pairs.n_batches)
            self.used += 8
        self.prep = time.perf_counter() - t0
        self.offs, self.ends = offs, ends
        self.pairs, self.per_pair = pairs, per_pair
        self.read_lengths = read_lengths[ends[0]:ends[1]]

        # every launch's arguments
        base = int(fixed.slot)
        self.dev = dev = [base + o for o in offs]
        self.many = units >= MANY_ITEMS
        side_by_side = (n_pairs >= backend.side_bins_from and nb > 1 and bool(fixed.side))
        side_queues = side_by_side and n_pairs >= backend.side_queues_from
        self.graph = self.graph_key = None
        self.grid_units = 0
        if graph:
            # Every argument a graph bakes is the same for the calls of its key: the arrays'
            # addresses (the class's offsets), upper bounds and grids from the classes of the
            # unit and pair counts (the kernels loop over the exact ranges the layout writes),
            # and the counts themselves staged after meta.
            units_cls, pairs_cls = size_class(units), size_class(n_pairs)
            self.graph_key = (classes, units_cls, pairs_cls, per_pair, self.many, side_by_side,
                              side_queues)
            self.graph, self.bin_streams = fixed.graphs.get(self.graph_key, (None, 0))
            if self.graph is not None:  # replayed: no launch to build
                self.floats_done = None
                return
            units, n_pairs, n_batches, self.grid_units = -1, -1, -1, units_cls
        else:
            n_batches, pairs_cls, units_cls = pairs.n_batches, n_pairs, units
        karr = tuple(dev[:8])  # KERNEL_ARRAYS: STAGED's first eight
        self.layout = (np.int32(units), np.int32(per_pair), np.int32(n_batches),
                       dev[8], dev[9], dev[10], dev[5], dev[7], dev[11], *fixed.layout_tail)
        # The bins' grids: every bin with reads up to the longest takes all the call's items as
        # its bound, its grid capped at the blocks the GPU holds at once -- the kernels loop
        # over their exact item ranges, which the layout writes on the GPU, so no host count of
        # items per bin stands between the staging and the launches (it runs in finish, for
        # info, while the GPU works; counted before the start, 1m merged took 90 us longer,
        # H100: 8903acf:docs/evidence/subwarp-ab-grids-h100.json).
        self.floats, fed = [], [0] * len(plan.queue_bins)
        float_queue = []  # per launched bin its queue
        bound = np.int32(units_cls)
        for fn, smem, per_block, mt, head, tail, _, q, lo, cap in fixed.bins:
            if lo > max_read_len:
                continue
            blocks, end = min(-(-units_cls // per_block), cap), _NO_SCRATCH
            if mt is not None:
                end = self._scratch(mt, False, max_hap)
            self.floats.append((fn, (blocks, 1), head + (bound,) + karr + tail + end, smem))
            fed[q] += 1
            float_queue.append(q)
        self.side_by_side = side_by_side and len(self.floats) > 1
        self.side_queues = self.side_by_side and side_queues
        self.bin_streams = len(self.floats) if self.side_by_side else 1
        # Each queue fed by one bin follows that bin on its stream: the recompute of the bins
        # that end first then runs while the last one still does (1m merged: two fed cascades,
        # 39 us, no longer after the last bin)
        self.chained = self.side_queues and backend.chain_queues and max(fed) == 1
        self.doubles = []  # per fed queue its launches
        cap, mt_cap = fixed.double_cap, fixed.mt_cap
        for launches, q_fed in zip(fixed.queue_launches, fed):
            if not q_fed:
                continue
            self.doubles.append([])
            for fn, smem, per_block, mt, head, tail in launches:
                blocks, end = min(-(-pairs_cls // per_block), cap), _NO_SCRATCH
                if mt is not None:
                    blocks, end = min(blocks, mt_cap), self._scratch(mt, True, max_hap)
                self.doubles[-1].append((fn, (max(blocks, 1), 1),
                                         head + (np.int32(pairs_cls),) + karr + tail + end,
                                         smem))
        if self.chained:  # per launched bin: the bin, then its queue's launches
            launches_of = dict(zip([q for q, n in enumerate(fed) if n], self.doubles))
            self.chains = [[f, *launches_of[q]] for f, q in zip(self.floats, float_queue)]

    def _scratch(self, x, double: bool, max_hap: int) -> tuple:
        scratch, stride = self.res.scratch(x, double, max_hap)
        return int(scratch), np.int32(stride)

    def enqueue(self) -> None:
        """The driver calls, in stream order on the main stream: upload, layout, bins, their
        recompute, copy back; an event at the start and after each group."""
        drv, fixed, mark = glue.driver(), self.fixed, self.res.mark
        main = fixed.main
        self.start = mark(main)
        if self.pageable:  # the sequences from the PairSet, the integers from the slot
            pairs, dev, offs, pinned = self.pairs, self.dev, self.offs, fixed.pinned
            a0, a1, c0, c1 = self.ends[4:]
            for i, a in enumerate((pairs.read_bases, pairs.base_qual, pairs.ins_qual,
                                   pairs.del_qual, pairs.gcp_qual)):
                drv.memcpy_htod_async(dev[i], a[a0:a1], main)
            drv.memcpy_htod_async(dev[6], pairs.hap_bases[c0:c1], main)
            drv.memcpy_htod_async(dev[5], pinned[offs[5]:offs[6]], main)
            drv.memcpy_htod_async(dev[7], pinned[offs[7]:self.used], main)
        else:
            drv.memcpy_htod_async(fixed.slot, fixed.pinned[:self.used], main)
        self.uploaded = mark(main)
        if self.graph is None and self.graph_key is not None:
            # the first call of its key: what follows the uploads captured into its graph (the
            # events recorded meanwhile only join the side streams; the stages keep theirs)
            capture = glue.CapturedGraph(main)
            try:
                self._kernels(drv, main, mark)
            finally:
                capture.end()
            self.graph = capture
            fixed.graphs[self.graph_key] = (capture, self.bin_streams)
            self.floats_done = None
        if self.graph is not None:
            self.graph.launch(main)
        else:
            self._kernels(drv, main, mark)
        self._end(drv, main, mark)

    def _kernels(self, drv, main, mark) -> None:
        """The layout, the bins and their recompute queues, joined back on the main stream."""
        fixed = self.fixed
        if self.many:
            launch_layout(drv, fixed.layout_kernels, main, *fixed.counters, self.layout,
                          self.grid_units)
        else:
            fixed.layout_fn.prepared_async_call((1, 1), (1024, 1, 1), main, *self.layout)
        self.floats_done = None  # (chained: no event between the bins and the recompute)
        if self.chained:  # each bin and its queue on a stream of their own, longest reads first
            return self._side_by_side(main, mark, mark(main),
                                      [self.chains[0], *self.chains[:0:-1]])
        if self.side_by_side:
            # the bins after the layout, the longest reads' first (the block scheduler starts
            # the first launch's blocks first)
            self._side_by_side(main, mark, mark(main),
                               [[self.floats[0]], *([f] for f in self.floats[:0:-1])])
        else:
            for fn, grid, args, smem in self.floats:
                fn.prepared_async_call(grid, _BLOCK, main, *args, shared_size=smem)
        self.floats_done = mark(main)
        if self.side_queues:
            # a queue's kernels read its count on the device, so every fed queue launches, even
            # empty (as nearly always): one after the other 1m merged's three cascades took 61 us
            self._side_by_side(main, mark, self.floats_done, self.doubles)
        else:
            for queue in self.doubles:
                for fn, grid, args, smem in queue:
                    fn.prepared_async_call(grid, _BLOCK, main, *args, shared_size=smem)

    def _end(self, drv, main, mark) -> None:
        """The kernels' end, the copy back right after them (their end is its start), its end."""
        self.kernels_end = mark(main)
        drv.memcpy_dtoh_async(self.joined, self.fixed.queues, main)
        self.d1 = mark(main)

    def _side_by_side(self, main, mark, after, groups: list) -> None:
        """Launch groups after the event ``after``: the first on the main stream, each other on
        a side stream of its own, the main stream joining them."""
        joins = []
        for group, side in zip(groups[1:], self.fixed.side):
            side.wait_for_event(after)
            for fn, grid, args, smem in group:
                fn.prepared_async_call(grid, _BLOCK, side, *args, shared_size=smem)
            joins.append(mark(side))
        for fn, grid, args, smem in groups[0] if groups else ():
            fn.prepared_async_call(grid, _BLOCK, main, *args, shared_size=smem)
        for ev in joins:
            main.wait_for_event(ev)

    def finish(self, info: dict) -> Execution:
        """Once the copy back is done: the results, the stages from the five events (four
        driver queries; three with chained queues) and what the call did. h2d = start ..
        upload end (from pageable memory: the driver's staging too); kernel = upload end
        .. last kernel's end (layout, bins and recompute back to back; a gap where the GPU
        waited for the host to enqueue the next launch would count in it); d2h = that .. the
        copy back's end."""
        # the items per bin (info) while the GPU is still at work
        pairs, plan = self.pairs, self.plan
        items = items_per_bin(plan.bin_lut, len(plan.bins), self.read_lengths,
                              pairs.batch_reads, pairs.batch_haps, self.per_pair).tolist()
        self.d1.synchronize()
        out = self.host_out.copy()  # the page-locked buffer is the next call's
        counts = self.queue_heads.tolist()[1::2]  # the queues' counts, then their second level
        fixed = self.fixed
        n_fb = sum(counts[i] for i in fixed.double_counts)
        info["exp_recomputed"] = sum(counts[i] for i in fixed.exp_counts)
        start = self.start
        up = self.uploaded.time_since(start) / 1e3
        kernels = self.kernels_end.time_since(start) / 1e3
        end = self.d1.time_since(start) / 1e3
        info["gpu_span_s"] = end
        info["kernel_span_s"] = kernels - up
        if self.floats_done is not None:  # (chained queues overlap the bins: no split)
            floats = self.floats_done.time_since(start) / 1e3
            info["float32_kernel_s"] = floats - up
            info["recompute_kernel_s"] = kernels - floats
        timing = {"prep": self.prep, "h2d": up, "kernel": kernels - up, "d2h": end - kernels}
        info["prep_wait_s"] = 0.0  # staged by the calling thread: no wait for workers
        info["run_wall_s"] = time.perf_counter() - self.t_run
        info["chunks"] = 1
        info["bins"] = {label: int(n) for label, n in zip(plan.labels, items) if n}
        info["bin_streams"] = self.bin_streams
        info["graph"] = self.graph_key is not None
        info["recompute_queues"] = list(self.plan.queue_labels)
        return Execution(out, timing, n_fb, info)
