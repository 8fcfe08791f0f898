"""Kind ``pipeline`` on a device, through the OpenCL CPU backend (profile-opencl-task): the
stage decisions and the survivor compaction (kernels_common/profile/stages.h, the same source
the CUDA backends build), pass counts identical to pyhmmer's Pipeline with its bias filter on
(its default: the host's filter on the MSV survivors) and off on every shipped protein model x
the proteome, the outcome per sequence as the NumPy reference's, and the runner's cross-check
of pipeline cells (with and without --nobias)."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")
pytest.importorskip("pyopencl", reason="pyopencl not installed")

from hmmbench.profile.reference import NumpyProfile  # noqa: E402
from hmmbench import cli, registry, results  # noqa: E402
from hmmbench.profile import datasets, pipeline as pl  # noqa: E402
from hmmbench.profile.job import ProfileSearch  # noqa: E402
from hmmbench.profile.model import SequenceSet  # noqa: E402
from hmmbench.profile.device.opencl import OpenCLProfile  # noqa: E402


@pytest.fixture(scope="module")
def backend():
    b = OpenCLProfile()
    if b.unavailable_reason():
        pytest.skip(b.unavailable_reason())
    return b


SPECS = datasets.shipped_models() if datasets.pyhmmer_data_dir() else []


@pytest.mark.parametrize("bias_filter", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_pass_counts_identical_to_pyhmmer(backend, spec, bias_filter, proteome, block):
    model, hmm = spec.load()
    ex = backend.run(ProfileSearch(model, proteome, "pipeline", hmm, database="proteome",
                                   bias_filter=bias_filter))
    theirs = pl.pyhmmer_pass_counts(hmm, block, bias_filter).as_dict()
    assert ex.info["pass_counts"] == theirs
    assert pl.counts_of(pl.stages_of(ex.log10)) == theirs
    launched = ex.info["stage_launches"]
    assert launched["fwd_launched"] == theirs["vit"]
    assert set(ex.info["pipeline_stage_s"]) == {"msv", "vit", "fwd"}
    assert ex.info["bias_filter"] is bias_filter
    if bias_filter:                                  # the host scored every MSV survivor
        assert ex.info["bias_survivors"] == theirs["msv"]
        assert ex.info["bias_decision"] == "host"


@pytest.mark.parametrize("name", ["PF02826", "RREFam/Thuricin_rSAM_RRE"])
def test_outcome_per_sequence_as_the_reference(backend, name, proteome):
    model, hmm = datasets.resolve_model(name).load()
    ex = backend.run(ProfileSearch(model, proteome, "pipeline", hmm, database="proteome"))
    want = NumpyProfile().run(ProfileSearch(model, proteome, "pipeline", hmm))
    stage = pl.stages_of(want.log10)
    assert (pl.stages_of(ex.log10) == stage).all()
    assert (stage == pl.PASSED).sum() > 0                  # some reach and pass Forward
    if name.startswith("RREFam/"):                         # the bias filter stops some
        assert (stage == pl.FAIL_BIAS).sum() > 0
    # the Forward scores: float32 log-space sums on the device (the bound: 0.01 nats)
    assert np.max(np.abs(ex.log10 - want.log10)) < 1e-3


def test_classify_and_compaction_kernels(backend):
    """Random codes over several work-groups: classification by table and by threshold, and
    the compaction keeps the launch order (what the next stage's launch needs)."""
    rng = np.random.default_rng(3)
    n = 9000                                               # 9 groups of 1,024 list entries
    lengths = rng.integers(1, 40, n)
    offs = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offs[1:])
    seqs = SequenceSet([str(i) for i in range(n)], np.zeros(offs[-1], np.uint8), offs)
    runner = backend.runner()
    db, _ = runner.resident.get_seqs(seqs, None)
    runner._db = db
    try:
        order_buf, m = runner.whole_order()
        C = len(db.lengths)
        table = rng.integers(0, 6, (C, 7)).astype(np.uint8)
        raw = rng.integers(-3, 10, n).astype(np.int32)
        raw_buf = runner._buf(raw)
        runner.classify(order_buf, m, raw_buf, table=table, width=7, offset=1)
        cls = np.searchsorted(db.lengths, seqs.lengths)
        want = table[cls, np.clip(raw + 1, 0, 6)]
        assert (runner.codes() == want).all()
        for code in range(6):
            out, k = runner.compact(order_buf, m, code, "test")
            got = runner._download(out, k, runner._clock)
            assert (got == db.host_order()[want[db.host_order()] == code]).all() and k > 0
        thr = rng.integers(0, 8, C).astype(np.int32)
        runner.classify(order_buf, m, raw_buf, thr=thr, hi=2, lo=1)
        assert (runner.codes() == np.where(raw >= thr[cls], 2, 1)).all()
    finally:
        runner._db = None


