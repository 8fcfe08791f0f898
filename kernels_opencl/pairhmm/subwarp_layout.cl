/* Sub-warp backend's work items built on the device from the raw PairSet arrays, OpenCL's twin of
 * kernels_cuda/pairhmm/subwarp_layout.cu (same items, keys and order; the host only copies bytes):
 *   sw_layout_clear    the key histogram and the pairs per bin set to 0, only after a call that
 *                      stopped between count and scan (the scan leaves them 0 for the next
 *                      call: one launch less than CUDA's memset)
 *   sw_layout_count    one work-item per unit (a read, or a pair for small inputs): its item, bin
 *                      and sort key (bin, descending work level); a rank within its key
 *   sw_layout_scan     one work-group: key histogram -> key starts (key_start; the histogram and
 *                      the pairs per bin back to 0); per bin {first item, count}; per recompute
 *                      queue {first slot, 0}, sized by the pairs of the bins feeding it
 *   sw_layout_scatter  items to their sorted place (order inside a key is arbitrary: harmless)
 * Where CUDA aggregates a warp's atomics on one key (cooperative groups), a work-group here counts
 * its units in local memory first and adds one global atomic per key it saw (OpenCL 1.2 has no
 * portable warp-level partition). Bin ranges are written SW_RANGE_STRIDE ints apart (the bin
 * kernels read range[0..1] at their offset); so are the queue heads (the float32 kernels count
 * into them, the float64 kernels read them).
 * Arrays: the staged block (slot) and each array's byte offset in it (no sub-buffers: NVIDIA's
 * runtime crashed releasing them); batch_reads/batch_haps count from the call's first
 * read/haplotype, batch_pairs are positions in the output. meta = [n_bins, hi[n_bins],
 * queue[n_bins]] (hi = a bin's longest read).
 */
#include "pairhmm/subwarp_defs.h"

#define SW_MAX_BINS 64
#ifndef SW_SCAN_THREADS
#define SW_SCAN_THREADS 256
#endif
#ifndef SW_COUNT_THREADS
#define SW_COUNT_THREADS 256
#endif
#ifndef SW_RANGE_STRIDE
#define SW_RANGE_STRIDE 2
#endif
#define SW_MAX_KEYS (SW_MAX_BINS * SW_LEVELS)

/* Largest b in [0, n) with a[b] <= x (a non-decreasing, a[0] <= x). */
static inline int batch_of(__global const long* restrict a, int n, long x)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (a[mid] <= x) lo = mid; else hi = mid - 1;
    }
    return lo;
}

/* Every key and bin (a stopped call may have counted into more bins than the next one has). */
__kernel void sw_layout_clear(__global int* restrict hist, __global int* restrict bin_pairs)
{
    const int i = (int)get_global_id(0);
    if (i < SW_MAX_KEYS) hist[i] = 0;
    if (i < SW_MAX_BINS) bin_pairs[i] = 0;
}

/* Unit u's item and sort key (-1: a batch without haplotypes, no item); its pairs in *haps. */
static inline int unit_key(int u, int per_pair, int n_batches,
                           __global const long* restrict batch_reads,
                           __global const long* restrict batch_haps,
                           __global const long* restrict batch_pairs,
                           __global const long* restrict read_off,
                           __global const long* restrict hap_off,
                           __global const int* restrict meta, SwItem* item, int* bin_out)
{
    long work;
    if (per_pair) {  /* one item per pair: (read, hap) from the batch's read-major order */
        const long pair = batch_pairs[0] + u;
        const int b = batch_of(batch_pairs, n_batches, pair);
        const int nh = (int)(batch_haps[b + 1] - batch_haps[b]);
        const int in_batch = (int)(pair - batch_pairs[b]);
        item->read = (int)batch_reads[b] + in_batch / nh;
        item->hap = (int)batch_haps[b] + in_batch % nh;
        item->n_hap = 1;
        item->out = (int)pair;
        work = hap_off[item->hap + 1] - hap_off[item->hap] + SW_MAX_P;
    } else {  /* one item per read: the read against every haplotype of its batch */
        const int b = batch_of(batch_reads, n_batches, u);
        const int nh = (int)(batch_haps[b + 1] - batch_haps[b]);
        if (nh == 0) return -1;  /* a batch without haplotypes has no pairs */
        item->read = u;
        item->hap = (int)batch_haps[b];
        item->n_hap = nh;
        item->out = (int)(batch_pairs[b] + (u - batch_reads[b]) * nh);
        work = hap_off[batch_haps[b + 1]] - hap_off[batch_haps[b]] + (long)nh * SW_MAX_P;
    }
    const int m = (int)(read_off[item->read + 1] - read_off[item->read]);
    const int n_bins = meta[0];
    int bin = 0;
    while (bin < n_bins - 1 && m > meta[1 + bin]) ++bin;
    const int level = min(SW_LEVELS - 1, (int)(log2((float)max(work, 1L)) * 16.0f));
    *bin_out = bin;
    return bin * SW_LEVELS + (SW_LEVELS - 1 - level);
}

