// Inter-task Pair-HMM (Ren et al. 2016, 2018): one thread per read-haplotype pair.
//
// Each thread walks its matrix in horizontal strips of TILE rows: for every column it computes the
// TILE cells top to bottom in registers (left neighbours and the above-left cell stay in
// registers), reading the row above the strip from, and writing the strip's last row to, three
// global vectors. TILE = 1 is the naive kernel; TILE = k cuts the vectors' traffic by k.
//
// Defines: TILE (rows per strip, 1..8), BLOCK (threads per block), INTERLEAVED (0: pairs in
// dataset order, reads/haplotypes read through per-pair offsets; 1: the journal version's data
// preparation -- pairs sorted by length, groups of 32 pairs stored lane-interleaved so a warp's
// loads coalesce: read bases one byte per lane, probabilities one real_t per lane, haplotype bases
// four per lane as char4).
//
// The row vectors are stored per group of 32 threads (warp) in blocks of VEC columns: columns
// kVEC..kVEC+VEC-1 of lane l are VEC consecutive values at ((group_block[g] + k) * 32 + l) * VEC,
// so one VEC-wide load per thread covers VEC columns and a warp's loads coalesce in both layouts.
// The next block is loaded while the current one is computed.
#include "pairhmm.cuh"

#ifndef TILE
#define TILE 1
#endif
#ifndef BLOCK
#define BLOCK 128
#endif
#ifndef INTERLEAVED
#define INTERLEAVED 0
#endif
#ifndef VEC
#define VEC 1
#endif
#if VEC != 1 && VEC != 2 && VEC != 4
#error "VEC must be 1, 2 or 4"
#endif
#if USE_DOUBLE && VEC == 4
#error "the float64 build moves at most 2 columns (16 bytes) per access"
#endif

// VEC successive columns of one row vector, in registers.
struct VecF {
    real_t v[VEC];
};

#if USE_DOUBLE
typedef double2 real2_t;
#define MAKE_REAL2 make_double2
#else
typedef float2 real2_t;
#define MAKE_REAL2 make_float2
#endif

__device__ __forceinline__ VecF load_vec(const real_t* p) {
    VecF r;
#if VEC == 4
    const float4 t = *reinterpret_cast<const float4*>(p);
    r.v[0] = t.x, r.v[1] = t.y, r.v[2] = t.z, r.v[3] = t.w;
#elif VEC == 2
    const real2_t t = *reinterpret_cast<const real2_t*>(p);
    r.v[0] = t.x, r.v[1] = t.y;
#else
    r.v[0] = *p;
#endif
    return r;
}

__device__ __forceinline__ void store_vec(real_t* p, const VecF& x) {
#if VEC == 4
    *reinterpret_cast<float4*>(p) = make_float4(x.v[0], x.v[1], x.v[2], x.v[3]);
#elif VEC == 2
    *reinterpret_cast<real2_t*>(p) = MAKE_REAL2(x.v[0], x.v[1]);
#else
    *p = x.v[0];
#endif
}

#if TILE < 1 || TILE > 8
#error "TILE must be 1..8"
#endif

// One thread's view of its pair.
struct PairView {
    int m, n;
#if INTERLEAVED
    const unsigned char* read_bases;  // row i at [i * 32]
    const real_t* probs;              // row i, field f at [(i * NPROB + f) * 32]
    const unsigned* hap4;             // bases 4k..4k+3 at [k * 32], byte b = base 4k+b
#else
    const unsigned char* read_bases;  // row i at [i]
    const real_t* probs;              // row i, field f at [i * NPROB + f]
    const unsigned char* hap;         // base j at [j]
#endif
    real_t* vm;  // row vectors: column j+1 at [(j / VEC) * 32 * VEC + j % VEC]
    real_t* vi;
    real_t* vd;

    __device__ __forceinline__ RowProbs row(int i) const {
#if INTERLEAVED
        return load_row(probs + (size_t)i * NPROB * 32, 32, __ldg(read_bases + (size_t)i * 32));
#else
        return load_row(probs + (size_t)i * NPROB, 1, __ldg(read_bases + i));
#endif
    }
};

