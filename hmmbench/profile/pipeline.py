"""Pipeline view: how many sequences pass each stage of HMMER's p7_Pipeline.

Stages and defaults as hmmsearch: MSV filter P <= F1 (0.02, Gumbel with the model's STATS
LOCAL MSV mu/lambda); the biased-composition filter (hmmsearch's default, off with
``bias_filter=False`` as ``--nobias``): the MSV score again against the filter null score
(p7_bg_FilterScore, :mod:`cpu_reference.profile.bias`) instead of null1, P <= F1; Viterbi
filter P <= F2 (1e-3, Gumbel VITERBI; skipped for sequences whose MSV P is already <= F2),
Forward P <= F3 (1e-5, exponential tail FORWARD tau/lambda). Scores in bits are
(raw nats - null) / ln 2 with the null model configured to each target's length: null1, or
past the bias filter its filter score. A stage fails where HMMER's ``P > F`` holds (a NaN
P-value passes, as in HMMER: a model without a COMPO line gives NaN filter scores for some
sequences).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from cpu_reference.profile import bias as pb, filters as pf, generic as pg
from cpu_reference.profile.generic import null_score

from . import libm
from . import reference_memory as rm
from .model import LOG2, ProfileModel, SequenceSet
from .shape import ProfileShape

F1, F2, F3 = 0.02, 1e-3, 1e-5
SMALLX1 = 5e-9            # eslSMALLX1


def gumbel_surv(x, mu, lam) -> np.ndarray:
    """esl_gumbel_surv."""
    y = lam * (np.asarray(x, dtype=np.float64) - mu)
    with np.errstate(over="ignore"):
        ey = -np.exp(-y)
    return np.where(np.abs(ey) < SMALLX1, -ey, 1.0 - np.exp(ey))


def exp_surv(x, tau, lam) -> np.ndarray:
    """esl_exp_surv."""
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(over="ignore"):
        return np.where(x < tau, 1.0, np.exp(-lam * (x - tau)))


def seq_bits(score_nats, nullsc) -> np.ndarray:
    """HMMER's ``(float)((usc - nullsc) / eslCONST_LOG2)``."""
    diff = (np.asarray(score_nats, np.float32) - np.asarray(nullsc, np.float32)).astype(np.float32)
    return (diff.astype(np.float64) / LOG2).astype(np.float32)


@dataclass
class PassCounts:
    searched: int
    msv: int
    bias: int
    vit: int
    fwd: int

    def as_dict(self) -> dict:
        return dict(searched=self.searched, msv=self.msv, bias=self.bias, vit=self.vit,
                    fwd=self.fwd)


def pass_counts(model: ProfileModel, seqs: SequenceSet, msv_fn=None, vit_fn=None,
                fwd_fn=None, F1: float = F1, F2: float = F2, F3: float = F3,
                bias_filter: bool = True):
    """(PassCounts, per-sequence stage reached) using the given score functions
    (defaults: the NumPy references); each is called only on the sequences that reach it."""
    counts, stage, _ = run_stages(model, seqs, msv_fn, vit_fn, fwd_fn, F1, F2, F3, bias_filter)
    return counts, stage


def filter_null(model: ProfileModel, seqs: SequenceSet, idx) -> np.ndarray:
    """The bias filter's null score (p7_bg_FilterScore, float32 nats) of the sequences idx,
    HMMER's bit for bit (the C library's logf in the length terms)."""
    return pb.filter_score(model.M, model.composition, model.background, seqs, idx, model.Kp,
                           log=libm.c_logf)


