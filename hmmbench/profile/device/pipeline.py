"""The whole HMMER pipeline on a device (kind ``pipeline``): MSV filter (P <= F1), the
biased-composition filter on its survivors (hmmsearch's default; off as ``--nobias``), Viterbi
filter on theirs (F2), Forward on theirs (F3), thresholds and statistics as hmmsearch
(:mod:`.pipeline`).

Every stage runs on the resident database: SSV over the whole launch order, the stage decision
per sequence on the device (a code per sequence, looked up in exact per-length tables the host
builds from HMMER's rules, :func:`.pipeline.msv_tables` / :func:`.pipeline.vf_thresholds`), then
an order-preserving compaction of the survivors into the next stage's launch list
(kernels_common/profile/stages.h); only the survivor counts (4 bytes per stage), the codes and
the Forward scores come back. Forward's own threshold is the last decision, taken on the host
from the downloaded scores.

A device implements: ``use_clock(clock)``, ``whole_order()`` -> (list, n), ``ssv_xe`` /
``msv_xj`` / ``vf_xc`` with ``on_device=(list, m)`` -> raw device output, ``classify``,
``compact(list, m, want, name)`` -> (list, count), ``codes()``, ``prepare(model, kind)``: a
filter's profile made ready ahead of its launch, ``forward_prepare(model, host)`` -> the
Forward stage's tables (made while SSV runs), ``forward(model, list, m, host, prepared)`` -> a
function that waits for the float32 nats per sequence (entries of the listed sequences; the
host finishes the other sequences' results while Forward runs).

With the bias filter (hmmsearch's default) the MSV survivors are re-decided against their
filter null score, a score of their own (no per-length table). A device that has the steps
(CUDA: kernels_cuda/profile/bias.cu) keeps it there: the filter HMM's Forward per survivor
(``bias_forward``), then ``bias_decide`` (the MSV score from the raw SSV/MSV values, the filter
null, the bits against the least passing bits at F1 and F2, :func:`.pipeline.least_passing_bits`)
codes each survivor failed / on to the Viterbi filter / on to Forward, and ``vf_decide`` decides
the Viterbi filter against the same null, so MSV -> bias -> Viterbi filter -> Forward chain on
the device with only the survivor counts coming back between them, as without the filter; the
null scores of the sequences that reach Forward come back with its scores (``bias_nulls``).
Elsewhere (OpenCL) the survivors go to the host: their raw SSV/MSV values and the codes come
back, the host finishes their MSV scores and decides the bias filter
(:func:`.pipeline.bias_stage`, the filter HMM's Forward by the NumPy reference), and the Viterbi
filter and Forward run on launch lists the host uploads, their decisions the host's.

The per-sequence result is :func:`.pipeline.outcome` (stage reached x 1e6 + Forward nats), the
same values the NumPy reference gives, so the runner cross-checks it like any kind; per-stage
pass counts and times go to the record's info.
"""
from __future__ import annotations

from contextlib import ExitStack, contextmanager

import numpy as np

import time

from cpu_reference.profile import filters as pf

from .. import libm, pipeline as pl
from .host import FILTER_KINDS, launch_order


