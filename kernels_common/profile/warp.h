/* Warp-group HMMER3 filter kernels (SSV, MSV, Viterbi filter), written once for CUDA
 * (kernels_cuda/profile/filters.cu: profile-cuda-warp, profile-cuda-cudampf) and OpenCL
 * (kernels_opencl/profile/warp.cl: profile-opencl-warp).
 *
 * A group of GROUP lanes (8, 16 or 32; VF always 32) of a 32-lane warp owns one target sequence;
 * the model is Farrar-striped over the group (GROUP x ELEMS_B elements per vector for SSV/MSV,
 * 32 x 2 for VF) and the DP rows live in registers. Warps are persistent (grid-stride over the
 * length-sorted launch order); groups of one warp run to the warp's longest sequence and feed
 * the shorter ones the pad residue KP, whose profile row makes a row a no-op for SSV/MSV, so
 * every warp operation below is reached by all 32 lanes together (OpenCL's sub-group functions
 * need that convergence). Exact integer emulations of HMMER 3.4: the host finishes the raw
 * integers into nats with the reference's rules.
 *
 * Variants (defines, all exact; see docs/profile-design.md for what each buys):
 *   SIMD16=0 : SSV/MSV on packed unsigned bytes, saturating byte add/sub/max per word (CUDAMPF)
 *   SIMD16=1 : SSV/MSV on int16 pairs, add-min-relu / add-max / 3-way max per word (Hopper DPX
 *              in CUDA); byte saturation reproduced exactly (below)
 *   PREFETCH : residues fetched GROUP rows at a time (one load per lane, then a shuffle per
 *              row) instead of a dependent global load per row
 *   LAZY_XE  : MSV reduces xE over the group only on rows where some lane's row maximum could
 *              move xB or overflow (a vote), as HMMER's xJ is a plain maximum over rows
 *   VF_DPX   : Viterbi filter saturating adds as max(a, -32768 - b) + b (b <= 0, exact, no
 *              wrap) and clamp-then-add for emissions, on 16x2 min/max/add instead of a
 *              saturating add; VF_NTSC_ALU: -32768 - tsc computed as ~tsc + 0x8001 per half
 *              (2 ALU instructions) instead of loaded
 *   ROW_INPLACE : each DP row updated in place, vectors in descending order (vector q's new
 *              value overwrites q, whose old value vector q+1 has already read), so no register
 *              copies rotate the row between database rows (ascending order costs one move per
 *              vector and state per row in SASS); the VF then folds its row maxima three at a time
 *   VF_NTSC_MASK (VF_DPX, without VF_NTSC_ALU): bit j set = transition j's -32768 - t computed
 *              by ALU instead of loaded (j: BM MM IM DM MD MI II DD), trading L1 loads for
 *              ALU instructions per transition
 *   FIXED_DIAG (SIMD16): SSV/MSV state kept per diagonal: a ring of 2 x QB x GROUP slots, slot s
 *              holding position (s + i) mod ring on row i, so a cell's predecessor (i-1, k-1) is
 *              the same slot and no value moves between registers or lanes; the profile row of
 *              residue x is read at an offset that grows by one word per row (layout.py's
 *              ``warp_fixed_profile``: word j holds positions j and j + QB x GROUP, so a word's
 *              two halves swap roles every QB x GROUP rows, when the state's halves are swapped
 *              once); the ring must hold one pad position past M (a diagonal restarts from it)
 *   MODELS   : SSV/MSV of MODELS models in one pass over the rows (default 1): each group keeps
 *              the DP rows of every model in registers and reads a residue once for all of
 *              them, so the per-row cost that does not depend on M (residue fetch and shuffle,
 *              loop, reductions) is paid once per MODELS models. The models share QB (the
 *              batch's largest; a shorter model's vectors past its M hold the "no cell" value,
 *              which makes them a no-op), GROUP and KP; the profile is [KP+1][MODELS][QB][GROUP]
 *              words, each model's scalars come from a table mpar[MODELS][4] (bias, base, tec,
 *              unused) and outputs / tjbm are [MODELS][stride] (stride = the database's
 *              sequences). MODELS = 1 takes the scalars as arguments, as the single-model hosts
 *              call it.
 *
 * The including file spells the API:
 *   W_FN, W_KERNEL(name)          device function qualifiers, a kernel's declaration head
 *   W_IN(T), W_OUT(T)             read-only / writable global array of T
 *   W_PROFILE                     the profile pointer type;  PROFILE_BEGIN(g, nwords), PLOAD(p)
 *   W_LOCAL_ID, W_GROUP_ID, W_NUM_GROUPS   thread in block, block index, blocks
 *   W_SHFL_UP_G(x), W_SHFL_UP32(x)   x of lane - 1 (within the group / the warp; any value on
 *                                 the first lane, which the callers replace)
 *   W_SHFL_IDX(x, r, w), W_SHFL_XOR_G(x, d)  lane r of x's group of w lanes / lane ^ d (d < GROUP)
 *   W_REDUCE_MAX(x), W_ANY(p)     the warp's maximum / whether any lane's p holds
 *   W_KERNEL_PROLOGUE             declarations at a kernel's top (local scratch of a warp op)
 *   W_SCRATCH_PARAM, W_SCRATCH_ARG   that scratch as the first parameter / argument of the
 *                                 helpers doing warp operations (default: none)
 *   u8, i16, i64, u32             the integer types
 *   element operations on 32-bit words: vu4_max, vu4_addus, vu4_subus (4 unsigned bytes),
 *   vs2_max, vs2_min, vs2_add (wrapping), vs2_addss (saturating), vs2_addmax(a, b, c) =
 *   max(a + b, c), vs2_addmin_relu(a, b, c) = max(min(a + b, c), 0), vs2_max3 (2 int16)
 * Defines: MODEL_M, QB, QW, BLOCK (a multiple of 32), GROUP, KP and the variants above.
 */
