"""The NumPy reference backends: ``numpy`` (float64, the cross-check reference) and ``numpy-f32``."""
from __future__ import annotations

from typing import Optional

import numpy as np

from cpu_reference.pairhmm.forward import (DEFAULT_GROUP_ELEMENTS, DEFAULT_SLACK,
                                           MIN_REDO_PAIRS, MIN_REDO_POSITIONS, finish, forward_sums, layout)

from ..backend import Backend, Execution, StageClock
from ..hostinfo import cpu_model
from ..memory import MemoryNeed, fmt_bytes
from .model import PairSet
from .shape import PairShape

#: Most read positions one pass of the wavefront lays out at once: a larger set runs in pieces
#: of whole batches (about 0.4 GB each in float64), so the reference's memory stays bounded
#: whatever the set (equal-4096@1e5 took 26 GB in one piece). Every pair's result is the same
#: bits in any piece (forward.py sums each pair on its own).
PIECE_READ_BASES = 1 << 21

#: Bytes per read position of the float64 probabilities a PairSet keeps (7 arrays).
POSITION_BYTES_KEPT = 56
#: Bytes per pair: sort order, the two length lists the grouping walks (Python ints past 256
#: are objects of their own), group index arrays, sums and results.
PAIR_BYTES, PAIR_BYTES_LONG = 48, 112
#: The model fits the traced peaks within a few %: this much added so that it errs high.
ESTIMATE_MARGIN = 1.05
#: Python's own objects of one call (the clock, the groups' lists, the result): 7-9 KiB traced
#: on calls of 1-5 pairs, where the arrays are a few KiB.
CALL_BYTES = 16 << 10


def piece_bounds(pairs: PairSet, most: Optional[int] = None) -> list:
    """Batch ranges [start, stop) of about ``most`` (PIECE_READ_BASES) read positions each (a
    batch is never cut)."""
    most = most or PIECE_READ_BASES
    starts = pairs.read_offsets[pairs.batch_reads[:-1]]
    piece = starts // most
    cuts = np.flatnonzero(np.diff(piece)) + 1
    edges = np.concatenate([[0], cuts, [pairs.n_batches]])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:])]


