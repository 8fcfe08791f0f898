// Pair-HMM forward recurrence, shared by every CUDA kernel family of hmmbench.
//
// Semantics (GATK4, see hmmbench/model.py): row i (1-based) uses read position i-1's emission and
// transitions;
//   M[i][j] = emis * (mm*M[i-1][j-1] + gm*(I[i-1][j-1] + D[i-1][j-1]))
//   I[i][j] = mi*M[i-1][j] + ii*I[i-1][j]
//   D[i][j] = md*M[i][j-1] + dd*D[i][j-1]
// row 0 and column 0 are zero except D[0][j] = C/n for every j, j = 0 included (GATK's
// LoglessPairHMM fills the whole padded first row, so M[1][1] gets gm * C/n); the result is
// sum_{j>=1} M[m][j] + I[m][j].
// float32 with C = 2^120; the host recomputes in float64 (USE_DOUBLE=1 build of the same
// kernel, C = 2^1020) any pair whose sum is below 1e-28.
#pragma once

#ifndef USE_DOUBLE
#define USE_DOUBLE 0
#endif
#if USE_DOUBLE
typedef double real_t;
#define FMA __fma_rn
#else
typedef float real_t;
#define FMA __fmaf_rn
#endif

// Base codes A0 C1 G2 T3 N4; N matches anything.
#define N_CODE 4

// Per read position the host stores NPROB probabilities (real_t) in this order (ii = dd = gap).
#define NPROB 7
#define P_MATCH 0
#define P_MISMATCH 1
#define P_MM 2
#define P_GM 3
#define P_MI 4
#define P_MD 5
#define P_GAP 6

#define FULL_WARP 0xffffffffu

// C exactly: 2^120 (float32 exponent bits 120 + 127), or 2^1020 (float64: 1020 + 1023).
__device__ __forceinline__ real_t initial_constant() {
#if USE_DOUBLE
    return __longlong_as_double(0x7FB0000000000000LL);
#else
    return __int_as_float(0x7B800000);
#endif
}

struct Cell {
    real_t m, i, d;
};

__device__ __forceinline__ Cell zero_cell() { return Cell{0, 0, 0}; }

// Row 0 seen from row 1: M = I = 0, D = C/n (every column, j = 0 included).
__device__ __forceinline__ Cell top_row_cell(real_t d0) { return Cell{0, 0, d0}; }

// One bit per base; N sets all bits, so "match" is a single AND.
__device__ __forceinline__ unsigned base_mask(unsigned b) {
    return b == N_CODE ? 0x1Fu : (1u << b);
}

// Everything a row needs: its probabilities and its read base (as a mask).
struct RowProbs {
    real_t match, mismatch, mm, gm, mi, md, gap;
    unsigned read_mask;
};

// Load a row's probabilities; `stride` is the distance between fields (1 for the naive layout,
// 32 for the interleaved one, where one warp's lanes sit side by side).
__device__ __forceinline__ RowProbs load_row(const real_t* __restrict__ p, int stride,
                                             unsigned read_base) {
    RowProbs r;
    r.match = __ldg(p + P_MATCH * stride);
    r.mismatch = __ldg(p + P_MISMATCH * stride);
    r.mm = __ldg(p + P_MM * stride);
    r.gm = __ldg(p + P_GM * stride);
    r.mi = __ldg(p + P_MI * stride);
    r.md = __ldg(p + P_MD * stride);
    r.gap = __ldg(p + P_GAP * stride);
    r.read_mask = base_mask(read_base);
    return r;
}

// Rows past the end of a read: any finite values; their cells are never used.
__device__ __forceinline__ RowProbs idle_row() {
    return RowProbs{0, 0, 0, 0, 0, 0, 0, 0u};
}

// The cell update, written once: diag = (i-1, j-1), up = (i-1, j), left = (i, j-1).
__device__ __forceinline__ Cell pairhmm_cell(const RowProbs& r, unsigned hap_mask, const Cell& diag,
                                             const Cell& up, const Cell& left) {
    const real_t emis = (r.read_mask & hap_mask) ? r.match : r.mismatch;
    Cell c;
    c.m = emis * FMA(r.mm, diag.m, r.gm * (diag.i + diag.d));
    c.i = FMA(r.mi, up.m, r.gap * up.i);
    c.d = FMA(r.md, left.m, r.gap * left.d);
    return c;
}

// Compute ROWS successive rows of one column (top to bottom): `up` enters as the cell above the
// first row, `diag` as the cell above-left of it; `left[r]` holds row r's previous column and is
// replaced by the new column. Returns the last row's new cell.
template <int ROWS>
__device__ __forceinline__ Cell column_tile(const RowProbs (&rows)[ROWS], unsigned hap_mask,
                                            Cell diag, Cell up, Cell (&left)[ROWS]) {
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const Cell c = pairhmm_cell(rows[r], hap_mask, diag, up, left[r]);
        diag = left[r];
        left[r] = c;
        up = c;
    }
    return up;
}
