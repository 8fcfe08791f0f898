"""NumPy reference of HMMER's generic float DP: p7_GViterbi and p7_GForward (local multihit).

Vectorized across sequences (length-sorted batches advance one residue row at a time) and across
model positions; the D->D chain of a row is a scan, not a loop over k: with prefix sums
P(k) = sum_{l<k} tDD(l) and D-entries A(k) = M(k-1) + tMD(k-1),
``D(k) = P(k) + cummax_m(A(m) - P(m))`` for Viterbi and the same with a cumulative
log-sum-exp for Forward. Float64 throughout (HMMER computes in float32 and approximates
log-sum-exp with a lookup table; the bars are 1e-3 nats / 0.01 nats).

Scores are raw nats like HMMER's (before the null model); :func:`null_score` and
:func:`bits` give the bit score against the null model.
"""
from __future__ import annotations

import numpy as np

from hmmbench.profile.model import (LOG2, ProfileModel, SequenceSet, T_BM, T_DD, T_DM, T_II,
                                    T_IM, T_MD, T_MI, T_MM)
from cpu_reference.profile_filters import _positions, length_batches, sorted_rows

NEG = -np.inf


def null_score(L) -> np.ndarray:
    """p7_bg_NullOne for target length(s) L, float32 as HMMER."""
    L = np.asarray(L, dtype=np.float32)
    p1 = L / (L + np.float32(1.0))
    return (L * np.log(p1) + np.log(np.float32(1.0) - p1)).astype(np.float32)


def bits(score_nats, L) -> np.ndarray:
    """Bit score against the null model: (score - nullsc) / ln 2."""
    return ((np.asarray(score_nats, np.float32) - null_score(L)).astype(np.float64) / LOG2)


def generic_viterbi(model: ProfileModel, seqs: SequenceSet) -> np.ndarray:
    return _run(model, seqs, forward=False)


def generic_forward(model: ProfileModel, seqs: SequenceSet) -> np.ndarray:
    return _run(model, seqs, forward=True)


def _run(model, seqs, forward):
    out = np.empty(len(seqs), dtype=np.float64)
    for idx in length_batches(seqs.lengths, model.M, cells=1 << 19):
        out[idx] = _batch(model, seqs, idx, forward)
    return out


def _batch(model: ProfileModel, seqs: SequenceSet, idx, forward: bool) -> np.ndarray:
    M = model.M
    idx = np.asarray(idx)
    order, X, L, active = sorted_rows(seqs, idx, model.Kp)
    t = model.tsc.astype(np.float64)
    BM, MM, IM, DM = t[T_BM, 0:M], t[T_MM, 0:M], t[T_IM, 0:M], t[T_DM, 0:M]   # into k = 1..M
    MI, II = t[T_MI, 1:M + 1], t[T_II, 1:M + 1]                                 # at k = 1..M
    MD = t[T_MD, 1:M]                                                           # k -> k+1
    P = np.zeros(M)
    np.cumsum(t[T_DD, 1:M], out=P[1:])
    msc = np.zeros((model.Kp + 1, M))
    msc[:model.Kp] = model.match_scores[:, 1:]
    isc = np.zeros((model.Kp + 1, M))
    isc[:model.Kp] = model.insert_scores[:, 1:]
    isc[:, M - 1] = NEG                                                         # no I_M
    N, W = X.shape
    loop, move = (a.astype(np.float64) for a in model.specials(L))
    e_loop, e_move = float(model.e_loop), float(model.e_move)
    comb = np.logaddexp if forward else np.maximum
    scan = np.logaddexp.accumulate if forward else np.maximum.accumulate

    Mr = np.full((N, M), NEG)
    Ir = np.full((N, M), NEG)
    Dr = np.full((N, M), NEG)
    xN = np.zeros(N)
    xB = move.copy()
    xJ = np.full(N, NEG)
    xC = np.full(N, NEG)
    sh = np.empty((N, M))
    A = np.full((N, M), NEG)

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for i in range(W):
            n = active[i]
            m, ir, d, s = Mr[:n], Ir[:n], Dr[:n], sh[:n]
            s[:, 0] = NEG
            sv = xB[:n, None] + BM
            np.add(m[:, :M - 1], MM[1:], out=s[:, 1:])
            sv = comb(sv, s)
            np.add(ir[:, :M - 1], IM[1:], out=s[:, 1:])
            sv = comb(sv, s)
            np.add(d[:, :M - 1], DM[1:], out=s[:, 1:])
            sv = comb(sv, s)
            sv += msc[X[:n, i]]
            inew = comb(m + MI, ir + II) + isc[X[:n, i]]
            a = A[:n]
            a[:, 1:] = sv[:, :M - 1] + MD
            dnew = scan(a - P, axis=1) + P
            dnew[np.isnan(dnew)] = NEG
            # local mode: every M_k and D_k exits to E (for Viterbi a D_k never beats
            # the M it came from, so this equals HMMER's M_k + D_M form)
            if forward:
                xE = np.logaddexp(np.logaddexp.reduce(sv, axis=1), np.logaddexp.reduce(dnew, axis=1))
            else:
                xE = np.maximum(sv.max(axis=1), dnew.max(axis=1))
            xJ[:n] = comb(xJ[:n] + loop[:n], xE + e_loop)
            xC[:n] = comb(xC[:n] + loop[:n], xE + e_move)
            xN[:n] = xN[:n] + loop[:n]
            xB[:n] = comb(xN[:n] + move[:n], xJ[:n] + move[:n])
            Mr[:n], Ir[:n], Dr[:n] = sv, inew, dnew
    out = np.empty(N)
    out[_positions(idx, order)] = xC + move
    return out
