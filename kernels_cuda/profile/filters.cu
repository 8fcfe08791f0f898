// HMMER3 SIMD filters on CUDA: SSV, MSV (8-bit) and the Viterbi filter (16-bit, lazy F).
//
// Two families, both exact integer emulations of HMMER 3.4 (the host finishes the raw integers
// into nats with the reference's rules, cpu_reference/profile_filters.py):
//  * task-parallel (*_task): one thread per target sequence, unstriped rows in global memory
//    ([k][seq] interleaved, so a warp's accesses coalesce), the kernels of
//    kernels_common/profile/task.h, shared with OpenCL;
//  * CUDAMPF-style warp kernels (*_warp): one warp per sequence, the model Farrar-striped over
//    the warp (32 lanes x 4 packed bytes = 128 positions per vector for MSV/SSV, 32 lanes x 2
//    packed int16 = 64 per vector for the Viterbi filter), the DP row in registers (QB / QW
//    vectors, fixed per model size at compile time), SIMD-within-a-register arithmetic
//    (__vmaxu4 / __vaddus4 / __vsubus4, __vmaxs2 / __vaddss2), warp shuffles for the one-element
//    shift between vectors, warp reductions for xE, and HMMER's lazy-F D->D passes.
//
// Defines: MODEL_M (model length), QB = max(2, ceil(M/128)), QW = max(2, ceil(M/64)),
// BLOCK (threads per block, a multiple of 32).
#include <stdint.h>

#ifndef BLOCK
#define BLOCK 128
#endif
#define FULL 0xffffffffu
#define NEG16 (-32768)

// ------------------------------------------------------------------ task-parallel kernels
// Shared with OpenCL (kernels_common/profile/task.h), in CUDA's spelling; rows [k][seq].
#define TASK_KERNEL(name) extern "C" __global__ void __launch_bounds__(BLOCK) name##_task
#define IN(T) const T *__restrict__
#define OUT(T) T *
#define GLOBAL_ID ((int)(blockIdx.x * blockDim.x + threadIdx.x))
typedef uint8_t u8;
typedef int16_t i16;
typedef long long i64;
#define INTERLEAVED 1
#include "profile/task.h"

// ------------------------------------------------------------------ warp-group kernels
// A group of GROUP lanes (8, 16 or 32; VF always 32) owns one target sequence; the model is
// Farrar-striped over the group (GROUP x ELEMS_B elements per vector for SSV/MSV, 32 x 2 for
// VF) and the DP rows live in registers. Warps are persistent (grid-stride over the
// length-sorted launch order); groups of one warp run to the warp's longest sequence and feed
// the shorter ones the pad residue KP, whose profile row makes a row a no-op for SSV/MSV.
// Variants (defines, all exact; see docs/profile-notes.md for what each buys):
//   SIMD16=0 : SSV/MSV on packed unsigned bytes, __vaddus4/__vsubus4/__vmaxu4 (CUDAMPF; these
//              are emulated in ~6 instructions each on sm_90)
//   SIMD16=1 : SSV/MSV on int16 pairs with Hopper DPX (__viaddmin_s16x2_relu, __viaddmax_s16x2,
//              __vimax3_s16x2: one instruction each); byte saturation reproduced exactly (below)
//   PREFETCH : residues fetched GROUP rows at a time (one load per lane, then a shuffle per
//              row) instead of a dependent global load per row
//   PROFILE_SMEM : profile copied once per persistent block into shared memory (else __ldg)
//   LAZY_XE  : MSV reduces xE over the group only on rows where some lane's row maximum could
//              move xB or overflow (a vote), as HMMER's xJ is a plain maximum over rows
//   VF_DPX   : Viterbi filter saturating adds as max(a, -32768 - b) + b (b <= 0, exact, no
//              wrap) and clamp-then-add for emissions, on native 16x2 min/max/add instead of
//              the emulated __vaddss2; VF_NTSC_ALU: -32768 - tsc computed as ~tsc + 0x8001 per
//              half (2 ALU instructions) instead of loaded (the VF is bound by L1 bytes)
#ifndef GROUP
#define GROUP 32
#endif
#ifndef SIMD16
#define SIMD16 0
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif
#ifndef PROFILE_SMEM
#define PROFILE_SMEM 0
#endif
#ifndef LAZY_XE
#define LAZY_XE 0
#endif
#ifndef VF_DPX
#define VF_DPX 0
#endif
#ifndef VF_NTSC_ALU
#define VF_NTSC_ALU 0
#endif
#ifndef KP
#define KP 29
#endif
#define PAD_CODE KP
#define WARPS_PER_BLOCK (BLOCK / 32)

