"""The per-thread power-of-two exponent scheme of the sub-warp kernel, proven
on the NumPy float32 emulation of the kernel's wavefront (tests/subwarp_scaling.py): long pairs
that the float32 kernel without exponents hands to the float64 recompute come out exact in
float32, down past 1e-300; only pairs with gap penalties far from GATK's are handed on."""
from __future__ import annotations

import numpy as np
import pytest

from helpers import subwarp_scaling as emu
from cpu_reference.pairhmm import forward_log10
from hmmbench.pairhmm.datasets.synthetic import generate_fixed
from hmmbench.pairhmm.model import LOG10_RANGE_FLOOR
from helpers.pairgen import deep_pairs

TOL = 1e-4


def test_power_of_two_factors_and_binades_come_from_the_float_bits():
    k = np.array([-126, -1, 0, 64, 127])
    assert np.array_equal(emu.pow2(k), (2.0 ** k).astype(np.float32))
    x = np.array([1.0, 1.5, 2.0 ** -100, 3.0 * 2.0 ** 90, 2.0 ** -140], np.float32)
    assert np.array_equal(emu.binade(x), [0, 0, -100, 91, -127])


def test_exponents_keep_long_pairs_exact_that_float32_alone_hands_to_float64():
    ps = generate_fixed(1024, 1024, 12, seed=2)
    ref = forward_log10(ps, "float64")
    today = emu.emulate(ps, None)[1]
    assert today.sum() >= 3                      # today: recomputed in float64
    got, redo = emu.emulate(ps, emu.Scheme())
    assert not redo.any()
    assert np.max(np.abs(got - ref)) <= TOL
    assert np.min(ref) < -38


def test_pairs_below_1e300_stay_exact_in_float32_with_gatks_gap_penalty():
    ps = deep_pairs(1, 64, gcp_q=(10, 11))     # GATK's constant gap continuation, Phred 10
    ref = forward_log10(ps, "float64")
    got, redo = emu.emulate(ps, emu.Scheme())
    fin = np.isfinite(ref)
    assert not redo[fin].any()
    assert np.max(np.abs(got[fin] - ref[fin])) <= TOL
    assert np.sum(ref[fin] < -300) >= 5 and np.sum((ref > -38) & (ref < -28)) >= 1


def test_without_the_insertion_prior_deep_rows_lose_their_first_columns():
    ps = deep_pairs(1, 64, gcp_q=(10, 11))
    ref = forward_log10(ps, "float64")
    got, redo = emu.emulate(ps, emu.Scheme(prior=False))
    assert np.sum(~redo & ~(np.abs(got - ref) <= TOL)) >= 1


def test_pairs_the_exponents_cannot_hold_are_handed_to_float64_and_the_rest_are_exact():
    ps = deep_pairs(4, 48, length=(150, 300), gcp_q=(10, 25))  # gap penalties up to Phred 25
    ref = forward_log10(ps, "float64")
    got, redo = emu.emulate(ps, emu.Scheme())
    keep = np.isfinite(ref) & ~redo
    assert redo.sum() >= 5 and keep.sum() >= 5
    assert np.max(np.abs(got[keep] - ref[keep])) <= TOL


def test_the_cascades_queue_configurations_hold_short_underflowing_pairs_in_float32():
    """cuda-subwarp's reads up to 256 run the float32 kernel alone; its pairs under their floor are
    recomputed by the queue configurations (k = 8, p16 up to 128, p32 up to 256) with exponents:
    with GATK's gap penalty none goes on to float64 (the same on 10s's 24 and 1m's 68 such
    pairs: 8903acf:docs/evidence/subwarp-cascade-emulation.json)."""
    from hmmbench.pairhmm.subwarp import cuda as sw
    from hmmbench.pairhmm.subwarp import variants as swv
    ps = deep_pairs(11, 96, length=(100, 257), gcp_q=(10, 11))
    b = swv.backends()[0]
    queue_bins, _, cascade = b.queue_plan(b.bins_for(ps))
    table = tuple((q.hi, q.p, q.k) for q, c in zip(queue_bins, cascade) if c)
    assert table == ((128, 16, 8), (256, 32, 8)) and all(cascade)
    ref = forward_log10(ps, "float64")
    assert np.sum(ref < -28) >= 80
    got, redo = emu.emulate(ps, emu.Scheme(), bins=table, long_config=(32, 8))
    assert not redo.any()
    assert np.max(np.abs(got - ref)) <= TOL


def test_a_gap_quality_of_0_is_handed_on_by_the_5op_form_and_held_by_the_6op_form():
    """The 5-instruction recurrence folds gm into the emission table and divides by it: a row
    with gm = 0 turns the pair's sum into NaN (handed to the recompute); the 6-op form holds it."""
    import dataclasses
    ps = deep_pairs(3, 12, length=(100, 200), gcp_q=(10, 11))
    gcp = ps.gcp_qual.copy()
    gcp[ps.read_offsets[[1, 5]] + 40] = 0
    ps = dataclasses.replace(ps, gcp_qual=gcp)
    ref = forward_log10(ps, "float64")
    got, redo = emu.emulate(ps, emu.Scheme())
    assert np.flatnonzero(redo).tolist() == [1, 5]
    assert np.max(np.abs(got[~redo] - ref[~redo])) <= TOL
    got6, redo6 = emu.emulate(ps, emu.Scheme(), form="6op")
    assert not redo6.any() and np.max(np.abs(got6 - ref)) <= TOL


