"""``cuda-subwarp``: the gpuPairHMM-class peak CUDA backend (sub-warp groups, shuffles, length bins).

Kernel: ``kernels_cuda/subwarp.cu`` (read its header comment for the recurrence). A group of ``p``
threads aligns one read to every haplotype of its batch; each thread keeps ``k`` read rows in
registers, so one group covers reads up to ``p*k`` (longer reads run as several row tiles).

Host side (the timed ``prep``), vectorized over batches:

- one *item* per read: (read, first haplotype of its batch, haplotypes in the batch, index of its
  first pair) -- a batch's pairs are read-major, so a read's pairs are contiguous;
- items partitioned by read length into bins; each bin runs the (p, k) kernel specialized for it,
  compiled at run time with the bin's exact limits as defines (cached in-process and on disk);
- haplotypes repacked as byte codes padded with a pad code (5) to whole 32-bit words plus room for
  the wavefront's tail, so the kernel needs no bounds checks in its inner loop.

Device side: bins launched on separate streams; float32 with C = 2^120; every pair whose float32
sum is under 1e-28 is queued by the kernel itself and recomputed by the double-precision
instantiation of the same kernel on the GPU (``n_fallback`` counts them); log10 results are
written in place, then copied back once.

Variants (each switches one design element off, so ``hmmbench run`` shows what it buys):
``cuda-subwarp`` (auto bins), ``-noemistable`` (compare-and-select emissions), ``-gatkform``
(GATK's 8-instruction recurrence instead of the scaled 6-instruction one), ``-nobins`` (one
p32k16 kernel for every read, multi-tile beyond 512), ``-nostreams`` (bins serialized on one
stream), ``-p8k16`` (one fixed configuration).
"""
from __future__ import annotations

import math
import re
import time
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from ..backend import Backend, Execution, Limits
from ..model import PairSet, _ranges
from . import cuda as glue

SOURCE = "subwarp.cu"
PAD_CODE = 5
N_CODES = 6
#: Haplotype padding: the wavefront runs n + p - 1 steps (p <= 32), plus one prefetched word.
MAX_P = 32

#: (p, k) the kernel supports: p divides 32, k a multiple of 4 up to 32.
SUPPORTED_P = (4, 8, 16, 32)
SUPPORTED_K = (4, 8, 12, 16, 20, 24, 28, 32)

#: Default length bins for the auto backend: (largest read length, p, k). Chosen from the tile
#: sizes (as little padding as possible, 4-thread groups for short reads to keep the wavefront's
#: fill and drain short) and refined by the sweep in docs/subwarp-notes.md.
DEFAULT_BINS: tuple = (
    (16, 4, 4), (32, 4, 8), (48, 4, 12), (64, 4, 16), (80, 4, 20), (96, 4, 24),
    (128, 8, 16), (160, 8, 20), (192, 8, 24), (256, 16, 16), (320, 16, 20), (384, 16, 24),
    (512, 32, 16), (640, 32, 20), (768, 32, 24),
)
#: Reads longer than the last bin: this configuration, several row tiles per read.
DEFAULT_LONG = (32, 16)
#: Bins without the shared-memory table keep two emissions per row in registers: k <= 16.
NOTABLE_BINS: tuple = (
    (16, 4, 4), (32, 4, 8), (48, 4, 12), (64, 4, 16), (128, 8, 16), (256, 16, 16), (512, 32, 16),
)
#: The float64 recompute: one generic multi-tile kernel (rare pairs; any length).
DOUBLE_CONFIG = (16, 8)

THREADS_PER_BLOCK = 128


@dataclass(frozen=True)
class Bin:
    lo: int   # smallest read length (inclusive)
    hi: int   # largest read length (inclusive); multi-tile bins have no real upper limit
    p: int
    k: int
    multi_tile: bool = False

    @property
    def label(self) -> str:
        return f"p{self.p}k{self.k}{'-mt' if self.multi_tile else ''}[{self.lo}..{self.hi}]"


