"""CUDA backends on a GPU: every family against the float64 reference on awkward inputs.

Skips (with the reason) where PyCUDA or a CUDA device is missing.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from helpers.paths import SHARED_DATA
from cpu_reference.pairhmm import forward_log10
from hmmbench.pairhmm.intertask import cuda
from hmmbench.apis import cuda as cuda_api
from hmmbench.pairhmm.datasets.synthetic import generate_fixed
from hmmbench.pairhmm.model import Batch, PairSet, Read, empty_pairset, pack

from helpers.pairgen import ragged_pairs

REASON = cuda_api.unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"CUDA unavailable: {REASON}")
TOL = 1e-4
BACKENDS = cuda.backends()
IDS = [b.name for b in BACKENDS]


def data_dir() -> Path:
    for d in os.environ.get("HMMBENCH_DATA_PATH", "").split(":") + [
            str(SHARED_DATA)]:
        if d and (Path(d) / "tiny.in").exists():
            return Path(d)
    pytest.skip("tiny.in not found (set HMMBENCH_DATA_PATH)")


def make_pairs(spec) -> PairSet:
    """spec: list of (reads as (bases, base_q), haps) batches; other qualities fixed."""
    batches = []
    for reads, haps in spec:
        rs = [Read(b, q, b"I" * len(b), b"I" * len(b), b"+" * len(b)) for b, q in reads]
        batches.append(Batch(rs, list(haps)))
    return pack(batches)


def edge_cases() -> dict:
    rng = np.random.default_rng(11)

    def rand(n, alphabet=b"ACGT"):
        return rng.choice(list(alphabet), n).astype(np.uint8).tobytes()
    q = lambda n: b"5" * n  # noqa: E731
    long_read = rand(300)
    return {
        "length-1 read and haplotype": make_pairs([([(b"A", b"5")], [b"A", b"C", b"ACGTA"]),
                                                   ([(b"ACGTACG", q(7))], [b"T"])]),
        "N bases": make_pairs([([(b"ANNTN", q(5)), (b"NNNN", q(4))], [b"ACGTT", b"NNANC"])]),
        "batch of one pair": make_pairs([([(b"ACGTACGTAC", q(10))], [b"ACGTTCGTACGA"])]),
        "reads longer than block and warp": make_pairs(
            [([(long_read, q(300)), (long_read[:129], q(129)), (long_read[:33], q(33))],
              [long_read[5:250] + rand(90), rand(7)])]),
        # all mismatches at high quality: the float32 sum underflows -> float64 fallback
        "float32 underflow": make_pairs([([(b"A" * 200, b"I" * 200)], [b"C" * 260, b"A" * 3])]),
        "ragged batches with an empty batch": ragged_pairs(),
        "fixed shape 128x256": generate_fixed(128, 256, 70, 2),
    }


CASES = edge_cases()


@pytest.fixture(scope="module")
def references():
    return {k: forward_log10(v, "float64") for k, v in CASES.items()}


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
@pytest.mark.parametrize("case", list(CASES))
def test_matches_reference(backend, case, references):
    pairs = CASES[case]
    assert backend.refuse_reason(pairs) is None
    ex = backend.run(pairs)
    assert ex.log10.shape == (pairs.n_pairs,)
    err = np.abs(ex.log10 - references[case])
    assert np.isfinite(ex.log10).all(), ex.log10
    assert err.max() <= TOL, f"max |delta log10| = {err.max():.3g} at pair {err.argmax()}"
    if case == "float32 underflow":
        assert ex.n_fallback >= 1
    clocks = ex.info["sm_clock_mhz"]
    assert len(clocks) == 2
    assert all(ex.timing[s] >= 0 for s in ("prep", "h2d", "kernel", "d2h"))


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
def test_empty_pairset(backend):
    ex = backend.run(empty_pairset())
    assert ex.log10.shape == (0,) and ex.n_fallback == 0


@pytest.mark.parametrize("backend", BACKENDS, ids=IDS)
def test_tiny_dataset(backend):
    from hmmbench.pairhmm.datasets.blockfmt import load_block
    pairs = load_block(data_dir() / "tiny.in")
    ex = backend.run(pairs)
    err = np.abs(ex.log10 - forward_log10(pairs, "float64"))
    assert err.max() <= TOL


def test_results_are_repeatable():
    """Same input twice gives bit-identical sums (a race would move them)."""
    pairs = CASES["reads longer than block and warp"]
    for b in BACKENDS:
        a, c = b.run(pairs).log10, b.run(pairs).log10
        np.testing.assert_array_equal(a, c, err_msg=b.name)
