"""NumPy reference of HMMER 3.4's biased-composition filter score (p7_bg_FilterScore).

The filter null model is a two-state HMM over the residues (p7_bg_SetFilter): state 0 emits the
background frequencies, state 1 the model's mean composition (``hmm->compo``); state 0's self
transition is the null model's length parameter p1 = L / (L + 1) of the target (p7_bg_SetLength
overwrites SetFilter's L0 = 400 there), state 1's is L1 / (L1 + 1) with L1 = M / 8; both exit
to the end with probability 1; pi = (0.999, 0.001). Emissions are odds against the background
(esl_hmm_Configure), so state 0 emits 1.0 for every residue. The score is esl_hmm_Forward's --
a scaled probability-space Forward: each row normalized by its maximum, the float32 logs of
those maxima summed in order -- plus the null model's length distribution:
``fwd + L * logf(p1) + logf(1 - p1)``.

Float32 throughout, operation for operation as HMMER (no fused multiply-add, the row logs in
double then rounded, the log sum sequential), so the scores are HMMER's bit for bit given the
length model's two ``logf``: HMMER's are the C library's, which a caller passes (``log``;
hmmbench.profile.libm through ctypes); the default, the float64 log rounded, differs from
glibc's logf at 17 of the lengths up to 100,000, L = 74 and 102 among them.
Vectorized across sequences: a length-sorted batch advances one residue at a time, the row
maxima are logged per block of rows at once.
"""
from __future__ import annotations

import numpy as np

from .generic import logf

#: p7_bg_SetFilter's constants
PI_BACKGROUND, PI_BIASED = 0.999, 0.001
BIASED_LENGTH_DIVISOR = 8.0
#: easel's amino alphabet (ACDEFGHIKLMNPQRSTVWY-BJZOUX*~): the degenerate codes and the
#: canonical residues each stands for (X: all 20); gap, nonresidue and missing data emit 1.0
AMINO_DEGENERATE = {21: (2, 11), 22: (7, 9), 23: (3, 13), 24: (8,), 25: (1,),
                    26: tuple(range(20))}
#: rows logged at once (the row maxima wait in a block of this many rows)
LOG_ROWS = 256
#: sequences of about this many residues go through one batch
BATCH_RESIDUES = 1 << 23


def biased_odds(composition, background, Kp: int,
                degenerate: dict = AMINO_DEGENERATE) -> np.ndarray:
    """esl_hmm_Configure's odds of state 1 per residue code (Kp + 1 values, the last for the
    padding code): compo[x] / f[x]; a degenerate code sums both over its residues in code
    order; every other non-canonical code 1.0."""
    compo = np.asarray(composition, np.float32)
    f = np.asarray(background, np.float32)
    K = f.size
    eo = np.ones(Kp + 1, np.float32)
    eo[:K] = compo[:K] / f
    for x, ys in degenerate.items():
        num, den = np.float32(0.0), np.float32(0.0)
        for y in ys:                           # sequential float32 sums, as easel
            num, den = np.float32(num + compo[y]), np.float32(den + f[y])
        eo[x] = num / den if den > 0 else np.float32(0.0)
    return eo


def filter_transitions(M: int, L) -> tuple:
    """(t00, t01, t10, t11) float32: state 0's from the target length(s) L (p7_bg_SetLength),
    state 1's from the model length M (p7_bg_SetFilter)."""
    f = np.float32
    L = np.asarray(L)
    p1 = (L.astype(np.float32) / (L + 1).astype(np.float32)).astype(np.float32)
    L1 = f(M / BIASED_LENGTH_DIVISOR)
    return p1, (f(1.0) - p1).astype(np.float32), f(1.0) / (L1 + f(1.0)), L1 / (L1 + f(1.0))


def filter_score(M: int, composition, background, seqs, idx=None, Kp: int = 29,
                 log=logf) -> np.ndarray:
    """p7_bg_FilterScore (float32 nats) of the sequences ``idx`` (default: all), in ``idx``
    order; NaN for an empty sequence (the pipeline never scores one). ``log``: the length
    model's ``logf`` (HMMER's bit for bit with the C library's)."""
    idx = np.arange(len(seqs.offsets) - 1) if idx is None else np.asarray(idx, np.int64)
    fwd = filter_forward(M, composition, background, seqs, idx, Kp)
    return with_length(fwd, _lengths(seqs, idx), log=log)


def _lengths(seqs, idx) -> np.ndarray:
    """The lengths of the sequences ``idx`` (from the offsets: no pass over the database)."""
    return seqs.offsets[idx + 1] - seqs.offsets[idx]


