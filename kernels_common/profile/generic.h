/* Generic (float) Viterbi and Forward of HMMER3 local multihit profiles, Ganesan-style hybrid:
 * one work-group per sequence, its work-items share the model positions of a row (contiguous
 * partitions of KPT positions each, held in registers).
 *
 * One body over a semiring (add, mul, ZERO, ONE): Viterbi (FORWARD 0) is (max, +) in log space;
 * Forward (FORWARD 1) is (+, *) in probability space: the host exp()s the tables (odds, float32),
 * and the rows are rescaled by exact powers of two (below). A row i:
 *   M(j) = (xB * BM(j) + M'(j-1) MM(j) + I'(j-1) IM(j) + D'(j-1) DM(j)) * msc(x_i, j)
 *   I(j) = (M'(j) MI(j) + I'(j) II(j)) * isc(x_i, j)           (' = the previous row)
 *   D(j) = D(j-1) DD(j) + M(j-1) MD(j)                         (within the row)
 *   E = sum_j M(j) + D(j); J, C, N, B specials as HMMER's.
 * D along the row is a linear recurrence: a work-item's partition is an affine map from the D
 * at its first position to the D at the next partition's first position, x -> A x + B; the maps
 * are scanned across the group (serially inside a partition). The same map also carries the
 * partition's share of E (S -> S + C x + F) and the flow M'(j1) MM + I'(j1) IM + D'(j1) DM out
 * of its last position j1 into the next partition's first M of the next row (O -> P x + Q), so
 * one scan per row gives every work-item its D, its left neighbour's out-flow and the row's E:
 * with shuffles (CUDA) one barrier per row (none with THREADS 32), else local memory
 * (Hillis-Steele). A row's latency bounds a pipeline's Forward stage, set by its longest
 * surviving sequence.
 *
 * The N/C/J loop factor is pulled out of every row (values are stored divided by loop^i, so N
 * stays ONE and loop's rounding never compounds along the sequence; the core cells take 1/loop
 * per row instead) and added back as L * loop at the end. Forward also divides each row by
 * 2^e, e the exponent of max(E, N, J, C) (exact; the cells take it in the next row), keeps the
 * sum of the e, and scores log(C) + e_sum ln 2. That max is in [1, 2) after a row, and the
 * next row moves it by a few bits at most (N stays, J and C only gain and keep at least half of
 * the E they take, a row's emissions are bounded): no overflow, no denormal scale; a cell that
 * underflows was below 2^-126 of it.
 *
 * Defines: MODEL_M, THREADS (work-group size, a power of two, >= 32 with shuffles), FORWARD
 * (0: Viterbi, 1: Forward), GN_PREFETCH (0/1: read the next row's emission and insert scores
 * during a row; default: where a work-item holds <= 16 positions). The including file spells its API (as kernels_common/profile/
 * stages.h): GN_KERNEL(name), IN(T), OUT(T), SHARED, SHARED_PTR(T), LOCAL_ID, GROUP_ID,
 * BARRIER, GN_FN, the types u8 and i64, GN_NEG_INF, GN_MAX(a, b), GN_EXP, GN_LOG, GN_ILOGB,
 * GN_LDEXP, GN_SHUFFLE and, with it, GN_SHFL_UP(v, n) / GN_SHFL_IDX(v, lane) across a warp of
 * GN_WARP lanes (default 32; the work-items LOCAL_ID / GN_WARP), THREADS >= GN_WARP.
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
#define TRS (MODEL_M + 1)          /* a transition row: column MODEL_M is ZERO (nothing past M) */
#ifndef GN_PREFETCH
#define GN_PREFETCH (KPT <= 16)    /* read the next row's emissions during this one */
#endif
#ifndef GN_WARP
#define GN_WARP 32                 /* lanes of a shuffle warp */
#endif
#if GN_SHUFFLE
#define GN_TOTALS (THREADS / GN_WARP)   /* one map per warp */
#else
#define GN_TOTALS THREADS          /* one per work-item */
#endif

#if FORWARD
#define ZERO 0.0f
#define ONE 1.0f
GN_FN float gn_add(float a, float b) { return a + b; }
GN_FN float gn_mul(float a, float b) { return a * b; }
GN_FN float gn_from_log(float v) { return GN_EXP(v); }
#else
#define ZERO GN_NEG_INF
#define ONE 0.0f
GN_FN float gn_add(float a, float b) { return GN_MAX(a, b); }
GN_FN float gn_mul(float a, float b) { return a + b; }
GN_FN float gn_from_log(float v) { return v; }
#endif

/* A partition's map: D -> a D + b (to the next partition's first D), S -> S + c D + f (E),
 * O -> p D + q (the out-flow of its last position; set, not accumulated). */
typedef struct { float a, b, c, f, p, q; } gn_map;
/* What enters a partition: D at its first position, E so far, the left neighbour's out-flow. */
typedef struct { float d, s, o; } gn_state;