__kernel __attribute__((reqd_work_group_size(SW_COUNT_THREADS, 1, 1)))
void sw_layout_count(int n_units, int per_pair, int n_batches, __global const uchar* restrict slot,
                     long batch_reads_at, long batch_haps_at, long batch_pairs_at,
                     long read_off_at, long hap_off_at, long meta_at,
                     __global SwItem* restrict raw, __global int* restrict key_rank,
                     __global int* restrict hist, __global int* restrict bin_pairs)
{
    __global const long* const batch_reads = (__global const long*)(slot + batch_reads_at);
    __global const long* const batch_haps = (__global const long*)(slot + batch_haps_at);
    __global const long* const batch_pairs = (__global const long*)(slot + batch_pairs_at);
    __global const long* const read_off = (__global const long*)(slot + read_off_at);
    __global const long* const hap_off = (__global const long*)(slot + hap_off_at);
    __global const int* const meta = (__global const int*)(slot + meta_at);
    __local int counts[SW_MAX_KEYS];   /* this work-group's units per key, then its base */
    __local int pairs_of[SW_MAX_BINS];
    const int t = (int)get_local_id(0);
    const int n_keys = meta[0] * SW_LEVELS;
    for (int i = t; i < n_keys; i += SW_COUNT_THREADS) counts[i] = 0;
    for (int i = t; i < meta[0]; i += SW_COUNT_THREADS) pairs_of[i] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const int u = (int)get_global_id(0);
    int key = -1, rank = 0;
    if (u < n_units) {
        SwItem item;
        int bin = 0;
        key = unit_key(u, per_pair, n_batches, batch_reads, batch_haps, batch_pairs, read_off,
                       hap_off, meta, &item, &bin);
        if (key >= 0) {
            raw[u] = item;
            rank = atomic_inc(&counts[key]);
            atomic_add(&pairs_of[bin], item.n_hap);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    /* one global atomic per key (and bin) this work-group saw: its base among the key's ranks */
    for (int i = t; i < n_keys; i += SW_COUNT_THREADS) {
        const int c = counts[i];
        if (c) counts[i] = atomic_add(hist + i, c);
    }
    for (int i = t; i < meta[0]; i += SW_COUNT_THREADS)
        if (pairs_of[i]) atomic_add(bin_pairs + i, pairs_of[i]);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (u < n_units) {
        key_rank[2 * u] = key;
        key_rank[2 * u + 1] = key >= 0 ? counts[key] + rank : 0;
    }
}

/* Exclusive scan of hist (n_bins * SW_LEVELS keys) into key_start, each bin's {first, count} and
 * each recompute queue's {first slot, 0} (meta's queue of each bin); hist and bin_pairs are left
 * 0 for the next call's count. */
__kernel __attribute__((reqd_work_group_size(SW_SCAN_THREADS, 1, 1)))
void sw_layout_scan(__global const uchar* restrict slot, long meta_at, __global int* restrict hist,
                    __global int* restrict bin_pairs, __global int* restrict key_start,
                    __global int* ranges, int range_at, __global int* heads, int queue_at)
{
    __global const int* const meta = (__global const int*)(slot + meta_at);
    /* bin ranges and queue heads: one buffer or two (the host copies them back with results) */
    __global int* const bin_range = ranges + range_at;
    __global int* const queues = heads + queue_at;
    __local int sums[SW_SCAN_THREADS];
    const int t = (int)get_local_id(0);
    const int n_bins = meta[0];
    const int n_keys = n_bins * SW_LEVELS;
    const int per = (n_keys + SW_SCAN_THREADS - 1) / SW_SCAN_THREADS;
    const int lo = min(n_keys, t * per), hi = min(n_keys, lo + per);
    int s = 0;
    for (int i = lo; i < hi; ++i) s += hist[i];
    sums[t] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int off = 1; off < SW_SCAN_THREADS; off <<= 1) {  /* inclusive Hillis-Steele scan */
        const int v = t >= off ? sums[t - off] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        sums[t] += v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    int run = sums[t] - s;
    for (int i = lo; i < hi; ++i) {
        const int c = hist[i];
        key_start[i] = run;
        hist[i] = 0;
        run += c;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
    if (t == 0) {
        int queue_size[SW_MAX_BINS];
        for (int q = 0; q < n_bins; ++q) queue_size[q] = 0;
        for (int b = 0; b < n_bins; ++b) {
            const int first = key_start[b * SW_LEVELS];
            const int end = b + 1 < n_bins ? key_start[(b + 1) * SW_LEVELS]
                                           : sums[SW_SCAN_THREADS - 1];
            bin_range[SW_RANGE_STRIDE * b] = first;
            bin_range[SW_RANGE_STRIDE * b + 1] = end - first;
            queue_size[meta[1 + n_bins + b]] += bin_pairs[b];
            bin_pairs[b] = 0;
        }
        int first_slot = 0;
        for (int q = 0; q < n_bins; ++q) {
            queues[SW_RANGE_STRIDE * q] = first_slot;
            queues[SW_RANGE_STRIDE * q + 1] = 0;
            first_slot += queue_size[q];
        }
    }
}

__kernel void sw_layout_scatter(int n_units, __global const SwItem* restrict raw,
                                __global const int* restrict key_rank,
                                __global const int* restrict key_start,
                                __global SwItem* restrict items)
{
    const int u = (int)get_global_id(0);
    if (u >= n_units) return;
    const int key = key_rank[2 * u];
    if (key >= 0) items[key_start[key] + key_rank[2 * u + 1]] = raw[u];
}
