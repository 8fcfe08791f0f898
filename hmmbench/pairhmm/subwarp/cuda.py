"""``cuda-subwarp``: the gpuPairHMM-class peak CUDA backend (sub-warp groups, shuffles, bins).

Kernel: ``kernels_cuda/pairhmm/subwarp.cu`` around the body shared with OpenCL,
``kernels_common/pairhmm/subwarp.h`` (read its header comment for the recurrence). A group of
``p`` threads aligns one read to every haplotype of its batch; each thread keeps ``k`` read rows
in registers, so one group covers reads up to ``p*k`` (longer reads run as several row tiles).
Bins, configuration choice and the host's reference layout: ``layout.py``; the float64
rescue's configurations: ``rescue.py``; host staging: ``staging.py`` (all three
shared with ``opencl-subwarp``); the device resources kept across calls: ``device.py``;
one call's chunks, launches and stage times: ``call.py`` (a small call's:
``small.py``); ahead-of-time builds:
``build.py``.

Work items: one per read (read, first haplotype of its batch, haplotypes in the batch, index of
its first pair) -- a batch's pairs are read-major, so a read's pairs are contiguous; inputs under
``per_pair_below`` pairs get one item per pair instead (more parallelism when the GPU would
otherwise idle). Items are partitioned by read length into bins, ordered inside a bin by
descending work; each bin runs the (p, k) kernel specialized for it, compiled at run time with the
bin's exact limits as defines (cached in-process and on disk).

Pipeline: large inputs are cut into chunks of whole batches (``chunk_pairs``). The host only
copies each chunk's byte slices of the PairSet (bases, qualities, haplotypes) and its
chunk-relative offsets into a pinned staging slot (worker threads, one task per array; this is
the timed ``prep``); one H2D per chunk on a copy stream overlaps the kernels of earlier chunks.
On the GPU, ``subwarp_layout.cu`` builds the chunk's items, bins and sort order (count with
warp-aggregated atomics, one-block scan, scatter); the bin kernels read their item ranges from
the device. ``host_layout`` is the host's reference of that layout (tests, bin profile). A call of
one chunk under ``small_below`` pairs (a per-region call, 10s and 1m merged) takes the small
call's path instead (``small``): one stream, one layout launch (``sw_layout_small``; the
full path's three from 8,192 items), five events, one copy back -- the host issuing driver calls
is what bounds such a call; from ``side_bins_from`` pairs its bins, then its recompute queues,
run side by side. ``cuda-subwarp-batched`` runs the calls a caller keeps in flight
(``--in-flight N``) as one call (``batched``).

Device side: bins launched on separate streams; float32 with C = 2^120 and, by default, a
power-of-two exponent per thread beside its values (``SW_EXP_SCALE``), so pairs far below
float32's range stay float32. A pair the exponents cannot hold (or, in ``-f64rescue``, every pair
whose float32 sum is under 1e-28) is queued by the kernel itself into the recompute queue of its
bin's configuration and recomputed by a double-precision instantiation specialized like the bins
(``recompute_queues``: k = 8, the smallest p whose tile holds the reads, multi-tile beyond 256),
on its own stream once its bins are done, counts read on the device (``n_fallback`` counts
them); log10 results are written in place, then copied back once.

Variants and families (what ``hmmbench run`` can select): ``variants.py``.
"""
from __future__ import annotations

import operator
from typing import Optional, Sequence

import numpy as np

from ...backend import Backend, Execution, Finished, Limits
from ...apis import cuda as glue
from ...apis.cuda_timing import sm_clock_cached
from ...memory import MemoryNeed
from .batched import CallBatches
from .extra_work import RecordsExtraWork, extra_work_pct
from .footprint import FALLBACK_SM_COUNT, lane_bytes
from .extra_work import defines as extra_work_defines
from ..model import PairSet
# The layout, rescue planning and staging are shared with opencl-subwarp; re-exported here.
from .layout import (  # noqa: F401
    Plan,
    DEFAULT_BINS, DEFAULT_LONG, EXP_BIN_SETTINGS, F32_LOW_FLOOR, F32_LOW_FLOOR_ABOVE,
    F32_LOW_FLOOR_IQ, GATKFORM_BINS, MAX_P, N_CODES, NOTABLE_BINS, PAD_CODE, RECURRENCES,
    SMALL_TIERS, SUPPORTED_K, SUPPORTED_P, SW_LEVELS, THREADS_PER_BLOCK, Bin, HostLayout,
    PER_PAIR_BELOW, bin_cells, choose_bins, chunk_bounds, exp_switches, host_layout, make_bins,
    read_items, size_tier, sw_scaled, table_bytes, tiers_param, tiers_table)
