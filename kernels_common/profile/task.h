/* Task-parallel HMMER3 filter kernels (SSV, MSV, Viterbi filter): one work-item / thread per
 * target sequence, written once for both APIs.
 *
 * Exact integer emulation of HMMER 3.4's p7_SSVFilter / p7_MSVFilter / p7_ViterbiFilter (8-bit
 * saturating costs with bias; 16-bit saturating words with lazy F), unstriped: each work-item
 * walks its sequence row by row and the model positions k = 1..M in order, its DP row in global
 * memory. The host turns the raw integers (xE, xJ, xC, overflow flags) into nats as HMMER does.
 *
 * The including file spells the API (kernels_opencl/profile/filters.cl, kernels_cuda/
 * profile_filters.cu):
 *   TASK_KERNEL(name)  the kernel declaration head      IN(T)  a read-only global array of T
 *   OUT(T)             a writable global array of T      GLOBAL_ID  this work-item's index
 *   u8, i16, i64       the integer types
 * Defines: MODEL_M (model length), INTERLEAVED (1: DP rows stored [k][seq], coalesced on GPUs;
 * 0: [seq][k], cache-friendly on CPUs).
 */
#ifndef PROFILE_TASK_H
#define PROFILE_TASK_H

#ifndef INTERLEAVED
#define INTERLEAVED 0
#endif
#if INTERLEAVED
#define ROW(k) ((size_t)(k) * (size_t)nseq + (size_t)gid)
#else
#define ROW(k) ((size_t)gid * (size_t)MODEL_M + (size_t)(k))
#endif

#define NEG16 (-32768)
#define CLAMP(v, lo, hi) min(max((v), (lo)), (hi))

/* SSV: best ungapped diagonal, begin 0 at every (i, k=1), floor 0, capped at 255
 * (>= 255 - bias is an overflow anyway). Output: xE = 128 + best (HMMER's unsigned view). */
TASK_KERNEL(ssv_xe)(IN(u8) cost,            /* [Kp][M] biased match costs */
                    IN(u8) residues,
                    IN(i64) offsets,        /* per sequence (of this launch) */
                    IN(int) order,          /* sequence index per work-item */
                    const int nseq, const int bias,
                    OUT(u8) row,            /* scratch [nseq * M] */
                    OUT(int) out_xe)
{
    const int gid = GLOBAL_ID;
    if (gid >= nseq) return;
    const int s = order[gid];
    for (int k = 0; k < MODEL_M; k++) row[ROW(k)] = 0;
    int best = 0;
    for (i64 i = offsets[s]; i < offsets[s + 1]; i++) {
        IN(u8) c = cost + (size_t)residues[i] * MODEL_M;
        int prev = 0;                                   /* V(i-1, k-1); begin at k = 1 */
        for (int k = 0; k < MODEL_M; k++) {
            const int old = row[ROW(k)];
            const int v = CLAMP(prev + bias - (int)c[k], 0, 255);
            row[ROW(k)] = (u8)v;
            best = max(best, v);
            prev = old;
        }
    }
    out_xe[s] = 128 + best;
}

/* Full MSV with the J state (HMMER recomputes with it where SSV cannot decide).
 * Output: final xJ, or -1 on overflow. */
TASK_KERNEL(msv_xj)(IN(u8) cost, IN(u8) residues, IN(i64) offsets, IN(int) order,
                    const int nseq, const int bias, const int base, const int tec,
                    IN(u8) tjbm,            /* per sequence: (tjb + tbm) & 0xff */
                    OUT(u8) row, OUT(int) out_xj)
{
    const int gid = GLOBAL_ID;
    if (gid >= nseq) return;
    const int s = order[gid];
    const int jbm = tjbm[s];
    for (int k = 0; k < MODEL_M; k++) row[ROW(k)] = 0;
    int xJ = 0;
    int xB = max(base - jbm, 0);
    for (i64 i = offsets[s]; i < offsets[s + 1]; i++) {
        IN(u8) c = cost + (size_t)residues[i] * MODEL_M;
        int prev = 0;
        int xE = 0;
        for (int k = 0; k < MODEL_M; k++) {
            const int old = row[ROW(k)];
            const int v = CLAMP(max(prev, xB) + bias - (int)c[k], 0, 255);
            row[ROW(k)] = (u8)v;
            xE = max(xE, v);
            prev = old;
        }
        if (xE + bias >= 255) { out_xj[s] = -1; return; }
        xE = max(xE - tec, 0);
        xJ = max(xJ, xE);
        xB = max(max(base, xJ) - jbm, 0);
    }
    out_xj[s] = xJ;
}

