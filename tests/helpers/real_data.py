"""The real Pair-HMM data sets, for tests that need them: a test skips only when the set's file is
not on this machine (CI has them beside the checkout, where a skip fails the run); any other
error while reading one is the test's failure."""
from __future__ import annotations

import pytest

from hmmbench.dataset import Dataset
from hmmbench.pairhmm import datasets


def real_set(name: str) -> Dataset:
    """The dataset ``name`` (any name ``datasets.resolve`` takes)."""
    spec = datasets.REAL_SETS.get(name)
    if spec is not None and datasets.find_file(spec.filename) is None:
        pytest.skip(f"real data set {name} not found ({spec.filename}; set HMMBENCH_DATA_PATH)")
    return datasets.resolve(name)
