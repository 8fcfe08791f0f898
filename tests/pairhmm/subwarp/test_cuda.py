"""cuda-subwarp: host layout and binning (CPU), the scaled recurrence's algebra (CPU emulation),
nvcc compile checks of every specialization (no GPU needed), and GPU runs against the float64
reference (skipped without a CUDA device)."""
from __future__ import annotations

import dataclasses

import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from helpers.paths import REPO
from cpu_reference.pairhmm import forward_log10
from hmmbench import registry
from hmmbench.apis import cuda as glue
from hmmbench.pairhmm.subwarp import cuda as sw
from hmmbench.pairhmm.subwarp import variants as swv
from hmmbench.pairhmm.subwarp.layout import SMALL_INPUT_PAIRS
from hmmbench.pairhmm.datasets import resolve
from hmmbench.pairhmm.datasets.chunking import launches
from hmmbench.pairhmm.datasets.synthetic import generate_fixed
from hmmbench.pairhmm.model import C64, LOG10_C64, Batch, PairSet, Read, pack
from hmmbench.pairhmm.subwarp.staging import (CHUNK_PARTS, chunk_offsets, int_views,
                                              stage_chunk_part)
from helpers import nvcc_batch
from helpers.pairgen import deep_pairs, ragged_pairs
from helpers.subwarp_staging_reference import STAGE_TASKS, staging_offsets

KERNELS = REPO / "kernels_cuda"
INCLUDES = [f"-I{d}" for d in glue.include_dirs(sw.SOURCE)]
TOL = 1e-4


def ragged(seed=5, batches=8, max_read=140, max_hap=200, gcp_varies=True) -> PairSet:
    """Batches of assorted shapes; N bases; extreme qualities; per-position gap qualities
    (0 included) unless ``gcp_varies`` is off (then all '+', Phred 10)."""
    return ragged_pairs(seed, batches, empty_batch=3, max_read=max_read, max_hap=max_hap,
                        base_q=(0, 60), ins_q=(1, 93), del_q=(0, 93),
                        gcp_q=(0, 40) if gcp_varies else (10, 11))


# ------------------------------------------------------------------------------------------------
# Host layout and bins
# ------------------------------------------------------------------------------------------------
def test_read_items_enumerate_every_pair_once_in_dataset_order():
    ps = ragged()
    items = sw.read_items(ps)
    pairs = []
    for read, hap, nh, first in items:
        for h in range(nh):
            pairs.append((first + h, read, hap + h))
    pairs.sort()
    idx = np.array([p[0] for p in pairs])
    assert np.array_equal(idx, np.arange(ps.n_pairs))
    assert np.array_equal([p[1] for p in pairs], ps.pair_read)
    assert np.array_equal([p[2] for p in pairs], ps.pair_hap)


def test_host_layout_partitions_items_by_read_length_in_batch_order():
    ps = ragged(seed=11, batches=12)
    bins = sw.make_bins(((32, 4, 8), (64, 4, 16), (100, 8, 16)), (8, 8), ps.max_read_length)
    lay = sw.host_layout(ps, bins)
    assert sum(hi - lo for _, lo, hi in lay.bin_ranges) == len(lay.items)
    rl = ps.read_lengths
    for b, lo, hi in lay.bin_ranges:
        lengths = rl[lay.items[lo:hi, 0]]
        assert lengths.min() >= b.lo and lengths.max() <= b.hi
        work = [int(ps.hap_offsets[h + n] - ps.hap_offsets[h]) + n * sw.MAX_P
                for _, h, n, _ in lay.items[lo:hi]]
        level = np.minimum(sw.SW_LEVELS - 1, np.floor(np.log2(work) * 16))
        assert np.all(np.diff(level) <= 0)  # most work first
    assert lay.bin_ranges[-1][0].multi_tile == (ps.max_read_length > 100)


def test_make_bins_rejects_a_bin_larger_than_its_tile_and_adds_the_long_bin():
    with pytest.raises(ValueError):
        sw.make_bins(((40, 4, 8),), None, 40)
    bins = sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 3000)
    assert bins[0].lo == 1 and all(a.hi + 1 == b.lo for a, b in zip(bins, bins[1:]))
    assert bins[-1].multi_tile and bins[-1].hi == 3000
    assert all(b.p * b.k >= b.hi for b in bins if not b.multi_tile)
    assert len(sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 500)) == len(sw.DEFAULT_BINS)


@pytest.mark.parametrize("p,k,expect", [(8, 16, 16 * 6 * 4 * 8 * 16), (4, 4, 32 * (6 * 8 + 4) * 16),
                                        (32, 16, 4 * 6 * 4 * 32 * 16)])
