// HMMER's biased-composition filter on the device: esl_hmm_Forward of the two-state filter HMM
// (p7_bg_SetFilter / p7_bg_SetLength; cpu_reference/profile/bias.py says what it computes) for
// every sequence of a launch list whose stage code is one of two (the MSV survivors), a thread
// per sequence. Float32 in HMMER's order of operations -- the __f*_rn intrinsics keep nvcc from
// contracting a product and a sum into one FMA, which HMMER's SSE build never does -- and each
// row's log in double, rounded to float, as easel's log(). The length model's two logf terms
// are the host's (the C library's logf). out[s] = the Forward score (nats) of sequence s.
#include <math.h>
#include <stdint.h>

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
