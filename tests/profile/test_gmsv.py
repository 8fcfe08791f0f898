"""Profile workload: generic float MSV (HMMER's p7_GMSV, score kind ``gmsv``) vs HMMER 3.4.

The float64 reference within TOLERANCE["gmsv"] of p7_GMSV (called in pyhmmer's bundled
liblibhmmer) on every shipped protein model x every 20th proteome protein plus edge cases
(length 1, degenerate residues, '*'); the same code in float32 with the C library's logf for
HMMER's constants gives p7_GMSV's scores bit for bit; bits against HMMER's null model;
HMMER's own unit-test identity (MSV = Viterbi of a profile with only M->M and uniform B->M);
`hmmbench run --workload profile --kind gmsv` end to end.
"""
import ctypes
import ctypes.util
import math
import os

import numpy as np
import pytest

pyhmmer = pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from cpu_reference.profile import generic as pg  # noqa: E402
from hmmbench.profile import datasets  # noqa: E402
from hmmbench.profile.job import TOLERANCE  # noqa: E402
from hmmbench.profile.model import (SequenceSet, ProfileModel, T_BM, T_MM)  # noqa: E402
from helpers.profile_models import HMMS, IDS  # noqa: E402

#: every STRIDE-th proteome protein (HMMBENCH_GMSV_STRIDE=1: the whole proteome, ~25 s; with
#: ``-s`` each model prints its max error: the docs' exactness figure)
STRIDE = int(os.environ.get("HMMBENCH_GMSV_STRIDE", "20"))
STAR, X_CODE = 27, 26            # HMMER amino codes of '*' and 'X' (21..26 = B J Z O U X)




@pytest.fixture(scope="module")
def targets(proteome):
    """Every 20th proteome protein, then: length 1 (a residue, '*', 'X'), a run of degenerate
    codes, a protein with '*' and degenerate residues spliced in, '*' alone at both ends."""
    rng = np.random.default_rng(11)
    prot = [proteome.codes(i) for i in range(0, len(proteome), STRIDE)]
    spliced = prot[3].copy()
    spliced[rng.choice(spliced.size, 25, replace=False)] = rng.integers(21, 28, 25)
    parts = prot + [np.array([5], np.uint8), np.array([STAR], np.uint8),
                    np.array([X_CODE], np.uint8), rng.integers(21, 27, 60).astype(np.uint8),
                    spliced, np.concatenate([[STAR], prot[7], [STAR]]).astype(np.uint8)]
    offs = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=offs[1:])
    return SequenceSet([f"t{i}" for i in range(len(parts))], np.concatenate(parts), offs)



def c_logf():
    """The C library's logf (the one HMMER's constants come from), elementwise on float32."""
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.logf.restype, libm.logf.argtypes = ctypes.c_float, [ctypes.c_float]
    return np.vectorize(lambda v: np.float32(libm.logf(float(v))), otypes=[np.float32])


C_LOGF = c_logf()


@pytest.mark.parametrize("entry", HMMS, ids=IDS)
def test_generic_msv_matches_p7_gmsv(entry, targets, oracles):
    fname, j, hmm = entry
    model = ProfileModel.from_hmm(hmm)
    want = oracles(fname).scores(j, [targets.codes(i) for i in range(len(targets))],
                                 kinds=("gmsv", "null"))
    got = pg.generic_msv(model, targets)
    # '*' alone (and only '*'/gap-like codes) has no path: -inf on both sides
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(want["gmsv"]))
    assert np.isneginf(got).sum() == 1 and np.isfinite(got).sum() == len(targets) - 1
    fin = np.isfinite(got)
    err = np.abs(got[fin] - want["gmsv"][fin])
    worst = int(np.argmax(err))
    print(f"gmsv {fname}:{j} M={model.M} max |err| {err[worst]:.2e} nats "
          f"(L={targets.lengths[fin][worst]}) over {fin.sum()} sequences")
    assert err.max() < TOLERANCE["gmsv"], (err.max(), targets.lengths[fin][worst])
    # HMMER's float32 arithmetic, operation for operation, with its logf: identical
    f32 = pg.generic_msv(model, targets, dtype=np.float32, log=C_LOGF)
    np.testing.assert_array_equal(f32.astype(np.float32), want["gmsv"])
    # bits against HMMER's own null model (p7_bg_NullOne at the target's length)
    want_bits = (want["gmsv"][fin] - want["null"][fin]).astype(np.float64) / math.log(2)
    got_bits = pg.bits(got, targets.lengths)[fin]
    assert np.max(np.abs(got_bits - want_bits)) < TOLERANCE["gmsv"] / math.log(2) + 1e-5