def _with_insertion_quality(ps, q: int):
    import dataclasses
    return dataclasses.replace(ps, ins_qual=np.full_like(ps.ins_qual, q))


def test_the_low_floor_keeps_sums_down_to_1e33_exact_at_insertion_qualities_up_to_50():
    """cuda-subwarp's float32 kernels without exponents keep a pair's sum (with C = 2^120) down to
    1e-33 when its read's insertion qualities are at most Q50 (f32_floors): every pair kept is
    within 1e-4, pairs between 1e-33 and 1e-28 among them; under the floor X = s M reaches
    float32's denormals and results drift (what the floor guards)."""
    from hmmbench.pairhmm.subwarp.layout import F32_LOW_FLOOR, f32_floors
    ps = _with_insertion_quality(generate_fixed(512, 512, 256, seed=4), 50)
    assert np.all(f32_floors(ps) == F32_LOW_FLOOR)
    ref = forward_log10(ps, "float64")
    got, redo = emu.emulate(ps, None, low_floor=True)
    sums = got + emu.LOG10_C32  # log10 of the kernel's float32 sum
    fin = np.isfinite(ref)
    kept = fin & ~redo
    assert np.max(np.abs(got[kept] - ref[kept])) <= TOL
    assert np.sum(kept & (sums < -28)) >= 5          # kept below GATK's 1e-28
    assert np.sum(redo) < np.sum(emu.emulate(ps, None)[1])
    deep = fin & (sums < -37)
    assert deep.sum() >= 1 and np.max(np.abs(got[deep] - ref[deep])) > TOL


def test_reads_with_higher_insertion_qualities_keep_gatks_1e28():
    """At Q93 the floor is 1e-28 (where the results still hold) and results under 1e-30 drift:
    the low floor would not hold there."""
    from hmmbench.pairhmm.model import F32_MIN_ACCEPTED as F32_GATK_FLOOR
    from hmmbench.pairhmm.subwarp.layout import f32_floors
    ps = _with_insertion_quality(generate_fixed(512, 512, 256, seed=4), 93)
    assert np.all(f32_floors(ps) == F32_GATK_FLOOR)
    ref = forward_log10(ps, "float64")
    got, redo = emu.emulate(ps, None, low_floor=True)
    sums = got + emu.LOG10_C32
    kept = np.isfinite(ref) & ~redo
    assert np.max(np.abs(got[kept] - ref[kept])) <= TOL and np.all(sums[kept] >= -28)
    low = np.isfinite(ref) & (sums < -30) & (sums >= -36)
    assert low.sum() >= 1 and np.max(np.abs(got[low] - ref[low])) > TOL


def test_the_floor_is_each_reads_own():
    """The low floor for a read over 256 bases whose insertion qualities past the first are all
    at most Q50; GATK's for any other read (one of Q51, or 256 bases or fewer)."""
    from hmmbench.pairhmm.model import Batch, Read, pack
    from hmmbench.pairhmm.model import F32_MIN_ACCEPTED as F32_GATK_FLOOR
    from hmmbench.pairhmm.subwarp.layout import F32_LOW_FLOOR, f32_floors

    def read(head: bytes, n: int = 300) -> Read:   # these insertion qualities, then Q20s
        iq = bytes(q + 33 for q in head) + b"5" * (n - len(head))
        return Read(b"A" * n, b"I" * n, iq, b"I" * n, b"+" * n)
    ps = pack([Batch([read(bytes([93, 50, 50])), read(bytes([40, 51, 3])), read(bytes([60]))],
                     [b"AC", b"GT"]),
               Batch([read(bytes([10, 50]), 2), read(b"", 256), read(b"", 257)], [b"A"])])
    assert list(f32_floors(ps)) == [F32_LOW_FLOOR] * 2 + [F32_GATK_FLOOR] * 2 \
        + [F32_LOW_FLOOR] * 2 + [F32_GATK_FLOOR] * 2 + [F32_LOW_FLOOR]


@pytest.mark.skipif(np.finfo(np.longdouble).minexp >= np.finfo(np.float64).minexp,
                    reason="long double has float64's range here")
def test_past_float64s_range_the_exponents_match_a_long_double_reference():
    """Reads of 513..640 bases with gap penalties up to Phred 40: some pairs the float32 path
    keeps lie below LOG10_RANGE_FLOOR (-614.7), where GATK's float64 sum (x 2^1020) is subnormal
    and keeps a few bits -- the runner takes any two values there as agreeing. The float64
    reference drifts there by more than 1e-4 from the same maths in long double (above the floor
    they agree), and the exponents (the 640 bin's check every 24 steps) stay within 1e-4 of the
    long double on every kept pair: past the floor they are the more accurate of the two."""
    ps = deep_pairs(6, 32, length=(513, 641), gcp_q=(10, 41))
    f64, ld = forward_log10(ps, "float64"), forward_log10(ps, "longdouble")
    got, redo = emu.emulate(ps, emu.Scheme(every=24))
    past = f64 < LOG10_RANGE_FLOOR
    inside = np.isfinite(f64) & ~past
    assert np.max(np.abs(f64[inside] - ld[inside])) <= 1e-9
    keep = np.isfinite(ld) & ~redo
    assert (keep & past).sum() >= 1
    assert np.max(np.abs(f64[keep & past] - ld[keep & past])) > TOL
    assert np.max(np.abs(got[keep] - ld[keep])) <= TOL
