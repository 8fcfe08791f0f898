"""The HMMER pipeline's stage operations on a CUDA device (what
:mod:`hmmbench.profile.device.pipeline` calls between the filters: codes, compaction, gathers,
scores, Forward) and a batch of models' device copies (:mod:`hmmbench.profile.batch`), as a
mixin of the CUDA profile device (``cuda._CudaDevice``: its ``timer``, ``buffers``, ``db``,
``_up`` and ``_download``); kernels_cuda/profile/stages.cu."""
from __future__ import annotations

from typing import Callable

import numpy as np

from cpu_reference.profile import bias

from ..model import LOG2

from .cuda_generic import generic_launch, generic_prepare

#: the pipeline's stage kernels (kernels_common/profile/stages.h): work-group size and items
#: per work-item of the compaction
STAGES_SOURCE = "profile/stages.cu"
STAGE_GROUP, STAGE_ITEMS = 256, 16
STAGE_CHUNK = STAGE_GROUP * STAGE_ITEMS
STAGE_DEFINES = {"GROUP_SIZE": STAGE_GROUP, "ITEMS": STAGE_ITEMS}
#: the bias filter's Forward (kernels_cuda/profile/bias.cu): threads per block
BIAS_SOURCE, BIAS_GROUP = "profile/bias.cu", 128


