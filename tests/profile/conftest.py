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


@pytest.fixture(scope="session")
def proteome_msv(proteome):
    """``get(model)``: the NumPy reference's SSV and MSV scores of a search profile on the whole
    proteome, computed once per session for every file that asks (by the profile's contents)."""
    from cpu_reference.profile import filters as pf
    done: dict = {}

    def get(model) -> tuple:
        key = (model.name, model.M, model.match_scores.tobytes(), model.tsc.tobytes())
        if key not in done:
            ssv = pf.ssv_filter(model, proteome)
            done[key] = ssv, pf.msv_filter(model, proteome, ssv)
        return done[key]
    return get