def test_shared_table_size_mirrors_the_kernel_strides(p, k, expect):
    assert sw.table_bytes(p, k, 128 // p) == expect
    assert sw.table_bytes(p, k, 128 // p, table=False) == 0


def test_inner_loop_counter_reads_sass():
    sass = """
        /*0100*/                   MOV R1, R2 ;
        /*0110*/                   FFMA R3, R4, R5, R6 ;
        /*0120*/                   FMUL R3, R4, R5 ;
        /*0130*/                   SHFL.UP PT, R7, R3, 0x1, 0x1800 ;
        /*0140*/              @!P0 BRA 0x110 ;
        /*0150*/                   EXIT ;
    """
    ops = sw.inner_loop_counts(sass)
    assert ops == {"FFMA": 1, "FMUL": 1, "SHFL": 1, "BRA": 1}


def test_the_wavefront_loop_is_the_densest_in_fp32_and_its_check_block_is_apart():
    """ptxas can lay a setup loop with a shuffle inside the wavefront's address range: the
    wavefront is the loop densest in FP32; a predicated forward branch's block (the exponent
    check) is counted apart."""
    sass = """
        /*0100*/                   FFMA R3, R4, R5, R6 ;
        /*0110*/                   FFMA R3, R4, R5, R6 ;
        /*0120*/              @P1 BRA 0x150 ;
        /*0130*/                   FMNMX R8, R3, R9, !PT ;
        /*0140*/                   FMUL R3, R3, R8 ;
        /*0150*/                   SHFL.UP PT, R7, R3, 0x1, 0x1800 ;
        /*0160*/              @!P0 BRA 0x100 ;
        /*0170*/                   MOV R1, R2 ;
        /*0180*/                   IADD3 R1, R1, 0x1, RZ ;
        /*0190*/                   SHFL.IDX PT, R7, R3, 0x1, 0x1f ;
        /*01a0*/              @!P2 BRA 0x170 ;
        /*01b0*/                   EXIT ;
    """
    main, check = sw.wavefront_loop(sass)
    assert main == {"FFMA": 2, "BRA": 2, "SHFL": 1}
    assert check == {"FMNMX": 1, "FMUL": 1}
    assert sw.inner_loop_counts(sass) == main + check
    assert sw.wavefront_loop("/*0100*/ EXIT ;") is None


# ------------------------------------------------------------------------------------------------
# The recurrences, emulated in float64 row by row (same coefficients as setup_rows)
# ------------------------------------------------------------------------------------------------
def emulate_pair(read, bq, iq, dq, gq, hap, tile: int, form: str = "5op") -> float:
    """The kernel's row algebra for one pair (``form``: "5op", "6op" or "gatk"), bin-padded
    identity rows: X = s M, I, and D kept as Z = s D / md (5op), Dp = gm_next D (6op) or D."""
    m, n = len(read), len(hap)
    rows = -(-m // tile) * tile
    p = lambda q: 10.0 ** (-np.asarray(q, float) / 10)  # noqa: E731
    e, mi, md, gap = p(bq), p(iq), p(dq), p(gq)
    gm = 1 - gap
    X = np.zeros(n + 1); I = np.zeros(n + 1)  # noqa: E702 - row above, columns 0..n
    D_above = np.full(n + 1, (gm[0] if form == "6op" else 1.0) * C64 / n)
    for i in range(rows):
        if i < m:
            s = mi[i + 1] if i + 1 < m and form != "gatk" else 1.0
            mm = 1 - min(1.0, mi[i] + md[i])  # GATK4 clamps M->M at 0
            if form == "5op":
                with np.errstate(divide="ignore", invalid="ignore"):
                    A = np.float64(mm) / (mi[i] * gm[i])  # gm = 0: inf or NaN, X NaN
                c_d = 1.0                                   # Z's coefficient on X
                c_up = md[i - 1] / mi[i] if i else 1.0      # B: Z of the row above
                c_i, es = 1.0, s * gm[i]                    # I's coefficient; E's factor
            elif form == "6op":
                gm_next = gm[i + 1] if i + 1 < m else 0.0
                A, c_d, c_up, c_i, es = mm / mi[i], gm_next * md[i] / s, 1.0, gm[i], s
            else:
                A, c_d, c_up, c_i, es = mm, md[i], gm[i], gm[i], 1.0
            match = (1 - e[i]) * es
            mism = match if read[i] == 4 else e[i] / 3 * es
            emis = np.where((hap == read[i]) | (hap == 4), match, mism)
            gap_i, mi_i = gap[i], (mi[i] if form == "gatk" else 1.0)
        else:
            A = c_d = c_up = c_i = 0.0
            gap_i, mi_i = 1.0, 1.0
            emis = np.zeros(n)
        Xn = np.zeros(n + 1); In = np.zeros(n + 1); Dn = np.zeros(n + 1)  # noqa: E702
        with np.errstate(invalid="ignore"):
            Xn[1:] = emis * (A * X[:-1] + (c_i * I[:-1] + c_up * D_above[:-1]))
        In[1:] = gap_i * I[1:] + mi_i * X[1:]
        for j in range(1, n + 1):
            Dn[j] = gap_i * Dn[j - 1] + c_d * Xn[j - 1]
        X, I, D_above = Xn, In, Dn
    return float(np.log10(np.sum(X[1:] + I[1:])) - LOG10_C64)


@pytest.mark.parametrize("form", ["5op", "6op", "gatk"])
@pytest.mark.parametrize("tile", [1, 16, 64])
def test_each_recurrence_with_identity_padding_rows_matches_the_reference(form, tile):
    """Every pair exact to 1e-9, except in the 5-op form a read with a gap quality of 0, whose
    result is NaN (the kernel hands such a pair to the 6-op double recompute)."""
    ps = ragged(seed=7, batches=5, max_read=40, max_hap=50)
    ref = forward_log10(ps, "float64")
    nan = 0
    for k in range(ps.n_pairs):
        r, h = int(ps.pair_read[k]), int(ps.pair_hap[k])
        lo, hi = int(ps.read_offsets[r]), int(ps.read_offsets[r + 1])
        got = emulate_pair(ps.read_bases[lo:hi], ps.base_qual[lo:hi], ps.ins_qual[lo:hi],
                           ps.del_qual[lo:hi], ps.gcp_qual[lo:hi], ps.hap(h), tile, form)
        if form == "5op" and (ps.gcp_qual[lo:hi] == 0).any():
            assert np.isnan(got), k
            nan += 1
        else:
            assert abs(got - ref[k]) < 1e-9, (k, got, ref[k])
    assert nan == (form == "5op") * sum(
        (ps.gcp_qual[ps.read_offsets[r]:ps.read_offsets[r + 1]] == 0).any()
        for r in ps.pair_read)
    assert form != "5op" or 0 < nan < ps.n_pairs


# ------------------------------------------------------------------------------------------------
# nvcc compile checks (no GPU needed)
# ------------------------------------------------------------------------------------------------
def _specializations():
    seen = {}
    for b in swv.backends():
        for bin_ in sw.make_bins(b._bins_table, b._long, 2000):
            d = b.defines(bin_)
            d.pop("SW_BIN_MIN"); d.pop("SW_BIN_MAX")
            seen[tuple(sorted(d.items()))] = d
        queues, _, cascade = b.queue_plan(sw.make_bins(b._bins_table, b._long, 2000))
        for q, c in zip(queues, cascade):
            for d in [b.defines(q, sw.DOUBLE)] + ([b.defines(q, sw.EXP)] if c else []):
                d.pop("SW_BIN_MIN"); d.pop("SW_BIN_MAX")
                seen[tuple(sorted(d.items()))] = d
    return list(seen.values())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_every_specialization_compiles_for_sm90(tmp_path):
    """Every define set a backend launches compiles, and the double recompute kernels fit their
    registers. The specializations go through nvcc together (helpers.nvcc_batch: the source once
    per define set in one translation unit, one call per CPU); a batch that fails is rebuilt one
    specialization at a time to name the failing one, and two of them are built alone through
    glue.nvcc_cubin (the product's compile options) with the registers and spills the batch
    reported for them."""
    specs = _specializations()
    assert len(specs) >= 15
    n = min(os.cpu_count() or 2, len(specs))
    chunks = [(lo, specs[lo:lo + -(-len(specs) // n)]) for lo in range(0, len(specs),
                                                                      -(-len(specs) // n))]

    def build(chunk):
        lo, part = chunk
        return nvcc_batch.compile_together(sw.SOURCE, part, ("subwarp_forward", "table"),
                                           "subwarp_forward", tmp_path, first=lo)

    logs = []
    with ThreadPoolExecutor(max_workers=n) as pool:
        for (lo, part), (proc, part_logs) in zip(chunks, pool.map(build, chunks)):
            if proc.returncode:
                for d in part:
                    r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", *glue.BASE_OPTIONS,
                                        *INCLUDES, *glue.define_flags(d), "-o",
                                        str(tmp_path / "alone.cubin"), str(KERNELS / sw.SOURCE)],
                                       capture_output=True, text=True)
                    assert r.returncode == 0, (d, r.stderr[-2000:])
                pytest.fail(f"each compiles alone, not together: {proc.stderr[-2000:]}")
            logs += part_logs
    for d, log in zip(specs, logs):
        assert log is not None and "registers" in log, d
        if d["SW_DOUBLE"]:  # the recompute kernels fit their registers (float k=32 spills
            # ~300 bytes in the setup only, see docs/subwarp-design.md)
            assert "spill" not in log.replace(" 0 bytes spill", ""), (d, log[-800:])
    for i in (next(i for i, d in enumerate(specs) if d["SW_DOUBLE"]),
              next(i for i, d in enumerate(specs) if "SW_MAXNREG" in d)):
        alone = glue.nvcc_cubin(sw.SOURCE, specs[i], tmp_path / f"alone{i}.cubin")
        assert (glue.ptxas_resources(logs[i], f"subwarp_forward_{i}")
                == glue.ptxas_resources(alone, "subwarp_forward")), specs[i]
    r = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", "-O3", *INCLUDES, "-o",
                        str(tmp_path / "layout.cubin"), str(KERNELS / sw.LAYOUT_SOURCE)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_the_compiler_evidence_build_reports_the_kernels_registers(tmp_path):
    """glue.nvcc_cubin (the evidence scripts' build: compile()'s options, no device) and the
    ptxas log it returns: the p4k8 float kernel at its 6-block cap fits 80 registers, the
    uncapped p8k32 one needs more than 168."""
    b = swv.backends()[0]
    used = {}
    for hi in (32, 256):
        (x,) = [x for x in sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, hi) if x.hi == hi]
        log = glue.nvcc_cubin(sw.SOURCE, b.defines(x), tmp_path / f"k{hi}.cubin")
        assert (tmp_path / f"k{hi}.cubin").stat().st_size > 0
        used[hi] = glue.ptxas_resources(log, "subwarp_forward")
    assert 0 < used[32]["registers"] <= 80 < 168 < used[256]["registers"] <= 255
    assert glue.ptxas_resources("ptxas info : Used 40 registers, 8 bytes spill stores",
                                "f") == {"registers": 40, "spill_store_bytes": 8}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_capped_bins_kernel_compiles_within_its_cap(tmp_path):
    """The p32k28 bin (reads of 769..896) under the table's cap of 200 registers; without it
    ptxas takes 254 (docs/subwarp-design.md: the MOVs that cap removes from its loop)."""
    b = swv.backends()[0]
    (x,) = [x for x in sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 896) if x.hi == 896]
    used = {}
    for cap in (x.max_regs, 0):
        d = b.defines(x)
        if not cap:
            d.pop("SW_MAXNREG")
        log = glue.nvcc_cubin(sw.SOURCE, d, tmp_path / f"k{cap}.cubin")
        used[cap] = glue.ptxas_resources(log, "subwarp_forward")["registers"]
    assert used[x.max_regs] <= x.max_regs == 200 < used[0] <= 255


def test_the_exponent_bins_take_their_own_settings_over_the_backends():
    """EXP_BIN_SETTINGS: the float32 exponent bins' kernels take the shared body's shift (no
    define) but 768's (two factors, SW_EXP_SHIFT=0, and lane 0's codes loaded, SW_CODE_WINDOW_ON=0),
    and the check every 24 steps (SW_EXP_EVERY=6,
    4-step iterations); exp_bin_settings 0 drops them, exp_shift 0 takes the shift from every
    exponent kernel; the cascade's float32 level keeps the defaults and the bins without
    exponents have neither define. The cuda-subwarp-regcap family sets one bin's."""
    b = swv.backends()[0]
    bins = sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 1024)
    exp = {x.hi: b.defines(x) for x in bins if b.exponents(x)}
    assert set(exp) == {640, 768, 896, 1024}
    assert {hi: d.get("SW_EXP_SHIFT") for hi, d in exp.items()} == \
        {640: None, 768: 0, 896: None, 1024: None}
    assert {hi: d.get("SW_EXP_EVERY") for hi, d in exp.items()} == \
        {640: 6, 768: 6, 896: 6, 1024: 6}
    assert [hi for hi, d in exp.items() if d.get("SW_CODE_WINDOW_ON", 1) == 0] == [768]
    for x in bins:
        if not b.exponents(x):
            assert not {"SW_EXP_SHIFT", "SW_EXP_EVERY"} & set(b.defines(x))
    queues, _, cascade = b.queue_plan(bins)
    assert any(cascade) and all(not {"SW_EXP_SHIFT", "SW_EXP_EVERY"} & set(b.defines(q, sw.EXP))
                                for q, c in zip(queues, cascade) if c)
    b.exp_bin_settings = 0
    assert all(not {"SW_EXP_SHIFT", "SW_EXP_EVERY"} & set(b.defines(x))
               for x in bins if b.exponents(x))
    b.exp_bin_settings, b.exp_shift = 1, 0
    assert all(b.defines(x)["SW_EXP_SHIFT"] == 0 for x in bins if b.exponents(x))
    (v,) = registry.select(["cuda-subwarp-regcap[hi=768,max_regs=0,exp_every=16,exp_shift=on,"
                            "code_window=on]"])
    (x,) = [x for x in bins if x.hi == 768]
    assert not {"SW_EXP_SHIFT", "SW_EXP_EVERY", "SW_CODE_WINDOW_ON"} & set(v.defines(x))
    (v,) = registry.select(["cuda-subwarp-regcap[hi=896,max_regs=224]"])
    (x,) = [x for x in sw.make_bins(v._bins_table, v._long, 1024) if x.hi == 896]
    assert v.defines(x)["SW_MAXNREG"] == 224 and v.defines(x)["SW_EXP_EVERY"] == 6


# ------------------------------------------------------------------------------------------------
# GPU runs
# ------------------------------------------------------------------------------------------------
REASON = glue.unavailable_reason()
gpu = pytest.mark.skipif(REASON is not None, reason=f"CUDA unavailable: {REASON}")


def _check(backend, ps, tol=TOL):
    ex = backend.run(ps)
    ref = forward_log10(ps, "float64")
    assert ex.log10.shape == ref.shape
    # Equal infinities agree; so does a finite result below float64's reach (exponents go
    # further than float64 with C = 2^1020, whose smallest result is ~1e-630).
    below = np.isneginf(ref) & (ex.log10 < -600)
    with np.errstate(invalid="ignore"):
        d = np.where((ex.log10 == ref) | below, 0.0, np.abs(ex.log10 - ref))
    assert np.all(d <= tol), (backend.name, float(np.nanmax(d)), int(np.sum(~(d <= tol))))
    return ex


@gpu
@pytest.mark.parametrize("name", [b.name for b in swv.backends()])
def test_variant_matches_reference_on_ragged_batches(name):
    b = {x.name: x for x in swv.backends()}[name]
    _check(b, ragged(seed=13, batches=10, max_read=300, max_hap=300))
    _check(b, ragged(seed=14, batches=6, max_read=20, max_hap=30, gcp_varies=False))


@gpu
def test_long_reads_take_the_multi_tile_path():
    ps = generate_fixed(1100, 1300, 32, seed=3)
    ex = _check(swv.backends()[0], ps)
    assert any("-mt" in k for k in ex.info["bins"])


@gpu
def test_float32_underflows_are_recomputed_in_double_on_the_gpu():
    rng = np.random.default_rng(1)
    m = 200
    read = rng.choice(list(b"ACGT"), m).astype(np.uint8).tobytes()
    comp = bytes({ord("A"): ord("C"), ord("C"): ord("G"), ord("G"): ord("T"),
                  ord("T"): ord("A")}[c] for c in read)  # every base mismatches
    q = b"I" * m
    ps = pack([Batch([Read(read, q, q, q, b"+" * m)], [comp, read])])
    ex = _check({x.name: x for x in swv.backends()}["cuda-subwarp-f64rescue"], ps)
    assert ex.n_fallback == 1
    # cuda-subwarp: its 200-base reads' bin has no exponents; the cascade's float32 kernel
    # with exponents holds the pair
    ex = _check(swv.backends()[0], ps)
    assert ex.n_fallback == 0 and ex.info["exp_recomputed"] == 1
    exp_all = _check({x.name: x for x in swv.backends()}["cuda-subwarp-exp-all"], ps)
    assert exp_all.n_fallback == 0 and exp_all.info["exp_recomputed"] == 0


def _queued_between(ps, ref, sel, queued: int) -> bool:
    """Whether ``queued`` pairs lie between the pairs of ``sel`` a decade under their floor
    (``f32_floors``, with C = 2^120) and those a decade over it."""
    from hmmbench.pairhmm.model import LOG10_C32
    from hmmbench.pairhmm.subwarp.layout import f32_floors
    floor = np.log10(f32_floors(ps)[sel]) - LOG10_C32  # the floor as a likelihood
    return int(np.sum(ref[sel] < floor - 1)) <= queued <= int(np.sum(ref[sel] < floor + 1))


def _mismatched_pairs(seed: int, iq: int, n: int = 300):
    """8 reads of n bases (base quality 40; the low floor holds from 257), each against 10 copies
    of itself with 10..19 substitutions: likelihoods from ~1e-47 to under 1e-87 (with C =
    2^120, sums around the floors), every insertion quality ``iq``."""
    rng = np.random.default_rng(seed)
    swap = {65: 67, 67: 71, 71: 84, 84: 65}
    batches = []
    for _ in range(8):
        read = rng.choice(list(b"ACGT"), n).astype(np.uint8)
        haps = []
        for j in range(10, 20):
            h = read.copy()
            pos = rng.choice(n, j, replace=False)
            h[pos] = [swap[c] for c in h[pos]]
            haps.append(h.tobytes())
        q = bytes([iq + 33]) * n
        batches.append(Batch([Read(read.tobytes(), b"I" * n, q, b"I" * n, b"+" * n)], haps))
    return pack(batches)


@gpu
def test_the_low_floor_keeps_sums_down_to_1e33_in_the_first_float32_kernel():
    """cuda-subwarp's float32 kernel without exponents keeps sums (with C) down to 1e-33 where
    the read is over 256 bases and its insertion qualities are at most Q50, to 1e-28 elsewhere
    (f32_floors); what it queues goes through the cascade's float32 kernel with exponents;
    every pair exact."""
    from hmmbench.pairhmm.model import LOG10_C32
    # cuda-subwarp's table without its size tiers: a call this small would run its reads over
    # 256 in a tier's multi-tile bin, which keeps the exponents (test_every_bin_has_...)
    b = sw.SubwarpBackend("cascade", **swv._CASCADE)
    for iq, floor in ((45, -33), (60, -28)):
        ps = _mismatched_pairs(1, iq)
        sums = forward_log10(ps, "float64") + LOG10_C32
        ex = _check(b, ps)
        assert ex.n_fallback == 0
        assert np.sum(sums < floor - 0.5) <= ex.info["exp_recomputed"] <= np.sum(sums < floor + 0.5)
    assert ex.info["exp_recomputed"] >= np.sum(sums < -28.5) >= 40
    ps = _mismatched_pairs(1, 45)
    sums = forward_log10(ps, "float64") + LOG10_C32
    assert np.sum((sums >= -33) & (sums < -28)) >= 5  # kept: under GATK's 1e-28
    # reads of up to 256 bases keep GATK's floor (next to none of their pairs lie between)
    short = _mismatched_pairs(1, 45, 200)
    sums = forward_log10(short, "float64") + LOG10_C32
    ex = _check({x.name: x for x in swv.backends()}["cuda-subwarp"], short)
    assert np.sum(sums < -28.5) <= ex.info["exp_recomputed"] <= np.sum(sums < -27.5)


@gpu
def test_exponents_keep_pairs_below_1e300_in_float32_on_the_gpu():
    """GATK's gap penalty: every pair exact without the float64 recompute, down past 1e-300
    (the emulation's proof, tests/test_subwarp_scaling.py, run by the kernel itself)."""
    b = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    ps = PairSet.concatenate([deep_pairs(1, 64, gcp_q=(10, 11)),
                              deep_pairs(2, 24, length=(500, 1024), mismatch=(0, 0.5),
                                         gcp_q=(10, 11)),
                              deep_pairs(3, 6, length=(1030, 1500), mismatch=(0, 0.5),
                                         gcp_q=(10, 11)),
                              generate_fixed(1024, 1024, 32, seed=2)])
    ref = forward_log10(ps, "float64")
    assert np.sum(ref < -300) >= 5
    ex = _check(b, ps)
    assert ex.n_fallback == 0
    # reads of bins without exponents (this set's size tier: up to 256): the float32 kernel,
    # then the cascade's float32 kernel with exponents for the pairs it queues (its sum with
    # C = 2^120 under the read's floor: 1e-33, a likelihood ~1e-69, at these qualities)
    m = ps.pair_read_lengths
    plain = np.zeros(ps.n_pairs, bool)
    for x in b.bins_for(ps):
        plain |= (m >= x.lo) & (m <= x.hi) & (not b.exponents(x))
    assert _queued_between(ps, ref, plain, ex.info["exp_recomputed"])
    assert ex.info["exp_recomputed"] > 10
    many = sw.SubwarpBackend("many", chunk_pairs=20, small_tiers=sw.SMALL_TIERS,
                             exp_scale=True, exp_above=256, exp_recompute=True)
    ex = _check(many, ps)
    assert ex.info["chunks"] > 3 and ex.n_fallback == 0 and ex.info["exp_recomputed"] > 10


@gpu
def test_small_calls_replayed_from_graphs_give_the_plain_calls_results_bit_for_bit():
    """From ``graph_from`` pairs a small call replays its launches from a CUDA graph per size
    class and plan (its counts staged after meta, its bounds and grids from the classes): 10s,
    1m merged and joined 1m regions of 1,024..8,191 pairs -- run twice, so most calls replay a
    graph another size of its class captured -- each result equal to the bit to the call
    without graphs, per pair and per read; 10s within 1e-4 of the reference."""
    on = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    off = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    off.graph_from = 0
    assert glue.graphs_available()
    full = resolve("1m").load()
    regions = launches(full, "original")
    sets = [launches(resolve("10s").load(), "merged")[0], full] + \
        [PairSet.concatenate(regions[:n]) for n in range(6, 60, 3)]
    sets = [ps for ps in sets if ps.n_pairs >= on.graph_from]
    assert len(sets) >= 12
    for per_pair_below in (on.per_pair_below, 0):
        on.per_pair_below = off.per_pair_below = per_pair_below
        for ps in sets + sets[::-1]:
            a, b = on.run(ps), off.run(ps)
            assert a.info["graph"] and not b.info["graph"]
            assert np.array_equal(a.log10, b.log10, equal_nan=True), ps.n_pairs
            assert a.n_fallback == b.n_fallback
            assert a.info["exp_recomputed"] == b.info["exp_recomputed"]
    on.per_pair_below = sw.PER_PAIR_BELOW
    _check(on, sets[0])


@gpu
@pytest.mark.skipif(np.finfo(np.longdouble).minexp >= np.finfo(np.float64).minexp,
                    reason="long double has float64's range here")
def test_past_float64s_range_the_exponent_bins_match_a_long_double_reference():
    """Deep pairs of 513..1,024 bases with gap penalties up to Phred 40 through the full bin
    table (short pairs fill the set past the size tiers): where GATK's float64 sum is subnormal
    (below LOG10_RANGE_FLOOR, where the runner takes any two values as agreeing) the float64
    reference drifts by more than 1e-4 from the same maths in long double, and the exponent bins'
    float32 results stay within 1e-4 of the long double (tests/test_subwarp_scaling.py's
    emulation, run by the kernel). A pair handed to the float64 kernel is GATK's float64 again:
    within 1e-4 of the long double, or past the floor in both."""
    from hmmbench.pairhmm.model import LOG10_RANGE_FLOOR
    b = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    deep = PairSet.concatenate([deep_pairs(6, 32, length=(513, 641), gcp_q=(10, 41)),
                                deep_pairs(7, 32, length=(513, 641), gcp_q=(10, 21)),
                                deep_pairs(8, 32, length=(641, 1025), gcp_q=(10, 41))])
    ps = PairSet.concatenate([deep, generate_fixed(16, 16, 1 << 15, seed=5)])
    assert {(x.lo, x.hi) for x in b.bins_for(ps) if b.exponents(x) and not x.multi_tile} \
        >= {(513, 640), (897, 1024)}
    got = b.run(ps).log10[:deep.n_pairs]
    f64, ld = forward_log10(deep, "float64"), forward_log10(deep, "longdouble")
    past = f64 < LOG10_RANGE_FLOOR
    near = np.abs(got - ld) <= TOL
    assert np.all(near | ((got < LOG10_RANGE_FLOOR) & (ld < LOG10_RANGE_FLOOR)))
    # kept in float32 and right where the float64 reference is not
    assert np.sum(past & near & ~(np.abs(f64 - ld) <= TOL)) >= 2


@gpu
@pytest.mark.parametrize("attr,define,tol", [("lane0_by_factor", "SW_LANE0_BY_FACTOR", 0),
                                             ("code_window", "SW_CODE_WINDOW_ON", 0),
                                             ("exp_shift", "SW_EXP_SHIFT", 1e-9)])
def test_lane_0s_steps_of_a_single_tile_with_exponents_give_the_plain_results_bit_for_bit(
        attr, define, tol):
    """A single tile with exponents gives lane 0 its row above (zeros, the injected D) through
    the conversion of what it receives, a factor 0 and an FMA adding D, instead of three selects
    a step (SW_LANE0_BY_FACTOR), and its haplotype codes from a window the group loads at each
    check instead of a load a step (SW_CODE_WINDOW) -- the same values: each equal to the bit
    with its plain form on the exponent bins of 513..1,024 (a set of 32,768 pairs or more takes
    the full bin table; short pairs fill it) and on the cascade's float32 tile with exponents
    (deep pairs of 257..512 bases), down past 1e-300, every long pair exact. A thread's last two
    rows held 2^24 up (SW_EXP_SHIFT, one conversion factor for two) give float32 sums exactly
    2^24 larger: the stored log10s within 1e-9 (the double log10 of another float and
    exponent), the same pairs to float64."""
    on = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    off = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    setattr(off, attr, 0)
    long = PairSet.concatenate([deep_pairs(2, 24, length=(513, 1024), mismatch=(0, 0.5),
                                           gcp_q=(10, 11)),
                                deep_pairs(12, 32, length=(257, 512), gcp_q=(10, 11)),
                                generate_fixed(640, 640, 8, seed=3),
                                generate_fixed(1024, 1024, 8, seed=4)])
    ps = PairSet.concatenate([long, generate_fixed(16, 16, 1 << 15, seed=5)])
    bins = on.bins_for(ps)
    single = [x for x in bins if on.exponents(x) and not x.multi_tile]
    assert {(x.lo, x.hi) for x in single} >= {(513, 640), (897, 1024)}
    assert on.defines(single[0]).get(define, 1) == 1
    assert off.defines(single[0])[define] == 0
    a, b = on.run(ps), off.run(ps)
    assert a.info["exp_recomputed"] > 10 and a.n_fallback == b.n_fallback == 0
    if tol:
        assert np.array_equal(np.isnan(a.log10), np.isnan(b.log10))
        assert np.nanmax(np.abs(a.log10 - b.log10)) <= tol
    else:
        assert np.array_equal(a.log10, b.log10, equal_nan=True)
    ref = forward_log10(long, "float64")
    assert np.sum(ref < -300) >= 5
    got = a.log10[:long.n_pairs]
    # (as _check: a finite result below float64's reach, ~1e-630, agrees with its -inf)
    ok = (got == ref) | (np.abs(got - ref) <= TOL) | (np.isneginf(ref) & (got < -600))
    assert np.all(ok), np.flatnonzero(~ok)


@gpu
@pytest.mark.parametrize("small_below", [None, 0])
def test_reads_up_to_512_without_exponents_cascade_through_one_float32_tile(small_below):
    """exp_above=448: the bins of 257..448 reads run without exponents and their underflows go
    through one p32k16 tile with exponents (GATK's gap penalty: none on to float64, down past
    1e-300); with gap penalties to Phred 25 what that tile cannot hold goes on to the multi-tile
    double kernel, and every pair is exact. Both paths (the small call's and the full one)."""
    b = sw.SubwarpBackend("exp-above-448", exp_scale=True, exp_above=448, exp_recompute=True)
    if small_below is not None:
        b.small_below = small_below
    ps = PairSet.concatenate([deep_pairs(12, 64, length=(257, 449), gcp_q=(10, 11)),
                              deep_pairs(13, 16, length=(449, 600), gcp_q=(10, 11))])
    ref = forward_log10(ps, "float64")
    assert np.sum(ref < -300) >= 5
    ex = _check(b, ps)
    assert ex.n_fallback == 0
    mid = (ps.pair_read_lengths > 256) & (ps.pair_read_lengths <= 448)
    assert _queued_between(ps, ref, mid, ex.info["exp_recomputed"])
    assert ex.info["exp_recomputed"] > 20
    assert any(q.endswith("f32-exp") and "-mt[257..448]" in q
               for q in ex.info["recompute_queues"])
    gaps = deep_pairs(14, 48, length=(257, 449), gcp_q=(10, 25))
    ex = _check(b, gaps)
    assert 0 < ex.n_fallback < ex.info["exp_recomputed"] <= gaps.n_pairs


@gpu
def test_a_gap_quality_of_0_sends_its_pairs_to_the_6op_double_kernel_and_they_are_exact():
    """The 5-instruction recurrence cannot factor out gm = 0: such a row's X is NaN, so is its
    pair's sum; short reads' pairs pass the cascade's float32 kernel (NaN again) to its double
    level, long reads' go straight to the double queue (6-op form) -- all exact."""
    ps = PairSet.concatenate([deep_pairs(2, 24, length=(60, 250), gcp_q=(10, 11)),
                              deep_pairs(3, 12, length=(300, 1100), gcp_q=(10, 11))])
    gcp = ps.gcp_qual.copy()
    zeroed = np.arange(ps.n_pairs) % 3 == 0
    for r in np.flatnonzero(zeroed):
        lo, hi = ps.read_offsets[r], ps.read_offsets[r + 1]
        gcp[lo + (hi - lo) * 2 // 3] = 0
    ps = dataclasses.replace(ps, gcp_qual=gcp)
    for b in (swv.backends()[0], {x.name: x for x in swv.backends()}["cuda-subwarp-exp-all"]):
        ex = _check(b, ps)
        assert ex.n_fallback == zeroed.sum() == 12, b.name
    ex = _check({x.name: x for x in swv.backends()}["cuda-subwarp-6op"], ps)
    assert ex.n_fallback == 0


@gpu
def test_exponent_pairs_they_cannot_hold_go_to_float64_and_every_pair_is_exact():
    b = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    ps = PairSet.concatenate([deep_pairs(4, 48, length=(150, 300), gcp_q=(10, 25)),
                              ragged(seed=13, batches=10, max_read=300, max_hap=300)])
    ex = _check(b, ps)
    assert 0 < ex.n_fallback < ps.n_pairs
    # reads up to 256 only: every float64 pair went through the cascade's float32 kernel with
    # exponents first (its second level; the emulation hands on 15 of these 46 underflows)
    short = deep_pairs(5, 48, length=(150, 250), gcp_q=(10, 25))
    ex = _check(b, short)
    assert 0 < ex.n_fallback < ex.info["exp_recomputed"] <= short.n_pairs


@gpu
@pytest.mark.parametrize("name", ["cuda-subwarp", "cuda-subwarp-gatkform",
                                  "cuda-subwarp-f64rescue"])
def test_every_recompute_kernel_matches_the_reference_when_every_pair_is_recomputed(name):
    b = {x.name: x for x in swv.backends()}[name]
    b.recompute_all = True  # every pair through the float64 kernels of every queue
    ps = PairSet.concatenate([ragged(seed=15, batches=10, max_read=300, max_hap=300),
                              generate_fixed(700, 400, 8, seed=4)])
    ex = _check(b, ps)
    assert ex.n_fallback == ps.n_pairs
    assert any("-mt" in q for q in ex.info["recompute_queues"])
    many = sw.SubwarpBackend("many", chunk_pairs=50)
    many.recompute_all = True
    assert _check(many, ps).n_fallback == ps.n_pairs


@gpu
@pytest.mark.parametrize("name", ["cuda-subwarp", "cuda-subwarp-f64rescue",
                                  "cuda-subwarp-nostreams"])
def test_small_calls_give_the_full_paths_results_bit_for_bit(name):
    """The small call's path (one stream, sw_layout_small, one copy back) against the full one
    (three layout launches, bins on their streams): the same results, fallbacks and bins; from
    MANY_ITEMS items the small path's layout is the three launches too (a ragged set of
    ~9k pairs)."""
    from hmmbench.pairhmm.subwarp.small import MANY_ITEMS
    small = {x.name: x for x in swv.backends()}[name]
    full = {x.name: x for x in swv.backends()}[name]
    full.small_below = 0
    streams = []
    many = PairSet.concatenate([ragged(seed=s, batches=450, max_read=260, max_hap=300)
                                for s in (31, 32, 33, 34)])
    assert many.n_pairs >= MANY_ITEMS
    for ps in (ragged(seed=13, batches=10, max_read=300, max_hap=300),
               ragged(seed=24, batches=400, max_read=250, max_hap=250),  # > one block's units
               generate_fixed(1100, 700, 16, seed=5),
               PairSet.concatenate([deep_pairs(4, 48, length=(150, 300), gcp_q=(10, 25)),
                                    ragged(seed=23, batches=40, max_read=150, max_hap=200)]),
               many):
        assert ps.n_pairs < small.small_below
        a, b = _check(small, ps), full.run(ps)
        assert a.info["bins"] == b.info["bins"] and a.n_fallback == b.n_fallback
        assert np.array_equal(a.log10, b.log10, equal_nan=True), name
        assert a.timing["kernel"] > 0 and a.info["gpu_span_s"] >= a.timing["kernel"]
        # sw_layout_small's items and bin ranges are the three layout kernels' (the order
        # inside a sort key is arbitrary)
        assert _device_layout(small, ps) == _device_layout(full, ps)
        streams.append(a.info["bin_streams"])
    # 2,075 pairs in two bins, ~9k in four: side by side where the backend has streams
    assert streams == [1, 2, 1, 1, 4] if small._streams_on else set(streams) == {1}


@gpu
def test_sequences_uploaded_from_the_pairsets_arrays_give_the_staged_results_bit_for_bit():
    """A small call's sequences uploaded from the PairSet's own (pageable) arrays, as 1m merged's
    are (``pageable_from_bytes``), against the same call staged whole into page-locked memory:
    the same results, bins and fallbacks, on 1m merged and on a ragged set of ~9k pairs."""
    staged = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    pageable = {x.name: x for x in swv.backends()}["cuda-subwarp"]
    staged.pageable_from_bytes, pageable.pageable_from_bytes = 1 << 40, 0
    for ps in (launches(resolve("1m").load(), "merged")[0],
               PairSet.concatenate([ragged(seed=s, batches=450, max_read=260, max_hap=300)
                                    for s in (31, 32, 33, 34)])):
        assert ps.n_pairs < pageable.small_below
        a, b = _check(pageable, ps), staged.run(ps)
        assert a.info["bins"] == b.info["bins"] and a.n_fallback == b.n_fallback
        assert np.array_equal(a.log10, b.log10, equal_nan=True)


@gpu
def test_batched_calls_in_flight_are_the_calls_alone():
    """cuda-subwarp-batched with 8 of 1m's region calls in flight: batches of 8 (then 4), each
    call's results those of cuda-subwarp's call alone (a batch's bins may be other instances of
    the same (p, k): within 1e-5), and within the tolerance of the float64 reference."""
    from hmmbench.runner.cell import joined_values, run_launches
    regions = launches(resolve("1m").load(), "original")[:20]
    by = {x.name: x for x in swv.backends()}
    alone = joined_values(run_launches(by["cuda-subwarp"], regions)[0])
    outs = run_launches(by["cuda-subwarp-batched"], regions, in_flight=8)[0]
    assert [e.info.get("batched_calls") for e in outs] == [8] * 16 + [4] * 4
    got = joined_values(outs)
    np.testing.assert_allclose(got, alone, rtol=0, atol=1e-5)
    want = forward_log10(PairSet.concatenate(regions), "float64")
    assert np.max(np.abs(got - want)) < TOL


def _device_layout(backend, ps) -> tuple:
    """(bin ranges, each bin's items sorted) of the last call on the backend's lane 0."""
    work = backend._lanes.all[0].sized[1][2][0]
    drv = glue.driver()
    ranges = np.empty((len(backend.bins_for(ps)), 2), np.int32)
    drv.memcpy_dtoh(ranges, work["bin_range"])
    items = np.empty((int(ranges[:, 1].sum()), 4), np.int32)
    drv.memcpy_dtoh(items, work["items"])
    return ranges.tolist(), [sorted(map(tuple, items[f:f + n].tolist())) for f, n in ranges]


def test_a_pairsets_cells_per_batch_are_the_sum_over_its_pairs():
    """``PairSet.cells`` per batch (reads' bases times haplotypes' bases) is the GCUPS numerator
    summed pair by pair, on ragged sets (empty batches among them) and real data."""
    for ps in (ragged_pairs(seed=s, batches=40, max_read=300, max_hap=400) for s in (41, 42)):
        assert ps.cells == int(np.dot(ps.pair_read_lengths, ps.pair_hap_lengths)) > 0
    for name in ("10s", "equal-32@800"):
        ps = resolve(name).load()
        assert ps.cells == int(np.dot(ps.pair_read_lengths, ps.pair_hap_lengths))


def test_chunks_of_short_pairs_hold_more_pairs():
    """``call_chunk_pairs``: chunk_pairs times the whole number of times the mean pair fits in
    a 128 x 128 pair, at most 4: equal-32 and equal-64 sets get 4x, equal-74 (16384 / 74^2 =
    2.99) 2x, sets of typical reads and calls of one chunk keep chunk_pairs; the chunks then
    cover the set as before, in fewer pieces."""
    b = sw.SubwarpBackend("t", chunk_pairs=1000)
    got = {name: b.call_chunk_pairs(resolve(name).load())
           for name in ("equal-32@20000", "equal-64@20000", "equal-74@20000", "equal-96@20000",
                        "shape-100x150@3000", "equal-32@800")}
    assert got == {"equal-32@20000": 4000, "equal-64@20000": 4000, "equal-74@20000": 2000,
                   "equal-96@20000": 1000, "shape-100x150@3000": 1000, "equal-32@800": 1000}
    ps = resolve("equal-32@20000").load()
    bounds = b.chunk_bounds(ps)
    sizes = [int(ps.batch_pairs[b1] - ps.batch_pairs[b0]) for b0, b1 in bounds]
    assert len(bounds) == 5 and sum(sizes) == ps.n_pairs and max(sizes) <= 4000


def test_chunk_bounds_cover_every_batch_once_without_splitting_batches():
    ps = ragged(seed=21, batches=40)
    b = sw.SubwarpBackend("t", chunk_pairs=7)
    bounds = b.chunk_bounds(ps)
    assert bounds[0][0] == 0 and bounds[-1][1] == ps.n_batches
    assert all(a[1] == c[0] and a[0] < a[1] for a, c in zip(bounds, bounds[1:]))
    assert len(bounds) > 3
    assert sw.SubwarpBackend("t").chunk_bounds(ps) == [(0, ps.n_batches)]
    bp = ps.batch_pairs
    for ramp in (0, 1, 3):
        b = sw.SubwarpBackend("t", chunk_pairs=64)
        b.ramp_chunks = ramp
        bounds = b.chunk_bounds(ps)
        assert bounds[0][0] == 0 and bounds[-1][1] == ps.n_batches
        assert all(a[1] == c[0] and a[0] < a[1] for a, c in zip(bounds, bounds[1:]))
        # the first `ramp` chunks end at the first batch end at or after n/2^ramp, then
        # n/2^(ramp-1) further, ... (n: the call's chunk size; batches are never split)
        n, target = b.call_chunk_pairs(ps), 0
        for s, (b0, b1) in zip(range(ramp, 0, -1), bounds):
            target += n >> s
            assert bp[b1] >= target and bp[b1 - 1] < target, (ramp, bounds)
        assert ps.n_pairs > n and len(bounds) > ramp


def _batch_shape(name: str):
    """What the chunking reads of the equal-length generated set ``name`` (its pairs, cells,
    batches and pairs before each batch), from the set's plan and the generator's batch layout
    without drawing its bases (the test checks it against the sets it draws)."""
    from types import SimpleNamespace
    from hmmbench.pairhmm.datasets.synthetic import fixed_shape_layout
    ds = resolve(name)
    reads, haps = fixed_shape_layout(ds.n_pairs)
    return SimpleNamespace(n_pairs=ds.n_pairs, cells=ds.n_cells, n_batches=len(reads),
                           batch_pairs=np.concatenate([[0], np.cumsum(reads * haps)]))


def test_a_last_chunk_under_half_a_chunk_joins_the_one_before():
    """``join_tail``: the cuts of the plain chunking but its last, when under half a chunk of
    pairs follow it (equal-256@488281: 393,216 + 95,065 pairs -> one chunk); a tail of half a
    chunk or more keeps its own chunk."""
    b = sw.SubwarpBackend("t", chunk_pairs=1000)
    for name, joined in (("equal-32@9600", True), ("equal-32@10000", False),
                         ("shape-100x150@3000", False), ("shape-100x150@3400", True)):
        ps = resolve(name).load()
        n = b.call_chunk_pairs(ps)
        b.join_tail = 0
        plain = b.chunk_bounds(ps)
        b.join_tail = 1
        got = b.chunk_bounds(ps)
        tail = int(ps.batch_pairs[plain[-1][1]] - ps.batch_pairs[plain[-1][0]])
        assert (tail < n // 2) == joined, name
        assert got == (plain[:-2] + [(plain[-2][0], plain[-1][1])] if joined else plain), name
        if name.startswith("equal-"):
            shape = _batch_shape(name)
            assert (shape.n_pairs, shape.cells, shape.n_batches) == (ps.n_pairs, ps.cells,
                                                                     ps.n_batches), name
            assert np.array_equal(shape.batch_pairs, ps.batch_pairs), name
    ps = _batch_shape("equal-256@488281")     # 32e9 cells: its bases are not needed here
    b = sw.SubwarpBackend("t")
    assert len(b.chunk_bounds(ps)) == 2   # not by default
    b.join_tail = 1
    assert [int(ps.batch_pairs[y] - ps.batch_pairs[x]) for x, y in b.chunk_bounds(ps)] == [488281]


@gpu
def test_pipelined_chunks_give_the_same_results_as_one_chunk():
    ps = ragged(seed=22, batches=30, max_read=200, max_hap=250)
    one = sw.SubwarpBackend("one").run(ps)
    many = sw.SubwarpBackend("many", chunk_pairs=9)
    ex = many.run(ps)
    assert ex.info["chunks"] > 3
    assert np.array_equal(np.isnan(one.log10), np.isnan(ex.log10))
    assert np.allclose(one.log10, ex.log10, rtol=0, atol=1e-12)
    assert ex.n_fallback == one.n_fallback
    _check(many, ps)


@gpu
def test_gated_chunks_are_released_by_the_host_and_give_the_ungated_results():
    """Each chunk's sw_gate lets its chain go once the host has enqueued it (not by its ~1 s
    timeout): the whole multi-chunk call spans far less on the GPU; the results are those of
    the launch-by-launch call to the bit, and the flag holds the last chunk's ticket."""
    ps = ragged(seed=23, batches=30, max_read=200, max_hap=250)
    b = sw.SubwarpBackend("many", chunk_pairs=9)
    b.run(ps)   # compiled, buffers sized
    gated = b.run(ps)
    assert gated.info["chunks"] > 3 and gated.info["gpu_span_s"] < 0.5
    res = b._lanes.all[0].res
    assert res._gate[0] == res._tickets
    b.gate_chunks = 0
    plain = b.run(ps)
    assert np.array_equal(gated.log10, plain.log10, equal_nan=True)
    _check(b, ps)


@pytest.mark.parametrize("per_pair", [False, True])
def test_a_batch_range_layout_matches_the_same_batches_packed_alone(per_pair):
    ps = ragged(seed=31, batches=12)
    bins = sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, ps.max_read_length)
    b0, b1 = 4, 9
    whole = sw.host_layout(ps, bins, b0, b1, per_pair=per_pair)
    alone = sw.host_layout(ps.select_batches(b0, b1), bins, per_pair=per_pair)
    p0 = int(ps.batch_pairs[b0])
    expect = alone.items.copy()
    expect[:, 3] += p0  # pair numbers stay global
    assert np.array_equal(whole.items, expect)
    if per_pair:
        assert np.all(whole.items[:, 2] == 1) and len(whole.items) == alone.items.shape[0]
        assert len(whole.items) == int(ps.batch_pairs[b1] - ps.batch_pairs[b0])


def _meta(bins) -> np.ndarray:
    queue_bins, queue_of = sw.recompute_queues(bins)
    return np.array([len(bins), *(min(b.hi, 2**31 - 1) for b in bins), *queue_of], np.int32)


def _staged_chunk(ps, bins, bounds, c):
    """Chunk c staged as run() stages it (``chunk_offsets``, ``stage_chunk_part`` per worker
    task); returns {name: array view of the staging buffer}."""
    meta = _meta(bins)
    offs, size, ends = chunk_offsets(ps, bounds, len(meta))
    (b0, b1), end, offs = bounds[c], ends[c], offs[c]
    buf = np.full(size, 0xEE, np.uint8)
    used = max(stage_chunk_part(ps, meta, offs, end, int_views(buf), b0, b1, part)
               for part in range(CHUNK_PARTS))
    assert used <= size
    r0, r1, h0, h1, a0, a1, c0, c1 = end
    sizes = [a1 - a0] * 5 + [r1 - r0 + 1, c1 - c0, h1 - h0 + 1] + [b1 - b0 + 1] * 3 + [len(meta)]
    return {name: buf[o:o + n * np.dtype(dt).itemsize].view(dt)
            for (name, dt), o, n in zip(sw.STAGED, offs, sizes)}


def test_chunks_stage_their_raw_arrays_chunk_relative_into_one_block():
    ps = ragged(seed=41, batches=20)
    b = sw.SubwarpBackend("t", chunk_pairs=11)
    bounds = b.chunk_bounds(ps)
    bins = b.bins_for(ps)
    offs, size = staging_offsets(ps, bounds, 1 + 2 * len(bins))
    assert [n for n, _ in sw.STAGED] == list(offs)
    assert sorted(n for t in STAGE_TASKS for n in t) == sorted(offs)
    assert all(o % 256 == 0 for o, _ in offs.values())
    assert len(STAGE_TASKS) == CHUNK_PARTS
    for c, (b0, b1) in enumerate(bounds):
        got = _staged_chunk(ps, bins, bounds, c)
        assert np.array_equal(got["meta"], _meta(bins))
        r0, r1 = int(ps.batch_reads[b0]), int(ps.batch_reads[b1])
        h0, h1 = int(ps.batch_haps[b0]), int(ps.batch_haps[b1])
        for r in range(r0, r1):  # every read's bytes at its chunk-relative offset
            lo, hi = got["read_off"][r - r0], got["read_off"][r - r0 + 1]
            a0, a1 = int(ps.read_offsets[r]), int(ps.read_offsets[r + 1])
            for name in ("read_bases", "base_qual", "ins_qual", "del_qual", "gcp_qual"):
                assert np.array_equal(got[name][lo:hi], getattr(ps, name)[a0:a1]), name
        for h in range(h0, h1):  # haplotypes go as they are (no repacking)
            lo, hi = got["hap_off"][h - h0], got["hap_off"][h - h0 + 1]
            assert np.array_equal(got["hap_bases"][lo:hi], ps.hap(h))
        assert np.array_equal(got["batch_reads"], ps.batch_reads[b0:b1 + 1] - r0)
        assert np.array_equal(got["batch_haps"], ps.batch_haps[b0:b1 + 1] - h0)
        assert np.array_equal(got["batch_pairs"], ps.batch_pairs[b0:b1 + 1])


def emulate_layout_kernels(st: dict, per_pair: bool):
    """sw_layout_count / scan / scatter of subwarp_layout.cu, element by element in NumPy
    (ranks in unit order, which is one of the orders the atomics may give)."""
    meta = st["meta"]
    nb = int(meta[0])
    his, queue_of = meta[1:1 + nb], meta[1 + nb:1 + 2 * nb]
    br, bh, bp = st["batch_reads"], st["batch_haps"], st["batch_pairs"]
    ro, ho = st["read_off"], st["hap_off"]
    n_batches = len(br) - 1
    units = int(bp[-1] - bp[0]) if per_pair else int(br[-1])
    hist = np.zeros(nb * sw.SW_LEVELS, np.int64)
    bin_pairs = np.zeros(nb, np.int64)
    raw, keys, ranks = [], [], []
    for u in range(units):
        if per_pair:
            pair = int(bp[0]) + u
            b = int(np.searchsorted(bp[:n_batches], pair, side="right")) - 1
            nh = int(bh[b + 1] - bh[b])
            local = pair - int(bp[b])
            item = (int(br[b]) + local // nh, int(bh[b]) + local % nh, 1, pair)
            work = int(ho[item[1] + 1] - ho[item[1]]) + sw.MAX_P
        else:
            b = int(np.searchsorted(br[:n_batches], u, side="right")) - 1
            nh = int(bh[b + 1] - bh[b])
            if nh == 0:
                raw.append(None); keys.append(-1); ranks.append(0)  # noqa: E702
                continue
            item = (u, int(bh[b]), nh, int(bp[b]) + (u - int(br[b])) * nh)
            work = int(ho[bh[b + 1]] - ho[bh[b]]) + nh * sw.MAX_P
        m = int(ro[item[0] + 1] - ro[item[0]])
        bin_ = 0
        while bin_ < nb - 1 and m > his[bin_]:
            bin_ += 1
        level = min(sw.SW_LEVELS - 1, int(np.log2(np.float32(max(work, 1))) * 16))
        key = bin_ * sw.SW_LEVELS + sw.SW_LEVELS - 1 - level
        raw.append(item); keys.append(key); ranks.append(int(hist[key]))  # noqa: E702
        hist[key] += 1
        bin_pairs[bin_] += item[2]
    start = np.concatenate([[0], np.cumsum(hist)[:-1]])
    items = np.zeros((int(hist.sum()), 4), np.int64)
    for item, key, rank in zip(raw, keys, ranks):
        if key >= 0:
            items[start[key] + rank] = item
    first = start[::sw.SW_LEVELS]
    counts = hist.reshape(nb, sw.SW_LEVELS).sum(axis=1)
    queue_size = np.bincount(queue_of, weights=bin_pairs, minlength=nb).astype(np.int64)
    queue_first = np.concatenate([[0], np.cumsum(queue_size)[:-1]])
    return items, list(zip(first.tolist(), counts.tolist())), queue_first


@pytest.mark.parametrize("per_pair", [False, True])
def test_gpu_layout_kernels_emulated_give_the_host_layout(per_pair):
    base = ragged(seed=43, batches=14, max_read=300)
    r = Read(b"ACGT", b"IIII", b"IIII", b"IIII", b"++++")
    ps = PairSet.concatenate([base, pack([Batch([r, r], []), Batch([r], [b"ACGTA"])])])
    b = sw.SubwarpBackend("t", chunk_pairs=40)
    bounds = b.chunk_bounds(ps)
    assert len(bounds) > 2
    bins = b.bins_for(ps)
    for c, (b0, b1) in enumerate(bounds):
        st = _staged_chunk(ps, bins, bounds, c)
        items, ranges, queue_first = emulate_layout_kernels(st, per_pair)
        ref = sw.host_layout(ps, bins, b0, b1, per_pair=per_pair)
        assert len(items) == len(ref.items)
        ref_ranges = {bins.index(x): (lo, hi - lo) for x, lo, hi in ref.bin_ranges}
        for i, (first, count) in enumerate(ranges):
            assert (first, count) == ref_ranges.get(i, (first, 0))
            lo, hi = first, first + count
            assert sorted(map(tuple, items[lo:hi].tolist())) == \
                sorted(map(tuple, ref.items[lo:hi].tolist()))
        # recompute queues: room for every pair of the bins that feed them, in queue order
        assert queue_first[-1] <= int(items[:, 2].sum())
        assert np.all(np.diff(queue_first) >= 0)


def test_recompute_queues_fit_each_bin_with_eight_rows_per_thread():
    bins = sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, 3000)
    queues, of = sw.recompute_queues(bins)
    assert len(of) == len(bins) and max(of) == len(queues) - 1
    for b, q in zip(bins, of):
        qb = queues[q]
        assert qb.k == sw.DOUBLE_K and qb.lo <= b.lo and b.hi <= qb.hi
        assert qb.multi_tile or qb.p * qb.k >= b.hi
        if not qb.multi_tile and qb.p > 4:  # the smallest group that holds the bin
            assert (qb.p // 2) * qb.k < b.hi
    assert [q.multi_tile for q in queues] == [False] * (len(queues) - 1) + [True]


def test_growing_buffers_get_at_most_a_fifth_of_headroom():
    for n in (1, 70_000, 1 << 20, 40_000_000, 47_000_000, 3 * 10**9):
        assert n <= sw.headroom(n) and (n < 1 << 16 or sw.headroom(n) <= 1.19 * n)
    assert sw.headroom(40_000_000) == sw.headroom(41_000_000)  # no reallocation for +2.5 %


class _FakeEvent:
    """Stands in for a CUDA event: time_since(other) in milliseconds."""

    def __init__(self, ms):
        self.ms = ms

    def time_since(self, other):
        return self.ms - other.ms


def test_busy_time_counts_overlapping_chunk_spans_once():
    E = _FakeEvent
    start = E(0.0)
    # chunk 1 is uploaded (ready at 3 ms) while chunk 0 still runs (until 5 ms)
    spans = [(E(1.0), E(5.0)), (E(3.0), E(9.0)), (E(12.0), E(13.0))]
    assert sw.busy_seconds(start, spans) == pytest.approx((4.0 + 4.0 + 1.0) / 1e3)
    assert sw.busy_seconds(start, []) == 0.0
    # launches on parallel streams, recorded in any order; the gap 9..12 (the GPU waiting for the
    # host to enqueue) is not kernel time
    bins = [(E(12.0), E(13.0)), (E(3.0), E(9.0)), (E(1.0), E(5.0)), (E(2.0), E(4.0))]
    assert sw.busy_seconds(start, bins) == pytest.approx(9.0 / 1e3)


def test_bin_cells_sum_read_times_haplotype_lengths():
    ps = ragged(seed=51, batches=10)
    bins = sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, ps.max_read_length)
    for per_pair in (False, True):
        lay = sw.host_layout(ps, bins, 0, ps.n_batches, per_pair=per_pair)
        total = sum(sw.bin_cells(ps, (0, ps.n_batches), lay, lo, hi)
                    for _, lo, hi in lay.bin_ranges)
        assert total == ps.cells


def _tier_configs(pairs, rows) -> tuple:
    """(p, k) of the bins ``rows`` give ``pairs``, and of the backend's bins for them."""
    want = [(b.p, b.k) for b in sw.make_bins(rows, sw.DEFAULT_LONG, pairs.max_read_length)]
    return want, [(b.p, b.k) for b in swv.backends()[0].bins_for(pairs)]


def test_inputs_take_the_first_size_tier_that_holds_them():
    small = ragged(seed=3, batches=4)
    assert small.n_pairs < SMALL_INPUT_PAIRS == sw.SMALL_TIERS[0][0]
    want, got = _tier_configs(small, sw.SMALL_TIERS[0][1])
    assert got == want and {p for p, _ in got} == {32}
    (lo, _), (hi, rows) = sw.SMALL_TIERS
    middle = PairSet.concatenate([small] * (-(-lo // small.n_pairs)))
    assert lo <= middle.n_pairs < hi
    want, got = _tier_configs(middle, rows)
    assert got == want and sw.size_tier(middle, sw.SMALL_TIERS) == 1
    big = PairSet.concatenate([small] * (-(-hi // small.n_pairs)))
    assert sw.size_tier(big, sw.SMALL_TIERS) == 2
    assert _tier_configs(big, sw.DEFAULT_BINS)[0] == _tier_configs(big, sw.DEFAULT_BINS)[1]
    # a plan per tier: the same longest read in two tiers gets two bin sets
    assert sw.size_tier(small, None) == 0 == sw.size_tier(big, ())


def test_reads_of_batches_without_haplotypes_make_no_items():
    base = ragged(seed=61, batches=3)
    r = Read(b"ACGT", b"IIII", b"IIII", b"IIII", b"++++")
    extra = pack([Batch([r, r], []), Batch([r], [b"ACGTA"])])
    ps = PairSet.concatenate([base, extra])
    items = sw.read_items(ps)
    assert int(items[:, 2].min()) >= 1
    assert int(items[:, 2].sum()) == ps.n_pairs
    bins = sw.make_bins(sw.DEFAULT_BINS, sw.DEFAULT_LONG, ps.max_read_length)
    lay = sw.host_layout(ps, bins)
    assert sorted(lay.items[:, 3].tolist()) == sorted(items[:, 3].tolist())


def test_empty_sequences_are_refused_only_when_they_form_a_pair():
    r = Read(b"ACGT", b"IIII", b"IIII", b"IIII", b"++++")
    empty = Read(b"", b"", b"", b"", b"")
    b = swv.backends()[0]
    assert b.refuse_reason(pack([Batch([r], [b"ACG"])])) is None
    assert "empty" in b.refuse_reason(pack([Batch([r, empty], [b"ACG"])]))
    assert b.refuse_reason(pack([Batch([empty], []), Batch([r], [b"ACG"])])) is None


def test_the_sub_warp_families_change_what_their_axes_say():
    """cuda-subwarp-auto caps every bin, cuda-subwarp-exp-above moves the exponents' start,
    cuda-subwarp-shape swaps one bin's p x k and cap and keeps the rest of the table; a shape
    whose tile cannot hold its bin's reads is refused with the reason."""
    from hmmbench import registry
    from hmmbench.errors import UserError
    auto, above, shape = registry.select([
        "cuda-subwarp-auto[recurrence=5op,min_blocks=3]",
        "cuda-subwarp-exp-above[exp_above=448]",
        "cuda-subwarp-shape[hi=256,p=16,k=16,min_blocks=4]"])
    assert {row[3] for row in auto._bins_table} == {3}
    assert [row[:3] for row in auto._bins_table] == [row[:3] for row in sw.DEFAULT_BINS]
    assert above.params["exp_above"] == 448 and above._bins_table == sw.DEFAULT_BINS
    changed = [(a, b) for a, b in zip(shape._bins_table, sw.DEFAULT_BINS) if a != b]
    assert changed == [((256, 16, 16, 4), (256, 8, 32, 0, 248))]
    with pytest.raises(UserError, match="tile 256"):
        swv.bin_shape("t", 512, 16, 16, 0)
