"""Profile workload CUDA kernels: striped layouts (checked against HMMER's own SSE layout through
pyhmmer), nvcc sm_90 compile checks of every kernel and warp variant per model size, and (with a
GPU) every backend and warp variant against profile-numpy."""
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from helpers import nvcc_batch
from helpers.paths import REPO
from hmmbench.profile.device import layout

pyhmmer = pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from hmmbench.profile import datasets  # noqa: E402
from hmmbench.profile.model import ProfileModel  # noqa: E402

NVCC = shutil.which("nvcc")
SOURCE = str(REPO / "kernels_cuda" / "profile" / "filters.cu")
#: the task kernels' shared header (kernels_common/profile/task.h)
INCLUDES = ("-I", str(REPO / "kernels_common"))
KERNELS = ("ssv_xe_task", "msv_xj_task", "vf_xc_task", "ssv_xe_warp", "msv_xj_warp", "vf_xc_warp")


@pytest.fixture(scope="module")
def hmm_and_model():
    path = [p for p in datasets.model_files() if p.endswith("LuxC.hmm")][0]
    hmm = datasets.read_hmms(path)[0]
    return hmm, ProfileModel.from_hmm(hmm)


def test_16_wide_striping_is_hmmers_rbv(hmm_and_model):
    hmm, model = hmm_and_model
    gm = pyhmmer.plan7.Profile(hmm.M, hmm.alphabet)
    gm.configure(hmm, pyhmmer.plan7.Background(hmm.alphabet), L=400)
    rbv = np.asarray(gm.to_optimized().rbv)
    mine = layout.striped_bytes(model, width=16)
    np.testing.assert_array_equal(mine.reshape(model.Kp, -1), rbv[:, :mine.shape[1] * 16])


def test_warp_striping_positions(hmm_and_model):
    _, model = hmm_and_model
    s = layout.striped_bytes(model, 128)
    Q = layout.n_vectors(model.M, 128)
    assert s.shape == (model.Kp, Q, 128)
    # element (q, z) holds position k = q + z*Q + 1; past M it is the prohibited 255
    assert s[3, 1, 2] == model.byte.cost[3, 1 + 2 * Q]
    assert (s[:, Q - 1, 127] == 255).all() if Q * 128 > model.M else True
    match, tsc = layout.striped_words(model, 64)
    Qw = layout.n_vectors(model.M, 64)
    assert match.shape == (model.Kp, Qw, 64) and tsc.shape == (8, Qw, 64)
    assert match[5, 0, 1] == model.word.match[5, 1 + Qw]
    # BM of element (0, 0) is the k = 1 entry, stored at k - 1 = 0 as HMMER does
    assert tsc[0, 0, 0] == model.word.tsc[3, 0]


def test_pack_lanes_little_endian():
    x = np.arange(2 * 128, dtype=np.uint8).reshape(1, 2, 128)
    packed = layout.pack_lanes(x)
    assert packed.shape == (1, 2, 32) and packed.dtype == np.uint32
    assert packed[0, 0, 1] == 4 | (5 << 8) | (6 << 16) | (7 << 24)
    w = np.array([[[-32768, 5] * 32]], dtype=np.int16)
    pw = layout.pack_lanes(w)
    assert pw[0, 0, 0] == 0x8000 | (5 << 16)


def filters_spec(M: int, **defines) -> dict:
    """filters.cu's defines for model size M: QB / QW of the task kernels, ``defines`` over them."""
    return {"MODEL_M": M, "QB": layout.n_vectors(M, 128), "QW": layout.n_vectors(M, 64), **defines}


#: model sizes of the plain build (the task kernels' QB / QW and the warp kernels' defaults)
PROFILE_SIZES = [83, 178, 400, 1203]

#: warp-kernel define sets compile-checked (every variant the backends or the driver launch)
VARIANT_DEFINES = [
    {"GROUP": 32, "SIMD16": 0, "PREFETCH": 0, "LAZY_XE": 0, "VF_DPX": 0, "PROFILE_SMEM": 0},
    {"GROUP": 8, "SIMD16": 1, "PREFETCH": 1, "LAZY_XE": 1, "VF_DPX": 1, "PROFILE_SMEM": 0},
    {"GROUP": 16, "SIMD16": 0, "PREFETCH": 1, "LAZY_XE": 0, "VF_DPX": 0, "PROFILE_SMEM": 1},
    {"GROUP": 32, "SIMD16": 1, "PREFETCH": 0, "LAZY_XE": 1, "VF_DPX": 1, "PROFILE_SMEM": 1},
    {"GROUP": 16, "SIMD16": 1, "PREFETCH": 1, "LAZY_XE": 1, "VF_DPX": 1, "VF_NTSC_ALU": 0},
    {"GROUP": 8, "SIMD16": 1, "PREFETCH": 1, "LAZY_XE": 1, "VF_DPX": 1, "VF_NTSC_ALU": 1},
]
VARIANT_SIZES = [100, 1203, 2400]


