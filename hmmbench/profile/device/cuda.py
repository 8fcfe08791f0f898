"""CUDA (PyCUDA) backends of the profile filters: kernels_cuda/profile/filters.cu.

``profile-cuda-ganesan``: generic Viterbi/Forward, a block per sequence, the D->D chain as a
partitioned scan (kernels_cuda/profile/generic.cu; Forward in probability space).
``profile-cuda-task``: one thread per sequence (unstriped rows, [k][seq] interleaved in global
memory). ``profile-cuda-warp``: warp-group kernels with the tuned defines (``TUNED_VARIANT``:
GROUP lanes per sequence by ``auto_group``, int16 DPX cells, residue prefetch, lazy MSV xE, DPX
saturation in the Viterbi filter); ``profile-cuda-cudampf``: the same source with the original
CUDAMPF-style defines (``CUDAMPF_VARIANT``: warp per sequence, packed-byte SIMD). The kernels
return HMMER's raw integers; a search finishes them on the device with the reference's rules
(:func:`hmmbench.profile.device.pipeline.device_scores`, kernels_common/profile/finish.h; the
development driver's path: :mod:`hmmbench.profile.device.host`), so the scores are HMMER's. The
database stays resident across a run's models and kinds (:mod:`hmmbench.profile.device.resident`);
kind ``pipeline`` runs HMMER's pipeline on the device (:mod:`hmmbench.profile.device.pipeline`).
Compiled at run time per model length and variant (``-DMODEL_M -DQB -DQW -DGROUP ...``) through
the project's CUDA glue (:mod:`hmmbench.apis.cuda`); timed with CUDA events; persistent
grids of resident blocks.

Status: run on an H100 (tests/profile/test_cuda.py GPU tests, git show 8903acf:scripts/device_profile.py):
identical to the reference; figures in docs/profile-design.md.
"""
from __future__ import annotations

import time
from typing import NamedTuple, Optional

import numpy as np

from ...apis import cuda
from ...apis.cuda_timing import EventTimer
from ...backend import DEFAULT_MEMORY_FACTOR, Backend, Execution, StageClock
from ...memory import MemoryNeed
from ..batch import batch_info
from ..job import PIPELINE, ProfileBatch, pipeline_refusal, refuse_kind
from . import layout
from . import warp
from .batch import batch_scores
from .cuda_stages import STAGE_DEFINES, CudaStages  # noqa: F401 - STAGE_DEFINES re-exported
from .cuda_resident import UPLOAD_BUFFERS, UPLOAD_CHUNK, UPLOAD_THREADS, fill, resident_cache
from .cuda_uploads import FIRST_BYTES as UPLOAD_ARENA_BYTES, Uploads
from .host import FILTER_KINDS
from .kept import KeptModels, model_key
from .reused import ReusedArrays
from .cuda_generic import (GENERIC_SOURCE, generic_launch, generic_prepare,  # noqa: F401
                           generic_scores)
from .pipeline import device_scores, run_pipeline
from .resident import load_info
from .warp import CUDAMPF_VARIANT, TUNED_VARIANT, auto_group  # noqa: F401 - re-exported

SOURCE = "profile/filters.cu"
BLOCK = 128
#: shared memory one block may hold (H100/H200 opt-in maximum is 227 KiB)
SMEM_LIMIT = 227 * 1024


class _Kernel(NamedTuple):
    fn: object
    smem: int
    group: int                  # lanes per sequence (warp kernels)
    grid_cap: int               # the persistent grid: blocks resident at once (warp kernels)
    info: dict                  # the launch's info without its grid


