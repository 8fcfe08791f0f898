"""The generic Viterbi/Forward kernel (kernels_common/profile/generic.h) at its edges, on the
OpenCL twin (CPU here): Forward in probability space on sequences long enough that unscaled
float32 odds would overflow (tandem model-emitted hits: scores of thousands of nats) or lose
the N/C loop's rounding (35,000 residues), length-1 sequences, tiny models (M = 1, 2, 3), M not
a multiple of the work-group, M = 1203; work-groups of 32/64/128 with the scans in local memory
and on sub-group shuffles (the CUDA path's logic: warps of GN_WARP lanes), all within the kind's
tolerance of the float64 reference."""
import functools

import numpy as np
import pytest

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")
pytest.importorskip("pyopencl", reason="pyopencl not installed")

from hmmbench.profile import datasets  # noqa: E402
from hmmbench.profile.job import TOLERANCE, ProfileSearch  # noqa: E402
from hmmbench.profile.model import AMINO_K, ProfileModel, SequenceSet  # noqa: E402
from cpu_reference.profile import generic as pg  # noqa: E402

REFERENCE = {"viterbi": pg.generic_viterbi, "forward": pg.generic_forward}


@pytest.fixture(scope="module")
def backend():
    from hmmbench.profile.device.opencl import OpenCLGenericProfile
    b = OpenCLGenericProfile()
    if b.unavailable_reason():
        pytest.skip(b.unavailable_reason())
    yield b
    b.close()


def subgroup_size(b):
    """The sub-group size the shuffle path can ask for on this device (0: none)."""
    kit = b.runner().kit
    return kit.warp_width if kit.shuffle in ("khr", "intel") and kit.required_sub_group else 0


def scores(b, model, seqs, kind, threads=128, subgroup=0):
    r = b.runner()
    r.generic_threads, r.generic_subgroup = threads, subgroup
    try:
        return b.run(ProfileSearch(model, seqs, kind)).log10
    finally:
        r.generic_threads, r.generic_subgroup = 128, 0


def random_codes(rng, L):
    freq = datasets.background_frequencies()
    return rng.choice(AMINO_K, L, p=freq / freq.sum()).astype(np.uint8)


def emitted_codes(rng, hmm, L):
    """Tandem copies of the model's match states (residues drawn from its match emissions)
    between random linkers of 20 residues: one strong hit after another."""
    em = np.asarray(hmm.match_emissions)[1:, :AMINO_K]
    cdf = np.cumsum(em / em.sum(axis=1, keepdims=True), axis=1)
    out, n = [], 0
    while n < L:
        # a residue per match state by inverse CDF (one draw per state, all states at once)
        u = rng.random(len(cdf))
        out.append(np.minimum((u[:, None] >= cdf).sum(axis=1), AMINO_K - 1).astype(np.uint8))
        out.append(random_codes(rng, 20))
        n += len(cdf) + 20
    return np.concatenate(out)[:L]


def as_set(codes: list) -> SequenceSet:
    offs = np.zeros(len(codes) + 1, np.int64)
    np.cumsum([len(c) for c in codes], out=offs[1:])
    return SequenceSet([f"s{i}" for i in range(len(codes))], np.concatenate(codes), offs)


@functools.cache
def shipped(acc: str):
    hmm = next((h for p in datasets.model_files() for h in datasets.read_hmms(p)
                if acc in str(h.accession)), None)
    if hmm is None:
        pytest.skip(f"no {acc} model")
    return ProfileModel.from_hmm(hmm), hmm


#: float32 log-space Viterbi (kept as it was) adds small terms to values of hundreds of nats
#: row after row, so its drift grows with the score: on tandem hits of 750+ nats it leaves
#: 1e-3 (the old kernel: 0.01 at 750 nats, 1.5 at 8,400); Forward in probability space does not
VITERBI_CHECKED_BELOW = 200.0