def device_scores(dev, model, db, kind: str, host) -> np.ndarray:
    """Scores of ``kind`` (ssv, msv, vf) of every sequence of the resident database ``db``,
    finished on the device (float32 nats, exactly as pyhmmer reports them; a device may give
    them as float64): HMMER's control
    flow (the full MSV only where SSV cannot decide, those compacted on the device), the
    length-dependent terms per distinct length; one download of the scores."""
    if kind not in FILTER_KINDS:
        raise ValueError(f"unknown score {kind!r} (one of {FILTER_KINDS})")
    if db.n == 0:
        return np.zeros(0, np.float32)
    seqs, whole, bp, wp = db.seqs, dev.whole_order(), model.byte, model.word
    if kind == "vf":
        with host("prep"):
            move = wp.move(db.lengths).astype(np.int16)
        xc = dev.vf_xc(model, seqs, None, dev.gather(move, "move"), on_device=whole)
        dev.finish("vf", *whole, xc, move, 0, wp.base, 0, 0, wp.scale)
        return dev.finished_scores()
    xe = dev.ssv_xe(model, seqs, None, on_device=whole)
    with host("prep"):                   # while SSV runs
        tjb = bp.tjb(db.lengths).astype(np.int32)
    dev.finish("ssv", *whole, xe, tjb, bp.bias, bp.base, bp.tbm, bp.tec, bp.scale)
    if kind == "msv":
        # the full MSV's profile and per-sequence tjbm before the count of its sequences comes
        # back (the host waits for SSV there): its launch then waits for nothing
        dev.prepare(model, "msv", short=True)
        tjbm = dev.gather(((tjb + bp.tbm) & 0xFF).astype(np.uint8), "tjbm")
        redo = dev.compact(*whole, 1, "list_redo")
        if redo[1]:
            xj = dev.msv_xj(model, seqs, None, tjbm, on_device=redo)
            dev.finish("msv", *redo, xj, tjb, 0, bp.base, 0, 0, bp.scale)
    return dev.finished_scores()


class _Tee:
    """A stage clock that also times into a second one (the pipeline stage's own)."""

    def __init__(self, *clocks):
        self.clocks = clocks

    @contextmanager
    def __call__(self, stage: str):
        with ExitStack() as stack:
            for clock in self.clocks:
                stack.enter_context(clock(stage))
            yield


