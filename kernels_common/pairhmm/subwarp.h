/* Sub-warp Pair-HMM forward kernel (gpuPairHMM class): a group of SW_P threads aligns one read to
 * each haplotype of its batch; thread t keeps read rows t*SW_K .. t*SW_K+SW_K-1 of the current
 * row tile in registers; the wavefront runs along the haplotype (thread t is one column behind
 * thread t-1); the last row's M/I/D and the haplotype code move to the next thread with
 * __shfl_up_sync. No shared or global memory in the inner loop except the emission table.
 *
 * Reformulated recurrence (SW_SCALED=1, 6 floating-point instructions per cell). With GATK's
 *   M[i][j] = e_ij (mm_i M[i-1][j-1] + gm_i (I[i-1][j-1] + D[i-1][j-1]))
 *   I[i][j] = mi_i M[i-1][j] + ii_i I[i-1][j]
 *   D[i][j] = md_i M[i][j-1] + dd_i D[i][j-1]        (ii_i = dd_i = gap_i, gm_i = 1 - gap_i)
 * the kernel keeps X[i] = s_i M[i] (s_i = mi_{i+1}; 1 on the last row), I unscaled and
 * Dp[i] = gm_{i+1} D[i] (0 on the last row), so that
 *   X[i][j]  = E_i[h_j] * fma(A_i, X[i-1][j-1], fma(gm_i, I[i-1][j-1], Dp[i-1][j-1]))   3 ops
 *   I[i][j]  = fma(gap_i, I[i-1][j], X[i-1][j])                                        1 op
 *   Dp[i][j] = fma(gap_i, Dp[i][j-1], Cd_i * X[i][j-1])                                 2 ops
 * with E_i[c] = s_i * emission(c), A_i = mm_i / mi_i, Cd_i = gm_{i+1} md_i / s_i. Every product
 * reproduces GATK's term exactly (up to rounding), for per-position qualities of any kind.
 * Rows past the read's end (bin padding) are identity rows (E = 0, A = gm = Cd = 0, gap = 1):
 * the first one turns into I = M[m] + I[m], later ones pass it down, so the group's last row
 * always holds the column's contribution M[m][j] + I[m][j] in X + I.
 * SW_SCALED=0 keeps GATK's form (X = M, Dp = D, A = mm, Cd = md; 8 instructions per cell) so the
 * benchmark can show what the reformulation buys.
 *
 * Five instructions per cell (SW_SCALED=2, the float32 kernels): the same X, I unscaled, and D kept
 * as Z[i] = D[i] s_i / md_i, whose recurrence then has no coefficient on X; gm_i moves into the
 * emission table:
 *   X[i][j] = E_i[h_j] * fma(A_i, X[i-1][j-1], fma(B_i, Z[i-1][j-1], I[i-1][j-1]))      3 ops
 *   I[i][j] = fma(gap_i, I[i-1][j], X[i-1][j])                                        1 op
 *   Z[i][j] = fma(gap_i, Z[i][j-1], X[i][j-1])                                        1 op
 * with E_i[c] = s_i gm_i emission(c), A_i = mm_i / (mi_i gm_i), B_i = md_{i-1} / mi_i (1 on row 0,
 * whose Z above is the injected C/n). Three coefficients per row instead of four (K fewer
 * registers). Z = sum_k gap^k X[i][j-1-k] stays within X / (1 - gap), as Dp did. A gap quality of 0
 * (gm = 0) cannot be factored out: A_i is then infinite or NaN and E_i zero, so the row's X is NaN,
 * the pair's sum is, and the pair goes to the recompute, whose double kernels keep the 6-op form.
 *
 * Written once for CUDA (kernels_cuda/pairhmm/subwarp.cu) and OpenCL (kernels_opencl/pairhmm/
 * subwarp.cl); the including file spells its API:
 *   SW_FN                     a device function's qualifiers
 *   SW_KERNEL(name)           the kernel's declaration head
 *   SW_IN(T), SW_OUT(T)       read-only / writable global array of T;  SW_GLOBAL  global memory
 *   SW_TABLE_MEM              the emission table's memory (shared / local)
 *   SW_TABLE_DECL(name)       declares the table: SW_GROUPS * SW_GROUP_STRIDE RealQuads
 *   SW_I64                    64-bit integer type
 *   SW_LOCAL_ID, SW_GROUP_ID, SW_NUM_GROUPS   thread in block, block index, blocks
 *   SW_GROUP_SYNC()           synchronizes the SW_P threads of a group (group_mask in scope)
 *   SW_SHIFT_UP(ux, ui, ud, c, x, i, d)  every thread but a group's first gets its left
 *                             neighbour's x, i, d (into ux, ui, ud) and c (into c)
 *   SW_ASSUME(cond)           a hint that cond holds
 *   SW_EXP10F(x), SW_EXP10D(x)  10^x in float / double
 *   SW_RESULT_PARAMS          the kernel's result parameters
 *   SW_STORE(o, sum)          stores pair o's float sum (item, h in scope), or with
 *                             SW_KEEPS(sum) false (below) queues it for the recompute
 *   SW_KERNEL_PROLOGUE        declarations at the kernel's top (local exchange buffers)
 * and may spell (a default follows the body's helpers):
 *   SW_KERNEL_PARAMS          the kernel's parameters; a spelling that passes other ones
 *                             declares in SW_KERNEL_PROLOGUE every name the default has
 * and, with SW_EXP_SCALE (exponents, below):
 *   SW_SHFL_UP_BY(v, n)       lane l gets v of lane l - n (its own for l < n), any 32-bit type
 *   SW_SHFL_FROM(v, src)      every lane gets v of group lane src
 *   SW_GROUP_BALLOT(pred)     bit l set when pred holds on group lane l
 *   SW_GROUP_ANY(pred)        pred holds on some lane of the group
 *   SW_CLZ(x)                 leading zero bits of a 32-bit unsigned
 *   SW_FLOAT_BITS(x), SW_BITS_FLOAT(i)   a float's bits as int and back
 *   SW_STORE_SCALED(o, sum, e, bad)      stores pair o's result log10(sum) - e log10(2) - log10 C,
 *                             or hands the pair to the double recompute when bad (or sum is 0,
 *                             infinite or NaN)
 *
 * Exponents (SW_EXP_SCALE=1). A thread's values are the forward values x C x 2^e with its own int
 * e; what it receives from its left neighbour (or the boundary row of the tile above) is
 * multiplied by 2^(e - e_sender - SW_EXP_SHIFT), exact as powers of two are (the sender's last
 * rows are held 2^SW_EXP_SHIFT up, subwarp_defs.h). Every SW_EXP_EVERY unrolled
 * iterations each thread takes its largest value (I of every SW_EXP_STRIDE-th row -- I[r+1] >=
 * X[r] and >= gap I[r] -- the last X and I, what came in, and the reporting thread's running sum) and, when its binade lies outside
 * [SW_EXP_LOW, SW_EXP_HIGH], multiplies its whole state by the power of two that brings it to
 * SW_EXP_TARGET. Threads start at an insertion prior (the first columns they see are insertions
 * straight down from the tile's top: binades lost = sum of the gap qualities above x log2(10)/10),
 * threads the wavefront has not reached take the scale of the last live thread above them, and a
 * gap over SW_EXP_MAX_GAP binades to the sender (values one float factor cannot convert) hands
 * the pair to the double recompute. The NumPy emulation tests/helpers/subwarp_scaling.py mirrors this step
 * for step (and is what proves it: docs/subwarp-design.md).
 */
