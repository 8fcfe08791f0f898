"""The vectorized NumPy reference vs the scalar second opinion, GATK's/GKL's expected results,
the shared float32 fallback rule and the two reference backends."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import cpu_reference.pairhmm
from helpers.paths import data_dirs
from hmmbench.pairhmm.reference import backends
from cpu_reference.pairhmm.forward import finish_float32, forward, forward_log10, forward_sums, layout
from hmmbench.pairhmm.model import LOG10_C32, Batch, Read, empty_pairset, pack
from helpers.scalar_pairhmm import scalar_log10

ALPHABET = "ACGTNacgtn"
MAX_LEN = 300


# --- building inputs ---------------------------------------------------------------------------
def phred33(quals) -> bytes:
    return bytes(33 + q for q in quals)


def make_pairset(batches):
    """batches: [(reads, haps)], a read = (bases, base_q, ins_q, del_q, gcp_q) with int lists."""
    packed = []
    for reads, haps in batches:
        packed.append(Batch(
            reads=[Read(b.encode(), phred33(bq), phred33(iq), phred33(dq), phred33(gq))
                   for b, bq, iq, dq, gq in reads],
            haplotypes=[h.encode() for h in haps]))
    return pack(packed)


def scalar_all(batches) -> np.ndarray:
    """Scalar results in PairSet order: batch by batch, read-major."""
    return np.array([scalar_log10(r[0], h, *r[1:]) for reads, haps in batches
                     for r in reads for h in haps])


def assert_matches_scalar(got, want, tol):
    want_finite = np.isfinite(want)
    # Non-finite scalar results (M->M < 0 from absurd ins/del qualities) must stay non-finite.
    assert not np.isfinite(got[~want_finite]).any(), (got, want)
    err = np.abs(got[want_finite] - want[want_finite])
    bound = tol * np.maximum(1.0, np.abs(want[want_finite]))
    assert (err <= bound).all(), f"worst error {err.max()} (values {got}, scalar {want})"


# --- hypothesis strategies ---------------------------------------------------------------------
QUAL_PROFILES = {
    "any": st.integers(0, 93),
    "extreme": st.sampled_from([0, 1, 2, 92, 93]),
    "realistic": st.integers(6, 45),
}


@st.composite
def reads_of(draw, max_len):
    length = draw(st.integers(1, max_len))
    bases = draw(st.text(alphabet=ALPHABET, min_size=length, max_size=length))
    quals = []
    for _ in range(4):
        profile = QUAL_PROFILES[draw(st.sampled_from(sorted(QUAL_PROFILES)))]
        quals.append(draw(st.lists(profile, min_size=length, max_size=length)))
    return (bases, *quals)


@st.composite
def batches_of(draw, max_batches=3, max_reads=3, max_haps=3, max_len=40):
    out = []
    for _ in range(draw(st.integers(1, max_batches))):
        reads = draw(st.lists(reads_of(max_len), min_size=1, max_size=max_reads))
        haps = draw(st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=max_len),
                             min_size=1, max_size=max_haps))
        out.append((reads, haps))
    return out


FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LONG = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- vectorized vs scalar ----------------------------------------------------------------------
@FAST
@given(batches_of())
def test_float64_matches_scalar_on_small_multi_batch_sets(batches):
    pairs = make_pairset(batches)
    assert_matches_scalar(forward_log10(pairs, "float64"), scalar_all(batches), 1e-9)


@FAST
@given(batches_of())
def test_float32_matches_scalar_on_small_multi_batch_sets(batches):
    pairs = make_pairset(batches)
    assert_matches_scalar(forward_log10(pairs, "float32"), scalar_all(batches), 1e-4)


@LONG
@given(batches_of(max_batches=1, max_reads=1, max_haps=2, max_len=MAX_LEN))
def test_both_precisions_match_scalar_up_to_300_bases(batches):
    pairs = make_pairset(batches)
    want = scalar_all(batches)
    assert_matches_scalar(forward_log10(pairs, "float64"), want, 1e-9)
    assert_matches_scalar(forward_log10(pairs, "float32"), want, 1e-4)


@pytest.mark.parametrize("precision", ["float64", "float32", pytest.param("longdouble", marks=(
    pytest.mark.skipif(np.finfo(np.longdouble).minexp >= np.finfo(np.float64).minexp,
                       reason="long double has float64's range here")))])
def test_single_pair_batches_with_n_and_lowercase(precision):
    rng = np.random.default_rng(7)
    batches = []
    for read_len, hap_len in [(1, 1), (1, 300), (300, 1), (7, 5), (120, 260), (300, 300)]:
        bases = "".join(rng.choice(list(ALPHABET), read_len))
        hap = "".join(rng.choice(list(ALPHABET), hap_len))
        quals = [rng.integers(0, 94, read_len).tolist() for _ in range(3)]
        read = (bases, quals[0], rng.integers(20, 94, read_len).tolist(),
                rng.integers(20, 94, read_len).tolist(), quals[2])
        batches.append(([read], [hap]))
    pairs = make_pairset(batches)
    assert pairs.n_batches == len(batches)
    tol = 1e-4 if precision == "float32" else 1e-9
    got, want = forward_log10(pairs, precision), np.asarray(scalar_all(batches))
    assert got.dtype == np.float64
    if precision == "longdouble":  # (300, 1) underflows float64; long double holds it
        gone = ~np.isfinite(want)
        assert gone.sum() == 1 and got[gone][0] < -615
        got, want = got[~gone], want[~gone]
    assert_matches_scalar(got, want, tol)


def test_n_matches_everything_and_case_is_ignored():
    quals = ([30] * 4, [40] * 4, [40] * 4, [10] * 4)
    batches = [([("ACGT", *quals), ("acgt", *quals), ("NNNN", *quals)], ["ACGT", "nnnn", "acgt"])]
    got = forward_log10(make_pairset(batches), "float64").reshape(3, 3)
    # Case is ignored: ACGT/acgt reads against ACGT/acgt haplotypes give one value.
    assert got[0, 0] == got[1, 0] == got[0, 2] == got[1, 2]
    # Anything involving an all-N read or haplotype matches at every cell: one (higher) value.
    all_n = [got[0, 1], got[1, 1], got[2, 0], got[2, 1], got[2, 2]]
    assert all(v == all_n[0] for v in all_n) and all_n[0] > got[0, 0]
    mismatch = forward_log10(make_pairset([([("ACGT", *quals)], ["TGCA"])]), "float64")[0]
    assert mismatch < got[0, 0] - 1


def test_grouping_does_not_change_results():
    rng = np.random.default_rng(3)
    batches = []
    for _ in range(6):
        reads = []
        for _ in range(int(rng.integers(1, 5))):
            n = int(rng.integers(1, 80))
            reads.append(("".join(rng.choice(list("ACGT"), n)),
                          *(rng.integers(6, 45, n).tolist() for _ in range(4))))
        haps = ["".join(rng.choice(list("ACGT"), int(rng.integers(1, 90))))
                for _ in range(int(rng.integers(1, 4)))]
        batches.append((reads, haps))
    pairs = make_pairset(batches)
    for precision in ("float64", "float32"):
        default = forward_sums(layout(pairs, precision))
        for max_elements, slack in [(1, 0.0), (200, 0.1), (10 ** 7, 100.0)]:
            lay = layout(pairs, precision, max_elements=max_elements, slack=slack)
            if max_elements == 1:
                assert len(lay.groups) == pairs.n_pairs
            np.testing.assert_array_equal(forward_sums(lay), default)
    # Each pair computed on its own (a 1x1 batch) gives the same number as in the full set.
    some = np.array([0, pairs.n_pairs // 2, pairs.n_pairs - 1])
    np.testing.assert_allclose(forward_log10(pairs.subset_pairs(some)),
                               forward_log10(pairs)[some], rtol=1e-13)


# --- empty input and precision errors ----------------------------------------------------------
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_empty_pairset(precision):
    out = forward_log10(empty_pairset(), precision)
    assert out.shape == (0,) and out.dtype == np.float64
    assert cpu_reference.pairhmm.forward_sums_f32(empty_pairset()).dtype == np.float32


def test_unknown_precision_is_refused():
    with pytest.raises(ValueError, match="precision"):
        forward_log10(empty_pairset(), "float16")


# --- the shared float32 fallback rule ----------------------------------------------------------
def _low_likelihood_set():
    """Pair 0 is ordinary; pair 1 (300 confident mismatches) underflows float32's 1e-28."""
    good = ("ACGTACGTAC", [30] * 10, [45] * 10, [45] * 10, [10] * 10)
    bad = ("A" * 300, [60] * 300, [45] * 300, [45] * 300, [10] * 300)
    return [([good], ["ACGTACGTACGT"]), ([bad], ["C" * 300])]


