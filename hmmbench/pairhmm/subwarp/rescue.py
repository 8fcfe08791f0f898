"""Sub-warp Pair-HMM: the recompute of float32 underflows (API-free planning).

Every pair whose float32 forward sum (with C = 2^120) is under 1e-28 is recomputed by another
instantiation of the same kernel, specialized like the float32 bins: k = ``DOUBLE_K`` rows per
thread and the smallest p whose tile holds the bins' reads, multi-tile p32 beyond. In double
(``-f64rescue``: every such pair; with the exponents, the few pairs they cannot hold), or, for a
queue fed by bins without exponents (``cuda-subwarp``'s reads up to 512, where at most 4 % of
the pairs underflow and the exponents' checks would cost every pair 6-25 %), first in float32 with
per-thread exponents (kind ``"exp"``) and only the pairs those cannot hold in double: a queue
*cascade*. A cascade's float32 level runs the queue's own configuration where that holds the
reads in one tile (reads up to 256); longer reads up to ``EXP_TILE`` bases (bins of 257..512
without exponents) take one p32 x ``EXP_K`` tile (``exp_config``), their float64 level stays the
queue's multi-tile configuration. ``cuda-subwarp`` queues the pairs on the device (one queue per
configuration and kind of feeding bin, a second level per cascaded queue), and so does
``opencl-subwarp-f64rescue`` on devices with fp64 (no cascade); without fp64, and for the
exponent twin ``opencl-subwarp``, the host collects them (``cpu_reference.pairhmm.finish_float32``'s
rule) and runs the same double configurations.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .layout import MAX_P, SUPPORTED_P, Bin

#: A kernel's kind: a bin's float32 kernel, the float64 recompute of a queue, or the float32
#: recompute with exponents of a cascaded queue.
FLOAT, DOUBLE, EXP = "float", "double", "exp"

#: The float64 recompute, specialized like the float32 bins: k = DOUBLE_K rows per thread (in
#: double, k = 8 takes ~206 registers, as k = 16 does in float) and the smallest p whose tile
#: holds the bin's reads; longer reads run multi-tile p32. Bins with the same configuration share
#: one recompute queue (one double launch per queue and chunk).
DOUBLE_K = 8
#: A multi-tile queue's float32 level with exponents: one p32 tile of EXP_K rows a thread (the
#: float32 kernels' k, which double cannot afford) holds reads up to EXP_TILE.
EXP_K = 16
EXP_TILE = MAX_P * EXP_K


def recompute_queues(bins: Sequence[Bin], k: int = DOUBLE_K,
                     exponents=None) -> tuple[list[Bin], list[int]]:
    """The double-precision kernels of the float64 recompute: one per distinct configuration
    (covering the reads of every bin that feeds it), and the queue index of each bin. With
    ``exponents`` (whether a bin's float32 kernel carries them), the bins a cascade can take
    (``cascadable``) feed queues of their own."""
    def config(b: Bin) -> tuple:
        apart = exponents is not None and cascadable(b, exponents)
        for p in SUPPORTED_P:
            if not b.multi_tile and p * k >= b.hi:
                return p, False, apart
        return MAX_P, True, apart

    queues: dict = {}
    of = []
    for b in bins:
        key = config(b)
        lo, hi = queues.get(key, (b.lo, b.hi))
        queues[key] = (min(lo, b.lo), max(hi, b.hi))
        of.append(list(queues).index(key))
    return [Bin(lo, hi, p, k, multi_tile=multi) for (p, multi, _), (lo, hi) in queues.items()], of


def cascadable(b: Bin, exponents) -> bool:
    """Whether bin b's underflows can go through a cascade: its float32 kernel has no
    exponents and one tile of a queue's float32 level holds its reads."""
    return not exponents(b) and not b.multi_tile and b.hi <= EXP_TILE


def exp_config(q: Bin):
    """The configuration of queue q's float32 level with exponents: its own where one tile holds
    its reads, one p32 x EXP_K tile for reads up to EXP_TILE, else None (no cascade: longer
    reads keep the exponents in their bins, where 14-47 % of the pairs underflow)."""
    if not q.multi_tile:
        return q
    return Bin(q.lo, q.hi, MAX_P, EXP_K) if q.hi <= EXP_TILE else None


def cascades(bins: Sequence[Bin], queue_bins: Sequence[Bin], queue_of: Sequence[int],
             exponents) -> tuple:
    """Per recompute queue, whether it is a cascade (float32 with exponents first, then float64
    for what those cannot hold): a queue all of whose bins are ``cascadable``
    (``exponents(bin)``: whether that bin's float32 kernel carries them)."""
    barred = {queue_of[i] for i, b in enumerate(bins) if not cascadable(b, exponents)}
    return tuple(j not in barred for j in range(len(queue_bins)))


def plan_kernels(bins: Sequence[Bin], queue_bins: Sequence[Bin],
                 cascade: Sequence[bool]) -> list:
    """(configuration, kind) of every kernel a plan launches: each bin's float32 kernel, each
    queue's double kernel and, for a cascade, its float32 kernel with exponents."""
    return ([(b, FLOAT) for b in bins] + [(q, DOUBLE) for q in queue_bins]
            + [(exp_config(q), EXP) for q, c in zip(queue_bins, cascade) if c])


def recompute_counts(heads: np.ndarray, n_bins: int, cascade: Sequence[bool]) -> tuple[int, int]:
    """(pairs recomputed in float64, pairs recomputed in float32 with exponents) from the queue
    heads of one or more chunks: per chunk 2 x n_bins {first, count} pairs, the first level
    (the queue of each configuration) then the second (a cascaded queue's float64 level)."""
    counts = np.asarray(heads).reshape(-1, 2, n_bins, 2)[..., 1].astype(np.int64)
    casc = np.zeros(n_bins, bool)
    casc[:len(cascade)] = cascade
    first, second = counts[:, 0, :], counts[:, 1, :]
    return int(first[:, ~casc].sum() + second[:, casc].sum()), int(first[:, casc].sum())