#ifndef PAIRHMM_SUBWARP_H
#define PAIRHMM_SUBWARP_H

/* SW_EXTRA_WORK (percent, default 0): the kernel aligns its first SW_EXTRA_WORK % of items a
 * second time and stores their results again, unchanged -- that much more work under the same
 * backend name, the regression gate's own check (docs/regression-gate.md; the host sets it from
 * HMMBENCH_SUBWARP_EXTRA_WORK and records it). A pair aligned again is never queued for the
 * recompute again (SW_REDONE). */
#ifndef SW_EXTRA_WORK
#define SW_EXTRA_WORK 0
#endif

#include "pairhmm/subwarp_defs.h"

#if SW_DOUBLE
#define sw_exp10(x) SW_EXP10D(x)
#else
#define sw_exp10(x) SW_EXP10F(x)
#endif

/* Shared-memory emission table, per group: quads of 4 rows, index (code, quad, lane) so that the
 * lanes of a group read consecutive 16-byte words (no bank conflicts for any mix of codes). */
typedef struct SW_ALIGNED(4 * sizeof(real_t)) RealQuad {
    real_t v[4];
} RealQuad;
/* Code stride padded to 128 bytes; groups of 4 lanes staggered by 64 bytes so two groups sharing
 * a quarter-warp use the other half of the banks. */
