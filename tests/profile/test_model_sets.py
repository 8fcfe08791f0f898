"""A many-model search: the seeded ``models-mixed<N>`` file (sizes, calibration, one generation
per cache, the same bytes wherever generated) and, model by model, HMMER's pipeline pass counts
of the reference identical to pyhmmer's Pipeline (with its bias filter and without) and to the
hmmsearch binary on the same models and sequences."""
import json
import os

import pytest

from hmmbench import cli
from hmmbench.profile import datasets as pds, pipeline as pl
from hmmbench.profile.datasets.modelsets import mixed_lengths
from hmmbench.profile.model import SequenceSet

SET = "models-mixed12:3"
#: residues of each model's emitted sequence in the test database
FRAGMENT = 120


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A cache of its own (the set generated once here, whatever the user's cache holds)."""
    path = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HMMBENCH_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="module")
def specs(cache):
    return pds.resolve_models(SET)


@pytest.fixture(scope="module")
def homologs(specs, proteome, tmp_path_factory):
    """30 proteome sequences and a piece of a sequence emitted from each model (so that every
    model has sequences past every stage), as a FASTA file and its SequenceSet."""
    import pyhmmer
    block = proteome.subset(range(0, 2100, 70)).to_pyhmmer()
    seqs = list(block)
    for i, spec in enumerate(specs):
        emitted = spec.load()[1].emit_sequence(randomness=100 + i)
        # 120 residues of it: a local hit all the same, and short rows for the reference
        start = max(0, (len(emitted) - FRAGMENT) // 2)
        seqs.append(pyhmmer.easel.DigitalSequence(
            emitted.alphabet, name=f"emitted{i}".encode(),
            sequence=emitted.sequence[start:start + FRAGMENT]))
    path = tmp_path_factory.mktemp("db") / "homologs.faa"
    with open(path, "wb") as fh:
        for seq in seqs:
            seq.textize().write(fh)
    return str(path), SequenceSet.from_pyhmmer(pyhmmer.easel.DigitalSequenceBlock(
        seqs[0].alphabet, seqs))


def test_mixed_sizes_span_the_range_and_are_calibrated(specs, cache):
    Ms = [s.M for s in specs]
    assert len(specs) == 12 and Ms[:2] == [50, 2000] and all(50 <= M <= 2000 for M in Ms)
    assert len(set(Ms)) > 6                                     # mixed, not one size
    assert all(s.calibrated for s in specs)
    assert specs[0].name == "models-mixed12:3/mixed01-M50"
    path = pds.model_set_file(SET)
    assert path.is_relative_to(cache)
    stamp = os.stat(path).st_mtime_ns
    again = pds.resolve_models(SET)                             # read back, not generated again
    assert os.stat(path).st_mtime_ns == stamp
    assert [s.sha256 for s in again] == [s.sha256 for s in specs]
    assert list(mixed_lengths(12, 4)) != Ms and list(mixed_lengths(12, 3)) == Ms


@pytest.mark.parametrize("name,message", [("models-mixed0", "between 1 and"),
                                          ("models-mixed5:0", "seed must be")])
def test_bad_model_set_names_are_usage_errors(name, message):
    with pytest.raises(Exception, match=message) as err:
        pds.resolve_models(name)
    assert type(err.value).__name__ == "UserError"


@pytest.fixture(scope="module")
def both_counts(specs, homologs):
    """The reference pipeline's pass counts per model, with the bias filter (HMMER's default)
    and without (``--nobias``), one MSV pass each: the pipeline the device pipelines are
    cross-checked against, stage by stage."""
    _, seqs = homologs
    out = {}
    for s in specs:
        model = s.load()[0]
        msv = pl.pf.msv_filter(model, seqs)
        out[s.name] = {b: pl.pass_counts(model, seqs, msv_fn=lambda *_: msv,
                                         bias_filter=b)[0].as_dict() for b in (True, False)}
    return out


@pytest.fixture(scope="module")
def reference_counts(both_counts):
    """The default pipeline's (bias filter on) counts per model."""
    return {name: counts[True] for name, counts in both_counts.items()}


def test_pass_counts_identical_to_pyhmmers_pipeline_per_model(specs, homologs, both_counts):
    _, seqs = homologs
    block = seqs.to_pyhmmer()
    for spec in specs:
        for bias_filter, ours in both_counts[spec.name].items():
            theirs = pl.pyhmmer_pass_counts(spec.load()[1], block, bias_filter).as_dict()
            assert ours == theirs, (spec.name, bias_filter)
            assert ours["fwd"] >= 1, spec.name               # its own emitted sequence


def test_one_command_searches_every_model_as_hmmsearch_counts(specs, homologs, tmp_path,
                                                              monkeypatch, reference_counts):
    """``--model models-mixed12:3``: a cell per model, hmmsearch run once per model (its first
    pass is its timed one), its pass counts the reference's on every model."""
    import subprocess
    from hmmbench.profile import peers
    calls = []
    real = subprocess.run

    def counting(cmd, *a, **k):
        if os.path.basename(str(cmd[0])) == "hmmsearch":
            calls.append(cmd)
        return real(cmd, *a, **k)
    monkeypatch.setattr(peers.subprocess, "run", counting)
    path, _ = homologs
    out = tmp_path / "many.json"
    code = cli.main(["run", "--workload", "profile", "-d", path, "--model", SET, "--kind",
                     "pipeline", "-b", "profile-hmmsearch", "--repeat", "1", "--quiet",
                     "--json", str(out)])
    assert code == 0
    runs = json.loads(out.read_text())["runs"]
    assert all(r["status"] == "peer" and r["repeats"] == 1 for r in runs)
    assert sorted(r["model"] for r in runs) == sorted(s.name for s in specs)
    assert len(calls) == len(specs)                             # once per model, not twice
    for r in runs:
        assert r["info"]["pass_counts"] == reference_counts[r["model"]], r["model"]


def test_models_of_one_shape_share_one_kernel_build(specs):
    """The warp kernels' defines name the shape (vector counts, group), not the model: two
    models of different M but the same vectors build once (the OpenCL warp tests run these
    defines against the reference)."""
    from hmmbench.profile.device import warp
    from hmmbench.profile.model import ProfileModel
    hmm = specs[0].load()[1]                                     # M = 50
    small, other = ProfileModel.from_hmm(hmm), specs[0].load()[0]
    assert small.M == other.M
    import pyhmmer
    abc = pyhmmer.easel.Alphabet.amino()
    near = ProfileModel.from_hmm(pyhmmer.plan7.Builder(abc, seed=1).build(
        pyhmmer.easel.DigitalSequence(abc, name=b"q", sequence=bytes([3] * 60)),
        pyhmmer.plan7.Background(abc))[0])                      # M = 60: the same vectors
    for kind in ("ssv", "msv", "vf"):
        Q, _ = warp.profile(small, kind, warp.TUNED_VARIANT)
        Q2, _ = warp.profile(near, kind, warp.TUNED_VARIANT)
        assert Q == Q2
        assert warp.defines(small, kind, Q, warp.TUNED_VARIANT, 128) == warp.defines(
            near, kind, Q2, warp.TUNED_VARIANT, 128)


#: models-mixed1's file as generated here; models-mixed10 by the same generator came out byte for
#: byte the same on the H200's host (another CPU, NumPy and Python)
MIXED1_SHA256 = "c335449a7d6088a82e635c75788b1ccc9b50a6e2e651d38e2adfe153d217aab3"


def test_a_seeded_set_is_the_same_bytes_wherever_and_whenever_generated(tmp_path, monkeypatch):
    """The set's identity is its file's sha256: nothing of the machine, the moment or the
    generating command may be in the file (HMMER's builder stamps DATE and COM)."""
    import hashlib
    import sys
    digests = []
    for run, argv in (("a", ["hmmbench", "run"]), ("b", ["elsewhere", "-m", "other"])):
        monkeypatch.setenv("HMMBENCH_CACHE_DIR", str(tmp_path / run))
        monkeypatch.setattr(sys, "argv", argv)
        text = pds.model_set_file("models-mixed1").read_bytes()
        assert not [line for line in text.splitlines() if line.startswith((b"DATE", b"COM"))]
        digests.append(hashlib.sha256(text).hexdigest())
    assert digests == [MIXED1_SHA256] * 2
