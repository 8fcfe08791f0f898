"""HMMER's biased-composition filter (cpu_reference/profile/bias.py, the pipeline's bias stage):
the filter null score bit for bit HMMER's p7_bg_FilterScore (its own routine through ctypes),
and the pass counts with the filter on and off identical to pyhmmer's Pipeline on a generated
set of biased-composition sequences (low-complexity runs, the model's own composition) where
the filter stops sequences that passed MSV."""
import numpy as np
import pytest

pyhmmer = pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from cpu_reference.profile import bias, filters as pf  # noqa: E402
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


def _ulps(x, k: int) -> np.ndarray:
    """The float32 values k steps either side of x (x included)."""
    out = [np.float32(x)]
    for direction in (np.inf, -np.inf):
        v = np.float32(x)
        for _ in range(k):
            v = np.nextafter(v, np.float32(direction))
            out.append(v)
    return np.array(out, np.float32)


def test_least_passing_bits_decide_as_the_p_values():
    """The thresholds in bits a device compares each sequence's bits with (past the bias filter
    every sequence has its own null score): the least float32 whose Gumbel P-value passes
    (it passes, the float below fails), for every shipped model's MSV and Viterbi parameters
    at F1 and F2; and the decision from them (bits_decision) is HMMER's P > F test on bits
    around the thresholds, far from them, NaN and infinite."""
    rng = np.random.default_rng(3)
    for spec in datasets.shipped_models():
        ev = spec.load()[0].evalue
        for mu, lam in ((ev["m_mu"], ev["m_lambda"]), (ev["v_mu"], ev["v_lambda"])):
            b1, b2 = pl.least_passing_bits(mu, lam, pl.F1), pl.least_passing_bits(mu, lam, pl.F2)
            assert isinstance(b1, np.float32) and b1 < b2
            bits = np.concatenate([_ulps(b1, 3), _ulps(b2, 3), rng.normal(b1, 8, 200),
                                   [np.nan, np.inf, -np.inf]]).astype(np.float32)
            with np.errstate(invalid="ignore"):
                P = pl.gumbel_surv(bits, mu, lam)
            passed = ~(P > pl.F1)
            want = np.where(passed, np.where(P > pl.F2, 1, 2), 0)
            assert np.array_equal(pl.bits_decision(bits, b1, b2), want)
            assert np.array_equal(pl.bits_decision(bits, b2), ~(P > pl.F2))
            assert {0, 1, 2} <= set(want.tolist())
    # far from the inverse of the tail's estimate: the bisection finds it too
    assert pl.least_passing_bits(0.0, 1.0, 0.5, steps=0) == pl.least_passing_bits(0.0, 1.0, 0.5)


def emulated_bias_decide(model, seqs, idx, xe, xj, bits: tuple) -> tuple:
    """kernels_cuda/profile/bias.cu's bias_decide in NumPy, float32 step for step: the MSV
    score from SSV's raw ``xe`` or, where SSV cannot decide, the full MSV's ``xj`` (given for
    those, in order), the filter null from the filter HMM's Forward and the per-length logs,
    the bits, the comparisons with the thresholds ``bits`` (F1, F2). (codes: 0 failed, 1 on
    to the Viterbi filter, 2 on to Forward; the filter null scores) of the sequences ``idx``."""
    L = seqs.lengths[idx]
    usc, redo = pf.ssv_from_xe(model, np.asarray(xe, np.int64), L)
    xj = np.asarray(xj, np.int64)
    usc[redo] = pf.msv_from_xj(model, np.maximum(xj, 0), xj < 0, L[redo])
    fwd = bias.filter_forward(model.M, model.composition, model.background, seqs, idx, model.Kp)
    lp, lq = libm.length_terms(L)
    f32 = np.float32
    with np.errstate(invalid="ignore"):
        fsc = ((fwd + (L.astype(f32) * lp).astype(f32)).astype(f32) + lq).astype(f32)
        b = (((usc.astype(f32) - fsc).astype(f32)).astype(np.float64) / pl.LOG2).astype(f32)
    return pl.bits_decision(b, *bits), fsc


def emulated_vf_decide(model, vf, null, bv) -> np.ndarray:
    """bias.cu's vf_decide in NumPy: True where the Viterbi filter's scores ``vf`` fail against
    each sequence's filter null."""
    with np.errstate(invalid="ignore"):
        b = (((vf - null).astype(np.float32)).astype(np.float64) / pl.LOG2).astype(np.float32)
    return pl.bits_decision(b, bv) == 0