def bias_stage(model: ProfileModel, seqs: SequenceSet, idx, usc, F1: float = F1,
               F2: float = F2, forward=None, L=None) -> tuple:
    """HMMER's bias filter on the MSV survivors ``idx`` (MSV scores ``usc``): (passed, on to
    the Viterbi filter, filter null score) per survivor. A survivor whose P-value against the
    filter null is <= F2 skips the Viterbi filter (HMMER tests the bias filter's P there).
    ``forward``: the filter HMM's Forward scores of ``idx`` where a device computed them
    (None: the NumPy reference's); ``L``: the lengths of ``idx`` where the caller has them."""
    idx = np.asarray(idx)
    if forward is None:
        forward = pb.filter_forward(model.M, model.composition, model.background, seqs, idx,
                                    model.Kp)
    if L is None:
        L = seqs.offsets[idx + 1] - seqs.offsets[idx]
    fsc = pb.with_length(forward, L, terms=libm.length_terms(L))
    ev = model.evalue
    with np.errstate(invalid="ignore"):
        P = gumbel_surv(seq_bits(usc, fsc), ev["m_mu"], ev["m_lambda"])
        passed = ~(P > F1)
        return passed, passed & (P > F2), fsc


def run_stages(model: ProfileModel, seqs: SequenceSet, msv_fn=None, vit_fn=None, fwd_fn=None,
               F1: float = F1, F2: float = F2, F3: float = F3, bias_filter: bool = True):
    """(PassCounts, stage reached, Forward nats of the sequences that reached Forward,
    NaN elsewhere). The stages past the MSV filter score their survivors in slices
    (:func:`in_slices`) that need no more memory than the MSV filter's batches: however many
    pass, the pipeline holds no more than its first filter."""
    msv_fn = msv_fn or pf.msv_filter
    vit_fn = vit_fn or pf.viterbi_filter
    fwd_fn = fwd_fn or pg.generic_forward
    ev = model.evalue
    L = seqs.lengths
    nonempty = L > 0
    null = pg.null_score(L)
    stage = np.zeros(len(seqs), dtype=np.int8)

    budget = rm.most_batch_need(ProfileShape.of(seqs, model.M, "msv"), "msv")

    def sliced(stage_name, score, idx):
        return in_slices(score, idx, L, model.M, budget, stage_name)

    msv = msv_fn(model, seqs)
    P = gumbel_surv(seq_bits(msv, null), ev["m_mu"], ev["m_lambda"])
    past_msv = nonempty & (P <= F1)
    stage[past_msv] = 1
    need_vit = past_msv & (P > F2)
    if bias_filter:
        surv = np.flatnonzero(past_msv)
        forward = sliced("bias", lambda part: pb.filter_forward(
            model.M, model.composition, model.background, seqs, part, model.Kp), surv)
        passed, to_vit, fsc = bias_stage(model, seqs, surv, np.asarray(msv)[surv], F1, F2,
                                         forward=forward, L=L[surv])
        stage[surv[~passed]] = FAIL_BIAS
        need_vit[surv] = to_vit
        null = null.copy()
        null[surv] = fsc
    past_bias = stage == 1
    need_vit = np.flatnonzero(need_vit)
    past_vit = past_bias.copy()
    if need_vit.size:
        vf = sliced("vf", lambda part: vit_fn(model, seqs.subset(part)), need_vit)
        with np.errstate(invalid="ignore"):
            Pv = gumbel_surv(seq_bits(vf, null[need_vit]), ev["v_mu"], ev["v_lambda"])
        past_vit[need_vit[Pv > F2]] = False
    stage[past_vit] = 2

    idx = np.flatnonzero(past_vit)
    fwd = np.full(len(seqs), np.nan)
    if idx.size:
        fwd[idx] = sliced("forward", lambda part: fwd_fn(model, seqs.subset(part)), idx)
        stage[idx[forward_passes(model, fwd[idx], L[idx], F3, null[idx])]] = 3
    counts = counts_of(stage)
    return PassCounts(**counts), stage, fwd