def check(b, model, seqs, refs=None, **launch) -> dict:
    """Both kinds within their tolerance (Viterbi where its score is below
    VITERBI_CHECKED_BELOW); every score finite. The reference scores by kind (``refs``: those
    of an earlier check of the same model and sequences, else computed here)."""
    refs = {} if refs is None else refs
    for kind in ("viterbi", "forward"):
        got = scores(b, model, seqs, kind, **launch)
        if kind not in refs:
            refs[kind] = REFERENCE[kind](model, seqs)
        want = refs[kind]
        assert np.isfinite(got).all(), kind
        sel = want < VITERBI_CHECKED_BELOW if kind == "viterbi" else slice(None)
        err = np.abs(got - want)[sel]
        assert err.size and err.max() <= TOLERANCE[kind], (kind, err.max())
    return refs


def test_forward_long_sequences_scaled_not_overflowing(backend):
    """5,000 and 35,000 residues, random and model-emitted: the emitted ones score thousands
    of nats (e^1000 is far past float32), the random ones drift with the length model."""
    model, hmm = shipped("PF02826")
    rng = np.random.default_rng(3)
    seqs = as_set([random_codes(rng, 5000), emitted_codes(rng, hmm, 5000),
                   random_codes(rng, 35000), emitted_codes(rng, hmm, 35000)])
    want = check(backend, model, seqs)["forward"]
    assert want[3] > 5000 and abs(want[2]) < 100       # the check reached both regimes


@pytest.mark.parametrize("M", [1, 2, 3, 33, 129])
def test_small_models_and_partial_groups(backend, proteome, M):
    """Tiny models (most work-items own no position) and M not a multiple of the group."""
    model, _ = datasets.resolve_model(f"query-M{M}").load()
    prot = proteome
    rng = np.random.default_rng(M)
    sub = [prot.codes(i) for i in range(0, len(prot), 97)]
    check(backend, model, as_set(sub + [random_codes(rng, 1), np.array([3], np.uint8)]))


@pytest.mark.parametrize("threads", [32, 128])
def test_large_model(backend, proteome, threads):
    """M = 1203: 10 positions per work-item (the next row's emissions read ahead) and 38 (read
    in the row: GN_PREFETCH off)."""
    model, _ = datasets.resolve_model("query-M1203").load()
    prot = proteome
    rng = np.random.default_rng(5)
    seqs = as_set([prot.codes(i) for i in range(0, len(prot), 400)]
                  + [random_codes(rng, 1), random_codes(rng, 2000)])
    # the same sequences for both work-group sizes: their reference computed once
    key = (model.M, seqs.residues.tobytes(), seqs.offsets.tobytes())
    check(backend, model, seqs, _GROUP_REFS.setdefault(key, {}), threads=threads)


@pytest.mark.parametrize("threads", [16, 32, 64, 128])
@pytest.mark.parametrize("shuffle", [False, True], ids=["local", "subgroup"])
def test_group_sizes_and_shuffle_scans(backend, proteome, threads, shuffle):
    """The block sizes the CUDA launch can take, with the scans in local memory and on
    sub-group shuffles of this device's width (16 here): one warp per group (CUDA's barrier-free
    THREADS 32 path) and several (its one-barrier path)."""
    sg = subgroup_size(backend) if shuffle else 0
    if shuffle and not sg:
        pytest.skip("no required-size sub-groups on this OpenCL device")
    model, hmm = shipped("PF02826")
    rng = np.random.default_rng(16)
    seqs = as_set([proteome.codes(i) for i in range(0, len(proteome), 60)]
                  + [np.array([7], np.uint8), emitted_codes(rng, hmm, 3000)])
    # the same sequences for every group size and both scans: their reference computed once
    key = (model.M, seqs.residues.tobytes(), seqs.offsets.tobytes())
    check(backend, model, seqs, _GROUP_REFS.setdefault(key, {}), threads=threads, subgroup=sg)


_GROUP_REFS: dict = {}


def test_small_models_take_64_work_items_per_sequence():
    from hmmbench.profile.device.layout import GENERIC_THREADS, generic_threads
    assert [generic_threads(M) for M in (1, 100, 400, 512)] == [64] * 4
    assert [generic_threads(M) for M in (513, 1200, 2400)] == [GENERIC_THREADS] * 3
