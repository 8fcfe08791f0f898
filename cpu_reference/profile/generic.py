"""NumPy reference of HMMER's generic float DP: p7_GViterbi, p7_GForward and p7_GMSV (local multihit).

Vectorized across sequences (length-sorted batches advance one residue row at a time) and across
model positions; the D->D chain of a row is a scan, not a loop over k: for Viterbi, with prefix
sums P(k) = sum_{l<k} tDD(l) and D-entries A(k) = M(k-1) + tMD(k-1),
``D(k) = P(k) + cummax_m(A(m) - P(m))``; Forward runs in probability space, each row scaled by
its B state, the chain a prefix sum of A(m) / prod tDD over stretches of bounded product.
Float64 throughout (HMMER computes in float32 and approximates log-sum-exp with a lookup table;
the bars are 1e-3 nats / 0.01 nats).

p7_GMSV (:func:`generic_msv`) is the MSV model in float log space: ungapped local segments
B -> M_k -> M_k+1 -> ... -> M_j -> E with the J state for multiple hits, every core transition
but M->M dropped (M->M = 0 nats), a uniform entry B->M_k = log(2/(M(M+1))), E->C = log(1/nu),
E->J = log((nu-1)/nu) and its own length model N/C/J loop = log(L/(L+3)), move = log(3/(L+3))
(not the profile's ``specials``: the fixed values of HMMER's generic and SIMD MSV).

Scores are raw nats like HMMER's (before the null model); :func:`null_score` and
:func:`bits` give the bit score against the null model.
"""
from __future__ import annotations

import numpy as np

from .constants import LOG2, T_BM, T_DD, T_DM, T_II, T_IM, T_MD, T_MI, T_MM
from .profiles import Profile, Sequences
from cpu_reference.profile.filters import _positions, length_batches, sorted_rows

NEG = -np.inf


def null_score(L) -> np.ndarray:
    """p7_bg_NullOne for target length(s) L, float32 as HMMER."""
    L = np.asarray(L, dtype=np.float32)
    p1 = L / (L + np.float32(1.0))
    return (L * np.log(p1) + np.log(np.float32(1.0) - p1)).astype(np.float32)


def bits(score_nats, L) -> np.ndarray:
    """Bit score against the null model: (score - nullsc) / ln 2."""
    return ((np.asarray(score_nats, np.float32) - null_score(L)).astype(np.float64) / LOG2)


def generic_viterbi(model: Profile, seqs: Sequences) -> np.ndarray:
    return _run(model, seqs, forward=False)


def generic_forward(model: Profile, seqs: Sequences) -> np.ndarray:
    return _run(model, seqs, forward=True)


#: HMMER's expected number of hits of the MSV model's J state (the SIMD MSV filter's fixed
#: E->C = E->J = log 0.5 is nu = 2; p7_GMSV takes it as an argument, 2.0 its documented default)
MSV_NU = 2.0


def logf(x) -> np.ndarray:
    """C ``logf`` of float32 values: the float64 log rounded to float32. (numpy's own float32
    log is off by an ulp for ~1 in 5 of the length-model ratios; glibc's logf, which HMMER
    calls, differs from this one for ~1 in 1,000.)"""
    return np.log(np.asarray(x, dtype=np.float32).astype(np.float64)).astype(np.float32)


def msv_constants(M: int, nu: float = MSV_NU, log=logf):
    """p7_GMSV's float32 constants (tbmk, tej, tec): uniform entry, E->J, E->C."""
    f = np.float32
    with np.errstate(divide="ignore"):                  # nu = 1: no J state (tej = -inf)
        return (log(f(2.0) / (f(M) * f(M + 1))), log((f(nu) - f(1.0)) / f(nu)),
                log(f(1.0) / f(nu)))


def msv_length_model(L, log=logf):
    """p7_GMSV's float32 (tloop, tmove) for target length(s) L: log(L/(L+3)), log(3/(L+3))."""
    L = np.asarray(L, dtype=np.float32)
    three = np.float32(3.0)
    with np.errstate(divide="ignore"):                  # L = 0: loop = -inf
        return log(L / (L + three)), log(three / (L + three))


def generic_msv(model: Profile, seqs: Sequences, nu: float = MSV_NU,
                dtype=np.float64, log=logf) -> np.ndarray:
    """p7_GMSV scores (nats) of every sequence: the best multihit set of ungapped local segments.

    float64 by default (the reference). ``dtype=np.float32`` does HMMER's own float32 arithmetic,
    operation for operation; with ``log`` = the C library's logf (HMMER's constants) it gives
    p7_GMSV's scores bit for bit (tests), which shows the float64 scores differ from HMMER's only
    by HMMER's float32 rounding (mostly the C state's L-fold ``+ tloop``)."""
    out = np.empty(len(seqs), dtype=np.float64)
    for idx in length_batches(seqs.lengths, model.M, cells=1 << 19):
        out[idx] = _msv_batch(model, seqs, idx, nu, np.dtype(dtype), log)
    return out


