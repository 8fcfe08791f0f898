"""OpenCL backends of workload "profile": HMMER3's SSV/MSV and Viterbi filters.

``profile-opencl-task``: one work-item per target sequence (kernels_opencl/profile/filters.cl,
built per model length with ``-DMODEL_M``). ``profile-opencl-warp``: the warp-group kernels of
``profile-cuda-warp`` (kernels_common/profile/warp.h through kernels_opencl/profile/warp.cl,
the same defines and profile layouts: :mod:`hmmbench.profile.device.warp`); a warp's exchanges are
inline PTX on NVIDIA's OpenCL, sub-group functions where a 32-lane sub-group builds, else local
memory with one warp per work-group (``info["path"]``). The kernels return HMMER's raw integers
(SSV xE, MSV xJ, VF xC, overflow flags); a search finishes them on the device with the
reference's own rules (kernels_common/profile/finish.h; :func:`ProfileFiltersOpenCL.scores` on
the host, with :mod:`cpu_reference.profile.filters`), so the scores are identical to the NumPy
reference and to HMMER. The database stays resident across a run's models and kinds; kind
``pipeline``: :mod:`hmmbench.profile.device.pipeline`, its Forward stage the generic kernel CUDA
shares (kernels_common/profile/generic.h through kernels_opencl/profile/generic.cl). Device
choice and program cache: the glue of :mod:`hmmbench.apis.opencl`.
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np

from ...apis.opencl import EXCHANGE, GPU_CONTEXT_BYTES, PATH_NAMES, cl_module, device_kit
from ...apis.opencl import devices as opencl_devices
from ...backend import Backend, Execution, StageClock
from ...memory import MemoryNeed
from ..batch import batch_info
from ..job import PIPELINE, ProfileBatch, pipeline_refusal, refuse_kind
from ..model import ProfileModel, SequenceSet
from . import warp
from .batch import batch_scores
from .host import filter_scores
from .layout import resident_specials
from .opencl_stages import GENERIC_SOURCE, STAGE_DEFINES, STAGES_SOURCE, OpenCLStages  # noqa: F401
from .pipeline import device_scores, run_pipeline
from .resident import ResidentCache, each_array, load_info

SOURCE = "profile/filters.cl"
GENERIC_KINDS = ("viterbi", "forward")


class ProfileFiltersOpenCL(OpenCLStages):
    """Runs the filter kernels of one model on one device (sequences sorted by length so that
    neighbouring work-items finish together)."""

    def __init__(self, device: Optional[str] = None, local_size: int = 64):
        self.kit = device_kit(device)
        self.local_size = local_size
        self.resident = ResidentCache(self._upload_database, resident_specials)
        self._db = None                       # the ResidentDatabase of the current search
        self._clock = StageClock()            # the stage clock of the current search
        #: the generic kernels' work-group size (None: generic_threads(M)), and 0 (scans in
        #: local memory) or the sub-group size their scans shuffle across (a device with
        #: cl_intel_required_subgroup_size)
        self.generic_threads, self.generic_subgroup = None, 0

    def _upload_database(self, arrays: dict, later=None) -> tuple:
        """The resident database's arrays, then ``later()``'s, as device buffers (blocking
        copies, timed)."""
        import pyopencl as cl  # optional dependency, imported on first use
        flags = cl.mem_flags.READ_ONLY
        clock = StageClock()
        bufs = {}
        with clock("h2d"):
            for name, arr in each_array(arrays, later):
                arr = arr if arr.size else np.zeros(1, arr.dtype)
                bufs[name] = cl.Buffer(self.kit.context, flags, arr.nbytes)
                cl.enqueue_copy(self.kit.queue, bufs[name], arr)
            self.kit.queue.finish()
        return bufs, clock.timing

    def _defines(self, model: ProfileModel) -> dict:
        return {"MODEL_M": model.M, "INTERLEAVED": int(self.kit.is_gpu)}

    def _buf(self, arr):
        """A host array's device copy (a device buffer, gathered there already, passes)."""
        import pyopencl as cl  # optional dependency, imported on first use
        if isinstance(arr, cl.MemoryObject):
            return arr
        arr = np.ascontiguousarray(arr)
        return cl.Buffer(self.kit.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                         hostbuf=arr if arr.size else np.zeros(1, arr.dtype))

    def _out(self, n, dtype=np.int32):
        import pyopencl as cl  # optional dependency, imported on first use
        return cl.Buffer(self.kit.context, cl.mem_flags.READ_WRITE,
                         max(16, n * np.dtype(dtype).itemsize))

    def _launch(self, name, model, n, args, clock):
        kern = self.kit.kernel(SOURCE, name, self._defines(model))
        gsize = ((n + self.local_size - 1) // self.local_size) * self.local_size
        with clock("kernel"):
            ev = kern(self.kit.queue, (gsize,), (self.local_size,), *args)
            ev.wait()
        return ev

    def _common(self, seqs, idx, clock, on_device=None):
        """(residues, offsets, launch list, its length): ``on_device`` = (device list, count)
        of the resident database (the pipeline's stages), else the list ``idx``."""
        db = self._db
        if on_device is not None:
            return (db.buffers["residues"], db.buffers["offsets"]) + tuple(on_device)
        if db is not None and db.seqs is seqs:
            b = db.buffers
            if db.is_whole_order(idx):
                return b["residues"], b["offsets"], b["order"], len(idx)
            with clock("h2d"):
                return b["residues"], b["offsets"], self._buf(idx), len(idx)
        with clock("h2d"):
            return self._buf(seqs.residues), self._buf(seqs.offsets), self._buf(idx), len(idx)

    def _download(self, out, n, clock, dtype=np.int32):
        import pyopencl as cl  # optional dependency, imported on first use
        host = np.empty(n, dtype)
        with clock("d2h"):
            cl.enqueue_copy(self.kit.queue, host, out)
        return host

    def _output(self, kind, n, on_device):
        """The raw-score buffer: its own per kind on the device path (the pipeline reads it
        after the next stage ran), a fresh one otherwise."""
        if on_device is not None:
            return self.kit.scratch("profile_out_" + kind, 4 * n)
        return self._out(n)

    def _finish(self, out, n, clock, on_device):
        return out if on_device is not None else self._download(out, n, clock)

    # the device protocol of hmmbench.profile.device.host (and, with on_device, of device_pipeline)
    def ssv_xe(self, model, seqs, idx, on_device=None):
        n, clock = len(seqs), self._clock
        res, offs, ordb, m = self._common(seqs, idx, clock, on_device)
        with clock("h2d"):
            cost = self._buf(model.byte.cost)
        out = self._output("ssv", n, on_device)
        row = self.kit.scratch("profile_row8", m * model.M)
        self._launch("ssv_xe", model, m, (cost, res, offs, ordb, np.int32(m),
                                          np.int32(model.byte.bias), row, out), clock)
        return self._finish(out, n, clock, on_device)

    def msv_xj(self, model, seqs, idx, tjbm, on_device=None):
        n, clock, bp = len(seqs), self._clock, model.byte
        res, offs, ordb, m = self._common(seqs, idx, clock, on_device)
        with clock("h2d"):
            cost, tjbmb = self._buf(bp.cost), self._buf(tjbm)
        out = self._output("msv", n, on_device)
        row = self.kit.scratch("profile_row8", m * model.M)
        self._launch("msv_xj", model, m,
                     (cost, res, offs, ordb, np.int32(m), np.int32(bp.bias),
                      np.int32(bp.base), np.int32(bp.tec), tjbmb, row, out), clock)
        return self._finish(out, n, clock, on_device)

    def vf_xc(self, model, seqs, idx, move, on_device=None):
        n, clock, wp = len(seqs), self._clock, model.word
        res, offs, ordb, m = self._common(seqs, idx, clock, on_device)
        with clock("h2d"):
            match, tsc, moveb = self._buf(wp.match), self._buf(wp.tsc), self._buf(move)
        out = self._output("vf", n, on_device)
        rows = [self.kit.scratch(f"profile_row16_{r}", m * model.M * 2) for r in "mid"]
        self._launch("vf_xc", model, m,
                     (match, tsc, res, offs, ordb, np.int32(m), np.int32(wp.base),
                      np.int32(wp.e_loop), np.int32(wp.e_move), np.int32(wp.ddbound),
                      moveb, *rows, out), clock)
        return self._finish(out, n, clock, on_device)

    def scores(self, model: ProfileModel, seqs: SequenceSet, which: str, clock=None):
        """One filter's scores for every sequence, float32 nats as HMMER/pyhmmer report."""
        self._clock = clock or StageClock()
        order = self._db.order if self._db is not None and self._db.seqs is seqs else None
        return filter_scores(self, model, seqs, which, self._clock, order)

    def search(self, job, clock) -> tuple:
        """(scores, info) of a ProfileSearch on its resident database; kind ``pipeline``: the
        outcome per sequence (hmmbench.profile.device.pipeline); ``viterbi`` / ``forward``: the
        generic kernel over the whole launch order."""
        db, load = self.resident.get(job)
        info = load_info(job, load, clock.timing, db.load_bytes)
        self._db, self._clock = db, clock
        try:
            if isinstance(job, ProfileBatch):
                return batch_scores(self, job.models, db, job.kind, clock), \
                    {**batch_info(job), **info}
            if job.kind in GENERIC_KINDS:
                return self.generic(job.model, *self.whole_order(), job.kind == "forward",
                                    clock), info
            if job.kind == PIPELINE:
                out, extra = run_pipeline(self, job.model, db, clock, clock, StageClock,
                                          lambda c: dict(c.timing), job.bias_filter)
                return out, {**extra, **info}
            return device_scores(self, job.model, db, job.kind, clock), info
        finally:
            self._db = None


WARP_SOURCE = "profile/warp.cl"
#: work-items per work-group of the warp kernels (4 warps, as CUDA's BLOCK); 32 on the local path
WARP_BLOCK = 128
#: persistent grid: at most this many work-groups per compute unit (grid-stride beyond)
WARP_GROUPS_PER_CU = 16
#: warp.h's WARP_KERNELS bit of each kernel: a program holds the one kernel it is built for
#: (the CPU runtimes compile every kernel of a program at its build)
WARP_KERNEL_BITS = {"ssv_xe_warp": 1, "msv_xj_warp": 2, "vf_xc_warp": 4}
#: defines only the Viterbi filter reads: left out of the SSV/MSV programs' so that variants
#: differing in them share those builds
VF_ONLY_DEFINES = ("VF_DPX", "VF_NTSC_ALU", "VF_NTSC_MASK")


def one_kernel_defines(name: str, defines: dict) -> dict:
    """``defines`` of a program that holds warp.h's kernel ``name`` only."""
    out = {**defines, "WARP_KERNELS": WARP_KERNEL_BITS[name]}
    if name != "vf_xc_warp":
        for key in VF_ONLY_DEFINES:
            out.pop(key, None)
    return out


class ProfileWarpOpenCL(ProfileFiltersOpenCL):
    """The warp-group kernels (one group of lanes per sequence, the model striped over it)."""

    def __init__(self, device: Optional[str] = None, exchange: str = "auto",
                 unoptimized_on_cpu: bool = False):
        super().__init__(device)
        # on CPU devices, programs built without the optimizer (DeviceKit.program's
        # ``unoptimized``): the tests' setting, where PoCL's builds cost more than the runs
        self.unoptimized_on_cpu = unoptimized_on_cpu
        self.variant = dict(warp.TUNED_VARIANT)
        self.path = self._path(exchange)
        self.block = 32 if self.path == "local" else WARP_BLOCK

    def _path(self, exchange: str) -> str:
        """'ptx', the device's sub-group kind when a 32-lane sub-group builds, else 'local'."""
        kit = self.kit
        if exchange == "local" or kit.shuffle is None:
            return "local"
        if kit.shuffle == "ptx":
            return "ptx"
        try:  # a probe build: is a warp exactly one sub-group?
            d = {"MODEL_M": 4, "KP": 29, "QB": 1, "QW": 1, "GROUP": 32, "BLOCK": WARP_BLOCK,
                 "EXCHANGE": EXCHANGE[kit.shuffle]}
            k = kit.kernel(WARP_SOURCE, "ssv_xe_warp", one_kernel_defines("ssv_xe_warp", d))
            size = k.get_sub_group_info(
                kit.device, cl_module().kernel_sub_group_info.MAX_SUB_GROUP_SIZE_FOR_NDRANGE,
                [WARP_BLOCK])
            return kit.shuffle if int(size) == 32 else "local"
        except Exception:  # noqa: BLE001 - a failed build or query: the local path
            return "local"

    def _warp_launch(self, name, kind, model, extra_args, scalars, clock, on_device, seqs, idx):
        """One warp kernel over the sequences ``idx`` (or ``on_device``): ``model`` one model
        (``scalars`` its arguments) or a list, a batch of SSV/MSV models in one launch
        (warp.h's MODELS: the per-model table, outputs [K][n])."""
        n = len(seqs)
        res, offs, ordb, m = self._common(seqs, idx, clock, on_device)
        # the striped rows always: FIXED_DIAG's wide loads are CUDA's, and Intel's CPU compiler
        # crashed building its batched MSV
        variant = {**self.variant, "fixed_diag": 0}
        if isinstance(model, list):
            Q, words = warp.batch_profile(model, kind, variant)
            defines = warp.batch_defines(model, kind, Q, variant, self.block)
            head, n_out = [warp.batch_scalars(model)], len(model) * n
            scalars = [n]
        else:
            Q, words = warp.profile(model, kind, variant)
            defines = warp.defines(model, kind, Q, variant, self.block)
            head, n_out = [], n
        defines["EXCHANGE"] = EXCHANGE[self.path]
        with clock("h2d"):
            prof = self._buf(words)
            head = [self._buf(a) for a in head]
            extra = [self._buf(a) for a in extra_args]
        out = self._output(kind + ("_batch" if head else ""), n_out, on_device)
        if m:
            kern = self.kit.kernel(WARP_SOURCE, name, one_kernel_defines(name, defines),
                                   self.unoptimized_on_cpu)
            per_group = (self.block // 32) * (32 // defines["GROUP"])
            groups = min(-(-m // per_group), self.kit.device.max_compute_units * WARP_GROUPS_PER_CU)
            ev = kern(self.kit.queue, (groups * self.block,), (self.block,), prof, res, offs,
                      ordb, np.int32(m), *head, *map(np.int32, scalars), *extra, out)
            ev.wait()
            # the device's own span (profiling event), as the CUDA twin times with CUDA events
            clock.timing["kernel"] += (ev.profile.end - ev.profile.start) * 1e-9
        return self._finish(out, n_out, clock, on_device)

    def ssv_xe(self, model, seqs, idx, on_device=None):
        """SSV xE of ``model``, or of a list of models (one launch; [K][n] raw values)."""
        scalars = [] if isinstance(model, list) else [model.byte.bias]
        return self._warp_launch("ssv_xe_warp", "ssv", model, [], scalars, self._clock,
                                 on_device, seqs, idx)

    def msv_xj(self, model, seqs, idx, tjbm, on_device=None):
        """Full-MSV xJ of ``model``, or of a list of models (``tjbm`` then [K][n])."""
        if isinstance(model, list):
            scalars = []
        else:
            bp = model.byte
            scalars = [bp.bias, bp.base, bp.tec]
        return self._warp_launch("msv_xj_warp", "msv", model, [tjbm], scalars, self._clock,
                                 on_device, seqs, idx)

    def vf_xc(self, model, seqs, idx, move, on_device=None):
        wp = model.word
        return self._warp_launch("vf_xc_warp", "vf", model, [move],
                                 [wp.base, wp.e_loop, wp.e_move, wp.ddbound], self._clock,
                                 on_device, seqs, idx)


#: the OpenCL runtime and its kernel builds in host memory (310-410 MiB measured on the CPU
#: runtimes with PyOpenCL's cache missing: scripts/memory_ratio.py); the data part, per database
#: byte: the sequences' device layout (padded codes, offsets), its host staging and the scores
OPENCL_RUNTIME_BYTES, DATA_FACTOR = 440 << 20, 4


class OpenCLProfile(Backend):
    """Registry backend: the task-parallel OpenCL filters (``warp``: the warp-group ones)."""
    workload = "profile"
    name = "profile-opencl-task"
    api = "opencl"
    family = "inter-task"
    precision = "int8/int16 exact"
    kinds = ("ssv", "msv", "vf", PIPELINE)

    def __init__(self, device: Optional[str] = None, warp_kernels: bool = False,
                 exchange: str = "auto", unoptimized_on_cpu: bool = False, **params):
        if unoptimized_on_cpu:  # recorded: a CPU device then runs the optimizer-free warp kernels
            params["unoptimized_on_cpu"] = True
        super().__init__(device=device, **params)
        self._runner = None
        self._warp, self._exchange = warp_kernels, exchange
        if warp_kernels:
            self.name, self.family = "profile-opencl-warp", "warp-group"

    def memory_need(self, shape) -> MemoryNeed:
        """The runtime plus the data's layout and staging, on the host (a CPU device's
        buffers are host memory); the data part on the device, and a GPU's OpenCL context."""
        data = DATA_FACTOR * shape.nbytes
        try:
            on_gpu = self.runner().kit.is_gpu      # made by the probe; no device: no GPU part
        except Exception:  # noqa: BLE001
            on_gpu = False
        return MemoryNeed(host=OPENCL_RUNTIME_BYTES + data,
                          device=data + (GPU_CONTEXT_BYTES if on_gpu else 0))

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
            device = self.params.get("device")
            self._runner = (ProfileWarpOpenCL(device, self._exchange,
                                               self.params.get("unoptimized_on_cpu", False))
                            if self._warp
                            else ProfileFiltersOpenCL(device))
            if self._warp:
                self.params["path"] = PATH_NAMES[self._runner.path]
        return self._runner

    def device_name(self) -> str:
        return self.runner().kit.label

    def refuse_reason(self, job) -> Optional[str]:
        return refuse_kind(self.name, self.kinds, job, self._warp) or pipeline_refusal(job)

    def run(self, job) -> Execution:
        clock = StageClock()
        t0 = time.perf_counter()
        out, info = self.runner().search(job, clock)
        if self._warp:
            info["path"] = PATH_NAMES[self.runner().path]
        return Execution(log10=np.asarray(out, np.float64), timing=clock.timing,
                         info={"unit": "nats", "device": self.runner().kit.label,
                               "wall": time.perf_counter() - t0, **info})

    def close(self) -> None:
        if self._runner is not None:
            self._runner.resident.clear()


class OpenCLGenericProfile(OpenCLProfile):
    """Generic Viterbi/Forward, the twin of ``profile-cuda-ganesan``: the body both APIs share
    (kernels_common/profile/generic.h), a work-group per sequence, the D->D chain a partitioned
    scan of affine maps in local memory (float32; Viterbi in log space, Forward in probability
    space with power-of-two row scaling)."""
    name = "profile-opencl-ganesan"
    family = "ganesan-hybrid"
    precision = "float32"
    kinds = GENERIC_KINDS


def backends() -> list:
    return [OpenCLProfile(), OpenCLProfile(warp_kernels=True), OpenCLGenericProfile()]


def devices(probe: bool = True) -> list:
    return opencl_devices(probe)