class CudaStages:
    # --- the pipeline's stages on the device (hmmbench.profile.device.pipeline) ------------
    def use_clock(self, timer) -> None:
        self.timer = timer

    # --- what a batch of models adds (hmmbench.profile.batch) ------------------------------
    def copy_bytes(self, dst, dst_offset: int, src, src_offset: int, nbytes: int) -> None:
        """A device-to-device copy of ``nbytes`` (timed as device work, "kernel")."""
        if nbytes:
            with self.timer("kernel"):
                self.drv.memcpy_dtod(int(dst) + dst_offset, int(src) + src_offset, nbytes)

    def scratch(self, name: str, nbytes: int):
        return self.buffers.get(name, nbytes)

    def upload_list(self, idx):
        """A host launch list as a device array (timed h2d)."""
        with self.timer("h2d"):
            return self._up(np.asarray(idx, np.int32))

    def download_ints(self, buf, n: int) -> np.ndarray:
        return self._download(buf, n)

    def _stage_fn(self, name: str):
        return self.cuda.compile(STAGES_SOURCE, STAGE_DEFINES).get_function(name)

    def classify(self, order, m, raw, table=None, width=0, offset=0, thr=None, hi=0, lo=0):
        """Codes of the ``m`` sequences of ``order`` from their raw scores ``raw``."""
        if m == 0:
            return
        none = self.buffers.get("stage_none", 4)
        with self.timer("h2d"):
            tb = self._up(table) if table is not None else none
            th = self._up(thr) if thr is not None else none
        codes = self.buffers.get("codes", self.db.n)
        fn = self._stage_fn("stage_classify")
        with self.timer("kernel"):
            fn(order, np.int32(m), raw, self.db.buffers["classes"], tb, np.int32(width),
               np.int32(offset), th, np.int32(hi), np.int32(lo), codes, **self._grid(m))

    def compact(self, order, m, want: int, name: str) -> tuple:
        """(device list, count) of the entries of ``order[:m]`` whose code is ``want``."""
        out = self.buffers.get(name, 4 * max(m, 1))
        if m == 0:
            return out, 0
        groups = -(-m // STAGE_CHUNK)
        counts = self.buffers.get("stage_counts", 4 * groups)
        total = self.buffers.get("stage_total", 4)
        codes = self.buffers.get("codes", self.db.n)
        block = (STAGE_GROUP, 1, 1)
        with self.timer("kernel"):
            self._stage_fn("stage_count")(order, np.int32(m), codes, np.int32(want), counts,
                                          block=block, grid=(groups, 1))
            self._stage_fn("stage_scan")(counts, np.int32(groups), total, block=(1, 1, 1),
                                         grid=(1, 1))
            self._stage_fn("stage_scatter")(order, np.int32(m), codes, np.int32(want), counts,
                                            out, block=block, grid=(groups, 1))
        return out, int(self._download(total, 1)[0])

    def _grid(self, n: int) -> dict:
        return {"block": (STAGE_GROUP, 1, 1), "grid": (max(1, -(-n // STAGE_GROUP)), 1)}

    def gather(self, table, name: str):
        """table[length class] per sequence, on the device (int8 or int16 tables)."""
        table = np.ascontiguousarray(table)
        n = self.db.n
        out = self.buffers.get(name, table.itemsize * n)
        with self.timer("h2d"):
            t = self._up(table)
        fn = self._stage_fn("gather_u8" if table.itemsize == 1 else "gather_i16")
        with self.timer("kernel"):
            fn(self.db.buffers["classes"], np.int32(n), t, out, **self._grid(n))
        return out

    def finish(self, kind, order, m, raw, per_class, bias, base, tbm, tec, scale) -> None:
        """Scores (and SSV's recompute flags, in the codes) of the listed sequences."""
        if m == 0:
            return
        with self.timer("h2d"):
            pc = self._up(np.asarray(per_class, np.int32))
        fn = self._stage_fn("finish_" + kind)
        with self.timer("kernel"):
            fn(order, np.int32(m), raw, self.db.buffers["classes"], pc,
               *map(np.int32, (bias, base, tbm, tec)), np.float32(scale),
               self.buffers.get("scores", 4 * self.db.n), self.buffers.get("codes", self.db.n),
               **self._grid(m))

    def finished_scores(self) -> np.ndarray:
        """The float32 scores, copied by the device into a page-locked array of the caller's,
        reused once the caller lets it go (a caller keeping several copies them out)."""
        return self._download_handed(self.buffers.get("scores", 4 * self.db.n), self.db.n,
                                     np.float32)

    def bias_forward(self, model, order, m, codes: tuple) -> None:
        """The bias filter's Forward score (esl_hmm_Forward of the filter HMM) of the entries of
        ``order[:m]`` whose stage code is one of ``codes`` (two), launched: a thread each."""
        if m == 0:
            return
        odds = bias.biased_odds(model.composition, model.background, model.Kp)
        _, _, t10, t11 = bias.filter_transitions(model.M, 1)
        with self.timer("h2d"):
            eo = self._up(odds)
        fn = self.cuda.compile(BIAS_SOURCE).get_function("bias_forward")
        with self.timer("kernel"):
            fn(order, np.int32(m), self.buffers.get("codes", self.db.n), np.int32(codes[0]),
               np.int32(codes[1]), self.db.buffers["residues"], self.db.buffers["offsets"], eo,
               np.float32(bias.PI_BACKGROUND), np.float32(bias.PI_BIASED), np.float32(t10),
               np.float32(t11), self.buffers.get("bias_out", 4 * self.db.n),
               block=(BIAS_GROUP, 1, 1), grid=(max(1, -(-m // BIAS_GROUP)), 1))

    def bias_decide(self, model, order, m, codes: tuple, raw: tuple, tjb, terms: tuple,
                    bits: tuple, to: tuple) -> None:
        """The bias filter's decision on the device for the entries of ``order[:m]`` coded one
        of ``codes`` (the MSV survivors, after :meth:`bias_forward`): their MSV scores from
        ``raw`` = (SSV's xE, the full MSV's xJ or None) and ``tjb`` per length class, the filter
        null from the Forward score and ``terms`` = (logf(p1), logf(1 - p1)) per length class,
        the bits against ``bits`` = (F1, F2 thresholds); each coded one of ``to`` = (failed,
        on to the Viterbi filter, on to Forward) and its filter null kept (:meth:`bias_nulls`)."""
        if m == 0:
            return
        bp = model.byte
        xe, xj = raw
        with self.timer("h2d"):
            tables = [self._up(np.ascontiguousarray(a, t))
                      for a, t in ((tjb, np.int32), (terms[0], np.float32),
                                   (terms[1], np.float32))]
        fn = self.cuda.compile(BIAS_SOURCE).get_function("bias_decide")
        with self.timer("kernel"):
            fn(order, np.int32(m), self.buffers.get("codes", self.db.n), np.int32(codes[0]),
               np.int32(codes[1]), xe, xe if xj is None else xj, self.db.buffers["classes"],
               *tables, self.db.buffers["offsets"], self.buffers.get("bias_out", 4 * self.db.n),
               *map(np.int32, (bp.bias, bp.base, bp.tbm, bp.tec)), np.float32(bp.scale),
               np.float64(LOG2), *map(np.float32, bits), *map(np.int32, to),
               self.buffers.get("bias_null", 4 * self.db.n),
               block=(BIAS_GROUP, 1, 1), grid=(max(1, -(-m // BIAS_GROUP)), 1))

    def vf_decide(self, model, order, m, xc, move, bits, to: tuple) -> None:
        """The Viterbi filter's decision against each listed sequence's filter null (kept by
        :meth:`bias_decide`): its score from ``xc`` and the per-sequence ``move`` (device),
        coded ``to`` = (passed, failed) by its bits against ``bits`` (F2)."""
        if m == 0:
            return
        wp = model.word
        fn = self.cuda.compile(BIAS_SOURCE).get_function("vf_decide")
        with self.timer("kernel"):
            fn(order, np.int32(m), xc, move, np.int32(wp.base), np.float32(wp.scale),
               self.buffers.get("bias_null", 4 * self.db.n), np.float64(LOG2),
               np.float32(bits), *map(np.int32, to), self.buffers.get("codes", self.db.n),
               block=(BIAS_GROUP, 1, 1), grid=(max(1, -(-m // BIAS_GROUP)), 1))

    def bias_nulls(self) -> np.ndarray:
        """The filter null scores :meth:`bias_decide` kept, per sequence (float32; only its
        entries; the page-locked buffer, valid until the next float32 download)."""
        return self._download(self.buffers.get("bias_null", 4 * self.db.n), self.db.n,
                              np.float32, copy=False)

    def bias_forward_scores(self) -> np.ndarray:
        """What :meth:`bias_forward` wrote, per sequence (float32; only its entries)."""
        return self._download(self.buffers.get("bias_out", 4 * self.db.n), self.db.n,
                              np.float32)

    def whole_order(self) -> tuple:
        return self.db.buffers["order"], self.db.n

    def codes(self) -> np.ndarray:
        return self._download(self.buffers.get("codes", self.db.n), self.db.n, np.uint8)

    def forward_prepare(self, model, host) -> tuple:
        """The Forward stage's tables, uploaded on the launch stream (beside SSV)."""
        with self.timer("h2d"):
            return generic_prepare(self.db, model, True, host, self._up)

    def forward(self, model, order, m, host, prepared) -> Callable:
        """Forward over the listed sequences, launched; the returned function waits for its
        scores (float32 nats per sequence, read where Forward ran, valid until the next
        download)."""
        out = self.buffers.get("generic_out", 4 * self.db.n)
        generic_launch(self.db, model, order, m, True, self.timer, prepared, out)
        return lambda: self._download(out, self.db.n, np.float32, copy=False)
