"""The CUDA warp kernels' algorithms (kernels_cuda/profile/filters.cu *_warp), emulated element by
element in NumPy on the same striped layouts, against the reference (no GPU needed).

Each packed SIMD-in-a-register op acts per element (__vaddus4/__vsubus4: unsigned saturating
bytes; __vaddss2: signed saturating int16; __vmax*: per element), so an element-level emulation
runs the kernels' exact control flow: the one-element warp shift between striped vectors, the
vector loop order, the warp reductions and the lazy-F D->D passes with their early exit.
"""
import numpy as np
import pytest

pytest.importorskip("pyhmmer", reason="pyhmmer not installed (pip install pyhmmer)")

from hmmbench.profile import datasets  # noqa: E402
from hmmbench.profile.device import layout  # noqa: E402
from cpu_reference.profile import filters as pf  # noqa: E402
from helpers.kernel_defines import value  # noqa: E402

NEG = value("profile/task.h", "NEG16")   # the kernels' int16 minus infinity
DD_PASSES = {"rows": 0, "extra": 0}      # how often the emulated lazy-F branch ran


# np.minimum / np.maximum, not np.clip: the same integers, without np.clip's per-call checks
# (most of the emulation's time on these short vectors)
def sat_u8(x):
    return np.minimum(np.maximum(x, 0), 255)


def sat_s16(x):
    return np.minimum(np.maximum(x, NEG), 32767)


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


def neg_floor_alu(t):
    """VF_NTSC_ALU / VF_NTSC_MASK's -32768 - t per int16 half: ~t + 0x8001, wrapping."""
    alu = ((~np.asarray(t).astype(np.int64).astype(np.uint16)).astype(np.int64) + 0x8001) % 65536
    return np.where(alu >= 32768, alu - 65536, alu)


def sat_add_dpx(a, b, alu=False):
    """VF_DPX's a + b for b <= 0 (``b``: a transition row, vf_xc_warp asserts b <= 0 of the
    whole table): max(a, -32768 - b) + b (no wrap, no saturation needed); with ``alu`` the
    floor -32768 - b computed as the kernel's ALU form instead of the table."""
    out = np.maximum(a, neg_floor_alu(b) if alu else -32768 - b) + b
    # the ufuncs' own reductions: ndarray.all()'s wrapper cost more than the add itself
    assert NEG <= np.minimum.reduce(out) and np.maximum.reduce(out) <= 32767
    return out


def emit_dpx(sv, e):
    """VF_DPX's saturating sv + e: min(max(sv, lo), hi) + e."""
    lo, hi = -32768 - np.minimum(e, 0), 32767 - np.maximum(e, 0)
    return np.minimum(np.maximum(sv, lo), hi) + e


def vf_row_ascending(M_, I_, D_, mpv, dpv, ipv, xB, tsc, e, add, emit):
    """The kernel's VF_ROW, vectors in ascending order (ROW_INPLACE=0): (dcv, xEv, Dmaxv)."""
    Q, W = M_.shape
    dcv = np.full(W, NEG, np.int64)
    xEv, Dmaxv = dcv.copy(), dcv.copy()
    for q in range(Q):
        sv = add(np.full(W, xB), tsc[0, q], 0)
        sv = np.maximum(sv, add(mpv, tsc[1, q], 1))
        sv = np.maximum(sv, add(ipv, tsc[2, q], 2))
        sv = np.maximum(sv, add(dpv, tsc[3, q], 3))
        sv = emit(sv, e[q])
        xEv = np.maximum(xEv, sv)
        mpv, dpv, ipv = M_[q].copy(), D_[q].copy(), I_[q].copy()
        M_[q] = sv
        D_[q] = dcv
        dcv = add(sv, tsc[4, q], 4)
        Dmaxv = np.maximum(Dmaxv, dcv)
        I_[q] = np.maximum(add(mpv, tsc[5, q], 5), add(ipv, tsc[6, q], 6))
    return dcv, xEv, Dmaxv


