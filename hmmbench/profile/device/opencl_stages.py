"""The HMMER pipeline's stage operations on an OpenCL device (what
:mod:`hmmbench.profile.device.pipeline` calls between the filters: codes, compaction, gathers,
scores, the generic Forward) and a batch of models' device copies (:mod:`hmmbench.profile.batch`),
as a mixin of the OpenCL profile device (``opencl.ProfileFiltersOpenCL``: its ``kit``, ``_db``,
``_clock``, ``_buf`` and ``_download``); kernels_opencl/profile/stages.cl and generic.cl."""
from __future__ import annotations

import numpy as np

from .layout import generic_length_model, generic_tables, generic_threads

#: the pipeline's stage decisions and compaction (kernels_common/profile/stages.h)
STAGES_SOURCE = "profile/stages.cl"
STAGE_DEFINES = {"GROUP_SIZE": 64, "ITEMS": 16}
#: the pipeline's Forward of the survivors (kernels_common/profile/generic.h)
GENERIC_SOURCE = "profile/generic.cl"


class OpenCLStages:
    # --- the pipeline's stages (hmmbench.profile.device.pipeline) ------------------------
    def use_clock(self, clock) -> None:
        self._clock = clock

    # --- what a batch of models adds (hmmbench.profile.batch) ------------------------------
    def copy_bytes(self, dst, dst_offset: int, src, src_offset: int, nbytes: int) -> None:
        """A device-to-device copy of ``nbytes`` (timed as device work, "kernel")."""
        import pyopencl as cl  # optional dependency, imported on first use
        if nbytes:
            with self._clock("kernel"):
                cl.enqueue_copy(self.kit.queue, dst, src, byte_count=nbytes,
                                src_offset=src_offset, dst_offset=dst_offset).wait()

    def scratch(self, name: str, nbytes: int):
        return self.kit.scratch(name, nbytes)

    def upload_list(self, idx):
        """A host launch list as a device buffer (timed h2d)."""
        with self._clock("h2d"):
            return self._buf(np.asarray(idx, np.int32))

    def download_ints(self, buf, n: int) -> np.ndarray:
        return self._download(buf, n, self._clock)

    def _stage(self, name, n_items, args, groups=None):
        kern = self.kit.kernel(STAGES_SOURCE, name, STAGE_DEFINES)
        size = STAGE_DEFINES["GROUP_SIZE"]
        gsize = (groups * size) if groups is not None else -(-n_items // size) * size
        with self._clock("kernel"):
            kern(self.kit.queue, (gsize,), (size,), *args).wait()

    def classify(self, order, m, raw, table=None, width=0, offset=0, thr=None, hi=0, lo=0):
        if m == 0:
            return
        none = self.kit.scratch("stage_none", 16)
        with self._clock("h2d"):
            tb = self._buf(table) if table is not None else none
            th = self._buf(thr) if thr is not None else none
        self._stage("stage_classify", m,
                    (order, np.int32(m), raw, self._db.buffers["classes"], tb, np.int32(width),
                     np.int32(offset), th, np.int32(hi), np.int32(lo), self._codes()))

    def _codes(self):
        return self.kit.scratch("stage_codes", self._db.n)

    def compact(self, order, m, want, name) -> tuple:
        out = self.kit.scratch("stage_" + name, 4 * max(m, 1))
        if m == 0:
            return out, 0
        chunk = STAGE_DEFINES["GROUP_SIZE"] * STAGE_DEFINES["ITEMS"]
        groups = -(-m // chunk)
        counts = self.kit.scratch("stage_counts", 4 * groups)
        total = self.kit.scratch("stage_total", 4)
        codes = self._codes()
        self._stage("stage_count", m, (order, np.int32(m), codes, np.int32(want), counts),
                    groups)
        kern = self.kit.kernel(STAGES_SOURCE, "stage_scan", STAGE_DEFINES)
        with self._clock("kernel"):
            kern(self.kit.queue, (1,), (1,), counts, np.int32(groups), total).wait()
        self._stage("stage_scatter", m,
                    (order, np.int32(m), codes, np.int32(want), counts, out), groups)
        return out, int(self._download(total, 1, self._clock)[0])

    def gather(self, table, name: str):
        """table[length class] per sequence, on the device (int8 or int16 tables)."""
        table = np.ascontiguousarray(table)
        n = self._db.n
        out = self.kit.scratch("gathered_" + name, table.itemsize * n)
        with self._clock("h2d"):
            t = self._buf(table)
        self._stage("gather_u8" if table.itemsize == 1 else "gather_i16", n,
                    (self._db.buffers["classes"], np.int32(n), t, out))
        return out

    def finish(self, kind, order, m, raw, per_class, bias, base, tbm, tec, scale) -> None:
        """Scores (and SSV's recompute flags, in the codes) of the listed sequences."""
        if m == 0:
            return
        with self._clock("h2d"):
            pc = self._buf(np.asarray(per_class, np.int32))
        self._stage("finish_" + kind, m,
                    (order, np.int32(m), raw, self._db.buffers["classes"], pc,
                     *map(np.int32, (bias, base, tbm, tec)), np.float32(scale),
                     self._scores(), self._codes()))

    def _scores(self):
        return self.kit.scratch("stage_scores", 4 * self._db.n)

    def finished_scores(self) -> np.ndarray:
        return self._download(self._scores(), self._db.n, self._clock, np.float32)

    def whole_order(self) -> tuple:
        return self._db.buffers["order"], self._db.n

    def codes(self) -> np.ndarray:
        return self._download(self._codes(), self._db.n, self._clock, np.uint8)

    def generic(self, model, order, m, forward: bool, host) -> np.ndarray:
        """Generic Viterbi or Forward (float32 nats) of the ``m`` sequences of the device list
        ``order``: the kernel CUDA shares (kernels_common/profile/generic.h), a work-group per
        sequence; the other entries are undefined."""
        db, threads = self._db, self.generic_threads or generic_threads(model.M)
        b, out = db.buffers, self.kit.scratch("generic_out", 4 * max(db.n, 1))
        with host("prep"):
            tables = generic_tables(model, forward)
            lengths, _ = generic_length_model(model, db)   # device arrays pass _buf as they are
        with self._clock("h2d"):
            msc, isc, tr = (self._buf(a) for a in tables)
            loop, move = self._buf(lengths["loop"]), self._buf(lengths["move"])
        if m:
            kern = self.kit.kernel(GENERIC_SOURCE, "generic_dp", {
                "MODEL_M": model.M, "THREADS": threads, "FORWARD": int(forward),
                "SUBGROUP": self.generic_subgroup})
            with self._clock("kernel"):
                kern(self.kit.queue, (m * threads,), (threads,), msc, isc, tr,
                     b["residues"], b["offsets"], order, np.int32(m), loop, move,
                     np.float32(model.e_loop), np.float32(model.e_move), out).wait()
        return self._download(out, db.n, self._clock, np.float32)

    def prepare(self, model, kind: str, short: bool = False) -> None:
        """Nothing ahead of a filter's launch: the copies here block, its profile goes up
        with it."""

    def forward_prepare(self, model, host) -> None:
        """Nothing ahead of the Forward stage: the copies here block, the tables go up with
        its launch."""
        return None

    def forward(self, model, order, m, host, prepared):
        """The pipeline's Forward stage (device_pipeline's protocol): run here, its scores
        returned by the function given back."""
        scores = self.generic(model, order, m, True, host)
        return lambda: scores