def in_slices(score, idx, lengths, M: int, budget: int, stage: str) -> np.ndarray:
    """``score(part)`` of the sequences ``idx`` (one value per sequence of ``part``), called on
    length-sorted slices of them that each need at most ``budget`` bytes in ``stage``
    (:func:`hmmbench.profile.reference_memory.survivor_slices`); the values in ``idx`` order.
    A sequence's score does not depend on the others of its slice."""
    idx = np.asarray(idx)
    by_length = np.argsort(lengths[idx], kind="stable")
    out = None
    for start, stop in rm.survivor_slices(lengths[idx][by_length], M, budget, stage):
        where = by_length[start:stop]
        part = np.asarray(score(idx[where]))
        if out is None:
            out = np.empty(idx.size, part.dtype)
        out[where] = part
    return np.empty(0) if out is None else out


def forward_passes(model: ProfileModel, fwd_nats, L, F3: float = F3, null=None) -> np.ndarray:
    """Forward P <= F3 (exponential tail; HMMER's ``P > F3`` fails, so a NaN passes), per
    sequence, against null1 or the given null scores (the bias filter's)."""
    ev = model.evalue
    null = null_score(L) if null is None else null
    with np.errstate(invalid="ignore"):
        return ~(exp_surv(seq_bits(fwd_nats, null), ev["f_tau"], ev["f_lambda"]) > F3)


# --- the pipeline as a per-sequence result (the `pipeline` kind's cross-checked values) -------

#: outcome = STAGE_STEP x stage reached (0: failed MSV, 1: failed Viterbi, 2: failed Forward,
#: 3: passed, FAIL_BIAS = -1: passed MSV, failed the bias filter) + the Forward nats of
#: sequences that reached Forward: a different stage is off by about 1e6, a Forward score by
#: its own error (the kind's tolerance, 0.01 nats)
STAGE_STEP = 1e6


def outcome(stage, fwd) -> np.ndarray:
    """STAGE_STEP x stage, plus the Forward nats (NaN as 0) where the stage is 2 or more: only
    those few entries of ``fwd`` are read (float32 or float64)."""
    stage = np.asarray(stage)
    out = np.multiply(stage, STAGE_STEP, dtype=np.float64)
    hit = np.flatnonzero(stage >= 2)
    out[hit] += np.nan_to_num(np.asarray(fwd)[hit].astype(np.float64))
    return out


def stages_of(values) -> np.ndarray:
    """The stage reached, back from outcome values."""
    return np.floor((np.asarray(values) + STAGE_STEP / 2) / STAGE_STEP).astype(np.int8)


def counts_of(stage) -> dict:
    """Per-stage pass counts (as pyhmmer's Pipeline statistics): past MSV = stage >= 1 or a
    bias failure, past the bias filter = stage >= 1."""
    stage = np.asarray(stage)
    n_bias = int(np.count_nonzero(stage >= 1))
    return dict(searched=int(stage.size), msv=n_bias + int(np.count_nonzero(stage == FAIL_BIAS)),
                bias=n_bias, vit=int(np.count_nonzero(stage >= 2)),
                fwd=int(np.count_nonzero(stage == 3)))


# --- stage decisions as device tables: exact, per target length ------------------------------

#: codes a device writes per sequence between stages: FAIL_* / TO_FORWARD are stages reached
#: (as above); PENDING_* wait for the full MSV or the Viterbi filter
FAIL_MSV, FAIL_VIT, TO_FORWARD, PASSED, PENDING_MSV, PENDING_VIT = 0, 1, 2, 3, 4, 5
#: the stage of a sequence the bias filter stops (set on the host, never a device code)
FAIL_BIAS = -1
#: raw values a table covers: SSV xE = 128 + best diagonal, 128..255 (larger = 255, an
#: overflow either way), MSV xJ -1 (overflow) .. 255; a table's column = raw value + offset
SSV_VALUES, SSV_OFFSET, MSV_VALUES, MSV_OFFSET = 128, -128, 257, 1


#: lengths up to this bound are classed through a count per length (no sort)
COUNTED_LENGTHS = 1 << 20