def run_pipeline(dev, model, db, host, device, new_clock, seconds_of,
                 bias_filter: bool = True) -> tuple:
    """(outcome per sequence, info) of ``model`` against the resident database ``db`` on
    ``dev``. ``host``: the run's clock of host work (prep), ``device``: of the device's stages
    (the same clock on OpenCL, CUDA events on CUDA); ``new_clock()`` a fresh device clock per
    pipeline stage, ``seconds_of(clock)`` its {stage: seconds}; ``bias_filter``: HMMER's
    biased-composition filter after MSV (False: as --nobias)."""
    seqs, n = db.seqs, db.n
    per_stage = {name: new_clock() for name in ("msv", "vit", "fwd")}
    if n == 0:                                   # nothing to launch
        return np.zeros(0), {"pass_counts": pl.counts_of(np.zeros(0, np.int8)),
                             "bias_filter": bias_filter}
    whole = dev.whole_order()
    dev.use_clock(_Tee(device, per_stage["msv"]))
    # SSV over the whole database first: the launch returns at once, so the host's tables
    # (per distinct length) are computed while the GPU runs it, not before
    xe = dev.ssv_xe(model, seqs, None, on_device=whole)
    on_device = bias_filter and hasattr(dev, "bias_decide")     # the bias decision there
    with host("prep"):
        ssv_table, msv_table = pl.msv_tables(model, db.lengths)
        # with the bias filter, the Viterbi filter's null is each sequence's filter score
        vf_thr = None if bias_filter else pl.vf_thresholds(model, db.lengths)
        bp = model.byte
        tjb = bp.tjb(db.lengths)
        tjbm = ((tjb + bp.tbm) & 0xFF).astype(np.uint8)                # set1_epi8 wraps
        move = model.word.move(db.lengths).astype(np.int16)
        if on_device:
            terms = libm.length_terms(db.lengths)
            bits = pl.stage_bits_thresholds(model)
    fwd_tables = dev.forward_prepare(model, host)
    dev.prepare(model, "msv", short=True)     # the filters after SSV: profiles uploaded now
    dev.prepare(model, "vf")
    tjbm, move = dev.gather(tjbm, "tjbm"), dev.gather(move, "move")
    survivors = {}

    def rescore(want: int, name: str, run_filter, decide) -> tuple:
        """The sequences coded ``want``, compacted in launch order, through one more filter
        and its decision; (how many there were, the filter's raw output or None)."""
        todo = dev.compact(*whole, want, name)
        raw = None
        if todo[1]:
            raw = run_filter(todo)
            decide(todo, raw)
        return todo[1], raw

    dev.classify(*whole, xe, table=ssv_table, width=pl.SSV_VALUES, offset=pl.SSV_OFFSET)
    survivors["msv_recomputed"], xj = rescore(
        pl.PENDING_MSV, "list_msv", lambda todo: dev.msv_xj(model, seqs, None, tjbm, todo),
        lambda todo, raw: dev.classify(*todo, raw, table=msv_table, width=pl.MSV_VALUES,
                                       offset=pl.MSV_OFFSET))
    if bias_filter and not on_device:
        return _bias_pipeline(dev, model, db, host, device, per_stage, seconds_of, survivors,
                              (xe, xj), move, fwd_tables)
    if on_device:
        # the filter HMM's Forward and the decision for every MSV survivor, then the Viterbi
        # filter's against its filter null: no round trip through the host between them
        survived = (pl.PENDING_VIT, pl.TO_FORWARD)
        dev.bias_forward(model, *whole, survived)
        dev.bias_decide(model, *whole, survived, (xe, xj), tjb, terms, bits[:2],
                        (pl.FAIL_BIAS & 0xFF, pl.PENDING_VIT, pl.TO_FORWARD))

        def decide_vit(todo, raw):
            dev.vf_decide(model, *todo, raw, move, bits[2], (pl.TO_FORWARD, pl.FAIL_VIT))
    else:
        def decide_vit(todo, raw):
            dev.classify(*todo, raw, thr=vf_thr, hi=pl.TO_FORWARD, lo=pl.FAIL_VIT)
    dev.use_clock(_Tee(device, per_stage["vit"]))
    survivors["vit_launched"] = rescore(
        pl.PENDING_VIT, "list_vit", lambda todo: dev.vf_xc(model, seqs, None, move, todo),
        decide_vit)[0]

    dev.use_clock(_Tee(device, per_stage["fwd"]))
    fwd_list = dev.compact(*whole, pl.TO_FORWARD, "list_fwd")
    survivors["fwd_launched"] = fwd_list[1]
    stage = dev.codes().view(np.int8)       # final, but for Forward's own threshold
    fwd_scores = dev.forward(model, *fwd_list, host, fwd_tables)
    with host("prep"):                     # while Forward runs: every other sequence's result
        hit = np.flatnonzero(stage >= pl.TO_FORWARD)
        values = np.multiply(stage, pl.STAGE_STEP, dtype=np.float64)   # pl.outcome, but hit
        counts = pl.counts_of(stage)
    fwd = fwd_scores()[hit]                # float32, read where Forward ran
    null = dev.bias_nulls()[hit] if on_device else None
    dev.use_clock(device)
    with host("prep"):
        at = np.flatnonzero(stage[hit] == pl.TO_FORWARD)
        reached = hit[at]
        passed = pl.forward_passes(model, fwd[at].astype(np.float64),
                                   db.lengths[db.classes[reached]],
                                   null=None if null is None else null[at])
        stage[reached[passed]] = pl.PASSED          # 2 -> 3: the same sequences are >= 2
        values[hit] = pl.outcome(stage[hit], fwd)
        counts["fwd"] += int(np.count_nonzero(passed))
    info = {"pass_counts": counts, "stage_launches": survivors, "bias_filter": bias_filter,
            "pipeline_stage_s": {name: seconds_of(c) for name, c in per_stage.items()}}
    if on_device:
        info.update(bias_survivors=counts["msv"], bias_forward="device",
                    bias_decision="device")
    return values, info


