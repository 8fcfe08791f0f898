// Generic (float) Viterbi and Forward of HMMER3 local multihit profiles, Ganesan-style hybrid:
// one thread block per sequence, the threads share the model positions of a row (contiguous
// partitions of KPT positions per thread), and the row's D->D chain -- the one serial dependency
// along k -- becomes a partitioned prefix operation: with P(k) = sum_{l<k} tDD(l) and the M->D
// entries A(k), D(k) = P(k) + scan_{m<=k}(A(m) - P(m)), where scan is a running max (Viterbi) or
// a running log-sum-exp (Forward). Each thread scans its partition serially, the partition
// totals are scanned across the block (Hillis-Steele in shared memory), then combined.
// Log space, float32. Rows live in shared memory (3 x MODEL_M floats).
//
// Defines: MODEL_M, THREADS (block size, power of two), FORWARD (0: Viterbi, 1: Forward).
#include <math.h>
#include <stdint.h>

#ifndef THREADS
#define THREADS 128
#endif
#ifndef FORWARD
#define FORWARD 0
#endif
#define KPT ((MODEL_M + THREADS - 1) / THREADS)

__device__ __forceinline__ float combine(float a, float b)
{
#if FORWARD
    const float m = fmaxf(a, b);
    if (m == -INFINITY) return m;
    return m + log1pf(__expf(-fabsf(a - b)));
#else
    return fmaxf(a, b);
#endif
}

// Inclusive block-wide scan of one value per thread (Hillis-Steele).
__device__ float block_scan(float v, float *buf)
{
    const int t = threadIdx.x;
    buf[t] = v;
    __syncthreads();
    for (int off = 1; off < THREADS; off <<= 1) {
        const float other = t >= off ? buf[t - off] : -INFINITY;
        __syncthreads();
        v = combine(v, other);
        buf[t] = v;
        __syncthreads();
    }
    return v;
}

// tr: [7][M] float rows, 0-based j = k-1: BM, MM, IM, DM (into k, stored at k-1 as HMMER),
// MI, II (at k), MD (M(k-1) -> D(k)); P: [M] DD prefix sums. msc/isc: [Kp][M].
extern "C" __global__ void __launch_bounds__(THREADS)
generic_dp(const float *__restrict__ msc, const float *__restrict__ isc,
           const float *__restrict__ tr, const float *__restrict__ P,
           const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
           const int *__restrict__ order, int nseq, const float *__restrict__ loop,
           const float *__restrict__ move, float e_loop, float e_move, float *out)
{
    __shared__ float Mrow[MODEL_M], Irow[MODEL_M], Drow[MODEL_M];
    __shared__ float buf[THREADS];
    __shared__ float xB_s;
    const int b = blockIdx.x, t = threadIdx.x;
    if (b >= nseq) return;
    const int s = order[b];
    const float lp = loop[s], mv = move[s];
    const float *BM = tr, *MM = tr + MODEL_M, *IM = tr + 2 * MODEL_M, *DM = tr + 3 * MODEL_M;
    const float *MI = tr + 4 * MODEL_M, *II = tr + 5 * MODEL_M, *MD = tr + 6 * MODEL_M;
    for (int j = t; j < MODEL_M; j += THREADS) Mrow[j] = Irow[j] = Drow[j] = -INFINITY;
    float xN = 0.0f, xJ = -INFINITY, xC = -INFINITY;
    if (t == 0) xB_s = mv;
    __syncthreads();
    const int j0 = t * KPT;
    for (long long i = offsets[s]; i < offsets[s + 1]; i++) {
        const int x = residues[i];
        const float xB = xB_s;
        float sv[KPT], iv[KPT];
        // M and I of this thread's positions, from the previous row
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            sv[u] = iv[u] = -INFINITY;
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
        __syncthreads();
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            if (j < MODEL_M) { Mrow[j] = sv[u]; Irow[j] = iv[u]; }
        }
        __syncthreads();
        // D row: partitioned prefix scan of A(j) - P(j)
        float part = -INFINITY;
        float a[KPT];
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            a[u] = (j > 0 && j < MODEL_M) ? Mrow[j - 1] + MD[j] - P[j] : -INFINITY;
            part = combine(part, a[u]);
            a[u] = part;                                  // running scan inside the partition
        }
        const float incl = block_scan(part, buf);
        float carry = t > 0 ? buf[t - 1] : -INFINITY;     // exclusive prefix of partitions
        float e = -INFINITY;
#pragma unroll
        for (int u = 0; u < KPT; u++) {
            const int j = j0 + u;
            if (j < MODEL_M) {
                const float d = combine(carry, a[u]) + P[j];
                Drow[j] = d;
                e = combine(e, combine(sv[u], d));        // local: every M_k and D_k exits to E
            }
        }
        (void)incl;
        __syncthreads();
        // E: block reduction (the last element of an inclusive scan)
        const float xE = block_scan(e, buf);
        if (t == THREADS - 1) buf[0] = xE;
        __syncthreads();
        const float E = buf[0];
        xJ = combine(xJ + lp, E + e_loop);
        xC = combine(xC + lp, E + e_move);
        xN = xN + lp;
        if (t == 0) xB_s = combine(xN + mv, xJ + mv);
        __syncthreads();
    }
    if (t == 0) out[s] = xC + mv;
}