def length_classes(lengths, order=None) -> tuple:
    """(distinct lengths ascending, class of each sequence = its length's index there): the
    tables are per distinct length. Lengths below COUNTED_LENGTHS are counted (a table from
    length to class), longer ones sorted; ``order`` (the launch order) is not needed and kept
    for the callers that pass it."""
    lengths = np.asarray(lengths)
    if lengths.size == 0:
        return lengths[:0].copy(), np.zeros(0, np.int32)
    if (np.can_cast(lengths.dtype, np.intp) and lengths.min() >= 0
            and lengths.max() < COUNTED_LENGTHS):
        present = np.zeros(int(lengths.max()) + 1, bool)   # a scatter, not bincount: it lets
        present[lengths] = True                            # go of the GIL (the load's copies
        cls_of_length = np.cumsum(present, dtype=np.int32) - 1    # wait on it beside)
        return np.flatnonzero(present).astype(lengths.dtype), cls_of_length[lengths]
    uniq, cls = np.unique(lengths, return_inverse=True)
    return uniq, cls.reshape(-1).astype(np.int32)


def _msv_passes(model: ProfileModel, score, nullsc, F: float) -> np.ndarray:
    """HMMER's MSV-filter decision P <= F for (float32 nats, null score) pairs."""
    ev = model.evalue
    return gumbel_surv(seq_bits(score, nullsc), ev["m_mu"], ev["m_lambda"]) <= F


def gumbel_threshold(mu, lam, F: float) -> float:
    """The x at which esl_gumbel_surv(x) = F: where P <= F begins (up to rounding; F = 0 or 1:
    an infinite estimate, which the search clips)."""
    with np.errstate(divide="ignore"):
        return float(mu) - np.log(-np.log1p(-F)) / float(lam)


def least_true(pred, lo, hi, est, steps: int = 4) -> np.ndarray:
    """Per element the least integer x in [lo, hi] with ``pred(x, idx)`` true, for a predicate
    that only grows with x and holds at ``hi`` (``pred(x, idx)`` decides the elements ``idx`` at
    the candidates ``x``). Starts at the estimate ``est`` and steps to the answer, which it
    verifies (x passes, x - 1 fails); the elements still open after ``steps`` (an estimate off
    by more) are bisected over the whole range. Exact whatever the estimate."""
    lo = np.broadcast_to(np.asarray(lo, np.int64), np.shape(est))
    hi = np.broadcast_to(np.asarray(hi, np.int64), np.shape(est))
    x = np.clip(np.asarray(est, np.int64), lo, hi)
    todo = np.arange(x.size)
    for _ in range(steps):
        if not todo.size:
            return x
        xt = x[todo]
        ok = (xt >= hi[todo]) | pred(xt, todo)
        below = (xt > lo[todo]) & pred(np.maximum(xt - 1, lo[todo]), todo)
        x[todo] = xt + (~ok) - (ok & below)
        todo = todo[~ok | below]
    # bisection for the rest: (a, b] holds the answer, a failing (or below lo), b passing
    a, b = lo[todo] - 1, hi[todo].copy()
    while todo.size and (b - a > 1).any():
        mid = (a + b) // 2
        ok = (mid >= hi[todo]) | pred(np.clip(mid, lo[todo], hi[todo]), todo)
        wide = b - a > 1
        b = np.where(wide & ok, mid, b)
        a = np.where(wide & ~ok, mid, a)
    x[todo] = b
    return x


def _float_key(x) -> np.ndarray:
    """float32 values as int64 keys in the same order (-0 and 0 alike)."""
    i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def _key_float(k) -> np.ndarray:
    k = np.asarray(k, np.int64)
    return np.where(k < 0, (-k) | 0x80000000, k).astype(np.uint32).view(np.float32)


