"""Farrar striping of the quantized profiles for SIMD/warp kernels (HMMER's p7_oprofile layout).

A vector of ``width`` elements covers model positions ``k = q + z*Q + 1`` (q = vector index
0..Q-1, z = element 0..width-1, Q = ceil(M / width)); elements past M are padded with the
prohibited value. With ``width = 16`` bytes this is HMMER's SSE ``rbv``; the CUDA warp kernels
use 128 bytes (32 lanes x 4 packed bytes) and 64 words (32 lanes x 2 packed int16).
"""
from __future__ import annotations

import numpy as np

from .model import ProfileModel, T_BM, T_DD, T_DM, T_II, T_IM, T_MD, T_MI, T_MM, WORD_NEG_INF

#: vector order of the word transitions, as HMMER's p7O_{BM,MM,IM,DM,MD,MI,II} then DD
WORD_T_ORDER = (T_BM, T_MM, T_IM, T_DM, T_MD, T_MI, T_II)


def n_vectors(M: int, width: int) -> int:
    return max(2, -(-M // width))       # HMMER's p7O_NQB/NQW: at least 2 vectors


def stripe(values: np.ndarray, width: int, pad) -> np.ndarray:
    """(rows, M) values of k = 1..M -> (rows, Q, width) striped, padded with ``pad``."""
    rows, M = values.shape
    Q = n_vectors(M, width)
    q, z = np.meshgrid(np.arange(Q), np.arange(width), indexing="ij")
    k = q + z * Q                       # 0-based position (k - 1)
    out = np.full((rows, Q, width), pad, dtype=values.dtype)
    ok = k < M
    out[:, ok] = values[:, k[ok]]
    return out


def striped_bytes(model: ProfileModel, width: int = 128) -> np.ndarray:
    """MSV costs (Kp, Q, width) uint8, 255 past M."""
    return stripe(model.byte.cost, width, 255)


def striped_words(model: ProfileModel, width: int = 64):
    """Viterbi-filter match words (Kp, Q, width) and transitions (8, Q, width): vectors 0..6 in
    WORD_T_ORDER (BM/MM/IM/DM taken at k-1, MD/MI/II at k), vector 7 the DD at k; int16,
    -32768 where HMMER has no transition."""
    wp = model.word
    M = model.M
    match = stripe(wp.match[:, 1:], width, WORD_NEG_INF)
    Q = match.shape[1]
    tsc = np.full((8, Q, width), WORD_NEG_INF, dtype=np.int16)
    q, z = np.meshgrid(np.arange(Q), np.arange(width), indexing="ij")
    k = q + z * Q + 1
    for j, t in enumerate(WORD_T_ORDER + (T_DD,)):
        kb = k - 1 if t in (T_BM, T_MM, T_IM, T_DM) else k
        ok = kb < M
        tsc[j][ok] = wp.tsc[t, kb[ok]]
    return match, tsc


def pack_lanes(striped: np.ndarray) -> np.ndarray:
    """(..., Q, 32*n) elements -> (..., Q, 32) uint32 words, n elements per lane, little-endian."""
    *lead, Q, width = striped.shape
    per = width // 32
    raw = np.ascontiguousarray(striped).view(np.uint8)
    return raw.reshape(*lead, Q, 32, per * striped.itemsize).view(np.uint32)[..., 0]
