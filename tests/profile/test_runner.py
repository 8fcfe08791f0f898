"""Workload "profile" through the tool itself: `hmmbench run --workload profile` end to end on a
small generated database (CPU only: NumPy reference, PoCL/Intel CPU OpenCL, pyhmmer, hmmsearch),
result-file axes, mismatch detection, sampled checks, peers as rows, report pivot and compare."""
from __future__ import annotations

import math

import numpy as np
import pytest

from hmmbench import cli, compare, registry, report, results
from hmmbench.runner import CheckTally

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from hmmbench.profile.reference import NumpyProfile  # noqa: E402
from hmmbench.profile import datasets as pds  # noqa: E402
from hmmbench.profile import job as profile_job  # noqa: E402

# 54 proteins, 20k residues; PF02826 has M = 178: 3.6M cells per kind
DB, MODEL = "proteins-2e4", "PF02826"


class WrongProfile(NumpyProfile):
    """Deliberately wrong: the reference's scores plus one nat on every finite value."""
    name = "profile-wrong"
    api, family = "numpy", "fake"
    kinds = ("ssv", "vf")

    def run(self, job):
        ex = super().run(job)
        ex.log10 = np.where(np.isfinite(ex.log10), ex.log10 + 1.0, ex.log10)
        return ex


@pytest.fixture(scope="module")
def reference_cache(tmp_path_factory):
    """The module's private cache: a cell's reference scores computed once for its tests."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture
def profile_world(monkeypatch, tmp_path, reference_cache):
    """A private reference cache and the real profile backends plus WrongProfile."""
    real = registry.discover

    def discover(workload="pairhmm"):
        extra = [WrongProfile()] if workload == "profile" else []
        return real(workload) + extra
    monkeypatch.setattr(registry, "discover", discover)
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(reference_cache))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_profile(tmp_path, name, *args, warm_up=False) -> tuple:
    """``hmmbench run --workload profile`` (``warm_up``: with the runner's default warm-up
    passes, else --warmup-time 0: up to 0.2 s of passes per cell that these checks do not read;
    the warm-up itself is tests/core/test_runner.py's)."""
    out = tmp_path / f"{name}.json"
    axes = ([] if "-d" in args else ["-d", DB]) + ([] if "--model" in args else ["--model", MODEL])
    warm = [] if warm_up else ["--warmup-time", "0"]
    code = cli.main(["run", "--workload", "profile", *axes, "--repeat", "1", "--quiet",
                     *warm, "--json", str(out), *args])
    return code, (results.load(out) if out.exists() else None)


def by_backend_kind(doc) -> dict:
    return {(r["backend"], r["kind"]): r for r in doc["runs"]}


def test_numpy_opencl_pyhmmer_end_to_end(profile_world, capsys):
    code, doc = run_profile(profile_world, "e2e", "-b", "profile-numpy", "-b",
                            "profile-opencl-task", "-b", "profile-pyhmmer", warm_up=True)
    assert code == 0
    runs = by_backend_kind(doc)
    seqs = pds.resolve_database(DB).load()
    for kind in ("ssv", "msv", "vf"):
        r = runs["profile-numpy", kind]
        assert r["status"] == "ok" and r["workload"] == "profile"
        assert (r["model"], r["model_length"], r["dataset"]) == (MODEL, 178, DB)
        assert r["pairs"] == len(seqs) and r["residues"] == seqs.n_residues
        assert r["cells"] == 178 * seqs.n_residues and r["n_checked"] == len(seqs)
        assert r["tolerance"] == profile_job.TOLERANCE[kind] and r["sampled"] is False
        assert r["gcups_kernel"] > 0 and set(r["timing_s"]) >= {"prep", "h2d", "kernel",
                                                                 "d2h", "total"}
    assert runs["profile-pyhmmer", "ssv"]["status"] == "ok"
    assert runs["profile-pyhmmer", "msv"]["status"] == "ok"
    assert ("profile-pyhmmer", "vf") not in runs           # a kind it does not compute: no row
    opencl = runs["profile-opencl-task", "ssv"]
    if opencl["status"] == "unavailable":
        pytest.skip(f"no CPU OpenCL device here: {opencl['reason']}")
    assert all(runs["profile-opencl-task", k]["status"] == "ok" for k in ("ssv", "msv", "vf"))
    # progress names the cell; the doc re-renders as tables and as the model-size pivot
    assert f"{DB} [whole] × {MODEL} (M=178) × vf profile-opencl-task: ok" in capsys.readouterr().err
    md = report.pivot_markdown(doc["runs"], "gcups_kernel").splitlines()
    assert md[0].startswith("| dataset | model | M | profile-numpy ssv |")
    assert md[2].startswith(f"| {DB} | {MODEL} | 178 |")


def test_wrong_backend_is_a_mismatch(profile_world):
    code, doc = run_profile(profile_world, "wrong", "-b", "profile-numpy", "-b", "profile-wrong",
                            "--kind", "ssv,vf")
    assert code == 0                       # as for the pair-HMM: the run is recorded, not aborted
    runs = by_backend_kind(doc)
    assert {k for _, k in runs} == {"ssv", "vf"}
    for kind in ("ssv", "vf"):
        r = runs["profile-wrong", kind]
        assert r["status"] == "mismatch" and r["n_over_tol"] > 0 and r["max_abs_err"] == 1.0
    assert runs["profile-numpy", "vf"]["status"] == "ok"
    comp = compare.compare(doc, doc)
    assert comp.exit_code == 1 and {r.verdict for r in comp.rows} == {"within noise", "mismatch"}


def test_big_database_check_is_sampled(profile_world, monkeypatch):
    # a reference budget below the job's 3.6M cells: a deterministic sample of 20 sequences
    monkeypatch.setitem(profile_job.REFERENCE_CHECK_CELLS, "ssv", 1_000_000)
    code, doc = run_profile(profile_world, "sampled", "-b", "profile-numpy", "-b",
                            "profile-wrong", "--kind", "ssv", "--sample-pairs", "20")
    assert code == 0
    runs = by_backend_kind(doc)
    ok, bad = runs["profile-numpy", "ssv"], runs["profile-wrong", "ssv"]
    assert ok["status"] == "ok" and ok["sampled"] and ok["n_checked"] == 20
    assert "checked a sample of 20 sequences" in ok["reason"]
    assert bad["status"] == "mismatch" and bad["sampled"] and bad["n_checked"] == 20


def test_peers_are_rows_not_checks(profile_world):
    code, doc = run_profile(profile_world, "peers", "-b", "profile-pyhmmer-pipeline",
                            "-b", "profile-hmmsearch")
    assert code == 0
    runs = doc["runs"]
    assert {r["kind"] for r in runs} == {"pipeline"} and len(runs) == 2
    for r in runs:
        if r["status"] == "unavailable":
            assert r["backend"] == "profile-hmmsearch" and "hmmsearch" in r["reason"]
            continue
        assert r["status"] == "peer" and r["n_checked"] == 0 and r["max_abs_err"] is None
        assert "not cross-checked" in r["reason"] and "whole pipeline" in r["reason"]
        assert r["timing_s"]["total"] > 0 and r["gcups_total"] > 0
    comp = compare.compare(doc, doc)
    assert comp.exit_code == 0
    assert all(row.verdict in ("peer (not gated)", "not-compared (unavailable)")
               for row in comp.rows)
    cells = report.pivot(runs, "gcups_total")[2]
    assert any(v.endswith("(peer)") for v in cells.values())


def test_peers_refuse_uncalibrated_models(profile_world):
    code, doc = run_profile(profile_world, "random", "-b", "profile-pyhmmer-pipeline",
                            "--model", "random-M60:3")
    assert code == 0
    r = {(x["model"], x["backend"]): x for x in doc["runs"]}[("random-M60:3",
                                                             "profile-pyhmmer-pipeline")]
    assert r["status"] == "unavailable" and "E-value calibration" in r["reason"]


@pytest.mark.parametrize("args, message", [
    (["--model", "PF99999"], "unknown model 'PF99999'"),
    (["-d", "uniprot"], "unknown database 'uniprot'"),
    (["--kind", "ssv,hmmscan"], "unknown score kind 'hmmscan'"),
    (["--model", "random-M0"], "size must be between"),
    (["--chunking", "merged"], "does not apply to the profile workload"),
])
def test_unknown_names_exit_2_with_one_line(profile_world, capsys, args, message):
    code, doc = run_profile(profile_world, "bad", *args)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and doc is None
    assert len(err) == 1 and err[0].startswith("hmmbench: error: ") and message in err[0]


def test_pair_hmm_run_rejects_profile_options(capsys):
    assert cli.main(["run", "-d", "tiny", "--model", "LuxC"]) == 2
    assert "--workload profile" in capsys.readouterr().err


def test_generated_databases_and_models_are_deterministic():
    a, b = pds.resolve_database("proteins-5e3:4"), pds.resolve_database("proteins-5e3:4")
    assert a.sha256 == b.sha256 != pds.resolve_database("proteins-5e3").sha256
    sa, sb = a.load(), b.load()
    assert np.array_equal(sa.residues, sb.residues) and sa.n_residues >= 5000
    m1, m2 = pds.resolve_model("random-M120:5"), pds.resolve_model("random-M120:5")
    assert m1.M == 120 and m1.load()[0].M == 120 and not m1.calibrated
    assert np.array_equal(m1.load()[0].match_scores, m2.load()[0].match_scores)
    assert pds.resolve_model("query-M90").calibrated
    assert pds.resolve_model("2-Hacid_dh_C").name == pds.resolve_model("PF02826").name


def test_fasta_file_database(profile_world):
    fasta = profile_world / "three.faa"
    fasta.write_text(">a\nMKVLAAGIVGLLLAQ\n>b\nMSTNPKPQRKTKRNTNRRPQDVKFPGG\n>c\nMAHHHHHHVDDDDK\n")
    code, doc = run_profile(profile_world, "fasta", "-d", str(fasta), "-b", "profile-numpy",
                            "--kind", "msv")
    assert code == 0
    (r,) = doc["runs"]
    assert r["dataset"] == "three.faa" and r["pairs"] == 3 and r["residues"] == 56
    assert r["status"] == "ok"


def test_datasets_list_profile(capsys):
    assert cli.main(["datasets", "list", "--workload", "profile"]) == 0
    out = capsys.readouterr().out
    assert "proteome" in out and "proteins-<residues>" in out and "LuxC" in out
    assert "random-M<size>" in out


def test_check_tally_nonfinite_agreement():
    ref = np.array([1.0, math.nan, math.inf, 2.0, math.inf])
    tally = CheckTally(0.0, nonfinite_equal=True)
    tally.add(np.array([1.0, math.nan, math.inf, 2.0, 3.0]), ref)
    assert (tally.n_checked, tally.n_over_tol, tally.n_nonfinite) == (5, 1, 1)
    assert math.isinf(tally.max_abs_err)              # finite vs inf: a mismatch
    agree = CheckTally(0.0, nonfinite_equal=True)
    agree.add(ref.copy(), ref)
    assert (agree.n_over_tol, agree.max_abs_err) == (0, 0.0)
    strict = CheckTally(0.0)                             # the pair-HMM rule: never equal
    strict.add(ref.copy(), ref)
    assert strict.n_over_tol == 3


def test_hmmsearch_peer_says_when_the_binary_is_missing(monkeypatch):
    from hmmbench.profile.peers import HmmsearchPeer
    monkeypatch.setattr(HmmsearchPeer, "executable", staticmethod(lambda: None))
    reason = HmmsearchPeer().unavailable_reason()
    assert reason and "hmmsearch binary not found" in reason and "pip install hmmer" in reason


def test_score_writes_name_nats_bits_per_sequence(tmp_path, capsys):
    """`hmmbench score --workload profile`: one line per sequence, database order; the NumPy
    reference and pyhmmer's own SSV write the same scores (HMMER's, exact)."""
    seqs = pds.resolve_database("proteins-2e4:7").load()
    files = {}
    for name in ("profile-numpy", "profile-pyhmmer"):
        out = tmp_path / f"{name}.tsv"
        assert cli.main(["score", "--workload", "profile", "-d", "proteins-2e4:7",
                         "--model", "PF02826", "--kind", "ssv", "-b", name, "-o", str(out)]) == 0
        lines = out.read_text().splitlines()
        assert lines[0] == "# name\tnats\tbits" and len(lines) == len(seqs) + 1
        assert [ln.split("\t")[0] for ln in lines[1:]] == [str(n) for n in seqs.names]
        files[name] = np.array([[float(x) for x in ln.split("\t")[1:]] for ln in lines[1:]])
    np.testing.assert_array_equal(files["profile-numpy"], files["profile-pyhmmer"])
    assert np.isfinite(files["profile-numpy"]).any()


@pytest.mark.parametrize("extra, message", [
    (["--kind", "ssv,vf"], "exactly one --kind"),
    (["--kind", "pipeline"], "exactly one --kind"),
    (["--kind", "ssv", "--model", "PF02826", "--model", "LuxC"], "one --model"),
    (["--kind", "nosuch"], "nosuch"),
])
def test_score_usage_errors_are_one_line(tmp_path, capsys, extra, message):
    out = tmp_path / "x.tsv"
    assert cli.main(["score", "--workload", "profile", "-d", "proteins-2e4:7", "-b",
                     "profile-numpy", "-o", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists()