#ifndef PROFILE_WARP_H
#define PROFILE_WARP_H

#ifndef GROUP
#define GROUP 32
#endif
#ifndef SIMD16
#define SIMD16 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef LAZY_XE
#define LAZY_XE 0
#endif
#ifndef VF_DPX
#define VF_DPX 0
#endif
#ifndef VF_NTSC_ALU
#define VF_NTSC_ALU 0
#endif
#ifndef ROW_INPLACE
#define ROW_INPLACE 0
#endif
#ifndef VF_NTSC_MASK
#define VF_NTSC_MASK 0
#endif
#ifndef FIXED_DIAG
#define FIXED_DIAG 0
#endif
#if FIXED_DIAG && !SIMD16
#error "FIXED_DIAG needs SIMD16 (two int16 slots per word)"
#endif
#ifndef KP
#define KP 29
#endif
#ifndef MODELS
#define MODELS 1
#endif
/* WARP_KERNELS: which kernels the program holds, bits 1 SSV, 2 MSV, 4 VF (a build of one
 * launch compiles its own kernel only) */
#ifndef WARP_KERNELS
#define WARP_KERNELS 7
#endif
#define PAD_CODE KP
#ifndef W_SCRATCH_PARAM
#define W_SCRATCH_PARAM
#define W_SCRATCH_ARG
#endif
#define WARPS_PER_BLOCK (BLOCK / 32)
#define W_NEG16 (-32768)

/* The sequence of a lane's group for warp job wj: index s (-1 for an empty slot), first residue
 * and length; lmax = the warp's longest (rows every group of the warp runs). */
typedef struct Slot { int s; i64 off; int len; int lmax; } Slot;

W_FN Slot slot_of(W_SCRATCH_PARAM int g, int wj, int lane, W_IN(i64) offsets, W_IN(int) order, int nseq)
{
    Slot t;
    const int i = wj * (32 / g) + lane / g;
    t.s = i < nseq ? order[i] : -1;
    t.off = t.s >= 0 ? offsets[t.s] : 0;
    t.len = t.s >= 0 ? (int)(offsets[t.s + 1] - t.off) : 0;
    t.lmax = W_REDUCE_MAX(t.len);
    return t;
}

#define FOR_EACH_WARP_JOB(wj, G)                                                         \
    for (int wj = W_GROUP_ID * WARPS_PER_BLOCK + (W_LOCAL_ID >> 5);                      \
         wj < (nseq + 32 / (G) - 1) / (32 / (G)); wj += W_NUM_GROUPS * WARPS_PER_BLOCK)

/* FOR_EACH_ROW(G, residues, t, lig, x, statements...): the statements run with x = the residue
 * code of the lane's sequence, rows 0..lmax-1, PAD_CODE past its end (`continue` skips to the
 * next row; no preprocessor directives in them: macro arguments). PREFETCH: lane l of a group
 * loads row i0+l, row i0+r is shuffled from lane r. */
#if PREFETCH
#define FOR_EACH_ROW(G, residues, t, lig, x, ...)                                       \
    {                                                                                   \
        int cur_ = (lig) < (t).len ? (int)(residues)[(t).off + (lig)] : PAD_CODE;       \
        for (int i0_ = 0; i0_ < (t).lmax; i0_ += (G)) {                                 \
            const int j_ = i0_ + (G) + (lig);                                           \
            const int nxt_ = j_ < (t).len ? (int)(residues)[(t).off + j_] : PAD_CODE;   \
            const int n_ = min((G), (t).lmax - i0_);                                    \
            for (int r_ = 0; r_ < n_; r_++) {                                           \
                const int x = W_SHFL_IDX(cur_, r_, (G));                                \
                __VA_ARGS__                                                             \
            }                                                                           \
            cur_ = nxt_;                                                                \
        }                                                                               \
    }
