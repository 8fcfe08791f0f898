"""OpenCL backends of workload "profile": HMMER3's SSV/MSV and Viterbi filters, task-parallel.

One work-item per target sequence (kernels_opencl/profile_filters.cl, built per model length
with ``-DMODEL_M``); the kernels return HMMER's raw integers (SSV xE, MSV xJ, VF xC, overflow
flags) and the host finishes them with the reference's own rules
(:mod:`cpu_reference.profile_filters`), so the scores are identical to the NumPy reference and
to HMMER. Device choice and program cache: the glue of :mod:`hmmbench.backends.opencl`.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from ..backend import Backend, Execution, StageClock
from ..profile.model import ProfileModel, SequenceSet
from .opencl import device_kit

SOURCE = "profile_filters.cl"
SCORES = ("ssv", "msv", "vf")


class ProfileFiltersOpenCL:
    """Runs the filter kernels of one model on one device (sequences sorted by length so that
    neighbouring work-items finish together)."""

    def __init__(self, device: Optional[str] = None, local_size: int = 64):
        self.kit = device_kit(device)
        self.local_size = local_size

    def _defines(self, model: ProfileModel) -> dict:
        return {"MODEL_M": model.M, "INTERLEAVED": int(self.kit.is_gpu)}

    def _buf(self, arr):
        import pyopencl as cl
        arr = np.ascontiguousarray(arr)
        return cl.Buffer(self.kit.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=arr if arr.size else np.zeros(1, arr.dtype))

    def _out(self, n, dtype=np.int32):
        import pyopencl as cl
        return cl.Buffer(self.kit.context, cl.mem_flags.READ_WRITE,
                         max(16, n * np.dtype(dtype).itemsize))

    def _launch(self, name, model, n, args, clock):
        import pyopencl as cl
        kern = self.kit.kernel(SOURCE, name, self._defines(model))
        gsize = ((n + self.local_size - 1) // self.local_size) * self.local_size
        with clock("kernel"):
            ev = kern(self.kit.queue, (gsize,), (self.local_size,), *args)
            ev.wait()
        return ev

    def scores(self, model: ProfileModel, seqs: SequenceSet, which: str, clock=None):
        """One filter's scores for every sequence, float32 nats as HMMER/pyhmmer report."""
        import pyopencl as cl
        from cpu_reference import profile_filters as pf
        clock = clock or StageClock()
        q = self.kit.queue
        n = len(seqs)
        L = seqs.lengths
        with clock("prep"):
            order = np.argsort(-L, kind="stable").astype(np.int32)
        with clock("h2d"):
            res, offs, ordb = self._buf(seqs.residues), self._buf(seqs.offsets), self._buf(order)
        out = self._out(n)
        M = model.M
        if which in ("ssv", "msv"):
            bp = model.byte
            with clock("h2d"):
                cost = self._buf(bp.cost)
            row = self.kit.scratch("profile_row8", n * M)
            self._launch("ssv_xe", model, n, (cost, res, offs, ordb, np.int32(n),
                                              np.int32(bp.bias), row, out), clock)
            xe = np.empty(n, np.int32)
            with clock("d2h"):
                cl.enqueue_copy(q, xe, out)
            with clock("prep"):
                score, redo = pf.ssv_from_xe(model, xe.astype(np.int64), L)
            if which == "ssv" or not redo.any():
                return score
            sub = np.flatnonzero(redo).astype(np.int32)
            with clock("prep"):
                tjbm = ((bp.tjb(L) + bp.tbm) & 0xFF).astype(np.uint8)
            with clock("h2d"):
                subb, tjbmb = self._buf(sub), self._buf(tjbm)
            self._launch("msv_xj", model, sub.size,
                         (cost, res, offs, subb, np.int32(sub.size), np.int32(bp.bias),
                          np.int32(bp.base), np.int32(bp.tec), tjbmb, row, out), clock)
            xj = np.empty(n, np.int32)
            with clock("d2h"):
                cl.enqueue_copy(q, xj, out)
            with clock("prep"):
                xj = xj[sub].astype(np.int64)
                score[sub] = pf.msv_from_xj(model, np.maximum(xj, 0), xj < 0, L[sub])
            return score
        if which == "vf":
            wp = model.word
            with clock("prep"):
                move = wp.move(L).astype(np.int16)
            with clock("h2d"):
                match, tsc, moveb = self._buf(wp.match), self._buf(wp.tsc), self._buf(move)
            rows = [self.kit.scratch(f"profile_row16_{r}", n * M * 2) for r in "mid"]
            self._launch("vf_xc", model, n,
                         (match, tsc, res, offs, ordb, np.int32(n), np.int32(wp.base),
                          np.int32(wp.e_loop), np.int32(wp.e_move), np.int32(wp.ddbound),
                          moveb, *rows, out), clock)
            xc = np.empty(n, np.int32)
            with clock("d2h"):
                cl.enqueue_copy(q, xc, out)
            with clock("prep"):
                xc = xc.astype(np.int64)
                return pf.vf_from_xc(model, np.minimum(xc, 32767), xc > 32767, L)
        raise ValueError(f"unknown score {which!r} (one of {SCORES})")


class OpenCLProfile(Backend):
    """Registry backend: the task-parallel OpenCL filters."""
    workload = "profile"
    name = "profile-opencl-task"
    api = "opencl"
    family = "inter-task"
    precision = "int8/int16 exact"
    kinds = ("ssv", "msv", "vf")

    def __init__(self, device: Optional[str] = None, **params):
        super().__init__(device=device, **params)
        self._runner = None

    def unavailable_reason(self) -> Optional[str]:
        try:
            import pyopencl  # noqa: F401
        except ImportError:
            return "pyopencl not installed"
        try:
            self.runner()
        except Exception as exc:  # noqa: BLE001
            return f"no OpenCL device: {exc}"
        return None

    def runner(self) -> ProfileFiltersOpenCL:
        if self._runner is None:
            self._runner = ProfileFiltersOpenCL(self.params.get("device"))
        return self._runner

    def device_name(self) -> str:
        return self.runner().kit.label

    def refuse_reason(self, job) -> Optional[str]:
        if job.kind not in self.kinds:
            return f"{self.name} does not compute '{job.kind}' (it does: {', '.join(self.kinds)})"
        return None

    def run(self, job) -> Execution:
        clock = StageClock()
        t0 = time.perf_counter()
        out = self.runner().scores(job.model, job.seqs, job.kind, clock)
        return Execution(log10=np.asarray(out, np.float64), timing=clock.timing,
                         info={"unit": "nats", "device": self.runner().kit.label,
                               "wall": time.perf_counter() - t0})


def backends() -> list:
    return [OpenCLProfile()]


def devices() -> list:
    from .opencl import devices as opencl_devices
    return opencl_devices()
