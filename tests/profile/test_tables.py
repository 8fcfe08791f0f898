"""The pipeline's fast host builders (hmmbench.profile.pipeline: per-length decision tables,
Viterbi thresholds, length classes, outcome) against their straightforward definitions, kept
here as the oracles: the reference's finishing rules run on every (length, raw value) pair."""
import numpy as np
import pytest

pytest.importorskip("pyhmmer")

from hmmbench.profile import datasets, pipeline as pl  # noqa: E402
from hmmbench.profile.pipeline import (FAIL_MSV, MSV_OFFSET, MSV_VALUES, PENDING_MSV,  # noqa: E402
                                       PENDING_VIT, SSV_OFFSET, SSV_VALUES, TO_FORWARD, VF_HIGH,
                                       VF_LOW, gumbel_surv, seq_bits)


# --- the oracles: the definitions the fast builders replaced --------------------------------
def msv_codes_by_value(model, score, L, nullsc, F1, F2):
    ev = model.evalue
    P = gumbel_surv(seq_bits(score, nullsc), ev["m_mu"], ev["m_lambda"])
    code = np.where(P <= F2, TO_FORWARD, np.where(P <= F1, PENDING_VIT, FAIL_MSV))
    return np.where(L > 0, code, FAIL_MSV).astype(np.uint8)


def msv_tables_by_value(model, lengths, F1=pl.F1, F2=pl.F2):
    """Every length class x every raw value through the reference's finishing functions."""
    from cpu_reference.profile import filters as pf
    from cpu_reference.profile.generic import null_score
    lengths = np.asarray(lengths, np.int64)
    C = len(lengths)
    tjb, nullsc = model.byte.tjb(lengths), null_score(lengths)
    tables = []
    for width, offset in ((SSV_VALUES, SSV_OFFSET), (MSV_VALUES, MSV_OFFSET)):
        L, cls_tjb, cls_null = (np.repeat(a, width) for a in (lengths, tjb, nullsc))
        raw = np.tile(np.arange(width, dtype=np.int64) - offset, C)
        if offset == SSV_OFFSET:
            score, redo = pf.ssv_from_xe(model, raw, L, cls_tjb)
            code = np.where(redo, PENDING_MSV,
                            msv_codes_by_value(model, np.where(redo, 0, score), L, cls_null,
                                               F1, F2))
        else:
            score = pf.msv_from_xj(model, np.maximum(raw, 0), raw < 0, L, cls_tjb)
            code = msv_codes_by_value(model, score, L, cls_null, F1, F2)
        tables.append(code.astype(np.uint8).reshape(C, width))
    return tables[0], tables[1]


def vf_passes(model, xc, L, F2=pl.F2):
    """The Viterbi filter's decision P <= F2 from a raw xC (32768: an overflow)."""
    from cpu_reference.profile import filters as pf
    from cpu_reference.profile.generic import null_score
    ev = model.evalue
    score = pf.vf_from_xc(model, np.minimum(xc, 32767), xc > 32767, L)
    return gumbel_surv(seq_bits(score, null_score(L)), ev["v_mu"], ev["v_lambda"]) <= F2


def outcome_by_value(stage, fwd):
    stage = np.asarray(stage, np.float64)
    return pl.STAGE_STEP * stage + np.where(stage >= 2, np.nan_to_num(np.asarray(fwd, np.float64)),
                                            0.0)


# --- the models and lengths they are compared on --------------------------------------------
#: every length to 2,500, then sparser to past the longest proteins and the 16-bit boundary
LENGTHS = np.unique(np.concatenate([np.arange(0, 2501), np.arange(2501, 40000, 97),
                                    [65535, 65536, 100_000, 1 << 20, 3_000_000]]))
GENERATED = ["query-M10", "query-M100", "query-M1200", "random-M5", "random-M50",
             "random-M400", "random-M3000"]


def model_of(name):
    """A profile model by name; a random-M model (no calibration) borrows query-M100's E-value
    parameters (the tables exercise its own byte/word profile: bias, base, tbm, tec)."""
    model = datasets.resolve_model(name).load()[0]
    if model.evalue.get("m_lambda") is None:
        import copy
        model = copy.copy(model)
        model.evalue = datasets.resolve_model("query-M100").load()[0].evalue
    return model


NAMES = [s.name for s in datasets.shipped_models()] + GENERATED


