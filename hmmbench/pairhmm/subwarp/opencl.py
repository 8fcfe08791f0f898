"""``opencl-subwarp`` and ``-f64rescue``: the OpenCL twins of ``cuda-subwarp`` and
``cuda-subwarp-f64rescue`` (sub-warp groups, shuffles, bins).

Kernel: ``kernels_opencl/pairhmm/subwarp.cl``, OpenCL's spelling of the body it shares with the
CUDA twin (``kernels_common/pairhmm/subwarp.h``): a group of ``p`` work-items aligns one read to
every haplotype of its batch, ``k`` read rows per work-item in registers, the emission table in
local memory. Bins and their (p, k) come from the same choice as the CUDA twin's
(``layout.py``: ``choose_bins``); each bin runs the kernel
specialized for it with defines (PyOpenCL's program cache through ``DeviceKit``).

How a group hands its last row on (``params["path"]``), per device:
- NVIDIA's OpenCL: inline PTX ``shfl.sync.up`` under the group's lane mask, 128 work-items per
  work-group as in CUDA;
- devices with sub-group shuffles (Intel's CPU runtime): a group is one sub-group of exactly
  ``p`` lanes (``intel_reqd_sub_group_size``; the compiled size is checked, else the local path);
- elsewhere (PoCL): local memory with one barrier per step, one group per work-group.
Work-groups shrink (halving) where the emission table would not fit the device's local memory
(NVIDIA's OpenCL has 48 KiB where CUDA opts in to more).

A call (``opencl_call.py``) does the host and device work of the CUDA twin's call: the raw
arrays staged into one page-locked buffer (prep; by the staging threads and uploaded part by part
from ``POOL_FROM_PAIRS`` pairs), the work items laid out on the device (``subwarp_layout.cl``, the
twin of ``subwarp_layout.cu``), the bins side by side on in-order queues, the float64 rescue on
the device as CUDA's (the float32 kernels queue their pairs under the 1e-28 rule, each queue's
double kernel of ``rescue.recompute_queues`` follows), one copy back; the staging, result and
device buffers are kept across calls. On devices without fp64 (and for the exponent twins,
``SubwarpOpenCLExp``) the host applies ``cpu_reference.pairhmm.finish_float32``'s rule to the raw
float sums and recomputes the pairs below it in a second pass (or on the CPU without fp64).
What still differs from CUDA: a call is one pass (CUDA's calls past ``chunk_pairs`` pipeline
several chunks), no CUDA graphs for small calls.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from cpu_reference.pairhmm import forward_log10

from ...apis.opencl import EXCHANGE, PATH_NAMES, DeviceKit, cl_module
from ...backend import Backend, Execution
from ..intertask.opencl import OpenCLBackend
from ..model import LOG10_C32, LOG10_C64, PairSet
from .batched import CallBatches
from .extra_work import RecordsExtraWork
from .extra_work import defines as extra_work_defines
from .layout import (DEFAULT_BINS, DEFAULT_LONG, MAX_P, PER_PAIR_BELOW, SMALL_TIERS,
                     THREADS_PER_BLOCK, Bin, choose_bins, size_tier, sw_scaled, table_bytes,
                     tiers_param, tiers_table)
from .opencl_buffers import DeviceBuffers, Launch
from .opencl_call import DOUBLE_GROUPS_PER_CU, SMALL_CALL_PAIRS, device_pass
from .rescue import recompute_queues
from .staging import POOL_FROM_PAIRS

SOURCE = "pairhmm/subwarp.cl"
#: The kernel's global arrays after (items, range, n_max), as the layout names them: each passed
#: as its byte offset in the staged slot, after the slot (``SW_KERNEL_PARAMS`` in subwarp.cl).
KERNEL_ARRAYS = ("read_bases", "base_qual", "ins_qual", "del_qual", "gcp_qual", "read_off",
                 "hap_bases", "hap_off")
#: Multi-tile launches: at most this many work-groups per compute unit (grid-stride), as CUDA's
#: 16 blocks per SM; bounds the boundary-row scratch.
MT_GROUPS_PER_CU = 16
#: Plans (bins and recompute queues) kept per backend, by (size tier, longest read).
MAX_PLANS = 256


class SubwarpOpenCL(RecordsExtraWork, OpenCLBackend):
    """Float32 bins, then the float64 rescue of the pairs under 1e-28 (``OpenCLBackend.run``)."""

    source = SOURCE

    def footprint_kind(self, kit: DeviceKit) -> dict:
        # its staged bins have no model of their own yet: budgeted as the dataset-order layout
        # with a row-vector scratch per pair, which is more than the bins hold
        return {"sorted_rows": False, "scratch": True}

    def __init__(self, name: str, *, bins: Sequence[tuple] = DEFAULT_BINS,
                 long_config: Optional[tuple] = DEFAULT_LONG,
                 small_tiers: Optional[Sequence[tuple]] = SMALL_TIERS, exchange: str = "auto",
                 per_pair_below: int = PER_PAIR_BELOW, device: Optional[str] = None,
                 description: str = "", batch_calls: bool = False,
                 unoptimized_on_cpu: bool = False):
        super().__init__(name, "subwarp", device=device, bins=[list(b) for b in bins],
                         long_config=long_config, exchange=exchange,
                         small_tiers=tiers_param(small_tiers),
                         **({"batch_calls": True} if batch_calls else {}),
                         unoptimized_on_cpu=unoptimized_on_cpu)
        # calls in flight run as one call (batched.py), as cuda-subwarp-batched
        self._batches = CallBatches(self.run) if batch_calls else None
        self.description = description
        self._bins_table = tuple(tuple(b) for b in bins)
        self._small_tiers = tiers_table(small_tiers)
        self._long = long_config
        self._exchange = exchange   # "auto": the device's shuffle where it works, or "local"
        self.per_pair_below = per_pair_below
        self._paths: dict = {}
        self._bin_kernels: dict = {}  # (kit, bin, double, rescue) -> (kernel, work-group size)
        self._plans: dict = {}  # (size tier, longest read) -> (bins, recompute queues)
        self._buffers: Optional[DeviceBuffers] = None
        # from this many bytes of sequences a small call uploads them from the PairSet's arrays
        # (as CUDA's; None: never -- on the H200 1m merged took 0.88 ms so, 0.72 staged into
        # page-locked memory and uploaded in one copy, docs/subwarp-host-path.md)
        self.pageable_from_bytes: Optional[int] = None
        # from this many bytes the staging threads stage a small call in pieces, one upload
        # (None: never; on the H200's host 0.9 ms for 1m merged, docs/subwarp-host-path.md)
        self.pooled_from_bytes: Optional[int] = None
        # a small call's integers up and its layout queued before its sequences are staged and
        # uploaded (False: every array staged, then one upload and the layout: one command less)
        self.sequences_after_layout = False
        # from this many pairs the staging threads stage a call, uploaded part by part
        self.pool_from_pairs = POOL_FROM_PAIRS
        self.side_queues = True   # bins after the first on queues of their own
        # bins enqueued longest reads first, every bin before any chained recompute kernel (as
        # CUDA's order; False: shortest first, each bin's recompute right after it)
        self.longest_bins_first = True
        # a small call's buffers, queues and launch arguments kept per plan and call shape, as
        # CUDA's SmallLaunches (False: made anew every call)
        self.keep_launches = True
        # below this many pairs a call launches as CUDA's small call (opencl_call.py)
        self.small_call_pairs = SMALL_CALL_PAIRS
        self.rescue_on_device = True  # the float64 rescue queued on the device (needs fp64)

    def submit(self, pairs: PairSet):
        if self._batches is not None:
            return self._batches.submit(pairs)
        return super().submit(pairs)

    # --- device paths -------------------------------------------------------------------------
    def path(self, kit: DeviceKit, p: int) -> str:
        """The exchange of a group of ``p``: the device's shuffle kind, or 'local'."""
        if self._exchange == "local" or kit.shuffle is None:
            return "local"
        if kit.shuffle == "ptx":
            return "ptx"
        if p not in self._paths:  # a probe build: is a group exactly one sub-group?
            if kit.required_sub_group:
                # the required size fixes the compiled one whatever the body (or fails the
                # build): the kernel head and a shuffle say it, shared by every backend of kit
                defines = {"SW_SUBGROUP_PROBE": 1, "SW_P": p, "SW_BLOCK": THREADS_PER_BLOCK,
                           "EXCHANGE": EXCHANGE[kit.shuffle]}
            else:  # the compiler picks a size per kernel: the body's own build says it
                defines = self._defines(Bin(1, p * 4, p, 4), kit.shuffle, THREADS_PER_BLOCK,
                                        False)
            try:
                kernel = kit.kernel(SOURCE, "subwarp_forward", defines)
                size = kernel.get_sub_group_info(
                    kit.device, cl_module().kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                    [THREADS_PER_BLOCK])
                self._paths[p] = kit.shuffle if int(size) == p else "local"
            except Exception:  # noqa: BLE001 - a failed build or query: no shuffle path
                self._paths[p] = "local"
        return self._paths[p]

    def device_params(self, kit: DeviceKit) -> dict:
        paths = {self.path(kit, p) for p in (4, 8, 16, 32)}
        return {"path": " + ".join(PATH_NAMES[x] for x in sorted(paths))}

    def block(self, kit: DeviceKit, b: Bin, path: str, double: bool) -> int:
        """Work-items per work-group: one group on the local path; else 128, halved while the
        emission table exceeds the device's local memory."""
        if path == "local":
            return b.p
        block = THREADS_PER_BLOCK
        while block > b.p and table_bytes(b.p, b.k, block // b.p, double) > \
                kit.device.local_mem_size:
            block //= 2
        return block

    #: Power-of-two exponents per thread (SW_EXP_SCALE; SubwarpOpenCLExp)
    exp_scale = False

    def _defines(self, b: Bin, path: str, block: int, double: bool, rescue: bool = False) -> dict:
        return {"SW_DEVICE_RESCUE": int(rescue), "SW_P": b.p, "SW_K": b.k, "SW_DOUBLE": int(double), "SW_EMIS_TABLE": 1,
                "SW_SCALED": sw_scaled("5op", double), "SW_MULTI_TILE": int(b.multi_tile), "SW_BIN_MIN": b.lo,
                "SW_BIN_MAX": b.hi if not b.multi_tile else 1 << 30, "SW_BLOCK": block,
                "EXCHANGE": EXCHANGE[path], "SW_EXP_SCALE": int(self.exp_scale and not double),
                **extra_work_defines()}

    # --- input --------------------------------------------------------------------------------
    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        if pairs.n_pairs >= 2**31 - 1:
            return "pairs are indexed with int32: split the input"
        if self._long is None and pairs.n_pairs and \
                pairs.max_read_length > self._bins_table[-1][0]:
            return f"reads longer than {self._bins_table[-1][0]} need the multi-tile bin"
        return super().refuse_reason(pairs)

    def bins_for(self, pairs: PairSet) -> list[Bin]:
        return choose_bins(pairs, self._bins_table, self._long, self._small_tiers)

    # --- one call on the device (opencl_call.py) ---------------------------------------------
    def device_rescue(self, kit: DeviceKit) -> bool:
        """Whether the float64 rescue runs on the device, queued by the float32 kernels (as the
        CUDA twin's): with fp64, without exponents."""
        return self.rescue_on_device and kit.fp64 and not self.exp_scale

    def _buffers_of(self, kit: DeviceKit) -> DeviceBuffers:
        if self._buffers is None or self._buffers.kit is not kit:
            if self._buffers is not None:
                self._buffers.close()
            self._buffers = DeviceBuffers(kit)
        return self._buffers

    def _accept(self, pairs: PairSet) -> tuple:
        """(longest read, longest haplotype, read lengths) after check_accepts' checks, as the
        CUDA twin's: from the read and haplotype lengths alone (no array per pair) unless one
        is empty or over a limit, where check_accepts gives its reason (or passes: an empty
        sequence no pair uses)."""
        ro, ho = pairs.read_offsets, pairs.hap_offsets
        rl, hl = ro[1:] - ro[:-1], ho[1:] - ho[:-1]
        max_read, min_read = int(rl.max(initial=0)), int(rl.min(initial=1))
        max_hap, min_hap = int(hl.max(initial=0)), int(hl.min(initial=1))
        lim = self.limits
        if (min_read < 1 or min_hap < 1 or pairs.n_pairs >= 2**31 - 1
                or len(pairs.read_bases) * 8 >= 2**31 or len(pairs.hap_bases) * 8 >= 2**31
                or (self._long is None and max_read > self._bins_table[-1][0])
                or (lim.max_read_length is not None and max_read > lim.max_read_length)
                or (lim.max_hap_length is not None and max_hap > lim.max_hap_length)):
            self.check_accepts(pairs)
        return max_read, max(max_hap, 1), rl

    def run(self, pairs: PairSet) -> Execution:
        kit = self.kit()
        if not self.device_rescue(kit):
            return super().run(pairs)
        lengths = self._accept(pairs)
        timing = {"prep": 0.0, "h2d": 0.0, "kernel": 0.0, "d2h": 0.0}
        info = {"device": kit.label, "path": self.params["path"]}
        if pairs.n_pairs == 0:
            return Execution(np.zeros(0), timing, 0, info)
        key = (size_tier(pairs, self._small_tiers), lengths[0])
        plan = self._plans.get(key)
        if plan is None:  # bins_for's choice: it depends on these two alone
            if len(self._plans) >= MAX_PLANS:
                self._plans.clear()
            bins = self.bins_for(pairs)
            plan = self._plans[key] = (bins, recompute_queues(bins))
        log10, per_bin, stats = device_pass(self, kit, self._buffers_of(kit), pairs, plan[0],
                                            False, timing, rescue=plan[1], lengths=lengths)
        n_redo = stats.pop("recomputed")
        info.update(bins=per_bin, fallback_on="device (float64)", **stats)
        return Execution(log10, timing, n_redo, info)

    def _sums(self, pairs: PairSet, real_dtype, timing: dict, hap_floor: int = 0) -> np.ndarray:
        """Raw forward sums in ``real_dtype`` (dataset order): the float32 bins, or for the
        float64 rescue the double configurations their reads feed (``recompute_queues``: each
        a bin of its own in the device's layout); adds to ``timing``. ``hap_floor`` (the
        wavefront's program per haplotype stride) is unused: a bin's program is the same for
        every haplotype length."""
        kit = self.kit()
        bins = self.bins_for(pairs)
        double = np.dtype(real_dtype) == np.float64
        if double:
            bins = recompute_queues(bins)[0]
        sums, per_bin, _ = device_pass(self, kit, self._buffers_of(kit), pairs, bins, double,
                                       timing)
        if not double:
            self.last_layout_meta = {"bins": per_bin}
        return sums

    def bin_kernel(self, kit, b: Bin, double: bool, rescue: bool = False) -> tuple:
        """(:class:`Launch`, work-group size) of bin b, built on first use (``device_pass`` asks
        for every bin's before its first enqueue: no build falls between two timed events); the
        kernel object is this backend's own (its arguments stay set between calls)."""
        key = (kit, b, double, rescue)
        got = self._bin_kernels.get(key)
        if got is None:
            path = self.path(kit, b.p)
            block = self.block(kit, b, path, double)
            defines = self._defines(b, path, block, double, rescue)
            prg = kit.program(SOURCE, defines, unoptimized=self.unoptimized_on_cpu)
            got = self._bin_kernels[key] = (
                Launch(cl_module().Kernel(prg, "subwarp_forward")), block)
        return got

    def _bin_launch(self, kit, b: Bin, double: bool, items, arrays: tuple, ranges, range_at,
                    n_items: int, max_hap: int, results: tuple, rescue: bool,
                    recompute: bool = False, cap: Optional[int] = None,
                    cus: Optional[int] = None) -> tuple:
        """Bin b's launch, (:class:`Launch`, global size, local size, arguments), over the items
        that ``ranges`` holds at int offset ``range_at`` (on the device: [first, count]), at
        most ``n_items``; ``arrays``: the slot and each ``KERNEL_ARRAYS`` array's byte offset in
        it; ``results``: the kernel's result arguments (the sums, or with the rescue the results
        buffer and their offset, the queue heads and this bin's head offset, the queued items).
        A recompute queue's grid is capped as CUDA's (the queue's count is known on the device
        only), any grid at ``cap`` work-items; ``cus``: the device's compute units."""
        kernel, block = self.bin_kernel(kit, b, double, rescue)
        groups = block // b.p
        blocks = -(-n_items // groups)
        if cap is not None:
            blocks = min(blocks, max(cap // block, 1))
        if cus is None:  # the device's compute units (device_pass passes them, read once)
            cus = kit.device.max_compute_units
        if recompute:
            blocks = min(blocks, cus * DOUBLE_GROUPS_PER_CU)
        stride, quad = 0, 32 if double else 16
        if b.multi_tile:  # a bounded grid-stride grid: one boundary-row scratch per group
            blocks = min(blocks, cus * MT_GROUPS_PER_CU)
            stride = max_hap + 8 + MAX_P  # steps rounded up to 4, + 4 read ahead
        # one scratch per configuration: launches on other queues may run at the same time
        scratch = kit.scratch(f"subwarp_scratch{quad}_{b.label}" if stride else "subwarp_none",
                              max(blocks * groups * stride * quad, 16))
        if not rescue:
            results = (results[0],)
        return kernel, (max(blocks, 1) * block,), (block,), \
            (items, ranges, range_at, np.int32(n_items), *arrays, *results, scratch,
             np.int32(stride))

    def close(self) -> None:
        self._bin_kernels.clear()
        self._plans.clear()
        if self._buffers is not None:
            self._buffers.close()
        self._buffers = None
        super().close()


class SubwarpOpenCLExp(SubwarpOpenCL):
    """The twin of cuda-subwarp-exp-all (cuda-subwarp before the queue cascade; cuda-subwarp now keeps
    the exponents to reads over 256 and cascades its device-side queues, which this host-side
    rescue has no counterpart of): float32 with per-thread power-of-two exponents (the shared
    body's SW_EXP_SCALE, sub-group exchange paths only). The kernel stores log10 of each pair's
    sum without C, NaN for the pairs its exponents could not hold; those alone go through the
    float64 kernels (or the CPU reference without fp64)."""

    exp_scale = True

    def device_reason(self, kit: DeviceKit) -> Optional[str]:
        if kit.shuffle in (None, "ptx") or self._exchange == "local":
            return "exponents need sub-group shuffles (the local and PTX paths have none)"
        return super().device_reason(kit)

    def finish(self, pairs: PairSet, got: np.ndarray, kit: DeviceKit, timing: dict,
               info: dict):
        log10 = got.astype(np.float64) - LOG10_C32
        redo = np.flatnonzero(~np.isfinite(got))
        if len(redo):
            subset = pairs.subset_pairs(redo)
            with np.errstate(divide="ignore"):
                if kit.fp64:
                    log10[redo] = np.log10(self._sums(subset, np.float64, timing)) - LOG10_C64
                else:
                    log10[redo] = forward_log10(subset, "float64")
        return log10, redo


def backends(device: Optional[str] = None) -> list[Backend]:
    # Named as their CUDA twins: the exponents need sub-group shuffles (not on NVIDIA's OpenCL,
    # where -f64rescue is the twin that runs)
    return [SubwarpOpenCLExp("opencl-subwarp", device=device,
                             description="auto bins, float32 with per-thread power-of-two "
                                         "exponents in every bin, as cuda-subwarp-exp-all "
                                         "(sub-group paths)"),
            SubwarpOpenCLExp("opencl-subwarp-batched", device=device, batch_calls=True,
                             description="as opencl-subwarp; calls in flight run as one call, "
                                         "as cuda-subwarp-batched"),
            SubwarpOpenCL("opencl-subwarp-f64rescue", device=device,
                          description="auto (p,k) per length bin, float32 pairs under 1e-28 "
                                      "recomputed in float64, as cuda-subwarp-f64rescue")]
