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
    """The one-lane warp shift along the last axis (lanes)."""
    out = np.empty_like(v)
    out[..., 0] = fill
    out[..., 1:] = v[..., :-1]
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
    assert NEG <= np.minimum.reduce(out, axis=None) and np.maximum.reduce(out, axis=None) <= 32767
    return out


def emit_dpx(sv, e):
    """VF_DPX's saturating sv + e: min(max(sv, lo), hi) + e."""
    lo, hi = -32768 - np.minimum(e, 0), 32767 - np.maximum(e, 0)
    return np.minimum(np.maximum(sv, lo), hi) + e


def vf_row_ascending(M_, I_, D_, mpv, dpv, ipv, xB, tsc, e, add, emit):
    """The kernel's VF_ROW, vectors in ascending order (ROW_INPLACE=0): (dcv, xEv, Dmaxv).
    States (..., Q, lanes): a leading axis holds several sequences (``xB`` (..., 1) then)."""
    Q, W = M_.shape[-2:]
    dcv = np.full(M_.shape[:-2] + (W,), NEG, np.int64)
    xEv, Dmaxv = dcv.copy(), dcv.copy()
    for q in range(Q):
        sv = add(xB + np.zeros(W, np.int64), tsc[0, q], 0)
        sv = np.maximum(sv, add(mpv, tsc[1, q], 1))
        sv = np.maximum(sv, add(ipv, tsc[2, q], 2))
        sv = np.maximum(sv, add(dpv, tsc[3, q], 3))
        sv = emit(sv, e[..., q, :])
        xEv = np.maximum(xEv, sv)
        mpv, dpv, ipv = M_[..., q, :].copy(), D_[..., q, :].copy(), I_[..., q, :].copy()
        M_[..., q, :] = sv
        D_[..., q, :] = dcv
        dcv = add(sv, tsc[4, q], 4)
        Dmaxv = np.maximum(Dmaxv, dcv)
        I_[..., q, :] = np.maximum(add(mpv, tsc[5, q], 5), add(ipv, tsc[6, q], 6))
    return dcv, xEv, Dmaxv


def vf_row_inplace(M_, I_, D_, mpv, dpv, ipv, xB, tsc, e, add, emit):
    """VF_ROW with ROW_INPLACE=1: descending vectors, each state updated in place (vector q reads
    q-1's old values), D_[q+1] = vector q's M->D flow, D_[0] = -inf; row maxima folded over
    (held, current) pairs as the kernel's three-way maxima. Shapes as vf_row_ascending."""
    Q, W = M_.shape[-2:]
    neg = np.full(M_.shape[:-2] + (W,), NEG, np.int64)
    xEv, Dmaxv, heldE, heldD, dcv = neg.copy(), neg.copy(), neg.copy(), neg.copy(), None
    for q in range(Q - 1, -1, -1):
        mp, ip, dp = ((M_[..., q - 1, :], I_[..., q - 1, :], D_[..., q - 1, :]) if q > 0
                      else (mpv, ipv, dpv))
        sv = add(xB + np.zeros(W, np.int64), tsc[0, q], 0)
        sv = np.maximum(sv, add(mp, tsc[1, q], 1))
        sv = np.maximum(sv, add(ip, tsc[2, q], 2))
        sv = np.maximum(sv, add(dp, tsc[3, q], 3))
        sv = emit(sv, e[..., q, :])
        I_[..., q, :] = np.maximum(add(I_[..., q, :], tsc[6, q], 6), add(M_[..., q, :], tsc[5, q], 5))
        M_[..., q, :] = sv
        dc = add(sv, tsc[4, q], 4)
        if q == Q - 1:
            dcv = dc
        else:
            D_[..., q + 1, :] = dc
        if (Q - 1 - q) & 1:
            xEv, Dmaxv = np.maximum.reduce([xEv, heldE, sv]), np.maximum.reduce([Dmaxv, heldD, dc])
        else:
            heldE, heldD = sv, dc
    if Q & 1:
        xEv, Dmaxv = np.maximum(xEv, heldE), np.maximum(Dmaxv, heldD)
    D_[..., 0, :] = neg
    return dcv, xEv, Dmaxv