#else
#define FOR_EACH_ROW(G, residues, t, lig, x, ...)                                       \
    for (int i_ = 0; i_ < (t).lmax; i_++) {                                             \
        const int x = i_ < (t).len ? (int)(residues)[(t).off + i_] : PAD_CODE;          \
        __VA_ARGS__                                                                     \
    }
#endif

W_FN int group_max(W_SCRATCH_PARAM int v)
{
#if GROUP == 32
    return W_REDUCE_MAX(v);
#else
#pragma unroll
    for (int d = GROUP / 2; d > 0; d /= 2) v = max(v, W_SHFL_XOR_G(v, d));
    return v;
#endif
}

/* ---- SSV / MSV element arithmetic */
#if SIMD16
/* int16 pairs. Exactness vs HMMER's saturating bytes: values stay in 0..255 and differ from the
 * byte recursion only after a value reached 255 - bias, i.e. after the overflow that the host
 * reports anyway (SSV: xE >= 255 - bias; MSV: xE + bias >= 255 ends the sequence). */
#define ELEMS_B 2
W_FN u32 splat_b(int x) { return 0x00010001u * (u32)(x & 0xffff); }
W_FN u32 vb_max(u32 a, u32 b) { return vs2_max(a, b); }
W_FN u32 vb_max3(u32 a, u32 b, u32 c) { return vs2_max3(a, b, c); }
W_FN int vb_lane_max(u32 v) { return max((int)(i16)(v & 0xffffu), (int)(i16)(v >> 16)); }
W_FN u32 vb_shift(W_SCRATCH_PARAM u32 v, int lig)
{
    const u32 carry = W_SHFL_UP_G(v >> 16);
    return (v << 16) | (lig == 0 ? 0u : carry);
}
/* SSV: profile word = bias - cost (-1024 for no cell); max(min(prev + bias - cost, 255), 0) */
W_FN u32 ssv_cell(u32 mpv, u32 pc, u32 biasv)
{ return vs2_addmin_relu(mpv, pc, 0x00ff00ffu); }
/* MSV: profile word = -cost; xbrow = min(xB + bias, 255); max(max(prev + bias, xbrow) - cost, 0) */
W_FN u32 msv_cell(u32 mpv, u32 pc, u32 biasv, u32 xbrow)
{ return vs2_addmax(vs2_addmax(mpv, biasv, xbrow), pc, 0u); }
W_FN int msv_xbrow(int xB, int bias) { return min(xB + bias, 255); }
#else
/* packed unsigned bytes (HMMER's own saturating arithmetic) */
#define ELEMS_B 4
W_FN u32 splat_b(int x) { return 0x01010101u * (u32)(x & 0xff); }
W_FN u32 vb_max(u32 a, u32 b) { return vu4_max(a, b); }
W_FN u32 vb_max3(u32 a, u32 b, u32 c) { return vu4_max(vu4_max(a, b), c); }
W_FN int vb_lane_max(u32 v)
{ return (int)max(max(v & 0xffu, (v >> 8) & 0xffu), max((v >> 16) & 0xffu, v >> 24)); }
W_FN u32 vb_shift(W_SCRATCH_PARAM u32 v, int lig)
{
    const u32 carry = W_SHFL_UP_G(v >> 24);
    return (v << 8) | (lig == 0 ? 0u : carry);
}
/* profile word = cost (255 for no cell) */
W_FN u32 ssv_cell(u32 mpv, u32 pc, u32 biasv)
{ return vu4_subus(vu4_addus(mpv, biasv), pc); }
W_FN u32 msv_cell(u32 mpv, u32 pc, u32 biasv, u32 xbrow)
{ return vu4_subus(vu4_addus(vu4_max(mpv, xbrow), biasv), pc); }
W_FN int msv_xbrow(int xB, int bias) { return xB; }
#endif

/* one cell of the SSV (msv = 0) or MSV recursion from its predecessor mpv */
W_FN u32 byte_cell(u32 mpv, u32 pc, int msv, u32 biasv, u32 xbrow)
{ return msv ? msv_cell(mpv, pc, biasv, xbrow) : ssv_cell(mpv, pc, biasv); }