def test_forward_sums_f32_is_raw_float32_with_the_2_120_factor():
    batches = _low_likelihood_set()
    pairs = make_pairset(batches)
    sums = cpu_reference.pairhmm.forward_sums_f32(pairs)
    assert sums.dtype == np.float32
    assert math.isclose(math.log10(sums[0]) - LOG10_C32, scalar_log10(batches[0][0][0][0],
                        batches[0][1][0], *batches[0][0][0][1:]), abs_tol=1e-4)
    assert sums[1] < 1e-28


def test_float32_fallback_recomputes_underflows_in_float64():
    pairs = make_pairset(_low_likelihood_set())
    result = forward(pairs, "float32")
    assert result.fallback_index.tolist() == [1]
    f64 = forward_log10(pairs, "float64")
    assert result.log10[1] == f64[1]                     # recomputed, hence exactly float64's
    assert result.log10[1] < -100
    assert abs(result.log10[0] - f64[0]) < 1e-5


def test_finish_float32_rule_on_given_sums():
    pairs = make_pairset([([("ACGT", [30] * 4, [45] * 4, [45] * 4, [10] * 4)], ["ACGT"])] * 5)
    f64 = forward_log10(pairs, "float64")
    sums = np.array([1e30, 1e-28, 9.9e-29, np.nan, np.inf], dtype=np.float32)
    log10, redo = finish_float32(pairs, sums)
    assert redo.tolist() == [2, 3, 4]                    # below 1e-28 or not finite
    assert log10[0] == pytest.approx(30 - LOG10_C32, abs=1e-6)
    assert log10[1] == pytest.approx(math.log10(np.float32(1e-28)) - LOG10_C32, abs=1e-6)
    np.testing.assert_array_equal(log10[redo], f64[redo])
    with pytest.raises(ValueError):
        finish_float32(pairs, sums[:2])


