"""The runner's view of a work unit, whatever its workload: a count of items and a subset."""
from __future__ import annotations

import numpy as np


def n_items(unit) -> int:
    """Pairs of a PairSet, sequences of a profile search: one result value each."""
    return unit.n_items


def subset_items(unit, idx: np.ndarray):
    """The same unit restricted to the items ``idx``, in that order (sampled checks)."""
    return unit.subset(idx)