from .build import (  # noqa: F401
    FP32_OPS, LAYOUT_SOURCE, SOURCE, inner_loop_counts, kernel_specs, precompile, wavefront_loop)
from .call import SubwarpCall, SubwarpHandle, busy_seconds  # noqa: F401
from .device import DeviceResources, Lane, Lanes
from .small import (GRAPH_FROM, PAGEABLE_FROM_BYTES, SIDE_BINS_FROM, SMALL_CALL_PAIRS,
                            SmallCall)
from .rescue import (  # noqa: F401
    DOUBLE, DOUBLE_K, EXP, FLOAT, cascades, plan_kernels, recompute_queues)
from .staging import (  # noqa: F401
    PREP_THREADS, STAGED, STAGING_SLOTS, StagingSlots, grown_chunk_pairs, headroom)

#: subwarp_forward's parameters for PyCUDA's prepared calls (P pointer, i int): items, range,
#: n_max, KERNEL_ARRAYS, out, fb_queue, fb_items, scratch, scratch_stride.
KERNEL_ARRAYS = ("read_bases", "base_qual", "ins_qual", "del_qual", "gcp_qual", "read_off",
                 "hap_bases", "hap_off")
KERNEL_SIGNATURE = "PPi" + "P" * len(KERNEL_ARRAYS) + "PPPPi"
_kernel_arrays = operator.itemgetter(*KERNEL_ARRAYS)  # a chunk's device addresses, in order
#: The on-GPU layout kernels' prepared signatures.
LAYOUT_SIGNATURES = {"sw_layout_count": "iiiPPPPPPPPPP", "sw_layout_scan": "PPPPP",
                     "sw_layout_scatter": "iPPPPP", "sw_layout_small": "iii" + "P" * 13,
                     "sw_gate": "Pi"}


