"""HMMER's biased-composition filter (cpu_reference/profile/bias.py, the pipeline's bias stage):
the filter null score bit for bit HMMER's p7_bg_FilterScore (its own routine through ctypes),
and the pass counts with the filter on and off identical to pyhmmer's Pipeline on a generated
set of biased-composition sequences (low-complexity runs, the model's own composition) where
the filter stops sequences that passed MSV."""
import numpy as np
import pytest

pyhmmer = pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from cpu_reference.profile import bias  # noqa: E402
from cpu_reference.profile.generic import logf  # noqa: E402
from hmmbench.profile import datasets, libm, pipeline as pl  # noqa: E402
from hmmbench.profile.datasets.synthetic import background_frequencies  # noqa: E402
from hmmbench.profile.model import SequenceSet  # noqa: E402


def biased_set(composition, n: int = 240, seed: int = 5) -> SequenceSet:
    """Sequences of biased composition, a third each: i.i.d. from the model's composition,
    background with a low-complexity run of the model's one to three most frequent residues,
    an even mixture of the two compositions; plus the edge lengths 1 and 2 and degenerate
    codes (B, J, Z, O, U, X, gap, '*', '~') sprinkled in."""
    rng = np.random.default_rng(seed)
    bg = background_frequencies()
    compo = np.asarray(composition, float)
    compo = compo / compo.sum() if compo.sum() > 0 else bg
    out = []
    for i in range(n):
        L = int(rng.integers(40, 700))
        if i % 3 == 0:
            s = rng.choice(20, L, p=compo)
        elif i % 3 == 1:
            s = rng.choice(20, L, p=bg)
            top = np.argsort(compo)[::-1][:int(rng.integers(1, 4))]
            a = int(rng.integers(0, L))
            b = min(L, a + int(rng.integers(20, 200)))
            s[a:b] = rng.choice(top, b - a)
        else:
            s = rng.choice(20, L, p=(compo + bg) / 2)
        if i % 10 == 9:
            s[rng.random(L) < 0.03] = rng.integers(20, 29)
        out.append(s.astype(np.uint8))
    out += [np.array([9], np.uint8), np.array([26, 3], np.uint8)]
    offs = np.concatenate([[0], np.cumsum([len(s) for s in out])])
    return SequenceSet([f"biased{i}" for i in range(len(out))], np.concatenate(out), offs)


#: (model, its file, its index there): a model with a COMPO line, one without (HMMER runs the
#: filter on zeros then), an RREFam one
MODELS = {"LuxC": ("LuxC.hmm", 0), "PF02826": ("PF02826.hmm", 0),
          "RREFam/Thuricin_rSAM_RRE": ("RREFam.hmm", 5)}


@pytest.fixture(scope="module")
def loaded():
    return {name: datasets.resolve_model(name).load() for name in MODELS}


@pytest.mark.parametrize("name", MODELS)
def test_filter_score_is_hmmers_bit_for_bit(name, loaded, proteome, oracles):
    model, hmm = loaded[name]
    fname, which = MODELS[name]
    oracle = oracles(fname)
    assert oracle.models[which][0] == model.M == hmm.M
    assert (model.composition == 0).all() == (hmm.composition is None)
    L = proteome.lengths
    picks = np.unique(np.concatenate([np.arange(0, len(proteome), 40), [np.argmax(L)],
                                      np.flatnonzero((L == 74) | (L == 102))[:2]]))
    assert {74, 102} <= set(L[picks].tolist())          # glibc's logf matters there
    seqs = biased_set(model.composition)
    for sset, idx in ((proteome, picks), (seqs, np.arange(len(seqs)))):
        ours = pl.filter_null(model, sset, idx)
        theirs = oracle.filter_scores(which, model.composition,
                                      [sset.codes(int(i)) for i in idx])
        assert np.array_equal(ours, theirs), (name, np.flatnonzero(ours != theirs)[:5])


def test_length_model_logs_are_the_c_librarys():
    """L = 74 and 102 (in the proteome): the float64 log rounded to float32 is one ulp off
    glibc's logf of p1 = L/(L+1), which is why the pipeline passes the C library's; the
    per-length table gives what a call per length gives, in any order and after growing."""
    L = np.array([74, 102], np.float32)
    p1 = L / (L + np.float32(1))
    if libm.libm() is None:
        pytest.skip("no C math library to compare with")
    assert (libm.c_logf(p1) != logf(p1)).all()
    assert libm.c_logf(np.float32(0.5)) == np.float32(np.log(0.5))
    lengths = np.array([5000, 74, 1, 102, 74, 20000, 3])
    want = bias.length_terms(lengths, libm.c_logf)
    backwards = [a[::-1] for a in libm.length_terms(lengths[::-1])]
    for got in (libm.length_terms(lengths), backwards):
        for g, w in zip(got, want):
            assert np.array_equal(g, w)
    assert not np.array_equal(bias.length_terms(lengths)[0], want[0])


def test_without_a_c_math_library_logf_is_the_rounded_float64_log(monkeypatch):
    """No libm found: c_logf falls back to the reference's logf instead of failing."""
    import ctypes.util
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    libm.libm.cache_clear()
    try:
        assert libm.libm() is None
        x = np.array([0.5, 74 / 75, 3.0], np.float32)
        assert np.array_equal(libm.c_logf(x), logf(x))
    finally:
        libm.libm.cache_clear()


@pytest.mark.parametrize("name", MODELS)
def test_pass_counts_with_and_without_the_filter_are_pyhmmers(name, loaded):
    model, hmm = loaded[name]
    seqs = biased_set(model.composition)
    block = seqs.to_pyhmmer()
    msv = pl.pf.msv_filter(model, seqs)                 # one MSV pass for both pipelines
    on = pl.run_stages(model, seqs, msv_fn=lambda *_: msv)[0].as_dict()
    off = pl.run_stages(model, seqs, msv_fn=lambda *_: msv, bias_filter=False)[0].as_dict()
    assert on == pl.pyhmmer_pass_counts(hmm, block).as_dict()
    assert off == pl.pyhmmer_pass_counts(hmm, block, bias_filter=False).as_dict()
    assert on["msv"] == off["msv"] == off["bias"]
    if name != "PF02826":                                # the filter stops biased sequences
        assert on["bias"] < on["msv"]


def test_bias_stage_decisions():
    """NaN P-values pass, as HMMER's ``P > F`` tests let them; the Viterbi filter is skipped
    where the P-value against the filter null is <= F2."""
    model, _ = datasets.resolve_model("LuxC").load()
    seqs = biased_set(model.composition, n=6)
    idx = np.arange(len(seqs))
    fsc = pl.filter_null(model, seqs, idx)
    ev = model.evalue
    # MSV scores putting the P-values far below F2, between F2 and F1, above F1
    x2 = pl.gumbel_threshold(ev["m_mu"], ev["m_lambda"], 1e-9)
    x1 = pl.gumbel_threshold(ev["m_mu"], ev["m_lambda"], 0.005)
    x0 = pl.gumbel_threshold(ev["m_mu"], ev["m_lambda"], 0.5)
    usc = (fsc + np.array([x2, x1, x0, x2, x1, x0, x2, x1], np.float32)[:idx.size]
           * np.float32(pl.LOG2)).astype(np.float32)
    usc[0] = np.nan
    passed, to_vit, got = pl.bias_stage(model, seqs, idx, usc)
    assert np.array_equal(got, fsc)
    assert passed.tolist()[:6] == [True, True, False, True, True, False]
    assert to_vit.tolist()[:6] == [False, True, False, False, True, False]