@functools.lru_cache(maxsize=1 << 12)       # per model and threshold: a few calls a search
def least_passing_bits(mu, lam, F: float, steps: int = 4) -> np.float32:
    """The least float32 score in bits whose Gumbel P-value (:func:`gumbel_surv`, as HMMER's
    stages compute it) is <= F: a stage decided per sequence against its own null score
    (past the bias filter) passes exactly where its bits (:func:`seq_bits`) are >= this or
    NaN. :func:`least_true` over the float32 values in order (as int64 keys), from the inverse
    of the tail (``steps`` of it, then bisection): exact because P only falls as the bits grow."""
    est = _float_key(np.float32(np.clip(gumbel_threshold(mu, lam, F), -3e38, 3e38)))
    lo, hi = _float_key(np.float32(-3.4e38)), _float_key(np.float32(3.4e38))
    key = least_true(lambda keys, idx: gumbel_surv(_key_float(keys), mu, lam) <= F, lo, hi,
                     np.array([est]), steps)
    return _key_float(key[0])[()]


def stage_bits_thresholds(model: ProfileModel, F1: float = F1, F2: float = F2) -> tuple:
    """(MSV at F1, MSV at F2, Viterbi filter at F2): :func:`least_passing_bits` of the model's
    E-value parameters, the per-sequence decisions of the bias filter and of the Viterbi
    filter after it (a device compares each sequence's bits with them)."""
    ev = model.evalue
    return (least_passing_bits(ev["m_mu"], ev["m_lambda"], F1),
            least_passing_bits(ev["m_mu"], ev["m_lambda"], F2),
            least_passing_bits(ev["v_mu"], ev["v_lambda"], F2))


def bits_decision(bits, b_pass, b_skip=None) -> np.ndarray:
    """What a device decides from each sequence's bits with those thresholds: 0 failed, 1 on
    to the next filter, 2 past it as well (``b_skip``: the stricter threshold past which the
    next filter is skipped; None: never). NaN passes and skips, as HMMER's ``P > F`` tests."""
    bits = np.asarray(bits, np.float32)
    out = np.where(bits < b_pass, 0, 1 if b_skip is None else np.where(bits < b_skip, 1, 2))
    return np.where(np.isnan(bits), 1 if b_skip is None else 2, out).astype(np.int8)


def _least_passing(model: ProfileModel, scores, nullsc, F: float) -> np.ndarray:
    """Per null score (one per length class) the index of the least of the ascending
    ``scores`` that passes P <= F, ``len(scores)`` where none does. Exact because the decision
    only grows with the score: started at the inverse of the Gumbel tail (:func:`least_true`)."""
    ev = model.evalue
    n = scores.size
    x_star = gumbel_threshold(ev["m_mu"], ev["m_lambda"], F)
    est = np.searchsorted(scores, nullsc.astype(np.float64) + x_star * LOG2)

    def passes(k, idx):
        return _msv_passes(model, scores[np.minimum(k, n - 1)], nullsc[idx], F) & (k < n) | (k >= n)
    return least_true(passes, 0, n, est)