def make_bins(table: Sequence[tuple], long_config: Optional[tuple], max_len: int) -> list[Bin]:
    """Bins from (upper, p, k) rows; reads above the last row go to a multi-tile bin up to max_len."""
    bins, lo = [], 1
    for hi, p, k in table:
        if p * k < hi:
            raise ValueError(f"bin up to {hi} does not fit p{p}k{k} (tile {p * k})")
        bins.append(Bin(lo, hi, p, k))
        lo = hi + 1
    if long_config is not None and max_len >= lo:
        p, k = long_config
        bins.append(Bin(lo, max(max_len, lo), p, k, multi_tile=True))
    return bins


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
    items: np.ndarray          # (n_items, 4) int32: read, first hap, n haps, first pair; bin order
    bin_ranges: list           # [(Bin, start, stop)] slices of items, non-empty bins only
    hap_words: np.ndarray      # uint32: padded haplotype codes, 4 per word
    hap_word0: np.ndarray      # int64 per haplotype: first word
    read_start: np.ndarray     # int64 per read
    read_len: np.ndarray       # int32 per read
    max_hap_words: int


def padded_hap_words(hap_lengths: np.ndarray) -> np.ndarray:
    """Words per haplotype: n codes + up to MAX_P-1 wavefront-tail steps + one prefetched word."""
    return (hap_lengths + MAX_P - 1 + 3) // 4 + 1


def pack_haplotypes(pairs: PairSet):
    """Haplotype codes as padded uint32 words (pad code 5); returns (words, first word per hap)."""
    hl = pairs.hap_lengths.astype(np.int64)
    words = padded_hap_words(hl)
    word0 = np.zeros(len(hl) + 1, np.int64)
    np.cumsum(words, out=word0[1:])
    codes = np.full(int(word0[-1]) * 4, PAD_CODE, np.uint8)
    dest = _ranges(word0[:-1] * 4, hl)
    codes[dest] = pairs.hap_bases
    return codes.view(np.uint32), word0[:-1], int(words.max(initial=1))


def read_items(pairs: PairSet) -> np.ndarray:
    """(n_reads, 4) int32 items in read order: read, first hap, n haps, first pair."""
    nr = np.diff(pairs.batch_reads)
    nh = np.diff(pairs.batch_haps)
    batch_of_read = np.repeat(np.arange(pairs.n_batches), nr)
    reads = np.arange(len(batch_of_read), dtype=np.int64)
    first_pair = (pairs.batch_pairs[:-1][batch_of_read]
                  + (reads - pairs.batch_reads[:-1][batch_of_read]) * nh[batch_of_read])
    items = np.empty((len(reads), 4), np.int32)
    items[:, 0] = reads
    items[:, 1] = pairs.batch_haps[:-1][batch_of_read]
    items[:, 2] = nh[batch_of_read]
    items[:, 3] = first_pair
    return items[items[:, 2] > 0]