def resident_blocks(fn, block: int, smem_bytes: int, sm_count: int) -> int:
    """Blocks that fit on the GPU at once (registers, warps, shared memory): the persistent grid."""
    regs_per_warp = -(-max(fn.num_regs, 1) * 32 // 256) * 256
    warps = min(64, 65536 // regs_per_warp)
    per_sm = min(32, warps // (block // 32))
    if smem_bytes:
        per_sm = min(per_sm, (228 * 1024) // (smem_bytes + 1024))
    return max(1, per_sm) * sm_count


class _CudaDevice(CudaStages):
    """The device protocol of :mod:`hmmbench.profile.device.host` on one CUDA context."""

    def __init__(self, warp: bool, variant: Optional[dict] = None):
        self.cuda, self.drv, self.warp = cuda, cuda.driver(), warp
        self.variant = dict(TUNED_VARIANT if variant is None else variant)
        self.resident = resident_cache()
        self.kept = KeptModels()                # profiles' words, kernels: per model
        # a search's scores: page-locked arrays handed out, reused once the caller lets go
        self.results = ReusedArrays(
            allocate=lambda n, dtype: self.drv.pagelocked_empty(max(n, 1), dtype)[:n])
        self.buffers = cuda.DeviceBuffers()     # outputs and scratch, grown once, reused
        self._pinned: dict = {}                 # page-locked download buffers by name
        self.db = None                          # the ResidentDatabase of the current search
        # the search's uploads (profiles, tables, lists): asynchronous on the launch stream,
        # so the host never waits for a kernel to upload the next step's data
        self.uploads = Uploads(self.drv)
        self.begin(None)

    def begin(self, timer) -> None:
        """A new search: its stage timer, a fresh launch list for its info (and the upload
        arenas from the start, should a caller not have ended the last search)."""
        if self.uploads.used:
            self.end(failed=True)
        self.timer = timer
        self.launches: list = []            # (kernel, defines, grid, registers) for info
        self._prepared: dict = {}           # the search's uploaded profiles, by model and kind

    def end(self, failed: bool = False) -> None:
        """The search is over (its results are on the host, so its copies are done): the
        upload arenas are reused from the start. A failed search may have copies in flight:
        the device finishes them first."""
        if failed:
            self.drv.Context.synchronize()
        self.uploads.reset()
        self._prepared = {}

    def _defines(self, model, kind: str, Q: int, variant: dict) -> dict:
        if self.warp and isinstance(model, list):
            return warp.batch_defines(model, kind, Q, variant, BLOCK)
        if self.warp:
            return warp.defines(model, kind, Q, variant, BLOCK)
        M = model.M
        return {"MODEL_M": M, "BLOCK": BLOCK, "KP": model.Kp, "QB": layout.n_vectors(M, 128),
                "QW": layout.n_vectors(M, 64)}

    def group(self, M: int, kind: str) -> int:
        return warp.group(self.variant, M, kind)

    def _up(self, arr):
        """A host array's device copy, enqueued on the launch stream (a device array,
        gathered there already, passes)."""
        if not isinstance(arr, np.ndarray):
            return arr
        return self.uploads.put(arr)

    def _seq_arrays(self, seqs, idx):
        """Residues, offsets (resident) and the launch order ``idx``: the resident order's
        device copy, or an upload of a subset (the MSV recomputes, the pipeline's survivors)."""
        db = self.db
        if db is None or db.seqs is not seqs:      # a caller without a search (device drivers)
            db, _ = self.resident.get_seqs(seqs, ("set", id(seqs)))
        b = db.buffers
        if db.is_whole_order(idx):
            return b["residues"], b["offsets"], b["order"]
        with self.timer("h2d"):
            return b["residues"], b["offsets"], self._up(np.asarray(idx, np.int32))

    def _variant(self, kind: str, short: bool) -> dict:
        """The defines' variant of a launch (``short``: a full MSV over a short list)."""
        return warp.short_list_variant(self.variant) if short and kind == "msv" else self.variant

    def prepare(self, model, kind: str, short: bool = False) -> tuple:
        """(Q, [device profile], words) of the warp kernel of ``kind`` for ``model`` (a list:
        a batch), uploaded once per search (its host words built once while the model is
        kept): a caller that knows a launch is coming prepares it while the GPU is busy, so
        the launch itself waits for nothing. ``short``: the full MSV's over a short list
        (HMMER's recomputes, ``warp.SHORT_LIST``)."""
        if not self.warp:
            return 0, [], 0
        variant = self._variant(kind, short)
        key = (model_key(model), kind, variant["group"])
        if key not in self._prepared:
            Q, words = self.kept.get(("profile", *key), model,
                                     lambda: self._profile(model, kind, variant))
            with self.timer("h2d"):
                self._prepared[key] = (Q, [self._up(words)], words.size)
        return self._prepared[key]

    def _profile(self, model, kind: str, variant: dict):
        """(Q, host uint32 words) of the warp kernels' profile for ``kind`` (a list of models:
        the batch's)."""
        if isinstance(model, list):
            return warp.batch_profile(model, kind, variant)
        return warp.profile(model, kind, variant)

    def _launch(self, model, name, kind, n_items, args, Q=0, profile_words=0, short=False):
        kernel = self.kept.get(("kernel", model_key(model), name, kind, Q, profile_words, short),
                               model, lambda: self._kernel(model, name, kind, Q, profile_words,
                                                           short))
        if self.warp:
            needed = -(-n_items // (32 // kernel.group))          # warps
            grid = max(1, min(-(-needed // (BLOCK // 32)), kernel.grid_cap))
        else:
            grid = max(1, -(-n_items // BLOCK))
        self.launches.append({"kernel": kernel.info["kernel"], "grid": grid, **kernel.info})
        with self.timer("kernel"):
            kernel.fn(*args, block=(BLOCK, 1, 1), grid=(grid, 1), shared=kernel.smem)

    def _kernel(self, model, name, kind, Q, profile_words, short) -> "_Kernel":
        """The compiled kernel of a launch and what its grid and info need (kept per model)."""
        defines = self._defines(model, kind, Q, self._variant(kind, short))
        smem = 4 * profile_words if self.warp and self.variant["smem"] else 0
        if smem > SMEM_LIMIT:
            smem = 0                                   # too big for shared memory: __ldg path
        defines["PROFILE_SMEM"] = int(smem > 0)
        fn = self.cuda.compile(SOURCE, defines).get_function(name + ("_warp" if self.warp else "_task"))
        group, grid_cap = 0, 0
        if self.warp:
            if smem > 48 * 1024:
                fn.set_attribute(self.drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
            group = defines["GROUP"]
            grid_cap = resident_blocks(fn, BLOCK, smem, self.cuda.device_attributes()["sm_count"])
        info = {"kernel": fn_name(name, self.warp), "registers": fn.num_regs, "smem": smem,
                **{k: defines[k] for k in sorted(defines)}}
        return _Kernel(fn, smem, group, grid_cap, info)

    def _download(self, out, n, dtype=np.int32, copy=True):
        """n values of ``out`` through a page-locked buffer: a copy, so the next download
        cannot overwrite what the caller holds (``copy=False``: the buffer itself, for a caller
        done with it before the next download of that type)."""
        dtype = np.dtype(dtype)
        host = self._pinned.get(dtype)
        if host is None or host.size < n:
            host = self._pinned[dtype] = self.drv.pagelocked_empty(max(n, 1), dtype)
        with self.timer("d2h"):
            self.drv.memcpy_dtoh(host[:n], out)
        if not copy:
            return host[:n]
        # the copy by the staging threads (one core's copy out of the page-locked buffer is
        # the slow part of a large download)
        result = np.empty(n, dtype)
        fill(result, host[:n], UPLOAD_THREADS)
        return result

    def _download_handed(self, out, n, dtype) -> np.ndarray:
        """n values of ``out`` copied by the device straight into a page-locked array handed
        to the caller, reused once the caller lets it go (no copy on the host)."""
        result = self.results.take(n, dtype)
        with self.timer("d2h"):
            self.drv.memcpy_dtoh(result, out)
        return result

    def _filter(self, model, seqs, idx, name, kind, profile, scalars, extra, task_rows,
                on_device=None):
        """One filter kernel over sequences ``idx`` of ``seqs``: arguments ``profile`` (device
        arrays), residues, offsets, order, count, ``scalars``, ``extra`` (device arrays, uploaded
        after the profile), the task kernels' row buffers (``task_rows``: one per entry, bytes
        per model position and sequence), the output. Returns the raw int32 per sequence; with
        ``on_device`` = (device launch list, count) it runs that list of the resident database
        and returns the device output instead (the pipeline's stages). ``model`` a list: a
        batch of warp SSV/MSV models in one launch (the per-model table for ``scalars``, the
        outputs [K][n])."""
        n = len(seqs)
        batch = isinstance(model, list)
        if batch and not self.warp:
            raise ValueError("a batch of models runs on the warp kernels only")
        n_out = len(model) * n if batch else n
        if on_device is None:
            if len(idx) == 0:                         # nothing to launch (empty set)
                return np.zeros(n_out, np.int32)
            res, offs, order = self._seq_arrays(seqs, idx)
            m = len(idx)
        else:
            order, m = on_device
            res, offs = self.db.buffers["residues"], self.db.buffers["offsets"]
        Q, nwords = 0, 0
        short = not batch and m <= warp.SHORT_LIST
        if self.warp:
            Q, prof, nwords = self.prepare(model, kind, short)
        with self.timer("h2d"):
            if not self.warp:
                prof = [self._up(a) for a in profile]
            head = ([self._up(warp.batch_scalars(model)), np.int32(n)] if batch
                    else list(map(np.int32, scalars)))
            extra = [self._up(a) for a in extra]
        out = self.buffers.get("out_" + kind + ("_batch" if batch else ""), 4 * n_out)
        args = prof + [res, offs, order, np.int32(m), *head, *extra]
        if not self.warp:
            args += [self.buffers.get(f"rows{i}", b * m * model.M)
                     for i, b in enumerate(task_rows)]
        self._launch(model, name, kind, m, args + [out], Q, nwords, short)
        return out if on_device is not None else self._download(out, n_out)

    def ssv_xe(self, model, seqs, idx, on_device=None):
        if isinstance(model, list):
            return self._filter(model, seqs, idx, "ssv_xe", "ssv", [], [], [], [], on_device)
        return self._filter(model, seqs, idx, "ssv_xe", "ssv", [model.byte.cost],
                            [model.byte.bias], [], task_rows=[1], on_device=on_device)

    def msv_xj(self, model, seqs, idx, tjbm, on_device=None):
        if isinstance(model, list):                    # tjbm: [K][n]
            return self._filter(model, seqs, idx, "msv_xj", "msv", [], [], [tjbm], [],
                                on_device)
        bp = model.byte
        return self._filter(model, seqs, idx, "msv_xj", "msv", [bp.cost],
                            [bp.bias, bp.base, bp.tec], [tjbm], task_rows=[1],
                            on_device=on_device)

    def vf_xc(self, model, seqs, idx, move, on_device=None):
        wp = model.word
        return self._filter(model, seqs, idx, "vf_xc", "vf", [wp.match, wp.tsc],
                            [wp.base, wp.e_loop, wp.e_move, wp.ddbound], [move],
                            task_rows=[2, 2, 2], on_device=on_device)


#: Host bytes per sequence a CUDA profile call makes (from the code: the length classes and
#: the launch order with its sort, the downloaded scores and stage codes).
HOST_SEQUENCE_BYTES = 48
#: Device memory of a filter call (from the code): per sequence, the launch order, length
#: classes, scores and stage codes; the task kernels' DP rows, bytes per sequence and model
#: position by kind; and the modules' and local memory's part (a first call on 2M and 20M
#: residues took 2-4 MiB past the arrays on an H200, in 2 MiB pages: docs/working-memory.md).
DEVICE_SEQUENCE_BYTES, DEVICE_MODULE_BYTES = 16, 8 << 20
TASK_ROW_BYTES = {"ssv": 1, "msv": 1, "vf": 6}


def fn_name(name: str, warp: bool) -> str:
    return name + ("_warp" if warp else "_task")


class _CudaProfileBackend(Backend):
    """What every CUDA profile backend shares: the CUDA probe, the GPU's name, the kinds it takes."""
    workload = "profile"
    api = "cuda"
    kinds: tuple = ()

    def unavailable_reason(self) -> Optional[str]:
        return cuda.unavailable_reason()

    def device_name(self) -> str:
        return cuda.gpu_name()

    def refuse_reason(self, job) -> Optional[str]:
        return refuse_kind(self.name, self.kinds, job, getattr(self, "warp", False))

    def memory_need(self, shape) -> MemoryNeed:
        """Host: the driver, context and kernel builds (cuda.HOST_RUNTIME_BYTES, measured on an
        H200), the page-locked staging buffers of the database's upload and the search's upload
        arena, and the per-sequence arrays; the residues are uploaded from the database itself
        (page-locked in place), not copied.
        Device: the default budget (DEFAULT_MEMORY_FACTOR x the database's bytes); the filter
        backends' own is measured (CudaProfile.memory_need)."""
        host = (cuda.HOST_RUNTIME_BYTES + UPLOAD_BUFFERS * UPLOAD_CHUNK + UPLOAD_ARENA_BYTES
                + HOST_SEQUENCE_BYTES * shape.sequences)
        return MemoryNeed(host=host, device=DEFAULT_MEMORY_FACTOR * shape.nbytes)


class CudaProfile(_CudaProfileBackend):
    """The filter kernels per kind, and the whole pipeline on the device (kind ``pipeline``:
    these filters, stage decisions and compaction, the generic Forward kernel of
    profile-cuda-ganesan; :mod:`hmmbench.profile.device.pipeline`)."""
    precision = "int8/int16 exact"
    kinds = FILTER_KINDS + (PIPELINE,)

    def refuse_reason(self, job) -> Optional[str]:
        return super().refuse_reason(job) or pipeline_refusal(job)

    def __init__(self, name: str, family: str, warp: bool, variant: Optional[dict] = None):
        super().__init__(warp=warp, **(variant or {}))
        self.name, self.family, self.warp = name, family, warp
        self.variant = variant
        self._device: Optional[_CudaDevice] = None   # kept across runs: the resident database

    def memory_need(self, shape) -> MemoryNeed:
        """The host part as every CUDA profile backend's; a filter's device part: the resident
        database, the search's upload arena (its device twin), the per-sequence arrays and the
        task kernels' DP rows (a pipeline's or a batch's stays the default budget, not measured)."""
        need = super().memory_need(shape)
        # a pipeline's first filter (SSV) runs on every sequence, the later ones on the few
        # that pass: on 2M residues its peak was the SSV filter's (docs/working-memory.md); a
        # batch runs on the warp kernels, which keep no DP rows in global memory
        kind = "ssv" if shape.kind == PIPELINE else shape.kind
        if kind not in TASK_ROW_BYTES:
            return need
        rows = 0 if self.warp else TASK_ROW_BYTES[kind] * shape.sequences * shape.M
        device = (shape.nbytes + UPLOAD_ARENA_BYTES + DEVICE_SEQUENCE_BYTES * shape.sequences
                  + rows + DEVICE_MODULE_BYTES)
        return MemoryNeed(host=need.host, device=device)

    def device(self) -> "_CudaDevice":
        if self._device is None:
            self._device = _CudaDevice(self.warp, self.variant)
        return self._device

    def run(self, job) -> Execution:
        timer = EventTimer()
        dev = self.device()
        t0 = time.perf_counter()
        host = StageClock()                        # host "prep" spans; device stages: events
        dev.begin(timer)
        dev.db, load = dev.resident.get(job)
        nbytes = dev.db.load_bytes
        extra, failed = {}, True
        try:
            if isinstance(job, ProfileBatch):
                out = batch_scores(dev, job.models, dev.db, job.kind, host)
                extra = batch_info(job)
            elif job.kind == PIPELINE:
                out, extra = run_pipeline(dev, job.model, dev.db, host, timer, EventTimer,
                                          lambda t: t.seconds(), job.bias_filter)
            else:
                out = device_scores(dev, job.model, dev.db, job.kind, host)
            failed = False
        finally:
            dev.db = None
            dev.end(failed)
        timing = dict(host.timing)
        for stage, s in timer.seconds().items():
            timing[stage] = timing.get(stage, 0.0) + s
        info = load_info(job, load, timing, nbytes)
        # scores stay float32 as computed (HMMER's); the runner widens what it compares
        return Execution(log10=out if out.dtype == np.float32 else np.asarray(out, np.float64),
                         timing=timing,
                         info={"unit": "nats", "wall": time.perf_counter() - t0,
                               "family": self.family, "launches": dev.launches, **extra,
                               **info})

    def close(self) -> None:
        if self._device is not None:
            self._device.resident.clear()
            self._device.buffers.free()
            self._device = None


class CudaGenericProfile(_CudaProfileBackend):
    """Generic Viterbi/Forward, Ganesan-style hybrid: a block per sequence, the D->D chain as a
    partitioned scan of affine maps (float32; Viterbi in log space, Forward in probability
    space with power-of-two row scaling)."""
    family = "ganesan-hybrid"
    precision = "float32"
    kinds = ("viterbi", "forward")
    name = "profile-cuda-ganesan"

    def __init__(self):
        super().__init__()
        self.resident = resident_cache()

    def memory_need(self, shape) -> MemoryNeed:
        """The host part as every CUDA profile backend's; on the device the resident database
        and its per-sequence arrays, in CUDA's pages (the model's tables and the scores share
        the small ones'): 2 and 4 MiB measured on 0.2M and 2M residues on an H200."""
        need = super().memory_need(shape)
        return MemoryNeed(host=need.host, device=cuda.device_pages(
            [shape.nbytes, DEVICE_SEQUENCE_BYTES * shape.sequences]))

    def run(self, job) -> Execution:
        model, seqs = job.model, job.seqs
        timer, host = EventTimer(), StageClock()
        t0 = time.perf_counter()
        db, load = self.resident.get(job)
        scores = generic_scores(db, model, db.buffers["order"], len(seqs),
                                job.kind == "forward", timer, host)
        timing = dict(host.timing)
        for stage, s in timer.seconds().items():
            timing[stage] = timing.get(stage, 0.0) + s
        info = load_info(job, load, timing, db.load_bytes)
        return Execution(log10=scores.astype(np.float64), timing=timing,
                         info={"unit": "nats", "wall": time.perf_counter() - t0, **info})

    def close(self) -> None:
        self.resident.clear()


def backends() -> list:
    return [CudaProfile("profile-cuda-task", "inter-task", warp=False),
            CudaProfile("profile-cuda-warp", "warp-group", warp=True, variant=TUNED_VARIANT),
            CudaProfile("profile-cuda-cudampf", "warp", warp=True, variant=CUDAMPF_VARIANT),
            CudaGenericProfile()]
