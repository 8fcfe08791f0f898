"""OpenCL Pair-HMM backends through PyOpenCL: the CUDA kernel families, same algorithms, other API.

Families (kernels in ``kernels_opencl/``, specialized with ``-D`` defines, built and cached per
device at run time):

- ``opencl-inter-naive``, ``opencl-inter-tile{2,4,6,8}``: one work-item per pair (inter_task.cl),
  pairs in dataset order; ``...-sorted``: the same kernels on the sorted, lane-interleaved layout.
- ``opencl-intra-naive``, ``opencl-intra-tile2``: one work-group per pair, anti-diagonal
  wavefront, local-memory exchange with barriers, several passes over long reads (wavefront.cl).
- ``opencl-warp``: one sub-group per pair exchanging through shuffles (``cl_khr_subgroup_shuffle_
  relative``, ``cl_intel_subgroups``, or inline PTX ``shfl.sync`` on NVIDIA's OpenCL); where none
  exists, one 32-wide work-group per pair with a local-memory exchange. ``Execution.info["path"]``
  and ``params["path"]`` say which ran. ``opencl-multiwarp``: several such sub-groups per
  work-group, each on its own pair (shuffle devices only).

Device: ``HMMBENCH_OPENCL_DEVICE=substring`` (matched against "platform / device") or the
``device=`` argument of :func:`backends`; by default the first GPU, else the first device with
sub-group shuffles, else the first device.
Precision: float32 with C = 2^120; pairs whose sum is below 1e-28 are recomputed in float64 on the
device when it has fp64, else by the CPU reference (``cpu_reference.pairhmm.finish_float32``).
Timing: OpenCL profiling events (h2d = uploads, kernel = kernel launches, d2h = downloads);
prep = the host layout step.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from cpu_reference.pairhmm import finish_float32

from ...apis.opencl import EXCHANGE, PATH_NAMES, DeviceKit, cl_module, device_kit
from ...apis.opencl import devices  # noqa: F401 - `hmmbench list` shows each backend module's devices
from ...backend import Backend, Execution
from ...memory import MemoryNeed
from ...registry import BackendFamily
from ..model import PairSet
from .footprint import device_need
from .layout import SortedGroups, in_pair_order, scratch_blocks
from .variants import inter_task_alias

INTER_TILES = (2, 4, 6, 8)
#: GPU scratch columns per load/store for each inter-task tile, as the CUDA twins' INTER_VEC: 4 was
#: fastest for every tile on NVIDIA's OpenCL (H100, 1m merged and 128 x 256 x 10^6, once the last
#: strip alone sums; results/README.md). CPUs use 1: there work-items are the SIMD lanes.
INTER_VEC_GPU = {1: 4, 2: 4, 4: 4, 6: 4, 8: 4}
#: GPU work-group size of the inter-task kernels; launches too small to give every compute unit
#: two such groups use 32 (one warp) to reach more of them, as the CUDA twins do.
INTER_GROUP_GPU, INTER_GROUP_SMALL = 128, 32
#: Layout group width on GPUs: one warp, so both APIs place pairs identically.
GPU_LANES = 32


# ------------------------------------------------------------------------------------------------
# Host layouts (vectorized NumPy)
# ------------------------------------------------------------------------------------------------
def read_codes(pairs: PairSet) -> np.ndarray:
    """One uint32 per read position: base | bq << 3 | iq << 10 | dq << 17 | gcp << 24."""
    u = np.uint32
    return (pairs.read_bases.astype(u) | (pairs.base_qual.astype(u) << u(3))
            | (pairs.ins_qual.astype(u) << u(10)) | (pairs.del_qual.astype(u) << u(17))
            | (pairs.gcp_qual.astype(u) << u(24)))


@dataclass
class Layout:
    """Device-ready arrays; ``order[slot]`` = pair of each result slot (-1: padding)."""
    arrays: dict
    n_slots: int
    order: Optional[np.ndarray] = None
    loop_n_max: int = 0
    meta: dict = field(default_factory=dict)


def dataset_order_layout(pairs: PairSet) -> Layout:
    """Pairs in dataset order; reads and haplotypes reached through per-pair offsets."""
    return Layout(arrays={
        "read_codes": read_codes(pairs),
        "hap_bases": pairs.hap_bases,
        "pair_m": pairs.pair_read_lengths.astype(np.int32),
        "pair_n": pairs.pair_hap_lengths.astype(np.int32),
        "read_start": pairs.read_offsets[pairs.pair_read].astype(np.int32),
        "hap_start": pairs.hap_offsets[pairs.pair_hap].astype(np.int32),
    }, n_slots=pairs.n_pairs, loop_n_max=pairs.max_hap_length)


def sorted_interleaved_layout(pairs: PairSet, lanes: int) -> Layout:
    """Ren et al. 2018's data preparation, placed exactly as the CUDA twin's
    (``layouts.SortedGroups``): packed read codes one uint per lane and row, haplotype bases four
    per lane-word; ``read_start`` / ``hap_start`` hold each group's first row / word."""
    groups = SortedGroups.build(pairs, lanes)
    (reads_il,) = groups.read_rows(read_codes(pairs))
    return Layout(arrays={
        "read_codes": reads_il, "hap_data": groups.hap_words(),
        "pair_m": groups.slot_m, "pair_n": groups.slot_n,
        "read_start": groups.group_row.astype(np.int32),
        "hap_start": groups.group_hap4.astype(np.int32),
    }, n_slots=groups.n_slots, order=groups.slot_pair)