#define SW_CODE_STRIDE ((SW_Q * SW_P * (int)sizeof(RealQuad) + 127) / 128 * 128 / (int)sizeof(RealQuad))
#define SW_GROUP_STRIDE (SW_CODES * SW_CODE_STRIDE + (SW_P == 4 ? 64 / (int)sizeof(RealQuad) : 0))

SW_FN real_t phred_to_prob(int q) {
    return sw_exp10((real_t)(-0.1) * (real_t)q);
}

/* The haplotype code of column c of a haplotype of n bases; the pad code (zero emission) past
 * its end. */
SW_FN int sw_code_at(const SW_GLOBAL unsigned char* hb, int c, int n) {
    return c < n ? hb[c] : SW_PAD_CODE;
}

/* SW_KEEPS(sum): whether a pair's float32 sum is kept (else SW_STORE queues it for the
 * recompute): at least SW_F32_MIN_ACCEPTED, or with SW_F32_LOW_FLOOR at least that when the read
 * is longer than SW_F32_LOW_FLOOR_ABOVE and its insertion qualities past the first base are all at
 * most SW_F32_LOW_FLOOR_IQ (subwarp_defs.h). The qualities are read by the storing lane, for sums
 * between the two floors only. */
#ifdef SW_F32_LOW_FLOOR
SW_FN bool sw_keeps_low(real_t sum, SW_IN(unsigned char) iq, int m) {
    if (m <= SW_F32_LOW_FLOOR_ABOVE || !(sum >= (real_t)SW_F32_LOW_FLOOR)) return false;
    int hi = 0;
#pragma unroll 8
    for (int pos = 1; pos < m; ++pos) hi = max(hi, (int)iq[pos]);
    return hi <= SW_F32_LOW_FLOOR_IQ;
}
#define SW_KEEPS(sum) ((sum) >= (real_t)SW_F32_MIN_ACCEPTED || sw_keeps_low((sum), iq, m))
#else
#define SW_KEEPS(sum) ((sum) >= (real_t)SW_F32_MIN_ACCEPTED)
#endif

#if SW_EXP_SCALE
/* floor(log2 x) of a positive float (denormals read -127), 2^k for k in [-126, 127], and the
 * conversion 2^d of received values as two factors applied one after the other (the second is
 * 1 up to d = 126; the first is 0 below -126: what comes in is then below anything held). */
SW_FN int sw_binade(float x) { return ((SW_FLOAT_BITS(x) >> 23) & 0xFF) - 127; }
SW_FN float sw_pow2(int k) { return SW_BITS_FLOAT((k + 127) << 23); }
SW_FN float sw_factor(int d) { return d < -126 ? 0.0f : sw_pow2(min(d, 126)); }
SW_FN float sw_factor2(int d) { return sw_pow2(max(0, min(d - 126, 126))); }
/* The first factor a lane converts what it receives by; lane 0 of a single tile takes 0
 * (SW_LANE0_BY_FACTOR: its row above then comes from the conversion, see the kernel). */
SW_FN float sw_in_factor(int d, int lane) {
    return SW_LANE0_FMA && lane == 0 ? 0.0f : sw_factor(d);
}
/* A thread's gap g to its sender converts by 2^(g - SW_EXP_SHIFT) (the sender's last rows are
 * held 2^SW_EXP_SHIFT up): as two factors only where SW_EXP_TWO_FACTORS. */
#define SW_IN_GAP(g) ((g) - SW_EXP_SHIFT)

/* The insertion prior of a thread whose rows start at row0 (an exclusive sum over the group's
 * threads of their rows' gap qualities, in binades). */
SW_FN int insertion_prior(SW_IN(unsigned char) gq, int row0, int m, int lane,
                          unsigned group_mask) {
    float own = 0.0f;
#pragma unroll
    for (int r = 0; r < SW_K; ++r)
        if (row0 + r < m) own += (float)gq[row0 + r];
    own *= 0.33219281f;  /* log2(10) / 10 */
    float incl = own;
#pragma unroll
    for (int d = 1; d < SW_P; d *= 2) {
        const float v = SW_SHFL_UP_BY(incl, d);
        if (lane >= d) incl += v;
    }
    (void)group_mask;
    return (int)rint(incl - own);
}
#endif

/* Per-row coefficients of one thread's rows (arrays indexed only by unrolled constants). */
typedef struct Rows {
#if SW_SCALED == 2
    real_t A[SW_K], B[SW_K], gap[SW_K];
    real_t gap_i_last;  /* the last row's gap in the I recurrence (SW_EXP_SHIFT) */
#else
    real_t A[SW_K], gm[SW_K], gap[SW_K], Cd[SW_K];
#endif
#if !SW_SCALED
    real_t mi[SW_K];
#endif
#if !SW_EMIS_TABLE
    real_t em_match[SW_K], em_mismatch[SW_K];
    unsigned match_bits[SW_K];  /* bit c set when hap code c matches this row's read base */
#endif
} Rows;