def vf_row_inplace(M_, I_, D_, mpv, dpv, ipv, xB, tsc, e, add, emit):
    """VF_ROW with ROW_INPLACE=1: descending vectors, each state updated in place (vector q reads
    q-1's old values), D_[q+1] = vector q's M->D flow, D_[0] = -inf; row maxima folded over
    (held, current) pairs as the kernel's three-way maxima."""
    Q, W = M_.shape
    neg = np.full(W, NEG, np.int64)
    xEv, Dmaxv, heldE, heldD, dcv = neg.copy(), neg.copy(), neg.copy(), neg.copy(), None
    for q in range(Q - 1, -1, -1):
        mp, ip, dp = (M_[q - 1], I_[q - 1], D_[q - 1]) if q > 0 else (mpv, ipv, dpv)
        sv = add(np.full(W, xB), tsc[0, q], 0)
        sv = np.maximum(sv, add(mp, tsc[1, q], 1))
        sv = np.maximum(sv, add(ip, tsc[2, q], 2))
        sv = np.maximum(sv, add(dp, tsc[3, q], 3))
        sv = emit(sv, e[q])
        I_[q] = np.maximum(add(I_[q], tsc[6, q], 6), add(M_[q], tsc[5, q], 5))
        M_[q] = sv
        dc = add(sv, tsc[4, q], 4)
        if q == Q - 1:
            dcv = dc
        else:
            D_[q + 1] = dc
        if (Q - 1 - q) & 1:
            xEv, Dmaxv = np.maximum.reduce([xEv, heldE, sv]), np.maximum.reduce([Dmaxv, heldD, dc])
        else:
            heldE, heldD = sv, dc
    if Q & 1:
        xEv, Dmaxv = np.maximum(xEv, heldE), np.maximum(Dmaxv, heldD)
    D_[0] = neg
    return dcv, xEv, Dmaxv


def vf_xc_warp(match, tsc, codes, base, e_loop, e_move, ddbound, mv, dpx=False, inplace=False,
               ntsc_mask=0):
    """``ntsc_mask``: VF_NTSC_MASK, the transitions j whose floor the kernel computes by ALU."""
    Q, W = match.shape[1], match.shape[2]
    M_ = np.full((Q, W), NEG, np.int64)
    I_, D_ = M_.copy(), M_.copy()
    xN = base
    xB, xJ, xC = xN + mv, NEG, NEG
    if dpx:
        assert (tsc <= 0).all()              # every b of sat_add_dpx is a row of tsc
        add = lambda a, b, j: sat_add_dpx(a, b, bool((ntsc_mask >> j) & 1))   # noqa: E731
    else:
        add = lambda a, b, j: sat_s16(a + b)                                   # noqa: E731
    emit = emit_dpx if dpx else (lambda a, b: sat_s16(a + b))
    row = vf_row_inplace if inplace else vf_row_ascending
    for x in codes:
        mpv, dpv, ipv = shift(M_[Q - 1], NEG), shift(D_[Q - 1], NEG), shift(I_[Q - 1], NEG)
        dcv, xEv, Dmaxv = row(M_, I_, D_, mpv, dpv, ipv, xB, tsc, match[x], add, emit)
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
                dcv = add(D_[q], tsc[7, q], 7)
            again = True
            while again:
                dcv = shift(dcv, NEG)
                q = 0
                while q < Q:
                    if not (dcv > D_[q]).any():
                        break
                    D_[q] = np.maximum(dcv, D_[q])
                    dcv = add(D_[q], tsc[7, q], 7)
                    q += 1
                again = q == Q
                DD_PASSES["extra"] += int(again)
        else:
            D_[0] = dcv
    return xC


def wrap16(x):
    """int16 two's-complement wrap (the DPX adds do not saturate)."""
    # through int16: NumPy's integer casts keep the low bits (4x faster than % 65536 here)
    return np.asarray(x, np.int64).astype(np.int16).astype(np.int64)


def byte_row(dp, prof_row, cell, inplace=False):
    """One row of the group kernels' byte_row: shift, cell per vector, elementwise row max;
    ``inplace`` (ROW_INPLACE): descending vectors, vector q reading q-1's old value in place."""
    Q = dp.shape[0]
    first = shift(dp[Q - 1], 0)
    rowmax = np.zeros(dp.shape[1], np.int64)
    if inplace:
        for q in range(Q - 1, -1, -1):
            dp[q] = cell(dp[q - 1] if q > 0 else first, prof_row[q])
            rowmax = np.maximum(rowmax, dp[q])
        return rowmax
    mpv = first
    for q in range(Q):
        sv = cell(mpv, prof_row[q])
        mpv = dp[q].copy()
        dp[q] = sv
        rowmax = np.maximum(rowmax, sv)
    return rowmax