#if FIXED_DIAG
/* One DP row over the fixed diagonal slots (dp[q]'s predecessor is dp[q] itself); c = the
 * residue's profile row at this row's offset; returns the elementwise row maximum.
 * FIXED_DIAG 2: vectors 2u and 2u + 1 of a lane read two adjacent words in one 8-byte load
 * (ring words 2u GROUP + 2 lig and + 1: c points at 2 lig), from the copy of the row that
 * starts at the offset's parity, so every such load is aligned; an odd last vector reads one
 * word (lig). */
#if FIXED_DIAG == 2
#define CELL_PAIRS (QB / 2)
#else
#define CELL_PAIRS 0
#endif
W_FN u32 byte_row(W_SCRATCH_PARAM u32 *dp, W_PROFILE c, int lig, int msv, u32 biasv, u32 xbrow)
{
    u32 rowmax = 0, held = 0;
#pragma unroll
    for (int q = 0; q < QB; q++) {
#if FIXED_DIAG == 2
        if (q < 2 * CELL_PAIRS) {
            if (q & 1) continue;
            const uint2 pw = PLOAD2(c + q * GROUP);
            dp[q] = byte_cell(dp[q], pw.x, msv, biasv, xbrow);
            dp[q + 1] = byte_cell(dp[q + 1], pw.y, msv, biasv, xbrow);
            rowmax = vb_max3(rowmax, dp[q], dp[q + 1]);
            continue;
        }
#endif
        const u32 sv = byte_cell(dp[q], PLOAD(c + q * GROUP - (FIXED_DIAG - 1) * lig), msv,
                                  biasv, xbrow);
        dp[q] = sv;
        if ((q - 2 * CELL_PAIRS) & 1) rowmax = vb_max3(rowmax, held, sv);
        else held = sv;
    }
    if ((QB - 2 * CELL_PAIRS) & 1) rowmax = vb_max(rowmax, held);
    return rowmax;
}
/* the words of one residue's (one model's) profile row: positions j and j + QB x GROUP for
 * j = 0 .. 2 QB GROUP - 1, so a row at offset o < QB x GROUP reads words o .. o + QB GROUP - 1 */
#if FIXED_DIAG == 2
/* two copies of the row, the second starting one word later: a row at offset o reads the copy
 * of o's parity from o rounded down to even */
#define ROW_WORDS (4 * QB * GROUP)
#define LIG_WORDS 2
#define DIAG_OFFSET(o) (((o) & 1) * (2 * QB * GROUP) + ((o) & ~1))
#else
#define ROW_WORDS (2 * QB * GROUP)
#define LIG_WORDS 1
#define DIAG_OFFSET(o) (o)
#endif
/* after a row: the offset moves one word; at the ring's half the words' halves swap roles */
W_FN int next_diag_row(u32 *dp, int o)
{
    if (++o < QB * GROUP) return o;
#pragma unroll
    for (int q = 0; q < MODELS * QB; q++) dp[q] = (dp[q] >> 16) | (dp[q] << 16);
    return 0;
}
#define DIAG_ROW_STATE int diag_o = 0;
#define NEXT_DIAG_ROW(dp) diag_o = next_diag_row(&dp[0][0], diag_o);
#else
/* One DP row of the SSV (msv = 0) or MSV diagonal recursion over the striped vectors
 * dp[0..QB-1]; returns the elementwise row maximum (pairs folded with a 3-way max). */
W_FN u32 byte_row(W_SCRATCH_PARAM u32 *dp, W_PROFILE c, int lig, int msv, u32 biasv, u32 xbrow)
{
    u32 rowmax = 0, held = 0;
#if ROW_INPLACE
    const u32 first = vb_shift(W_SCRATCH_ARG dp[QB - 1], lig);
#pragma unroll
    for (int q = QB - 1; q >= 0; q--) {
        const u32 pc = PLOAD(c + q * GROUP);
        const u32 mpv = q > 0 ? dp[q > 0 ? q - 1 : 0] : first;
        const u32 sv = byte_cell(mpv, pc, msv, biasv, xbrow);
        dp[q] = sv;
        if ((QB - 1 - q) & 1) rowmax = vb_max3(rowmax, held, sv);
        else held = sv;
    }
#else
    u32 mpv = vb_shift(W_SCRATCH_ARG dp[QB - 1], lig);
#pragma unroll
    for (int q = 0; q < QB; q++) {
        const u32 pc = PLOAD(c + q * GROUP);
        const u32 sv = byte_cell(mpv, pc, msv, biasv, xbrow);
        mpv = dp[q];
        dp[q] = sv;
        if (q & 1) rowmax = vb_max3(rowmax, held, sv);
        else held = sv;
    }
#endif
    if (QB & 1) rowmax = vb_max(rowmax, held);
    return rowmax;
}
#define ROW_WORDS (QB * GROUP)
#define LIG_WORDS 1
#define DIAG_OFFSET(o) 0
#define DIAG_ROW_STATE
#define NEXT_DIAG_ROW(dp)
#endif