# ------------------------------------------------------------------------------------------------
# Backends
# ------------------------------------------------------------------------------------------------
class _Events:
    """Profiling events per stage; seconds from their start/end stamps."""

    def __init__(self):
        self.by_stage = {"h2d": [], "kernel": [], "d2h": []}

    def add(self, stage: str, event):
        self.by_stage[stage].append(event)
        return event

    def seconds(self) -> dict:
        return {s: sum((e.profile.end - e.profile.start) for e in evs) * 1e-9
                for s, evs in self.by_stage.items()}


class OpenCLBackend(Backend):
    """prep (host layout) -> uploads -> kernel -> download -> float32 fallback."""

    api = "opencl"
    precision = "float32"
    source = ""

    def __init__(self, name: str, family: str, *, device: Optional[str] = None,
                 unoptimized_on_cpu: bool = False, **params):
        super().__init__(**params, **({"unoptimized_on_cpu": True} if unoptimized_on_cpu else {}))
        self.name, self.family = name, family
        # on CPU devices, programs built without the optimizer (OPT_DISABLE): the tests'
        # setting, where the builds cost more than the runs; GPUs build as always
        self.unoptimized_on_cpu = unoptimized_on_cpu
        self._device_spec = device
        self._kit: Optional[DeviceKit] = None
        self.last_layout_meta: dict = {}

    # --- device -------------------------------------------------------------------------------
    def kit(self) -> DeviceKit:
        if self._kit is None:
            self._kit = device_kit(self._device_spec)
            self.params["device"] = self._kit.label
            self.params.update(self.device_params(self._kit))
        return self._kit

    def device_params(self, kit: DeviceKit) -> dict:
        """Parameters that depend on the device (work-group size, code path)."""
        return {}

    def unavailable_reason(self) -> Optional[str]:
        return self._reason(self.kit)

    def listing_reason(self) -> Optional[str]:
        """unavailable_reason's answer without device_params (their probe builds of the real
        kernels give the parameters a run records, not whether it can run): `hmmbench list`."""
        return self._reason(lambda: self._kit or device_kit(self._device_spec))

    def _reason(self, open_kit) -> Optional[str]:
        try:
            kit = open_kit()
        except ImportError:
            return "pyopencl not installed"
        except Exception as exc:  # noqa: BLE001 - any driver failure makes it unavailable
            return f"no usable OpenCL device: {exc}"
        return self.device_reason(kit)

    def device_reason(self, kit: DeviceKit) -> Optional[str]:
        return None

    def device_name(self) -> str:
        return self.kit().label

    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        if pairs.n_pairs:
            if int(pairs.pair_read_lengths.min()) < 1 or int(pairs.pair_hap_lengths.min()) < 1:
                return "a pair has an empty read or haplotype (the model's likelihood is undefined)"
            if len(pairs.read_bases) * 8 >= 2**31 or len(pairs.hap_bases) * 8 >= 2**31:
                return "too many positions for 32-bit indexing in one launch; use smaller chunks"
        return super().refuse_reason(pairs)

    # --- memory ------------------------------------------------------------------------------
    def memory_need(self, shape) -> MemoryNeed:
        """Layout, buffers (host memory on a CPU device) and the float64 recompute
        (:mod:`.footprint`); the device is opened to tell a CPU from a GPU."""
        try:
            kit = self.kit()
        except Exception:  # noqa: BLE001 - no device: the default, and the cell says why
            return super().memory_need(shape)
        return device_need(shape, cpu_device=not kit.is_gpu, **self.footprint_kind(kit))

    def footprint_kind(self, kit: DeviceKit) -> dict:
        """How :func:`.footprint.footprint` sees this family's layout."""
        return {"sorted_rows": False, "scratch": False}

    def device_memory_free(self) -> Optional[int]:
        """A GPU's global memory (OpenCL has no portable query of the free part); None on a
        CPU device, whose buffers are host memory."""
        kit = self.kit()
        return int(kit.device.global_mem_size) if kit.is_gpu else None

    # --- what a family supplies ---------------------------------------------------------------
    def layout(self, pairs: PairSet) -> Layout:
        raise NotImplementedError

    def launch(self, kit: DeviceKit, lay: Layout, dev: dict, sums, real_dtype, events: _Events):
        raise NotImplementedError

    # --- common flow --------------------------------------------------------------------------
    def _sums(self, pairs: PairSet, real_dtype, timing: dict, hap_floor: int = 0) -> np.ndarray:
        """Raw forward sums (dataset order) in ``real_dtype``; adds to ``timing``. ``hap_floor``:
        lay the pairs out as if their longest haplotype were at least that long."""
        cl = cl_module()
        kit = self.kit()
        t0 = time.perf_counter()
        lay = self.layout(pairs)
        lay.loop_n_max = max(lay.loop_n_max, hap_floor)
        timing["prep"] += time.perf_counter() - t0
        self.last_layout_meta = dict(lay.meta)
        events = _Events()
        q, mf = kit.queue, cl.mem_flags
        dev = {}
        for key, arr in lay.arrays.items():
            arr = np.ascontiguousarray(arr)
            dev[key] = buf = cl.Buffer(kit.context, mf.READ_ONLY, max(arr.nbytes, 16))
            if arr.nbytes:
                events.add("h2d", cl.enqueue_copy(q, buf, arr, is_blocking=False))
        itemsize = np.dtype(real_dtype).itemsize
        sums_dev = kit.scratch(f"sums{itemsize}", lay.n_slots * itemsize)
        self.launch(kit, lay, dev, sums_dev, real_dtype, events)
        sums = np.empty(lay.n_slots, real_dtype)
        events.add("d2h", cl.enqueue_copy(q, sums, sums_dev, is_blocking=False))
        events.by_stage["d2h"][-1].wait()
        for stage, sec in events.seconds().items():
            timing[stage] += sec
        for buf in dev.values():
            buf.release()
        return in_pair_order(sums, lay.order, pairs.n_pairs)

    def run(self, pairs: PairSet) -> Execution:
        self.check_accepts(pairs)
        kit = self.kit()
        timing = {"prep": 0.0, "h2d": 0.0, "kernel": 0.0, "d2h": 0.0}
        info = {"device": kit.label}
        info.update({k: v for k, v in self.params.items() if k == "path"})
        if pairs.n_pairs == 0:
            return Execution(np.zeros(0), timing, 0, info)
        sums = self._sums(pairs, np.float32, timing)
        info.update(self.last_layout_meta)  # e.g. work-group size, padded cells
        log10, redo = self.finish(pairs, sums, kit, timing, info)
        return Execution(np.asarray(log10, np.float64), timing, int(len(redo)), info)

    def finish(self, pairs: PairSet, sums: np.ndarray, kit: DeviceKit, timing: dict,
               info: dict):
        """The float32 kernels' output -> (log10, pairs recomputed in float64): the 1e-28 rule
        with the device's double build, or the CPU reference without fp64."""
        if kit.fp64:
            before = dict(timing)
            # A CPU device lays every piece of the recompute out for the call's longest
            # haplotype, so that the pieces share one float64 program (there a build costs more
            # than the piece it runs); a GPU keeps each piece's own.
            floor = 0 if kit.is_gpu else pairs.max_hap_length
            log10, redo = finish_float32(
                pairs, sums, lambda subset: self._sums(subset, np.float64, timing, floor))
            if len(redo):
                info["fallback_seconds"] = {k: timing[k] - before[k] for k in timing}
            info["fallback_on"] = "device (float64)"
        else:
            t0 = time.perf_counter()
            log10, redo = finish_float32(pairs, sums)
            # the CPU recompute stands in for the device's float64 pass
            timing["kernel"] += time.perf_counter() - t0 if len(redo) else 0.0
            info["fallback_on"] = "CPU reference (device has no fp64)"
        return log10, redo

    def close(self) -> None:
        self._kit = None