def variant_spec(M: int, variant: int) -> dict:
    d = VARIANT_DEFINES[variant]
    QB = layout.n_vectors(M, d["GROUP"] * (2 if d["SIMD16"] else 4), min_q=1)
    return {**d, "MODEL_M": M, "QB": QB, "QW": layout.n_vectors(M, 64)}


#: SSV/MSV of several models per launch (warp.h's MODELS, --batch-models)
BATCHED_DEFINES = [
    {"MODELS": 4, "GROUP": 8, "SIMD16": 1, "PREFETCH": 1, "LAZY_XE": 1, "QB": 7},
    {"MODELS": 2, "GROUP": 32, "SIMD16": 0, "PREFETCH": 0, "LAZY_XE": 0, "QB": 2,
     "PROFILE_SMEM": 1}]

#: every filters.cu specialization compile-checked, in one list: the plain builds, the warp
#: variants per size, the batched builds
FILTER_SPECS = ([filters_spec(M) for M in PROFILE_SIZES]
                + [variant_spec(M, v) for v in range(len(VARIANT_DEFINES)) for M in VARIANT_SIZES]
                + [{"MODEL_M": 138, "QW": 3, **d} for d in BATCHED_DEFINES])
#: filters.cu's kernels and its ``extern __shared__`` array (renamed per specialization)
FILTER_RENAMED = tuple(KERNELS) + ("smem_profile",)


@pytest.fixture(scope="module")
def filter_builds(tmp_path_factory):
    """Per FILTER_SPECS entry, the kernels of KERNELS that ptxas compiled (its ``-v`` log names
    the entry) and the cubin holds; the specializations through one nvcc call per CPU
    (helpers.nvcc_batch: the CUDA headers parsed once per call; ptxas once per distinct entry,
    e.g. the task kernels of warp variants at one QB), None for those of a call that failed."""
    folder = tmp_path_factory.mktemp("filters")
    n = os.cpu_count() or 2
    size = -(-len(FILTER_SPECS) // n)

    def build(lo):
        mine = FILTER_SPECS[lo:lo + size]
        proc, cubin, entries = nvcc_batch.compile_distinct("profile/filters.cu", mine,
                                                           FILTER_RENAMED, KERNELS, folder,
                                                           first=lo)
        if proc.returncode != 0:
            return [None] * len(mine)
        blob = cubin.read_bytes()
        return [{k for k in KERNELS if entries[k, i][1] is not None
                 and entries[k, i][0].encode() in blob} for i in range(lo, lo + len(mine))]
    with ThreadPoolExecutor(max_workers=n) as pool:
        return [r for part in pool.map(build, range(0, len(FILTER_SPECS), size)) for r in part]


def built_alone(spec: dict, tmp_path) -> bytes:
    """filters.cu at ``spec`` in its own nvcc call (the failure then names this define set)."""
    out = tmp_path / "pf.cubin"
    proc = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(out),
                           *[f"-D{k}={v}" for k, v in spec.items()], *INCLUDES, SOURCE],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out.read_bytes()


def check_filter_build(spec: dict, builds: list, tmp_path, kernels=KERNELS) -> None:
    """ptxas compiled each of ``kernels`` of this specialization, built beside the others;
    where that call failed, built alone (and then failed: it builds alone, not beside)."""
    got = builds[FILTER_SPECS.index(spec)]
    if got is None:
        blob = built_alone(spec, tmp_path)
        for name in kernels:
            assert name.encode() in blob
        pytest.fail(f"filters.cu {spec}: builds alone, not beside the other specializations")
    assert set(kernels) <= got, (spec, sorted(got))


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA kernels not compile-checked")
@pytest.mark.parametrize("M", PROFILE_SIZES)
def test_profile_kernels_compile_sm90(M, filter_builds, tmp_path):
    check_filter_build(filters_spec(M), filter_builds, tmp_path)


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA kernels not compile-checked")
@pytest.mark.parametrize("M", VARIANT_SIZES)
@pytest.mark.parametrize("variant", range(len(VARIANT_DEFINES)))
def test_warp_variants_compile_sm90(M, variant, filter_builds, tmp_path):
    check_filter_build(variant_spec(M, variant), filter_builds, tmp_path)


