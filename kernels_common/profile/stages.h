/* The HMMER pipeline's decisions between stages on the device, written once for both APIs:
 * classify each launched sequence by its raw filter score (a code per sequence: failed, on to
 * the next stage, pending a recompute), then compact the sequences of one code into the next
 * stage's launch list, order-preserving (the lists stay length-sorted, longest first).
 *
 * Classification is exact: the host turns HMMER's finishing rules and the P-value thresholds
 * into per-length tables (hmmbench/profile/pipeline.py msv_tables, vf_thresholds), so the
 * device only looks values up.
 *
 * Compaction is a three-kernel stream compaction: stage_count (a count per work-group of
 * CHUNK = GROUP_SIZE * ITEMS consecutive list entries), stage_scan (an exclusive scan of the
 * counts by one work-item: a few hundred groups per million sequences), stage_scatter (each
 * group ranks its matches by a work-group scan, tile by tile, and writes them at its offset).
 *
 * The including file spells the API (kernels_opencl/profile/stages.cl, kernels_cuda/profile/
 * stages.cu): STAGE_KERNEL(name) the kernel head, IN(T)/OUT(T) global arrays, LOCAL_ID,
 * GROUP_ID, GLOBAL_ID, BARRIER (work-group barrier), SHARED (work-group memory qualifier),
 * u8 the byte type. Defines: GROUP_SIZE (work-items per group, power of two), ITEMS.
 */
#ifndef PROFILE_STAGES_H
#define PROFILE_STAGES_H

#define CHUNK (GROUP_SIZE * ITEMS)

/* codes[s] = table[cls[s] * width + clamp(raw[s] + offset, 0, width - 1)] (width > 0), or with
 * width == 0: codes[s] = raw[s] >= thr[cls[s]] ? hi : lo; for s = order[0 .. n-1] */
STAGE_KERNEL(stage_classify)(IN(int) order, const int n, IN(int) raw, IN(int) cls,
                             IN(u8) table, const int width, const int offset,
                             IN(int) thr, const int hi, const int lo, OUT(u8) codes)
{
    const int i = GLOBAL_ID;
    if (i >= n) return;
    const int s = order[i];
    const int v = raw[s];
    if (width > 0) {
        const int j = min(max(v + offset, 0), width - 1);
        codes[s] = table[(long)cls[s] * width + j];
    } else {
        codes[s] = (u8)(v >= thr[cls[s]] ? hi : lo);
    }
}

/* counts[g] = entries of order[g*CHUNK .. ] whose code is want */
STAGE_KERNEL(stage_count)(IN(int) order, const int n, IN(u8) codes, const int want,
                          OUT(int) counts)
{
    SHARED int part[GROUP_SIZE];
    const int t = LOCAL_ID, g = GROUP_ID;
    const long base = (long)g * CHUNK;
    int c = 0;
    for (int j = 0; j < ITEMS; j++) {
        const long i = base + (long)j * GROUP_SIZE + t;
        if (i < n && codes[order[i]] == want) c++;
    }
    part[t] = c;
    BARRIER;
    for (int w = GROUP_SIZE / 2; w > 0; w >>= 1) {
        if (t < w) part[t] += part[t + w];
        BARRIER;
    }
    if (t == 0) counts[g] = part[0];
}

/* counts -> exclusive offsets in place; total[0] = the sum (one work-item) */
STAGE_KERNEL(stage_scan)(OUT(int) counts, const int groups, OUT(int) total)
{
    if (GLOBAL_ID != 0) return;
    int sum = 0;
    for (int g = 0; g < groups; g++) {
        const int c = counts[g];
        counts[g] = sum;
        sum += c;
    }
    total[0] = sum;
}

/* out[offsets[g] + rank] = order[i] for the matching entries i of group g, in list order */
STAGE_KERNEL(stage_scatter)(IN(int) order, const int n, IN(u8) codes, const int want,
                            IN(int) offsets, OUT(int) out)
{
    SHARED int scan[GROUP_SIZE];
    const int t = LOCAL_ID, g = GROUP_ID;
    const long base = (long)g * CHUNK;
    int at = offsets[g];
    for (int j = 0; j < ITEMS; j++) {
        const long i = base + (long)j * GROUP_SIZE + t;
        const int s = i < n ? order[i] : 0;
        const int hit = i < n && codes[s] == want;
        scan[t] = hit;
        BARRIER;
        for (int w = 1; w < GROUP_SIZE; w <<= 1) {       /* inclusive Hillis-Steele scan */
            const int other = t >= w ? scan[t - w] : 0;
            BARRIER;
            scan[t] += other;
            BARRIER;
        }
        if (hit) out[at + scan[t] - 1] = s;
        at += scan[GROUP_SIZE - 1];
        BARRIER;                                         /* scan[] is reused by the next tile */
    }
}

#endif