/* m1, then m2 */
GN_FN gn_map gn_then(gn_map m1, gn_map m2)
{
    gn_map r;
    r.a = gn_mul(m1.a, m2.a);
    r.b = gn_add(gn_mul(m1.b, m2.a), m2.b);
    r.c = gn_add(m1.c, gn_mul(m2.c, m1.a));
    r.f = gn_add(gn_add(m1.f, gn_mul(m2.c, m1.b)), m2.f);
    r.p = gn_mul(m2.p, m1.a);
    r.q = gn_add(gn_mul(m2.p, m1.b), m2.q);
    return r;
}

GN_FN gn_state gn_apply(gn_map m, gn_state x)
{
    gn_state r;
    r.d = gn_add(gn_mul(m.a, x.d), m.b);
    r.s = gn_add(x.s, gn_add(gn_mul(m.c, x.d), m.f));
    r.o = gn_add(gn_mul(m.p, x.d), m.q);
    return r;
}

#if GN_SHUFFLE
GN_FN gn_map gn_map_up(gn_map m, int n)
{
    m.a = GN_SHFL_UP(m.a, n); m.b = GN_SHFL_UP(m.b, n); m.c = GN_SHFL_UP(m.c, n);
    m.f = GN_SHFL_UP(m.f, n); m.p = GN_SHFL_UP(m.p, n); m.q = GN_SHFL_UP(m.q, n);
    return m;
}
#endif

/* The row's scan: the state entering this work-item's partition (the group starts from
 * nothing: D, E and out-flow ZERO); *E = the row's E total, the same bits in every work-item.
 * tot: GN_TOTALS maps; the caller alternates two such buffers by row, so one barrier suffices. */
GN_FN gn_state group_scan(gn_map v, SHARED_PTR(gn_map) tot, float *E)
{
    gn_state st;
    st.d = st.s = st.o = ZERO;
#if GN_SHUFFLE
    const int lane = LOCAL_ID & (GN_WARP - 1);
#pragma unroll
    for (int off = 1; off < GN_WARP; off <<= 1) {
        const gn_map o = gn_map_up(v, off);
        if (lane >= off) v = gn_then(o, v);
    }
    const gn_map ex = gn_map_up(v, 1);              /* the lanes before this one */
#if THREADS > GN_WARP
    const int w = LOCAL_ID / GN_WARP;
    if (lane == GN_WARP - 1) tot[w] = v;
    BARRIER;
    gn_state carry = st;                            /* the warps before this one */
    for (int k = 0; k < THREADS / GN_WARP; k++) {
        if (k == w) carry = st;
        st = gn_apply(tot[k], st);
    }
    *E = st.s;
    return lane ? gn_apply(ex, carry) : carry;
#else
    *E = GN_SHFL_IDX(v.f, GN_WARP - 1);             /* the warp's map applied to nothing */
    return lane ? gn_apply(ex, st) : st;
#endif
#else
    const int t = LOCAL_ID;
    tot[t] = v;
    BARRIER;
    for (int off = 1; off < THREADS; off <<= 1) {
        const gn_map o = tot[t >= off ? t - off : t];
        BARRIER;
        if (t >= off) v = gn_then(o, v);
        tot[t] = v;
        BARRIER;
    }
    *E = gn_apply(tot[THREADS - 1], st).s;
    return t ? gn_apply(tot[t - 1], st) : st;
#endif
}

/* This work-item's emission and insert scores of residue x. */
GN_FN void gn_emissions(IN(float) msc, IN(float) isc, int x, int j0, float *ec, float *ic)
{
#pragma unroll
    for (int u = 0; u < KPT; u++) {
        const int j = j0 + u;
        if (j < MODEL_M) {
            ec[u] = msc[x * MODEL_M + j];
            ic[u] = isc[x * MODEL_M + j];
        }
    }
}

/* msc/isc: [Kp][M] (0-based j = k-1); tr: [8][M + 1] rows BM, MM, IM, DM (into j from j-1,
 * stored at k-1 as HMMER), MI, II (at j), MD, DD (into j from j-1), column M ZERO. Log-odds for
 * Viterbi, odds for Forward; loop/move and e_loop/e_move: logs. One score (nats, without the
 * null model) per sequence order[group], for groups < nseq. */
