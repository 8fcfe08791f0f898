/* Intra-task and warp-level Pair-HMM (Ren et al.): a team of THREADS work-items computes one pair.
 *
 * Thread t of a team owns TILE consecutive read rows of each pass of THREADS * TILE rows and
 * computes them column by column, one anti-diagonal step behind thread t - 1, from which it
 * receives the bottom row of the previous step. The last thread's bottom row is kept per column
 * in local memory (double-buffered by pass parity) for the first thread of the next pass.
 *
 * Defines: TILE, USE_DOUBLE (pairhmm_common.h) and
 *   THREADS          work-items per pair (the team)
 *   PAIRS_PER_GROUP  teams per work-group (> 1 only with a sub-group exchange)
 *   EXCHANGE         EXCHANGE_LOCAL: through local memory with a work-group barrier per step
 *                    (intra-task, and the warp family's fallback);
 *                    EXCHANGE_KHR / EXCHANGE_INTEL: sub_group_shuffle_up (cl_khr_subgroup_
 *                    shuffle_relative) / intel_sub_group_shuffle_up (cl_intel_subgroups);
 *                    EXCHANGE_KHR_INDEXED: sub_group_shuffle (cl_khr_subgroup_shuffle only);
 *                    EXCHANGE_PTX: inline PTX shfl.sync.up (NVIDIA's OpenCL, no sub-group
 *                    extensions). With a shuffle the team is one sub-group of THREADS lanes.
 *   HAP_STRIDE       local bytes per team for its haplotype (>= longest haplotype)
 */
#include "pairhmm_common.h"

#define EXCHANGE_LOCAL 0
#define EXCHANGE_KHR 1
#define EXCHANGE_INTEL 2
#define EXCHANGE_PTX 3
#define EXCHANGE_KHR_INDEXED 4

#ifndef PAIRS_PER_GROUP
#define PAIRS_PER_GROUP 1
#endif

#if EXCHANGE == EXCHANGE_LOCAL && PAIRS_PER_GROUP != 1
#error "a local-memory exchange synchronizes the whole work-group: one pair per work-group"
#endif

#if EXCHANGE == EXCHANGE_KHR
#ifdef cl_khr_subgroups
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#endif
#define SHUFFLE_UP(x) sub_group_shuffle_up((x), 1u)
#define TEAM_SYNC() sub_group_barrier(CLK_LOCAL_MEM_FENCE)
#define REQD_SUBGROUP
#elif EXCHANGE == EXCHANGE_KHR_INDEXED
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
/* cl_khr_subgroup_shuffle only: lane 0's value is replaced by the boundary row anyway */
#define SHUFFLE_UP(x) sub_group_shuffle((x), (uint)max((int)get_sub_group_local_id() - 1, 0))
#define TEAM_SYNC() sub_group_barrier(CLK_LOCAL_MEM_FENCE)
#define REQD_SUBGROUP
#elif EXCHANGE == EXCHANGE_INTEL
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#define SHUFFLE_UP(x) intel_sub_group_shuffle_up((x), (x), 1u)
#define TEAM_SYNC() sub_group_barrier(CLK_LOCAL_MEM_FENCE)
#define REQD_SUBGROUP
#elif EXCHANGE == EXCHANGE_PTX
/* shfl.sync moves 32 bits; a double travels as two halves */
inline float shfl_up_f32(float x)
{
    float r;
    asm volatile("shfl.sync.up.b32 %0, %1, 1, 0, 0xffffffff;" : "=f"(r) : "f"(x));
    return r;
}
inline double shfl_up_f64(double x)
{
    uint2 h = as_uint2(x), r;
    asm volatile("shfl.sync.up.b32 %0, %1, 1, 0, 0xffffffff;" : "=r"(r.x) : "r"(h.x));
    asm volatile("shfl.sync.up.b32 %0, %1, 1, 0, 0xffffffff;" : "=r"(r.y) : "r"(h.y));
    return as_double(r);
}
#if USE_DOUBLE
#define SHUFFLE_UP(x) shfl_up_f64(x)
#else
#define SHUFFLE_UP(x) shfl_up_f32(x)
#endif
#define TEAM_SYNC() asm volatile("bar.warp.sync 0xffffffff;" ::: "memory")
#else
#define TEAM_SYNC() barrier(CLK_LOCAL_MEM_FENCE)
#endif

/* Intel's compilers pick a sub-group size per kernel; the team must be exactly one sub-group. */
#if defined(REQD_SUBGROUP) && defined(cl_intel_required_subgroup_size)
#define SUBGROUP_ATTR __attribute__((intel_reqd_sub_group_size(THREADS)))
#else
#define SUBGROUP_ATTR
#endif

#define BND(buf, j, f) boundary[((buf) * (HAP_STRIDE + 1) + (j)) * 3 + (f)]

