"""The CUDA warp kernels' algorithms (kernels_cuda/profile_filters.cu *_warp), emulated element by
element in NumPy on the same striped layouts, against the reference (no GPU needed).

Each packed SIMD-in-a-register op acts per element (__vaddus4/__vsubus4: unsigned saturating
bytes; __vaddss2: signed saturating int16; __vmax*: per element), so an element-level emulation
runs the kernels' exact control flow: the one-element warp shift between striped vectors, the
vector loop order, the warp reductions and the lazy-F D->D passes with their early exit.
"""
import numpy as np
import pytest

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from hmmbench.profile import datasets, layout  # noqa: E402
from cpu_reference import profile_filters as pf  # noqa: E402

NEG = -32768
DD_PASSES = {"rows": 0, "extra": 0}      # how often the emulated lazy-F branch ran


def sat_u8(x):
    return np.clip(x, 0, 255)


def sat_s16(x):
    return np.clip(x, NEG, 32767)


def shift(v, fill):
    out = np.empty_like(v)
    out[0] = fill
    out[1:] = v[:-1]
    return out


def ssv_xe_warp(cost, codes, bias):
    Q = cost.shape[1]
    dp = np.zeros((Q, cost.shape[2]), np.int64)
    xEv = np.zeros(cost.shape[2], np.int64)
    for x in codes:
        mpv = shift(dp[Q - 1], 0)
        for q in range(Q):
            sv = sat_u8(sat_u8(mpv + bias) - cost[x, q])
            xEv = np.maximum(xEv, sv)
            mpv = dp[q].copy()
            dp[q] = sv
    return 128 + int(xEv.max())


def msv_xj_warp(cost, codes, bias, base, tec, jbm):
    Q = cost.shape[1]
    dp = np.zeros((Q, cost.shape[2]), np.int64)
    xJ, xB = 0, max(base - jbm, 0)
    for x in codes:
        mpv = shift(dp[Q - 1], 0)
        xEv = np.zeros(cost.shape[2], np.int64)
        for q in range(Q):
            sv = sat_u8(sat_u8(np.maximum(mpv, xB) + bias) - cost[x, q])
            xEv = np.maximum(xEv, sv)
            mpv = dp[q].copy()
            dp[q] = sv
        xE = int(xEv.max())
        if xE + bias >= 255:
            return -1
        xE = max(xE - tec, 0)
        xJ = max(xJ, xE)
        xB = max(max(base, xJ) - jbm, 0)
    return xJ


def vf_xc_warp(match, tsc, codes, base, e_loop, e_move, ddbound, mv):
    Q, W = match.shape[1], match.shape[2]
    M_ = np.full((Q, W), NEG, np.int64)
    I_, D_ = M_.copy(), M_.copy()
    xN = base
    xB, xJ, xC = xN + mv, NEG, NEG
    for x in codes:
        mpv, dpv, ipv = shift(M_[Q - 1], NEG), shift(D_[Q - 1], NEG), shift(I_[Q - 1], NEG)
        dcv = np.full(W, NEG, np.int64)
        xEv, Dmaxv = dcv.copy(), dcv.copy()
        for q in range(Q):
            sv = sat_s16(xB + tsc[0, q])
            sv = np.maximum(sv, sat_s16(mpv + tsc[1, q]))
            sv = np.maximum(sv, sat_s16(ipv + tsc[2, q]))
            sv = np.maximum(sv, sat_s16(dpv + tsc[3, q]))
            sv = sat_s16(sv + match[x, q])
            xEv = np.maximum(xEv, sv)
            mpv, dpv, ipv = M_[q].copy(), D_[q].copy(), I_[q].copy()
            M_[q] = sv
            D_[q] = dcv
            dcv = sat_s16(sv + tsc[4, q])
            Dmaxv = np.maximum(Dmaxv, dcv)
            I_[q] = np.maximum(sat_s16(mpv + tsc[5, q]), sat_s16(ipv + tsc[6, q]))
        xE = int(xEv.max())
        if xE >= 32767:
            return 32768
        xC = max(xC, xE + e_move)
        xJ = max(xJ, xE + e_loop)
        xB = max(xJ + mv, xN + mv)
        Dmax = int(Dmaxv.max())
        dcv = shift(dcv, NEG)
        if Dmax + ddbound > xB:
            DD_PASSES["rows"] += 1
            for q in range(Q):
                D_[q] = np.maximum(dcv, D_[q])
                dcv = sat_s16(D_[q] + tsc[7, q])
            again = True
            while again:
                dcv = shift(dcv, NEG)
                q = 0
                while q < Q:
                    if not (dcv > D_[q]).any():
                        break
                    D_[q] = np.maximum(dcv, D_[q])
                    dcv = sat_s16(D_[q] + tsc[7, q])
                    q += 1
                again = q == Q
                DD_PASSES["extra"] += int(again)
        else:
            D_[0] = dcv
    return xC


MODELS = datasets.load_models() if datasets.pyhmmer_data_dir() else []
PICK = [m for m in MODELS if m.name in ("2-Hacid_dh_C", "LuxC", "Thiaglutamate_B_RRE")]


@pytest.fixture(scope="module")
def sample():
    seqs = datasets.load_proteome()
    # short and long proteins, plus some with SSV/MSV overflows for these models
    return seqs.subset(list(range(0, 2100, 150)))


@pytest.mark.parametrize("model", PICK, ids=[m.name for m in PICK])
def test_warp_byte_kernels_match_reference(model, sample):
    bp = model.byte
    cost = layout.striped_bytes(model, 128).astype(np.int64)
    L = sample.lengths
    xe = np.array([ssv_xe_warp(cost, sample.codes(i), bp.bias) for i in range(len(sample))])
    np.testing.assert_array_equal(pf.ssv_from_xe(model, xe, L)[0], pf.ssv_filter(model, sample))
    jbm = (bp.tjb(L) + bp.tbm) & 0xFF
    xj = np.array([msv_xj_warp(cost, sample.codes(i), bp.bias, bp.base, bp.tec, int(jbm[i]))
                   for i in range(len(sample))])
    got = pf.msv_from_xj(model, np.maximum(xj, 0), xj < 0, L)
    want = np.concatenate([pf.msv_full(model, sample, [i]) for i in range(len(sample))])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("model", PICK, ids=[m.name for m in PICK])
def test_warp_vf_kernel_matches_reference(model, sample):
    wp = model.word
    match, tsc = (a.astype(np.int64) for a in layout.striped_words(model, 64))
    L = sample.lengths
    mv = wp.move(L).astype(np.int64)
    xc = np.array([vf_xc_warp(match, tsc, sample.codes(i), wp.base, wp.e_loop, wp.e_move,
                              wp.ddbound, int(mv[i])) for i in range(len(sample))])
    got = pf.vf_from_xc(model, np.minimum(xc, 32767), xc > 32767, L)
    np.testing.assert_array_equal(got, pf.viterbi_filter(model, sample))
    assert DD_PASSES["rows"] > 0           # the D->D branch was exercised
