"""CUDA backends of the Pair-HMM workload through PyCUDA: the Ren et al. families.

:class:`CudaBackend` -- base class running prep -> H2D -> kernel -> D2H, then the float64
fallback (``cpu_reference.pairhmm.finish_float32``'s rule) as a second pass of the family's own
``USE_DOUBLE`` build on the device, timed into the same stages; a family supplies
``layout(pairs)``, ``kernel_spec()`` (compiled before the timed stages) and ``launch(...)``, all in
the float type ``self.real``. The PyCUDA glue (context, compile, events, buffers) is
:mod:`hmmbench.apis.cuda`.

Families (``backends()``): ``InterTask`` (``kernels_cuda/pairhmm/inter_task.cu``) and ``Wavefront``
(``kernels_cuda/pairhmm/wavefront.cu``); the recurrence itself is ``kernels_cuda/pairhmm/pairhmm.cuh``.
Measurements and design notes: ``docs/pairhmm-inter-task.md``.
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from cpu_reference.pairhmm import finish_float32

from ...apis.cuda import (DeviceBuffers, compile, device_attributes, driver, free_memory,
                         function_resources, gpu_name, unavailable_reason)
from ...apis.cuda_timing import EventTimer, sm_clock_mhz
from ...apis.cuda import devices  # noqa: F401 - `hmmbench list` shows each backend module's devices
from ...backend import Backend, Execution
from ...memory import MemoryNeed
from ...registry import BackendFamily
from ..model import PairSet, exclusive_cumsum
from .footprint import device_need
from .layout import SortedGroups, in_pair_order, scratch_blocks
from .variants import inter_task_alias

# ------------------------------------------------------------------------------------------------
# Base class
# ------------------------------------------------------------------------------------------------
@dataclass
class Layout:
    """A family's device-ready data.

    ``arrays`` are uploaded before the launch; ``scratch`` names device work buffers (bytes) that
    are allocated (grow-only, reused) before the timed stages; ``n_slots`` sums come back;
    ``order`` maps result slot -> pair index, -1 for padding (None: identity)."""
    arrays: dict
    n_slots: int
    order: Optional[np.ndarray] = None
    scratch: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)


class CudaBackend(Backend):
    """prep (``layout``, host) -> H2D -> ``launch`` -> D2H -> float64 fallback on the device."""

    api = "cuda"
    precision = "float32"
    #: the float type of this build; the float64 fallback runs a twin with np.float64
    real = np.float32

    def __init__(self, **params):
        super().__init__(**params)
        self._buffers: Optional[DeviceBuffers] = None

    # --- availability -------------------------------------------------------------------------
    def unavailable_reason(self) -> Optional[str]:
        return unavailable_reason()

    def device_name(self) -> str:
        return gpu_name()

    # --- memory ------------------------------------------------------------------------------
    def memory_need(self, shape) -> MemoryNeed:
        """Host layout and device buffers (:mod:`.footprint`, the CUDA rows)."""
        return device_need(shape, cpu_device=False, cuda_rows=True, **self.footprint_kind())

    def footprint_kind(self) -> dict:
        return {"sorted_rows": False, "scratch": False}

    def device_memory_free(self) -> Optional[int]:
        return free_memory()

    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        if pairs.n_pairs:
            if int(pairs.pair_read_lengths.min()) < 1 or int(pairs.pair_hap_lengths.min()) < 1:
                return "a pair has an empty read or haplotype (the model's likelihood is undefined)"
        return super().refuse_reason(pairs)

    # --- what a family supplies ---------------------------------------------------------------
    def layout(self, pairs: PairSet) -> Layout:
        raise NotImplementedError

    def kernel_function(self):
        """The compiled kernel of this backend's specialization (cached per backend)."""
        fn = getattr(self, "_fn", None)
        if fn is None:
            source, defines, name = self.kernel_spec()
            fn = self._fn = compile(source, defines).get_function(name)
        return fn

    def kernel_spec(self) -> tuple:
        """(source file, defines, kernel name)."""
        raise NotImplementedError

    def launch(self, layout: Layout, dev: dict, sums_dev) -> dict:
        """Launch the kernel(s) writing ``n_slots`` sums (``self.real``) to ``sums_dev``; returns
        info.

        ``dev`` maps each uploaded array's name to its device buffer; scratch buffers come from
        ``self.buffers.get(name, nbytes)`` (already allocated, so no allocation is timed)."""
        raise NotImplementedError

    # --- common flow --------------------------------------------------------------------------
    @property
    def buffers(self) -> DeviceBuffers:
        if self._buffers is None:
            self._buffers = DeviceBuffers()
        return self._buffers

    def float64_twin(self) -> "CudaBackend":
        """The same family built with USE_DOUBLE, sharing this backend's device buffers."""
        twin = copy.copy(self)
        twin.real, twin._fn, twin._buffers = np.float64, None, self.buffers
        return twin

    def build_defines(self, defines: dict) -> dict:
        """``defines`` plus USE_DOUBLE for the float64 build (float32 keeps its compile key)."""
        return {**defines, "USE_DOUBLE": 1} if self.real == np.float64 else defines

    def _sums(self, pairs: PairSet, timing: dict, info: dict) -> np.ndarray:
        """One pass: the family's raw sums (``self.real``, dataset order), stages added to
        ``timing`` (host layout as prep; device events as h2d, kernel, d2h)."""
        drv = driver()
        t0 = time.perf_counter()
        lay = self.layout(pairs)
        timing["prep"] += time.perf_counter() - t0
        for name, nbytes in lay.scratch.items():
            self.buffers.get(name, nbytes)
        self.kernel_function()  # compiled (or loaded from cache) outside the timed stages
        itemsize = np.dtype(self.real).itemsize
        timer = EventTimer()
        with timer("h2d"):
            dev = {name: self.buffers.upload(name, arr) for name, arr in lay.arrays.items()}
        sums_dev = self.buffers.get("sums", lay.n_slots * itemsize)
        with timer("kernel"):
            info.update(self.launch(lay, dev, sums_dev) or {})
        sums = np.empty(lay.n_slots, self.real)
        with timer("d2h"):
            drv.memcpy_dtoh(sums, sums_dev)
        for stage, seconds in timer.seconds().items():
            timing[stage] += seconds
        return in_pair_order(sums, lay.order, pairs.n_pairs)

    def run(self, pairs: PairSet) -> Execution:
        self.check_accepts(pairs)
        driver()
        info = {"gpu": gpu_name()}
        clock_before = sm_clock_mhz()
        timing = {"prep": 0.0, "h2d": 0.0, "kernel": 0.0, "d2h": 0.0}
        if pairs.n_pairs == 0:
            info["sm_clock_mhz"] = [clock_before, sm_clock_mhz()]
            return Execution(np.zeros(0), timing, 0, info)
        sums = self._sums(pairs, timing, info)
        before = dict(timing)
        twin = self.float64_twin()
        log10, redo = finish_float32(pairs, sums, lambda subset: twin._sums(subset, timing, {}))
        if len(redo):
            info["fallback_seconds"] = {k: timing[k] - before[k] for k in timing}
        info["fallback_on"] = "device (float64)"
        info["sm_clock_mhz"] = [clock_before, sm_clock_mhz()]
        return Execution(np.asarray(log10, dtype=np.float64), timing, int(len(redo)), info)

    def close(self) -> None:
        if self._buffers is not None:
            self._buffers.free()
            self._buffers = None