#define PROFILE_WORDS_B ((KP + 1) * MODELS * ROW_WORDS)
/* the profile words of residue x for model m (lane lig's column; FIXED_DIAG: at the row's
 * offset diag_o, which DIAG_ROW_STATE declares in every SSV/MSV kernel) */
#define MODEL_ROW(x, m, lig) (P + (((x) * MODELS + (m)) * ROW_WORDS + LIG_WORDS * (lig) +  \
                                     DIAG_OFFSET(diag_o)))

/* Each model's scalars: bias_[m] (and base_[m], tec_[m]) and the stride of the [MODELS][stride]
 * outputs and tjbm; one model takes them as arguments (stride unused). */
#if MODELS == 1
#define SSV_MODEL_PARAMS int bias
#define MSV_MODEL_PARAMS int bias, int base, int tec
#define MODEL_SCALARS const int bias_[1] = {bias}; const int stride = 0;
#define MSV_MODEL_SCALARS MODEL_SCALARS const int base_[1] = {base}, tec_[1] = {tec};
#else
#define SSV_MODEL_PARAMS W_IN(int) mpar, int stride
#define MSV_MODEL_PARAMS SSV_MODEL_PARAMS
#define MODEL_SCALARS int bias_[MODELS];                                                 \
    _Pragma("unroll") for (int m = 0; m < MODELS; m++) bias_[m] = mpar[4 * m];
#define MSV_MODEL_SCALARS MODEL_SCALARS int base_[MODELS], tec_[MODELS];                 \
    _Pragma("unroll") for (int m = 0; m < MODELS; m++) {                                  \
        base_[m] = mpar[4 * m + 1]; tec_[m] = mpar[4 * m + 2]; }
#endif

#if WARP_KERNELS & 1
/* profile: [KP+1][MODELS][QB][GROUP] words (row KP: the pad residue); out_xe [MODELS][stride] */
W_KERNEL(ssv_xe_warp)(W_IN(u32) profile, W_IN(u8) residues, W_IN(i64) offsets,
                      W_IN(int) order, int nseq, SSV_MODEL_PARAMS, W_OUT(int) out_xe)
{
    W_KERNEL_PROLOGUE
    PROFILE_BEGIN(profile, PROFILE_WORDS_B)
    MODEL_SCALARS
    const int lane = W_LOCAL_ID & 31, lig = lane & (GROUP - 1);
    u32 biasv[MODELS];
#pragma unroll
    for (int m = 0; m < MODELS; m++) biasv[m] = splat_b(bias_[m]);
    FOR_EACH_WARP_JOB(wj, GROUP) {
        const Slot t = slot_of(W_SCRATCH_ARG GROUP, wj, lane, offsets, order, nseq);
        u32 dp[MODELS][QB], xEv[MODELS];
#pragma unroll
        for (int m = 0; m < MODELS; m++) {
            xEv[m] = 0;
#pragma unroll
            for (int q = 0; q < QB; q++) dp[m][q] = 0;
        }
        DIAG_ROW_STATE
        /* SSV has no J state: xE is the maximum over every cell, no reduction per row */
        FOR_EACH_ROW(GROUP, residues, t, lig, x,
            _Pragma("unroll")
            for (int m = 0; m < MODELS; m++)
                xEv[m] = vb_max(xEv[m], byte_row(W_SCRATCH_ARG dp[m], MODEL_ROW(x, m, lig), lig,
                                                 0, biasv[m], 0u));
            NEXT_DIAG_ROW(dp)
        )
#pragma unroll
        for (int m = 0; m < MODELS; m++) {
            const int best = group_max(W_SCRATCH_ARG vb_lane_max(xEv[m]));
            if (lig == 0 && t.s >= 0) out_xe[m * stride + t.s] = 128 + best;
        }
    }
}
#endif

#if WARP_KERNELS & 2
/* LAZY_XE: model m's row xE only where some lane's row maximum reaches thr[m] (a vote) */
#if LAZY_XE
#define MSV_LAZY_BEGIN(m) xEall[m] = vb_max(xEall[m], rowmax); \
    if (W_ANY(vb_lane_max(rowmax) >= thr[m])) {
#define MSV_LAZY_END(m) \
    thr[m] = over[m] ? 1 << 20 : min(255 - bias_[m], jtop[m] + tec_[m] + 1); }
