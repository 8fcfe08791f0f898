"""Sub-warp Pair-HMM: length bins, configuration choice and the host layout (API-free).

Shared by ``cuda-subwarp`` (``cuda.py``) and ``opencl-subwarp`` (``opencl.py``):
a group of ``p`` work-items aligns one read to every haplotype of its batch, each keeping ``k``
read rows in registers, so one group covers reads up to ``p*k``. Work items are partitioned by
read length into bins (each runs the (p, k) kernel specialized for it) and ordered inside a bin by
descending work. ``host_layout`` builds that order on the host (the reference: both backends
build it on the device and tests compare the two); ``chunk_bounds`` cuts large inputs
into chunks of whole batches.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Optional, Sequence

import numpy as np

from ..model import F32_MIN_ACCEPTED, PairSet

PAD_CODE = 5
N_CODES = 6
#: Largest group: the wavefront runs n + p - 1 steps.
MAX_P = 32

#: (p, k) the kernel supports: p divides 32, k a multiple of 4 up to 32.
SUPPORTED_P = (4, 8, 16, 32)
SUPPORTED_K = (4, 8, 12, 16, 20, 24, 28, 32)

#: Default length bins for the auto backend: (largest read length, p, k[, min blocks[, max
#: registers]]). Tiles with as little padding as possible, small groups for short reads (short
#: fill and drain), and at the lengths the H200 sweep measured (docs/subwarp-design.md) its best
#: (p, k): 64 p4k16, 128 p8k16, 192 p8k24, 256 p8k32, 384 p16k24, 448 p16k28, 512 p16k32, 768
#: p32k24, 896 p32k28, 1024 p32k32. Min blocks N caps registers (3: 168, 4: 128, 6: 80) for N
#: warps per scheduler: with the 5-op recurrence a gain wherever the bin's kernel fits without
#: spills in its loop, on the H100 (8903acf:results/h100/subwarp-5op-blocks.json,
#: subwarp-5op-short-blocks*.json); k = 28, 32 spill.
#: Max registers (__maxnreg__, below what the min blocks allow, occupancy unchanged): with fewer
#: to spare ptxas keeps the rows in place across the unrolled steps instead of moving them back
#: at the loop's end; each cap the best of an H100 A/B on 4x peak sets
#: (8903acf:results/h100/subwarp-regcap*-*.json): 256 +2 %, 320 +4 %, 448 +4 %, 896 +6 %, 1024 +1 %;
#: 768 spills in its loop under any cap below its 168. 384 (no exponents of its own)
#: takes 3 blocks instead of its cap of 192: +4 %
#: (8903acf:results/h100/subwarp-lowfloor-shape384.json). 512 at 240 with the low floor's code in its
#: kernel: +2.8 % against 232 (8903acf:results/h100/subwarp-floor-caps512.json). 896 at 200
#: with the exponents' shift and their check every 24 steps: 3,400 GCUPS against 3,320 at 208,
#: 3,290 at 216, 3,240 at 192 (8903acf:results/h100/subwarp-tune{1,2}-896.json).
DEFAULT_BINS: tuple = (
    (16, 4, 4), (32, 4, 8, 6), (48, 4, 12, 4), (64, 4, 16, 4), (80, 4, 20, 3), (96, 4, 24, 3),
    (128, 8, 16, 4), (160, 8, 20, 3), (192, 8, 24, 3), (256, 8, 32, 0, 248),
    (320, 16, 20, 3, 152), (384, 16, 24, 3), (448, 16, 28, 0, 208), (512, 16, 32, 0, 240),
    (640, 32, 20, 3, 160), (768, 32, 24, 3), (896, 32, 28, 0, 200), (1024, 32, 32, 0, 240),
)
#: The float32 exponent bins' own settings beside the table (by their longest read; single tiles;
#: read by SubwarpBackend.defines), each the faster side of H100 runs in one process
#: (docs/subwarp-numerics.md): the check every 24 steps (kernel GCUPS 640 3,286 -> 3,310, 896 3,273 ->
#: 3,400 with its cap at 200, 1,024 3,380 -> 3,440, 768 3,240 -> 3,260; on the emulation GATK's gap
#: penalty sends no pair more to float64, Q10-20 ones 34 of 64 deep pairs against 29), and 768
#: without the shift (SW_EXP_SHIFT), two conversion factors (the shift's extra register cost its
#: p32k24 at 168 registers 1.3 %, where 640 gained 3.9 %, 1,024 2.7 %) and lane 0's codes loaded,
#: not from the window (two registers fewer: 3,320 against 3,260). The backend's
#: ``exp_bin_settings`` 0 drops them (the A/B).
EXP_BIN_SETTINGS = {640: {"exp_every": 24},
                    768: {"exp_shift": 0, "exp_every": 24, "code_window": 0},
                    896: {"exp_every": 24}, 1024: {"exp_every": 24}}


def exp_switches(own: dict, every: int, lane0_by_factor: int, exp_shift: int,
                 code_window: int) -> dict:
    """The defines of a kernel with exponents off the shared body's defaults: a bin's own
    settings (``own``, from EXP_BIN_SETTINGS) over the backend's (the check interval in steps,
    lane 0's row above by the conversion factor, the last rows' shift, the code window)."""
    d = {}
    every = own.get("exp_every", every)
    if every != 16:
        if every % 4 or every > 28:  # (32 sent every equal-896 / 1,024 pair to float64)
            raise ValueError(f"exp_every {every}: a multiple of 4 up to 28")
        d["SW_EXP_EVERY"] = every // 4
    if not lane0_by_factor:
        d["SW_LANE0_BY_FACTOR"] = 0
    if not (exp_shift and own.get("exp_shift", 1)):
        d["SW_EXP_SHIFT"] = 0
    if not (code_window and own.get("code_window", 1)):
        d["SW_CODE_WINDOW_ON"] = 0
    return d

#: Inputs that leave the GPU mostly idle: their kernel time is the dependency chain of their
#: longest pairs (hap length + p steps of k dependent rows each), not throughput, so they take
#: more threads per pair (larger p, smaller k) and few bins (a launch costs more than a tile's
#: padding). (pairs below, bins) tiers, the first that holds the input: about n_pairs x p threads
#: against the 270k an H100 holds. Measured on the H100 (git show 8903acf:scripts/subwarp_small_bins.py, kernel
#: ms): 10s (3,550 pairs) 0.145 p32 / 0.178 p8 / 0.399 the former p4-p8 table; 1m (29,307) 0.391
#: p8 / 0.540 p32 / 0.61 DEFAULT_BINS; 1m's 110 regions (~270 pairs each) 9.7 / 11.8 / 16.0 ms.
SMALL_INPUT_PAIRS = 8192
SMALL_TIERS: tuple = (
    (SMALL_INPUT_PAIRS, ((128, 32, 4), (256, 32, 8))),
    (1 << 15, ((64, 8, 8), (128, 8, 16), (256, 8, 32))),
)
#: The recurrence (SW_SCALED; kernels_common/pairhmm/subwarp.h): GATK's form (8 instructions per
#: cell), the scaled 6-instruction one, the 5-instruction one of the float32 kernels.
RECURRENCES = {"gatk": 0, "6op": 1, "5op": 2}


def sw_scaled(recurrence: str, double: bool) -> int:
    """SW_SCALED of a kernel: the double kernels, every pair's last resort, keep the 6-instruction
    form, which holds a gap quality of 0 (the 5-instruction one hands such a pair on)."""
    form = RECURRENCES[recurrence]
    return min(form, 1) if double else form


#: Reads longer than the last bin: this configuration, several row tiles per read.
DEFAULT_LONG = (32, 16)
#: Bins without the shared-memory table keep two emissions per row in registers: k <= 16.
NOTABLE_BINS: tuple = (
    (16, 4, 4), (32, 4, 8), (48, 4, 12), (64, 4, 16), (128, 8, 16), (256, 16, 16), (512, 32, 16),
)
#: The same bins as the auto backend, in GATK's 8-instruction form (no min-blocks caps: the
#: form needs more registers).
GATKFORM_BINS: tuple = tuple(row[:3] for row in DEFAULT_BINS)

#: The float32 kernels without exponents of a cascading backend (cuda-subwarp) keep a pair's sum
#: (with C = 2^120) down to F32_LOW_FLOOR when its read is longer than F32_LOW_FLOOR_ABOVE and
#: its insertion qualities past the first base are all at most F32_LOW_FLOOR_IQ, else down to
#: GATK's 1e-28 (F32_MIN_ACCEPTED); under it the pair goes to its recompute queue
#: (SW_F32_LOW_FLOOR). The kernel keeps X = s M, s the next row's insertion probability: X
#: reaches float32's denormals (and the results lose 1e-4) 3-4 decades under 1e-33 at Q <= 50,
#: higher at higher qualities (docs/subwarp-numerics.md, "The low floor"). Up to 256 bases next to
#: no pair lies between the floors (equal-256: 28 of 488k) and ptxas schedules those bins' loops
#: slower around the floor's code (H100, 256: +3.9 % kernel time, 64..192: +0.3..0.8 %).
F32_LOW_FLOOR = 1e-33
F32_LOW_FLOOR_IQ = 50
F32_LOW_FLOOR_ABOVE = 256


def f32_floors(pairs: PairSet) -> np.ndarray:
    """Per pair, the smallest float32 sum (with C) the kernels with the low floor accept."""
    off, m = pairs.read_offsets, pairs.read_lengths
    iq = pairs.ins_qual.astype(np.int64)
    iq[off[:-1][m > 0]] = 0  # past the first base only (qualities are >= 0)
    hi = np.zeros(len(m), np.int64)
    some = np.flatnonzero(m > 0)
    if len(some):
        hi[some] = np.maximum.reduceat(iq, off[:-1][some])
    floor = np.where((hi <= F32_LOW_FLOOR_IQ) & (m > F32_LOW_FLOOR_ABOVE), F32_LOW_FLOOR,
                     F32_MIN_ACCEPTED)
    return floor[pairs.pair_read]


#: Inputs (chunks) of at most this many pairs get one work item per pair instead of one per read:
#: more parallelism when the device would otherwise idle.
PER_PAIR_BELOW = 1 << 16
#: Work-items per block (work-group) of the bin kernels.
THREADS_PER_BLOCK = 128
#: Sort levels per bin (SW_LEVELS in the kernel's header).
SW_LEVELS = 256


@dataclass(frozen=True)
class Bin:
    lo: int   # smallest read length (inclusive)
    hi: int   # largest read length (inclusive); multi-tile bins have no real upper limit
    p: int
    k: int
    multi_tile: bool = False
    min_blocks: int = 0   # __launch_bounds__ minimum blocks (register cap); 0: the backend's
    max_regs: int = 0     # a register cap below the min blocks' (__maxnreg__); 0: none

    @property
    def label(self) -> str:
        return f"p{self.p}k{self.k}{'-mt' if self.multi_tile else ''}[{self.lo}..{self.hi}]"


def make_bins(table: Sequence[tuple], long_config: Optional[tuple], max_len: int) -> list[Bin]:
    """Bins from (upper, p, k[, min blocks[, max registers]]) rows; longer reads go to a
    multi-tile bin."""
    bins, lo = [], 1
    for hi, p, k, *caps in table:
        if p * k < hi:
            raise ValueError(f"bin up to {hi} does not fit p{p}k{k} (tile {p * k})")
        mb, regs = (*caps, 0, 0)[:2]
        bins.append(Bin(lo, hi, p, k, min_blocks=mb, max_regs=regs))
        lo = hi + 1
    if long_config is not None and max_len >= lo:
        p, k = long_config
        bins.append(Bin(lo, max(max_len, lo), p, k, multi_tile=True))
    return bins



def items_per_bin(bin_lut: np.ndarray, n_bins: int, lengths: np.ndarray,
                  batch_reads: np.ndarray, batch_haps: np.ndarray, per_pair: bool) -> np.ndarray:
    """Work items per bin (float counts, for grid sizes) of reads with these ``lengths``, whose
    batches' bounds are ``batch_reads`` / ``batch_haps`` (sliced to them): a read counts once,
    or with an item per pair once per haplotype of its batch."""
    if per_pair:
        return np.bincount(bin_lut[lengths], np.repeat(batch_haps[1:] - batch_haps[:-1],
                                                       batch_reads[1:] - batch_reads[:-1]), n_bins)
    # reads per length, summed per bin (cheaper than each read's bin)
    return np.bincount(bin_lut, np.bincount(lengths, None, len(bin_lut)), n_bins)


def tiers_table(tiers: Optional[Sequence[tuple]]) -> Optional[tuple]:
    """``tiers`` as nested tuples (hashable, comparable), or None."""
    return tuple((int(below), tuple(tuple(r) for r in rows)) for below, rows in tiers) \
        if tiers else None


def tiers_param(tiers: Optional[Sequence[tuple]]) -> Optional[list]:
    """``tiers`` as the JSON lists a result file's params keep, or None."""
    return [[int(below), [list(r) for r in rows]] for below, rows in tiers] if tiers else None


