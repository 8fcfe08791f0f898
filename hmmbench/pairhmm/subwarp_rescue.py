"""Sub-warp Pair-HMM: the float64 rescue of float32 underflows (API-free planning).

Every pair whose float32 forward sum (with C = 2^120) is under 1e-28 is recomputed by a
double-precision instantiation of the same kernel, specialized like the float32 bins: k =
``DOUBLE_K`` rows per thread and the smallest p whose tile holds the bins' reads, multi-tile p32
beyond (``-f64rescue``: every such pair; with the exponents, the few pairs they cannot hold).
``cuda-subwarp`` queues the pairs on the device (one queue per double configuration);
``opencl-subwarp-f64rescue`` collects them on the host (``cpu_reference.pairhmm.finish_float32``'s
rule) and runs the same double configurations over them.
"""
from __future__ import annotations

from typing import Sequence

from .subwarp_layout import MAX_P, SUPPORTED_P, Bin

#: The float64 recompute, specialized like the float32 bins: k = DOUBLE_K rows per thread (in
#: double, k = 8 takes ~206 registers, as k = 16 does in float) and the smallest p whose tile
#: holds the bin's reads; longer reads run multi-tile p32. Bins with the same configuration share
#: one recompute queue (one double launch per queue and chunk).
DOUBLE_K = 8


def recompute_queues(bins: Sequence[Bin], k: int = DOUBLE_K) -> tuple[list[Bin], list[int]]:
    """The double-precision kernels of the float64 recompute: one per distinct configuration
    (covering the reads of every bin that feeds it), and the queue index of each bin."""
    def config(b: Bin) -> tuple:
        for p in SUPPORTED_P:
            if not b.multi_tile and p * k >= b.hi:
                return p, False
        return MAX_P, True

    queues: dict = {}
    of = []
    for b in bins:
        p, multi = config(b)
        lo, hi = queues.get((p, multi), (b.lo, b.hi))
        queues[(p, multi)] = (min(lo, b.lo), max(hi, b.hi))
        of.append(list(queues).index((p, multi)))
    return [Bin(lo, hi, p, k, multi_tile=multi) for (p, multi), (lo, hi) in queues.items()], of
