"""The runner's view of a work unit, whatever its workload: a count of items and a subset."""
from __future__ import annotations

from typing import Iterable, Iterator

import numpy as np


def n_items(unit) -> int:
    """Pairs of a PairSet, sequences of a profile search: one result value each."""
    return unit.n_items


def subset_items(unit, idx: np.ndarray):
    """The same unit restricted to the items ``idx``, in that order (sampled checks)."""
    return unit.subset(idx)


def grouped_pieces(pieces: Iterable, max_items: int) -> Iterator[list]:
    """Consecutive pieces of a lazy set in groups of at most ``max_items`` items (a piece
    larger than that alone); ``max_items`` 0: one piece a group."""
    group: list = []
    size = 0
    for piece in pieces:
        n = n_items(piece)
        if group and (max_items <= 0 or size + n > max_items):
            yield group
            group, size = [], 0
        group.append(piece)
        size += n
    if group:
        yield group