// One strip of ROWS rows starting at read position i0. FIRST: the row above is row 0 (no vector
// load); LAST: the strip ends the matrix, so sum its last row instead of storing it.
template <int ROWS, bool LAST>
__device__ __forceinline__ real_t strip(const PairView& pv, int i0, bool first, real_t d0) {
    RowProbs rows[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) rows[r] = pv.row(i0 + r);
    Cell left[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) left[r] = zero_cell();  // column 0
    // (i0-1, 0): D[0][0] = C/n above the first strip, zero for every later row.
    Cell above_left = first ? top_row_cell(d0) : zero_cell();
    real_t sum = 0;
#if INTERLEAVED
    unsigned hap_word = 0;
#endif
    const int n_blocks = (pv.n + VEC - 1) / VEC;
    VecF next_m, next_i, next_d;
    if (!first) next_m = load_vec(pv.vm), next_i = load_vec(pv.vi), next_d = load_vec(pv.vd);
    for (int k = 0; k < n_blocks; ++k) {
        const size_t at = (size_t)k * 32 * VEC;
        const VecF up_m = next_m, up_i = next_i, up_d = next_d;
        if (!first && k + 1 < n_blocks) {  // prefetch: in flight while this block computes
            next_m = load_vec(pv.vm + at + 32 * VEC);
            next_i = load_vec(pv.vi + at + 32 * VEC);
            next_d = load_vec(pv.vd + at + 32 * VEC);
        }
        VecF out_m, out_i, out_d;
#pragma unroll
        for (int q = 0; q < VEC; ++q) {
            const int j = k * VEC + q;
            if (VEC > 1 && j >= pv.n) break;
#if INTERLEAVED
            if ((j & 3) == 0) hap_word = __ldg(pv.hap4 + (size_t)(j >> 2) * 32);
            const unsigned hap_mask = base_mask((hap_word >> (8 * (j & 3))) & 0xFFu);
#else
            const unsigned hap_mask = base_mask(__ldg(pv.hap + j));
#endif
            const Cell above = first ? top_row_cell(d0) : Cell{up_m.v[q], up_i.v[q], up_d.v[q]};
            const Cell last = column_tile<ROWS>(rows, hap_mask, above_left, above, left);
            above_left = above;
            if (LAST) {
                sum += last.m + last.i;
            } else {
                out_m.v[q] = last.m, out_i.v[q] = last.i, out_d.v[q] = last.d;
            }
        }
        if (!LAST) {  // columns past n in the last block are scratch padding, never read
            store_vec(pv.vm + at, out_m);
            store_vec(pv.vi + at, out_i);
            store_vec(pv.vd + at, out_d);
        }
    }
    return sum;
}

extern "C" __global__ void __launch_bounds__(BLOCK) inter_task(
    const int* __restrict__ pair_m, const int* __restrict__ pair_n,
#if INTERLEAVED
    const long long* __restrict__ group_row,   // first interleaved read row of each group
    const long long* __restrict__ group_hap4,  // first interleaved char4 column of each group
    const unsigned char* __restrict__ read_bases, const real_t* __restrict__ probs,
    const unsigned* __restrict__ hap4,
#else
    const long long* __restrict__ pair_read, const long long* __restrict__ pair_hap,
    const unsigned char* __restrict__ read_bases, const real_t* __restrict__ probs,
    const unsigned char* __restrict__ hap_bases,
#endif
    const long long* __restrict__ group_block, real_t* __restrict__ vec_m,
    real_t* __restrict__ vec_i, real_t* __restrict__ vec_d, real_t* __restrict__ sums,
    int n_slots) {
    // BLOCK bounds the block size (registers); small launches use smaller blocks to reach more SMs.
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= n_slots) return;
    const int lane = p & 31;
    const int g = p >> 5;
    PairView pv;
    pv.m = pair_m[p];
    pv.n = pair_n[p];
    if (pv.m <= 0 || pv.n <= 0) {  // padding slot
        sums[p] = 0;
        return;
    }
#if INTERLEAVED
    pv.read_bases = read_bases + group_row[g] * 32 + lane;
    pv.probs = probs + group_row[g] * NPROB * 32 + lane;
    pv.hap4 = hap4 + group_hap4[g] * 32 + lane;
#else
    pv.read_bases = read_bases + pair_read[p];
    pv.probs = probs + pair_read[p] * NPROB;
    pv.hap = hap_bases + pair_hap[p];
#endif
    const size_t vbase = ((size_t)group_block[g] * 32 + lane) * VEC;
    pv.vm = vec_m + vbase;
    pv.vi = vec_i + vbase;
    pv.vd = vec_d + vbase;

    const real_t d0 = initial_constant() / (real_t)pv.n;
    int i0 = 0;
    for (; i0 + TILE < pv.m; i0 += TILE) strip<TILE, false>(pv, i0, i0 == 0, d0);
    // The last strip has 1..TILE rows; each count is its own unrolled instance.
    real_t sum = 0;
    switch (pv.m - i0) {
#define LAST_STRIP(k) \
    case k:           \
        sum = strip<(k <= TILE ? k : 1), true>(pv, i0, i0 == 0, d0); \
        break;
        LAST_STRIP(1)
#if TILE >= 2
        LAST_STRIP(2)
#endif
#if TILE >= 3
        LAST_STRIP(3)
#endif
#if TILE >= 4
        LAST_STRIP(4)
#endif
#if TILE >= 5
        LAST_STRIP(5)
#endif
#if TILE >= 6
        LAST_STRIP(6)
#endif
#if TILE >= 7
        LAST_STRIP(7)
#endif
#if TILE >= 8
        LAST_STRIP(8)
#endif
#undef LAST_STRIP
    }
    sums[p] = sum;
}
