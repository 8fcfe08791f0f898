// HMMER's biased-composition filter on the device: esl_hmm_Forward of the two-state filter HMM
// (p7_bg_SetFilter / p7_bg_SetLength; cpu_reference/profile/bias.py says what it computes) for
// every sequence of a launch list whose stage code is one of two (the MSV survivors), a thread
// per sequence. Float32 in HMMER's order of operations -- the __f*_rn intrinsics keep nvcc from
// contracting a product and a sum into one FMA, which HMMER's SSE build never does -- and each
// row's log in double, rounded to float, as easel's log(). The length model's two logf terms
// are the host's (the C library's logf). out[s] = the Forward score (nats) of sequence s.
//
// Then the decisions the bias filter moves to its survivors (bias_decide, vf_decide): with the
// filter null, each sequence has its own null score, so no per-length table decides; instead
// the host finds per model the least float32 score in bits whose P-value passes each threshold
// (hmmbench/profile/pipeline.py least_passing_bits: HMMER's P only falls as the bits grow), and
// the device computes each sequence's bits exactly as the reference does (pipeline.bias_stage,
// seq_bits: float32 differences, the division by ln 2 in double) and compares. A NaN score
// passes (HMMER fails a stage on P > F only) and skips the Viterbi filter.
#include <math.h>
#include <stdint.h>

#define SCORE_FN static __device__ __forceinline__
#define SCORE_INF INFINITY
#include "profile/scores.h"

extern "C" __global__ void bias_forward(const int *__restrict__ order, const int n,
                                        const uint8_t *__restrict__ codes, const int want1,
                                        const int want2, const uint8_t *__restrict__ res,
                                        const long long *__restrict__ offs,
                                        const float *__restrict__ odds, const float pi0,
                                        const float pi1, const float t10, const float t11,
                                        float *out)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    const int s = order[i];
    if (codes[s] != want1 && codes[s] != want2) return;
    const long long a = offs[s];
    const int L = (int)(offs[s + 1] - a);
    if (L <= 0) return;
    const float p1 = __fdiv_rn((float)L, (float)(L + 1));     // p7_bg_SetLength's t[0][0]
    const float t01 = __fsub_rn(1.0f, p1);
    // row 1: eo * pi (state 0's odds are 1.0), normalized by the row's maximum
    float d0 = pi0, d1 = __fmul_rn(odds[res[a]], pi1);
    float mx = d0 > d1 ? d0 : d1;
    d0 = __fdiv_rn(d0, mx);
    d1 = __fdiv_rn(d1, mx);
    float sc = __double2float_rn(log((double)mx));
    for (int j = 1; j < L; j++) {
        const float e = odds[res[a + j]];
        const float n0 = __fadd_rn(__fmul_rn(d0, p1), __fmul_rn(d1, t10));
        const float n1 = __fmul_rn(__fadd_rn(__fmul_rn(d0, t01), __fmul_rn(d1, t11)), e);
        mx = n0 > n1 ? n0 : n1;
        d0 = __fdiv_rn(n0, mx);
        d1 = __fdiv_rn(n1, mx);
        sc = __fadd_rn(sc, __double2float_rn(log((double)mx)));
    }
    // the end: t[k][E] = 1 for both states
    out[s] = __fadd_rn(sc, __double2float_rn(log((double)__fadd_rn(d0, d1))));
}

// HMMER's (float)((usc - nullsc) / eslCONST_LOG2): a float32 difference, divided in double
static __device__ __forceinline__ float seq_bits(const float usc, const float nullsc,
                                                 const double ln2)
{
    return __double2float_rn(__ddiv_rn((double)__fsub_rn(usc, nullsc), ln2));
}

// The bias filter on the MSV survivors (entries of order[:n] coded want1 or want2): the MSV
// score (SSV's, or the full MSV's where SSV could not decide), the filter null score = the
// filter HMM's Forward (fwd, bias_forward's out) + L logf(p1) + logf(1 - p1) in float32
// (lp, lq per length class), its bits against thresholds b1 (F1) and b2 (F2). codes[s] =
// fail (below b1), vit (below b2: on to the Viterbi filter) or forward; null[s] = the score.
extern "C" __global__ void bias_decide(const int *__restrict__ order, const int n,
                                       uint8_t *codes, const int want1, const int want2,
                                       const int *__restrict__ xe, const int *__restrict__ xj,
                                       const int *__restrict__ cls, const int *__restrict__ tjb,
                                       const float *__restrict__ lp,
                                       const float *__restrict__ lq,
                                       const long long *__restrict__ offs,
                                       const float *__restrict__ fwd, const int bias,
                                       const int base, const int tbm, const int tec,
                                       const float scale, const double ln2, const float b1,
                                       const float b2, const int fail, const int vit,
                                       const int forward, float *null)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    const int s = order[i];
    if (codes[s] != want1 && codes[s] != want2) return;
    const int k = cls[s];
    int redo;
    float usc = ssv_score(xe[s], tjb[k], bias, base, tbm, tec, scale, &redo);
    if (redo) usc = msv_score(xj[s], tjb[k], base, scale);
    const float L = (float)(offs[s + 1] - offs[s]);
    const float fsc = __fadd_rn(__fadd_rn(fwd[s], __fmul_rn(L, lp[k])), lq[k]);
    const float bits = seq_bits(usc, fsc, ln2);
    null[s] = fsc;
    codes[s] = (uint8_t)(isnan(bits) ? forward : bits < b1 ? fail : bits < b2 ? vit : forward);
}

// The Viterbi filter's decision against each sequence's filter null (null, bias_decide's):
// codes[s] = fail where the bits of the score (xc finished with the sequence's move) are
// below bv (F2), else pass; for s = order[0 .. n-1].
extern "C" __global__ void vf_decide(const int *__restrict__ order, const int n,
                                     const int *__restrict__ xc,
                                     const short *__restrict__ move, const int base,
                                     const float scale, const float *__restrict__ null,
                                     const double ln2, const float bv, const int pass,
                                     const int fail, uint8_t *codes)
{
    const int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= n) return;
    const int s = order[i];
    const float bits = seq_bits(vf_score(xc[s], (int)move[s], base, scale), null[s], ln2);
    codes[s] = (uint8_t)(bits < bv ? fail : pass);      // NaN compares false: passes
}
