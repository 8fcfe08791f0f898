/* Pair-HMM forward recurrence shared by every OpenCL kernel family (GATK4 semantics).
 *
 * Build-time defines (set by hmmbench/backends/opencl.py):
 *   USE_DOUBLE  1 for the float64 build (fallback / reference precision), else float32
 *   TILE        consecutive read rows one work-item computes per column (1 = naive)
 *
 * A read position arrives packed in one uint: base (3 bits) | base quality << 3 | insertion
 * quality << 10 | deletion quality << 17 | gap-continuation quality << 24 (Phred <= 93 < 128),
 * and the probabilities are derived here from a 128-entry table err[q] = 10^(-q/10), so that the
 * per-pair layouts stay 4 bytes per read position and the float64 build reproduces the host's
 * float64 arithmetic operation for operation.
 */
#ifndef PAIRHMM_COMMON_H
#define PAIRHMM_COMMON_H

#ifndef TILE
#define TILE 1
#endif

#if USE_DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define REAL_TYPE double
#define INIT_C 0x1p1020         /* GATK's double initial condition, 2^1020 */
#else
#define REAL_TYPE float
#define INIT_C 0x1p120f         /* GKL's float initial condition, 2^120 */
#endif
typedef REAL_TYPE real_t;

#define N_CODE 4u               /* N matches every base */

/* Probabilities of one read row (GATK's names: M->M, I->M = D->M, M->I, I->I, M->D, D->D) and
 * its base as a one-hot mask (N = all bits), so that a match is one AND with the column's mask. */
typedef struct {
    real_t match, mismatch, mm, gm, mi, ii, md, dd;
    uint mask;
} row_model;

/* one bit per base; N sets every bit, so N matches anything */
inline uint base_mask(uint base)
{
    return base == N_CODE ? 0x1Fu : (1u << base);
}

inline row_model decode_row(uint code, __global const real_t *restrict err)
{
    row_model r;
    const real_t e = err[(code >> 3) & 127u];
    r.mi = err[(code >> 10) & 127u];
    r.md = err[(code >> 17) & 127u];
    const real_t gap = err[(code >> 24) & 127u];
    r.mask = base_mask(code & 7u);
    r.match = (real_t)1 - e;
    r.mismatch = e / (real_t)3;
    r.mm = (real_t)1 - (r.mi + r.md);
    r.gm = (real_t)1 - gap;
    r.ii = gap;
    r.dd = gap;
    return r;
}

/* A padding row that reproduces DP row 0 (M = I = 0, D carried along the row): placed above a
 * read's first row, with its column 0 set to row 0's (0, 0, C/n), it hands the first real row
 * exactly the values row 0 would. Lets a kernel align a read's last row with a tile's last row. */
inline row_model row0_clone(void)
{
    row_model r;
    r.match = 0; r.mismatch = 0; r.mm = 0; r.gm = 0; r.mi = 0; r.ii = 0; r.md = 0; r.dd = 1;
    r.mask = 0;
    return r;
}

/* D[0][j] = C / n for every j of row 0, the padding column j = 0 included (as GATK fills it). */
inline real_t initial_deletion(int hap_length)
{
    return hap_length > 0 ? INIT_C / (real_t)hap_length : (real_t)0;
}

/* One column j of TILE consecutive rows.
 *
 * In:  hap_mask            base_mask of haplotype base j - 1
 *      (up_m, up_i)        M, I of the row above the tile at column j
 *      (dg_m, dg_i, dg_d)  M, I, D of the row above the tile at column j - 1
 *      left_*[t]           row t of the tile at column j - 1 (updated in place to column j)
 */
inline void tile_column(const row_model *rows, uint hap_mask,
                        real_t up_m, real_t up_i, real_t dg_m, real_t dg_i, real_t dg_d,
                        real_t *left_m, real_t *left_i, real_t *left_d)
{
#pragma unroll
    for (int t = 0; t < TILE; ++t) {
        const row_model r = rows[t];
        const real_t emis = (r.mask & hap_mask) ? r.match : r.mismatch;
        const real_t new_m = emis * (r.mm * dg_m + r.gm * (dg_i + dg_d));
        const real_t new_i = r.mi * up_m + r.ii * up_i;
        const real_t new_d = r.md * left_m[t] + r.dd * left_d[t];
        /* this row at j - 1 is the next row's diagonal; this row at j is the next row's top */
        dg_m = left_m[t]; dg_i = left_i[t]; dg_d = left_d[t];
        left_m[t] = new_m; left_i[t] = new_i; left_d[t] = new_d;
        up_m = new_m; up_i = new_i;
    }
}

/* Adds M + I of DP row `last_row` (1-based; the read length) to *sum if it is one of the tile's
 * rows first_row + 1 .. first_row + TILE. */
inline void add_last_row(const real_t *left_m, const real_t *left_i, int first_row, int last_row,
                         real_t *sum)
{
#pragma unroll
    for (int t = 0; t < TILE; ++t)
        if (first_row + t + 1 == last_row)
            *sum += left_m[t] + left_i[t];
}

#endif /* PAIRHMM_COMMON_H */
