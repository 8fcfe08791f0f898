/* HMMER's raw filter integers finished into the scores pyhmmer reports (float32 nats), one
 * sequence at a time, with the reference's rules (cpu_reference/profile/filters.py ssv_from_xe,
 * msv_from_xj, vf_from_xc): what finish.h's kernels write per sequence and what the CUDA
 * pipeline's bias and Viterbi-filter decisions (kernels_cuda/profile/bias.cu) score from.
 *
 * HMMER's ``(float) n / scale - 3.0`` is computed in double: the float32 quotient of two
 * float32 values rounded once from double is the correctly rounded float32 quotient (53 >=
 * 2 x 24 + 2), then the subtraction in double as HMMER does.
 *
 * The including file may define SCORE_FN (the functions' qualifiers: CUDA's __device__) and
 * defines SCORE_INF (a float infinity).
 */
#ifndef PROFILE_SCORES_H
#define PROFILE_SCORES_H

#ifndef SCORE_FN
#define SCORE_FN static inline
#endif

#define FINISH(num, scale) ((float)((double)(float)((double)(num) / (double)(scale)) - 3.0))

/* SSV's score from xE and the length's tjb; *noresult = 1 where HMMER's SSV cannot decide
 * (eslENORESULT: the full MSV recomputes it; the score returned is then meaningless) */
SCORE_FN float ssv_score(const int xE, const int tjb, const int bias, const int base,
                         const int tbm, const int tec, const float scale, int *noresult)
{
    int unsure = (tjb + tbm + tec + bias) >= 127;                 /* unsafe length model */
    float sc;
    if (xE >= 255 - bias) {                                       /* overflow */
        sc = SCORE_INF;
        unsure |= (base - tjb - tbm) < 128;                       /* not a sure one */
    } else {
        const int xe2 = (xE + base - tjb - tbm - 128) & 0xFFFF;
        if (xe2 >= 255 - bias) {
            sc = SCORE_INF;
        } else {
            const int xj = (xe2 - tec) & 0xFFFF;
            if (xj > base) { unsure = 1; sc = 0.0f; }             /* the J state was used */
            else sc = FINISH(xj - tjb - base, scale);
        }
    }
    *noresult = unsure;
    return sc;
}

/* the full MSV's score from xJ (-1: overflow) and the length's tjb */
SCORE_FN float msv_score(const int xJ, const int tjb, const int base, const float scale)
{
    return xJ < 0 ? SCORE_INF : FINISH(xJ - tjb - base, scale);
}

/* the Viterbi filter's score from xC (32768: overflow; -32768: C never reached) and the
 * length's move */
SCORE_FN float vf_score(const int xC, const int move, const int base, const float scale)
{
    return xC > 32767 ? SCORE_INF : xC <= -32768 ? -SCORE_INF : FINISH(xC + move - base, scale);
}

#endif
