// HMMER3 SIMD filters on CUDA: SSV, MSV (8-bit) and the Viterbi filter (16-bit, lazy F).
//
// Two families, both exact integer emulations of HMMER 3.4 (the host finishes the raw integers
// into nats with the reference's rules, cpu_reference/profile_filters.py):
//  * task-parallel (*_task): one thread per target sequence, unstriped rows in global memory
//    ([k][seq] interleaved, so a warp's accesses coalesce), the port of kernels_opencl/
//    profile_filters.cl;
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
#define TROW(k) ((size_t)(k) * (size_t)nseq + (size_t)t)

extern "C" __global__ void __launch_bounds__(BLOCK)
ssv_xe_task(const uint8_t *__restrict__ cost, const uint8_t *__restrict__ residues,
            const long long *__restrict__ offsets, const int *__restrict__ order, int nseq,
            int bias, uint8_t *row, int *out_xe)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nseq) return;
    const int s = order[t];
    for (int k = 0; k < MODEL_M; k++) row[TROW(k)] = 0;
    int best = 0;
    for (long long i = offsets[s]; i < offsets[s + 1]; i++) {
        const uint8_t *c = cost + (size_t)residues[i] * MODEL_M;
        int prev = 0;
        for (int k = 0; k < MODEL_M; k++) {
            const int old = row[TROW(k)];
            const int v = min(max(prev + bias - (int)c[k], 0), 255);
            row[TROW(k)] = (uint8_t)v;
            best = max(best, v);
            prev = old;
        }
    }
    out_xe[s] = 128 + best;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
msv_xj_task(const uint8_t *__restrict__ cost, const uint8_t *__restrict__ residues,
            const long long *__restrict__ offsets, const int *__restrict__ order, int nseq,
            int bias, int base, int tec, const uint8_t *__restrict__ tjbm, uint8_t *row,
            int *out_xj)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nseq) return;
    const int s = order[t];
    const int jbm = tjbm[s];
    for (int k = 0; k < MODEL_M; k++) row[TROW(k)] = 0;
    int xJ = 0, xB = max(base - jbm, 0);
    for (long long i = offsets[s]; i < offsets[s + 1]; i++) {
        const uint8_t *c = cost + (size_t)residues[i] * MODEL_M;
        int prev = 0, xE = 0;
        for (int k = 0; k < MODEL_M; k++) {
            const int old = row[TROW(k)];
            const int v = min(max(max(prev, xB) + bias - (int)c[k], 0), 255);
            row[TROW(k)] = (uint8_t)v;
            xE = max(xE, v);
            prev = old;
        }
        if (xE + bias >= 255) { out_xj[s] = -1; return; }
        xE = max(xE - tec, 0);
        xJ = max(xJ, xE);
        xB = max(max(base, xJ) - jbm, 0);
    }
    out_xj[s] = xJ;
}

// tsc: [8][M+1] in HMMER's p7P order (MM IM DM BM MD DD MI II), host-masked.
#define T_MM 0
#define T_IM 1
#define T_DM 2
#define T_BM 3
#define T_MD 4
#define T_DD 5
#define T_MI 6
#define T_II 7
#define TSC(tt, k) ((int)tsc[(tt) * (MODEL_M + 1) + (k)])

extern "C" __global__ void __launch_bounds__(BLOCK)
vf_xc_task(const int16_t *__restrict__ match, const int16_t *__restrict__ tsc,
           const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
           const int *__restrict__ order, int nseq, int base, int e_loop, int e_move,
           int ddbound, const int16_t *__restrict__ move, int16_t *mrow, int16_t *irow,
           int16_t *drow, int *out_xc)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= nseq) return;
    const int s = order[t];
    for (int k = 0; k < MODEL_M; k++) { mrow[TROW(k)] = NEG16; irow[TROW(k)] = NEG16; drow[TROW(k)] = NEG16; }
    const int mv = move[s], xN = base;
    int xB = xN + mv, xJ = NEG16, xC = NEG16;
    for (long long i = offsets[s]; i < offsets[s + 1]; i++) {
        const int16_t *rsc = match + (size_t)residues[i] * (MODEL_M + 1);
        int mp = NEG16, ip = NEG16, dp = NEG16, dcv = NEG16, xE = NEG16, Dmax = NEG16;
        for (int k = 1; k <= MODEL_M; k++) {
            const int mo = mrow[TROW(k - 1)], io = irow[TROW(k - 1)], dn = drow[TROW(k - 1)];
            int sv = max(max(xB + TSC(T_BM, k - 1), mp + TSC(T_MM, k - 1)),
                         max(ip + TSC(T_IM, k - 1), dp + TSC(T_DM, k - 1)));
            sv = min(max(max(sv, NEG16) + (int)rsc[k], NEG16), 32767);
            xE = max(xE, sv);
            const int inew = max(max(mo + TSC(T_MI, k), io + TSC(T_II, k)), NEG16);
            drow[TROW(k - 1)] = (int16_t)dcv;
            dcv = max(sv + TSC(T_MD, k), NEG16);
            Dmax = max(Dmax, dcv);
            mrow[TROW(k - 1)] = (int16_t)sv;
            irow[TROW(k - 1)] = (int16_t)inew;
            mp = mo; ip = io; dp = dn;
        }
        if (xE >= 32767) { out_xc[s] = 32768; return; }
        xC = max(xC, xE + e_move);
        xJ = max(xJ, xE + e_loop);
        xB = max(xJ + mv, xN + mv);
        if (Dmax + ddbound > xB) {
            int carry = NEG16;
            for (int k = 1; k <= MODEL_M; k++) {
                const int d = max((int)drow[TROW(k - 1)], carry);
                drow[TROW(k - 1)] = (int16_t)d;
                carry = max(d + TSC(T_DD, k), NEG16);
            }
        }
    }
    out_xc[s] = xC;
}

