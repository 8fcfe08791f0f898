/* Inter-task Pair-HMM (Ren et al.): one work-item computes one whole pair.
 *
 * The read is swept in strips of TILE rows (TILE = 1 is the naive kernel); each strip walks the
 * haplotype column by column keeping its TILE rows in registers, and the strip boundary row
 * (M, I, D per column) lives in global scratch, interleaved by work-item so that neighbouring
 * work-items (SIMD lanes / warp threads) touch neighbouring addresses. The first strip reads row 0
 * as constants and the last one stores nothing, as in the CUDA twin.
 *
 * Defines: TILE, USE_DOUBLE (see pairhmm_common.h) and
 *   INTERLEAVED  0: pairs in dataset order, each work-item reads its own read/haplotype from the
 *                   flat packed arrays and loops over its own lengths;
 *                1: pairs sorted by length and stored interleaved per work-group of LANES pairs
 *                   (position-major, lane-minor); a work-group loops over its longest read and
 *                   haplotype (uniform control flow), each lane counting only its own row m and
 *                   columns j <= n (cells past a lane's lengths never reach those).
 *   LANES        work-group size of the interleaved layout.
 */
#include "pairhmm_common.h"

#ifndef INTERLEAVED
#define INTERLEAVED 0
#endif

/* Layout arguments:
 *   pair_m, pair_n        per work-item read and haplotype lengths (interleaved: padded lanes 0)
 *   read_start, hap_start flat: per pair offsets into read_codes / hap_bases;
 *                         interleaved: per work-group first row of its block (in units of LANES)
 *   group_m, group_n      interleaved: per work-group longest read / haplotype (flat: unused)
 */
__kernel void inter_task(__global const uint *restrict read_codes,
                         __global const uchar *restrict hap_bases,
                         __global const int *restrict pair_m,
                         __global const int *restrict pair_n,
                         __global const int *restrict read_start,
                         __global const int *restrict hap_start,
                         __global const int *restrict group_m,
                         __global const int *restrict group_n,
                         __global const real_t *restrict err,
                         __global real_t *restrict scratch,
                         __global real_t *restrict sums,
                         const int n_items)
{
    const int gid = get_global_id(0);
    const int stride = get_global_size(0);
#if INTERLEAVED
    const int lane = get_local_id(0);
    const int group = get_group_id(0);
    const int m = pair_m[gid], n = pair_n[gid];
    const int loop_m = group_m[group], loop_n = group_n[group];
    __global const uint *reads = read_codes + read_start[group] * LANES + lane;
    __global const uchar *haps = hap_bases + hap_start[group] * LANES + lane;
#define READ_CODE(i) reads[(i) * LANES]
#define HAP_BASE(j) haps[(j) * LANES]
#else
    if (gid >= n_items)
        return;
    const int m = pair_m[gid], n = pair_n[gid];
    const int loop_m = m, loop_n = n;
    __global const uint *reads = read_codes + read_start[gid];
    __global const uchar *haps = hap_bases + hap_start[gid];
#define READ_CODE(i) reads[i]
#define HAP_BASE(j) haps[j]
#endif
#define SCRATCH(j, f) scratch[((j) * 3 + (f)) * stride + gid]

    const real_t d0 = initial_deletion(n);
    real_t sum = 0;
    for (int i0 = 0; i0 < loop_m; i0 += TILE) {
        /* the first strip's row above is row 0 (constants, no scratch); the last strip's bottom
           row is never read again (no store) */
        const bool first = i0 == 0, last = i0 + TILE >= loop_m;
        row_model rows[TILE];
        real_t left_m[TILE], left_i[TILE], left_d[TILE];
#pragma unroll
        for (int t = 0; t < TILE; ++t) {
            /* rows past the read (last strip) reuse its last row; their cells are never counted */
            rows[t] = decode_row(READ_CODE(min(i0 + t, loop_m - 1)), err);
            left_m[t] = 0; left_i[t] = 0; left_d[t] = 0;
        }
        /* column 0 of the row above: zero, except row 0's D (D[0][0] = C/n) */
        real_t dg_m = 0, dg_i = 0, dg_d = first ? d0 : (real_t)0;
        /* the row above is read one column ahead so that its load is in flight while the
           current column is computed (the kernel is bound by these loads' latency otherwise) */
        real_t next_m = 0, next_i = 0, next_d = d0;
        if (!first && loop_n > 0) {
            next_m = SCRATCH(1, 0); next_i = SCRATCH(1, 1); next_d = SCRATCH(1, 2);
        }
        uint next_base = loop_n > 0 ? HAP_BASE(0) : 0u;
        for (int j = 1; j <= loop_n; ++j) {
            const real_t up_m = next_m, up_i = next_i, up_d = next_d;
            const uint hap_base = next_base;
            if (j < loop_n) {
                next_base = HAP_BASE(j);
                if (!first) {
                    next_m = SCRATCH(j + 1, 0); next_i = SCRATCH(j + 1, 1); next_d = SCRATCH(j + 1, 2);
                }
            }
            tile_column(rows, hap_base, up_m, up_i, dg_m, dg_i, dg_d,
                        left_m, left_i, left_d, i0, m, j <= n, &sum);
            if (!last) {
                SCRATCH(j, 0) = left_m[TILE - 1];
                SCRATCH(j, 1) = left_i[TILE - 1];
                SCRATCH(j, 2) = left_d[TILE - 1];
            }
            dg_m = up_m; dg_i = up_i; dg_d = up_d;
        }
    }
    sums[gid] = sum;
}
