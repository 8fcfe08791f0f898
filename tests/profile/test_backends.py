"""Workload "profile" in the registry: backends discovered, refusals, and cross-checks of every
available backend against the NumPy reference on a small job."""
import numpy as np
import pytest

from hmmbench import registry

pyhmmer = pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from hmmbench.profile import datasets  # noqa: E402
from hmmbench.profile.job import SCORE_KINDS, TOLERANCE, ProfileSearch  # noqa: E402
from hmmbench.profile.model import ProfileModel  # noqa: E402


def test_profile_workload_registered():
    from hmmbench import workload
    assert "profile" in workload.names()
    names = {b.name for b in registry.discover("profile")}
    assert {"profile-numpy", "profile-pyhmmer", "profile-opencl-task"} <= names
    assert all(b.workload == "profile" for b in registry.discover("profile"))


@pytest.fixture(scope="module")
def small_job_parts():
    path = [p for p in datasets.model_files() if p.endswith("PF02826.hmm")][0]
    hmm = datasets.read_hmms(path)[0]
    seqs = datasets.load_proteome().subset(range(0, 2100, 70))
    return ProfileModel.from_hmm(hmm), seqs, hmm


def test_job_counts_and_kind_check(small_job_parts):
    model, seqs, hmm = small_job_parts
    job = ProfileSearch(model, seqs, "msv", hmm)
    assert job.n_items == 30 and job.cells == 178 * seqs.n_residues
    with pytest.raises(ValueError):
        ProfileSearch(model, seqs, "hmmscan")


@pytest.mark.parametrize("kind", SCORE_KINDS)
def test_every_available_backend_matches_reference(kind, small_job_parts):
    model, seqs, hmm = small_job_parts
    job = ProfileSearch(model, seqs, kind, hmm)
    every = {b.name: b for b in registry.discover("profile")}
    ref = every["profile-numpy"].run(job).log10
    assert np.isfinite(ref).any()
    checked = 0
    for b in every.values():
        if b.unavailable_reason() or b.refuse_reason(job):
            continue
        got = b.run(job)
        assert got.info["unit"] == "nats" and got.timing["kernel"] > 0
        same_inf = np.isinf(ref) == np.isinf(got.log10)
        assert same_inf.all()
        fin = np.isfinite(ref)
        assert np.max(np.abs(got.log10[fin] - ref[fin]), initial=0.0) <= TOLERANCE[kind]
        checked += 1
    assert checked >= 1


def test_refusals(small_job_parts):
    model, seqs, hmm = small_job_parts
    every = {b.name: b for b in registry.discover("profile")}
    job = ProfileSearch(model, seqs, "forward", hmm)
    assert "does not compute" in every["profile-pyhmmer"].refuse_reason(job)
    assert "does not compute" in every["profile-opencl-task"].refuse_reason(job)
    assert every["profile-pyhmmer"].refuse_reason(ProfileSearch(model, seqs, "ssv")) is not None


def test_profile_backends_refuse_pair_hmm_inputs():
    """Until the runner learns workloads it may hand them PairSets: a refusal, not a crash."""
    for b in registry.discover("profile"):
        reason = b.refuse_reason(object())
        assert reason and "profile searches" in reason
