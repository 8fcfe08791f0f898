"""Sub-warp Pair-HMM: the host staging pipeline (API-free).

A chunk's raw arrays (byte slices of the PairSet, offsets made chunk-relative) are copied into one
staging buffer per chunk by worker threads, one task per big array (``CHUNK_PARTS``); numpy frees
the GIL, so several chunks are staged while the device works on earlier ones. ``StagingSlots``
owns the reusable buffers (page-locked where the API allocates them so) and the thread pool.

The layout (``slot_layout``) and the copies are shared by the two call paths, in plain integers
and one slice assignment per array: a small call stages its whole PairSet (``whole_offsets``,
``stage_whole``), a multi-chunk call each chunk by task (``chunk_offsets``: every chunk's ends
from a few numpy calls; ``stage_chunk_part``). Both are tested byte for byte against the general
staging by array name in ``tests/helpers/subwarp_staging_reference.py``.
"""
from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from ..model import PairSet

#: Host pipeline: chunks staged ahead (pinned + device slots) and threads preparing them.
STAGING_SLOTS = 4
PREP_THREADS = min(8, os.cpu_count() or 1)  # H100: 8 threads 1.44, 16 threads 1.38 TCUPS
#: A call of one chunk stages with the threads too from this many pairs (megabytes, which the
#: calling thread alone copied while the GPU waited: 24-65 ms of the peer suite's 262,144-pair
#: sets at 384..1,024 on the H100, docs/subwarp-design.md).
POOL_FROM_PAIRS = 1 << 16

#: From this many bytes of read and haplotype sequences (1m merged: 2.19 MB; 10s: 0.13 MB) a small
#: call (both APIs) uploads them from the PairSet's own (pageable) arrays, one copy each, and stages only the
#: integers: the driver's staging and DMA of 2.2 MB took 174 us against 267 us for one thread's
#: copy into page-locked memory plus a 59 us upload (H100 host,
#: 8903acf:docs/evidence/host-copy-probe-2mb-h100.json); 1m merged 750 against 788 us, 10s 297 against
#: 267 (its eight copies' overhead: 8903acf:docs/evidence/subwarp-ab-pageable-h100.json).
PAGEABLE_FROM_BYTES = 1 << 20

#: A chunk's raw arrays as the device gets them (one packed block, one H2D copy per chunk, each
#: array at a 256-byte aligned offset): the PairSet's own byte slices, offsets made chunk-relative;
#: the work items are built from them on the GPU (``subwarp_layout.cu``). ``meta`` = [n_bins,
#: longest read of each bin, recompute queue of each bin].
#: Chunks of short pairs hold more of them (``grown_chunk_pairs``): up to this many times
#: ``chunk_pairs`` ...
SHORT_CHUNK_GROWTH = 4
#: ... while their mean pair is this many cells (a 128 x 128 pair) or fewer times smaller. H100,
#: equal-32@4e6: 4x larger chunks, kernels 2.34 against 3.33 ms a call
#: (8903acf:docs/evidence/subwarp-ab-chunk-pairs-h100.json); sets of typical reads (chunks@5e6, NA12878:
#: ~23k cells a pair) keep ``chunk_pairs``, whose first chunk the GPU waits for at every call.
SHORT_PAIR_CELLS = 128 * 128


def grown_chunk_pairs(chunk_pairs: int, n_pairs: int, cells: int) -> int:
    """The pairs per chunk of a call of ``n_pairs`` pairs and ``cells`` cells: ``chunk_pairs``,
    times the whole number of times its mean pair fits in SHORT_PAIR_CELLS (at most
    SHORT_CHUNK_GROWTH)."""
    if n_pairs <= chunk_pairs:
        return chunk_pairs
    growth = SHORT_PAIR_CELLS * n_pairs // max(cells, 1)
    return chunk_pairs * max(1, min(SHORT_CHUNK_GROWTH, growth))


