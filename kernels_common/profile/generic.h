/* Generic (float) Viterbi and Forward of HMMER3 local multihit profiles, Ganesan-style hybrid:
 * one work-group per sequence, its work-items share the model positions of a row (contiguous
 * partitions of KPT positions each), and the row's D->D chain -- the one serial dependency along
 * k -- becomes a partitioned prefix operation: with P(k) = sum_{l<k} tDD(l) and the M->D entries
 * A(k), D(k) = P(k) + scan_{m<=k}(A(m) - P(m)), where scan is a running max (Viterbi) or a
 * running log-sum-exp (Forward). Each work-item scans its partition serially, the partition
 * totals are scanned across the group, then combined. Log space, float32; the rows live in
 * shared (local) memory, 3 x MODEL_M floats.
 *
 * Across the group the scan runs on warp shuffles where GN_SHUFFLE is 1 (CUDA: the few warp
 * totals through shared memory, one barrier per scan -- a row's latency bounds a pipeline's
 * Forward stage, set by its longest surviving sequence), else in local memory (Hillis-Steele).
 *
 * Defines: MODEL_M, THREADS (work-group size, a power of two, >= 32 with shuffles), FORWARD
 * (0: Viterbi, 1: Forward). The including file spells its API (as kernels_common/profile/
 * stages.h): GN_KERNEL(name), IN(T), OUT(T), SHARED, SHARED_PTR(T), LOCAL_ID, GROUP_ID,
 * BARRIER, GN_FN, the types u8 and i64, GN_NEG_INF, GN_MAX(a, b), GN_FABS(x),
 * GN_LOG1P_EXP(d) = log(1 + e^d), GN_SHUFFLE and, with it, GN_SHFL_UP(v, n) / GN_SHFL_XOR(v, n)
 * across a 32-lane warp.
 */
#ifndef PROFILE_GENERIC_H
#define PROFILE_GENERIC_H

#ifndef THREADS
#define THREADS 128
#endif
#ifndef FORWARD
#define FORWARD 0
#endif
#define KPT ((MODEL_M + THREADS - 1) / THREADS)
#if GN_SHUFFLE
#define GN_TOTALS (THREADS / 32)   /* one total per warp */
#else
#define GN_TOTALS THREADS          /* one per work-item */
#endif

GN_FN float combine(float a, float b)
{
#if FORWARD
    const float m = GN_MAX(a, b);
    if (m == GN_NEG_INF) return m;
    return m + GN_LOG1P_EXP(-GN_FABS(a - b));
#else
    return GN_MAX(a, b);
#endif
}

#if GN_SHUFFLE
/* Inclusive scan of one value per work-item across the group; *excl gets the exclusive one
 * (-inf for the first). totals: GN_TOTALS floats, free on entry (the caller's barriers separate
 * two uses of the same buffer). */
GN_FN float block_scan(float v, SHARED_PTR(float) totals, float *excl)
{
    const int lane = LOCAL_ID & 31, w = LOCAL_ID >> 5;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const float other = GN_SHFL_UP(v, off);
        if (lane >= off) v = combine(v, other);
    }
    float carry = GN_NEG_INF;                     /* the warps before this one */
#if THREADS > 32
    if (lane == 31) totals[w] = v;
    BARRIER;
    for (int k = 0; k < w; k++) carry = combine(carry, totals[k]);
#endif
    const float up = GN_SHFL_UP(v, 1);
    *excl = lane ? combine(carry, up) : carry;
    return combine(carry, v);
}

/* The group's combined total, in every work-item (totals as for block_scan). */
GN_FN float block_total(float v, SHARED_PTR(float) totals)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = combine(v, GN_SHFL_XOR(v, off));
#if THREADS > 32
    if ((LOCAL_ID & 31) == 0) totals[LOCAL_ID >> 5] = v;
    BARRIER;
    v = totals[0];
    for (int k = 1; k < THREADS / 32; k++) v = combine(v, totals[k]);
#endif
    return v;
}
#else
GN_FN float block_scan(float v, SHARED_PTR(float) buf, float *excl)
{
    const int t = LOCAL_ID;
    buf[t] = v;
    BARRIER;
    for (int off = 1; off < THREADS; off <<= 1) {
        const float other = t >= off ? buf[t - off] : GN_NEG_INF;
        BARRIER;
        v = combine(v, other);
        buf[t] = v;
        BARRIER;
    }
    *excl = t > 0 ? buf[t - 1] : GN_NEG_INF;
    return v;
}

