"""The two backends: the same one-pair-per-thread forward pass, on a GPU and on the CPU.

Everything hmmbench asks of a backend is here: a name and what it is (``api``, ``family``,
``precision``), ``unavailable_reason()`` (why it cannot run on this machine, or None),
``refuse_reason(pairs)`` (why it cannot compute an input), and ``run(pairs)`` returning one
float64 log10 likelihood per pair with the seconds of each stage it measured. The runner repeats,
takes medians and cross-checks every result against the reference.
"""
from __future__ import annotations

import importlib.resources
import time
from typing import Optional

import numpy as np
from cpu_reference.pairhmm import finish_float32
from hmmbench.backend import Backend, Execution, StageClock

from .lanes import forward_sums, lanes

BLOCK = 128                 # CUDA threads per block


def _float64_sums(subset) -> np.ndarray:
    """The float64 pass for pairs whose float32 sum underflowed (GKL's rule, applied by
    ``finish_float32``): this package's own recurrence, not the reference's."""
    return forward_sums(lanes(subset, np.float64))


def kernel_arguments(pairs) -> tuple:
    """The host layout: the kernel's input arrays, in its argument order, and the floats of
    scratch it needs (per pair its lengths and where its read, haplotype and rows start)."""
    m, n = pairs.pair_read_lengths, pairs.pair_hap_lengths
    scratch_start = np.zeros(pairs.n_pairs, np.int64)
    np.cumsum(3 * (n[:-1] + 1), out=scratch_start[1:])
    arrays = [m.astype(np.int32), pairs.read_offsets[pairs.pair_read].astype(np.int64),
              n.astype(np.int32), pairs.hap_offsets[pairs.pair_hap].astype(np.int64),
              scratch_start, pairs.read_bases, pairs.probs.stacked(np.float32), pairs.hap_bases]
    return [np.ascontiguousarray(a) for a in arrays], int(3 * (n + 1).sum())


class OnePairPerThread(Backend):
    family = "inter-task"
    precision = "float32"

    def refuse_reason(self, pairs) -> Optional[str]:
        if pairs.n_pairs and (pairs.pair_read_lengths.min() < 1 or pairs.pair_hap_lengths.min() < 1):
            return "a pair has an empty read or haplotype (its likelihood is undefined)"
        return super().refuse_reason(pairs)


class ExampleNumpy(OnePairPerThread):
    """The kernel's loop on the CPU, every pair a NumPy lane (``lanes.py``)."""
    name = "example-numpy"
    api = "numpy"

    def run(self, pairs) -> Execution:
        self.check_accepts(pairs)
        clock = StageClock()
        with clock("prep"):
            lay = lanes(pairs, np.float32)
        with clock("kernel"):
            sums = forward_sums(lay)
            log10, redo = finish_float32(pairs, sums, recompute=_float64_sums)
        return Execution(log10=log10, timing=clock.timing, n_fallback=len(redo))


class ExampleCuda(OnePairPerThread):
    """``forward.cu`` through PyCUDA (imported only when the backend runs)."""
    name = "example-cuda"
    api = "cuda"

    def unavailable_reason(self) -> Optional[str]:
        from hmmbench.apis.cuda import unavailable_reason   # pycuda missing, no device, ...
        return unavailable_reason()

    def device_name(self) -> str:
        from hmmbench.apis.cuda import gpu_name
        return gpu_name()

    def _kernel(self):
        if getattr(self, "_fn", None) is None:      # compiled once, before any timed stage
            from pycuda.compiler import SourceModule
            source = importlib.resources.files(__package__).joinpath("forward.cu").read_text()
            module = SourceModule(source, no_extern_c=True, options=["-O3"])
            self._fn = module.get_function("forward_one_thread_per_pair")
        return self._fn

    def run(self, pairs) -> Execution:
        self.check_accepts(pairs)
        if pairs.n_pairs == 0:                      # nothing to launch
            return Execution(log10=np.zeros(0), timing={})
        from hmmbench.apis.cuda import EventTimer, driver   # hmmbench's one CUDA context
        drv = driver()
        fn = self._kernel()
        timing = dict.fromkeys(("prep", "h2d", "kernel", "d2h"), 0.0)
        t0 = time.perf_counter()
        host, scratch_floats = kernel_arguments(pairs)
        timing["prep"] = time.perf_counter() - t0
        timer = EventTimer()
        with timer("h2d"):
            dev = [drv.to_device(a) for a in host]
        scratch = drv.mem_alloc(max(1, scratch_floats) * 4)
        sums_dev = drv.mem_alloc(max(1, pairs.n_pairs) * 4)
        with timer("kernel"):
            fn(np.int32(pairs.n_pairs), *dev, scratch, sums_dev, block=(BLOCK, 1, 1),
               grid=(max(1, -(-pairs.n_pairs // BLOCK)), 1))
        sums = np.empty(pairs.n_pairs, np.float32)
        with timer("d2h"):
            drv.memcpy_dtoh(sums, sums_dev)
        timing.update(timer.seconds())
        t0 = time.perf_counter()
        log10, redo = finish_float32(pairs, sums, recompute=_float64_sums)
        timing["kernel"] += time.perf_counter() - t0     # the float64 recomputes, on the host
        return Execution(log10=log10, timing=timing, n_fallback=len(redo),
                         info={"fallback_on": "host (float64 NumPy lanes)"})
