"""Vectorized GATK4 Pair-HMM forward algorithm over a whole pair set (float64 and float32; long
double for the pairs past float64's normal range).

Layout (the timed ``prep`` step: :func:`layout`, then each group's arrays just before its turn)
    Pairs are sorted by haplotype length, then read length, and cut into groups of similar shape
    (real data has few distinct haplotype lengths, so groups waste little on either axis).
    Group arrays are built one group at a time, so memory stays bounded by the largest group.
    A group of ``G`` pairs keeps every per-row quantity as a flat C-order ``(rows, G)`` array: row
    ``k`` of all pairs side by side. Pairs are *bottom-aligned*: a pair with read length ``m_g`` in
    a group of height ``m`` has its DP row ``i`` at array row ``k = i + (m - m_g)``, so every pair's
    last row is array row ``m``. Rows above a pair's row 0 are padding with all-zero probabilities.

Wavefront (the timed ``kernel`` step, :func:`forward_sums`)
    Anti-diagonal ``t`` holds the cells with ``k + j = t`` (``j`` the haplotype column, the same for
    every pair of the group at a given ``(k, t)``). With three diagonals of M/I/D kept as flat
    arrays, the dependencies become contiguous slices: M(k,t) reads row k-1 of diagonal t-2,
    I(k,t) row k-1 of t-1, D(k,t) row k of t-1. Shifting by one row is an offset of ``G`` elements,
    so each step is a handful of in-place ufuncs over one contiguous block. Haplotype codes are
    pre-skewed (stored reversed) so the bases facing rows ``lo..hi`` on diagonal ``t`` are a plain
    slice too. Only rows ``max(1, t - n) .. min(m, t - 1)`` are computed (``1 <= j <= n``).

Initial row: GATK's LoglessPairHMM sets ``D[0][j] = C / n`` for *every* padded column, ``j = 0``
included (so M[1][1] gets ``gm * C / n``); the expected GATK/GKL results only agree with that.
Row 0 of each pair is an array row with ``dd = 1`` and every other probability 0, preset to
``C / n`` in all three diagonal buffers, so it carries the constant along without special cases.

Emission: read and haplotype bases are one-hot bit masks (A=1, C=2, G=4, T=8, N=15), so
"match or either is N" is ``(read & hap) != 0`` and the emission is ``mismatch + diff * match``.

Final sum: ``sum_j M[m][j] + I[m][j]`` is added up sequentially over ``j`` as GATK does, so a
pair's result has the same bits whatever group it lands in.

Probabilities are the pair set's ``probs`` (:mod:`.pairs`) (M->M = 1 - min(1, M->I + M->D), clamped at 0
as GATK4 does). GATK4's Java table also forms that sum with a log-table approximation, which no
real data here can tell apart.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Optional

import numpy as np

from .constants import C32, C64, F32_MIN_ACCEPTED, LOG10_C32, LOG10_C64
from .pairs import Pairs

#: float64 and float32 as GATK computes them; "longdouble" the float64 maths (the same C and
#: probabilities) in the platform's long double -- on x86 80 bits, down to 1e-4951 -- for pairs
#: whose float64 sum falls subnormal (log10 likelihood below about -615 with C = 2^1020) and keeps
#: only a few bits: there GATK's float64 result is off by up to ~1e-3 (docs/subwarp-numerics.md).
PRECISIONS = {"float64": (np.float64, C64, LOG10_C64), "float32": (np.float32, C32, LOG10_C32),
              "longdouble": (np.longdouble, C64, LOG10_C64)}

#: Base code (A C G T N) -> one-hot bit mask; N matches everything.
_BASE_BITS = np.array([1, 2, 4, 8, 15], dtype=np.uint8)

#: Layout tuning: most elements (rows x pairs) per group array, keeping a diagonal step's
#: working set near the CPU caches; how much padded work (relative to useful cells) a group may
#: add before a new group starts (fewer, fuller groups mean fewer Python-level steps).
DEFAULT_GROUP_ELEMENTS = 32768
DEFAULT_SLACK = 0.5

# Field order of the per-row probability block (see Group.probs).
_DIFF, _MISMATCH, _MM, _GM, _MI, _II, _MD, _DD = range(8)


@dataclass
class Group:
    """Pairs laid out for one wavefront; flat arrays are C-order (rows, size)."""
    pair_index: np.ndarray   # (size,) positions of these pairs in the pair set
    rows: int                # m: the longest read of the group
    cols: int                # n: the longest haplotype of the group
    read_bits: np.ndarray    # ((m+1)*size,) uint8 one-hot read bases, 0 on padding rows
    hap_skewed: np.ndarray   # ((m+n)*size,) uint8: row x holds haplotype base m+n-1-x (or 0)
    probs: np.ndarray        # (8, (m+1)*size): diff, mismatch, mm, gm, mi, ii, md, dd
    row0_flat: np.ndarray    # (size,) flat index of each pair's row 0
    row0_value: np.ndarray   # (size,) C / n per pair
    final_mask: np.ndarray   # (n, size) bool: column j+1 lies inside the pair's haplotype

    @property
    def size(self) -> int:
        return len(self.pair_index)


@dataclass
class Layout:
    """Sorted, grouped pairs; each group's arrays are built when :func:`forward_sums` gets there."""
    pairs: Pairs
    dtype: type
    initial: float                # C
    log10_c: float
    groups: list                  # index arrays into the pair set, one per group
    stacked: Optional[np.ndarray]  # (read positions, 8) probabilities in dtype, Group.probs order

    @property
    def n_pairs(self) -> int:
        return self.pairs.n_pairs