def test_msv_is_viterbi_of_the_msv_profile(proteome):
    """HMMER's generic_msv.c unit test: MSV = Viterbi of the profile with every core transition
    -inf but M->M = 0 and uniform B->M_k = log(2/(M(M+1))) (same length model: nj = 1 gives
    log(L/(L+3)), log(3/(L+3)); E->C = E->J = log 1/2, i.e. nu = 2)."""
    path = [p for p in datasets.model_files() if p.endswith("PF02826.hmm")][0]
    model = ProfileModel.from_hmm(datasets.read_hmms(path)[0])
    M = model.M
    tsc = np.full_like(model.tsc, -np.inf)
    tsc[T_MM, 1:M] = 0.0
    tsc[T_BM, 0:M] = pg.msv_constants(M)[0]
    msv_model = ProfileModel(name="msv", M=M, match_scores=model.match_scores,
                             insert_scores=model.insert_scores, tsc=tsc)
    seqs = proteome.subset(range(5, len(proteome), 60))
    msv = pg.generic_msv(model, seqs)
    vit = pg.generic_viterbi(msv_model, seqs)
    # (HMMER's test allows 1e-4; here only the length-model constants' last float32 bit may
    # differ: ProfileModel.specials rounds its logs differently, ~3e-7 nats over a protein)
    np.testing.assert_allclose(msv, vit, rtol=0, atol=1e-5)


def test_long_targets_float32_drift(oracles):
    """Why the tolerance is what it is: on background sequences of 5,000..35,000 residues HMMER's
    float32 arithmetic drifts from the float64 reference by a few 1e-3 nats (the C state adds
    tloop once per residue after the last hit), yet the float32 mode still equals p7_GMSV bit
    for bit. (The proteome's longest protein is 4,560 residues: there the drift is < 1e-3.)
    ``-s`` prints the drift per length: the figure in docs/profile-design.md."""
    rng = np.random.default_rng(1)
    bgf = datasets.background_frequencies()
    Ls = [5000, 10000, 20000, 35000]
    parts = [rng.choice(20, size=L, p=bgf / bgf.sum()).astype(np.uint8) for L in Ls for _ in "ab"]
    offs = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=offs[1:])
    seqs = SequenceSet([f"long{i}" for i in range(len(parts))], np.concatenate(parts), offs)
    model = ProfileModel.from_hmm(datasets.read_hmms(
        [p for p in datasets.model_files() if p.endswith("PF02826.hmm")][0])[0])
    want = oracles("PF02826.hmm").scores(0, parts, kinds=("gmsv",))["gmsv"]
    np.testing.assert_array_equal(
        pg.generic_msv(model, seqs, dtype=np.float32, log=C_LOGF).astype(np.float32), want)
    drift = np.abs(pg.generic_msv(model, seqs) - want)
    for L, d in zip(seqs.lengths, drift):
        print(f"gmsv PF02826 L={L} |float64 - p7_GMSV| {d:.2e} nats")
    assert drift.max() < 1e-2


@pytest.mark.parametrize("nu", [1.0, 3.0])
def test_nu_other_than_two(nu, proteome, oracles):
    """nu = 1 (no J state: E->J = -inf, E->C = 0) and nu = 3, against p7_GMSV with that nu."""
    seqs = proteome.subset(range(2, len(proteome), 50))
    model = ProfileModel.from_hmm(datasets.read_hmms(
        [p for p in datasets.model_files() if p.endswith("LuxC.hmm")][0])[0])
    want = oracles("LuxC.hmm").scores(0, [seqs.codes(i) for i in range(len(seqs))],
                                      kinds=("gmsv",), nu=nu)["gmsv"]
    got = pg.generic_msv(model, seqs, nu=nu)
    assert np.max(np.abs(got - want)) < TOLERANCE["gmsv"]
    assert np.max(np.abs(got - pg.generic_msv(model, seqs))) > 0.1    # nu does matter


def test_runner_runs_gmsv_with_numpy_only(monkeypatch, tmp_path):
    from hmmbench import cli, results
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "gmsv.json"
    code = cli.main(["run", "--workload", "profile", "-d", "proteins-2e4", "--model", "PF02826",
                     "--kind", "gmsv", "-b", "profile-numpy", "-b", "profile-pyhmmer",
                     "-b", "profile-opencl-task", "--repeat", "1", "--warmup-time", "0", "--quiet",
                     "--json", str(out)])
    assert code == 0
    runs = {r["backend"]: r for r in results.load(out)["runs"]}
    ref = runs["profile-numpy"]
    assert ref["kind"] == "gmsv" and ref["status"] == "ok" and ref["tolerance"] == 1e-3
    assert ref["cells"] == 178 * ref["residues"] and ref["gcups_kernel"] > 0
    # the others do not compute it: one row each that says so (OpenCL may lack a device first)
    pyh = runs["profile-pyhmmer"]
    assert pyh["status"] == "unavailable"
    assert "profile-pyhmmer does not compute 'gmsv'" in pyh["reason"]
    ocl = runs["profile-opencl-task"]
    assert ocl["status"] == "unavailable" and ocl["max_abs_err"] is None