def _msv_batch(model: Profile, seqs: Sequences, idx, nu, dtype, log) -> np.ndarray:
    """One length-sorted batch; row i updates only the sequences longer than i (as _batch).
    M(i,k) = msc(x_i, k) + max(M(i-1,k-1), B(i-1) + tbmk): a shifted row, whole arrays over k."""
    M = model.M
    idx = np.asarray(idx)
    order, X, L, active = sorted_rows(seqs, idx, model.Kp)
    msc = np.full((model.Kp + 1, M), NEG, dtype=dtype)                          # + padding row
    msc[:model.Kp] = model.match_scores[:, 1:]
    tbmk, tej, tec = (dtype.type(c) for c in msv_constants(M, nu, log))
    loop, move = (a.astype(dtype) for a in msv_length_model(L, log))
    N, W = X.shape

    prev = np.full((N, M), NEG, dtype=dtype)
    cur = np.full((N, M), NEG, dtype=dtype)
    xN = np.zeros(N, dtype=dtype)
    xB = move.copy()                                                            # S->N->B
    xJ = np.full(N, NEG, dtype=dtype)
    xC = np.full(N, NEG, dtype=dtype)
    for i in range(W):
        n = active[i]
        c = cur[:n]
        c[:, 0] = NEG
        c[:, 1:] = prev[:n, :M - 1]                                             # diagonal
        np.maximum(c, (xB[:n] + tbmk)[:, None], out=c)
        c += msc[X[:n, i]]
        xE = c.max(axis=1)
        xJ[:n] = np.maximum(xJ[:n] + loop[:n], xE + tej)
        xC[:n] = np.maximum(xC[:n] + loop[:n], xE + tec)
        xN[:n] = xN[:n] + loop[:n]
        xB[:n] = np.maximum(xN[:n] + move[:n], xJ[:n] + move[:n])
        prev, cur = cur, prev          # a sequence that ended keeps its last row; never read
    out = np.empty(N)
    out[_positions(idx, order)] = xC + move
    return out


def _run(model, seqs, forward):
    out = np.empty(len(seqs), dtype=np.float64)
    batch = _forward_batch if forward else _batch
    for idx in length_batches(seqs.lengths, model.M, cells=1 << 19):
        out[idx] = batch(model, seqs, idx)
    return out


#: the D->D chain's products are taken over stretches of positions whose D->D scores sum to at
#: most this many nats (e^-250 .. 1: their quotients stay far inside float64's range)
DD_STRETCH_NATS = 250.0


def _dd_stretches(dd: np.ndarray) -> list:
    """(start, end, products) of the stretches of the D->D chain D(k) = D(k-1) tDD(k-1) + A(k)
    over k = 0..M-1 (``dd[k-1]``: ln tDD into k): a stretch starts where the chain is cut
    (tDD = 0) or its running sum would pass DD_STRETCH_NATS; ``products[j]`` is the product
    of tDD from the stretch's start to its position j."""
    M = dd.size + 1
    out, start, total = [], 0, 0.0
    for k in range(1, M + 1):
        if k == M or not np.isfinite(dd[k - 1]) or total + dd[k - 1] < -DD_STRETCH_NATS:
            logs = np.zeros(k - start)
            np.cumsum(dd[start:k - 1], out=logs[1:])
            out.append((start, k, np.exp(logs)))
            start, total = k, 0.0
        else:
            total += dd[k - 1]
    return out