GN_FN float block_total(float v, SHARED_PTR(float) buf)
{
    const int t = LOCAL_ID;
    buf[t] = v;
    BARRIER;
    for (int off = THREADS / 2; off > 0; off >>= 1) {
        if (t < off) buf[t] = combine(buf[t], buf[t + off]);
        BARRIER;
    }
    return buf[0];
}
#endif

/* tr: [7][M] float rows, 0-based j = k-1: BM, MM, IM, DM (into k, stored at k-1 as HMMER),
 * MI, II (at k), MD (M(k-1) -> D(k)); P: [M] DD prefix sums. msc/isc: [Kp][M]. One score (nats,
 * without the null model) per sequence order[group], for groups < nseq. */
GN_KERNEL(generic_dp)(IN(float) msc, IN(float) isc, IN(float) tr, IN(float) P, IN(u8) residues,
                      IN(i64) offsets, IN(int) order, int nseq, IN(float) loop, IN(float) move,
                      float e_loop, float e_move, OUT(float) out)
{
    SHARED float Mrow[MODEL_M], Irow[MODEL_M], Drow[MODEL_M];
    SHARED float scan_totals[GN_TOTALS], sum_totals[GN_TOTALS];
    SHARED float xB_s[1];
    const int b = GROUP_ID, t = LOCAL_ID;
    if (b >= nseq) return;
    const int s = order[b];
    const float lp = loop[s], mv = move[s];
    IN(float) BM = tr;
    IN(float) MM = tr + MODEL_M;
    IN(float) IM = tr + 2 * MODEL_M;
    IN(float) DM = tr + 3 * MODEL_M;
    IN(float) MI = tr + 4 * MODEL_M;
    IN(float) II = tr + 5 * MODEL_M;
    IN(float) MD = tr + 6 * MODEL_M;
    for (int j = t; j < MODEL_M; j += THREADS) Mrow[j] = Irow[j] = Drow[j] = GN_NEG_INF;
    float xN = 0.0f, xJ = GN_NEG_INF, xC = GN_NEG_INF;
    if (t == 0) xB_s[0] = mv;
    BARRIER;
    const int j0 = t * KPT;
    for (i64 i = offsets[s]; i < offsets[s + 1]; i++) {
        const int x = residues[i];
        const float xB = xB_s[0];
        float sv[KPT], iv[KPT];
        /* M and I of this work-item's positions, from the previous row */
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            sv[u] = iv[u] = GN_NEG_INF;
            if (j < MODEL_M) {
                float m = xB + BM[j];
                if (j > 0) {
                    m = combine(m, Mrow[j - 1] + MM[j]);
                    m = combine(m, Irow[j - 1] + IM[j]);
                    m = combine(m, Drow[j - 1] + DM[j]);
                }
                sv[u] = m + msc[x * MODEL_M + j];
                iv[u] = combine(Mrow[j] + MI[j], Irow[j] + II[j]) + isc[x * MODEL_M + j];
            }
        }
        BARRIER;
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            if (j < MODEL_M) { Mrow[j] = sv[u]; Irow[j] = iv[u]; }
        }
        BARRIER;
        /* D row: partitioned prefix scan of A(j) - P(j) */
        float part = GN_NEG_INF;
        float a[KPT];
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            a[u] = (j > 0 && j < MODEL_M) ? Mrow[j - 1] + MD[j] - P[j] : GN_NEG_INF;
            part = combine(part, a[u]);
            a[u] = part;                                  /* running scan inside the partition */
        }
        float carry;                                      /* exclusive prefix of partitions */
        block_scan(part, scan_totals, &carry);
        float e = GN_NEG_INF;
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            if (j < MODEL_M) {
                const float d = combine(carry, a[u]) + P[j];
                Drow[j] = d;
                e = combine(e, combine(sv[u], d));        /* local: every M_k and D_k exits to E */
            }
        }
        const float E = block_total(e, sum_totals);
        xJ = combine(xJ + lp, E + e_loop);
        xC = combine(xC + lp, E + e_move);
        xN = xN + lp;
        if (t == 0) xB_s[0] = combine(xN + mv, xJ + mv);
        BARRIER;
    }
    if (t == 0) out[s] = xC + mv;
}

#endif
