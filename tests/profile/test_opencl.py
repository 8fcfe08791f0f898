"""OpenCL profile filters identical to HMMER: SSV and MSV against pyhmmer, on the whole proteome
for the first model, for the others on the proteins that hold the proteome's cases for that model
(every 10th, the longest and shortest, each overflow or undefined score, the top scores); the
Viterbi filter against HMMER's own p7_ViterbiFilter (helpers/profile_oracle.py; the NumPy
reference is identical to it, tests/profile/test_filters.py) on every 50th protein. Runs on the
CPU OpenCL devices in CI."""
import os

import numpy as np
import pytest

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")
pytest.importorskip("pyopencl", reason="pyopencl not installed")

from hmmbench.profile import datasets  # noqa: E402


def _runner():
    from hmmbench.apis import opencl as opencl_api
    from hmmbench.profile.device.opencl import ProfileFiltersOpenCL
    if not opencl_api.usable_devices():
        pytest.skip("no usable OpenCL device (scripts/install_opencl_cpu.sh installs CPU ones)")
    return ProfileFiltersOpenCL()


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


#: (model file name, index in it, model) of every protein model: HMMER's routines open the file
ENTRIES = [(os.path.basename(p), j, h) for p in datasets.model_files()
           for j, h in enumerate(datasets.read_hmms(p)) if h.alphabet.is_amino()]
HMMS = [h for _, _, h in ENTRIES]


def _cases(lengths, *scores) -> np.ndarray:
    """Every 10th protein, the longest and shortest, and for each filter every protein whose
    score is not finite (overflow, undefined) and the 20 highest finite ones."""
    keep = set(range(0, len(lengths), 10)) | {int(np.argmax(lengths)), int(np.argmin(lengths))}
    for sc in scores:
        bad = ~np.isfinite(sc)
        keep |= set(np.flatnonzero(bad).tolist())
        keep |= set(np.argsort(np.where(bad, -np.inf, sc))[-20:].tolist())
    idx = np.array(sorted(keep))
    assert lengths[idx].max() == lengths.max() and lengths[idx].min() == lengths.min()
    for sc in scores:
        assert np.nanmax(sc[idx]) == np.nanmax(sc)      # the top score (or overflow) is in
    return idx


@pytest.mark.parametrize("hmm", HMMS, ids=[str(h.name) for h in HMMS])
def test_opencl_filters_identical(hmm, runner, proteome, block, oracles):
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
    seqs = proteome
    if hmm is not HMMS[0]:      # the whole proteome once; pyhmmer's scores say where the cases are
        idx = _cases(proteome.lengths, want_ssv, want_msv)
        seqs, want_ssv, want_msv = proteome.subset(idx), want_ssv[idx], want_msv[idx]
    assert same(runner.scores(model, seqs, "ssv"), want_ssv).all()
    assert same(runner.scores(model, seqs, "msv"), want_msv).all()
    sub = proteome.subset(range(0, len(proteome), 50))
    fname, j = next((f, j) for f, j, h in ENTRIES if h is hmm)
    want_vf = oracles(fname).scores(j, [sub.codes(i) for i in range(len(sub))], kinds=("vf",))
    assert same(runner.scores(model, sub, "vf"), want_vf["vf"]).all()


def test_opencl_unknown_score(runner, proteome):
    with pytest.raises(ValueError):
        runner.scores(MODELS[0], proteome.subset([0]), "forward")


@pytest.fixture(scope="module")
def generic_case(proteome):
    """PF02826, every 28th protein and the longest of every 7th (2627 residues: the most
    rescaled Forward rows), plus odd sequences (length 1, a degenerate residue), and the NumPy
    reference's Viterbi and Forward of them (computed once: each test checks against one and
    tells it from the other)."""
    from cpu_reference.profile import generic as pg
    from hmmbench.profile.model import ProfileModel, SequenceSet
    hmm = next((h for h in HMMS if "PF02826" in str(h.accession)), None)
    if hmm is None:
        pytest.skip("no PF02826 model")
    model = ProfileModel.from_hmm(hmm)
    seventh = np.arange(0, len(proteome), 7)
    longest = int(seventh[np.argmax(proteome.lengths[seventh])])
    sub = proteome.subset(sorted(set(range(0, len(proteome), 28)) | {longest}))
    assert sub.lengths.max() == proteome.lengths[seventh].max()
    odd = np.array([3, 21, 5, 9], np.uint8)           # a length-1 sequence, one with a B
    seqs = SequenceSet(list(sub.names) + ["one", "degenerate"],
                       np.concatenate([sub.residues, odd]),
                       np.concatenate([sub.offsets, sub.offsets[-1] + np.array([1, 4])]))
    return hmm, model, seqs, {"forward": pg.generic_forward(model, seqs),
                              "viterbi": pg.generic_viterbi(model, seqs)}


@pytest.mark.parametrize("kind", ["viterbi", "forward"])
def test_opencl_generic_twin_within_the_kinds_tolerance(kind, generic_case):
    """profile-opencl-ganesan, the twin of profile-cuda-ganesan (one kernel body,
    kernels_common/profile/generic.h): every 28th protein, the longest of every 7th and odd
    sequences (length 1, a degenerate residue), within the kind's tolerance of the NumPy reference; the other mode's
    reference is off by more (the check can fail)."""
    from hmmbench.profile.job import TOLERANCE, ProfileSearch
    from hmmbench.profile.device.opencl import OpenCLGenericProfile
    b = OpenCLGenericProfile()
    if b.unavailable_reason():
        pytest.skip(b.unavailable_reason())
    hmm, model, seqs, ref = generic_case
    got = b.run(ProfileSearch(model, seqs, kind, hmm)).log10
    other = "viterbi" if kind == "forward" else "forward"
    assert np.max(np.abs(got - ref[kind])) <= TOLERANCE[kind]
    assert np.max(np.abs(got - ref[other])) > TOLERANCE[kind]
    b.close()
