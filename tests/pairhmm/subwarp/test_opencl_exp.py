"""The shared sub-warp body with exponents (SW_EXP_SCALE), executed: opencl-subwarp on the
CPU's OpenCL runtime (Intel's, sub-group shuffles) against the float64 reference and against the
NumPy emulation the scheme is proven on (tests/subwarp_scaling.py). The CUDA twin compiles the
same body (nvcc checks in test_cuda_subwarp.py; its GPU run: the `exp` suite)."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from helpers import subwarp_scaling as emu
from cpu_reference.pairhmm import forward_log10
from hmmbench.apis import opencl as opencl_api
from hmmbench.pairhmm.model import PairSet
from hmmbench.pairhmm.subwarp.opencl import SubwarpOpenCLExp
from helpers.opencl_subwarp import UNOPTIMIZED, bin_build_options
from helpers.pairgen import deep_pairs, ragged_pairs

TOL = 1e-4
#: Intel's CPU runtime by its platform's name: a PoCL device on a Xeon host is named "...Intel(R)
#: Xeon(R)...", has no sub-group exchange and cannot build the exponent kernels
INTEL = "Intel(R) OpenCL"
#: k = 8 bins (CPU builds of k = 16..32 take seconds each); reads over 256 run multi-tile p8k8,
#: so the boundary row carries its exponent through many tiles.
BINS = ((64, 8, 8), (128, 16, 8), (256, 32, 8))
LONG = (8, 8)


@pytest.fixture(scope="module")
def backend():
    try:
        labels = [opencl_api._label(p, d) for p, d in opencl_api.usable_devices()]
    except ImportError:
        labels = []
    device = next((x for x in labels if INTEL in x), None)
    if device is None:
        pytest.skip("no Intel CPU OpenCL runtime (scripts/install_opencl_cpu.sh installs it)")
    b = SubwarpOpenCLExp("opencl-subwarp", device=INTEL, bins=BINS, long_config=LONG,
                         small_tiers=None, **UNOPTIMIZED)
    reason = b.unavailable_reason()
    if reason:
        pytest.skip(f"opencl-subwarp: {reason}")
    return b


def with_defines(base: SubwarpOpenCLExp, name: str, extra: dict, bins=BINS, long=LONG,
                 where=lambda d: True) -> SubwarpOpenCLExp:
    """opencl-subwarp with ``extra`` defines (a switch's other side, or a bin's own setting) in
    its float32 kernels with exponents that ``where`` (of their defines) picks, on the fixture
    ``base``'s runtime. Its other kernels are ``base``'s, built once for the module: the float64
    recompute, which has no exponents (SW_DOUBLE turns SW_EXP_SCALE off, subwarp_defs.h), and
    bins where the switch compiles to nothing; the sub-group probe is ``base``'s too (the same
    device and exchange path)."""
    class Variant(SubwarpOpenCLExp):
        def _defines(self, *args):
            got = super()._defines(*args)
            return {**got, **extra} if not got["SW_DOUBLE"] and where(got) else got

        def path(self, kit, p):
            return base.path(kit, p)
    return Variant(name, device=INTEL, bins=bins, long_config=long, small_tiers=None,
                   **UNOPTIMIZED)


def test_the_kernel_keeps_pairs_below_1e300_in_float32_and_agrees_with_the_emulation(backend):
    ps = PairSet.concatenate([deep_pairs(1, 24, gcp_q=(10, 11), length=(150, 250)),
                              deep_pairs(5, 12, gcp_q=(10, 11), length=(260, 400))])
    ref = forward_log10(ps, "float64")
    ex = backend.run(ps)
    assert ex.n_fallback == 0
    assert np.max(np.abs(ex.log10 - ref)) <= TOL
    assert np.sum(ref < -300) >= 2 and np.sum(ref < -38) >= 20
    got, redo = emu.emulate(ps, emu.Scheme(), bins=BINS, long_config=LONG)
    assert not redo.any()
    assert np.max(np.abs(ex.log10 - got)) <= 5e-5   # the kernel stores log10 as a float


def test_pairs_the_exponents_cannot_hold_go_to_float64_and_every_pair_is_exact(backend):
    ps = deep_pairs(4, 24, length=(150, 250), gcp_q=(10, 25))
    ref = forward_log10(ps, "float64")
    ex = backend.run(ps)
    assert 0 < ex.n_fallback < ps.n_pairs
    fin = np.isfinite(ref)
    assert np.max(np.abs(ex.log10[fin] - ref[fin])) <= TOL


def test_a_gap_quality_of_0_hands_its_pairs_to_the_double_kernel_and_they_come_out_exact(backend):
    """The 5-instruction recurrence cannot factor out gm = 0 (a gap quality of 0): such a row's X
    is NaN, so is its pair's sum, and the pair goes to the double recompute (6-op form)."""
    ps = deep_pairs(2, 24, length=(60, 300), gcp_q=(10, 11))
    gcp = ps.gcp_qual.copy()
    zeroed = np.arange(ps.n_pairs) % 3 == 0            # one pair (= one read) in three
    for r in np.flatnonzero(zeroed):
        lo, hi = ps.read_offsets[r], ps.read_offsets[r + 1]
        gcp[lo + (hi - lo) * 2 // 3] = 0                # one row, in a later thread or tile
    ps = dataclasses.replace(ps, gcp_qual=gcp)
    ref = forward_log10(ps, "float64")
    ex = backend.run(ps)
    assert ex.n_fallback == zeroed.sum() == 8
    fin = np.isfinite(ref)
    assert np.max(np.abs(ex.log10[fin] - ref[fin])) <= TOL
    got, redo = emu.emulate(ps, emu.Scheme(), bins=BINS, long_config=LONG)
    assert np.array_equal(redo, zeroed)


def test_lane_0s_codes_from_the_groups_window_give_the_loads_results_bit_for_bit(backend):
    """SW_CODE_WINDOW: lane 0 takes each haplotype code from a window the group's lanes load at
    each exponent check (here the p16 and p32 bins; p8's check interval is longer than its
    group, so it keeps the load) -- the same codes, pad past the haplotype's end included: equal
    to the bit with the per-step load, on haplotypes shorter and longer than one interval."""
    # only where SW_CODE_WINDOW is on (subwarp_defs.h: a single tile, 4 SW_EXP_EVERY <= p):
    # elsewhere both sides compile to the same load
    loads = with_defines(backend, "opencl-subwarp-loads", {"SW_CODE_WINDOW_ON": 0},
                         where=lambda d: not d["SW_MULTI_TILE"] and 4 * 4 <= d["SW_P"])
    ps = PairSet.concatenate([deep_pairs(1, 12, gcp_q=(10, 11), length=(70, 250)),
                              ragged_pairs(7, 6, max_read=250, max_hap=40)])
    assert (ps.pair_read_lengths > 64).sum() >= 20
    a, b = backend.run(ps), loads.run(ps)
    assert np.array_equal(a.log10, b.log10, equal_nan=True)
    assert np.max(np.abs(a.log10 - forward_log10(ps, "float64"))) <= TOL


def test_one_conversion_factor_with_the_last_rows_up_keeps_the_pairs_two_factors_kept(backend):
    """SW_EXP_SHIFT: a thread's last two rows held 2^24 up, so a gap g to the sender converts by
    2^(g - 24), one float factor up to the widest gap kept (150), where the plain kernel takes two
    past 126. On p16k16 (reads of 129..255, gap penalties of Q20..29: widest gaps 162, five
    kept pairs over 126) the same pairs go to float64 as in the plain kernel and in the
    emulation; every pair kept in float32 is within 1e-4 of the float64 reference, and those
    whose gaps stayed under 126 agree with the plain kernel's. (Over 126 the sender's last row
    lies in its denormals, which this runtime flushes, -cl-denorms-are-zero: the plain kernel
    can lose such a pair by 0.1 in log10; the shifted row stays 24 binades clear of them.)"""
    # the module's bins below 129 (their programs and their float64 recompute's, built once;
    # no pair here runs in them), p16k16 above
    bins, long = BINS[:2] + ((256, 16, 16),), (16, 16)
    shifted = with_defines(backend, "opencl-subwarp-p16k16", {}, bins, long)
    plain = with_defines(backend, "opencl-subwarp-plain", {"SW_EXP_SHIFT": 0}, bins, long,
                         where=lambda d: d["SW_K"] == 16)
    ps = deep_pairs(20, 24, length=(129, 256), gcp_q=(20, 30))
    assert ps.pair_read_lengths.min() > 128   # every pair in the p16k16 bin
    ref = forward_log10(ps, "float64")
    emu_redo = {}
    for shift in (24, 0):
        emu_redo[shift] = emu.emulate(ps, emu.Scheme(shift=shift), bins=bins, long_config=long)[1]
    emu.MAX_GAP, keep = 126, emu.MAX_GAP
    try:   # the pairs a single factor 2^126 would lose without the shift
        over_126 = emu.emulate(ps, emu.Scheme(shift=0), bins=bins, long_config=long)[1]
    finally:
        emu.MAX_GAP = keep
    assert np.array_equal(emu_redo[24], emu_redo[0])
    assert over_126.sum() - emu_redo[0].sum() >= 3
    a, b = shifted.run(ps), plain.run(ps)
    assert a.n_fallback == b.n_fallback == emu_redo[24].sum() > 0
    kept = ~emu_redo[24]
    one_factor = kept & ~over_126
    assert one_factor.sum() >= 3
    assert np.max(np.abs(a.log10[one_factor] - b.log10[one_factor])) <= 2e-5
    fin = np.isfinite(ref)
    assert np.max(np.abs(a.log10[fin] - ref[fin])) <= TOL


def test_a_check_every_24_steps_agrees_with_its_emulation(backend):
    """SW_EXP_EVERY=6 (the exponent bins' check every 24 steps, EXP_BIN_SETTINGS): on the p32k8
    bin the window holds the 24 codes of an interval (4 SW_EXP_EVERY <= 32; the multi-tile p8k8
    of the longer reads loads them), and the kernel agrees with the emulation of the same
    interval -- its results within 5e-5 (the kernel stores log10 as a float), the same pairs to
    float64 -- and every pair is within 1e-4 of the float64 reference, down past 1e-300 with no
    pair to float64 at GATK's gap penalty."""
    # the interval on the bins these pairs run in (the p8 and p16 bins hold none of them)
    b = with_defines(backend, "opencl-subwarp-every24", {"SW_EXP_EVERY": 6},
                     where=lambda d: d["SW_P"] == 32 or d["SW_MULTI_TILE"])
    ps = PairSet.concatenate([deep_pairs(11, 16, gcp_q=(10, 11), length=(150, 256)),
                              deep_pairs(5, 8, gcp_q=(10, 11), length=(260, 400)),
                              deep_pairs(12, 16, gcp_q=(10, 25), length=(150, 256))])
    assert ps.pair_read_lengths.min() > 128   # none in the p8 or p16 bins
    ref = forward_log10(ps, "float64")
    got, redo = emu.emulate(ps, emu.Scheme(every=24), bins=BINS, long_config=LONG)
    ex = b.run(ps)
    assert ex.n_fallback == redo.sum() and not redo[:24].any() and redo[24:].any()
    keep = ~redo
    assert np.max(np.abs(ex.log10[keep] - got[keep])) <= 5e-5
    fin = np.isfinite(ref)
    assert np.max(np.abs(ex.log10[fin] - ref[fin])) <= TOL
    assert np.sum(ref[:24] < -300) >= 2 and np.sum(ref[:16] < -38) >= 10


def test_an_unoptimized_cpu_build_gives_the_optimized_builds_bits(backend):
    """The module's backends build without the optimizer (``UNOPTIMIZED``, a tenth of the
    compile time): a bin with exponents and the float64 kernel the host hands its NaN pairs to
    (gap quality 0) give the optimized programs' results to the bit (one p4k4 bin: the optimized
    CPU builds of the wider ones take 2-15 s each)."""
    from hmmbench.apis.opencl import OPT_DISABLE
    ps = deep_pairs(2, 12, length=(6, 17), gcp_q=(10, 11))
    gcp = ps.gcp_qual.copy()
    zeroed = np.arange(ps.n_pairs) % 3 == 0
    for r in np.flatnonzero(zeroed):
        gcp[(ps.read_offsets[r] + ps.read_offsets[r + 1]) // 2] = 0
    ps = dataclasses.replace(ps, gcp_qual=gcp)
    runs = [SubwarpOpenCLExp("t", device=INTEL, bins=((16, 4, 4),), long_config=None,
                             small_tiers=None, unoptimized_on_cpu=flag) for flag in (False, True)]
    optimized, unoptimized = (b.run(ps) for b in runs)
    assert optimized.n_fallback == unoptimized.n_fallback == zeroed.sum()
    assert np.array_equal(unoptimized.log10, optimized.log10, equal_nan=True)
    assert np.max(np.abs(optimized.log10 - forward_log10(ps, "float64"))) <= TOL
    for b, flag in zip(runs, (False, True)):  # the bin's and the float64 kernel's programs
        options = bin_build_options(b)
        assert len(options) == 2 and all((OPT_DISABLE in o) == flag for o in options)
