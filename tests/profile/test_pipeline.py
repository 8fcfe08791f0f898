"""Profile workload pipeline view: per-stage pass counts identical to pyhmmer's Pipeline with
its bias filter on (its default) and off, every shipped protein model x the 2,100-protein
proteome."""
import numpy as np
import pytest

pyhmmer = pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from hmmbench.profile import datasets, pipeline  # noqa: E402
from hmmbench.profile.model import ProfileModel  # noqa: E402




HMMS = [h for p in datasets.model_files() for h in datasets.read_hmms(p) if h.alphabet.is_amino()]


def once_per_sequence(score):
    """``score(model, seqs)`` computed once per sequence (by name) of the model's searches:
    the two pipelines send mostly the same survivors to the Viterbi filter and Forward."""
    done: dict = {}

    def scores(model, seqs):
        todo = [i for i, name in enumerate(seqs.names) if name not in done]
        if todo:
            done.update(zip([seqs.names[i] for i in todo], score(model, seqs.subset(todo))))
        return np.array([done[name] for name in seqs.names])
    return scores


@pytest.mark.parametrize("hmm", HMMS, ids=[str(h.name) for h in HMMS])
def test_pass_counts_identical(hmm, proteome, block, proteome_msv):
    model = ProfileModel.from_hmm(hmm)
    msv = proteome_msv(model)[1]                          # one MSV pass for both pipelines
    vit = once_per_sequence(pipeline.pf.viterbi_filter)
    fwd = once_per_sequence(pipeline.pg.generic_forward)
    for bias_filter in (True, False):
        ours, stage = pipeline.pass_counts(model, proteome, msv_fn=lambda *_: msv, vit_fn=vit,
                                           fwd_fn=fwd, bias_filter=bias_filter)
        theirs = pipeline.pyhmmer_pass_counts(hmm, block, bias_filter)
        assert ours.as_dict() == theirs.as_dict(), bias_filter
        assert ours.msv >= ours.bias >= ours.vit >= ours.fwd
        assert (stage >= 1).sum() == ours.bias and (stage == 3).sum() == ours.fwd
        assert (stage == pipeline.FAIL_BIAS).sum() == ours.msv - ours.bias
        assert bias_filter or ours.bias == ours.msv


def test_survival_functions():
    assert pipeline.gumbel_surv(np.array([1e6]), 0.0, 0.7)[0] == 0.0
    np.testing.assert_allclose(pipeline.gumbel_surv(np.array([0.0]), 0.0, 1.0), 1 - np.exp(-1))
    assert pipeline.exp_surv(np.array([-5.0]), 0.0, 0.7)[0] == 1.0
    np.testing.assert_allclose(pipeline.exp_surv(np.array([2.0]), 1.0, 0.5), np.exp(-0.5))


def test_dataset_catalog():
    by_name = {d.name: d for d in datasets.catalog()}
    assert {"proteome", "proteins-1m", "proteins-swissprot"} <= set(by_name)
    prot = by_name["proteome"]
    assert len(prot.sha256) == 64 and prot.load().n_residues == 682583
    small = by_name["proteins-1m"].load()
    assert small.n_residues >= 1_000_000
    assert by_name["proteins-1m"].sha256 != by_name["proteins-swissprot"].sha256