# ------------------------------------------------------------------------------------------------
# Host layouts (vectorized NumPy; no per-pair Python loops)
# ------------------------------------------------------------------------------------------------
#: Fields per read position on the device, in the order of kernels_cuda/pairhmm/pairhmm.cuh (ii = dd).
PROB_FIELDS = ("match", "mismatch", "mm", "gm", "mi", "md", "ii")
WARP = 32


def position_probs(pairs: PairSet, real=np.float32) -> np.ndarray:
    """(n_positions, 7) probabilities per read position (the naive layout)."""
    return np.ascontiguousarray(position_probs_by_field(pairs, real).T)


def position_probs_by_field(pairs: PairSet, real=np.float32) -> np.ndarray:
    """(7, n_positions): each field contiguous (fast to fill and to gather from)."""
    pr = pairs.probs
    out = np.empty((len(PROB_FIELDS), len(pairs.read_bases)), real)
    for k, f in enumerate(PROB_FIELDS):
        out[k] = getattr(pr, f)
    return out


def dataset_order_arrays(pairs: PairSet, real=np.float32) -> dict:
    """Pairs in dataset order, reads and haplotypes reached through per-pair offsets."""
    return {
        "pair_m": pairs.pair_read_lengths.astype(np.int32),
        "pair_n": pairs.pair_hap_lengths.astype(np.int32),
        "pair_read": pairs.read_offsets[pairs.pair_read].astype(np.int64),
        "pair_hap": pairs.hap_offsets[pairs.pair_hap].astype(np.int64),
        "read_bases": pairs.read_bases,
        "probs": position_probs(pairs, real),
        "hap_bases": pairs.hap_bases,
    }