#if PROFILE_SMEM
extern __shared__ uint32_t smem_profile[];
#define PROFILE_BEGIN(g, nwords)                                                      \
    for (int i_ = threadIdx.x; i_ < (nwords); i_ += BLOCK) smem_profile[i_] = (g)[i_]; \
    __syncthreads();                                                                  \
    const uint32_t *P = smem_profile;
#define PLOAD(p) (*(p))
#else
#define PROFILE_BEGIN(g, nwords) const uint32_t *__restrict__ P = (g);
#define PLOAD(p) __ldg(p)
#endif

// The sequence of a lane's group for warp job wj: index s (-1 for an empty slot), first residue
// and length; lmax = the warp's longest (rows every group of the warp runs).
struct Slot { int s; long long off; int len; int lmax; };

template <int G>
__device__ __forceinline__ Slot slot_of(int wj, int lane, const long long *__restrict__ offsets,
                                        const int *__restrict__ order, int nseq)
{
    Slot t;
    const int i = wj * (32 / G) + lane / G;
    t.s = i < nseq ? order[i] : -1;
    t.off = t.s >= 0 ? offsets[t.s] : 0;
    t.len = t.s >= 0 ? (int)(offsets[t.s + 1] - t.off) : 0;
    t.lmax = __reduce_max_sync(FULL, t.len);
    return t;
}

#define FOR_EACH_WARP_JOB(wj, G)                                                         \
    for (int wj = blockIdx.x * WARPS_PER_BLOCK + (threadIdx.x >> 5);                     \
         wj < (nseq + 32 / (G) - 1) / (32 / (G)); wj += gridDim.x * WARPS_PER_BLOCK)

// Calls row(x) for the residue codes of the lane's sequence, rows 0..lmax-1, PAD_CODE past its
// end. PREFETCH: lane l of a group loads row i0+l, row i0+r is shuffled from lane r.
template <int G, class Row>
__device__ __forceinline__ void for_each_row(const uint8_t *__restrict__ residues, const Slot &t,
                                             int lig, Row row)
{
#if PREFETCH
    int cur = lig < t.len ? (int)residues[t.off + lig] : PAD_CODE;
    for (int i0 = 0; i0 < t.lmax; i0 += G) {
        const int j = i0 + G + lig;
        const int nxt = j < t.len ? (int)residues[t.off + j] : PAD_CODE;
        const int n = min(G, t.lmax - i0);
        for (int r = 0; r < n; r++) row(__shfl_sync(FULL, cur, r, G));
        cur = nxt;
    }
#else
    for (int i = 0; i < t.lmax; i++) row(i < t.len ? (int)residues[t.off + i] : PAD_CODE);
#endif
}

template <int G>
__device__ __forceinline__ int group_max(int v)
{
    if constexpr (G == 32) {
        return __reduce_max_sync(FULL, v);
    } else {
#pragma unroll
        for (int d = G / 2; d > 0; d /= 2) v = max(v, __shfl_xor_sync(FULL, v, d, G));
        return v;
    }
}

