"""``cuda-subwarp``: the gpuPairHMM-class peak CUDA backend (sub-warp groups, shuffles, bins).

Kernel: ``kernels_cuda/pairhmm/subwarp.cu`` (read its header comment for the recurrence). A group of ``p``
threads aligns one read to every haplotype of its batch; each thread keeps ``k`` read rows in
registers, so one group covers reads up to ``p*k`` (longer reads run as several row tiles).

Work items: one per read (read, first haplotype of its batch, haplotypes in the batch, index of
its first pair) -- a batch's pairs are read-major, so a read's pairs are contiguous; inputs under
``per_pair_below`` pairs get one item per pair instead (more parallelism when the GPU would
otherwise idle). Items are partitioned by read length into bins, ordered inside a bin by
descending work; each bin runs the (p, k) kernel specialized for it, compiled at run time with the
bin's exact limits as defines (cached in-process and on disk).

Pipeline: large inputs are cut into chunks of whole batches (``chunk_pairs``). The host only
copies each chunk's byte slices of the PairSet (bases, qualities, haplotypes) and its
chunk-relative offsets into a pinned staging slot (worker threads, one task per array; this is
the timed ``prep``); one H2D per chunk on a copy stream overlaps the kernels of earlier chunks.
On the GPU, ``subwarp_layout.cu`` builds the chunk's items, bins and sort order (count with
warp-aggregated atomics, one-block scan, scatter); the bin kernels read their item ranges from
the device. ``host_layout`` is the host's reference of that layout (tests, bin profile).

Device side: bins launched on separate streams; float32 with C = 2^120; every pair whose float32
sum is under 1e-28 is queued by the kernel itself into the recompute queue of its bin's
configuration and recomputed by a double-precision instantiation specialized like the bins
(``recompute_queues``: k = 8, the smallest p whose tile holds the reads, multi-tile beyond 256),
on its own stream once its bins are done, counts read on the device (``n_fallback`` counts
them); log10 results are written in place, then copied back once.

Variants (each switches one design element off, so ``hmmbench run`` shows what it buys):
``cuda-subwarp`` (auto bins), ``-noemistable`` (compare-and-select emissions), ``-gatkform``
(GATK's 8-instruction recurrence instead of the scaled 6-instruction one), ``-nobins`` (one
p32k16 kernel for every read, multi-tile beyond 512), ``-nostreams`` (bins serialized on one
stream), ``-p8k16`` (one fixed configuration).
"""
from __future__ import annotations

import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..backend import Backend, Execution, Limits
from ..apis import cuda as glue
from .model import PairSet

SOURCE = "pairhmm/subwarp.cu"
PAD_CODE = 5
N_CODES = 6
#: Largest group: the wavefront runs n + p - 1 steps.
MAX_P = 32

#: (p, k) the kernel supports: p divides 32, k a multiple of 4 up to 32.
SUPPORTED_P = (4, 8, 16, 32)
SUPPORTED_K = (4, 8, 12, 16, 20, 24, 28, 32)

#: Default length bins for the auto backend: (largest read length, p, k[, min blocks]). Tiles
#: with as little padding as possible, small groups for short reads (short fill and drain), and
#: at the lengths the H200 sweep measured (docs/subwarp-notes.md) its best (p, k, min blocks):
#: 64 p4k16/3, 128 p8k16/3, 192 p8k24, 256 p8k32, 384 p16k24, 448 p16k28, 512 p16k32, 768
#: p32k24, 896 p32k28, 1024 p32k32 (min blocks 3 caps registers at 168: fewer moves, more warps,
#: a gain for k <= 16 only).
DEFAULT_BINS: tuple = (
    (16, 4, 4), (32, 4, 8), (48, 4, 12), (64, 4, 16, 3), (80, 4, 20), (96, 4, 24),
    (128, 8, 16, 3), (160, 8, 20), (192, 8, 24), (256, 8, 32), (320, 16, 20), (384, 16, 24),
    (448, 16, 28), (512, 16, 32), (640, 32, 20), (768, 32, 24), (896, 32, 28), (1024, 32, 32),
)
#: Inputs under SMALL_INPUT_PAIRS pairs (the 10s set) leave the GPU mostly idle: each launch
#: costs more than a tile's padding, so the auto backend uses these few bins there.
SMALL_INPUT_PAIRS = 8192
SMALL_BINS: tuple = ((64, 4, 16, 3), (128, 8, 16, 3), (256, 8, 32))
#: Reads longer than the last bin: this configuration, several row tiles per read.
DEFAULT_LONG = (32, 16)
#: Bins without the shared-memory table keep two emissions per row in registers: k <= 16.
NOTABLE_BINS: tuple = (
    (16, 4, 4), (32, 4, 8), (48, 4, 12), (64, 4, 16), (128, 8, 16), (256, 16, 16), (512, 32, 16),
)
#: The same bins as the auto backend, in GATK's 8-instruction form (no min-blocks caps: the
#: form needs more registers).
GATKFORM_BINS: tuple = tuple(row[:3] for row in DEFAULT_BINS)
#: The float64 recompute, specialized like the float32 bins: k = DOUBLE_K rows per thread (in
#: double, k = 8 takes ~206 registers, as k = 16 does in float) and the smallest p whose tile
#: holds the bin's reads; longer reads run multi-tile p32. Bins with the same configuration share
#: one recompute queue (one double launch per queue and chunk).
DOUBLE_K = 8