@pytest.mark.parametrize("name", NAMES)
def test_msv_tables_and_vf_thresholds_as_the_value_by_value_definition(name):
    model = model_of(name)
    fast, slow = pl.msv_tables(model, LENGTHS), msv_tables_by_value(model, LENGTHS)
    for got, want in zip(fast, slow):
        assert got.dtype == np.uint8 and got.shape == want.shape
        assert (got == want).all(), np.argwhere(got != want)[:5]
    thr = pl.vf_thresholds(model, LENGTHS).astype(np.int64)
    L = LENGTHS[1:]                     # L = 0 (NaN null score) passes nothing: the top value
    assert LENGTHS[0] == 0 and thr[0] == VF_HIGH and (VF_LOW <= thr).all()
    assert vf_passes(model, thr[1:], L).all()                  # the least raw xC that passes
    assert not vf_passes(model, thr[1:] - 1, L)[thr[1:] > VF_LOW].any()


@pytest.mark.parametrize("F1,F2", [(1e-3, 0.02), (1.0, 0.0), (0.5, 1e-6), (1e-9, 1e-12)])
def test_msv_tables_at_other_thresholds(F1, F2):
    """Swapped, extreme and tiny P-value thresholds (codes that pass nothing or everything)."""
    model = model_of("query-M100")
    lengths = LENGTHS[::7]
    for got, want in zip(pl.msv_tables(model, lengths, F1, F2),
                         msv_tables_by_value(model, lengths, F1, F2)):
        assert (got == want).all()


def test_the_tables_are_not_trivial():
    """Every code occurs (so the comparisons above test decisions, not constants)."""
    ssv, msv = pl.msv_tables(model_of("query-M100"), LENGTHS)
    assert set(np.unique(ssv)) == {FAIL_MSV, TO_FORWARD, PENDING_MSV, PENDING_VIT}
    assert set(np.unique(msv)) == {FAIL_MSV, TO_FORWARD, PENDING_VIT}


def test_length_classes_counted_or_sorted_as_np_unique():
    rng = np.random.default_rng(3)
    for L in (rng.integers(0, 40_000, 20_000), rng.integers(0, 10, 50),
              np.array([pl.COUNTED_LENGTHS + 5, 3, 3, 0]),
              rng.integers(0, 300, 999).astype(np.int32),
              rng.integers(0, 300, 999).astype(np.uint64), np.zeros(0, np.int64)):
        uniq, cls = pl.length_classes(L)
        want_u, want_c = np.unique(L, return_inverse=True)
        assert uniq.dtype == L.dtype and cls.dtype == np.int32
        assert (uniq == want_u).all() and (cls == want_c.reshape(-1)).all()


def test_outcome_as_the_dense_definition():
    rng = np.random.default_rng(4)
    stage = rng.integers(0, 6, 5000).astype(np.int8)
    fwd = rng.normal(0, 20, 5000)
    fwd[rng.integers(0, 5000, 300)] = np.nan
    fwd[rng.integers(0, 5000, 20)] = np.inf
    for f in (fwd, fwd.astype(np.float32)):
        got, want = pl.outcome(stage, f), outcome_by_value(stage, f)
        assert got.dtype == np.float64 and (got.view(np.int64) == want.view(np.int64)).all()
    assert pl.counts_of(stage) == {"searched": 5000, "msv": int((stage >= 1).sum()),
                                   "bias": int((stage >= 1).sum()),
                                   "vit": int((stage >= 2).sum()), "fwd": int((stage == 3).sum())}


def test_resident_length_model_is_the_models_per_sequence():
    """The generic Forward's loop/move per sequence, computed per distinct length and spread by
    class (hmmbench.profile.device.cuda.resident_specials), bit for bit the model's own."""
    from hmmbench.profile.device.layout import resident_specials
    model = model_of("query-M100")
    rng = np.random.default_rng(5)
    for n in (1, 7, 1000, 100_003):
        L = rng.integers(0, 40_000, n)
        lengths, classes = pl.length_classes(L)
        got = resident_specials(lengths, classes)
        for name, want in zip(("loop", "move"), model.specials(L)):
            assert got[name].dtype == np.float32
            assert (got[name].view(np.int32) == want.view(np.int32)).all(), name


@pytest.mark.parametrize("off", [0, 1, -1, 3, -40, 70000])
def test_least_true_is_exact_whatever_the_estimate(off):
    """The threshold search the tables start from an estimate: any estimate, however far off
    (bisected past a few steps), gives the least passing value of a monotone predicate."""
    rng = np.random.default_rng(5)
    lo, hi = -50, 1000
    answer = rng.integers(lo, hi + 1, 400)
    got = pl.least_true(lambda x, idx: x >= answer[idx], lo, hi, answer + off)
    assert (got == answer).all()
