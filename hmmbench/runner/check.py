"""Cross-checking: how much of a dataset is checked (everything, or a deterministic sample) and
the tally of agreement with the reference."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..dataset import Dataset
from .config import RunConfig


def sample_indexes(n_pairs: int, k: int, seed: int) -> np.ndarray:
    """A deterministic sorted sample of k pair indexes (all of them when n <= k)."""
    if n_pairs <= k:
        return np.arange(n_pairs, dtype=np.int64)
    rng = np.random.Generator(np.random.PCG64(seed))
    return np.sort(rng.choice(n_pairs, size=k, replace=False)).astype(np.int64)


@dataclass
class CheckTally:
    tolerance: float
    n_checked: int = 0
    n_over_tol: int = 0
    n_nonfinite: int = 0                  # non-finite values that do not agree with the reference
    n_past_range: int = 0                 # items below ``range_floor`` in both (agreeing)
    max_abs_err: float = 0.0
    max_abs_err_expected: Optional[float] = None
    #: NaN == NaN and inf == inf (same sign) agree: HMMER's filters report "recompute" and
    #: overflow that way. Otherwise (pair-HMM) any non-finite value is a mismatch.
    nonfinite_equal: bool = False
    #: Values below this (-inf included) are past the number format's range: a value and its
    #: reference that are both below it agree, whatever their digits (the workload's
    #: ``range_floor``; pair-HMM: where GATK's float64 sum leaves the normal range).
    range_floor: Optional[float] = None

    def errors(self, got: np.ndarray, ref: np.ndarray) -> tuple:
        """(absolute errors, 0 where the two agree by the rules above; disagreeing non-finite
        mask; past-range mask)."""
        got = np.asarray(got, dtype=np.float64)
        ref = np.asarray(ref, dtype=np.float64)
        bad = ~np.isfinite(got) | ~np.isfinite(ref)
        same = np.zeros(len(got), dtype=bool)
        if self.nonfinite_equal:
            same |= (np.isnan(got) & np.isnan(ref)) | (np.isinf(got) & (got == ref))
        past = np.zeros(len(got), dtype=bool)
        if self.range_floor is not None:
            past = (got < self.range_floor) & (ref < self.range_floor)   # NaN compares False
            same |= past
        bad &= ~same
        with np.errstate(invalid="ignore"):           # inf - inf: counted as bad or as same
            err = np.where(same, 0.0, np.abs(got - ref))
        return err, bad, past

    def add(self, got: np.ndarray, ref: np.ndarray, expected: Optional[np.ndarray] = None):
        err, bad, past = self.errors(got, ref)
        self.n_checked += len(err)
        self.n_nonfinite += int(bad.sum())
        self.n_past_range += int(past.sum())
        self.n_over_tol += int(bad.sum()) + int((err[~bad] > self.tolerance).sum())
        if bad.any():
            self.max_abs_err = math.inf
        elif len(err):
            self.max_abs_err = max(self.max_abs_err, float(err.max()))
        if expected is not None and len(expected):
            e, e_bad, _ = self.errors(got, expected)
            m = math.inf if e_bad.any() else float(e.max())
            self.max_abs_err_expected = max(self.max_abs_err_expected or 0.0, m)


#: fewest items a sampled check covers, whatever the cell budget
MIN_SAMPLE = 100


def check_plan(ds: Dataset, cells: int, items: int, cfg: RunConfig) -> tuple:
    """(check everything?, sample size otherwise). A dataset's ``check_cells`` budget (the
    profile workload: per score kind) caps the reference's work: a sample of about that many
    cells, at most ``cfg.sample_pairs`` items per piece of the set (a chunk may join several:
    ``pieces_per_chunk``, a sharded run's)."""
    budget = getattr(ds, "check_cells", None)
    per_chunk = cfg.sample_pairs * getattr(ds, "pieces_per_chunk", 1)
    if budget is None:
        return (not ds.lazy and cells <= cfg.full_check_max_cells), per_chunk
    budget = min(budget, cfg.full_check_max_cells)
    if not ds.lazy and cells <= budget:
        return True, items
    k = int(items * budget / cells) if cells else items
    return False, max(1, min(per_chunk, max(MIN_SAMPLE, k)))
