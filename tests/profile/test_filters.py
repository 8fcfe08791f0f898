"""Profile workload: data model and SIMD-filter reference vs HMMER 3.4 (pyhmmer).

SSV and MSV filters: every shipped protein model x the whole 2,100-protein proteome, identical;
the Viterbi filter (the slow reference) on every 14th protein plus every protein on which some
shipped model's Viterbi filter overflows, the models' strongest hits and the longest protein,
identical. Generic Viterbi/Forward (float): every model x every 80th protein (a deterministic
subset: the float64 reference is the slow one), within the bars.
"""

import numpy as np
import pytest

pyhmmer = pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from hmmbench.profile import datasets  # noqa: E402
from hmmbench.profile.model import ProfileModel  # noqa: E402
from cpu_reference.profile import filters as pf  # noqa: E402
from helpers.profile_models import HMMS, IDS  # noqa: E402

VF_STRIDE = 14
#: proteins on which a shipped model's Viterbi filter overflows (KR: 9, 1208, 1218; 2-Hacid_dh_C:
#: 112, 828, 1210, 1471; Ranthipeptide_rSAM_RRE: 1666; no others in the proteome), each model's
#: three strongest hits, and the longest protein (2045, 4,560 residues)
VF_EDGES = (9, 112, 828, 1208, 1210, 1218, 1471, 1666,
            0, 54, 72, 335, 367, 380, 419, 433, 464, 468, 517, 545, 619, 709, 717, 719, 744, 821,
            954, 955, 1034, 1201, 1355, 1449, 1549, 1556, 1562, 1750, 1779, 1830, 1858, 1992,
            2045)
#: the models whose Viterbi filter overflows on some of VF_EDGES (the subset keeps the case)
VF_OVERFLOWS = ("KR", "2-Hacid_dh_C", "Ranthipeptide_rSAM_RRE")


def same(a, b):
    """Identical float32 scores, nan == nan (ENORESULT) and inf == inf (overflow)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    return (a == b) | (np.isnan(a) & np.isnan(b))






_PROFILES: dict = {}


def profile_of(hmm) -> ProfileModel:
    """The model's search profile, built once for every test of this file."""
    if id(hmm) not in _PROFILES:                     # HMMS holds the models for the session
        _PROFILES[id(hmm)] = ProfileModel.from_hmm(hmm)
    return _PROFILES[id(hmm)]


@pytest.fixture(scope="module")
def ssv_msv(proteome_msv):
    """The reference's SSV and MSV scores of a model on the whole proteome, computed once."""
    return lambda hmm: proteome_msv(profile_of(hmm))


def pyhmmer_optimized(hmm):
    abc = hmm.alphabet
    gm = pyhmmer.plan7.Profile(hmm.M, abc)
    gm.configure(hmm, pyhmmer.plan7.Background(abc), L=400)
    return gm.to_optimized()


def unstripe_bytes(om, M):
    rbv = np.asarray(om.rbv)
    nq = rbv.shape[1] // 16
    k = np.arange(1, M + 1)
    q, z = (k - 1) % nq, (k - 1) // nq
    return rbv[:, q * 16 + z]


def test_proteome_loaded(proteome):
    assert len(proteome) == 2100
    assert proteome.n_residues == 682583
    assert proteome.residues.max() <= 28
    assert (proteome.residues == 27).any()          # '*' codes are present and kept


def test_sequence_set_subset_and_padding(proteome):
    sub = proteome.subset([5, 0, 7])
    assert sub.names == [proteome.names[5], proteome.names[0], proteome.names[7]]
    np.testing.assert_array_equal(sub.codes(1), proteome.codes(0))
    pad = proteome.padded([0, 1], fill=99)
    assert pad.shape[1] == max(proteome.lengths[:2])
    short = int(np.argmin(proteome.lengths[:2]))
    assert (pad[short, proteome.lengths[short]:] == 99).all()