def lazy_dd(D_, dcv, tsc, add):
    """The kernel's lazy-F D->D passes for sequences side by side (D_ (n, Q, lanes), dcv
    (n, lanes), updated in place): one pass over every vector, then passes from vector 0 that
    each sequence leaves at its first vector no lane of which improves (its early exit), again
    while a pass ran through every vector."""
    Q = D_.shape[1]
    for q in range(Q):
        D_[:, q] = np.maximum(dcv, D_[:, q])
        dcv = add(D_[:, q], tsc[7, q], 7)
    again = np.ones(len(D_), bool)
    while again.any():
        run = again.copy()
        dcv = shift(dcv, NEG)
        for q in range(Q):
            run &= (dcv > D_[:, q]).any(axis=-1)          # the others exit here
            if not run.any():
                break
            D_[run, q] = np.maximum(dcv[run], D_[run, q])
            dcv[run] = add(D_[run, q], tsc[7, q], 7)
        again = run                                        # ran through every vector
        DD_PASSES["extra"] += int(again.sum())


def vf_xc_warp(match, tsc, seq_codes, base, e_loop, e_move, ddbound, mv, dpx=False,
               inplace=False, ntsc_mask=0):
    """xC per sequence of ``seq_codes`` (each its own state, side by side; ``mv`` per sequence);
    32768 where the row's xE overflowed (the kernel returns there).
    ``ntsc_mask``: VF_NTSC_MASK, the transitions j whose floor the kernel computes by ALU."""
    Q, W = match.shape[1], match.shape[2]
    order, X, active = by_rows(seq_codes)
    S = len(order)
    mv = np.asarray(mv, np.int64)[order]
    M_ = np.full((S, Q, W), NEG, np.int64)
    I_, D_ = M_.copy(), M_.copy()
    xN = base
    xB, xJ, xC = xN + mv, np.full(S, NEG, np.int64), np.full(S, NEG, np.int64)
    done = np.zeros(S, bool)
    if dpx:
        assert (tsc <= 0).all()              # every b of sat_add_dpx is a row of tsc
        add = lambda a, b, j: sat_add_dpx(a, b, bool((ntsc_mask >> j) & 1))   # noqa: E731
    else:
        add = lambda a, b, j: sat_s16(a + b)                                   # noqa: E731
    emit = emit_dpx if dpx else (lambda a, b: sat_s16(a + b))
    row = vf_row_inplace if inplace else vf_row_ascending
    for r, n in enumerate(active):
        live = np.flatnonzero(~done[:n])
        if not live.size:
            continue
        sel = slice(0, n) if live.size == n else live      # views, else copies put back
        Mv, Iv, Dv = M_[sel], I_[sel], D_[sel]
        mpv, dpv, ipv = shift(Mv[:, Q - 1], NEG), shift(Dv[:, Q - 1], NEG), shift(Iv[:, Q - 1], NEG)
        dcv, xEv, Dmaxv = row(Mv, Iv, Dv, mpv, dpv, ipv, xB[sel][:, None], tsc,
                              match[X[sel, r]], add, emit)
        xE = xEv.max(axis=-1)
        over = xE >= 32767
        done[live[over]] = True
        xC[sel] = np.where(over, xC[sel], np.maximum(xC[sel], xE + e_move))
        xJ[sel] = np.where(over, xJ[sel], np.maximum(xJ[sel], xE + e_loop))
        xB[sel] = np.maximum(xJ[sel] + mv[sel], xN + mv[sel])
        Dmax = Dmaxv.max(axis=-1)
        dcv = shift(dcv, NEG)
        full = ~over & (Dmax + ddbound > xB[sel])
        DD_PASSES["rows"] += int(full.sum())
        Dv[~full, 0] = dcv[~full]
        if full.any():
            Df = Dv[full]
            lazy_dd(Df, dcv[full], tsc, add)
            Dv[full] = Df
        if live.size != n:
            M_[live], I_[live], D_[live] = Mv, Iv, Dv
    out = np.empty(S, np.int64)
    out[order] = np.where(done, 32768, xC)
    return out


def wrap16(x):
    """int16 two's-complement wrap (the DPX adds do not saturate)."""
    # through int16: NumPy's integer casts keep the low bits (4x faster than % 65536 here)
    return np.asarray(x, np.int64).astype(np.int16).astype(np.int64)