def _forward_batch(model: Profile, seqs: Sequences, idx) -> np.ndarray:
    """Forward of one length-sorted batch in probability space: each sequence's row scaled by
    e^-xB (its B state of the row before, in nats; every state of a row lies within tens of nats
    of it: B enters every M_k), so a row is products and sums, with no exp or log per cell. The
    D->D chain is a prefix sum over each stretch of :func:`_dd_stretches` (A(k) divided by the
    stretch's tDD product to k, summed, multiplied back). The specials stay in nats."""
    M = model.M
    idx = np.asarray(idx)
    order, X, L, active = sorted_rows(seqs, idx, model.Kp)
    # the tables' exp in float64 straight into place (dtype=: the float32 scores are widened
    # in the ufunc's buffers, the same values as a widened copy's, and no whole temporaries)
    with np.errstate(under="ignore"):
        t = np.exp(model.tsc, dtype=np.float64)
    BM, MM, IM, DM = t[T_BM, 0:M], t[T_MM, 0:M], t[T_IM, 0:M], t[T_DM, 0:M]   # into k = 1..M
    MI, II = t[T_MI, 1:M + 1], t[T_II, 1:M + 1]                                 # at k = 1..M
    MD = t[T_MD, 1:M]                                                           # k -> k+1
    stretches = _dd_stretches(model.tsc[T_DD, 1:M].astype(np.float64))
    msc = np.ones((model.Kp + 1, M))                                           # + padding row
    np.exp(model.match_scores[:, 1:], out=msc[:model.Kp], dtype=np.float64)
    isc = np.ones((model.Kp + 1, M))
    np.exp(model.insert_scores[:, 1:], out=isc[:model.Kp], dtype=np.float64)
    isc[:, M - 1] = 0.0                                                         # no I_M
    N, W = X.shape
    loop, move = (a.astype(np.float64) for a in model.specials(L))
    e_loop, e_move = float(model.e_loop), float(model.e_move)
    lae = np.logaddexp

    # the active sequences' rows, scaled by e^-scale (scale: the xB they were computed with)
    Mr, Ir, Dr = np.zeros((N, M)), np.zeros((N, M)), np.zeros((N, M))
    scale = move.copy()
    xN = np.zeros(N)
    xB = move.copy()
    xJ = np.full(N, NEG)
    xC = np.full(N, NEG)
    with np.errstate(divide="ignore", under="ignore"):
        for i in range(W):
            n = active[i]
            m, ir, d = Mr[:n], Ir[:n], Dr[:n]
            x = X[:n, i]
            b = xB[:n]
            f = np.exp(scale[:n] - b)[:, None]           # the row before, rescaled to this xB
            sv = np.empty((n, M))
            sv[:, 0] = BM[0]
            s = sv[:, 1:]
            np.multiply(m[:, :M - 1], MM[1:], out=s)
            s += ir[:, :M - 1] * IM[1:]
            s += d[:, :M - 1] * DM[1:]
            s *= f
            s += BM[1:]
            sv *= msc[x]
            inew = m * MI
            inew += ir * II
            inew *= f
            inew *= isc[x]
            dnew = np.empty((n, M))
            dnew[:, 0] = 0.0
            np.multiply(sv[:, :M - 1], MD, out=dnew[:, 1:])
            for lo, hi, prod in stretches:
                if lo:                                   # the chain from the stretch before
                    dnew[:, lo] += dnew[:, lo - 1] * t[T_DD, lo]
                part = dnew[:, lo:hi]
                part /= prod
                np.cumsum(part, axis=1, out=part)
                part *= prod
            # local mode: every M_k and D_k exits to E
            xE = np.log(sv.sum(axis=1) + dnew.sum(axis=1)) + b
            lp, mv = loop[:n], move[:n]
            xJ[:n] = lae(xJ[:n] + lp, xE + e_loop)
            xC[:n] = lae(xC[:n] + lp, xE + e_move)
            xn = xN[:n]
            xn += lp
            scale[:n] = b
            xB[:n] = lae(xn + mv, xJ[:n] + mv)
            Mr[:n], Ir[:n], Dr[:n] = sv, inew, dnew
    out = np.empty(N)
    out[_positions(idx, order)] = xC + move
    return out


def _batch(model: Profile, seqs: Sequences, idx) -> np.ndarray:
    """Viterbi of one length-sorted batch, in nats."""
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
    comb, scan = np.maximum, np.maximum.accumulate

    # the rows of the active sequences only: a row's arrays are the next row's state (their
    # first ``active[i]`` rows; a finished sequence's row is never read again)
    Mr = np.full((N, M), NEG)
    Ir = np.full((N, M), NEG)
    Dr = np.full((N, M), NEG)
    xN = np.zeros(N)
    xB = move.copy()
    xJ = np.full(N, NEG)
    xC = np.full(N, NEG)
    sh = np.empty((N, M))
    A = np.full((N, M), NEG)
    # a D->D score of -inf makes a - P NaN past it (-inf - -inf): those D entries are -inf
    nan_free = bool(np.isfinite(P).all())

    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        for i in range(W):
            n = active[i]
            m, ir, d, s = Mr[:n], Ir[:n], Dr[:n], sh[:n]
            x = X[:n, i]
            s[:, 0] = NEG
            sv = xB[:n, None] + BM
            np.add(m[:, :M - 1], MM[1:], out=s[:, 1:])
            comb(sv, s, out=sv)
            np.add(ir[:, :M - 1], IM[1:], out=s[:, 1:])
            comb(sv, s, out=sv)
            np.add(d[:, :M - 1], DM[1:], out=s[:, 1:])
            comb(sv, s, out=sv)
            sv += msc[x]
            inew = m + MI
            comb(inew, ir + II, out=inew)
            inew += isc[x]
            a = A[:n]
            np.add(sv[:, :M - 1], MD, out=a[:, 1:])
            dnew = scan(a - P, axis=1)
            dnew += P
            if not nan_free:
                dnew[np.isnan(dnew)] = NEG
            # local mode: every M_k and D_k exits to E (a D_k never beats the M it came
            # from, so this equals HMMER's M_k + D_M form)
            xE = np.maximum(sv.max(axis=1), dnew.max(axis=1))
            lp, mv = loop[:n], move[:n]
            xJ[:n] = comb(xJ[:n] + lp, xE + e_loop)
            xC[:n] = comb(xC[:n] + lp, xE + e_move)
            xn = xN[:n]
            xn += lp
            xB[:n] = comb(xn + mv, xJ[:n] + mv)
            Mr, Ir, Dr = sv, inew, dnew
    out = np.empty(N)
    out[_positions(idx, order)] = xC + move
    return out