STAGED = (("read_bases", np.uint8), ("base_qual", np.uint8), ("ins_qual", np.uint8),
          ("del_qual", np.uint8), ("gcp_qual", np.uint8), ("read_off", np.int64),
          ("hap_bases", np.uint8), ("hap_off", np.int64), ("batch_reads", np.int64),
          ("batch_haps", np.int64), ("batch_pairs", np.int64), ("meta", np.int32))
def slot_layout(seq: int, reads: int, hap_bytes: int, haps: int, batches: int,
                n_meta: int, align: int = 256) -> tuple:
    """(byte offsets in STAGED order, slot bytes) of a slot that holds a chunk of ``seq`` read
    bytes, ``reads`` reads, ``hap_bytes`` haplotype bytes, ``haps`` haplotypes, ``batches``
    batches and ``n_meta`` meta values (or less): each array's bytes (at least 1) rounded up to
    ``align`` (a multiple of 256)."""
    a = align
    seq = -(-max(seq, 1) // a) * a  # each of the five read arrays
    batch = -(-(batches + 1) * 8 // a) * a  # each of batch_reads, batch_haps, batch_pairs
    read_off = 5 * seq
    hap_bases = read_off + -(-(reads + 1) * 8 // a) * a
    hap_off = hap_bases + -(-max(hap_bytes, 1) // a) * a
    batch_reads = hap_off + -(-(haps + 1) * 8 // a) * a
    meta = batch_reads + 3 * batch
    offs = [0, seq, 2 * seq, 3 * seq, 4 * seq, read_off, hap_bases, hap_off, batch_reads,
            batch_reads + batch, batch_reads + 2 * batch, meta]
    return offs, meta + -(-max(n_meta * 4, 1) // a) * a


def whole_sizes(pairs: PairSet) -> tuple:
    """The whole PairSet as one chunk (bounds [(0, n_batches)]): its (r0, r1, h0, h1, a0, a1,
    c0, c1) -- first and end read, haplotype, read byte and haplotype byte -- and its sizes as
    ``slot_layout`` takes them, in plain integers."""
    br, bh = pairs.batch_reads, pairs.batch_haps
    r0, r1, h0, h1 = br.item(0), br.item(-1), bh.item(0), bh.item(-1)
    a0, a1 = pairs.read_offsets.item(r0), pairs.read_offsets.item(r1)
    c0, c1 = pairs.hap_offsets.item(h0), pairs.hap_offsets.item(h1)
    return (r0, r1, h0, h1, a0, a1, c0, c1), (a1 - a0, r1 - r0, c1 - c0, h1 - h0, len(br) - 1)


def whole_offsets(pairs: PairSet, n_meta: int, align: int = 256) -> tuple:
    """A small call's staging layout: (byte offsets in STAGED order, slot bytes, its ends as
    ``whole_sizes`` gives them) -- in plain integers, no dict, no loop."""
    ends, sizes = whole_sizes(pairs)
    offs, size = slot_layout(*sizes, n_meta, align)
    return offs, size, ends


def size_class(n: int) -> int:
    """``n`` rounded up to a power of two (at least 256)."""
    return max(256, 1 << (max(n, 1) - 1).bit_length())


def class_offsets(pairs: PairSet, n_meta: int) -> tuple:
    """``whole_offsets`` with each size (read bytes, reads, haplotype bytes, haplotypes, batches)
    rounded up to its :func:`size_class`: every call of a class puts each array at the same
    offset (a CUDA graph's baked addresses serve them all); (offsets, slot bytes, ends, the
    class sizes)."""
    ends, sizes = whole_sizes(pairs)
    sizes = tuple(size_class(n) for n in sizes)
    offs, size = slot_layout(*sizes, n_meta)
    return offs, size, ends, sizes


def chunk_offsets(pairs: PairSet, bounds, n_meta: int) -> tuple:
    """The full path's staging layouts: (per chunk its byte offsets in STAGED order, packed by
    its own sizes -- a chunk uploads up to its meta's end, so a small chunk, e.g. a ramp's
    first, uploads only its own bytes --; the slot bytes fitting every chunk; per chunk its
    ends as ``whole_offsets`` gives them), from the PairSet's own cumulative offsets at the
    chunks' bounds (a few numpy calls for all chunks, no loop over batches)."""
    b0, b1 = np.array(bounds, np.int64).reshape(-1, 2).T
    r0, r1 = pairs.batch_reads[b0], pairs.batch_reads[b1]
    h0, h1 = pairs.batch_haps[b0], pairs.batch_haps[b1]
    a0, a1 = pairs.read_offsets[r0], pairs.read_offsets[r1]
    c0, c1 = pairs.hap_offsets[h0], pairs.hap_offsets[h1]
    layouts = [slot_layout(*sizes, n_meta) for sizes in
               zip(*((hi - lo).tolist() for lo, hi in
                     ((a0, a1), (r0, r1), (c0, c1), (h0, h1), (b0, b1))))]
    ends = list(zip(*(x.tolist() for x in (r0, r1, h0, h1, a0, a1, c0, c1))))
    return [o for o, _ in layouts], max(size for _, size in layouts), ends


def int_views(buf: np.ndarray) -> tuple:
    """(buf, its int64 view, its int32 view) for ``stage_whole``: made once per buffer."""
    return buf, buf[:buf.size // 8 * 8].view(np.int64), buf[:buf.size // 4 * 4].view(np.int32)


def stage_whole(pairs: PairSet, meta: np.ndarray, offs: list, ends: tuple, views: tuple,
                sequences: bool = True) -> int:
    """Every array of the whole PairSet (``whole_offsets``) into a buffer
    (``int_views``): the same bytes at the same offsets (the PairSet's uint8 sequences and
    int64 offsets), one copy per array and a subtraction only where the chunk's first value is
    not 0; returns the end of the last array. ``sequences`` False: the integer arrays only (the
    sequences go up from the PairSet's own arrays)."""
    if sequences:
        buf = views[0]
        a0, a1, c0, c1 = ends[4:]
        n = a1 - a0
        buf[offs[0]:offs[0] + n] = pairs.read_bases[a0:a1]
        buf[offs[1]:offs[1] + n] = pairs.base_qual[a0:a1]
        buf[offs[2]:offs[2] + n] = pairs.ins_qual[a0:a1]
        buf[offs[3]:offs[3] + n] = pairs.del_qual[a0:a1]
        buf[offs[4]:offs[4] + n] = pairs.gcp_qual[a0:a1]
        buf[offs[6]:offs[6] + c1 - c0] = pairs.hap_bases[c0:c1]
    return stage_ints(pairs, meta, offs, ends, views,
                      (pairs.batch_reads, pairs.batch_haps, pairs.batch_pairs))


def stage_ints(pairs: PairSet, meta: np.ndarray, offs: list, ends: tuple, views: tuple,
               batches: tuple) -> int:
    """A chunk's offsets (its ``ends``), batch arrays (``batches``: its slices of
    batch_reads, batch_haps, batch_pairs) and meta into a buffer (``int_views``): one copy each,
    a subtraction only where the chunk's first value is not 0 (pair numbers stay global);
    returns the end of the last array (meta's)."""
    _, words, dwords = views
    r0, r1, h0, h1, a0, _, c0, _ = ends
    br, bh, bp = batches
    for o, a, base in ((offs[5], pairs.read_offsets[r0:r1 + 1], a0),
                       (offs[7], pairs.hap_offsets[h0:h1 + 1], c0),
                       (offs[8], br, r0), (offs[9], bh, h0), (offs[10], bp, 0)):
        o //= 8  # offsets are multiples of 256
        if base:
            np.subtract(a, base, out=words[o:o + a.size], casting="same_kind")
        else:
            words[o:o + a.size] = a
    o = offs[11]
    dwords[o // 4:o // 4 + meta.size] = meta
    return o + meta.size * 4


#: The full path's staging tasks of a chunk (worker threads, ``stage_chunk_part``): each read
#: array, the haplotype bytes, then the offsets, batch arrays and meta together.
CHUNK_PARTS = 7
_SEQ_PARTS = tuple((name, i) for i, (name, _) in enumerate(STAGED[:5])) + (("hap_bases", 6),)


def _seq_part(part: int, ends: tuple) -> tuple:
    """Sequence task ``part``'s (PairSet array name, index in STAGED, first and end byte in
    that array) for a chunk's ``ends``."""
    name, i = _SEQ_PARTS[part]
    lo, hi = ends[6:] if i == 6 else ends[4:6]
    return name, i, lo, hi


def stage_chunk_part(pairs: PairSet, meta: np.ndarray, offs: list, ends: tuple, views: tuple,
                     b0: int, b1: int, part: int, piece: int = 0, pieces: int = 1) -> int:
    """Task ``part`` (< CHUNK_PARTS) of staging batches b0:b1 (their ``ends``, ``chunk_offsets``)
    into a buffer (``int_views``): that task's arrays, one copy per array -- of a sequence array
    only its ``piece``-th of ``pieces`` equal byte ranges; returns the end of what it wrote
    (meta's end for the last part, 0 for the others)."""
    if part == CHUNK_PARTS - 1:
        return stage_ints(pairs, meta, offs, ends, views, (pairs.batch_reads[b0:b1 + 1],
                          pairs.batch_haps[b0:b1 + 1], pairs.batch_pairs[b0:b1 + 1]))
    name, i, lo, hi = _seq_part(part, ends)
    a, b = (hi - lo) * piece // pieces, (hi - lo) * (piece + 1) // pieces
    views[0][offs[i] + a:offs[i] + b] = getattr(pairs, name)[lo + a:lo + b]
    return 0


#: Parts in the order a streamed chunk stages and uploads them: the integers (small), then the
#: sequence arrays in slot order.
STREAM_ORDER = (CHUNK_PARTS - 1, *range(CHUNK_PARTS - 1))


def part_ranges(offs: list, ends: tuple, used: int, part: int) -> tuple:
    """The slot's byte ranges (lo, hi) that staging task ``part`` fills: a sequence array's
    bytes, or for the integers read_off (up to the haplotype bytes) and everything from
    hap_off to meta's end ``used`` (the 256-byte padding between arrays goes along)."""
    if part == CHUNK_PARTS - 1:
        return (offs[5], offs[6]), (offs[7], used)
    _, i, lo, hi = _seq_part(part, ends)
    return ((offs[i], offs[i] + hi - lo),)


def headroom(nbytes: int) -> int:
    """A buffer size of at least ``nbytes``, rounded up to a quarter octave (2^(k/4)): buffers
    that grow with the input (pinned staging, device slots) are reallocated a few times, not on
    every slightly larger chunk (a page-locked allocation costs milliseconds)."""
    if nbytes <= 1 << 16:
        return 1 << 16
    return int(math.ceil(2 ** (math.ceil(math.log2(nbytes) * 4) / 4)))



class StagingSlots:
    """Grow-only staging buffers (from ``alloc(nbytes)``: page-locked for async copies) and the
    worker threads that fill them."""

    def __init__(self, alloc: Callable[[int], np.ndarray], thread_prefix: str):
        self._alloc = alloc
        self._prefix = thread_prefix
        self._bufs: list = []
        self._workers = None
        self.threads = 0  # 0: PREP_THREADS

    def slots(self, n: int, nbytes: int) -> list:
        """``n`` buffers of at least ``nbytes`` (reallocated only when too small)."""
        while len(self._bufs) < n:
            self._bufs.append(None)
        for i in range(n):
            if self._bufs[i] is None or self._bufs[i].nbytes < nbytes:
                self._bufs[i] = self._alloc(max(nbytes, 1 << 16))
        return self._bufs[:n]

    def pool(self):
        if self._workers is None:
            self._workers = ThreadPoolExecutor(max_workers=self.threads or PREP_THREADS,
                                               thread_name_prefix=self._prefix)
        return self._workers

    def close_pool(self) -> None:
        if self._workers is not None:
            self._workers.shutdown()
            self._workers = None

    def close(self) -> None:
        self._bufs = []
        self.close_pool()