class InterTask(OpenCLBackend):
    """One work-item per pair; strips of ``tile`` rows; optional sorted, interleaved layout."""

    source = "pairhmm/inter_task.cl"
    #: Tunable parameters (``hmmbench run -b opencl-inter --axis tile=2,4``); local 0 = chosen
    #: per device and launch size (see local_size).
    axes = {"tile": (1,) + INTER_TILES, "sorted": (False, True), "local": (0, 16, 32, 64, 128, 256)}
    defaults = {"tile": 8, "sorted": False, "local": 0}

    def __init__(self, name: str, *, tile: int, interleaved: bool, local_size: Optional[int] = None,
                 vec: Optional[int] = None, device: Optional[str] = None,
                 unoptimized_on_cpu: bool = False):
        super().__init__(name, "inter-task", device=device, tile=tile, sorted=interleaved,
                         unoptimized_on_cpu=unoptimized_on_cpu)
        self.tile, self.interleaved = tile, interleaved
        self._local_size, self._vec = local_size, vec

    def device_params(self, kit: DeviceKit) -> dict:
        return {"vec": self.vec(kit)}

    def vec(self, kit: DeviceKit) -> int:
        if self._vec:
            return self._vec
        return INTER_VEC_GPU[self.tile] if kit.is_gpu else 1

    def local_size(self, kit: DeviceKit, n_pairs: int) -> int:
        if self._local_size:
            return self._local_size
        if not kit.is_gpu:
            return 16  # AVX-512 width: Intel's runtime maps 16 work-items onto one vector
        big = n_pairs >= 2 * INTER_GROUP_GPU * kit.device.max_compute_units
        return INTER_GROUP_GPU if big else INTER_GROUP_SMALL

    def footprint_kind(self, kit: DeviceKit) -> dict:
        return {"sorted_rows": self.interleaved, "scratch": True, "vec": self.vec(kit)}

    def lanes(self, kit: DeviceKit, local: int) -> int:
        """Slots per layout group: a warp on GPUs (as the CUDA twins), the work-group on CPUs."""
        return GPU_LANES if kit.is_gpu and local % GPU_LANES == 0 else local

    def layout(self, pairs: PairSet) -> Layout:
        kit = self.kit()
        local = self.local_size(kit, pairs.n_pairs)
        lanes, vec = self.lanes(kit, local), self.vec(kit)
        lay = (sorted_interleaved_layout(pairs, lanes) if self.interleaved
               else dataset_order_layout(pairs))
        group_block, n_blocks = scratch_blocks(lay.arrays["pair_n"], lanes, vec)
        lay.arrays["group_block"] = group_block.astype(np.int32)
        lay.meta.update(local_size=local, lanes=lanes, scratch_values=n_blocks * 3 * lanes * vec)
        largest = max(lay.meta["scratch_values"], *(a.size for a in lay.arrays.values()))
        if largest >= 2**31:
            raise ValueError("inter-task arrays exceed 32-bit indexing; use smaller chunks")
        return lay

    def launch(self, kit, lay, dev, sums, real_dtype, events):
        local, vec = lay.meta["local_size"], self.vec(kit)
        defines = {"TILE": self.tile, "INTERLEAVED": int(self.interleaved),
                   "LANES": lay.meta["lanes"], "LOCAL_SIZE": local, "VEC": vec,
                   "USE_DOUBLE": int(np.dtype(real_dtype) == np.float64)}
        if not kit.is_gpu:
            defines["FORCE_INLINE"] = 1     # see inter_task.cl: CPU compilers may call strip()
        kernel = kit.kernel(self.source, "inter_task", defines, unoptimized=self.unoptimized_on_cpu)
        itemsize = np.dtype(real_dtype).itemsize
        scratch = kit.scratch(f"inter_scratch{itemsize}", lay.meta["scratch_values"] * itemsize)
        haps = dev["hap_data"] if self.interleaved else dev["hap_bases"]
        events.add("kernel", kernel(
            kit.queue, (-(-lay.n_slots // local) * local,), (local,),
            dev["read_codes"], haps, dev["pair_m"], dev["pair_n"], dev["read_start"],
            dev["hap_start"], dev["group_block"], kit.err_table(real_dtype), scratch, sums,
            np.int32(lay.n_slots)))


class Wavefront(OpenCLBackend):
    """A team of work-items per pair: intra-task (local memory) or warp (sub-group shuffles)."""

    source = "pairhmm/wavefront.cl"

    def __init__(self, name: str, family: str, *, tile: int = 1, threads: Optional[int] = None,
                 exchange: str = "local", pairs_per_group: int = 1, device: Optional[str] = None,
                 unoptimized_on_cpu: bool = False):
        super().__init__(name, family, device=device, tile=tile,
                         unoptimized_on_cpu=unoptimized_on_cpu)
        self.tile, self._threads, self._exchange = tile, threads, exchange
        self._pairs_per_group = pairs_per_group

    def path(self, kit: DeviceKit) -> str:
        """'local', or the device's shuffle kind for the warp families."""
        if self._exchange == "local":
            return "local"
        return kit.working_shuffle(self._pairs_per_group, self.unoptimized_on_cpu) or "local"

    def threads(self, kit: DeviceKit) -> int:
        if self._threads:
            return self._threads
        if self._exchange != "local":
            return kit.warp_width
        return 128 // self.tile if kit.is_gpu else 32  # GPU: as the CUDA twins (128, 64 x 2)

    def pairs_per_group(self, kit: DeviceKit) -> int:
        return self._pairs_per_group if self.path(kit) != "local" else 1

    def device_params(self, kit: DeviceKit) -> dict:
        p = {"threads": self.threads(kit), "pairs_per_group": self.pairs_per_group(kit)}
        if self._exchange != "local":
            p["path"] = PATH_NAMES[self.path(kit)]
        return p

    def device_reason(self, kit: DeviceKit) -> Optional[str]:
        if self._pairs_per_group > 1 and self.path(kit) == "local":
            return "needs sub-group shuffles (several pairs per work-group), which this device lacks"
        return None

    def layout(self, pairs: PairSet) -> Layout:
        return dataset_order_layout(pairs)

    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        reason = super().refuse_reason(pairs)
        if reason or not pairs.n_pairs:
            return reason
        kit = self.kit()
        need = self._local_bytes(pairs.max_hap_length, 4, self.pairs_per_group(kit), kit)
        if kit.fp64:  # the float64 fallback runs one pair per work-group
            need = max(need, self._local_bytes(pairs.max_hap_length, 8, 1, kit))
        have = kit.device.local_mem_size
        if need > have:
            return (f"haplotype length {pairs.max_hap_length} needs {need} bytes of local memory "
                    f"per work-group; the device has {have}")
        return None

    @staticmethod
    def hap_stride(max_hap: int) -> int:
        return max(64, -(-max_hap // 64) * 64)  # rounded so chunks share compiled programs

    def _local_bytes(self, max_hap: int, itemsize: int, teams: int, kit: DeviceKit) -> int:
        stride = self.hap_stride(max_hap)
        per_team = stride + 2 * (stride + 1) * 3 * itemsize
        return per_team * teams + 2 * 3 * self.threads(kit) * itemsize

    def launch(self, kit, lay, dev, sums, real_dtype, events):
        path = self.path(kit)
        threads, ppg = self.threads(kit), self.pairs_per_group(kit)
        if np.dtype(real_dtype) == np.float64:
            ppg = 1  # the fallback's few pairs; keeps float64 local memory within limits
        defines = {"TILE": self.tile, "THREADS": threads, "PAIRS_PER_GROUP": ppg,
                   "EXCHANGE": EXCHANGE[path], "HAP_STRIDE": self.hap_stride(lay.loop_n_max),
                   "USE_DOUBLE": int(np.dtype(real_dtype) == np.float64)}
        kernel = kit.kernel(self.source, "wavefront", defines, unoptimized=self.unoptimized_on_cpu)
        groups = -(-lay.n_slots // ppg)
        events.add("kernel", kernel(
            kit.queue, (groups * threads * ppg,), (threads * ppg,),
            dev["read_codes"], dev["hap_bases"], dev["pair_m"], dev["pair_n"],
            dev["read_start"], dev["hap_start"], kit.err_table(real_dtype), sums,
            np.int32(lay.n_slots)))


def families(device: Optional[str] = None,
             unoptimized_on_cpu: bool = False) -> list[BackendFamily]:
    """The backends with parameter axes (``hmmbench run -b opencl-inter --axis tile=2,4``)."""
    def inter(name: str, tile: int, sorted: bool, local: int) -> InterTask:
        return InterTask(name, tile=tile, interleaved=sorted, local_size=local or None,
                         device=device, unoptimized_on_cpu=unoptimized_on_cpu)

    return [BackendFamily(
        "opencl-inter", InterTask.axes, InterTask.defaults, inter,
        alias=lambda p: inter_task_alias(p, "opencl"),
        presets=tuple({"tile": t, "sorted": s} for t in (1,) + INTER_TILES for s in (False, True)))]


def backends(device: Optional[str] = None, unoptimized_on_cpu: bool = False) -> list[Backend]:
    """Every OpenCL family on ``device`` (a substring; default $HMMBENCH_OPENCL_DEVICE);
    ``unoptimized_on_cpu``: their programs built without the optimizer on CPU devices."""
    kw = dict(device=device, unoptimized_on_cpu=unoptimized_on_cpu)
    out: list[Backend] = [b for fam in families(**kw) for b in fam.preset_backends()]
    out.append(Wavefront("opencl-intra-naive", "intra-task", tile=1, **kw))
    out.append(Wavefront("opencl-intra-tile2", "intra-task", tile=2, **kw))
    out.append(Wavefront("opencl-warp", "warp", exchange="shuffle", **kw))
    out.append(Wavefront("opencl-multiwarp", "multi-warp", exchange="shuffle", pairs_per_group=4,
                         **kw))
    return out