def _check_precision(precision: str):
    try:
        return PRECISIONS[precision]
    except KeyError:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}") from None


def group_pairs(read_lengths: np.ndarray, hap_lengths: np.ndarray,
                max_elements: int = DEFAULT_GROUP_ELEMENTS, slack: float = DEFAULT_SLACK) -> list:
    """Sort pairs by (haplotype, read) length and cut them greedily into groups.

    A group closes when one more pair would exceed ``max_elements`` array elements, or would make
    the group's padded work (size x m x n) exceed its useful cells by more than ``slack``.
    Returns a list of index arrays into the given length arrays.
    """
    order = np.lexsort((read_lengths, hap_lengths))
    m_sorted = read_lengths[order].tolist()
    n_sorted = hap_lengths[order].tolist()
    groups, start, useful, m_max, n_max = [], 0, 0, 0, 0
    for k, (mq, nq) in enumerate(zip(m_sorted, n_sorted)):
        size = k - start
        if size:
            m2, n2 = max(m_max, mq), max(n_max, nq)
            if ((size + 1) * (m2 + 1) > max_elements
                    or (size + 1) * m2 * n2 > (useful + mq * nq) * (1.0 + slack)):
                groups.append(order[start:k])
                start, useful, m_max, n_max = k, 0, 0, 0
        m_max, n_max = max(m_max, mq), max(n_max, nq)
        useful += mq * nq
    if start < len(order):
        groups.append(order[start:])
    return groups


def _layout_group(pairs: Pairs, idx: np.ndarray, stacked: np.ndarray, dtype, c: float) -> Group:
    reads, haps = pairs.pair_read[idx], pairs.pair_hap[idx]
    m_g = pairs.read_lengths[reads]
    n_g = pairs.hap_lengths[haps]
    size, m, n = len(idx), int(m_g.max()), int(n_g.max())
    offset = m - m_g                                   # array row of each pair's DP row 0

    # Read rows: array row k of pair g is read position k - offset_g - 1 (valid when >= 0).
    k = np.arange(m + 1)[:, None]
    read_pos = k - offset[None, :] - 1
    valid = read_pos >= 0
    flat_pos = np.where(valid, pairs.read_offsets[reads][None, :] + read_pos, 0)
    probs = stacked[flat_pos]                          # (m+1, size, 8)
    probs[~valid] = 0
    probs = np.ascontiguousarray(np.moveaxis(probs, 2, 0)).reshape(8, -1)
    row0_flat = offset * size + np.arange(size)
    probs[_DD, row0_flat] = 1                          # row 0 carries D = C/n forward
    read_bits = np.where(valid, _BASE_BITS[pairs.read_bases[flat_pos]], 0).astype(np.uint8)

    # Skewed haplotype: row x holds base L-1-x with L = m+n, so that on diagonal t rows lo..hi of
    # the read face hap_skewed rows L-t+lo .. L-t+hi (haplotype position j-1 = t-k-1).
    width = m + n
    hap_pos = (width - 1) - np.arange(width)[:, None]
    hvalid = hap_pos < n_g[None, :]
    hflat = np.where(hvalid, pairs.hap_offsets[haps][None, :] + hap_pos, 0)
    hap_skewed = np.where(hvalid, _BASE_BITS[pairs.hap_bases[hflat]], 0).astype(np.uint8)

    return Group(pair_index=idx, rows=m, cols=n, read_bits=read_bits.ravel(),
                 hap_skewed=hap_skewed.ravel(), probs=probs, row0_flat=row0_flat,
                 row0_value=(c / n_g).astype(dtype),
                 final_mask=np.arange(1, n + 1)[:, None] <= n_g[None, :])