def _bias_pipeline(dev, model, db, host, device, per_stage, seconds_of, survivors, raw, move,
                   fwd_tables) -> tuple:
    """The stages after the device's MSV decision with the bias filter (see the module's
    docstring): the host decides, the device runs the Viterbi filter and Forward on the
    lists the host uploads. Host work here is on the search's critical path (the GPU waits),
    so it touches the survivors only, never a per-sequence array of the whole database but
    the codes and the result."""
    seqs, n, ev = db.seqs, db.n, model.evalue
    offsets = seqs.offsets
    xe, xj = raw
    on_device = hasattr(dev, "bias_forward")     # the filter HMM's Forward as a kernel
    if on_device:
        dev.bias_forward(model, *dev.whole_order(), (pl.PENDING_VIT, pl.TO_FORWARD))
    stage = dev.codes().view(np.int8)            # FAIL_MSV / PENDING_VIT / TO_FORWARD
    xe_all = dev.download_ints(xe, n)
    xj_all = dev.download_ints(xj, n) if xj is not None else None
    forward = dev.bias_forward_scores() if on_device else None
    t0 = time.perf_counter()
    with host("prep"):
        surv = np.flatnonzero((stage == pl.PENDING_VIT) | (stage == pl.TO_FORWARD))
        Ls = offsets[surv + 1] - offsets[surv]
        usc, redo = pf.ssv_from_xe(model, xe_all[surv].astype(np.int64), Ls)
        if redo.any():                           # MSV recomputed where SSV could not decide
            xjr = xj_all[surv[redo]].astype(np.int64)
            usc[redo] = pf.msv_from_xj(model, np.maximum(xjr, 0), xjr < 0, Ls[redo])
        passed, to_vit, fsc = pl.bias_stage(
            model, seqs, surv, usc, forward=None if forward is None else forward[surv], L=Ls)
        stage[surv] = np.where(passed, pl.TO_FORWARD, pl.FAIL_BIAS)
        at = np.flatnonzero(to_vit)              # survivor positions, in launch order
        at = launch_order(seqs, at, lengths=Ls[at])
        vit = surv[at]
    bias_s = time.perf_counter() - t0

    dev.use_clock(_Tee(device, per_stage["vit"]))
    survivors["vit_launched"] = int(vit.size)
    if vit.size:
        xc = dev.vf_xc(model, seqs, None, move, on_device=(dev.upload_list(vit), int(vit.size)))
        xc = dev.download_ints(xc, n)[vit].astype(np.int64)
        with host("prep"):
            vf = pf.vf_from_xc(model, np.minimum(xc, 32767), xc > 32767, Ls[at])
            with np.errstate(invalid="ignore"):
                P = pl.gumbel_surv(pl.seq_bits(vf, fsc[at]), ev["v_mu"], ev["v_lambda"])
            failed = P > pl.F2
            stage[vit[failed]] = pl.FAIL_VIT
            passed[at[failed]] = False

    dev.use_clock(_Tee(device, per_stage["fwd"]))
    with host("prep"):
        at = np.flatnonzero(passed)              # survivors on to Forward, in launch order
        at = launch_order(seqs, at, lengths=Ls[at])
        reached = surv[at]
        counts = {"searched": n, "msv": int(surv.size),
                  "bias": int(np.count_nonzero(stage[surv] != pl.FAIL_BIAS)),
                  "vit": int(reached.size), "fwd": 0}
    survivors["fwd_launched"] = int(reached.size)
    if reached.size:
        fwd_scores = dev.forward(model, dev.upload_list(reached), int(reached.size), host,
                                 fwd_tables)
        with host("prep"):                       # while Forward runs
            values = np.multiply(stage, pl.STAGE_STEP, dtype=np.float64)
        fwd = fwd_scores()[reached]
        with host("prep"):
            won = pl.forward_passes(model, fwd.astype(np.float64), Ls[at], null=fsc[at])
            stage[reached[won]] = pl.PASSED
            values[reached] = pl.outcome(stage[reached], fwd)
            counts["fwd"] = int(np.count_nonzero(won))
    else:
        with host("prep"):
            values = np.multiply(stage, pl.STAGE_STEP, dtype=np.float64)
    dev.use_clock(device)
    info = {"pass_counts": counts, "stage_launches": survivors, "bias_filter": True,
            "bias_survivors": int(surv.size), "bias_host_s": bias_s,
            "bias_forward": "device" if on_device else "host", "bias_decision": "host",
            "pipeline_stage_s": {name: seconds_of(c) for name, c in per_stage.items()}}
    return values, info
