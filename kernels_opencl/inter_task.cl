/* Inter-task Pair-HMM (Ren et al.): one work-item computes one whole pair.
 *
 * The read is swept in strips of TILE rows (TILE = 1 is the naive kernel); each strip walks the
 * haplotype column by column keeping its TILE rows in registers, and the strip boundary row
 * (M, I, D per column) lives in global scratch, interleaved by work-item so that neighbouring
 * work-items (SIMD lanes / warp threads) touch neighbouring addresses. The first strip reads row 0
 * as constants and the last one sums the read's last row and stores nothing, as in the CUDA twin.
 *
 * Defines: TILE, USE_DOUBLE (see pairhmm_common.h) and
 *   INTERLEAVED  0: pairs in dataset order, each work-item reads its own read/haplotype from the
 *                   flat packed arrays and loops over its own lengths;
 *                1: pairs sorted by length and stored interleaved per work-group of LANES pairs
 *                   (position-major, lane-minor); a work-group loops over its longest read and
 *                   haplotype (uniform control flow), each lane's read aligned to end on the
 *                   last row (row-0 clones above it) and counting only its columns j <= n
 *                   (cells past a lane's haplotype never reach those).
 *   LANES        work-group size of the interleaved layout.
 *   VEC          scratch columns moved per load/store (1, 2, 4): column j of work-item w sits in
 *                block (j - 1) / VEC, so one VEC-wide access per work-item covers VEC columns
 *                (fewer, wider memory operations on GPUs); the next block is loaded while the
 *                current one is computed.
 *   FORCE_INLINE  1 on CPU devices (see STRIP_INLINE below).
 */
#include "pairhmm_common.h"

#ifndef INTERLEAVED
#define INTERLEAVED 0
#endif
#ifndef VEC
#define VEC 1
#endif

/* field f (M, I, D) of column block k of work-item gid's boundary row */
#define SCRATCH(k, f) scratch[((k) * 3 + (f)) * stride + gid]

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
#if VEC == 1
typedef real_t vec_t;
#define VEC_SPLIT(v, a) ((a)[0] = (v))
#define VEC_JOIN(a) ((a)[0])
#elif VEC == 2
typedef CAT(REAL_TYPE, 2) vec_t;
#define VEC_SPLIT(v, a) ((a)[0] = (v).s0, (a)[1] = (v).s1)
#define VEC_JOIN(a) ((vec_t)((a)[0], (a)[1]))
#elif VEC == 4
typedef CAT(REAL_TYPE, 4) vec_t;
#define VEC_SPLIT(v, a) ((a)[0] = (v).s0, (a)[1] = (v).s1, (a)[2] = (v).s2, (a)[3] = (v).s3)
#define VEC_JOIN(a) ((vec_t)((a)[0], (a)[1], (a)[2], (a)[3]))
#else
#error "VEC must be 1, 2 or 4"
#endif

/* CPU compilers (Intel's runtime) may keep strip(), called from two places, as a real call, which
 * costs the vectorized kernel 2-3x (its private arrays go through memory); GPU compilers inline it
 * anyway. The host sets FORCE_INLINE for CPU devices. */
#if FORCE_INLINE
#define STRIP_INLINE __attribute__((always_inline)) inline
#else
#define STRIP_INLINE inline
#endif

/* One strip: TILE rows (virtual rows v0 .. v0 + TILE - 1, see below) swept over loop_n columns.
 * The row above comes from scratch, or from the constants of row 0 in the first strip; the strip's
 * bottom row goes to scratch, except in the last strip, where it is the read's last row and its
 * M + I is summed instead. Called with `last` a literal, so each call site compiles its own loop
 * (the CUDA twin's LAST template parameter). */
