"""NumPy float32 emulation of the sub-warp kernel's wavefront (``kernels_common/pairhmm/
subwarp.h``) with per-thread power-of-two exponents -- the scheme proposed for the kernel (issue
13 point 2; not in the CUDA kernel yet, see docs/subwarp-design.md) -- vectorized over pairs.

It mirrors the kernel step by step: a group of ``p`` threads, ``k`` rows per thread, thread t one
column behind thread t-1, the last row's X/I/Dp handed down each step, float32 arithmetic with
fused multiply-adds (a float64 product and sum rounded once to float32, denormals kept as the GPU
keeps them without -ftz). Each thread keeps an int exponent e (its values are the true forward
values times C * 2^e) and converts what it receives by 2^(e_self - e_sender), exactly. Every
``every`` steps each thread looks at its largest value (``check``: which values it looks at) and,
when its binade is outside [low, high], multiplies its state by the power of two that brings it to
``target`` and adds that to e; a thread whose state is still all zero takes its sender's exponent.

``python tests/helpers/subwarp_scaling.py 10s 1m equal-1024@256 ...`` compares the emulation with the
float64 reference on whole sets (the proof recorded in docs/subwarp-numerics.md).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np

from helpers.kernel_defines import value
from hmmbench.pairhmm.model import LOG10_C32, PairSet
from hmmbench.pairhmm.subwarp.cuda import DEFAULT_BINS, DEFAULT_LONG, make_bins
from hmmbench.pairhmm.subwarp.layout import RECURRENCES, f32_floors

F32, F64 = np.float32, np.float64
#: The kernel's constants, read from its header (the emulation cannot drift from them).
DEFS = "pairhmm/subwarp_defs.h"
PAD, N_CODE = value(DEFS, "SW_PAD_CODE"), value(DEFS, "SW_N_CODE")
LOG10_2 = float(np.log10(2.0))
#: Largest exponent gap to the sender a thread may have (the kernel's SW_EXP_MAX_GAP).
MAX_GAP = value(DEFS, "SW_EXP_MAX_GAP")


@dataclass(frozen=True)
class Scheme:
    """The rescaling policy (the kernel's SW_EXP_* defines)."""
    #: steps between checks (SW_EXP_EVERY unrolled iterations of the kernel, 4 steps each)
    every: int = 4 * value(DEFS, "SW_EXP_EVERY")
    low: int = value(DEFS, "SW_EXP_LOW")        # binade window of a thread's largest value ...
    high: int = value(DEFS, "SW_EXP_HIGH")
    target: int = value(DEFS, "SW_EXP_TARGET")  # ... and where a rescale puts it
    prior: bool = True      # threads start at the insertion prior (else at their sender's scale)
    #: the check reads I of every stride-th row (and the last)
    stride: int = value(DEFS, "SW_EXP_STRIDE")
    #: a thread's last two rows held 2^shift up (SW_EXP_SHIFT of the 5op form)
    shift: int = value(DEFS, "SW_EXP_SHIFT", SW_SCALED=RECURRENCES["5op"])


def fma(a, b, c):
    """float32 fused multiply-add: one rounding of the exact result (denormals kept)."""
    return (a.astype(F64) * b + c).astype(F32)


def pow2(k):
    """2^k as float32 for integer arrays k in [-126, 127] (the kernel builds it from bits)."""
    return ((k.astype(np.int32) + 127) << 23).astype(np.int32).view(F32)


def factor(d):
    """The conversion 2^d of what a thread receives, as two float32 factors applied one after
    the other: exact for d <= 252 (gaps over MAX_GAP mark the pair for the float64 kernel), 0
    below -126 (what comes in is then below anything the receiver holds)."""
    d = np.asarray(d)
    f1 = np.where(d < -126, F32(0), pow2(np.clip(d, -126, 126))).astype(F32)
    return f1, pow2(np.clip(d - 126, 0, 126))


def binade(x):
    """floor(log2 x) of positive float32 (denormals read -127, as the bit trick gives)."""
    return ((x.view(np.int32) >> 23) & 0xFF).astype(np.int32) - 127


def _p(q):
    return (10.0 ** (-q.astype(F64) / 10.0)).astype(F32)


def row_coefficients(ps: PairSet, pairs: np.ndarray, rows: int, form: str = "5op"):
    """Per pair and row (padded to ``rows``): the recurrence's coefficients and the 6-code
    emission table, in float32 as setup_rows computes them; bin padding rows are identity rows.
    ``form`` "5op" (the float32 kernels): A, gm (unused), gap, B, with gm in the table; "6op":
    A, gm, gap, Cd."""
    G = len(pairs)
    reads = ps.pair_read[pairs]
    m = ps.read_lengths[reads]
    start = ps.read_offsets[reads]
    pos = np.arange(rows)[None, :]
    inside = pos < m[:, None]
    at = np.where(inside, start[:, None] + pos, 0)
    nxt_in = pos + 1 < m[:, None]
    nxt = np.where(nxt_in, at + 1, 0)
    e, mi, md, gap = _p(ps.base_qual[at]), _p(ps.ins_qual[at]), _p(ps.del_qual[at]), _p(ps.gcp_qual[at])
    gm = F32(1) - gap
    mm = F32(1) - np.minimum(F32(1), mi + md)
    s = np.where(nxt_in, _p(ps.ins_qual[nxt]), F32(1)).astype(F32)
    if form == "5op":
        with np.errstate(divide="ignore", invalid="ignore"):  # gm = 0: NaN rows (recomputed)
            A = mm / (mi * gm)
        prev = np.where(pos > 0, at - 1, 0)
        Cd = np.where(pos > 0, _p(ps.del_qual[prev]) / mi, F32(1)).astype(F32)  # B
        s = (s * gm).astype(F32)
    else:
        A = mm / mi
        gm_next = np.where(nxt_in, F32(1) - _p(ps.gcp_qual[nxt]), F32(0)).astype(F32)
        Cd = gm_next * md / s
    rb = ps.read_bases[at]
    match = (F32(1) - e) * s
    mism = np.where(rb == N_CODE, match, e / F32(3) * s).astype(F32)
    tab = np.zeros((G, rows, 6), F32)
    for c in range(4):
        tab[:, :, c] = np.where(rb == c, match, mism)
    tab[:, :, N_CODE] = match
    z = lambda x, fill: np.where(inside, x, F32(fill)).astype(F32)  # noqa: E731
    tab[~inside] = 0
    gm_first = F32(1) - _p(ps.gcp_qual[start])
    # binades an insertion loses per row: -log2(gap) = q log2(10) / 10 (0 on padding rows)
    ins_decay = np.where(inside, ps.gcp_qual[at].astype(F32) * F32(np.log2(10) / 10), F32(0))
    return z(A, 0), z(gm, 0), z(gap, 1), z(Cd, 0), tab, gm_first, ins_decay.astype(F32)


def emulate_group(ps: PairSet, pairs: np.ndarray, p: int, k: int, scheme: Scheme | None,
                  stats: dict | None = None, form: str = "5op",
                  floors: np.ndarray | None = None) -> np.ndarray:
    """log10 likelihoods of ``pairs`` (all of one (p, k) kernel) through the emulated kernel;
    ``scheme`` None: plain float32 with C = 2^120 (no exponents, today's float32 kernel), pairs
    flagged under GATK's 1e-28 or ``floors`` (each pair's, as ``f32_floors``);
    ``form``: the recurrence, "5op" (the float32 kernels') or "6op"."""
    G, tile = len(pairs), p * k
    m = ps.read_lengths[ps.pair_read[pairs]]
    n = ps.hap_lengths[ps.pair_hap[pairs]]
    n_tiles = int(-(-m.max() // tile))
    A, gm, gap, Cd, tab, gm_first, decay = row_coefficients(ps, pairs, n_tiles * tile, form)
    if form == "5op":
        gm_first = F32(1)  # row 0's B is 1: the injected top row is C/n
    steps = -(-(int(n.max()) + p - 1) // 4) * 4
    hap = np.full((G, steps + 1), PAD, np.int64)
    for g, h in enumerate(ps.pair_hap[pairs]):
        hap[g, :n[g]] = ps.hap(int(h))
    d_init = (gm_first * (F32(2.0 ** 120) / n.astype(F32))).astype(F32)
    gi, ti = np.arange(G)[:, None], np.arange(p)[None, :]
    scratch = None
    worst_gap = 0
    flagged = np.zeros(G, bool)
    for tau in range(n_tiles):
        first, last = tau == 0, tau == n_tiles - 1
        rows = slice(tau * tile, (tau + 1) * tile)
        # (k, G, p) coefficient views: thread t's row r is tile row t*k + r
        shape = lambda a: np.ascontiguousarray(a[:, rows].reshape(G, p, k).transpose(2, 0, 1))  # noqa: E731
        cA, cgm, cgap, cCd = shape(A), shape(gm), shape(gap), shape(Cd)
        ctab = tab[:, rows].reshape(G, p, k, 6)
        cgap_i = cgap.copy()  # the gaps of the I recurrence
        # the last two rows of a thread 2^shift up (SW_EXP_SHIFT): their emissions carry the
        # factor, the last row's A and B take it back, its I gap brings the I of the row above up
        shift = scheme.shift if scheme is not None and form == "5op" else 0
        if shift:
            up_s, down_s = F32(2.0 ** shift), F32(2.0 ** -shift)
            ctab = ctab.copy()
            ctab[:, :, k - 2:, :] *= up_s
            cA, cCd = cA.copy(), cCd.copy()
            cA[k - 1] *= down_s
            cCd[k - 1] *= down_s
            cgap_i[k - 1] *= up_s
        X, I, Dp = (np.zeros((k, G, p), F32) for _ in range(3))
        up = np.zeros((3, G, p), F32)
        dg = np.zeros((3, G, p), F32)
        code = np.full((G, p), PAD, np.int64)
        total = np.zeros((G, p), F32)
        # Prior exponents: the first columns a thread sees are insertions straight down from the
        # tile's top, smaller by the product of the gap probabilities of the rows above it (an
        # exclusive sum over the threads of each thread's own rows, once per read and tile)
        block = decay[:, rows].reshape(G, p, k).sum(axis=2)
        prior = np.rint(np.cumsum(block, axis=1) - block).astype(np.int32)
        if not scheme or not scheme.prior:
            prior[:] = 0
        if first:  # lane 0's injected top row C/n at the target binade from the start
            e = prior + (scheme.target - binade(d_init))[:, None] if scheme else prior
        else:  # the boundary row's first column at the target binade (written by the tile
            # above before its first check, in an uncalibrated scale)
            m_b = scratch[:3, :, 0].max(axis=0)
            lift = np.where(m_b > 0, scheme.target - binade(m_b.astype(F32)), 0) if scheme else 0
            e = (scratch[3][:, 0].astype(np.int32) + lift)[:, None] + prior
        d_src = (d_init * pow2(np.clip(e[:, 0], -126, 127))).astype(F32) if first else None
        if first:
            dg[2, :, 0] = d_src
        f, f2 = factor(e - np.concatenate([e[:, :1], e[:, :-1]], axis=1) - shift)
        new_scratch = np.zeros((4, G, steps + 8), F32) if not last else None
        for s in range(steps):
            code[:, 0] = hap[:, s]
            if first:
                up[:, :, 0] = 0
                up[2, :, 0] = d_src
            else:
                inside = s < n
                b = scratch[:, :, s]
                d0 = e[:, 0] - b[3].astype(np.int32)  # (the scratch's exponent has the shift)
                if scheme is not None:
                    flagged |= inside & (d0 > MAX_GAP - shift)
                f0, f02 = (np.ones(G, F32),) * 2 if scheme is None else factor(d0)
                for v in range(3):
                    up[v, :, 0] = np.where(inside, b[v] * f0 * f02, F32(0))
            E = ctab[gi, ti, :, code].transpose(2, 0, 1)  # (k, G, p)
            dx = np.concatenate([dg[0][None], X[:-1]])
            di = np.concatenate([dg[1][None], I[:-1]])
            dd = np.concatenate([dg[2][None], Dp[:-1]])
            x_left = X
            if form == "5op":  # (cCd holds B, Dp holds Z)
                X = E * fma(cA, dx, fma(cCd, dd, di))
                Dp = fma(cgap, Dp, x_left)
            else:
                X = E * fma(cA, dx, fma(cgm, di, dd))
                Dp = fma(cgap, Dp, cCd * x_left)
            ix, ii = up[0], up[1]
            I = np.empty_like(X)
            for r in range(k):
                I[r] = fma(cgap_i[r], ii, ix)
                ix, ii = X[r], I[r]
            with np.errstate(over="ignore"):
                total = total + (X[k - 1] + I[k - 1])
            if new_scratch is not None and s >= p - 1:
                new_scratch[:3, :, s - (p - 1)] = (X[k - 1][:, p - 1], I[k - 1][:, p - 1],
                                                   Dp[k - 1][:, p - 1])
                new_scratch[3, :, s - (p - 1)] = e[:, p - 1] + shift
            dg = up.copy()
            for v, a in enumerate((X[k - 1], I[k - 1], Dp[k - 1])):
                up[v, :, 1:] = a[:, :-1]
                up[v, :, 0] = a[:, 0]
            code[:, 1:] = code[:, :-1].copy()
            if scheme is None:
                continue
            up *= f[None]
            up *= f2[None]
            if (s + 1) % scheme.every:
                continue
            # --- the check: each thread's largest value; out-of-window threads rescale -------
            # I of every stride-th row bounds X of the rows above it (I = gap I + X); the last
            # X and I; what came in; the reporting thread's running sum
            came_in = up.max(0)
            came_in[:, 0] = 0   # lane 0's up: its own shifted values (the next step overwrites)
            mx = np.maximum(np.maximum(I[scheme.stride - 1::scheme.stride].max(0), X[k - 1]),
                            np.maximum(I[k - 1], came_in))
            if last:
                mx[:, p - 1] = np.maximum(mx[:, p - 1], total[:, p - 1])
            live = mx > 0
            ex = binade(mx)
            # past the haplotype's end (pad columns: X = I = 0, only a decaying Dp) a thread
            # keeps its scale: nothing it computes there is read
            done = (s - np.arange(p))[None, :] >= n[:, None]
            want = np.where(live & ~done & ((ex < scheme.low) | (ex > scheme.high)),
                            e + np.clip(scheme.target - ex, -126, 126), e)
            # dead threads (all zero: the wavefront has not reached them) take the scale of the
            # last live thread above them, moved by their prior difference (ballot + shuffle)
            on = live | done
            src = np.maximum.accumulate(np.where(on, np.arange(p)[None, :], 0), axis=1)
            want = np.where(on, want, np.take_along_axis(want - prior, src, axis=1) + prior)
            sh = np.where(on, want - e, 0)
            if stats is not None:  # how often a group has a thread rescaling (of the checks)
                stats["checks"] = stats.get("checks", 0) + G
                stats["rescaling_checks"] = stats.get("rescaling_checks", 0) + int(
                    (sh != 0).any(axis=1).sum())
            fac = pow2(sh)
            X = X * fac; I = I * fac; Dp = Dp * fac  # noqa: E702
            up = up * fac; dg = dg * fac  # noqa: E702
            with np.errstate(over="ignore"):  # other threads' sums are never read
                total = total * fac
            if first:
                d_src = d_src * fac[:, 0]
            e = want
            d = e - np.concatenate([e[:, :1], e[:, :-1]], axis=1)
            worst_gap = max(worst_gap, int(d[~done].max(initial=0)))
            # over MAX_GAP the sender's values the receiver needs lie in the sender's denormals
            flagged |= ((d > MAX_GAP) & ~done).any(axis=1)
            f, f2 = factor(d - shift)
        scratch = new_scratch
    if stats is not None:
        stats["widest_gap_up"] = max(stats.get("widest_gap_up", 0), worst_gap)
    final = total[:, p - 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.log10(final.astype(F64)) - LOG10_C32
    if scheme is None:  # recompute under the floor
        floor = F32(1e-28) if floors is None else floors.astype(F32)
        return out, ~(final >= floor)
    flagged |= ~((final > 0) & np.isfinite(final))   # nothing left or overflowed: float64
    return out - (e[:, p - 1] + shift) * LOG10_2, flagged


def emulate(ps: PairSet, scheme: Scheme | None = Scheme(), batch: int = 1024,
            stats: dict | None = None, bins: tuple = DEFAULT_BINS,
            long_config: tuple = DEFAULT_LONG, form: str = "5op",
            low_floor: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of ``ps`` through the kernel of its read-length bin (cuda-subwarp's table):
    (log10 results, flags of the pairs the kernel would hand to the float64 recompute);
    ``low_floor``: without exponents, each read's floor (``f32_floors``) instead of 1e-28."""
    bins = make_bins(bins, long_config, ps.max_read_length)
    his = np.array([b.hi for b in bins])
    m = ps.pair_read_lengths
    which = np.searchsorted(his, m)
    out = np.empty(ps.n_pairs)
    redo = np.zeros(ps.n_pairs, bool)
    floors = f32_floors(ps) if low_floor else None
    for i, b in enumerate(bins):
        idx = np.flatnonzero(which == i)
        idx = idx[np.argsort(ps.pair_hap_lengths[idx], kind="stable")]
        for c in range(0, len(idx), batch):
            sel = idx[c:c + batch]
            # overflows and their NaNs stay inside pairs that end up flagged for float64
            with np.errstate(over="ignore", invalid="ignore"):
                out[sel], redo[sel] = emulate_group(ps, sel, b.p, b.k, scheme, stats, form,
                                                    floors[sel] if low_floor else None)
    return out, redo


def compare(ps: PairSet, got: np.ndarray, redo: np.ndarray, ref: np.ndarray) -> dict:
    """Worst |delta log10| over the pairs the float32 path keeps (not flagged for the float64
    recompute) whose float64 reference is finite; how many are flagged; how many finite pairs
    lie below 1e-28, 1e-38, 1e-300 (likelihood, log10 of the result)."""
    fin = np.isfinite(ref)
    below = {f"below_1e-{x}": int(np.sum(ref[fin] < -x)) for x in (28, 38, 300)}
    fin &= ~redo
    d = np.abs(got[fin] - ref[fin])
    return {"pairs": int(ps.n_pairs), "float64": int(redo.sum()),
            "max_err": float(np.max(d, initial=0.0)), "over_1e-4": int(np.sum(~(d <= 1e-4))),
            **below, "min_log10_kept": float(np.min(ref[fin], initial=0.0))}


def main(argv: list[str]) -> int:
    from cpu_reference.pairhmm import forward_log10
    from hmmbench.pairhmm.datasets import resolve
    for name in argv:
        ps = resolve(name).load()
        t0 = time.time()
        ref = forward_log10(ps, "float64")
        stats: dict = {}
        got, redo = emulate(ps, Scheme(), stats=stats)
        row = compare(ps, got, redo, ref)
        row.update(stats, seconds=round(time.time() - t0, 1))
        if ps.n_pairs <= 4096:  # today's float32 kernel: pairs it recomputes
            row["today_float64"] = int(emulate(ps, None)[1].sum())
        print(name, row, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