__kernel SUBGROUP_ATTR __attribute__((reqd_work_group_size(THREADS * PAIRS_PER_GROUP, 1, 1)))
void wavefront(__global const uint *restrict read_codes,
               __global const uchar *restrict hap_bases,
               __global const int *restrict pair_m,
               __global const int *restrict pair_n,
               __global const int *restrict read_start,
               __global const int *restrict hap_start,
               __global const real_t *restrict err,
               __global real_t *restrict sums,
               const int n_pairs)
{
    __local uchar hap_all[PAIRS_PER_GROUP][HAP_STRIDE];
    __local real_t boundary_all[PAIRS_PER_GROUP][2 * (HAP_STRIDE + 1) * 3];
#if EXCHANGE == EXCHANGE_LOCAL
    __local real_t xchg[2][3][THREADS];
#endif
    const int team = get_local_id(0) / THREADS;
    const int t = get_local_id(0) % THREADS;
    const int pair = get_group_id(0) * PAIRS_PER_GROUP + team;
    const bool real_pair = pair < n_pairs;
    /* a padding team computes nothing but still meets every barrier */
    const int m = real_pair ? pair_m[pair] : 0;
    const int n = real_pair ? pair_n[pair] : 0;
    __local uchar *hap = hap_all[team];
    __local real_t *boundary = boundary_all[team];
    __global const uint *reads = read_codes + (real_pair ? read_start[pair] : 0);

    /* the haplotype into local memory; buffer 0 = DP row 0: M = I = 0, D = C/n (j = 0 too) */
    const real_t d0 = initial_deletion(n);
    for (int j = t; j < n; j += THREADS)
        hap[j] = hap_bases[hap_start[pair] + j];
    for (int j = t; j <= n; j += THREADS) {
        BND(0, j, 0) = 0;
        BND(0, j, 1) = 0;
        BND(0, j, 2) = d0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);

    real_t sum = 0;
    const int rows_per_pass = THREADS * TILE;
    const int passes = (m + rows_per_pass - 1) / rows_per_pass;
    for (int pass = 0; pass < passes; ++pass) {
        const int in_buf = pass & 1, out_buf = in_buf ^ 1;
        const int first_row = pass * rows_per_pass + t * TILE;
        row_model rows[TILE];
        real_t left_m[TILE], left_i[TILE], left_d[TILE];
#pragma unroll
        for (int r = 0; r < TILE; ++r) {
            /* rows past the read (last pass) reuse its last row; their cells are never counted */
            rows[r] = decode_row(reads[min(first_row + r, m - 1)], err);
            left_m[r] = 0; left_i[r] = 0; left_d[r] = 0;
        }
        /* column 0 of the row above: thread 0 reads it (row 0's D[0][0] = C/n); else zero */
        real_t dg_m = 0, dg_i = 0, dg_d = 0;
        if (t == 0) {
            dg_m = BND(in_buf, 0, 0); dg_i = BND(in_buf, 0, 1); dg_d = BND(in_buf, 0, 2);
        }
        if (t == THREADS - 1) {
            BND(out_buf, 0, 0) = 0; BND(out_buf, 0, 1) = 0; BND(out_buf, 0, 2) = 0;
        }
        /* what this thread handed on at the previous step: its bottom row at its last column */
        real_t out_m = 0, out_i = 0, out_d = 0;
        const int steps = n + THREADS - 1;
        for (int s = 0; s < steps; ++s) {
            const int j = s - t + 1;
            real_t up_m, up_i, up_d;
#if EXCHANGE == EXCHANGE_LOCAL
            if (t > 0) {
                const int prev = (s + 1) & 1;
                up_m = xchg[prev][0][t - 1]; up_i = xchg[prev][1][t - 1]; up_d = xchg[prev][2][t - 1];
            }
#else
            up_m = SHUFFLE_UP(out_m); up_i = SHUFFLE_UP(out_i); up_d = SHUFFLE_UP(out_d);
#endif
            if (t == 0 && j <= n) {
                up_m = BND(in_buf, j, 0); up_i = BND(in_buf, j, 1); up_d = BND(in_buf, j, 2);
            }
            if (j >= 1 && j <= n) {
                tile_column(rows, base_mask(hap[j - 1]), up_m, up_i, dg_m, dg_i, dg_d,
                            left_m, left_i, left_d);
                add_last_row(left_m, left_i, first_row, m, &sum);
                out_m = left_m[TILE - 1]; out_i = left_i[TILE - 1]; out_d = left_d[TILE - 1];
                if (t == THREADS - 1) {
                    BND(out_buf, j, 0) = out_m; BND(out_buf, j, 1) = out_i; BND(out_buf, j, 2) = out_d;
                }
                dg_m = up_m; dg_i = up_i; dg_d = up_d;
            }
#if EXCHANGE == EXCHANGE_LOCAL
            xchg[s & 1][0][t] = out_m; xchg[s & 1][1][t] = out_i; xchg[s & 1][2][t] = out_d;
            barrier(CLK_LOCAL_MEM_FENCE);
#endif
        }
        TEAM_SYNC();
    }
    /* only the owner of row m has counted anything */
    if (m > 0 && t == ((m - 1) % rows_per_pass) / TILE)
        sums[pair] = sum;
}