GENERIC_SPECS = [{"MODEL_M": M, "THREADS": threads, "FORWARD": forward}
                 for threads in (32, 128) for forward in (0, 1) for M in (83, 400, 1203)]


@pytest.fixture(scope="module")
def generic_builds(tmp_path_factory):
    """ptxas' log of generic_dp per GENERIC_SPECS entry, the specializations through one nvcc
    call per CPU (helpers.nvcc_batch); None for those of a call that failed."""
    return nvcc_batch.compile_each("profile/generic.cu", GENERIC_SPECS, ("generic_dp",),
                                   "generic_dp", tmp_path_factory.mktemp("generic"))


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA kernels not compile-checked")
@pytest.mark.parametrize("M", [83, 400, 1203])
@pytest.mark.parametrize("forward", [0, 1])
@pytest.mark.parametrize("threads", [32, 128])
def test_generic_kernel_compiles_sm90(M, forward, threads, generic_builds, tmp_path):
    """One warp per block (no barriers) and several (one barrier per row). Built beside the
    other specializations; where that call failed, alone (the failure names this one)."""
    d = {"MODEL_M": M, "THREADS": threads, "FORWARD": forward}
    log = generic_builds[GENERIC_SPECS.index(d)]
    if log is None:
        src = str(REPO / "kernels_cuda" / "profile" / "generic.cu")
        out = tmp_path / "g.cubin"
        proc = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(out), f"-DMODEL_M={M}",
                               f"-DTHREADS={threads}", f"-DFORWARD={forward}", *INCLUDES, src],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert b"generic_dp" in out.read_bytes()
        pytest.fail(f"generic.cu {d}: builds alone, not beside the other specializations")
    assert "registers" in log, log        # ptxas compiled this specialization's generic_dp


def walk_generic(model, codes, forward: bool) -> float:
    """The generic kernel's recursion over its own tables, serially in float64 (no scaling,
    no loop factored out): M, I from the previous row, D along the row, the specials."""
    msc, isc, tr = (a.astype(np.float64) for a in layout.generic_tables(model, forward))
    BM, MM, IM, DM, MI, II, MD, DD = tr[:, :model.M]
    add = np.add if forward else np.maximum
    mul = np.multiply if forward else np.add
    zero, one = (0.0, 1.0) if forward else (-np.inf, 0.0)
    conv = np.exp if forward else float
    lp, mv = (conv(float(a[0])) for a in model.specials(np.array([len(codes)])))
    eL, eM = conv(float(model.e_loop)), conv(float(model.e_move))
    M = model.M
    Mr, Ir, Dr = (np.full(M, zero) for _ in range(3))
    xN, xJ, xC, xB = one, zero, zero, mv
    with np.errstate(divide="ignore", invalid="ignore"):
        for x in codes:
            sv = mul(xB, BM)
            sv[1:] = add.reduce([sv[1:], mul(Mr[:-1], MM[1:]), mul(Ir[:-1], IM[1:]),
                                 mul(Dr[:-1], DM[1:])])
            sv = mul(sv, msc[x])
            Ir = mul(add(mul(Mr, MI), mul(Ir, II)), isc[x])
            Dr = np.full(M, zero)
            for j in range(1, M):
                Dr[j] = add(mul(Dr[j - 1], DD[j]), mul(sv[j - 1], MD[j]))
            Mr = sv
            E = add.reduce(np.concatenate([sv, Dr]))
            xJ = add(mul(xJ, lp), mul(E, eL))
            xC = add(mul(xC, lp), mul(E, eM))
            xN = mul(xN, lp)
            xB = mul(add(xN, xJ), mv)
    end = mul(xC, mv)
    return float(np.log(end) if forward else end)