// ---- SSV / MSV element arithmetic
#if SIMD16
// int16 pairs. Exactness vs HMMER's saturating bytes: values stay in 0..255 and differ from the
// byte recursion only after a value reached 255 - bias, i.e. after the overflow that the host
// reports anyway (SSV: xE >= 255 - bias; MSV: xE + bias >= 255 ends the sequence).
#define ELEMS_B 2
__device__ __forceinline__ uint32_t splat_b(int x) { return 0x00010001u * (uint32_t)(x & 0xffff); }
__device__ __forceinline__ uint32_t vb_max(uint32_t a, uint32_t b) { return __vmaxs2(a, b); }
__device__ __forceinline__ uint32_t vb_max3(uint32_t a, uint32_t b, uint32_t c) { return __vimax3_s16x2(a, b, c); }
__device__ __forceinline__ int vb_lane_max(uint32_t v) { return max((int)(int16_t)(v & 0xffffu), (int)(int16_t)(v >> 16)); }
__device__ __forceinline__ uint32_t vb_shift(uint32_t v, int lig)
{
    const uint32_t carry = __shfl_up_sync(FULL, v >> 16, 1, GROUP);
    return (v << 16) | (lig == 0 ? 0u : carry);
}
// SSV: profile word = bias - cost (-1024 for no cell); max(min(prev + bias - cost, 255), 0)
__device__ __forceinline__ uint32_t ssv_cell(uint32_t mpv, uint32_t pc, uint32_t biasv)
{ return __viaddmin_s16x2_relu(mpv, pc, 0x00ff00ffu); }
// MSV: profile word = -cost; xbrow = min(xB + bias, 255); max(max(prev + bias, xbrow) - cost, 0)
__device__ __forceinline__ uint32_t msv_cell(uint32_t mpv, uint32_t pc, uint32_t biasv, uint32_t xbrow)
{ return __viaddmax_s16x2(__viaddmax_s16x2(mpv, biasv, xbrow), pc, 0u); }
__device__ __forceinline__ int msv_xbrow(int xB, int bias) { return min(xB + bias, 255); }
#else
// packed unsigned bytes (HMMER's own saturating arithmetic)
#define ELEMS_B 4
__device__ __forceinline__ uint32_t splat_b(int x) { return 0x01010101u * (uint32_t)(x & 0xff); }
__device__ __forceinline__ uint32_t vb_max(uint32_t a, uint32_t b) { return __vmaxu4(a, b); }
__device__ __forceinline__ uint32_t vb_max3(uint32_t a, uint32_t b, uint32_t c) { return __vmaxu4(__vmaxu4(a, b), c); }
__device__ __forceinline__ int vb_lane_max(uint32_t v)
{ return (int)max(max(v & 0xffu, (v >> 8) & 0xffu), max((v >> 16) & 0xffu, v >> 24)); }
__device__ __forceinline__ uint32_t vb_shift(uint32_t v, int lig)
{
    const uint32_t carry = __shfl_up_sync(FULL, v >> 24, 1, GROUP);
    return (v << 8) | (lig == 0 ? 0u : carry);
}
// profile word = cost (255 for no cell)
__device__ __forceinline__ uint32_t ssv_cell(uint32_t mpv, uint32_t pc, uint32_t biasv)
{ return __vsubus4(__vaddus4(mpv, biasv), pc); }
__device__ __forceinline__ uint32_t msv_cell(uint32_t mpv, uint32_t pc, uint32_t biasv, uint32_t xbrow)
{ return __vsubus4(__vaddus4(__vmaxu4(mpv, xbrow), biasv), pc); }
__device__ __forceinline__ int msv_xbrow(int xB, int bias) { return xB; }
#endif

// One DP row of the SSV/MSV diagonal recursion over the striped vectors dp[0..QB-1]; returns
// the elementwise row maximum (pairs folded with a 3-way max).
template <class Cell>
__device__ __forceinline__ uint32_t byte_row(uint32_t (&dp)[QB], const uint32_t *__restrict__ c,
                                             int lig, Cell cell)
{
    uint32_t mpv = vb_shift(dp[QB - 1], lig);
    uint32_t rowmax = 0, held = 0;
#pragma unroll
    for (int q = 0; q < QB; q++) {
        const uint32_t sv = cell(mpv, PLOAD(c + q * GROUP));
        mpv = dp[q];
        dp[q] = sv;
        if (q & 1) rowmax = vb_max3(rowmax, held, sv);
        else held = sv;
    }
    if (QB & 1) rowmax = vb_max(rowmax, held);
    return rowmax;
}

