/* Inter-task Pair-HMM (Ren et al.): one work-item computes one whole pair.
 *
 * The read is swept in strips of TILE rows (TILE = 1 is the naive kernel); each strip walks the
 * haplotype column by column keeping its TILE rows in registers, and the strip boundary row
 * (M, I, D per column) lives in global scratch. The first strip reads row 0 as constants and the
 * last one sums the read's last row and stores nothing, as in the CUDA twin. Both layouts place
 * pairs exactly as the CUDA twin does (hmmbench/layouts.py); only the row payload differs (packed
 * quality codes here, decoded through the err table).
 *
 * Defines: TILE, USE_DOUBLE (see pairhmm_common.h) and
 *   INTERLEAVED  0: pairs in dataset order, each work-item reads its own read/haplotype from the
 *                   flat packed arrays;
 *                1: pairs sorted by length and stored interleaved per group of LANES slots
 *                   (position-major, lane-minor; haplotype bases four per uint).
 *                Either way a work-item loops over its own read and haplotype.
 *   LOCAL_SIZE   the work-group size (a multiple of LANES).
 *   LANES        slots per group: the interleaving width, and the scratch grouping (a group's
 *                boundary rows are contiguous: block k, field f of lane l of group g at
 *                ((group_block[g] + k) * 3 + f) * LANES + l, in units of VEC values).
 *   VEC          scratch columns moved per load/store (1, 2, 4): column j sits in block
 *                (j - 1) / VEC, so one VEC-wide access per work-item covers VEC columns (fewer,
 *                wider memory operations on GPUs); the next block is loaded while the current
 *                one is computed.
 *   FORCE_INLINE  1 on CPU devices (see STRIP_INLINE below).
 */
#include "pairhmm_common.h"

#ifndef INTERLEAVED
#define INTERLEAVED 0
#endif
#ifndef VEC
#define VEC 1
#endif
#ifndef LANES
#define LANES 32
#endif
#ifndef LOCAL_SIZE
#define LOCAL_SIZE LANES
#endif

#if INTERLEAVED
typedef uint hap_t;             /* four bases per word, byte b = base 4k + b */
#define ROW_STRIDE LANES
#else
typedef uchar hap_t;
#define ROW_STRIDE 1
#endif

/* field f (M, I, D) of column block k of this work-item's boundary row */
/* A slot's group and lane. CPU vectorizers map a work-group's items onto SIMD lanes: spelled with
 * the work-item functions at each use, the group is visibly uniform and the lanes visibly
 * consecutive (through an int variable, Intel's compiler turns the scratch accesses into
 * scatters and gathers, 2.5x slower). */
#if LOCAL_SIZE == LANES
#define GROUP_ID ((int)get_group_id(0))
#define LANE_ID ((int)get_local_id(0))
#else
#define GROUP_ID ((int)get_global_id(0) / LANES)
#define LANE_ID ((int)get_global_id(0) % LANES)
#endif

/* field f (M, I, D) of column block k of this work-item's boundary row; scratch = its group's */
#define SCRATCH(k, f) scratch[((k) * 3 + (f)) * LANES + LANE_ID]

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

/* One strip: TILE rows (virtual rows v0 .. v0 + TILE - 1, see below) swept over the n columns.
 * The row above comes from scratch, or from the constants of row 0 in the first strip; the strip's
 * bottom row goes to scratch, except in the last strip, where it is the read's last row and its
 * M + I is summed instead. Called with `last` a literal, so each call site compiles its own loop
 * (the CUDA twin's LAST template parameter). */