@pytest.mark.parametrize("forward", [False, True], ids=["viterbi", "forward"])
def test_generic_tables_reproduce_reference_recursion(hmm_and_model, forward):
    """The kernel's tables (log-odds; Forward: odds), walked serially in float64, give the
    reference's score."""
    from cpu_reference.profile import generic as pg
    _, model = hmm_and_model
    seqs = datasets.load_proteome().subset([0, 5])
    ref = (pg.generic_forward if forward else pg.generic_viterbi)(model, seqs)
    for n in range(len(seqs)):
        assert abs(walk_generic(model, seqs.codes(n), forward) - ref[n]) < 1e-6


def test_cuda_profile_backends_registered():
    from hmmbench import registry
    every = {b.name: b for b in registry.discover("profile")}
    for name in ("profile-cuda-task", "profile-cuda-warp", "profile-cuda-cudampf",
                 "profile-cuda-ganesan"):
        b = every[name]
        assert b.api == "cuda" and b.workload == "profile"
        reason = b.unavailable_reason()
        assert reason is None or isinstance(reason, str)


def test_cuda_profile_runs_on_gpu_when_present():
    from hmmbench import registry
    from hmmbench.profile.job import ProfileSearch
    from cpu_reference.profile import filters as pf
    every = {b.name: b for b in registry.discover("profile")}
    if every["profile-cuda-warp"].unavailable_reason():
        pytest.skip(every["profile-cuda-warp"].unavailable_reason())
    path = [p for p in datasets.model_files() if p.endswith("PF02826.hmm")][0]
    hmm = datasets.read_hmms(path)[0]
    model = ProfileModel.from_hmm(hmm)
    seqs = datasets.load_proteome()
    ref = {"ssv": pf.ssv_filter(model, seqs)}
    ref["msv"] = pf.msv_filter(model, seqs, ref["ssv"])
    ref["vf"] = pf.viterbi_filter(model, seqs)
    for name in ("profile-cuda-task", "profile-cuda-warp", "profile-cuda-cudampf"):
        for kind in ("ssv", "msv", "vf"):
            got = every[name].run(ProfileSearch(model, seqs, kind, hmm)).log10
            want = ref[kind].astype(np.float64)
            assert ((got == want) | (np.isnan(got) & np.isnan(want))).all(), (name, kind)
    sub = seqs.subset(range(0, len(seqs), 20))
    from cpu_reference.profile import generic as pg
    for kind, fn, tol in (("viterbi", pg.generic_viterbi, 1e-3), ("forward", pg.generic_forward, 1e-2)):
        got = every["profile-cuda-ganesan"].run(ProfileSearch(model, sub, kind, hmm)).log10
        assert np.max(np.abs(got - fn(model, sub))) < tol, kind


def odd_sequences():
    """Length 1, degenerate residues (codes 21..26: B J Z O U X), '*' (27), a long one, and
    proteome proteins (for SSV/MSV overflows and J-state rows)."""
    from hmmbench.profile.model import SequenceSet
    rng = np.random.default_rng(5)
    parts = [np.array([3], np.uint8), np.array([27], np.uint8), np.array([26], np.uint8),
             rng.integers(21, 28, 50).astype(np.uint8),
             np.where(rng.random(400) < 0.2, rng.integers(21, 28, 400),
                      rng.integers(0, 20, 400)).astype(np.uint8),
             rng.integers(0, 20, 3000).astype(np.uint8)]
    prot = datasets.load_proteome()
    parts += [prot.codes(i) for i in range(0, len(prot), 7)]
    offs = np.zeros(len(parts) + 1, np.int64)
    np.cumsum([p.size for p in parts], out=offs[1:])
    return SequenceSet([f"odd{i}" for i in range(len(parts))], np.concatenate(parts), offs)


def sampled_model(M: int, seed: int):
    abc = pyhmmer.easel.Alphabet.amino()
    hmm = pyhmmer.plan7.HMM.sample(abc, M, pyhmmer.easel.Randomness(seed))
    hmm.name = f"sampled-{M}".encode()
    return hmm, ProfileModel.from_hmm(hmm)


#: the warp-kernel variants checked on the GPU (CUDAMPF_VARIANT / TUNED_VARIANT and ablations)
GPU_VARIANTS = [
    {"group": 32, "simd16": 0, "prefetch": 0, "smem": 0, "lazy": 0, "vf_dpx": 0},
    {"group": None, "simd16": 1, "prefetch": 1, "smem": 0, "lazy": 1, "vf_dpx": 1},
    {"group": 8, "simd16": 1, "prefetch": 1, "smem": 1, "lazy": 0, "vf_dpx": 0},
    {"group": 16, "simd16": 0, "prefetch": 1, "smem": 0, "lazy": 1, "vf_dpx": 1, "vf_ntsc_alu": 1},
    {"group": 32, "simd16": 1, "prefetch": 0, "smem": 1, "lazy": 1, "vf_dpx": 1, "vf_ntsc_alu": 0},
]