#define PROFILE_WORDS_B ((KP + 1) * QB * GROUP)

// profile: [KP+1][QB][GROUP] words (row KP: the pad residue)
extern "C" __global__ void __launch_bounds__(BLOCK)
ssv_xe_warp(const uint32_t *__restrict__ profile, const uint8_t *__restrict__ residues,
            const long long *__restrict__ offsets, const int *__restrict__ order, int nseq,
            int bias, int *out_xe)
{
    PROFILE_BEGIN(profile, PROFILE_WORDS_B)
    const int lane = threadIdx.x & 31, lig = lane & (GROUP - 1);
    const uint32_t biasv = splat_b(bias);
    FOR_EACH_WARP_JOB(wj, GROUP) {
        const Slot t = slot_of<GROUP>(wj, lane, offsets, order, nseq);
        uint32_t dp[QB];
#pragma unroll
        for (int q = 0; q < QB; q++) dp[q] = 0;
        uint32_t xEv = 0;
        // SSV has no J state: xE is the maximum over every cell, no reduction per row
        for_each_row<GROUP>(residues, t, lig, [&](int x) {
            const uint32_t *c = P + x * (QB * GROUP) + lig;
            xEv = vb_max(xEv, byte_row(dp, c, lig, [&](uint32_t m, uint32_t pc) { return ssv_cell(m, pc, biasv); }));
        });
        const int best = group_max<GROUP>(vb_lane_max(xEv));
        if (lig == 0 && t.s >= 0) out_xe[t.s] = 128 + best;
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
msv_xj_warp(const uint32_t *__restrict__ profile, const uint8_t *__restrict__ residues,
            const long long *__restrict__ offsets, const int *__restrict__ order, int nseq,
            int bias, int base, int tec, const uint8_t *__restrict__ tjbm, int *out_xj)
{
    PROFILE_BEGIN(profile, PROFILE_WORDS_B)
    const int lane = threadIdx.x & 31, lig = lane & (GROUP - 1);
    const uint32_t biasv = splat_b(bias);
    FOR_EACH_WARP_JOB(wj, GROUP) {
        const Slot t = slot_of<GROUP>(wj, lane, offsets, order, nseq);
        const int jbm = t.s >= 0 ? tjbm[t.s] : 0;
        uint32_t dp[QB];
#pragma unroll
        for (int q = 0; q < QB; q++) dp[q] = 0;
        // xJ is HMMER's max over rows of max(xE - tec, 0); xB = max(max(base, xJ) - jbm, 0)
        // changes only on rows where xE - tec > jtop = max(base, xJ)
        int jtop = base, xJ = 0, over = 0;
        int xB = max(base - jbm, 0);
        uint32_t xbv = splat_b(msv_xbrow(xB, bias));
#if LAZY_XE
        uint32_t xEall = 0;
        int thr = min(255 - bias, jtop + tec + 1);       // a row max >= thr needs the exact xE
#endif
        for_each_row<GROUP>(residues, t, lig, [&](int x) {
            const uint32_t *c = P + x * (QB * GROUP) + lig;
            const uint32_t rowmax = byte_row(dp, c, lig, [&](uint32_t m, uint32_t pc) { return msv_cell(m, pc, biasv, xbv); });
#if LAZY_XE
            xEall = vb_max(xEall, rowmax);
            if (__any_sync(FULL, vb_lane_max(rowmax) >= thr)) {
#endif
                const int xE = group_max<GROUP>(vb_lane_max(rowmax));
                if (!over) {
                    if (xE + bias >= 255) over = 1;
                    else if (xE - tec > jtop) {
                        jtop = xE - tec;
                        xB = max(jtop - jbm, 0);
                        xbv = splat_b(msv_xbrow(xB, bias));
                    }
#if !LAZY_XE
                    xJ = max(xJ, max(xE - tec, 0));
#endif
                }
#if LAZY_XE
                thr = over ? 1 << 20 : min(255 - bias, jtop + tec + 1);
            }
#endif
        });
#if LAZY_XE
        xJ = max(group_max<GROUP>(vb_lane_max(xEall)) - tec, 0);
#endif
        if (lig == 0 && t.s >= 0) out_xj[t.s] = over ? -1 : xJ;
    }
}

// ---- Viterbi filter (int16 pairs, 32 lanes x 2 = 64 elements per vector)
// profile: match [KP+1][QW][32]; VF_DPX: then emission clamps lo, hi (same shape); then tsc
// [8][QW][32] (BM MM IM DM MD MI II DD, HMMER's masks); VF_DPX: then -32768 - tsc (same shape)
#define VW (QW * 32)
#if VF_DPX
#define VF_TSC_OFF (3 * (KP + 1) * VW)
#define PROFILE_WORDS_W (VF_TSC_OFF + 16 * VW)
#else
#define VF_TSC_OFF ((KP + 1) * VW)
#define PROFILE_WORDS_W (VF_TSC_OFF + 8 * VW)
#endif

__device__ __forceinline__ uint32_t shift_words(uint32_t v, int lane)
{
    uint32_t carry = __shfl_up_sync(FULL, v >> 16, 1);
    return (v << 16) | (lane == 0 ? 0x8000u : carry);
}

// -32768 - t per int16 half (t <= 0): ~t + 0x8001 with a wrapping add
__device__ __forceinline__ uint32_t neg_floor(uint32_t t) { return __vadd2(~t, 0x80018001u); }
__device__ __forceinline__ uint32_t vf_tadd(uint32_t a, uint32_t t)
{ return __vadd2(__vmaxs2(a, neg_floor(t)), t); }
__device__ __forceinline__ uint32_t vf_taddmax(uint32_t a, uint32_t t, uint32_t acc)
{ return __viaddmax_s16x2(__vmaxs2(a, neg_floor(t)), t, acc); }

__device__ __forceinline__ int lane_max_s16x2(uint32_t v)
{
    return max((int)(int16_t)(v & 0xffffu), (int)(int16_t)(v >> 16));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
vf_xc_warp(const uint32_t *__restrict__ profile, const uint8_t *__restrict__ residues,
           const long long *__restrict__ offsets, const int *__restrict__ order, int nseq,
           int base, int e_loop, int e_move, int ddbound, const int16_t *__restrict__ move,
           int *out_xc)
{
    PROFILE_BEGIN(profile, PROFILE_WORDS_W)
    const int lane = threadIdx.x & 31;
    const uint32_t neg = 0x80008000u;
    const uint32_t *tsc = P + VF_TSC_OFF + lane;
#define TV(j, q) PLOAD(tsc + ((j) * QW + (q)) * 32)
#if VF_DPX && VF_NTSC_ALU
#define TADD(a, j, q) vf_tadd((a), TV(j, q))
#define TADDMAX(a, j, q, acc) vf_taddmax((a), TV(j, q), (acc))
#elif VF_DPX
#define TN(j, q) PLOAD(tsc + ((8 + (j)) * QW + (q)) * 32)
    // a + tsc saturated at -32768: tsc <= 0, so max(a, -32768 - tsc) + tsc is exact and in range
#define TADD(a, j, q) __vadd2(__vmaxs2((a), TN(j, q)), TV(j, q))
#define TADDMAX(a, j, q, acc) __viaddmax_s16x2(__vmaxs2((a), TN(j, q)), TV(j, q), (acc))
#else
#define TADD(a, j, q) __vaddss2((a), TV(j, q))
#define TADDMAX(a, j, q, acc) __vmaxs2(__vaddss2((a), TV(j, q)), (acc))
#endif
    FOR_EACH_WARP_JOB(wj, 32) {
        const Slot t = slot_of<32>(wj, lane, offsets, order, nseq);
        uint32_t M_[QW], I_[QW], D_[QW];
#pragma unroll
        for (int q = 0; q < QW; q++) { M_[q] = neg; I_[q] = neg; D_[q] = neg; }
        const int mv = t.s >= 0 ? move[t.s] : 0, xN = base;
        int xB = xN + mv, xJ = NEG16, xC = NEG16;
        bool over = false;
        for_each_row<32>(residues, t, lane, [&](int x) {
            if (over) return;                               // warp-uniform (one sequence)
            const uint32_t *rsc = P + x * VW + lane;
            const uint32_t xBv = 0x00010001u * (uint32_t)(uint16_t)xB;
            uint32_t mpv = shift_words(M_[QW - 1], lane);
            uint32_t dpv = shift_words(D_[QW - 1], lane);
            uint32_t ipv = shift_words(I_[QW - 1], lane);
            uint32_t dcv = neg, xEv = neg, Dmaxv = neg;
#pragma unroll
            for (int q = 0; q < QW; q++) {
                uint32_t sv = TADD(xBv, 0, q);
                sv = TADDMAX(mpv, 1, q, sv);
                sv = TADDMAX(ipv, 2, q, sv);
                sv = TADDMAX(dpv, 3, q, sv);
#if VF_DPX
                // saturating sv + e as min(max(sv, lo), hi) + e, lo = -32768 - min(e, 0),
                // hi = 32767 - max(e, 0)
                sv = __vadd2(__vmins2(__vmaxs2(sv, PLOAD(rsc + (KP + 1) * VW + q * 32)),
                                      PLOAD(rsc + 2 * (KP + 1) * VW + q * 32)),
                             PLOAD(rsc + q * 32));
#else
                sv = __vaddss2(sv, PLOAD(rsc + q * 32));
#endif
                xEv = __vmaxs2(xEv, sv);
                mpv = M_[q]; dpv = D_[q]; ipv = I_[q];
                M_[q] = sv;
                D_[q] = dcv;
                dcv = TADD(sv, 4, q);
                Dmaxv = __vmaxs2(Dmaxv, dcv);
                I_[q] = TADDMAX(ipv, 6, q, TADD(mpv, 5, q));
            }
            const int xE = __reduce_max_sync(FULL, lane_max_s16x2(xEv));
            if (xE >= 32767) { over = true; return; }
            xC = max(xC, xE + e_move);
            xJ = max(xJ, xE + e_loop);
            xB = max(xJ + mv, xN + mv);
            const int Dmax = __reduce_max_sync(FULL, lane_max_s16x2(Dmaxv));
            dcv = shift_words(dcv, lane);
            if (Dmax + ddbound > xB) {
                // lazy F: one full D->D pass, then more while a segment boundary still improves D
#pragma unroll
                for (int q = 0; q < QW; q++) {
                    D_[q] = __vmaxs2(dcv, D_[q]);
                    dcv = TADD(D_[q], 7, q);
                }
                bool again = true;
                while (again) {
                    dcv = shift_words(dcv, lane);
                    again = false;
                    int q = 0;
#pragma unroll
                    for (q = 0; q < QW; q++) {
                        if (!__any_sync(FULL, __vmaxs2(dcv, D_[q]) != D_[q])) break;
                        D_[q] = __vmaxs2(dcv, D_[q]);
                        dcv = TADD(D_[q], 7, q);
                    }
                    again = (q == QW);
                }
            } else {
                D_[0] = dcv;
            }
        });
        if (lane == 0 && t.s >= 0) out_xc[t.s] = over ? 32768 : xC;
    }
#undef TV
#undef TN
#undef TADD
#undef TADDMAX
}
