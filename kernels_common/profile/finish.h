/* HMMER's raw filter integers finished into the scores pyhmmer reports (float32 nats) on the
 * device, with the reference's rules (cpu_reference/profile/filters.py ssv_from_xe, msv_from_xj,
 * vf_from_xc), so that only the scores come back (no host pass over every sequence); and the
 * per-length values the filter kernels take per sequence, gathered from per-length tables.
 *
 * Length-dependent terms (SSV/MSV tjb(L), the Viterbi filter's move(L)) come per distinct
 * length (``per_class``, indexed by ``cls[s]``: the resident database's length classes).
 * The finishing of one value is scores.h's.
 *
 * Spelled by the including file as stages.h is; also: SCORE_INF, SCORE_NAN (float constants).
 * Outputs: score[s] (nan = SSV cannot decide, recompute with the full MSV), redo[s] (1 there).
 */
#ifndef PROFILE_FINISH_H
#define PROFILE_FINISH_H

#include "profile/scores.h"

/* one signature for the three finishings: ssv uses bias, base, tbm, tec; msv and vf base */
#define FINISH_KERNEL(name) STAGE_KERNEL(name)(IN(int) order, const int n, IN(int) raw,      \
    IN(int) cls, IN(int) per_class, const int bias, const int base, const int tbm,            \
    const int tec, const float scale, OUT(float) score, OUT(u8) redo)

FINISH_KERNEL(finish_ssv)
{
    const int i = GLOBAL_ID;
    if (i >= n) return;
    const int s = order[i];
    int noresult;
    const float sc = ssv_score(raw[s], per_class[cls[s]], bias, base, tbm, tec, scale,
                               &noresult);
    score[s] = noresult ? SCORE_NAN : sc;
    redo[s] = (u8)noresult;
}

FINISH_KERNEL(finish_msv)
{
    const int i = GLOBAL_ID;
    if (i >= n) return;
    const int s = order[i];
    score[s] = msv_score(raw[s], per_class[cls[s]], base, scale);    /* xJ -1: overflow */
    redo[s] = 0;
}

FINISH_KERNEL(finish_vf)
{
    const int i = GLOBAL_ID;
    if (i >= n) return;
    const int s = order[i];
    score[s] = vf_score(raw[s], per_class[cls[s]], base, scale);     /* xC 32768: overflow */
    redo[s] = 0;
}

/* out[s] = table[cls[s]] for every sequence s (the filter kernels' per-sequence tjbm, move) */
STAGE_KERNEL(gather_u8)(IN(int) cls, const int n, IN(u8) table, OUT(u8) out)
{
    const int s = GLOBAL_ID;
    if (s < n) out[s] = table[cls[s]];
}

STAGE_KERNEL(gather_i16)(IN(int) cls, const int n, IN(short) table, OUT(short) out)
{
    const int s = GLOBAL_ID;
    if (s < n) out[s] = table[cls[s]];
}

#endif