def host_layout(pairs: PairSet, bins: Sequence[Bin]) -> HostLayout:
    if pairs.n_pairs >= 2**31 - 1:
        raise ValueError("cuda-subwarp indexes pairs with int32: split the input")
    items = read_items(pairs)
    rl = pairs.read_lengths
    lengths = rl[items[:, 0]]
    his = np.array([b.hi for b in bins], np.int64)
    bin_of = np.searchsorted(his, lengths, side="left")
    if len(items) and int(bin_of.max()) >= len(bins):
        raise ValueError(f"read length {int(lengths.max())} exceeds the longest bin")
    # Stable counting sort by bin keeps batch order inside a bin: neighbouring groups of a warp
    # then share haplotype lists (equal trip counts, cached haplotype words).
    order = np.argsort(bin_of.astype(np.int16), kind="stable")
    items = np.ascontiguousarray(items[order])
    counts = np.bincount(bin_of, minlength=len(bins))
    starts = np.concatenate([[0], np.cumsum(counts)])
    ranges = [(b, int(starts[i]), int(starts[i + 1])) for i, b in enumerate(bins) if counts[i]]
    hap_words, hap_word0, max_words = pack_haplotypes(pairs)
    return HostLayout(items=items, bin_ranges=ranges, hap_words=hap_words, hap_word0=hap_word0,
                      read_start=pairs.read_offsets[:-1].astype(np.int64),
                      read_len=rl.astype(np.int32), max_hap_words=max_words)


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
                 chunk_pairs: int = 1 << 19, min_blocks: int = 1):
        super().__init__(bins=[list(b) for b in bins], long_config=long_config,
                         emis_table=emis_table, scaled=scaled, streams=streams,
                         chunk_pairs=chunk_pairs, min_blocks=min_blocks)
        self.name = name
        self.description = description
        self._bins_table = tuple(tuple(b) for b in bins)
        self._long = long_config
        self._table = emis_table
        self._scaled = scaled
        self._streams_on = streams
        self._buffers = None
        self._streams: list = []
        self._pinned_bufs: dict = {}
        self.chunk_pairs = chunk_pairs
        self.min_blocks = min_blocks
        if long_config is None:
            self.limits = Limits(max_read_length=self._bins_table[-1][0])

    # --- availability -------------------------------------------------------------------------
    def unavailable_reason(self) -> Optional[str]:
        return glue.unavailable_reason()

    def device_name(self) -> str:
        return glue.gpu_name()

    def refuse_reason(self, pairs: PairSet) -> Optional[str]:
        if pairs.n_pairs:
            if int(pairs.pair_read_lengths.min()) < 1 or int(pairs.pair_hap_lengths.min()) < 1:
                return "a pair has an empty read or haplotype (the model's likelihood is undefined)"
        return super().refuse_reason(pairs)

    def bins_for(self, pairs: PairSet) -> list[Bin]:
        return make_bins(self._bins_table, self._long, pairs.max_read_length)

    # --- kernels ------------------------------------------------------------------------------
    def defines(self, b: Bin, double: bool = False) -> dict:
        return {"SW_P": b.p, "SW_K": b.k, "SW_DOUBLE": int(double),
                "SW_EMIS_TABLE": int(self._table or double), "SW_SCALED": int(self._scaled),
                "SW_MULTI_TILE": int(b.multi_tile), "SW_BIN_MIN": b.lo,
                "SW_BIN_MAX": b.hi if not b.multi_tile else 1 << 30,
                "SW_BLOCK": THREADS_PER_BLOCK, "SW_MIN_BLOCKS": 1 if double else self.min_blocks}

    def kernel(self, b: Bin, double: bool = False):
        """(function, dynamic shared bytes) for a bin, compiled on first use."""
        mod = glue.compile(SOURCE, self.defines(b, double))
        fn = mod.get_function("subwarp_forward")
        groups = THREADS_PER_BLOCK // b.p
        smem = table_bytes(b.p, b.k, groups, double, self._table or double)
        if smem > 48 * 1024 and not getattr(fn, "_sw_smem", 0) >= smem:
            drv = glue.driver()
            fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, smem)
            fn._sw_smem = smem
        return fn, smem

    def _bufs(self) -> glue.DeviceBuffers:
        if self._buffers is None:
            self._buffers = glue.DeviceBuffers()
        return self._buffers

    def _stream_pool(self, n: int) -> list:
        drv = glue.driver()
        while len(self._streams) < n:
            self._streams.append(drv.Stream())
        return self._streams[:n]

    def _launch(self, b: Bin, double: bool, items_ptr, n_items: int, count_ptr, dev: dict,
                out_dev, fb_count_ptr, fb_items_ptr, fb_capacity: int, stream,
                max_hap_words: int):
        """One bin's kernel; with ``count_ptr`` the item count is read on the device (at most
        ``n_items``) and the grid is a fixed grid-stride one."""
        fn, smem = self.kernel(b, double)
        groups = THREADS_PER_BLOCK // b.p
        sms = glue.device_attributes()["sm_count"]
        blocks = sms * 4 if count_ptr else -(-n_items // groups)
        scratch, stride = np.uintp(0), 0
        if b.multi_tile:
            # Grid-stride: a bounded grid, one boundary-row scratch per resident group.
            blocks = min(blocks, sms * 16)
            stride = max_hap_words * 4 + MAX_P
            quad = 32 if double else 16
            scratch = self._bufs().get("scratch_d" if double else "scratch",
                                       blocks * groups * stride * quad)
        fn(items_ptr, np.int32(n_items), count_ptr or np.uintp(0), dev["read_bases"],
           dev["base_qual"], dev["ins_qual"], dev["del_qual"], dev["gcp_qual"], dev["read_start"],
           dev["read_len"], dev["hap_words"], dev["hap_word0"], dev["hap_len"], out_dev,
           fb_count_ptr, fb_items_ptr, np.int32(fb_capacity), scratch, np.int32(stride),
           block=(THREADS_PER_BLOCK, 1, 1), grid=(max(blocks, 1), 1), shared=smem, stream=stream)

    def _pinned(self, key: str, array: np.ndarray) -> np.ndarray:
        """``array`` copied into a grow-only page-locked staging buffer (async H2D needs it)."""
        drv = glue.driver()
        have = self._pinned_bufs.get(key)
        if have is None or have.nbytes < array.nbytes:
            have = drv.pagelocked_empty(max(array.nbytes, 1 << 16), np.uint8)
            self._pinned_bufs[key] = have
        view = have[:array.nbytes].view(array.dtype)
        np.copyto(view, array.reshape(-1))
        return view

    def chunk_bounds(self, pairs: PairSet) -> list[tuple[int, int]]:
        """Batch ranges of about ``chunk_pairs`` pairs each (batches never split)."""
        if pairs.n_pairs <= self.chunk_pairs:
            return [(0, pairs.n_batches)]
        targets = np.arange(self.chunk_pairs, pairs.n_pairs, self.chunk_pairs)
        cuts = np.unique(np.searchsorted(pairs.batch_pairs, targets, side="left"))
        cuts = cuts[(cuts > 0) & (cuts < pairs.n_batches)]
        edges = [0, *cuts.tolist(), pairs.n_batches]
        return list(zip(edges[:-1], edges[1:]))

    def run(self, pairs: PairSet) -> Execution:
        reason = self.refuse_reason(pairs)
        if reason:
            raise ValueError(f"{self.name} refuses this input: {reason}")
        drv = glue.driver()
        info: dict = {"gpu": glue.gpu_name(), "sm_clock_mhz": [glue.sm_clock_mhz()]}
        timing = {"prep": 0.0, "h2d": 0.0, "kernel": 0.0, "d2h": 0.0}
        if pairs.n_pairs == 0:
            return Execution(np.zeros(0), timing, 0, info)
        bins = self.bins_for(pairs)
        double_bin = Bin(1, 1 << 30, *DOUBLE_CONFIG, multi_tile=True)
        for b in bins:  # compile outside the timed stages (cached after the first run)
            self.kernel(b)
        self.kernel(double_bin, double=True)

        if pairs.n_pairs >= 2**31 - 1:
            raise ValueError("cuda-subwarp indexes pairs with int32: split the input")
        bounds = self.chunk_bounds(pairs)
        n_chunks = len(bounds)
        bufs = self._bufs()
        streams = self._stream_pool(2 + len(bins))
        main, copy = streams[0], streams[1]
        bin_streams = streams[2:] if self._streams_on else [main] * len(bins)
        out_dev = bufs.get("out", pairs.n_pairs * 8)
        fb_counts_dev = bufs.get("fb_counts", n_chunks * 4)
        drv.memset_d32_async(fb_counts_dev, 0, n_chunks, main)
        start = drv.Event()
        start.record(main)
        copy.wait_for_event(start)
        h2d_spans, kernel_spans, kernels_done, staged_done = [], [], [], []
        bin_counts: Counter = Counter()
        for c, (b0, b1) in enumerate(bounds):
            slot = c % 2
            sub = pairs if n_chunks == 1 else pairs.select_batches(b0, b1)
            p0 = int(pairs.batch_pairs[b0])
            t0 = time.perf_counter()
            lay = host_layout(sub, bins)
            if p0:
                lay.items[:, 3] += p0
            host = {"read_bases": sub.read_bases, "base_qual": sub.base_qual,
                    "ins_qual": sub.ins_qual, "del_qual": sub.del_qual,
                    "gcp_qual": sub.gcp_qual, "read_start": lay.read_start,
                    "read_len": lay.read_len, "hap_words": lay.hap_words,
                    "hap_word0": lay.hap_word0, "hap_len": sub.hap_lengths.astype(np.int32),
                    "items": lay.items}
            if c >= 2:  # this slot's pinned buffers are free once its last upload finished
                staged_done[c - 2].synchronize()
            staged = {k: self._pinned(f"{k}{slot}", np.ascontiguousarray(v))
                      for k, v in host.items()}
            timing["prep"] += time.perf_counter() - t0
            fb_capacity = int(min(sub.n_pairs, 1 << 20))
            if c >= 2:  # device slot free once chunk c-2's kernels are done
                copy.wait_for_event(kernels_done[c - 2])
            e0, e1 = drv.Event(), drv.Event()
            e0.record(copy)
            dev = {}
            for k, v in staged.items():
                dev[k] = bufs.get(f"{k}{slot}", v.nbytes)
                if v.nbytes:
                    drv.memcpy_htod_async(dev[k], v, copy)
            e1.record(copy)
            staged_done.append(e1)
            h2d_spans.append((e0, e1))
            fb_items_dev = bufs.get(f"fb_items{slot}", fb_capacity * 16)
            fb_count_ptr = np.uintp(int(fb_counts_dev) + 4 * c)
            # Bins on separate streams after the upload, joined into `main` for the recompute.
            joins = []
            for b, lo, hi in lay.bin_ranges:
                # A bin keeps its stream across chunks: launches sharing the multi-tile
                # scratch never overlap.
                s = bin_streams[bins.index(b)]
                s.wait_for_event(e1)
                self._launch(b, False, np.uintp(int(dev["items"]) + lo * 16), hi - lo, None,
                             dev, out_dev, fb_count_ptr, fb_items_dev, fb_capacity, s,
                             lay.max_hap_words)
                ev = drv.Event()
                ev.record(s)
                joins.append(ev)
                bin_counts[b.label] += hi - lo
            main.wait_for_event(e1)
            for ev in joins:
                main.wait_for_event(ev)
            # float64 recompute of this chunk's underflows, count read on the device.
            self._launch(double_bin, True, fb_items_dev, fb_capacity, fb_count_ptr, dev,
                         out_dev, np.uintp(0), np.uintp(0), 0, main, lay.max_hap_words)
            k1 = drv.Event()
            k1.record(main)
            kernels_done.append(k1)
            kernel_spans.append((e1, k1))
        out = np.empty(pairs.n_pairs, np.float64)
        counts = np.zeros(n_chunks, np.int32)
        d0, d1 = drv.Event(), drv.Event()
        d0.record(main)
        drv.memcpy_dtoh_async(out, out_dev, main)
        drv.memcpy_dtoh_async(counts, fb_counts_dev, main)
        d1.record(main)
        d1.synchronize()
        n_fb = int(counts.sum())
        caps = [min(int(pairs.batch_pairs[b1] - pairs.batch_pairs[b0]), 1 << 20)
                for b0, b1 in bounds]
        if any(int(n) > cap for n, cap in zip(counts, caps)):
            out = self._overflow_fallback(pairs, out)
        timing["h2d"] = sum(b.time_since(a) for a, b in h2d_spans) / 1e3
        timing["kernel"] = sum(b.time_since(a) for a, b in kernel_spans) / 1e3
        timing["d2h"] = d1.time_since(d0) / 1e3
        info["gpu_span_s"] = d1.time_since(start) / 1e3
        info["chunks"] = n_chunks
        info["sm_clock_mhz"].append(glue.sm_clock_mhz())
        info["bins"] = dict(bin_counts)
        return Execution(out, timing, n_fb, info)

    @staticmethod
    def _overflow_fallback(pairs: PairSet, out: np.ndarray) -> np.ndarray:
        """More underflows than a chunk's device queue holds (pathological input): the pairs
        left NaN are recomputed in float64 by the CPU reference."""
        from cpu_reference import forward_log10
        idx = np.flatnonzero(np.isnan(out))
        out[idx] = forward_log10(pairs.subset_pairs(idx), "float64")
        return out

    def close(self) -> None:
        if self._buffers is not None:
            self._buffers.free()
            self._buffers = None
        self._streams = []
        self._pinned_bufs = {}


def backends() -> list[Backend]:
    return [
        SubwarpBackend("cuda-subwarp", description="auto (p,k) per length bin"),
        SubwarpBackend("cuda-subwarp-noemistable", bins=NOTABLE_BINS, emis_table=False,
                       description="compare-and-select emissions instead of the shared table"),
        SubwarpBackend("cuda-subwarp-gatkform", scaled=False,
                       description="GATK's 8-instruction recurrence instead of the scaled one"),
        SubwarpBackend("cuda-subwarp-nobins", bins=(), long_config=(32, 16),
                       description="one p32k16 kernel for all reads (multi-tile beyond 512)"),
        SubwarpBackend("cuda-subwarp-nostreams", streams=False,
                       description="bins serialized on one stream"),
        SubwarpBackend("cuda-subwarp-p8k16", bins=((128, 8, 16),), long_config=(8, 16),
                       description="one fixed p8k16 kernel (multi-tile beyond 128)"),
    ]