// ------------------------------------------------------------------ warp-per-sequence kernels
// One-element shift of a striped vector across the warp (element z -> z+1), `fill` entering
// element 0: bytes (4 per lane) or int16 halves (2 per lane).
__device__ __forceinline__ uint32_t shift_bytes(uint32_t v, int lane, uint32_t fill)
{
    uint32_t carry = __shfl_up_sync(FULL, v >> 24, 1);
    return (v << 8) | (lane == 0 ? fill : carry);
}

__device__ __forceinline__ uint32_t shift_words(uint32_t v, int lane)
{
    uint32_t carry = __shfl_up_sync(FULL, v >> 16, 1);
    return (v << 16) | (lane == 0 ? 0x8000u : carry);
}

__device__ __forceinline__ int warp_max_u8x4(uint32_t v)
{
    uint32_t m = max(max(v & 0xffu, (v >> 8) & 0xffu), max((v >> 16) & 0xffu, v >> 24));
    return (int)__reduce_max_sync(FULL, m);
}

__device__ __forceinline__ int warp_max_s16x2(uint32_t v)
{
    int m = max((int)(int16_t)(v & 0xffffu), (int)(int16_t)(v >> 16));
    return __reduce_max_sync(FULL, m);
}

// cost: [Kp][QB][32] uint32 (4 striped bytes per lane), 255 past M.
extern "C" __global__ void __launch_bounds__(BLOCK)
ssv_xe_warp(const uint32_t *__restrict__ cost, const uint8_t *__restrict__ residues,
            const long long *__restrict__ offsets, const int *__restrict__ order, int nseq,
            int bias, int *out_xe)
{
    const int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (w >= nseq) return;
    const int s = order[w];
    const uint32_t biasv = 0x01010101u * (uint32_t)bias;
    uint32_t dp[QB];
#pragma unroll
    for (int q = 0; q < QB; q++) dp[q] = 0;
    uint32_t xEv = 0;
    for (long long i = offsets[s]; i < offsets[s + 1]; i++) {
        const uint32_t *c = cost + (size_t)residues[i] * (QB * 32) + lane;
        uint32_t mpv = shift_bytes(dp[QB - 1], lane, 0);
#pragma unroll
        for (int q = 0; q < QB; q++) {
            // begin = 0 (SSV has no J state); saturation keeps values in 0..255, exact below
            // HMMER's overflow threshold, which is all the host needs
            const uint32_t sv = __vsubus4(__vaddus4(mpv, biasv), __ldg(c + q * 32));
            xEv = __vmaxu4(xEv, sv);
            mpv = dp[q];
            dp[q] = sv;
        }
    }
    const int best = warp_max_u8x4(xEv);
    if (lane == 0) out_xe[s] = 128 + best;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
msv_xj_warp(const uint32_t *__restrict__ cost, const uint8_t *__restrict__ residues,
            const long long *__restrict__ offsets, const int *__restrict__ order, int nseq,
            int bias, int base, int tec, const uint8_t *__restrict__ tjbm, int *out_xj)
{
    const int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (w >= nseq) return;
    const int s = order[w];
    const int jbm = tjbm[s];
    const uint32_t biasv = 0x01010101u * (uint32_t)bias;
    uint32_t dp[QB];
#pragma unroll
    for (int q = 0; q < QB; q++) dp[q] = 0;
    int xJ = 0, xB = max(base - jbm, 0);
    for (long long i = offsets[s]; i < offsets[s + 1]; i++) {
        const uint32_t *c = cost + (size_t)residues[i] * (QB * 32) + lane;
        const uint32_t xBv = 0x01010101u * (uint32_t)xB;
        uint32_t mpv = shift_bytes(dp[QB - 1], lane, 0);
        uint32_t xEv = 0;
#pragma unroll
        for (int q = 0; q < QB; q++) {
            uint32_t sv = __vmaxu4(mpv, xBv);
            sv = __vsubus4(__vaddus4(sv, biasv), __ldg(c + q * 32));
            xEv = __vmaxu4(xEv, sv);
            mpv = dp[q];
            dp[q] = sv;
        }
        int xE = warp_max_u8x4(xEv);                   // uniform across the warp
        if (xE + bias >= 255) { if (lane == 0) out_xj[s] = -1; return; }
        xE = max(xE - tec, 0);
        xJ = max(xJ, xE);
        xB = max(max(base, xJ) - jbm, 0);
    }
    if (lane == 0) out_xj[s] = xJ;
}

// match: [Kp][QW][32] packed int16 pairs; tsc: [8][QW][32] (BM MM IM DM MD MI II, then DD).
extern "C" __global__ void __launch_bounds__(BLOCK)
vf_xc_warp(const uint32_t *__restrict__ match, const uint32_t *__restrict__ tsc,
           const uint8_t *__restrict__ residues, const long long *__restrict__ offsets,
           const int *__restrict__ order, int nseq, int base, int e_loop, int e_move,
           int ddbound, const int16_t *__restrict__ move, int *out_xc)
{
    const int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    if (w >= nseq) return;
    const int s = order[w];
    const uint32_t neg = 0x80008000u;
    uint32_t M_[QW], I_[QW], D_[QW];
#pragma unroll
    for (int q = 0; q < QW; q++) { M_[q] = neg; I_[q] = neg; D_[q] = neg; }
    const int mv = move[s], xN = base;
    int xB = xN + mv, xJ = NEG16, xC = NEG16;
#define TV(j, q) __ldg(tsc + ((j) * QW + (q)) * 32 + lane)
    for (long long i = offsets[s]; i < offsets[s + 1]; i++) {
        const uint32_t *rsc = match + (size_t)residues[i] * (QW * 32) + lane;
        const uint32_t xBv = 0x00010001u * (uint32_t)(uint16_t)xB;
        uint32_t mpv = shift_words(M_[QW - 1], lane);
        uint32_t dpv = shift_words(D_[QW - 1], lane);
        uint32_t ipv = shift_words(I_[QW - 1], lane);
        uint32_t dcv = neg, xEv = neg, Dmaxv = neg;
#pragma unroll
        for (int q = 0; q < QW; q++) {
            uint32_t sv = __vaddss2(xBv, TV(0, q));
            sv = __vmaxs2(sv, __vaddss2(mpv, TV(1, q)));
            sv = __vmaxs2(sv, __vaddss2(ipv, TV(2, q)));
            sv = __vmaxs2(sv, __vaddss2(dpv, TV(3, q)));
            sv = __vaddss2(sv, __ldg(rsc + q * 32));
            xEv = __vmaxs2(xEv, sv);
            mpv = M_[q]; dpv = D_[q]; ipv = I_[q];
            M_[q] = sv;
            D_[q] = dcv;
            dcv = __vaddss2(sv, TV(4, q));
            Dmaxv = __vmaxs2(Dmaxv, dcv);
            I_[q] = __vmaxs2(__vaddss2(mpv, TV(5, q)), __vaddss2(ipv, TV(6, q)));
        }
        const int xE = warp_max_s16x2(xEv);
        if (xE >= 32767) { if (lane == 0) out_xc[s] = 32768; return; }
        xC = max(xC, xE + e_move);
        xJ = max(xJ, xE + e_loop);
        xB = max(xJ + mv, xN + mv);
        const int Dmax = warp_max_s16x2(Dmaxv);
        dcv = shift_words(dcv, lane);
        if (Dmax + ddbound > xB) {
            // lazy F: one full D->D pass, then more while a segment boundary still improves D
#pragma unroll
            for (int q = 0; q < QW; q++) {
                D_[q] = __vmaxs2(dcv, D_[q]);
                dcv = __vaddss2(D_[q], TV(7, q));
            }
            bool again = true;
            while (again) {
                dcv = shift_words(dcv, lane);
                again = false;
                int q = 0;
#pragma unroll
                for (q = 0; q < QW; q++) {
                    if (!__any_sync(FULL, __vcmpgts2(dcv, D_[q]) != 0)) break;
                    D_[q] = __vmaxs2(dcv, D_[q]);
                    dcv = __vaddss2(D_[q], TV(7, q));
                }
                again = (q == QW);
            }
        } else {
            D_[0] = dcv;
        }
    }
#undef TV
    if (lane == 0) out_xc[s] = xC;
}