THREADS_PER_BLOCK = 128
#: Host pipeline: chunks staged ahead (pinned + device slots) and threads preparing them.
STAGING_SLOTS = 4
PREP_THREADS = min(8, os.cpu_count() or 1)  # H100: 8 threads 1.44, 16 threads 1.38 TCUPS
#: subwarp_forward's parameters for PyCUDA's prepared calls (P pointer, i int): items, range,
#: n_max, KERNEL_ARRAYS, out, fb_queue, fb_items, scratch, scratch_stride.
KERNEL_ARRAYS = ("read_bases", "base_qual", "ins_qual", "del_qual", "gcp_qual", "read_off",
                 "hap_bases", "hap_off")
KERNEL_SIGNATURE = "PPi" + "P" * len(KERNEL_ARRAYS) + "PPPPi"
#: The on-GPU layout kernels and their prepared signatures.
LAYOUT_SOURCE = "pairhmm/subwarp_layout.cu"
LAYOUT_SIGNATURES = {"sw_layout_count": "iiiPPPPPPPPPP", "sw_layout_scan": "PPPPP",
                     "sw_layout_scatter": "iPPPP"}
#: Sort levels per bin (SW_LEVELS in subwarp.cuh).
SW_LEVELS = 256


@dataclass(frozen=True)
class Bin:
    lo: int   # smallest read length (inclusive)
    hi: int   # largest read length (inclusive); multi-tile bins have no real upper limit
    p: int
    k: int
    multi_tile: bool = False
    min_blocks: int = 0   # __launch_bounds__ minimum blocks (register cap); 0: the backend's

    @property
    def label(self) -> str:
        return f"p{self.p}k{self.k}{'-mt' if self.multi_tile else ''}[{self.lo}..{self.hi}]"


def make_bins(table: Sequence[tuple], long_config: Optional[tuple], max_len: int) -> list[Bin]:
    """Bins from (upper, p, k[, min blocks]) rows; longer reads go to a multi-tile bin."""
    bins, lo = [], 1
    for hi, p, k, *mb in table:
        if p * k < hi:
            raise ValueError(f"bin up to {hi} does not fit p{p}k{k} (tile {p * k})")
        bins.append(Bin(lo, hi, p, k, min_blocks=mb[0] if mb else 0))
        lo = hi + 1
    if long_config is not None and max_len >= lo:
        p, k = long_config
        bins.append(Bin(lo, max(max_len, lo), p, k, multi_tile=True))
    return bins


def recompute_queues(bins: Sequence[Bin], k: int = DOUBLE_K) -> tuple[list[Bin], list[int]]:
    """The double-precision kernels of the float64 recompute: one per distinct configuration
    (covering the reads of every bin that feeds it), and the queue index of each bin."""
    def config(b: Bin) -> tuple:
        for p in SUPPORTED_P:
            if not b.multi_tile and p * k >= b.hi:
                return p, False
        return MAX_P, True

    queues: dict = {}
    of = []
    for b in bins:
        p, multi = config(b)
        lo, hi = queues.get((p, multi), (b.lo, b.hi))
        queues[(p, multi)] = (min(lo, b.lo), max(hi, b.hi))
        of.append(list(queues).index((p, multi)))
    return [Bin(lo, hi, p, k, multi_tile=multi) for (p, multi), (lo, hi) in queues.items()], of