def msv_tables(model: ProfileModel, lengths, F1: float = F1, F2: float = F2) -> tuple:
    """(SSV table [C, 128], MSV table [C, 257]) of codes per length class and raw value: what
    HMMER's MSV filter decides from SSV's xE (PENDING_MSV where SSV cannot decide) and from the
    full MSV's xJ, with the reference's own finishing rules.

    A raw value's score depends on the length only through its N/J->B cost ``tjb`` (a few dozen
    distinct values over any database), so the reference finishes every raw value once per
    distinct tjb; the decision (P <= F1, P <= F2) only grows with the score, so per length class
    it is one least passing score each (:func:`_least_passing`). A row is then its tjb's scores
    against its two thresholds, computed once per distinct (tjb, thresholds, empty) and copied
    to the classes that share them. The same codes as running the reference on every (length,
    raw value) pair (tests/profile/test_tables.py keeps that definition as the oracle)."""
    lengths = np.asarray(lengths, np.int64)
    tjbs, row = np.unique(model.byte.tjb(lengths), return_inverse=True)

    def grid(width, offset):             # (raw values, their tjb) over tjbs x raw values
        raw = np.tile(np.arange(width, dtype=np.int64) - offset, tjbs.size)
        return raw, np.repeat(tjbs, width)
    raw, tjb = grid(SSV_VALUES, SSV_OFFSET)
    ssv, redo = pf.ssv_from_xe(model, raw, np.zeros_like(raw), tjb)
    raw, tjb = grid(MSV_VALUES, MSV_OFFSET)
    msv = pf.msv_from_xj(model, np.maximum(raw, 0), raw < 0, np.zeros_like(raw), tjb)
    scores = np.unique(np.concatenate([ssv[~redo], msv]))        # ascending, no NaN
    nullsc = null_score(lengths)
    k1, k2 = (_least_passing(model, scores, nullsc, F) for F in (F1, F2))
    K = scores.size + 1
    key = ((row.reshape(-1) * K + k1) * K + k2) * 2 + (lengths <= 0)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    thr = np.append(scores, np.float32(np.nan))                  # NaN: nothing passes
    t1, t2 = thr[k1[first]][:, None], thr[k2[first]][:, None]
    empty, rows = (lengths[first] <= 0)[:, None], row.reshape(-1)[first]

    def codes(score, width):
        score = score.reshape(tjbs.size, width)[rows]
        code = np.where(score >= t2, TO_FORWARD, np.where(score >= t1, PENDING_VIT, FAIL_MSV))
        return np.where(empty, FAIL_MSV, code).astype(np.uint8)
    ssv_rows = np.where(redo.reshape(tjbs.size, SSV_VALUES)[rows], PENDING_MSV,
                        codes(ssv, SSV_VALUES)).astype(np.uint8)
    inverse = inverse.reshape(-1)
    return ssv_rows[inverse], codes(msv, MSV_VALUES)[inverse]


#: Viterbi-filter raw xC range: -32768 (C never reached) .. 32768 (overflow)
VF_LOW, VF_HIGH = -32768, 32768


def vf_thresholds(model: ProfileModel, lengths, F2: float = F2) -> np.ndarray:
    """Per length class the least raw xC the Viterbi filter passes (P <= F2): its score only
    grows with xC (an overflow, 32768, always passes), so a threshold decides exactly; found
    from the inverse of the Gumbel tail and verified (:func:`least_true`)."""
    ev = model.evalue
    wp = model.word
    L = np.asarray(lengths, np.int64)
    nullsc = null_score(L)
    move = wp.move(L).astype(np.int64)
    x_star = gumbel_threshold(ev["v_mu"], ev["v_lambda"], F2)
    # score = (xc + move - base) / scale - 3 nats >= nullsc + x* ln 2
    est = np.ceil((nullsc.astype(np.float64) + x_star * LOG2 + 3.0) * wp.scale - move + wp.base)
    est = np.nan_to_num(est, nan=VF_HIGH, posinf=VF_HIGH, neginf=VF_LOW).clip(VF_LOW, VF_HIGH)

    def passes(xc, idx):
        score = pf.vf_from_xc(model, np.minimum(xc, 32767), xc > 32767, L[idx])
        return gumbel_surv(seq_bits(score, nullsc[idx]), ev["v_mu"], ev["v_lambda"]) <= F2

    return least_true(passes, VF_LOW, VF_HIGH, est.astype(np.int64)).astype(np.int32)


def pyhmmer_pass_counts(hmm, block, bias_filter: bool = True) -> PassCounts:
    """The same counts from pyhmmer's Pipeline (peer/oracle; its default: bias filter on)."""
    import pyhmmer  # optional dependency, imported on first use
    return hits_pass_counts(pyhmmer.plan7.Pipeline(hmm.alphabet, bias_filter=bias_filter)
                            .search_hmm(hmm, block))


def hits_pass_counts(hits) -> PassCounts:
    """The pass counts of a pyhmmer search's TopHits (its pipeline's statistics)."""
    st = hits.__getstate__()["pipeline"]
    return PassCounts(searched=hits.searched_sequences, msv=st["n_past_msv"],
                      bias=st["n_past_bias"], vit=st["n_past_vit"], fwd=st["n_past_fwd"])
