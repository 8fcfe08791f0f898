"""OpenCL backends of workload "profile": HMMER3's SSV/MSV and Viterbi filters, task-parallel.

One work-item per target sequence (kernels_opencl/profile/filters.cl, built per model length
with ``-DMODEL_M``); the kernels return HMMER's raw integers (SSV xE, MSV xJ, VF xC, overflow
flags) and the host finishes them with the reference's own rules
(:mod:`cpu_reference.profile.filters`), so the scores are identical to the NumPy reference and
to HMMER. Device choice and program cache: the glue of :mod:`hmmbench.pairhmm.opencl`.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from ..backend import Backend, Execution, StageClock
from .model import ProfileModel, SequenceSet
from .job import refuse_kind
from .resident import ResidentCache, load_info
from ..apis.opencl import device_kit

SOURCE = "profile/filters.cl"


class ProfileFiltersOpenCL:
    """Runs the filter kernels of one model on one device (sequences sorted by length so that
    neighbouring work-items finish together)."""

    def __init__(self, device: Optional[str] = None, local_size: int = 64):
        self.kit = device_kit(device)
        self.local_size = local_size
        self.resident = ResidentCache(self._upload_database)
        self._db = None                       # the ResidentDatabase of the current search

    def _upload_database(self, seqs, order) -> tuple:
        """Residues, offsets and launch order as device buffers (blocking copies, timed)."""
        import pyopencl as cl
        flags = cl.mem_flags.READ_ONLY
        clock = StageClock()
        bufs = {}
        with clock("h2d"):
            for name, arr in (("residues", seqs.residues), ("offsets", seqs.offsets),
                              ("order", order)):
                arr = arr if arr.size else np.zeros(1, arr.dtype)
                bufs[name] = cl.Buffer(self.kit.context, flags, arr.nbytes)
                cl.enqueue_copy(self.kit.queue, bufs[name], arr)
            self.kit.queue.finish()
        return bufs, clock.timing

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
        kern = self.kit.kernel(SOURCE, name, self._defines(model))
        gsize = ((n + self.local_size - 1) // self.local_size) * self.local_size
        with clock("kernel"):
            ev = kern(self.kit.queue, (gsize,), (self.local_size,), *args)
            ev.wait()
        return ev

    def _common(self, seqs, idx, clock):
        db = self._db
        if db is not None and db.seqs is seqs:
            b = db.buffers
            if db.is_whole_order(idx):
                return b["residues"], b["offsets"], b["order"]
            with clock("h2d"):
                return b["residues"], b["offsets"], self._buf(idx)
        with clock("h2d"):
            return self._buf(seqs.residues), self._buf(seqs.offsets), self._buf(idx)

    def _download(self, out, n, clock):
        import pyopencl as cl
        host = np.empty(n, np.int32)
        with clock("d2h"):
            cl.enqueue_copy(self.kit.queue, host, out)
        return host

    # the device protocol of hmmbench.profile.host
    def ssv_xe(self, model, seqs, idx):
        n, clock = len(seqs), self._clock
        res, offs, ordb = self._common(seqs, idx, clock)
        with clock("h2d"):
            cost = self._buf(model.byte.cost)
        out = self._out(n)
        row = self.kit.scratch("profile_row8", len(idx) * model.M)
        self._launch("ssv_xe", model, len(idx), (cost, res, offs, ordb, np.int32(len(idx)),
                                                 np.int32(model.byte.bias), row, out), clock)
        return self._download(out, n, clock)

    def msv_xj(self, model, seqs, idx, tjbm):
        n, clock, bp = len(seqs), self._clock, model.byte
        res, offs, ordb = self._common(seqs, idx, clock)
        with clock("h2d"):
            cost, tjbmb = self._buf(bp.cost), self._buf(tjbm)
        out = self._out(n)
        row = self.kit.scratch("profile_row8", len(idx) * model.M)
        self._launch("msv_xj", model, len(idx),
                     (cost, res, offs, ordb, np.int32(len(idx)), np.int32(bp.bias),
                      np.int32(bp.base), np.int32(bp.tec), tjbmb, row, out), clock)
        return self._download(out, n, clock)

    def vf_xc(self, model, seqs, idx, move):
        n, clock, wp = len(seqs), self._clock, model.word
        res, offs, ordb = self._common(seqs, idx, clock)
        with clock("h2d"):
            match, tsc, moveb = self._buf(wp.match), self._buf(wp.tsc), self._buf(move)
        out = self._out(n)
        rows = [self.kit.scratch(f"profile_row16_{r}", len(idx) * model.M * 2) for r in "mid"]
        self._launch("vf_xc", model, len(idx),
                     (match, tsc, res, offs, ordb, np.int32(len(idx)), np.int32(wp.base),
                      np.int32(wp.e_loop), np.int32(wp.e_move), np.int32(wp.ddbound),
                      moveb, *rows, out), clock)
        return self._download(out, n, clock)

    def scores(self, model: ProfileModel, seqs: SequenceSet, which: str, clock=None):
        """One filter's scores for every sequence, float32 nats as HMMER/pyhmmer report."""
        from .host import filter_scores
        self._clock = clock or StageClock()
        order = self._db.order if self._db is not None and self._db.seqs is seqs else None
        return filter_scores(self, model, seqs, which, self._clock, order)

    def search(self, job, clock) -> tuple:
        """(scores, info) of a ProfileSearch on its resident database."""
        db, load = self.resident.get(job)
        info = load_info(job, load, clock.timing)
        self._db = db
        try:
            return self.scores(job.model, job.seqs, job.kind, clock), info
        finally:
            self._db = None


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
        return refuse_kind(self.name, self.kinds, job)

    def run(self, job) -> Execution:
        clock = StageClock()
        t0 = time.perf_counter()
        out, info = self.runner().search(job, clock)
        return Execution(log10=np.asarray(out, np.float64), timing=clock.timing,
                         info={"unit": "nats", "device": self.runner().kit.label,
                               "wall": time.perf_counter() - t0, **info})

    def close(self) -> None:
        if self._runner is not None:
            self._runner.resident.clear()


def backends() -> list:
    return [OpenCLProfile()]


def devices() -> list:
    from ..apis.opencl import devices as opencl_devices
    return opencl_devices()