def table_bytes(p: int, k: int, groups: int, double: bool = False, table: bool = True) -> int:
    """Dynamic shared memory of one block: mirrors SW_CODE_STRIDE / SW_GROUP_STRIDE."""
    if not table:
        return 0
    quad = 32 if double else 16
    code_stride = -(-((k // 4) * p * quad) // 128) * 128 // quad
    group_stride = N_CODES * code_stride + (64 // quad if p == 4 else 0)
    return groups * group_stride * quad


# ------------------------------------------------------------------------------------------------
# Host layout (vectorized; no per-batch Python loop)
# ------------------------------------------------------------------------------------------------
@dataclass
class HostLayout:
    """The work items of batches ``b0:b1`` as the GPU layout kernels build them (the host's
    reference: tests compare the device's items with it; the bin profile counts its cells)."""
    items: np.ndarray          # (n_items, 4) int32: read, first hap, n haps, first pair; bin order
    bin_ranges: list           # [(Bin, start, stop)] slices of items, non-empty bins only


def read_items(pairs: PairSet, b0: int = 0, b1: Optional[int] = None) -> np.ndarray:
    """One item per read of batches b0:b1, in dataset order, reads and haps numbered from the
    range's first: (read, first hap, n haps, first pair). Built with repeats of per-batch
    values (no gathers): this runs for every chunk of the NA12878-sized sets."""
    b1 = pairs.n_batches if b1 is None else b1
    br, bh = pairs.batch_reads[b0:b1 + 1], pairs.batch_haps[b0:b1 + 1]
    nr, nh = np.diff(br), np.diff(bh)
    n = int(br[-1] - br[0])
    items = np.empty((n, 4), np.int32)
    reads = np.arange(n, dtype=np.int32)
    local = reads - np.repeat((br[:-1] - br[0]).astype(np.int32), nr)
    items[:, 0] = reads
    items[:, 1] = np.repeat((bh[:-1] - bh[0]).astype(np.int32), nr)
    items[:, 2] = np.repeat(nh.astype(np.int32), nr)
    items[:, 3] = np.repeat(pairs.batch_pairs[b0:b1].astype(np.int32), nr) + local * items[:, 2]
    if np.any(nh == 0):  # batches without haplotypes have no pairs
        items = items[np.repeat(nh > 0, nr)]
    return items


def host_layout(pairs: PairSet, bins: Sequence[Bin], b0: int = 0, b1: Optional[int] = None,
                per_pair: bool = False) -> HostLayout:
    """The items of batches b0:b1 in the order sw_layout_* sorts them: by bin, then by descending
    work level (the order inside a level is arbitrary on the GPU, dataset order here)."""
    b1 = pairs.n_batches if b1 is None else b1
    r0, r1 = int(pairs.batch_reads[b0]), int(pairs.batch_reads[b1])
    h0 = int(pairs.batch_haps[b0])
    rl = pairs.read_lengths[r0:r1]
    if per_pair:  # straight from the PairSet's own pair arrays
        p0, p1 = int(pairs.batch_pairs[b0]), int(pairs.batch_pairs[b1])
        items = np.empty((p1 - p0, 4), np.int32)
        items[:, 0] = pairs.pair_read[p0:p1] - r0
        items[:, 1] = pairs.pair_hap[p0:p1] - h0
        items[:, 2] = 1
        items[:, 3] = np.arange(p0, p1, dtype=np.int32)
    else:
        items = read_items(pairs, b0, b1)
    lengths = rl[items[:, 0]]
    # Bin of each length through a lookup table (cheaper than a search per item).
    his = np.array([b.hi for b in bins], np.int64)
    top = int(lengths.max(initial=0))
    bin_of = np.searchsorted(his, np.arange(top + 1), side="left").astype(np.uint8)[lengths]
    if len(items) and int(bin_of.max()) >= len(bins):
        raise ValueError(f"read length {int(lengths.max())} exceeds the longest bin")
    # Radix sort by (bin, descending work): the groups of a warp then run about as many wavefront
    # steps each (a warp runs as long as its longest group), big items start first.
    if per_pair:
        work = pairs.hap_lengths[h0 + items[:, 1]] + MAX_P
    else:  # a read's work: its batch's haplotypes (same for every read of the batch)
        nr = np.diff(pairs.batch_reads[b0:b1 + 1])
        bh = pairs.batch_haps[b0:b1 + 1]
        per_batch = (pairs.hap_offsets[bh[1:]] - pairs.hap_offsets[bh[:-1]]
                     + np.diff(bh) * MAX_P)
        work = np.repeat(per_batch, nr)
        if len(work) != len(items):  # reads of batches without haplotypes were dropped
            work = work[np.repeat(np.diff(bh) > 0, nr)]
    level = np.minimum(SW_LEVELS - 1, (np.log2(np.maximum(work, 1).astype(np.float32)) * 16)
                       .astype(np.int32))
    key = bin_of.astype(np.int32) * SW_LEVELS + (SW_LEVELS - 1 - level)
    order = np.argsort(key, kind="stable")
    items = items.view(np.complex128).reshape(-1)[order].view(np.int32).reshape(-1, 4)  # 16-B rows
    counts = np.bincount(bin_of, minlength=len(bins))
    starts = np.concatenate([[0], np.cumsum(counts)])
    ranges = [(b, int(starts[i]), int(starts[i + 1])) for i, b in enumerate(bins) if counts[i]]
    return HostLayout(items=items, bin_ranges=ranges)


#: A chunk's raw arrays as the device gets them (one packed block, one H2D copy per chunk, each
#: array at a 256-byte aligned offset): the PairSet's own byte slices, offsets made chunk-relative;
#: the work items are built from them on the GPU (``subwarp_layout.cu``). ``meta`` = [n_bins,
#: longest read of each bin, recompute queue of each bin].
STAGED = (("read_bases", np.uint8), ("base_qual", np.uint8), ("ins_qual", np.uint8),
          ("del_qual", np.uint8), ("gcp_qual", np.uint8), ("read_off", np.int64),
          ("hap_bases", np.uint8), ("hap_off", np.int64), ("batch_reads", np.int64),
          ("batch_haps", np.int64), ("batch_pairs", np.int64), ("meta", np.int32))
#: Staging tasks of a chunk (worker threads): the big byte arrays alone, the rest together.
STAGE_TASKS = (("read_bases",), ("base_qual",), ("ins_qual",), ("del_qual",), ("gcp_qual",),
               ("hap_bases",), ("read_off", "hap_off", "batch_reads", "batch_haps",
                                "batch_pairs", "meta"))


def chunk_sources(pairs: PairSet, b0: int, b1: int, meta: np.ndarray) -> dict:
    """{name: (source array, value subtracted or None)} of batches b0:b1 (views, no copies)."""
    r0, r1 = int(pairs.batch_reads[b0]), int(pairs.batch_reads[b1])
    h0, h1 = int(pairs.batch_haps[b0]), int(pairs.batch_haps[b1])
    a0, a1 = int(pairs.read_offsets[r0]), int(pairs.read_offsets[r1])
    c0, c1 = int(pairs.hap_offsets[h0]), int(pairs.hap_offsets[h1])
    src = {name: (getattr(pairs, name)[a0:a1], None)
           for name in ("read_bases", "base_qual", "ins_qual", "del_qual", "gcp_qual")}
    src.update(read_off=(pairs.read_offsets[r0:r1 + 1], a0),
               hap_bases=(pairs.hap_bases[c0:c1], None),
               hap_off=(pairs.hap_offsets[h0:h1 + 1], c0),
               batch_reads=(pairs.batch_reads[b0:b1 + 1], r0),
               batch_haps=(pairs.batch_haps[b0:b1 + 1], h0),
               batch_pairs=(pairs.batch_pairs[b0:b1 + 1], None), meta=(meta, None))
    return src


def staging_offsets(pairs: PairSet, bounds, n_meta: int) -> tuple[dict, int]:
    """{name: (byte offset, dtype)} fitting every chunk, and the slot size (from offsets only)."""
    b = np.asarray(bounds, np.int64).reshape(-1, 2)
    br, bh = pairs.batch_reads, pairs.batch_haps
    r0, r1, h0, h1 = br[b[:, 0]], br[b[:, 1]], bh[b[:, 0]], bh[b[:, 1]]
    count = {"pos": int(np.max(pairs.read_offsets[r1] - pairs.read_offsets[r0], initial=0)),
             "read_off": int(np.max(r1 - r0, initial=0)) + 1,
             "hap_bases": int(np.max(pairs.hap_offsets[h1] - pairs.hap_offsets[h0], initial=0)),
             "hap_off": int(np.max(h1 - h0, initial=0)) + 1, "meta": n_meta}
    for name in ("batch_reads", "batch_haps", "batch_pairs"):
        count[name] = int(np.max(b[:, 1] - b[:, 0], initial=0)) + 1
    offs, at = {}, 0
    for name, dtype in STAGED:
        offs[name] = (at, dtype)
        n = count.get(name, count["pos"]) * np.dtype(dtype).itemsize
        at += -(-max(n, 1) // 256) * 256
    return offs, at


def stage(sources: dict, names: Sequence[str], offs: dict, buf: np.ndarray) -> int:
    """Copy arrays ``names`` of a chunk into its staging buffer; returns the end of the last."""
    used = 0
    for name in names:
        a, base = sources[name]
        o, dtype = offs[name]
        nbytes = a.size * np.dtype(dtype).itemsize
        dst = buf[o:o + nbytes].view(dtype)
        if base is None:
            np.copyto(dst, a, casting="same_kind")
        else:
            np.subtract(a, base, out=dst, casting="same_kind")
        used = max(used, o + nbytes)
    return used


def headroom(nbytes: int) -> int:
    """A buffer size of at least ``nbytes``, rounded up to a quarter octave (2^(k/4)): buffers
    that grow with the input (pinned staging, device slots) are reallocated a few times, not on
    every slightly larger chunk (a page-locked allocation costs milliseconds)."""
    if nbytes <= 1 << 16:
        return 1 << 16
    return int(math.ceil(2 ** (math.ceil(math.log2(nbytes) * 4) / 4)))


def busy_seconds(start, spans) -> float:
    """Seconds covered by consecutive (ready, done) event spans, each clipped to start no earlier
    than the previous span's end (consecutive chunks' kernels run one after the other)."""
    total, prev_end = 0.0, 0.0
    for ready, done in spans:
        t0, t1 = ready.time_since(start), done.time_since(start)
        total += max(0.0, t1 - max(t0, prev_end))
        prev_end = max(prev_end, t1)
    return total / 1e3


def bin_cells(pairs: PairSet, bounds, lay: HostLayout, lo: int, hi: int) -> int:
    """Cells of items lo:hi of a chunk's layout (for the per-bin profile only)."""
    b0, _ = bounds
    r0, h0 = int(pairs.batch_reads[b0]), int(pairs.batch_haps[b0])
    it = lay.items[lo:hi].astype(np.int64)
    m = pairs.read_lengths[r0 + it[:, 0]]
    hl = pairs.hap_lengths
    first = h0 + it[:, 1]
    csum = np.concatenate([[0], np.cumsum(hl)])
    return int(np.dot(m, csum[first + it[:, 2]] - csum[first]))


_CLOCK = {"t": -1e9, "mhz": None}


def sm_clock_cached():
    """SM clock (NVML), sampled at most once a second: the query costs ~0.1 ms of wall time."""
    now = time.monotonic()
    if now - _CLOCK["t"] > 1.0:
        _CLOCK.update(t=now, mhz=glue.sm_clock_mhz())
    return _CLOCK["mhz"]


# ------------------------------------------------------------------------------------------------
# SASS instruction count of the inner loop (for the notes; needs cuobjdump)
# ------------------------------------------------------------------------------------------------
FP32_OPS = ("FFMA", "FMUL", "FADD")


def inner_loop_counts(sass: str) -> Optional[Counter]:
    """Opcode counts of the innermost loop holding shuffles (the wavefront step loop)."""
    ins = []
    for line in sass.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?);", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2).strip()))
    best = None
    for addr, text in ins:
        m = re.search(r"BRA\s+0x([0-9a-f]+)", text)
        if not m or int(m.group(1), 16) >= addr:
            continue
        start = int(m.group(1), 16)
        body = [t for a, t in ins if start <= a <= addr]
        ops = Counter(re.sub(r"^@!?U?P\w+\s+", "", t).split()[0].split(".")[0] for t in body)
        if ops.get("SHFL", 0) and (best is None or sum(ops.values()) < sum(best.values())):
            best = ops
    return best


# ------------------------------------------------------------------------------------------------
# Kernel cache warm-up (device scripts: a fresh GPU machine has an empty PyCUDA disk cache)
# ------------------------------------------------------------------------------------------------
def kernel_specs(backends: Sequence["SubwarpBackend"], max_read_length: int = 1 << 20) -> list:
    """(source, defines) of every kernel the backends launch on inputs up to max_read_length."""
    seen: dict = {(LAYOUT_SOURCE, ()): (LAYOUT_SOURCE, {})}
    for b in backends:
        for table in (b._bins_table, b._small_table):
            if not table:
                continue
            bins = make_bins(table, b._long, max_read_length)
            specs = [b.defines(x) for x in bins]
            specs += [b.defines(q, double=True) for q in recompute_queues(bins, b.double_k)[0]]
            for d in specs:
                seen[(SOURCE, tuple(sorted(d.items())))] = (SOURCE, d)
    return list(seen.values())


def precompile(backends: Sequence["SubwarpBackend"], threads: int = 16) -> int:
    """Fill PyCUDA's disk cache with every kernel of ``backends``, nvcc runs in parallel (the call
    SourceModule makes in glue.compile, so the later loads hit the cache). Returns the count."""
    from concurrent.futures import ThreadPoolExecutor
    from pycuda.compiler import compile as nvcc_compile
    arch = glue.device_attributes()["arch"]

    def build(spec):
        source, defines = spec
        nvcc_compile(glue.kernel_source(source),
                     options=list(glue.BASE_OPTIONS) + glue.define_flags(defines),
                     no_extern_c=True, arch=arch, include_dirs=glue.include_dirs(source))

    specs = kernel_specs(backends)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(build, specs))
    return len(specs)


# ------------------------------------------------------------------------------------------------
# Backend
# ------------------------------------------------------------------------------------------------
class SubwarpBackend(Backend):
    api = "cuda"
    family = "subwarp"
    precision = "float32"
    limits = Limits()

    def __init__(self, name: str, bins: Sequence[tuple] = DEFAULT_BINS,
                 long_config: Optional[tuple] = DEFAULT_LONG, emis_table: bool = True,
                 scaled: bool = True, streams: bool = True, description: str = "",
                 chunk_pairs: int = 3 << 17, min_blocks: int = 1,
                 per_pair_below: int = 1 << 16, small_bins: Optional[Sequence[tuple]] = None):
        super().__init__(bins=[list(b) for b in bins], long_config=long_config,
                         emis_table=emis_table, scaled=scaled, streams=streams,
                         chunk_pairs=chunk_pairs, min_blocks=min_blocks,
                         per_pair_below=per_pair_below,
                         small_bins=[list(b) for b in small_bins] if small_bins else None)
        self.name = name
        self.description = description
        self._bins_table = tuple(tuple(b) for b in bins)
        self._small_table = tuple(tuple(b) for b in small_bins) if small_bins else None
        self.profile_bins = False
        self._long = long_config
        self._table = emis_table
        self._scaled = scaled
        self._streams_on = streams
        self._buffers = None
        self._streams: list = []
        self._pinned_bufs: list = []
        self._kernels: dict = {}
        self._workers = None
        self.prep_threads = 0  # 0: PREP_THREADS
        # Off: H200 (host layout) 0.69 vs 1.06 TCUPS on 6 pieces; H100 (GPU layout) 1.36 vs
        # 1.25-1.44 without, within the run-to-run spread.
        self.ramp_chunks = False
        self.chunk_pairs = chunk_pairs
        self.min_blocks = min_blocks
        self.per_pair_below = per_pair_below
        self.double_k = DOUBLE_K
        self.recompute_all = False  # True: every pair through the float64 kernels (tests, timing)
        if long_config is None:
            self.limits = Limits(max_read_length=self._bins_table[-1][0])

    # --- availability -------------------------------------------------------------------------
    def unavailable_reason(self) -> Optional[str]:
        return glue.unavailable_reason()

    def device_name(self) -> str:
        return glue.gpu_name()

    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        # Per read / haplotype first (cheap); per pair only when some sequence is empty.
        if pairs.n_pairs and (int(pairs.read_lengths.min(initial=1)) < 1
                              or int(pairs.hap_lengths.min(initial=1)) < 1):
            if int(pairs.pair_read_lengths.min()) < 1 or int(pairs.pair_hap_lengths.min()) < 1:
                return "a pair has an empty read or haplotype (the model's likelihood is undefined)"
        return super().refuse_reason(pairs)

    def bins_for(self, pairs: PairSet) -> list[Bin]:
        table = self._bins_table
        if self._small_table is not None and pairs.n_pairs < SMALL_INPUT_PAIRS:
            table = self._small_table  # few launches beat tight tiles when the GPU is not full
        return make_bins(table, self._long, pairs.max_read_length)

    # --- kernels ------------------------------------------------------------------------------
    def defines(self, b: Bin, double: bool = False) -> dict:
        d = {"SW_P": b.p, "SW_K": b.k, "SW_DOUBLE": int(double),
             "SW_EMIS_TABLE": int(self._table or double), "SW_SCALED": int(self._scaled),
             "SW_MULTI_TILE": int(b.multi_tile), "SW_BIN_MIN": b.lo,
             "SW_BIN_MAX": b.hi if not b.multi_tile else 1 << 30,
             "SW_BLOCK": THREADS_PER_BLOCK,
             "SW_MIN_BLOCKS": 1 if double else (b.min_blocks or self.min_blocks)}
        if self.recompute_all and not double:
            d["SW_F32_MIN_ACCEPTED"] = "3e38f"  # every pair goes to the float64 recompute
        return d

    def kernel(self, b: Bin, double: bool = False):
        """(prepared function, dynamic shared bytes) for a bin, compiled on first use."""
        key = (b, double, self.recompute_all)
        if key not in self._kernels:
            mod = glue.compile(SOURCE, self.defines(b, double))
            fn = mod.get_function("subwarp_forward")
            fn.prepare(KERNEL_SIGNATURE)  # prepared calls: less Python per launch
            groups = THREADS_PER_BLOCK // b.p
            smem = table_bytes(b.p, b.k, groups, double, self._table or double)
            if smem > 48 * 1024:
                drv = glue.driver()
                fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
            self._kernels[key] = (fn, smem)
        return self._kernels[key]

    def layout_kernels(self) -> dict:
        """The three on-GPU layout kernels (``subwarp_layout.cu``), prepared."""
        if "layout" not in self._kernels:
            mod = glue.compile(LAYOUT_SOURCE, {})
            fns = {}
            for name, sig in LAYOUT_SIGNATURES.items():
                fns[name] = mod.get_function(name)
                fns[name].prepare(sig)
            self._kernels["layout"] = fns
        return self._kernels["layout"]

    def _bufs(self) -> glue.DeviceBuffers:
        if self._buffers is None:
            self._buffers = glue.DeviceBuffers()
        return self._buffers

    def _stream_pool(self, n: int) -> list:
        drv = glue.driver()
        while len(self._streams) < n:
            self._streams.append(drv.Stream())
        return self._streams[:n]


    def _launch(self, b: Bin, double: bool, items_ptr, range_ptr, n_max: int, dev: dict,
                out_dev, fb_queue_ptr, fb_items_ptr, stream, max_hap_len: int, blocks: int):
        """One bin's kernel over items ``range_ptr[0] ..`` (count ``range_ptr[1]``, at most
        ``n_max``; both read on the device); grid-stride over ``blocks`` blocks."""
        fn, smem = self.kernel(b, double)
        groups = THREADS_PER_BLOCK // b.p
        scratch, stride = 0, 0
        if b.multi_tile:
            # A bounded grid, one boundary-row scratch per resident group; the buffer is sized
            # for the largest grid, so it never grows (is never reallocated) within a run.
            cap = glue.device_attributes()["sm_count"] * 16
            blocks = min(blocks, cap)
            stride = max_hap_len + 8 + MAX_P  # steps rounded up to 4, + 4 read ahead
            quad = 32 if double else 16
            scratch = self._bufs().get("scratch_d" if double else "scratch",
                                       headroom(cap * groups * stride * quad))
        ptr = lambda x: np.uintp(int(x))  # noqa: E731
        fn.prepared_async_call(
            (max(blocks, 1), 1), (THREADS_PER_BLOCK, 1, 1), stream,
            ptr(items_ptr), ptr(range_ptr), np.int32(n_max),
            *(ptr(dev[name]) for name in KERNEL_ARRAYS),
            ptr(out_dev), ptr(fb_queue_ptr), ptr(fb_items_ptr), ptr(scratch), np.int32(stride),
            shared_size=smem)

    def chunk_bounds(self, pairs: PairSet) -> list[tuple[int, int]]:
        """Batch ranges of about ``chunk_pairs`` pairs each (batches never split). With
        ``ramp_chunks``, the first chunks are 1/8, 1/4, 1/2 of that, so the GPU starts after a
        small first preparation instead of a full one."""
        if pairs.n_pairs <= self.chunk_pairs:
            return [(0, pairs.n_batches)]
        sizes = [self.chunk_pairs >> s for s in (3, 2, 1)] if self.ramp_chunks else []
        lead = np.cumsum([x for x in sizes if x > 0], dtype=np.int64)
        rest = np.arange(int(lead[-1]) if len(lead) else 0, pairs.n_pairs, self.chunk_pairs)[1:]
        targets = np.concatenate([lead, rest]) if len(lead) else \
            np.arange(self.chunk_pairs, pairs.n_pairs, self.chunk_pairs)
        targets = targets[targets < pairs.n_pairs]
        cuts = np.unique(np.searchsorted(pairs.batch_pairs, targets, side="left"))
        cuts = cuts[(cuts > 0) & (cuts < pairs.n_batches)]
        edges = [0, *cuts.tolist(), pairs.n_batches]
        return list(zip(edges[:-1], edges[1:]))


    def run(self, pairs: PairSet) -> Execution:
        reason = self.refuse_reason(pairs)
        if reason:
            raise ValueError(f"{self.name} refuses this input: {reason}")
        drv = glue.driver()
        info: dict = {"gpu": glue.gpu_name()}
        timing = {"prep": 0.0, "h2d": 0.0, "kernel": 0.0, "d2h": 0.0}
        if pairs.n_pairs == 0:
            return Execution(np.zeros(0), timing, 0, info)
        if pairs.n_pairs >= 2**31 - 1:
            raise ValueError("cuda-subwarp indexes pairs with int32: split the input")
        bins = self.bins_for(pairs)
        queue_bins, queue_of = recompute_queues(bins, self.double_k)
        for b in bins:  # compile outside the timed stages (cached after the first run)
            self.kernel(b)
        for q in queue_bins:
            self.kernel(q, double=True)
        lk = self.layout_kernels()
        nb, nq = len(bins), len(queue_bins)
        n_keys = nb * SW_LEVELS
        meta = np.array([nb, *(min(b.hi, 2**31 - 1) for b in bins), *queue_of], np.int32)

        t_run = time.perf_counter()
        br, bh, bp = pairs.batch_reads, pairs.batch_haps, pairs.batch_pairs
        bounds = self.chunk_bounds(pairs)
        n_chunks = len(bounds)
        chunk_pairs = [int(bp[b1] - bp[b0]) for b0, b1 in bounds]
        per_pair = [n <= self.per_pair_below for n in chunk_pairs]
        units = [chunk_pairs[c] if per_pair[c] else int(br[b1] - br[b0])
                 for c, (b0, b1) in enumerate(bounds)]
        offs, slot_bytes = staging_offsets(pairs, bounds, len(meta))
        n_slots = min(n_chunks, max(STAGING_SLOTS, (self.prep_threads or PREP_THREADS) + 2))
        bufs = self._bufs()
        slot_bytes = headroom(slot_bytes)
        pinned = self._pinned_slots(n_slots, slot_bytes)
        dev_slots = [bufs.get(f"slot{i}", slot_bytes) for i in range(n_slots)]
        mu, mp = headroom(max(units)), headroom(max(chunk_pairs))
        work = [{"raw": bufs.get(f"raw{i}", mu * 16), "key_rank": bufs.get(f"kr{i}", mu * 8),
                 "items": bufs.get(f"items{i}", mu * 16),
                 "counters": bufs.get(f"counters{i}", (n_keys + nb) * 4),
                 "bin_range": bufs.get(f"bin_range{i}", nb * 8),
                 "fb_items": bufs.get(f"fb_items{i}", mp * 16)} for i in range(n_slots)]
        queues_dev = bufs.get("queues", n_chunks * nb * 8)  # sw_layout_scan writes nb heads
        streams = self._stream_pool(3 + nb + nq)
        main, copy, lay_stream = streams[:3]
        bin_streams = streams[3:3 + nb] if self._streams_on else [main] * nb
        queue_streams = streams[3 + nb:] if self._streams_on else [main] * nq
        out_dev = bufs.get("out", headroom(pairs.n_pairs * 8))
        max_hap_len = int(pairs.hap_lengths.max(initial=1))
        bin_lut = np.minimum(np.searchsorted([b.hi for b in bins],
                                             np.arange(pairs.max_read_length + 1)), nb - 1)
        sms = glue.device_attributes()["sm_count"]
        start = drv.Event()
        start.record(main)
        copy.wait_for_event(start)
        lay_stream.wait_for_event(start)

        sources = {}

        def stage_part(c: int, names) -> tuple:
            """Worker: arrays ``names`` of chunk c into its pinned slot (numpy frees the GIL)."""
            t0 = time.perf_counter()
            used = stage(sources[c], names, offs, pinned[c % n_slots])
            return used, time.perf_counter() - t0, None

        def bin_estimate(c: int) -> tuple:
            """Worker: items per bin of chunk c, for grid sizes only (the kernels read the exact
            ranges). Ready before the launches: any host work between a chunk's upload and its
            launches would leave the GPU waiting (and count in its kernel time)."""
            t0 = time.perf_counter()
            b0, b1 = bounds[c]
            bin_of = bin_lut[np.diff(pairs.read_offsets[br[b0]:br[b1] + 1])]
            est = np.bincount(bin_of, minlength=nb, weights=np.repeat(
                np.diff(bh[b0:b1 + 1]), np.diff(br[b0:b1 + 1])) if per_pair[c] else None)
            return 0, time.perf_counter() - t0, est

        h2d_spans, kernel_spans, float_spans, kernels_done, staged_done = [], [], [], [], []
        bin_events: list = []
        bin_counts: Counter = Counter()
        futures: dict = {}
        prep_work = prep_wait = 0.0
        pool = self._pool() if n_chunks > 1 else None

        def submit(c: int):
            if c < n_chunks and c not in futures:
                if c >= n_slots:  # the pinned slot is free once its previous upload is done
                    staged_done[c - n_slots].synchronize()
                b0, b1 = bounds[c]
                sources[c] = chunk_sources(pairs, b0, b1, meta)
                if pool is None:
                    futures[c] = [bin_estimate(c), stage_part(c, [n for n, _ in STAGED])]
                else:
                    futures[c] = [pool.submit(bin_estimate, c)] + [
                        pool.submit(stage_part, c, names) for names in STAGE_TASKS]

        for c in range(min(n_slots, n_chunks)):
            submit(c)
        ptr = lambda x: np.uintp(int(x))  # noqa: E731
        for c in range(n_chunks):
            slot = c % n_slots
            b0, b1 = bounds[c]
            t0 = time.perf_counter()
            parts = [f if pool is None else f.result() for f in futures.pop(c)]
            prep_wait += time.perf_counter() - t0
            used = max(u for u, _, _ in parts)
            prep_work += sum(w for _, w, _ in parts)
            est = parts[0][2]
            sources.pop(c)
            if c >= n_slots:  # device slot free once chunk c-n_slots's kernels are done
                copy.wait_for_event(kernels_done[c - n_slots])
            e0, e1 = drv.Event(), drv.Event()
            e0.record(copy)
            drv.memcpy_htod_async(dev_slots[slot], pinned[slot][:used], copy)
            e1.record(copy)
            staged_done.append(e1)
            h2d_spans.append((e0, e1))
            base = int(dev_slots[slot])
            dev = {k: np.uintp(base + o) for k, (o, _) in offs.items()}
            w = work[slot]
            hist = int(w["counters"])
            bin_pairs = hist + 4 * n_keys
            queues = int(queues_dev) + 8 * nb * c
            # Work items on the GPU: count + key, scan, scatter (sorted by bin, descending work).
            lay_stream.wait_for_event(e1)
            drv.memset_d32_async(w["counters"], 0, n_keys + nb, lay_stream)
            grid = (max(1, -(-units[c] // 256)), 1)
            lk["sw_layout_count"].prepared_async_call(
                grid, (256, 1, 1), lay_stream, np.int32(units[c]), np.int32(per_pair[c]),
                np.int32(b1 - b0), dev["batch_reads"], dev["batch_haps"], dev["batch_pairs"],
                dev["read_off"], dev["hap_off"], dev["meta"], ptr(w["raw"]),
                ptr(w["key_rank"]), ptr(hist), ptr(bin_pairs))
            lk["sw_layout_scan"].prepared_async_call(
                (1, 1), (1024, 1, 1), lay_stream, dev["meta"], ptr(hist), ptr(bin_pairs),
                ptr(w["bin_range"]), ptr(queues))
            lk["sw_layout_scatter"].prepared_async_call(
                grid, (256, 1, 1), lay_stream, np.int32(units[c]), ptr(w["raw"]),
                ptr(w["key_rank"]), ptr(hist), ptr(w["items"]))
            laid = drv.Event()
            laid.record(lay_stream)
            if self.profile_bins:  # cells per bin from the host's reference layout
                ref = host_layout(pairs, bins, b0, b1, per_pair=per_pair[c])
                cells_of = {b.label: bin_cells(pairs, bounds[c], ref, lo, hi)
                            for b, lo, hi in ref.bin_ranges}
            # Bins on separate streams after the layout; each bin's underflows go to its
            # recompute queue, run by the double kernel of that queue once its bins are done.
            fed: list = [[] for _ in range(nq)]
            for i, b in enumerate(bins):
                n = int(est[i])
                if n == 0:
                    continue
                # A bin keeps its stream across chunks: launches sharing the multi-tile
                # scratch never overlap.
                s = main if self.profile_bins else bin_streams[i]
                s.wait_for_event(laid)
                if self.profile_bins:
                    pb0 = drv.Event()
                    pb0.record(s)
                self._launch(b, False, w["items"], int(w["bin_range"]) + 8 * i, n, dev,
                             out_dev, queues + 8 * queue_of[i], w["fb_items"], s, max_hap_len,
                             -(-n // (THREADS_PER_BLOCK // b.p)))
                ev = drv.Event()
                ev.record(s)
                fed[queue_of[i]].append(ev)
                bin_counts[b.label] += n
                if self.profile_bins:
                    bin_events.append((b.label, pb0, ev, cells_of.get(b.label, 0)))
            main.wait_for_event(laid)
            for evs in fed:
                for ev in evs:
                    main.wait_for_event(ev)
            f1 = drv.Event()
            f1.record(main)
            float_spans.append((e1, f1))
            for q, qb in enumerate(queue_bins):
                if not fed[q]:
                    continue
                s = main if self.profile_bins else queue_streams[q]
                for ev in fed[q]:
                    s.wait_for_event(ev)
                blocks = min(-(-chunk_pairs[c] // (THREADS_PER_BLOCK // qb.p)), sms * 4)
                self._launch(qb, True, w["fb_items"], queues + 8 * q, chunk_pairs[c], dev,
                             out_dev, 0, 0, s, max_hap_len, blocks)
                ev = drv.Event()
                ev.record(s)
                main.wait_for_event(ev)
            k1 = drv.Event()
            k1.record(main)
            kernels_done.append(k1)
            kernel_spans.append((e1, k1))
            submit(c + n_slots)
        out = np.empty(pairs.n_pairs, np.float64)
        queue_heads = np.zeros(n_chunks * nb * 2, np.int32)
        d0, d1 = drv.Event(), drv.Event()
        d0.record(main)
        drv.memcpy_dtoh_async(out, out_dev, main)
        drv.memcpy_dtoh_async(queue_heads, queues_dev, main)
        d1.record(main)
        d1.synchronize()
        n_fb = int(queue_heads[1::2].sum())
        # prep: host staging work of every chunk (worker threads; it overlaps the uploads and
        # kernels of earlier chunks -- info has the part the launches waited for).
        timing["prep"] = prep_work
        timing["h2d"] = sum(b.time_since(a) for a, b in h2d_spans) / 1e3
        # Kernel time without double counting overlap: chunk c's kernels (layout, bins,
        # recompute) start when its upload is done *and* chunk c-1's kernels are.
        timing["kernel"] = busy_seconds(start, kernel_spans)
        timing["d2h"] = d1.time_since(d0) / 1e3
        info["prep_wait_s"] = prep_wait
        info["run_wall_s"] = time.perf_counter() - t_run
        info["gpu_span_s"] = d1.time_since(start) / 1e3
        # kernel = layout + float32 bins + the float64 recompute of their underflows
        info["float32_kernel_s"] = busy_seconds(start, float_spans)
        if bin_events:
            prof: dict = {}
            for label, a, b, cells in bin_events:
                row = prof.setdefault(label, {"seconds": 0.0, "cells": 0})
                row["seconds"] += b.time_since(a) / 1e3
                row["cells"] += cells
            info["bin_profile"] = prof
        info["recompute_kernel_s"] = timing["kernel"] - info["float32_kernel_s"]
        info["chunks"] = n_chunks
        info["sm_clock_mhz"] = sm_clock_cached()
        info["bins"] = dict(bin_counts)
        info["recompute_queues"] = [q.label for q in queue_bins]
        return Execution(out, timing, n_fb, info)

    def _pinned_slots(self, n: int, nbytes: int) -> list:
        """``n`` grow-only page-locked staging buffers of at least ``nbytes`` (async H2D)."""
        drv = glue.driver()
        while len(self._pinned_bufs) < n:
            self._pinned_bufs.append(None)
        for i in range(n):
            if self._pinned_bufs[i] is None or self._pinned_bufs[i].nbytes < nbytes:
                self._pinned_bufs[i] = drv.pagelocked_empty(max(nbytes, 1 << 16), np.uint8)
        return self._pinned_bufs[:n]

    def _pool(self):
        if self._workers is None:
            from concurrent.futures import ThreadPoolExecutor
            self._workers = ThreadPoolExecutor(max_workers=self.prep_threads or PREP_THREADS,
                                               thread_name_prefix="subwarp-prep")
        return self._workers

    def close(self) -> None:
        if self._buffers is not None:
            self._buffers.free()
            self._buffers = None
        self._streams = []
        self._pinned_bufs = []
        self._kernels = {}
        if self._workers is not None:
            self._workers.shutdown()
            self._workers = None


def backends() -> list[Backend]:
    return [
        SubwarpBackend("cuda-subwarp", small_bins=SMALL_BINS,
                       description="auto (p,k) per length bin"),
        SubwarpBackend("cuda-subwarp-noemistable", bins=NOTABLE_BINS, emis_table=False,
                       description="compare-and-select emissions instead of the shared table"),
        SubwarpBackend("cuda-subwarp-gatkform", bins=GATKFORM_BINS, scaled=False,
                       description="GATK's 8-instruction recurrence instead of the scaled one"),
        SubwarpBackend("cuda-subwarp-nobins", bins=(), long_config=(32, 16),
                       description="one p32k16 kernel for all reads (multi-tile beyond 512)"),
        SubwarpBackend("cuda-subwarp-nostreams", streams=False,
                       description="bins serialized on one stream"),
        SubwarpBackend("cuda-subwarp-p8k16", bins=((128, 8, 16),), long_config=(8, 16),
                       description="one fixed p8k16 kernel (multi-tile beyond 128)"),
    ]