def layout(pairs: Pairs, precision: str = "float64", *,
           max_elements: int = DEFAULT_GROUP_ELEMENTS, slack: float = DEFAULT_SLACK) -> Layout:
    """The prep step: sort, group and skew every pair for :func:`forward_sums`."""
    dtype, c, log10_c = _check_precision(precision)
    groups, stacked = [], None
    if pairs.n_pairs:
        p = pairs.probs
        # diff = match - mismatch in the working precision, so a match gives mismatch + diff.
        match, mismatch = p.match.astype(dtype), p.mismatch.astype(dtype)
        stacked = np.stack([match - mismatch, mismatch, p.mm.astype(dtype), p.gm.astype(dtype),
                            p.mi.astype(dtype), p.ii.astype(dtype), p.md.astype(dtype),
                            p.dd.astype(dtype)], axis=1)
        groups = group_pairs(pairs.pair_read_lengths, pairs.pair_hap_lengths, max_elements, slack)
    return Layout(pairs=pairs, dtype=dtype, initial=c, log10_c=log10_c, groups=groups,
                  stacked=stacked)


def _group_sums(g: Group, dtype) -> np.ndarray:
    """Run the wavefront over one group; returns sum_j M[m][j] + I[m][j] per pair (incl. C)."""
    size, m, n = g.size, g.rows, g.cols
    cells = (m + 1) * size
    width = m + n
    # state[t % 3] = (M, I, D) of diagonal t, as flat (rows, size) arrays.
    state = [tuple(np.zeros(cells, dtype) for _ in range(3)) for _ in range(3)]
    for _, _, D in state:
        D[g.row0_flat] = g.row0_value
    final = np.zeros(n * size, dtype)
    emission = np.empty(cells, dtype)
    scratch = np.empty(cells, dtype)
    hit = np.empty(cells, np.uint8)
    diff, mismatch, mm, gm, mi, ii, md, dd = g.probs
    read_bits, hap_skewed = g.read_bits, g.hap_skewed
    last = m * size
    for t in range(2, m + n + 1):
        lo, hi = max(1, t - n), min(m, t - 1)
        if lo > hi:                                    # only when m == 0 (empty reads)
            continue
        s, e = lo * size, (hi + 1) * size
        w = e - s
        sp, ep = s - size, e - size                    # the same rows shifted up by one
        M, I, D = state[t % 3]
        M1, I1, D1 = state[(t - 1) % 3]
        M2, I2, D2 = state[(t - 2) % 3]
        hs = (width - t + lo) * size
        em, tmp, h = emission[:w], scratch[:w], hit[:w]
        # Emission: mismatch + diff * [read & hap != 0].
        np.bitwise_and(read_bits[s:e], hap_skewed[hs:hs + w], out=h)
        np.minimum(h, 1, out=h)
        np.multiply(diff[s:e], h, out=em)
        em += mismatch[s:e]
        # M = emission * (mm * M[i-1][j-1] + gm * (I[i-1][j-1] + D[i-1][j-1]))
        Mo = M[s:e]
        np.add(I2[sp:ep], D2[sp:ep], out=tmp)
        tmp *= gm[s:e]
        np.multiply(mm[s:e], M2[sp:ep], out=Mo)
        Mo += tmp
        Mo *= em
        # I = mi * M[i-1][j] + ii * I[i-1][j]
        Io = I[s:e]
        np.multiply(mi[s:e], M1[sp:ep], out=Io)
        np.multiply(ii[s:e], I1[sp:ep], out=tmp)
        Io += tmp
        # D = md * M[i][j-1] + dd * D[i][j-1]
        Do = D[s:e]
        np.multiply(md[s:e], M1[s:e], out=Do)
        np.multiply(dd[s:e], D1[s:e], out=tmp)
        Do += tmp
        if lo <= m <= hi:                              # every pair's last row: column j = t - m
            j = t - m
            np.add(M[last:last + size], I[last:last + size], out=final[(j - 1) * size:j * size])
    masked = np.where(g.final_mask, final.reshape(n, size), 0).astype(dtype, copy=False)
    # Sequential sum over j = 1..n as GATK does (cumsum never reorders), so a pair's result is
    # the same bits whatever group it lands in.
    return np.cumsum(masked, axis=0, dtype=dtype)[-1]