def size_tier(pairs: PairSet, small_tiers: Optional[Sequence[tuple]]) -> int:
    """Index of the first (pairs below, bins) tier that holds the input; len(tiers) (or 0
    without tiers) when none does (the full table)."""
    tiers, n = small_tiers or (), pairs.n_pairs
    for i, (below, _) in enumerate(tiers):  # (no generator: this runs on every call)
        if n < below:
            return i
    return len(tiers)


def choose_bins(pairs: PairSet, table: Sequence[tuple], long_config: Optional[tuple],
                small_tiers: Optional[Sequence[tuple]] = None) -> list[Bin]:
    """The bins of a run: the first of ``small_tiers`` that holds the input (a GPU left mostly
    idle wants short chains: more threads per pair, few launches), else ``table``."""
    tier = size_tier(pairs, small_tiers)
    if small_tiers and tier < len(small_tiers):
        table = small_tiers[tier][1]
    return make_bins(table, long_config, pairs.max_read_length)


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



def chunk_bounds(pairs: PairSet, chunk_pairs: int, ramp: int = 0,
                 join_tail: bool = False) -> list[tuple[int, int]]:
    """Batch ranges of about ``chunk_pairs`` pairs each (batches never split). With ``ramp`` = n,
    the first n chunks are 1/2^n, ..., 1/4, 1/2 of that, so the device starts after a small
    first preparation instead of a full one. With ``join_tail`` a last chunk of under half
    ``chunk_pairs`` joins the one before: its own launch chain and the part-empty last round of
    the chunk before would cost more than it computes."""
    if pairs.n_pairs <= chunk_pairs:
        return [(0, pairs.n_batches)]
    sizes = [chunk_pairs >> s for s in range(int(ramp), 0, -1)]
    lead = np.cumsum([x for x in sizes if x > 0], dtype=np.int64)
    rest = np.arange(int(lead[-1]) if len(lead) else 0, pairs.n_pairs, chunk_pairs)[1:]
    targets = np.concatenate([lead, rest]) if len(lead) else \
        np.arange(chunk_pairs, pairs.n_pairs, chunk_pairs)
    targets = targets[targets < pairs.n_pairs]
    if join_tail and len(targets) and pairs.n_pairs - targets[-1] < chunk_pairs // 2:
        targets = targets[:-1]
    cuts = np.unique(np.searchsorted(pairs.batch_pairs, targets, side="left"))
    cuts = cuts[(cuts > 0) & (cuts < pairs.n_batches)]
    edges = [0, *cuts.tolist(), pairs.n_batches]
    return list(zip(edges[:-1], edges[1:]))


class Plan(NamedTuple):
    """What calls of one size class and longest read share (``SubwarpBackend._plan`` in ``cuda.py``)."""
    bins: list            # the length bins
    queue_bins: list      # the recompute queues' (double) configurations
    queue_of: list        # recompute queue of each bin
    meta: np.ndarray      # staged: [n_bins, longest read of each bin, queue of each bin]
    bin_lut: np.ndarray   # bin of each read length up to the longest
    key: tuple            # its key in the backend's plans
    labels: tuple         # each bin's label (info["bins"])
    queue_labels: tuple   # each queue's label (info["recompute_queues"])
    cascade: tuple        # per queue: float32 with exponents first, then float64 (a cascade)