def byte_row(dp, prof_rows, cell, inplace=False):
    """One row of the group kernels' byte_row: shift, cell per vector, elementwise row max;
    ``inplace`` (ROW_INPLACE): descending vectors, vector q reading q-1's old value in place.
    ``dp`` (..., Q, lanes) and ``prof_rows`` alike: a leading axis holds several sequences,
    each with its own row (the same operations per element as one sequence alone)."""
    Q = dp.shape[-2]
    first = shift(dp[..., Q - 1, :], 0)
    rowmax = np.zeros(first.shape, np.int64)
    if inplace:
        for q in range(Q - 1, -1, -1):
            dp[..., q, :] = cell(dp[..., q - 1, :] if q > 0 else first, prof_rows[..., q, :])
            rowmax = np.maximum(rowmax, dp[..., q, :])
        return rowmax
    mpv = first
    for q in range(Q):
        sv = cell(mpv, prof_rows[..., q, :])
        mpv = dp[..., q, :].copy()
        dp[..., q, :] = sv
        rowmax = np.maximum(rowmax, sv)
    return rowmax


def cells(simd16, bias):
    """(ssv_cell, msv_cell(xbrow), msv_xbrow) element rules of profile_filters.cu."""
    if simd16:
        ssv = lambda m, pc: np.maximum(np.minimum(wrap16(m + pc), 255), 0)
        msv = lambda xb: (lambda m, pc: np.maximum(wrap16(np.maximum(wrap16(m + bias), xb) + pc), 0))
        xbrow = lambda xB: np.minimum(xB + bias, 255)
    else:
        ssv = lambda m, pc: sat_u8(sat_u8(m + bias) - pc)
        msv = lambda xb: (lambda m, pc: sat_u8(sat_u8(np.maximum(m, xb) + bias) - pc))
        xbrow = lambda xB: xB
    return ssv, msv, xbrow


def by_rows(seq_rows):
    """Several sequences' rows (code arrays) run side by side: (order by decreasing row count,
    codes matrix in that order, how many sequences row r still has). Row r updates only the
    first ``active[r]`` sequences: each sequence sees exactly its own rows."""
    n_rows = np.array([len(r) for r in seq_rows])
    order = np.argsort(-n_rows, kind="stable")
    X = np.zeros((len(seq_rows), int(n_rows.max())), np.int64)
    for j, i in enumerate(order):
        X[j, :n_rows[i]] = seq_rows[i]
    active = (n_rows[order][None, :] > np.arange(X.shape[1])[:, None]).sum(axis=1)
    return order, X, active


class StripedRows:
    """The striped kernels' rows: state (S, Q, width), the one-element shift (byte_row)."""

    def __init__(self, prof, inplace=False):
        self.prof, self.inplace = prof, inplace
        self.width = prof.shape[2]

    def state(self, S):
        return np.zeros((S,) + self.prof.shape[1:], np.int64)

    def row(self, dp, codes, r, cell):
        return byte_row(dp, self.prof[codes], cell, self.inplace)

    def per_sequence(self, v):
        """A value per sequence, broadcast against one vector of each sequence's state."""
        return v[:, None]