def test_finish_float32_hands_the_fallback_to_a_device_recompute():
    """A backend's own float64 pass (sums with 2^1020) replaces the reference for the redo set."""
    pairs = make_pairset([([("ACGT", [30] * 4, [45] * 4, [45] * 4, [10] * 4)], ["ACGT"]),
                          ([("AC", [20] * 2, [45] * 2, [45] * 2, [10] * 2)], ["ACGTA"])] * 2)
    f64 = forward_log10(pairs, "float64")
    sums = np.array([1e30, 1e-30, np.nan, 1e20], dtype=np.float32)
    seen = []

    def recompute(subset):
        seen.append(subset.n_pairs)
        return forward_sums(layout(subset, "float64"))

    log10, redo = finish_float32(pairs, sums, recompute)
    assert redo.tolist() == [1, 2] and seen == [2]
    np.testing.assert_allclose(log10[redo], f64[redo], atol=1e-12)
    assert log10[0] == pytest.approx(30 - LOG10_C32, abs=1e-6)
    assert finish_float32(pairs, np.full(4, 1e20, np.float32), recompute)[1].size == 0
    assert seen == [2]                                   # nothing to redo: not called


# --- GATK's and GKL's expected results ---------------------------------------------------------
def _data_dirs():
    return data_dirs()


def _find(name):
    for d in _data_dirs():
        if (d / name).is_file():
            return d / name
    return None


EXPECTED_FILES = ["gkl-pairhmm-testdata.txt", "gatk-expected.Java.hmmresults.txt",
                  "gatk-expected.AVX.hmmresults.txt"]


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("name", EXPECTED_FILES)
def test_reproduces_expected_results(name, precision):
    path = _find(name)
    if path is None:
        pytest.skip(f"{name} not found in HMMBENCH_DATA_PATH or ../shared/data/pairhmm")
    from hmmbench.pairhmm.datasets.gatkfmt import load_gatk
    pairs = load_gatk(path)
    assert pairs.expected is not None and pairs.n_pairs in (104, 284)
    got = forward_log10(pairs, precision)
    err = np.abs(got - pairs.expected)
    bound = 1e-5 * np.maximum(1.0, np.abs(pairs.expected))
    assert (err <= bound).all(), f"{(err > bound).sum()} pairs off, worst {err.max()}"


def test_row0_includes_the_padding_column_as_gatk_does():
    """GATK sets D[0][0] = C/n too; with D[0][0] = 0 a 1x1 pair would have likelihood 0."""
    pairs = make_pairset([([("A", [30], [45], [45], [10])], ["A"])])
    # Only path: D[0][0] -> M[1][1]: gm * match * C / 1.
    gm, match = 1 - 10 ** -1.0, 1 - 10 ** -3.0
    assert forward_log10(pairs)[0] == pytest.approx(math.log10(gm * match), abs=1e-12)


# --- backends ----------------------------------------------------------------------------------
def test_backends_describe_themselves_and_run():
    found = {b.name: b for b in backends()}
    assert set(found) == {"numpy", "numpy-f32"}
    assert found["numpy"].precision == "float64" and found["numpy-f32"].precision == "float32"
    batches = _low_likelihood_set()
    pairs = make_pairset(batches)
    for b in found.values():
        assert b.family == "reference" and b.api == "numpy"
        assert b.unavailable_reason() is None and b.refuse_reason(pairs) is None
        assert isinstance(b.device_name(), str) and b.device_name()
        ex = b.run(pairs)
        assert ex.log10.dtype == np.float64 and ex.log10.shape == (2,)
        assert ex.timing["h2d"] == 0 and ex.timing["d2h"] == 0
        assert ex.timing["prep"] > 0 and ex.timing["kernel"] > 0
        assert ex.n_fallback == (1 if b.precision == "float32" else 0)
        np.testing.assert_allclose(ex.log10, scalar_all(batches), rtol=1e-5)
        empty = b.run(empty_pairset())
        assert empty.log10.shape == (0,) and empty.n_fallback == 0