def cells(simd16, bias):
    """(ssv_cell, msv_cell(xbrow), msv_xbrow) element rules of profile_filters.cu."""
    if simd16:
        ssv = lambda m, pc: np.maximum(np.minimum(wrap16(m + pc), 255), 0)
        msv = lambda xb: (lambda m, pc: np.maximum(wrap16(np.maximum(wrap16(m + bias), xb) + pc), 0))
        xbrow = lambda xB: min(xB + bias, 255)
    else:
        ssv = lambda m, pc: sat_u8(sat_u8(m + bias) - pc)
        msv = lambda xb: (lambda m, pc: sat_u8(sat_u8(np.maximum(m, xb) + bias) - pc))
        xbrow = lambda xB: xB
    return ssv, msv, xbrow


def ssv_xe_group(prof, codes, bias, simd16, inplace=False):
    ssv, _, _ = cells(simd16, bias)
    dp = np.zeros(prof.shape[1:], np.int64)
    xEv = np.zeros(prof.shape[2], np.int64)
    for x in codes:
        xEv = np.maximum(xEv, byte_row(dp, prof[x], ssv, inplace))
    return 128 + int(xEv.max())


def msv_xj_group(prof, codes, bias, base, tec, jbm, simd16, lazy, inplace=False):
    """msv_xj_warp with LAZY_XE on or off: the exact xE only on rows a lane flags."""
    _, msv, xbrow = cells(simd16, bias)
    dp = np.zeros(prof.shape[1:], np.int64)
    jtop, xJ, over = base, 0, False
    xB = max(base - jbm, 0)
    xEall = np.zeros(prof.shape[2], np.int64)
    thr = min(255 - bias, jtop + tec + 1)
    for x in codes:
        rowmax = byte_row(dp, prof[x], msv(xbrow(xB)), inplace)
        xEall = np.maximum(xEall, rowmax)
        if lazy and not (rowmax >= thr).any():
            continue
        xE = int(rowmax.max())
        if not over:
            if xE + bias >= 255:
                over = True
            elif xE - tec > jtop:
                jtop = xE - tec
                xB = max(jtop - jbm, 0)
            xJ = max(xJ, max(xE - tec, 0))
        thr = 1 << 20 if over else min(255 - bias, jtop + tec + 1)
    if lazy:
        xJ = max(int(xEall.max()) - tec, 0)
    return -1 if over else xJ


MODELS = datasets.load_models() if datasets.pyhmmer_data_dir() else []
PICK = [m for m in MODELS if m.name in ("2-Hacid_dh_C", "LuxC", "Thiaglutamate_B_RRE")]


SAMPLE = [1650, 0, 900, 1800, 300, 1200, 750]


@pytest.fixture(scope="module")
def sample():
    seqs = datasets.load_proteome()
    # short and long proteins: of every 150th, the shortest (1650: 58 residues), the longest
    # (750: 474) and five between (142 .. 459)
    sub = seqs.subset(SAMPLE)
    assert sub.lengths.min() == seqs.lengths[::150].min()
    assert sub.lengths.max() == seqs.lengths[::150].max()
    return sub


@pytest.fixture(scope="module")
def reference(sample):
    """A model's reference SSV, full-MSV (sequence by sequence) and Viterbi-filter scores on
    ``sample``, computed once for every variant checked against them."""
    done: dict = {}

    def get(model, kind):
        key = (model.name, kind)
        if key not in done:
            done[key] = {
                "ssv": lambda: pf.ssv_filter(model, sample),
                "msv": lambda: np.concatenate([pf.msv_full(model, sample, [i])
                                               for i in range(len(sample))]),
                "vf": lambda: pf.viterbi_filter(model, sample)}[kind]()
        return done[key]
    return get


@pytest.mark.parametrize("model", PICK, ids=[m.name for m in PICK])
def test_warp_byte_kernels_match_reference(model, sample, reference):
    bp = model.byte
    cost = layout.striped_bytes(model, 128).astype(np.int64)
    L = sample.lengths
    xe = np.array([ssv_xe_warp(cost, sample.codes(i), bp.bias) for i in range(len(sample))])
    np.testing.assert_array_equal(pf.ssv_from_xe(model, xe, L)[0], reference(model, "ssv"))
    jbm = (bp.tjb(L) + bp.tbm) & 0xFF
    xj = np.array([msv_xj_warp(cost, sample.codes(i), bp.bias, bp.base, bp.tec, int(jbm[i]))
                   for i in range(len(sample))])
    got = pf.msv_from_xj(model, np.maximum(xj, 0), xj < 0, L)
    np.testing.assert_array_equal(got, reference(model, "msv"))