STRIP_INLINE real_t strip(__global const uint *restrict reads, __global const hap_t *restrict haps,
                          __global const real_t *restrict err, __global vec_t *restrict scratch,
                          int v0, int pad, int n, real_t d0, const bool last)
{
    const bool first = v0 == 0;
    row_model rows[TILE];
    real_t left_m[TILE], left_i[TILE], left_d[TILE];
#pragma unroll
    for (int t = 0; t < TILE; ++t) {
        /* virtual rows above the read are row-0 clones whose column 0 is row 0's (0, 0, C/n) */
        const int i = v0 + t - pad;
        rows[t] = i < 0 ? row0_clone() : decode_row(reads[i * ROW_STRIDE], err);
        left_m[t] = 0; left_i[t] = 0; left_d[t] = i < 0 ? d0 : (real_t)0;
    }
    /* column 0 of the row above: zero, except where that row is row 0 or a clone of it (D = C/n) */
    real_t dg_m = 0, dg_i = 0, dg_d = v0 <= pad ? d0 : (real_t)0;
    real_t sum = 0;
    /* the row above is read one block ahead so that its load is in flight while the current
       block is computed (the kernel is bound by these loads' latency otherwise) */
    const int n_blocks = (n + VEC - 1) / VEC;
#if INTERLEAVED
    uint hap_word = 0;
#endif
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
            if (VEC > 1 && j > n)
                break;  /* padding columns of the last block: stored, never read */
            if (first) {  /* row 0 */
                up_m[q] = 0; up_i[q] = 0; up_d[q] = d0;
            }
#if INTERLEAVED
            if (((j - 1) & 3) == 0)
                hap_word = haps[((j - 1) >> 2) * LANES];
            const uint hap_mask = base_mask((hap_word >> (8 * ((j - 1) & 3))) & 0xFFu);
#else
            const uint hap_mask = base_mask(haps[j - 1]);
#endif
            tile_column(rows, hap_mask, up_m[q], up_i[q], dg_m, dg_i, dg_d, left_m, left_i, left_d);
            if (last)
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

/* Layout arguments (hmmbench/backends/opencl.py, InterTask.layout):
 *   pair_m, pair_n        per slot read and haplotype lengths (padding slots: 0)
 *   read_start, hap_start flat: per pair offsets into read_codes / hap_data (bytes);
 *                         interleaved: per group first row / haplotype word (in units of LANES)
 *   group_block           per group first scratch block
 *
 * Rows are processed as virtual rows: pad row-0 clones above the read make the number of rows a
 * multiple of TILE, so that the read's last row is the last strip's bottom row (no per-cell test
 * of which row is the read's last).
 */
__kernel __attribute__((reqd_work_group_size(LOCAL_SIZE, 1, 1)))
void inter_task(__global const uint *restrict read_codes,
                         __global const hap_t *restrict hap_data,
                         __global const int *restrict pair_m,
                         __global const int *restrict pair_n,
                         __global const int *restrict read_start,
                         __global const int *restrict hap_start,
                         __global const int *restrict group_block,
                         __global const real_t *restrict err,
                         __global vec_t *restrict scratch,
                         __global real_t *restrict sums,
                         const int n_items)
{
    const int gid = get_global_id(0);
    if (gid >= n_items)
        return;
    const int group = GROUP_ID;
    const int m = pair_m[gid], n = pair_n[gid];
#if INTERLEAVED
    __global const uint *reads = read_codes + read_start[group] * LANES + LANE_ID;
    __global const hap_t *haps = hap_data + hap_start[group] * LANES + LANE_ID;
#else
    __global const uint *reads = read_codes + read_start[gid];
    __global const hap_t *haps = hap_data + hap_start[gid];
#endif
    __global vec_t *vecs = scratch + group_block[group] * 3 * LANES;
    real_t sum = 0;
    if (m > 0 && n > 0) {
        const real_t d0 = initial_deletion(n);
        const int n_rows = (m + TILE - 1) / TILE * TILE;  /* virtual rows */
        const int pad = n_rows - m;
        int v0 = 0;
        for (; v0 + TILE < n_rows; v0 += TILE)
            strip(reads, haps, err, vecs, v0, pad, n, d0, false);
        sum = strip(reads, haps, err, vecs, v0, pad, n, d0, true);
    }
    sums[gid] = sum;
}