@pytest.mark.parametrize("M", [60, 300, 1100])
def test_every_warp_variant_on_gpu_matches_reference(M):
    """Each warp variant x several model sizes (incl. M > 1024) on odd sequences and proteome
    proteins, and on an empty set, against profile-numpy (skips without a GPU)."""
    from hmmbench.profile.device.cuda import CudaProfile
    from hmmbench.profile.job import ProfileSearch
    from cpu_reference.profile import filters as pf
    probe = CudaProfile("probe", "warp", warp=True)
    if probe.unavailable_reason():
        pytest.skip(probe.unavailable_reason())
    hmm, model = sampled_model(M, seed=M)
    seqs = odd_sequences()
    ref = {"ssv": pf.ssv_filter(model, seqs)}
    ref["msv"] = pf.msv_filter(model, seqs, ref["ssv"])
    ref["vf"] = pf.viterbi_filter(model, seqs)
    empty = seqs.subset([])
    for i, variant in enumerate(GPU_VARIANTS):
        backend = CudaProfile(f"variant{i}", "warp", warp=True, variant=variant)
        for kind in ("ssv", "msv", "vf"):
            got = backend.run(ProfileSearch(model, seqs, kind, hmm)).log10
            want = ref[kind].astype(np.float64)
            ok = (got == want) | (np.isnan(got) & np.isnan(want))
            assert ok.all(), (variant, kind, np.flatnonzero(~ok)[:10])
            assert backend.run(ProfileSearch(model, empty, kind, hmm)).log10.size == 0


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA kernels not compile-checked")
def test_stage_kernels_compile_sm90(tmp_path):
    """The pipeline's stage decisions and compaction (kernels_common/profile/stages.h) and the
    scores finished on the device (finish.h) at the backends' defines."""
    from hmmbench.profile.device.cuda import STAGE_DEFINES
    src = str(REPO / "kernels_cuda" / "profile" / "stages.cu")
    out = tmp_path / "s.cubin"
    flags = [f"-D{k}={v}" for k, v in STAGE_DEFINES.items()]
    proc = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(out), *flags, *INCLUDES,
                           src], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    blob = out.read_bytes()
    for name in ("stage_classify", "stage_count", "stage_scan", "stage_scatter", "finish_ssv",
                 "finish_msv", "finish_vf", "gather_u8", "gather_i16"):
        assert name.encode() in blob


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA kernels not compile-checked")
def test_bias_kernel_compiles_without_contraction(tmp_path):
    """The bias filter's Forward and the decisions after it (kernels_cuda/profile/bias.cu):
    their float32 arithmetic stays separate roundings (mul.rn / add.rn, which ptxas never
    fuses; no fma.f32), as HMMER's and the reference's; the bits' division in double."""
    src = str(REPO / "kernels_cuda" / "profile" / "bias.cu")
    out = tmp_path / "b.ptx"
    proc = subprocess.run([NVCC, "-arch=sm_90", "-ptx", "-O3", "-o", str(out), *INCLUDES, src],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    ptx = out.read_text()
    for name in ("bias_forward", "bias_decide", "vf_decide"):
        assert f".entry {name}(" in ptx
    assert "div.rn.f64" in ptx and "sub.rn.f32" in ptx
    assert "mul.rn.f32" in ptx and "add.rn.f32" in ptx and "div.rn.f32" in ptx
    assert "fma.rn.f32" not in ptx and ".ftz.f32" not in ptx


SHIPPED = datasets.shipped_models() if datasets.pyhmmer_data_dir() else []


@pytest.mark.parametrize("spec", SHIPPED, ids=[s.name for s in SHIPPED])
def test_cuda_pipeline_on_gpu_matches_reference_and_pyhmmer(spec, proteome, block):
    """Kind pipeline on the GPU (skips without one): per-stage pass counts identical to pyhmmer's
    Pipeline with its bias filter on (its default) and off, every shipped protein model x the
    proteome, the outcome per sequence (stage reached, Forward nats) within 0.01 of the NumPy
    reference pipeline; the bias filter's Forward from the device kernel bit for bit the
    reference's on every MSV survivor."""
    from cpu_reference.profile import bias
    from hmmbench.apis.cuda_timing import EventTimer
    from hmmbench import registry
    from hmmbench.profile import pipeline as pl
    from hmmbench.profile.job import ProfileSearch
    every = {b.name: b for b in registry.discover("profile")}
    if every["profile-cuda-warp"].unavailable_reason():
        pytest.skip(every["profile-cuda-warp"].unavailable_reason())
    seqs = proteome
    model, hmm = spec.load()
    for bias_filter in (True, False):
        theirs = pl.pyhmmer_pass_counts(hmm, block, bias_filter).as_dict()
        counts, stage, fwd = pl.run_stages(model, seqs, bias_filter=bias_filter)
        assert counts.as_dict() == theirs, spec.name
        want = pl.outcome(stage, fwd)
        names = ("profile-cuda-warp",) if spec.name.startswith("RREFam/") else (
            "profile-cuda-warp", "profile-cuda-task", "profile-cuda-cudampf")
        for name in names:
            job = ProfileSearch(model, seqs, "pipeline", hmm, database="proteome",
                                bias_filter=bias_filter)
            ex = every[name].run(job)
            assert ex.info["pass_counts"] == theirs, (name, spec.name, bias_filter)
            assert np.max(np.abs(ex.log10 - want)) < 1e-2, (name, spec.name, bias_filter)
            if not bias_filter:
                continue
            assert ex.info["bias_forward"] == ex.info["bias_decision"] == "device"
            surv = np.flatnonzero(stage != 0)              # past MSV: what the kernel scored
            dev = every[name].device()
            dev.begin(EventTimer())
            dev.db = dev.resident.get(job)[0]
            try:
                got = dev.bias_forward_scores()[surv]
            finally:
                dev.db = None
                dev.end()
            ref = bias.filter_forward(model.M, model.composition, model.background, seqs, surv)
            assert np.array_equal(got, ref), (name, spec.name, np.flatnonzero(got != ref)[:5])


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA kernels not compile-checked")
def test_order_kernels_compile_sm90(tmp_path):
    """The launch order sorted on the device (kernels_cuda/profile/order.cu)."""
    from hmmbench.profile.device.cuda_resident import ORDER_THREADS, ORDER_TILE
    src = str(REPO / "kernels_cuda" / "profile" / "order.cu")
    out = tmp_path / "o.cubin"
    proc = subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(out),
                           f"-DORDER_TILE={ORDER_TILE}", f"-DORDER_THREADS={ORDER_THREADS}",
                           src], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    for name in (b"order_count", b"order_scan", b"order_place"):
        assert name in out.read_bytes()