def length_terms(L, log=logf) -> tuple:
    """(logf(p1), logf(1 - p1)) float32 per target length, p1 = L / (L + 1) in float32
    (p7_bg_SetLength); ``log``: the ``logf`` to use (HMMER's is the C library's)."""
    p1 = filter_transitions(1, np.asarray(L))[0]
    with np.errstate(divide="ignore"):                          # L = 0: never scored
        return log(p1), log(np.float32(1.0) - p1)


def with_length(forward, L, terms=None, log=logf) -> np.ndarray:
    """The filter score from esl_hmm_Forward's score: ``fwd + L * logf(p1) + logf(1 - p1)``
    in float32; ``terms``: the two logs per sequence where the caller has them
    (:func:`length_terms` with ``log`` otherwise)."""
    L = np.asarray(L)
    lp, lq = length_terms(L, log) if terms is None else terms
    lf = L.astype(np.float32)
    with np.errstate(invalid="ignore"):                         # L = 0: never scored
        step = (np.asarray(forward, np.float32) + (lf * lp).astype(np.float32))
        return (step.astype(np.float32) + lq).astype(np.float32)


def filter_forward(M: int, composition, background, seqs, idx, Kp: int = 29) -> np.ndarray:
    """esl_hmm_Forward's score (float32 nats) of the filter HMM for the sequences ``idx``, in
    ``idx`` order; NaN for an empty sequence."""
    idx = np.asarray(idx, np.int64)
    out = np.full(idx.size, np.nan, np.float32)
    if not idx.size:
        return out
    eo = biased_odds(composition, background, Kp)
    L = _lengths(seqs, idx)
    keep = np.flatnonzero(L > 0)
    # length-sorted batches of at most BATCH_RESIDUES padded residues (or one sequence)
    order = keep[np.argsort(L[keep], kind="stable")]
    Ls = L[order].astype(np.int64)
    start = 0
    while start < order.size:
        padded = np.arange(1, order.size - start + 1) * Ls[start:]     # grows with the end
        stop = start + max(1, int(np.searchsorted(padded, BATCH_RESIDUES, side="right")))
        part = order[start:stop]
        out[part] = _batch(M, eo, seqs, idx[part], Kp)
        start = stop
    return out


def _batch(M, eo, seqs, idx, Kp) -> np.ndarray:
    f = np.float32
    perm = np.argsort(-_lengths(seqs, idx), kind="stable")   # longest first
    order = idx[perm]
    L = _lengths(seqs, order)
    X = seqs.padded(order, fill=Kp)
    N, W = X.shape
    active = np.searchsorted(-L, -np.arange(W), side="left")  # row i: the first active[i]
    t00, t01, t10, t11 = filter_transitions(M, L)
    E1 = eo[X.T]                                       # state 1's odds, a row per residue
    # row 1: dp = eo * pi, normalized by its maximum (state 0's odds are 1.0)
    d0 = np.full(N, f(PI_BACKGROUND), np.float32)
    d1 = (E1[0] * f(PI_BIASED)).astype(np.float32)
    mx = np.maximum(d0, d1)
    d0 /= mx
    d1 /= mx
    logsc = np.zeros(N, np.float32)
    block = np.ones((LOG_ROWS, N), np.float32)        # the row maxima of rows not yet logged
    block[0] = mx
    filled = 1
    n0, n1, tmp = (np.empty(N, np.float32) for _ in range(3))
    for i in range(1, W + 1):
        if filled == LOG_ROWS or i == W:               # a block's logs, summed row by row
            rows = log_rows(block[:filled])
            logsc = np.cumsum(np.vstack([logsc[None], rows]), axis=0, dtype=np.float32)[-1]
            block[:filled] = 1.0
            filled = 0
        if i == W:
            break
        n = active[i]
        a, b, c, t = n0[:n], n1[:n], d0[:n], tmp[:n]
        np.multiply(c, t00[:n], out=a)                 # state 0: d0 t00 + d1 t10 (odds 1.0)
        np.multiply(d1[:n], t10, out=t)
        a += t
        np.multiply(c, t01[:n], out=b)                 # state 1: (d0 t01 + d1 t11) eo
        np.multiply(d1[:n], t11, out=t)
        b += t
        b *= E1[i, :n]
        m = block[filled, :n]
        np.maximum(a, b, out=m)                        # (ESL_MAX from 0.0: odds are >= 0)
        np.divide(a, m, out=c)
        np.divide(b, m, out=d1[:n])
        filled += 1
    # the end: t[k][E] = 1, the sum's log last (after rows of 0.0: an exact no-op)
    logsc = (logsc + log_rows((d0 + d1)[None])[0]).astype(np.float32)
    out = np.empty(N, np.float32)
    out[perm] = logsc
    return out


def log_rows(values) -> np.ndarray:
    """esl_hmm_Forward's ``sc[i] = log(max)``: a float32 value's double log, stored as float."""
    return np.log(np.asarray(values, np.float32).astype(np.float64)).astype(np.float32)