def test_pipeline_cells_cross_checked_in_the_runner(monkeypatch, tmp_path, backend, proteome):
    class OffByAStage(OpenCLProfile):
        """Deliberately wrong: every sequence one stage further."""
        name, family = "profile-wrong-stage", "fake"

        def run(self, job):
            ex = super().run(job)
            ex.log10 = ex.log10 + pl.STAGE_STEP
            return ex

    real = registry.discover
    monkeypatch.setattr(registry, "discover", lambda workload="pairhmm": real(workload) + (
        [OffByAStage()] if workload == "profile" else []))
    monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / "cache"))
    fasta = tmp_path / "part.faa"                          # every 4th proteome protein
    with open(fasta, "wb") as fh:
        for seq in proteome.subset(range(0, len(proteome), 4)).to_pyhmmer():
            seq.textize().write(fh)
    out = tmp_path / "p.json"
    code = cli.main(["run", "--workload", "profile", "-d", str(fasta), "--model", "PF02826",
                     "--kind", "pipeline", "-b", "profile-opencl-task", "-b", "profile-wrong-stage",
                     "-b", "profile-hmmsearch", "--repeat", "1", "--warmup-time", "0", "--quiet",
                     "--json", str(out)])
    assert code == 0
    runs = {r["backend"]: r for r in results.load(out)["runs"]}
    ours = runs["profile-opencl-task"]
    assert ours["status"] == "ok" and ours["n_checked"] == ours["pairs"] == 525
    assert ours["info"]["pass_counts"]["fwd"] > 0
    assert runs["profile-wrong-stage"]["status"] == "mismatch"
    hmmsearch = runs["profile-hmmsearch"]
    assert hmmsearch["status"] in ("peer", "unavailable")
    if hmmsearch["status"] == "peer":                      # its own summary, parsed
        assert hmmsearch["info"]["pass_counts"] == ours["info"]["pass_counts"]
    assert ours["info"]["bias_filter"] is True
    # --nobias: the pipeline and hmmsearch without the bias filter, a cell of its own
    off = tmp_path / "off.json"
    code = cli.main(["run", "--workload", "profile", "-d", str(fasta), "--model", "PF02826",
                     "--kind", "pipeline", "--nobias", "-b", "profile-opencl-task",
                     "-b", "profile-hmmsearch", "--repeat", "1", "--warmup-time", "0", "--quiet",
                     "--json", str(off)])
    assert code == 0
    runs_off = {r["backend"]: r for r in results.load(off)["runs"]}
    ours_off = runs_off["profile-opencl-task"]
    assert ours_off["status"] == "ok" and ours_off["info"]["bias_filter"] is False
    counts = ours_off["info"]["pass_counts"]
    assert counts["bias"] == counts["msv"] == ours["info"]["pass_counts"]["msv"]
    assert counts != ours["info"]["pass_counts"]           # the filter changes this search
    if runs_off["profile-hmmsearch"]["status"] == "peer":
        assert runs_off["profile-hmmsearch"]["info"]["pass_counts"] == counts
        assert runs_off["profile-hmmsearch"]["info"]["bias_filter"] is False


def test_outcome_encoding_round_trips():
    stage = np.array([0, 1, 2, 3, 3, pl.FAIL_BIAS], np.int8)
    fwd = np.array([np.nan, np.nan, -12.5, 40.25, 3000.0, np.nan])
    values = pl.outcome(stage, fwd)
    assert (pl.stages_of(values) == stage).all()
    assert values[2] == 2e6 - 12.5 and values[0] == 0.0 and values[5] == -1e6
    assert pl.counts_of(stage) == dict(searched=6, msv=5, bias=4, vit=3, fwd=2)


def test_an_empty_database(backend):
    model, hmm = datasets.resolve_model("LuxC").load()
    empty = datasets.load_proteome().subset([])
    for kind in ("ssv", "msv", "vf", "pipeline"):
        ex = backend.run(ProfileSearch(model, empty, kind, hmm))
        assert ex.log10.size == 0, kind