def _lengths_cases():
    """Length arrays the device order must sort like the host: the proteome, one sequence, a
    partial and an exact last tile, a single length, many distinct lengths (up to the limit),
    ties everywhere."""
    from hmmbench.profile.device.cuda_resident import ORDER_MAX_CLASSES, ORDER_TILE
    rng = np.random.default_rng(5)
    yield "proteome", datasets.load_proteome().lengths
    yield "one", np.array([7])
    yield "partial tile", rng.integers(1, 50, ORDER_TILE + 3)
    yield "exact tiles", rng.integers(1, 3000, 3 * ORDER_TILE)
    yield "one length", np.full(10_000, 250)
    yield "most classes", np.concatenate([np.arange(1, ORDER_MAX_CLASSES + 1),
                                          rng.integers(1, ORDER_MAX_CLASSES + 1, 50_000)])
    yield "few lengths, ties", rng.choice([5, 900, 33_000], 70_000)


def test_device_launch_order_is_the_host_order_on_gpu():
    """The launch order computed on the device equals host.launch_order (stable: ties in index
    order) on every case; the resident database holds it and downloads it only when asked."""
    from hmmbench.apis import cuda as glue
    if glue.unavailable_reason():
        pytest.skip(glue.unavailable_reason())
    from hmmbench.profile.device import cuda_resident as pcuda
    from hmmbench.profile.device.host import launch_order
    from hmmbench.profile.model import SequenceSet
    for name, L in _lengths_cases():
        offs = np.zeros(len(L) + 1, np.int64)
        np.cumsum(L, out=offs[1:])
        seqs = SequenceSet([str(i) for i in range(len(L))], np.zeros(offs[-1], np.uint8), offs)
        cache = pcuda.resident_cache()
        db, load = cache.get_seqs(seqs, "db")
        assert db.order is None, name                     # nothing sorted on the host
        assert np.array_equal(db.host_order(), launch_order(seqs)), name
        assert load["prep"] > 0
        cache.clear()


