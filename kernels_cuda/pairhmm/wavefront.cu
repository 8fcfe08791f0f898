// Intra-task Pair-HMM (Ren et al. 2016): THREADS threads cooperate on one pair, sweeping the
// anti-diagonal wavefront.
//
// Thread t owns TILE successive rows of a strip of THREADS*TILE rows; at step s it computes those
// rows at column j = s - t (0-based), taking the cell above its first row from thread t-1 (which
// computed it at step s-1) and keeping the above-left cell and its left neighbours in registers.
// A read longer than the strip is done in several passes; the strip's last row is kept between
// passes in a pass buffer of n columns.
//
// Defines (each family is one combination):
//   THREADS          threads per pair (a block for intra-task, a warp (32) for the warp kernels)
//   PAIRS_PER_BLOCK  independent pairs per block (> 1 only with a warp per pair: "multi-warp")
//   TILE             rows per thread between exchanges (intra-task tiled: 2)
//   SHUFFLE          0: exchange through shared memory + __syncthreads (intra-task);
//                    1: exchange through warp shuffles (warp kernels, THREADS == 32)
//   PASS_SHARED      1: pass buffer in dynamic shared memory (3 * n real_t, warp kernel);
//                    0: in global memory at pass_col[p] (intra-task, multi-warp)
#include "pairhmm.cuh"

#ifndef THREADS
#define THREADS 128
#endif
#ifndef PAIRS_PER_BLOCK
#define PAIRS_PER_BLOCK 1
#endif
#ifndef TILE
#define TILE 1
#endif
#ifndef SHUFFLE
#define SHUFFLE 0
#endif
#ifndef PASS_SHARED
#define PASS_SHARED 0
#endif

#if SHUFFLE && THREADS != 32
#error "shuffle exchange needs THREADS == 32"
#endif
#if !SHUFFLE && PAIRS_PER_BLOCK != 1
#error "shared-memory exchange uses the whole block for one pair"
#endif
#if PASS_SHARED && PAIRS_PER_BLOCK != 1
#error "a shared pass buffer holds one pair"
#endif

extern "C" __global__ void __launch_bounds__(THREADS * PAIRS_PER_BLOCK) wavefront(
    const int* __restrict__ pair_m, const int* __restrict__ pair_n,
    const long long* __restrict__ pair_read, const long long* __restrict__ pair_hap,
    const unsigned char* __restrict__ read_bases, const real_t* __restrict__ probs,
    const unsigned char* __restrict__ hap_bases, const long long* __restrict__ pass_col,
    real_t* __restrict__ pass_m, real_t* __restrict__ pass_i, real_t* __restrict__ pass_d,
    real_t* __restrict__ sums, int n_pairs) {
    const int t = threadIdx.x % THREADS;
    const int p = blockIdx.x * PAIRS_PER_BLOCK + threadIdx.x / THREADS;
    if (p >= n_pairs) return;  // uniform per pair (its block or its warp)
    const int m = pair_m[p];
    const int n = pair_n[p];
    const unsigned char* hap = hap_bases + pair_hap[p];
    const unsigned char* rbase = read_bases + pair_read[p];
    const real_t* rprob = probs + pair_read[p] * NPROB;

#if PASS_SHARED
    extern __shared__ real_t pass_sh[];
    real_t* pm = pass_sh;
    real_t* pi = pass_sh + n;
    real_t* pd = pass_sh + 2 * n;
#else
    real_t* pm = pass_m + pass_col[p];
    real_t* pi = pass_i + pass_col[p];
    real_t* pd = pass_d + pass_col[p];
#endif
#if !SHUFFLE
    __shared__ Cell exchange[2][THREADS];  // double-buffered: one barrier per step
#endif

    const real_t d0 = initial_constant() / (real_t)n;
    const int strip_rows = THREADS * TILE;
    real_t sum = 0;
    for (int s0 = 0; s0 < m; s0 += strip_rows) {
        const int row0 = s0 + t * TILE;  // this thread's first read position
        RowProbs rows[TILE];
#pragma unroll
        for (int r = 0; r < TILE; ++r)
            rows[r] = row0 + r < m ? load_row(rprob + (size_t)(row0 + r) * NPROB, 1, rbase[row0 + r])
                                   : idle_row();
        Cell left[TILE];
#pragma unroll
        for (int r = 0; r < TILE; ++r) left[r] = zero_cell();
        const bool first = s0 == 0;
        // Above-left of the first column: D[0][0] = C/n for row 1, zero below.
        Cell above_left = first && t == 0 ? top_row_cell(d0) : zero_cell();
        Cell out = zero_cell();  // this thread's last row at its current column
        const bool more = s0 + strip_rows < m;
        const int busy = min(THREADS, (m - s0 + TILE - 1) / TILE);
        const int steps = n + busy - 1;
        for (int s = 0; s < steps; ++s) {
            const int j = s - t;
#if SHUFFLE
            Cell above;
            above.m = __shfl_up_sync(FULL_WARP, out.m, 1);
            above.i = __shfl_up_sync(FULL_WARP, out.i, 1);
            above.d = __shfl_up_sync(FULL_WARP, out.d, 1);
#else
            Cell above = t > 0 && s > 0 ? exchange[(s - 1) & 1][t - 1] : zero_cell();
#endif
            if (j >= 0 && j < n && row0 < m) {
                if (t == 0) above = first ? top_row_cell(d0) : Cell{pm[j], pi[j], pd[j]};
                out = column_tile<TILE>(rows, base_mask(__ldg(hap + j)), above_left, above, left);
                above_left = above;
                if (more && t == THREADS - 1) {
                    pm[j] = out.m;
                    pi[j] = out.i;
                    pd[j] = out.d;
                }
#pragma unroll
                for (int r = 0; r < TILE; ++r)
                    if (row0 + r == m - 1) sum += left[r].m + left[r].i;
            }
#if SHUFFLE
            __syncwarp();  // orders the pass buffer's reads and in-place writes within the warp
#else
            exchange[s & 1][t] = out;
            __syncthreads();
#endif
        }
    }
    // The thread owning row m-1 holds the result.
    if (t == ((m - 1) % strip_rows) / TILE) sums[p] = sum;
}