class FixedDiagRows:
    """FIXED_DIAG's rows on warp_fixed_profile's words: state (S, Q, group, 2) that never
    moves, the words read at the row's offset (lane l of vector v: word o + v x group + l;
    ``wide``, FIXED_DIAG 2: vectors 2u, 2u + 1 words o + 2u group + 2l (+ 1) read from the copy
    of o's parity, an odd last vector as before), the state's halves swapped when the offset
    wraps at H = Q x group."""

    def __init__(self, words, Q, group, wide=False):
        self.halves = words.view(np.int16).reshape(words.shape[0], -1, 2).astype(np.int64)
        self.Q, self.group, self.H, self.wide = Q, group, Q * group, wide
        v, lane = np.arange(Q)[:, None], np.arange(group)[None, :]
        paired = wide & (v < Q // 2 * 2)
        self.j = np.where(paired, (v - v % 2) * group + 2 * lane + v % 2, v * group + lane)
        self.width = 2 * group

    def words_at(self, o):
        """The word indices of a row at offset o, as the kernel computes them."""
        return (o & 1) * 2 * self.H + (o & ~1) + self.j if self.wide else o + self.j

    def state(self, S):
        return np.zeros((S, self.Q, self.group, 2), np.int64)

    def row(self, dp, codes, r, cell):
        dp[:] = cell(dp, self.halves[codes][:, self.words_at(r % self.H), :])
        rowmax = dp.max(axis=1).reshape(len(dp), -1)
        if (r + 1) % self.H == 0:
            dp[:] = dp[..., ::-1]
        return rowmax

    def per_sequence(self, v):
        """A value per sequence, broadcast against each sequence's whole state."""
        return v[:, None, None, None]


def ssv_xe_group(prof, seq_rows, bias, simd16, inplace=False, rows=None):
    """SSV's xE per sequence of ``seq_rows`` (each sequence's own state, side by side);
    ``rows``: the kernel's row scheme (default: striped)."""
    ssv, _, _ = cells(simd16, bias)
    rows = rows or StripedRows(prof, inplace)
    order, X, active = by_rows(seq_rows)
    dp = rows.state(len(order))
    xEv = np.zeros((len(order), rows.width), np.int64)
    for r, n in enumerate(active):
        xEv[:n] = np.maximum(xEv[:n], rows.row(dp[:n], X[:n, r], r, ssv))
    out = np.empty(len(order), np.int64)
    out[order] = 128 + xEv.max(axis=1)
    return out


def msv_xj_group(prof, seq_rows, bias, base, tec, jbm, simd16, lazy, inplace=False,
                 rows=None):
    """msv_xj_warp with LAZY_XE on or off: the exact xE only on rows a lane flags (per
    sequence of ``seq_rows``, side by side; ``jbm`` per sequence; ``rows`` as ssv_xe_group)."""
    _, msv, xbrow = cells(simd16, bias)
    rows = rows or StripedRows(prof, inplace)
    order, X, active = by_rows(seq_rows)
    S = len(order)
    jbm = np.asarray(jbm, np.int64)[order]
    dp = rows.state(S)
    jtop, xJ, over = np.full(S, base, np.int64), np.zeros(S, np.int64), np.zeros(S, bool)
    xB = np.maximum(base - jbm, 0)
    xEall = np.zeros((S, rows.width), np.int64)
    thr = np.minimum(255 - bias, jtop + tec + 1)
    for r, n in enumerate(active):
        rowmax = rows.row(dp[:n], X[:n, r], r, msv(rows.per_sequence(xbrow(xB[:n]))))
        xEall[:n] = np.maximum(xEall[:n], rowmax)
        # the rows a lane flags (every row without LAZY_XE) take the exact xE
        exact = (rowmax >= thr[:n, None]).any(axis=1) if lazy else np.ones(n, bool)
        xE = rowmax.max(axis=1)
        live = exact & ~over[:n]
        now_over = live & (xE + bias >= 255)
        higher = live & ~now_over & (xE - tec > jtop[:n])
        jtop[:n] = np.where(higher, xE - tec, jtop[:n])
        xB[:n] = np.where(higher, np.maximum(jtop[:n] - jbm[:n], 0), xB[:n])
        xJ[:n] = np.where(live, np.maximum(xJ[:n], np.maximum(xE - tec, 0)), xJ[:n])
        over[:n] |= now_over
        thr[:n] = np.where(exact, np.where(over[:n], 1 << 20,
                                           np.minimum(255 - bias, jtop[:n] + tec + 1)), thr[:n])
    if lazy:
        xJ = np.maximum(xEall.max(axis=1) - tec, 0)
    out = np.empty(S, np.int64)
    out[order] = np.where(over, -1, xJ)
    return out


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
    xc = vf_xc_warp(match, tsc, [sample.codes(i) for i in range(len(sample))], wp.base,
                    wp.e_loop, wp.e_move, wp.ddbound, mv, dpx=dpx, inplace=inplace,
                    ntsc_mask=ntsc_mask)
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
    seq_rows = [rows(i) for i in range(len(sample))]
    xe = ssv_xe_group(ssv_prof, seq_rows, bp.bias, simd16, inplace)
    np.testing.assert_array_equal(pf.ssv_from_xe(model, xe, L)[0], reference(model, "ssv"))
    jbm = (bp.tjb(L) + bp.tbm) & 0xFF
    xj = msv_xj_group(msv_prof, seq_rows, bp.bias, bp.base, bp.tec, jbm, simd16, lazy, inplace)
    got = pf.msv_from_xj(model, np.maximum(xj, 0), xj < 0, L)
    np.testing.assert_array_equal(got, reference(model, "msv"))


def test_vf_negative_floor_by_alu_is_the_table():
    """VF_NTSC_ALU: -32768 - t per int16 half computed as ~t + 0x8001 (wrapping), t <= 0."""
    t = np.arange(-32768, 1, dtype=np.int64)
    np.testing.assert_array_equal(neg_floor_alu(t), -32768 - t)


@pytest.mark.parametrize("model", PICK, ids=[m.name for m in PICK])
@pytest.mark.parametrize("group,wide", [(8, False), (32, False), (8, True), (32, True)])
def test_fixed_diagonal_kernels_match_reference(model, sample, reference, group, wide):
    """FIXED_DIAG's SSV / MSV (LAZY_XE) on layout.warp_fixed_profile's words: diagonals that
    never move, the offset that wraps (sequences of 58..474 rows against rings of 2 x Q x group
    slots: every model wraps at 8 lanes), odd sequences padded as in a shared warp."""
    bp = model.byte
    L = sample.lengths
    lmax = int(L.max())

    def rows(i):
        pad = np.full(lmax - L[i] if i % 2 else 0, model.Kp, np.uint8)
        return np.concatenate([sample.codes(i), pad])

    seq_rows = [rows(i) for i in range(len(sample))]
    Q, words = layout.warp_fixed_profile(model, "ssv", group, wide=wide)
    assert 2 * Q * group > model.M
    assert words.shape == (model.Kp + 1, (4 if wide else 2) * Q * group)
    xe = ssv_xe_group(None, seq_rows, bp.bias, True, rows=FixedDiagRows(words, Q, group, wide))
    np.testing.assert_array_equal(pf.ssv_from_xe(model, xe, L)[0], reference(model, "ssv"))
    Q, words = layout.warp_fixed_profile(model, "msv", group, wide=wide)
    jbm = (bp.tjb(L) + bp.tbm) & 0xFF
    xj = msv_xj_group(None, seq_rows, bp.bias, bp.base, bp.tec, jbm, True, True,
                      rows=FixedDiagRows(words, Q, group, wide))
    got = pf.msv_from_xj(model, np.maximum(xj, 0), xj < 0, L)
    np.testing.assert_array_equal(got, reference(model, "msv"))


def test_fixed_diagonals_are_chosen_past_128_positions_for_ssv_and_msv_only():
    """The tuned variant's FIXED_DIAG (auto_fixed_diag): the wide form past 128 positions, the
    striped rows up to 128 and for the VF; a batch follows its largest model, each of its
    models laid out on the batch's ring."""
    from hmmbench.profile.device import warp
    tuned = warp.TUNED_VARIANT
    by_m = sorted(MODELS, key=lambda m: m.M)
    small, large = by_m[0], by_m[-1]
    assert small.M <= 128 < large.M
    for m, want in ((small, 0), (large, 2)):
        for kind in ("ssv", "msv"):
            Q, words = warp.profile(m, kind, tuned)
            assert warp.defines(m, kind, Q, tuned, 128)["FIXED_DIAG"] == want
            assert words.size == (m.Kp + 1) * (4 * Q * warp.group(tuned, m.M, kind) if want
                                              else Q * warp.group(tuned, m.M, kind))
        Q, _ = warp.profile(m, "vf", tuned)
        assert warp.defines(m, "vf", Q, tuned, 128)["FIXED_DIAG"] == 0
    Q, words = warp.batch_profile([small, large], "ssv", tuned)
    g = warp.group(tuned, large.M, "ssv")
    assert words.shape == (large.Kp + 1, 2, 4 * Q * g)
    assert np.array_equal(words[:, 1], layout.warp_fixed_profile(large, "ssv", g, Q, True)[1])
    assert warp.batch_defines([small, large], "ssv", Q, tuned, 128)["FIXED_DIAG"] == 2