/* Fill the thread's rows (read positions row0 .. row0+SW_K-1) and, with the table, its part of
 * the group's emission table. */
SW_FN void setup_rows(Rows* R, SW_TABLE_MEM RealQuad* tbl_lane, int row0, int m,
        SW_IN(unsigned char) bases, SW_IN(unsigned char) bq, SW_IN(unsigned char) iq,
        SW_IN(unsigned char) dq, SW_IN(unsigned char) gq) {
#if SW_EMIS_TABLE
    real_t emis[SW_CODES][SW_K];
#endif
#pragma unroll
    for (int r = 0; r < SW_K; ++r) {
        const int pos = row0 + r;
        real_t A = 0, gm = 0, gap = 1, Cd = 0, match = 0, mismatch = 0;
#if !SW_SCALED
        real_t mi_row = 1;
#endif
        int rb = SW_N_CODE;
        if (pos < m) {
            const real_t e = phred_to_prob(bq[pos]);
            const real_t mi = phred_to_prob(iq[pos]);
            const real_t md = phred_to_prob(dq[pos]);
            gap = phred_to_prob(gq[pos]);
            gm = (real_t)1 - gap;
            /* GATK4 clamps M->M at 0 (only bites when ins + del error > 1). */
            const real_t mm = (real_t)1 - min((real_t)1, mi + md);
#if SW_SCALED
            real_t s = 1;
            if (pos + 1 < m) s = phred_to_prob(iq[pos + 1]);
#if SW_SCALED == 2
            A = mm / (mi * gm);  /* gm = 0: infinite or NaN (see the header) */
            Cd = pos > 0 ? phred_to_prob(dq[pos - 1]) / mi : (real_t)1;  /* B */
            s *= gm;
#else
            A = mm / mi;
            real_t gm_next = 0;
            if (pos + 1 < m) gm_next = (real_t)1 - phred_to_prob(gq[pos + 1]);
            Cd = gm_next * md / s;
#endif
#else
            const real_t s = 1;
            A = mm;
            Cd = md;
            mi_row = mi;
#endif
            rb = bases[pos];
            match = ((real_t)1 - e) * s;
            mismatch = rb == SW_N_CODE ? match : e / (real_t)3 * s;
        }
#if SW_EXP_SCALE && SW_EXP_SHIFT
        /* The last two rows 2^SW_EXP_SHIFT up: their emissions carry the factor, the last
         * row's A and B take it back from the row above's X and Dp (its I, one row behind in
         * the 5-op form, is not up: setup's gap_i_last brings it up in the I recurrence). */
        if (r >= SW_K - 2) {
            match *= sw_pow2(SW_EXP_SHIFT);
            mismatch *= sw_pow2(SW_EXP_SHIFT);
        }
        if (r == SW_K - 1) {
            A *= sw_pow2(-SW_EXP_SHIFT);
            Cd *= sw_pow2(-SW_EXP_SHIFT);
        }
#endif
#if SW_SCALED == 2
        R->A[r] = A; R->B[r] = Cd; R->gap[r] = gap;
#if SW_EXP_SCALE && SW_EXP_SHIFT
        if (r == SW_K - 1) R->gap_i_last = gap * sw_pow2(SW_EXP_SHIFT);
#else
        if (r == SW_K - 1) R->gap_i_last = gap;
#endif
        (void)gm;
#else
        R->A[r] = A; R->gm[r] = gm; R->gap[r] = gap; R->Cd[r] = Cd;
#endif
#if !SW_SCALED
        R->mi[r] = mi_row;
#endif
#if SW_EMIS_TABLE
#pragma unroll
        for (int c = 0; c < 4; ++c) emis[c][r] = rb == c ? match : mismatch;
        emis[SW_N_CODE][r] = match;
        emis[SW_PAD_CODE][r] = 0;
#else
        R->em_match[r] = match;
        R->em_mismatch[r] = mismatch;
        R->match_bits[r] = rb == SW_N_CODE ? 0x1Fu : ((1u << rb) | (1u << SW_N_CODE));
#endif
    }
#if SW_EMIS_TABLE
#pragma unroll
    for (int c = 0; c < SW_CODES; ++c)
#pragma unroll
        for (int q = 0; q < SW_Q; ++q) {
            RealQuad v;
#pragma unroll
            for (int u = 0; u < 4; ++u) v.v[u] = emis[c][4 * q + u];
            tbl_lane[c * SW_CODE_STRIDE + q * SW_P] = v;
        }
#endif
}