#define MSV_XJ_ROW(m)
#else
#define MSV_LAZY_BEGIN(m)
#define MSV_LAZY_END(m)
#define MSV_XJ_ROW(m) xJ[m] = max(xJ[m], max(xE - tec_[m], 0));
#endif

/* tjbm, out_xj: [MODELS][stride] */
W_KERNEL(msv_xj_warp)(W_IN(u32) profile, W_IN(u8) residues, W_IN(i64) offsets,
                      W_IN(int) order, int nseq, MSV_MODEL_PARAMS, W_IN(u8) tjbm,
                      W_OUT(int) out_xj)
{
    W_KERNEL_PROLOGUE
    PROFILE_BEGIN(profile, PROFILE_WORDS_B)
    MSV_MODEL_SCALARS
    const int lane = W_LOCAL_ID & 31, lig = lane & (GROUP - 1);
    u32 biasv[MODELS];
#pragma unroll
    for (int m = 0; m < MODELS; m++) biasv[m] = splat_b(bias_[m]);
    FOR_EACH_WARP_JOB(wj, GROUP) {
        const Slot t = slot_of(W_SCRATCH_ARG GROUP, wj, lane, offsets, order, nseq);
        /* per model: xJ is HMMER's max over rows of max(xE - tec, 0); xB = max(max(base, xJ) -
         * jbm, 0) changes only on rows where xE - tec > jtop = max(base, xJ) */
        u32 dp[MODELS][QB], xbv[MODELS];
        int jbm[MODELS], jtop[MODELS], xJ[MODELS], over[MODELS];
#if LAZY_XE
        u32 xEall[MODELS];
        int thr[MODELS];                      /* a row max >= thr[m] needs model m's exact xE */
#endif
#pragma unroll
        for (int m = 0; m < MODELS; m++) {
#pragma unroll
            for (int q = 0; q < QB; q++) dp[m][q] = 0;
            jbm[m] = t.s >= 0 ? tjbm[m * stride + t.s] : 0;
            jtop[m] = base_[m]; xJ[m] = 0; over[m] = 0;
            xbv[m] = splat_b(msv_xbrow(max(base_[m] - jbm[m], 0), bias_[m]));
#if LAZY_XE
            xEall[m] = 0;
            thr[m] = min(255 - bias_[m], jtop[m] + tec_[m] + 1);
#endif
        }
        DIAG_ROW_STATE
        FOR_EACH_ROW(GROUP, residues, t, lig, x,
            _Pragma("unroll")
            for (int m = 0; m < MODELS; m++) {
                const u32 rowmax = byte_row(W_SCRATCH_ARG dp[m], MODEL_ROW(x, m, lig), lig, 1,
                                            biasv[m], xbv[m]);
                MSV_LAZY_BEGIN(m)
                    const int xE = group_max(W_SCRATCH_ARG vb_lane_max(rowmax));
                    if (!over[m]) {
                        if (xE + bias_[m] >= 255) over[m] = 1;
                        else if (xE - tec_[m] > jtop[m]) {
                            jtop[m] = xE - tec_[m];
                            xbv[m] = splat_b(msv_xbrow(max(jtop[m] - jbm[m], 0), bias_[m]));
                        }
                        MSV_XJ_ROW(m)
                    }
                MSV_LAZY_END(m)
            }
            NEXT_DIAG_ROW(dp)
        )
#pragma unroll
        for (int m = 0; m < MODELS; m++) {
#if LAZY_XE
            xJ[m] = max(group_max(W_SCRATCH_ARG vb_lane_max(xEall[m])) - tec_[m], 0);
#endif
            if (lig == 0 && t.s >= 0) out_xj[m * stride + t.s] = over[m] ? -1 : xJ[m];
        }
    }
}
#endif

#if WARP_KERNELS & 4
/* ---- Viterbi filter (int16 pairs, 32 lanes x 2 = 64 elements per vector)
 * profile: match [KP+1][QW][32]; VF_DPX: then emission clamps lo, hi (same shape); then tsc
 * [8][QW][32] (BM MM IM DM MD MI II DD, HMMER's masks); VF_DPX: then -32768 - tsc (same shape) */
#define VW (QW * 32)
#if VF_DPX
#define VF_TSC_OFF (3 * (KP + 1) * VW)
#define PROFILE_WORDS_W (VF_TSC_OFF + 16 * VW)
#else
#define VF_TSC_OFF ((KP + 1) * VW)
#define PROFILE_WORDS_W (VF_TSC_OFF + 8 * VW)
#endif

W_FN u32 shift_words(W_SCRATCH_PARAM u32 v, int lane)
{
    u32 carry = W_SHFL_UP32(v >> 16);
    return (v << 16) | (lane == 0 ? 0x8000u : carry);
}

