"""The kernel's recurrence on the CPU: the loop of one CUDA thread of ``forward.cu``, with every
pair a NumPy lane side by side (arrays are ``(column or row, pair)``).

Row i of every lane is computed at once: M and I read only row i-1, so they are whole-row array
operations; D reads its left neighbour, so it goes column by column, as in the kernel. Lanes
shorter than the longest read or haplotype compute padding past their end (zero probabilities,
never summed): cells only depend on cells above and to the left, so padding never reaches them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: GATK's initial-condition constant per precision: 2^120 (float32) and 2^1020 (float64).
SCALE = {np.float32: 2.0 ** 120, np.float64: 2.0 ** 1020}
N_CODE = 4          # base code of N, which matches anything


@dataclass
class Lanes:
    """A PairSet as padded per-lane tables (the host layout step, timed as ``prep``)."""
    read_len: np.ndarray     # (pairs,)
    hap_len: np.ndarray      # (pairs,)
    read: np.ndarray         # (longest read, pairs) base codes
    hap: np.ndarray          # (longest haplotype, pairs) base codes
    probs: np.ndarray        # (longest read, pairs, 8): match, mismatch, mm, gm, mi, ii, md, dd
    dtype: type


def lanes(pairs, dtype=np.float32) -> Lanes:
    m, n = pairs.pair_read_lengths, pairs.pair_hap_lengths
    rows = np.arange(int(m.max(initial=0)))[:, None]
    cols = np.arange(int(n.max(initial=0)))[:, None]
    # Index of read position i (haplotype position j) of each lane, clamped inside its own read.
    r_idx = pairs.read_offsets[pairs.pair_read] + np.minimum(rows, m - 1)
    h_idx = pairs.hap_offsets[pairs.pair_hap] + np.minimum(cols, n - 1)
    probs = pairs.probs.stacked(dtype)[r_idx]
    probs[rows.ravel()[:, None] >= m] = 0       # rows past a lane's read
    return Lanes(m, n, pairs.read_bases[r_idx], pairs.hap_bases[h_idx], probs, dtype)


def forward_sums(lay: Lanes) -> np.ndarray:
    """Each pair's forward sum, scaled by SCALE[dtype] (the ``sums`` the kernel writes)."""
    dt = lay.dtype
    n_rows, n_pairs = lay.read.shape[0], len(lay.read_len)
    n_cols = lay.hap.shape[0]
    sums = np.zeros(n_pairs, dt)
    # Row 0: M = I = 0, D = C/n in every column, column 0 included.
    M = np.zeros((n_cols + 1, n_pairs), dt)
    I = np.zeros_like(M)
    D = np.broadcast_to(dt(SCALE[dt]) / lay.hap_len.astype(dt), M.shape).copy()
    for i in range(n_rows):                      # read position i = DP row i + 1
        match, mismatch, mm, gm, mi, ii, md, dd = lay.probs[i].T
        hit = (lay.hap == lay.read[i]) | (lay.hap == N_CODE) | (lay.read[i] == N_CODE)
        emis = np.where(hit, match, mismatch)
        new_m, new_i, new_d = np.zeros_like(M), np.zeros_like(I), np.zeros_like(D)
        new_m[1:] = emis * (mm * M[:-1] + gm * (I[:-1] + D[:-1]))
        new_i[1:] = mi * M[1:] + ii * I[1:]
        for j in range(1, n_cols + 1):
            new_d[j] = md * new_m[j - 1] + dd * new_d[j - 1]
        M, I, D = new_m, new_i, new_d
        done = np.flatnonzero(lay.read_len == i + 1)    # lanes whose last row this is
        if len(done):
            total = np.zeros(len(done), dt)
            for j in range(1, n_cols + 1):               # column order, as the kernel adds up
                total += np.where(j <= lay.hap_len[done], M[j, done] + I[j, done], dt(0))
            sums[done] = total
    return sums