def test_upload_pinned_in_place_on_gpu():
    """On the GPU: a large array is page-locked in place chunk by chunk (the driver accepts
    every chunk, the first not on a page bound), arrives bit for bit, stays locked while the
    database is resident (the driver refuses to lock its pages again) and is unlocked when
    the database is dropped (then it can be locked again)."""
    from hmmbench.apis import cuda as glue
    if glue.unavailable_reason():
        pytest.skip(glue.unavailable_reason())
    from hmmbench.profile.device import cuda_resident as pcuda
    drv = glue.driver()
    rng = np.random.default_rng(5)
    raw = rng.integers(0, 256, 3 * pcuda.PIN_CHUNK + 12_346, dtype=np.uint8)[1:]
    stream = drv.Stream()
    dev = drv.mem_alloc(raw.nbytes)
    locked, head = pcuda.pin_and_copy(drv, raw, dev, stream)
    stream.synchronize()
    assert head == raw.nbytes and len(locked) == 4 and locked[0] == raw.ctypes.data
    assert not glue.host_register(raw.ctypes.data + raw.nbytes // 2, 4096)   # locked already
    back = np.empty_like(raw)
    drv.memcpy_dtoh(back, dev)
    assert np.array_equal(back, raw)
    assert all(glue.host_unregister(p) for p in locked)
    bufs, seconds, unpin = pcuda.upload_database({"residues": raw, "small": raw[:1000].copy()})
    back[:] = 0
    drv.memcpy_dtoh(back, bufs["residues"])
    assert np.array_equal(back, raw) and seconds["h2d"] > 0
    assert not glue.host_register(raw.ctypes.data, 4096)
    unpin()
    assert glue.host_register(raw.ctypes.data, raw.nbytes)
    assert glue.host_unregister(raw.ctypes.data)


@pytest.mark.skipif(NVCC is None, reason="nvcc not found: CUDA kernels not compile-checked")
@pytest.mark.parametrize("defines", BATCHED_DEFINES)
def test_batched_warp_kernels_compile_sm90(defines, filter_builds, tmp_path):
    """SSV/MSV of several models per launch (warp.h's MODELS, --batch-models)."""
    check_filter_build({"MODEL_M": 138, "QW": 3, **defines}, filter_builds, tmp_path,
                       ("ssv_xe_warp", "msv_xj_warp"))


def test_batched_models_on_gpu_equal_each_model_alone():
    """Batches of 2, 4 and 8 RREFam models (different M) through profile-cuda-warp and
    profile-cuda-cudampf on every 3rd protein of the proteome, each model's scores identical to
    profile-numpy's (skips without a GPU)."""
    from hmmbench.profile.reference import NumpyProfile
    from hmmbench import registry
    from hmmbench.profile.job import ProfileBatch, ProfileSearch
    every = {b.name: b for b in registry.discover("profile")}
    if every["profile-cuda-warp"].unavailable_reason():
        pytest.skip(every["profile-cuda-warp"].unavailable_reason())
    seqs = datasets.load_proteome().subset(range(0, 2100, 3))       # 700 proteins
    specs = sorted(datasets.resolve_models("RREFam"), key=lambda s: s.M)
    loaded = [s.load() for s in specs]
    ref = NumpyProfile()
    for kind in ("ssv", "msv"):
        want = {s.name: ref.run(ProfileSearch(m, seqs, kind, h)).log10
                for s, (m, h) in zip(specs, loaded)}
        for group in ([0, 9], [0, 3, 6, 9], list(range(8))):
            parts = [ProfileSearch(loaded[i][0], seqs, kind, loaded[i][1], database="prot/3")
                     for i in group]
            names = tuple(specs[i].name for i in group)
            for name in ("profile-cuda-warp", "profile-cuda-cudampf"):
                got = every[name].run(ProfileBatch(parts, names, database="prot/3")).log10
                for k, s in enumerate(names):
                    part = got[k * len(seqs):(k + 1) * len(seqs)]
                    assert np.array_equal(part, want[s], equal_nan=True), (name, kind, s)