def _group_bytes(shape: PairShape, itemsize: int) -> int:
    """The most forward.py's groups take at once, the most of its two steps per group:
    _layout_group (per element of rows x pairs its indexes and the 8 probabilities, gathered
    then moved; per skewed haplotype element its indexes), built while the previous group's
    arrays are still held (forward_sums' loop: its bits, probabilities and masks), and
    _group_sums (the nine diagonals, emission and scratch rows; the final row's sums, masked
    and added up)."""
    if not shape.pairs:
        return 0
    if shape.groups is not None:                       # the whole set's, at most this part's
        most = (shape.pairs * (shape.max_read + 1), shape.pairs * (shape.max_read + shape.max_hap),
                shape.pairs * shape.max_hap)
        groups = [tuple(min(g, m) for g, m in zip(group, most)) for group in shape.groups]
    else:                                              # one read length: full groups
        size = min(shape.pairs, max(1, DEFAULT_GROUP_ELEMENTS // (shape.min_read + 1)))
        elements = min(max(DEFAULT_GROUP_ELEMENTS, shape.max_read + 1),
                       size * (shape.max_read + 1))
        groups = [(elements, size * (shape.min_read + shape.max_hap), size * shape.max_hap)] * 2
    most, previous = 0, (0, 0, 0)
    for elements, skew, final in groups:
        held = previous[0] * (1 + 8 * itemsize) + previous[1] + previous[2]
        build = elements * (25 + 16 * itemsize) + 16 * skew + final + held
        sums = elements * (19 * itemsize + 2) + skew + final * (3 * itemsize + 1)
        most, previous = max(most, build, sums), (elements, skew, final)
    return most


def wavefront_bytes(shape: PairShape, itemsize: int) -> int:
    """Peak of one piece's layout, wavefront and finish, float64 (8) or float32 (4): the most
    of stacking the probabilities (per read position: the float64 probabilities the PairSet
    keeps, their converted copies and the stacked block) and of the groups' turn (the stacked
    block, the per-pair arrays and the largest group)."""
    per_pair = PAIR_BYTES_LONG if max(shape.max_read, shape.max_hap) > 256 else PAIR_BYTES
    kept = (POSITION_BYTES_KEPT + 8 * itemsize) * shape.read_bases
    return max(kept + 9 * itemsize * shape.read_bases,
               kept + per_pair * shape.pairs + _group_bytes(shape, itemsize))


def numpy_need(shape: PairShape, precision: str) -> MemoryNeed:
    """The NumPy reference's peak for one call: its largest piece, and in float32 the float64
    recompute of underflowing pairs (which pairs is known only after the float32 pass, so
    assumed: all of them, in finish_float32's pieces) while the float32 layout is still held."""
    piece = shape.part(PIECE_READ_BASES)
    if precision == "float64":
        need = wavefront_bytes(piece, 8) * ESTIMATE_MARGIN
    else:
        alone = piece.each_pair_alone()
        share = min(max(MIN_REDO_POSITIONS, piece.read_bases // 4) / max(alone.read_bases, 1),
                    max(MIN_REDO_PAIRS, piece.pairs // 4) / max(alone.pairs, 1))
        redo = alone.part(int(share * alone.read_bases))
        held = (POSITION_BYTES_KEPT + 8 * 4) * piece.read_bases
        need = max(wavefront_bytes(piece, 4), held + wavefront_bytes(redo, 8)) * ESTIMATE_MARGIN
    need += 24 * shape.pairs + CALL_BYTES              # the whole call's results
    n = len_pieces(shape)
    note = (f"in {n} pieces of about {PIECE_READ_BASES} read positions "
            f"({fmt_bytes(need)} at most)" if n > 1 else "")
    return MemoryNeed(host=int(need), note=note)


def len_pieces(shape: PairShape) -> int:
    return max(1, -(-shape.read_bases // max(PIECE_READ_BASES, shape.max_batch_read_bases)))


class NumpyBackend(Backend):
    """Vectorized anti-diagonal wavefront over length-sorted groups of pairs
    (``cpu_reference.pairhmm.forward``), a piece of at most PIECE_READ_BASES read positions at
    a time.

    prep = layout (sort, group, then each group's skewed arrays), kernel = the DP (plus, in
    float32, the float64 recompute of underflowing pairs); nothing moves, so h2d = d2h = 0.
    """
    api = "numpy"
    family = "reference"

    def __init__(self, name: str, precision: str, *, max_elements: int = DEFAULT_GROUP_ELEMENTS,
                 slack: float = DEFAULT_SLACK):
        super().__init__(max_elements=max_elements, slack=slack)
        self.name, self.precision = name, precision

    def device_name(self) -> str:
        return cpu_model()                             # /proc/cpuinfo's model name

    def memory_need(self, shape) -> MemoryNeed:
        return numpy_need(shape, self.precision)

    def run(self, pairs: PairSet) -> Execution:
        clock = StageClock()
        bounds = piece_bounds(pairs)
        if len(bounds) == 1:
            log10, n_redo, groups = self._piece(pairs, clock)
        else:
            parts = [self._piece(pairs.select_batches(a, b), clock) for a, b in bounds]
            log10 = np.concatenate([p[0] for p in parts])
            n_redo, groups = sum(p[1] for p in parts), sum(p[2] for p in parts)
        info = {"groups": groups}
        if len(bounds) > 1:
            info["memory_pieces"] = len(bounds)
        return Execution(log10=log10, timing=clock.timing, n_fallback=n_redo, info=info)

    def _piece(self, pairs: PairSet, clock: StageClock) -> tuple:
        with clock("prep"):
            lay = layout(pairs, self.precision, max_elements=self.params["max_elements"],
                         slack=self.params["slack"])
        sums = forward_sums(lay, clock)
        with clock("kernel"):
            log10, redo = finish(pairs, lay, sums)
        return log10, len(redo), len(lay.groups)


def backends() -> list:
    return [NumpyBackend("numpy", "float64"), NumpyBackend("numpy-f32", "float32")]