@pytest.mark.parametrize("name", ["LuxC", "PF02826"])
def test_device_bias_decision_emulated_is_the_references(name, loaded):
    """bias_decide and vf_decide emulated (above): the codes (failed / on to the Viterbi filter
    / on to Forward) and null scores of pipeline.bias_stage, and the Viterbi filter's
    decision of the reference pipeline, on biased-composition sequences where the filter
    stops some."""
    model, _ = loaded[name]
    seqs = biased_set(model.composition, n=120)
    idx = np.arange(len(seqs))
    b1, b2, bv = pl.stage_bits_thresholds(model)
    xe = pf.ssv_xe(model, seqs, idx)
    redo = pf.ssv_from_xe(model, xe.astype(np.int64), seqs.lengths)[1]
    codes, fsc = emulated_bias_decide(model, seqs, idx, xe,
                                      pf.msv_full(model, seqs, np.flatnonzero(redo)), (b1, b2))
    msv = pf.msv_filter(model, seqs)
    passed, to_vit, want_fsc = pl.bias_stage(model, seqs, idx, msv)
    assert np.array_equal(fsc, want_fsc, equal_nan=True)
    assert np.array_equal(codes, np.where(passed, np.where(to_vit, 1, 2), 0))
    assert (codes == 0).any() and (codes == 1).any()
    vit = np.flatnonzero(codes == 1)
    vf = pf.viterbi_filter(model, seqs.subset(vit))
    ev = model.evalue
    with np.errstate(invalid="ignore"):
        fails = pl.gumbel_surv(pl.seq_bits(vf, fsc[vit]), ev["v_mu"], ev["v_lambda"]) > pl.F2
    assert np.array_equal(emulated_vf_decide(model, vf, fsc[vit], bv), fails)


def _deciding_device():
    """The OpenCL CPU device with the CUDA pipeline's steps after MSV (bias.cu's bias_forward,
    bias_decide, vf_decide) as the NumPy emulations above: run_pipeline then takes the path
    where the device decides the bias filter and the Viterbi filter after it."""
    pytest.importorskip("pyopencl", reason="pyopencl not installed")
    import pyopencl as cl
    from hmmbench.profile.device.opencl import ProfileFiltersOpenCL

    class Deciding(ProfileFiltersOpenCL):
        def _put_codes(self, codes):
            cl.enqueue_copy(self.kit.queue, self._codes(), np.ascontiguousarray(codes))

        def bias_forward(self, model, order, m, codes):
            pass                                # scored by bias_decide's emulation

        def bias_decide(self, model, order, m, codes, raw, tjb, terms, bits, to):
            db, n = self._db, self._db.n
            c = self.codes()
            surv = np.flatnonzero(np.isin(c, codes))
            xe = self.download_ints(raw[0], n)[surv]
            redo = pf.ssv_from_xe(model, xe.astype(np.int64), db.seqs.lengths[surv])[1]
            xj = self.download_ints(raw[1], n)[surv[redo]] if redo.any() else []
            dec, fsc = emulated_bias_decide(model, db.seqs, surv, xe, xj, bits)
            self.null = np.full(n, np.nan, np.float32)
            self.null[surv] = fsc
            c[surv] = np.asarray(to, np.uint8)[dec]
            self._put_codes(c)

        def vf_decide(self, model, order, m, xc, move, bits, to):
            n = self._db.n
            listed = self.download_ints(order, m)
            x = self.download_ints(xc, n)[listed]
            vf = pf.vf_from_xc(model, np.minimum(x, 32767), x > 32767,
                               self._db.seqs.lengths[listed])
            c = self.codes()
            c[listed] = np.where(emulated_vf_decide(model, vf, self.null[listed], bits),
                                 to[1], to[0])
            self._put_codes(c)

        def bias_nulls(self):
            return self.null
    try:
        return Deciding(None)
    except Exception as exc:  # noqa: BLE001 - no OpenCL platform
        pytest.skip(f"no OpenCL device: {exc}")


@pytest.mark.parametrize("name", ["LuxC", "PF02826"])
def test_pipeline_with_the_device_deciding_the_bias_filter(name, loaded):
    """The pipeline's path without a host round trip between MSV and the Viterbi filter (what
    the CUDA backends run), with the device's decisions emulated: pass counts identical to
    pyhmmer's Pipeline (bias filter on), the outcome per sequence as the reference's."""
    from hmmbench.backend import StageClock
    from hmmbench.profile.device.pipeline import run_pipeline
    model, hmm = loaded[name]
    dev = _deciding_device()
    seqs = biased_set(model.composition, n=120)
    dev._db = dev.resident.get_seqs(seqs, None)[0]
    clock = StageClock()
    got, info = run_pipeline(dev, model, dev._db, clock, clock, StageClock,
                             lambda c: dict(c.timing))
    assert info["bias_decision"] == "device"
    theirs = pl.pyhmmer_pass_counts(hmm, seqs.to_pyhmmer()).as_dict()
    assert info["pass_counts"] == theirs
    if name != "PF02826":                     # no COMPO line: the filter stops nothing there
        assert theirs["bias"] < theirs["msv"]
    counts, stage, fwd = pl.run_stages(model, seqs)
    assert np.max(np.abs(got - pl.outcome(stage, fwd))) < 1e-2