@pytest.mark.parametrize("model", PICK, ids=[m.name for m in PICK])
@pytest.mark.parametrize("dpx,inplace,ntsc_mask", [(False, False, 0), (True, False, 0),
                                                   (True, True, 0x07)],
                         ids=["vaddss2", "dpx", "dpx-inplace-mask07"])
def test_warp_vf_kernel_matches_reference(model, sample, reference, dpx, inplace, ntsc_mask):
    """The warp Viterbi filter, with HMMER's saturating adds or (VF_DPX) as
    max(a, -32768 - b) + b with clamp-then-add emissions; ROW_INPLACE's descending in-place row;
    VF_NTSC_MASK's ALU floors."""
    wp = model.word
    match, tsc = (a.astype(np.int64) for a in layout.striped_words(model, 64))
    L = sample.lengths
    mv = wp.move(L).astype(np.int64)
    rows_before = DD_PASSES["rows"]
    xc = np.array([vf_xc_warp(match, tsc, sample.codes(i), wp.base, wp.e_loop, wp.e_move,
                              wp.ddbound, int(mv[i]), dpx=dpx, inplace=inplace,
                              ntsc_mask=ntsc_mask) for i in range(len(sample))])
    got = pf.vf_from_xc(model, np.minimum(xc, 32767), xc > 32767, L)
    np.testing.assert_array_equal(got, reference(model, "vf"))
    assert DD_PASSES["rows"] > rows_before   # the D->D branch was exercised


@pytest.mark.parametrize("model", PICK, ids=[m.name for m in PICK])
@pytest.mark.parametrize("group,simd16,lazy,inplace", [(32, 1, 1, 0), (16, 1, 1, 0),
                                                       (8, 1, 0, 0), (8, 0, 1, 0), (16, 0, 0, 0),
                                                       (32, 1, 1, 1), (8, 0, 0, 1)])
def test_group_byte_kernels_match_reference(model, sample, reference, group, simd16, lazy,
                                           inplace):
    """The warp-group SSV/MSV variants (GROUP lanes per sequence, SIMD16 int16 cells, LAZY_XE,
    ROW_INPLACE), each sequence followed by pad-residue rows up to a longer neighbour's length,
    as in a warp."""
    bp = model.byte
    L = sample.lengths
    lmax = int(L.max())

    def rows(i):            # odd sequences padded to the longest one, as in a shared warp
        pad = np.full(lmax - L[i] if i % 2 else 0, model.Kp, np.uint8)
        return np.concatenate([sample.codes(i), pad])

    def striped(kind):
        values, pad = layout.warp_byte_elements(model, kind, simd16)
        return layout.stripe(values, group * (2 if simd16 else 4), pad, min_q=1).astype(np.int64)

    Q, _ = layout.warp_byte_profile(model, "ssv", group, simd16)
    ssv_prof, msv_prof = striped("ssv"), striped("msv")
    assert ssv_prof.shape[1] == Q
    xe = np.array([ssv_xe_group(ssv_prof, rows(i), bp.bias, simd16, inplace)
                   for i in range(len(sample))])
    np.testing.assert_array_equal(pf.ssv_from_xe(model, xe, L)[0], reference(model, "ssv"))
    jbm = (bp.tjb(L) + bp.tbm) & 0xFF
    xj = np.array([msv_xj_group(msv_prof, rows(i), bp.bias, bp.base, bp.tec, int(jbm[i]),
                                simd16, lazy, inplace) for i in range(len(sample))])
    got = pf.msv_from_xj(model, np.maximum(xj, 0), xj < 0, L)
    np.testing.assert_array_equal(got, reference(model, "msv"))


def test_vf_negative_floor_by_alu_is_the_table():
    """VF_NTSC_ALU: -32768 - t per int16 half computed as ~t + 0x8001 (wrapping), t <= 0."""
    t = np.arange(-32768, 1, dtype=np.int64)
    np.testing.assert_array_equal(neg_floor_alu(t), -32768 - t)