/* 16-bit Viterbi filter with HMMER's lazy-F rule for the D->D paths.
 * tsc: [8][M+1] words in HMMER's p7P order (MM IM DM BM MD DD MI II), masks applied on the host.
 * Output: final xC (>= -32768), or 32767 + 1 on overflow. */
#define T_MM 0
#define T_IM 1
#define T_DM 2
#define T_BM 3
#define T_MD 4
#define T_DD 5
#define T_MI 6
#define T_II 7
#define TSC(t, k) ((int)tsc[(t) * (MODEL_M + 1) + (k)])

TASK_KERNEL(vf_xc)(IN(i16) match,           /* [Kp][M+1] */
                   IN(i16) tsc, IN(u8) residues, IN(i64) offsets, IN(int) order,
                   const int nseq, const int base, const int e_loop, const int e_move,
                   const int ddbound,
                   IN(i16) move,            /* per sequence: N/C/J MOVE word */
                   OUT(i16) mrow, OUT(i16) irow, OUT(i16) drow, OUT(int) out_xc)
{
    const int gid = GLOBAL_ID;
    if (gid >= nseq) return;
    const int s = order[gid];
    for (int k = 0; k < MODEL_M; k++) {
        mrow[ROW(k)] = NEG16; irow[ROW(k)] = NEG16; drow[ROW(k)] = NEG16;
    }
    const int mv = move[s];
    const int xN = base;
    int xB = xN + mv, xJ = NEG16, xC = NEG16;
    for (i64 i = offsets[s]; i < offsets[s + 1]; i++) {
        IN(i16) rsc = match + (size_t)residues[i] * (MODEL_M + 1);
        int mp = NEG16, ip = NEG16, dp = NEG16;         /* previous row at k-1 */
        int dcv = NEG16;                                /* M->D into k (delayed) */
        int xE = NEG16, Dmax = NEG16;
        for (int k = 1; k <= MODEL_M; k++) {
            const int mo = mrow[ROW(k - 1)], io = irow[ROW(k - 1)], dn = drow[ROW(k - 1)];
            int sv = xB + TSC(T_BM, k - 1);
            sv = max(sv, mp + TSC(T_MM, k - 1));
            sv = max(sv, ip + TSC(T_IM, k - 1));
            sv = max(sv, dp + TSC(T_DM, k - 1));
            sv = CLAMP(max(sv, NEG16) + (int)rsc[k], NEG16, 32767);
            xE = max(xE, sv);
            const int inew = max(max(mo + TSC(T_MI, k), io + TSC(T_II, k)), NEG16);
            drow[ROW(k - 1)] = (i16)dcv;
            dcv = max(sv + TSC(T_MD, k), NEG16);
            Dmax = max(Dmax, dcv);
            mrow[ROW(k - 1)] = (i16)sv;
            irow[ROW(k - 1)] = (i16)inew;
            mp = mo; ip = io; dp = dn;
        }
        if (xE >= 32767) { out_xc[s] = 32768; return; }
        xC = max(xC, xE + e_move);
        xJ = max(xJ, xE + e_loop);
        xB = max(xJ + mv, xN + mv);
        if (Dmax + ddbound > xB) {                      /* lazy F: the D->D paths may matter */
            int carry = NEG16;
            for (int k = 1; k <= MODEL_M; k++) {
                const int d = max((int)drow[ROW(k - 1)], carry);
                drow[ROW(k - 1)] = (i16)d;
                carry = max(d + TSC(T_DD, k), NEG16);
            }
        }
    }
    out_xc[s] = xC;
}

#endif /* PROFILE_TASK_H */