/* -32768 - t per int16 half (t <= 0): ~t + 0x8001 with a wrapping add */
W_FN u32 neg_floor(u32 t) { return vs2_add(~t, 0x80018001u); }
W_FN u32 vf_tadd(u32 a, u32 t)
{ return vs2_add(vs2_max(a, neg_floor(t)), t); }
W_FN u32 vf_taddmax(u32 a, u32 t, u32 acc)
{ return vs2_addmax(vs2_max(a, neg_floor(t)), t, acc); }

W_FN int lane_max_s16x2(u32 v)
{
    return max((int)(i16)(v & 0xffffu), (int)(i16)(v >> 16));
}

#if VF_DPX
/* saturating sv + e as min(max(sv, lo), hi) + e, lo = -32768 - min(e, 0), hi = 32767 - max(e, 0) */
#define VF_EMIT(sv, q) vs2_add(vs2_min(vs2_max((sv), PLOAD(rsc + (KP + 1) * VW + (q) * 32)), \
                                       PLOAD(rsc + 2 * (KP + 1) * VW + (q) * 32)),           \
                               PLOAD(rsc + (q) * 32))
#else
#define VF_EMIT(sv, q) vs2_addss((sv), PLOAD(rsc + (q) * 32))
#endif

/* One row of the Viterbi filter's M/I/D recursion over the vectors: in: mpv, dpv, ipv = the
 * shifted last vectors of the previous row; out: M_, I_, D_ (D_ with the M->D row only, D_[0]
 * the -infinity that the lazy-F pass starts from), dcv = the M->D flow out of the last vector,
 * xEv / Dmaxv the elementwise maxima of M and of the M->D values. */
#if ROW_INPLACE
/* descending q: vector q reads vector q-1's old values (not yet overwritten) and writes its own;
 * I_[q] reads the old M_[q], I_[q] before M_[q] is overwritten; D_[q+1] gets the M->D flow of
 * vector q. Row maxima folded three at a time (a held value every other vector). */
#define VF_ROW(mpv0, dpv0, ipv0)                                                            \
    {                                                                                       \
        u32 heldE = neg, heldD = neg;                                                       \
        _Pragma("unroll")                                                                   \
        for (int q = QW - 1; q >= 0; q--) {                                                 \
            const int qm = q > 0 ? q - 1 : 0;                                               \
            u32 sv = TADD(xBv, 0, q);                                                       \
            sv = TADDMAX(q > 0 ? M_[qm] : (mpv0), 1, q, sv);                                \
            sv = TADDMAX(q > 0 ? I_[qm] : (ipv0), 2, q, sv);                                \
            sv = TADDMAX(q > 0 ? D_[qm] : (dpv0), 3, q, sv);                                \
            sv = VF_EMIT(sv, q);                                                            \
            I_[q] = TADDMAX(I_[q], 6, q, TADD(M_[q], 5, q));                                \
            M_[q] = sv;                                                                     \
            const u32 dc = TADD(sv, 4, q);                                                  \
            if (q == QW - 1) dcv = dc;                                                      \
            else D_[q < QW - 1 ? q + 1 : 0] = dc;                                           \
            if ((QW - 1 - q) & 1) {                                                         \
                xEv = vs2_max3(xEv, heldE, sv);                                             \
                Dmaxv = vs2_max3(Dmaxv, heldD, dc);                                         \
            } else {                                                                        \
                heldE = sv; heldD = dc;                                                     \
            }                                                                               \
        }                                                                                   \
        if (QW & 1) { xEv = vs2_max(xEv, heldE); Dmaxv = vs2_max(Dmaxv, heldD); }           \
        D_[0] = neg;                                                                        \
    }
#else
#define VF_ROW(mpv0, dpv0, ipv0)                                                            \
    _Pragma("unroll")                                                                       \
    for (int q = 0; q < QW; q++) {                                                          \
        u32 sv = TADD(xBv, 0, q);                                                           \
        sv = TADDMAX(mpv0, 1, q, sv);                                                       \
        sv = TADDMAX(ipv0, 2, q, sv);                                                       \
        sv = TADDMAX(dpv0, 3, q, sv);                                                       \
        sv = VF_EMIT(sv, q);                                                                \
        xEv = vs2_max(xEv, sv);                                                             \
        mpv0 = M_[q]; dpv0 = D_[q]; ipv0 = I_[q];                                           \
        M_[q] = sv;                                                                         \
        D_[q] = dcv;                                                                        \
        dcv = TADD(sv, 4, q);                                                               \
        Dmaxv = vs2_max(Dmaxv, dcv);                                                        \
        I_[q] = TADDMAX(ipv0, 6, q, TADD(mpv0, 5, q));                                      \
    }