@pytest.mark.parametrize("hmm", [h for _, _, h in HMMS], ids=IDS)
def test_quantized_profile_matches_hmmer(hmm):
    model = profile_of(hmm)
    om = pyhmmer_optimized(hmm)
    bp = model.byte
    assert (bp.bias, bp.base, bp.tbm, bp.tec) == (om.bias_b, om.base_b, om.tbm, om.tec)
    assert np.float32(om.scale_b) == bp.scale and np.float32(om.scale_w) == model.word.scale
    np.testing.assert_array_equal(bp.cost, unstripe_bytes(om, hmm.M))
    assert model.word.ddbound == om.ddbound_w
    for L in (1, 100, 400, 4560):
        om.L = L
        assert int(bp.tjb(np.array([L]))[0]) == om.tjb


@pytest.mark.parametrize("entry", HMMS, ids=IDS)
def test_ssv_msv_identical_full_proteome(entry, block, ssv_msv):
    _, _, hmm = entry
    om = pyhmmer_optimized(hmm)
    ssv, msv = ssv_msv(hmm)
    want_ssv = np.empty(len(block), np.float32)
    want_msv = np.empty(len(block), np.float32)
    for i, seq in enumerate(block):
        om.L = len(seq)                             # length model reset per target
        want_ssv[i] = om.ssv_filter(seq)
        want_msv[i] = om.msv_filter(seq)
    bad = np.flatnonzero(~same(ssv, want_ssv))
    assert bad.size == 0, (bad[:5], ssv[bad[:5]], want_ssv[bad[:5]])
    bad = np.flatnonzero(~same(msv, want_msv))
    assert bad.size == 0, (bad[:5], msv[bad[:5]], want_msv[bad[:5]])
    assert not np.isnan(msv).any()


def test_overflow_paths_exercised(ssv_msv):
    """Some model x protein pairs overflow (inf) or need the full MSV (SSV nan)."""
    n_inf = n_nan = 0
    for _, _, hmm in HMMS[:4]:
        ssv, msv = ssv_msv(hmm)
        n_nan += int(np.isnan(ssv).sum())
        n_inf += int(np.isinf(msv).sum())
    assert n_inf > 0 and n_nan > 0



@pytest.mark.parametrize("entry", HMMS, ids=IDS)
def test_viterbi_filter_identical(entry, proteome, oracles):
    fname, j, hmm = entry
    sub = proteome.subset(sorted({*range(0, len(proteome), VF_STRIDE), *VF_EDGES}))
    model = profile_of(hmm)
    got = pf.viterbi_filter(model, sub)
    name = hmm.name.decode() if isinstance(hmm.name, bytes) else hmm.name
    assert np.isposinf(got).any() == (name in VF_OVERFLOWS), name
    want = oracles(fname).scores(j, [sub.codes(i) for i in range(len(sub))], kinds=("vf",))["vf"]
    bad = np.flatnonzero(~same(got, want))
    assert bad.size == 0, (bad[:5], got[bad[:5]], want[bad[:5]])


def test_generator_is_seeded_and_realistic():
    a = datasets.generate_proteins(200_000, seed=3)
    b = datasets.generate_proteins(200_000, seed=3)
    np.testing.assert_array_equal(a.residues, b.residues)
    assert a.n_residues >= 200_000 and a.residues.max() < 20
    assert 200 < np.median(a.lengths) < 450
    freq = np.bincount(a.residues, minlength=20) / a.n_residues
    np.testing.assert_allclose(freq, datasets.background_frequencies(), atol=0.005)


GENERIC_STRIDE = 80


@pytest.mark.parametrize("entry", HMMS, ids=IDS)
def test_generic_viterbi_forward_subset(entry, proteome, oracles):
    """Generic Viterbi within 1e-3 nats of p7_GViterbi; Forward within 0.01 nats of
    p7_GForward (whose table log-sum drifts a few 1e-3) and within 1e-4 of HMMER's SIMD
    p7_ForwardParser (the pipeline's Forward, computed without the table)."""
    from cpu_reference.profile import generic as pg
    fname, j, hmm = entry
    sub = proteome.subset(range(0, len(proteome), GENERIC_STRIDE))
    model = profile_of(hmm)
    gv = pg.generic_viterbi(model, sub)
    gf = pg.generic_forward(model, sub)
    want = oracles(fname).scores(j, [sub.codes(i) for i in range(len(sub))],
                                 kinds=("gv", "gf", "fp"))
    assert np.max(np.abs(gv - want["gv"])) < 1e-3
    assert np.max(np.abs(gf - want["gf"])) < 1e-2
    assert np.max(np.abs(gf - want["fp"])) < 1e-4
    assert np.all(gf >= gv - 1e-9)                 # sum over paths >= best path