#ifndef SW_KERNEL_PARAMS
#define SW_KERNEL_PARAMS                                                             \
    SW_IN(SwItem) items, SW_IN(int) range, int n_max,                                \
    SW_IN(unsigned char) read_bases, SW_IN(unsigned char) base_q,                    \
    SW_IN(unsigned char) ins_q, SW_IN(unsigned char) del_q,                          \
    SW_IN(unsigned char) gcp_q, SW_IN(SW_I64) read_off,                              \
    SW_IN(unsigned char) hap_bases, SW_IN(SW_I64) hap_off,                           \
    SW_RESULT_PARAMS,                                                                \
    SW_OUT(RealQuad) scratch, int scratch_stride
#endif
SW_KERNEL(subwarp_forward)(SW_KERNEL_PARAMS) {
    SW_KERNEL_PROLOGUE
    const int lane = SW_LOCAL_ID % SW_P;
    const int group = SW_LOCAL_ID / SW_P;
    const unsigned group_mask = (SW_P == 32 ? 0xffffffffu
                                 : ((1u << SW_P) - 1u) << (SW_LOCAL_ID % 32 / SW_P * SW_P));
#if SW_EMIS_TABLE
    SW_TABLE_DECL(table);
    SW_TABLE_MEM RealQuad* const tbl_lane = table + group * SW_GROUP_STRIDE + lane;
#else
    SW_TABLE_MEM RealQuad* const tbl_lane = 0;
#endif
#if SW_MULTI_TILE
    SW_GLOBAL RealQuad* const scratch_group = scratch
        + (SW_I64)(SW_GROUP_ID * SW_GROUPS + group) * scratch_stride;
#endif
    Rows R;
    /* Items range[0] .. range[0] + range[1] - 1 (both written on the device: by the layout
     * kernels for a bin, by the float32 kernels for a recompute queue; no host round trip). */
    const int first = range[0];
    const int n_items = min(range[1], n_max);
#if SW_EXTRA_WORK
    const int n_work = n_items + (int)((SW_I64)n_items * SW_EXTRA_WORK / 100);
#define SW_REDONE (work >= n_items)
#else
    const int n_work = n_items;
#define SW_REDONE 0
#endif

    /* Grid-stride over items: one item (read x its haplotypes) per group at a time. */
    for (int work = SW_GROUP_ID * SW_GROUPS + group; work < n_work;
         work += SW_NUM_GROUPS * SW_GROUPS) {
        const int it = SW_REDONE ? work - n_items : work;
        const SwItem item = items[first + it];
        const SW_I64 rs = read_off[item.read];
        const int m = (int)(read_off[item.read + 1] - rs);
        /* The host routes only reads of this bin here (lets the compiler drop dead padding code). */
        SW_ASSUME(m >= SW_BIN_MIN && m <= SW_BIN_MAX);
        const SW_GLOBAL unsigned char* const rb = read_bases + rs;
        const SW_GLOBAL unsigned char* const bq = base_q + rs;
        const SW_GLOBAL unsigned char* const iq = ins_q + rs;
        const SW_GLOBAL unsigned char* const dq = del_q + rs;
        const SW_GLOBAL unsigned char* const gq = gcp_q + rs;
        const int n_tiles = SW_MULTI_TILE ? (m + SW_TILE - 1) / SW_TILE : 1;
#if !SW_MULTI_TILE
        setup_rows(&R, tbl_lane, lane * SW_K, m, rb, bq, iq, dq, gq);
        SW_GROUP_SYNC();
#endif
        /* gm of the read's first row, for the initial condition Dp[0][j] = gm_1 * C / n. */
        const real_t gm_first = SW_SCALED == 1 ? (real_t)1 - phred_to_prob(gq[0]) : (real_t)1;
#if SW_EXP_SCALE && !SW_MULTI_TILE
        const int prior = insertion_prior(gq, lane * SW_K, m, lane, group_mask);
#endif
        for (int h = 0; h < item.n_hap; ++h) {
            const SW_I64 hs = hap_off[item.hap + h];
            const int n = (int)(hap_off[item.hap + h + 1] - hs);
            const SW_GLOBAL unsigned char* const hb = hap_bases + hs;
            /* n + SW_P - 1 wavefront steps, rounded up to whole unrolled iterations of 4. */
            const int n_quads = (n + SW_P - 1 + 3) / 4;
            const real_t d_init = gm_first * (SW_INIT_C / (real_t)n);
            real_t sum = 0;
#if SW_EXP_SCALE
            int e = 0;              /* this thread's exponent */
            bool inexact = false;   /* a gap one float factor could not convert */
#endif
            for (int tile = 0; tile < n_tiles; ++tile) {
#if SW_MULTI_TILE
                SW_GROUP_SYNC();  /* previous tile's table reads and scratch writes done */
                setup_rows(&R, tbl_lane, tile * SW_TILE + lane * SW_K, m, rb, bq, iq, dq, gq);
                SW_GROUP_SYNC();
                const bool first_tile = tile == 0;
                const bool last_tile = tile == n_tiles - 1;
#if SW_EXP_SCALE
                const int prior = insertion_prior(gq, tile * SW_TILE + lane * SW_K, m, lane,
                                                  group_mask);
#endif
#else
                const bool first_tile = true;
#endif
                real_t X[SW_K], I[SW_K], Dp[SW_K];  /* Dp holds Z in the 5-op form */
#pragma unroll
                for (int r = 0; r < SW_K; ++r) { X[r] = 0; I[r] = 0; Dp[r] = 0; }
                /* Row above this thread's rows: at this column (up*) and the previous one (dg*). */
                real_t upX = 0, upI = 0, upD = 0;
                real_t dgX = 0, dgI = 0, dgD = (lane == 0 && first_tile) ? d_init : (real_t)0;
                int code = SW_PAD_CODE;
                sum = 0;
                /* Haplotype code for thread 0's next column, loaded one step ahead; columns past
                 * the end read as the pad code (zero emission). */
#if SW_CODE_WINDOW
                /* (SW_CODE_WINDOW: lane l holds the code of column l of this check interval in
                 * win, of the next interval's in win_next, loaded an interval ahead) */
                int win = sw_code_at(hb, lane, n);
                int win_next = sw_code_at(hb, 4 * SW_EXP_EVERY + lane, n);
#else
                int next_code = hb[0];
#endif
#if SW_MULTI_TILE
                /* Boundary row from the tile above (lane 0), loaded one unrolled iteration (4
                 * steps) ahead: a load at the step that uses it exposes the whole L2 latency at
                 * every step. Lane SW_P-1 overwrites position s at step s + SW_P - 1, after lane
                 * 0 has used it (at step s); the scratch stride covers the read-ahead. */
                RealQuad ahead[4];
                if (lane == 0 && !first_tile) {
#pragma unroll
                    for (int u = 0; u < 4; ++u) ahead[u] = scratch_group[u];
                }
#endif
                /* The injected top row D[0][j] = C/n (lane 0 of the first tile), in its scale. */
                real_t d_top = d_init;
#if SW_EXP_SCALE
                /* Start at the prior: from C/n at the target binade (first tile) or from the
                 * boundary row's first column (its exponent travels in the scratch's 4th word). */
#if SW_MULTI_TILE
                if (!first_tile) {
                    /* lane 0 puts the boundary row's first column at the target binade (the
                     * tile above wrote it before its first check, in an uncalibrated scale) */
                    int e_b = 0;
                    if (lane == 0) {
                        const real_t m_b = max(ahead[0].v[0], max(ahead[0].v[1], ahead[0].v[2]));
                        e_b = SW_FLOAT_BITS(ahead[0].v[3])
                              + (m_b > (real_t)0 ? SW_EXP_TARGET - sw_binade(m_b) : 0);
                    }
                    e = SW_SHFL_FROM(e_b, 0) + prior;
                } else
#endif
                    e = prior + SW_EXP_TARGET - sw_binade(d_init);
                d_top = d_init * sw_pow2(max(-126, min(e, 126)));
                if (lane == 0 && first_tile) dgD = d_top;
                int gap = e - SW_SHFL_UP_BY(e, 1);
                real_t f_in = sw_in_factor(SW_IN_GAP(gap), lane);
                real_t f_in2 = sw_factor2(SW_IN_GAP(gap));
#if SW_LANE0_FMA
                /* lane 0's row above comes from the conversion (SW_LANE0_BY_FACTOR): it
                 * multiplies what lane 0 receives (its own last row) by 0 and adds d_top,
                 * which the other lanes hold as 0 */
                if (lane != 0) d_top = 0;
                upD = d_top;
#endif
#endif
                for (int w = 0; w < n_quads; ++w) {
#if SW_MULTI_TILE
                    RealQuad above[4];
#pragma unroll
                    for (int u = 0; u < 4; ++u) above[u] = ahead[u];
                    if (lane == 0 && !first_tile) {
#pragma unroll
                        for (int u = 0; u < 4; ++u) ahead[u] = scratch_group[4 * w + 4 + u];
                    }
#endif
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        const int step = 4 * w + u;
                        (void)step;     // unread in some specializations (nvcc's remark 177)
#if SW_CODE_WINDOW
                        const int code_here = SW_SHFL_FROM(win, 4 * (w % SW_EXP_EVERY) + u);
#else
                        const int code_here = next_code;
                        next_code = sw_code_at(hb, step + 1, n);
#endif
                        if (lane == 0) {
                            code = code_here;
                            if (first_tile && !SW_LANE0_FMA) {
                                upX = 0; upI = 0; upD = d_top;
                            }
#if SW_MULTI_TILE
                            else {
                                const RealQuad b = above[u];
                                const bool inside = step < n;
#if SW_EXP_SCALE
                                const int d0 = e - SW_FLOAT_BITS(b.v[3]);
                                /* two factors, one after the other (their product can
                                 * overflow) */
                                const real_t f0 = sw_factor(d0),
                                             f02 = SW_EXP_TWO_FACTORS ? sw_factor2(d0) : 1;
                                /* (the scratch's exponent includes the sender's shift) */
                                inexact |= inside && d0 > SW_EXP_MAX_GAP - SW_EXP_SHIFT;
#else
                                const real_t f0 = 1, f02 = 1;
#endif
                                upX = inside ? b.v[0] * f0 * f02 : (real_t)0;
                                upI = inside ? b.v[1] * f0 * f02 : (real_t)0;
                                upD = inside ? b.v[2] * f0 * f02 : (real_t)0;
                            }
#endif
                        }
                        /* Emission of this thread's rows for the haplotype code at its column. */
                        real_t E[SW_K];
#if SW_EMIS_TABLE
                        const SW_TABLE_MEM RealQuad* const tc = tbl_lane + code * SW_CODE_STRIDE;
#pragma unroll
                        for (int q = 0; q < SW_Q; ++q) {
                            const RealQuad v = tc[q * SW_P];
#pragma unroll
                            for (int k = 0; k < 4; ++k) E[4 * q + k] = v.v[k];
                        }
#else
                        const unsigned hbit = 1u << code;
#pragma unroll
                        for (int r = 0; r < SW_K; ++r)
                            E[r] = (R.match_bits[r] & hbit) ? R.em_match[r] : R.em_mismatch[r];
#endif
                        /* X and Dp from the previous column (descending, so old values of
                         * row r-1 are still there), then I down the column. */
#pragma unroll
                        for (int r = SW_K - 1; r >= 0; --r) {
                            const real_t dx = r ? X[r - 1] : dgX;
                            const real_t di = r ? I[r - 1] : dgI;
                            const real_t dd = r ? Dp[r - 1] : dgD;
                            const real_t x_left = X[r];
#if SW_SCALED == 2
                            X[r] = E[r] * fma(R.A[r], dx, fma(R.B[r], dd, di));
                            Dp[r] = fma(R.gap[r], Dp[r], x_left);
#else
#if SW_SCALED
                            X[r] = E[r] * fma(R.A[r], dx, fma(R.gm[r], di, dd));
#else
                            X[r] = E[r] * fma(R.A[r], dx, R.gm[r] * (di + dd));
#endif
                            Dp[r] = fma(R.gap[r], Dp[r], R.Cd[r] * x_left);
#endif
                        }
                        /* I[0] uses the old (this column's) row above: X/I of the thread above. */
                        {
                            real_t ix = upX, ii = upI;
#pragma unroll
                            for (int r = 0; r < SW_K; ++r) {
                                const real_t nx = X[r];
#if SW_SCALED == 2
                                I[r] = fma(r == SW_K - 1 ? R.gap_i_last : R.gap[r], ii, ix);
#elif SW_SCALED
                                I[r] = fma(R.gap[r], ii, ix);
#else
                                I[r] = fma(R.gap[r], ii, R.mi[r] * ix);
#endif
                                ix = nx; ii = I[r];
                            }
                        }
#if SW_EMIS_TABLE
                        sum += X[SW_K - 1] + I[SW_K - 1];  /* pad and pre-start columns are 0 */
#else
                        if (step >= SW_P - 1 && step < n + SW_P - 1)
                            sum += X[SW_K - 1] + I[SW_K - 1];
#endif
#if SW_MULTI_TILE
                        if (lane == SW_P - 1 && !last_tile && step >= SW_P - 1) {
                            RealQuad b;
                            b.v[0] = X[SW_K - 1]; b.v[1] = I[SW_K - 1]; b.v[2] = Dp[SW_K - 1];
#if SW_EXP_SCALE
                            b.v[3] = SW_BITS_FLOAT(e + SW_EXP_SHIFT);  /* its rows' scale */
#else
                            b.v[3] = 0;
#endif
                            scratch_group[step - (SW_P - 1)] = b;
                        }
#endif
                        /* Hand the last row and the code to the next thread (one column behind). */
                        dgX = upX; dgI = upI; dgD = upD;
                        SW_SHIFT_UP(upX, upI, upD, code, X[SW_K - 1], I[SW_K - 1], Dp[SW_K - 1]);
#if SW_EXP_SCALE
                        upX *= f_in; upI *= f_in;  /* into this thread's scale */
#if SW_LANE0_FMA
                        upD = fma(upD, f_in, d_top);
#else
                        upD *= f_in;
#endif
                        if (SW_EXP_TWO_FACTORS && SW_IN_GAP(gap) > 126) {
                            upX *= f_in2; upI *= f_in2; upD *= f_in2;
                        }
#endif
                    }
#if SW_EXP_SCALE
                    if (w % SW_EXP_EVERY == SW_EXP_EVERY - 1) {
                        /* The check (see the header): largest value, window, dead threads. */
                        /* (lane 0's up* are not what comes in: its own shifted values, or
                         * undefined on some OpenCL shuffles; the next step overwrites them) */
                        real_t mx = max(X[SW_K - 1], I[SW_K - 1]);
                        if (lane > 0) mx = max(mx, max(upX, max(upI, upD)));
#pragma unroll
                        for (int r = SW_EXP_STRIDE - 1; r < SW_K; r += SW_EXP_STRIDE)
                            mx = max(mx, I[r]);
#if SW_MULTI_TILE
                        if (last_tile && lane == SW_P - 1) mx = max(mx, sum);
#else
                        if (lane == SW_P - 1) mx = max(mx, sum);
#endif
                        /* Past the haplotype's end a thread keeps its scale (nothing it
                         * computes there is read). */
                        const bool done = 4 * w + 3 - lane >= n;
                        const bool on = mx > (real_t)0 || done;
                        const int ex = sw_binade(mx);
                        int want = e;
                        if (mx > (real_t)0 && !done && (ex < SW_EXP_LOW || ex > SW_EXP_HIGH))
                            want = e + max(-126, min(SW_EXP_TARGET - ex, 126));
                        const unsigned above_on = SW_GROUP_BALLOT(on) & ((2u << lane) - 1u);
                        const int src = above_on ? 31 - SW_CLZ(above_on) : 0;
                        const int rel = SW_SHFL_FROM(want - prior, src);
                        if (!on) want = rel + prior;  /* all zero: nothing to rescale */
                        const real_t fac = sw_pow2(on ? want - e : 0);
#pragma unroll
                        for (int r = 0; r < SW_K; ++r) { X[r] *= fac; I[r] *= fac; Dp[r] *= fac; }
                        upX *= fac; upI *= fac; upD *= fac;
                        dgX *= fac; dgI *= fac; dgD *= fac;
                        sum *= fac; d_top *= fac;
                        e = want;
                        gap = e - SW_SHFL_UP_BY(e, 1);
                        inexact |= gap > SW_EXP_MAX_GAP && !done;
                        f_in = sw_in_factor(SW_IN_GAP(gap), lane);
                        f_in2 = sw_factor2(SW_IN_GAP(gap));
#if SW_CODE_WINDOW
                        win = win_next;  /* the next interval's codes; load the one after */
                        win_next = sw_code_at(hb, 4 * w + 4 + 4 * SW_EXP_EVERY + lane, n);
#endif
                    }
#endif
                }
            }
#if SW_EXP_SCALE
            const bool bad = SW_GROUP_ANY(inexact);
            /* (the sum is of the last row: 2^SW_EXP_SHIFT up) */
            if (lane == SW_P - 1) SW_STORE_SCALED(item.out + h, sum, e + SW_EXP_SHIFT, bad);
#else
            if (lane == SW_P - 1) SW_STORE(item.out + h, sum);
#endif
        }
    }
}

#endif