#endif

W_KERNEL(vf_xc_warp)(W_IN(u32) profile, W_IN(u8) residues, W_IN(i64) offsets,
                     W_IN(int) order, int nseq, int base, int e_loop, int e_move, int ddbound,
                     W_IN(i16) move, W_OUT(int) out_xc)
{
    W_KERNEL_PROLOGUE
    PROFILE_BEGIN(profile, PROFILE_WORDS_W)
    const int lane = W_LOCAL_ID & 31;
    const u32 neg = 0x80008000u;
    W_PROFILE tsc = P + VF_TSC_OFF + lane;
#define TV(j, q) PLOAD(tsc + ((j) * QW + (q)) * 32)
#if VF_DPX && VF_NTSC_ALU
#define TADD(a, j, q) vf_tadd((a), TV(j, q))
#define TADDMAX(a, j, q, acc) vf_taddmax((a), TV(j, q), (acc))
#elif VF_DPX
#define TN(j, q) (((VF_NTSC_MASK >> (j)) & 1) ? neg_floor(TV(j, q))                    \
                                              : PLOAD(tsc + ((8 + (j)) * QW + (q)) * 32))
    /* a + tsc saturated at -32768: tsc <= 0, so max(a, -32768 - tsc) + tsc is exact and in range */
#define TADD(a, j, q) vs2_add(vs2_max((a), TN(j, q)), TV(j, q))
#define TADDMAX(a, j, q, acc) vs2_addmax(vs2_max((a), TN(j, q)), TV(j, q), (acc))
#else
#define TADD(a, j, q) vs2_addss((a), TV(j, q))
#define TADDMAX(a, j, q, acc) vs2_max(vs2_addss((a), TV(j, q)), (acc))
#endif
    FOR_EACH_WARP_JOB(wj, 32) {
        const Slot t = slot_of(W_SCRATCH_ARG 32, wj, lane, offsets, order, nseq);
        u32 M_[QW], I_[QW], D_[QW];
#pragma unroll
        for (int q = 0; q < QW; q++) { M_[q] = neg; I_[q] = neg; D_[q] = neg; }
        const int mv = t.s >= 0 ? move[t.s] : 0, xN = base;
        int xB = xN + mv, xJ = W_NEG16, xC = W_NEG16;
        bool over = false;
        FOR_EACH_ROW(32, residues, t, lane, x,
            if (over) continue;                             /* warp-uniform (one sequence) */
            W_PROFILE rsc = P + x * VW + lane;
            const u32 xBv = 0x00010001u * (u32)(unsigned short)xB;
            u32 mpv = shift_words(W_SCRATCH_ARG M_[QW - 1], lane);
            u32 dpv = shift_words(W_SCRATCH_ARG D_[QW - 1], lane);
            u32 ipv = shift_words(W_SCRATCH_ARG I_[QW - 1], lane);
            u32 dcv = neg, xEv = neg, Dmaxv = neg;
            VF_ROW(mpv, dpv, ipv)
            const int xE = W_REDUCE_MAX(lane_max_s16x2(xEv));
            if (xE >= 32767) { over = true; continue; }
            xC = max(xC, xE + e_move);
            xJ = max(xJ, xE + e_loop);
            xB = max(xJ + mv, xN + mv);
            const int Dmax = W_REDUCE_MAX(lane_max_s16x2(Dmaxv));
            dcv = shift_words(W_SCRATCH_ARG dcv, lane);
            if (Dmax + ddbound > xB) {
                /* lazy F: one full D->D pass, then more while a segment boundary still improves D */
_Pragma("unroll")
                for (int q = 0; q < QW; q++) {
                    D_[q] = vs2_max(dcv, D_[q]);
                    dcv = TADD(D_[q], 7, q);
                }
                bool again = true;
                while (again) {
                    dcv = shift_words(W_SCRATCH_ARG dcv, lane);
                    again = false;
                    int q = 0;
_Pragma("unroll")
                    for (q = 0; q < QW; q++) {
                        if (!W_ANY(vs2_max(dcv, D_[q]) != D_[q])) break;
                        D_[q] = vs2_max(dcv, D_[q]);
                        dcv = TADD(D_[q], 7, q);
                    }
                    again = (q == QW);
                }
            } else {
                D_[0] = dcv;
            }
        )
        if (lane == 0 && t.s >= 0) out_xc[t.s] = over ? 32768 : xC;
    }
#undef TV
#undef TN
#undef TADD
#undef TADDMAX
}
#endif

#endif