def interleaved_arrays(pairs: PairSet, real=np.float32) -> tuple[dict, np.ndarray]:
    """The journal version's data preparation (Ren et al. 2018), in warp-wide groups
    (``layouts.SortedGroups``): per read row one byte base, then NPROB floats, each 32 lanes wide;
    haplotype bases four per lane-word. Returns (arrays, slot -> pair order with -1 for dummies).
    """
    groups = SortedGroups.build(pairs, WARP)
    read_il, probs_il = groups.read_rows(pairs.read_bases, position_probs_by_field(pairs, real))
    arrays = {"pair_m": groups.slot_m, "pair_n": groups.slot_n, "group_row": groups.group_row,
              "group_hap4": groups.group_hap4, "read_il": read_il, "probs_il": probs_il,
              "hap4": groups.hap_words()}
    return arrays, groups.slot_pair


# ------------------------------------------------------------------------------------------------
# Families
# ------------------------------------------------------------------------------------------------
def _grid(n: int, per_block: int) -> tuple:
    return (max(1, -(-n // per_block)), 1, 1)


class InterTask(CudaBackend):
    """One thread per pair, TILE rows per strip (``kernels_cuda/pairhmm/inter_task.cu``).

    ``vec`` columns of the row vectors move per load/store; ``block`` is the largest block
    (launches with fewer than ``2 * block`` pairs per SM use 32-thread blocks to reach more SMs).
    """

    family = "inter-task"
    #: Tunable parameters (``hmmbench run -b cuda-inter --axis tile=2,4 --axis block=64,128``).
    axes = {"tile": (1, 2, 4, 6, 8), "sorted": (False, True), "block": (32, 64, 128, 256)}
    defaults = {"tile": 8, "sorted": False, "block": 128}

    def __init__(self, tile: int, sorted_layout: bool, vec: int = 1, block: int = 128,
                 name: Optional[str] = None):
        layout = "sorted-interleaved" if sorted_layout else "dataset-order"
        super().__init__(tile=tile, vec=vec, block=block, layout=layout)
        self.name = name or (f"cuda-inter-{'naive' if tile == 1 else f'tile{tile}'}"
                             f"{'-sorted' if sorted_layout else ''}")
        self.tile, self.vec, self.block, self.sorted_layout = tile, vec, block, sorted_layout

    @property
    def build_vec(self) -> int:
        """Columns per access of this build: 16 bytes at most (float64: 2)."""
        return min(self.vec, 16 // np.dtype(self.real).itemsize)

    def defines(self) -> dict:
        return self.build_defines({"TILE": self.tile, "VEC": self.build_vec, "BLOCK": self.block,
                                   "INTERLEAVED": int(self.sorted_layout)})

    def kernel_spec(self) -> tuple:
        return "pairhmm/inter_task.cu", self.defines(), "inter_task"

    def layout(self, pairs: PairSet) -> Layout:
        if self.sorted_layout:
            arrays, order = interleaved_arrays(pairs, self.real)
            n_slots = len(order)
        else:
            arrays, order = dataset_order_arrays(pairs, self.real), None
            n_slots = pairs.n_pairs
        vec = self.build_vec
        arrays["group_block"], n_blocks = scratch_blocks(arrays["pair_n"], WARP, vec)
        # Row vectors are only touched when some read spans more than one strip.
        vec_bytes = (n_blocks * WARP * vec * np.dtype(self.real).itemsize
                     if int(arrays["pair_m"].max(initial=0)) > self.tile else 16)
        return Layout(arrays, n_slots, order,
                      scratch={"vec_m": vec_bytes, "vec_i": vec_bytes, "vec_d": vec_bytes})

    def block_size(self, n_slots: int) -> int:
        sms = device_attributes()["sm_count"]
        return self.block if n_slots >= 2 * self.block * sms else WARP

    def launch(self, lay: Layout, dev: dict, sums_dev) -> dict:
        fn = self.kernel_function()
        data = (["group_row", "group_hap4", "read_il", "probs_il", "hap4"]
                if self.sorted_layout else
                ["pair_read", "pair_hap", "read_bases", "probs", "hap_bases"])
        args = [dev["pair_m"], dev["pair_n"], *[dev[k] for k in data], dev["group_block"],
                *[self.buffers.get(k, lay.scratch[k]) for k in ("vec_m", "vec_i", "vec_d")],
                sums_dev, np.int32(lay.n_slots)]
        block = self.block_size(lay.n_slots)
        grid = _grid(lay.n_slots, block)
        fn(*args, block=(block, 1, 1), grid=grid)
        return {"grid": grid[0], "block": block, **function_resources(fn)}


    def footprint_kind(self) -> dict:
        return {"sorted_rows": self.sorted_layout, "scratch": True, "vec": self.vec}


class Wavefront(CudaBackend):
    """Threads of a block (intra-task) or of a warp (warp, multi-warp) sweep one pair's
    anti-diagonals (``kernels_cuda/pairhmm/wavefront.cu``)."""

    def __init__(self, name: str, family: str, threads: int, tile: int = 1, shuffle: bool = False,
                 pass_shared: bool = False, pairs_per_block: int = 1):
        super().__init__(threads_per_pair=threads, tile=tile,
                         exchange="shuffle" if shuffle else "shared memory + barrier",
                         passes="shared memory" if pass_shared else "global memory",
                         pairs_per_block=pairs_per_block)
        self.name, self.family = name, family
        self.threads, self.tile, self.shuffle = threads, tile, shuffle
        self.pass_shared, self.pairs_per_block = pass_shared, pairs_per_block

    def float64_twin(self) -> "Wavefront":
        # 3 doubles per column may not fit in shared memory: the twin keeps passes in global
        twin = super().float64_twin()
        twin.pass_shared = False
        return twin

    def defines(self) -> dict:
        return self.build_defines({"THREADS": self.threads, "TILE": self.tile,
                                   "SHUFFLE": int(self.shuffle),
                                   "PASS_SHARED": int(self.pass_shared),
                                   "PAIRS_PER_BLOCK": self.pairs_per_block})

    def kernel_spec(self) -> tuple:
        return "pairhmm/wavefront.cu", self.defines(), "wavefront"

    def footprint_kind(self) -> dict:
        # passes in global memory: 3 values per haplotype column of each pair whose read is
        # longer than a strip (the float64 twin keeps them in global memory either way)
        return {"sorted_rows": False, "scratch": not self.pass_shared, "redo_scratch": True,
                "strip_rows": self.strip_rows}

    @property
    def strip_rows(self) -> int:
        return self.threads * self.tile

    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        reason = super().refuse_reason(pairs)
        if reason or not self.pass_shared or unavailable_reason():
            return reason
        limit = device_attributes()["max_shared_per_block_optin"] // 12
        if pairs.max_hap_length > limit:
            return (f"haplotype length {pairs.max_hap_length} exceeds {limit}, the most whose "
                    f"pass buffer (3 floats per column) fits in one block's shared memory")
        return None

    def layout(self, pairs: PairSet) -> Layout:
        arrays = dataset_order_arrays(pairs, self.real)
        m, n = arrays["pair_m"].astype(np.int64), arrays["pair_n"].astype(np.int64)
        pass_cols = np.where(m > self.strip_rows, n, 0) if not self.pass_shared else 0 * n
        arrays["pass_col"] = exclusive_cumsum(pass_cols)
        nbytes = int(pass_cols.sum()) * np.dtype(self.real).itemsize
        return Layout(arrays, pairs.n_pairs,
                      scratch={"pass_m": nbytes, "pass_i": nbytes, "pass_d": nbytes},
                      meta={"max_n": int(n.max(initial=0))})

    def launch(self, lay: Layout, dev: dict, sums_dev) -> dict:
        drv = driver()
        fn = self.kernel_function()
        shared = 3 * np.dtype(self.real).itemsize * lay.meta["max_n"] if self.pass_shared else 0
        if shared > 48 * 1024:
            fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)
        args = [dev[k] for k in ("pair_m", "pair_n", "pair_read", "pair_hap", "read_bases",
                                 "probs", "hap_bases", "pass_col")]
        args += [self.buffers.get(k, lay.scratch[k]) for k in ("pass_m", "pass_i", "pass_d")]
        args += [sums_dev, np.int32(lay.n_slots)]
        block = self.threads * self.pairs_per_block
        grid = _grid(lay.n_slots, self.pairs_per_block)
        fn(*args, block=(block, 1, 1), grid=grid, shared=shared)
        return {"grid": grid[0], "block": block, "dynamic_shared_bytes": shared,
                **function_resources(fn)}


#: Every kernel specialization the backends compile, float32 and float64 fallback builds (the
#: nvcc test compiles each).
def specializations() -> list[tuple[str, dict]]:
    return [b.kernel_spec()[:2] for main in backends() for b in (main, main.float64_twin())]


#: Row-vector columns per load for each inter-task tile: 4 was fastest for every tile in the
#: H200 sweep (docs/pairhmm-inter-task.md), with no register spills even at tile 8 (153 registers).
INTER_VEC = {1: 4, 2: 4, 4: 4, 6: 4, 8: 4}


def families() -> list[BackendFamily]:
    """The backends with parameter axes (``hmmbench run -b cuda-inter --axis tile=2,4``)."""
    def inter(name: str, tile: int, sorted: bool, block: int) -> InterTask:
        return InterTask(tile, sorted, vec=INTER_VEC[tile], block=block, name=name)

    return [BackendFamily(
        "cuda-inter", InterTask.axes, InterTask.defaults, inter,
        alias=lambda p: inter_task_alias(p, "cuda"),
        presets=tuple({"tile": t, "sorted": s} for s in (False, True) for t in (1, 2, 4, 6, 8)))]


def backends() -> list[Backend]:
    out: list[Backend] = [b for fam in families() for b in fam.preset_backends()]
    # Block sizes from the H200 sweep (docs/pairhmm-inter-task.md): 64 threads beat the papers' 128
    # for both intra-task kernels; cuda-warp / cuda-multiwarp keep the papers' one row per lane,
    # cuda-warp-tile4 is the same warp kernel with 4 rows per lane between shuffles.
    out += [
        Wavefront("cuda-intra-naive", "intra-task", threads=64),
        Wavefront("cuda-intra-tile2", "intra-task", threads=64, tile=2),
        Wavefront("cuda-warp", "warp", threads=32, shuffle=True, pass_shared=True),
        Wavefront("cuda-multiwarp", "multi-warp", threads=32, shuffle=True, pairs_per_block=4),
        Wavefront("cuda-warp-tile4", "warp", threads=32, tile=4, shuffle=True,
                  pass_shared=True),
    ]
    return out