def forward_cell_by_cell(model, codes) -> float:
    """p7_GForward's recursion (local multihit) one cell after another, in nats: the oracle of
    the reference's vectorized Forward."""
    from cpu_reference.profile.constants import T_BM, T_DD, T_DM, T_II, T_IM, T_MD, T_MI, T_MM
    lse = np.logaddexp.reduce
    M, t = model.M, model.tsc.astype(np.float64)
    msc, isc = model.match_scores.astype(np.float64), model.insert_scores.astype(np.float64)
    loop, move = (float(v[0]) for v in model.specials(np.array([len(codes)])))
    ninf = -np.inf
    Mp, Ip, Dp = [ninf] * (M + 1), [ninf] * (M + 1), [ninf] * (M + 1)
    xN, xB, xJ, xC = 0.0, move, ninf, ninf
    for x in codes:
        Mc, Ic, Dc = [ninf] * (M + 1), [ninf] * (M + 1), [ninf] * (M + 1)
        for k in range(1, M + 1):
            Mc[k] = msc[x, k] + lse([xB + t[T_BM, k - 1], Mp[k - 1] + t[T_MM, k - 1],
                                     Ip[k - 1] + t[T_IM, k - 1], Dp[k - 1] + t[T_DM, k - 1]])
            if k < M:
                Ic[k] = isc[x, k] + lse([Mp[k] + t[T_MI, k], Ip[k] + t[T_II, k]])
            if k > 1:
                Dc[k] = lse([Mc[k - 1] + t[T_MD, k - 1], Dc[k - 1] + t[T_DD, k - 1]])
        xE = lse(Mc[1:] + Dc[1:])
        xJ = np.logaddexp(xJ + loop, xE + float(model.e_loop))
        xC = np.logaddexp(xC + loop, xE + float(model.e_move))
        xN += loop
        xB = np.logaddexp(xN + move, xJ + move)
        Mp, Ip, Dp = Mc, Ic, Dc
    return xC + move


def test_generic_forward_across_delete_chain_stretches(proteome):
    """The reference's Forward takes the D->D chain as prefix sums over stretches of bounded
    tDD product (cut where tDD = 0): on a model whose D->D scores make many stretches and cut
    the chain, and on the model as shipped, it is the cell-by-cell recursion's."""
    from cpu_reference.profile import generic as pg
    from cpu_reference.profile.constants import T_DD, T_MD
    model = profile_of(next(h for _, _, h in HMMS if h.M < 100))
    tsc = model.tsc.copy()
    # D->D steps of -120, -125, -6 nats: a stretch ends at each -6 step (-251 nats in all),
    # which carries e^-6 of the chain into the next; the chain cut twice
    tsc[T_DD, 1:model.M] = np.resize([-120.0, -125.0, -6.0], model.M - 1)
    tsc[T_DD, 17] = tsc[T_DD, 40] = -np.inf
    tsc[T_MD, 1:model.M] = -0.5                                  # deletes that matter
    chains = ProfileModel(name="chains", M=model.M, match_scores=model.match_scores,
                          insert_scores=model.insert_scores, tsc=tsc)
    assert len(pg._dd_stretches(tsc[T_DD, 1:model.M].astype(np.float64))) >= 10
    seqs = proteome.subset([int(np.argmin(proteome.lengths)), 0, 54])
    for m in (chains, model):
        got = pg.generic_forward(m, seqs)
        want = [forward_cell_by_cell(m, seqs.codes(i)) for i in range(len(seqs))]
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


def test_bits_against_null_model():
    from cpu_reference.profile import generic as pg
    L = np.array([100, 1000])
    p1 = L / (L + 1.0)
    np.testing.assert_allclose(pg.null_score(L), L * np.log(p1) + np.log(1 - p1), rtol=1e-5)
    np.testing.assert_allclose(pg.bits(pg.null_score(L), L), 0.0, atol=1e-7)