STRIP_INLINE real_t strip(__global const uint *restrict reads_base, int row_stride,
                    __global const uchar *restrict haps, int hap_stride,
                    __global const real_t *restrict err, __global vec_t *restrict scratch,
                    int stride, int gid, int v0, int pad, int n, int loop_n, real_t d0,
                    const bool last)
{
    const bool first = v0 == 0;
    row_model rows[TILE];
    real_t left_m[TILE], left_i[TILE], left_d[TILE];
#pragma unroll
    for (int t = 0; t < TILE; ++t) {
        /* virtual rows above the read are row-0 clones whose column 0 is row 0's (0, 0, C/n) */
        const int i = v0 + t - pad;
        rows[t] = i < 0 ? row0_clone() : decode_row(reads_base[i * row_stride], err);
        left_m[t] = 0; left_i[t] = 0; left_d[t] = i < 0 ? d0 : (real_t)0;
    }
    /* column 0 of the row above: zero, except where that row is row 0 or a clone of it (D = C/n) */
    real_t dg_m = 0, dg_i = 0, dg_d = v0 <= pad ? d0 : (real_t)0;
    real_t sum = 0;
    /* the row above is read one block ahead so that its load is in flight while the current
       block is computed (the kernel is bound by these loads' latency otherwise) */
    const int n_blocks = (loop_n + VEC - 1) / VEC;
    vec_t next_m = 0, next_i = 0, next_d = 0;
    if (!first && n_blocks > 0) {
        next_m = SCRATCH(0, 0); next_i = SCRATCH(0, 1); next_d = SCRATCH(0, 2);
    }
    for (int k = 0; k < n_blocks; ++k) {
        real_t up_m[VEC], up_i[VEC], up_d[VEC];
        VEC_SPLIT(next_m, up_m); VEC_SPLIT(next_i, up_i); VEC_SPLIT(next_d, up_d);
        if (!first && k + 1 < n_blocks) {
            next_m = SCRATCH(k + 1, 0); next_i = SCRATCH(k + 1, 1); next_d = SCRATCH(k + 1, 2);
        }
        real_t out_m[VEC], out_i[VEC], out_d[VEC];
#pragma unroll
        for (int q = 0; q < VEC; ++q) {
            out_m[q] = 0; out_i[q] = 0; out_d[q] = 0;
        }
#pragma unroll
        for (int q = 0; q < VEC; ++q) {
            const int j = k * VEC + q + 1;
            if (VEC > 1 && j > loop_n)
                break;  /* padding columns of the last block: stored, never read */
            if (first) {  /* row 0 */
                up_m[q] = 0; up_i[q] = 0; up_d[q] = d0;
            }
            tile_column(rows, base_mask(haps[(j - 1) * hap_stride]), up_m[q], up_i[q],
                        dg_m, dg_i, dg_d, left_m, left_i, left_d);
            /* interleaved lanes loop to their group's longest haplotype: count their own only */
            if (last && (!INTERLEAVED || j <= n))
                sum += left_m[TILE - 1] + left_i[TILE - 1];
            out_m[q] = left_m[TILE - 1]; out_i[q] = left_i[TILE - 1]; out_d[q] = left_d[TILE - 1];
            dg_m = up_m[q]; dg_i = up_i[q]; dg_d = up_d[q];
        }
        if (!last) {
            SCRATCH(k, 0) = VEC_JOIN(out_m);
            SCRATCH(k, 1) = VEC_JOIN(out_i);
            SCRATCH(k, 2) = VEC_JOIN(out_d);
        }
    }
    return sum;
}

/* Layout arguments:
 *   pair_m, pair_n        per work-item read and haplotype lengths (interleaved: padded lanes 0)
 *   read_start, hap_start flat: per pair offsets into read_codes / hap_bases;
 *                         interleaved: per work-group first row of its block (in units of LANES)
 *   group_m, group_n      interleaved: per work-group longest read / haplotype (flat: unused)
 *
 * Rows are processed as virtual rows: pad row-0 clones above the read make the number of rows a
 * multiple of TILE, so that the read's last row is the last strip's bottom row for every lane
 * (no per-cell test of which row is the read's last, and interleaved lanes of different read
 * lengths run the same strips).
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
                         __global vec_t *restrict scratch,
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
    const int row_stride = LANES;
#else
    if (gid >= n_items)
        return;
    const int m = pair_m[gid], n = pair_n[gid];
    const int loop_m = m, loop_n = n;
    __global const uint *reads = read_codes + read_start[gid];
    __global const uchar *haps = hap_bases + hap_start[gid];
    const int row_stride = 1;
#endif
    real_t sum = 0;
    if (m > 0 && n > 0) {
        const real_t d0 = initial_deletion(n);
        const int n_rows = (loop_m + TILE - 1) / TILE * TILE;  /* virtual rows */
        const int pad = n_rows - m;
        int v0 = 0;
        for (; v0 + TILE < n_rows; v0 += TILE)
            strip(reads, row_stride, haps, row_stride, err, scratch, stride, gid, v0, pad, n,
                  loop_n, d0, false);
        sum = strip(reads, row_stride, haps, row_stride, err, scratch, stride, gid, v0, pad, n,
                    loop_n, d0, true);
    }
    sums[gid] = sum;
}
