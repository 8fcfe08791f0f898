"""OpenCL profile filters identical to HMMER: SSV and MSV against pyhmmer on the whole proteome,
the Viterbi filter against the NumPy reference (itself identical to HMMER's p7_ViterbiFilter,
tests/test_profile_filters.py) on every 50th protein. Runs on the CPU OpenCL devices in CI."""
import numpy as np
import pytest

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")
pytest.importorskip("pyopencl", reason="pyopencl not installed")

from hmmbench.profile import datasets  # noqa: E402
from cpu_reference.profile import filters as pf  # noqa: E402


def _runner():
    from hmmbench.profile.opencl import ProfileFiltersOpenCL
    try:
        return ProfileFiltersOpenCL()
    except Exception as exc:  # noqa: BLE001 - no platform/device here
        pytest.skip(f"no OpenCL device: {exc}")


@pytest.fixture(scope="module")
def runner():
    return _runner()


@pytest.fixture(scope="module")
def proteome():
    return datasets.load_proteome()


MODELS = datasets.load_models() if datasets.pyhmmer_data_dir() else []


def same(a, b):
    return (a == b) | (np.isnan(a) & np.isnan(b))


@pytest.fixture(scope="module")
def block(proteome):
    return proteome.to_pyhmmer()


HMMS = [h for p in datasets.model_files() for h in datasets.read_hmms(p) if h.alphabet.is_amino()]


@pytest.mark.parametrize("hmm", HMMS, ids=[str(h.name) for h in HMMS])
def test_opencl_filters_identical(hmm, runner, proteome, block):
    import pyhmmer
    from hmmbench.profile.model import ProfileModel
    model = ProfileModel.from_hmm(hmm)
    gm = pyhmmer.plan7.Profile(hmm.M, hmm.alphabet)
    gm.configure(hmm, pyhmmer.plan7.Background(hmm.alphabet), L=400)
    om = gm.to_optimized()
    want_ssv, want_msv = np.empty(len(block), np.float32), np.empty(len(block), np.float32)
    for i, seq in enumerate(block):
        om.L = len(seq)
        want_ssv[i], want_msv[i] = om.ssv_filter(seq), om.msv_filter(seq)
    assert same(runner.scores(model, proteome, "ssv"), want_ssv).all()
    assert same(runner.scores(model, proteome, "msv"), want_msv).all()
    sub = proteome.subset(range(0, len(proteome), 50))
    assert same(runner.scores(model, sub, "vf"), pf.viterbi_filter(model, sub)).all()


def test_opencl_unknown_score(runner, proteome):
    with pytest.raises(ValueError):
        runner.scores(MODELS[0], proteome.subset([0]), "forward")
