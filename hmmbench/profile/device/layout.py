"""Farrar striping of the quantized profiles for SIMD/warp kernels (HMMER's p7_oprofile layout),
and the float tables of the generic Viterbi / Forward kernels.

A vector of ``width`` elements covers model positions ``k = q + z*Q + 1`` (q = vector index
0..Q-1, z = element 0..width-1, Q = ceil(M / width)); elements past M are padded with the
prohibited value. With ``width = 16`` bytes this is HMMER's SSE ``rbv``; the CUDA warp kernels
use 128 bytes (32 lanes x 4 packed bytes) and 64 words (32 lanes x 2 packed int16).
"""
from __future__ import annotations

import functools

import numpy as np

from ..model import ProfileModel, T_BM, T_DD, T_DM, T_II, T_IM, T_MD, T_MI, T_MM, WORD_NEG_INF
from ..model import length_specials

#: vector order of the word transitions, as HMMER's p7O_{BM,MM,IM,DM,MD,MI,II} then DD
WORD_T_ORDER = (T_BM, T_MM, T_IM, T_DM, T_MD, T_MI, T_II)


def n_vectors(M: int, width: int, min_q: int = 2) -> int:
    """HMMER's p7O_NQB/NQW (at least 2 vectors); the warp-group byte layouts allow 1."""
    return max(min_q, -(-M // width))


@functools.lru_cache(maxsize=256)
def _stripe_index(M: int, width: int, min_q: int) -> tuple:
    """(Q, flat slots of the striped (Q, width) vector that hold a position, the 0-based
    positions they hold): a function of the shape alone, kept (every search of a model
    stripes its profile afresh)."""
    Q = n_vectors(M, width, min_q)
    k = (np.arange(Q)[:, None] + np.arange(width)[None, :] * Q).ravel()   # 0-based k - 1
    slots = np.flatnonzero(k < M)
    for a in (slots, k):
        a.flags.writeable = False
    return Q, slots, k[slots]


def stripe(values: np.ndarray, width: int, pad, min_q: int = 2) -> np.ndarray:
    """(rows, M) values of k = 1..M -> (rows, Q, width) striped, padded with ``pad``."""
    rows, M = values.shape
    Q, slots, k = _stripe_index(M, width, min_q)
    out = np.full((rows, Q * width), pad, dtype=values.dtype)
    out[:, slots] = values[:, k]
    return out.reshape(rows, Q, width)


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


def pack_lanes(striped: np.ndarray, lanes: int = 32) -> np.ndarray:
    """(..., Q, lanes*n) elements -> (..., Q, lanes) uint32 words, n elements per lane,
    little-endian."""
    *lead, Q, width = striped.shape
    per = width // lanes
    raw = np.ascontiguousarray(striped).view(np.uint8)
    return raw.reshape(*lead, Q, lanes, per * striped.itemsize).view(np.uint32)[..., 0]


#: int16 profile value of "no cell" (past M, pad residue) in the SIMD16 byte-filter layouts:
#: any value <= -256 drives a cell to 0 whatever the previous row held (values stay <= 255)
NO_CELL16 = -1024


def warp_byte_elements(model: ProfileModel, kind: str, simd16: bool) -> tuple:
    """Per-element profile values (Kp+1, M) of the warp-group SSV/MSV kernels and the pad value:
    row Kp is the pad residue fed to a group whose sequence ended (a no-op row).
    bytes: the biased cost (255 = no cell); SIMD16 int16: SSV ``bias - cost``, MSV ``-cost``."""
    bp = model.byte
    cost = bp.cost.astype(np.int16)
    if not simd16:
        vals, pad = bp.cost, 255
    elif kind == "ssv":
        vals, pad = (bp.bias - cost).astype(np.int16), NO_CELL16
    elif kind == "msv":
        vals, pad = (-cost).astype(np.int16), NO_CELL16
    else:
        raise ValueError(kind)
    rows = np.full((model.Kp + 1, model.M), pad, dtype=vals.dtype)
    rows[:model.Kp] = vals
    return rows, pad


def warp_byte_profile(model: ProfileModel, kind: str, group: int, simd16: bool, q: int = 1):
    """(Q, words (Kp+1, Q, group) uint32): SSV/MSV profile striped over a group of lanes, each
    lane holding 4 bytes (or 2 int16 with ``simd16``) of a vector of group x 4 (x 2) elements;
    at least ``q`` vectors (a batch's common Q: the vectors past M hold the pad, no cells)."""
    rows, pad = warp_byte_elements(model, kind, simd16)
    width = group * (2 if simd16 else 4)
    s = stripe(rows, width, pad, min_q=q)
    return s.shape[1], pack_lanes(s, group)


def fixed_diag_vectors(M: int, group: int) -> int:
    """Vectors per lane of the FIXED_DIAG SSV/MSV kernels: a ring of 2 x Q x group int16 slots
    holding every position and at least one pad past M, from which a diagonal restarts."""
    return n_vectors(M + 1, 2 * group, 1)


def warp_fixed_profile(model: ProfileModel, kind: str, group: int, q: int = 1,
                       wide: bool = False):
    """(Q, words (Kp+1, 2 Q group) uint32) of the FIXED_DIAG SSV/MSV kernels (int16 values as
    ``warp_byte_elements``): with H = Q x group and the ring R = 2H, word j holds the values of
    positions j mod R (low half) and (j + H) mod R (high half), the pad past M. A row at
    offset o reads words o .. o + H - 1, lane l of vector v word o + v x group + l; at least
    ``q`` vectors (a batch's common Q). ``wide`` (FIXED_DIAG 2, 8-byte loads): (Kp+1, 4H),
    the row and then the row from its second word on (a pad pair last)."""
    rows, pad = warp_byte_elements(model, kind, True)
    Q = max(q, fixed_diag_vectors(model.M, group))
    H = Q * group
    ring = np.full((rows.shape[0], 2 * H), pad, np.int16)
    ring[:, :model.M] = rows
    halves = np.stack([ring, np.roll(ring, -H, axis=1)], axis=-1)
    words = np.ascontiguousarray(halves).view(np.uint32)[..., 0]
    if wide:
        later = np.concatenate([words[:, 1:], words[:, :1]], axis=1)
        later[:, -1] = np.array([pad, pad], np.int16).view(np.uint32)[0]
        words = np.concatenate([words, later], axis=1)
    return Q, words


def warp_batch_profile(models: list, kind: str, group: int, simd16: bool, fixed: int = 0):
    """(Q, words (Kp+1, K, Q, group) uint32) of K models in one SSV/MSV launch (warp.h's
    MODELS): each model striped with the batch's Q (its largest model's), residue-major so that
    a row's words of every model lie together; ``fixed`` (FIXED_DIAG 1 or 2): each model's
    ``warp_fixed_profile`` on the batch's ring, (Kp+1, K, words of a row)."""
    if len({m.Kp for m in models}) != 1:
        raise ValueError("the models of a batch must share an alphabet (Kp)")
    if fixed:
        Q = max(fixed_diag_vectors(m.M, group) for m in models)
        words = [warp_fixed_profile(m, kind, group, Q, fixed == 2)[1] for m in models]
    else:
        width = group * (2 if simd16 else 4)
        Q = max(n_vectors(m.M, width, 1) for m in models)
        words = [warp_byte_profile(m, kind, group, simd16, Q)[1] for m in models]
    return Q, np.ascontiguousarray(np.stack(words, axis=1))


def warp_word_profile(model: ProfileModel, dpx: bool):
    """(QW, flat uint32 words) of the warp Viterbi filter: match rows [Kp+1][QW][32] (row Kp =
    pad residue, -32768); with ``dpx`` the emission clamps lo = -32768 - min(e, 0) and
    hi = 32767 - max(e, 0) (same shape); then the 8 transition vectors; with ``dpx`` then
    -32768 - tsc (HMMER's transition words are all <= 0, which the saturation trick needs)."""
    match, tsc = striped_words(model)
    Kp, QW = match.shape[0], match.shape[1]
    e = np.full((Kp + 1,) + match.shape[1:], WORD_NEG_INF, dtype=np.int32)
    e[:Kp] = match
    parts = [e]
    if dpx:
        if (tsc > 0).any():
            raise ValueError("VF_DPX needs transition words <= 0")
        parts += [-32768 - np.minimum(e, 0), 32767 - np.maximum(e, 0)]
    t = tsc.astype(np.int32)
    parts.append(t)
    if dpx:
        parts.append(-32768 - t)
    words = [pack_lanes(p.astype(np.int16)) for p in parts]
    return QW, np.concatenate([w.ravel() for w in words])


# --- the generic (float) Viterbi / Forward kernels (kernels_common/profile/generic.h) ----------
#: work-items per sequence of the generic kernels (both APIs) where a model has more than
#: GENERIC_SMALL_POSITIONS positions per work-item at GENERIC_SMALL_THREADS; a launch may ask for
#: another power of two (CUDA: 32 or more, a warp's multiple), as
#: git show 8903acf:scripts/device_generic_forward.py does
GENERIC_THREADS = 128
#: Smaller models take 64 work-items: a row's latency is a barrier and scan across the group
#: plus each work-item's positions; on the H100 (the pipeline's Forward survivors of
#: proteins-2e8, docs/profile-design.md) M = 400 ran in 1.87 ms at 64 against 2.32 at 128, M = 100
#: within 3 % either way, and M = 1200 (19 positions each at 64) 3.90 against 2.74 at 128.
GENERIC_SMALL_THREADS, GENERIC_SMALL_POSITIONS = 64, 8


def generic_threads(M: int) -> int:
    """Work-items per sequence of the generic kernels for a model of M positions."""
    small = -(-M // GENERIC_SMALL_THREADS) <= GENERIC_SMALL_POSITIONS
    return GENERIC_SMALL_THREADS if small else GENERIC_THREADS


#: the N/C/J length model the resident database carries per sequence (loop, move of the
#: generic Forward): hmmsearch's multihit nj; a model with another nj gets its own per run
RESIDENT_NJ = 1.0


def resident_specials(lengths, classes, nj: float = RESIDENT_NJ) -> dict:
    """{"loop", "move"}: float32 length model per sequence, computed per distinct length
    (``lengths``) and spread by each sequence's class."""
    loop, move = length_specials(lengths, nj)
    return {"loop": loop[classes], "move": move[classes]}


def generic_tables(model, forward: bool = False) -> tuple:
    """(msc, isc, tr) float32 tables of the generic kernels (0-based j = k-1): msc/isc [Kp][M];
    tr [8][M + 1] rows BM, MM, IM, DM (into j from j-1), MI, II (at j), MD, DD (into j from
    j-1), column M "nothing" (no position past M). Log-odds (nats) for Viterbi; for Forward
    (``forward``) odds, exp'd in float64 and rounded once (-inf -> 0)."""
    M, t = model.M, model.tsc.astype(np.float64)
    tr = np.full((8, M + 1), -np.inf)
    for row, (kind, at) in enumerate(((T_BM, 0), (T_MM, 0), (T_IM, 0), (T_DM, 0),
                                      (T_MI, 1), (T_II, 1), (T_MD, 0), (T_DD, 0))):
        tr[row, :M] = t[kind, at:M + at]
    tr[6:, 0] = -np.inf                                      # no D_1
    msc = np.asarray(model.match_scores[:, 1:], np.float64)
    isc = np.array(model.insert_scores[:, 1:], np.float64)
    isc[:, M - 1] = -np.inf                                  # no I_M
    conv = np.exp if forward else (lambda a: a)
    return tuple(np.ascontiguousarray(conv(a), dtype=np.float32) for a in (msc, isc, tr))


def generic_length_model(model, db) -> tuple:
    """({"loop", "move"}, on_device) of the generic kernels for ``model`` on the resident
    database ``db``: the database's own device arrays when the model has the resident nj
    (hmmsearch's multihit), else host arrays computed for this model (the caller uploads them)."""
    b = db.buffers
    if float(model.nj) == RESIDENT_NJ and "loop" in b:
        return {"loop": b["loop"], "move": b["move"]}, True
    return resident_specials(db.lengths, db.classes, model.nj), False