GN_KERNEL(generic_dp)(IN(float) msc, IN(float) isc, IN(float) tr, IN(u8) residues,
                      IN(i64) offsets, IN(int) order, int nseq, IN(float) loop, IN(float) move,
                      float e_loop, float e_move, OUT(float) out)
{
    SHARED gn_map tot[2 * GN_TOTALS];
    const int g = GROUP_ID, t = LOCAL_ID;
    if (g >= nseq) return;
    const int s = order[g];
    IN(float) BM = tr;
    IN(float) MM = tr + TRS;
    IN(float) IM = tr + 2 * TRS;
    IN(float) DM = tr + 3 * TRS;
    IN(float) MI = tr + 4 * TRS;
    IN(float) II = tr + 5 * TRS;
    IN(float) MD = tr + 6 * TRS;
    IN(float) DD = tr + 7 * TRS;
    const float lp = loop[s], mv = gn_from_log(move[s]);
    const float unloop = gn_from_log(-lp), eL = gn_from_log(e_loop), eM = gn_from_log(e_move);
    float Mr[KPT], Ir[KPT], Dr[KPT], Da[KPT];
#pragma unroll
    for (int u = 0; u < KPT; u++) Mr[u] = Ir[u] = Dr[u] = ZERO;
    /* specials divided by loop^i (N stays ONE); xB: the previous row's, in its cells' units */
    float xN = ONE, xJ = ZERO, xC = ZERO, xB = mv;
    float f = unloop;        /* a new cell's factor: 1/loop, Forward times the last rescaling */
    float flow_in = ZERO;    /* the left neighbour's out-flow of the previous row */
#if FORWARD
    int e_sum = 0;           /* the values are 2^-e_sum of the true ones */
#endif
    int parity = 0;
    const int j0 = t * KPT;
    const i64 i0 = offsets[s], i1 = offsets[s + 1];
    int x = i0 < i1 ? residues[i0] : 0;
#if GN_PREFETCH
    float ec[KPT], ic[KPT];  /* the row's emission and insert scores, read a row ahead */
    gn_emissions(msc, isc, x, j0, ec, ic);
#define GN_EMIT(u, j) ec[u]
#define GN_INSERT(u, j) ic[u]
#else
#define GN_EMIT(u, j) msc[x * MODEL_M + (j)]
#define GN_INSERT(u, j) isc[x * MODEL_M + (j)]
#endif
    for (i64 i = i0; i < i1; i++) {
        const int xn = i + 1 < i1 ? residues[i + 1] : x;   /* read early: off the row's path */
        /* M and I from the previous row; flow = what enters M(j) from j - 1 */
        float flow = flow_in;
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            if (j < MODEL_M) {
                const float m = gn_mul(gn_add(gn_mul(xB, BM[j]), flow), gn_mul(GN_EMIT(u, j), f));
                const float in = gn_mul(gn_add(gn_mul(Mr[u], MI[j]), gn_mul(Ir[u], II[j])),
                                        gn_mul(GN_INSERT(u, j), f));
                flow = gn_add(gn_add(gn_mul(Mr[u], MM[j + 1]), gn_mul(Ir[u], IM[j + 1])),
                              gn_mul(Dr[u], DM[j + 1]));
                Mr[u] = m;
                Ir[u] = in;
            }
        }
#if GN_PREFETCH
        gn_emissions(msc, isc, xn, j0, ec, ic);             /* the next row's, while this one ends */
#endif
        x = xn;
        /* the partition's map; D(j) = Da d0 + Dr until d0, the D at j0, is known */
        gn_map v;
        float a = ONE, b = ZERO;
        v.c = v.f = v.p = v.q = ZERO;
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            if (j < MODEL_M) {
                Da[u] = a;
                Dr[u] = b;
                v.c = gn_add(v.c, a);
                v.f = gn_add(v.f, gn_add(b, Mr[u]));
                if (u == KPT - 1) {       /* a partition cut by M has no out-flow */
                    v.p = gn_mul(a, DM[j + 1]);
                    v.q = gn_add(gn_add(gn_mul(Mr[u], MM[j + 1]), gn_mul(Ir[u], IM[j + 1])),
                                 gn_mul(b, DM[j + 1]));
                }
                b = gn_add(gn_mul(b, DD[j + 1]), gn_mul(Mr[u], MD[j + 1]));
                a = gn_mul(a, DD[j + 1]);
            }
        }
        v.a = a;
        v.b = b;
        float E;
        const gn_state st = group_scan(v, tot + parity * GN_TOTALS, &E);
        parity ^= 1;
#pragma unroll
        for (int u = 0; u < KPT; u++)
            if (j0 + u < MODEL_M) Dr[u] = gn_add(gn_mul(Da[u], st.d), Dr[u]);
        flow_in = st.o;
        /* specials, the same in every work-item */
        xJ = gn_add(xJ, gn_mul(E, eL));
        xC = gn_add(xC, gn_mul(E, eM));
        xB = gn_mul(gn_add(xN, xJ), mv);
#if FORWARD
        {   /* the next row's values in units 2^e larger: the largest special in [1, 2) */
            const int e = GN_ILOGB(GN_MAX(GN_MAX(E, xN), GN_MAX(xJ, xC)));
            const float sc = GN_LDEXP(1.0f, -e);
            e_sum += e;
            xN *= sc;
            xJ *= sc;
            xC *= sc;
            f = sc * unloop;
        }
#endif
    }
    if (t == 0) {
        const float tail = move[s] + (float)(i1 - i0) * lp;      /* C->T and the loops */
#if FORWARD
        out[s] = GN_LOG(xC) + (float)e_sum * 0.693147180559945f + tail;
#else
        out[s] = xC + tail;
#endif
    }
}

#endif
