"""NumPy reference of HMMER 3.4's SIMD filters, exact integer arithmetic, vectorized.

Vectorized across sequences (a batch of similar-length sequences advances one residue row at a
time) and across model positions (whole rows as arrays); the Viterbi filter's D->D chain is a
cumulative-max scan. The striped layouts of HMMER's SSE code only change the order of the
computation, not its values, so the reference works on unstriped rows.

Scores are what pyhmmer reports: nats (float32 values), ``inf`` for an overflow (eslERANGE),
``nan`` where HMMER's SSV filter answers eslENORESULT (the MSV filter must recompute).
"""
from __future__ import annotations

import numpy as np

from .constants import T_BM, T_DD, T_DM, T_II, T_IM, T_MD, T_MI, T_MM
from .profiles import Profile, Sequences

NEG16 = -32768
#: sequences of about this many residues x positions go through one batch
BATCH_CELLS = 1 << 21


def length_batches(lengths: np.ndarray, M: int, cells: int = BATCH_CELLS):
    """Index batches of sequences sorted by length, each about ``cells`` DP cells wide."""
    order = np.argsort(lengths, kind="stable")
    per = max(1, cells // max(1, M))
    for s in range(0, len(order), per):
        yield order[s:s + per]


def sorted_rows(seqs: Sequences, idx, fill: int):
    """Batch ``idx`` sorted by decreasing length: (order, codes matrix, lengths, active counts).
    Row i of the DP only touches the first ``active[i]`` sequences (those longer than i), so no
    padded cell is computed and a finished sequence keeps its final state."""
    idx = np.asarray(idx)
    order = idx[np.argsort(-seqs.lengths[idx], kind="stable")]
    L = seqs.lengths[order]
    X = seqs.padded(order, fill=fill)
    active = np.searchsorted(-L, -np.arange(X.shape[1]), side="left")
    return order, X, L, active


def _finish_float(num_int, scale) -> np.ndarray:
    """HMMER's ``(float) n / scale - 3.0`` (float32 ops, the 3.0 subtraction in double)."""
    sc = np.asarray(num_int, dtype=np.float32) / np.float32(scale)
    return (sc.astype(np.float64) - 3.0).astype(np.float32)


# --------------------------------------------------------------------------- SSV / MSV
def ssv_xe(model: Profile, seqs: Sequences, idx) -> np.ndarray:
    """SSV's xE (unsigned, begin = 128) per sequence: 128 + best ungapped diagonal score,
    capped at 255 (anything >= 255 - bias is an overflow anyway)."""
    bp = model.byte
    M = model.M
    gain = np.full((model.Kp + 1, M), -255, dtype=np.int16)     # extra row: padding residue
    gain[:model.Kp] = bp.bias - bp.cost.astype(np.int16)
    order, X, L, active = sorted_rows(seqs, idx, model.Kp)
    N, W = X.shape
    V = np.zeros((N, M + 1), dtype=np.int16)                    # V[:, 0] stays 0 (begin)
    best = np.zeros((N, M), dtype=np.int16)
    tmp = np.empty((N, M), dtype=np.int16)
    for i in range(W):
        n = active[i]
        np.add(V[:n, :M], gain[X[:n, i]], out=tmp[:n])
        np.clip(tmp[:n], 0, 255, out=V[:n, 1:])
        np.maximum(best[:n], V[:n, 1:], out=best[:n])
    out = np.empty(N, dtype=np.int64)
    out[_positions(idx, order)] = 128 + best.max(axis=1)
    return out


def _positions(idx, order):
    """Where each element of ``order`` sits in ``idx``."""
    where = {int(v): j for j, v in enumerate(np.asarray(idx))}
    return np.array([where[int(v)] for v in order], dtype=np.int64)


def ssv_from_xe(model: Profile, xE: np.ndarray, L: np.ndarray, tjb=None):
    """HMMER p7_SSVFilter's decision and score from xE; returns (score, needs_msv).
    ``tjb``: ``model.byte.tjb(L)`` when the caller has it already."""
    bp = model.byte
    tjb = bp.tjb(L) if tjb is None else tjb
    score = np.full(xE.shape, np.nan, dtype=np.float32)
    noresult = np.zeros(xE.shape, dtype=bool)
    unsafe = (tjb + bp.tbm + bp.tec + bp.bias) >= 127
    over = xE >= 255 - bp.bias
    sure_over = (bp.base - tjb - bp.tbm) >= 128
    score[over] = np.inf
    noresult |= over & ~sure_over
    xe2 = (xE + bp.base - tjb - bp.tbm - 128) & 0xFFFF                 # uint16 in HMMER
    over2 = ~over & (xe2 >= 255 - bp.bias)
    score[over2] = np.inf
    xj = (xe2 - bp.tec) & 0xFFFF
    jstate = ~over & ~over2 & (xj > bp.base)
    ok = ~over & ~over2 & ~jstate
    score[ok] = _finish_float(xj[ok] - tjb[ok] - bp.base, bp.scale)
    noresult |= jstate
    noresult |= unsafe
    score[unsafe] = np.nan
    score[noresult] = np.nan
    return score, noresult


def msv_full(model: Profile, seqs: Sequences, idx) -> np.ndarray:
    """p7_MSVFilter's full 8-bit MSV (with the J state) for sequences ``idx``."""
    bp = model.byte
    M = model.M
    idx = np.asarray(idx)
    order, X, L, active = sorted_rows(seqs, idx, model.Kp)
    tjb = bp.tjb(L)
    tjbm = (tjb + bp.tbm) & 0xFF                                    # set1_epi8 wraps
    cost = np.full((model.Kp + 1, M), 255, dtype=np.int16)
    cost[:model.Kp] = bp.cost
    N, W = X.shape
    V = np.zeros((N, M + 1), dtype=np.int16)
    xJ = np.zeros(N, dtype=np.int64)
    xB = np.maximum(bp.base - tjbm, 0)
    overflow = np.zeros(N, dtype=bool)
    tmp = np.empty((N, M), dtype=np.int16)
    for i in range(W):
        n = active[i]
        np.maximum(V[:n, :M], xB[:n, None].astype(np.int16), out=tmp[:n])
        tmp[:n] += bp.bias
        tmp[:n] -= cost[X[:n, i]]
        np.clip(tmp[:n], 0, 255, out=V[:n, 1:])
        xE = V[:n, 1:].max(axis=1).astype(np.int64)
        overflow[:n] |= xE + bp.bias >= 255
        xE = np.maximum(xE - bp.tec, 0)
        xJ[:n] = np.maximum(xJ[:n], xE)
        xB[:n] = np.maximum(np.maximum(bp.base, xJ[:n]) - tjbm[:n], 0)
    out = np.empty(N, dtype=np.float32)
    out[_positions(idx, order)] = msv_from_xj(model, xJ, overflow, L)
    return out


def msv_from_xj(model: Profile, xJ, overflow, L, tjb=None) -> np.ndarray:
    """p7_MSVFilter's score from its final xJ (C->T, -3 nats for NN/CC/JJ); inf on overflow.
    ``tjb``: ``model.byte.tjb(L)`` when the caller has it already."""
    bp = model.byte
    tjb = bp.tjb(L) if tjb is None else tjb
    score = _finish_float(np.asarray(xJ, np.int64) - tjb - bp.base, bp.scale)
    score[np.asarray(overflow, bool)] = np.inf
    return score


def ssv_filter(model: Profile, seqs: Sequences) -> np.ndarray:
    """pyhmmer ``OptimizedProfile.ssv_filter`` for every sequence (nan = ENORESULT)."""
    out = np.empty(len(seqs), dtype=np.float32)
    for idx in length_batches(seqs.lengths, model.M):
        out[idx] = ssv_from_xe(model, ssv_xe(model, seqs, idx), seqs.lengths[idx])[0]
    return out


def msv_filter(model: Profile, seqs: Sequences, ssv: np.ndarray | None = None) -> np.ndarray:
    """pyhmmer ``OptimizedProfile.msv_filter``: SSV first, the full MSV where SSV cannot decide."""
    out = (ssv_filter(model, seqs) if ssv is None else np.array(ssv, dtype=np.float32))
    redo = np.flatnonzero(np.isnan(out))
    if redo.size:
        for b in length_batches(seqs.lengths[redo], model.M):
            out[redo[b]] = msv_full(model, seqs, redo[b])
    return out


# --------------------------------------------------------------------------- Viterbi filter
def viterbi_filter(model: Profile, seqs: Sequences) -> np.ndarray:
    """p7_ViterbiFilter (16-bit, lazy F) for every sequence, in nats (inf = overflow)."""
    out = np.empty(len(seqs), dtype=np.float32)
    for idx in length_batches(seqs.lengths, model.M):
        out[idx] = _viterbi_filter_batch(model, seqs, idx)
    return out


def _viterbi_filter_batch(model: Profile, seqs: Sequences, idx) -> np.ndarray:
    wp = model.word
    M = model.M
    idx = np.asarray(idx)
    order, X, L, active = sorted_rows(seqs, idx, model.Kp)
    t = wp.tsc.astype(np.int32)
    BM, MM, IM, DM = t[T_BM, 0:M], t[T_MM, 0:M], t[T_IM, 0:M], t[T_DM, 0:M]   # into k = 1..M
    MD, MI, II = t[T_MD, 1:M + 1], t[T_MI, 1:M + 1], t[T_II, 1:M + 1]          # from k = 1..M
    # D->D prefix sums for the closure: P[k] = sum_{l=1}^{k-1} DD(l), k = 1..M
    P = np.zeros(M, dtype=np.int32)
    np.cumsum(t[T_DD, 1:M], out=P[1:])
    rsc = np.zeros((model.Kp + 1, M), dtype=np.int32)
    rsc[:model.Kp] = wp.match[:, 1:]
    N, W = X.shape
    # the state rows, double-buffered (a row's arrays become the next row's state, no copy)
    Mr, Mn = np.full((N, M), NEG16, dtype=np.int32), np.empty((N, M), dtype=np.int32)
    Ir, In = Mr.copy(), np.empty((N, M), dtype=np.int32)
    Dr, Dn = Mr.copy(), np.empty((N, M), dtype=np.int32)
    Dn[:, 0] = Dr[:, 0] = NEG16                                  # no D_1
    move = wp.move(L).astype(np.int32)
    xN = wp.base
    xB = xN + move
    xJ = np.full(N, NEG16, dtype=np.int32)
    xC = np.full(N, NEG16, dtype=np.int32)
    overflow = np.zeros(N, dtype=bool)
    sh = np.empty((N, M), dtype=np.int32)
    sh[:, 0] = NEG16
    lo, hi = np.int32(NEG16), np.int32(32767)

    for i in range(W):
        n = active[i]
        m, ir, d = Mr[:n], Ir[:n], Dr[:n]
        s = sh[:n]
        sv = Mn[:n]
        np.add(xB[:n, None], BM, out=sv)                         # B->M_k
        np.add(m[:, :M - 1], MM[1:], out=s[:, 1:])               # M(k-1)->M(k)
        np.maximum(sv, s, out=sv)
        np.add(ir[:, :M - 1], IM[1:], out=s[:, 1:])
        np.maximum(sv, s, out=sv)
        np.add(d[:, :M - 1], DM[1:], out=s[:, 1:])
        np.maximum(sv, s, out=sv)
        np.maximum(sv, lo, out=sv)
        sv += rsc[X[:n, i]]
        np.maximum(sv, lo, out=sv)
        np.minimum(sv, hi, out=sv)
        xE = sv.max(axis=1)
        overflow[:n] |= xE >= 32767
        # D candidates from M (M->D), delayed by one position; the last M's too for Dmax
        a = Dn[:n]
        np.add(sv[:, :M - 1], MD[:M - 1], out=a[:, 1:])
        np.maximum(a[:, 1:], lo, out=a[:, 1:])
        Dmax = np.maximum(a[:, 1:].max(axis=1, initial=NEG16),
                          np.maximum(sv[:, M - 1] + MD[M - 1], lo))
        inew = In[:n]
        np.add(m, MI, out=inew)
        np.add(ir, II, out=s)
        np.maximum(inew, s, out=inew)
        np.maximum(inew, lo, out=inew)
        xC[:n] = np.maximum(xC[:n], xE + wp.e_move)
        xJ[:n] = np.maximum(xJ[:n], xE + wp.e_loop)
        xB[:n] = np.maximum(xJ[:n], xN) + move[:n]
        full = Dmax + wp.ddbound > xB[:n]                         # lazy F: D->D may matter
        if full.all():
            np.subtract(a, P, out=s)
            np.maximum.accumulate(s, axis=1, out=s)
            s += P
            np.maximum(s, lo, out=a)
        elif full.any():
            rows = np.flatnonzero(full)
            closure = np.maximum.accumulate(a[rows] - P, axis=1) + P
            a[rows] = np.maximum(closure, lo)
        s[:, 0] = NEG16
        Mr, Mn, Ir, In, Dr, Dn = Mn, Mr, In, Ir, Dn, Dr
    out = np.empty(N, dtype=np.float32)
    out[_positions(idx, order)] = vf_from_xc(model, xC, overflow, L)
    return out


def vf_from_xc(model: Profile, xC, overflow, L) -> np.ndarray:
    """p7_ViterbiFilter's score from its final xC; -inf when C was never reached, inf on overflow."""
    wp = model.word
    xC = np.asarray(xC, np.int64)
    score = _finish_float(xC + wp.move(L).astype(np.int64) - wp.base, wp.scale)
    score[xC <= NEG16] = -np.inf
    score[np.asarray(overflow, bool)] = np.inf
    return score