def forward_sums(lay: Layout, clock=None) -> np.ndarray:
    """Raw forward sums (with the factor C) in pair order, in lay.dtype.

    ``clock`` (a :class:`hmmbench.backend.StageClock`) books building each group's arrays as
    ``prep`` and its wavefront as ``kernel``.
    """
    out = np.zeros(lay.n_pairs, dtype=lay.dtype)
    for idx in lay.groups:
        with _stage(clock, "prep"):
            group = _layout_group(lay.pairs, idx, lay.stacked, lay.dtype, lay.initial)
        with _stage(clock, "kernel"):
            out[idx] = _group_sums(group, lay.dtype)
    return out


def _stage(clock, name):
    return clock(name) if clock is not None else contextlib.nullcontext()


def finish_float32(pairs: Pairs, sums_f32: np.ndarray, recompute=None):
    """GKL's float rule, shared by every float32 backend.

    Pairs whose float32 sum (with the 2^120 factor) is below 1e-28 or not finite are recomputed
    in float64: by ``recompute(subset) -> float64 sums with the 2^1020 factor`` (a backend's own
    float64 kernel) when given, else by the float64 reference; the others give
    log10(sum) - log10(2^120). Returns ``(log10 float64 array, index array of the recomputed
    pairs)``.
    """
    sums = np.asarray(sums_f32, dtype=np.float32)
    if len(sums) != pairs.n_pairs:
        raise ValueError(f"{len(sums)} sums for {pairs.n_pairs} pairs")
    redo = np.flatnonzero(~np.isfinite(sums) | (sums < np.float32(F32_MIN_ACCEPTED)))
    with np.errstate(divide="ignore", invalid="ignore"):
        log10 = np.log10(sums.astype(np.float64)) - LOG10_C32
    # In pieces: each recomputed pair gets its own copy of its read, so a whole subset can
    # take several times the memory of the call that found it.
    for part in redo_pieces(pairs, redo) if len(redo) else ():
        subset = pairs.subset_pairs(part)
        if recompute is None:
            log10[part] = forward_log10(subset, "float64")
        else:
            with np.errstate(divide="ignore"):
                log10[part] = np.log10(np.asarray(recompute(subset), np.float64)) - LOG10_C64
    return log10, redo


#: Fewest read positions and pairs a float64 recompute piece of :func:`finish_float32` may
#: hold; pieces are otherwise a quarter of the call's read positions and pairs (each piece's
#: float64 layout then takes about what the call's float32 layout took; a larger floor made
#: the recompute of a small call take up to twice the call's own memory).
MIN_REDO_POSITIONS, MIN_REDO_PAIRS = 1 << 10, 16


def redo_pieces(pairs: Pairs, redo: np.ndarray) -> list:
    """``redo`` (pair indexes) cut, in order, into pieces of at most about a quarter of the
    call's read positions, counted as the subset holds them (once per pair), and pairs."""
    most_positions = max(MIN_REDO_POSITIONS, int(pairs.read_offsets[-1]) // 4)
    most_pairs = max(MIN_REDO_PAIRS, pairs.n_pairs // 4)
    lengths = pairs.pair_read_lengths[redo]
    piece = np.cumsum(lengths) // most_positions + np.arange(len(redo)) // most_pairs
    return np.split(redo, np.flatnonzero(np.diff(piece)) + 1)


@dataclass
class ForwardResult:
    log10: np.ndarray
    fallback_index: np.ndarray            # pairs recomputed in float64 (float32 mode only)
    layout: Optional[Layout] = None


def finish(pairs: Pairs, lay: Layout, sums: np.ndarray):
    """Raw sums -> ``(log10 float64, fallback index)``; float32 goes through finish_float32."""
    if lay.dtype == np.float32:
        return finish_float32(pairs, sums)
    with np.errstate(divide="ignore", invalid="ignore"):   # 0 -> -inf, negative -> nan
        return (np.log10(sums) - lay.log10_c).astype(np.float64), np.zeros(0, np.int64)


def forward(pairs: Pairs, precision: str = "float64") -> ForwardResult:
    """log10 likelihoods of every pair, with the float32 fallback's recomputed pairs."""
    lay = layout(pairs, precision)
    log10, redo = finish(pairs, lay, forward_sums(lay))
    return ForwardResult(log10, redo, lay)


def forward_log10(pairs: Pairs, precision: str = "float64") -> np.ndarray:
    return forward(pairs, precision).log10


def forward_sums_f32(pairs: Pairs) -> np.ndarray:
    """Raw float32 forward sums including the 2^120 factor (input of finish_float32)."""
    return forward_sums(layout(pairs, "float32"))