_MAX, _MIN = np.maximum.reduce, np.minimum.reduce  # ndarray.max / min less a Python frame
# ------------------------------------------------------------------------------------------------
# Backend
# ------------------------------------------------------------------------------------------------
class SubwarpBackend(RecordsExtraWork, Backend):
    api = "cuda"
    family = "subwarp"
    precision = "float32"
    limits = Limits()

    def __init__(self, name: str, bins: Sequence[tuple] = DEFAULT_BINS,
                 long_config: Optional[tuple] = DEFAULT_LONG, emis_table: bool = True,
                 recurrence: str = "5op", streams: bool = True, description: str = "",
                 chunk_pairs: int = 3 << 17, min_blocks: int = 1,
                 per_pair_below: int = PER_PAIR_BELOW,
                 small_tiers: Optional[Sequence[tuple]] = None,
                 exp_scale: bool = False, exp_above: int = 0, exp_recompute: bool = False,
                 batch_calls: bool = False):
        super().__init__(bins=[list(b) for b in bins], long_config=long_config,
                         emis_table=emis_table, recurrence=recurrence, streams=streams,
                         exp_scale=exp_scale,
                         exp_above=exp_above, **({"exp_recompute": True} if exp_recompute else {}),
                         chunk_pairs=chunk_pairs, min_blocks=min_blocks,
                         per_pair_below=per_pair_below,
                         small_tiers=tiers_param(small_tiers),
                         **({"batch_calls": True} if batch_calls else {}))
        self.name = name
        self.description = description
        self._bins_table = tuple(tuple(b) for b in bins)
        self._small_tiers = tiers_table(small_tiers)
        self.profile_bins = False
        self._long = long_config
        self._table = emis_table
        if recurrence not in RECURRENCES:
            raise ValueError(f"recurrence {recurrence!r}: one of {', '.join(RECURRENCES)}")
        self._recurrence = recurrence
        # Power-of-two exponents per thread (SW_EXP_SCALE): no float64 recompute except for the
        # pairs the exponents cannot hold (gap penalties far from GATK's; docs/subwarp-numerics.md)
        self._exp = exp_scale
        self._exp_above = exp_above  # exponents only in bins of longer reads (the rest: rescue)
        # the rescue of bins without exponents: float32 with exponents first (rescue.py)
        self._exp_recompute = exp_recompute
        self._streams_on = streams
        # calls in flight run as one call (batched.py); None: each call on its own lane
        self._batches = CallBatches(self.run) if batch_calls else None
        self._kernels: dict = {}
        self._plans: dict = {}
        self._attrs: Optional[dict] = None
        # lane 0 (one call at a time) owns _device and _staging; _staging's threads serve all
        self._device = DeviceResources(lambda: self.sm_count)
        self._staging = self._pinned_slots()
        self._lanes = Lanes(Lane(0, self._device, self._staging),
                            lambda i: Lane(i, DeviceResources(lambda: self.sm_count),
                                           self._pinned_slots()))
        # Off: the first chunks at 1/8, 1/4, 1/2 of chunk_pairs left chunks@5e6 where it was
        # (H100: 100.2 vs 100.4 ms, the GPU waits for the staging of later chunks
        # too); H200 (host layout) 0.69 vs 1.06 TCUPS on 6 pieces. By thread (
        # 8903acf:docs/evidence/subwarp-head-h100.json): n = 1..3 slower, medians 30.8-32.2 against
        # 28.2 ms a 2M-pair call.
        self.ramp_chunks = 0  # n: the first n chunks 1/2^n .. 1/2 of chunk_pairs
        # 1: a last chunk under half a chunk joins the one before: 2-3 % less kernel time on
        # equal-64..256, 6-15 % more wall (its staging no longer overlaps the kernels before it;
        # H100, 8903acf:docs/evidence/subwarp-ab-join-tail-h100.json), so not by default
        self.join_tail = 0
        # 1: odd chunks' single-tile bins on streams of their own, so that a chunk's first
        # blocks fill the last round of the chunk before (call._bins)
        self.alternate_bin_streams = 1
        # A multi-chunk call's first chunk, staged while the GPU waits: each array in this many
        # pieces (0: one per staging thread), by a task per thread (each a piece of every
        # array; 0: a task per array piece), each array uploaded once its pieces are in (0: the
        # chunk in one copy once staged)
        self.stream_pieces = 0
        self.stream_by_thread = 1
        self.stream_first = 1
        self.chunk_pairs = chunk_pairs
        self.min_blocks = min_blocks
        self.per_pair_below = per_pair_below
        # One chunk of fewer pairs: the small call's path (small.SmallCall):
        # one stream, one layout launch, five events, one copy back; 0 turns it off.
        self.small_below = SMALL_CALL_PAIRS
        # ... whose bins run side by side from this many pairs (with streams on)
        self.side_bins_from = SIDE_BINS_FROM
        # ... and so do its recompute queues from this many pairs (with its bins side by side)
        self.side_queues_from = SIDE_BINS_FROM
        # ... each queue fed by one bin launched on that bin's stream right after it, not
        # after every bin (0: after every bin, the A/B: --setting chain_queues=1,0)
        self.chain_queues = 1
        # ... which from this many bytes of sequences uploads them from the PairSet's arrays
        self.pageable_from_bytes = PAGEABLE_FROM_BYTES
        # ... and from this many pairs replays its launches from a CUDA graph per size class
        # (0: never; the A/B: --setting graph_from=1024,0)
        self.graph_from = GRAPH_FROM
        self.double_k = DOUBLE_K
        self.recompute_all = False  # True: every pair through the float64 kernels (tests, timing)
        # A cascade's first float32 kernel keeps sums down to f32_floors; 0: down to 1e-28 (the
        # A/B: git show 8903acf:scripts/subwarp_side_bins.py --setting low_floor=1,0)
        self.low_floor = 1
        # Steps between the exponent checks of the float32 bins with exponents (SW_EXP_EVERY x 4;
        # 24 and 28 hold on the emulation, 32 does not: git show 8903acf:scripts/subwarp_exp_every_emulation.py)
        self.exp_every = 16
        # A single tile's lane 0 gets its row above from the exponents' conversion factor, not
        # three selects a step (SW_LANE0_BY_FACTOR; 0: the selects, the A/B:
        # --setting lane0_by_factor=1,0)
        self.lane0_by_factor = 1
        # ... and its haplotype codes from a window the group loads at each exponent check, not
        # a load a step (SW_CODE_WINDOW; 0: the load, the A/B: --setting code_window=1,0)
        self.code_window = 1
        # ... and its threads' last two rows held 2^SW_EXP_SHIFT up, so one factor converts what
        # a thread receives where two did past a gap of 126 binades (SW_EXP_SHIFT; 0: no shift,
        # two factors, the A/B: --setting exp_shift=1,0)
        self.exp_shift = 1
        # The exponent bins' own settings over the two above (EXP_BIN_SETTINGS, this backend's
        # copy; 0: none, the A/B: --setting exp_bin_settings=1,0)
        self.exp_bin_settings = 1
        self.exp_bins = {hi: dict(own) for hi, own in EXP_BIN_SETTINGS.items()}
        # Hold each chunk's chain of a multi-chunk call until all of it is enqueued (sw_gate);
        # 0: launch by launch (the A/B: --setting gate_chunks=1,0)
        self.gate_chunks = 1
        if long_config is None:
            self.limits = Limits(max_read_length=self._bins_table[-1][0])

    @staticmethod
    def _pinned_slots() -> StagingSlots:
        return StagingSlots(lambda n: glue.driver().pagelocked_empty(n, np.uint8), "subwarp-prep")

    def device_attrs(self) -> dict:
        """The device's attributes, asked of the driver once (each is a driver query)."""
        if self._attrs is None:
            self._attrs = glue.device_attributes()
        return self._attrs

    @property
    def sm_count(self) -> int:
        return self.device_attrs()["sm_count"]

    @staticmethod
    def sm_clock():
        return sm_clock_cached()

    @property
    def prep_threads(self) -> int:
        """Host staging threads (0: PREP_THREADS)."""
        return self._staging.threads

    @prep_threads.setter
    def prep_threads(self, n: int) -> None:
        self._staging.threads = n
        self._staging.close_pool()  # the next call starts a pool of n threads

    # --- availability -------------------------------------------------------------------------
    def unavailable_reason(self) -> Optional[str]:
        return glue.unavailable_reason()

    def device_name(self) -> str:
        return glue.gpu_name()

    def memory_need(self, shape) -> MemoryNeed:
        """Host: the CUDA runtime, the page-locked staging slots (the set's bytes, at most
        STAGING_SLOTS chunks of them; the layout is built on the GPU) and the results; an H200
        measured 131.5 MiB on equal-512@20000 against 140 (docs/working-memory.md). Device: the
        lane's buffers and the multi-tile scratch (:func:`.footprint.lane_bytes`)."""
        per_pair = shape.nbytes / max(shape.pairs, 1)
        staged = min(shape.nbytes, int(STAGING_SLOTS * self.chunk_pairs * per_pair))
        cells = (shape.read_bases / max(shape.reads, 1) * shape.hap_bases / max(shape.haps, 1)
                 * shape.pairs)
        chunk = grown_chunk_pairs(self.chunk_pairs, shape.pairs, int(cells))
        sm_count = (glue.device_attributes()["sm_count"] if glue.unavailable_reason() is None
                    else FALLBACK_SM_COUNT)
        return MemoryNeed(host=glue.HOST_RUNTIME_BYTES + staged + 8 * shape.pairs,
                          device=lane_bytes(self, shape, chunk, sm_count))

    def device_memory_free(self) -> Optional[int]:
        return glue.free_memory()

    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        # Per read / haplotype first (cheap); per pair only when some sequence is empty.
        if pairs.n_pairs and (int(pairs.read_lengths.min(initial=1)) < 1
                              or int(pairs.hap_lengths.min(initial=1)) < 1):
            if int(pairs.pair_read_lengths.min()) < 1 or int(pairs.pair_hap_lengths.min()) < 1:
                return "a pair has an empty read or haplotype (the model's likelihood is undefined)"
        return super().refuse_reason(pairs)

    def bins_for(self, pairs: PairSet) -> list[Bin]:
        return choose_bins(pairs, self._bins_table, self._long, self._small_tiers)

    # --- kernels ------------------------------------------------------------------------------
    def exponents(self, b: Bin) -> bool:
        """Whether bin b's float32 kernel carries per-thread exponents: bins of reads over
        ``exp_above``, and every multi-tile bin (a size tier's takes the reads over 256, its
        upper end the input's longest read; no cascade holds them)."""
        return self._exp and (b.hi > self._exp_above or b.multi_tile) and not self.recompute_all

    def defines(self, b: Bin, kind: str = FLOAT) -> dict:
        """The kernel's defines for bin (or queue configuration) b: its float32 kernel, the
        float64 recompute or the float32 recompute with exponents (``rescue``)."""
        double = kind == DOUBLE
        d = {"SW_P": b.p, "SW_K": b.k, "SW_DOUBLE": int(double),
             "SW_EMIS_TABLE": int(self._table or double),
             "SW_SCALED": sw_scaled(self._recurrence, double),
             "SW_MULTI_TILE": int(b.multi_tile), "SW_BIN_MIN": b.lo,
             "SW_BIN_MAX": b.hi if not b.multi_tile else 1 << 30,
             "SW_BLOCK": THREADS_PER_BLOCK,
             "SW_MIN_BLOCKS": 1 if kind != FLOAT else (b.min_blocks or self.min_blocks),
             "SW_EXP_SCALE": int(kind == EXP or (kind == FLOAT and self.exponents(b)))}
        if kind == FLOAT and b.max_regs:
            d["SW_MAXNREG"] = b.max_regs
        if self.recompute_all and kind == FLOAT:
            d["SW_F32_MIN_ACCEPTED"] = "3e38f"  # every pair goes to the float64 recompute
        elif (kind == FLOAT and self._exp_recompute and not d["SW_EXP_SCALE"] and self.low_floor
              and b.hi > F32_LOW_FLOOR_ABOVE):
            # a cascade's float32 level takes what the low floor leaves (f32_floors)
            d["SW_F32_LOW_FLOOR"] = f"{F32_LOW_FLOOR:g}f"
            d["SW_F32_LOW_FLOOR_IQ"] = F32_LOW_FLOOR_IQ
            d["SW_F32_LOW_FLOOR_ABOVE"] = F32_LOW_FLOOR_ABOVE
        if d["SW_EXP_SCALE"]:
            own = (self.exp_bins.get(b.hi, {}) if kind == FLOAT and not b.multi_tile
                   and self.exp_bin_settings else {})
            d.update(exp_switches(own, self.exp_every if kind == FLOAT else 16,
                                  self.lane0_by_factor, self.exp_shift, self.code_window))
        d.update(extra_work_defines())   # HMMBENCH_SUBWARP_EXTRA_WORK: the gate's own check
        return d

    def kernel(self, b: Bin, kind: str = FLOAT):
        """(prepared function, dynamic shared bytes) for a bin or queue configuration and a
        kernel kind (``defines``), compiled on first use."""
        # the attributes defines() reads beside the bin (the A/B scripts set them on a backend)
        key = (b, kind, self.recompute_all, self.min_blocks, self.low_floor, self.exp_every,
               self.lane0_by_factor, self.code_window, self.exp_shift, self.exp_bin_settings,
               extra_work_pct())
        if key not in self._kernels:
            double = kind == DOUBLE
            mod = glue.compile(SOURCE, self.defines(b, kind))
            fn = mod.get_function("subwarp_forward")
            fn.prepare(KERNEL_SIGNATURE)  # prepared calls: less Python per launch
            groups = THREADS_PER_BLOCK // b.p
            smem = table_bytes(b.p, b.k, groups, double, self._table or double)
            if smem > 48 * 1024:
                drv = glue.driver()
                fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
            self._kernels[key] = (fn, smem)
        return self._kernels[key]

    def queue_plan(self, bins: Sequence[Bin]) -> tuple:
        """(queue configurations, queue of each bin, cascade per queue) for these bins."""
        cascading = self._exp_recompute and not self.recompute_all
        queue_bins, queue_of = recompute_queues(bins, self.double_k,
                                                self.exponents if cascading else None)
        cascade = cascades(bins, queue_bins, queue_of, self.exponents) if cascading \
            else (False,) * len(queue_bins)
        return queue_bins, queue_of, cascade

    def resident_grid(self, b: Bin, kind: str = FLOAT) -> int:
        """The blocks of a bin's kernel (of this kind) the whole GPU holds at once: a grid no
        larger runs in one wave, its groups looping over the bin's items."""
        fn, smem = self.kernel(b, kind)
        per_sm = glue.resident_blocks(self.device_attrs(), fn.num_regs, THREADS_PER_BLOCK,
                                      fn.shared_size_bytes + smem)
        return max(per_sm, 1) * self.sm_count

    def layout_kernels(self) -> dict:
        """The three on-GPU layout kernels (``subwarp_layout.cu``), prepared."""
        if "layout" not in self._kernels:
            mod = glue.compile(LAYOUT_SOURCE, {})
            fns = {}
            for name, sig in LAYOUT_SIGNATURES.items():
                fns[name] = mod.get_function(name)
                fns[name].prepare(sig)
            self._kernels["layout"] = fns
        return self._kernels["layout"]

    def _plan(self, pairs: PairSet, max_read_len: int) -> "Plan":
        """The :class:`Plan` for inputs of this size class and longest read, with its kernels
        compiled: worked out once, not on every call."""
        key = (size_tier(pairs, self._small_tiers), max_read_len, self.double_k,
               self.recompute_all)
        if key not in self._plans:
            bins = self.bins_for(pairs)
            queue_bins, queue_of, cascade = self.queue_plan(bins)
            for x, kind in plan_kernels(bins, queue_bins, cascade):  # compiled outside the
                self.kernel(x, kind)                                  # timed stages
            meta = np.array([len(bins), *(min(b.hi, 2**31 - 1) for b in bins), *queue_of],
                            np.int32)
            bin_lut = np.minimum(np.searchsorted([b.hi for b in bins],
                                                 np.arange(max_read_len + 1)), len(bins) - 1)
            self._plans[key] = Plan(bins, queue_bins, queue_of, meta, bin_lut, key,
                                    tuple(b.label for b in bins),
                                    tuple(q.label + (" f32-exp" if c else "")
                                          for q, c in zip(queue_bins, cascade)),
                                    cascade)
        return self._plans[key]

    def _kernel_call(self, res: DeviceResources, b: Bin, kind: str, items_ptr, range_ptr,
                     n_max: int, dev: dict, out_dev, fb_queue_ptr, fb_items_ptr,
                     max_hap_len: int, blocks: int) -> tuple:
        """(prepared function, grid, arguments, dynamic shared bytes) of one bin's kernel (of
        this kind) over items ``range_ptr[0] ..`` (count ``range_ptr[1]``, at most ``n_max``;
        both read on the device), grid-stride over ``blocks`` blocks; ``res``: the call's
        lane."""
        fn, smem = self.kernel(b, kind)
        # Multi-tile: a bounded grid, one boundary-row scratch per resident group.
        scratch, stride = res.scratch(b, kind == DOUBLE, max_hap_len)
        if b.multi_tile:
            blocks = min(blocks, self.sm_count * 16)
        ptr = np.uintp  # device addresses as the prepared signature's "P" (dev's are already)
        args = (ptr(int(items_ptr)), ptr(int(range_ptr)), np.int32(n_max),
                *_kernel_arrays(dev), ptr(int(out_dev)), ptr(int(fb_queue_ptr)),
                ptr(int(fb_items_ptr)), ptr(int(scratch)), np.int32(stride))
        return fn, (max(blocks, 1), 1), args, smem

    def _launch(self, res: DeviceResources, stream, *call) -> tuple:
        """:meth:`_kernel_call` (``call``: its arguments) launched on ``stream``; returns the
        (begin, end) events recorded right around the launch."""
        fn, grid, args, smem = self._kernel_call(res, *call)
        begin = res.mark(stream)
        fn.prepared_async_call(grid, (THREADS_PER_BLOCK, 1, 1), stream, *args, shared_size=smem)
        return begin, res.mark(stream)

    def chunk_bounds(self, pairs: PairSet) -> list[tuple[int, int]]:
        """Batch ranges of about ``call_chunk_pairs`` pairs each (``layout.chunk_bounds``)."""
        return chunk_bounds(pairs, self.call_chunk_pairs(pairs), self.ramp_chunks,
                            bool(self.join_tail))

    def call_chunk_pairs(self, pairs: PairSet) -> int:
        """The pairs per chunk of a call (:func:`.staging.grown_chunk_pairs`): every chunk costs
        a chain of launches (upload, layout, bins, recompute, joins), which short pairs do not
        amortize -- at L = 32 a chunk of 393k pairs is 0.3 ms of kernels."""
        return grown_chunk_pairs(self.chunk_pairs, pairs.n_pairs, pairs.cells)

    def run(self, pairs: PairSet) -> Execution:
        return self._submit_now(pairs).result()

    def submit(self, pairs: PairSet):
        """The call enqueued on a free lane (its own streams, buffers, events, pinned slots);
        ``result()`` waits for it. Calls submitted while others are outstanding overlap, or,
        with ``batch_calls``, run as one call when the oldest is collected."""
        if self._batches is not None:
            return self._batches.submit(pairs)
        return self._submit_now(pairs)

    def _submit_now(self, pairs: PairSet):
        max_read, max_hap, read_lengths = self._accept(pairs)
        info: dict = {"gpu": self.device_attrs()["name"]}
        if pairs.n_pairs == 0:
            return Finished(Execution(np.zeros(0), {"prep": 0.0, "h2d": 0.0, "kernel": 0.0,
                                                    "d2h": 0.0}, 0, info))
        if pairs.n_pairs >= 2**31 - 1:
            raise ValueError("cuda-subwarp indexes pairs with int32: split the input")
        handle = SubwarpHandle(self)
        handle.info = info
        lane = self._lanes.take(handle)
        try:
            # one chunk under small_below pairs: the small call's path (the bin profile needs
            # each launch's events)
            if pairs.n_pairs < self.small_below and not self.profile_bins \
                    and len(self.chunk_bounds(pairs)) == 1:
                call = SmallCall(self, pairs, lane, max_read, max_hap, read_lengths)
                call.enqueue()
            else:
                call = SubwarpCall(self, pairs, lane, max_read, max_hap)
                for c in range(call.n_chunks):
                    call.enqueue(c)
                call.copy_back()
        except BaseException:
            lane.busy = None
            raise
        handle.call = call
        return handle

    def _accept(self, pairs: PairSet) -> tuple:
        """(longest read, longest haplotype, read lengths) after check_accepts' checks, each
        length array computed once (the PairSet's properties recompute them on every use)."""
        ro, ho = pairs.read_offsets, pairs.hap_offsets
        rl = ro[1:] - ro[:-1]
        max_read, min_read = int(_MAX(rl, initial=0)), int(_MIN(rl, initial=1))
        if len(ho) <= 64:  # a region's few haplotypes: a Python loop costs less here
            h, max_hap, min_hap = ho.tolist(), 0, 1
            for a, b in zip(h, h[1:]):
                if b - a > max_hap:
                    max_hap = b - a
                if b - a < min_hap:
                    min_hap = b - a
        else:
            hl = ho[1:] - ho[:-1]
            max_hap, min_hap = int(_MAX(hl, initial=0)), int(_MIN(hl, initial=1))
        lim = self.limits
        if (min_read < 1 or min_hap < 1
                or (lim.max_read_length is not None and max_read > lim.max_read_length)
                or (lim.max_hap_length is not None and max_hap > lim.max_hap_length)):
            self.check_accepts(pairs)  # its reason, or an empty sequence no pair uses
        return max_read, max_hap, rl

    def close(self) -> None:
        self._lanes.close()
        self._kernels = {}
        self._plans = {}
