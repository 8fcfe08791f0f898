"""Fixtures of the profile tests: the shipped proteome (as codes and as pyhmmer's block) and
HMMER's own routines per shipped model file, each built once per session."""
import os

import pytest

from hmmbench.profile import datasets


@pytest.fixture(scope="session")
def proteome():
    return datasets.load_proteome()


@pytest.fixture(scope="session")
def block(proteome):
    pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")
    return proteome.to_pyhmmer()


@pytest.fixture(scope="session")
def oracles():
    """HMMER's own routines (helpers/profile_oracle.py) per shipped model file, opened once."""
    from helpers.profile_oracle import HmmerOracle
    cache = {}

    def get(fname):
        if fname not in cache:
            path = [p for p in datasets.model_files() if os.path.basename(p) == fname][0]
            cache[fname] = HmmerOracle(path, [h.M for h in datasets.read_hmms(path)])
        return cache[fname]
    return get
