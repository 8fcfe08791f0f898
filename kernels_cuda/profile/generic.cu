// Generic (float) Viterbi and Forward of HMMER3 local multihit profiles, Ganesan-style hybrid:
// one thread block per sequence, the threads share the model positions of a row (contiguous
// partitions of KPT positions per thread), and the row's D->D chain -- the one serial dependency
// along k -- becomes a partitioned prefix operation: with P(k) = sum_{l<k} tDD(l) and the M->D
// entries A(k), D(k) = P(k) + scan_{m<=k}(A(m) - P(m)), where scan is a running max (Viterbi) or
// a running log-sum-exp (Forward). Each thread scans its partition serially, the partition
// totals are scanned across the block (shuffles inside a warp, then the few warp totals through
// shared memory: one barrier per scan -- a row's latency is what bounds a pipeline's Forward
// stage, set by its longest surviving sequence), then combined.
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

#define WARPS (THREADS / 32)

// Inclusive scan of one value per thread across the block; *excl gets the exclusive one
// (-inf for thread 0). totals: WARPS floats of shared memory, free on entry (the caller's
// barriers separate two uses).
__device__ float block_scan(float v, float *totals, float *excl)
{
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
        const float other = __shfl_up_sync(0xffffffffu, v, off);
        if (lane >= off) v = combine(v, other);
    }
    float carry = -INFINITY;                      // the warps before this one
#if WARPS > 1
    if (lane == 31) totals[w] = v;
    __syncthreads();
    for (int k = 0; k < w; k++) carry = combine(carry, totals[k]);
#endif
    const float up = __shfl_up_sync(0xffffffffu, v, 1);
    *excl = lane ? combine(carry, up) : carry;
    return combine(carry, v);
}

// The block's combined total, in every thread (totals as for block_scan).
__device__ float block_total(float v, float *totals)
{
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) v = combine(v, __shfl_xor_sync(0xffffffffu, v, off));
#if WARPS > 1
    if ((threadIdx.x & 31) == 0) totals[threadIdx.x >> 5] = v;
    __syncthreads();
    v = totals[0];
    for (int k = 1; k < WARPS; k++) v = combine(v, totals[k]);
#endif
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
    __shared__ float scan_totals[WARPS], sum_totals[WARPS];
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
        float carry;                                      // exclusive prefix of partitions
        block_scan(part, scan_totals, &carry);
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
        const float E = block_total(e, sum_totals);
        xJ = combine(xJ + lp, E + e_loop);
        xC = combine(xC + lp, E + e_move);
        xN = xN + lp;
        if (t == 0) xB_s = combine(xN + mv, xJ + mv);
        __syncthreads();
    }
    if (t == 0) out[s] = xC + mv;
}
